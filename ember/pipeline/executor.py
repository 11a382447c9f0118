"""The pipeline executor: each stage on its own worker, inputs in flight at once.

TVM's ``pipeline_executor.PipelineModule`` (seed 000): ``set_input``, a
``run()`` that returns at once, a ``get_output()`` that blocks until the
next result — over a :class:`~ember.pipeline.build.PipelineLibrary`::

    with PipelineModule(lib) as pipe:          # or PipelineModule.load_library(path)
        pipe.set_input("data", array)
        pipe.run()                             # queued; returns its input index
        outputs = pipe.get_output(timeout=10)  # list of NDArrays, one per global output

How it runs
-----------
One Python thread per stage, started on the first pipelined ``run()``,
joined by ``queue.Queue(maxsize=capacity)`` s: while stage 1 works on input
*n*, stage 0 works on input *n + 1*.  Threads are enough: compiled stages
run native code through ctypes, which releases the GIL.  Each item carries
its input index and the values flowing down the pipeline (a value is
dropped after its last consumer); results leave the last stage in input
order, and ``get_output`` returns them in that order, none lost.

Memory is bounded: at most ``max_in_flight`` inputs may be submitted and
not yet read by ``get_output``; a ``run()`` beyond that waits (up to its
``timeout``) for a ``get_output``, so a fast producer cannot grow memory
without bound.  Queues between stages hold at most ``capacity`` items
each, which bounds the intermediate activations further.

``run(sync=True)`` is the sequential mode, the correctness baseline: it
runs the stages one after another in the calling thread before returning;
its result is read with ``get_output`` like any other, in input order.

Errors
------
An exception in a stage becomes a :class:`StageError` that names the stage,
its device and the input index; it travels down the pipeline in place of
that input's values (later stages skip it) and ``get_output`` raises it at
that input's turn.  The executor keeps going with the next inputs.
``get_output(timeout=…)`` raises :class:`PipelineTimeout` when no result
arrives in time.  ``close()`` (or leaving a ``with`` block) stops the
workers: pending inputs are dropped, threads are joined with a timeout and,
being daemon threads, never keep the process alive; an executor that is
garbage-collected or still open at exit is closed too.

Placement
---------
A stage on ``cpu:N`` runs on the host.  When a pipeline uses more than one
CPU device (``cpu:0`` and ``cpu:1``), each names a core: the stage's worker
thread is pinned to the N-th core this process may use
(``os.sched_setaffinity``, Linux), and kernels' parallel loops run on one
thread while the executor runs (the process-wide count of
``ember.runtime.threads``, restored at ``close``).  A pipeline whose stages
all sit on ``cpu:0`` — the whole host, as for a single module — is not
pinned.  ``pin_cores=True/False`` decides explicitly.  A stage on another
device kind gets its inputs copied to that device; nothing here assumes a
CPU.
"""

from __future__ import annotations

import difflib
import os
import queue
import threading
import time
import warnings
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

from ember.errors import EmberError
from ember.pipeline.build import (
    BuiltStage,
    PipelineError,
    PipelineLibrary,
    Source,
    build,
    load_library,
)
from ember.runtime.device import Device, cpu
from ember.runtime.graph_executor import BenchmarkResult
from ember.runtime.random_inputs import random_input
from ember.runtime.ndarray import NDArray, as_host_array, empty
from ember.runtime.ndarray import array as nd_array

__all__ = [
    "PipelineClosedError",
    "PipelineExecutor",
    "PipelineModule",
    "PipelineRun",
    "PipelineTimeout",
    "StageError",
    "ThroughputResult",
    "open_pipeline_file",
    "run_pipeline",
    "run_pipeline_file",
]

DEFAULT_CAPACITY = 2
"""Items each queue between stages holds: enough to keep a stage busy while
its neighbour hands over, small enough to bound intermediate activations."""

DEFAULT_MAX_IN_FLIGHT = 256
"""Inputs that may be submitted and not yet read before ``run()`` waits."""

DEFAULT_CLOSE_TIMEOUT = 5.0
"""Seconds ``close()`` waits for workers to finish their current stage."""


