"""Pipelines against the same network run sequentially, with the hand-off cost.

Usage::

    python benchmarks/pipeline.py [--count-tiny 2000] [--count-resnet 20]
        [--rounds 3] [--workloads tiny_pipe,resnet18]

For each workload (seeded weights from ``ember.testing.workloads``) it
builds, for ``llvm``:

* the whole network, run by a ``GraphExecutor`` one input after another
  with the kernels' parallel loops on every core the process may use (the
  *sequential* baseline: what a user runs without a pipeline);
* the network split in two by ``split-graph{balance=2 costs=…}``: stages
  of near-equal *measured* time, from the whole network's profile taken
  with the kernel threads a stage will have (one each on two cores; see
  docs/pipeline.md, "Balancing the stages on measured times"), stage 0 on
  ``cpu:0`` and stage 1 on ``cpu:1`` when the process may use two cores, run by a ``PipelineModule`` with ``map``:
  *pipelined (threads)* forces every input through the stage threads
  (``inline=False``); *pipelined (overlapped lane)* forces every input
  overlapped on ``map``'s lane (``inline=False, lane=True``: a window of
  inputs per native call, each stage on a libgomp thread of its own, the
  hand-off a flag between them); *pipelined (auto)* lets the executor
  choose its plan from the times it measures (``inline=None``, the
  default: overlapped on the lane, or back to back in the caller's thread
  with the kernels on every core) and says which plan it chose, the two
  measured times per input, how many inputs ran overlapped on the lane
  and back to back, and in how many native calls of the lane — a
  back-to-back win is the fallback's, not the pipeline's;
* *ray*: the same split through ``RayPipelineExecutor``, each stage an
  actor of a local one-node Ray started here (127.0.0.1 only), when ``ray``
  is installed (``ember[distributed]``), else the line says why not.  Its
  rounds come after the other modes', with the cluster started for them
  and shut down after (a raylet beside the other modes would take a core).

Every mode streams the same inputs and copies each output out, and its
outputs are checked against the sequential run's before timing.  Modes are
timed interleaved in ``--rounds`` rounds (load drift on a shared machine
hits all alike); the table gives medians: inputs/s, the ratio to
sequential, and the per-input overhead — the time per input beyond the
compute it needs (the whole network's kernel time for sequential; the
slower stage's for a pipeline, whose stages overlap), each stage timed on
its own with its buffers preallocated — and the process CPU time per input
(all threads), steadier than wall time on a shared machine.  Nothing here
is asserted anywhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import ModuleOp

import ember
from ember.pipeline import (
    PipelineConfig,
    PipelineModule,
    build,
    op_costs,
    save_op_costs,
)
from ember.pipeline.build import PipelineLibrary
from ember.runtime import Module, threads
from ember.testing import workloads

if TYPE_CHECKING:
    from ember.pipeline.ray_executor import RayPipelineExecutor

DISTINCT_INPUTS = 8
"""Inputs cycle through this many random arrays."""

Stream = Callable[[Sequence[np.ndarray]], list[np.ndarray]]


@dataclass
class Mode:
    name: str
    stream: Stream
    compute_seconds: float
    """The compute one input needs on the mode's critical path."""
    note: Callable[[], str] = lambda: ""
    rates: list[float] | None = None
    cpu_seconds: list[float] | None = None
    """Process CPU time per input (all threads): steadier than wall time
    on a shared machine, and what the hand-off costs in work."""


