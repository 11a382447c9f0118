"""xDSL interpreter implementations of the graph dialect.

Each graph op gets an ``@impl`` that hands its numpy operands to
:func:`ember.interp.reference.evaluate`, so the interpreter and constant
folding share one definition.  Values are plain ``numpy.ndarray`` objects
(xDSL's own tensor implementations use ``ShapedArray``; graph functions never
mix the two, so no conversion is needed).

Mirrors the per-dialect ``InterpreterFunctions`` classes of
``xdsl/interpreters/`` (e.g. ``ArithFunctions``).
"""

from __future__ import annotations

from typing import Any

from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImpl,
    impl,
    register_impls,
)

from ember.dialects.graph import GRAPH_OPS, GraphOp
from ember.interp.reference import REFERENCE_IMPLS, evaluate

__all__ = ["GraphFunctions"]


class GraphFunctions(InterpreterFunctions):
    """Runs every graph operator with its numpy reference implementation."""


def _graph_impl(op_type: type[GraphOp]) -> OpImpl[GraphFunctions, GraphOp]:
    """An ``@impl`` for ``op_type`` that evaluates the op's reference definition."""

    @impl(op_type)
    def run(
        self: GraphFunctions,
        interpreter: Interpreter,
        op: GraphOp,
        args: tuple[Any, ...],
    ) -> tuple[Any, ...]:
        return (evaluate(op, args),)

    return run


# One method per op, generated from the op table so that a new graph op with a
# reference implementation is interpretable without touching this file.
for _op_type in GRAPH_OPS:
    if _op_type.name in REFERENCE_IMPLS:
        setattr(
            GraphFunctions,
            f"run_{_op_type.name.removeprefix('graph.')}",
            _graph_impl(_op_type),
        )

register_impls(GraphFunctions)
