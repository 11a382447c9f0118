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

The loop also reads the monotonic clock before the first call and after
each (``clock_gettime``, as the profile entry of
:mod:`ember.lowering.program_to_llvm` does), so a caller still knows what
each run took, and after each call it reads the flag a ``bounds_check``
kernel raises (:func:`ember.runtime.jit.bounds_flag_address`): it stops at
the call that failed and :meth:`CallList.run` says which.

Assumes entries of the ``void (ptr frame)`` kind whose code outlives the
list (the module that bound them is the caller's to keep) and buffers
that the caller keeps alive; the list holds the frames.
Runs that report errors through Python (extern functions) have no
:class:`NativeRun` and cannot join a list.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ember.errors import RuntimeFailure
from ember.runtime.jit import bounds_flag_address

__all__ = ["CallList", "NativeRun"]

DRIVER_SYMBOL = "ember_run_call_list"
"""``i64 (ptr calls, i64 count, ptr clock, ptr failed)``: calls ``count``
(entry, frame) pairs, returns how many ran."""


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
    """``runs`` in order, called by one native call (see the module docstring)."""

    def __init__(self, runs: Sequence[NativeRun]) -> None:
        self._driver = _driver()
        self._calls = (ctypes.c_void_p * (2 * len(runs)))()
        for i, run in enumerate(runs):
            self._calls[2 * i] = run.entry
            self._calls[2 * i + 1] = ctypes.addressof(run.frame)
        self._runs = tuple(runs)  # holds their frames
        # Taken in one order by every list; a plain run takes one at a time.
        self._locks = list({id(run.lock): run.lock for run in runs}.values())
        self._clock = np.zeros((len(runs) + 1, 2), np.int64)  # struct timespec each
        self._clock_address = self._clock.ctypes.data
        self._flag = bounds_flag_address()

    def __len__(self) -> int:
        return len(self._runs)

    def run(self, count: int) -> tuple[int, np.ndarray]:
        """Call the first ``count`` runs in order; return how many ran (fewer
        when a ``bounds_check`` kernel failed: the last one that ran is the
        one that failed, its error still pending for
        :func:`~ember.runtime.jit.raise_bounds_error`) and what each that
        ran took, in seconds."""
        if not 0 <= count <= len(self._runs):
            raise RuntimeFailure(
                f"a call list of {len(self._runs)} runs cannot make {count} calls"
            )
        locks = self._locks
        for lock in locks:
            lock.acquire()
        try:
            done = self._driver(self._calls, count, self._clock_address, self._flag)
        finally:
            for lock in locks:
                lock.release()
        nanoseconds = self._clock[: done + 1, 0] * 1_000_000_000 + self._clock[: done + 1, 1]
        return done, np.diff(nanoseconds) * 1e-9


_engines: list[Any] = []
"""The driver's execution engine: freeing it would free the code."""


@cache
def _driver() -> Any:
    """The loop as a ctypes function, compiled once per process."""
    import llvmlite.binding as llvm
    from llvmlite import ir

    from ember.lowering.program_to_llvm import CLOCK_MONOTONIC, CLOCK_SYMBOL, TIMESPEC_BYTES
    from ember.runtime.jit import host_target_machine

    module = ir.Module(name="ember_call_list")
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    pointer = i8.as_pointer()
    entry_type = ir.FunctionType(ir.VoidType(), [pointer])
    clock_gettime = ir.Function(module, ir.FunctionType(i32, [i32, pointer]), name=CLOCK_SYMBOL)
    driver = ir.Function(
        module,
        ir.FunctionType(i64, [pointer.as_pointer(), i64, pointer, i32.as_pointer()]),
        name=DRIVER_SYMBOL,
    )
    calls, count, clock, failed = driver.args
    start, loop, more, stop, finish = (
        driver.append_basic_block(name)
        for name in ("start", "loop", "more", "stop", "finish")
    )
    monotonic = ir.Constant(i32, CLOCK_MONOTONIC)
    builder = ir.IRBuilder(start)
    builder.call(clock_gettime, [monotonic, clock])
    builder.cbranch(builder.icmp_signed(">", count, ir.Constant(i64, 0)), loop, finish)

    builder.position_at_end(loop)
    index = builder.phi(i64, name="index")
    slot = builder.mul(index, ir.Constant(i64, 2))
    entry = builder.load(builder.gep(calls, [slot]))
    frame = builder.load(builder.gep(calls, [builder.add(slot, ir.Constant(i64, 1))]))
    builder.call(builder.bitcast(entry, entry_type.as_pointer()), [frame])
    ran = builder.add(index, ir.Constant(i64, 1), name="ran")
    stamp = builder.gep(clock, [builder.mul(ran, ir.Constant(i64, TIMESPEC_BYTES))])
    builder.call(clock_gettime, [monotonic, stamp])
    flag = builder.load(failed)
    flag.volatile = True  # set by another function (the bounds reporter)
    builder.cbranch(builder.icmp_signed("!=", flag, ir.Constant(i32, 0)), stop, more)
    index.add_incoming(ir.Constant(i64, 0), start)
    index.add_incoming(ran, more)

    builder.position_at_end(more)
    builder.cbranch(builder.icmp_signed("<", ran, count), loop, finish)

    builder.position_at_end(stop)
    builder.ret(ran)

    builder.position_at_end(finish)
    ran_any = builder.icmp_signed(">", count, ir.Constant(i64, 0))
    builder.ret(builder.select(ran_any, count, ir.Constant(i64, 0)))

    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), host_target_machine())
    engine.finalize_object()
    _engines.append(engine)  # the code lives as long as the process
    prototype = ctypes.CFUNCTYPE(
        ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p
    )
    return prototype(engine.get_function_address(DRIVER_SYMBOL))
