"""Reference semantics of the pipeline dialect: run the stages one by one.

A ``pipeline.graph`` means what running its stages sequentially, in program
order, means: each ``pipeline.stage`` calls its ``func.func`` with the
reference interpreter on the values its inputs are connected to, and
``pipeline.yield`` returns the connected stage outputs.  This is the
correctness baseline of the pipeline executor (TVM checks its pipeline
executor against the subgraphs run one after another by graph executors, as
the tutorial in seed 000 does).

:class:`PipelineFunctions` plugs these ops into xDSL's interpreter
(``ember.interp.register_functions("ember.interp.pipeline_impls:PipelineFunctions")``);
:func:`interpret_pipeline` is the checked entry point, the counterpart of
:func:`ember.interp.interpret` for a pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_callable,
    impl_terminator,
    register_impls,
)
from xdsl.utils.exceptions import InterpretationError

from ember.dialects.pipeline import GraphOp, StageOp, YieldOp, function_input_names

# _check_argument: the same package's argument check, so that a global input
# is held to the rules of a function argument (shape, dtype, no conversion).
from ember.interp.interpreter import (
    FunctionsSpec,
    _check_argument,
    interpret_function,
    make_interpreter,
)
from ember.interp.reference import InterpretError

__all__ = ["PipelineFunctions", "find_pipeline", "interpret_pipeline"]


@register_impls
class PipelineFunctions(InterpreterFunctions):
    """``pipeline.graph`` / ``pipeline.stage`` / ``pipeline.yield`` for xDSL's interpreter."""

    @impl_callable(GraphOp)
    def call_graph(
        self, interpreter: Interpreter, op: GraphOp, args: tuple[Any, ...]
    ) -> PythonValues:
        return interpreter.run_ssacfg_region(op.body, args, op.graph_name)

    @impl(StageOp)
    def run_stage(
        self, interpreter: Interpreter, op: StageOp, args: tuple[Any, ...]
    ) -> PythonValues:
        # Placement (target, device) does not change what a stage computes.
        return interpreter.call_op(op.callee_name, args)

    @impl_terminator(YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: YieldOp, args: tuple[Any, ...]
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()


def find_pipeline(module: ModuleOp, entry: str = "main") -> GraphOp:
    """The ``pipeline.graph @entry`` of ``module``, or an :class:`InterpretError`."""
    if not isinstance(module, ModuleOp):
        raise InterpretError(
            f"interpret_pipeline expects a module, got {type(module).__name__}"
        )
    graphs = {op.graph_name: op for op in module.ops if isinstance(op, GraphOp)}
    if entry not in graphs:
        existing = ", ".join(f"@{name}" for name in graphs) or "none"
        raise InterpretError(
            f"no pipeline.graph @{entry} in the module (pipelines: {existing})"
        )
    return graphs[entry]


def _check_inputs(graph: GraphOp, args: Sequence[Any]) -> list[np.ndarray]:
    names = function_input_names(graph)
    if len(args) != len(names):
        raise InterpretError(
            f"pipeline @{graph.graph_name} takes {len(names)} global inputs "
            f"({', '.join(names) or 'none'}), got {len(args)}"
        )
    return [
        _check_argument(
            value, t, f"global input '{name}' (#{i}) of pipeline @{graph.graph_name}"
        )
        for i, (value, t, name) in enumerate(
            zip(args, graph.function_type.inputs.data, names)
        )
    ]


def interpret_pipeline(
    module: ModuleOp,
    entry: str = "main",
    *args: Any,
    functions: Iterable[FunctionsSpec] = (),
) -> list[np.ndarray]:
    """Run ``pipeline.graph @entry`` on ``args``, stage after stage.

    Each stage runs through :func:`ember.interp.interpret_function`, so its
    inputs are checked against its function's argument types exactly as a
    direct call would be, and each stage's outputs are fresh arrays.  Returns
    one array per global output.
    """
    graph = find_pipeline(module, entry)
    values: dict[Any, Any] = dict(zip(graph.args, _check_inputs(graph, args)))
    for stage in graph.stages:
        stage_args = [values[v] for v in stage.inputs]
        try:
            outputs = interpret_function(
                module, stage.callee_name, stage_args, functions=functions
            )
        except InterpretError as e:
            raise InterpretError(
                f"pipeline @{graph.graph_name}, stage @{stage.callee_name}: {e}"
            ) from None
        values.update(zip(stage.outputs, outputs))
    yield_op = graph.yield_op
    if yield_op is None:  # the verifier rejects this; guard unverified input
        raise InterpretError(f"pipeline @{graph.graph_name} has no pipeline.yield")
    return [np.array(values[v], copy=True) for v in yield_op.values]


def run_in_interpreter(module: ModuleOp, entry: str, *args: Any) -> PythonValues:
    """Run ``pipeline.graph @entry`` inside one xDSL interpreter (no checks).

    This exercises :class:`PipelineFunctions` the way another interpreter-based
    tool would: the graph is called like a function.
    """
    interpreter = make_interpreter(module, [PipelineFunctions])
    try:
        return interpreter.call_op(find_pipeline(module, entry), args)
    except InterpretationError as e:
        raise InterpretError(f"while interpreting pipeline @{entry}: {e}") from None
