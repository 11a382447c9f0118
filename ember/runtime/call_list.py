"""Bound native runs called back to back by one native call: a call list.

A compiled module's bound run (:meth:`~ember.runtime.module.Module.bind`)
costs a lock and a ctypes call from Python, about a microsecond beyond the
kernels.  A caller that runs many bound runs in a fixed order — a
pipeline's lane, which takes a window of inputs through every stage
(:mod:`ember.pipeline.executor`) — pays that once per window instead: a
:class:`CallList` holds each run's entry address and frame (a
:class:`NativeRun`, which the ``llvm`` backend attaches to its bound runs)
and one small JIT-compiled loop calls the first ``count`` of them in order.
This is CUDA graphs' idea (record the launches once, replay them with one
call) for CPU entries; the loop is built with llvmlite's IR builder, as
the serial OpenMP stand-in of :mod:`ember.runtime.threads` is.

The loop also reads the monotonic clock around each call
(``clock_gettime``, as the profile entry of
:mod:`ember.lowering.program_to_llvm` does) and adds what it took to its
position's total (the runs are slots of a few runs: a pipeline's stages
for one input), so a caller still knows what each stage takes without
numpy work per call; and after each call it reads the flag a
``bounds_check`` kernel raises (:func:`ember.runtime.jit.bounds_flag_address`):
it stops at the call that failed and :meth:`CallList.run` says which.

Assumes entries of the ``void (ptr frame)`` kind whose code outlives the
list (the module that bound them is the caller's to keep) and buffers
that the caller keeps alive; the list holds the frames.
Runs that report errors through Python (extern functions) have no
:class:`NativeRun` and cannot join a list.

Overlapped (:meth:`CallList.run_overlapped`): the same calls as a ring
that a stream of inputs goes round (input *i* in slot *i* mod the slots),
stage ``s`` on a thread of its own, so that stage 1 runs input *n* while
stage 0 runs input *n + 1*.  One ``GOMP_parallel`` region per call, with
as many threads as stages (libgomp's team: the caller's thread is thread
0, the others come from libgomp's pool, which wakes them in
microseconds); thread ``t`` runs stages ``t``, ``t + T``, … (all of them
on a team of one: the serial stand-in, or libgomp short of threads), each
stage its inputs in order, from where it stopped to the end the call
gives it.  Before input *i* stage ``s`` waits until stage ``s - 1`` has
finished it: a per-stage count of finished inputs, stored with release
and polled with acquire ordering (:data:`SPIN_POLLS` polls, then
``sched_yield`` between polls), so the hand-off is a store and a load, no
thread switch through Python.  The counts persist from call to call, so a
caller that ends each stage one input short of its upstream starts the
next call with work ready for every stage: the pipeline fills once per
stream, not once per call.  Kernels' parallel loops called
there are *nested* regions: libgomp runs them on the calling stage thread
alone unless ``OMP_MAX_ACTIVE_LEVELS`` (or ``OMP_NESTED``) allows nesting,
and then on the ``ember_num_threads`` the caller set (the executor sets
each stage's share).  A failed ``bounds_check`` kernel is told apart by
thread: the reporter stores the failing thread's id in the flag
(:func:`ember.runtime.jit.bounds_flag_address`), a stage that sees its
own id there — or an id of no stage thread, or several failures — stops
at that input and lowers the stream's *limit* to it: no stage starts an
input at or past the limit (later inputs never run on a failed input's
values), while the stages downstream still finish the inputs before it,
so every input before the failed one completes.  Stages may be pinned to
cores (``sched_setaffinity`` on the stage's thread, its previous mask
restored before the region ends).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ember.errors import RuntimeFailure
from ember.runtime.jit import bounds_flag_address

__all__ = ["CallList", "NativeRun", "overlapped_available"]

DRIVER_SYMBOL = "ember_run_call_list"
"""``i64 (ptr arguments)``: ``arguments`` is five i64 — the address of the
(entry, frame) pairs, how many to call, the runs per slot, the address of
the per-slot-position nanosecond totals, the bounds flag's address.
Returns how many calls ran, negated when the last of them failed (a
failed last call of the list must not read as all of them done)."""

WORKER_SYMBOL = "ember_overlapped_stage_worker"
"""``void (ptr arguments)``, the body of :meth:`CallList.run_overlapped`'s
``GOMP_parallel`` region: ``arguments`` is nine i64 — the calls, how many
slots, the stages, the per-stage nanosecond totals, the bounds flag's
address, the address of the per-stage state (four i64 per stage: inputs
finished, the input to end before, the input it failed on, and per team
thread its id), the limit (the first input no stage may start), the
team's size (written by the worker), the address of one 128-byte CPU
mask per stage or 0 (not pinned)."""

STREAM_END = 1 << 62
"""The limit while no input failed: past any input."""

SPIN_POLLS = 2000
"""Polls of the upstream stage's count before a waiting stage yields its
core between polls (``sched_yield``): a few microseconds, which a
balanced pipeline's hand-off fits in; a longer wait lets other threads
run."""

CPU_MASK_WORDS = 16
"""``cpu_set_t`` as 64-bit words (1024 CPUs), the size passed to
``sched_setaffinity``."""

_LIBC_SYMBOLS = ("gettid", "sched_yield", "sched_getaffinity", "sched_setaffinity")
"""What the overlapped worker calls besides libgomp: MCJIT would abort the
process on an unresolved one, so :func:`overlapped_available` checks first."""


@dataclass(frozen=True)
class NativeRun:
    """One bound run as the machine sees it: ``entry(frame)`` with ``lock`` held."""

    entry: int
    """The address of the module's ``void (ptr frame)`` entry."""
    frame: ctypes.Array[ctypes.c_void_p]
    """The bound frame: the addresses of the inputs, outputs, constants and
    workspace (the buffers are the binder's to keep alive)."""
    lock: threading.Lock
    """The module's lock: its runs share a workspace."""