class StageError(PipelineError):
    """A stage raised while running one input; ``get_output`` raises it at that input's turn."""

    def __init__(self, stage: BuiltStage, index: int, cause: BaseException) -> None:
        # ember's own errors already say what failed; others need their type.
        detail = (
            str(cause)
            if isinstance(cause, EmberError)
            else f"{type(cause).__name__}: {cause}"
        )
        super().__init__(f"{stage.describe()} failed on input #{index}: {detail}")
        self.stage = stage.name
        self.device = stage.device
        self.index = index
        self.cause = cause


class PipelineTimeout(PipelineError, TimeoutError):
    """Nothing arrived (``get_output``) or no room freed up (``run``) in time."""


class PipelineClosedError(PipelineError):
    """The executor was used after ``close()``."""


# --------------------------------------------------------------------------
# What flows through the pipeline
# --------------------------------------------------------------------------

Key = tuple[int, str | int]
"""A value's key in an item: ``(-1, name)`` for a global input, ``(stage, output)``."""


def _key(source: Source) -> Key:
    return (-1 if source.stage is None else source.stage, source.key)


class _Item:
    """One input on its way: its index, the live values, or the error it met."""

    __slots__ = ("error", "index", "values")

    def __init__(self, index: int, values: dict[Key, NDArray]) -> None:
        self.index = index
        self.values = values
        self.error: StageError | None = None


_STOP = object()
"""Sentinel: a worker forwards it downstream and exits."""


@dataclass(frozen=True)
class _StagePlan:
    """A stage with its value keys resolved once, so that a run only looks up."""

    stage: BuiltStage
    input_keys: tuple[Key, ...]
    output_keys: tuple[Key, ...]
    released: tuple[Key, ...]
    """Values no later stage and no global output reads: dropped after this stage."""
    memory: Device
    """Where this stage's buffers live: the host for CPU stages."""

    def run(self, item: _Item) -> None:
        """Run the stage on ``item`` in place; record a failure as its error."""
        stage = self.stage
        try:
            inputs = [self._on_device(item.values[key]) for key in self.input_keys]
            outputs = [
                empty(spec.shape, spec.dtype, self.memory)
                for spec in stage.module.output_specs
            ]
            stage.module.run(inputs, outputs)
        except Exception as e:  # noqa: BLE001 - forwarded to get_output with context
            item.error = StageError(stage, item.index, e)
            item.values = {}
            return
        item.values.update(zip(self.output_keys, outputs))
        for key in self.released:
            item.values.pop(key, None)

    def _on_device(self, value: NDArray) -> NDArray:
        if value.device.kind == self.memory.kind:
            return value
        return value.copyto(self.memory)


def _plans(lib: PipelineLibrary) -> list[_StagePlan]:
    last_use: dict[Key, int] = {}
    for s, stage in enumerate(lib.stages):
        for source in stage.sources:
            last_use[_key(source)] = s
    kept = {_key(source) for source in lib.outputs}
    plans = []
    for s, stage in enumerate(lib.stages):
        output_keys = tuple((s, i) for i in range(len(stage.module.output_specs)))
        released = tuple(
            key
            for key in (*{_key(src) for src in stage.sources}, *output_keys)
            if key not in kept and last_use.get(key, s) <= s
        )
        memory = cpu(0) if stage.device.kind == "cpu" else stage.device
        plans.append(
            _StagePlan(
                stage,
                tuple(_key(src) for src in stage.sources),
                output_keys,
                released,
                memory,
            )
        )
    return plans


# --------------------------------------------------------------------------
# Workers (they hold no reference to the executor, so it can be collected)
# --------------------------------------------------------------------------


