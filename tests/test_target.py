"""Targets: parsing target strings, what a CPU can do, and code for another CPU.

The assembly each target gets is checked by
tests/filecheck/tools/ember-translate-target.mlir; here: the parser's
answers and errors, the features and vector width LLVM gives a CPU, and a
module built for a CPU this one is not — it exports, but neither runs nor
loads here, and says which features are missing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from ember.build import parse_target
from ember.compiler import CompileOptions, lower_to_stage
from ember.errors import ArtifactError, RuntimeFailure, TargetError
from ember.runtime import GraphExecutor, load_module
from ember.target import Target, host_cpu_name, host_features
from tests.test_tools import assert_user_error, run_tool

DENSE = """\
func.func @main(%x: tensor<4x64xf32>, %w: tensor<32x64xf32>) -> tensor<4x32xf32> {
  %y = graph.dense %x, %w : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  func.return %y : tensor<4x32xf32>
}
"""


def _foreign_cpu() -> Target:
    """An AVX-512 CPU with features this one lacks (skips where none is)."""
    for cpu in ("skylake-avx512", "sapphirerapids", "diamondrapids"):
        target = Target.parse(f"llvm -mcpu={cpu}")
        if target.missing_on_host():
            return target
    pytest.skip("this CPU has every feature of the AVX-512 CPUs tried")


# -- parsing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("llvm", Target("llvm")),
        ("  llvm   -libs=blas ", Target("llvm", libs=("blas",))),
        (
            "llvm -mattr=+avx2,-avx512f -mcpu=znver3",
            Target("llvm", mcpu="znver3", mattr=("+avx2", "-avx512f")),
        ),
        ("interp", Target("interp")),
        ("cuda -arch=90 -libs=cublas,cudnn", Target("cuda", arch="sm_90", libs=("cublas", "cudnn"))),
    ],
)
def test_parse_and_canonical_string(text: str, expected: Target) -> None:
    target = Target.parse(text)
    assert target == expected
    assert Target.parse(str(target)) == target
    assert Target.parse(target) is target


def test_canonical_string_orders_the_options() -> None:
    text = "llvm -libs=blas -mattr=-avx -mcpu=znver3"
    assert str(Target.parse(text)) == "llvm -mcpu=znver3 -mattr=-avx -libs=blas"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("llvm -mcpus=znver3", r"unknown target option '-mcpus=znver3'.*did you mean -mcpu\?"),
        ("llvm -lib=blas", r"unknown target option '-lib=blas'.*did you mean -libs\?"),
        ("llvm -mcpu=skylake-avx51", r"unknown CPU 'skylake-avx51' in -mcpu.*did you mean 'skylake-avx512'"),
        ("llvm -mattr=+avx3", r"unknown CPU feature 'avx3' in -mattr.*did you mean 'avx'"),
        ("llvm -mattr=avx2", r"-mattr item 'avx2' .* must be \+FEATURE or -FEATURE"),
        ("interp -mcpu=znver3", r"-mcpu in 'interp -mcpu=znver3' applies to llvm targets"),
        ("llvm -arch=sm_90", r"-arch .* applies to cuda targets, not 'llvm'"),
        ("llvm -mcpu=", r"-mcpu in 'llvm -mcpu=' needs a value"),
        ("llvm -mcpu=znver3 -mcpu=znver2", r"-mcpu is given twice"),
        ("", r"target must be a string such as 'llvm'"),
    ],
)
def test_parse_errors_name_the_option(text: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        Target.parse(text)


def test_parse_target_is_kept_for_old_callers() -> None:
    assert parse_target("llvm -libs=blas") == ("llvm", ("blas",))
    with pytest.raises(TargetError, match="unknown target option"):
        parse_target("llvm -lbs=blas")


# -- what a CPU can do -------------------------------------------------------


def test_host_is_this_cpu() -> None:
    host = Target.host()
    assert host.is_host and str(host) == "llvm"
    assert host.cpu == host_cpu_name()
    assert host.features == host_features() and host.missing_on_host() == []


@pytest.mark.parametrize(
    ("text", "bits", "present", "absent"),
    [
        ("llvm -mcpu=skylake-avx512", 512, {"avx512f", "avx2", "fma"}, set()),
        ("llvm -mcpu=znver3", 256, {"avx2", "fma"}, {"avx512f"}),
        ("llvm -mcpu=x86-64 -mattr=+avx2,+fma", 256, {"avx", "avx2", "fma"}, {"avx512f"}),
        # LLVM's implications: without AVX there is no AVX2, FMA or AVX-512.
        ("llvm -mcpu=skylake-avx512 -mattr=-avx", 128, {"sse4.2"}, {"avx", "fma", "avx512f"}),
        ("llvm -mcpu=skylake-avx512 -mattr=-avx512f", 256, {"avx2"}, {"avx512f", "avx512bw"}),
        ("llvm -mattr=-avx", 128, set(), {"avx", "avx2"}),
    ],
)
def test_features_and_vector_width_come_from_llvm(
    text: str, bits: int, present: set[str], absent: set[str]
) -> None:
    target = Target.parse(text)
    assert present <= target.features and not absent & target.features
    assert target.vector_bits == bits
    assert target.vector_lanes("float32") == bits // 32
    assert target.vector_lanes("float16") == bits // 16


@pytest.mark.parametrize(
    "text",
    [
        "llvm",
        "llvm -mattr=-avx512f",
        "llvm -mcpu=x86-64",
        "llvm -mcpu=znver3",
        "llvm -mcpu=skylake-avx512",
        "llvm -mcpu=sapphirerapids",
        "llvm -mcpu=diamondrapids",
        "llvm -mattr=+amx-tile",
    ],
)
def test_whether_code_runs_here_agrees_with_the_features_it_lacks(text: str) -> None:
    """runs_on_host (one probe, at every cross build's load) says what
    missing_on_host (a probe of every feature) says, on any host."""
    target = Target.parse(text)
    assert target.runs_on_host() == (not target.missing_on_host())


def test_a_target_without_a_cpu_says_so() -> None:
    with pytest.raises(TargetError, match="'interp' has no CPU features"):
        Target.parse("interp").vector_bits


def test_kernels_are_tiled_for_the_targets_lanes() -> None:
    module = ember.parse(DENSE)
    kernels = {
        text: lower_to_stage(module, "kernel", options=CompileOptions(target=Target.parse(text)))
        for text in ("llvm -mcpu=skylake-avx512", "llvm -mcpu=znver3")
    }
    # Weight panels two vector registers wide: 2 x 16 lanes, and 2 x 8.
    assert "memref<1x64x32xf32>" in kernels["llvm -mcpu=skylake-avx512"]
    assert "memref<2x64x16xf32>" in kernels["llvm -mcpu=znver3"]


# -- building for a target ---------------------------------------------------


@pytest.mark.parametrize("text", ["llvm -mcpu=skylake-avx512", "llvm -mcpu=znver3", "llvm -mattr=-avx"])
def test_a_build_shapes_its_kernels_for_its_target_not_the_host(text: str) -> None:
    """``ember.build``'s schedule is the target's: ``kernel-tensorize`` tiles
    for the target's vector width (it once tiled for the host's, the
    schedule read before the target was set, so code for an AVX2 CPU built
    on an AVX-512 host ran 16-lane tiles split in two)."""
    lib = ember.build(DENSE, target=text, remarks=True, cache=False)
    widths = {r.args["vector_bits"] for r in lib.remarks if r.pass_name == "kernel-tensorize"}
    assert widths == {Target.parse(text).vector_bits}


def test_a_runnable_target_builds_runs_and_records_itself(tmp_path: Path) -> None:
    target = Target.parse("llvm -mattr=-avx")
    lib = ember.build(DENSE, target=target)
    assert "ymm" not in lib._jit.assembly()  # type: ignore[attr-defined]
    metadata = lib.backend_metadata()
    assert metadata["target"] == "llvm -mattr=-avx"
    assert "avx" not in metadata["features"] and "sse2" in metadata["features"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal((32, 64)).astype(np.float32)
    lib.export_library(tmp_path / "sse")
    loaded = load_module(tmp_path / "sse")
    assert loaded.compiled_for == target  # type: ignore[attr-defined]
    for module in (lib, loaded):
        executor = GraphExecutor(module)
        executor.set_input("x", x)
        executor.set_input("w", w)
        executor.run()
        np.testing.assert_allclose(executor.get_output(0).numpy(), x @ w.T, rtol=1e-4, atol=1e-4)


def test_code_for_another_cpu_exports_but_neither_runs_nor_loads(tmp_path: Path) -> None:
    target = _foreign_cpu()
    missing = target.missing_on_host()
    module = ember.parse(DENSE)
    lib = ember.build(module, target=str(target))
    assert "zmm" in lib._jit.assembly()  # type: ignore[attr-defined]
    executor = GraphExecutor(lib)
    executor.set_input("x", np.ones((4, 64), np.float32))
    executor.set_input("w", np.ones((32, 64), np.float32))
    with pytest.raises(RuntimeFailure, match=rf"compiled for target '{target}'.*lacks .*{missing[0]}"):
        executor.run()
    lib.export_library(tmp_path / "foreign")
    with pytest.raises(ArtifactError, match=rf"compiled for target '{target}'.*lacks .*{missing[0]}"):
        load_module(tmp_path / "foreign")


def test_ember_run_takes_a_target_string() -> None:
    mlp = Path(__file__).resolve().parent.parent / "examples" / "mlp.mlir"
    result = run_tool("ember-run", mlp, "--random-inputs", "--target", "llvm -mattr=-avx")
    assert result.returncode == 0, result.stderr
    assert "output0: tensor<1x10xf32>" in result.stdout
    assert_user_error(
        run_tool("ember-run", mlp, "--random-inputs", "--target", "llvm -mcpu=znver9"),
        "ember-run: error: unknown CPU 'znver9' in -mcpu",
    )


def test_compile_kernels_asks_for_the_targets_vector_width() -> None:
    from ember.backends.cpu import compile_kernels

    kernels = ember.parse(lower_to_stage(ember.parse(DENSE), "kernel"))
    jit = compile_kernels(kernels, target=Target.parse("llvm -mattr=-avx"))
    assert '"prefer-vector-width"="128"' in jit.llvm_ir
    assert "ymm" not in jit.assembly()