class CallList:
    """``runs`` in order, called by one native call (see the module docstring).

    ``stages``: the runs form slots of ``stages`` runs each (a pipeline's
    stages for one input, then for the next); :meth:`run` says what each
    position in a slot (each stage) took in all.
    """

    def __init__(self, runs: Sequence[NativeRun], stages: int = 1) -> None:
        if stages < 1 or len(runs) % stages:
            raise RuntimeFailure(
                f"a call list of {len(runs)} runs cannot hold slots of {stages}"
            )
        self._driver = _driver()
        self._calls = (ctypes.c_void_p * (2 * len(runs)))()
        for i, run in enumerate(runs):
            self._calls[2 * i] = run.entry
            self._calls[2 * i + 1] = ctypes.addressof(run.frame)
        self._runs = tuple(runs)  # holds their frames
        # Taken in one order by every list; a plain run takes one at a time.
        self._locks = list({id(run.lock): run.lock for run in runs}.values())
        self._nanoseconds = np.zeros(stages, np.int64)
        self._arguments = np.array(
            [
                ctypes.addressof(self._calls),
                0,  # how many calls: set by run()
                stages,
                self._nanoseconds.ctypes.data,
                bounds_flag_address(),
            ],
            np.int64,
        )
        self._address = self._arguments.ctypes.data
        self._stages = stages
        self._overlapped: np.ndarray | None = None  # made on the first overlapped run
        self.team = 0
        """Threads the last :meth:`run_overlapped` region had (0 before one)."""

    def __len__(self) -> int:
        return len(self._runs)

    def run(self, count: int) -> tuple[int, bool, list[float]]:
        """Call the first ``count`` runs in order; return how many completed,
        whether the one after them failed (a ``bounds_check`` kernel: it
        stopped there, its error still pending for
        :func:`~ember.runtime.jit.raise_bounds_error`) and the seconds the
        runs at each position of a slot took together."""
        if not 0 <= count <= len(self._runs):
            raise RuntimeFailure(
                f"a call list of {len(self._runs)} runs cannot make {count} calls"
            )
        self._arguments[1] = count
        locks = self._locks
        for lock in locks:
            lock.acquire()
        try:
            ran = self._driver(self._address)
        finally:
            for lock in locks:
                lock.release()
        failed = ran < 0
        done = -ran - 1 if failed else ran
        return done, failed, [ns * 1e-9 for ns in self._nanoseconds.tolist()]

    def start_stream(self) -> None:
        """Begin a stream of overlapped inputs (:meth:`run_overlapped`):
        the next is input 0, which no stage has run."""
        self._overlapped_arguments(None)
        stages = self._stages
        self._state[:] = 0
        self._state[2 * stages : 3 * stages] = -1  # no stage failed
        self._overlapped[6] = STREAM_END  # the limit: none failed yet

    def stream_done(self) -> list[int]:
        """How many of the stream's inputs each stage has finished."""
        self._overlapped_arguments(None)
        return self._state[: self._stages].tolist()

    def run_overlapped(
        self, ends: Sequence[int], cores: Sequence[int | None] | None = None
    ) -> tuple[list[int], tuple[int, int] | None, list[float]]:
        """Run each stage ``s`` of the stream (:meth:`start_stream`) from the
        input it stopped at up to input ``ends[s]`` (excluded), stage ``s``
        on a thread of its own, overlapped (see the module docstring); the
        stream's input ``i`` lives in slot ``i % slots``, whose values the
        caller writes before and reads after.  ``cores``: the core each
        stage's thread is pinned to while it runs (None: not pinned).

        Ends may differ: a stage downstream that stops inputs short of its
        upstream (``ends[s] = ends[0] - s``) starts the next call on inputs
        already there, so successive calls keep every stage busy instead of
        filling and draining the pipeline each time.  A stage cannot end
        past its upstream, nor stage 0 run more than ``slots`` inputs ahead
        of the last stage (their slots would be reused too early).

        Returns how many inputs each stage has finished, the input and stage
        where a ``bounds_check`` kernel failed (or None: then every stage
        reached its end; else no stage starts that input or a later one,
        the stages downstream finish the ones before it, and the stream
        stays stopped there), and the seconds each stage's calls took
        together, on its thread.  :attr:`team` says how many threads ran."""
        stages, slots = self._stages, len(self._runs) // self._stages
        if not overlapped_available():
            raise RuntimeFailure(
                "this C library lacks what the overlapped call list needs "
                f"({', '.join(_LIBC_SYMBOLS)})"
            )
        arguments = self._overlapped_arguments(cores)
        state = self._state
        ends = self._checked_ends(ends, state[:stages].tolist(), slots)
        state[stages : 2 * stages] = ends
        self._nanoseconds[:] = 0  # each stage adds its calls' time on its thread
        parallel, worker = _overlapped_worker()
        locks = self._locks
        for lock in locks:
            lock.acquire()
        try:
            parallel(worker, arguments.ctypes.data, stages, 0)
        finally:
            for lock in locks:
                lock.release()
        self.team = int(arguments[7])
        limit = int(arguments[6])
        failure = None
        if limit != STREAM_END:  # the stage that failed there is the only one that ran it last
            failure = (limit, state[2 * stages : 3 * stages].tolist().index(limit))
        seconds = [ns * 1e-9 for ns in self._nanoseconds.tolist()]
        return state[:stages].tolist(), failure, seconds

    def run_back_to_back(
        self, ends: Sequence[int]
    ) -> tuple[list[int], tuple[int, int] | None, list[float]]:
        """Advance the stream (:meth:`start_stream`) as :meth:`run_overlapped`
        does — stage ``s`` up to input ``ends[s]``, the same bounds — but
        back to back in the caller's thread: input after input from the
        oldest one a stage has left, each input's stages in order, so their
        kernels' parallel loops get the caller's threads.  A stream fills and
        drains this way (stage 0 alone has work at its start, the last stage
        alone at its end) on every core instead of one.  Returns what
        :meth:`run_overlapped` returns; a failed input stops the stream there
        as it does, the inputs before it finished by every stage."""
        stages, slots = self._stages, len(self._runs) // self._stages
        self._overlapped_arguments(None)
        state = self._state
        done = state[:stages].tolist()
        ends = self._checked_ends(ends, done, slots)
        seconds = [0.0] * stages
        failure = None
        base = self._arguments[0]
        try:
            for index in range(min(done), ends[0]):
                for s in range(stages):
                    if not done[s] <= index < ends[s]:
                        continue
                    # One call: the list seen from this run's (entry, frame) pair on.
                    self._arguments[0] = base + 2 * ctypes.sizeof(ctypes.c_void_p) * (
                        (index % slots) * stages + s
                    )
                    ran, failed, took = self.run(1)
                    seconds[s] += took[0]
                    if failed:
                        failure = (index, s)
                        state[2 * stages + s] = index
                        self._overlapped[6] = index  # type: ignore[index]  # the limit
                        return state[:stages].tolist(), failure, seconds
                    done[s] = state[s] = index + 1
        finally:
            self._arguments[0] = base
        return state[:stages].tolist(), failure, seconds

    def _checked_ends(self, ends: Sequence[int], done: list[int], slots: int) -> list[int]:
        ends = [int(end) for end in ends]
        if (
            len(ends) != self._stages
            or any(end < finished for end, finished in zip(ends, done))
            or any(ends[k + 1] > ends[k] for k in range(self._stages - 1))
            or ends[0] - done[-1] > slots
        ):
            raise RuntimeFailure(
                f"a call list of {slots} slots of {self._stages} stages, its stages at "
                f"inputs {done}, cannot run them to {ends}: a stage may not go back "
                "nor past its upstream, nor stage 0 more than the slots past the last"
            )
        return ends

    def _overlapped_arguments(self, cores: Sequence[int | None] | None) -> np.ndarray:
        stages = self._stages
        if self._overlapped is None:
            # Per stage: inputs finished, where to end, the input it failed
            # on, and per team thread its id.
            self._state = np.zeros(4 * stages, np.int64)
            self._state[2 * stages : 3 * stages] = -1
            self._masks = np.zeros((stages, CPU_MASK_WORDS), np.uint64)
            self._overlapped = np.array(
                [
                    self._arguments[0],
                    len(self._runs) // stages,  # slots
                    stages,
                    self._arguments[3],
                    self._arguments[4],
                    self._state.ctypes.data,
                    STREAM_END,  # the limit
                    0,  # the team's size
                    0,  # the CPU masks, or 0
                ],
                np.int64,
            )
        pinned = cores is not None and any(core is not None for core in cores)
        if pinned:
            allowed = sorted(os.sched_getaffinity(0))
            self._masks[:] = 0
            for s, core in enumerate(cores):  # type: ignore[arg-type]
                for cpu in allowed if core is None else [core]:
                    self._masks[s, cpu // 64] |= np.uint64(1 << (cpu % 64))
        self._overlapped[8] = self._masks.ctypes.data if pinned else 0
        return self._overlapped


@cache
def overlapped_available() -> bool:
    """Whether :meth:`CallList.run_overlapped` can run here: the C library
    has the functions its worker calls (glibc 2.30+ on Linux)."""
    libc = ctypes.CDLL(None)
    return all(hasattr(libc, name) for name in _LIBC_SYMBOLS)


_engines: list[Any] = []
"""The driver's execution engine: freeing it would free the code."""


@cache
def _driver() -> Any:
    """The loop as a ctypes function, compiled once per process."""
    import llvmlite.binding as llvm
    from llvmlite import ir

    from ember.abi import CLOCK_MONOTONIC, CLOCK_SYMBOL
    from ember.runtime.jit import host_target_machine

    module = ir.Module(name="ember_call_list")
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    pointer = i8.as_pointer()
    timespec = ir.LiteralStructType([i64, i64])
    entry_type = ir.FunctionType(ir.VoidType(), [pointer])
    clock_gettime = ir.Function(
        module, ir.FunctionType(i32, [i32, timespec.as_pointer()]), name=CLOCK_SYMBOL
    )
    driver = ir.Function(module, ir.FunctionType(i64, [i64.as_pointer()]), name=DRIVER_SYMBOL)
    blocks = {
        name: driver.append_basic_block(name)
        for name in ("start", "clear", "loop", "more", "stop", "finish")
    }
    b = ir.IRBuilder(blocks["start"])

    def constant(value: int, kind: ir.Type = i64) -> ir.Constant:
        return ir.Constant(kind, value)

    def argument(index: int) -> ir.Value:
        return b.load(b.gep(driver.args[0], [constant(index)]))

    calls = b.inttoptr(argument(0), pointer.as_pointer())
    count, stages = argument(1), argument(2)
    totals = b.inttoptr(argument(3), i64.as_pointer())
    failed = b.inttoptr(argument(4), i32.as_pointer())
    before, after = b.alloca(timespec), b.alloca(timespec)
    monotonic = constant(CLOCK_MONOTONIC, i32)

    def nanoseconds(stamp: ir.Value) -> ir.Value:
        seconds = b.load(b.gep(stamp, [constant(0, i32), constant(0, i32)]))
        part = b.load(b.gep(stamp, [constant(0, i32), constant(1, i32)]))
        return b.add(b.mul(seconds, constant(1_000_000_000)), part)

    b.branch(blocks["clear"])

    # clear: totals[k] = 0 for each position k of a slot
    b.position_at_end(blocks["clear"])
    position = b.phi(i64, name="position")
    position.add_incoming(constant(0), blocks["start"])
    b.store(constant(0), b.gep(totals, [position]))
    next_position = b.add(position, constant(1))
    position.add_incoming(next_position, blocks["clear"])
    cleared = b.icmp_signed(">=", next_position, stages)
    b.cbranch(cleared, blocks["more"], blocks["clear"])

    # loop: call j between two clock readings; stop after it if it failed
    b.position_at_end(blocks["loop"])
    index = b.phi(i64, name="index")
    slot = b.mul(index, constant(2))
    entry = b.load(b.gep(calls, [slot]))
    frame = b.load(b.gep(calls, [b.add(slot, constant(1))]))
    b.call(clock_gettime, [monotonic, before])
    b.call(b.bitcast(entry, entry_type.as_pointer()), [frame])
    b.call(clock_gettime, [monotonic, after])
    total = b.gep(totals, [b.srem(index, stages)])
    took = b.sub(nanoseconds(after), nanoseconds(before))
    b.store(b.add(b.load(total), took), total)
    ran = b.add(index, constant(1), name="ran")
    flag = b.load(failed)
    flag.volatile = True  # set by another function (the bounds reporter)
    b.cbranch(b.icmp_signed("!=", flag, constant(0, i32)), blocks["stop"], blocks["more"])

    # more: j < count ? call j : done
    b.position_at_end(blocks["more"])
    next_index = b.phi(i64, name="next")
    next_index.add_incoming(constant(0), blocks["clear"])
    next_index.add_incoming(ran, blocks["loop"])
    index.add_incoming(next_index, blocks["more"])
    b.cbranch(b.icmp_signed("<", next_index, count), blocks["loop"], blocks["finish"])

    b.position_at_end(blocks["stop"])
    b.ret(b.neg(ran))
    b.position_at_end(blocks["finish"])
    b.ret(next_index)

    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), host_target_machine())
    engine.finalize_object()
    _engines.append(engine)  # the code lives as long as the process
    prototype = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)
    return prototype(engine.get_function_address(DRIVER_SYMBOL))


