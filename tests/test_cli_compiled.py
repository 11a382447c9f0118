"""ember-run's compiled default, --interpret and --bench, and ember-translate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.test_tools import EXAMPLES, assert_user_error, run_tool


def test_run_compiles_by_default_and_matches_the_interpreter(tmp_path: Path) -> None:
    common = [EXAMPLES / "mlp.mlir", "--random-inputs", "--seed", "3"]
    compiled = run_tool("ember-run", *common, "--output", tmp_path / "c.npz")
    interpreted = run_tool(
        "ember-run", *common, "--interpret", "--output", tmp_path / "i.npz"
    )
    assert compiled.returncode == 0, compiled.stderr
    assert interpreted.returncode == 0, interpreted.stderr
    c, i = np.load(tmp_path / "c.npz")["output0"], np.load(tmp_path / "i.npz")["output0"]
    np.testing.assert_allclose(c, i, rtol=1e-5)


def test_run_bench_reports_latency() -> None:
    result = run_tool("ember-run", EXAMPLES / "mlp.mlir", "--random-inputs", "--bench", "5")
    assert result.returncode == 0, result.stderr
    assert "latency over 5 runs: median" in result.stdout


def test_run_bench_needs_a_positive_count() -> None:
    result = run_tool("ember-run", EXAMPLES / "mlp.mlir", "--random-inputs", "--bench", "0")
    assert_user_error(result, "--bench needs a positive number of runs")


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        ("graph", "graph.dense"),
        ("kernel", "kernel.for"),
        ("llvm-dialect", "llvm.func @__ember_entry_main"),
        ("llvm-ir", "define void @__ember_entry_main"),
        ("asm", "__ember_entry_main:"),
    ],
)
def test_translate_prints_each_stage(stage: str, expected: str) -> None:
    result = run_tool("ember-translate", EXAMPLES / "mlp.mlir", f"--emit={stage}")
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_translate_kernel_stage_reads_back(tmp_path: Path) -> None:
    kernel = run_tool("ember-translate", EXAMPLES / "mlp.mlir", "--emit=kernel")
    result = run_tool("ember-opt", "-", stdin=kernel.stdout)
    assert result.returncode == 0, result.stderr


def test_translate_unknown_entry_is_an_error() -> None:
    result = run_tool(
        "ember-translate", EXAMPLES / "mlp.mlir", "--emit=kernel", "--entry", "nope"
    )
    assert_user_error(result, "@nope")


PIPELINE = """
func.func @main_0(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @main_1(%y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %y : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
pipeline.graph @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = pipeline.stage @main_0(%x) {target = "llvm", device = "cpu:0"} : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipeline.stage @main_1(%a) {target = "llvm", device = "cpu:0"} : (tensor<4xf32>) -> tensor<4xf32>
  pipeline.yield %b : tensor<4xf32>
}
"""


@pytest.mark.parametrize("mode", ["pipelined", "sequential"])
def test_run_streams_inputs_through_a_pipeline(tmp_path: Path, mode: str) -> None:
    source = tmp_path / "pipe.mlir"
    source.write_text(PIPELINE)
    x = np.array([-1.0, 0.0, 0.5, 2.0], dtype="float32")
    np.save(tmp_path / "x.npy", x)
    extra = ["--sequential"] if mode == "sequential" else []
    result = run_tool(
        "ember-run", source, "--input", f"x={tmp_path / 'x.npy'}", "--count", "20",
        "--output", tmp_path / "out.npz", *extra,
    )
    assert result.returncode == 0, result.stderr
    assert f"{mode}: 20 inputs in" in result.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output0"], np.exp(np.maximum(x, 0)), rtol=1e-6)


TWO_INPUTS = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  %0 = graph.cast %y : (tensor<4xi32>) -> tensor<4xf32>
  %1 = graph.add %x, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.exp %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""

TWO_INPUTS_PIPELINE = """
func.func @main_0(%x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  %0 = graph.cast %y : (tensor<4xi32>) -> tensor<4xf32>
  %1 = graph.add %x, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func @main_1(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
pipeline.graph @main(%x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  %a = pipeline.stage @main_0(%x, %y) {target = "llvm", device = "cpu:0"} : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  %b = pipeline.stage @main_1(%a) {target = "llvm", device = "cpu:0"} : (tensor<4xf32>) -> tensor<4xf32>
  pipeline.yield %b : tensor<4xf32>
}
"""


def test_run_pipeline_takes_the_inputs_a_function_gets_and_benches(
    tmp_path: Path,
) -> None:
    """A pipeline and the unsplit function with its signature: the same
    random inputs for the same seed, so the same outputs; --bench times the
    pipeline as it times the function."""
    results = {}
    for kind, text in (("function", TWO_INPUTS), ("pipeline", TWO_INPUTS_PIPELINE)):
        source = tmp_path / f"{kind}.mlir"
        source.write_text(text)
        result = run_tool(
            "ember-run", source, "--random-inputs", "--seed", "5", "--count", "3",
            "--bench", "4", "--output", tmp_path / f"{kind}.npz",
        )
        assert result.returncode == 0, result.stderr
        assert "latency over 4 runs: median" in result.stdout
        results[kind] = result.stdout
    inputs = [line for line in results["function"].splitlines() if line.startswith("input ")]
    assert inputs == [
        "input x: tensor<4xf32> (random, seed 5)",
        "input y: tensor<4xi32> (random, seed 5)",
    ]
    assert inputs == [l for l in results["pipeline"].splitlines() if l.startswith("input ")]
    assert "pipelined: 3 inputs in" in results["pipeline"]
    function_out = np.load(tmp_path / "function.npz")["output0"]
    np.testing.assert_allclose(
        np.load(tmp_path / "pipeline.npz")["output0"], function_out, rtol=1e-6
    )
    # The inputs are those of ember-run's seeded draw, not zeros or defaults.
    assert np.all(function_out > 1.0)


def test_run_pipeline_errors(tmp_path: Path) -> None:
    source = tmp_path / "pipe.mlir"
    source.write_text(PIPELINE)
    assert_user_error(run_tool("ember-run", source, "--count", "0"), "--count")
    assert_user_error(run_tool("ember-run", source, "--interpret"), "--interpret")
    # Inputs are gathered as for a function: none given, none random.
    assert_user_error(
        run_tool("ember-run", source), "missing input: x (tensor<4xf32>); give --input"
    )
