"""CUDA code generation without a GPU: every kernel renders to CUDA C that
NVRTC compiles to PTX and ptxas assembles for sm_90, and the same code,
run on the CPU (tests/cuda_emulation.py), computes what the interpreter
computes. kernel-bind-gpu is checked for soundness with the kernel
interpreter."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import ember
from ember.backends.cuda import (
    CudaError,
    compile_cubin,
    compile_ptx,
    kernels_to_cuda,
    parse_arch,
    ptxas_check,
    render_module,
)
from ember.compiler import lower_to_stage
from ember.passes.kernel_bind_gpu import bind_gpu
from ember.testing import workloads
from ember.testing.strategies import graph_programs

from .cuda_emulation import run_program

WORKLOADS = [
    ("mlp", "float32"),
    ("mlp_b64", "float32"),
    ("convbnrelu", "float32"),
    ("tiny_pipe", "float32"),
    ("tiny_pipe", "float16"),
    ("resnet18", "float32"),
]
HAS_PTXAS = shutil.which("ptxas") is not None


def _kernel_stage(name: str, dtype: str):
    module, params = workloads.get(name, dtype)
    return module, params, ember.parse(lower_to_stage(module, "kernel", params))


@pytest.mark.parametrize(("name", "dtype"), WORKLOADS, ids=[f"{n}-{d}" for n, d in WORKLOADS])
def test_every_workload_kernel_compiles_to_ptx(name: str, dtype: str) -> None:
    _, _, kernels = _kernel_stage(name, dtype)
    source = kernels_to_cuda(kernels)
    assert len(source.kernels) == sum(1 for op in kernels.ops if "kernel.kernel" in op.attributes)
    for kernel in source.kernels:
        for part in kernel.parts:
            assert f"__global__ void __launch_bounds__(" in source.code
            assert part.function in source.code
            assert np.prod(part.block) <= 1024
    ptx = compile_ptx(source, "sm_90")
    assert ".target sm_90" in ptx
    if HAS_PTXAS:
        ptxas_check(ptx, "sm_90")


@pytest.mark.parametrize(
    ("name", "dtype"), WORKLOADS[:5], ids=[f"{n}-{d}" for n, d in WORKLOADS[:5]]
)
def test_generated_cuda_computes_what_the_interpreter_computes(name: str, dtype: str) -> None:
    module, params, kernels = _kernel_stage(name, dtype)
    main = next(op for op in module.ops if op.sym_name.data == "main")
    shape = main.body.block.args[0].type.get_shape()
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    (got,) = run_program(kernels, kernels_to_cuda(kernels), [x])
    (expected,) = ember.interpret(module, "main", x, *params.values())
    tolerance = 3e-2 if dtype == "float16" else 1e-5
    scale = float(np.abs(expected.astype("float64")).max()) or 1.0
    assert np.abs(got.astype("float64") - expected.astype("float64")).max() <= tolerance * scale


def _program_kernels(program):
    return ember.parse(lower_to_stage(program.module, "kernel", {}))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_programs(max_ops=5, max_outputs=2))
def test_generated_programs_run_the_same_as_cuda(program) -> None:
    """Random graph programs: their kernels, bound and rendered, compute on
    the emulated GPU exactly what the interpreter computes."""
    kernels = _program_kernels(program)
    expected = ember.interpret(program.module, "main", *program.inputs)
    got = run_program(kernels, kernels_to_cuda(kernels), list(program.inputs))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_programs(max_ops=4, max_outputs=1))
def test_generated_programs_compile_with_nvrtc(program) -> None:
    ptx = compile_ptx(kernels_to_cuda(_program_kernels(program)))
    if HAS_PTXAS:
        ptxas_check(ptx)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_programs(max_ops=5, max_outputs=2))
def test_kernel_bind_gpu_is_sound(program) -> None:
    """Binding loops to the grid changes no result of the kernel interpreter."""
    kernels = _program_kernels(program)
    before = ember.interpret(kernels, "main", *program.inputs)
    bound = kernels.clone()
    bind_gpu(bound, max_threads=4)  # small blocks: more loops split
    ember.verify_module(bound)
    after = ember.interpret(bound, "main", *program.inputs)
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)


def test_bind_gpu_binds_and_splits_loops() -> None:
    module = ember.parse(
        """
