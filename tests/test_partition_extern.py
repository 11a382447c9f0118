"""``partition-extern{libs=blas}`` and the ``blas.*`` functions it offloads to.

Soundness on random programs (interpreted before and after, the ``blas.*``
calls running through the registry), end-to-end builds of the mlp and
convbnrelu workloads against the reference interpreter, what the pass must
leave alone, its errors, and name resolution in a fresh process (the
registry imports :mod:`ember.runtime.blas` on the first ``blas.*`` lookup).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue

import ember
from ember.dialects.graph import (
    CallExternOp,
    Conv2dOp,
    DenseOp,
    MatmulOp,
    numpy_dtype,
    tensor_type,
)
from ember.errors import PassError, RuntimeFailure
from ember.passes.partition_extern import LIBRARIES, PartitionExternPass
from ember.runtime import blas
from ember.runtime.module import Module, signature_of
from ember.runtime.registry import call_dps_packed, get_global_func
from ember.testing import assert_same_values, workloads
from ember.testing.strategies import GraphProgram, graph_programs, op_names

OFFLOAD = "partition-extern{libs=blas}"
ANCHORS = ("graph.dense", "graph.matmul", "graph.conv2d")


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-4) -> None:
    """Within ``rtol`` of the largest magnitude: BLAS sums in another order
    than the reference, so small elements carry the error of large ones."""
    assert_same_values(got, want, rtol=rtol, atol=rtol, scale_atol=True)


def externs(module: ModuleOp) -> list[str]:
    return [op.function for op in module.walk() if isinstance(op, CallExternOp)]


def offloadable(module: ModuleOp) -> int:
    """How many ops the blas library should take: float32 dense and matmul,
    float32 conv2d with groups = 1."""
    count = 0
    for op in module.walk():
        if not isinstance(op, DenseOp | MatmulOp | Conv2dOp):
            continue
        if numpy_dtype(op.results[0].type.element_type) != np.float32:
            continue
        if isinstance(op, Conv2dOp) and op.attr("groups") != 1:
            continue
        count += 1
    return count


# --------------------------------------------------------------------------
# Soundness
# --------------------------------------------------------------------------


@given(
    graph_programs(
        ops=("dense", "matmul", "conv2d", "bias_add", "relu", "add", "constant"),
        dtypes=("float32", "float16"),
        max_ops=5,
    )
)
def test_partition_extern_is_sound(program: GraphProgram) -> None:
    assume(any(name in program.op_names for name in ANCHORS))
    before = ember.interpret(program.module, program.entry, *program.inputs)
    expected_calls = offloadable(program.module)
    module = ember.apply_passes(program.module, OFFLOAD)
    after = ember.interpret(module, program.entry, *program.inputs)
    for got, want in zip(after, before, strict=True):
        assert_close(got, want, rtol=1e-4 if want.dtype == np.float32 else 1e-2)
    # Every float32 anchor (grouped convolutions aside) went to BLAS, no other op.
    assert len(externs(module)) == expected_calls
    assert offloadable(module) == 0


# --------------------------------------------------------------------------
# End to end: build with the offload, compare with the reference
# --------------------------------------------------------------------------


def _inputs(module: ModuleOp, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    specs = signature_of(module).inputs
    return {
        s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype)
        for s in specs
        if s.name not in params
    }


def _reference(
    module: ModuleOp, params: dict[str, np.ndarray], inputs: dict[str, np.ndarray]
) -> np.ndarray:
    specs = signature_of(module).inputs
    args = [params[s.name] if s.name in params else inputs[s.name] for s in specs]
    return ember.interpret(module, "main", *args)[0]


def _run(lib: Module, inputs: dict[str, np.ndarray]) -> np.ndarray:
    executor = ember.GraphExecutor(lib, ember.cpu(0))
    executor.set_input(**inputs)
    executor.run()
    return executor.get_output(0).numpy()


@pytest.mark.parametrize(
    ("workload", "function"), [("mlp", blas.SGEMM), ("convbnrelu", blas.CONV2D)]
)
def test_build_with_offload_matches_the_interpreter(
    workload: str, function: str
) -> None:
    module, params = workloads.get(workload)
    inputs = _inputs(module, params)
    want = _reference(module, params, inputs)

    offloaded = ember.apply_passes(module, OFFLOAD)
    assert function in externs(offloaded)
    # build binds the params as constants and runs fold-constants: the
    # call_extern on constant weights must survive it, and still compute.
    lib = ember.build(offloaded, target="llvm", params=params)
    assert lib.extern_funcs == (function,)
    assert_close(_run(lib, inputs), want)


def test_offload_after_folding_batch_norm_into_the_weights() -> None:
    """The order that keeps conv + batch_norm one GEMM: bind, fold, offload."""
    module, params = workloads.get("convbnrelu")
    inputs = _inputs(module, params)
    want = _reference(module, params, inputs)
    folded = ember.apply_passes(
        ember.bind_params(module, params),
        f"simplify-inference,fold-constants,{OFFLOAD}",
    )
    names = op_names(folded, "main")
    assert "graph.multiply" not in names  # the scale went into the weights
    assert names.count("graph.call_extern") == 1
    assert_close(_run(ember.build(folded, target="llvm"), inputs), want)


def test_fold_constants_leaves_an_extern_call_on_constants_alone() -> None:
    module = ember.parse(
        """
