"""The one thread pool of an ember process: libgomp, loaded once, on purpose.

Parallel ``kernel.for`` loops are lowered (``lower-kernel-to-llvm``) to calls
of the GNU OpenMP runtime — ``GOMP_parallel``, ``omp_get_thread_num``,
``omp_get_num_threads``, the ABI gcc's ``#pragma omp parallel`` uses — and
read their thread count from the ``i32`` global ``ember_num_threads``.  This
module provides those symbols to JIT-compiled code; it mirrors TVM's
``runtime/thread_pool.cc`` (``TVM_NUM_THREADS``, one pool per process) with
libgomp in place of a hand-written pool.

What it assumes and decides:

* libgomp is found with ``ctypes.util.find_library("gomp")`` or at the gcc
  runtime paths, and loaded with ``llvmlite.binding.load_library_permanently``
  so that MCJIT resolves code against it.  Where it is missing, a serial
  stand-in for those functions is compiled instead (a team of one thread)
  and a :class:`ThreadsWarning` says once what to install: code runs, on one
  core.
* Wait policy: libgomp reads ``OMP_WAIT_POLICY`` / ``GOMP_SPINCOUNT`` once,
  when it is loaded.  Its default (spin up to 300 000 polls, several
  milliseconds, before sleeping) makes idle team threads burn a core between
  kernels: on a busy 2-core machine that stalled a 0.7 ms matmul to 5-15 ms,
  and it fights numpy's OpenBLAS pool, which spins too.  Sleeping at once
  (passive) costs ~8 µs per parallel region instead of ~1.5 µs.  Unless the
  user set either variable, ember loads libgomp with ``GOMP_SPINCOUNT`` set
  to :data:`DEFAULT_SPIN_COUNT` in the C environment for the duration of the
  load only (``os.environ`` and child processes never see it): threads spin
  long enough to catch the next kernel of a network running back to back,
  then sleep.  ``configure(spin_count=…)`` before the first compile chooses
  otherwise.
* Schedule: which thread runs which iterations of a loop is ember's
  (``ember_loop_reset`` / ``ember_loop_next``, compiled here at load, see
  :data:`ember.abi.LOOP_ENTRY_POINTS`): each thread its own block first, in
  :data:`CHUNKS_PER_THREAD` chunks, then what is left of the others'.
* Thread count: process-wide, :func:`available_cores` (the CPUs this process
  may run on, ``os.sched_getaffinity``) unless ``set_num_threads`` /
  ``limit_threads`` say otherwise; read by every parallel loop at its start,
  so a change applies to the next kernel call.  A loop runs on
  ``min(num_threads, trip count)`` threads and forks nothing when that is 1.
* ``fork``: a child forked after libgomp was loaded runs parallel loops on
  one thread (libgomp would hang there); workers that should use several
  threads are started with ``spawn`` or ``forkserver``.
* One pool: libgomp keeps one team per *calling* thread.  Kernels called
  from several Python threads at once (pipeline stages) each fork their own
  team, so restrict the count (``limit_threads``) so that the stages'
  teams together do not exceed the cores.  numpy's OpenBLAS has a pool of its
  own, whose threads spin after each call: alternating a numpy matmul and a
  two-thread kernel cost ~30 ms per pair instead of ~1.5 ms.
  ``limit_blas_threads(1)`` caps it (without threadpoolctl) where both run
  in one process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ember.errors import RuntimeFailure
from ember.abi import (
    LOOP_BLOCKS,
    LOOP_COUNTER_BYTES,
    LOOP_ENTRY_POINTS,
    NUM_THREADS_SYMBOL,
    OPENMP_ENTRY_POINTS,
)

DEFAULT_SPIN_COUNT = 1000
"""``GOMP_SPINCOUNT`` ember sets unless the user chose a wait policy: tens of
microseconds of polling.  Measured on 2 busy cores: ~1.5 µs per region back
to back and no multi-millisecond stalls, where 100 000+ stalled regions by
milliseconds and 0 (passive) cost ~8 µs per region."""

GCC_RUNTIME_PATHS: tuple[str, ...] = (
    "/usr/lib/x86_64-linux-gnu/libgomp.so.1",
    "/usr/lib/aarch64-linux-gnu/libgomp.so.1",
    "/usr/lib64/libgomp.so.1",
    "/usr/lib/libgomp.so.1",
)
"""Where gcc's runtime puts libgomp when ``find_library`` cannot say (no ldconfig)."""

INSTALL_HINT = (
    "install the GNU OpenMP runtime (Debian/Ubuntu: apt-get install libgomp1; "
    "Fedora: dnf install libgomp; it comes with gcc)"
)


