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
joined by bounded channels (C queues whose waits sleep with the GIL
released): while stage 1 works on input *n*, stage 0
works on input *n + 1*.  Threads are enough: compiled stages run native
code through ctypes, which releases the GIL.  Each item carries its input
index and one slot per value flowing down the pipeline.  Values between
stages live in recycled buffers, one pool per value: the stage that writes
it takes a buffer, the last stage that reads it gives it back, so after
warm-up an input allocates nothing but its global outputs, which are the
caller's to keep.  Results leave the last stage in input order, and
``get_output`` returns them in that order, none lost.

While the workers run, kernels' parallel loops get a share of the cores
(``kernel_threads``: one per pinned stage, else the cores divided among
the host's stages), so that stage threads and kernel teams do not fight.
With ``inline=None`` (the default) the executor chooses a *plan* from
the stage times it measures (``plan``, ``plan_seconds``): overlapped
through the threads, or back to back in the caller's thread with the
kernels on every core — for stages too small to gain from threads
(together under :data:`INLINE_SECONDS` per input), and wherever that was
measured faster than the slowest overlapped stage plus the hand-off
(:data:`HANDOFF_SECONDS`); ``inline=False`` always uses the threads,
``inline=True`` never; ``inline_runs`` counts inputs run back to back.
``map`` takes its inputs a window at a time through every stage with one
native call (its lane, ``_Lane``: see docs/pipeline.md): back to back, or
for the overlapped plan with each stage on a libgomp thread of its own,
stage *s* waiting on a flag for stage *s - 1* to finish each input
(:meth:`~ember.runtime.call_list.CallList.run_overlapped`) — the hand-off
a store and a load rather than a Python thread switch.  ``lane=`` chooses
whether ``map`` may use it.

Memory is bounded: at most ``max_in_flight`` inputs may be submitted and
not yet read.  A ``run()`` beyond that raises :class:`PipelineFull` at once
when only the caller could make room (a single thread that submits and
never reads would otherwise wait forever); with ``timeout=`` it waits that
long for another thread's ``get_output`` (then :class:`PipelineTimeout`),
with ``block=True`` as long as it takes.  Inputs handed out as futures
(``submit``) free their room by themselves, so a submit waits for them.
Queues between stages hold at most ``capacity`` items each, which bounds
the intermediate activations further.  ``map(inputs)`` streams an iterable
through in one thread, keeping a window of inputs in flight.

``run(sync=True)`` is the sequential mode, the correctness baseline: it
runs the stages one after another in the calling thread before returning;
its result is read with ``get_output`` like any other, in input order.

Errors
------
An exception in a stage becomes a :class:`StageError` that names the stage,
its device and the input index; it travels down the pipeline in place of
that input's values (later stages skip it) and ``get_output`` raises it at
that input's turn.  The executor keeps going with the next inputs.  A
``KeyboardInterrupt`` or ``SystemExit`` in a stage (or anything that breaks
a worker itself) stops the pipeline instead: the :class:`StageError` that
names the stage wakes every waiter (``get_output``, ``run``, ``map``,
futures) and every later call raises it.  Calling the executor from inside
one of its own stages (an extern function, a future's callback) raises at
once: it would wait for itself.  A ``KeyboardInterrupt`` while the caller
waits (Ctrl-C) closes the executor and is re-raised.
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

import functools
import itertools
import math
import os
import queue
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from ember.errors import EmberError, RuntimeFailure
from ember.pipeline.build import (
    BuiltStage,
    PipelineError,
    PipelineLibrary,
    Source,
    build,
    load_library,
)
from ember.pipeline.inputs import PipelineInputs
from ember.runtime.device import Device, cpu
from ember.runtime.graph_executor import BenchmarkResult
from ember.runtime.random_inputs import random_input
from ember.runtime.call_list import CallList, overlapped_available
from ember.runtime.jit import SEVERAL_THREADS_FAILED, bounds_flag, raise_bounds_error
from ember.runtime.ndarray import NDArray, empty, host_rows

__all__ = [
    "PipelineClosedError",
    "PipelineEmpty",
    "PipelineExecutor",
    "PipelineFull",
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

LANE_WINDOW = 32
"""Inputs ``map``'s lane (the inline path) takes through the stages in one
native call, unless ``map(window=…)`` asks for fewer: enough that the
window's Python cost (~10 µs on a busy machine) is small per input, few
enough that results come soon.  tiny_pipe, loaded 2-core machine, per
input: 21 µs with 16, 18 µs with 32, 18 µs with 64 (a GraphExecutor 24 µs)."""

LANE_BYTES = 16 << 20
"""The most the lane's ring of buffers may hold (every value of each of
its inputs): stages big enough to exceed it gain nothing from it anyway."""

INLINE_SECONDS = 100e-6
"""``inline=None``: while the stages together take less than this per input,
run them back to back in the caller's thread.  Handing an input to a
thread costs tens of microseconds on a busy machine (a wake-up, the GIL
changing hands): more than pipelining such stages could win."""

HANDOFF_SECONDS = 50e-6
"""``inline=None``: what an input costs through the stage threads beyond
the slower stage's own time (queues, wake-ups, the GIL changing hands;
50-90 µs measured on 2 cores).  Running the stages back to back in the
caller's thread with every kernel thread wins when they take less than
the slower stage overlapped plus this."""

OVERLAPPED = "overlapped"
"""A plan (:attr:`PipelineExecutor.plan`): each stage in its worker thread,
inputs in flight at once, the kernels on each stage's share of the cores."""

BACK_TO_BACK = "back to back"
"""A plan: the stages one after another in the caller's thread, the
kernels on every core (``map``'s lane when the stages allow it)."""

TIMING_BACK_TO_BACK = "timing back to back"
"""A plan: the next input runs back to back to time that plan (the first
:data:`PROBE_INPUTS` inputs that do)."""

PROBE_INPUTS = 3
"""Inputs run back to back, one at a time, before ``inline=None`` compares
the plans: the lower envelope of a few, as the overlapped plan's is of
every input it ran, so that one slow run does not decide."""

RETIME_SECONDS = 10.0
"""How long ``inline=None`` keeps a choice made by comparing the plans
before it forgets the other plan's times and measures them again: a
plan that does not run keeps its old figures, and the machine's load
changes what each plan takes."""

DEFAULT_CLOSE_TIMEOUT = 5.0
"""Seconds ``close()`` waits for workers to finish their current stage."""


class StageError(PipelineError):
    """A stage raised while running one input; ``get_output`` raises it at that input's turn."""

    def __init__(
        self, stage: BuiltStage, index: int | None, cause: BaseException
    ) -> None:
        # ember's own errors already say what failed; others need their type.
        detail = (
            str(cause)
            if isinstance(cause, EmberError)
            else f"{type(cause).__name__}: {cause}".removesuffix(": ")
        )
        where = "" if index is None else f" on input #{index}"
        message = f"{stage.describe()} failed{where}: {detail}"
        if not isinstance(cause, Exception):
            message += "; the pipeline stopped (create a new executor)"
        super().__init__(message)
        self.stage = stage.name
        self.device = stage.device
        self.index = index
        self.cause = cause


class PipelineTimeout(PipelineError, TimeoutError):
    """Nothing arrived (``get_output``) or no room freed up (``run``) in time."""


class PipelineFull(PipelineError):
    """``run()``/``submit()`` with no ``timeout`` on a pipeline that only the
    caller's own ``get_output`` could make room in."""


class PipelineEmpty(PipelineError):
    """``get_output()`` with no ``timeout`` and no input pending."""


class PipelineClosedError(PipelineError):
    """The executor was used after ``close()``."""


def pipeline_full(what: str, unread: int, max_in_flight: int) -> PipelineFull:
    return PipelineFull(
        f"{what}: the pipeline is full: {unread} inputs are unread "
        f"(max_in_flight={max_in_flight}) and only get_output() makes "
        "room; read outputs with get_output() (or stream with map()), or "
        "pass timeout= or block=True when another thread reads them"
    )


def pipeline_timeout(
    what: str, in_flight: int, max_in_flight: int, timeout: float | None
) -> PipelineTimeout:
    return PipelineTimeout(
        f"{what}: {in_flight} inputs are in flight (max_in_flight="
        f"{max_in_flight}) and none was read within {timeout} s; call get_output()"
    )


# --------------------------------------------------------------------------
# What flows through the pipeline
# --------------------------------------------------------------------------

Key = tuple[int, str | int]
"""A value's key: ``(-1, name)`` for a global input, ``(stage, output)``."""


def _key(source: Source) -> Key:
    return (-1 if source.stage is None else source.stage, source.key)


class _Item:
    """One input on its way: its index, its values (one slot per key, None
    once dropped), or the error it met."""

    __slots__ = ("error", "index", "values")

    def __init__(self, index: int, values: list[NDArray | None]) -> None:
        self.index = index
        self.values = values
        self.error: StageError | None = None


_STOP = object()
"""Sentinel: a worker forwards it downstream and exits."""


class _BufferPool:
    """Recycled buffers for one value between stages.

    The stage that writes the value takes a buffer; the stage that reads it
    last gives it back.  A buffer is allocated only when none is free, so
    after the first few inputs a run allocates nothing: as many buffers
    exist as inputs ever held the value at once, which the bounded queues
    bound.  ``take``/``give`` are single ``list`` operations, atomic under
    the GIL, so the two stages' threads need no lock.  A value between
    stages is preallocated when the workers start (:meth:`reserve`): the
    most inputs that can hold it at once through the threads.
    """

    __slots__ = ("allocated", "dtype", "free", "memory", "shape", "span")

    def __init__(
        self, shape: tuple[int, ...], dtype: str, memory: Device, span: int | None = None
    ) -> None:
        self.shape, self.dtype, self.memory = shape, dtype, memory
        self.span = span
        """Stages from the one that writes the value to the last that reads
        it (None for a global input, which as many inputs as are in flight hold)."""
        self.free: list[NDArray] = []
        self.allocated = 0
        """Buffers made so far (tests check that it stops growing)."""

    def reserve(self, capacity: int) -> None:
        """Allocate what the stage threads can hold at once with queues of
        ``capacity``: the writer's input, and for each later stage up to the
        last reader, a full queue and the one it runs."""
        if self.span is not None:
            while self.allocated < 1 + self.span * (capacity + 1):
                self.allocated += 1
                self.free.append(empty(self.shape, self.dtype, self.memory))

    def take(self) -> NDArray:
        try:
            return self.free.pop()
        except IndexError:
            self.allocated += 1
            return empty(self.shape, self.dtype, self.memory)

    def give(self, buffer: NDArray) -> None:
        self.free.append(buffer)


OUTPUT_BLOCK_BYTES = 1 << 20
"""Global outputs are carved from blocks of at most this many bytes (and
at most :data:`OUTPUT_BLOCK_ROWS` outputs): one allocation for many
inputs.  An output the caller keeps keeps its block alive."""

OUTPUT_BLOCK_ROWS = 32


class _OutputRows:
    """New arrays for one global output, which the caller keeps: taken from
    a block of them allocated at once (``host_rows``), a list pop per input
    where a fresh ``nd.empty`` costs tens of microseconds of Python."""

    __slots__ = ("dtype", "memory", "rows", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: str, memory: Device) -> None:
        self.shape, self.dtype, self.memory = shape, dtype, memory
        self.rows: list[NDArray] = []

    def take(self) -> NDArray:
        try:
            return self.rows.pop()
        except IndexError:
            if self.memory.kind != "cpu":
                return empty(self.shape, self.dtype, self.memory)
            dtype = np.dtype(self.dtype)
            size = max(math.prod(self.shape) * dtype.itemsize, 1)
            count = max(1, min(OUTPUT_BLOCK_ROWS, OUTPUT_BLOCK_BYTES // size))
            self.rows = host_rows(count, self.shape, dtype)[1][::-1]
            return self.rows.pop()


@dataclass(frozen=True)
class _Layout:
    """Where an item keeps each value: ``slots[key]`` indexes ``item.values``,
    and ``pools[slot]`` recycles that value's buffers (None for a global
    output, which is the caller's once read: ``fresh[slot]`` makes them)."""

    slots: Mapping[Key, int]
    pools: tuple[_BufferPool | None, ...]
    fresh: tuple[_OutputRows | None, ...]

    def new_values(self) -> list[NDArray | None]:
        return [None] * len(self.pools)

    def release(self, values: list[NDArray | None], slots: Iterable[int]) -> None:
        """Drop ``slots`` from ``values``, giving their buffers back."""
        pools = self.pools
        for slot in slots:
            value = values[slot]
            if value is not None:
                values[slot] = None
                pool = pools[slot]
                if pool is not None:
                    pool.give(value)


@dataclass(eq=False)
class _StagePlan:
    """A stage with its value slots resolved once, so that a run only indexes."""

    stage: BuiltStage
    layout: _Layout
    input_slots: tuple[int, ...]
    output_slots: tuple[int, ...]
    released: tuple[int, ...]
    """Values no later stage and no global output reads: given back after this stage."""
    memory: Device
    """Where this stage's buffers live: the host for CPU stages."""
    seconds: float = math.nan
    """The stage's recent time per input in its worker thread (overlapping
    the other stages, on its share of kernel threads), NaN until it has run there."""
    inline_seconds: float = math.nan
    """Its recent time per input back to back in the caller's thread, NaN
    until it has run there."""
    inline_samples: int = 0
    """How many times :attr:`inline_seconds` was recorded."""

    def run(self, item: _Item, here: bool = False) -> None:
        """Run the stage on ``item`` in place; record a failure as its error.
        ``here``: in the caller's thread, back to back with the other stages."""
        stage, values = self.stage, item.values
        pools, fresh = self.layout.pools, self.layout.fresh
        outputs = []
        try:
            inputs = [self._on_device(values[slot]) for slot in self.input_slots]
            for slot in self.output_slots:
                pool = pools[slot]
                outputs.append(fresh[slot].take() if pool is None else pool.take())  # type: ignore[union-attr]
            start = time.perf_counter()
            stage.module.run(inputs, outputs)
            took = time.perf_counter() - start
        except Exception as e:  # noqa: BLE001 - forwarded to get_output with context
            item.error = StageError(stage, item.index, e)
            for slot, output in zip(self.output_slots, outputs):
                values[slot] = output  # taken before the failure: given back too
            self.layout.release(values, range(len(values)))
            return
        self.record(took, here)
        for slot, output in zip(self.output_slots, outputs):
            values[slot] = output
        self.layout.release(values, self.released)

    def record(self, took: float, here: bool = False) -> None:
        """Keep the lower envelope of the stage's times (``here``: back to
        back in the caller's thread, else in its worker): a drop is taken at
        once, a rise (or a run preempted on a busy machine) only bit by bit."""
        seconds = _envelope(self.inline_seconds if here else self.seconds, took)
        if here:
            self.inline_seconds = seconds
            self.inline_samples += 1
        else:
            self.seconds = seconds

    def _on_device(self, value: NDArray | None) -> NDArray:
        assert value is not None  # every source runs before its readers
        if value.device.kind == self.memory.kind:
            return value
        return value.copyto(self.memory)


def _envelope(seconds: float, took: float) -> float:
    """A lower envelope of times, ``seconds`` so far (NaN: none) and a new
    ``took``: a drop is taken at once, a rise (or a run preempted on a busy
    machine) only bit by bit."""
    return took if not seconds <= took else seconds + (took - seconds) / 32


def _plans(lib: PipelineLibrary) -> list[_StagePlan]:
    last_use: dict[Key, int] = {}
    for s, stage in enumerate(lib.stages):
        for source in stage.sources:
            last_use[_key(source)] = s
    kept = {_key(source) for source in lib.outputs}
    memories = [cpu(0) if st.device.kind == "cpu" else st.device for st in lib.stages]
    # Global inputs read by no stage get no slot: nothing copies them in.
    specs: dict[Key, tuple[tuple[int, ...], str, Device]] = {
        (-1, spec.name): (spec.shape, spec.dtype, cpu(0))
        for spec in lib.inputs
        if (-1, spec.name) in last_use
    }
    spans: dict[Key, int] = {}
    for s, stage in enumerate(lib.stages):
        for i, spec in enumerate(stage.module.output_specs):
            specs[(s, i)] = (spec.shape, spec.dtype, memories[s])
            spans[(s, i)] = last_use.get((s, i), s) - s
    slots = {key: slot for slot, key in enumerate(specs)}
    layout = _Layout(
        slots,
        tuple(
            None if key in kept else _BufferPool(*spec, spans.get(key))
            for key, spec in specs.items()
        ),
        tuple(_OutputRows(*spec) if key in kept else None for key, spec in specs.items()),
    )
    plans = []
    for s, stage in enumerate(lib.stages):
        output_keys = [(s, i) for i in range(len(stage.module.output_specs))]
        released = [
            slots[key]
            for key in (*{_key(src) for src in stage.sources}, *output_keys)
            if key not in kept and last_use.get(key, s) <= s
        ]
        plans.append(
            _StagePlan(
                stage,
                layout,
                tuple(slots[_key(src)] for src in stage.sources),
                tuple(slots[key] for key in output_keys),
                tuple(sorted(released)),
                memories[s],
            )
        )
    return plans


class _Lane:
    """The inline path of ``map`` at its cheapest: a ring of ``slots``
    inputs, every value of each in a buffer of its own, each stage's run
    bound to its slot's buffers once (:meth:`Module.bind`) and all of them
    in one :class:`~ember.runtime.call_list.CallList`.  A window of inputs
    costs one copy in per global input, one native call for every stage of
    every input, and one copy out per global output; Python is paid per
    window, not per input or stage.  The stages stay separate modules, run
    in order (stage 0 then stage 1 of each input, input after input) in the
    caller's thread.  Only for stages whose bound runs are native entries
    (``llvm`` on the CPU, no extern functions): :meth:`create` says."""

    def __init__(
        self,
        lib: PipelineLibrary,
        plans: list[_StagePlan],
        slots: int,
        rows: Mapping[Key, tuple[np.ndarray, list[NDArray]]],
        runs: list[Callable[[], None]],
    ) -> None:
        self.plans = plans
        self.slots = slots
        natives = [run.native for run in runs]  # type: ignore[attr-defined]
        self.calls = CallList(natives, stages=len(plans))
        self.runs = runs  # their closures hold the buffers' NDArrays
        self.buffers = slots * len(rows)
        # Global inputs no stage reads have no buffer.
        self.inputs = [
            (spec.name, rows[(-1, spec.name)][0])
            for spec in lib.inputs
            if (-1, spec.name) in rows
        ]
        self.outputs = [rows[_key(source)][0] for source in lib.outputs]
        self.seconds = math.nan
        """The window's time per input overlapped (:meth:`run` with
        ``overlapped``), hand-off included, NaN until it ran so: the lower
        envelope, as :meth:`_StagePlan.record` keeps a stage's."""
        self.samples = 0
        """Overlapped windows timed in :attr:`seconds`."""
        self.team = 0
        """Threads the last overlapped call ran on (0 before one)."""
        self.base = 0
        """The executor's number of the stream's input 0 (:meth:`overlap`)."""
        self.taken = 0
        """Inputs the stream took so far."""
        self.read = 0
        """Inputs of the stream whose outputs were handed out."""

    def record(self, took: float) -> None:
        self.seconds = _envelope(self.seconds, took)
        self.samples += 1

    @classmethod
    def create(
        cls, lib: PipelineLibrary, plans: list[_StagePlan], window: int
    ) -> _Lane | None:
        """A lane with room for ``window`` inputs (fewer where their values
        would take more than :data:`LANE_BYTES`), or None when a stage is
        not on the CPU or its bound run is no native entry."""
        if any(plan.memory.kind != "cpu" for plan in plans):
            return None
        specs = {(-1, spec.name): spec for spec in lib.inputs}
        for s, plan in enumerate(plans):
            for i, spec in enumerate(plan.stage.module.output_specs):
                specs[(s, i)] = spec
        keys = list(plans[0].layout.slots)
        per_input = sum(
            math.prod(specs[key].shape) * np.dtype(specs[key].dtype).itemsize for key in keys
        )
        slots = max(1, min(window, LANE_BYTES // max(per_input, 1)))
        rows = {
            key: host_rows(slots, tuple(specs[key].shape), np.dtype(specs[key].dtype))
            for key in keys
        }
        runs = []
        for slot in range(slots):
            for s, plan in enumerate(plans):
                stage = plan.stage
                outputs = range(len(stage.module.output_specs))
                run = stage.module.bind(
                    [rows[_key(source)][1][slot] for source in stage.sources],
                    [rows[(s, i)][1][slot] for i in outputs],
                )
                if getattr(run, "native", None) is None:
                    return None
                runs.append(run)
        return cls(lib, plans, slots, rows, runs)

    def run(
        self, window: Sequence[Mapping[str, NDArray | np.ndarray]], first: int
    ) -> tuple[list[list[NDArray]], StageError | None]:
        """Run ``window`` (at most ``slots`` inputs, numbered from ``first``)
        back to back: the outputs of each input that completed, in order,
        and the error of the one that failed, if any (the inputs after it
        do not run)."""
        count = len(window)
        self._copy_in(window, 0)
        stages = len(self.plans)
        done, failed, seconds = self.calls.run(count * stages)
        complete = done // stages
        error = None
        if failed:  # call `done` failed
            error = self._error(done % stages, first + complete)
        else:
            for plan, total in zip(self.plans, seconds):
                plan.record(total / count, here=True)
        return self._outputs(range(complete)), error

    # -- overlapped: a stream of inputs round the ring ------------------------

    @property
    def window(self) -> int:
        """Inputs an overlapped call takes: the slots, less one per stage
        after the first (the inputs the stages downstream lag behind)."""
        return self.slots - len(self.plans) + 1

    @property
    def overlaps(self) -> bool:
        """Whether :meth:`overlap` can run here: room for a window, and
        what the native threads need
        (:func:`~ember.runtime.call_list.overlapped_available`)."""
        return self.window >= 1 and overlapped_available()

    @property
    def streaming(self) -> bool:
        """Whether inputs :meth:`overlap` took are still on the lane."""
        return self.taken > self.read

    def overlap(
        self,
        window: Sequence[Mapping[str, NDArray | np.ndarray]],
        first: int,
        cores: Sequence[int | None] | None,
        threads: Callable[[bool], AbstractContextManager[None]],
        lag: bool = True,
    ) -> tuple[list[list[NDArray]], StageError | None]:
        """Take ``window`` (at most :attr:`window` inputs, numbered from
        ``first``, right after the ones taken before) into the stream and
        run one overlapped call, each stage on a thread of its own (pinned
        to ``cores``): with ``lag``, stage ``s`` runs up to ``s`` inputs
        short of the newest, so that the next call finds work ready for
        every stage (those inputs stay on the lane meanwhile); without, the
        call finishes them all (at most :attr:`slots` then).
        An empty pipeline fills, and a call without ``lag`` drains, back to
        back in the caller's thread (:meth:`CallList.run_back_to_back`): then
        one stage alone has work, and its kernels get every core instead of
        one while the other stages' cores idle.  ``threads(overlapped)``:
        the kernels' thread count for the overlapped call (each stage's
        share) or for a back-to-back one (every core).
        Returns the outputs of the inputs the last stage finished, in
        order (those of earlier windows first), and the error of the one
        that failed, if any (then the stream ends there: the inputs after
        it are dropped); :meth:`drain` finishes the rest."""
        if not self.streaming:
            self.calls.start_stream()
            self.base, self.taken, self.read = first, 0, 0
        self._copy_in(window, self.taken % self.slots)
        self.taken += len(window)
        return self._overlapped_call(cores, threads, lag)

    def drain(
        self,
        cores: Sequence[int | None] | None,
        threads: Callable[[bool], AbstractContextManager[None]],
    ) -> tuple[list[list[NDArray]], StageError | None]:
        """Finish every input the stream took (see :meth:`overlap`)."""
        return self._overlapped_call(cores, threads, lag=False)

    def abandon(self) -> None:
        """Drop the inputs still on the lane (``map`` left early)."""
        self.taken = self.read = 0

    def _overlapped_call(
        self,
        cores: Sequence[int | None] | None,
        threads: Callable[[bool], AbstractContextManager[None]],
        lag: bool,
    ) -> tuple[list[list[NDArray]], StageError | None]:
        stages, newest = len(self.plans), self.taken
        done = self.calls.stream_done()
        failure = None
        if done[0] == done[-1] < newest:  # empty: stage s fills up to s short of the newest
            done, failure = self._back_to_back(
                [min(newest, done[0] + stages - 1 - s) for s in range(stages)], threads
            )
        ends = [max(newest - s, finished) for s, finished in enumerate(done)]
        if failure is None and ends != done:
            before = done
            start = time.perf_counter()
            with threads(True):
                done, failure, seconds = self.calls.run_overlapped(ends, cores)
            took = time.perf_counter() - start
            self.team = self.calls.team
            if failure is None:
                for plan, total, end, begin in zip(self.plans, seconds, done, before):
                    if end > begin:
                        plan.record(total / (end - begin))
                if done[-1] > before[-1]:
                    self.record(took / (done[-1] - before[-1]))
        if failure is None and not lag and done[-1] < newest:
            done, failure = self._back_to_back([newest] * stages, threads)
        while failure is not None:
            # The stages downstream finish the inputs before it (none starts
            # it or a later one: the stream stopped there).
            index, stage = failure
            done, earlier = self._back_to_back([max(d, index) for d in done], threads)
            if earlier is None:
                break
            failure = earlier
        complete = done[-1] if failure is None else failure[0]
        outputs = self._outputs(np.arange(self.read, complete) % self.slots)
        self.read = complete
        if failure is None:
            return outputs, None
        index, stage = failure
        self.abandon()
        return outputs, self._error(stage, self.base + index, overlapped=True)

    def _back_to_back(
        self, ends: list[int], threads: Callable[[bool], AbstractContextManager[None]]
    ) -> tuple[list[int], tuple[int, int] | None]:
        """The stream advanced to ``ends`` back to back (see :meth:`overlap`):
        how far each stage got, and where one failed, if one did."""
        before = self.calls.stream_done()
        with threads(False):
            done, failure, seconds = self.calls.run_back_to_back(ends)
        for plan, total, end, begin in zip(self.plans, seconds, done, before):
            if end > begin:
                plan.record(total / (end - begin), here=True)
        return done, failure

    def _copy_in(self, window: Sequence[Mapping[str, NDArray | np.ndarray]], first: int) -> None:
        """Each global input of ``window`` into its slot, from slot ``first``
        on round the ring: one copy per input in numpy's C, straight into
        the ring (a list assigned to ``rows[slots]`` is copied twice, into
        a temporary array first: 0.6 MB per ResNet-18 input)."""
        for name, rows in self.inputs:
            start = 0
            while start < len(window):
                slot = (first + start) % self.slots
                stop = min(len(window), start + self.slots - slot)
                arrays = [staged[name] for staged in window[start:stop]]
                np.stack(arrays, out=rows[slot : slot + stop - start])  # type: ignore[call-overload]
                start = stop

    def _error(self, stage: int, index: int, overlapped: bool = False) -> StageError:
        """The :class:`StageError` of input ``index``, failed in ``stage``;
        the bounds error it reported is taken (and cleared)."""
        plan = self.plans[stage]
        what = f"running @{plan.stage.module.entry_name} on cpu"
        several = overlapped and bounds_flag() == SEVERAL_THREADS_FAILED
        try:
            raise_bounds_error(what)
            cause = RuntimeFailure(f"{what}: a kernel failed (another thread took its report)")
        except RuntimeFailure as e:
            cause = e
        if several:
            cause = RuntimeFailure(
                f"{cause} (kernels of several stages failed at once, this "
                "message is the first one's; the earliest input that may "
                "have failed is named)"
            )
        return StageError(plan.stage, index, cause)

    def _outputs(self, slots: Sequence[int] | np.ndarray) -> list[list[NDArray]]:
        """The global outputs in ``slots``, copied into new arrays."""
        columns = []
        for rows in self.outputs:
            fresh, arrays = host_rows(len(slots), rows.shape[1:], rows.dtype)
            np.take(rows, np.asarray(slots, np.intp), axis=0, out=fresh)
            columns.append(arrays)
        return [list(outputs) for outputs in zip(*columns)]


# --------------------------------------------------------------------------
# Workers (they hold no reference to the executor, so it can be collected)
# --------------------------------------------------------------------------


class _Channel:
    """A FIFO between threads, TVM's ``QueueData`` without the copies.

    Two C queues (``queue.SimpleQueue``): ``items``, and, when bounded,
    ``credits`` holding one token per free place (``capacity``; 0:
    unbounded).  A put takes a credit, then appends; a get pops, then gives
    the credit back.  Both sides are single calls into C that sleep with
    the GIL released when they must wait (a futex, woken by the other
    side's call): no Python lock, condition or object per item, and a
    sleeping thread costs nothing until its item arrives.
    """

    __slots__ = ("capacity", "credits", "items")

    def __init__(self, capacity: int = 0) -> None:
        self.items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.capacity = capacity
        self.credits: queue.SimpleQueue[None] | None = None
        if capacity:
            self.credits = queue.SimpleQueue()
            for _ in range(capacity):
                self.credits.put(None)

    def put(self, item: Any) -> None:
        if self.credits is not None:
            self.credits.get()
        self.items.put(item)

    def get(self, timeout: float | None = None) -> Any:
        """The next item; raise ``queue.Empty`` after ``timeout`` seconds."""
        item = self.items.get(timeout=timeout)
        if self.credits is not None:
            self.credits.put(None)
        return item

    def __len__(self) -> int:
        return self.items.qsize()


_WAKE = object()
"""Token put in the results queue to wake a waiting ``get_output`` after a
failure or ``close``: it finds the reason on the executor."""

_current = threading.local()
"""Per thread: ``workers``, the :class:`_Workers` whose stage this thread runs
(a worker thread for its whole life; the caller during ``run(sync=True)``)
and ``stage``, that stage.  A call back into that executor from there would
wait for itself."""


class _Workers:
    """The stage threads, the queues between them, and what they share with
    the executor: the count of unread inputs, the futures, a fatal failure."""

    def __init__(
        self,
        plans: Sequence[_StagePlan],
        capacity: int,
        cores: Sequence[int | None],
        output_slots: Sequence[int],
        name: str,
    ) -> None:
        self.plans = plans
        # queues[s] feeds stage s.  queues[0] takes what run() submits: it is
        # bounded by max_in_flight (the unread count below) rather than by a
        # maxsize, so that run() waits only for a reader, never for a stage.
        # The queues between stages hold `capacity` items.  The last one holds
        # results, bounded by max_in_flight too, so that the last stage never
        # blocks on a slow reader.
        self.queues: list[_Channel] = [_Channel()]
        self.queues += [_Channel(capacity) for _ in plans[1:]]
        self.results = _Channel()
        self.queues.append(self.results)
        self.output_slots = output_slots
        self.cores = cores
        self.name = name
        self.stopping = threading.Event()
        self.position: list[int | None] = [None] * len(plans)
        self.threads: list[threading.Thread] = []
        # Guarded by `room`, which run() waits on for room to submit:
        self.room = threading.Condition()
        self.unread = 0
        """Inputs submitted and not yet handed out (by get_output or a future)."""
        self.futures: dict[int, Future[list[NDArray]]] = {}
        """The unresolved futures of submit(), by input index."""
        self.failure: StageError | None = None
        """What stopped the pipeline (a stage's KeyboardInterrupt, SystemExit…)."""

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
        plan, inbox = self.plans[s], self.queues[s]
        _current.workers, _current.stage = self, plan.stage
        try:
            self._pin(s)
            while True:
                item = inbox.get()
                if item is _STOP:
                    self._forward(s, _STOP)
                    return
                if item.error is None and not self.stopping.is_set():
                    self.position[s] = item.index
                    plan.run(item)  # an Exception becomes this item's error
                    self.position[s] = None
                self._forward(s, item)
        except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt, SystemExit: the pipeline stops
            self.fail(StageError(plan.stage, self.position[s], e))
            # Keep taking items, so that no stage upstream waits for room here.
            while inbox.get() is not _STOP:
                pass
            self._forward(s, _STOP)

    def _forward(self, s: int, item: Any) -> None:
        if s + 1 < len(self.plans):
            self.queues[s + 1].put(item)
        else:
            self.deliver(item)

    def deliver(self, item: Any) -> None:
        """Hand a finished input to its future, or to ``get_output``'s queue."""
        future = None
        if item is not _STOP:
            with self.room:
                future = self.futures.pop(item.index, None)
                if future is not None:
                    self.unread -= 1
                    self.room.notify_all()
        if future is None:
            self.results.put(item)
        elif item.error is not None:
            future.set_exception(item.error)
        else:
            # Callbacks run here, in the last stage's worker thread.
            future.set_result([item.values[slot] for slot in self.output_slots])

    def fail(self, error: StageError) -> None:
        """The pipeline stopped: every waiter, now and later, gets ``error``."""
        with self.room:
            if self.failure is None:
                self.failure = error
        self.abandon(self.failure or error)

    def abandon(self, error: PipelineError) -> None:
        """Wake every waiter; pending futures get ``error``; workers skip the rest.

        Futures are resolved before ``stopping`` is set, so that an input
        skipped because of it never reaches a future.
        """
        with self.room:
            futures = list(self.futures.values())
            self.futures.clear()
            self.room.notify_all()
        self.stopping.set()
        self.results.put(_WAKE)
        for future in futures:
            future.set_exception(error)

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

    def busy(self) -> bool:
        """Whether an input is queued for a stage or running in one."""
        return any(p is not None for p in self.position) or any(
            len(inbox) for inbox in self.queues[:-1]
        )

    def where_is(self, index: int) -> str:
        """Where input ``index`` is, for a timeout message."""
        for plan, current in zip(self.plans, self.position):
            if current == index:
                return f"it is running in {plan.stage.describe()}"
        return "it is waiting in a queue"

    def shutdown(self, timeout: float) -> bool:
        """Stop every worker; True when all have exited within ``timeout``."""
        self.abandon(
            PipelineClosedError(
                f"pipeline @{self.name}: the executor was closed before this input finished"
            )
        )
        deadline = time.monotonic() + timeout
        # Workers skip work once stopping, so the queues drain to _STOP.
        self.queues[0].put(_STOP)
        # A finalizer may run in a worker thread: it cannot wait for itself.
        others = [t for t in self.threads if t is not threading.current_thread()]
        for thread in others:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self.results.put(_STOP)  # wakes a reader even if a stage never returns
        return not any(thread.is_alive() for thread in others)


# Kernels' parallel loops read one process-wide thread count.  While
# executors have workers, it is the smallest share any of them asked for
# (see kernel_threads), and the count from before the first is restored
# after the last.  An input run back to back in a caller's thread lends its
# kernels that count back while no executor's workers have an input to run.
_threads_lock = threading.Lock()
_thread_shares: list[int] = []
_sharing: list[_Workers] = []
"""The workers of the executors that hold a share, in ``_thread_shares``' order."""
_saved_thread_count: int | None = None


def _share_kernel_threads(share: int, workers: _Workers) -> None:
    global _saved_thread_count
    from ember.runtime import threads

    with _threads_lock:
        if not _thread_shares:
            _saved_thread_count = threads.num_threads()
        _thread_shares.append(share)
        _sharing.append(workers)
        threads.set_num_threads(min(_thread_shares))


def _unshare_kernel_threads(share: int, workers: _Workers) -> None:
    with _threads_lock:
        _thread_shares.remove(share)
        _sharing.remove(workers)
        _set_shared_count(_saved_thread_count)


def _set_shared_count(otherwise: int | None) -> None:
    """With ``_threads_lock`` held: kernels on the smallest share an
    executor holds, or, where none does, on ``otherwise`` (None: as they
    are)."""
    from ember.runtime import threads

    if _thread_shares:
        threads.set_num_threads(min(_thread_shares))
    elif otherwise is not None:
        threads.set_num_threads(otherwise)


@contextmanager
def _every_kernel_thread() -> Iterator[None]:
    """Kernels on the count from before executors shared the cores out,
    inside the block, where the caller runs stages back to back and no
    executor's workers have an input to run: the shares are for kernels
    that run beside other stages, and none does.  An executor whose workers
    sit idle (started, its inputs all done) does not hold its share against
    another's back-to-back run.  Otherwise nothing changes."""
    from ember.runtime import threads

    with _threads_lock:
        lend = (
            _saved_thread_count is not None
            and bool(_thread_shares)
            and not any(workers.busy() for workers in _sharing)
        )
        if lend:
            threads.set_num_threads(_saved_thread_count)  # type: ignore[arg-type]
    if not lend:
        yield
        return
    try:
        yield
    finally:
        with _threads_lock:
            _set_shared_count(None)


@contextmanager
def _kernel_threads(share: int) -> Iterator[None]:
    """Kernels on at most ``share`` threads inside the block (``map``'s
    overlapped lane: each stage's share of the cores, as its stage thread
    would have), then the count from before — or the executors' shares,
    where they changed meanwhile."""
    from ember.runtime import threads

    with _threads_lock:
        previous, shared = threads.num_threads(), bool(_thread_shares)
        threads.set_num_threads(min(share, previous))
    try:
        yield
    finally:
        with _threads_lock:
            saved = _saved_thread_count
            _set_shared_count(saved if shared and saved is not None else previous)


def _shutdown(workers: _Workers, shared: list[int | None], timeout: float) -> bool:
    """Stop ``workers`` and give back their share of kernel threads; run once."""
    stopped = workers.shutdown(timeout)
    share, shared[0] = shared[0], None
    if share is not None:
        _unshare_kernel_threads(share, workers)
    return stopped


# --------------------------------------------------------------------------
# The executor
# --------------------------------------------------------------------------

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _closes_on_interrupt(
    method: Callable[Concatenate[PipelineExecutor, _P], _R],
) -> Callable[Concatenate[PipelineExecutor, _P], _R]:
    """Ctrl-C while the caller is in ``method`` closes the executor (workers
    stopped, joined with a bound), then goes on up: no thread is left
    waiting for inputs that will never come, nothing hangs at exit."""

    @functools.wraps(method)
    def guarded(self: PipelineExecutor, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except (KeyboardInterrupt, SystemExit):
            self._interrupted()
            raise

    return guarded


@dataclass(frozen=True)
class ThroughputResult:
    """Inputs per second over ``count`` inputs, pipelined or sequential."""

    mode: str
    count: int
    seconds: float
    inline: int = 0
    """Pipelined inputs that ran in the caller's thread (the small-stage fast path)."""
    overlapped_lane: int = 0
    """Pipelined inputs that ran overlapped on ``map``'s lane (a native
    thread per stage) rather than through the stage threads."""

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("inf")

    @property
    def ms_per_input(self) -> float:
        return self.seconds * 1e3 / self.count

    def __str__(self) -> str:
        path = (
            f"; {self.inline} ran inline, stages too small to pipeline"
            if self.inline
            else ""
        )
        if self.overlapped_lane:
            path += f"; {self.overlapped_lane} overlapped on map's lane"
        return (
            f"{self.mode}: {self.count} inputs in {self.seconds:.3f} s = "
            f"{self.per_second:.1f} inputs/s ({self.ms_per_input:.3f} ms each{path})"
        )


class PipelineExecutor(PipelineInputs):
    """Runs a built pipeline with one worker per stage (TVM's ``PipelineModule``).

    ``PipelineExecutor(lib)`` takes what ``ember.pipeline.build`` or
    ``load_library`` returns.  ``capacity``: items per queue between stages;
    ``max_in_flight``: inputs submitted and not yet read before the pipeline
    is full (see ``run``); ``pin_cores``: see the module docstring (None: pin
    when stages use more than one CPU device); ``inline``: run the stages in
    the caller's thread (True), overlapped (False), or the plan measured
    faster (None); ``lane``: whether ``map`` takes its inputs a window at a
    time through its lane (one native call per window, back to back or
    overlapped with a native thread per stage) where the stages allow it:
    None (the default) for every plan but ``inline=False``'s, which keeps
    to the stage threads; True for that one too; False never.
    """

    def __init__(
        self,
        library: PipelineLibrary,
        *,
        capacity: int = DEFAULT_CAPACITY,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        pin_cores: bool | None = None,
        inline: bool | None = None,
        lane: bool | None = None,
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
        self._lane: _Lane | None = None  # made on map()'s first inline input
        self._lane_fits = True  # until _Lane.create says otherwise
        self._input_specs = {spec.name: spec for spec in library.inputs}
        self._layout = self._plans[0].layout
        self._output_slots = [
            self._layout.slots[_key(source)] for source in library.outputs
        ]
        self._max_in_flight = max_in_flight
        self._capacity = capacity
        if inline not in (None, True, False):
            raise PipelineError(f"inline must be True, False or None, got {inline!r}")
        if lane not in (None, True, False):
            raise PipelineError(f"lane must be True, False or None, got {lane!r}")
        self._inline = inline
        self._lane_wanted = lane
        self._chosen_at: float | None = None
        """When ``inline=None`` last chose by comparing the plans' times."""
        self.inline_runs = 0
        """Inputs of ``run``/``submit``/``map`` that ran in the caller's thread
        (see ``inline``), not counting ``run(sync=True)``."""
        self.lane_windows = 0
        """Native calls ``map``'s lane made: each ran a window of inputs
        through every stage (see ``_Lane``), back to back or overlapped."""
        self.overlapped_lane_runs = 0
        """Inputs ``map``'s lane ran overlapped, each stage on a thread of
        its own in one native call per window (not in :attr:`inline_runs`)."""
        self._staged: dict[str, NDArray] = {}
        self._next_in = 0  # index of the next input run() submits
        self._reads: deque[int] = deque()  # inputs get_output returns, in order
        self._peak_in_flight = 0
        self._reserving = 0  # slots taken by run() calls not yet submitted
        self._ready: dict[int, _Item] = {}
        self._submit_lock = threading.Lock()
        self._output_lock = threading.Lock()
        self._closed = False
        self._shared: list[int | None] = [None]
        """The kernel thread share this executor holds while its workers run."""
        cores = self._cores(pin_cores)
        self._workers = _Workers(
            self._plans, capacity, cores, self._output_slots, library.name
        )
        self._slots = self._workers.room
        self._started = False
        self._finalizer = weakref.finalize(
            self, _shutdown, self._workers, self._shared, 1.0
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
    def in_flight(self) -> int:
        """Inputs submitted and not yet returned by ``get_output`` (or their future)."""
        return self._workers.unread

    @property
    def pinned_cores(self) -> list[int | None]:
        """The core each stage's worker is pinned to, None where unpinned."""
        return list(self._workers.cores)

    @property
    def buffers_allocated(self) -> int:
        """Buffers allocated so far for inputs and values between stages.

        They are recycled: once as many exist as inputs ever held them at
        once (bounded by the queues and ``max_in_flight``), running more
        inputs allocates none.  Global outputs are not counted: each input's
        are new arrays, the caller's to keep.
        """
        pooled = sum(pool.allocated for pool in self._layout.pools if pool is not None)
        return pooled + (0 if self._lane is None else self._lane.buffers)

    @property
    def kernel_threads(self) -> int:
        """Threads each stage's kernels run their parallel loops on while the
        workers run: one per pinned stage (it has one core), else the cores
        this process may use shared out among the stages on the host — at
        least one, never more than ``ember.runtime.threads`` allowed before.
        Stage threads and kernel teams together then match the cores instead
        of fighting for them."""
        if self._shared[0] is not None:
            return self._shared[0]
        from ember.runtime import threads

        if any(core is not None for core in self._workers.cores):
            return 1
        host_stages = sum(1 for s in self._lib.stages if s.device.kind == "cpu")
        share = threads.available_cores() // max(host_stages, 1)
        return max(1, min(share, threads.num_threads()))

    @property
    def lane_threads(self) -> int:
        """Threads the last window overlapped on ``map``'s lane ran on: one
        per stage (one in all without libgomp); 0 before such a window."""
        return 0 if self._lane is None else self._lane.team

    @property
    def closed(self) -> bool:
        return self._closed

    # -- running -----------------------------------------------------------

    @_closes_on_interrupt
    def run(
        self, sync: bool = False, timeout: float | None = None, *, block: bool = False
    ) -> int:
        """Submit the inputs set so far; return this input's index.

        Pipelined (default): the input is queued and ``run`` returns at once.
        When ``max_in_flight`` inputs are unread the pipeline is full: with
        no ``timeout`` ``run`` raises :class:`PipelineFull` at once (only a
        ``get_output`` makes room, and this thread is the one that would
        call it); with ``timeout=`` it waits that long for another thread to
        read, then raises :class:`PipelineTimeout`; ``block=True`` waits as
        long as it takes.  ``sync=True``: the stages run one after another
        in this thread before ``run`` returns (the baseline).  Either way
        ``get_output`` returns the result, in input order.
        """
        self._check_open("run()")
        missing = [name for name in self._input_specs if name not in self._staged]
        if missing:
            raise PipelineError(
                f"run(): input(s) not set: {', '.join(missing)}; call set_input(name, array) first"
            )
        return self._enqueue(
            dict(self._staged), "run()", timeout, block=block, sync=sync
        )

    @_closes_on_interrupt
    def submit(
        self,
        inputs: Any = None,
        /,
        *,
        timeout: float | None = None,
        block: bool = False,
        **named: Any,
    ) -> Future[list[NDArray]]:
        """Submit one input; return a :class:`concurrent.futures.Future` of its outputs.

        ``inputs``: a dict by input name, a tuple by position, or the array
        of a one-input pipeline (keywords work too); inputs not given are the
        ones ``set_input`` set, and ``set_input``'s are left alone.  The
        future's result is what ``get_output`` would return (its exception a
        :class:`StageError`); ``get_output`` does not return it.  When the
        pipeline is full, ``submit`` waits for earlier futures, which free
        their room by themselves; if every unread input waits for
        ``get_output`` it raises :class:`PipelineFull` like ``run``.
        Callbacks run in the last stage's worker thread and must not call
        this executor.
        """
        self._check_open("submit()")
        staged = self._with_inputs(inputs, named, "submit()")
        future: Future[list[NDArray]] = Future()
        future.set_running_or_notify_cancel()  # it cannot be cancelled once queued
        self._enqueue(staged, "submit()", timeout, block=block, future=future)
        return future

    def map(
        self, inputs: Iterable[Any], *, window: int | None = None
    ) -> Iterator[list[NDArray]]:
        """Stream ``inputs`` through; yield each one's outputs, in order.

        ``for outputs in pipe.map(inputs)``: one thread submits and reads,
        keeping at most ``window`` inputs in flight (default: enough to keep
        every stage and queue busy, at most ``max_in_flight``), so memory
        stays bounded however long ``inputs`` is; it is consumed lazily.
        Each element is what ``submit`` takes (a dict, a tuple, or the array
        of a one-input pipeline).  A :class:`StageError` is raised at its
        input's turn and ends the iteration.  ``map`` needs the executor to
        itself: no ``run()`` input pending, no other thread calling ``run``.
        """
        default = len(self._plans) * (self._capacity + 1) + 1
        checked = self._map_window(window, default)
        lane_window = LANE_WINDOW if window is None else checked
        return self._stream(iter(inputs), checked, lane_window)

    def _stream(
        self, inputs: Iterator[Any], window: int, lane_window: int
    ) -> Iterator[list[NDArray]]:
        pending: deque[int] = deque()
        batch: list[Mapping[str, NDArray | np.ndarray]] = []  # for the lane
        full = lane_window  # a batch's size: at most the lane's slots
        overlapped = False  # how the batch runs on the lane
        try:
            for one in inputs:
                staged = self._with_inputs(one, {}, "map()")
                # Nothing the lane's choice depends on changes while it fills.
                joins = bool(batch)
                usable = self._lane_fits and self._lane_wanted is not False
                plan = None if joins or not usable else self.plan
                if plan is not None and (plan != OVERLAPPED or self._overlaps_on_lane()):
                    while pending:  # theirs come first
                        yield self._read_own(pending)
                    joins = self._lane_is_free()
                    if joins:
                        overlapped = plan == OVERLAPPED
                        full = self._lane_batch(lane_window, overlapped)
                        if plan == TIMING_BACK_TO_BACK:
                            full = 1  # one input times it
                if not (joins and overlapped):
                    yield from self._drain_lane()  # the lane's inputs come first
                if joins:
                    batch.append(staged)
                    if len(batch) == full:
                        yield from self._run_lane(batch, overlapped, lane_window)
                    continue
                pending.append(self._enqueue(staged, "map()", None))
                if len(pending) == window:
                    yield self._read_own(pending)
            yield from self._run_lane(batch, overlapped, lane_window)
            yield from self._drain_lane()
            while pending:
                yield self._read_own(pending)
        except (KeyboardInterrupt, SystemExit):
            self._interrupted()
            raise
        finally:
            # Left early (break, an error): read what is still in flight, so
            # that the next get_output does not return it; drop the lane's.
            if self._lane is not None:
                self._lane.abandon()
            while pending and not self._closed and self._workers.failure is None:
                try:
                    self._read_own(pending)
                except StageError:
                    pass

    def _lane_is_free(self) -> bool:
        """Whether ``map``'s next input may take the lane: no other input
        anywhere in flight, and the stages fit it (made here, on the first
        such input)."""
        if self._workers.unread or self._workers.failure is not None:
            return False
        if self._lane is None:
            self._lane = _Lane.create(self._lib, self._plans, LANE_WINDOW)
            self._lane_fits = self._lane is not None
        return self._lane_fits

    def _lane_lags(self, window: int) -> bool:
        """Whether the overlapped lane may keep inputs between calls (the
        stages downstream lagging behind) when ``map`` keeps at most
        ``window`` inputs in flight: a window of at least one new input
        plus an input per later stage."""
        return window >= len(self._plans)

    def _lane_batch(self, window: int, overlapped: bool) -> int:
        """Inputs per call of the lane with at most ``window`` in flight."""
        lane = self._lane
        assert lane is not None
        if not overlapped:
            return min(window, lane.slots)
        if self._lane_lags(window):
            return min(window - len(self._plans) + 1, lane.window)
        return min(window, lane.slots)

    def _run_lane(
        self, batch: list[Mapping[str, NDArray | np.ndarray]], overlapped: bool, window: int
    ) -> Iterator[list[NDArray]]:
        """Run ``batch`` through the lane, ``overlapped`` or back to back,
        and empty it; yield each input's outputs, then raise the error of
        the input that failed, if one did.  ``window``: ``map``'s bound on
        inputs in flight."""
        if not batch:
            return
        assert self._lane is not None  # inputs join a batch only once it exists
        with self._submit_lock:
            self._check_open("map()")
            first = self._next_in
            self._next_in += len(batch)
        if overlapped:
            # Each stage's kernels get its share, as in the stage threads
            # (nested regions: one thread each unless libgomp nests).
            results, error = self._lane.overlap(
                batch, first, self._workers.cores, self._lane_threads, self._lane_lags(window)
            )
            self.overlapped_lane_runs += len(results) + (error is not None)
        else:
            with _every_kernel_thread():
                results, error = self._lane.run(batch, first)
            self.inline_runs += len(results) + (error is not None)
        self.lane_windows += 1
        batch.clear()
        yield from results
        if error is not None:
            raise error

    def _lane_threads(self, overlapped: bool) -> AbstractContextManager[None]:
        """The kernels' threads for a call of the overlapped lane: each
        stage's share when the stages overlap, every core back to back."""
        return _kernel_threads(self.kernel_threads) if overlapped else _every_kernel_thread()

    def _drain_lane(self) -> Iterator[list[NDArray]]:
        """Finish the inputs still overlapped on the lane (the stages
        downstream lag behind); yield their outputs, then raise the error
        of the input that failed, if one did."""
        if self._lane is None or not self._lane.streaming:
            return
        results, error = self._lane.drain(self._workers.cores, self._lane_threads)
        self.overlapped_lane_runs += len(results) + (error is not None)
        self.lane_windows += 1
        yield from results
        if error is not None:
            raise error

    def _read_own(self, pending: deque[int]) -> list[NDArray]:
        """``map``'s next result: the input it submitted first."""
        expected = pending.popleft()
        item = self._read("map()", None, block=False)
        if item.index != expected:
            raise PipelineError(
                f"map(): got input #{item.index} where #{expected} was due: another "
                "thread called run() while map() streamed; map() needs the executor to itself"
            )
        return self._outputs(item)

    def _enqueue(
        self,
        staged: Mapping[str, NDArray | np.ndarray],
        what: str,
        timeout: float | None,
        *,
        block: bool = False,
        sync: bool = False,
        future: Future[list[NDArray]] | None = None,
    ) -> int:
        """Take room, copy the inputs into recycled buffers, register the
        input (for get_output or its future), queue it."""
        deadline = _deadline(timeout, what)
        self._take_slot(what, deadline, timeout, block)
        values = self._layout.new_values()
        for name, value in staged.items():
            slot = self._layout.slots.get((-1, name))
            if slot is not None:  # else no stage reads it
                pool = self._layout.pools[slot]
                assert pool is not None  # only global outputs are not recycled
                buffer = pool.take()
                np.copyto(np.asarray(buffer), np.asarray(value))
                values[slot] = buffer
        registered = False
        try:
            with self._submit_lock:
                item = _Item(self._next_in, values)
                with self._slots:
                    # Under the lock close() resolves futures with: none is missed.
                    self._check_open(what)
                    if future is None:
                        self._reads.append(item.index)
                    else:
                        self._workers.futures[item.index] = future
                    self._workers.unread += 1
                    self._reserving -= 1
                    registered = True
                    self._peak_in_flight = max(self._peak_in_flight, self.in_flight)
                here = sync or self._runs_inline()
                if not here:
                    if not self._started:
                        self._start()
                    self._workers.queues[0].put(item)
                elif not sync:
                    self.inline_runs += 1
                self._next_in += 1
        finally:
            if not registered:
                with self._slots:
                    self._reserving -= 1
                    self._slots.notify_all()
        if here:
            self._run_here(item)
        return item.index

    @property
    def plan(self) -> str:
        """How ``map``'s next input runs: :data:`OVERLAPPED` (each stage on
        a thread of its own: natively on ``map``'s lane where it can, see
        ``lane``, else through the stage threads), :data:`BACK_TO_BACK` (in
        the caller's thread, kernels on every core) or
        :data:`TIMING_BACK_TO_BACK` (back to back, once, to time it).
        ``inline=False``/``True`` fix it; with ``inline=None`` the executor
        chooses from the times it measured (:attr:`plan_seconds`).  Through
        the stage threads: back to back while the stages together take
        under :data:`INLINE_SECONDS`; else, once both plans are timed (the
        first inputs overlapped, then :data:`PROBE_INPUTS` back to back),
        whichever takes less per input, the threads being charged
        :data:`HANDOFF_SECONDS` for their hand-off.  On the lane: the first
        :data:`PROBE_INPUTS` windows overlapped, then as many inputs back to
        back, then the faster per input (the lane's overlapped time
        includes its hand-off, a few microseconds).  Every
        :data:`RETIME_SECONDS` the plan not chosen is timed again.
        ``run`` and ``submit`` choose the same way from the stage threads'
        times, their only overlapped path."""
        return self._plan(self._overlaps_on_lane())

    def _plan(self, lane: bool) -> str:
        """:attr:`plan`, with the overlapped time of ``map``'s lane
        (``lane``) or of the stage threads."""
        if self._inline is not None:
            return BACK_TO_BACK if self._inline else OVERLAPPED
        choice = self._compare_plans(lane)
        if choice is None:
            return self._choose_plan(lane)
        now = time.monotonic()
        if self._chosen_at is None:
            self._chosen_at = now
        elif now - self._chosen_at > RETIME_SECONDS:
            self._chosen_at = None
            if choice == BACK_TO_BACK:  # forget the other plan's times
                if self._lane is not None:
                    self._lane.seconds, self._lane.samples = math.nan, 0
                for stage in self._plans:
                    stage.seconds = math.nan
            else:
                for stage in self._plans:
                    stage.inline_seconds, stage.inline_samples = math.nan, 0
        return self._choose_plan(lane)

    def _compare_plans(self, lane: bool) -> str | None:
        """The plan a comparison of both measured plans chooses now, or
        None when the choice is not a comparison (small stages, a plan
        not timed yet)."""
        choice = self._choose_plan(lane)
        overlapped, back_to_back, handoff = self._plan_times(lane)
        if choice == TIMING_BACK_TO_BACK or math.isnan(back_to_back):
            return None
        if handoff and back_to_back < INLINE_SECONDS:
            return None
        return choice

    def _choose_plan(self, lane: bool) -> str:
        """:attr:`plan` from the times as they are (``inline=None``)."""
        overlapped, back_to_back, handoff = self._plan_times(lane)
        if math.isnan(back_to_back):  # not run back to back yet: the threads' sum
            back_to_back = math.fsum(plan.seconds for plan in self._plans)
        if handoff and back_to_back < INLINE_SECONDS:
            return BACK_TO_BACK
        if math.isnan(overlapped):
            return OVERLAPPED  # the first input times the stages in their threads
        if min(plan.inline_samples for plan in self._plans) < PROBE_INPUTS:
            return TIMING_BACK_TO_BACK
        return BACK_TO_BACK if back_to_back <= overlapped + handoff else OVERLAPPED

    @property
    def plan_seconds(self) -> tuple[float, float]:
        """Measured seconds per input of each plan as :attr:`plan` sees
        them, NaN until timed: overlapped (on ``map``'s lane, a window's
        time per input, hand-off included; once the lane has run so, else
        the slowest stage in its thread, the others running beside it) and
        back to back (the stages' sum in the caller's thread)."""
        overlapped, back_to_back, _ = self._plan_times(self._overlaps_on_lane())
        return overlapped, back_to_back

    def _plan_times(self, lane: bool) -> tuple[float, float, float]:
        """The overlapped and back-to-back times per input, and what the
        overlapped one is charged for its hand-off: on ``map``'s lane
        (``lane``), a window's time per input once :data:`PROBE_INPUTS`
        windows were timed, hand-off included (charged 0); else the
        slowest stage in the stage threads, charged :data:`HANDOFF_SECONDS`."""
        back_to_back = math.fsum(plan.inline_seconds for plan in self._plans)
        if lane:  # timed on PROBE_INPUTS windows, as back to back on inputs
            timed = self._lane is not None and self._lane.samples >= PROBE_INPUTS
            return self._lane.seconds if timed else math.nan, back_to_back, 0.0  # type: ignore[union-attr]
        overlapped = max((plan.seconds for plan in self._plans), default=math.nan)
        if any(math.isnan(plan.seconds) for plan in self._plans):
            overlapped = math.nan
        return overlapped, back_to_back, HANDOFF_SECONDS

    def _overlaps_on_lane(self) -> bool:
        """Whether ``map`` runs its overlapped inputs on its lane (each
        stage on a native thread) rather than through the stage threads:
        as ``lane`` says (None: unless ``inline=False``), where the
        stages fit a lane and the C library has what it needs."""
        wanted = self._inline is None if self._lane_wanted is None else self._lane_wanted
        if self._lane is not None and not self._lane.overlaps:
            return False
        return wanted and self._lane_fits and overlapped_available()

    def _runs_inline(self) -> bool:
        """Whether the next input of ``run``/``submit`` runs in the caller's
        thread (see :attr:`plan`; their overlapped path is the threads)."""
        return self._plan(lane=False) != OVERLAPPED

    def _run_here(self, item: _Item) -> None:
        """``run(sync=True)`` and the inline fast path: every stage in this
        thread, one after another."""
        previous = (
            getattr(_current, "workers", None),
            getattr(_current, "stage", None),
        )
        plan = self._plans[0]
        try:
            with _every_kernel_thread():
                for plan in self._plans:
                    _current.workers, _current.stage = self._workers, plan.stage
                    if item.error is None:
                        plan.run(item, here=True)  # an Exception becomes this item's error
        except BaseException as e:
            # KeyboardInterrupt or SystemExit from the stage: the pipeline
            # stops for every waiter, and this thread re-raises it.
            self._workers.fail(StageError(plan.stage, item.index, e))
            raise
        finally:
            _current.workers, _current.stage = previous
        self._workers.deliver(item)

    def _take_slot(
        self, what: str, deadline: float | None, timeout: float | None, block: bool
    ) -> None:
        """Wait until fewer than ``max_in_flight`` inputs are unread or being
        submitted; raise :class:`PipelineFull` if waiting could only end by
        this caller reading, :class:`PipelineTimeout` past ``deadline``."""
        with self._slots:
            while self.in_flight + self._reserving >= self._max_in_flight:
                self._check_open(what)
                # Futures free their room by themselves: waiting for them is safe.
                if deadline is None and not block and not self._workers.futures:
                    raise pipeline_full(what, self.in_flight, self._max_in_flight)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise pipeline_timeout(what, self.in_flight, self._max_in_flight, timeout)
                self._slots.wait(remaining)
            self._check_open(what)
            self._reserving += 1

    def _start(self) -> None:
        for pool in self._layout.pools:
            if pool is not None:
                pool.reserve(self._capacity)
        share = self.kernel_threads
        _share_kernel_threads(share, self._workers)
        self._shared[0] = share
        self._workers.start()
        self._started = True

    @_closes_on_interrupt
    def get_output(
        self, timeout: float | None = None, *, block: bool = False
    ) -> list[NDArray]:
        """The outputs of the next input, in input order; blocks until it is done.

        Raises :class:`StageError` if a stage failed on that input, and
        :class:`PipelineTimeout` when nothing arrives within ``timeout``
        seconds.  With no input pending (submitted with ``run``) and no
        ``timeout`` it raises :class:`PipelineEmpty` at once instead of
        waiting forever; ``timeout=`` or ``block=True`` wait for an input
        another thread will submit.
        """
        return self._outputs(self._read("get_output()", timeout, block=block))

    def _read(self, what: str, timeout: float | None, *, block: bool) -> _Item:
        """The next input submitted with ``run``, when done; its room is freed."""
        self._check_reentry(what)  # before the lock, which the caller may hold
        deadline = _deadline(timeout, what)
        with self._output_lock:
            self._check_open(what)
            if not self._reads and deadline is None and not block:
                raise PipelineEmpty(
                    f"{what}: no input is pending; call set_input() and run() first "
                    "(or pass timeout= or block=True when another thread submits)"
                )
            item = self._wait_for(what, deadline, timeout)
            with self._slots:
                self._reads.popleft()
                self._workers.unread -= 1
                self._slots.notify_all()
        return item

    def _outputs(self, item: _Item) -> list[NDArray]:
        if item.error is not None:
            raise item.error
        return [item.values[slot] for slot in self._output_slots]  # type: ignore[misc]

    def _wait_for(
        self, what: str, deadline: float | None, timeout: float | None
    ) -> _Item:
        while True:
            # run() registers an input before queueing it: the next result is
            # always for an index already in _reads.
            index = self._reads[0] if self._reads else None
            if index is not None and index in self._ready:
                return self._ready.pop(index)
            remaining = (
                None if deadline is None else max(deadline - time.monotonic(), 0.0)
            )
            try:
                item = self._workers.results.get(timeout=remaining)
            except queue.Empty:
                if index is None:
                    index = self._next_in
                    where = "no such input was submitted yet (call run())"
                else:
                    where = self._workers.where_is(index)
                raise PipelineTimeout(
                    f"{what}: no result for input #{index} within {timeout} s; {where}"
                ) from None
            if self._workers.failure is not None:
                raise self._workers.failure
            if item is _STOP or item is _WAKE or self._closed:
                # Inputs finished during close() are dropped like pending ones.
                raise PipelineClosedError(
                    f"pipeline @{self._lib.name}: the executor was closed while {what} waited"
                )
            self._ready[item.index] = item

    # -- measuring -----------------------------------------------------------

    def benchmark(
        self, count: int, *, sync: bool = False, warmup: int = 2
    ) -> ThroughputResult:
        """Push ``count`` copies of the current inputs through; time them.

        Pipelined: ``map`` submits and reads, keeping every stage busy.
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
        start, inline_before = time.perf_counter(), self.inline_runs
        lane_before = self.overlapped_lane_runs
        if sync:
            for _ in range(count):
                self.run(sync=True)
                self.get_output()
        else:
            self._pipelined(count)
        return ThroughputResult(
            "sequential" if sync else "pipelined",
            count,
            time.perf_counter() - start,
            self.inline_runs - inline_before,
            self.overlapped_lane_runs - lane_before,
        )

    def _pipelined(self, count: int) -> None:
        # The current inputs, ``count`` times; map() keeps every stage busy
        # and reads each result as it comes.
        for _ in self.map(itertools.repeat({}, count)):
            pass

    # -- shutting down -------------------------------------------------------

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT) -> None:
        """Stop the workers; pending inputs are dropped.  Never hangs: workers
        still busy after ``timeout`` seconds are left behind as daemon threads
        (with a ``ResourceWarning``).  Closing twice is harmless.  Pending
        futures get a :class:`PipelineClosedError`."""
        self._check_reentry("close()")
        self._close(timeout)

    def _close(self, timeout: float) -> None:
        if self._closed:
            return
        with self._slots:
            self._closed = True
            self._slots.notify_all()
        self._finalizer.detach()
        if not _shutdown(self._workers, self._shared, timeout):
            warnings.warn(
                f"pipeline @{self._lib.name}: a stage was still running {timeout} s after "
                "close(); its thread is left to finish in the background",
                ResourceWarning,
                stacklevel=3,
            )

    def _interrupted(self) -> None:
        """Ctrl-C (or SystemExit) while the caller was in the executor: stop
        the workers, as ``close()`` does, before the caller re-raises."""
        self._close(DEFAULT_CLOSE_TIMEOUT)

    def _check_reentry(self, what: str) -> None:
        if getattr(_current, "workers", None) is self._workers:
            raise PipelineError(
                f"{what} called from inside {_current.stage.describe()} of pipeline "
                f"@{self._lib.name} (an extern function or a future's callback runs "
                "there); a stage cannot use its own pipeline: it would wait for itself"
            )

    def _check_open(self, what: str) -> None:
        """Raise unless the executor can be used: not from inside its own
        stages, not after a stage stopped it, not after ``close()``."""
        self._check_reentry(what)
        if self._workers.failure is not None:
            raise self._workers.failure
        if self._closed:
            raise PipelineClosedError(
                f"pipeline @{self._lib.name}: the executor is closed; create a new one"
            )

    def __repr__(self) -> str:
        stages = ", ".join(f"{s.name}@{s.device}" for s in self._lib.stages)
        state = "closed" if self._closed else f"{self.in_flight} in flight"
        return f"<ember.PipelineExecutor @{self._lib.name} [{stages}] {state}>"


PipelineModule = PipelineExecutor
"""TVM's name for the executor (``pipeline_executor.PipelineModule``)."""


def _deadline(timeout: float | None, what: str) -> float | None:
    """The monotonic time a wait of ``timeout`` seconds ends (None: no limit)."""
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not timeout >= 0  # also rejects NaN
    ):
        raise PipelineError(
            f"{what}: timeout must be a number of seconds >= 0 or None, got {timeout!r}"
        )
    return time.monotonic() + timeout


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
