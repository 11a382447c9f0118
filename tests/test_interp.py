"""Tests of the reference interpreter (``ember.interp``).

Every op is checked against an independent formulation written for clarity,
not speed: direct nested loops for convolution, pooling and matrix products,
per-element ``math`` formulas for elementwise ops, explicit index arithmetic
for broadcasting and layout ops.  Programs are built with ``GraphOp.build``
(one op per function) or parsed from MLIR text (calls, errors).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import irdl_op_definition, operand_def, result_def

import ember
from ember.dialects import graph as g
from ember.dialects.graph_registry import reference as reference_of, register_op, registered_ops, shape_rule
from ember.interp import (
    REFERENCE_IMPLS,
    InterpretError,
    evaluate,
    interpret,
    make_interpreter,
    reference,
)

RNG = np.random.default_rng(1234)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def single_op_module(
    op_type: type[g.GraphOp],
    arrays: Sequence[np.ndarray],
    result_type: Attribute | None = None,
    **attrs: Any,
) -> ModuleOp:
    """``func @main(args) { %r = op(args); return %r }``, verified."""
    block = Block(arg_types=[g.tensor_type(a.shape, a.dtype) for a in arrays])
    op = op_type.build(list(block.args), result_type, **attrs)
    block.add_ops([op, ReturnOp(op.results[0])])
    func = FuncOp(
        "main", ([a.type for a in block.args], [op.results[0].type]), Region(block)
    )
    module = ModuleOp([func])
    ember.verify_module(module)
    return module


def run_op(
    op_type: type[g.GraphOp],
    arrays: Sequence[np.ndarray],
    result_type: Attribute | None = None,
    **attrs: Any,
) -> np.ndarray:
    module = single_op_module(op_type, arrays, result_type, **attrs)
    (out,) = interpret(module, "main", *arrays)
    expected_type = module.body.block.first_op.function_type.outputs.data[0]
    assert out.shape == tuple(expected_type.get_shape())
    assert out.dtype == g.numpy_dtype(expected_type.element_type)
    return out


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def f16_close(actual: np.ndarray, exact: np.ndarray) -> None:
    """``actual`` (f16) is the exact value rounded to f16, within one f16 ulp."""
    assert actual.dtype == np.float16
    expected = exact.astype(np.float16).astype(np.float64)
    ulp = np.spacing(np.abs(expected).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(actual.astype(np.float64) - expected) <= ulp + 1e-7)


# --------------------------------------------------------------------------
# Independent formulations
# --------------------------------------------------------------------------


def conv2d_loops(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
) -> np.ndarray:
    n_, _, h_, w_ = x.shape
    o_, cg, kh, kw = w.shape
    sh, sw = strides
    pt, pl, pb, pr = padding
    dh, dw = dilation
    oh = (h_ + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w_ + pl + pr - (kw - 1) * dw - 1) // sw + 1
    og = o_ // groups
    out = np.zeros((n_, o_, oh, ow))
    for n, o, y, xx in itertools.product(range(n_), range(o_), range(oh), range(ow)):
        group = o // og
        acc = 0.0
        for c, i, j in itertools.product(range(cg), range(kh), range(kw)):
            iy, ix = y * sh + i * dh - pt, xx * sw + j * dw - pl
            if 0 <= iy < h_ and 0 <= ix < w_:
                acc += float(x[n, group * cg + c, iy, ix]) * float(w[o, c, i, j])
        out[n, o, y, xx] = acc
    return out


def pool_loops(
    x: np.ndarray,
    kind: str,
    pool_size: Sequence[int],
    strides: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    count_include_pad: bool = False,
) -> np.ndarray:
    n_, c_, h_, w_ = x.shape
    kh, kw = pool_size
    sh, sw = strides
    pt, pl, pb, pr = padding
    oh = (h_ + pt + pb - kh) // sh + 1
    ow = (w_ + pl + pr - kw) // sw + 1
    out = np.zeros((n_, c_, oh, ow))
    for n, c, y, xx in itertools.product(range(n_), range(c_), range(oh), range(ow)):
        real = [
            float(x[n, c, y * sh + i - pt, xx * sw + j - pl])
            for i, j in itertools.product(range(kh), range(kw))
            if 0 <= y * sh + i - pt < h_ and 0 <= xx * sw + j - pl < w_
        ]
        if kind == "max":
            out[n, c, y, xx] = max(real)
        else:
            divisor = kh * kw if count_include_pad else len(real)
            out[n, c, y, xx] = sum(real) / divisor
    return out


def broadcast_index(index: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element of an operand of ``shape`` used at output ``index``."""
    tail = index[len(index) - len(shape) :]
    return tuple(0 if d == 1 else i for i, d in zip(tail, shape))


