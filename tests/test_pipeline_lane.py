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
import os
import threading
from collections.abc import Iterator

import numpy as np
import pytest

import ember
from ember.pipeline import PipelineConfig, PipelineModule, StageError, build, split_graph
from ember.pipeline import executor as executor_module
from ember.errors import RuntimeFailure
from ember.runtime import threads
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


@pytest.mark.parametrize("bad", [0, 5, 16, 31])
def test_a_failure_on_the_lane_names_its_stage_and_input(checked_gather, bad):
    """Input ``bad`` indexes out of bounds in stage 1: the inputs before it
    come out, then a StageError names stage 1 (not stage 0, which ran for
    it too) and the input; the next inputs run as if nothing happened.
    31: the window's last call, whose failure once read as a full window."""
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
    done, failed, seconds = calls.run(2)
    assert done == 2 and not failed and len(calls) == 3
    assert len(seconds) == 1 and seconds[0] >= 0  # one position per slot: its total
    np.testing.assert_array_equal([y.numpy() for y in ys], [[2] * 4, [4] * 4, [-1] * 4])
    with pytest.raises(RuntimeFailure, match="a call list of 3 runs cannot make 4 calls"):
        calls.run(4)  # its table has no fourth entry: it would jump anywhere
    with pytest.raises(RuntimeFailure, match="3 runs cannot hold slots of 2"):
        CallList([run.native for run in runs], stages=2)


# --------------------------------------------------------------------------
# The overlapped lane: each stage on a native thread of its own
# --------------------------------------------------------------------------


def _team(stages: int) -> int:
    """Threads an overlapped window runs on: one per stage, one in all
    without libgomp (the serial stand-in runs the stages one after another)."""
    runtime = threads.ensure_runtime()
    return stages if runtime.parallel else 1


@pytest.mark.parametrize("window", [None, 1, 7])
def test_the_overlapped_lane_keeps_order_over_many_windows(three_stages, window):
    """300 inputs overlapped on the lane (``lane=True`` with ``inline=False``),
    a window per native call: each output is its own input's, in order, none
    lost, on one thread per stage; each stage's time in its thread and the
    window's time per input are recorded."""
    module, lib = three_stages
    inputs = _inputs(300)
    produced = [0]

    def lazily() -> Iterator[np.ndarray]:
        for data in inputs:
            produced[0] += 1
            yield data

    bound = executor_module.LANE_WINDOW if window is None else window
    with PipelineModule(lib, inline=False, lane=True) as pipe:
        outputs = []
        for index, out in enumerate(pipe.map(lazily(), window=window)):
            outputs.append(out[0].numpy())
            assert produced[0] - index <= bound  # lagging inputs count as in flight
        assert pipe.overlapped_lane_runs == len(inputs) and pipe.inline_runs == 0
        # A call per window of new inputs (the ring's slots, or map's
        # window, less the two inputs the stages downstream lag behind), and
        # one that drains them; a window of 1 cannot lag: each call drains.
        assert pipe._lane.window == executor_module.LANE_WINDOW - 2
        per_call = {None: pipe._lane.window, 1: 1, 7: 5}[window]
        drains = 0 if window == 1 else 1
        assert pipe.lane_windows == math.ceil(len(inputs) / per_call) + drains
        # The stream fills and drains back to back in this thread (every
        # stage ran so); a window of 1 has nothing to overlap: it runs each
        # input so, on every core, and no call overlaps.
        assert all(math.isfinite(plan.inline_seconds) for plan in pipe._plans)
        if window == 1:
            assert all(math.isnan(plan.seconds) for plan in pipe._plans)
            assert pipe._lane.samples == 0
        else:
            assert pipe.lane_threads == _team(3)
            assert all(math.isfinite(plan.seconds) for plan in pipe._plans)
            assert pipe._lane.samples == pipe.lane_windows - drains and pipe._lane.seconds > 0
    assert len(outputs) == len(inputs)
    for data, got in zip(inputs, outputs):
        (expected,) = ember.interpret(module, "main", data)
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_the_overlapped_lane_pins_stages_and_gives_the_caller_its_cores_back(three_stages):
    """``pin_cores=True``: each stage thread runs on its core while the
    window runs; the caller's thread (stage 0's) has its own mask again
    after, and kernels the thread count they had."""
    module, lib = three_stages
    before, kernel_threads = os.sched_getaffinity(0), threads.num_threads()
    inputs = _inputs(50)
    with PipelineModule(lib, inline=False, lane=True, pin_cores=True) as pipe:
        assert pipe.pinned_cores == [min(before)] * 3  # all three on cpu:0
        outputs = [out[0].numpy() for out in pipe.map(inputs)]
        assert pipe.overlapped_lane_runs == len(inputs)
        # The stages' share (one kernel thread each, pinned) only while it ran.
        assert threads.num_threads() == kernel_threads
    assert os.sched_getaffinity(0) == before
    for data, got in zip(inputs, outputs):
        np.testing.assert_allclose(got, ember.interpret(module, "main", data)[0], rtol=1e-6)


