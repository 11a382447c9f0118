"""The ``xdsl.universe`` entry point: ember's dialects and passes, lazily.

Installed ember makes stock ``xdsl-opt`` know ``graph``, ``kernel`` and
``pipeline`` and every ember pass.  Nothing heavy is imported here: each value
is a function that imports its dialect or pass on first use, so ``ember-opt
--help`` stays fast and never touches llvmlite or CUDA.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


def _graph() -> Dialect:
    from ember.dialects.graph import graph_dialect

    return graph_dialect()


def _kernel() -> Dialect:
    from ember.dialects.kernel import Kernel

    return Kernel


def _pipeline() -> Dialect:
    from ember.dialects.pipeline import Pipeline

    return Pipeline


EMBER_DIALECTS: dict[str, Callable[[], Dialect]] = {"graph": _graph, "kernel": _kernel, "pipeline": _pipeline}


def _passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from ember.passes import PASSES

    return PASSES


EMBER_UNIVERSE = Universe(all_dialects=EMBER_DIALECTS, all_passes=_passes())