def binary_loops(fn: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    rank = max(a.ndim, b.ndim)
    pa, pb_ = (1,) * (rank - a.ndim) + a.shape, (1,) * (rank - b.ndim) + b.shape
    shape = tuple(max(x, y) for x, y in zip(pa, pb_))
    out = np.zeros(shape)
    for index in itertools.product(*map(range, shape)):
        out[index] = fn(
            float(a[broadcast_index(index, a.shape)]),
            float(b[broadcast_index(index, b.shape)]),
        )
    return out


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def test_every_graph_op_has_a_reference_implementation() -> None:
    # Ops registered by other tests (tests/test_extending.py) may add names.
    registered = {op.name for op in registered_ops()}
    assert set(REFERENCE_IMPLS) - registered == {op.name for op in g.GRAPH_OPS}


# --------------------------------------------------------------------------
# Convolution
# --------------------------------------------------------------------------

CONV_CASES = [
    # x shape, w shape, strides, padding, dilation, groups
    ((1, 3, 6, 5), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 2, 7, 6), (3, 2, 3, 2), (2, 2), (0, 1, 2, 1), (1, 1), 1),
    ((1, 2, 7, 7), (2, 2, 3, 3), (1, 2), (2, 0, 1, 3), (2, 1), 1),
    ((1, 4, 5, 5), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    ((1, 4, 6, 6), (4, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 2), 4),
    ((2, 3, 4, 4), (5, 3, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 6, 5, 6), (3, 2, 2, 3), (1, 1), (0, 2, 1, 0), (2, 2), 3),
]


@pytest.mark.parametrize("xs, ws, strides, padding, dilation, groups", CONV_CASES)
def test_conv2d_matches_loops(xs, ws, strides, padding, dilation, groups) -> None:
    x, w = rand(*xs), rand(*ws)
    out = run_op(
        g.Conv2dOp,
        [x, w],
        strides=strides,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    expected = conv2d_loops(x, w, strides, padding, dilation, groups)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@given(
    n=st.integers(1, 2),
    groups=st.integers(1, 3),
    group_in=st.integers(1, 2),
    group_out=st.integers(1, 2),
    hw=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(*[st.integers(0, 2)] * 4),
)
def test_conv2d_matches_loops_random(
    n, groups, group_in, group_out, hw, kernel, strides, dilation, padding
) -> None:
    (h, w_), (kh, kw) = hw, kernel
    assume(h + padding[0] + padding[2] >= (kh - 1) * dilation[0] + 1)
    assume(w_ + padding[1] + padding[3] >= (kw - 1) * dilation[1] + 1)
    x = rand(n, groups * group_in, h, w_)
    w = rand(groups * group_out, group_in, kh, kw)
    out = run_op(
        g.Conv2dOp,
        [x, w],
        strides=strides,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    expected = conv2d_loops(x, w, strides, padding, dilation, groups)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_in_batch_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # A tiny scratch limit makes im2col run one image at a time.
    monkeypatch.setattr(reference, "_IM2COL_ELEMENT_LIMIT", 100)
    x, w = rand(3, 4, 5, 5), rand(4, 2, 3, 3)
    out = run_op(g.Conv2dOp, [x, w], padding=(1, 0, 0, 1), groups=2)
    expected = conv2d_loops(x, w, padding=(1, 0, 0, 1), groups=2)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_f16_rounds_once_from_exact() -> None:
    x, w = rand(1, 4, 5, 5, dtype="float16"), rand(3, 4, 3, 3, dtype="float16")
    out = run_op(g.Conv2dOp, [x, w], padding=(1, 1, 1, 1))
    f16_close(out, conv2d_loops(x, w, padding=(1, 1, 1, 1)))


# --------------------------------------------------------------------------
# Dense algebra
# --------------------------------------------------------------------------


def test_dense_matches_explicit_sums() -> None:
    x, w = rand(3, 5), rand(4, 5)
    out = run_op(g.DenseOp, [x, w])
    expected = [
        [sum(float(x[n, k]) * float(w[u, k]) for k in range(5)) for u in range(4)]
        for n in range(3)
    ]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_dense_f16_accumulates_in_f32() -> None:
    # 4096 ones: f16 accumulation would stall at 2048 (spacing 2 there).
    x = np.ones((1, 4096), np.float16)
    w = np.ones((2, 4096), np.float16)
    out = run_op(g.DenseOp, [x, w])
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, [[4096, 4096]])


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape",
    [((3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5))],
)
def test_matmul_broadcasts_batch(lhs_shape, rhs_shape) -> None:
    a, b = rand(*lhs_shape), rand(*rhs_shape)
    out = run_op(g.MatmulOp, [a, b])
    batch = out.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    for index in itertools.product(*map(range, batch)):
        ia, ib = (
            broadcast_index(index, a.shape[:-2]),
            broadcast_index(index, b.shape[:-2]),
        )
        for i, j in itertools.product(range(m), range(n)):
            expected = sum(
                float(a[ia + (i, p)]) * float(b[ib + (p, j)]) for p in range(k)
            )
            assert out[index + (i, j)] == pytest.approx(expected, rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("shape, axis", [((2, 3, 4, 5), 1), ((4, 6), -1), ((3, 2), 0)])
def test_bias_add_along_axis(shape, axis) -> None:
    x = rand(*shape)
    bias = rand(shape[axis])
    out = run_op(g.BiasAddOp, [x, bias], axis=axis)
    for index in itertools.product(*map(range, shape)):
        assert out[index] == pytest.approx(float(x[index]) + float(bias[index[axis]]))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape, axis", [((2, 3, 2, 2), 1), ((4, 3), -1)])
def test_batch_norm_inference_formula(dtype, shape, axis) -> None:
    channels = shape[axis]
    x = rand(*shape, dtype=dtype)
    gamma, beta, mean = (
        rand(channels, dtype=dtype),
        rand(channels, dtype=dtype),
        rand(channels, dtype=dtype),
    )
    var = (RNG.random(channels) + 0.5).astype(dtype)
    out = run_op(g.BatchNormOp, [x, gamma, beta, mean, var], epsilon=1e-3, axis=axis)
    expected = np.zeros(shape)
    for index in itertools.product(*map(range, shape)):
        c = index[axis]
        expected[index] = (float(x[index]) - float(mean[c])) / math.sqrt(
            float(var[c]) + 1e-3
        ) * float(gamma[c]) + float(beta[c])
    if dtype == "float16":
        f16_close(out, expected)
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------

UNARY = [
    (g.ReluOp, lambda v: max(v, 0.0)),
    (g.SigmoidOp, lambda v: 1 / (1 + math.exp(-v))),
    (g.TanhOp, math.tanh),
    (g.ExpOp, math.exp),
    (g.NegativeOp, lambda v: -v),
]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(
    "op_type, formula", UNARY, ids=lambda v: getattr(v, "name", "")
)
def test_unary_against_math(op_type, formula, dtype) -> None:
    x = rand(3, 4, dtype=dtype)
    out = run_op(op_type, [x])
    expected = np.vectorize(lambda v: formula(float(v)))(x)
    if dtype == "float16":
        f16_close(out, expected)
    else:
        np.testing.assert_allclose(out, expected, rtol=2e-6, atol=1e-7)


def test_sqrt_and_nan_for_negative_inputs() -> None:
    x = np.array([4.0, 2.0, 0.0, -1.0], np.float32)
    out = run_op(g.SqrtOp, [x])
    np.testing.assert_allclose(out[:3], [2.0, math.sqrt(2.0), 0.0], rtol=1e-7)
    assert math.isnan(out[3])


def test_sigmoid_saturates_without_warnings() -> None:
    x = np.array([-200.0, -90.0, 90.0, 200.0], np.float32)
    with np.errstate(all="raise"):  # the interpreter must not warn
        out = run_op(g.SigmoidOp, [x])
    np.testing.assert_allclose(out, [0.0, 0.0, 1.0, 1.0], atol=1e-30)


def test_nan_propagates_through_relu_maximum_and_max_pool() -> None:
    nan = np.float32("nan")
    assert math.isnan(run_op(g.ReluOp, [np.array([nan], np.float32)])[0])
    both = run_op(
        g.MaximumOp, [np.array([nan, 1], np.float32), np.array([0, nan], np.float32)]
    )
    assert np.isnan(both).all()
    x = np.zeros((1, 1, 2, 2), np.float32)
    x[0, 0, 1, 1] = nan
    assert math.isnan(run_op(g.MaxPool2dOp, [x], pool_size=(2, 2))[0, 0, 0, 0])


def test_maximum_and_minimum_are_ieee_2019_for_signed_zeros() -> None:
    """+0.0 is above -0.0 in either operand order (np.maximum leaves the tie
    to its operand order); relu(-0.0) is +0.0, clip to [-1, 0] keeps -0.0."""
    zero, negzero = np.zeros(16, np.float32), np.full(16, -0.0, np.float32)
    for a, b in ((zero, negzero), (negzero, zero)):
        assert not np.signbit(run_op(g.MaximumOp, [a, b])).any()
        assert np.signbit(run_op(g.MinimumOp, [a, b])).all()
    assert not np.signbit(run_op(g.ReluOp, [negzero])).any()
    clipped = run_op(g.ClipOp, [negzero], min=-1.0, max=0.0)
    assert np.signbit(clipped).all()
    assert not np.signbit(run_op(g.ClipOp, [negzero], min=0.0, max=1.0)).any()
    ints = np.array([3, -4], np.int32)
    np.testing.assert_array_equal(run_op(g.MaximumOp, [ints, -ints]), [3, 4])


def test_negative_on_integers() -> None:
    x = np.array([1, -5, 0], np.int64)
    np.testing.assert_array_equal(run_op(g.NegativeOp, [x]), [-1, 5, 0])


def test_clip() -> None:
    x = np.array([-3.0, -0.5, 0.25, 7.0], np.float32)
    out = run_op(g.ClipOp, [x], min=-1.0, max=6.0)
    np.testing.assert_array_equal(out, [-1.0, -0.5, 0.25, 6.0])


BINARY = [
    (g.AddOp, lambda a, b: a + b),
    (g.SubtractOp, lambda a, b: a - b),
    (g.MultiplyOp, lambda a, b: a * b),
    (g.DivideOp, lambda a, b: a / b),
    (g.MaximumOp, max),
    (g.MinimumOp, min),
]


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape",
    [((2, 1, 3), (4, 1)), ((3,), (2, 3)), ((), (2, 2)), ((2, 3), (2, 3))],
)
@pytest.mark.parametrize(
    "op_type, formula", BINARY, ids=lambda v: getattr(v, "name", "")
)
def test_binary_broadcasting(op_type, formula, lhs_shape, rhs_shape) -> None:
    a, b = rand(*lhs_shape), rand(*rhs_shape) + np.float32(3.0)  # no division by ~0
    out = run_op(op_type, [a, b])
    np.testing.assert_allclose(out, binary_loops(formula, a, b), rtol=1e-6, atol=1e-7)


def test_integer_arithmetic_wraps() -> None:
    a = np.array([2**31 - 1, 7], np.int32)
    b = np.array([1, -3], np.int32)
    np.testing.assert_array_equal(run_op(g.AddOp, [a, b]), [-(2**31), 4])
    np.testing.assert_array_equal(run_op(g.MultiplyOp, [a, b]), [2**31 - 1, -21])


def test_f16_binary_result_dtype_and_rounding() -> None:
    a = np.array([1.0, 65504.0], np.float16)
    b = np.array([2.0**-11, 65504.0], np.float16)
    out = run_op(g.AddOp, [a, b])
    assert out.dtype == np.float16
    # 1 + 2^-11 is a tie: nearest-even gives 1; 65504*2 overflows f16 to inf.
    assert out[0] == 1.0 and np.isinf(out[1])


@pytest.mark.parametrize("shape, axis", [((2, 5), -1), ((3, 4, 2), 1), ((4,), 0)])
def test_softmax_formula(shape, axis) -> None:
    x = rand(*shape) * np.float32(10)
    out = run_op(g.SoftmaxOp, [x], axis=axis)
    expected = np.zeros(shape)
    for index in itertools.product(*map(range, shape)):
        row = [
            float(x[index[: axis % len(shape)] + (k,) + index[axis % len(shape) + 1 :]])
            for k in range(shape[axis])
        ]
        expected[index] = math.exp(float(x[index])) / sum(math.exp(v) for v in row)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-7)


