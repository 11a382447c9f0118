"""End-to-end tests of the CPU backend (``ember.build(target="llvm")``).

Compiled results are compared with the reference interpreter: the workloads
(f32 and tiny_pipe in f16), the seed-003 program mixing generated kernels
with registered Python functions, random graphs (hypothesis), export and
load in a fresh process, and every error a user can cause.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import ember
from ember.runtime.module import ArtifactError
from ember.testing import assert_all_same_values, workloads
from ember.testing.strategies import graph_programs

SEED_003 = Path(__file__).parent / "filecheck" / "dialects" / "kernel" / "seed-003.mlir"


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    scale = max(float(np.abs(expected.astype(np.float64)).max()), 1e-30)
    return float(np.abs(actual.astype(np.float64) - expected).max()) / scale


def run_compiled(lib: ember.runtime.Module, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.set_input(**inputs)
    ex.run()
    return [ex.get_output(i).numpy() for i in range(ex.num_outputs)]


@pytest.mark.parametrize(
    ("name", "dtype", "tolerance"),
    [
        ("mlp", "float32", 1e-4),
        ("mlp_b64", "float32", 1e-4),
        ("convbnrelu", "float32", 1e-4),
        ("tiny_pipe", "float32", 1e-4),
        # f16: folding batch_norm into the conv weights rounds the folded
        # weights to f16, and the 1024-term dense ends in one value.
        ("tiny_pipe", "float16", 3e-2),
        ("resnet18", "float32", 1e-4),
    ],
)
def test_workload_matches_interpreter(name: str, dtype: str, tolerance: float) -> None:
    module, params = workloads.get(name, dtype=dtype)
    lib = ember.build(module, target="llvm", params=params)
    (spec,) = lib.input_specs
    data = np.random.default_rng(7).standard_normal(spec.shape).astype(dtype)
    (out,) = run_compiled(lib, {"data": data})
    (ref,) = ember.interpret(module, "main", data, *params.values())
    assert out.dtype == ref.dtype and out.shape == ref.shape
    assert relative_error(out, ref) <= tolerance


def seed_003_program() -> str:
    """The seed-003 kernels, then a main mixing them with registered functions."""
    kernels = "\n".join(
        line for line in SEED_003.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("//")
    )
    return kernels + textwrap.dedent(
        """
        func.func @main(%x: tensor<1x784xf32>, %w0: tensor<128x784xf32>, %b0: tensor<128xf32>,
                        %w1: tensor<10x128xf32>, %b1: tensor<10xf32>) -> tensor<1x10xf32> {
          %lv0 = graph.call_kernel @linear0(%x, %w0, %b0) : (tensor<1x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<1x128xf32>
          %lv1 = graph.call_extern "env.relu"(%lv0) : (tensor<1x128xf32>) -> tensor<1x128xf32>
          %out = graph.call_extern "env.linear"(%lv1, %w1, %b1) : (tensor<1x128xf32>, tensor<10x128xf32>, tensor<10xf32>) -> tensor<1x10xf32>
          func.return %out : tensor<1x10xf32>
        }
        """
    )


@pytest.fixture
def env_functions():
    @ember.register_func("env.linear", override=True)
    def linear(x, w, b, out):
        np.copyto(np.from_dlpack(out), x.numpy() @ w.numpy().T + b.numpy())

    @ember.register_func("env.relu", override=True)
    def relu(x, out):
        np.maximum(x.numpy(), 0, out=np.from_dlpack(out))

    yield
    ember.remove_global_func("env.linear")
    ember.remove_global_func("env.relu")


def mlp_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    shapes = {"w0": (128, 784), "b0": (128,), "w1": (10, 128), "b1": (10,)}
    return {k: rng.standard_normal(s).astype("float32") for k, s in shapes.items()}


def numpy_mlp(x: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    return np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]


def test_outlined_loop_bodies_are_optimised_once() -> None:
    """The LLVM pipeline does not inline a kernel's outlined parallel loop
    into its caller (ember.backends.cpu.INLINE_THRESHOLD): each body is
    optimised once, called by the kernel's serial path and, through the
    address the kernel hands them, by the threads' entry point (at O3's
    default threshold the serial call was inlined)."""
    module, params = workloads.get("convbnrelu")
    llvm_ir = ember.build(module, target="llvm", params=params, cache=False).llvm_ir
    bodies = re.findall(r'^define [^@]*@"?(\w+__parallel\d+_body)"?\(', llvm_ir, re.M)
    assert bodies
    for body in bodies:
        callers = re.findall(rf'call [^@]*@"?{body}"?\(', llvm_ir)
        assert len(callers) == 1, (body, len(callers))
        assert re.search(rf'store ptr @"?{body}"?,', llvm_ir), body  # the threads' call


def test_seed_003_program_from_text(env_functions: None) -> None:
    rng = np.random.default_rng(0)
    params = mlp_params(rng)
    x = rng.standard_normal((1, 784)).astype("float32")
    lib = ember.build(seed_003_program(), target="llvm", params=params)
    (out,) = run_compiled(lib, {"x": x})
    assert relative_error(out, numpy_mlp(x, params)) <= 1e-5


def test_seed_003_program_from_python(env_functions: None) -> None:
    from ember import builder as nn

    rng = np.random.default_rng(1)
    params = mlp_params(rng)
    x = nn.var("x", (1, 784))
    net = nn.relu(nn.bias_add(nn.dense(x, nn.var("w0"), units=128), nn.var("b0")))
    net = nn.bias_add(nn.dense(net, nn.var("w1"), units=10), nn.var("b1"))
    module = nn.module(nn.function(net))
    lib = ember.build(module, target="llvm", params=params)
    data = rng.standard_normal((1, 784)).astype("float32")
    (out,) = run_compiled(lib, {"x": data})
    assert relative_error(out, numpy_mlp(data, params)) <= 1e-5


def test_unknown_extern_function_is_an_error() -> None:
    text = seed_003_program().replace('"env.relu"', '"env.no_such_function"')
    with pytest.raises(ember.EmberError, match="env.no_such_function"):
        lib = ember.build(text, target="llvm")
        ember.GraphExecutor(lib, ember.cpu(0))


def test_failing_extern_function_names_it(env_functions: None) -> None:
    @ember.register_func("env.relu", override=True)
    def broken(x, out):
        raise ValueError("boom")

    rng = np.random.default_rng(0)
    lib = ember.build(seed_003_program(), target="llvm", params=mlp_params(rng))
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.set_input("x", rng.standard_normal((1, 784)).astype("float32"))
    with pytest.raises(ember.EmberError, match="env.relu.*boom"):
        ex.run()


@settings(max_examples=15)
@given(graph_programs(dtypes=("float32",), max_ops=6))
def test_random_graphs_compiled_equal_interpreted(program) -> None:
    expected = ember.interpret(program.module, program.entry, *program.inputs)
    lib = ember.build(program.fresh_module(), target="llvm")
    names = [spec.name for spec in lib.input_specs]
    outputs = run_compiled(lib, dict(zip(names, program.inputs, strict=True)))
    # NaN, inf, -0.0 and denormals in the inputs: compiled code follows the
    # interpreter's IEEE semantics exactly (NaN positions, inf signs).
    assert_all_same_values(outputs, expected, rtol=1e-4, atol=1e-5, what=program.source)


EXPORT_CHECK = """
import sys, numpy as np, ember
lib = ember.load_module(sys.argv[1])
ex = ember.GraphExecutor(lib, ember.cpu(0))
ex.set_input("data", np.load(sys.argv[2]))
ex.run()
np.save(sys.argv[3], ex.get_output(0).numpy())
"""


def test_export_and_load_in_a_fresh_process(tmp_path: Path) -> None:
    module, params = workloads.get("convbnrelu")
    lib = ember.build(module, target="llvm", params=params)
    data = np.random.default_rng(3).standard_normal((1, 3, 224, 224)).astype("float32")
    (expected,) = run_compiled(lib, {"data": data})
    lib.export_library(tmp_path / "net")
    manifest = json.loads((tmp_path / "net" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["target"] == "llvm" and "program.o" in manifest["payload"]
    np.save(tmp_path / "data.npy", data)
    subprocess.run(
        [sys.executable, "-c", EXPORT_CHECK, str(tmp_path / "net"),
         str(tmp_path / "data.npy"), str(tmp_path / "out.npy")],
        check=True,
    )
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)


def test_damaged_object_file_is_rejected(tmp_path: Path) -> None:
    module, params = workloads.get("mlp")
    ember.build(module, target="llvm", params=params).export_library(tmp_path / "net")
    obj = tmp_path / "net" / "program.o"
    obj.write_bytes(obj.read_bytes()[:100])
    with pytest.raises(ArtifactError, match="program.o"):
        ember.load_module(tmp_path / "net")


def test_missing_artifact_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError):
        ember.load_module(tmp_path / "nothing-here")


def test_executor_input_errors() -> None:
    module, params = workloads.get("mlp")
    ex = ember.GraphExecutor(ember.build(module, target="llvm", params=params), ember.cpu(0))
    with pytest.raises(ember.EmberError, match="data"):
        ex.run()  # no input set yet
    with pytest.raises(ember.EmberError, match="dta"):
        ex.set_input("dta", np.zeros((1, 784), "float32"))
    with pytest.raises(ember.EmberError, match=r"1, 784.*1, 783"):
        ex.set_input("data", np.zeros((1, 783), "float32"))
    with pytest.raises(ember.EmberError, match="float64|dtype"):
        ex.set_input("data", np.zeros((1, 784), "float64"))


PROGRAM = Path(__file__).parent / "filecheck" / "lowering" / "program-to-llvm.mlir"


def test_program_frame_workspace_reuse_and_copies() -> None:
    """Returned arguments and constants are copied; reused workspace is right."""

    @ember.register_func("env.add_one", override=True)
    def add_one(x, out):
        np.add(x.numpy(), 1, out=np.from_dlpack(out))

    try:
        lib = ember.build(PROGRAM.read_text(encoding="utf-8"), target="llvm")
        x = np.arange(4, dtype="float32")
        d, same_x, c = run_compiled(lib, {"x": x})
    finally:
        ember.remove_global_func("env.add_one")
    np.testing.assert_array_equal(d, (x * 4 + 1) * 2)
    np.testing.assert_array_equal(same_x, x)
    np.testing.assert_array_equal(c, [1, 2, 3, 4])


def test_target_libs_offloads_after_folding() -> None:
    """'llvm -libs=blas' (TVM's -libs): conv2d goes to BLAS, batch_norm stays folded."""
    module, params = workloads.get("convbnrelu")
    lib = ember.build(module, target="llvm -libs=blas", params=params)
    assert lib.extern_funcs == ("blas.conv2d",)
    data = np.random.default_rng(5).standard_normal((1, 3, 224, 224)).astype("float32")
    (out,) = run_compiled(lib, {"data": data})
    (ref,) = ember.interpret(module, "main", data, *params.values())
    assert relative_error(out, ref) <= 1e-4


@pytest.mark.parametrize(
    ("target", "message"),
    [("llvm -lib=blas", "unknown target option"), ("llvm -libs=cudnn", "unknown library 'cudnn'")],
)
def test_bad_target_options_are_errors(target: str, message: str) -> None:
    module, params = workloads.get("mlp")
    with pytest.raises(ember.EmberError, match=message):
        ember.build(module, target=target, params=params)


@pytest.mark.parametrize(
    ("source", "target"),
    [("f32", "i32"), ("f16", "i32"), ("f32", "i64"), ("i32", "i64"), ("i64", "i32"), ("i32", "f16")],
)
def test_casts_compile_like_astype(source: str, target: str) -> None:
    text = f"""
    func.func @main(%x: tensor<6x{source}>) -> tensor<6x{target}> {{
      %0 = graph.cast %x : (tensor<6x{source}>) -> tensor<6x{target}>
      func.return %0 : tensor<6x{target}>
    }}"""
    dtypes = {"f32": "float32", "f16": "float16", "i32": "int32", "i64": "int64"}
    x = np.array([-2.7, -1.2, 0, 1.5, 3.9, 100], dtype=dtypes[source])
    (out,) = run_compiled(ember.build(text, target="llvm"), {"x": x})
    np.testing.assert_array_equal(out, x.astype(dtypes[target]))
