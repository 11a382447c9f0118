"""Time ember against numpy, onnxruntime and PyTorch on ember.testing.workloads' networks.

Usage::

    python benchmarks/compare.py [--workloads mlp,resnet18] [--repeat N]
        [--warmup W] [--threads 2] [--blas-threads K] [--rounds 2]
        [--same-process] [--json out.json] [--profile]

The frameworks: ``ember.build(target="llvm")`` (timed: the compile column;
cold, the compilation cache is bypassed), the numpy forward pass of
``numpy_models.py``, an onnxruntime session over the ONNX export of ember's
own graph (``onnx_export.py``), and PyTorch eager on the CPU
(``torch_models.py``).

Each framework is timed alone, in its own fresh process, so the table shows
what a user running that one framework sees.  Frameworks that share a
process (or run one after another in it) slow each other down: after
``session.run`` onnxruntime's intra-op threads spin for about 40 ms, and
whoever runs next finds a core taken — on 2 cores ember's two OpenMP threads
then share one, and convbnrelu read 0.70 ms interleaved against 0.30 ms
alone.  Idling between blocks does not cure it (both frameworks get slower
after idle).  So, for each workload, ``--rounds`` rounds (default 2) each
start one child process per framework (``compare.py --child SPEC``; the
order rotates round by round, spreading the machine's load drift over all
frameworks alike); a child builds its runner, runs it once (its output,
written to a temporary ``.npy``), warms up, times its share of the runs and
writes its samples back.  The samples of all rounds are pooled.  The first
round's outputs are checked against the numpy model's — a fast wrong answer
is not a result — and a framework that disagrees or fails is not run again.
The compile column is the first round's cold build.

``--same-process`` keeps the old method for comparison: every framework in
this process, timed interleaved in rounds of ``--block`` consecutive runs,
the first run of each block untimed.

Latency is the median of ``--repeat`` timed runs (default 50; 20 for
resnet18, whose runs are long enough; split over the rounds), ember's being ``GraphExecutor.run``
alone (inputs set once, outputs left in place).  Ratios are ember's time
over the peer's: below 1 means ember is faster.  Threads: ember,
onnxruntime and PyTorch use ``--threads`` (onnxruntime intra-op, one
inter-op thread; ``torch.set_num_threads``);
numpy's OpenBLAS keeps the thread count its environment gives it unless
``--blas-threads`` caps it, and the report says what it was.  No figure here is asserted anywhere: speed goals
are read from this table, never tested.

After the timing, ember's run is profiled (``GraphExecutor.profile``, in its
first round's process):
``--json`` keeps each workload's profile (per kernel: fused ops, median,
share, GFLOP/s, % of peak; and the time outside kernels), ``--profile``
prints its table too.  The report names the CPU model and its vector ISA,
and, with two or more threads, how long a cache line takes between the
first two CPUs and back (``ember.runtime.cores.round_trip_ns``), lowest
and highest of the measurements around each workload's runs (before them,
before each child's warm-up and after its timed runs, after them): on a 2-vCPU
virtual machine that tells whether the two vCPUs shared a core complex
(docs/runtime.md, "Threads"); a workload whose figures differ more than
2× gets a note.

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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
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
from ember.runtime.cores import cpu_pair, moved
from ember.runtime.cores import round_trip_ns as measure_round_trip
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
    round_trip_ns: tuple[float, ...] = ()
    """A cache line's round trip between the CPUs two threads run on
    (:func:`round_trip_ns`), in ns, each time it was measured around this
    workload's runs: before them, before each child's warm-up and after its
    timed runs, after them."""

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


def make_runner(
    framework: str,
    name: str,
    module: Any,
    params: dict[str, np.ndarray],
    x: np.ndarray,
    threads: int,
) -> Runner:
    """Build ``framework``'s runner of workload ``name`` (timed: its setup_s)."""
    if framework == "ember":
        return ember_runner(module, params, x)
    if framework == "numpy":
        return numpy_runner(name, params, x)
    if framework == "onnxruntime":
        return onnxruntime_runner(module, params, x, threads)
    if framework == "pytorch":
        return pytorch_runner(name, params, x, threads)
    raise EmberError(
        f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}"
    )


def missing_frameworks() -> dict[str, str]:
    """Why each optional peer that cannot run here cannot, by framework."""
    missing = {"onnxruntime": onnxruntime_missing(), "pytorch": torch_models.missing()}
    return {framework: why for framework, why in missing.items() if why}