def test_softmax_is_numerically_stable() -> None:
    x = np.array([[1000.0, 1000.0, -1000.0]], np.float32)
    out = run_op(g.SoftmaxOp, [x])
    np.testing.assert_allclose(out, [[0.5, 0.5, 0.0]])


# --------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------

POOL_CASES = [
    # x shape, pool size, strides, padding
    ((1, 2, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0)),
    ((2, 1, 7, 5), (3, 3), (2, 2), (1, 1, 1, 1)),
    ((1, 3, 5, 6), (3, 2), (1, 2), (2, 0, 1, 1)),
    ((1, 1, 4, 4), (3, 3), (1, 1), (0, 2, 2, 0)),
]


@pytest.mark.parametrize("xs, pool_size, strides, padding", POOL_CASES)
def test_max_pool2d_ignores_padding(xs, pool_size, strides, padding) -> None:
    x = rand(*xs) - np.float32(10)  # all negative: a zero pad would win the max
    out = run_op(
        g.MaxPool2dOp, [x], pool_size=pool_size, strides=strides, padding=padding
    )
    np.testing.assert_array_equal(
        out, pool_loops(x, "max", pool_size, strides, padding)
    )


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("xs, pool_size, strides, padding", POOL_CASES)
def test_avg_pool2d(xs, pool_size, strides, padding, count_include_pad) -> None:
    x = rand(*xs)
    # An i64 flag: graph.py rejects the i1 `true` that xDSL stores as -1.
    flag = IntegerAttr(int(count_include_pad), i64)
    out = run_op(
        g.AvgPool2dOp,
        [x],
        pool_size=pool_size,
        strides=strides,
        padding=padding,
        count_include_pad=flag,
    )
    expected = pool_loops(x, "avg", pool_size, strides, padding, count_include_pad)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_pools_in_f16() -> None:
    x = rand(1, 2, 5, 5, dtype="float16")
    out = run_op(g.AvgPool2dOp, [x], pool_size=(3, 3), padding=(1, 1, 1, 1))
    f16_close(out, pool_loops(x, "avg", (3, 3), padding=(1, 1, 1, 1)))
    out = run_op(g.MaxPool2dOp, [x], pool_size=(3, 3), strides=(2, 2))
    np.testing.assert_array_equal(out, pool_loops(x, "max", (3, 3), (2, 2)))