class ThreadsWarning(UserWarning):
    """Parallel loops will run on one thread (no OpenMP runtime)."""


@dataclass(frozen=True)
class ThreadRuntime:
    """What :func:`ensure_runtime` loaded and how it is configured."""

    library: str | None
    """Path of the libgomp in use; ``None`` for the serial stand-in."""
    spin_count: int | None
    """``GOMP_SPINCOUNT`` ember set, or ``None`` where the user's environment
    (or an earlier loader of libgomp) decided the wait policy."""

    @property
    def parallel(self) -> bool:
        return self.library is not None


_lock = threading.Lock()
_runtime: ThreadRuntime | None = None
_spin_count: int | None = DEFAULT_SPIN_COUNT
_keep_alive: list[Any] = []
"""Objects whose memory JIT code refers to (the thread-count cell, the
stand-in's execution engine): never freed while the process runs."""


def available_cores() -> int:
    """The number of CPUs this process may run on (its affinity mask)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


_num_threads = ctypes.c_int32(available_cores())
"""The ``ember_num_threads`` cell parallel loops read; written only here."""

_forked_from_a_team = False
"""Set in a child forked after libgomp was loaded: libgomp keeps the parent's
thread pool in its bookkeeping, and the child's first fork of a team waits
forever for threads that were not copied.  Such a child runs on one thread."""


def _after_fork_in_child() -> None:
    global _forked_from_a_team
    if _runtime is not None and _runtime.parallel:
        _forked_from_a_team = True
        _num_threads.value = 1


os.register_at_fork(after_in_child=_after_fork_in_child)


# --------------------------------------------------------------------------
# Thread count
# --------------------------------------------------------------------------


def num_threads() -> int:
    """The number of threads a parallel loop starts with (at most its trip count)."""
    return _num_threads.value


def set_num_threads(count: int) -> None:
    """Run parallel loops on ``count`` threads from the next kernel call on.

    Process-wide: it applies to kernels called from any Python thread.  More
    threads than :func:`available_cores` is allowed but oversubscribes.
    """
    _check_count("set_num_threads", count)
    _num_threads.value = count


def _check_count(where: str, count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise RuntimeFailure(
            f"{where}: the thread count must be a positive integer, got {count!r}"
        )
    if count > 1 and _forked_from_a_team:
        raise RuntimeFailure(
            f"{where}({count}): this process was forked from one whose libgomp "
            "threads were running; libgomp cannot start threads in such a child "
            "(its first parallel region would hang), so it runs kernels on one "
            "thread. Start workers with multiprocessing's 'spawn' or 'forkserver' "
            "method to use several threads in them."
        )


@contextmanager
def limit_threads(count: int) -> Iterator[None]:
    """Run parallel loops on at most ``count`` threads inside the ``with``
    block (a pipeline stage sharing the cores with others), then restore."""
    previous = num_threads()
    _check_count(
        "limit_threads", min(count, previous) if isinstance(count, int) else count
    )
    _num_threads.value = min(count, previous)
    try:
        yield
    finally:
        _num_threads.value = previous


# --------------------------------------------------------------------------
# Loading the runtime
# --------------------------------------------------------------------------


def configure(*, spin_count: int | None) -> None:
    """Choose libgomp's wait policy before it is loaded.

    ``spin_count`` is ``GOMP_SPINCOUNT``: how many times an idle team thread
    polls for work before it sleeps (0: sleep at once, OpenMP's "passive";
    ``None``: leave it to the environment).  Raises once the runtime is
    loaded, since libgomp reads its settings only then.
    """
    global _spin_count
    if spin_count is not None and spin_count < 0:
        raise RuntimeFailure(
            f"configure: spin_count must be >= 0 or None, got {spin_count}"
        )
    with _lock:
        if _runtime is not None:
            raise RuntimeFailure(
                "configure: the OpenMP runtime is already loaded (a kernel with a "
                "parallel loop was compiled); call configure() before that"
            )
        _spin_count = spin_count


def find_libgomp() -> str | None:
    """The path or soname of libgomp on this machine, or ``None``."""
    name = ctypes.util.find_library("gomp")
    if name is not None:
        return name
    return next((path for path in GCC_RUNTIME_PATHS if Path(path).exists()), None)


def ensure_runtime() -> ThreadRuntime:
    """Make the symbols parallel kernels need resolvable by the JIT; once.

    Needed before an execution engine is created for code with parallel
    loops: MCJIT aborts the process on an unresolved symbol.  The lowering
    calls it when it outlines a loop; loading an object file exported by
    another process needs it too.  Never raises for a missing libgomp: it
    warns once and provides a one-thread stand-in.
    """
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = _load()
        return _runtime


def runtime() -> ThreadRuntime | None:
    """What is loaded, or ``None`` before the first :func:`ensure_runtime`."""
    return _runtime


def _load() -> ThreadRuntime:
    import llvmlite.binding as llvm

    llvm.add_symbol(NUM_THREADS_SYMBOL, ctypes.addressof(_num_threads))
    _keep_alive.append(_num_threads)
    _install_loop_schedule()
    library = find_libgomp()
    if library is None:
        _install_serial_stand_in()
        warnings.warn(
            "ember: no OpenMP runtime (libgomp) found; parallel loops will run on "
            f"one thread. To use all cores, {INSTALL_HINT}.",
            ThreadsWarning,
            stacklevel=3,
        )
        return ThreadRuntime(library=None, spin_count=None)
    spin_count = _wait_policy()
    try:
        with _c_environment("GOMP_SPINCOUNT", spin_count):
            llvm.load_library_permanently(library)
    except RuntimeError as e:
        _install_serial_stand_in()
        warnings.warn(
            f"ember: could not load {library} ({e}); parallel loops will run on "
            f"one thread. To use all cores, {INSTALL_HINT}.",
            ThreadsWarning,
            stacklevel=3,
        )
        return ThreadRuntime(library=None, spin_count=None)
    return ThreadRuntime(library=library, spin_count=spin_count)


def _wait_policy() -> int | None:
    """The ``GOMP_SPINCOUNT`` libgomp should read when it loads: ``None``
    where the user chose a policy or libgomp is already in the process (then
    it has read its environment and the setting would be a lie)."""
    if _spin_count is None or _libgomp_already_loaded():
        return None
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return None
    return _spin_count


@contextmanager
def _c_environment(name: str, value: int | None) -> Iterator[None]:
    """``name=value`` in the C environment (what a library's constructor
    reads with ``getenv``) inside the block, unset again after it; nothing
    for ``None``.  Only for a name absent from the environment."""
    if value is None:
        yield
        return
    libc = ctypes.CDLL(None)
    libc.setenv(name.encode(), str(value).encode(), 1)
    try:
        yield
    finally:
        libc.unsetenv(name.encode())


def _libgomp_already_loaded() -> bool:
    return any("libgomp" in path for path in loaded_libraries())


def loaded_libraries() -> list[str]:
    """Paths of the shared libraries mapped into this process (Linux)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = {
        m.group(1) for m in re.finditer(r"\s(/\S+\.so[\d.]*)$", maps, re.MULTILINE)
    }
    return sorted(paths)


