"""split-graph: the seeds' graph_split as a pass.

Checks the tiny_pipe split of the pipeline tutorial (seed 000), every
invalid specification (an error naming the spec, nothing changed), and the
soundness property: for random graph programs and random cut points, running
the stages one after another computes exactly what the original did.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import PassPipeline

import ember
from ember.context import make_context
from ember.dialects.pipeline import GraphOp
from ember.errors import PassError
from ember.interp.pipeline_impls import interpret_pipeline
from ember.passes import PASSES
from ember.passes.split_graph import SplitGraphPass, split_graph, stage_functions
from ember.testing import workloads
from ember.testing.strategies import graph_programs

TINY_PARAMS = ("weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var", "dweight")


@pytest.fixture(scope="module")
def tiny_pipe() -> tuple[ModuleOp, list[np.ndarray]]:
    module, params = workloads.get("tiny_pipe")
    data = np.random.default_rng(1).uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    return module, [data, *(params[name] for name in TINY_PARAMS)]


def _ops(func: FuncOp) -> list[str]:
    return [op.name for op in func.body.block.ops]


def test_tiny_pipe_splits_after_first_relu_into_the_seeds_two_subgraphs(tiny_pipe):
    module, args = tiny_pipe
    split = split_graph(module, ["graph.relu"], [0])
    mod0, mod1 = stage_functions(split)
    assert _ops(mod0) == [
        "graph.conv2d",
        "graph.batch_norm",
        "graph.relu",
        "func.return",
    ]
    assert _ops(mod1) == ["graph.batch_flatten", "graph.dense", "func.return"]
    assert [a.name_hint for a in mod0.args] == ["data", *TINY_PARAMS[:-1]]
    assert [a.name_hint for a in mod1.args] == ["data_n", "dweight"]
    graph = split.ops.last
    assert isinstance(graph, GraphOp) and graph.graph_name == "main"
    assert [s.callee_name for s in graph.stages] == ["main_0", "main_1"]
    # The seed's check: run the subgraphs one after the other by hand.
    expected = ember.interpret(module, "main", *args)
    (intermediate,) = ember.interpret(split, "main_0", *args[:-1])
    assert intermediate.shape == (1, 16, 8, 8)
    (final,) = ember.interpret(split, "main_1", intermediate, args[-1])
    np.testing.assert_array_equal(final, expected[0])
    np.testing.assert_array_equal(
        interpret_pipeline(split, "main", *args)[0], expected[0]
    )


def test_split_graph_leaves_its_input_alone_and_the_pass_works_in_place(tiny_pipe):
    module, _ = tiny_pipe
    before = ember.to_text(module)
    split_graph(module, ["relu"], [0])
    assert ember.to_text(module) == before
    copy = module.clone()
    pipeline = PassPipeline.parse_spec(
        PASSES, 'split-graph{ops="graph.relu" indices=0}'
    )
    pipeline.apply(make_context(), copy)
    ember.verify_module(copy)
    assert ember.to_text(copy) == ember.to_text(split_graph(module, ["relu"], [0]))


def test_split_graph_is_registered_with_a_one_line_description():
    pass_class = PASSES["split-graph"]()
    assert pass_class is SplitGraphPass
    assert "pipeline.graph" in pass_class.__doc__.splitlines()[0]


DAG = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = graph.relu %x : tensor<4xf32>
  %b = graph.add %a, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = graph.relu %b : tensor<4xf32>
  %d = graph.multiply %a, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = graph.negative %d : tensor<4xf32>
  func.return %e, %y, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
"""


def test_several_cuts_connect_every_live_value_directly():
    module = ember.parse(DAG)
    split = split_graph(module, ["add", "relu"], [0, 0])  # cuts listed out of order
    s0, s1, s2 = stage_functions(split)
    assert _ops(s0) == ["graph.relu", "func.return"]
    assert _ops(s1) == ["graph.add", "func.return"]
    assert _ops(s2) == ["graph.relu", "graph.multiply", "graph.negative", "func.return"]
    # %a (stage 0) reaches stage 2 directly; %y is returned, so it goes
    # through the last stage; %b is both a stage-2 input and a result.
    assert [a.name_hint for a in s2.args] == ["data_n", "data_n", "y"]
    assert len(s2.function_type.outputs.data) == 2
    x = np.array([-1, 2, -3, 4], np.float32)
    y = np.array([1, -5, 2, 0.5], np.float32)
    expected = ember.interpret(module, "main", x, y)
    for got, want in zip(interpret_pipeline(split, "main", x, y), expected):
        np.testing.assert_array_equal(got, want)


