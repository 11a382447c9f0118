"""lower-graph-to-kernel: generated kernels compute what the graph ops mean.

Each test lowers a small graph function, runs the generated kernels with the
kernel interpreter (``run_kernel``, loop by loop) and compares with the
reference interpreter on the original function.  Shapes are tiny because
the kernel interpreter runs ~10k loop iterations a second.  Groups of several
ops (conv2d + batch_norm + relu, dense + bias_add + relu) are lowered into
one kernel and checked the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp

import ember
from ember.dialects.graph import CallKernelOp, ConstantOp, numpy_dtype
from ember.dialects.kernel import is_kernel
from ember.errors import PassError
from ember.interp.kernel_impls import run_kernel
from ember.lowering.graph_to_kernel import (
    VectorTarget,
    WeightPacking,
    kernel_stem,
    lower_group,
    make_group,
)
from ember.passes.bind_params import bind_params_in_place
from ember.passes.kernel_pad_input import KernelPadInputPass
from ember.passes.kernel_tensorize import KernelTensorizePass
from ember.passes.lower_graph_to_kernel import LowerGraphToKernelPass
from ember.passes.pipeline import apply_passes
from ember.testing import assert_same_values

RNG_SEED = 0


def _random(shape: tuple[int, ...], dtype: Any, positive: bool = False) -> np.ndarray:
    rng = np.random.default_rng(RNG_SEED + len(shape) + sum(shape))
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    values = rng.standard_normal(shape).astype(np.float32)
    if positive:
        values = np.abs(values) + np.float32(0.1)
    return values.astype(dtype)


def _inputs(module: ModuleOp, positive: bool = False) -> list[np.ndarray]:
    main = _main(module)
    return [
        _random(tuple(t.get_shape()), numpy_dtype(t.element_type), positive)
        for t in main.function_type.inputs.data
    ]


def _main(module: ModuleOp) -> FuncOp:
    return next(
        op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == "main"
    )


def run_lowered(module: ModuleOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Run @main of a lowered module: constants, then each call_kernel with
    the kernel interpreter (outputs start as NaN so unwritten elements show)."""
    main = _main(module)
    env: dict[Any, np.ndarray] = dict(zip(main.args, args))
    for op in main.body.block.ops:
        if isinstance(op, ConstantOp):
            env[op.results[0]] = op.to_array()
        elif isinstance(op, CallKernelOp):
            outs = [
                np.full(
                    tuple(r.type.get_shape()), np.nan, numpy_dtype(r.type.element_type)
                )
                if numpy_dtype(r.type.element_type).kind == "f"
                else np.zeros(
                    tuple(r.type.get_shape()), numpy_dtype(r.type.element_type)
                )
                for r in op.results
            ]
            run_kernel(module, op.callee, *[env[v] for v in op.operands], *outs)
            env.update(zip(op.results, outs))
        elif isinstance(op, ReturnOp):
            return [env[v] for v in op.operands]
        else:
            pytest.fail(f"unexpected op after lowering: {op.name}")
    pytest.fail("@main has no return")


VECTOR_BITS = 64
"""Kernels are shaped for 2-lane vectors here: panels of 2 or 4 channels,
so that tiny shapes run several panels, partial panels and two tile sizes
through the kernel interpreter (and the IR does not depend on the host)."""


def lower(module: ModuleOp, vector_bits: int = VECTOR_BITS) -> ModuleOp:
    """The kernels of ``module``: lowered, then conv2d, dense and matmul
    made micro-kernels (``kernel-pad-input``, ``kernel-tensorize``) for the
    same vector width."""
    LowerGraphToKernelPass(vector_bits=vector_bits).apply(Context(), module)
    KernelPadInputPass().apply(Context(), module)
    KernelTensorizePass(vector_bits=vector_bits).apply(Context(), module)
    ember.verify_module(module)
    return module


def _tolerance(dtype: np.dtype) -> dict[str, float]:
    if dtype == np.float16:
        return {"rtol": 2e-3, "atol": 2e-3}
    return {"rtol": 1e-5, "atol": 1e-5}


def check(
    text: str,
    positive: bool = False,
    exact: bool = False,
    params: dict[str, np.ndarray] | None = None,
) -> ModuleOp:
    """Lower ``text``'s @main, run it, compare with the reference interpreter.

    ``params`` binds arguments of @main (by name) as constants first, as
    ``ember.build`` does, so that the pass packs constant weights."""
    module = ember.parse(text)
    if params:
        bind_params_in_place(module, params, "main")
    args = _inputs(module, positive)
    expected = ember.interpret(module, "main", *args)
    lowered = lower(module)
    assert not any(
        op.name.startswith("graph.")
        and op.name not in ("graph.call_kernel", "graph.constant", "graph.call_extern")
        for op in _main(lowered).body.walk()
    )
    results = run_lowered(lowered, args)
    for got, want in zip(results, expected):
        tolerance = {"rtol": 0.0, "atol": 0.0} if exact else _tolerance(want.dtype)
        assert_same_values(got, want, **tolerance)
    return lowered


