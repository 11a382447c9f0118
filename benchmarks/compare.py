"""Time ember against numpy, onnxruntime and PyTorch on ember.testing.workloads' networks.

Usage::

    python benchmarks/compare.py [--workloads mlp,resnet18] [--repeat N]
        [--warmup W] [--threads 2] [--blas-threads K] [--json out.json]
        [--profile]

For each workload, in one process: ``ember.build(target="llvm")`` (timed:
the compile column; cold, the compilation cache is bypassed), the numpy forward pass of ``numpy_models.py``, an
onnxruntime session over the ONNX export of ember's own graph
(``onnx_export.py``), and PyTorch eager on the CPU (``torch_models.py``).  Every framework's output is first checked against
the numpy model's — a fast wrong answer is not a result — then the frameworks are
timed interleaved: rounds of blocks of consecutive runs, one framework per
block, the first run of each block untimed.  Interleaving spreads the
machine's load drift over all frameworks alike; the untimed first run keeps
the previous framework's spinning thread pool (OpenBLAS, libgomp,
onnxruntime all spin after a call) out of the figures, which a strict
one-run-each alternation would charge to whoever runs next.

Latency is the median of ``--repeat`` timed runs (default 50; 20 for
resnet18, whose runs are long enough), ember's being ``GraphExecutor.run``
alone (inputs set once, outputs left in place).  Ratios are ember's time
over the peer's: below 1 means ember is faster.  Threads: ember,
onnxruntime and PyTorch use ``--threads`` (onnxruntime intra-op, one
inter-op thread; ``torch.set_num_threads``);
numpy's OpenBLAS keeps the thread count its environment gives it unless
``--blas-threads`` caps it, and the report says what it was.  No figure here is asserted anywhere: speed goals
are read from this table, never tested.

After the timing, ember's run is profiled (``GraphExecutor.profile``):
``--json`` keeps each workload's profile (per kernel: fused ops, median,
share, GFLOP/s, % of peak; and the time outside kernels), ``--profile``
prints its table too.  The report names the CPU model and its vector ISA.

onnxruntime and torch are optional (``pip install -e .[bench]``): without
one, its column reads n/a and the table says how to install it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# Run as a script (`python benchmarks/compare.py`) or imported from tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy_models
import onnx_export
import torch_models

import ember
from ember.errors import EmberError
from ember.testing import workloads

FRAMEWORKS: tuple[str, ...] = ("ember", "numpy", "onnxruntime", "pytorch")
PEER_LABELS = {"numpy": "numpy", "onnxruntime": "ort", "pytorch": "torch"}
"""How the ratio columns name each peer (``ember/ort``)."""
PROFILE_REPEAT = 20  # runs GraphExecutor.profile medians over
DEFAULT_REPEAT = 50
DEFAULT_REPEAT_BY_WORKLOAD = {"resnet18": 20}  # >= 20 runs for resnet18
NOISY_SPREAD = 1.5  # p90 / median above this gets a note: the figure is shaky
AGREEMENT_RTOL = 1e-3  # of the output's largest magnitude; float32 sums reorder
INPUT_SEED = 1  # the weights use seed 0 (workloads.get)


@dataclass
class Runner:
    """One framework ready to run one workload: ``run()`` then ``output()``."""

    framework: str
    run: Callable[[], Any]
    output: Callable[[], np.ndarray]
    setup_s: float
    profile: Callable[[], dict[str, Any]] | None = None
    """ember's per-kernel profile (``Profile.as_dict``), taken after timing."""


@dataclass
class Timing:
    """Per-run latencies of one framework on one workload, in seconds."""

    samples: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples) * 1e3

    @property
    def min_ms(self) -> float:
        return min(self.samples) * 1e3

    @property
    def p90_ms(self) -> float:
        return float(np.percentile(self.samples, 90)) * 1e3

    def summary(self) -> dict[str, float | int]:
        return {
            "median_ms": self.median_ms,
            "min_ms": self.min_ms,
            "p90_ms": self.p90_ms,
            "mean_ms": statistics.fmean(self.samples) * 1e3,
            "runs": len(self.samples),
        }


@dataclass
class Result:
    """What one workload's row of the table says."""

    workload: str
    median_ms: dict[str, float | None]
    compile_s: float | None
    setup_s: dict[str, float]
    max_rel_error: dict[str, float]
    timings: dict[str, dict[str, float | int]]
    problems: dict[str, str]
    profile: dict[str, Any] | None = None
    """ember's ``GraphExecutor.profile`` of this workload, as a dict."""

    def ratio(self, peer: str) -> float | None:
        ours, theirs = self.median_ms.get("ember"), self.median_ms.get(peer)
        if ours is None or theirs is None or theirs == 0:
            return None
        return ours / theirs