func.func @main() -> tensor<2x3xf32> {
  %x = graph.constant {value = dense<1.0> : tensor<2x4xf32>} : tensor<2x4xf32>
  %w = graph.constant {value = dense<0.5> : tensor<3x4xf32>} : tensor<3x4xf32>
  %y = graph.dense %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""
    )
    folded = ember.apply_passes(
        module, f"{OFFLOAD},fold-constants,canonicalize,cse,dce"
    )
    assert externs(folded) == [blas.SGEMM]
    np.testing.assert_array_equal(
        ember.interpret(folded, "main")[0], np.full((2, 3), 2.0, np.float32)
    )


# --------------------------------------------------------------------------
# The blas functions themselves
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data_shape", "weight_shape", "attrs"),
    [
        (
            (2, 3, 9, 7),
            (4, 3, 3, 3),
            {"strides": [2, 1], "padding": [1, 0, 2, 1], "dilation": [1, 2]},
        ),
        (
            (1, 5, 6, 6),
            (3, 5, 1, 1),
            {},
        ),  # 1x1, stride 1: the GEMM reads the data in place
        ((1, 4, 8, 8), (2, 4, 1, 1), {"strides": [2, 2]}),
        ((1, 2, 5, 5), (6, 2, 5, 5), {"padding": [2, 2, 2, 2]}),
    ],
)
def test_blas_conv2d_matches_the_reference(
    data_shape: tuple[int, ...],
    weight_shape: tuple[int, ...],
    attrs: dict[str, list[int]],
) -> None:
    from ember.interp.reference import evaluate

    rng = np.random.default_rng(3)
    data = rng.standard_normal(data_shape).astype(np.float32)
    weight = rng.standard_normal(weight_shape).astype(np.float32)
    op = Conv2dOp.build(
        [_arg(tensor_type(data_shape)), _arg(tensor_type(weight_shape))], **attrs
    )
    want = evaluate(op, [data, weight])
    conv_attrs = blas.conv2d_attrs(
        op.attr("strides"), op.attr("padding"), op.attr("dilation")
    )
    (got,) = call_dps_packed(
        blas.CONV2D, [data, weight, conv_attrs], [(want.shape, "float32")]
    )
    assert_close(np.asarray(got), want)


def _arg(t: object) -> SSAValue:
    """A free SSA value of type ``t`` to build an op on."""
    return Block(arg_types=[t]).args[0]


def test_blas_functions_give_nan_and_inf_without_warnings() -> None:
    """IEEE special values are results (docs/graph-dialect.md), not warnings."""
    x = np.array([[np.nan, 1.0], [np.inf, -np.inf]], np.float32)
    w = np.ones((3, 2), np.float32)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,) = call_dps_packed(blas.SGEMM, [x, w], [((2, 3), "float32")])
    assert np.isnan(np.asarray(got)).all()


