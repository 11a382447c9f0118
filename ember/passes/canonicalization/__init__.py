"""Canonicalization patterns of the graph dialect, attached to ops lazily.

Ops carry a trait whose ``get_patterns`` calls :func:`patterns_for`; importing
this package is what loads the pattern classes, so dialect definitions never
import passes.
"""

from __future__ import annotations

from xdsl.pattern_rewriter import RewritePattern


def patterns_for(op_name: str) -> tuple[RewritePattern, ...]:
    from ember.passes.canonicalization.graph import PATTERNS

    return PATTERNS.get(op_name, ())