def _install_serial_stand_in() -> None:
    """Compile ``GOMP_parallel(fn, data, …) { fn(data); }`` and a team of one
    (thread 0 of 1), and register them under libgomp's names."""
    import llvmlite.binding as llvm
    from llvmlite import ir

    from ember.runtime.jit import host_target_machine

    module = ir.Module(name="ember_serial_openmp")
    i32 = ir.IntType(32)
    for name, value in (("omp_get_thread_num", 0), ("omp_get_num_threads", 1)):
        function = ir.Function(
            module, ir.FunctionType(i32, []), name=f"ember_serial_{name}"
        )
        ir.IRBuilder(function.append_basic_block()).ret(ir.Constant(i32, value))
    pointer = ir.IntType(8).as_pointer()
    worker_type = ir.FunctionType(ir.VoidType(), [pointer])
    parallel = ir.Function(
        module,
        ir.FunctionType(ir.VoidType(), [worker_type.as_pointer(), pointer, i32, i32]),
        name="ember_serial_GOMP_parallel",
    )
    builder = ir.IRBuilder(parallel.append_basic_block())
    builder.call(parallel.args[0], [parallel.args[1]])
    builder.ret_void()
    engine = llvm.create_mcjit_compiler(
        llvm.parse_assembly(str(module)), host_target_machine()
    )
    engine.finalize_object()
    _keep_alive.append(engine)
    for name in OPENMP_ENTRY_POINTS:
        llvm.add_symbol(name, engine.get_function_address(f"ember_serial_{name}"))


CHUNKS_PER_THREAD = 8
"""A thread takes its block of a parallel loop (:data:`ember.abi.LOOP_BLOCKS`)
in chunks of about ``1 / CHUNKS_PER_THREAD`` of it: a thread that the OS
keeps off its core (another process on a shared machine) leaves most of its
block to the others, which take its chunks instead of waiting for it.
Chunks are contiguous, so a thread still walks consecutive tiles of one
weight panel."""