def unary(op: str, shape: str = "2x3x4", dtype: str = "f32", attrs: str = "") -> str:
    t = f"tensor<{shape}x{dtype}>"
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %0 = graph.{op} %x {attrs} : {t}
  func.return %0 : {t}
}}"""


def binary(
    op: str, lhs: str, rhs: str, out: str, dtype: str = "f32", attrs: str = ""
) -> str:
    a, b, o = (f"tensor<{s}x{dtype}>" for s in (lhs, rhs, out))
    return f"""
func.func @main(%a: {a}, %b: {b}) -> {o} {{
  %0 = graph.{op} %a, %b {attrs} : ({a}, {b}) -> {o}
  func.return %0 : {o}
}}"""


# --------------------------------------------------------------------------
# Every op, alone
# --------------------------------------------------------------------------

CONV_CASES = {
    "pad1": ("1x2x5x5", "3x2x3x3", "1x3x5x5", "padding = [1, 1, 1, 1]"),
    "strided_asymmetric": (
        "1x2x6x5",
        "2x2x3x2",
        "1x2x3x3",
        "strides = [2, 2], padding = [1, 0, 0, 1]",
    ),
    "dilated": ("1x1x6x6", "2x1x2x2", "1x2x4x4", "dilation = [2, 2]"),
    "groups": ("1x4x4x4", "4x2x3x3", "1x4x2x2", "groups = 2"),
    "batch2": ("2x1x3x3", "2x1x2x2", "2x2x2x2", ""),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv2d(case: str) -> None:
    data, weight, out, attrs = CONV_CASES[case]
    check(binary("conv2d", data, weight, out, attrs="{" + attrs + "}" if attrs else ""))


def test_conv2d_f16() -> None:
    check(
        binary(
            "conv2d", "1x2x4x4", "2x2x3x3", "1x2x4x4", "f16", "{padding = [1, 1, 1, 1]}"
        )
    )


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_dense(dtype: str) -> None:
    # K = 20: one chunk of 16 lanes and a tail of 4.
    check(binary("dense", "2x20", "3x20", "2x3", dtype))


def test_dense_short_reduction() -> None:
    check(binary("dense", "1x5", "4x5", "1x4"))


# --------------------------------------------------------------------------
# Register-blocked conv2d and dense: panels, tiles, packing
# --------------------------------------------------------------------------

# With 2-lane vectors a panel holds 4 channels (2 when there are at most 2),
# a tile at most 5 pixels (10): these shapes give full and partial panels,
# tiles of one size (25 = 5 × 5) and of two (14 pixels = 5 + 5 + 4).
BLOCKED_CONV_CASES = {
    "panels_and_tiles": ("1x2x2x7", "9x2x3x3", "1x9x2x7", "padding = [1, 1, 1, 1]"),
    "one_narrow_panel": ("1x3x5x5", "2x3x3x3", "1x2x5x5", "padding = [1, 1, 1, 1]"),
    "batch_strided": (
        "2x2x7x6",
        "5x2x3x3",
        "2x5x3x3",
        "strides = [2, 2], padding = [1, 1, 0, 1]",
    ),
    "dilated_1x1_unpadded": ("1x3x5x5", "6x3x1x1", "1x6x5x5", "dilation = [2, 2]"),
}


@pytest.mark.parametrize("packed", [False, True], ids=["runtime_pack", "prepacked"])
@pytest.mark.parametrize("case", sorted(BLOCKED_CONV_CASES))
def test_conv2d_blocked(case: str, packed: bool) -> None:
    data, weight, out, attrs = BLOCKED_CONV_CASES[case]
    text = binary("conv2d", data, weight, out, attrs="{" + attrs + "}")
    params = {"b": _random(_dims(weight), np.float32)} if packed else None
    check(text, params=params)


@pytest.mark.parametrize("packed", [False, True], ids=["runtime_pack", "prepacked"])
@pytest.mark.parametrize(
    "rows,depth,units", [(1, 7, 9), (2, 5, 3), (8, 6, 9), (13, 3, 4)]
)
def test_dense_blocked(rows: int, depth: int, units: int, packed: bool) -> None:
    weight = f"{units}x{depth}"
    text = binary("dense", f"{rows}x{depth}", weight, f"{rows}x{units}")
    params = {"b": _random(_dims(weight), np.float32)} if packed else None
    check(text, params=params)


def test_dense_prepacked_f16_weight() -> None:
    check(
        binary("dense", "3x5", "6x5", "3x6", "f16"),
        params={"b": _random((6, 5), np.float16)},
    )


def _dims(shape: str) -> tuple[int, ...]:
    return tuple(int(d) for d in shape.split("x"))


def test_prepacking_replaces_the_weight_constant() -> None:
    text = binary(
        "conv2d", "1x2x4x4", "9x2x3x3", "1x9x4x4", attrs="{padding = [1, 1, 1, 1]}"
    )
    lowered = check(text, params={"b": _random((9, 2, 3, 3), np.float32)})
    main = _main(lowered)
    constants = [op for op in main.body.block.ops if isinstance(op, ConstantOp)]
    # 9 channels in panels of 4: 3 panels, the last one padded with zeros.
    assert [str(op.results[0].type) for op in constants] == ["tensor<3x2x3x3x4xf32>"]
    packed = constants[0].to_array()
    assert not packed[2, :, :, :, 1:].any()
    kernel = next(op for op in lowered.ops if is_kernel(op))
    assert str(kernel.function_type.inputs.data[1]) == "memref<3x2x3x3x4xf32>"
    assert not any(
        op.name == "kernel.block" and op.block_name.data == "pack"
        for op in kernel.walk()
    )


def test_pixel_tiles_have_no_one_pixel_tail() -> None:
    from ember.lowering.microkernels import OVERHANG
    from ember.lowering.microkernels import balanced_tiles as _balanced_tiles
    from ember.lowering.microkernels import pixel_tiles as _pixel_tiles

    # (start, count, size) runs: 49 pixels by at most 6 are 4×6 + 5×5, not
    # 8×6 + 1; a divisor of the total, when there is one, gives one run.
    assert _balanced_tiles(49, 6) == [(0, 4, 6), (24, 5, 5)]
    assert _pixel_tiles(3136, 7) == [(0, 448, 7)]
    assert _pixel_tiles(784, 5) == [(0, 196, 4)]
    assert _pixel_tiles(3, 5) == [(0, 1, 3)]
    # Else one run whose last tile overhangs the end, when it computes few
    # pixels twice: ResNet's 7×7 planes in ten tiles of 5.
    assert _pixel_tiles(49, 5) == [(0, 10, 5)]
    assert _pixel_tiles(7, 5) == [(0, 1, 4), (4, 1, 3)]  # 10 for 7: two runs
    for total in range(1, 200):
        runs = _pixel_tiles(total, 5)
        covered = sum(count * size for _, count, size in runs)
        if len(runs) == 1 and covered > total:
            assert (covered - total) * OVERHANG <= total and covered - total < 5
        else:
            assert covered == total
            assert [start for start, _, _ in runs] == [0, *(c * s for _, c, s in runs[:-1])]
        assert all(size >= 2 for _, _, size in runs) or total < 3


def test_weight_packing_layout() -> None:
    weight = np.arange(5 * 2 * 3, dtype=np.float16).reshape(5, 2, 3)
    packing = WeightPacking(lanes=4)
    packed = packing.pack(weight)
    assert packed.shape == packing.shape(weight.shape) == (2, 2, 3, 4)
    assert packed.dtype == np.float32 and packed.flags.c_contiguous
    for o in range(5):
        np.testing.assert_array_equal(packed[o // 4, :, :, o % 4], weight[o])
    assert not packed[1, :, :, 1:].any()


def test_a_shared_weight_is_packed_at_run_time() -> None:
    # The dense's weight is also its input: its kernel packs it per call.
    check(
        """