# --------------------------------------------------------------------------
# The frameworks
# --------------------------------------------------------------------------


def input_for(module: Any, entry: str = "main") -> np.ndarray:
    """A seeded random input of the shape and dtype of ``entry``'s first argument."""
    from xdsl.dialects import func

    from ember.dialects import graph

    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            data = op.body.block.args[0].type
            shape = tuple(data.get_shape())
            dtype = graph.numpy_dtype(data.element_type)
            rng = np.random.default_rng(INPUT_SEED)
            return rng.standard_normal(shape).astype(dtype)
    raise EmberError(f"the workload module has no function @{entry}")


def ember_runner(module: Any, params: dict[str, np.ndarray], x: np.ndarray) -> Runner:
    start = time.perf_counter()
    lib = ember.build(module, target="llvm", params=params, cache=False)
    compile_s = time.perf_counter() - start
    executor = ember.GraphExecutor(lib, ember.cpu(0))
    executor.set_input("data", x)
    return Runner(
        "ember",
        executor.run,
        lambda: executor.get_output(0).numpy(),
        compile_s,
        profile=lambda: executor.profile(repeat=PROFILE_REPEAT).as_dict(),
    )


def numpy_runner(name: str, params: dict[str, np.ndarray], x: np.ndarray) -> Runner:
    start = time.perf_counter()
    forward = numpy_models.prepare(name, params)
    setup_s = time.perf_counter() - start
    last: list[np.ndarray] = []

    def run() -> None:
        last[:] = [forward(x)]

    return Runner("numpy", run, lambda: last[0], setup_s)


def onnxruntime_runner(
    module: Any, params: dict[str, np.ndarray], x: np.ndarray, threads: int
) -> Runner:
    start = time.perf_counter()
    session = onnx_export.inference_session(onnx_export.export(module, params), threads)
    setup_s = time.perf_counter() - start
    feed = {session.get_inputs()[0].name: x}
    output_names = [session.get_outputs()[0].name]
    last: list[np.ndarray] = []

    def run() -> None:
        last[:] = session.run(output_names, feed)

    return Runner("onnxruntime", run, lambda: last[0], setup_s)


def pytorch_runner(
    name: str, params: dict[str, np.ndarray], x: np.ndarray, threads: int
) -> Runner:
    start = time.perf_counter()
    forward = torch_models.prepare(name, params, threads)
    setup_s = time.perf_counter() - start
    last: list[np.ndarray] = []

    def run() -> None:
        last[:] = [forward(x)]

    return Runner("pytorch", run, lambda: last[0], setup_s)


def onnxruntime_missing() -> str | None:
    """Why the onnxruntime peer cannot run here, or ``None`` if it can."""
    for package in ("onnx", "onnxruntime"):
        try:
            __import__(package)
        except ImportError:
            return f"{package} is not installed; {onnx_export.INSTALL_HINT}"
    return None


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------


def relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    """Largest absolute difference over the reference's largest magnitude."""
    if value.shape != reference.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    return float(np.max(np.abs(value.astype(np.float64) - reference))) / scale


def time_interleaved(
    runners: Sequence[Runner], runs: int, warmup: int, block: int
) -> dict[str, Timing]:
    """``runs`` timed runs per runner, in rounds of blocks (see the module docstring)."""
    for runner in runners:
        for _ in range(warmup):
            runner.run()
    timings = {runner.framework: Timing() for runner in runners}
    remaining = runs
    round_index = 0
    while remaining > 0:
        count = min(block, remaining)
        # Rotate who goes first, so no framework always follows the same one.
        shift = round_index % len(runners)
        for runner in list(runners[shift:]) + list(runners[:shift]):
            runner.run()  # untimed: lets the previous framework's threads go idle
            samples = timings[runner.framework].samples
            for _ in range(count):
                start = time.perf_counter()
                runner.run()
                samples.append(time.perf_counter() - start)
        remaining -= count
        round_index += 1
    return timings


def measure(name: str, runs: int, warmup: int, block: int, threads: int) -> Result:
    """Build, check and time every available framework on workload ``name``."""
    module, params = workloads.get(name)
    x = input_for(module)
    problems: dict[str, str] = {}
    runners: list[Runner] = []
    makers: list[tuple[str, Callable[[], Runner]]] = [
        ("ember", lambda: ember_runner(module, params, x)),
        ("numpy", lambda: numpy_runner(name, params, x)),
        ("onnxruntime", lambda: onnxruntime_runner(module, params, x, threads)),
        ("pytorch", lambda: pytorch_runner(name, params, x, threads)),
    ]
    missing = {"onnxruntime": onnxruntime_missing(), "pytorch": torch_models.missing()}
    for framework, make in makers:
        if missing.get(framework):
            problems[framework] = missing[framework]
            continue
        try:
            runners.append(make())
        # One framework failing (ember's compiler is work in progress; an
        # exporter may meet an op it lacks) must not lose the others' figures:
        # the failure is reported in the table's notes instead.
        except Exception as error:  # noqa: BLE001
            problems[framework] = f"{type(error).__name__}: {error}"

    compile_s = next((r.setup_s for r in runners if r.framework == "ember"), None)
    errors = _check_outputs(runners, problems)
    runners = [r for r in runners if r.framework not in problems]
    timings = time_interleaved(runners, runs, warmup, block) if runners else {}
    profile = None
    for runner in runners:
        if runner.profile is not None:
            try:
                profile = runner.profile()
            except Exception as error:  # noqa: BLE001  (as above: keep the figures)
                problems[runner.framework] = f"profile: {type(error).__name__}: {error}"
    return Result(
        workload=name,
        median_ms={
            f: (timings[f].median_ms if f in timings else None) for f in FRAMEWORKS
        },
        compile_s=compile_s,
        setup_s={r.framework: r.setup_s for r in runners},
        max_rel_error=errors,
        timings={f: t.summary() for f, t in timings.items()},
        problems=problems,
        profile=profile,
    )


def _check_outputs(
    runners: Sequence[Runner], problems: dict[str, str]
) -> dict[str, float]:
    """Run each framework once; one whose output differs from the reference's is not timed.

    The reference is numpy's output (hand-written, independent of ember, and
    checked against ember's interpreter by tests/test_benchmarks.py), so a
    wrong ember result is blamed on ember, not on its peers; ember's output
    is the reference only where the numpy model failed.
    """
    outputs: dict[str, np.ndarray] = {}
    for runner in runners:
        try:
            runner.run()
            outputs[runner.framework] = np.array(runner.output(), copy=True)
        except Exception as error:  # noqa: BLE001  (as in measure)
            problems[runner.framework] = f"{type(error).__name__}: {error}"
    reference_name = "numpy" if "numpy" in outputs else "ember"
    reference = outputs.get(reference_name)
    errors: dict[str, float] = {}
    if reference is None:
        return errors
    for framework, value in outputs.items():
        if framework == reference_name:
            continue
        error = relative_error(value, reference)
        errors[framework] = error
        if not error <= AGREEMENT_RTOL:
            problems[framework] = (
                f"output differs from {reference_name}'s: max relative error {error:.2e} "
                f"> {AGREEMENT_RTOL:g} (shapes {value.shape} vs {reference.shape}); not timed"
            )
    return errors


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def openblas_threads() -> int | None:
    """The thread count of the OpenBLAS numpy loaded, if it says."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for getter in (
            "scipy_openblas_get_num_threads64_",
            "openblas_get_num_threads64_",
            "openblas_get_num_threads",
        ):
            if hasattr(library, getter):
                return int(getattr(library, getter)())
    return None


ISA_FLAGS: tuple[str, ...] = ("avx512f", "avx512bw", "avx512_vnni", "avx2", "fma", "avx", "neon", "asimd")
"""The vector extensions the report names (x86 and Arm spellings)."""


def cpu_model() -> str:
    """The CPU's model name and widest vector extension, from /proc/cpuinfo.

    The vector width is worth saying: a host with AVX-512 rather than only
    AVX2 moves every framework's figures.
    """
    name, flags = _cpuinfo()
    vector_extensions = {"avx512f": "AVX-512", "avx2": "AVX2", "avx": "AVX"}
    widest = next((v for f, v in vector_extensions.items() if f in flags), None)
    return f"{name} ({widest})" if widest else name


def cpu_isa() -> list[str]:
    """Which of :data:`ISA_FLAGS` this CPU has (``["avx2", "fma", "avx"]``)."""
    _, flags = _cpuinfo()
    return [flag for flag in ISA_FLAGS if flag in flags]


def _cpuinfo() -> tuple[str, set[str]]:
    """The model name and feature flags of the first CPU in /proc/cpuinfo."""
    name, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    name = value.strip()
                elif key.strip() in ("flags", "Features"):
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return name, flags


def environment(threads: int) -> dict[str, Any]:
    versions = {
        "python": platform.python_version(),
        "ember": ember.__version__,
        "numpy": np.__version__,
    }
    for package in ("onnxruntime", "onnx", "torch"):
        try:
            versions[package] = __import__(package).__version__
        except ImportError:
            versions[package] = None
    from ember.runtime.threads import available_cores, num_threads

    return {
        "machine": f"{cpu_model()}, {available_cores()} cores available",
        "isa": cpu_isa(),
        "versions": versions,
        "threads": {
            "ember": num_threads(),
            "onnxruntime": threads,
            "pytorch": threads,
            "numpy (OpenBLAS)": openblas_threads(),
        },
        "load_average": os.getloadavg(),
    }


def _ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def format_table(results: Sequence[Result], env: dict[str, Any]) -> str:
    peers = FRAMEWORKS[1:]
    header = (
        "workload",
        *(f"{f} ms" for f in FRAMEWORKS),
        *(f"ember/{PEER_LABELS[p]}" for p in peers),
        "compile s",
    )
    rows = [
        (
            r.workload,
            *(_ms(r.median_ms.get(f)) for f in FRAMEWORKS),
            *(_ratio(r.ratio(p)) for p in peers),
            "n/a" if r.compile_s is None else f"{r.compile_s:.2f}",
        )
        for r in results
    ]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths))
            )
            + " |"
        )

    text = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    text += [line(row) for row in rows]
    threads = ", ".join(
        f"{k} {v if v is not None else 'as set by its environment'}"
        for k, v in env["threads"].items()
    )
    versions = ", ".join(
        f"{k} {v}" for k, v in env["versions"].items() if v is not None
    )
    load = ", ".join(f"{x:.2f}" for x in env["load_average"])
    text += [
        "",
        "median latency; ratio = ember / peer (below 1: ember is faster); compile = ember.build, cold",
        f"threads: {threads}",
        f"versions: {versions}",
        f"machine: {env['machine']}; ISA: {', '.join(env.get('isa') or ['unknown'])}; "
        f"load average before the run: {load}",
    ]
    for r in results:
        text += [f"note: {r.workload}: {f}: {why}" for f, why in r.problems.items()]
        for framework, timing in r.timings.items():
            spread = timing["p90_ms"] / timing["median_ms"]
            if spread > NOISY_SPREAD:
                text.append(
                    f"note: {r.workload}: {framework}: noisy, p90 is {spread:.1f}x the "
                    f"median (min {_ms(timing['min_ms'])} ms): machine load?"
                )
    return "\n".join(text)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time ember against numpy and onnxruntime on ember's workloads."
    )
    parser.add_argument(
        "--workloads",
        default=",".join(workloads.NAMES),
        help=f"comma-separated workloads (default: all of {','.join(workloads.NAMES)})",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"timed runs per framework (default {DEFAULT_REPEAT}; resnet18 {DEFAULT_REPEAT_BY_WORKLOAD['resnet18']})",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=3,
        help="untimed runs per framework first (default 3)",
    )
    parser.add_argument(
        "--block",
        type=int,
        default=5,
        help="consecutive runs per framework in a round (default 5)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="threads for ember and onnxruntime (default 2)",
    )
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="cap numpy's OpenBLAS pool at this many threads (default: as its "
        "environment sets it); on a loaded machine a 2-thread OpenBLAS can stall "
        "for milliseconds between calls",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="also write the results, with ember's per-kernel profiles, to this JSON file",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print ember's per-kernel profile of each workload",
    )
    args = parser.parse_args(argv)
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in args.workloads if w not in workloads.NAMES]
    if unknown or not args.workloads:
        parser.error(
            f"unknown workload(s) {unknown}; choose from {', '.join(workloads.NAMES)}"
        )
    for option in ("repeat", "warmup", "block", "threads", "blas_threads"):
        value = getattr(args, option)
        if value is not None and value < (0 if option == "warmup" else 1):
            parser.error(
                f"--{option.replace('_', '-')} must be {'>= 0' if option == 'warmup' else '>= 1'}, got {value}"
            )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from ember.runtime.threads import limit_blas_threads, set_num_threads

    set_num_threads(args.threads)
    if args.blas_threads is not None:
        limit_blas_threads(args.blas_threads)
    env = environment(args.threads)
    results = []
    for name in args.workloads:
        runs = args.repeat or DEFAULT_REPEAT_BY_WORKLOAD.get(name, DEFAULT_REPEAT)
        print(
            f"{name}: building and timing {runs} runs per framework ...",
            file=sys.stderr,
            flush=True,
        )
        results.append(measure(name, runs, args.warmup, args.block, args.threads))
    print(format_table(results, env))
    if args.profile:
        from ember.runtime.profiler import Profile

        for r in results:
            if r.profile is not None:
                print(f"\n{r.workload}:\n{Profile.from_dict(r.profile)}")
    if args.json is not None:
        payload = {
            "environment": env,
            "results": [
                {**asdict(r), "ratios": {p: r.ratio(p) for p in FRAMEWORKS[1:]}}
                for r in results
            ],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