@pytest.mark.parametrize("window", [None, 2])
@pytest.mark.parametrize("bad", [0, 5, 16, 31, 39])
def test_a_failure_on_the_overlapped_lane_names_stage_1_and_its_input(checked_gather, bad, window):
    """Input ``bad`` fails stage 1 mid-window while stage 0 runs ahead: the
    inputs before it come out, all right, then a StageError names stage 1
    and the input.  A second bad input later in the window is not reached
    (no stage starts a slot past the failed one), so its failure is not the
    one named; the next ``map`` runs as if nothing happened.  With
    ``window=2`` (a new input per call) stage 1 meets input ``bad`` in the
    call after the one that took it (it lags an input behind).  The
    last input fails as the stream drains (back to back in the caller's
    thread)."""
    x = np.arange(8, dtype=np.float32) - 2
    good, wrong = np.array([0, 3, 7, 1], np.int64), np.array([0, 3, 9, 1], np.int64)
    worse = np.array([0, 3, -4, 1], np.int64)
    inputs = [{"x": x, "idx": good} for _ in range(40)]
    inputs[bad] = {"x": x, "idx": wrong}
    if bad + 2 < len(inputs):
        inputs[bad + 2] = {"x": x, "idx": worse}
    expected = np.maximum(x, 0)[good]
    with PipelineModule(checked_gather, inline=False, lane=True) as pipe:
        outputs = []
        with pytest.raises(StageError, match=r"index %at is 9, out of bounds") as failure:
            for out in pipe.map(inputs, window=window):
                outputs.append(out[0].numpy())
        assert failure.value.stage == "mod1" and failure.value.index == bad
        assert str(failure.value).startswith(f"stage @mod1 (llvm on cpu:0) failed on input #{bad}")
        assert "several stages" not in str(failure.value)
        assert len(outputs) == bad and pipe.overlapped_lane_runs == bad + 1
        np.testing.assert_array_equal(outputs, [expected] * bad)
        after = [out[0].numpy() for out in pipe.map(inputs[bad + 3 :])]
        skipped = min(2, 40 - bad - 1)  # inputs bad + 1 and bad + 2
        assert pipe.overlapped_lane_runs == 40 - skipped
    np.testing.assert_array_equal(after, [expected] * len(after))


