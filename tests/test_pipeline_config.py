"""PipelineConfig: the pipeline tutorial's builder (seed 000) producing IR.

The tutorial's flow on tiny_pipe; every connection rule rejected at
``connect`` time with a message naming both ends; what only the whole
configuration shows rejected by ``to_module``.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dialects.pipeline import GraphOp
from ember.pipeline import (
    PipelineConfig,
    PipelineConfigError,
    interpret_pipeline,
    split_graph,
    stage_functions,
)
from ember.runtime import cuda
from ember.testing import workloads

PARAMS0 = ("data", "weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var")

TUTORIAL_PRINT = """\
Inputs
  |data: main_0:data
  |weight: main_0:weight
  |bn_gamma: main_0:bn_gamma
  |bn_beta: main_0:bn_beta
  |bn_mean: main_0:bn_mean
  |bn_var: main_0:bn_var
  |dweight: main_1:dweight
Outputs
  |output(0): main_1.output(0)
Connections
  |main_0.output(0) -> main_1.data_n
Stages
  |main_0: target=llvm, dev=cpu:0
  |main_1: target=cuda, dev=cuda:0, build_func=cutlass_build"""


@pytest.fixture()
def tiny():
    """(original module, mod0, mod1, args) with tiny_pipe split after the first relu."""
    module, params = workloads.get("tiny_pipe")
    mod0, mod1 = stage_functions(split_graph(module, ["relu"], [0]))
    data = np.random.default_rng(2).uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    args = [data, *(params[n] for n in PARAMS0[1:]), params["dweight"]]
    return module, mod0, mod1, args


def _connect_tutorial(cfg: PipelineConfig, mod0, mod1) -> None:
    for name in PARAMS0:
        cfg["input"][name].connect(cfg[mod0]["input"][name])
    cfg["input"]["dweight"].connect(cfg[mod1]["input"]["dweight"])
    cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["data_n_0"])
    cfg[mod1]["output"][0].connect(cfg["output"][0])


def cutlass_build(module, target, dev):  # a stand-in build function
    return module


def test_the_tutorial_flow_builds_a_verified_pipeline(tiny):
    module, mod0, mod1, args = tiny
    cfg = PipelineConfig([mod0, mod1])
    cfg[mod0].target = "llvm"
    cfg[mod1].target = "cuda"
    cfg[mod1].dev = cuda(0)
    cfg[mod1].build_func = cutlass_build
    _connect_tutorial(cfg, mod0, mod1)
    assert str(cfg) == TUTORIAL_PRINT
    built = cfg.to_module()
    graph = built.ops.last
    assert isinstance(graph, GraphOp) and graph.graph_name == "main"
    assert [(s.callee_name, s.target.data, s.device.data) for s in graph.stages] == [
        ("main_0", "llvm", "cpu:0"),
        ("main_1", "cuda", "cuda:0"),
    ]
    assert cfg[mod1].build_func is cutlass_build and cfg["main_1"] is cfg[mod1]
    expected = ember.interpret(module, "main", *args)
    np.testing.assert_array_equal(
        interpret_pipeline(built, "main", *args)[0], expected[0]
    )


def test_modules_as_stages_are_renamed_and_bring_their_helpers():
    first = ember.parse(
        """
        func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = graph.relu %x : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        func.func @main(%data: tensor<4xf32>) -> tensor<4xf32> {
          %0 = func.call @helper(%data) : (tensor<4xf32>) -> tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """
    )
    second = ember.parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = graph.negative %x : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """
    )
    cfg = PipelineConfig([first, second])
    cfg["input"]["data"].connect(cfg[first]["input"]["data"])
    cfg["mod0"]["output"][0].connect(cfg["mod1"]["input"][0])  # by name and position
    cfg[second]["output"][0].connect(cfg["output"][0])
    built = cfg.to_module("net")
    names = [op.sym_name.data for op in built.ops]
    assert names == ["mod0", "helper", "mod1", "net"]
    x = np.array([-1, 2, -3, 4], np.float32)
    np.testing.assert_array_equal(
        interpret_pipeline(built, "net", x)[0], -np.maximum(x, 0)
    )