def test_one_op_name_applies_to_every_index():
    split = split_graph(ember.parse(DAG), ["relu"], [0, 1])
    assert [len(f.body.block.ops) for f in stage_functions(split)] == [2, 3, 3]


@pytest.mark.parametrize(
    ("ops", "indices", "message"),
    [
        (
            ["sigmoid"],
            [0],
            "@main has no graph.sigmoid op (its ops: graph.add, graph.multiply, graph.negative, graph.relu)",
        ),
        (
            ["relu"],
            [2],
            "index 2 of graph.relu is out of range: @main has 2 graph.relu ops (indices 0..1)",
        ),
        (["relu", "add"], [0, 0, 1], "ops has 2 names but indices has 3 values"),
        (
            ["negative"],
            [0],
            "graph.negative #0 is the last op of @main; a cut after it would leave the last stage empty",
        ),
        (["relu"], [0, 0], "graph.relu #0 is cut twice"),
        ([], [], "give at least one op name and one index"),
        (["relu"], [-1], "indices must be 0 or more, got -1"),
    ],
)
def test_invalid_specifications_name_the_spec_and_change_nothing(ops, indices, message):
    module = ember.parse(DAG)
    before = ember.to_text(module)
    with pytest.raises(PassError) as info:
        SplitGraphPass(ops=tuple(ops), indices=tuple(indices)).apply(
            make_context(), module
        )
    assert message in str(info.value)
    assert str(info.value).startswith("split-graph{ops=")
    assert ember.to_text(module) == before


def test_errors_about_the_function_and_placement():
    module = ember.parse(DAG)
    with pytest.raises(PassError, match="no function @net in the module"):
        split_graph(module, ["relu"], [0], entry="net")
    with pytest.raises(
        PassError, match='target "cuda" runs on cuda devices, not on "cpu:0"'
    ):
        split_graph(module, ["relu"], [0], target="cuda")
    split = split_graph(module, ["relu"], [0])
    with pytest.raises(PassError, match="@main is a pipeline.graph, not a func.func"):
        split_graph(split, ["relu"], [0])
    clash = ember.parse(DAG + "func.func @main_1() {\n  func.return\n}\n")
    with pytest.raises(PassError, match="already has a symbol @main_1"):
        split_graph(clash, ["relu"], [0])


# --------------------------------------------------------------------------
# Soundness on random programs
# --------------------------------------------------------------------------


@st.composite
def programs_with_cuts(draw: st.DrawFn):
    program = draw(graph_programs(min_ops=2, max_ops=8, dtypes=("float32", "float16")))
    body = program.op_names[:-1]  # without func.return
    positions = draw(
        st.lists(st.integers(0, len(body) - 2), min_size=1, max_size=3, unique=True)
    )
    # Name each cut as the specification does: op name and occurrence.
    ops = [body[p] for p in positions]
    indices = [body[:p].count(body[p]) for p in positions]
    return program, ops, indices


