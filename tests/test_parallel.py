"""Parallel ``kernel.for`` loops on several threads (libgomp) against serial code.

Every parallel kernel is compiled once and run with several thread counts;
its results must equal those of the same kernel with the loop serial and of
the reference interpreter.  The thread runtime is process-wide state, so each
test restores the thread count it changes; the two behaviours that need a
fresh process (the serial stand-in for a missing libgomp, and that one thread
forks no team) run in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import ember
from ember.backends.cpu import compile_kernels
from ember.errors import RuntimeFailure
from ember.interp.kernel_impls import run_kernel
from ember.lowering.kernel_to_llvm import lower_kernels_to_llvm
from ember.runtime import threads
from ember.runtime.jit import load_object

FILECHECK_FILE = (
    Path(__file__).parent / "filecheck" / "lowering" / "kernel-to-llvm-parallel.mlir"
)
THREAD_COUNTS = (1, 2, 3, 8)


@pytest.fixture(autouse=True)
def restore_thread_count() -> Iterator[None]:
    before = threads.num_threads()
    yield
    threads.set_num_threads(before)


def _random(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def _serial(text: str) -> str:
    """The same kernels with every loop serial."""
    return text.replace(" parallel {", " {")


def _run_all_ways(
    text: str, name: str, inputs: list[np.ndarray], output: np.ndarray
) -> np.ndarray:
    """Run kernel ``name`` in parallel at each of THREAD_COUNTS, serial, and
    interpreted; check all agree and return the result.  ``output`` is the
    initial content of the destination (a sentinel shows what is not written)."""
    module = ember.parse(text)
    parallel = compile_kernels(module)
    assert "GOMP_parallel" in parallel.llvm_ir  # the loop was outlined
    serial = compile_kernels(ember.parse(_serial(text)))
    expected = output.copy()
    serial.run(name, *inputs, expected)
    interpreted = output.copy()
    run_kernel(module, name, *inputs, interpreted)
    np.testing.assert_allclose(expected, interpreted, rtol=1e-5, atol=1e-5)
    for count in THREAD_COUNTS:
        threads.set_num_threads(count)
        result = output.copy()
        parallel.run(name, *inputs, result)
        # Same arithmetic, but LLVM may contract or fold it differently in the
        # outlined function (fast-math): equal up to rounding.
        np.testing.assert_allclose(
            result, expected, rtol=1e-6, atol=1e-6, err_msg=f"{count} threads"
        )
    return expected


# --------------------------------------------------------------------------
# Numerics: parallel == serial == interpreter
# --------------------------------------------------------------------------


def test_elementwise_with_constant_and_nested_parallel_loop() -> None:
    text = FILECHECK_FILE.read_text(encoding="utf-8")
    x = _random((7, 5), 1)
    result = _run_all_ways(text, "scale", [x], np.full((7, 5), np.nan, np.float32))
    np.testing.assert_array_equal(result, 2 * x)


def test_reduction_with_parallel_spatial_loop() -> None:
    """Rows in parallel, the reduction (with its init) serial in each thread;
    the temporary is allocated inside the parallel loop, one per thread."""
    text = """
    func.func @rowmax(%A: memref<9x33xf32>, %S: memref<9xf32>) attributes {kernel.kernel} {
      %c0 = arith.constant 0 : index
      kernel.for %i = 0 to 9 parallel {
        %T = memref.alloc() : memref<1xf32>
        kernel.for %k = 0 to 33 {
          kernel.block "T" (%vi = spatial %i, %vk = reduce %k) {
            kernel.init {
              %lowest = arith.constant -1.0e30 : f32
              memref.store %lowest, %T[%c0] : memref<1xf32>
            }
            %t = memref.load %T[%c0] : memref<1xf32>
            %a = memref.load %A[%vi, %vk] : memref<9x33xf32>
            %m = arith.maximumf %t, %a : f32
            memref.store %m, %T[%c0] : memref<1xf32>
          }
        }
        kernel.block "S" (%vi = spatial %i) {
          %t = memref.load %T[%c0] : memref<1xf32>
          memref.store %t, %S[%vi] : memref<9xf32>
        }
      }
      func.return
    }
    """
    a = _random((9, 33), 2)
    result = _run_all_ways(text, "rowmax", [a], np.zeros(9, np.float32))
    np.testing.assert_array_equal(result, a.max(axis=1))


def matmul_kernel(m: int, n: int, k: int) -> str:
    """C = A @ B, i parallel, then k, then j (vectorisable)."""
    return f"""
    func.func @matmul(%A: memref<{m}x{k}xf32>, %B: memref<{k}x{n}xf32>, %C: memref<{m}x{n}xf32>) attributes {{kernel.kernel}} {{
      kernel.for %i = 0 to {m} parallel {{
        kernel.for %k = 0 to {k} {{
          kernel.for %j = 0 to {n} vectorized {{
            kernel.block "C" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {{
              kernel.init {{
                %zero = arith.constant 0.0 : f32
                memref.store %zero, %C[%vi, %vj] : memref<{m}x{n}xf32>
              }}
              %c = memref.load %C[%vi, %vj] : memref<{m}x{n}xf32>
              %a = memref.load %A[%vi, %vk] : memref<{m}x{k}xf32>
              %b = memref.load %B[%vk, %vj] : memref<{k}x{n}xf32>
              %p = arith.mulf %a, %b : f32
              %s = arith.addf %c, %p : f32
              memref.store %s, %C[%vi, %vj] : memref<{m}x{n}xf32>
            }}
          }}
        }}
      }}
      func.return
    }}
    """


@pytest.mark.parametrize("m", [2, 3, 13])
def test_matmul_with_parallel_rows(m: int) -> None:
    """2, 3: fewer rows than 8 threads; 13: chunks of 7+6, 5+4+4, ... rows."""
    a, b = _random((m, 11), 3), _random((11, 19), 4)
    start = np.full((m, 19), 7.0, np.float32)  # the init must overwrite it
    result = _run_all_ways(matmul_kernel(m, 19, 11), "matmul", [a, b], start)
    np.testing.assert_allclose(result, a @ b, rtol=1e-5, atol=1e-5)


def test_trip_count_one_is_a_plain_loop() -> None:
    module = ember.parse(matmul_kernel(1, 19, 11))
    jit = compile_kernels(module)
    assert "GOMP_parallel" not in jit.llvm_ir
    a, b = _random((1, 11), 3), _random((11, 19), 4)
    threads.set_num_threads(2)
    result = np.zeros((1, 19), np.float32)
    jit.run("matmul", a, b, result)
    np.testing.assert_allclose(result, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [23, 2003])
def test_uneven_chunks_of_a_strided_loop_write_exactly_their_iterations(
    size: int,
) -> None:
    """i = 2, 5, … below ``size`` over 1-8 threads: 7 iterations (chunks of
    one), or 667 (chunks of several, ``CHUNKS_PER_THREAD`` per thread, and a
    partial last one).  Every iteration runs once, nothing else is touched
    (NaN sentinels stay)."""
    text = f"""
    func.func @strided(%X: memref<{size}xf32>, %Y: memref<{size}xf32>) attributes {{kernel.kernel}} {{
      kernel.for %i = 2 to {size} step 3 parallel {{
        kernel.block "Y" (%vi = spatial %i) {{
          %x = memref.load %X[%vi] : memref<{size}xf32>
          %y = memref.load %Y[%vi] : memref<{size}xf32>
          %s = arith.addf %x, %y : f32
          memref.store %s, %Y[%vi] : memref<{size}xf32>
        }}
      }}
      func.return
    }}
    """
    x = np.arange(size, dtype=np.float32)
    start = np.where(np.arange(size) % 3 == 2, 100.0, np.nan).astype(np.float32)
    result = _run_all_ways(text, "strided", [x], start)
    expected = start.copy()
    expected[2::3] += x[2::3]  # added once: an iteration run twice would add twice
    np.testing.assert_array_equal(result, expected)


def test_captures_of_every_kind() -> None:
    """A parallel loop inside a serial one captures the outer index (i64),
    a float computed outside (f32), a buffer allocated outside (shared) and
    the arguments; a second parallel loop in the same kernel is outlined too."""
    text = """
    func.func @mixed(%X: memref<3x10xf32>, %Y: memref<3x10xf32>) attributes {kernel.kernel} {
      %half = arith.constant 0.5 : f32
      %three = arith.constant 3.0 : f32
      %scale = arith.mulf %half, %three : f32
      %Row = memref.alloc() : memref<10xf32>
      kernel.for %r = 0 to 3 {
        kernel.for %c = 0 to 10 parallel {
          kernel.block "Row" (%vr = spatial %r, %vc = spatial %c) {
            %x = memref.load %X[%vr, %vc] : memref<3x10xf32>
            %s = arith.mulf %x, %scale : f32
            memref.store %s, %Row[%vc] : memref<10xf32>
          }
        }
        kernel.for %c = 0 to 10 parallel {
          kernel.block "Y" (%vr = spatial %r, %vc = spatial %c) {
            %v = memref.load %Row[%vc] : memref<10xf32>
            %i = arith.index_cast %vr : index to i32
            %f = arith.sitofp %i : i32 to f32
            %y = arith.addf %v, %f : f32
            memref.store %y, %Y[%vr, %vc] : memref<3x10xf32>
          }
        }
      }
      func.return
    }
    """
    assert "@mixed__parallel1" in ember.to_text(_lowered(text))
    x = _random((3, 10), 5)
    result = _run_all_ways(text, "mixed", [x], np.zeros((3, 10), np.float32))
    np.testing.assert_allclose(
        result, 1.5 * x + np.arange(3, dtype=np.float32)[:, None], rtol=1e-6
    )


def _lowered(text: str) -> ModuleOp:
    module = ember.parse(text)
    lower_kernels_to_llvm(module)
    return module


def test_exported_object_with_parallel_loop_loads_and_runs() -> None:
    jit = compile_kernels(ember.parse(matmul_kernel(13, 8, 4)))
    loaded = load_object(jit.emit_object())
    a, b = _random((13, 4), 6), _random((4, 8), 7)
    c = np.zeros((13, 8), np.float32)
    threads.set_num_threads(2)
    loaded.run("matmul", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# The thread runtime
# --------------------------------------------------------------------------


def test_runtime_is_libgomp_with_a_bounded_spin() -> None:
    runtime = threads.ensure_runtime()
    assert runtime is threads.ensure_runtime()  # loaded once
    if threads.find_libgomp() is None:
        pytest.skip("no libgomp on this machine (the stand-in is tested below)")
    assert runtime.parallel and runtime.library is not None
    assert runtime.spin_count in (None, threads.DEFAULT_SPIN_COUNT)
    with pytest.raises(RuntimeFailure, match="already loaded"):
        threads.configure(spin_count=0)


def _schedule_functions() -> tuple:
    """The runtime's ``ember_loop_reset`` / ``ember_loop_next``, as ctypes."""
    import ctypes

    import llvmlite.binding as llvm

    from ember.abi import LOOP_NEXT_SYMBOL, LOOP_RESET_SYMBOL

    threads.ensure_runtime()
    i64, pointer = ctypes.c_int64, ctypes.c_void_p
    reset = ctypes.CFUNCTYPE(None, pointer, i64)(llvm.address_of_symbol(LOOP_RESET_SYMBOL))
    claim = ctypes.CFUNCTYPE(ctypes.c_int8, pointer, i64, i64, i64, pointer, pointer, pointer)(
        llvm.address_of_symbol(LOOP_NEXT_SYMBOL)
    )
    return reset, claim