def test_global_avg_pool2d() -> None:
    x = rand(2, 3, 4, 5)
    out = run_op(g.GlobalAvgPool2dOp, [x])
    assert out.shape == (2, 3, 1, 1)
    for n, c in itertools.product(range(2), range(3)):
        expected = sum(float(v) for v in x[n, c].ravel()) / 20
        assert out[n, c, 0, 0] == pytest.approx(expected, rel=1e-5, abs=1e-6)


# --------------------------------------------------------------------------
# Layout, data movement, casts, constants
# --------------------------------------------------------------------------


def test_batch_flatten_and_reshape_are_row_major() -> None:
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    flat = run_op(g.BatchFlattenOp, [x])
    for n, c, w in itertools.product(range(2), range(3), range(4)):
        assert flat[n, c * 4 + w] == x[n, c, w]
    reshaped = run_op(g.ReshapeOp, [x], g.tensor_type((4, 6), "int32"))
    for i, j in itertools.product(range(4), range(6)):
        assert reshaped[i, j] == 6 * i + j


def test_transpose_default_reverses_axes() -> None:
    x = rand(2, 3, 4)
    out = run_op(g.TransposeOp, [x])
    for i, j, k in itertools.product(range(2), range(3), range(4)):
        assert out[k, j, i] == x[i, j, k]
    out = run_op(g.TransposeOp, [x], axes=(1, -1, 0))
    assert out.shape == (3, 4, 2)
    for i, j, k in itertools.product(range(2), range(3), range(4)):
        assert out[j, k, i] == x[i, j, k]


