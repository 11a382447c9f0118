"""ember.backends: one interface (compile -> Artifact, load -> Module) per target kind,
and the runtime that loads what a backend compiled without compiling anything."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ember import abi
from ember.backends import ModuleBackend, backend_for, get_backend
from ember.compiler import CompileOptions
from ember.errors import RuntimeFailure
from ember.ir import parse
from ember.runtime.graph_executor import GraphExecutor
from ember.runtime.module import Artifact, InterpModule, Module, signature_of
from tests.test_runtime_artifact import MLP, run_python

RNG = np.random.default_rng(0)
DATA = RNG.standard_normal((2, 8)).astype(np.float32)
PARAMS = {
    "weight": RNG.standard_normal((4, 8)).astype(np.float32),
    "bias": RNG.standard_normal(4).astype(np.float32),
}
EXPECTED = np.maximum(DATA @ PARAMS["weight"].T + PARAMS["bias"], 0)


def run(lib: Module) -> np.ndarray:
    executor = GraphExecutor(lib)
    executor.run(data=DATA)
    return executor.get_output(0).numpy()


def compile_mlp(kind: str) -> Artifact:
    module = parse(MLP)
    backend = get_backend(kind)
    assert backend is not None
    return backend.compile(module, signature_of(module), PARAMS, CompileOptions())


def test_llvm_compiles_to_object_code_that_the_runtime_loads() -> None:
    from ember.backends.cpu import CpuBackend
    from ember.runtime.cpu import LLVMModule, NativeCode

    backend = backend_for("llvm -mcpu=x86-64-v3")
    assert isinstance(backend, CpuBackend) and not backend.keeps_params
    artifact = compile_mlp("llvm")
    assert isinstance(artifact.code, NativeCode)
    assert artifact.code.object[:4] == b"\x7fELF"
    assert artifact.params == ("weight", "bias")  # compiled into the constants
    assert artifact.code.layout.symbol == abi.entry_symbol("main")
    lib = backend.load(artifact)
    assert isinstance(lib, LLVMModule)
    np.testing.assert_allclose(run(lib), EXPECTED, rtol=1e-5, atol=1e-6)


def test_interp_backend_keeps_the_ir_for_the_interpreter() -> None:
    backend = backend_for("interp")
    assert backend.keeps_params
    artifact = compile_mlp("interp")
    assert artifact.code.ops.first.sym_name.data == "main"
    lib = backend.load(artifact)
    assert type(lib) is InterpModule
    np.testing.assert_allclose(run(lib), EXPECTED, rtol=1e-5, atol=1e-6)


def test_cuda_compiles_kernels_but_has_no_runtime_to_load_them() -> None:
    from ember.backends.cuda import CudaSource

    artifact = compile_mlp("cuda")
    assert isinstance(artifact.code, CudaSource)
    assert "__global__" in artifact.code.code
    with pytest.raises(RuntimeFailure, match="no runtime"):
        get_backend("cuda").load(artifact)  # type: ignore[union-attr]
    # ember.build refuses it before any work, with the runtime's message.
    with pytest.raises(RuntimeFailure, match="'cuda'.*not available yet"):
        backend_for("cuda")


def test_unknown_target_kind_is_the_runtimes_error() -> None:
    with pytest.raises(RuntimeFailure, match="unknown target 'vulkan'"):
        backend_for("vulkan")


def test_a_module_class_that_compiles_itself_is_served_as_is() -> None:
    class Own(InterpModule):
        target = "interp"

    backend = ModuleBackend(Own)
    module = parse(MLP)
    lib = backend.build(module, signature_of(module), PARAMS)
    assert type(lib) is Own
    np.testing.assert_allclose(run(lib), EXPECTED, rtol=1e-5, atol=1e-6)


def test_moved_compiler_names_still_resolve_where_they_were() -> None:
    from ember.backends import cpu
    from ember.lowering import kernel_to_llvm, program_to_llvm
    from ember.runtime import cpu as runtime_cpu
    from ember.runtime import jit

    for name in ("compile_llvm", "compile_kernels", "translate", "optimize"):
        assert getattr(jit, name) is getattr(cpu, name)
    assert runtime_cpu.RELEASE_BYTES == cpu.RELEASE_BYTES
    for name in ("ProgramLayout", "BufferSpec", "EXTERN_SYMBOL", "entry_symbol", "OPS_ATTR"):
        assert getattr(program_to_llvm, name) is getattr(abi, name)
    for name in ("BOUNDS_ERROR_SYMBOL", "NUM_THREADS_SYMBOL", "OPENMP_ENTRY_POINTS"):
        assert getattr(kernel_to_llvm, name) is getattr(abi, name)
    module = parse(MLP)
    lib = runtime_cpu.LLVMModule.compile(module, signature_of(module), PARAMS)
    np.testing.assert_allclose(run(lib), EXPECTED, rtol=1e-5, atol=1e-6)


def test_loading_and_running_an_artifact_imports_no_compiler(tmp_path: Path) -> None:
    """The runtime is a leaf: a process that loads an exported llvm module
    and runs it never imports lowering, a backend or the compiler."""
    import ember

    path = tmp_path / "mlp.ember"
    ember.build(MLP, "llvm", PARAMS, cache=False).export_library(path)
    code = f"""
        import sys
        import numpy as np
        from ember.runtime import GraphExecutor, load_module
        executor = GraphExecutor(load_module({str(path)!r}))
        executor.run(data=np.ones((2, 8), np.float32))
        executor.get_output(0).numpy()
        compilers = ("ember.lowering", "ember.backends", "ember.compiler")
        print(sorted(m for m in sys.modules if m.startswith(compilers)))
        """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