func.func @main(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = graph.dense %x, %x : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}"""
    )


# A short reduction over wide rows: 3 channels × 3×3 taps, 20 outputs wide
# (10 vectors of 2 lanes).
WIDE_ROWS_CONV = binary(
    "conv2d", "1x3x4x20", "5x3x3x3", "1x5x4x20", attrs="{padding = [1, 1, 1, 1]}"
)


def test_conv2d_with_short_reduction_over_wide_rows_stays_row_vectorised() -> None:
    (op,) = _ops_of(WIDE_ROWS_CONV)
    lowered = check(WIDE_ROWS_CONV, params={"b": _random((5, 3, 3, 3), np.float32)})
    kernel = next(op for op in lowered.ops if is_kernel(op))
    assert str(kernel.function_type.inputs.data[1]) == "memref<5x3x3x3xf32>"
    names = {op.block_name.data for op in kernel.walk() if op.name == "kernel.block"}
    assert "conv2d" in names and "pack" not in names


# Row tiles with 2-lane vectors: 5 channels × 4 columns.  7 output channels
# are balanced into blocks of 4 and 3; 9 columns are 2 whole tiles and a
# 1-column rest; row stride 2, dilation and batch 2 move the input rows.
ROW_TILE_CASES = {
    "blocks_and_rest": ("1x2x4x9", "7x2x3x3", "1x7x4x9", "padding = [1, 1, 1, 1]"),
    "batch_row_stride_dilated": (
        "2x1x9x10",
        "3x1x3x3",
        "2x3x3x10",
        "strides = [2, 1], dilation = [2, 1], padding = [0, 1, 0, 1]",
    ),
}


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("case", sorted(ROW_TILE_CASES))
def test_conv2d_row_tiles(case: str, dtype: str) -> None:
    data, weight, out, attrs = ROW_TILE_CASES[case]
    check(binary("conv2d", data, weight, out, dtype, attrs="{" + attrs + "}"))


def test_conv2d_row_tiles_accumulate_in_a_register_tile() -> None:
    """The short reduction over wide rows accumulates in a tile of 5
    channels × 2 vectors (what LLVM keeps in registers), not in a scratch
    row as wide as the output: that row cost a load and a store per FMA."""
    lowered = check(WIDE_ROWS_CONV)
    kernel = next(op for op in lowered.ops if is_kernel(op))
    scratch = [
        str(op.results[0].type) for op in kernel.walk() if op.name == "memref.alloc"
    ]
    assert "memref<5x4xf32>" in scratch and "memref<20xf32>" not in scratch


def test_vector_target_rejects_odd_widths() -> None:
    with pytest.raises(PassError, match="multiple of 32 bits, got 48"):
        VectorTarget(48)


@pytest.mark.parametrize(
    "lhs,rhs,out",
    [("3x4", "4x5", "3x5"), ("2x3x4", "4x2", "2x3x2"), ("2x1x2x3", "3x3x2", "2x3x2x2")],
)
def test_matmul(lhs: str, rhs: str, out: str) -> None:
    check(binary("matmul", lhs, rhs, out))


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("rows,packed", [(3, True), (66, False), (66, True)])
def test_matmul_in_column_panels(rows: int, packed: bool, dtype: str) -> None:
    """B read in column panels: packed at bind time (a constant), or by the
    kernel (A has 64 rows or more); 5 columns are a whole 4-column tile and
    a partly empty panel."""
    text = binary("matmul", f"2x{rows}x3", "3x5", f"2x{rows}x5", dtype)
    params = {"b": _random((3, 5), {"f32": np.float32, "f16": np.float16}[dtype])}
    check(text, params=params if packed else None)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_bias_add(dtype: str) -> None:
    check(binary("bias_add", "2x3x2", "3", "2x3x2", dtype))


def test_bias_add_last_axis() -> None:
    check(binary("bias_add", "2x3", "3", "2x3", attrs="{axis = -1}"))


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_batch_norm(dtype: str) -> None:
    x, v = f"tensor<1x3x2x2x{dtype}>", f"tensor<3x{dtype}>"
    check(
        f"""