_LOOP_SCHEDULE_IR = """
define void @ember_loop_reset(ptr %counters, i64 %team) {{
entry:
  %few = icmp slt i64 %team, {blocks}
  %blocks = select i1 %few, i64 %team, i64 {blocks}
  %limit = mul i64 %blocks, {stride}
  br label %loop
loop:
  %b = phi i64 [0, %entry], [%next, %loop]
  %slot = getelementptr i64, ptr %counters, i64 %b
  store i64 0, ptr %slot
  %next = add i64 %b, {stride}
  %more = icmp slt i64 %next, %limit
  br i1 %more, label %loop, label %done
done:
  ret void
}}

define i8 @ember_loop_next(ptr %counters, i64 %count, i64 %thread, i64 %team,
                          ptr %visited, ptr %first, ptr %last) {{
entry:
  %few = icmp slt i64 %team, {blocks}
  %blocks = select i1 %few, i64 %team, i64 {blocks}
  %home = urem i64 %thread, %blocks
  %start = load i64, ptr %visited
  br label %block
block:
  %k = phi i64 [%start, %entry], [%k1, %empty]
  %left = icmp slt i64 %k, %blocks
  br i1 %left, label %claim, label %none
claim:
  %hk = add i64 %home, %k
  %b = urem i64 %hk, %blocks
  %b1 = add i64 %b, 1
  %lo.n = mul i64 %b, %count
  %lo = udiv i64 %lo.n, %blocks
  %hi.n = mul i64 %b1, %count
  %hi = udiv i64 %hi.n, %blocks
  %size = sub i64 %hi, %lo
  %c = udiv i64 %size, {chunks}
  %tiny = icmp ult i64 %c, 1
  %chunk = select i1 %tiny, i64 1, i64 %c
  %offset = mul i64 %b, {stride}
  %slot = getelementptr i64, ptr %counters, i64 %offset
  %taken = atomicrmw add ptr %slot, i64 %chunk monotonic
  %got = icmp ult i64 %taken, %size
  br i1 %got, label %take, label %empty
empty:
  %k1 = add i64 %k, 1
  store i64 %k1, ptr %visited
  br label %block
take:
  %begin = add i64 %lo, %taken
  %end.raw = add i64 %taken, %chunk
  %cut = icmp ult i64 %end.raw, %size
  %end.in = select i1 %cut, i64 %end.raw, i64 %size
  %end = add i64 %lo, %end.in
  store i64 %begin, ptr %first
  store i64 %end, ptr %last
  ret i8 1
none:
  ret i8 0
}}
"""


def _install_loop_schedule() -> None:
    """Compile the loop schedule of :data:`ember.abi.LOOP_ENTRY_POINTS` (an
    atomic add on the block's counter per chunk: xDSL's ``llvm`` dialect
    has no atomics, so kernels call it) and register its functions."""
    import llvmlite.binding as llvm

    from ember.runtime.jit import host_target_machine

    text = _LOOP_SCHEDULE_IR.format(
        blocks=LOOP_BLOCKS, stride=LOOP_COUNTER_BYTES // 8, chunks=CHUNKS_PER_THREAD
    )
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(text), host_target_machine())
    engine.finalize_object()
    _keep_alive.append(engine)
    for name in LOOP_ENTRY_POINTS:
        llvm.add_symbol(name, engine.get_function_address(name))


# --------------------------------------------------------------------------
# numpy's BLAS pool
# --------------------------------------------------------------------------

_OPENBLAS_SETTERS: tuple[str, ...] = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def limit_blas_threads(count: int) -> bool:
    """Cap the thread pool of the OpenBLAS numpy loaded at ``count``.

    Two pools that spin on two cores slow each other down by an order of
    magnitude when a program alternates numpy calls and parallel kernels;
    with ember's kernels on all cores, ``limit_blas_threads(1)`` keeps
    numpy out of their way.  Returns whether an OpenBLAS was found (nothing
    happens otherwise).  Imports numpy.
    """
    if count < 1:
        raise RuntimeFailure(f"limit_blas_threads: count must be >= 1, got {count}")
    import numpy  # noqa: F401  (loads its BLAS, so that it is in the process map)

    found = False
    for path in loaded_libraries():
        if "openblas" not in Path(path).name.lower():
            continue
        library = ctypes.CDLL(path)
        for setter in _OPENBLAS_SETTERS:
            if hasattr(library, setter):
                getattr(library, setter)(ctypes.c_int(count))
                found = True
                break
    return found


__all__ = [
    "DEFAULT_SPIN_COUNT",
    "INSTALL_HINT",
    "ThreadRuntime",
    "ThreadsWarning",
    "available_cores",
    "configure",
    "ensure_runtime",
    "find_libgomp",
    "limit_blas_threads",
    "limit_threads",
    "num_threads",
    "runtime",
    "set_num_threads",
]
