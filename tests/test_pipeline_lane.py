"""``map``'s lane: a window of inline inputs through every stage in one native call.

The lane (``ember.pipeline.executor._Lane``) binds each stage's module to a
ring of buffers once and runs a window of inputs with one call of a
:class:`~ember.runtime.call_list.CallList`.  The guarantees of the other
paths hold here too: in order, nothing lost, nothing allocated per input
but the caller's outputs, a failure named by its stage and input.  Which
path runs is forced with ``inline=True``; nothing here measures time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.pipeline import PipelineConfig, PipelineModule, StageError, build, split_graph
from ember.pipeline import executor as executor_module
from ember.errors import RuntimeFailure
from ember.runtime.call_list import CallList
from ember.runtime.ndarray import ALIGNMENT
from tests.test_index_bounds import _gather
from tests.test_pipeline_handoff import three_stages  # noqa: F401 - a fixture shared with the other paths' tests

# Stage 1 gathers stage 0's output by an index input (tests/test_index_bounds.py's
# gather), checked at run time.
RELU = """
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.relu %x : tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
"""


@pytest.fixture(scope="module")
def checked_gather() -> object:
    """relu, then a gather built with ``bounds_check``: an index outside
    0..7 fails stage 1 (``mod1``) after stage 0 ran for that input."""
    first, second = ember.parse(RELU), ember.parse(_gather())
    cfg = PipelineConfig([first, second])
    cfg["input"]["x"].connect(cfg[first]["input"]["x"])
    cfg["input"]["idx"].connect(cfg[second]["input"]["idx"])
    cfg[first]["output"][0].connect(cfg[second]["input"]["x"])
    cfg[second]["output"][0].connect(cfg["output"][0])
    cfg[second].build_func = lambda module, target, dev: ember.build(
        module, target, options={"bounds_check": True}
    )
    return build(cfg)


def _inputs(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, 4).astype(np.float32) for _ in range(count)]


@pytest.mark.parametrize("window", [None, 1, 3])
def test_the_lane_keeps_order_and_loses_nothing(three_stages, window):
    """100 inputs (not a multiple of any window): each output is its own
    input's, in order, and every input ran on the lane, a window per call."""
    module, lib = three_stages
    inputs = _inputs(100)
    with PipelineModule(lib, inline=True) as pipe:
        outputs = [out[0].numpy() for out in pipe.map(inputs, window=window)]
        assert pipe.inline_runs == len(inputs)
        per_call = executor_module.LANE_WINDOW if window is None else window
        assert pipe.lane_windows == math.ceil(len(inputs) / per_call)
        # The lane timed every stage back to back (NaN until then; the
        # executor's plan reads the times).
        assert all(math.isfinite(plan.inline_seconds) for plan in pipe._plans)
    assert len(outputs) == len(inputs)
    for data, got in zip(inputs, outputs):
        (expected,) = ember.interpret(module, "main", data)
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_the_lane_allocates_nothing_per_input_and_outputs_stay_the_callers(three_stages):
    """After the first window the ring is all there is: more inputs
    allocate no buffer.  Outputs are new arrays, aligned, each still holding
    its own input's result after later windows ran."""
    module, lib = three_stages
    inputs = _inputs(200)
    with PipelineModule(lib, inline=True) as pipe:
        kept = [out[0] for out in pipe.map(inputs[:20])]
        warm = pipe.buffers_allocated
        kept += [out[0] for out in pipe.map(inputs[20:])]
        assert pipe.buffers_allocated == warm > 0
    assert len({id(out) for out in kept}) == len(inputs)
    assert all(out.data_ptr % ALIGNMENT == 0 for out in kept)
    for data, out in zip(inputs, kept):
        (expected,) = ember.interpret(module, "main", data)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("bad", [0, 5, 16])