func.func @main(%x: {x}, %g: {v}, %b: {v}, %m: {v}, %var: {v}) -> {x} {{
  %0 = graph.batch_norm %x, %g, %b, %m, %var {{epsilon = 1.0e-03 : f32}} : ({x}, {v}, {v}, {v}, {v}) -> {x}
  func.return %0 : {x}
}}""",
        positive=True,
    )


@pytest.mark.parametrize("op", ["relu", "sigmoid", "tanh", "exp", "negative"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_unary(op: str, dtype: str) -> None:
    check(unary(op, dtype=dtype))


def test_sqrt() -> None:
    check(unary("sqrt"), positive=True)


@pytest.mark.parametrize(
    "data,weight,out,attrs",
    [
        ("1x4x5x5xf32", "4x2x3x3xf32", "1x2x10x10xf32",
         "{strides = [2, 2], padding = [1, 1, 1, 1], output_padding = [1, 1]}"),
        ("2x4x3x4xf16", "4x3x3x2xf16", "2x6x5x10xf16",
         "{groups = 2, dilation = [2, 1], padding = [0, 1, 2, 0], strides = [1, 3]}"),
        ("1x1x2x2xf32", "1x1x1x1xf32", "1x1x2x2xf32", ""),
    ],
)
def test_conv2d_transpose(data: str, weight: str, out: str, attrs: str) -> None:
    check(binary("conv2d_transpose", data[:-4], weight[:-4], out[:-4], dtype=data[-3:], attrs=attrs))


@pytest.mark.parametrize(
    "out,attrs",
    [
        ("1x2x8x8", '{size = [8, 8], method = "linear"}'),
        ("1x2x3x7", '{size = [3, 7], method = "linear", coordinate_transformation_mode = "align_corners"}'),
        ("1x2x1x5", '{size = [1, 5], method = "linear", coordinate_transformation_mode = "pytorch_half_pixel"}'),
        ("1x2x8x6", '{size = [8, 6], coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}'),
        ("1x2x6x9", '{size = [6, 9], nearest_mode = "round_prefer_ceil", scale_h = 1.5}'),
        ("1x2x3x2", '{size = [3, 2], coordinate_transformation_mode = "tf_half_pixel_for_nn", nearest_mode = "ceil"}'),
    ],
)
def test_resize2d(out: str, attrs: str) -> None:
    check(_one_input("resize2d", "1x2x4x4xf32", f"{out}xf32", attrs), exact=True)


def test_resize2d_f16() -> None:
    check(_one_input("resize2d", "1x2x4x4xf16", "1x2x7x7xf16", '{size = [7, 7], method = "linear"}'))


@pytest.mark.parametrize(
    "data,attrs",
    [
        ("1x8x3x3xf32", "{size = 5, alpha = 1.0e-01 : f32, beta = 7.5e-01 : f32, bias = 2.0 : f32}"),
        ("2x3x4xf32", "{size = 2}"),
        ("1x4x2x2xf16", "{size = 3, beta = 5.0e-01 : f32}"),
    ],
)
def test_lrn(data: str, attrs: str) -> None:
    check(_one_input("lrn", data, data, attrs))


def test_log() -> None:
    check(unary("log"), positive=True)


@pytest.mark.parametrize(
    "op,data,out,attrs",
    [
        ("reduce_sum", "1x4x5x5xf32", "1x4x1x1xf32", "{axes = [2, 3]}"),
        ("reduce_mean", "2x3x4xf32", "2x3xf32", "{axes = [-1], keepdims = false}"),
        ("reduce_mean", "2x3x4xf16", "3xf16", "{axes = [0, 2], keepdims = false}"),
        ("reduce_max", "2x3x4xf32", "2x1x4xf32", "{axes = [1]}"),
        ("reduce_max", "2x3xf16", "f16", "{axes = [0, 1], keepdims = false}"),
    ],
)
def test_reductions(op: str, data: str, out: str, attrs: str) -> None:
    check(_one_input(op, data, out, attrs))


def test_relu_f16_is_exact() -> None:
    check(unary("relu", dtype="f16"), exact=True)


def test_negative_int() -> None:
    check(unary("negative", dtype="i32"))


def test_clip() -> None:
    check(unary("clip", attrs="{min = -0.5 : f32, max = 0.75 : f32}"))


@pytest.mark.parametrize(
    "op", ["add", "subtract", "multiply", "divide", "maximum", "minimum"]
)
def test_binary_broadcast(op: str) -> None:
    check(binary(op, "2x3x4", "3x1", "2x3x4"), positive=op == "divide")


def test_binary_broadcast_both_sides() -> None:
    check(binary("add", "3x1", "1x4", "3x4"))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum"])
def test_binary_int(op: str) -> None:
    check(binary(op, "2x3", "3", "2x3", "i32"))


def test_add_f16_is_exact() -> None:
    check(binary("add", "2x8", "8", "2x8", "f16"), exact=True)


@pytest.mark.parametrize("axis,shape", [(-1, "2x5"), (0, "3x2"), (1, "2x3x2")])
def test_softmax(axis: int, shape: str) -> None:
    check(
        unary("softmax", shape, attrs=f"{{axis = {axis}}}").replace(
            f": tensor<{shape}xf32>\n  func",
            f": (tensor<{shape}xf32>) -> tensor<{shape}xf32>\n  func",
        )
    )


POOL_CASES = {
    "max_pad": (
        "max_pool2d",
        "1x2x5x5",
        "1x2x3x3",
        "pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]",
    ),
    "max_plain": ("max_pool2d", "1x1x4x4", "1x1x3x3", "pool_size = [2, 2]"),
    "avg_exclude_pad": (
        "avg_pool2d",
        "1x2x5x5",
        "1x2x3x3",
        "pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]",
    ),
    "avg_include_pad": (
        "avg_pool2d",
        "1x1x4x5",
        "1x1x4x3",
        "pool_size = [3, 3], strides = [1, 2], padding = [1, 1, 1, 1], count_include_pad = true",
    ),
    "avg_asymmetric": (
        "avg_pool2d",
        "1x1x4x4",
        "1x1x4x4",
        "pool_size = [2, 2], padding = [1, 1, 0, 0]",
    ),
    "max_dilated": (
        "max_pool2d",
        "1x2x9x9",
        "1x2x8x7",
        "pool_size = [3, 2], dilation = [2, 3], padding = [1, 0, 2, 1]",
    ),
    "avg_dilated_exclude_pad": (
        "avg_pool2d",
        "1x2x9x9",
        "1x2x8x7",
        "pool_size = [3, 2], dilation = [2, 3], padding = [1, 0, 2, 1]",
    ),
    "avg_dilated_include_pad": (
        "avg_pool2d",
        "1x1x7x7",
        "1x1x3x6",
        "pool_size = [2, 2], strides = [2, 1], dilation = [3, 2], padding = [1, 1, 0, 0], count_include_pad = true",
    ),
}


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool2d(case: str) -> None:
    op, data, out, attrs = POOL_CASES[case]
    x, o = f"tensor<{data}xf32>", f"tensor<{out}xf32>"
    check(f"""
