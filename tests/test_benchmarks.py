"""Smoke tests of ``benchmarks/``: the peers compute what ember computes.

The numpy models and the ONNX export are only worth timing if they compute
the workloads' function: each is compared with the reference interpreter
(``ember.interpret``) on the same seeded weights.  The compare script is run
end to end on the smallest workload.  Nothing here asserts a timing — speed
goals are read from the benchmark's table, never tested.

onnxruntime is optional (the ``bench`` extra): its tests skip with the
install command when it is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.errors import EmberError
from ember.testing import workloads

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import compare
import numpy_models
import onnx_export
import torch_models

RTOL = 1e-4  # of the output's largest magnitude: float32 sums in another order

# resnet18 takes ~2 s here (interpreter + numpy); the rest milliseconds.
WORKLOADS = ("mlp", "mlp_b64", "tiny_pipe", "convbnrelu", "resnet18")


def _reference(
    name: str,
) -> tuple[object, dict[str, np.ndarray], np.ndarray, np.ndarray]:
    module, params = workloads.get(name)
    x = compare.input_for(module)
    expected = ember.interpret(module, "main", x, *params.values())[0]
    return module, params, x, expected


def _assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    assert actual.dtype == np.float32
    assert compare.relative_error(actual, expected) < RTOL


@pytest.mark.parametrize("name", WORKLOADS)
def test_numpy_model_matches_interpreter(name: str) -> None:
    _, params, x, expected = _reference(name)
    _assert_close(numpy_models.prepare(name, params)(x), expected)


def test_numpy_model_rejects_unknown_workload_and_missing_params() -> None:
    with pytest.raises(EmberError, match="no numpy model for workload 'vgg'"):
        numpy_models.prepare("vgg", {})
    _, params = workloads.get("tiny_pipe")
    del params["dweight"]
    with pytest.raises(EmberError, match="params has no 'dweight'"):
        numpy_models.prepare("tiny_pipe", params)


def test_numpy_conv_strided_1x1_and_maxpool_match_interpreter() -> None:
    """The resnet18 paths (stride 2, 1x1 projection, padded max) on odd sizes."""
    module = ember.parse(
        """
        func.func @main(%x: tensor<1x4x9x9xf32>, %w: tensor<6x4x1x1xf32>) -> tensor<1x6x3x3xf32> {
          %0 = graph.conv2d %x, %w {strides = [2, 2]} : (tensor<1x4x9x9xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x5x5xf32>
          %1 = graph.max_pool2d %0 {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x6x5x5xf32>) -> tensor<1x6x3x3xf32>
          func.return %1 : tensor<1x6x3x3xf32>
        }
        """
    )
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
    w = rng.standard_normal((6, 4, 1, 1)).astype(np.float32)
    expected = ember.interpret(module, "main", x, w)[0]
    conv = numpy_models.fold_conv_bn({"w": w}, "w", None, stride=2)
    _assert_close(numpy_models.max_pool_3x3_s2(conv(x, relu=False)), expected)


def _session(module: object, params: dict[str, np.ndarray]) -> object:
    pytest.importorskip(
        "onnx", reason=f"onnx is not installed; {onnx_export.INSTALL_HINT}"
    )
    pytest.importorskip(
        "onnxruntime",
        reason=f"onnxruntime is not installed; {onnx_export.INSTALL_HINT}",
    )
    return onnx_export.inference_session(onnx_export.export(module, params), threads=1)


@pytest.mark.parametrize("name", WORKLOADS)
def test_onnx_export_matches_interpreter(name: str) -> None:
    module, params, x, expected = _reference(name)
    session = _session(module, params)
    (actual,) = session.run(None, {"data": x})
    _assert_close(actual, expected)


def test_onnx_export_of_bias_add_on_nchw_and_free_params() -> None:
    """bias_add along axis 1 of a 4-D tensor, and weights left as inputs."""
    module = ember.parse(
        """
        func.func @main(%x: tensor<2x3x4x5xf32>, %b: tensor<3xf32>, %w: tensor<7x60xf32>) -> tensor<2x7xf32> {
          %0 = graph.bias_add %x, %b : (tensor<2x3x4x5xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
          %1 = graph.sigmoid %0 : tensor<2x3x4x5xf32>
          %2 = graph.batch_flatten %1 : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
          %3 = graph.dense %2, %w : (tensor<2x60xf32>, tensor<7x60xf32>) -> tensor<2x7xf32>
          func.return %3 : tensor<2x7xf32>
        }
        """
    )
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    w = rng.standard_normal((7, 60)).astype(np.float32)
    session = _session(module, {"b": b})
    assert [i.name for i in session.get_inputs()] == ["x", "w"]
    (actual,) = session.run(None, {"x": x, "w": w})
    _assert_close(actual, ember.interpret(module, "main", x, b, w)[0])


def test_onnx_export_names_unsupported_op_and_unknown_param() -> None:
    pytest.importorskip(
        "onnx", reason=f"onnx is not installed; {onnx_export.INSTALL_HINT}"
    )
    module = ember.parse(
        """
        func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
          %0 = graph.transpose %x {axes = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
          func.return %0 : tensor<3x2xf32>
        }
        """
    )
    with pytest.raises(
        onnx_export.OnnxExportError, match="cannot export 'graph.transpose'"
    ):
        onnx_export.export(module)
    mlp, params = workloads.get("mlp")
    with pytest.raises(
        onnx_export.OnnxExportError, match=r"\['w9'\] are not arguments of @main"
    ):
        onnx_export.export(mlp, {**params, "w9": params["w0"]})


def _logging_runner(framework: str, log: list[str]) -> compare.Runner:
    return compare.Runner(
        framework, lambda: log.append(framework), lambda: np.zeros(1), 0.0
    )


def test_time_interleaved_counts_runs_and_rotates_order() -> None:
    log: list[str] = []
    runners = [_logging_runner(f, log) for f in ("a", "b", "c")]
    timings = compare.time_interleaved(runners, runs=7, warmup=2, block=3)
    assert {f: len(t.samples) for f, t in timings.items()} == {"a": 7, "b": 7, "c": 7}
    # 2 warm-up runs each, then 3 rounds (3 + 3 + 1 timed) with one untimed run per block.
    assert log[:6] == ["a", "a", "b", "b", "c", "c"]
    blocks = log[6:]
    assert len(blocks) == 3 * 7 + 3 * 3
    first_of_round = [blocks[0], blocks[4 * 3], blocks[8 * 3]]
    assert first_of_round == ["a", "b", "c"]


def test_the_child_protocol_round_trips_a_result(tmp_path: Path) -> None:
    """`compare.py --child SPEC` writes what the parent reads back: the
    samples, the setup time, the first run's output and (two threads) the
    cores' round trip before and after the timed runs."""
    from ember.runtime.cores import cpu_pair

    spec = compare.ChildSpec("numpy", "tiny_pipe", 3, 1, 2, None, str(tmp_path))
    assert compare.main(["--child", json.dumps(asdict(spec))]) == 0
    child = compare.read_child(Path(spec.directory), "numpy")
    assert child.problem is None and len(child.samples) == 3 and child.setup_s > 0
    assert len(child.round_trip_ns) == (0 if cpu_pair() is None else 2)
    _module, _params, _x, expected = _reference("tiny_pipe")
    assert child.output is not None
    _assert_close(child.output, expected)
    # A failure in the child comes back as the result's problem, not a crash.
    compare.run_child(compare.ChildSpec("mxnet", "tiny_pipe", 1, 0, 1, None, str(tmp_path)))
    failed = compare.read_child(tmp_path, "mxnet")
    assert "unknown framework 'mxnet'" in (failed.problem or "")
    # A child that died before writing its result is named with its last words.
    empty = tmp_path / "empty"
    empty.mkdir()
    died = compare.read_child(empty, "ember", "lots\nSegmentation fault\n")
    assert died.problem == "the child process died: Segmentation fault"


def test_split_runs_spreads_runs_over_rounds() -> None:
    assert compare.split_runs(5, 3) == [2, 2, 1]
    assert compare.split_runs(1, 2) == [1]


def test_isolated_rounds_are_pooled_and_a_wrong_answer_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each round starts every framework afresh, in rotated order; samples
    of all rounds are pooled; a framework whose first output differs from
    numpy's is not run again.  The children run in this process here, their
    protocol unchanged (files in, files out)."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    missing = {"pytorch": "x", "onnxruntime": "y"}
    monkeypatch.setattr(compare, "missing_frameworks", lambda: dict(missing))
    log: list[tuple[str, int]] = []

    def spawn(spec: compare.ChildSpec) -> compare.ChildResult:
        compare.run_child(spec)
        log.append((spec.framework, spec.runs))
        if spec.framework == "ember":  # damage ember's answer
            output = Path(spec.directory) / "output.npy"
            np.save(output, np.load(output) + 1.0)
        return compare.read_child(Path(spec.directory), spec.framework)

    result = compare.measure_isolated("tiny_pipe", 5, 0, 1, None, 3, spawn=spawn)
    assert log == [("ember", 2), ("numpy", 2), ("numpy", 2), ("numpy", 1)]
    assert result.timings["numpy"]["runs"] == 5
    assert "ember" not in result.timings and result.median_ms["ember"] is None
    assert result.problems["ember"].startswith("output differs from numpy's")

    # Real child processes: round 2 starts with the next framework.
    log.clear()

    def spawn_logged(spec: compare.ChildSpec) -> compare.ChildResult:
        log.append((spec.framework, spec.runs))
        return compare.spawn_child(spec)

    result = compare.measure_isolated("tiny_pipe", 3, 0, 1, None, 2, spawn=spawn_logged)
    assert log == [("ember", 2), ("numpy", 2), ("numpy", 1), ("ember", 1)]
    assert {f: t["runs"] for f, t in result.timings.items()} == {"ember": 3, "numpy": 3}
    assert result.problems == missing
    assert result.compile_s is not None and result.compile_s > 0
    assert result.profile is not None
    assert result.max_rel_error["ember"] <= compare.AGREEMENT_RTOL


def test_same_process_keeps_the_interleaved_method(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    argv = ["--workloads", "tiny_pipe", "--repeat", "2", "--warmup", "0"]
    assert compare.main([*argv, "--same-process"]) == 0
    captured = capsys.readouterr()
    assert "in this process" in captured.err
    assert any(line.startswith("| tiny_pipe") for line in captured.out.splitlines())


def test_parse_args_rejects_unknown_workload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        compare.parse_args(["--workloads", "mlp,vgg"])
    assert "unknown workload(s) ['vgg']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        compare.parse_args(["--blas-threads", "0"])
    assert "--blas-threads must be >= 1, got 0" in capsys.readouterr().err


def test_missing_onnxruntime_shows_na_and_install_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))  # the profile's peak
    monkeypatch.setattr(
        compare, "onnxruntime_missing", lambda: "onnxruntime is not installed; x"
    )
    assert (
        compare.main(["--workloads", "tiny_pipe", "--repeat", "2", "--warmup", "0"])
        == 0
    )
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| tiny_pipe"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "n/a" and cells[6] == "n/a"  # onnxruntime ms, ember/ort
    assert float(cells[2]) > 0 and cells[5].endswith("x")
    assert "note: tiny_pipe: onnxruntime: onnxruntime is not installed" in out


def test_the_table_has_a_pytorch_column_and_names_the_isa() -> None:
    """Fake rows: the pytorch peer's figures land in their own columns."""
    result = compare.Result(
        workload="mlp",
        median_ms={"ember": 1.0, "numpy": 2.0, "onnxruntime": None, "pytorch": 4.0},
        compile_s=0.5,
        setup_s={},
        max_rel_error={},
        timings={},
        problems={"onnxruntime": "onnxruntime is not installed; x"},
    )
    env = {
        "machine": "Some CPU (AVX2), 2 cores available",
        "isa": ["avx2", "fma"],
        "versions": {"python": "3"},
        "threads": {"ember": 2, "pytorch": 2},
        "load_average": (0.0, 0.0, 0.0),
    }
    lines = compare.format_table([result], env).splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    cells = dict(zip(header, (c.strip() for c in lines[2].strip("|").split("|"))))
    assert cells["pytorch ms"] == "4.000" and cells["ember/torch"] == "0.25x"
    assert cells["onnxruntime ms"] == "n/a" and cells["ember/ort"] == "n/a"
    assert any("ISA: avx2, fma" in line for line in lines)


def test_the_table_gives_the_cores_round_trip_and_notes_a_move() -> None:
    """Each workload's round trips (lowest-highest) are one line; a
    workload whose CPUs moved apart (or closer) around its runs gets a note."""

    def row(workload: str, trips: tuple[float, ...]) -> compare.Result:
        return compare.Result(
            workload=workload,
            median_ms={"ember": 1.0, "numpy": 2.0, "onnxruntime": 2.0, "pytorch": 2.0},
            compile_s=0.5,
            setup_s={},
            max_rel_error={},
            timings={},
            problems={},
            round_trip_ns=trips,
        )

    env = {
        "machine": "Some CPU, 2 cores available",
        "isa": ["avx2"],
        "versions": {"python": "3"},
        "threads": {"ember": 2},
        "load_average": (0.0, 0.0, 0.0),
    }
    rows = [row("mlp", (81.2, 90.0, 85.0)), row("tiny_pipe", (80.4,)), row("resnet18", (82.0, 351.4, 90.0))]
    text = compare.format_table(rows, env)
    assert "around each workload's runs: mlp 81-90, tiny_pipe 80, resnet18 82-351" in text
    notes = [line for line in text.splitlines() if "round trip ranged" in line]
    assert notes == [
        "note: resnet18: the cores' round trip ranged from 82 to 351 ns around its runs: "
        "its threads' CPUs moved closer or apart, and its times may mix both placements"
    ]
    one_thread = compare.format_table([row("mlp", ())], env)
    assert "round trip" not in one_thread
    assert compare.round_trip_ns(1) is None


def test_a_missing_torch_reads_na_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert "pip install -e .[bench]" in (torch_models.missing() or "")


def test_compare_script_end_to_end(tmp_path: Path) -> None:
    report = tmp_path / "out.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "compare.py"),
            "--workloads",
            "mlp",
            "--repeat",
            "3",
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the assertion below shows stderr
        env={**os.environ, "EMBER_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == [
        "workload",
        "ember ms",
        "numpy ms",
        "onnxruntime ms",
        "pytorch ms",
        "ember/numpy",
        "ember/ort",
        "ember/torch",
        "compile s",
    ]
    assert any(line.startswith("| mlp ") for line in lines)
    (result,) = json.loads(report.read_text(encoding="utf-8"))["results"]
    assert result["workload"] == "mlp"
    assert "ember" not in result["problems"], result["problems"]
    assert result["timings"]["ember"]["runs"] == 3
    assert result["ratios"]["numpy"] == pytest.approx(
        result["median_ms"]["ember"] / result["median_ms"]["numpy"]
    )
    assert result["compile_s"] > 0
    # The JSON keeps ember's profile: every kernel call, keyed by its name.
    kernels = result["profile"]["kernels"]
    assert list(kernels) == ["fused_dense_bias_add_relu", "fused_dense_bias_add"]
    assert kernels["fused_dense_bias_add"]["ops"] == ["graph.dense", "graph.bias_add"]
    assert "isa" in json.loads(report.read_text(encoding="utf-8"))["environment"]


def test_the_compile_column_is_a_cold_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compare.py times ember.build without the compilation cache: a warm
    entry from an earlier run must not pass for a cold compile."""
    monkeypatch.setenv("EMBER_CACHE", "1")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    module, params, x, expected = _reference("mlp")
    runner = compare.ember_runner(module, params, x)
    runner.run()
    _assert_close(runner.output(), expected)
    assert list(tmp_path.iterdir()) == []


def test_pipeline_benchmark_prints_one_row_per_mode(capsys) -> None:
    """benchmarks/pipeline.py on tiny_pipe: every mode's outputs were checked
    against the sequential run's (it raises otherwise), and the table has
    a row for each, the Ray row saying why it is missing when it is."""
    import pipeline as pipeline_benchmark

    assert pipeline_benchmark.main(
        ["--workloads", "tiny_pipe", "--count-tiny", "20", "--rounds", "1", "--no-ray"]
    ) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| tiny_pipe |")]
    modes = [row.split("|")[2].strip() for row in rows]
    assert modes[:4] == [
        "sequential", "pipelined (threads)", "pipelined (overlapped lane)", "pipelined (auto)"
    ]
    assert len(modes) == 5 and modes[4] == "ray: skipped (--no-ray)"
    assert "threads, one per stage" in rows[2]
    # Which plan auto holds after so few inputs depends on the times it took.
    assert "plan: " in rows[3] and "overlapped on map's lane" in rows[3]
    assert "back to back in the caller's thread" in rows[3]


def test_memory_script_end_to_end(tmp_path: Path) -> None:
    """benchmarks/memory.py measures every way in its own process and prints
    one row each; the figures are only checked to be sizes, never bounded."""
    report = tmp_path / "memory.json"
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / "memory.py"), "--workloads", "mlp",
         "--runs", "1", "--json", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the assertion below shows stderr
    )
    assert completed.returncode == 0, completed.stderr
    rows = json.loads(report.read_text(encoding="utf-8"))
    assert [row["way"] for row in rows] == ["ember-build", "ember-npz", "ember-load", "onnxruntime"]
    for row in rows:
        if "error" in row:  # onnxruntime not installed: said so, not hidden
            assert row["way"] == "onnxruntime" and "not installed" in row["error"]
            continue
        assert 0 < row["import_mb"] <= row["peak_mb"] and row["steady_mb"] <= row["peak_mb"]
        assert row["artifact_mb"] >= row["weights_mb"]
    assert completed.stdout.splitlines()[0].split()[:2] == ["workload", "way"]


def test_compile_time_script_prints_every_stage(capsys) -> None:
    """benchmarks/compile_time.py on mlp: a cold build, each driver stage,
    and a warm build that really was a cache hit (the script refuses one
    that compiled); the times are printed, never bounded."""
    import compile_time

    compile_time.main(["--workloads", "mlp"])
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.startswith("mlp (llvm):")
    rows = [line.split()[:-2] for line in lines]
    assert [" ".join(words) for words in rows] == [
        "cold ember.build",
        "graph passes",
        "kernel lowering",
        "llvm-dialect lowering",
        "pack constants",
        "translate to LLVM IR",
        "LLVM O2",
        "code generation",
        "link (MCJIT)",
        "sum of stages",
        "the build's way: streamed, threads",
        "warm ember.build (cache hit)",
    ]
    with pytest.raises(SystemExit):
        compile_time.main(["--workloads", "nope"])
    with pytest.raises(SystemExit):
        compile_time.main(["--target", "llvm -mcpu=nope"])
    assert "unknown CPU 'nope'" in capsys.readouterr().err