class _Workers:
    """The stage threads and the queues between them."""

    def __init__(
        self, plans: Sequence[_StagePlan], capacity: int, cores: Sequence[int | None]
    ) -> None:
        self.plans = plans
        # queues[s] feeds stage s; the last one holds results, bounded by
        # max_in_flight (the executor's slots) rather than by a maxsize, so
        # that the last stage never blocks on a slow reader.
        self.queues: list[queue.Queue[Any]] = [
            queue.Queue(maxsize=capacity) for _ in plans
        ]
        self.results: queue.Queue[Any] = queue.Queue()
        self.queues.append(self.results)
        self.cores = cores
        self.stopping = threading.Event()
        self.position: list[int | None] = [None] * len(plans)
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for s, plan in enumerate(self.plans):
            thread = threading.Thread(
                target=self._work,
                args=(s,),
                name=f"ember-pipeline-{plan.stage.name}",
                daemon=True,  # a stage stuck in native code must not block exit
            )
            thread.start()
            self.threads.append(thread)

    def _work(self, s: int) -> None:
        plan, inbox, outbox = self.plans[s], self.queues[s], self.queues[s + 1]
        self._pin(s)
        while True:
            item = inbox.get()
            if item is _STOP:
                outbox.put(_STOP)
                return
            if item.error is None and not self.stopping.is_set():
                self.position[s] = item.index
                plan.run(item)
                self.position[s] = None
            outbox.put(item)

    def _pin(self, s: int) -> None:
        core = self.cores[s]
        if core is None:
            return
        try:
            os.sched_setaffinity(0, {core})  # 0: the calling thread
        except (AttributeError, OSError) as e:
            # Pinning is a performance matter: the stage still computes right.
            warnings.warn(
                f"{self.plans[s].stage.describe()}: cannot pin its worker to core "
                f"{core} ({e}); it runs unpinned",
                RuntimeWarning,
                stacklevel=1,
            )

    def where_is(self, index: int) -> str:
        """Where input ``index`` is, for a timeout message."""
        for plan, current in zip(self.plans, self.position):
            if current == index:
                return f"it is running in {plan.stage.describe()}"
        return "it is waiting in a queue"

    def shutdown(self, timeout: float) -> bool:
        """Stop every worker; True when all have exited within ``timeout``."""
        self.stopping.set()
        deadline = time.monotonic() + timeout
        if self.threads:
            try:
                # Workers skip work once stopping, so the first queue drains.
                self.queues[0].put(_STOP, timeout=max(timeout, 0.0))
            except queue.Full:
                return False
        for thread in self.threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        if not self.threads:
            self.results.put(_STOP)
        return not any(thread.is_alive() for thread in self.threads)


# Kernels' parallel loops read one process-wide thread count; pinned stages
# want one thread each.  Executors that pin share this guard.
_threads_lock = threading.Lock()
_pinned_executors = 0
_saved_thread_count: int | None = None


def _acquire_single_threaded_kernels() -> None:
    global _pinned_executors, _saved_thread_count
    from ember.runtime import threads

    with _threads_lock:
        if _pinned_executors == 0:
            _saved_thread_count = threads.num_threads()
            threads.set_num_threads(1)
        _pinned_executors += 1


def _release_single_threaded_kernels() -> None:
    global _pinned_executors
    from ember.runtime import threads

    with _threads_lock:
        _pinned_executors -= 1
        if _pinned_executors == 0 and _saved_thread_count is not None:
            threads.set_num_threads(_saved_thread_count)


def _shutdown(workers: _Workers, pinned: list[bool], timeout: float) -> bool:
    """Stop ``workers`` and give back the thread-count guard; run once."""
    stopped = workers.shutdown(timeout)
    if pinned[0]:
        pinned[0] = False
        _release_single_threaded_kernels()
    return stopped


# --------------------------------------------------------------------------
# The executor
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ThroughputResult:
    """Inputs per second over ``count`` inputs, pipelined or sequential."""

    mode: str
    count: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("inf")

    @property
    def ms_per_input(self) -> float:
        return self.seconds * 1e3 / self.count

    def __str__(self) -> str:
        return (
            f"{self.mode}: {self.count} inputs in {self.seconds:.3f} s = "
            f"{self.per_second:.1f} inputs/s ({self.ms_per_input:.3f} ms each)"
        )