def test_concatenate_along_axis() -> None:
    parts = [rand(2, 1, 3), rand(2, 2, 3), rand(2, 4, 3)]
    out = run_op(g.ConcatenateOp, parts, axis=1)
    offset = 0
    for part in parts:
        for n, c, w in itertools.product(range(2), range(part.shape[1]), range(3)):
            assert out[n, offset + c, w] == part[n, c, w]
        offset += part.shape[1]


def test_cast_follows_astype() -> None:
    x = np.array([-1.7, 2.9, -0.5, 3.0], np.float32)
    np.testing.assert_array_equal(run_op(g.CastOp, [x], dtype="int32"), [-1, 2, 0, 3])
    ties = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11], np.float32)
    halves = run_op(g.CastOp, [ties], dtype="float16")
    assert halves.dtype == np.float16
    np.testing.assert_array_equal(halves, [1.0, 1 + 2 * 2.0**-10])  # nearest-even
    big = np.array([2**40 + 1], np.int64)
    assert run_op(g.CastOp, [big], dtype="float32")[0] == np.float32(2**40)


def test_constant_dense_and_splat() -> None:
    values = np.arange(6, dtype=np.int64).reshape(2, 3) - 2
    op = g.ConstantOp.from_array(values)
    out = evaluate(op, [])
    np.testing.assert_array_equal(out, values)
    assert out.dtype == np.int64
    module = ember.parse(
        "func.func @main() -> tensor<2x3xf32> {\n"
        "  %0 = graph.constant {value = dense<1.5> : tensor<2x3xf32>} : tensor<2x3xf32>\n"
        "  func.return %0 : tensor<2x3xf32>\n}"
    )
    (splat,) = interpret(module, "main")
    np.testing.assert_array_equal(splat, np.full((2, 3), 1.5, np.float32))


