"""The compiler driver (ember/driver.py): its stages print, read back, and
are what ember.build, ember-run and ember-translate run."""

from __future__ import annotations

import io

import llvmlite.binding as llvm
import numpy as np
import pytest

import ember
from ember import compiler, driver
from ember.compiler import CompileOptions
from ember.errors import PassError
from tests.test_tools import EXAMPLES, assert_user_error, run_tool

MLP = (EXAMPLES / "mlp.mlir").read_text(encoding="utf-8")
IR_STAGES = ("parse", "bind", "graph", "kernel", "plan", "llvm-dialect")


def _mlp_params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "w0": rng.standard_normal((128, 784), np.float32),
        "b0": rng.standard_normal(128, np.float32),
    }


def test_the_stages_run_in_the_documented_order() -> None:
    assert driver.stage_names() == (*IR_STAGES, "llvm-ir", "asm")
    assert compiler.STAGES == driver.stage_names()
    assert driver.ARTIFACT_INPUT in driver.stage_names()


@pytest.mark.parametrize("stage", IR_STAGES)
def test_each_ir_stage_prints_and_reads_back(stage: str) -> None:
    text = driver.emit(MLP, stage, _mlp_params())
    reread = ember.parse(text)
    assert str(reread) == text.rstrip("\n")


def test_the_text_stages_are_llvm_ir_and_assembly() -> None:
    llvm_ir = driver.emit(MLP, "llvm-ir")
    llvm.parse_assembly(llvm_ir).verify()
    assert "__ember_entry_main:" in driver.emit(MLP, "asm")


def test_stages_show_what_each_step_did() -> None:
    params = _mlp_params()
    assert "%w0: tensor<128x784xf32>" in driver.emit(MLP, "parse", params)
    bound = driver.emit(MLP, "bind", params)
    assert "%w0: tensor" not in bound and "graph.constant" in bound
    assert "graph.call_kernel" not in driver.emit(MLP, "graph", params)
    assert "ember.offsets" not in driver.emit(MLP, "kernel", params)
    assert "ember.offsets" in driver.emit(MLP, "plan", params)


def test_lower_copies_unless_told_to_consume() -> None:
    module = ember.parse(MLP)
    before = str(module)
    driver.lower(module, "kernel")
    assert str(module) == before
    kernel = driver.lower(module, "kernel", copy=False)
    assert kernel is module and "kernel.kernel" in str(module)


def test_an_unknown_stage_names_the_stages() -> None:
    with pytest.raises(PassError, match="unknown stage 'nope'; stages: parse, bind, graph"):
        driver.emit(MLP, "nope")
    with pytest.raises(PassError, match="unknown stage 'nope'"):
        with driver.print_after(["nope"]):
            pass


def test_lower_to_stage_is_the_drivers_emit() -> None:
    options = CompileOptions(graph_pipeline="canonicalize")
    assert compiler.lower_to_stage(ember.parse(MLP), "kernel", None, options) == driver.emit(
        MLP, "kernel", None, options
    )


def test_ember_build_runs_the_driver_stages() -> None:
    stream = io.StringIO()
    with driver.print_after(["graph", "plan"], stream):
        lib = ember.build(MLP, params=_mlp_params())
    text = stream.getvalue()
    assert "IR after stage 'graph'" in text and "IR after stage 'plan'" in text
    assert "IR after stage 'kernel'" not in text
    assert lib.param_names == ("w0", "b0")


def test_a_printing_build_skips_the_cache() -> None:
    ember.build(MLP)  # may fill the cache
    stream = io.StringIO()
    with driver.print_after(["all"], stream):
        ember.build(MLP)
    assert "IR after stage 'llvm-dialect'" in stream.getvalue()


def test_ember_run_prints_after_driver_stages() -> None:
    result = run_tool(
        "ember-run", EXAMPLES / "mlp.mlir", "--random-inputs", "--print-after=graph,plan"
    )
    assert result.returncode == 0, result.stderr
    assert "// -----// IR after stage 'graph' //----- //" in result.stderr
    assert "ember.workspace_bytes" in result.stderr
    assert "output0" in result.stdout


def test_ember_run_rejects_an_unknown_stage_before_any_work() -> None:
    result = run_tool(
        "ember-run", EXAMPLES / "mlp.mlir", "--random-inputs", "--print-after=kernl"
    )
    assert_user_error(result, "unknown stage 'kernl'; stages: parse, bind, graph, kernel")
    assert "input" not in result.stdout


def test_ember_translate_emits_every_driver_stage() -> None:
    result = run_tool("ember-translate", EXAMPLES / "mlp.mlir", "--emit=plan")
    assert result.returncode == 0, result.stderr
    assert "ember.workspace_bytes" in result.stdout
    wrong = run_tool("ember-translate", EXAMPLES / "mlp.mlir", "--emit=nope")
    assert wrong.returncode != 0
    assert "parse, bind, graph, kernel, plan, llvm-dialect, llvm-ir, asm" in wrong.stderr.replace("'", "")


def test_the_plan_stage_keeps_a_plan_written_in_the_input() -> None:
    planned = driver.emit(MLP, "plan")
    wrong = planned.replace("array<i64: 0>", "array<i64: 64>", 1)
    assert wrong != planned
    assert "array<i64: 64>" in driver.emit(wrong, "plan")
    with pytest.raises(PassError, match="lower-program-to-llvm: wrong memory plan"):
        driver.emit(wrong, "llvm-dialect")


def test_ember_run_prints_the_stages_of_each_pipeline_stage_build(tmp_path) -> None:
    from tests.test_cli_compiled import PIPELINE

    source = tmp_path / "pipe.mlir"
    source.write_text(PIPELINE)
    result = run_tool(
        "ember-run", source, "--random-inputs", "--count", "2", "--print-after=kernel"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("IR after stage 'kernel'") == 2  # main_0 and main_1
    exported = ember.pipeline.build(ember.parse(PIPELINE)).export_library(tmp_path / "pipe")
    refused = run_tool("ember-run", exported, "--random-inputs", "--print-after=kernel")
    assert_user_error(refused, "an exported pipeline is compiled already")