class PipelineExecutor:
    """Runs a built pipeline with one worker per stage (TVM's ``PipelineModule``).

    ``PipelineExecutor(lib)`` takes what ``ember.pipeline.build`` or
    ``load_library`` returns.  ``capacity``: items per queue between stages;
    ``max_in_flight``: inputs submitted and not yet read before ``run()``
    waits; ``pin_cores``: see the module docstring (None: pin when stages
    use more than one CPU device).
    """

    def __init__(
        self,
        library: PipelineLibrary,
        *,
        capacity: int = DEFAULT_CAPACITY,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        pin_cores: bool | None = None,
    ) -> None:
        if not isinstance(library, PipelineLibrary):
            raise PipelineError(
                "PipelineExecutor expects what ember.pipeline.build or load_library returns, "
                f"got {type(library).__name__}"
            )
        for name, value in (("capacity", capacity), ("max_in_flight", max_in_flight)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PipelineError(f"{name} must be a positive integer, got {value!r}")
        for stage in library.stages:
            stage.module.resolve_externs(stage.describe())
            if stage.device.kind != "cpu" and not stage.device.exist:
                raise PipelineError(
                    f"{stage.describe()}: device {stage.device} does not exist on this machine"
                )
        self._lib = library
        self._plans = _plans(library)
        self._input_specs = {spec.name: spec for spec in library.inputs}
        self._output_keys = [_key(source) for source in library.outputs]
        self._max_in_flight = max_in_flight
        self._staged: dict[str, NDArray] = {}
        self._next_in = 0  # index of the next input run() submits
        self._next_out = 0  # index of the next result get_output returns
        self._peak_in_flight = 0
        self._reserving = 0  # slots taken by run() calls not yet submitted
        self._ready: dict[int, _Item] = {}
        self._slots = threading.Condition()
        self._submit_lock = threading.Lock()
        self._output_lock = threading.Lock()
        self._closed = False
        self._pinned = [False]
        cores = self._cores(pin_cores)
        self._workers = _Workers(self._plans, capacity, cores)
        self._started = False
        self._finalizer = weakref.finalize(
            self, _shutdown, self._workers, self._pinned, 1.0
        )

    @classmethod
    def load_library(
        cls, path: str | os.PathLike[str], **options: Any
    ) -> PipelineExecutor:
        """Load a pipeline exported with ``export_library`` (TVM's ``load_library``)."""
        return cls(load_library(path), **options)

    def _cores(self, pin_cores: bool | None) -> list[int | None]:
        """The core each stage's worker is pinned to (None: not pinned)."""
        cpu_stages = [s for s in self._lib.stages if s.device.kind == "cpu"]
        if pin_cores is None:
            pin_cores = len({s.device.index for s in cpu_stages}) > 1
        if not pin_cores or not cpu_stages:
            return [None] * len(self._lib.stages)
        allowed = _allowed_cores()
        cores: list[int | None] = []
        for stage in self._lib.stages:
            if stage.device.kind != "cpu":
                cores.append(None)
                continue
            if stage.device.index >= len(allowed):
                raise PipelineError(
                    f"{stage.describe()}: {stage.device} names core {stage.device.index}, but "
                    f"this process may run on {len(allowed)} core(s) ({sorted(allowed)}); "
                    "place the stage on another cpu device or pass pin_cores=False"
                )
            cores.append(allowed[stage.device.index])
        return cores

    # -- introspection ---------------------------------------------------

    @property
    def library(self) -> PipelineLibrary:
        return self._lib

    @property
    def input_names(self) -> list[str]:
        return list(self._input_specs)

    @property
    def num_inputs(self) -> int:
        return len(self._input_specs)

    @property
    def num_outputs(self) -> int:
        return len(self._output_keys)

    def get_input_info(self) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
        """``(shapes, dtypes)`` by global input name."""
        return (
            {n: s.shape for n, s in self._input_specs.items()},
            {n: s.dtype for n, s in self._input_specs.items()},
        )

    @property
    def in_flight(self) -> int:
        """Inputs submitted and not yet returned by ``get_output``."""
        return self._next_in - self._next_out

    @property
    def peak_in_flight(self) -> int:
        """The most inputs that were ever in flight at once (never above ``max_in_flight``)."""
        return self._peak_in_flight

    @property
    def pinned_cores(self) -> list[int | None]:
        """The core each stage's worker is pinned to, None where unpinned."""
        return list(self._workers.cores)

    @property
    def closed(self) -> bool:
        return self._closed

    # -- inputs ------------------------------------------------------------

    def set_input(
        self, key: str | int | None = None, value: Any = None, **inputs: Any
    ) -> None:
        """Set global input ``key`` (name or index) and/or each of ``inputs``.

        The value is copied: changing the caller's array later does not
        change an input already queued.  Shape and dtype must be the input's.
        """
        self._check_open()
        updates: list[tuple[str, Any]] = []
        if key is not None:
            if value is None:
                raise PipelineError(f"set_input({key!r}): no value given")
            updates.append((self._input_name(key), value))
        elif value is not None:
            raise PipelineError("set_input: a value was given without an input name")
        updates += [(self._input_name(name), v) for name, v in inputs.items()]
        checked = [(name, self._checked(name, v)) for name, v in updates]
        for name, values in checked:
            self._staged[name] = nd_array(values)

    def _input_name(self, key: Any) -> str:
        names = list(self._input_specs)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(names):
                raise PipelineError(
                    f"input index {key} out of range: the pipeline has {len(names)} inputs "
                    f"({self._describe_inputs()})"
                )
            return names[key]
        if key in self._input_specs:
            return key
        if key in self._lib.params:
            raise PipelineError(
                f"{key!r} was bound at build time (ember.pipeline.build(..., params=...)) and is "
                f"no longer an input; inputs: {self._describe_inputs()}"
            )
        message = f"unknown input {key!r}; inputs of pipeline @{self._lib.name}: {self._describe_inputs()}"
        close = difflib.get_close_matches(str(key), names, n=1)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        raise PipelineError(message)

    def _describe_inputs(self) -> str:
        return (
            ", ".join(f"{s.name}: {s.describe()}" for s in self._input_specs.values())
            or "none"
        )

    def _checked(self, name: str, value: Any) -> np.ndarray:
        spec = self._input_specs[name]
        values = as_host_array(
            value, f"set_input({name!r})", dtype=np.dtype(spec.dtype)
        )
        if values.shape != spec.shape or values.dtype.name != spec.dtype:
            hint = (
                f"; convert it with .astype('{spec.dtype}')"
                if values.dtype.name != spec.dtype
                else ""
            )
            raise PipelineError(
                f"set_input({name!r}): expected {spec.describe()}, got "
                f"{values.dtype.name}{list(values.shape)}{hint}"
            )
        return values

    # -- running -----------------------------------------------------------

    def run(self, sync: bool = False, timeout: float | None = None) -> int:
        """Submit the inputs set so far; return this input's index.

        Pipelined (default): the input is queued and ``run`` returns at once,
        unless ``max_in_flight`` inputs are unread or the first stage's queue
        is full — then it waits, up to ``timeout`` seconds, and raises
        :class:`PipelineTimeout`.  ``sync=True``: the stages run one after
        another in this thread before ``run`` returns (the baseline).
        Either way ``get_output`` returns the result, in input order.
        """
        self._check_open()
        missing = [name for name in self._input_specs if name not in self._staged]
        if missing:
            raise PipelineError(
                f"run(): input(s) not set: {', '.join(missing)}; call set_input(name, array) first"
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        self._take_slot(deadline)
        values: dict[Key, NDArray] = {(-1, n): a for n, a in self._staged.items()}
        try:
            with self._submit_lock:
                item = _Item(self._next_in, values)
                if not sync:
                    self._submit(item, deadline)
                self._next_in += 1
                self._peak_in_flight = max(self._peak_in_flight, self.in_flight)
        finally:
            with self._slots:
                self._reserving -= 1
                self._slots.notify_all()
        if sync:
            current = self._plans[0]
            try:
                for current in self._plans:
                    if item.error is None:
                        current.run(item)
            except (
                BaseException
            ) as e:  # KeyboardInterrupt: still give the index a result
                item.error = StageError(current.stage, item.index, e)
                raise
            finally:
                self._workers.results.put(item)
        return item.index

    def _take_slot(self, deadline: float | None) -> None:
        """Wait until fewer than ``max_in_flight`` inputs are in flight or being submitted."""
        with self._slots:
            while self.in_flight + self._reserving >= self._max_in_flight:
                self._check_open()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise PipelineTimeout(
                        f"run(): {self.in_flight} inputs are in flight (max_in_flight="
                        f"{self._max_in_flight}) and none was read in time; call get_output()"
                    )
                self._slots.wait(remaining)
            self._check_open()
            self._reserving += 1

    def _submit(self, item: _Item, deadline: float | None) -> None:
        if not self._started:
            self._start()
        remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            self._workers.queues[0].put(item, timeout=remaining)
        except queue.Full:
            raise PipelineTimeout(
                f"run(): the first stage's queue stayed full for {remaining} s; "
                f"{self._plans[0].stage.describe()} is busy"
            ) from None

    def _start(self) -> None:
        if any(core is not None for core in self._workers.cores):
            _acquire_single_threaded_kernels()
            self._pinned[0] = True
        self._workers.start()
        self._started = True

    def get_output(self, timeout: float | None = None) -> list[NDArray]:
        """The outputs of the next input, in input order; blocks until it is done.

        Raises :class:`StageError` if a stage failed on that input, and
        :class:`PipelineTimeout` when nothing arrives within ``timeout``
        seconds.  With no input pending and no timeout it raises at once
        instead of waiting forever.
        """
        with self._output_lock:
            self._check_open()
            index = self._next_out
            if index >= self._next_in and timeout is None:
                raise PipelineError(
                    "get_output(): no input is pending; call set_input() and run() first"
                )
            item = self._wait_for(index, timeout)
            with self._slots:
                self._next_out += 1
                self._slots.notify_all()
        if item.error is not None:
            raise item.error
        return [item.values[key] for key in self._output_keys]

    def _wait_for(self, index: int, timeout: float | None) -> _Item:
        deadline = None if timeout is None else time.monotonic() + timeout
        while index not in self._ready:
            remaining = (
                None if deadline is None else max(deadline - time.monotonic(), 0.0)
            )
            try:
                item = self._workers.results.get(timeout=remaining)
            except queue.Empty:
                where = (
                    self._workers.where_is(index)
                    if index < self._next_in
                    else "no such input was submitted yet (call run())"
                )
                raise PipelineTimeout(
                    f"get_output(): no result for input #{index} within {timeout} s; {where}"
                ) from None
            if item is _STOP or self._closed:
                # Inputs finished during close() are dropped like pending ones.
                raise PipelineClosedError(
                    f"pipeline @{self._lib.name}: the executor was closed while get_output() waited"
                )
            self._ready[item.index] = item
        return self._ready.pop(index)

    # -- measuring -----------------------------------------------------------

    def benchmark(
        self, count: int, *, sync: bool = False, warmup: int = 2
    ) -> ThroughputResult:
        """Push ``count`` copies of the current inputs through; time them.

        Pipelined: another thread submits while this one reads results.
        Sequential (``sync=True``): each input runs through all stages before
        the next starts.  Needs no input pending; ``warmup`` untimed inputs
        run first.
        """
        if count < 1:
            raise PipelineError(f"benchmark: count must be at least 1, got {count}")
        if self.in_flight:
            raise PipelineError(
                f"benchmark: {self.in_flight} input(s) are pending; read them with get_output() first"
            )
        for _ in range(warmup):
            self.run(sync=sync)
            self.get_output()
        start = time.perf_counter()
        if sync:
            for _ in range(count):
                self.run(sync=True)
                self.get_output()
        else:
            self._pipelined(count)
        return ThroughputResult(
            "sequential" if sync else "pipelined", count, time.perf_counter() - start
        )

    def _pipelined(self, count: int) -> None:
        failure: list[BaseException] = []

        def produce() -> None:
            try:
                for _ in range(count):
                    self.run()
            except BaseException as e:  # noqa: BLE001 - reported below
                failure.append(e)

        producer = threading.Thread(
            target=produce, name="ember-pipeline-benchmark", daemon=True
        )
        producer.start()
        stage_error: StageError | None = None
        try:
            # Read every result, failed or not, so that the producer never
            # waits for room that nobody frees.
            for _ in range(count):
                if failure:
                    break
                try:
                    self.get_output(timeout=60.0)
                except StageError as e:
                    stage_error = stage_error or e
        finally:
            producer.join(timeout=60.0)
        if failure:
            raise failure[0]
        if stage_error is not None:
            raise stage_error

    # -- shutting down -------------------------------------------------------

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT) -> None:
        """Stop the workers; pending inputs are dropped.  Never hangs: workers
        still busy after ``timeout`` seconds are left behind as daemon threads
        (with a ``ResourceWarning``).  Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        with self._slots:
            self._slots.notify_all()
        self._finalizer.detach()
        if not _shutdown(self._workers, self._pinned, timeout):
            warnings.warn(
                f"pipeline @{self._lib.name}: a stage was still running {timeout} s after "
                "close(); its thread is left to finish in the background",
                ResourceWarning,
                stacklevel=2,
            )

    def _check_open(self) -> None:
        if self._closed:
            raise PipelineClosedError(
                f"pipeline @{self._lib.name}: the executor is closed; create a new one"
            )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        stages = ", ".join(f"{s.name}@{s.device}" for s in self._lib.stages)
        state = "closed" if self._closed else f"{self.in_flight} in flight"
        return f"<ember.PipelineExecutor @{self._lib.name} [{stages}] {state}>"


PipelineModule = PipelineExecutor
"""TVM's name for the executor (``pipeline_executor.PipelineModule``)."""


def _allowed_cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux: pinning is impossible anyway
        return list(range(os.cpu_count() or 1))


# --------------------------------------------------------------------------
# Running a pipeline file (the entry point for ember-run)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineRun:
    """What :func:`run_pipeline` measured: the last input's outputs, the
    throughput, and (if asked) the latency of one input at a time."""

    library: PipelineLibrary
    outputs: list[np.ndarray]
    throughput: ThroughputResult
    latency: BenchmarkResult | None = None
    """``bench`` inputs timed one by one, end to end: inputs copied in, all
    stages, outputs copied out (one figure per input, in seconds)."""


def open_pipeline_file(
    path: str | os.PathLike[str],
    params: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    entry: str = "main",
) -> PipelineLibrary:
    """Build (an ``.mlir`` file with ``pipeline.graph @entry``) or load (an
    exported pipeline directory or its ``pipeline.json``) a pipeline.

    ``params``: name -> array, or an ``.npz`` file, bound at build time (IR
    files only).  Every problem is an ``EmberError``.
    """
    source = Path(path)
    if source.is_dir() or source.suffix == ".json":
        if params is not None:
            raise PipelineError(
                f"{source} is an exported pipeline: its params were bound when it was built"
            )
        return load_library(source)
    return _build_file(source, params, entry)


def run_pipeline(
    lib: PipelineLibrary,
    inputs: Mapping[str, Any] | None = None,
    *,
    sequential: bool = False,
    count: int = 1,
    warmup: int = 1,
    capacity: int = DEFAULT_CAPACITY,
    pin_cores: bool | None = None,
    seed: int = 0,
    bench: int = 0,
) -> PipelineRun:
    """Run ``count`` inputs through ``lib``, pipelined or ``sequential``, and
    report the throughput; with ``bench`` > 0, also time that many inputs one
    at a time (the latency, as ``ember-run --bench`` reports for a function).

    ``inputs``: global input name -> array; the others are the seeded random
    arrays :func:`~ember.runtime.random_inputs.random_input` draws for their
    position, the same a single module with this signature gets.
    """
    given = dict(inputs or {})
    with PipelineExecutor(lib, capacity=capacity, pin_cores=pin_cores) as pipe:
        unknown = sorted(set(given) - set(pipe.input_names))
        if unknown:
            pipe.set_input(unknown[0], given[unknown[0]])  # raises, naming the inputs
        values = {}
        for index, spec in enumerate(lib.inputs):
            values[spec.name] = (
                given[spec.name]
                if spec.name in given
                else random_input(spec.shape, spec.dtype, seed, index)
            )
            pipe.set_input(spec.name, values[spec.name])

        def one_input() -> list[np.ndarray]:
            for name, value in values.items():
                pipe.set_input(name, value)
            pipe.run(sync=sequential)
            return [out.numpy() for out in pipe.get_output()]

        throughput = pipe.benchmark(count, sync=sequential, warmup=warmup)
        latency = BenchmarkResult.measure(one_input, bench) if bench > 0 else None
        outputs = one_input()
    return PipelineRun(lib, outputs, throughput, latency)


def run_pipeline_file(
    path: str | os.PathLike[str],
    inputs: Mapping[str, Any] | None = None,
    *,
    params: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    entry: str = "main",
    **options: Any,
) -> PipelineRun:
    """:func:`run_pipeline` on :func:`open_pipeline_file`\\ ``(path, params,
    entry=entry)``; ``options`` are :func:`run_pipeline`'s."""
    return run_pipeline(
        open_pipeline_file(path, params, entry=entry), inputs, **options
    )


def _build_file(
    source: Path, params: Mapping[str, Any] | str | os.PathLike[str] | None, entry: str
) -> PipelineLibrary:
    try:
        text = source.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise PipelineError(f"cannot read {source}: {e}") from None
    if params is not None and not isinstance(params, Mapping):
        params = _read_params(Path(params))
    return build(text, params, entry=entry)


def _read_params(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EmberError) as e:
        raise PipelineError(f"cannot read params from {path}: {e}") from None
