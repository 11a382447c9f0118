"""ONNX import of a ResNet-class model: import and build time, and latency
against onnxruntime on the same model.

The model is the ``resnet18`` workload (ResNet-18, 1×3×224×224) written as
ONNX by ``onnx_export`` (what ``torch.onnx.export`` writes for it: Conv,
BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool, Flatten, Gemm),
then imported back with ``ember.from_onnx`` and built for ``llvm``.  Both
runtimes get the same input; the outputs are compared before timing.
Timings are medians over interleaved blocks of runs (``compare.time_interleaved``).

    python benchmarks/onnx_import.py [--workload resnet18] [--runs 20] [--threads 2]

Speed goals are read from this table, never asserted in tests.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare  # noqa: E402
import onnx_export  # noqa: E402

import ember  # noqa: E402
from ember.testing import workloads  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="resnet18")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    module, params = workloads.get(args.workload)
    model = onnx_export.export(module, params)
    x = compare.input_for(module)
    input_name = model.graph.input[0].name

    start = time.perf_counter()
    imported, imported_params = ember.from_onnx(model)
    import_s = time.perf_counter() - start
    start = time.perf_counter()
    lib = ember.build(imported, target="llvm", params=imported_params, cache=False)
    build_s = time.perf_counter() - start
    executor = ember.GraphExecutor(lib, ember.cpu(0))
    executor.set_input(input_name, x)

    start = time.perf_counter()
    session = onnx_export.inference_session(model, args.threads)
    session_s = time.perf_counter() - start
    feed = {input_name: x}

    executor.run()
    ours = executor.get_output(0).numpy()
    (theirs,) = session.run(None, feed)
    error = compare.relative_error(ours, theirs)

    runners = [
        compare.Runner("ember", executor.run, lambda: ours, build_s),
        compare.Runner("onnxruntime", lambda: session.run(None, feed), lambda: theirs, session_s),
    ]
    timings = compare.time_interleaved(runners, runs=args.runs, warmup=3, block=5)
    print(f"model: {args.workload} exported to ONNX ({len(model.graph.node)} nodes), input {list(x.shape)}")
    print(f"ember.from_onnx: {import_s:.2f} s   ember.build(llvm): {build_s:.2f} s   "
          f"onnxruntime session: {session_s:.2f} s")
    print(f"max relative difference ember vs onnxruntime: {error:.2e}")
    for name, timing in timings.items():
        print(f"{name:12s} median {timing.median_ms:8.2f} ms   min {timing.min_ms:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