func.func @main(%x: {x}) -> {o} {{
  %0 = graph.{op} %x {{{attrs}}} : ({x}) -> {o}
  func.return %0 : {o}
}}""")


def test_max_pool2d_f16() -> None:
    x, o = "tensor<1x1x4x4xf16>", "tensor<1x1x2x2xf16>"
    check(
        f"""
func.func @main(%x: {x}) -> {o} {{
  %0 = graph.max_pool2d %x {{pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]}} : ({x}) -> {o}
  func.return %0 : {o}
}}""",
        exact=True,
    )


def test_global_avg_pool2d() -> None:
    x, o = "tensor<1x3x3x4xf32>", "tensor<1x3x1x1xf32>"
    check(f"""
func.func @main(%x: {x}) -> {o} {{
  %0 = graph.global_avg_pool2d %x : ({x}) -> {o}
  func.return %0 : {o}
}}""")


def _one_input(op: str, data: str, out: str, attrs: str = "") -> str:
    return f"""
func.func @main(%x: tensor<{data}>) -> tensor<{out}> {{
  %0 = graph.{op} %x {attrs} : (tensor<{data}>) -> tensor<{out}>
  func.return %0 : tensor<{out}>
}}"""


@pytest.mark.parametrize(
    "op,data,out,attrs",
    [
        ("batch_flatten", "2x3x2xf32", "2x6xf32", ""),
        ("reshape", "2x6xi32", "3x1x4xi32", ""),
        ("reshape", "4x3xf16", "2x6xf16", ""),
        ("transpose", "2x3x4xf32", "4x2x3xf32", "{axes = [2, 0, 1]}"),
        ("transpose", "2x3xi32", "3x2xi32", ""),
        ("cast", "2x3xf32", "2x3xf16", ""),
        ("cast", "2x3xf16", "2x3xf32", ""),
        ("cast", "2x3xf32", "2x3xi32", ""),
        ("cast", "2x3xi32", "2x3xf32", ""),
        ("cast", "2x3xi32", "2x3xf16", ""),
        ("slice", "2x8xf32", "2x3xf32", "{begin = [0, 1], end = [2, 7], strides = [1, 2]}"),
        ("slice", "3x5xi32", "2x5xi32", "{begin = [2, 4], end = [0, -1], strides = [-1, -1]}"),
        ("slice", "1x3x6x6xf16", "1x2x3x2xf16", "{begin = [0, 1, 0, 1], end = [1, 3, 6, 4], strides = [1, 1, 2, 2]}"),
        ("pad", "1x2x4x4xf32", "1x2x6x8xf32", '{padding = [0, 0, 1, 2, 0, 0, 1, 2], mode = "reflect"}'),
        ("pad", "2x3xf16", "5x4xf16", '{padding = [1, 0, 2, 1], mode = "edge"}'),
        ("pad", "2x3xf32", "5x4xf32", "{padding = [1, 0, 2, 1], value = 2.5}"),
        ("pad", "2x3xi32", "5x4xi32", "{padding = [1, 0, 2, 1], value = -3.0}"),
    ],
)
def test_data_movement(op: str, data: str, out: str, attrs: str) -> None:
    check(_one_input(op, data, out, attrs), exact=True)


def test_concatenate() -> None:
    a, b, c, o = (
        "tensor<1x2x2xf32>",
        "tensor<1x1x2xf32>",
        "tensor<1x3x2xf32>",
        "tensor<1x6x2xf32>",
    )
    check(
        f"""