def test_evaluate_returns_fresh_arrays_and_checks_inputs() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    module = single_op_module(g.ReshapeOp, [x], g.tensor_type((3, 2)))
    op = module.body.block.first_op.body.block.first_op
    out = evaluate(op, [x])
    assert not np.shares_memory(out, x)
    with pytest.raises(
        InterpretError, match=r"input 0 must be an array of shape \(2, 3\)"
    ):
        evaluate(op, [x.reshape(3, 2)])
    with pytest.raises(
        InterpretError, match="no reference implementation for op 'func.return'"
    ):
        evaluate(module.body.block.first_op.body.block.last_op, [out])


# --------------------------------------------------------------------------
# Functions, calls and arguments
# --------------------------------------------------------------------------

PROGRAM = """
func.func @main(%data: tensor<1x2x4x4xf32>, %weight: tensor<3x2x3x3xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3xf32>) {
  %0 = graph.conv2d %data, %weight {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %1 = func.call @head(%0) : (tensor<1x3x4x4xf32>) -> tensor<1x3xf32>
  func.return %0, %1 : tensor<1x3x4x4xf32>, tensor<1x3xf32>
}
func.func @head(%x: tensor<1x3x4x4xf32>) -> tensor<1x3xf32> {
  %0 = func.call @act(%x) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %1 = graph.global_avg_pool2d %0 : (tensor<1x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  %2 = graph.batch_flatten %1 : (tensor<1x3x1x1xf32>) -> tensor<1x3xf32>
  func.return %2 : tensor<1x3xf32>
}
func.func @act(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %0 = graph.relu %x : tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}
"""


@pytest.fixture(scope="module")
def program() -> ModuleOp:
    return ember.parse(PROGRAM)


def test_nested_calls_and_multiple_results(program: ModuleOp) -> None:
    x, w = rand(1, 2, 4, 4), rand(3, 2, 3, 3)
    conv, head = ember.interpret(program, "main", x, w)
    expected_conv = conv2d_loops(x, w, padding=(1, 1, 1, 1))
    np.testing.assert_allclose(conv, expected_conv, rtol=1e-5, atol=1e-5)
    expected_head = np.maximum(expected_conv, 0).mean(axis=(2, 3))
    np.testing.assert_allclose(head, expected_head, rtol=1e-5, atol=1e-6)
    # A callee can be an entry point too.
    (relu,) = ember.interpret(program, "act", conv)
    np.testing.assert_array_equal(relu, np.maximum(conv, 0))


def test_results_are_fresh_arrays() -> None:
    module = ember.parse(
        "func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {\n"
        "  func.return %x, %x : tensor<3xf32>, tensor<3xf32>\n}"
    )
    x = np.ones(3, np.float32)
    a, b = interpret(module, "main", x)
    assert not np.shares_memory(a, x) and not np.shares_memory(a, b)
    a[0] = 5.0
    assert x[0] == 1.0 and b[0] == 1.0