@settings(max_examples=40, deadline=None)
@given(programs_with_cuts())
def test_split_stages_run_in_sequence_equal_the_original(case):
    program, ops, indices = case
    expected = ember.interpret(program.module, "main", *program.inputs)
    split = split_graph(program.module, ops, indices)
    ember.verify_module(split)
    assert len(stage_functions(split)) == len(ops) + 1
    got = interpret_pipeline(split, "main", *program.inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_bound_constants_are_copied_into_the_stages_that_use_them() -> None:
    """A bound weight is not passed down the pipeline: its stage has a copy."""
    module, params = workloads.get("tiny_pipe")
    bound = ember.bind_params(module, params)
    split = split_graph(bound, ["graph.relu"], [0])
    functions = {op.sym_name.data: op for op in split.ops if isinstance(op, FuncOp)}
    # Only the activation crosses the cut; the dense weight lives in stage 1.
    assert len(functions["main_1"].args) == 1
    assert "graph.constant" in {op.name for op in functions["main_1"].body.walk()}
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype("float32")
    (expected,) = ember.interpret(bound, "main", x)
    (got,) = ember.interpret(split, "main", x)
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------
# balance=N: stages of near-equal estimated cost
# --------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(graph_programs(min_ops=3, max_ops=8), st.integers(2, 3))
def test_balanced_split_runs_as_the_original(program, stages):
    """split-graph{balance=N} is sound: its stages, run in sequence, compute
    what the function did."""
    from hypothesis import assume

    from ember.passes.split_graph import balanced_cuts

    body = [n for n in program.op_names[:-1] if n != "graph.constant"]
    assume(len(body) >= stages)
    expected = ember.interpret(program.module, "main", *program.inputs)
    ops, indices = balanced_cuts(program.module, stages)
    assert len(ops) == stages - 1
    split = ember.apply_passes(program.module, f"split-graph{{balance={stages}}}")
    assert len(stage_functions(split)) == stages
    for g, e in zip(interpret_pipeline(split, "main", *program.inputs), expected):
        np.testing.assert_array_equal(g, e)


def test_balance_minimises_the_costliest_stage() -> None:
    """resnet18 in 2 stages: the cut leaves each half of the FLOPs within a
    few percent (the cost model: ember.passes.cost)."""
    from ember.passes.cost import total_cost
    from ember.testing import workloads

    module, params = workloads.get("resnet18")
    split = ember.apply_passes(ember.bind_params(module, params), "split-graph{balance=2}")
    costs = [total_cost(f.body.block.ops).flops for f in stage_functions(split)]
    assert max(costs) / sum(costs) < 0.55
    with pytest.raises(ember.PassError, match="either balance=N or ops="):
        ember.apply_passes(module, "split-graph{balance=2 ops=relu indices=0}")
    with pytest.raises(ember.PassError, match="balance needs 2 stages or more"):
        ember.apply_passes(module, "split-graph{balance=1}")


# --------------------------------------------------------------------------
# balance=N costs=FILE: stages of near-equal measured time
# --------------------------------------------------------------------------

TWO_DENSE = """
func.func @main(%x: tensor<1x8xf32>, %w0: tensor<16x8xf32>, %w1: tensor<4x16xf32>) -> tensor<1x4xf32> {
  %h = graph.dense %x, %w0 : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  %r = graph.relu %h : tensor<1x16xf32>
  %y = graph.dense %r, %w1 : (tensor<1x16xf32>, tensor<4x16xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
"""


def test_measured_costs_move_the_balanced_cut(tmp_path) -> None:
    """The estimate cuts after the first dense; times that make the second
    dense the heavy op move the cut after the relu (Python API and pass)."""
    import json

    from ember.passes.split_graph import balanced_cuts

    module = ember.parse(TWO_DENSE)
    assert balanced_cuts(module, 2) == (["graph.dense"], [0])
    measured = {("graph.dense", 0): 1.0, ("graph.relu", 0): 1.0, ("graph.dense", 1): 3.0}
    assert balanced_cuts(module, 2, costs=measured) == (["graph.relu"], [0])
    path = tmp_path / "costs.json"
    path.write_text(
        json.dumps(
            {"ops": [{"op": op, "index": i, "seconds": t} for (op, i), t in measured.items()]}
        )
    )
    split = ember.apply_passes(module, f"split-graph{{balance=2 costs={path}}}")
    first, _ = stage_functions(split)
    assert [op.name for op in first.body.block.ops][-2] == "graph.relu"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "cannot read split-graph costs file .*costs.json"),
        ('{"ops": 3}', 'expected an object with a list "ops"'),
        ('{"ops": [{"op": "relu", "index": -1, "seconds": 1}]}', r"ops\[0\] must be"),
        ('{"ops": [{"op": "relu", "index": 0, "seconds": "1"}]}', r"ops\[0\] must be"),
        (
            '{"ops": [{"op": "relu", "index": 0, "seconds": 1}, {"op": "graph.relu", "index": 0, "seconds": 1}]}',
            r"ops\[1\] repeats graph.relu #0",
        ),
        ('{"ops": [{"op": "relu", "index": 1, "seconds": 1}]}', "graph.relu #1, but @main has 1 graph.relu op$"),
        ('{"ops": [{"op": "conv2d", "index": 0, "seconds": 1}]}', "has 0 graph.conv2d ops"),
        ('{"ops": [{"op": "relu", "index": 0, "seconds": 0}]}', "all zero"),
        ('{"ops": [{"op": "relu", "index": 0, "seconds": 1e999}]}', "finite number"),
    ],
)
def test_a_bad_costs_file_is_an_error_naming_the_entry(tmp_path, content, message) -> None:
    path = tmp_path / "costs.json"
    path.write_text(content)
    with pytest.raises(ember.PassError, match=message):
        ember.apply_passes(ember.parse(TWO_DENSE), f"split-graph{{balance=2 costs={path}}}")


def test_costs_need_balance(tmp_path) -> None:
    with pytest.raises(ember.PassError, match="costs= weighs the stages of balance=N"):
        ember.apply_passes(
            ember.parse(TWO_DENSE), f"split-graph{{ops=relu indices=0 costs={tmp_path}/c.json}}"
        )
