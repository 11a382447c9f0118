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

from xdsl.ir import Operation

from ember.dialects.graph import GraphOp
from ember.dialects.graph_registry import registered_references
from ember.errors import EmberError
from ember.interp.reference import InterpretError, evaluate
from ember.ir import describe_op

__all__ = ["GraphFunctions", "OpFailed", "graph_functions", "op_failed"]


class OpFailed(BaseException):
    """An op's implementation failed; carries ember's report of it.

    Not an ``Exception``: xDSL's dispatch catches every ``Exception`` an
    implementation raises and prints the whole module into a note (megabytes
    for a network with bound weights) before re-raising it.  This passes
    through to :meth:`EmberInterpreter.call_op`, which raises ``error``.
    """

    def __init__(self, error: EmberError) -> None:
        super().__init__(str(error))
        self.error = error


def op_failed(op: Operation, error: Exception) -> EmberError:
    """ember's report of ``error`` raised while running ``op``: an
    :class:`EmberError` as it is, anything else naming the op."""
    if isinstance(error, EmberError):
        return error
    report = InterpretError(
        f"{op.name} failed: {type(error).__name__}: {error}\n{describe_op(op)}"
    )
    report.__cause__ = error
    return report


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
        try:
            return (evaluate(op, args),)
        except Exception as e:
            raise OpFailed(op_failed(op, e)) from None

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