class DLPackOnly:
    """An object that offers its data only through DLPack, like a framework tensor."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()


def test_accepts_lists_and_dlpack_objects() -> None:
    module = ember.parse(
        "func.func @main(%a: tensor<2xf32>, %b: tensor<2xi32>) -> tensor<2xf32> {\n"
        "  %0 = graph.relu %a : tensor<2xf32>\n"
        "  func.return %0 : tensor<2xf32>\n}"
    )
    (out,) = interpret(module, "main", [-1.0, 2.5], [1, 2])
    np.testing.assert_array_equal(out, [0.0, 2.5])
    (out,) = interpret(module, "main", [-1, 3], DLPackOnly(np.array([1, 2], np.int32)))
    np.testing.assert_array_equal(out, [0.0, 3.0])
    with pytest.raises(
        InterpretError, match=r"argument 'b' \(#1\) of @main: expected int32 values"
    ):
        interpret(module, "main", [1.0, 2.0], [1.5, 2.0])
    with pytest.raises(InterpretError, match="argument 'b'.*dtype int32.*got int64"):
        interpret(module, "main", [1.0, 2.0], DLPackOnly(np.array([1, 2], np.int64)))


def test_unknown_entry_lists_the_functions(program: ModuleOp) -> None:
    with pytest.raises(InterpretError, match=r"no function @mian .*@main, @head, @act"):
        ember.interpret(program, "mian")


def test_wrong_argument_count_names_the_arguments(program: ModuleOp) -> None:
    with pytest.raises(
        InterpretError, match=r"@main takes 2 arguments \(data, weight\), got 1"
    ):
        ember.interpret(program, "main", rand(1, 2, 4, 4))


def test_wrong_shape_names_the_argument(program: ModuleOp) -> None:
    with pytest.raises(
        InterpretError,
        match=r"argument 'weight' \(#1\) of @main must have shape \(3, 2, 3, 3\).*got \(3, 2, 3, 2\)",
    ):
        ember.interpret(program, "main", rand(1, 2, 4, 4), rand(3, 2, 3, 2))


def test_wrong_dtype_is_never_converted(program: ModuleOp) -> None:
    with pytest.raises(
        InterpretError,
        match=r"argument 'data' \(#0\) of @main must have dtype float32.*got float64",
    ):
        ember.interpret(
            program, "main", rand(1, 2, 4, 4, dtype="float64"), rand(3, 2, 3, 3)
        )


def test_not_a_module() -> None:
    with pytest.raises(InterpretError, match="expects a module"):
        interpret("func.func @main() { func.return }", "main")


def test_errors_are_ember_errors(program: ModuleOp) -> None:
    with pytest.raises(ember.EmberError):
        ember.interpret(program, "main")


# --------------------------------------------------------------------------
# Unknown ops and the extension point
# --------------------------------------------------------------------------

ADDF_PROGRAM = """
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.relu %a : tensor<2xf32>
  %1 = arith.addf %0, %0 : tensor<2xf32>
  func.return %1 : tensor<2xf32>
}
"""

CALLS: list[str] = []


@register_impls
class RecordingRelu(InterpreterFunctions):
    """Overrides graph.relu to record that something ran."""

    @impl(g.ReluOp)
    def run_relu(self, interpreter: Interpreter, op: g.ReluOp, args: tuple[Any, ...]):
        CALLS.append(op.name)
        return (np.maximum(args[0], 0),)


@register_impls
class TensorAddf(InterpreterFunctions):
    """arith.addf on numpy tensors, as an extension would provide it."""

    from xdsl.dialects import arith as _arith

    @impl(_arith.AddfOp)
    def run_addf(self, interpreter: Interpreter, op: Any, args: tuple[Any, ...]):
        return (args[0] + args[1],)


@register_impls
class BrokenAddf(InterpreterFunctions):
    """An implementation that fails, to check how failures are reported."""

    from xdsl.dialects import arith as _arith

    @impl(_arith.AddfOp)
    def run_addf(self, interpreter: Interpreter, op: Any, args: tuple[Any, ...]):
        raise ZeroDivisionError("boom")


def test_unknown_op_is_reported_before_anything_runs() -> None:
    module = ember.parse(ADDF_PROGRAM)
    CALLS.clear()
    with pytest.raises(InterpretError, match="no implementation of 'arith.addf'"):
        interpret(module, "main", np.ones(2, np.float32), functions=[RecordingRelu])
    assert CALLS == []


def test_extra_functions_extend_and_override() -> None:
    module = ember.parse(ADDF_PROGRAM)
    CALLS.clear()
    (out,) = interpret(
        module,
        "main",
        np.array([-1, 2], np.float32),
        functions=[RecordingRelu, TensorAddf()],
    )
    np.testing.assert_array_equal(out, [0.0, 4.0])
    assert CALLS == ["graph.relu"]
    assert make_interpreter(module, [TensorAddf]).implements(
        module.body.block.first_op.body.block.last_op
    )


def test_failing_implementation_names_the_op() -> None:
    module = ember.parse(ADDF_PROGRAM)
    with pytest.raises(
        InterpretError, match=r"arith.addf failed: ZeroDivisionError: boom\n  in @main"
    ):
        interpret(module, "main", np.ones(2, np.float32), functions=[BrokenAddf])


@register_impls
class BrokenRelu(InterpreterFunctions):
    """A user's implementation of a graph op that fails."""

    @impl(g.ReluOp)
    def run_relu(self, interpreter: Interpreter, op: Any, args: tuple[Any, ...]):
        raise ZeroDivisionError("boom")