def test_from_module_reads_back_a_split(tiny):
    module, _, _, args = tiny
    split = split_graph(module, ["relu"], [0])
    cfg = PipelineConfig.from_module(split)
    assert "  |main_0.output(0) -> main_1.data_n" in str(cfg).splitlines()
    cfg["main_1"].target = "interp"
    rebuilt = cfg.to_module()
    assert rebuilt.ops.last.stages[1].target.data == "interp"
    expected = ember.interpret(module, "main", *args)
    np.testing.assert_array_equal(
        interpret_pipeline(rebuilt, "main", *args)[0], expected[0]
    )


# --------------------------------------------------------------------------
# Connection rules, checked at connect time
# --------------------------------------------------------------------------

THREE = """
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @b(%y: tensor<4xf32>, %z: tensor<2xf32>) -> tensor<4xf32> {
  %0 = graph.tanh %y : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @c(%w: tensor<2xf32>) -> tensor<2xf32> {
  func.return %w : tensor<2xf32>
}
"""


@pytest.fixture()
def three() -> PipelineConfig:
    return PipelineConfig(list(ember.parse(THREE).ops))


@pytest.mark.parametrize(
    ("source", "dest", "message"),
    [
        (
            ("b", "output", 0),
            ("a", "output", 0),
            "cannot connect b output 0 to a output 0: output to output",
        ),
        (
            ("a", "input", "x"),
            ("b", "input", "y"),
            'cannot connect a input "x" to b input "y": input to input',
        ),
        (
            ("global", "input", "d"),
            ("global", "input", "e"),
            "input to input: a global input is fed from outside",
        ),
        (("a", "output", 0), ("a", "input", "x"), "a would feed itself"),
        (
            ("b", "output", 0),
            ("a", "input", "x"),
            "a runs before b (stages run in the order given to PipelineConfig), so this would make a cycle",
        ),
        (
            ("a", "output", 0),
            ("b", "input", "z"),
            'cannot connect a output 0 to b input "z": b input "z" has type tensor<2xf32> but a output 0 gives tensor<4xf32>',
        ),
        (
            ("global", "input", "d"),
            ("global", "output", 0),
            "a global input may feed only stage inputs",
        ),
        (
            ("global", "output", 0),
            ("a", "input", "x"),
            "a global output is the pipeline's result and feeds nothing",
        ),
        (
            ("a", "output", 0),
            ("global", "input", "d"),
            "a global input is fed from outside the pipeline, not by a stage",
        ),
    ],
)
def test_bad_connections_are_rejected_naming_the_rule(three, source, dest, message):
    def end(owner, kind, key):
        return three[kind][key] if owner == "global" else three[owner][kind][key]

    with pytest.raises(PipelineConfigError) as info:
        end(*source).connect(end(*dest))
    assert message in str(info.value)


def test_an_input_is_connected_once(three):
    three["input"]["data"].connect(three["a"]["input"]["x"])
    with pytest.raises(
        PipelineConfigError,
        match='a input "x" is already connected to global input "data"; an input is connected exactly once',
    ):
        three["input"]["other"].connect(three["a"]["input"]["x"])
    three["a"]["output"][0].connect(three["output"][0])
    with pytest.raises(
        PipelineConfigError, match="global output 0 is already connected to a output 0"
    ):
        three["b"]["output"][0].connect(three["output"][0])


