"""The pipeline executor's hand-off: recycled buffers, cheap channels, the
inline fast path, the kernel threads each stage gets.

The guarantees of ``tests/test_pipeline_executor.py`` (in order, nothing
lost, bounded memory, errors naming the stage) are checked here on both
paths an input can take: through the stage threads (``inline=False``) and
back to back in the caller's thread (``inline=True``, and ``inline=None``
when the fast path chooses itself).  Nothing here measures time: which path
runs is forced, or decided by a threshold the test sets.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator

import numpy as np
import pytest

import ember
from ember.pipeline import PipelineConfig, PipelineModule, StageError, build, split_graph
from ember.pipeline import executor as executor_module
from ember.pipeline.executor import _Channel
from ember.runtime import list_global_func_names, register_func, remove_global_func, threads
from ember.testing import workloads

TINY_PARAMS = ("weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var", "dweight")

# Three stages, so that a value crosses two channels and one skips a stage.
THREE_STAGES = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  %1 = graph.exp %0 : tensor<4xf32>
  %2 = graph.add %1, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.sigmoid %2 : tensor<4xf32>
  %4 = graph.add %3, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %4 : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def three_stages() -> tuple[object, object]:
    module = ember.parse(THREE_STAGES)
    return module, build(split_graph(module, ["relu", "add"], [0, 0]))


@pytest.fixture(scope="module")
def tiny_pipe() -> tuple[object, dict[str, np.ndarray], object]:
    module, params = workloads.get("tiny_pipe")
    return module, params, build(split_graph(module, ["relu"], [0]), params=params)


@pytest.fixture
def externs() -> Iterator[None]:
    yield
    for name in list_global_func_names():
        if name.startswith("test_handoff."):
            remove_global_func(name)


def _inputs(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, 4).astype(np.float32) for _ in range(count)]


@pytest.mark.parametrize("inline", [False, True])
def test_buffers_are_recycled_and_outputs_stay_the_callers(three_stages, inline):
    """320 inputs allocate a few buffers per value, as many as were ever in
    use at once (how many depends on the threads' timing, never on the
    number of inputs); every output kept by the caller still holds its own
    input's result (outputs are not recycled), in order, none lost."""
    module, lib = three_stages
    inputs = _inputs(320)
    with PipelineModule(lib, inline=inline) as pipe:
        kept = [out[0] for out in pipe.map(inputs)]
        if inline:
            # map's lane: a ring of LANE_WINDOW inputs, each with a buffer
            # per value (x, %0 and %2 crossing cuts, and the output).
            assert pipe.buffers_allocated == 4 * executor_module.LANE_WINDOW
        else:
            # 3 pooled values (x, %0, %2); map keeps at most 10 inputs in
            # flight, so no value needs more than 10 buffers.
            assert 1 <= pipe.buffers_allocated <= 3 * 10
        assert pipe.inline_runs == (320 if inline else 0)
    assert len(kept) == len(inputs)
    assert len({id(out) for out in kept}) == len(inputs)
    for data, out in zip(inputs, kept):
        (expected,) = ember.interpret(module, "main", data)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_submit_and_producer_consumer_keep_order_on_the_inline_path(three_stages):
    module, lib = three_stages
    inputs = _inputs(100)
    expected = [ember.interpret(module, "main", data)[0] for data in inputs]
    with PipelineModule(lib, inline=True, max_in_flight=8) as pipe:
        futures = [pipe.submit(data) for data in inputs]
        by_futures = [f.result(timeout=30)[0].numpy() for f in futures]

        def produce() -> None:
            for data in inputs:
                pipe.set_input("x", data)
                pipe.run(block=True)

        producer = threading.Thread(target=produce)
        producer.start()
        by_threads = [pipe.get_output(timeout=30)[0].numpy() for _ in inputs]
        producer.join()
        assert pipe.peak_in_flight <= 8
    for results in (by_futures, by_threads):
        np.testing.assert_allclose(results, expected, rtol=1e-6)


def _checked_library() -> object:
    """Stage 0 fails on inputs whose sum is negative; stage 1 doubles."""

    @register_func("test_handoff.check", override=True)
    def check(x, out):
        values = np.from_dlpack(x)
        if values.sum() < 0:
            raise ValueError("negative input")
        np.copyto(np.from_dlpack(out), values)

    module = ember.parse(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = graph.call_extern "test_handoff.check"(%x) : (tensor<4xf32>) -> tensor<4xf32>
          %1 = graph.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
          func.return %1 : tensor<4xf32>
        }
        """
    )
    return build(split_graph(module, ["graph.call_extern"], [0]))


@pytest.mark.parametrize("inline", [False, True])
def test_errors_name_the_stage_and_give_their_buffers_back(externs, inline):
    lib = _checked_library()
    signs = [1.0, -1.0] * 60
    with PipelineModule(lib, inline=inline) as pipe:
        outcomes = []
        with pytest.raises(StageError, match="input #1"):
            for out in pipe.map([np.full(4, s, np.float32) for s in signs[:4]]):
                outcomes.append(out)  # map stops at the first failure
        assert len(outcomes) == 1
        offsets = set()  # map read 2 inputs (inline) or its window: either way
        for index, sign in enumerate(signs):
            pipe.set_input("x", np.full(4, sign, np.float32))
            pipe.run()
            if sign > 0:
                np.testing.assert_array_equal(pipe.get_output(timeout=30)[0].numpy(), 2)
            else:
                with pytest.raises(StageError, match=r"stage @main_0 \(llvm on cpu:0\)") as e:
                    pipe.get_output(timeout=30)
                assert e.value.stage == "main_0"
                offsets.add(e.value.index - index)
        assert len(offsets) == 1 and offsets.pop() in (2, 4)  # numbered in order
        # A failed input's buffers went back: 60 failures allocated no more.
        assert pipe.buffers_allocated <= 10


def test_the_fast_path_follows_the_stage_times(three_stages, monkeypatch):
    """``inline=None``: inputs run in the caller's thread while the timed
    stages together stay under INLINE_SECONDS; else, once each plan is
    timed, the faster one (here forced through HANDOFF_SECONDS).  Through
    the stage threads (``lane=False``): the lane's plan is timed in
    tests/test_pipeline_lane.py."""
    _, lib = three_stages
    inputs = _inputs(30)
    monkeypatch.setattr(executor_module, "INLINE_SECONDS", math.inf)
    with PipelineModule(lib, lane=False) as pipe:
        first = [out[0].numpy() for out in pipe.map(inputs)]
        # The first input runs through the threads: no stage was timed yet.
        assert 0 < pipe.inline_runs < len(inputs)
    monkeypatch.setattr(executor_module, "INLINE_SECONDS", 0.0)
    monkeypatch.setattr(executor_module, "HANDOFF_SECONDS", -math.inf)
    with PipelineModule(lib, lane=False) as pipe:
        again = [out[0].numpy() for out in pipe.map(inputs)]
        # PROBE_INPUTS inputs timed the back-to-back plan; the rest overlapped.
        assert pipe.inline_runs == executor_module.PROBE_INPUTS
        assert pipe.plan == "overlapped"
    monkeypatch.setattr(executor_module, "HANDOFF_SECONDS", math.inf)
    with PipelineModule(lib, lane=False) as pipe:
        third = [out[0].numpy() for out in pipe.map(inputs)]
        # The inputs in flight before the first finished went through the threads.
        assert 0 < pipe.inline_runs < len(inputs) and pipe.plan == "back to back"
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, third)


@pytest.mark.parametrize(
    ("stage_seconds", "inline_seconds", "plan"),
    [
        # Nothing timed: the first input goes through the threads.
        ((math.nan, math.nan), (math.nan, math.nan), "overlapped"),
        # Timed in the threads only, too big to run inline unseen: time it back to back.
        ((0.020, 0.021), (math.nan, math.nan), "timing back to back"),
        # Tiny stages: back to back, whatever the threads did.
        ((20e-6, 30e-6), (math.nan, math.nan), "back to back"),
        # ResNet-18 on two cores: two 21 ms stages overlapped against a 22.8 ms
        # whole network on both cores: overlapping wins...
        ((0.0210, 0.0212), (0.0110, 0.0118), "overlapped"),
        # ... unless interference makes the overlapped stages slower than that.
        ((0.0229, 0.0236), (0.0110, 0.0118), "back to back"),
        # Unbalanced stages: back to back wins.
        ((0.030, 0.012), (0.015, 0.006), "back to back"),
    ],
)
def test_auto_picks_the_faster_plan_from_measured_stage_times(
    tiny_pipe, stage_seconds, inline_seconds, plan
):
    """The plan ``inline=None`` chooses, from fake stage times of a
    two-stage pipeline: nothing runs, so nothing measured overrides them.
    The stage threads' plan (``lane=False``: the lane's own overlapped
    time decides where map overlaps on it)."""
    lib = tiny_pipe[2]
    with PipelineModule(lib, lane=False) as pipe:
        for stage, seconds, inline in zip(pipe._plans, stage_seconds, inline_seconds, strict=True):
            stage.seconds, stage.inline_seconds = seconds, inline
            stage.inline_samples = 0 if math.isnan(inline) else executor_module.PROBE_INPUTS
        assert pipe.plan == plan
        if plan == "overlapped" and not math.isnan(stage_seconds[0]):
            # One back-to-back time short of PROBE_INPUTS: still timing it.
            pipe._plans[0].inline_samples -= 1
            assert pipe.plan == "timing back to back"
    with PipelineModule(lib, inline=False) as pipe:
        assert pipe.plan == "overlapped"
    with PipelineModule(lib, inline=True) as pipe:
        assert pipe.plan == "back to back"


@pytest.mark.parametrize(
    ("stage_seconds", "chosen", "then"),
    [
        ((0.0210, 0.0212), "overlapped", "timing back to back"),
        ((0.0229, 0.0236), "back to back", "overlapped"),
    ],
)
def test_auto_times_the_plan_it_did_not_choose_again(
    tiny_pipe, monkeypatch, stage_seconds, chosen, then
):
    """After RETIME_SECONDS on a chosen plan, the other plan's times are
    forgotten, so that it is measured again (the load may have changed)."""
    monkeypatch.setattr(executor_module, "RETIME_SECONDS", 0.0)
    with PipelineModule(tiny_pipe[2], lane=False) as pipe:
        for stage, seconds, inline in zip(pipe._plans, stage_seconds, (0.0110, 0.0118)):
            stage.seconds, stage.inline_seconds = seconds, inline
            stage.inline_samples = executor_module.PROBE_INPUTS
        assert pipe.plan == chosen  # the choice is made, and its time noted
        assert pipe.plan == then  # RETIME_SECONDS later: the other plan is timed again
        forgotten = 1 if chosen == "overlapped" else 0
        assert math.isnan(pipe.plan_seconds[forgotten])
    monkeypatch.setattr(executor_module, "RETIME_SECONDS", math.inf)
    with PipelineModule(tiny_pipe[2], lane=False) as pipe:
        for stage, seconds, inline in zip(pipe._plans, stage_seconds, (0.0110, 0.0118)):
            stage.seconds, stage.inline_seconds = seconds, inline
            stage.inline_samples = executor_module.PROBE_INPUTS
        assert [pipe.plan for _ in range(3)] == [chosen] * 3


def _record_kernel_threads(monkeypatch, module, seen: list[int]) -> None:
    """Each run of ``module`` appends the kernel thread count it sees to ``seen``."""
    original = module.run

    def spy(inputs, outputs):
        seen.append(threads.num_threads())
        original(inputs, outputs)

    monkeypatch.setattr(module, "run", spy)


def test_back_to_back_runs_on_every_kernel_thread(tiny_pipe, monkeypatch):
    """While its workers hold the cores' shares, an executor that runs an
    input back to back gives its kernels every thread, then the share again."""
    _, _, lib = tiny_pipe
    before = threads.num_threads()
    seen: list[int] = []
    with PipelineModule(lib) as pipe:
        pipe.set_input("data", np.zeros((1, 3, 8, 8), np.float32))
        pipe.run()  # the first input starts the workers
        pipe.get_output(timeout=60)
        share = pipe.kernel_threads
        assert threads.num_threads() == share
        _record_kernel_threads(monkeypatch, pipe._plans[0].stage.module, seen)
        pipe.run(sync=True)
        pipe.get_output(timeout=60)
        assert threads.num_threads() == share
    assert seen == [before]


def test_back_to_back_gets_every_kernel_thread_beside_idle_executors(tiny_pipe, monkeypatch):
    """Issue 15: another executor whose workers started and sit idle (the
    benchmark's inline=False one) held its share against a back-to-back
    run, whose kernels then ran on one thread; they get every thread now,
    and the shares again after it."""
    _, _, lib = tiny_pipe
    before = threads.num_threads()
    if min(before, threads.available_cores()) < 2:
        pytest.skip("needs two kernel threads to tell every thread from a share")
    data = np.zeros((1, 3, 8, 8), np.float32)
    seen: list[int] = []
    with PipelineModule(lib, inline=False) as idle, PipelineModule(lib) as pipe:
        for started in (idle, pipe):
            started.set_input("data", data)
            started.run(timeout=60)  # starts its workers, which take a share
            started.get_output(timeout=60)
        share = threads.num_threads()
        assert share < before
        _record_kernel_threads(monkeypatch, pipe._plans[0].stage.module, seen)
        pipe.run(sync=True)
        pipe.get_output(timeout=60)
        lane_run = executor_module._Lane.run

        def lane_spy(lane, window, first):
            seen.append(threads.num_threads())
            return lane_run(lane, window, first)

        monkeypatch.setattr(executor_module._Lane, "run", lane_spy)
        with PipelineModule(lib, inline=True) as inline:  # holds no share itself
            inline.set_input("data", data)
            inline.run()
            inline.get_output(timeout=60)
            assert len(list(inline.map([data] * 2))) == 2  # map's lane: one window
            assert inline.lane_windows == 1
        assert threads.num_threads() == share
    assert seen == [before, before, before]
    assert threads.num_threads() == before


def test_back_to_back_keeps_the_share_beside_busy_workers(tiny_pipe, three_stages, monkeypatch):
    """While another executor's worker runs an input, kernels run beside it:
    a back-to-back run keeps the share instead of taking every thread."""
    _, _, lib = tiny_pipe
    _, busy_lib = three_stages
    before = threads.num_threads()
    if min(before, threads.available_cores()) < 2:
        pytest.skip("needs two kernel threads to tell every thread from a share")
    entered, release = threading.Event(), threading.Event()
    busy_stage = busy_lib.stages[0].module
    original_busy = busy_stage.run

    def hold(inputs, outputs):
        entered.set()
        release.wait(60)
        original_busy(inputs, outputs)

    seen: list[int] = []
    with PipelineModule(busy_lib, inline=False) as busy, PipelineModule(lib, inline=True) as pipe:
        monkeypatch.setattr(busy_stage, "run", hold)
        future = busy.submit(np.zeros(4, np.float32))
        try:
            assert entered.wait(60)
            share = threads.num_threads()
            _record_kernel_threads(monkeypatch, lib.stages[0].module, seen)
            pipe.set_input("data", np.zeros((1, 3, 8, 8), np.float32))
            pipe.run()
            pipe.get_output(timeout=60)
        finally:
            release.set()
        future.result(timeout=60)
    assert share < before
    assert seen == [share]


def test_stages_share_the_cores_for_kernel_threads(tiny_pipe):
    """Two unpinned stages on the host: each kernel team gets half the cores
    (at least one) while the workers run; the count comes back at close."""
    _, _, lib = tiny_pipe
    before = threads.num_threads()
    with PipelineModule(lib, inline=False) as pipe:
        share = max(1, min(before, threads.available_cores() // 2))
        assert pipe.kernel_threads == share
        pipe.set_input("data", np.zeros((1, 3, 8, 8), np.float32))
        pipe.run()
        pipe.get_output(timeout=60)
        assert threads.num_threads() == share
    assert threads.num_threads() == before
    cfg = PipelineConfig.from_module(split_graph(workloads.get("tiny_pipe")[0], ["relu"], [0]))
    cfg.stages[1].dev = "cpu:1"
    with PipelineModule(build(cfg, params=tiny_pipe[1]), pin_cores=True) as pipe:
        assert pipe.kernel_threads == 1


def test_tiny_pipe_is_exact_on_both_paths(tiny_pipe):
    module, params, lib = tiny_pipe
    rng = np.random.default_rng(1)
    inputs = [rng.uniform(-1, 1, (1, 3, 8, 8)).astype("float32") for _ in range(40)]
    weights = [params[n] for n in TINY_PARAMS]
    results = {}
    for inline in (False, True):
        with PipelineModule(lib, inline=inline) as pipe:
            results[inline] = [out[0].numpy() for out in pipe.map(inputs)]
    np.testing.assert_array_equal(results[False], results[True])
    for data, got in zip(inputs[:3], results[False]):
        expected = ember.interpret(module, "main", data, *weights)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_channel_is_a_bounded_fifo_that_loses_no_wake_up():
    """A producer far faster than the consumer, capacity 2: every item
    arrives, in order, and the channel never holds more than 2."""
    channel = _Channel(capacity=2)
    count = 5000
    seen: list[int] = []
    longest = [0]

    def consume() -> None:
        for _ in range(count):
            longest[0] = max(longest[0], len(channel))
            seen.append(channel.get(timeout=30))

    consumer = threading.Thread(target=consume)
    consumer.start()
    for i in range(count):
        channel.put(i)
    consumer.join(timeout=60)
    assert seen == list(range(count))
    assert longest[0] <= 2
    with pytest.raises(Exception) as empty:
        channel.get(timeout=0.01)
    assert type(empty.value).__name__ == "Empty"


def test_values_between_stages_are_preallocated_when_the_workers_start(three_stages):
    """Each value between stages gets, at start, as many buffers as the
    threads can hold at once (the writer's, then per stage up to its last
    reader a full queue and the running input): none is allocated later."""
    _, lib = three_stages
    with PipelineModule(lib, inline=False, capacity=2) as pipe:
        list(pipe.map(_inputs(1)))
        between = {
            key: pipe._layout.pools[slot]
            for key, slot in pipe._layout.slots.items()
            if key[0] >= 0 and pipe._layout.pools[slot] is not None
        }
        # relu's value is read by stages 1 and 2; exp+add's by stage 2.
        assert {key: pool.span for key, pool in between.items()} == {(0, 0): 2, (1, 0): 1}
        assert {key: pool.allocated for key, pool in between.items()} == {(0, 0): 7, (1, 0): 4}
        list(pipe.map(_inputs(300)))
        assert {key: pool.allocated for key, pool in between.items()} == {(0, 0): 7, (1, 0): 4}


def test_outputs_from_blocks_stay_the_callers_own(three_stages):
    """Global outputs are carved from blocks shared by many inputs: every
    one is a distinct array that later inputs never write (kept as NDArrays
    here, not copied out)."""
    module, lib = three_stages
    inputs = [np.full(4, i - 50, np.float32) for i in range(100)]
    with PipelineModule(lib, inline=False) as pipe:
        kept = [outputs[0] for outputs in pipe.map(inputs)]
        kept += [outputs[0] for outputs in pipe.map(inputs[:40])]
    assert len({array.data_ptr for array in kept}) == 140
    for data, got in zip(inputs + inputs[:40], kept):
        expected = ember.interpret(module, "main", data)[0]
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


def test_inline_must_be_a_bool_or_none(three_stages):
    with pytest.raises(ember.pipeline.PipelineError, match="inline must be True, False or None"):
        PipelineModule(three_stages[1], inline="yes")


def test_benchmark_says_which_path_ran(three_stages, monkeypatch):
    _, lib = three_stages
    monkeypatch.setattr(executor_module, "INLINE_SECONDS", math.inf)
    with PipelineModule(lib, lane=False) as pipe:  # the stage threads' plan
        pipe.set_input("x", np.ones(4, np.float32))
        result = pipe.benchmark(20, warmup=1)  # the warm-up input times the stages
        assert result.inline == 20
        assert "20 ran inline, stages too small to pipeline" in str(result)
    with PipelineModule(lib, inline=False) as pipe:
        pipe.set_input("x", np.ones(4, np.float32))
        result = pipe.benchmark(20)
        assert result.inline == 0 and "inline" not in str(result)
    with PipelineModule(lib, inline=False, lane=True) as pipe:
        pipe.set_input("x", np.ones(4, np.float32))
        result = pipe.benchmark(20)
        assert result.inline == 0 and result.overlapped_lane == 20
        assert "20 overlapped on map's lane" in str(result)