def measure(name: str, runs: int, warmup: int, block: int, threads: int) -> Result:
    """Build, check and time every available framework on workload ``name``,
    all in this process (``--same-process``)."""
    module, params = workloads.get(name)
    x = input_for(module)
    problems = missing_frameworks()
    runners: list[Runner] = []
    for framework in FRAMEWORKS:
        if framework in problems:
            continue
        try:
            runners.append(make_runner(framework, name, module, params, x, threads))
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
    return _result(
        name,
        timings,
        compile_s,
        {r.framework: r.setup_s for r in runners},
        errors,
        problems,
        profile,
    )


def _result(
    name: str,
    timings: dict[str, Timing],
    compile_s: float | None,
    setup_s: dict[str, float],
    errors: dict[str, float],
    problems: dict[str, str],
    profile: dict[str, Any] | None,
) -> Result:
    return Result(
        workload=name,
        median_ms={
            f: (timings[f].median_ms if f in timings else None) for f in FRAMEWORKS
        },
        compile_s=compile_s,
        setup_s=setup_s,
        max_rel_error=errors,
        timings={f: t.summary() for f, t in timings.items()},
        problems=problems,
        profile=profile,
    )


# --------------------------------------------------------------------------
# One fresh process per framework (the default)
# --------------------------------------------------------------------------


@dataclass
class ChildSpec:
    """What one child process builds and times (``compare.py --child SPEC``)."""

    framework: str
    workload: str
    runs: int
    warmup: int
    threads: int
    blas_threads: int | None
    directory: str
    """Where the child writes ``result.json`` and ``output.npy``."""
    profile: bool = False
    """Whether ember's child profiles its executor after timing."""


@dataclass
class ChildResult:
    """What one child process reports back; ``output`` is its first run's."""

    framework: str
    setup_s: float = 0.0
    samples: list[float] = field(default_factory=list)
    output: np.ndarray | None = None
    profile: dict[str, Any] | None = None
    problem: str | None = None
    """Why the child has no figures (it failed); ``None`` when it has them."""
    profile_problem: str | None = None
    """Why ember's profile failed, its figures standing."""
    round_trip_ns: list[float] = field(default_factory=list)
    """The cores' round trip just before the warm-up and just after the
    timed runs."""


def run_child(spec: ChildSpec) -> None:
    """The child's side: build, run once (the output), warm up, time, profile.

    Writes ``result.json`` (and ``output.npy``) into ``spec.directory``; an
    error is written as the result's ``problem``, not raised.
    """
    from ember.runtime.threads import limit_blas_threads, set_num_threads

    set_num_threads(spec.threads)
    if spec.blas_threads is not None:
        limit_blas_threads(spec.blas_threads)
    directory = Path(spec.directory)
    result: dict[str, Any] = {"framework": spec.framework}
    try:
        module, params = workloads.get(spec.workload)
        x = input_for(module)
        runner = make_runner(
            spec.framework, spec.workload, module, params, x, spec.threads
        )
        result["setup_s"] = runner.setup_s
        runner.run()
        np.save(directory / "output.npy", np.asarray(runner.output()))
        trips = [round_trip_ns(spec.threads)]  # before the warm-up, which follows it
        for _ in range(spec.warmup):
            runner.run()
        samples = []
        for _ in range(spec.runs):
            start = time.perf_counter()
            runner.run()
            samples.append(time.perf_counter() - start)
        trips.append(round_trip_ns(spec.threads))
        result["samples"] = samples
        result["round_trip_ns"] = [trip for trip in trips if trip is not None]
        if spec.profile and runner.profile is not None:
            try:
                result["profile"] = runner.profile()
            except Exception as error:  # noqa: BLE001  (a note; the figures stand)
                result["profile_problem"] = f"profile: {type(error).__name__}: {error}"
    # As in measure: a failing framework becomes a note, not a lost table.
    except Exception as error:  # noqa: BLE001
        result["problem"] = f"{type(error).__name__}: {error}"
    (directory / "result.json").write_text(json.dumps(result))


def read_child(directory: Path, framework: str, stderr: str = "") -> ChildResult:
    """The parent's side: what the child left in ``directory``.

    A child that died before writing its result (a crash in native code)
    is reported with the last line of its ``stderr``.
    """
    try:
        data = json.loads((directory / "result.json").read_text())
    except (OSError, ValueError):
        last = stderr.strip().splitlines()[-1:] or ["no output"]
        return ChildResult(framework, problem=f"the child process died: {last[0]}")
    output_path = directory / "output.npy"
    return ChildResult(
        framework,
        setup_s=data.get("setup_s", 0.0),
        samples=data.get("samples", []),
        output=np.load(output_path) if output_path.exists() else None,
        profile=data.get("profile"),
        problem=data.get("problem"),
        profile_problem=data.get("profile_problem"),
        round_trip_ns=data.get("round_trip_ns", []),
    )


CHILD_TIMEOUT_S = 1800


def spawn_child(spec: ChildSpec) -> ChildResult:
    """Run ``spec`` in a fresh Python process and read back what it reports."""
    script = str(Path(__file__).resolve())
    command = [sys.executable, script, "--child", json.dumps(asdict(spec))]
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return ChildResult(
            spec.framework,
            problem=f"the child process took over {CHILD_TIMEOUT_S} s",
        )
    return read_child(Path(spec.directory), spec.framework, completed.stderr)


def split_runs(runs: int, rounds: int) -> list[int]:
    """``runs`` timed runs spread over ``rounds`` rounds (no round empty)."""
    rounds = min(rounds, runs)
    return [runs // rounds + (1 if i < runs % rounds else 0) for i in range(rounds)]


def measure_isolated(
    name: str,
    runs: int,
    warmup: int,
    threads: int,
    blas_threads: int | None,
    rounds: int,
    spawn: Callable[[ChildSpec], ChildResult] = spawn_child,
) -> Result:
    """Time every available framework on ``name``, each in its own fresh process.

    ``runs`` are split over ``rounds``; each round starts one process per
    framework, their order rotated round by round, and the samples of all
    rounds are pooled.  The first round's outputs are checked against
    numpy's; a framework that fails or disagrees is not run again.
    """
    problems = missing_frameworks()
    frameworks = [f for f in FRAMEWORKS if f not in problems]
    pooled: dict[str, list[ChildResult]] = {f: [] for f in frameworks}
    dropped: set[str] = set()
    errors: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="ember-compare-") as scratch:
        for index, count in enumerate(split_runs(runs, rounds)):
            shift = index % max(len(frameworks), 1)
            for framework in frameworks[shift:] + frameworks[:shift]:
                if framework in dropped:
                    continue
                directory = Path(scratch) / f"{framework}-{index}"
                directory.mkdir()
                spec = ChildSpec(
                    framework,
                    name,
                    count,
                    warmup,
                    threads,
                    blas_threads,
                    str(directory),
                    profile=framework == "ember" and index == 0,
                )
                child = spawn(spec)
                if child.problem is not None:
                    problems[framework] = child.problem
                    dropped.add(framework)
                    continue
                if child.profile_problem is not None:
                    problems[framework] = child.profile_problem
                pooled[framework].append(child)
            if index == 0:
                outputs = {
                    f: results[0].output
                    for f, results in pooled.items()
                    if results and results[0].output is not None
                }
                disagreements: dict[str, str] = {}
                errors = _compare_outputs(outputs, disagreements)
                problems.update(disagreements)
                for framework in disagreements:  # a wrong answer is not timed
                    pooled[framework].clear()
                    dropped.add(framework)
    return pool_rounds(name, pooled, errors, problems)


def pool_rounds(
    name: str,
    pooled: dict[str, list[ChildResult]],
    errors: dict[str, float],
    problems: dict[str, str],
) -> Result:
    """One workload's row from its children's results, round by round.

    Setup (ember: compile) is the first round's, a cold build in a fresh
    process; the latency samples of every round are pooled.
    """
    ok = {f: results for f, results in pooled.items() if results}
    timings = {
        f: Timing([s for child in results for s in child.samples])
        for f, results in ok.items()
    }
    ember_runs = ok.get("ember", [])
    result = _result(
        name,
        timings,
        ember_runs[0].setup_s if ember_runs else None,
        {f: results[0].setup_s for f, results in ok.items()},
        errors,
        problems,
        next((c.profile for c in ember_runs if c.profile is not None), None),
    )
    trips = tuple(trip for results in pooled.values() for c in results for trip in c.round_trip_ns)
    return replace(result, round_trip_ns=trips)


def _check_outputs(
    runners: Sequence[Runner], problems: dict[str, str]
) -> dict[str, float]:
    """Run each framework once; one whose output differs from the reference's
    is not timed (see :func:`_compare_outputs`)."""
    outputs: dict[str, np.ndarray] = {}
    for runner in runners:
        try:
            runner.run()
            outputs[runner.framework] = np.array(runner.output(), copy=True)
        except Exception as error:  # noqa: BLE001  (as in measure)
            problems[runner.framework] = f"{type(error).__name__}: {error}"
    return _compare_outputs(outputs, problems)


def _compare_outputs(
    outputs: dict[str, np.ndarray], problems: dict[str, str]
) -> dict[str, float]:
    """Each framework's relative error against the reference; a disagreement
    is a problem.

    The reference is numpy's output (hand-written, independent of ember, and
    checked against ember's interpreter by tests/test_benchmarks.py), so a
    wrong ember result is blamed on ember, not on its peers; ember's output
    is the reference only where the numpy model failed.
    """
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


def round_trip_ns(threads: int) -> float | None:
    """How long a cache line takes between the first two CPUs this process
    may use and back (:func:`ember.runtime.cores.round_trip_ns`), where two
    or more threads run; else None.  On a 2-vCPU virtual machine it tells
    the placements apart: both vCPUs on one core complex of an AMD EPYC
    (75-100 ns measured this way) or on two (~350 ns), where every kernel
    that hands data between its threads pays more (docs/runtime.md,
    "Threads")."""
    return measure_round_trip() if threads > 1 else None


def _ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _ns(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def _span(trips: Sequence[float]) -> str:
    low, high = _ns(min(trips)), _ns(max(trips))
    return low if low == high else f"{low}-{high}"


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
    trips = [(r.workload, r.round_trip_ns) for r in results if r.round_trip_ns]
    if trips:
        pair = cpu_pair()
        between = f"CPUs {pair[0]} and {pair[1]}" if pair else "two CPUs"
        text.append(
            f"cache-line round trip between {between}, ns, lowest-highest around each "
            "workload's runs: " + ", ".join(f"{w} {_span(t)}" for w, t in trips)
        )
    for r in results:
        if r.round_trip_ns and moved(min(r.round_trip_ns), max(r.round_trip_ns)):
            text.append(
                f"note: {r.workload}: the cores' round trip ranged from {_ns(min(r.round_trip_ns))} "
                f"to {_ns(max(r.round_trip_ns))} ns around its runs: its threads' CPUs moved "
                "closer or apart, and its times may mix both placements"
            )
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
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="fresh processes per framework and workload, the runs split "
        "among them and their samples pooled (default 2)",
    )
    parser.add_argument(
        "--same-process",
        action="store_true",
        help="time all frameworks in this one process, interleaved in blocks "
        "(the old method: a peer's spinning threads slow whoever runs next)",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in args.workloads if w not in workloads.NAMES]
    if unknown or not args.workloads:
        parser.error(
            f"unknown workload(s) {unknown}; choose from {', '.join(workloads.NAMES)}"
        )
    for option in ("repeat", "warmup", "block", "threads", "blas_threads", "rounds"):
        value = getattr(args, option)
        if value is not None and value < (0 if option == "warmup" else 1):
            parser.error(
                f"--{option.replace('_', '-')} must be {'>= 0' if option == 'warmup' else '>= 1'}, got {value}"
            )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child is not None:
        run_child(ChildSpec(**json.loads(args.child)))
        return 0
    from ember.runtime.threads import limit_blas_threads, set_num_threads

    set_num_threads(args.threads)
    if args.blas_threads is not None:
        limit_blas_threads(args.blas_threads)
    env = environment(args.threads)
    results = []
    for name in args.workloads:
        runs = args.repeat or DEFAULT_REPEAT_BY_WORKLOAD.get(name, DEFAULT_REPEAT)
        where = (
            "in this process"
            if args.same_process
            else f"in {args.rounds} fresh processes"
        )
        print(
            f"{name}: building and timing {runs} runs per framework {where} ...",
            file=sys.stderr,
            flush=True,
        )
        before = round_trip_ns(args.threads)
        if args.same_process:
            result = measure(name, runs, args.warmup, args.block, args.threads)
        else:
            result = measure_isolated(
                name, runs, args.warmup, args.threads, args.blas_threads, args.rounds
            )
        after = round_trip_ns(args.threads)
        trips = tuple(t for t in (before, *result.round_trip_ns, after) if t is not None)
        results.append(replace(result, round_trip_ns=trips))
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