NESTED_RELU = """
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @inner(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
func.func @inner(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.relu %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""


def test_a_failing_op_in_a_called_function_is_reported_alone() -> None:
    module = ember.parse(NESTED_RELU)
    with pytest.raises(
        InterpretError, match=r"^graph.relu failed: ZeroDivisionError: boom\n  in @inner"
    ):
        interpret(module, "main", np.ones(2, np.float32), functions=[BrokenRelu])


@register_op
@irdl_op_definition
class FailingOp(g.GraphOp):
    """A graph op whose reference definition fails."""

    name = "graph.test_failing"
    x = operand_def(TensorType)
    output = result_def(TensorType)
    SINGLE_TYPE: ClassVar = True


shape_rule(FailingOp)(lambda operand_types, attrs: operand_types[0])


@reference_of(FailingOp)
def _failing_reference(inputs: Any, attrs: Any, result_type: Any) -> Any:
    raise ZeroDivisionError("boom")


def test_a_failing_reference_is_reported_without_printing_the_module() -> None:
    """ember's own implementations bypass xDSL's report, which prints the
    whole module (generic form, every weight) into a note."""
    module = ember.parse(NESTED_RELU.replace("graph.relu", "graph.test_failing"))
    with pytest.raises(
        InterpretError, match=r"^graph.test_failing failed: ZeroDivisionError: boom\n  in @inner"
    ) as info:
        interpret(module, "main", np.ones(2, np.float32))
    assert not getattr(info.value, "__notes__", None)


def test_implements_answers_for_every_registered_functions_class() -> None:
    module = ember.parse(ADDF_PROGRAM)
    relu, addf = list(module.body.block.first_op.body.block.ops)[:2]
    plain = make_interpreter(module)
    assert plain.implements(relu) and not plain.implements(addf)
    assert make_interpreter(module, [TensorAddf]).implements(addf)


def test_an_op_without_implementation_met_while_running_gets_embers_message() -> None:
    """Calling the interpreter directly skips the check in advance; the op
    is still reported with ember's message, alone."""
    module = ember.parse(ADDF_PROGRAM)
    with pytest.raises(InterpretError, match=r"^the reference interpreter has no implementation of 'arith.addf'"):
        make_interpreter(module).call_op("main", (np.ones(2, np.float32),))


def test_functions_by_import_path() -> None:
    module = ember.parse(ADDF_PROGRAM)
    (out,) = interpret(
        module, "main", np.ones(2, np.float32), functions=[f"{__name__}:TensorAddf"]
    )
    np.testing.assert_array_equal(out, [2.0, 2.0])
    with pytest.raises(
        InterpretError, match="cannot load interpreter functions 'no.such.module:X'"
    ):
        interpret(
            module, "main", np.ones(2, np.float32), functions=["no.such.module:X"]
        )


def test_graph_passes_do_not_import_the_interpreter() -> None:
    """Constant folding uses the reference definitions alone: a build does
    not pay for importing xDSL's interpreters (all of them, riscv's too);
    ``ember.interp``'s names load their module on first use."""
    from tests.test_runtime_artifact import run_python

    code = (
        "import sys\n"
        "from ember.compiler import DEFAULT_GRAPH_PIPELINE\n"
        "from ember.passes.pipeline import apply_passes\n"
        "from ember.testing import workloads\n"
        "module, _ = workloads.get('tiny_pipe')\n"
        "apply_passes(module, DEFAULT_GRAPH_PIPELINE)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('xdsl.interpreters', "
        "'ember.interp.interpreter'))))\n"
        "import ember.interp\n"
        "assert ember.interp.interpret is ember.interp.interpreter.interpret\n"
        "assert not hasattr(ember.interp, 'no_such_name')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