func.func @main(%a: {a}, %b: {b}, %c: {c}) -> {o} {{
  %0 = graph.concatenate %a, %b, %c {{axis = 1}} : ({a}, {b}, {c}) -> {o}
  func.return %0 : {o}
}}""",
        exact=True,
    )


# --------------------------------------------------------------------------
# Groups: several ops, one kernel, no intermediate buffers
# --------------------------------------------------------------------------


def lower_as_group(
    text: str, positive: bool = False, outputs: list[int] | None = None
) -> ModuleOp:
    """Lower all compute ops of @main as ONE group; check against the reference.

    ``outputs`` lists which ops' results leave the group (default: the last).
    """
    module = ember.parse(text)
    args = _inputs(module, positive)
    main = _main(module)
    ops = [op for op in main.body.block.ops if not isinstance(op, ReturnOp)]
    chosen = None if outputs is None else [ops[i].results[0] for i in outputs]
    group = make_group(ops, chosen)
    kernel = lower_group(group, kernel_stem(group), VectorTarget(VECTOR_BITS))
    kernel_module = ModuleOp([kernel])
    KernelPadInputPass().apply(Context(), kernel_module)
    KernelTensorizePass(vector_bits=VECTOR_BITS).apply(Context(), kernel_module)
    kernel_module.verify()
    expected = {
        op.results[0]: value
        for op, value in zip(ops, _intermediates(module, args, ops))
    }
    buffers = {v: a for v, a in zip(main.args, args)}
    outs = [
        np.full(tuple(v.type.get_shape()), np.nan, numpy_dtype(v.type.element_type))
        for v in group.outputs
    ]
    run_kernel(
        kernel_module, kernel.sym_name.data, *[buffers[v] for v in group.inputs], *outs
    )
    for value, got in zip(group.outputs, outs):
        np.testing.assert_allclose(got, expected[value], **_tolerance(got.dtype))
    return kernel_module


def _intermediates(
    module: ModuleOp, args: list[np.ndarray], ops: list[Any]
) -> list[np.ndarray]:
    """The reference value of every op's result, op by op."""
    from ember.interp import evaluate

    env = dict(zip(_main(module).args, args))
    values = []
    for op in ops:
        env[op.results[0]] = evaluate(op, [env[v] for v in op.operands])
        values.append(env[op.results[0]])
    return values


CONV_BN_RELU = """
func.func @main(%x: tensor<1x2x5x5x{t}>, %w: tensor<3x2x3x3x{t}>, %g: tensor<3x{t}>, %b: tensor<3x{t}>, %m: tensor<3x{t}>, %v: tensor<3x{t}>) -> tensor<1x3x5x5x{t}> {{
  %0 = graph.conv2d %x, %w {{padding = [1, 1, 1, 1]}} : (tensor<1x2x5x5x{t}>, tensor<3x2x3x3x{t}>) -> tensor<1x3x5x5x{t}>
  %1 = graph.batch_norm %0, %g, %b, %m, %v : (tensor<1x3x5x5x{t}>, tensor<3x{t}>, tensor<3x{t}>, tensor<3x{t}>, tensor<3x{t}>) -> tensor<1x3x5x5x{t}>
  %2 = graph.relu %1 : tensor<1x3x5x5x{t}>
  func.return %2 : tensor<1x3x5x5x{t}>
}}"""


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_group_conv2d_batch_norm_relu(dtype: str) -> None:
    kernel_module = lower_as_group(CONV_BN_RELU.format(t=dtype), positive=True)
    (kernel,) = kernel_module.ops
    assert kernel.sym_name.data == "fused_conv2d_batch_norm_relu"
    # Only the padded input, the weight panels (3 channels in one panel of 4)
    # and the accumulator tiles (25 pixels: 5 tiles of 5) are scratch: no
    # buffer holds the conv2d or batch_norm result.
    allocs = [op for op in kernel.walk() if op.name == "memref.alloc"]
    assert sorted(str(a.results[0].type) for a in allocs) == sorted(
        ["memref<1x2x7x7xf32>", "memref<1x2x3x3x4xf32>", "memref<5x4xf32>"]
    )


