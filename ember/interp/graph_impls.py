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

from ember.dialects.graph import GraphOp
from ember.dialects.graph_registry import registered_references
from ember.interp.reference import evaluate

__all__ = ["GraphFunctions", "graph_functions"]


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


def graph_functions() -> GraphFunctions:
    """``GraphFunctions`` running every op with a registered reference
    implementation, ops added with ``ember.register_op`` included."""
    missing = [
        op_type
        for op_type in registered_references()
        if not hasattr(GraphFunctions, _method_name(op_type))
    ]
    for op_type in missing:
        setattr(GraphFunctions, _method_name(op_type), _graph_impl(op_type))
    if missing:
        register_impls(GraphFunctions)
    return GraphFunctions()


def _method_name(op_type: type[GraphOp]) -> str:
    return f"run_{op_type.name.removeprefix('graph.')}"


# One method per op, generated from the registry so that a new graph op with a
# reference implementation is interpretable without touching this file.
graph_functions()