func.func @relu(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 parallel {
    kernel.for %j = 0 to 8 vectorized {
      kernel.block "y" (%vi = spatial %i, %vj = spatial %j) {
        %a = memref.load %x[%vi, %vj] : memref<4x8xf32>
        memref.store %a, %y[%vi, %vj] : memref<4x8xf32>
      }
    }
  }
  kernel.for %k = 0 to 30 parallel {
    kernel.block "z" (%vk = spatial %k) {
      %c = arith.constant 0 : index
      %a = memref.load %x[%c, %c] : memref<4x8xf32>
      memref.store %a, %y[%c, %c] : memref<4x8xf32>
    }
  }
  func.return
}
"""
    )
    bound = ember.apply_passes(module, "kernel-bind-gpu{max-threads=8}")
    text = str(bound)
    assert "kernel.for %i = 0 to 4 gpu.block.x" in text
    assert "kernel.for %j = 0 to 8 gpu.thread.x" in text
    # 30 iterations alone: split 5 x 6 (6: the largest divisor of 30 <= 8)
    assert "kernel.for %k_o = 0 to 5 gpu.block.x" in text
    assert "kernel.for %k_i = 0 to 6 gpu.thread.x" in text
    source = render_module(bound)
    parts = source.kernel("relu").parts
    assert [(p.grid, p.block) for p in parts] == [((4, 1, 1), (8, 1, 1)), ((5, 1, 1), (6, 1, 1))]


def test_errors_name_the_kernel_and_the_problem() -> None:
    module = ember.parse(
        """
func.func @k(%x: memref<4xf32>, %y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.block "y" (%vi = spatial %i) {
      %a = memref.load %x[%vi] : memref<4xf32>
      %b = math.sin %a : f32
      memref.store %b, %y[%vi] : memref<4xf32>
    }
  }
  func.return
}
"""
    )
    with pytest.raises(CudaError, match=r"cannot render math.sin in kernel @k"):
        render_module(module)
    with pytest.raises(CudaError, match="unknown CUDA architecture 'sm_x'"):
        parse_arch("sm_x")
    assert parse_arch("90") == parse_arch("compute_90") == "sm_90"
    with pytest.raises(CudaError, match="NVRTC could not compile"):
        compile_ptx("this is not CUDA")
    with pytest.raises(ember.PassError, match="max-threads must be 1 to 1024"):
        ember.apply_passes(module, "kernel-bind-gpu{max-threads=2048}")


def test_cubin_for_a_real_architecture() -> None:
    _, _, kernels = _kernel_stage("mlp", "float32")
    cubin = compile_cubin(kernels_to_cuda(kernels), "sm_90")
    assert cubin[:4] == b"\x7fELF"


def test_ember_translate_emits_cuda_and_ptx(capsys) -> None:
    from ember.tools import ember_translate

    from pathlib import Path

    mlp = str(Path(__file__).resolve().parents[1] / "examples" / "mlp.mlir")
    assert ember_translate.main([mlp, "--emit=cuda"]) == 0
    out = capsys.readouterr().out
    assert 'extern "C" __global__ void __launch_bounds__(' in out
    assert "blockIdx.x" in out and "threadIdx.x" in out
    assert ember_translate.main([mlp, "--emit=ptx", "--arch=sm_80"]) == 0
    assert ".target sm_80" in capsys.readouterr().out
    assert ember_translate.main([mlp, "--emit=ptx", "--arch=banana"]) == 1
    assert "unknown CUDA architecture 'banana'" in capsys.readouterr().err
