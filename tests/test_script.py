"""ember script: kernels and modules written in Python, errors at the user's
line, the builder's call_kernel/call_extern, and VM-style calls."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import builder as nn
from ember import script as T
from ember.errors import EmberError, IRError
from ember.interp.kernel_impls import run_kernel
from ember.script import ScriptError

HERE = Path(__file__).resolve()
SEED_003 = HERE.parent / "filecheck" / "dialects" / "kernel" / "seed-003.mlir"


# --------------------------------------------------------------------------
# Kernels (the seed-003 MLP, as TVMScript wrote it)
# --------------------------------------------------------------------------


@T.kernel
def linear0(
    X: T.Buffer((1, 784), "float32"),
    W: T.Buffer((128, 784), "float32"),
    B: T.Buffer((128,), "float32"),
    Z: T.Buffer((1, 128), "float32"),
):
    Y = T.alloc_buffer((1, 128), "float32")
    for i, j, k in T.grid(1, 128, 784):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
    for i, j in T.grid(1, 128):
        with T.block("Z"):
            vi, vj = T.axis.remap("SS", [i, j])
            Z[vi, vj] = Y[vi, vj] + B[vj]


@T.kernel
def relu0(X: T.Buffer((1, 128), "float32"), Y: T.Buffer((1, 128), "float32")):
    for i in range(1):
        for j in T.parallel(128):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))


@T.kernel
def linear1(
    X: T.Buffer((1, 128), "float32"),
    W: T.Buffer((10, 128), "float32"),
    B: T.Buffer((10,), "float32"),
    Z: T.Buffer((1, 10), "float32"),
):
    Y = T.alloc_buffer((1, 10), "float32")
    for i, j, k in T.grid(1, 10, 128):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
    for i, j in T.grid(1, 10):
        with T.block("Z"):
            vi, vj = T.axis.remap("SS", [i, j])
            Z[vi, vj] = Y[vi, vj] + B[vj]


@T.module
class MLP:
    linear0 = linear0
    relu0 = relu0
    linear1 = linear1

    @T.function
    def main(
        x: T.Tensor((1, 784), "float32"),
        w0: T.Tensor((128, 784), "float32"),
        b0: T.Tensor((128,), "float32"),
        w1: T.Tensor((10, 128), "float32"),
        b1: T.Tensor((10,), "float32"),
    ):
        lv0 = T.call_kernel(cls.linear0, (x, w0, b0), out=T.Tensor((1, 128), "float32"))  # noqa: F821
        lv1 = T.call_kernel(cls.relu0, (lv0,), out=T.Tensor((1, 128), "float32"))  # noqa: F821
        return T.call_kernel(cls.linear1, (lv1, w1, b1), out=T.Tensor((1, 10), "float32"))  # noqa: F821


def _mlp_args(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = [(1, 784), (128, 784), (128,), (10, 128), (10,)]
    return [rng.standard_normal(s).astype("float32") for s in shapes]


def _numpy_mlp(x, w0, b0, w1, b1):
    return np.maximum(x @ w0.T + b0, 0) @ w1.T + b1


def test_python_kernels_are_the_seed_003_kernels() -> None:
    """Written in Python, the three kernels are the hand-written IR's, op for op."""
    written = ember.parse(SEED_003.read_text(encoding="utf-8"))
    by_name = {op.sym_name.data: op for op in written.ops}
    for k in (linear0, relu0, linear1):
        assert k.func.is_structurally_equivalent(by_name[k.name]), k.name


def test_printed_kernel_parses_back_to_the_same_ir() -> None:
    for k in (linear0, relu0, linear1):
        text = str(k)
        again = ember.parse(text)
        assert ember.to_text(again) == text


def test_kernel_runs_on_the_kernel_interpreter() -> None:
    x = np.random.default_rng(1).standard_normal((1, 128)).astype("float32")
    y = np.empty_like(x)
    run_kernel(relu0.module(), "relu0", x, y)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_script_module_interprets_and_compiles() -> None:
    args = _mlp_args()
    expected = _numpy_mlp(*args)
    (interpreted,) = ember.interpret(MLP, "main", *args)
    np.testing.assert_allclose(interpreted, expected, rtol=1e-4, atol=1e-4)
    lib = ember.build(MLP, target="llvm")
    np.testing.assert_allclose(lib["main"](*args).numpy(), expected, rtol=1e-4, atol=1e-4)


