"""Latency of resnet18 and convbnrelu with fusion on/off and BLAS offload on/off.

Usage::

    python benchmarks/passes.py [--workloads convbnrelu,resnet18] [--repeat N]

Every variant of a workload is built from the same params and timed
interleaved in one process (rounds of ``GraphExecutor.run``, medians), and
its output is checked against the reference interpreter first.  The
variants differ only in the graph pipeline ``ember.build`` runs:

* ``fused``: the default (``simplify-inference,fold-constants,…,fuse-ops``);
* ``unfused``: the same without ``fuse-ops`` (one kernel per op);
* ``blas``: ``target="llvm -libs=blas"`` (dense/conv2d offloaded to BLAS
  after folding; fusion around the offloaded ops still happens).

Kernel counts are the number of ``graph.call_kernel`` in the entry function.
No figure here is asserted anywhere.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import numpy as np

import ember
from ember import compiler
from ember.backends.cpu import CpuBackend
from ember.runtime.module import signature_of
from ember.testing import workloads

UNFUSED = compiler.DEFAULT_GRAPH_PIPELINE.replace(",fuse-ops", "")


def kernel_count(module, params, pipeline: str) -> int:
    options = compiler.CompileOptions(graph_pipeline=pipeline)
    kernel = compiler.to_kernel(compiler.to_graph(module, params, options))
    main = next(op for op in kernel.ops if getattr(op, "sym_name", None) and op.sym_name.data == "main")
    return sum(1 for op in main.walk() if op.name == "graph.call_kernel")


def variants(module, params) -> dict[str, ember.runtime.Module]:
    signature = signature_of(module, "main")
    unfused = compiler.CompileOptions(graph_pipeline=UNFUSED)
    return {
        "fused": ember.build(module, target="llvm", params=params),
        "unfused": CpuBackend().build(module.clone(), signature, params, unfused),
        "blas": ember.build(module, target="llvm -libs=blas", params=params),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default="convbnrelu,resnet18")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    print("| workload | variant | kernels | median ms | min ms |")
    print("|---|---|---|---|---|")
    for name in args.workloads.split(","):
        module, params = workloads.get(name)
        x = np.random.default_rng(0).standard_normal(signature_of(module).inputs[0].shape).astype("float32")
        (reference,) = ember.interpret(module, "main", x, *params.values())
        executors = {}
        for variant, lib in variants(module, params).items():
            ex = ember.GraphExecutor(lib, ember.cpu(0))
            ex.set_input("data", x)
            ex.run()
            error = np.abs(ex.get_output(0).numpy() - reference).max() / np.abs(reference).max()
            assert error < 1e-4, f"{name}/{variant}: relative error {error}"
            executors[variant] = ex
        times: dict[str, list[float]] = {v: [] for v in executors}
        for _ in range(args.repeat):
            for variant, ex in executors.items():
                ex.run()  # untimed: the previous variant's threads settle
                start = time.perf_counter()
                ex.run()
                times[variant].append(time.perf_counter() - start)
        counts = {
            "fused": kernel_count(module, params, compiler.DEFAULT_GRAPH_PIPELINE),
            "unfused": kernel_count(module, params, UNFUSED),
        }
        for variant, samples in times.items():
            print(
                f"| {name} | {variant} | {counts.get(variant, '-')} | "
                f"{statistics.median(samples) * 1e3:.3f} | {min(samples) * 1e3:.3f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
