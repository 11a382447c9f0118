"""Memory of ember against onnxruntime on ember.testing.workloads' networks.

Usage::

    python benchmarks/memory.py [--workloads mlp,resnet18] [--runs 5]
        [--threads 2] [--json out.json]

Every figure comes from a fresh process, so that nothing one measurement
allocates is counted in another (RSS is the resident set, VmRSS and the
peak VmHWM of ``/proc/self/status``, in MB of 10^6 bytes):

* ``import``: RSS after ``import ember`` / ``import onnxruntime``;
* ``peak``: the most RSS the process ever had: import, build (or load)
  and ``--runs`` runs;
* ``steady``: RSS after those runs, once the caller dropped its params;
* ``artifact``: bytes on disk: ember's exported directory, the ``.onnx``
  file for onnxruntime.

Four ways to get a runnable network are measured, each in its own process:
``ember build`` (a cold ``ember.build``, cache off, from IR text and an ``.npz`` of params, as
a user holding weights does), ``ember npz`` (the same build given ``np.load``'s
archive itself: the caller holds no copy of the weights, as onnxruntime,
which reads them from its file, holds none), ``ember load``
(``ember.load_module`` of the artifact that build exported: the deployment
path) and ``onnxruntime`` (``InferenceSession`` of the ONNX export of the
same graph and weights, all graph optimisations on).  The ratio columns are ember's figure over
onnxruntime's: below 1 means ember uses less.  The weights column is what
the params hold, the floor of any artifact.

Memory figures do not depend on the machine's load, unlike timings; still
nothing here is asserted by a test.  onnxruntime is optional
(``pip install -e .[bench]``): without it its rows read n/a.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

MB = 1e6
WAYS: tuple[str, ...] = ("ember-build", "ember-npz", "ember-load", "onnxruntime")
DEFAULT_WORKLOADS = ("mlp", "mlp_b64", "tiny_pipe", "convbnrelu", "resnet18")


def rss() -> dict[str, float]:
    """This process's current and peak resident set, in MB."""
    status = Path("/proc/self/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        key: int(fields[name].split()[0]) * 1024 / MB
        for key, name in (("now", "VmRSS"), ("peak", "VmHWM"))
    }


def directory_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# --------------------------------------------------------------------------
# One measurement: run in a fresh process (--child WAY DIR)
# --------------------------------------------------------------------------


def _child(way: str, work: Path, runs: int, threads: int) -> dict[str, Any]:
    import gc

    if way == "onnxruntime":
        import onnxruntime

        after_import = rss()["now"]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(
            str(work / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        import numpy as np

        (first,) = session.get_inputs()[:1]
        x = np.random.default_rng(0).standard_normal(first.shape).astype(np.float32)
        for _ in range(runs):
            session.run(None, {first.name: x})
        artifact = directory_bytes(work / "model.onnx")
    else:
        import ember

        after_import = rss()["now"]
        import numpy as np

        from ember.runtime.threads import set_num_threads

        set_num_threads(threads)

        # ember-load loads what ember-build exported
        exported = work / ("npz.ember" if way == "ember-npz" else "net.ember")
        if way == "ember-build":
            with np.load(work / "params.npz") as archive:
                params = {name: archive[name] for name in archive.files}
            lib = ember.build(  # cold: a cache entry would skip the compile
                (work / "module.mlir").read_text(), "llvm", params=params, cache=False
            )
            del params  # the caller lets go: what remains is ember's
            lib.export_library(exported)
        elif way == "ember-npz":
            with np.load(work / "params.npz") as archive:  # read as the build binds
                lib = ember.build(
                    (work / "module.mlir").read_text(), "llvm", params=archive, cache=False
                )
            lib.export_library(exported)
        else:
            lib = ember.load_module(exported)
        ex = ember.GraphExecutor(lib, ember.cpu(0))
        spec = lib.input_specs[0]
        x = np.random.default_rng(0).standard_normal(spec.shape).astype(spec.dtype)
        ex.set_input(spec.name, x)
        for _ in range(runs):
            ex.run()
        artifact = directory_bytes(exported)
    gc.collect()
    memory = rss()
    return {
        "import_mb": after_import,
        "peak_mb": memory["peak"],
        "steady_mb": memory["now"],
        "artifact_mb": artifact / MB,
    }


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def _prepare(name: str, work: Path) -> tuple[float, str | None]:
    """Write the workload's IR, params and ONNX model into ``work``; return
    the weights' MB and why onnxruntime cannot run (or None)."""
    import numpy as np

    import ember
    from ember.testing import workloads

    module, params = workloads.get(name)
    (work / "module.mlir").write_text(ember.to_text(module))
    np.savez(work / "params.npz", **params)
    weights = sum(p.nbytes for p in params.values()) / MB
    try:
        import onnxruntime  # noqa: F401

        from ember.testing.onnx_export import export

        (work / "model.onnx").write_bytes(export(module, params).SerializeToString())
    except ImportError as e:
        return weights, f"{e.name} is not installed (pip install -e .[bench])"
    return weights, None


def _measure(way: str, work: Path, runs: int, threads: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", way, str(work), "--runs", str(runs)]
    command += ["--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(workloads: list[str], runs: int, threads: int) -> list[dict[str, Any]]:
    rows = []
    for name in workloads:
        with tempfile.TemporaryDirectory(prefix=f"ember-memory-{name}-") as tmp:
            work = Path(tmp)
            weights, missing = _prepare(name, work)
            for way in WAYS:  # ember-build exports what ember-load loads
                if way == "onnxruntime" and missing:
                    result = {"error": missing}
                else:
                    result = _measure(way, work, runs, threads)
                rows.append({"workload": name, "way": way, "weights_mb": weights, **result})
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    keys = ("import_mb", "peak_mb", "steady_mb", "artifact_mb")
    header = (
        f"{'workload':<11} {'way':<12} {'weights':>8} {'import':>8} {'peak':>8} "
        f"{'steady':>8} {'artifact':>9}   ratios to onnxruntime (peak, steady, artifact)"
    )
    lines = [header, "-" * len(header)]
    peers = {r["workload"]: r for r in rows if r["way"] == "onnxruntime"}
    for row in rows:
        cells = [f"{row['workload']:<11} {row['way']:<12} {row['weights_mb']:>8.1f}"]
        if "error" in row:
            lines.append(f"{cells[0]} n/a: {row['error']}")
            continue
        cells += [f"{row[k]:>{9 if k == 'artifact_mb' else 8}.1f}" for k in keys]
        peer = peers.get(row["workload"], {})
        if row["way"] != "onnxruntime" and "error" not in peer and peer:
            ratios = [row[k] / peer[k] for k in ("peak_mb", "steady_mb", "artifact_mb")]
            cells.append("   " + ", ".join(f"{r:.2f}" for r in ratios))
        lines.append(" ".join(cells))
    lines.append("MB = 10^6 bytes; RSS from /proc/self/status, each row a fresh process.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument("--child", nargs=2, metavar=("WAY", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        way, work = args.child
        print(json.dumps(_child(way, Path(work), args.runs, args.threads)))
        return 0
    from ember.testing import workloads as known

    names = [n for n in args.workloads.split(",") if n]
    unknown = [n for n in names if n not in known.NAMES]
    if unknown:
        print(f"memory.py: unknown workload(s) {', '.join(unknown)}; known: {', '.join(known.NAMES)}")
        return 1
    rows = measure(names, args.runs, args.threads)
    print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
