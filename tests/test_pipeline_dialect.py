"""The pipeline dialect: text round trips, builders, verifier, interpretation.

Every verifier message is checked in
``tests/filecheck/dialects/pipeline/invalid.mlir``; here the Python side:
building a pipeline from Python, the printed-name rule for inputs, and the
sequential reference semantics.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

import ember
from ember.dialects.graph import ReluOp, tensor_type
from ember.dialects.pipeline import GraphOp, PipelineGraphOp, StageOp, YieldOp, argument_names
from ember.errors import IRError
from ember.interp.pipeline_impls import interpret_pipeline, run_in_interpreter
from ember.interp.reference import InterpretError
from ember.universe import EMBER_DIALECTS

OPS_FILE = Path(__file__).parent / "filecheck" / "dialects" / "pipeline" / "ops.mlir"


def test_the_dialect_is_registered_lazily():
    assert EMBER_DIALECTS["pipeline"]().name == "pipeline"


@pytest.mark.parametrize("generic", [False, True])
def test_print_parse_print_is_stable(generic):
    module = ember.parse(OPS_FILE.read_text(encoding="utf-8"))
    text = ember.to_text(module, generic=generic)
    assert ember.to_text(ember.parse(text), generic=generic) == text


def _relu_function(name: str, t) -> FuncOp:
    block = Block(arg_types=[t])
    block.args[0].name_hint = "x"
    relu = ReluOp.build([block.args[0]])
    block.add_ops([relu, ReturnOp(relu.result)])
    return FuncOp(name, ([t], [t]), Region(block))


def test_pipeline_graph_class_has_its_own_name():
    # graph.* ops subclass ember.dialects.graph.GraphOp; the old name stays an alias.
    import ember.dialects.graph as graph_dialect

    assert GraphOp is PipelineGraphOp and PipelineGraphOp.name == "pipeline.graph"
    assert PipelineGraphOp.__name__ != graph_dialect.GraphOp.__name__


def test_build_a_pipeline_from_python():
    t = tensor_type((2, 3))
    graph = GraphOp("net", [t], [t], arg_names=["data"])
    first = StageOp("mod0", [graph.args[0]], [t])
    second = StageOp("mod1", [first.results[0]], [t], target="interp", device="cpu:0")
    graph.body.block.add_ops([first, second, YieldOp(second.results[0])])
    module = ModuleOp([_relu_function("mod0", t), _relu_function("mod1", t), graph])
    ember.verify_module(module)
    assert graph.stages == [first, second] and graph.yield_op is not None
    assert second.callee_name == "mod1" and second.target.data == "interp"
    text = ember.to_text(module)
    assert 'pipeline.stage @mod1(%0) {target = "interp", device = "cpu:0"}' in text
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    (out,) = interpret_pipeline(module, "net", x)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_input_names_are_the_printed_names():
    # xDSL reads %data_n_0 back as hint "data_n" and numbers repeated hints.
    module = ember.parse(
        "func.func @f(%data_n_0: tensor<2xf32>, %x: tensor<2xf32>, %x_1: tensor<2xf32>, "
        "%3: tensor<2xf32>) {\n  func.return\n}"
    )
    func = next(iter(module.ops))
    assert argument_names(func.body.block) == ["data_n", "x", "x_1", "0"]


def test_verifier_errors_name_both_ends():
    t32, t16 = tensor_type((2, 3)), tensor_type((2, 3), "float16")
    graph = GraphOp("net", [t32], [t16], arg_names=["data"])
    first = StageOp("mod0", [graph.args[0]], [t32])
    second = StageOp("mod1", [first.results[0]], [t16])
    graph.body.block.add_ops([first, second, YieldOp(second.results[0])])
    module = ModuleOp([_relu_function("mod0", t32), _relu_function("mod1", t16), graph])
    with pytest.raises(IRError) as info:
        ember.verify_module(module)
    assert (
        'pipeline.stage @mod1: input 0 ("x") has type tensor<2x3xf16> but '
        "@mod0 output 0 gives tensor<2x3xf32>"
    ) in str(info.value)


def test_interpretation_runs_stages_in_order():
    module = ember.parse(OPS_FILE.read_text(encoding="utf-8"))
    x = np.array([-1.5, 2, -3, 4], np.float32)
    total, negated = interpret_pipeline(module, "multi", x)
    np.testing.assert_array_equal(total, np.maximum(x, 0) - x)
    np.testing.assert_array_equal(negated, -x)
    for a, b in zip(run_in_interpreter(module, "multi", x), (total, negated)):
        np.testing.assert_array_equal(a, b)


def test_interpretation_errors():
    module = ember.parse(OPS_FILE.read_text(encoding="utf-8"))
    x = np.zeros(4, np.float32)
    with pytest.raises(
        InterpretError,
        match=r"no pipeline.graph @nope in the module \(pipelines: @net, @multi\)",
    ):
        interpret_pipeline(module, "nope", x)
    with pytest.raises(
        InterpretError, match=r"pipeline @multi takes 1 global inputs \(x\), got 2"
    ):
        interpret_pipeline(module, "multi", x, x)
    with pytest.raises(
        InterpretError, match="global input 'x' .* must have dtype float32"
    ):
        interpret_pipeline(module, "multi", x.astype(np.float64))