def test_loop_kinds_intrinsics_and_scalars() -> None:
    @T.kernel
    def softplus(X: T.Buffer((4, 16), "float32"), Y: T.Buffer((4, 16), "float32")):
        """Y = log(1 + exp(x)) for x < 20, else x."""
        for i in T.parallel(4):
            for j in T.vectorized(0, 16):
                with T.block("Y"):
                    vi = T.axis.spatial(4, i)
                    vj = T.axis.spatial(16, j)
                    x = X[vi, vj]
                    Y[vi, vj] = T.if_then_else(x < 20.0, T.log(1.0 + T.exp(x)), x)

    assert 'kernel.for %i = 0 to 4 parallel' in str(softplus)
    assert 'kernel.for %j = 0 to 16 vectorized' in str(softplus)
    x = np.linspace(-5, 25, 64, dtype="float32").reshape(4, 16)
    y = np.empty_like(x)
    run_kernel(softplus.module(), "softplus", x, y)
    np.testing.assert_allclose(y, np.where(x < 20, np.log1p(np.exp(x)), x), rtol=1e-5)


def test_index_arithmetic_casts_and_integer_buffers() -> None:
    @T.kernel
    def flip(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = T.cast(A[7 - vi] * 2 + vi % 3, "float32")

    a = np.arange(8, dtype="int32")
    b = np.empty(8, "float32")
    run_kernel(flip.module(), "flip", a, b)
    np.testing.assert_array_equal(b, (a[::-1] * 2 + np.arange(8) % 3).astype("float32"))


def test_every_kernel_of_the_kernel_dialect_doc_can_be_written_in_python() -> None:
    """docs/kernel-dialect.md's kernels (the valid ones) written in ember
    script are the page's IR, op for op."""
    import re

    doc = (HERE.parents[1] / "docs" / "kernel-dialect.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(mlir|python|sh)[^\n]*\n(.*?)```", doc, flags=re.S)
    written = {}
    for kind, block in blocks:
        lines = block.splitlines()
        for n, line in enumerate(lines):
            if not line.lstrip().startswith("func.func @") or "{kernel.kernel}" not in line:
                continue
            indent = line[: len(line) - len(line.lstrip())]
            end = next(m for m in range(n + 1, len(lines)) if lines[m] == indent + "}")
            text = "\n".join(l.removeprefix(indent) for l in lines[n : end + 1])
            name = line.split("@", 1)[1].split("(", 1)[0]
            if kind == "mlir" and "expected-error" in block or ") -> f32" in line:
                continue  # error examples and the contract-breaking @first
            written[name] = next(iter(ember.parse(text).ops))

    @T.kernel
    def tiled(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
        for io in T.unroll(0, 64, 16):
            for ii in T.vectorized(16):
                i = io + ii
                with T.block("C"):
                    vi = T.axis.spatial(64, i)
                    C[vi] = T.exp(A[vi])

    @T.kernel
    def rowsum(A: T.Buffer((4, 8), "float32"), S: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 8):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]

    @T.kernel
    def gather(I: T.Buffer((2,), "int64"), X: T.Buffer((8,), "float32"), Y: T.Buffer((2,), "float32")):
        for i in range(2):
            at = T.cast(I[i], "index")
            Y[i] = X[at]

    @T.kernel
    def fused_bias_add_relu(
        data: T.Buffer((2, 8), "float32"),
        bias: T.Buffer((8,), "float32"),
        out: T.Buffer((2, 8), "float32"),
    ):
        for i0 in T.parallel(2):
            for i1 in T.vectorized(8):
                with T.block("bias_add"):
                    vi0, vi1 = T.axis.remap("SS", [i0, i1])
                    out[vi0, vi1] = T.max(data[vi0, vi1] + bias[vi1], 0.0)

    mine = {
        k.name: k
        for k in (relu0, linear0, linear1, tiled, rowsum, gather, fused_bias_add_relu)
    }
    assert set(written) == set(mine), "a kernel of the page has no Python version here"
    for name, kernel in mine.items():
        assert kernel.func.is_structurally_equivalent(written[name]), name


# --------------------------------------------------------------------------
# Errors point at the user's line
# --------------------------------------------------------------------------


def _line_of(text: str) -> int:
    for number, line in enumerate(HERE.read_text(encoding="utf-8").splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(text)


def test_unsupported_construct_points_at_its_line() -> None:
    with pytest.raises(ScriptError) as caught:

        @T.kernel
        def bad(X: T.Buffer((4,), "float32")):
            for i in range(4):
                while True:  # the unsupported line
                    pass

    message = str(caught.value)
    line = _line_of("while True:  # the unsupported line")
    assert message.startswith(f"{HERE}:{line}:17: error: ember script does not support While")
    assert "while True:  # the unsupported line" in message
    assert isinstance(caught.value, EmberError)


def test_shape_mismatch_in_a_kernel_points_at_the_index() -> None:
    with pytest.raises(ScriptError) as caught:

        @T.kernel
        def bad(X: T.Buffer((4, 4), "float32"), Y: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("Y"):
                    vi = T.axis.spatial(4, i)
                    Y[vi] = X[vi]  # one index for two dimensions

    line = _line_of("Y[vi] = X[vi]  # one index")
    assert f"{HERE}:{line}:29: error: 'X' has 2 dimension(s) but is indexed with 1" in str(
        caught.value
    )


def test_type_errors_and_unknown_names() -> None:
    with pytest.raises(ScriptError, match="stores a i32 into a buffer of f32"):

        @T.kernel
        def bad_store(Y: T.Buffer((4,), "float32")):
            for i in range(4):
                Y[i] = T.int32(1)

    with pytest.raises(ScriptError, match="unknown name 'Z' in a kernel"):

        @T.kernel
        def bad_name(Y: T.Buffer((4,), "float32")):
            for i in range(4):
                Y[i] = Z[i]  # noqa: F821

    with pytest.raises(ScriptError, match="argument 'Y' needs a type"):

        @T.kernel
        def untyped(Y):
            pass


def test_graph_function_errors_point_at_the_call() -> None:
    with pytest.raises(ScriptError) as caught:

        @T.module
        class Bad:
            relu0 = relu0

            @T.function
            def main(x: T.Tensor((1, 64), "float32")):
                return T.call_kernel(cls.relu0, (x,), out=T.Tensor((1, 64), "float32"))  # noqa: F821

    line = _line_of("return T.call_kernel(cls.relu0, (x,), out=T.Tensor((1, 64)")
    message = str(caught.value)
    assert message.startswith(f"{HERE}:{line}:")
    assert "input 0 is tensor<1x64xf32> but @relu0 expects memref<1x128xf32>" in message

    with pytest.raises(ScriptError) as caught:

        @T.module
        class Mismatch:
            @T.function
            def main(x: T.Tensor((1, 8), "float32"), w: T.Tensor((4, 9), "float32")):
                return nn.dense(x, w)  # a shape mismatch

    assert f":{_line_of('return nn.dense(x, w)  # a shape mismatch')}:" in str(caught.value)


# --------------------------------------------------------------------------
# call_extern, the builder, and VM calls
# --------------------------------------------------------------------------


def test_call_extern_overrides_a_kernel_with_a_registered_function() -> None:
    def env_relu(x: ember.NDArray, out: ember.NDArray) -> None:
        np.maximum(x.numpy(), 0, out=np.from_dlpack(out))

    ember.register_func("test_script.relu", env_relu, override=True)
    try:

        @T.module
        class Mixed:
            linear0 = linear0
            linear1 = linear1

            @T.function
            def main(x: T.Tensor((1, 784), "float32"), w0: T.Tensor((128, 784), "float32"),
                     b0: T.Tensor((128,), "float32"), w1: T.Tensor((10, 128), "float32"),
                     b1: T.Tensor((10,), "float32")):
                lv0 = T.call_kernel(cls.linear0, (x, w0, b0), out=T.Tensor((1, 128), "float32"))  # noqa: F821
                lv1 = T.call_extern("test_script.relu", (lv0,), out=T.Tensor((1, 128), "float32"))
                return T.call_kernel(cls.linear1, (lv1, w1, b1), out=T.Tensor((1, 10), "float32"))  # noqa: F821

        assert 'graph.call_extern "test_script.relu"' in str(Mixed)
        args = _mlp_args(2)
        lib = ember.build(Mixed, target="llvm")
        np.testing.assert_allclose(lib["main"](*args).numpy(), _numpy_mlp(*args), rtol=1e-4, atol=1e-4)
    finally:
        ember.remove_global_func("test_script.relu")


def test_unknown_extern_names_the_line_that_calls_it() -> None:
    @T.module
    class Unknown:
        @T.function
        def main(x: T.Tensor((4,), "float32")):
            return T.call_extern("test_script.nowhere", (x,), out=T.Tensor((4,), "float32"))

    lib = ember.build(Unknown, target="llvm")
    with pytest.raises(ember.EmberError) as caught:
        lib["main"](np.zeros(4, "float32"))
    line = _line_of('return T.call_extern("test_script.nowhere"')
    assert f"{HERE}:{line}:13: " in str(caught.value)
    assert "test_script.nowhere" in str(caught.value)


def test_builder_call_kernel_and_call_extern() -> None:
    x = nn.var("x", (1, 128))
    y = nn.call_kernel("relu0", (x,), out=((1, 128), "float32"))
    z = nn.call_extern("env.whatever", (nn.relu(y),), out=T.Tensor((1, 128), "float32"))
    module = nn.module(nn.function(z), relu0.func)
    text = str(module)
    assert "graph.call_kernel @relu0(%x)" in text
    assert 'graph.call_extern "env.whatever"' in text
    with pytest.raises(IRError, match="out must be the result type"):
        nn.call_kernel("relu0", (x,), out=(1, 128))


def test_vm_call_takes_numpy_ndarray_and_dlpack_and_is_zero_copy() -> None:
    args = _mlp_args(3)
    lib = ember.build(MLP, target="llvm", params={"w1": args[3], "b1": args[4]})
    vm = ember.VirtualMachine(lib, ember.cpu(0))
    expected = _numpy_mlp(*args)
    # numpy, NDArray and a DLPack producer (an NDArray seen through __dlpack__)
    aligned = ember.nd.array(args[0])

    class Producer:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    for x in (args[0], aligned, Producer(aligned)):
        out = vm["main"](x, args[1], args[2])
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-4)
    by_name = vm["main"](x=args[0], w0=args[1], b0=args[2])
    np.testing.assert_allclose(by_name.numpy(), expected, rtol=1e-4, atol=1e-4)

    # zero copy: the compiled code reads the caller's aligned memory itself
    from ember.runtime.vm import VirtualMachine

    shared = VirtualMachine._argument(lib.input_specs[0], Producer(aligned), "@main")
    assert shared.data_ptr == aligned.data_ptr
    # outputs are the caller's: DLPack hands them on without a copy
    assert np.from_dlpack(out).ctypes.data == out.data_ptr


def test_vm_call_errors() -> None:
    lib = ember.build(MLP, target="llvm")
    args = _mlp_args()
    with pytest.raises(ember.RuntimeFailure, match="missing input"):
        lib["main"](args[0])
    with pytest.raises(ember.RuntimeFailure, match=r"input 'x': expected float32\[1, 784\], got float64"):
        lib["main"](args[0].astype("float64"), *args[1:])
    with pytest.raises(ember.RuntimeFailure, match="takes 5 input"):
        lib["main"](*args, args[0])
    with pytest.raises(ember.RuntimeFailure, match="has no input 'y'"):
        lib["main"](*args[:4], y=args[4])
    with pytest.raises(ember.RuntimeFailure, match="module has no function 'forward'"):
        lib["forward"]


def test_vm_calls_from_threads_do_not_share_state() -> None:
    lib = ember.build(MLP, target="llvm")
    vm = ember.VirtualMachine(lib)
    failures: list[str] = []

    def worker(seed: int) -> None:
        for step in range(20):
            args = _mlp_args(seed * 100 + step)
            got = vm["main"](*args).numpy()
            if not np.allclose(got, _numpy_mlp(*args), rtol=1e-4, atol=1e-4):
                failures.append(f"thread {seed} step {step}")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


# --------------------------------------------------------------------------
# Pictures
# --------------------------------------------------------------------------


def test_to_dot_draws_fused_groups_and_stages() -> None:
    from ember.testing import workloads

    module, params = workloads.get("convbnrelu")
    fused = ember.apply_passes(ember.bind_params(module, params), "simplify-inference,fold-constants,fuse-ops")
    dot = fused.to_dot()
    assert dot.startswith('digraph "ember" {')
    assert 'label="fused @fused_conv2d_add_relu"' in dot
    mlp, _ = workloads.get("mlp")
    split = ember.apply_passes(mlp, "split-graph{ops=relu indices=0}")
    staged = ember.to_dot(split)
    assert 'label="pipeline @main"' in staged
    assert 'label="stage @main_0 (llvm, cpu:0)"' in staged


def test_ember_translate_emits_dot(capsys) -> None:
    from ember.tools import ember_translate

    mlp = str(HERE.parents[1] / "examples" / "mlp.mlir")
    assert ember_translate.main([mlp, "--emit=dot"]) == 0
    out = capsys.readouterr().out
    assert 'label="fused @fused_dense_bias_add_relu"' in out


def test_svg_through_graphviz() -> None:
    import shutil

    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    from ember.visualize import to_svg

    svg = to_svg(MLP)
    assert "<svg" in svg and "call_kernel @linear0" in svg
