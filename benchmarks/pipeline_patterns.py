"""Throughput of the three ways to stream inputs through a pipeline.

Usage::

    python benchmarks/pipeline_patterns.py [--count 200] [--rounds 3]
        [--workloads tiny_pipe,resnet18]

For each workload (seeded weights from ``ember.testing.workloads``), split
into two stages of near-equal estimated cost (``split-graph{balance=2}``,
``pipeline.py``'s ``split_in_two``), placed on ``cpu:0`` and ``cpu:1``
(one core each, when the process may use two) and built for ``llvm``, it times ``--count`` inputs through each pattern of
``docs/pipeline.md``:

* ``map``: ``for outputs in pipe.map(inputs)``, one thread;
* ``threads``: a producer thread (``set_input`` + ``run(block=True)``) and
  a consumer (``get_output(block=True)``);
* ``submit``: ``pipe.submit(data)`` for every input, then each future's
  ``result()``.

Every pattern's outputs are checked against the others' before timing.
Patterns are timed interleaved in ``--rounds`` rounds, so that load drift
on a shared machine hits all alike; the medians are printed in inputs per
second, last as a markdown table for docs/pipeline.md.  Nothing here is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ember.pipeline import PipelineModule

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import split_in_two  # noqa: E402 - a sibling script

DISTINCT_INPUTS = 8
"""Inputs cycle through this many random arrays: enough to be realistic,
few enough that ResNet-18's inputs need no memory to speak of."""

Pattern = Callable[[PipelineModule, Sequence[np.ndarray]], list[np.ndarray]]


def by_map(pipe: PipelineModule, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [outputs[0].numpy() for outputs in pipe.map(inputs)]


def by_threads(
    pipe: PipelineModule, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    failures: list[BaseException] = []

    def produce() -> None:
        try:
            for data in inputs:
                pipe.set_input("data", data)
                pipe.run(block=True)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            failures.append(e)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    results = [pipe.get_output(timeout=600)[0].numpy() for _ in inputs]
    producer.join()
    if failures:
        raise failures[0]
    return results


def by_submit(
    pipe: PipelineModule, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    futures = [pipe.submit(data) for data in inputs]
    return [future.result(timeout=600)[0].numpy() for future in futures]


PATTERNS: dict[str, Pattern] = {
    "map": by_map,
    "threads": by_threads,
    "submit": by_submit,
}


def measure(name: str, count: int, rounds: int) -> dict[str, float]:
    """Median inputs/s of each pattern over ``rounds`` interleaved rounds."""
    start = time.perf_counter()
    lib = split_in_two(name)[0]
    print(f"{name}: built in {time.perf_counter() - start:.1f} s", flush=True)
    (spec,) = lib.inputs
    rng = np.random.default_rng(0)
    pool = [
        rng.uniform(-1, 1, spec.shape).astype(spec.dtype)
        for _ in range(DISTINCT_INPUTS)
    ]
    inputs = [pool[i % len(pool)] for i in range(count)]
    rates: dict[str, list[float]] = {pattern: [] for pattern in PATTERNS}
    with PipelineModule(lib) as pipe:
        reference = by_map(pipe, inputs[: len(pool)])  # also the warm-up
        for pattern, stream in PATTERNS.items():
            for got, expected in zip(stream(pipe, inputs[: len(pool)]), reference):
                np.testing.assert_array_equal(got, expected, err_msg=pattern)
        for _ in range(rounds):
            for pattern, stream in PATTERNS.items():
                start = time.perf_counter()
                stream(pipe, inputs)
                rates[pattern].append(count / (time.perf_counter() - start))
    medians = {pattern: statistics.median(r) for pattern, r in rates.items()}
    print(
        f"{name}: "
        + ", ".join(f"{pattern} {rate:.1f}" for pattern, rate in medians.items())
        + f" inputs/s ({count} inputs, {rounds} rounds)",
        flush=True,
    )
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200, help="inputs per timing")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument(
        "--workloads",
        default="tiny_pipe,resnet18",
        help="comma-separated workload names",
    )
    args = parser.parse_args(argv)
    if args.count < 1 or args.rounds < 1:
        parser.error("--count and --rounds must be at least 1")
    results = {
        name: measure(name, args.count, args.rounds)
        for name in args.workloads.split(",")
    }
    print()
    print("| workload | " + " | ".join(f"`{p}`" if p != "threads" else p for p in PATTERNS) + " |")
    print("| --- |" + " --- |" * len(PATTERNS))
    for name, medians in results.items():
        print(f"| {name} | " + " | ".join(f"{r:.0f}" for r in medians.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