def test_a_failure_on_the_lane_names_its_stage_and_input(checked_gather, bad):
    """Input ``bad`` indexes out of bounds in stage 1: the inputs before it
    come out, then a StageError names stage 1 (not stage 0, which ran for
    it too) and the input; the next inputs run as if nothing happened."""
    x = np.arange(8, dtype=np.float32) - 2
    good, wrong = np.array([0, 3, 7, 1], np.int64), np.array([0, 3, 9, 1], np.int64)
    inputs = [{"x": x, "idx": wrong if i == bad else good} for i in range(40)]
    expected = np.maximum(x, 0)[good]
    with PipelineModule(checked_gather, inline=True) as pipe:
        outputs = []
        with pytest.raises(StageError, match=r"index %at is 9, out of bounds") as failure:
            for out in pipe.map(inputs):
                outputs.append(out[0].numpy())
        assert failure.value.stage == "mod1" and failure.value.index == bad
        assert str(failure.value).startswith(f"stage @mod1 (llvm on cpu:0) failed on input #{bad}")
        assert len(outputs) == bad
        np.testing.assert_array_equal(outputs, [expected] * bad)
        assert pipe.lane_windows >= 1
        after = [out[0].numpy() for out in pipe.map(inputs[bad + 1 :])]
    np.testing.assert_array_equal(after, [expected] * len(after))


def test_stages_with_extern_functions_take_the_general_path():
    """A stage whose errors come back through Python (an extern function)
    has no native entry for the lane: inline inputs run stage by stage."""
    module = ember.parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = graph.call_extern "test_lane.copy"(%x) : (tensor<4xf32>) -> tensor<4xf32>
          %1 = graph.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
          func.return %1 : tensor<4xf32>
        }
        """
    )

    @ember.runtime.register_func("test_lane.copy", override=True)
    def copy(x, out):
        np.copyto(np.from_dlpack(out), np.from_dlpack(x))

    try:
        lib = build(split_graph(module, ["graph.call_extern"], [0]))
        inputs = _inputs(20)
        with PipelineModule(lib, inline=True) as pipe:
            outputs = [out[0].numpy() for out in pipe.map(inputs)]
            assert pipe.inline_runs == len(inputs) and pipe.lane_windows == 0
        np.testing.assert_array_equal(outputs, [2 * data for data in inputs])
    finally:
        ember.runtime.remove_global_func("test_lane.copy")


def test_a_stage_on_another_backend_takes_the_general_path(three_stages):
    """The ``interp`` backend binds no native entry: no lane, same results."""
    module, _ = three_stages
    cfg = PipelineConfig.from_module(split_graph(module, ["relu", "add"], [0, 0]))
    cfg.stages[1].target = "interp"
    inputs = _inputs(10)
    with PipelineModule(build(cfg), inline=True) as pipe:
        outputs = [out[0].numpy() for out in pipe.map(inputs)]
        assert pipe.inline_runs == len(inputs) and pipe.lane_windows == 0
    for data, got in zip(inputs, outputs):
        np.testing.assert_allclose(got, ember.interpret(module, "main", data)[0], rtol=1e-6)


def test_a_narrow_first_window_does_not_narrow_the_lane(three_stages):
    """The ring is made once, for LANE_WINDOW inputs, whatever window the
    first ``map`` asked for."""
    _, lib = three_stages
    inputs = _inputs(2 * executor_module.LANE_WINDOW)
    with PipelineModule(lib, inline=True) as pipe:
        list(pipe.map(inputs[:2], window=1))
        assert pipe.lane_windows == 2
        list(pipe.map(inputs))
        assert pipe.lane_windows == 2 + 2


def test_a_call_list_runs_the_first_count_calls_in_order():
    """Three bound runs of ``y = x + x`` over their own buffers: ``run(2)``
    runs the first two, and reports what they took."""
    lib = ember.build(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """,
        "llvm",
    )
    xs = [ember.nd.array(np.full(4, i + 1, np.float32)) for i in range(3)]
    ys = [ember.nd.array(np.full(4, -1, np.float32)) for _ in range(3)]
    runs = [lib.bind([x], [y]) for x, y in zip(xs, ys)]
    calls = CallList([run.native for run in runs])
    done, seconds = calls.run(2)
    assert done == 2 and len(calls) == 3
    assert len(seconds) == 1 and seconds[0] >= 0  # one position per slot: its total
    np.testing.assert_array_equal([y.numpy() for y in ys], [[2] * 4, [4] * 4, [-1] * 4])
    with pytest.raises(RuntimeFailure, match="a call list of 3 runs cannot make 4 calls"):
        calls.run(4)  # its table has no fourth entry: it would jump anywhere
    with pytest.raises(RuntimeFailure, match="3 runs cannot hold slots of 2"):
        CallList([run.native for run in runs], stages=2)