@cache
def _overlapped_worker() -> tuple[Any, int]:
    """``GOMP_parallel`` as a ctypes function and the address of the
    overlapped worker (:data:`WORKER_SYMBOL`) to run in it; compiled once."""
    import llvmlite.binding as llvm
    from llvmlite import ir

    from ember.abi import CLOCK_MONOTONIC, CLOCK_SYMBOL
    from ember.runtime.jit import host_target_machine
    from ember.runtime.threads import ensure_runtime

    ensure_runtime()  # libgomp, or the serial stand-in (a team of one)
    module = ir.Module(name="ember_overlapped_call_list")
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    pointer = i8.as_pointer()
    timespec = ir.LiteralStructType([i64, i64])
    entry_type = ir.FunctionType(ir.VoidType(), [pointer])

    def declare(name: str, result: ir.Type, *arguments: ir.Type) -> ir.Function:
        return ir.Function(module, ir.FunctionType(result, list(arguments)), name=name)

    clock_gettime = declare(CLOCK_SYMBOL, i32, i32, timespec.as_pointer())
    thread_num = declare("omp_get_thread_num", i32)
    team_size = declare("omp_get_num_threads", i32)
    gettid = declare("gettid", i32)
    sched_yield = declare("sched_yield", i32)
    get_affinity = declare("sched_getaffinity", i32, i32, i64, pointer)
    set_affinity = declare("sched_setaffinity", i32, i32, i64, pointer)
    worker = ir.Function(module, entry_type, name=WORKER_SYMBOL)
    block = worker.append_basic_block
    b = ir.IRBuilder(block("start"))

    def constant(value: int, kind: ir.Type = i64) -> ir.Constant:
        return ir.Constant(kind, value)

    arguments = b.bitcast(worker.args[0], i64.as_pointer())

    def cell(index: int) -> ir.Value:
        return b.gep(arguments, [constant(index)])

    calls = b.inttoptr(b.load(cell(0)), pointer.as_pointer())
    ring, stages = b.load(cell(1)), b.load(cell(2))
    totals = b.inttoptr(b.load(cell(3)), i64.as_pointer())
    flag_cell = b.inttoptr(b.load(cell(4)), i32.as_pointer())
    state = b.inttoptr(b.load(cell(5)), i64.as_pointer())
    limit_cell = cell(6)
    masks = b.load(cell(8))
    pinned = b.icmp_signed("!=", masks, constant(0))
    mask_bytes = constant(8 * CPU_MASK_WORDS)
    saved = b.bitcast(b.alloca(ir.ArrayType(i64, CPU_MASK_WORDS)), pointer)
    before, after = b.alloca(timespec), b.alloca(timespec)
    monotonic = constant(CLOCK_MONOTONIC, i32)
    thread = b.sext(b.call(thread_num, []), i64)
    team = b.sext(b.call(team_size, []), i64)
    b.store_atomic(team, cell(7), "monotonic", 8)  # every thread stores the same
    tid = b.sext(b.call(gettid, []), i64)
    tids = b.gep(state, [b.mul(stages, constant(3))])
    b.store_atomic(tid, b.gep(tids, [thread]), "release", 8)

    def load_acquire(address: ir.Value) -> ir.Value:
        return b.load_atomic(address, "acquire", 8)

    def nanoseconds(stamp: ir.Value) -> ir.Value:
        seconds = b.load(b.gep(stamp, [constant(0, i32), constant(0, i32)]))
        part = b.load(b.gep(stamp, [constant(0, i32), constant(1, i32)]))
        return b.add(b.mul(seconds, constant(1_000_000_000)), part)

    with b.if_then(pinned):
        b.call(get_affinity, [constant(0, i32), mask_bytes, saved])
    start = b.block
    stage_head, stage_body = block("stage"), block("stage_body")
    slot_head, wait, poll, spun, ready = (
        block("slot"), block("wait"), block("poll"), block("spun"), block("ready")
    )
    check, whose, whose_next, not_mine, mine = (
        block("check"), block("whose"), block("whose_next"), block("not_mine"), block("mine")
    )
    finished, stage_done, end = block("finished"), block("stage_done"), block("end")
    b.branch(stage_head)

    # stage: s = thread, thread + team, ... while s < stages
    b.position_at_end(stage_head)
    stage = b.phi(i64, name="stage")
    stage.add_incoming(thread, start)
    b.cbranch(b.icmp_signed("<", stage, stages), stage_body, end)
    b.position_at_end(stage_body)
    with b.if_then(pinned):
        mask = b.add(masks, b.mul(stage, mask_bytes))
        b.call(set_affinity, [constant(0, i32), mask_bytes, b.inttoptr(mask, pointer)])
    upstream = b.gep(state, [b.sub(stage, constant(1))])
    has_upstream = b.icmp_signed(">", stage, constant(0))
    first = b.load(b.gep(state, [stage]))  # this stage's own count
    last = b.load(b.gep(state, [b.add(stages, stage)]))
    body_end = b.block
    b.branch(slot_head)

    # slot: input i = first .. last - 1, in slot i % ring, while i < limit
    b.position_at_end(slot_head)
    index = b.phi(i64, name="input")
    index.add_incoming(first, body_end)
    more = b.icmp_signed("<", index, last)
    b.cbranch(more, wait, stage_done)

    # wait: until stage - 1 finished input i (or the limit fell to i)
    b.position_at_end(wait)
    polls = b.phi(i64, name="polls")
    polls.add_incoming(constant(0), slot_head)
    stopped = b.icmp_signed("<=", load_acquire(limit_cell), index)
    b.cbranch(stopped, stage_done, poll)
    b.position_at_end(poll)
    behind = b.icmp_signed("<=", load_acquire(upstream), index)
    b.cbranch(b.and_(has_upstream, behind), spun, ready)
    b.position_at_end(spun)
    with b.if_then(b.icmp_signed(">=", polls, constant(SPIN_POLLS))):
        b.call(sched_yield, [])
    polls.add_incoming(b.add(polls, constant(1)), b.block)
    b.branch(wait)

    # ready: call (slot i, stage) between two clock readings
    b.position_at_end(ready)
    position = b.add(b.mul(b.urem(index, ring), stages), stage)
    entry = b.load(b.gep(calls, [b.mul(position, constant(2))]))
    frame = b.load(b.gep(calls, [b.add(b.mul(position, constant(2)), constant(1))]))
    b.call(clock_gettime, [monotonic, before])
    b.call(b.bitcast(entry, entry_type.as_pointer()), [frame])
    b.call(clock_gettime, [monotonic, after])
    total = b.gep(totals, [stage])
    b.store(b.add(b.load(total), b.sub(nanoseconds(after), nanoseconds(before))), total)
    flag = b.load(flag_cell)
    flag.volatile = True  # set by the bounds reporter, on any thread
    failed = b.sext(flag, i64)
    b.cbranch(b.icmp_signed("!=", failed, constant(0)), check, finished)

    # check: whose failure?  Another team thread's id: not this call's.
    b.position_at_end(check)
    b.cbranch(b.icmp_signed("==", failed, tid), mine, whose)
    b.position_at_end(whose)
    other = b.phi(i64, name="other")
    other.add_incoming(constant(0), check)
    b.cbranch(b.icmp_signed("<", other, team), whose_next, mine)
    b.position_at_end(whose_next)
    theirs = b.and_(
        b.icmp_signed("!=", other, thread),
        b.icmp_signed("==", load_acquire(b.gep(tids, [other])), failed),
    )
    other.add_incoming(b.add(other, constant(1)), whose_next)
    b.cbranch(theirs, not_mine, whose)
    b.position_at_end(not_mine)
    b.branch(finished)

    # mine: this slot failed in this stage; no stage starts it or a later one
    b.position_at_end(mine)
    b.store_atomic(index, b.gep(state, [b.add(b.mul(stages, constant(2)), stage)]), "release", 8)
    b.atomic_rmw("min", limit_cell, index, "acq_rel")
    b.branch(stage_done)

    # finished: publish slot i to the next stage
    b.position_at_end(finished)
    following = b.add(index, constant(1))
    b.store_atomic(following, b.gep(state, [stage]), "release", 8)
    index.add_incoming(following, finished)
    b.branch(slot_head)

    b.position_at_end(stage_done)
    stage.add_incoming(b.add(stage, team), stage_done)
    b.branch(stage_head)

    b.position_at_end(end)
    with b.if_then(pinned):
        b.call(set_affinity, [constant(0, i32), mask_bytes, saved])
    b.ret_void()

    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), host_target_machine())
    engine.finalize_object()
    _engines.append(engine)
    parallel = ctypes.CFUNCTYPE(
        None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint
    )(llvm.address_of_symbol("GOMP_parallel"))
    return parallel, engine.get_function_address(WORKER_SYMBOL)