@pytest.mark.parametrize("count", [0, 1, 5, 23, 1000])
@pytest.mark.parametrize("team", [1, 2, 3, 8, 70])
@pytest.mark.parametrize("turns", ["in turn", "at random"])
def test_loop_schedule_owns_blocks_and_shares_what_is_left(
    count: int, team: int, turns: str
) -> None:
    """The threads of a team, claiming in turn or at random, claim every
    iteration exactly once; a thread takes its own block's chunks (thread
    ``t``'s of ``min(team, LOOP_BLOCKS)`` equal blocks) before any other's,
    and when all claim in turn and every block has work, each opens its own
    block.  70 threads share 64 blocks."""
    from ember.abi import LOOP_BLOCKS, LOOP_COUNTER_BYTES

    reset, claim = _schedule_functions()
    counters = np.full(LOOP_BLOCKS * LOOP_COUNTER_BYTES // 8, -7, np.int64)  # garbage: reset zeroes
    cursors = np.zeros((team, 3), np.int64)  # visited, first, last per thread
    blocks = min(team, LOOP_BLOCKS)
    edges = [b * count // blocks for b in range(blocks + 1)]
    reset(counters.ctypes.data, team)
    runs = np.zeros(count, np.int64)
    chunks: list[list[tuple[int, int]]] = [[] for _ in range(team)]
    live = list(range(team))
    rng = np.random.default_rng(count * 100 + team)
    step = -1
    while live:
        step += 1  # in turn: thread 0, 1, … (a thread sharing a home comes after its owner)
        t = live[step % len(live)] if turns == "in turn" else int(rng.choice(live))
        cursor = cursors[t].ctypes.data
        if not claim(counters.ctypes.data, count, t, team, cursor, cursor + 8, cursor + 16):
            live.remove(t)
            continue
        first, last = int(cursors[t, 1]), int(cursors[t, 2])
        assert 0 <= first < last <= count
        block = next(b for b in range(blocks) if edges[b] <= first < edges[b + 1])
        assert last <= edges[block + 1]  # a chunk never crosses a block's edge
        runs[first:last] += 1
        chunks[t].append((block, first))
    np.testing.assert_array_equal(runs, 1)
    for t, taken in enumerate(chunks):
        home = t % blocks
        if turns == "in turn" and t < blocks and count >= blocks:
            # every block has work: none is emptied before its owner's turn
            assert taken[0] == (home, edges[home])
        order = [(b - home) % blocks for b, _ in taken]
        assert order == sorted(order)  # own block first, then the next ones


def test_thread_count_setting() -> None:
    assert threads.num_threads() >= 1
    assert threads.available_cores() >= 1
    threads.set_num_threads(1)
    assert threads.num_threads() == 1
    threads.set_num_threads(4)
    with threads.limit_threads(2):
        assert threads.num_threads() == 2
        with threads.limit_threads(3):  # a limit never raises the count
            assert threads.num_threads() == 2
    assert threads.num_threads() == 4
    for bad in (0, -1, True, 1.5):
        with pytest.raises(RuntimeFailure, match="positive integer"):
            threads.set_num_threads(bad)  # type: ignore[arg-type]


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        check=False,  # the caller reports stderr on failure
        capture_output=True,
        text=True,
        timeout=60,  # a hang in libgomp fails the test instead of the suite
    )


_PROBE_KERNEL = f"""
import os, warnings
import numpy as np
import ember
from ember.runtime import threads
from ember.backends.cpu import compile_kernels

def tasks():
    return len(os.listdir("/proc/self/task"))

text = '''{matmul_kernel(16, 8, 8)}'''
a = np.ones((16, 8), np.float32); b = np.ones((8, 8), np.float32)
"""


def test_one_thread_forks_no_team_and_two_do() -> None:
    """Observable in a fresh process: with one thread the kernel starts no
    OpenMP thread; with two, libgomp adds one worker to the process."""
    if threads.find_libgomp() is None:
        pytest.skip("no libgomp on this machine")
    result = _run_python(
        _PROBE_KERNEL
        + """
jit = compile_kernels(ember.parse(text))
threads.set_num_threads(1)
c = np.zeros((16, 8), np.float32)
before = tasks()
jit.run("matmul", a, b, c)
assert (c == 8).all()
one = tasks()
threads.set_num_threads(2)
c[:] = 0
jit.run("matmul", a, b, c)
assert (c == 8).all()
print(before, one, tasks())
"""
    )
    assert result.returncode == 0, result.stderr
    before, one, two = map(int, result.stdout.split())
    assert one == before
    assert two == before + 1


def test_child_forked_after_a_team_ran_uses_one_thread_and_does_not_hang() -> None:
    if threads.find_libgomp() is None:
        pytest.skip("no libgomp on this machine")
    result = _run_python(
        _PROBE_KERNEL
        + """
jit = compile_kernels(ember.parse(text))
threads.set_num_threads(2)
c = np.zeros((16, 8), np.float32)
jit.run("matmul", a, b, c)
pid = os.fork()
if pid == 0:
    c[:] = 0
    jit.run("matmul", a, b, c)
    try:
        threads.set_num_threads(2)
        os._exit(3)
    except Exception as e:
        os._exit(0 if "forked" in str(e) and threads.num_threads() == 1 and (c == 8).all() else 4)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0"]


def test_missing_libgomp_runs_serially_with_one_warning() -> None:
    result = _run_python(
        _PROBE_KERNEL
        + """
threads.find_libgomp = lambda: None
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    jit = compile_kernels(ember.parse(text))
    compile_kernels(ember.parse(text))
threads.set_num_threads(4)
c = np.zeros((16, 8), np.float32)
jit.run("matmul", a, b, c)
assert (c == 8).all(), c
assert not threads.runtime().parallel
assert not any("libgomp" in line for line in open("/proc/self/maps"))
messages = [str(w.message) for w in caught if issubclass(w.category, threads.ThreadsWarning)]
print(len(messages)); print(messages[0])
"""
    )
    assert result.returncode == 0, result.stderr
    count, message = result.stdout.splitlines()[:2]
    assert count == "1"
    assert "one thread" in message and "libgomp" in message


def test_limit_blas_threads_finds_numpys_openblas_or_says_not() -> None:
    found = threads.limit_blas_threads(threads.available_cores())
    assert isinstance(found, bool)
    config = np.show_config(mode="dicts") if hasattr(np, "show_config") else {}
    blas = str(config.get("Build Dependencies", {}).get("blas", {}).get("name", ""))
    if "openblas" in blas.lower():
        assert found
    with pytest.raises(RuntimeFailure, match="count must be >= 1"):
        threads.limit_blas_threads(0)


def test_loops_with_the_same_capture_types_share_one_thread_entry() -> None:
    """The thread entry point reads the body, the range and the captures
    from its data: two loops (here in two kernels) whose captures have the
    same types share the first's entry, and each runs its own body."""
    kernel = """
    func.func @{name}(%X: memref<64xf32>, %Y: memref<64xf32>) attributes {{kernel.kernel}} {{
      kernel.for %i = 0 to {extent} parallel {{
        kernel.block "Y" (%vi = spatial %i) {{
          %x = memref.load %X[%vi] : memref<64xf32>
          %k = arith.constant {factor} : f32
          %y = arith.mulf %x, %k : f32
          memref.store %y, %Y[%vi] : memref<64xf32>
        }}
      }}
      func.return
    }}
    """
    text = kernel.format(name="first", extent=64, factor="2.0") + kernel.format(
        name="second", extent=48, factor="3.0"
    )
    lowered = ember.to_text(_lowered(text))
    assert "llvm.func @first__parallel0(" in lowered
    assert "@second__parallel0(" not in lowered
    assert lowered.count("llvm.mlir.addressof @first__parallel0 :") == 2
    x = _random((64,), 3)
    sentinel = np.full(64, -1.0, np.float32)
    result = _run_all_ways(text, "second", [x], sentinel)
    np.testing.assert_array_equal(result[:48], 3.0 * x[:48])
    np.testing.assert_array_equal(result[48:], sentinel[48:])
