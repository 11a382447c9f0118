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
"""``i64 (ptr arguments)``: ``arguments`` is five i64 — the address of the
(entry, frame) pairs, how many to call, the runs per slot, the address of
the per-slot-position nanosecond totals, the bounds flag's address.
Returns how many calls ran."""


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

    def __len__(self) -> int:
        return len(self._runs)

    def run(self, count: int) -> tuple[int, list[float]]:
        """Call the first ``count`` runs in order; return how many ran (fewer
        when a ``bounds_check`` kernel failed: the last one that ran is the
        one that failed, its error still pending for
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
            done = self._driver(self._address)
        finally:
            for lock in locks:
                lock.release()
        return done, [ns * 1e-9 for ns in self._nanoseconds.tolist()]


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
    b.ret(ran)
    b.position_at_end(blocks["finish"])
    b.ret(next_index)

    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), host_target_machine())
    engine.finalize_object()
    _engines.append(engine)  # the code lives as long as the process
    prototype = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)
    return prototype(engine.get_function_address(DRIVER_SYMBOL))