def test_a_global_input_has_one_type(three):
    three["input"]["data"].connect(three["a"]["input"]["x"])
    with pytest.raises(
        PipelineConfigError,
        match=r'b input "z" has type tensor<2xf32> but global input "data" is tensor<4xf32> \(it feeds a input "x"\)',
    ):
        three["input"]["data"].connect(three["b"]["input"]["z"])


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda c: c["a"]["input"]["nope"], "a has no input 'nope' (its inputs: x)"),
        (
            lambda c: c["a"]["output"][3],
            "a has no output 3: its outputs are numbered 0..0",
        ),
        (lambda c: c["a"]["inputs"], 'a: expected "input" or "output", got \'inputs\''),
        (lambda c: c["zzz"], "'zzz' is not a stage of this pipeline (stages: a, b, c"),
        (lambda c: c["output"]["x"], "global outputs are numbered 0, 1"),
        (lambda c: c["input"]["data_0"], "not ending in _<digits>"),
        (lambda c: c["a"]["output"][0].connect("b"), "expected an interface"),
        (lambda c: setattr(c["a"], "dev", "tpu:0"), "a: unknown device kind 'tpu'"),
        (
            lambda c: setattr(c["a"], "target", ""),
            'a: target must be a name such as "llvm"',
        ),
        (lambda c: setattr(c["a"], "build_func", 3), "a: build_func must be callable"),
    ],
)
def test_unknown_names_and_bad_settings(three, action, message):
    with pytest.raises(PipelineConfigError) as info:
        action(three)
    assert message in str(info.value)


def test_misspelt_settings_raise_instead_of_being_ignored(three):
    with pytest.raises(AttributeError) as info:
        three["a"].targt = "interp"
    assert str(info.value) == (
        "stage a has no attribute 'targt' to set (did you mean 'target'?); "
        "a stage's settings are target, dev, build_func"
    )
    assert three["a"].target == "llvm"  # the typo changed nothing
    with pytest.raises(AttributeError, match="did you mean 'build_func'"):
        three["a"].buildfunc = cutlass_build
    with pytest.raises(
        AttributeError,
        match=r"PipelineConfig has no attribute 'target' to set; a stage's target, "
        r"dev, build_func are set on cfg\[mod\] \(stages: a, b, c\)",
    ):
        three.target = "llvm"
    three["a"].target = "interp"  # real settings still work
    assert three["a"].target == "interp"


def test_stage_list_errors():
    functions = list(ember.parse(THREE).ops)
    with pytest.raises(PipelineConfigError, match="non-empty list"):
        PipelineConfig([])
    with pytest.raises(PipelineConfigError, match="name 'a' is already taken"):
        PipelineConfig([functions[0], functions[0].clone()])
    with pytest.raises(
        PipelineConfigError, match="expected a func.func or a module, got str"
    ):
        PipelineConfig(["mod0"])


# --------------------------------------------------------------------------
# Whole-configuration checks, at to_module time
# --------------------------------------------------------------------------


def _wire_all_but(three: PipelineConfig, skip: str) -> None:
    if skip != "x":
        three["input"]["data"].connect(three["a"]["input"]["x"])
    three["a"]["output"][0].connect(three["b"]["input"]["y"])
    three["input"]["side"].connect(three["b"]["input"]["z"])
    three["input"]["side"].connect(three["c"]["input"]["w"])
    if skip != "output":
        three["b"]["output"][0].connect(three["output"][0])


def test_to_module_checks_the_whole_configuration(three):
    _wire_all_but(three, skip="x")
    with pytest.raises(
        PipelineConfigError, match=r'a input "x" \(#0\) is not connected'
    ):
        three.to_module()


def test_to_module_needs_outputs_without_gaps(three):
    _wire_all_but(three, skip="output")
    with pytest.raises(PipelineConfigError, match="no global output"):
        three.to_module()
    three["c"]["output"][0].connect(three["output"][1])
    with pytest.raises(PipelineConfigError, match="global output 0 is not connected"):
        three.to_module()
    three["b"]["output"][0].connect(three["output"][0])
    module = three.to_module()
    assert len(module.ops.last.function_type.outputs.data) == 2


def test_to_module_checks_placement_and_dangling_inputs(three):
    _wire_all_but(three, skip="")
    three["b"].target = "cuda"
    with pytest.raises(
        PipelineConfigError,
        match='b: target "cuda" runs on cuda devices, not on "cpu:0"',
    ):
        three.to_module()
    three["b"].dev = "cuda:0"
    three["input"]["unused"]  # created by looking at it, connected to nothing
    with pytest.raises(
        PipelineConfigError, match='global input "unused" is connected to nothing'
    ):
        three.to_module()
