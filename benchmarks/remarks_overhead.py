"""What optimization remarks cost: the graph passes and kernel lowering of a
workload timed with nobody listening, and with every remark collected.

Usage::

    python benchmarks/remarks_overhead.py [--workloads resnet18,convbnrelu] [--repeat 5]

For each workload (params bound, as ``ember.build`` does), the pipeline
``simplify-inference,fold-constants,canonicalize,cse,dce,fuse-ops,
lower-graph-to-kernel`` runs ``--repeat`` times in each mode, interleaved;
the table gives the median seconds and the ratio on/off and the number of
remarks.  With nobody listening a remark call is one context-variable
lookup, so "off" is what every build pays.  Nothing here is asserted by the
tests: timings are read, never tested.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ember
from ember.testing import workloads

PIPELINE = (
    "simplify-inference,fold-constants,canonicalize,cse,dce,fuse-ops,lower-graph-to-kernel"
)


def time_pipeline(name: str, repeat: int) -> tuple[float, float, int]:
    """Median seconds with remarks off and on, and the number of remarks."""
    module, params = workloads.get(name)
    bound = ember.bind_params(module, params)
    off: list[float] = []
    on: list[float] = []
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        ember.apply_passes(bound, PIPELINE)
        off.append(time.perf_counter() - start)
        start = time.perf_counter()
        _, records = ember.apply_passes(bound, PIPELINE, remarks=True)
        on.append(time.perf_counter() - start)
        count = len(records)
    return statistics.median(off), statistics.median(on), count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="convbnrelu,resnet18")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'workload':<12} {'off s':>8} {'on s':>8} {'on/off':>7} {'remarks':>8}")
    for name in args.workloads.split(","):
        off, on, count = time_pipeline(name, args.repeat)
        print(f"{name:<12} {off:8.3f} {on:8.3f} {on / off:7.3f} {count:8d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