@pytest.mark.parametrize(
    ("lane_seconds", "windows", "inline_seconds", "plan"),
    [
        # The lane not timed on PROBE_INPUTS windows yet: overlap on it.
        (10e-6, 2, (math.nan, math.nan), "overlapped"),
        # Timed overlapped, not back to back: time that.
        (10e-6, 3, (math.nan, math.nan), "timing back to back"),
        # Tiny stages still overlap when the lane measured that faster: its
        # time per input includes its hand-off, no INLINE_SECONDS shortcut.
        (10e-6, 3, (8e-6, 7e-6), "overlapped"),
        (10e-6, 3, (5e-6, 4e-6), "back to back"),
        # ResNet-18 on two cores: the window's time per input against the sum.
        (0.0225, 3, (0.0110, 0.0118), "overlapped"),
        (0.0231, 3, (0.0110, 0.0118), "back to back"),
    ],
)
def test_auto_compares_the_overlapped_lane_with_back_to_back(
    three_stages, lane_seconds, windows, inline_seconds, plan
):
    """The plan ``map`` follows with ``inline=None`` where it overlaps on
    the lane, from fake times: the lane's per input (no HANDOFF_SECONDS
    charged) against the stages' sum back to back.  With ``lane=False``
    the stage threads' figures decide (none timed: overlapped, to time them)."""
    lib = build(split_graph(three_stages[0], ["relu"], [0]))
    with PipelineModule(lib) as pipe:
        assert pipe._lane_is_free()  # makes the lane
        pipe._lane.seconds, pipe._lane.samples = lane_seconds, windows
        for stage, inline in zip(pipe._plans, inline_seconds, strict=True):
            stage.inline_seconds = inline
            stage.inline_samples = 0 if math.isnan(inline) else executor_module.PROBE_INPUTS
        assert pipe.plan == plan
        if windows >= executor_module.PROBE_INPUTS:
            assert pipe.plan_seconds[0] == lane_seconds
        else:
            assert math.isnan(pipe.plan_seconds[0])
    with PipelineModule(lib, lane=False) as pipe:  # the stage threads' figures
        pipe._lane = executor_module._Lane.create(lib, pipe._plans, 4)
        pipe._lane.seconds, pipe._lane.samples = lane_seconds, windows
        assert pipe.plan == "overlapped" and math.isnan(pipe.plan_seconds[0])


def test_lane_must_be_a_bool_or_none(three_stages):
    with pytest.raises(ember.pipeline.PipelineError, match="lane must be True, False or None"):
        PipelineModule(three_stages[1], lane="yes")