def test_group_dense_bias_add_relu() -> None:
    kernel_module = lower_as_group("""
func.func @main(%x: tensor<2x20xf32>, %w: tensor<6x20xf32>, %b: tensor<6xf32>) -> tensor<2x6xf32> {
  %0 = graph.dense %x, %w : (tensor<2x20xf32>, tensor<6x20xf32>) -> tensor<2x6xf32>
  %1 = graph.bias_add %0, %b : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  %2 = graph.relu %1 : tensor<2x6xf32>
  func.return %2 : tensor<2x6xf32>
}""")
    (kernel,) = kernel_module.ops
    assert kernel.sym_name.data == "fused_dense_bias_add_relu"
    assert [str(t) for t in kernel.function_type.inputs.data] == [
        "memref<2x20xf32>",
        "memref<6x20xf32>",
        "memref<6xf32>",
        "memref<2x6xf32>",
    ]


def test_group_conv2d_multiply_add_relu_with_broadcast_operands() -> None:
    lower_as_group("""
func.func @main(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x3x3xf32>, %s: tensor<2x1x1xf32>, %r: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %0 = graph.conv2d %x, %w : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x2x2xf32>
  %1 = graph.multiply %0, %s : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %2 = graph.add %r, %1 : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %3 = graph.relu %2 : tensor<1x2x2x2xf32>
  func.return %3 : tensor<1x2x2x2xf32>
}""")


def test_group_with_injective_epilogue_and_two_outputs() -> None:
    # The matmul result leaves the group, and so does its transposed, flattened
    # relu: two stores from one loop nest, the second at moved indices.
    lower_as_group(
        """
func.func @main(%a: tensor<3x4xf32>, %b: tensor<4x2xf32>) -> tensor<6xf32> {
  %0 = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %1 = graph.relu %0 : tensor<3x2xf32>
  %2 = graph.transpose %1 : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %3 = graph.reshape %2 : (tensor<2x3xf32>) -> tensor<6xf32>
  %4 = graph.exp %3 : tensor<6xf32>
  func.return %4 : tensor<6xf32>
}""",
        outputs=[0, 4],
    )


def test_group_diamond_uses_both_values() -> None:
    lower_as_group("""
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.softmax %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.sqrt %0 : tensor<2x3xf32>
  %2 = graph.multiply %0, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}""")


def _ops_of(text: str) -> list[Any]:
    main = _main(ember.parse(text))
    return [op for op in main.body.block.ops if not isinstance(op, ReturnOp)]


def test_group_rejects_an_anchor_after_the_first_op() -> None:
    ops = _ops_of("""
func.func @main(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu %x : tensor<2x4xf32>
  %1 = graph.dense %0, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}""")
    with pytest.raises(
        PassError,
        match="cannot lower 'graph.dense'.*cannot be fused after 'graph.relu'",
    ):
        make_group(ops)


def test_group_rejects_broadcasting_a_group_value() -> None:
    ops = _ops_of("""
func.func @main(%x: tensor<3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu %x : tensor<3xf32>
  %1 = graph.add %0, %y : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}""")
    with pytest.raises(
        PassError, match="broadcasts a group value of shape \\[3\\] to \\[2, 3\\]"
    ):
        make_group(ops)


def test_group_rejects_a_value_left_behind_by_a_transpose() -> None:
    ops = _ops_of("""
func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = graph.relu %x : tensor<2x2xf32>
  %1 = graph.transpose %0 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %2 = graph.add %0, %1 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %2 : tensor<2x2xf32>
}""")
    with pytest.raises(PassError, match="computed before a reshape or transpose"):
        make_group(ops)


# --------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------


def test_pass_names_and_deduplicates_kernels() -> None:
    lowered = check("""
func.func @relu(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %v: tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %0 = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.relu %0 : tensor<1x2x4x4xf32>
  %2 = graph.conv2d %1, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %3 = graph.conv2d %2, %v : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  func.return %3 : tensor<1x3x4x4xf32>
}""")
    calls = [
        op.callee
        for op in _main(lowered).body.block.ops
        if isinstance(op, CallKernelOp)
    ]
    assert calls == ["conv2d", "relu_1", "conv2d", "conv2d_1"]
    kernels = [op.sym_name.data for op in lowered.ops if is_kernel(op)]
    assert kernels == ["conv2d", "relu_1", "conv2d_1"]


def test_pass_keeps_constants_and_extern_calls() -> None:
    module = ember.parse("""
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant {value = dense<[1.0, -2.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = graph.add %x, %c : tensor<2xf32>
  %1 = graph.call_extern "env.relu"(%0) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %1 : tensor<2xf32>
}""")
    lowered = lower(module)
    names = [op.name for op in _main(lowered).body.block.ops]
    assert names == [
        "graph.constant",
        "graph.call_kernel",
        "graph.call_extern",
        "func.return",
    ]


def test_pass_rejects_unsupported_ops_before_changing_anything() -> None:
    module = ember.parse("""
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.relu %x : tensor<2xf32>
  %1 = arith.addf %0, %0 : tensor<2xf32>
  func.return %1 : tensor<2xf32>
}""")
    before = str(module)
    with pytest.raises(
        PassError, match="(?s)cannot lower 'arith.addf': only graph ops.*in @main"
    ):
        LowerGraphToKernelPass().apply(Context(), module)
    assert str(module) == before