def test_blas_functions_reject_other_dtypes_and_bad_attrs() -> None:
    half = np.ones((2, 2), np.float16)
    with pytest.raises(
        RuntimeFailure,
        match="blas.sgemm: data is float16; the BLAS functions take float32 only",
    ):
        call_dps_packed(blas.SGEMM, [half, half], [((2, 2), "float16")])
    data, weight = np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 1, 1), np.float32)
    with pytest.raises(RuntimeFailure, match="attrs must hold 8 integers"):
        call_dps_packed(
            blas.CONV2D,
            [data, weight, np.ones(3, np.int64)],
            [((1, 1, 3, 3), "float32")],
        )
    attrs = blas.conv2d_attrs((1, 1), (0, 0, 0, 0), (1, 1))
    with pytest.raises(
        RuntimeFailure,
        match=r"give an output of \[1, 1, 3, 3\], but the output buffer is \[1, 1, 5, 5\]",
    ):
        call_dps_packed(blas.CONV2D, [data, weight, attrs], [((1, 1, 5, 5), "float32")])
    with pytest.raises(RuntimeFailure, match="stride_h=0"):
        bad = blas.conv2d_attrs((0, 1), (0, 0, 0, 0), (1, 1))
        call_dps_packed(blas.CONV2D, [data, weight, bad], [((1, 1, 3, 3), "float32")])


# --------------------------------------------------------------------------
# What must not be offloaded, and errors
# --------------------------------------------------------------------------


def test_float16_and_grouped_convolutions_stay() -> None:
    module = ember.parse(
        """
func.func @main(%h: tensor<2x8xf16>, %hw: tensor<4x8xf16>, %x: tensor<1x4x6x6xf32>, %dw: tensor<4x1x3x3xf32>) -> (tensor<2x4xf16>, tensor<1x4x4x4xf32>) {
  %y = graph.dense %h, %hw : (tensor<2x8xf16>, tensor<4x8xf16>) -> tensor<2x4xf16>
  %z = graph.conv2d %x, %dw {groups = 4} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %y, %z : tensor<2x4xf16>, tensor<1x4x4x4xf32>
}
"""
    )
    assert str(ember.apply_passes(module, OFFLOAD)) == str(module)


@pytest.mark.parametrize("libs", [("cudnn",), ("blas", "cublas"), ()])
def test_unknown_library_is_an_error_listing_the_known_ones(
    libs: tuple[str, ...],
) -> None:
    with pytest.raises(PassError, match="known libraries: blas") as error:
        PartitionExternPass(libs=libs)
    for lib in libs:
        if lib not in LIBRARIES:
            assert repr(lib) in str(error.value)


def test_unknown_library_in_a_pipeline_fails_before_any_pass_runs() -> None:
    module = ember.parse("func.func @main() {\n  func.return\n}\n")
    with pytest.raises(PassError, match="unknown library 'cudnn' in libs=cudnn"):
        ember.apply_passes(module, "canonicalize,partition-extern{libs=cudnn}")


# --------------------------------------------------------------------------
# Name resolution in a fresh process
# --------------------------------------------------------------------------

_FRESH_PROCESS = textwrap.dedent(
    """
    import sys
    import numpy as np
    import ember

    # A user's own function registered first is kept (blas registers the rest).
    def mine(x, w, out):
        np.asarray(out)[...] = 7.0
    ember.register_func("blas.sgemm", mine)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert "ember.runtime.blas" not in sys.modules
    lib = ember.load_module(sys.argv[1])  # resolves "blas.matmul" on load
    assert "ember.runtime.blas" in sys.modules
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.set_input(x=x)
    ex.run()
    assert np.allclose(ex.get_output(0).numpy(), x @ np.full((3, 4), 0.5, np.float32))

    text = '''
    func.func @main(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
      %y = graph.call_extern "blas.sgemm"(%x, %w) : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
      func.return %y : tensor<2x4xf32>
    }
    '''
    (y,) = ember.interpret(ember.parse(text), "main", x, np.ones((4, 3), np.float32))
    assert (y == 7.0).all(), y
    print("ok")
    """
)


def test_blas_names_resolve_in_a_fresh_process(tmp_path: Path) -> None:
    module = ember.parse(
        """
func.func @main(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""
    )
    params = {"w": np.full((3, 4), 0.5, np.float32)}
    artifact = tmp_path / "matmul.ember"
    lib = ember.build(ember.apply_passes(module, OFFLOAD), target="llvm", params=params)
    assert lib.extern_funcs == (blas.MATMUL,)
    lib.export_library(artifact)
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS, str(artifact)],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_unknown_blas_name_suggests_the_registered_ones() -> None:
    from ember.runtime.registry import UnknownFunctionError

    with pytest.raises(UnknownFunctionError, match="did you mean 'blas.sgemm'"):
        get_global_func("blas.sgem")
