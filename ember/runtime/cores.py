"""How far apart two CPUs are: the round trip of a cache line between them.

A kernel's threads hand each other data whenever one layer splits its work
differently from the layer before (channels, then rows): each line one
thread wrote and the other reads travels between their cores.  What that
costs depends on where the OS (or a hypervisor) put the two CPUs: on one
core complex of an AMD EPYC (Zen 4) this measures 75-100 ns there and
back, between two complexes ~350 ns, and ResNet-18 on two threads takes
~30 % longer there (docs/runtime.md, "Threads").  A 2-vCPU virtual
machine can move between the two placements from one minute to the next,
so a benchmark that reports this figure beside its times says which one
it measured.

:func:`round_trip_ns` measures it: two threads, each pinned to one of the
CPUs, pass a counter back and forth through one cache line (native code,
JIT-compiled once, so the GIL is not in the loop); the median over a few
batches of round trips.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import threading
import time
from collections.abc import Callable
from functools import cache

ROUNDS = 2000
"""Round trips per timed batch."""

BATCHES = 5
"""Timed batches; the median batch is the figure."""

WARM_UP = 100
"""Untimed round trips before each batch: the partner thread, let go by a
Python barrier, may take a while to start (it needs the GIL)."""

PLACEMENT_CHANGE = 2.0
"""Round trips before and after a measurement that differ by more than this
factor mean the CPUs moved closer or apart in between (near 75-100 ns,
distant ~350 ns on the 2-vCPU AMD EPYC of docs/runtime.md)."""


def moved(before: float, after: float) -> bool:
    """Whether two round trips say the CPUs moved (:data:`PLACEMENT_CHANGE`)."""
    return max(before, after) > PLACEMENT_CHANGE * min(before, after)


SPIN_LIMIT = 1 << 26
"""Polls of the line after which a side gives up (~0.1 s): a partner that
never answers (a thread that could not start on its CPU) ends the
measurement instead of hanging it."""

_PING_PONG_IR = """
define i64 @ember_ping_pong(ptr %flag, i64 %first, i64 %end, i64 %role, i64 %limit) {
entry:
  br label %round
round:
  %i = phi i64 [%first, %entry], [%next, %send]
  %last = icmp eq i64 %i, %end
  %own = select i1 %last, i64 0, i64 %role
  %twice = shl i64 %i, 1
  %expect = add i64 %twice, %own
  br label %wait
wait:
  %spins = phi i64 [0, %round], [%spun, %again]
  %seen = load atomic i64, ptr %flag acquire, align 64
  %ready = icmp eq i64 %seen, %expect
  br i1 %ready, label %answer, label %again
again:
  %spun = add i64 %spins, 1
  %gone = icmp eq i64 %seen, -1
  %tired = icmp sge i64 %spun, %limit
  %stop = or i1 %gone, %tired
  br i1 %stop, label %give_up, label %wait
answer:
  br i1 %last, label %finish, label %send
send:
  %reply = add i64 %expect, 1
  store atomic i64 %reply, ptr %flag release, align 64
  %next = add i64 %i, 1
  br label %round
finish:
  ret i64 %end
give_up:
  store atomic i64 -1, ptr %flag release, align 64
  ret i64 -1
}
"""
"""``i64 ember_ping_pong(i64* flag, first, end, role, limit)``: round ``i``
(``first`` to ``end - 1``) waits for ``2i + role`` in ``*flag`` and answers
``2i + role + 1`` (role 0 starts, role 1 answers); a last wait, for ``2 ·
end``, sees the answer to the last round.  Returns ``end`` or, after
``limit`` polls without the value it waits for (or on seeing -1, the
partner's giving up), -1, left in ``*flag``.  Role 0 may split its rounds
over several calls (the first an untimed warm-up) while role 1 runs them
in one."""

PingPong = Callable[[int, int, int, int, int], int]


_engines: list[object] = []
"""The ping-pong's execution engine: its code lives as long as this does."""


@cache
def ping_pong() -> PingPong:
    """The JIT-compiled ping-pong (see :data:`_PING_PONG_IR`), made once;
    its engine lives as long as the process."""
    from ember.runtime.jit import _llvm, host_target_machine

    llvm = _llvm()
    module = llvm.parse_assembly(_PING_PONG_IR)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, host_target_machine())
    engine.finalize_object()
    function = ctypes.CFUNCTYPE(
        ctypes.c_int64, ctypes.c_void_p, *[ctypes.c_int64] * 4
    )(engine.get_function_address("ember_ping_pong"))
    _engines.append(engine)
    return function


def cpu_pair() -> tuple[int, int] | None:
    """The first two CPUs this process may run on (where two threads of it
    run on a machine that gives it two), or None with fewer."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity masks (not Linux)
        return None
    return (allowed[0], allowed[1]) if len(allowed) >= 2 else None


def round_trip_ns(
    cpus: tuple[int, int] | None = None, rounds: int = ROUNDS, batches: int = BATCHES
) -> float | None:
    """Nanoseconds for a cache line to go from CPU ``cpus[0]`` to
    ``cpus[1]`` and back (default :func:`cpu_pair`): the median of
    ``batches`` timed batches of ``rounds`` round trips.  None where it
    cannot be measured: fewer than two CPUs, no affinity masks, or a partner
    that did not answer.  The calling thread's affinity is restored."""
    if rounds < 1 or batches < 1:
        raise ValueError(f"rounds and batches must be positive, got {rounds} and {batches}")
    pair = cpus if cpus is not None else cpu_pair()
    if pair is None:
        return None
    first, second = pair
    try:
        before = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None
    function = ping_pong()
    # A line of its own: nothing else the process touches shares it.
    cells = (ctypes.c_int64 * 24)()
    flag = (ctypes.addressof(cells) + 63) // 64 * 64
    value = ctypes.c_int64.from_address(flag)
    start = threading.Barrier(2, timeout=10)
    answered: list[bool] = []

    def partner() -> None:
        try:
            os.sched_setaffinity(0, {second})
            for _ in range(batches):
                start.wait()
                end = WARM_UP + rounds
                answered.append(function(flag, 0, end, 1, SPIN_LIMIT) == end)
        except (OSError, threading.BrokenBarrierError):
            start.abort()

    times: list[float] = []
    thread = threading.Thread(target=partner, name="ember-round-trip", daemon=True)
    try:
        os.sched_setaffinity(0, {first})
        thread.start()
        for _ in range(batches):
            start.wait()  # the partner is done with the last batch's line
            value.value = 0
            if function(flag, 0, WARM_UP, 0, SPIN_LIMIT) != WARM_UP:
                break
            began = time.perf_counter()
            if function(flag, WARM_UP, WARM_UP + rounds, 0, SPIN_LIMIT) != WARM_UP + rounds:
                break
            times.append(time.perf_counter() - began)
        if len(times) < batches:  # gave up: let the partner out of its wait
            start.abort()
    except (OSError, threading.BrokenBarrierError):
        start.abort()
    finally:
        os.sched_setaffinity(0, before)
        if thread.ident is not None:  # started
            thread.join(timeout=10)
    if len(times) < batches or not all(answered) or len(answered) < batches:
        return None
    return statistics.median(times) / rounds * 1e9


__all__ = ["PLACEMENT_CHANGE", "cpu_pair", "moved", "ping_pong", "round_trip_ns"]
