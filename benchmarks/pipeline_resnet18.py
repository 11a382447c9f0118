"""Throughput of a two-stage ResNet-18 pipeline against running its stages in sequence.

Usage::

    python benchmarks/pipeline_resnet18.py [--count 20] [--rounds 3] [--dtype float32]
        [--split-after N] [--json out.json]

What it does, in one process:

1. Splits ResNet-18 (``ember.testing.workloads``, seeded weights) in two
   stages of near-equal measured time, as ``pipeline.py`` does
   (``split-graph{balance=2 costs=…}`` on the network's profile with one
   kernel thread), or after the ``N``-th relu with ``--split-after``.
2. Places stage 0 on ``cpu:0`` and stage 1 on ``cpu:1``: one core each
   (worker threads pinned, kernels on one thread each) and builds the
   pipeline for ``llvm`` (the compile time is reported).
3. Checks the pipelined outputs against the sequential run's (equal: the
   same compiled stages) before timing anything.
4. Measures what the machine allows: both stages run side by side on
   their cores, without queues, against one after the other (other
   processes on a shared machine pull this below the ideal).
5. Times, interleaved in ``--rounds`` rounds so that load drift on a shared
   machine hits both alike: the *sequential* run (``run(sync=True)``: each
   input through stage 0 then stage 1 on one core), and the *pipelined*
   run (``--count`` inputs in flight through both workers).  Each stage's
   own time is measured too, to show how balanced the split is.

The ratio pipelined / sequential throughput is the pipeline's speed-up;
two balanced stages on two free cores approach 2x.  Nothing here is
asserted: speed goals are read from this report, never tested.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

import ember
from ember.passes.cost import total_cost
from ember.pipeline import PipelineConfig, PipelineModule, build, split_graph, stage_functions
from ember.runtime import threads
from ember.testing import workloads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import measured_split, module_seconds  # noqa: E402 - a sibling script


def stage_seconds(stage_module: ember.runtime.Module, repeat: int) -> float:
    """Median time of one run of a stage module on zero inputs."""
    return module_seconds(stage_module, repeat, statistics.median)


def parallel_headroom(
    stages: list[ember.runtime.Module], cores: list[int], repeat: int
) -> float:
    """How much faster the stages run side by side (one thread per core,
    no queues) than one after the other: the machine's own limit for the
    pipeline's speed-up right now.  On an idle two-core machine it is close
    to the ideal; other processes on the cores pull it down."""

    def loop(stage: ember.runtime.Module, core: int | None) -> None:
        if core is not None:
            os.sched_setaffinity(0, {core})
        stage_seconds(stage, repeat)

    start = time.perf_counter()
    for stage in stages:
        loop(stage, None)
    serial = time.perf_counter() - start
    workers = [
        threading.Thread(target=loop, args=(stage, core))
        for stage, core in zip(stages, cores)
    ]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return serial / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20, help="inputs per timed block")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16"))
    parser.add_argument(
        "--split-after", type=int, default=None, help="relu occurrence to cut after"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the figures here"
    )
    args = parser.parse_args(argv)

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        print("this benchmark needs two cores; the process may use only", cores)
        return 1
    threads.set_num_threads(1)  # one core per stage, in both modes

    module, params = workloads.get("resnet18", args.dtype)
    if args.split_after is not None:
        split, cut = split_graph(module, ["relu"], [args.split_after]), f"after relu #{args.split_after}"
    else:
        whole = ember.build(module, "llvm", params=params)
        split, cut = measured_split(module, params, whole), "balance=2 on measured kernel times"
    flops = [total_cost(stage.body.block.ops).flops for stage in stage_functions(split)]
    share = flops[0] / sum(flops)
    cfg = PipelineConfig.from_module(split)
    cfg.stages[0].dev, cfg.stages[1].dev = "cpu:0", "cpu:1"
    start = time.perf_counter()
    lib = build(cfg, params=params)
    compile_seconds = time.perf_counter() - start
    stage_times = [stage_seconds(stage.module, 10) for stage in lib.stages]
    headroom = parallel_headroom([s.module for s in lib.stages], cores[:2], 10)

    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype(args.dtype)
    sequential_rates, pipelined_rates = [], []
    with PipelineModule(lib) as pipe:
        pipe.set_input("data", data)
        pipe.run()
        pipelined_out = pipe.get_output(timeout=120)[0].numpy()
        pipe.run(sync=True)
        sequential_out = pipe.get_output()[0].numpy()
        np.testing.assert_array_equal(pipelined_out, sequential_out)
        for _ in range(args.rounds):
            # The sequential baseline runs in this thread: on one core too.
            os.sched_setaffinity(0, {cores[0]})
            sequential_rates.append(pipe.benchmark(args.count, sync=True).per_second)
            os.sched_setaffinity(0, set(cores))
            pipelined_rates.append(pipe.benchmark(args.count).per_second)
        pinned = pipe.pinned_cores

    sequential = statistics.median(sequential_rates)
    pipelined = statistics.median(pipelined_rates)
    report = {
        "dtype": args.dtype,
        "split": cut,
        "flop_share_stage0": share,
        "stage_ms": [t * 1e3 for t in stage_times],
        "pinned_cores": pinned,
        "compile_s": compile_seconds,
        "sequential_per_s": sequential,
        "pipelined_per_s": pipelined,
        "speedup": pipelined / sequential,
        "parallel_headroom": headroom,
        "rounds": {"sequential": sequential_rates, "pipelined": pipelined_rates},
    }
    print(
        f"resnet18 ({args.dtype}) split by {cut} (stage 0 holds {share:.0%} of the FLOPs)"
    )
    print(
        f"  stages: {report['stage_ms'][0]:.1f} ms on core {pinned[0]}, "
        f"{report['stage_ms'][1]:.1f} ms on core {pinned[1]}; compile {compile_seconds:.1f} s"
    )
    print(f"  sequential (one core): {sequential:7.2f} inputs/s")
    print(f"  pipelined (two cores): {pipelined:7.2f} inputs/s")
    print(
        f"  speed-up: {report['speedup']:.2f}x (ideal for these stages: "
        f"{sum(stage_times) / max(stage_times):.2f}x)"
    )
    print(
        f"  the same stages side by side without a pipeline: {headroom:.2f}x "
        "(what the cores allowed during this run)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