def module_seconds(
    module: Module, repeat: int, summary: Callable[[list[float]], float] = min
) -> float:
    """``summary`` (the fastest, by default) of ``repeat`` runs of ``module``
    on zero inputs, buffers preallocated: its compute, without what a loaded
    machine adds."""
    inputs = [ember.nd.empty(s.shape, s.dtype) for s in module.input_specs]
    for array in inputs:
        array.copyfrom(np.zeros(array.shape, array.dtype))
    outputs = [ember.nd.empty(s.shape, s.dtype) for s in module.output_specs]
    module.run(inputs, outputs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        module.run(inputs, outputs)
        times.append(time.perf_counter() - start)
    return summary(times)


def stage_threads() -> int:
    """Kernel threads each of two stages gets: one when each has its own
    core (pinned), else half the cores (``PipelineModule.kernel_threads``)."""
    cores = threads.available_cores()
    return 1 if cores >= 2 else max(1, cores // 2)


def measured_split(
    module: ModuleOp, params: dict[str, np.ndarray], whole: Module, repeat: int = 10
) -> ModuleOp:
    """``module`` cut in two by ``split-graph{balance=2 costs=…}`` on the
    kernel times of ``whole`` (its build with ``params``), profiled with the
    threads a stage will have: docs/pipeline.md's profile -> costs -> split."""
    executor = ember.GraphExecutor(whole)
    for spec in whole.input_specs:
        executor.set_input(spec.name, np.zeros(spec.shape, spec.dtype))
    with threads.limit_threads(stage_threads()):
        profile = executor.profile(repeat=repeat)
    with tempfile.TemporaryDirectory() as directory:
        costs = Path(directory) / "costs.json"
        save_op_costs(costs, op_costs(profile, module, params=params))
        return ember.apply_passes(module, f"split-graph{{balance=2 costs={costs}}}")


def split_in_two(
    name: str, whole: Module | None = None
) -> tuple[PipelineLibrary, list[str], str]:
    """``name`` split in two, on two cores when there are two, and how it
    was cut: by ``balance=2`` on the measured times of ``whole`` (the
    network's build) when given, else on the static estimate."""
    module, params = workloads.get(name)
    if whole is not None:
        split = measured_split(module, params, whole)
        how = f"balance=2 on measured kernel times ({stage_threads()} thread(s) per stage)"
    else:
        split = ember.apply_passes(module, "split-graph{balance=2}")
        how = "balance=2 on estimated FLOPs"
    cfg = PipelineConfig.from_module(split)
    if len(os.sched_getaffinity(0)) >= 2:
        cfg.stages[0].dev, cfg.stages[1].dev = "cpu:0", "cpu:1"
    return build(cfg, params=params), [str(s.dev) for s in cfg.stages], how


def ray_pipeline(lib: PipelineLibrary) -> tuple[RayPipelineExecutor | None, str]:
    """The Ray executor on a local one-node Ray (loopback only, a CPU per
    stage), or why there is none."""
    if importlib.util.find_spec("ray") is None:
        return None, "ray: not installed (pip install 'ember[distributed]')"
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # 127.0.0.1 only
    import ray

    from ember.pipeline import RayPipelineExecutor

    if not ray.is_initialized():
        ray.init(
            num_cpus=len(lib.stages),
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    return RayPipelineExecutor(lib), ""


def piped(pipe: PipelineModule) -> Stream:
    return lambda inputs: [outputs[0].numpy() for outputs in pipe.map(inputs)]


Row = tuple[str, float, float, float, float, str]


def measure(name: str, count: int, rounds: int, with_ray: bool = True) -> list[Row]:
    module, params = workloads.get(name)
    start = time.perf_counter()
    whole = ember.build(module, "llvm", params=params)
    lib, devices, how = split_in_two(name, whole)
    print(
        f"{name}: built and split in {time.perf_counter() - start:.1f} s; cut by {how}; "
        f"stages on {', '.join(devices)}"
    )
    threaded = PipelineModule(lib, inline=False)
    lane = PipelineModule(lib, inline=False, lane=True)
    auto = PipelineModule(lib)
    repeat = max(5, min(200, count))
    with every_core():
        whole_seconds = module_seconds(whole, repeat)
    with threads.limit_threads(threaded.kernel_threads):  # as the stages run
        stage_seconds = [module_seconds(stage.module, repeat) for stage in lib.stages]
    print(
        f"  compute per input: whole {whole_seconds * 1e6:.1f} us; stages "
        + ", ".join(f"{t * 1e6:.1f} us" for t in stage_seconds)
    )
    (spec,) = lib.inputs
    rng = np.random.default_rng(0)
    pool = [rng.uniform(-1, 1, spec.shape).astype(spec.dtype) for _ in range(DISTINCT_INPUTS)]
    inputs = [pool[i % len(pool)] for i in range(count)]

    executor = ember.GraphExecutor(whole, ember.cpu(0))

    def sequential(batch: Sequence[np.ndarray]) -> list[np.ndarray]:
        results = []
        for data in batch:
            executor.set_input(spec.name, data)
            executor.run()
            results.append(executor.get_output(0).numpy())
        return results

    auto_inputs = len(pool) + rounds * count
    modes = [
        Mode("sequential", sequential, whole_seconds),
        Mode("pipelined (threads)", piped(threaded), max(stage_seconds)),
        Mode(
            "pipelined (overlapped lane)",
            piped(lane),
            max(stage_seconds),
            lambda: f"{lane.lane_threads} threads, one per stage",
        ),
        Mode(
            "pipelined (auto)",
            piped(auto),
            max(stage_seconds),
            lambda: (
                f"plan: {auto.plan} (measured per input: overlapped "
                f"{auto.plan_seconds[0] * 1e6:.1f} us, back to back "
                f"{auto.plan_seconds[1] * 1e6:.1f} us); of {auto_inputs} inputs "
                f"{auto.overlapped_lane_runs} overlapped on map's lane, {auto.inline_runs} "
                f"back to back in the caller's thread; {auto.lane_windows} native calls "
                "of the lane"
            ),
        ),
    ]
    try:
        # The pipelines start their workers here, which shares the cores out
        # among the stages' kernels (PipelineModule.kernel_threads) while
        # they are open: the sequential baseline gets every core back below.
        reference = sequential(pool)
        for mode in modes[1:]:
            _check(mode, pool, reference)
        _time_rounds(modes, inputs, rounds, every_core_for=modes[0])
    finally:
        for pipe in (threaded, lane, auto):
            pipe.close()
    ray, why_not = ray_pipeline(lib) if with_ray else (None, "ray: skipped (--no-ray)")
    if ray is not None:
        # Timed in rounds of its own, after the others, the cluster down
        # before and after: its raylet and workers keep a core busy, and the
        # other modes would be timed beside them.
        modes.append(Mode("ray", piped(ray), max(stage_seconds)))
        try:
            _check(modes[-1], pool, reference)
            _time_rounds(modes[-1:], inputs, rounds)
        finally:
            ray.close()
            import ray as ray_module

            ray_module.shutdown()
    baseline = statistics.median(modes[0].rates or [1.0])
    rows = []
    for mode in modes:
        rate = statistics.median(mode.rates or [0.0])
        overhead = 1e6 * (1 / rate - mode.compute_seconds)
        cpu = 1e6 * statistics.median(mode.cpu_seconds or [0.0])
        rows.append((mode.name, rate, rate / baseline, overhead, cpu, mode.note()))
    if ray is None:
        rows.append((why_not, math.nan, math.nan, math.nan, math.nan, ""))
    return rows


def _check(mode: Mode, pool: Sequence[np.ndarray], reference: Sequence[np.ndarray]) -> None:
    """``mode``'s outputs for ``pool`` are the sequential run's."""
    for got, expected in zip(mode.stream(pool), reference):
        # A cut changes what fuses, so float32 sums may round apart: the
        # tolerance scales with the output's largest magnitude.
        scale = float(np.max(np.abs(expected)))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * scale, err_msg=mode.name)


def _time_rounds(
    modes: Sequence[Mode],
    inputs: Sequence[np.ndarray],
    rounds: int,
    every_core_for: Mode | None = None,
) -> None:
    """``rounds`` rounds of ``modes``, interleaved (load drift on a shared
    machine hits all alike); ``every_core_for`` runs with its kernels on
    every core (the sequential baseline while pipelines are open)."""
    for mode in modes:
        mode.rates, mode.cpu_seconds = [], []
    for _ in range(rounds):
        for mode in modes:
            if mode is every_core_for:
                with every_core():
                    took, cpu = _timed(mode.stream, inputs)
            else:
                took, cpu = _timed(mode.stream, inputs)
            mode.rates.append(len(inputs) / took)  # type: ignore[union-attr]
            mode.cpu_seconds.append(cpu / len(inputs))  # type: ignore[union-attr]


@contextmanager
def every_core() -> Iterator[None]:
    """Kernels on every core the process may use (open pipelines share them
    out among their stages), as a program without a pipeline runs them."""
    previous = threads.num_threads()
    threads.set_num_threads(threads.available_cores())
    try:
        yield
    finally:
        threads.set_num_threads(previous)


def _timed(stream: Stream, inputs: Sequence[np.ndarray]) -> tuple[float, float]:
    """Wall-clock and process CPU seconds ``stream(inputs)`` took."""
    start, cpu = time.perf_counter(), time.process_time()
    stream(inputs)
    return time.perf_counter() - start, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count-tiny", type=int, default=2000, help="tiny_pipe inputs per timing")
    parser.add_argument("--count-resnet", type=int, default=20, help="resnet18 inputs per timing")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--workloads", default="tiny_pipe,resnet18", help="comma-separated names")
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray row")
    args = parser.parse_args(argv)
    if min(args.count_tiny, args.count_resnet, args.rounds) < 1:
        parser.error("--count-tiny, --count-resnet and --rounds must be at least 1")
    results = {}
    for name in args.workloads.split(","):
        count = args.count_resnet if name == "resnet18" else args.count_tiny
        results[name] = measure(name, count, args.rounds, not args.no_ray)
    print()
    print(
        "| workload | mode | inputs/s | x sequential | overhead/input (us) "
        "| CPU/input (us) | path |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, rows in results.items():
        for mode, rate, ratio, overhead, cpu, note in rows:
            if math.isnan(rate):  # the ray line when there is no ray
                print(f"| {name} | {mode} | | | | | |")
                continue
            print(
                f"| {name} | {mode} | {rate:.1f} | {ratio:.2f} | {overhead:.1f} "
                f"| {cpu:.1f} | {note} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