# --------------------------------------------------------------------------
# Register-blocked kernels at realistic shapes, compiled (JIT)
# --------------------------------------------------------------------------

# ResNet-like layers, scaled down to compile and run in a fraction of a
# second: channel counts that leave partial panels at both vector widths,
# strides, the 7x7 first layer, a 1x1 downsample, a fused epilogue, and
# dense products with many rows and with one.
JIT_CASES = {
    "conv3x3": binary(
        "conv2d",
        "1x64x14x14",
        "40x64x3x3",
        "1x40x14x14",
        attrs="{padding = [1, 1, 1, 1]}",
    ),
    "conv7x7_stride2": binary(
        "conv2d",
        "1x3x32x32",
        "24x3x7x7",
        "1x24x16x16",
        attrs="{strides = [2, 2], padding = [3, 3, 3, 3]}",
    ),
    "conv1x1_stride2": binary(
        "conv2d", "2x32x14x14", "48x32x1x1", "2x48x7x7", attrs="{strides = [2, 2]}"
    ),
    "conv_batch_norm_relu": CONV_BN_RELU.replace("1x2x5x5", "1x16x10x10")
    .replace("3x2x3x3", "20x16x3x3")
    .replace("1x3x5x5", "1x20x10x10")
    .replace("tensor<3x", "tensor<20x")
    .format(t="f32"),
    "dense_rows": binary("dense", "10x300", "70x300", "10x70"),
    "dense_one_row": binary("dense", "1x300", "100x300", "1x100"),
}


def _run_compiled(text: str, target: VectorTarget, prepack: bool) -> None:
    """Compile @main's ops as one kernel for ``target`` (the weight bound and
    packed at bind time, or packed by the kernel) and compare with the
    reference interpreter."""
    from ember.backends.cpu import compile_kernels

    module = ember.parse(text)
    args = _inputs(module, positive=True)
    (expected,) = ember.interpret(module, "main", *args)
    if prepack:
        _run_bound_compiled(text, target, args, expected)
        return
    group = make_group(_ops_of_module(module))
    arrays = dict(zip(_main(module).args, args))
    kernels = ModuleOp([lower_group(group, "k", target)])
    KernelPadInputPass().apply(Context(), kernels)
    KernelTensorizePass(vector_bits=target.bits).apply(Context(), kernels)
    jit = compile_kernels(kernels)
    got = np.full(expected.shape, np.nan, np.float32)
    jit.run("k", *[arrays[v] for v in group.inputs], got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _run_bound_compiled(
    text: str, target: VectorTarget, args: list[np.ndarray], expected: np.ndarray
) -> None:
    """A conv2d or dense whose weight is bound: ``kernel-tensorize`` repacks
    the constant at bind time; the compiled kernel runs on the packed copy."""
    from ember.backends.cpu import compile_kernels

    module = ember.parse(text)
    main = _main(module)
    by_name = {arg.name_hint: array for arg, array in zip(main.args, args)}
    weight = _ops_of_module(module)[0].operands[1]
    n = list(main.args).index(weight)
    bind_params_in_place(module, {weight.name_hint: args[n]}, "main")
    bits = target.bits
    module = apply_passes(
        module,
        f"fuse-ops,lower-graph-to-kernel{{vector-bits={bits}}},kernel-pad-input,kernel-tensorize{{vector-bits={bits}}}",
    )
    main = _main(module)
    (call,) = [op for op in main.body.block.ops if isinstance(op, CallKernelOp)]
    packed = call.operands[1].owner
    assert isinstance(packed, ConstantOp) and packed.to_array().ndim == args[n].ndim + 1
    kernel = next(op for op in module.ops if is_kernel(op))
    jit = compile_kernels(ModuleOp([kernel.clone()]))
    got = np.full(expected.shape, np.nan, np.float32)
    inputs = [
        packed.to_array() if v is packed.results[0] else by_name[v.name_hint]
        for v in call.operands
    ]
    jit.run(call.callee, *inputs, got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _ops_of_module(module: ModuleOp) -> list[Any]:
    return [op for op in _main(module).body.block.ops if not isinstance(op, ReturnOp)]


@pytest.mark.parametrize("bits", [256, 512])
@pytest.mark.parametrize("case", sorted(JIT_CASES))
def test_blocked_kernels_compiled(case: str, bits: int) -> None:
    _run_compiled(JIT_CASES[case], VectorTarget(bits), prepack=True)


@pytest.mark.parametrize("case", ["conv3x3", "dense_rows"])
def test_blocked_kernels_compiled_pack_at_run_time(case: str) -> None:
    _run_compiled(JIT_CASES[case], VectorTarget.host(), prepack=False)


@pytest.mark.parametrize("bits", [256, 512])
def test_row_vectorised_conv2d_compiled(bits: int) -> None:
    # convbnrelu's first layer, narrower: 3 channels × 3×3 taps, 80 wide.
    text = binary(
        "conv2d", "1x3x9x80", "16x3x3x3", "1x16x9x80", attrs="{padding = [1, 1, 1, 1]}"
    )
    (op,) = _ops_of(text)
    _run_compiled(text, VectorTarget(bits), prepack=False)
