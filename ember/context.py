"""The xDSL context ember parses with: builtin, func, arith, math, memref,
scf, llvm and ember's own dialects.

One function so that the tools, ``ember.parse`` and the tests agree on what
is known.  ember's dialects are loaded lazily, by name, as xDSL does.
"""

from __future__ import annotations

from xdsl.context import Context


def make_context(allow_unregistered: bool = False) -> Context:
    from xdsl.dialects import get_all_dialects

    from ember.universe import EMBER_DIALECTS

    ctx = Context(allow_unregistered=allow_unregistered)
    stock = get_all_dialects()
    for name in ("builtin", "func", "arith", "math", "memref", "scf", "llvm", "cf"):
        ctx.register_dialect(name, stock[name])
    for name, factory in EMBER_DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx
