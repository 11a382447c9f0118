"""The pipeline executor never hangs its caller.

Failures: a ``KeyboardInterrupt`` or ``SystemExit`` in a stage wakes every
waiter (``get_output``, ``run``, futures) with a ``StageError`` naming the
stage, and every later call raises it; calling the executor from inside
its own stage is an error at once; Ctrl-C in the caller closes the
executor, with no thread left and no hang at exit (checked in
subprocesses that send themselves SIGINT).

Backpressure (issue 17): a single thread that over-submits gets
``PipelineFull`` instead of a hang; producer and consumer threads move
10,000 inputs in order; ``map`` streams 10,000 inputs with bounded memory;
``submit`` hands out futures.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.pipeline import (
    PipelineClosedError,
    PipelineEmpty,
    PipelineError,
    PipelineFull,
    PipelineLibrary,
    PipelineModule,
    PipelineTimeout,
    StageError,
    build,
    split_graph,
)
from ember.runtime import list_global_func_names, register_func, remove_global_func

REPO_ROOT = Path(__file__).resolve().parent.parent


def _pipeline_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ember-pipeline-")]


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every test closes what it opens: no stage thread outlives it."""
    yield
    gc.collect()
    deadline = time.monotonic() + 5
    while _pipeline_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _pipeline_threads(), f"threads left running: {_pipeline_threads()}"


@pytest.fixture
def externs() -> Iterator[None]:
    yield
    for name in list_global_func_names():
        if name.startswith("test_pipeline_safety."):
            remove_global_func(name)


def _thread(target) -> threading.Thread:
    # Daemon: a test that fails by hanging must not keep pytest alive.
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


# --------------------------------------------------------------------------
# Failures: interp stages around an extern function the test controls
# --------------------------------------------------------------------------

CHAIN = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.call_extern "test_pipeline_safety.stage"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.relu %0 : tensor<4xf32>
  %2 = graph.exp %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""


def _chain(stage) -> PipelineLibrary:
    """Stage 0 calls ``stage(values)`` then copies its input; stage 1 is exp(relu)."""

    @register_func("test_pipeline_safety.stage", override=True)
    def call(x, out):
        values = np.from_dlpack(x)
        stage(values)
        np.copyto(np.from_dlpack(out), values)

    return build(split_graph(ember.parse(CHAIN), ["relu"], [0], target="interp"))


def _x(value: float) -> np.ndarray:
    return np.full(4, value, np.float32)


@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit])
def test_a_stage_that_raises_keyboard_interrupt_or_system_exit_wakes_every_waiter(
    externs, fatal
):
    go = threading.Event()

    def stage(values: np.ndarray) -> None:
        if values[0] < 0:
            go.wait(30)
            raise fatal()

    lib = _chain(stage)
    with PipelineModule(lib, max_in_flight=2) as pipe:
        pipe.set_input("x", _x(-1))
        assert pipe.run() == 0  # this input will stop the pipeline
        future = pipe.submit(_x(1))  # now full: a future and an unread input
        caught: dict[str, BaseException] = {}

        def wait(name, call):
            def waiter() -> None:
                try:
                    call()
                except BaseException as e:  # noqa: BLE001 - checked below
                    caught[name] = e

            return _thread(waiter)

        waiters = [
            wait("get_output", lambda: pipe.get_output(block=True)),
            wait("run", lambda: pipe.run(block=True)),
            wait("future", lambda: future.result(timeout=30)),
        ]
        time.sleep(0.1)  # let them wait
        go.set()
        for waiter in waiters:
            waiter.join(30)
            assert not waiter.is_alive(), "a waiter was never woken"
        assert set(caught) == {"get_output", "run", "future"}
        error = caught["get_output"]
        assert isinstance(error, StageError)
        assert (error.stage, error.index) == ("main_0", 0)
        assert isinstance(error.cause, fatal)
        assert str(error) == (
            f"stage @main_0 (interp on cpu:0) failed on input #0: {fatal.__name__}; "
            "the pipeline stopped (create a new executor)"
        )
        assert caught["run"] is error and caught["future"] is error
        # Every later call raises the same error, naming the stage.
        for call in (pipe.run, pipe.get_output, lambda: pipe.submit(_x(2))):
            with pytest.raises(StageError) as again:
                call()
            assert again.value is error


def test_a_keyboard_interrupt_in_a_stage_run_in_the_callers_thread(externs):
    def stage(values: np.ndarray) -> None:
        if values[0] < 0:
            raise KeyboardInterrupt

    pipe = PipelineModule(_chain(stage))
    pipe.set_input("x", _x(1))
    pipe.run()  # pipelined, still unread
    pipe.set_input("x", _x(-1))
    with pytest.raises(KeyboardInterrupt):
        pipe.run(sync=True)
    assert pipe.closed  # like Ctrl-C in the caller: workers stopped
    with pytest.raises(StageError, match=r"@main_0 .* failed on input #1: KeyboardInterrupt"):
        pipe.get_output()


def test_using_the_executor_from_inside_its_own_stage_is_an_error(externs):
    holder: list[PipelineModule] = []
    errors: list[PipelineError] = []
    gate = threading.Event()

    def stage(values: np.ndarray) -> None:
        if values[0] == 2:
            gate.wait(30)  # until the callback below is attached
        if values[0] < 0:
            pipe = holder[0]
            # Before: get_output waited for this very input (a deadlock).
            for call in (
                lambda: pipe.get_output(timeout=2),
                lambda: pipe.run(timeout=2),
                lambda: pipe.submit(_x(1)),
                pipe.close,
            ):
                try:
                    call()
                except PipelineError as e:
                    errors.append(e)

    # inline=False: every input through the workers (auto could time its
    # back-to-back plan on the submitted input, in this thread).
    with PipelineModule(_chain(stage), inline=False) as pipe:
        holder.append(pipe)
        pipe.set_input("x", _x(-1))
        pipe.run()  # in stage 0's worker thread
        pipe.run(sync=True)  # in this thread, inside the stage
        results = [pipe.get_output(timeout=30)[0].numpy() for _ in range(2)]
        np.testing.assert_array_equal(results[0], np.ones(4))
        np.testing.assert_array_equal(results[1], np.ones(4))
        # A future's callback runs in the last stage's worker.
        future = pipe.submit(_x(2))
        future.add_done_callback(lambda f: _try(pipe.run, errors))
        gate.set()
        future.result(timeout=30)
        assert pipe.in_flight == 0
    names = ["get_output()", "run()", "submit()", "close()"] * 2 + ["run()"]
    assert [str(e).split(" called from")[0] for e in errors] == names
    for error in errors[:-1]:
        assert "called from inside stage @main_0 (interp on cpu:0) of pipeline @main" in str(error)
    assert "called from inside stage @main_1" in str(errors[-1])


def _try(call, errors: list[PipelineError]) -> None:
    try:
        call()
    except PipelineError as e:
        errors.append(e)


CTRL_C_SCRIPT = f"""
import os, signal, sys, threading
# Python's own Ctrl-C handler, whatever this process inherited: a parent that
# ignores SIGINT (Ray's test cluster leaves pytest so) passes SIG_IGN on.
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np, ember
from ember.pipeline import PipelineModule, build, split_graph

forever = sys.argv[1] == "stage-never-returns"

@ember.register_func("test_pipeline_safety.stage")
def stage(x, out):
    if np.from_dlpack(x)[0] < 0:  # a slow input: Ctrl-C comes while it runs
        threading.Event().wait(None if forever else 0.3)
    np.copyto(np.from_dlpack(out), np.from_dlpack(x))

lib = build(split_graph(ember.parse({CHAIN!r}), ["relu"], [0], target="interp"))
ones, slow = np.ones(4, np.float32), np.full(4, -1, np.float32)

def interrupted(wait):
    # inline=False: the waits under test are on the stage threads (auto could
    # run a stage timed as small back to back in this thread instead).
    pipe = PipelineModule(lib, max_in_flight=2, inline=False)
    pipe.set_input("x", ones)
    pipe.run()
    pipe.get_output()  # warm: the next stage run starts at once
    pipe.set_input("x", slow)
    threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        wait(pipe)
    except KeyboardInterrupt:
        left = [t.name for t in threading.enumerate() if t.name.startswith("ember-pipeline-")]
        return f"closed: {{pipe.closed}} threads left: {{left}}"
    return "not interrupted"

if forever:
    pipe = PipelineModule(lib, inline=False)
    pipe.set_input("x", slow)
    pipe.run()
    threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
    pipe.get_output()  # Ctrl-C goes up uncaught: the interpreter must still exit
    print("not interrupted")
for name, wait in [
    ("get_output", lambda pipe: (pipe.run(), pipe.get_output())),
    ("run", lambda pipe: (pipe.run(), pipe.run(), pipe.run(block=True))),
    ("map", lambda pipe: list(pipe.map([slow, ones]))),
]:
    print(name, interrupted(wait))
"""


def _run_script(mode: str) -> subprocess.CompletedProcess[str]:
    # The timeout is the hang detector: a clean exit takes a few seconds.
    return subprocess.run(
        [sys.executable, "-c", CTRL_C_SCRIPT, mode],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ctrl_c_while_waiting_closes_the_executor_and_leaves_no_thread():
    done = _run_script("stage-returns")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{waiting_in} closed: True threads left: []"
        for waiting_in in ("get_output", "run", "map")
    ]


def test_ctrl_c_with_a_stage_that_never_returns_still_exits():
    done = _run_script("stage-never-returns")
    assert done.returncode != 0
    assert done.stderr.strip().endswith("KeyboardInterrupt"), done.stderr
    assert "not interrupted" not in done.stdout


def test_timeouts_must_be_seconds(externs):
    with PipelineModule(_chain(lambda values: None)) as pipe:
        pipe.set_input("x", _x(1))
        for bad in (-1, float("nan"), "5", True):
            with pytest.raises(PipelineError, match=r"run\(\): timeout must be a number"):
                pipe.run(timeout=bad)
        with pytest.raises(PipelineError, match=r"get_output\(\): timeout must be"):
            pipe.get_output(timeout=-0.5)
        assert pipe.in_flight == 0


# --------------------------------------------------------------------------
# Backpressure: a compiled two-stage pipeline, fast enough for 10,000 inputs
# --------------------------------------------------------------------------

WIDTH = 1024  # 4 KiB per value: a leak of one value per input would be ~40 MB
COUNT = 10_000

NETWORK = f"""
func.func @main(%x: tensor<1x{WIDTH}xf32>, %b: tensor<1x{WIDTH}xf32>) -> tensor<1x{WIDTH}xf32> {{
  %0 = graph.add %x, %b : (tensor<1x{WIDTH}xf32>, tensor<1x{WIDTH}xf32>) -> tensor<1x{WIDTH}xf32>
  %1 = graph.relu %0 : tensor<1x{WIDTH}xf32>
  %2 = graph.add %1, %b : (tensor<1x{WIDTH}xf32>, tensor<1x{WIDTH}xf32>) -> tensor<1x{WIDTH}xf32>
  func.return %2 : tensor<1x{WIDTH}xf32>
}}
"""
LANES = np.arange(WIDTH, dtype=np.float32)  # exact in float32: integers < 2**24


@pytest.fixture(scope="module")
def counting() -> PipelineLibrary:
    """Input ``i`` is ``i + lanes``; its output ``i + lanes + 2`` shows a lost,
    duplicated or reordered result."""
    split = split_graph(ember.parse(NETWORK), ["relu"], [0])
    return build(split, params={"b": np.ones((1, WIDTH), np.float32)})


def _input(index: int) -> np.ndarray:
    return (index + LANES)[None, :]


def _check(index: int, outputs) -> None:
    got = outputs[0].numpy()[0]
    if not np.array_equal(got, index + LANES + 2):
        raise AssertionError(f"result {index} is wrong or out of order: starts {got[:3]}")


def _resident_bytes() -> int:
    pages = int(Path("/proc/self/statm").read_text(encoding="utf-8").split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def test_one_thread_that_over_submits_gets_pipeline_full_not_a_hang(counting):
    """The issue's program: 2,000 x (set_input + run()), then read."""
    with PipelineModule(counting) as pipe:
        submitted = 0
        with pytest.raises(PipelineFull) as full:
            for index in range(2000):
                pipe.set_input("x", _input(index))
                pipe.run()
                submitted += 1
        assert submitted == 256  # the default max_in_flight
        message = str(full.value)
        assert "256 inputs are unread (max_in_flight=256)" in message
        assert "get_output()" in message and "timeout=" in message and "block=True" in message
        for index in range(submitted):
            _check(index, pipe.get_output())
        with pytest.raises(PipelineEmpty, match="no input is pending"):
            pipe.get_output()  # at once: nothing will ever come
        # An explicit timeout still waits, then says why.
        for index in range(256, 512):
            pipe.set_input("x", _input(index))
            pipe.run()
        with pytest.raises(PipelineTimeout, match=r"256 inputs are in flight .* within 0\.05 s"):
            pipe.run(timeout=0.05)
        with pytest.raises(PipelineFull):
            pipe.run(sync=True)
        for index in range(256, 512):
            _check(index, pipe.get_output())


def test_producer_and_consumer_threads_move_10000_inputs_in_order(counting):
    with PipelineModule(counting, max_in_flight=32) as pipe:
        failures: list[BaseException] = []

        def produce() -> None:
            try:
                for index in range(COUNT):
                    pipe.set_input("x", _input(index))
                    assert pipe.run(block=True) == index
            except BaseException as e:  # noqa: BLE001 - reported by the test
                failures.append(e)

        producer = _thread(produce)
        for index in range(COUNT):
            # The consumer may overtake the producer: block=True waits for it.
            _check(index, pipe.get_output(block=True))
        producer.join(60)
        assert not producer.is_alive() and not failures, failures
        assert pipe.in_flight == 0
        assert 1 <= pipe.peak_in_flight <= 32


def test_map_streams_10000_inputs_in_order_with_bounded_memory(counting):
    produced = [0]

    def inputs() -> Iterator[dict[str, np.ndarray]]:
        for index in range(COUNT):
            produced[0] += 1
            yield {"x": _input(index)}

    with PipelineModule(counting) as pipe:
        window = 8
        baseline = 0
        for index, outputs in enumerate(pipe.map(inputs(), window=window)):
            _check(index, outputs)
            # Lazy: never more than `window` inputs taken ahead of the reader.
            assert produced[0] - index <= window
            if index == 1000:
                baseline = _resident_bytes()  # after warm-up: allocator pools are full
        growth = _resident_bytes() - baseline
        assert index == COUNT - 1
        assert pipe.peak_in_flight <= window and pipe.in_flight == 0
    assert growth < 24 * 2**20, (
        f"resident memory grew by {growth / 2**20:.1f} MiB over {COUNT} inputs"
    )


def test_map_takes_dicts_tuples_or_arrays_and_cleans_up_when_left_early(externs):
    def stage(values: np.ndarray) -> None:
        if values[0] < 0:
            raise ValueError("negative")

    with PipelineModule(_chain(stage), max_in_flight=4) as pipe:
        inputs = [{"x": _x(0)}, (_x(1),), _x(2)]
        got = [out[0].numpy()[0] for out in pipe.map(inputs)]
        np.testing.assert_allclose(got, np.exp([0, 1, 2]), rtol=1e-6)
        # Leaving early reads what is still in flight: nothing stale remains.
        for _ in pipe.map(_x(v) for v in range(100)):
            break
        assert pipe.in_flight == 0
        # A stage error is raised at its input's turn and ends the stream.
        with pytest.raises(StageError, match="failed on input #8"):
            list(pipe.map([_x(1), _x(-1), _x(2)]))  # inputs #7, #8, #9
        assert pipe.in_flight == 0
        with pytest.raises(PipelineError, match=r"window must be an integer from 1 to max_in_flight \(4\)"):
            pipe.map([], window=5)
        with pytest.raises(PipelineError, match=r"a tuple gives the inputs by position: expected 1"):
            next(pipe.map([(_x(1), _x(2))]))
        pipe.set_input("x", _x(3))
        pipe.run()
        with pytest.raises(PipelineError, match=r"map\(\): 1 input\(s\) submitted with run\(\) are unread"):
            pipe.map([_x(1)])
        pipe.get_output()


def test_submit_returns_futures_that_free_their_own_room(counting):
    with PipelineModule(counting, max_in_flight=8) as pipe:
        # One thread, 2,000 inputs, never a get_output: futures make room.
        futures = [pipe.submit(x=_input(index)) for index in range(2000)]
        for index, future in enumerate(futures):
            assert isinstance(future, Future)
            _check(index, future.result(timeout=60))
        assert pipe.in_flight == 0 and pipe.peak_in_flight <= 8
        with pytest.raises(PipelineEmpty):
            pipe.get_output()  # futures' results are not get_output's
        # Mixed with run(): each result goes to the one who asked.
        pipe.set_input("x", _input(5))
        pipe.run()
        future = pipe.submit({"x": _input(6)})
        _check(6, future.result(timeout=60))
        _check(5, pipe.get_output())
        with pytest.raises(PipelineError, match=r"unknown input 'y'"):
            pipe.submit(y=_input(0))


def test_a_failed_input_fails_its_future_and_close_fails_pending_ones(externs):
    started, release = threading.Event(), threading.Event()

    def stage(values: np.ndarray) -> None:
        if values[0] < 0:
            raise ValueError("negative")
        if values[0] > 100:
            started.set()
            release.wait(30)

    pipe = PipelineModule(_chain(stage))
    failed = pipe.submit(_x(-1))
    assert isinstance(failed.exception(timeout=30), StageError)
    assert failed.exception().index == 0
    pending = pipe.submit(_x(101))
    assert started.wait(30)
    with pytest.warns(ResourceWarning, match="still running"):
        pipe.close(timeout=0.05)  # the stage still waits
    assert isinstance(pending.exception(timeout=5), PipelineClosedError)
    release.set()
    with pytest.raises(PipelineClosedError):
        pipe.submit(_x(1))
