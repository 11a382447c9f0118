"""This CPU's peak f32 FLOP rate, measured once and cached on disk.

The profiler reports each kernel's GFLOP/s as a share of what the machine
can do.  That ceiling is measured, not looked up: a JIT-compiled loop of
``fmuladd`` on the host's widest f32 vectors, with enough independent
accumulators to hide the FMA latency, run on one core; the best of a few
runs, times the thread count the kernels use, is the peak.

The figure is kept per process and in ``peak-flops.json`` under the
cache directory (``$EMBER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ember``, else
``~/.cache/ember``), keyed by CPU name, features and vector width, so a
later process on this machine reads it instead of measuring.  A cache that
cannot be read or written is ignored: the figure is measured again.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CACHE_FILE = "peak-flops.json"
ACCUMULATORS = 12
"""Independent FMA chains: latency (4-5 cycles) x FMA ports (2) needs 8-10."""
ITERATIONS = 1_000_000
RUNS = 5


@dataclass(frozen=True)
class Peak:
    """One core's measured f32 FMA throughput."""

    gflops_per_core: float
    lanes: int
    """f32 lanes of the vectors measured (8 for AVX2, 16 for AVX-512)."""
    cpu: str

    def gflops(self, threads: int) -> float:
        """The peak of ``threads`` cores."""
        return self.gflops_per_core * threads


_lock = threading.Lock()
_measured: Peak | None = None


def cache_dir() -> Path:
    """Where ember keeps files between processes."""
    if os.environ.get("EMBER_CACHE_DIR"):
        return Path(os.environ["EMBER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ember"


def peak() -> Peak:
    """This CPU's per-core peak: from this process, the disk cache, or measured."""
    global _measured
    with _lock:
        if _measured is None:
            key = _machine_key()
            _measured = _read_cache(key)
            if _measured is None:
                _measured = measure()
                _write_cache(key, _measured)
        return _measured


def _machine_key() -> str:
    import llvmlite.binding as llvm

    from ember.target import Target

    features = llvm.get_host_cpu_features().flatten()
    text = f"{llvm.get_host_cpu_name()}|{features}|{Target.host().vector_bits}"
    return hashlib.sha256(text.encode()).hexdigest()


def _read_cache(key: str) -> Peak | None:
    try:
        entry = json.loads((cache_dir() / CACHE_FILE).read_text(encoding="utf-8"))[key]
        found = Peak(float(entry["gflops_per_core"]), int(entry["lanes"]), str(entry["cpu"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if found.gflops_per_core > 0 else None


def _write_cache(key: str, found: Peak) -> None:
    path = cache_dir() / CACHE_FILE
    try:
        entries = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        if not isinstance(entries, dict):
            entries = {}
    except (OSError, ValueError):
        entries = {}
    entries[key] = {"gflops_per_core": found.gflops_per_core, "lanes": found.lanes, "cpu": found.cpu}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f"{CACHE_FILE}.{os.getpid()}.tmp")
        staging.write_text(json.dumps(entries, indent=1))
        os.replace(staging, path)
    except OSError:
        pass  # read-only home, full disk: measure again next time


def measure() -> Peak:
    """Run the FMA loop on this thread; the best of :data:`RUNS` runs."""
    import llvmlite.binding as llvm

    from ember.target import Target
    from ember.runtime.jit import host_target_machine

    lanes = Target.host().vector_lanes()
    machine = host_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_fma_loop_ir(lanes)), machine)
    engine.finalize_object()
    loop = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64)(
        engine.get_function_address("ember_fma_peak")
    )
    loop(1000)  # warm up: page in the code, wake the core
    flops = 2 * ITERATIONS * ACCUMULATORS * lanes
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        loop(ITERATIONS)
        best = min(best, time.perf_counter() - start)
    return Peak(flops / best / 1e9, lanes, llvm.get_host_cpu_name())


def _fma_loop_ir(lanes: int) -> str:
    """``float ember_fma_peak(i64 n)``: ``n`` rounds of :data:`ACCUMULATORS`
    independent ``acc = fmuladd(acc, a, b)`` on ``<lanes x float>``."""
    from llvmlite import ir

    f32 = ir.FloatType()
    i64 = ir.IntType(64)
    vector = ir.VectorType(f32, lanes)
    module = ir.Module(name="ember_peak")
    fmuladd = ir.Function(
        module, ir.FunctionType(vector, [vector] * 3), name=f"llvm.fmuladd.v{lanes}f32"
    )
    function = ir.Function(module, ir.FunctionType(f32, [i64]), name="ember_fma_peak")
    entry, loop, done = (function.append_basic_block(n) for n in ("entry", "loop", "done"))

    def splat(value: float) -> ir.Constant:
        return ir.Constant(vector, [value] * lanes)

    builder = ir.IRBuilder(entry)
    builder.branch(loop)
    builder = ir.IRBuilder(loop)
    counter = builder.phi(i64)
    counter.add_incoming(ir.Constant(i64, 0), entry)
    accumulators = []
    for k in range(ACCUMULATORS):
        phi = builder.phi(vector)
        phi.add_incoming(splat(1.0 + k / 64), entry)
        accumulators.append(phi)
    updated = [builder.call(fmuladd, [acc, splat(0.999), splat(1e-3)]) for acc in accumulators]
    for phi, value in zip(accumulators, updated):
        phi.add_incoming(value, loop)
    following = builder.add(counter, ir.Constant(i64, 1))
    counter.add_incoming(following, loop)
    builder.cbranch(builder.icmp_signed("<", following, function.args[0]), loop, done)
    builder = ir.IRBuilder(done)
    total = ir.Constant(f32, 0.0)
    for value in updated:  # every chain is live: nothing is optimised away
        total = builder.fadd(total, builder.extract_element(value, ir.Constant(i64, 0)))
    builder.ret(total)
    return str(module)


__all__ = ["Peak", "cache_dir", "measure", "peak"]