def _doubling_ring() -> tuple[CallList, list, list, tuple]:
    """A call list of two stages per slot (``y = x + x``, then ``z = y + y``)
    over a ring of four slots, input ``i`` being ``i + 1``; the ``y`` and
    ``z`` buffers (-1 until written); and what must outlive the list (the
    module, its inputs and bound runs)."""
    lib = ember.build(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """,
        "llvm",
    )
    xs = [ember.nd.array(np.full(4, i + 1, np.float32)) for i in range(4)]
    ys = [ember.nd.array(np.full(4, -1, np.float32)) for _ in range(4)]
    zs = [ember.nd.array(np.full(4, -1, np.float32)) for _ in range(4)]
    runs = []
    for x, y, z in zip(xs, ys, zs):
        runs += [lib.bind([x], [y]), lib.bind([y], [z])]
    calls = CallList([run.native for run in runs], stages=2)
    return calls, ys, zs, (lib, xs, runs)


def test_a_call_list_runs_a_stream_overlapped_in_order():
    """Two stages per slot (``y = x + x``, then ``z = y + y``), a ring of
    four slots: stage 1 ending an input short of stage 0 leaves that input
    to the next call, which finds it ready; every slot's second stage read
    its own first stage's result.  Ends that would overtake the upstream
    stage or reuse a slot still in use are refused before anything runs."""
    calls, ys, zs, _alive = _doubling_ring()
    calls.start_stream()
    done, failure, seconds = calls.run_overlapped([3, 2])
    assert done == [3, 2] and failure is None and len(seconds) == 2 and min(seconds) >= 0
    assert calls.team == _team(2)
    np.testing.assert_array_equal([z.numpy()[0] for z in zs], [4.0, 8.0, -1.0, -1.0])
    for ends in ([2, 2], [3, 4], [7, 3]):  # back, past stage 0, slot 2 still in use
        with pytest.raises(RuntimeFailure, match=f"cannot run them to \\{ends}"):
            calls.run_overlapped(ends)
    done, failure, _ = calls.run_overlapped([4, 4])
    assert done == [4, 4] and failure is None and calls.stream_done() == [4, 4]
    np.testing.assert_array_equal([z.numpy()[0] for z in zs], [4.0, 8.0, 12.0, 16.0])
    # A call with nothing left to run took no time: each call's own totals.
    assert calls.run_overlapped([4, 4]) == ([4, 4], None, [0.0, 0.0])


def test_a_call_list_fills_and_drains_a_stream_back_to_back():
    """``run_back_to_back`` advances the same stream as ``run_overlapped``,
    in the caller's thread, each input's stages in order: stage 0 fills the
    pipeline alone, the overlapped call finds stage 1's input ready, and
    the drain finishes the inputs stage 1 lags behind; the same bounds are
    refused.  A failed input stops the stream there, every input before it
    finished."""
    calls, ys, zs, _alive = _doubling_ring()
    calls.start_stream()
    done, failure, seconds = calls.run_back_to_back([1, 0])
    assert done == [1, 0] and failure is None and seconds[0] > 0 and seconds[1] == 0
    np.testing.assert_array_equal([y.numpy()[0] for y in ys], [2.0, -1.0, -1.0, -1.0])
    assert [z.numpy()[0] for z in zs] == [-1.0] * 4
    assert calls.run_overlapped([3, 2])[0] == [3, 2]
    with pytest.raises(RuntimeFailure, match=r"cannot run them to \[3, 4\]"):
        calls.run_back_to_back([3, 4])
    done, failure, seconds = calls.run_back_to_back([4, 4])
    assert done == [4, 4] and failure is None and min(seconds) > 0
    np.testing.assert_array_equal([z.numpy()[0] for z in zs], [4.0, 8.0, 12.0, 16.0])


def test_auto_switches_between_the_lanes_plans_in_order(three_stages, monkeypatch):
    """``inline=None`` on the lane: PROBE_INPUTS windows overlapped, then
    inputs back to back to time that, then the faster — the inputs the
    overlapped stream still held come out first at each switch: every
    output is its own input's, in order, none lost."""
    module, lib = three_stages
    monkeypatch.setattr(executor_module, "RETIME_SECONDS", 0.0)  # switch often
    inputs = _inputs(400)
    with PipelineModule(lib) as pipe:
        outputs = [out[0].numpy() for out in pipe.map(inputs, window=5)]
        assert pipe.overlapped_lane_runs > 0 and pipe.inline_runs > 0
        assert pipe.overlapped_lane_runs + pipe.inline_runs == len(inputs)
    for data, got in zip(inputs, outputs, strict=True):
        np.testing.assert_allclose(got, ember.interpret(module, "main", data)[0], rtol=1e-6)


def test_the_bounds_flag_names_the_thread_that_failed():
    """Stages running at once tell their own failure from another's by the
    flag: the failing thread's id, or SEVERAL_THREADS_FAILED once a second
    thread fails too; the first failure's message is the one raised, and
    raising clears the flag."""
    from ember.runtime import jit

    assert jit.bounds_flag() == 0
    jit._report_out_of_bounds(b"index %i", 9, 8)
    assert jit.bounds_flag() == threading.get_native_id()
    jit._report_out_of_bounds(b"index %j", 10, 8)  # the same thread again
    assert jit.bounds_flag() == threading.get_native_id()
    other = threading.Thread(target=jit._report_out_of_bounds, args=(b"index %k", 1, 0))
    other.start()
    other.join()
    assert jit.bounds_flag() == jit.SEVERAL_THREADS_FAILED
    with pytest.raises(RuntimeFailure, match="index %i is 9, out of bounds for size 8"):
        jit.raise_bounds_error("running @main on cpu")
    assert jit.bounds_flag() == 0
