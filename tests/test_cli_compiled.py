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
