"""The numpy definition of every graph operator.

This module is what a graph op *means*: passes must preserve it, and compiled
code (CPU and CUDA) is compared with it.  It plays the role of TVM's Python
reference implementations (``tvm.topi.testing.*_python``) and of tinygrad's
pure-Python backend, and is reused by constant folding through
:data:`REFERENCE_IMPLS` / :func:`evaluate`.

Numerical conventions (the contract compiled code is checked against):

* **f32** ops compute in float32 (reductions and products accumulate in
  float32; the order of accumulation is unspecified, so comparisons use a
  tolerance).
* **f16** ops compute in float32 and round to float16 **once, at the end of
  each op**: operands are widened to float32, the op is evaluated as for f32,
  and the result is rounded to nearest-even float16.  A dense layer over f16
  therefore accumulates in float32, as fp16 GEMMs with fp32 accumulation do.
* **i32/i64** ops compute in their own type; overflow wraps (two's
  complement), as numpy does for arrays.
* IEEE special values propagate silently (no warnings, no errors): ``relu``,
  ``maximum``, ``minimum``, ``clip`` and ``max_pool2d`` are IEEE 754-2019
  maximum/minimum (NaN on either side gives NaN, and -0.0 < +0.0, so the
  sign of a zero result is defined, unlike numpy's ``np.maximum``);
  ``sqrt`` of a negative number is NaN; ``cast`` follows numpy ``astype``
  (floats to integers truncate toward zero; NaN/inf to integers are
  undefined).  docs/graph-dialect.md states these rules for users.
* Every result has exactly the op's result shape and numpy dtype.

Everything is vectorised: conv2d is im2col (``sliding_window_view``) plus one
batched matmul over groups; pooling loops over the window offsets, never over
pixels.  A full ResNet-18 at 1×3×224×224 interprets in a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from ember.dialects import graph as g
from ember.dialects.graph import (
    GRAPH_OPS,
    GraphOp,
    LrnOp,
    TransposeOp,
    dense_to_array,
    numpy_dtype,
    type_str,
)
from ember.dialects.graph_registry import (
    reference,
    registered_reference,
    registered_references,
)
from ember.errors import EmberError

__all__ = [
    "REFERENCE_IMPLS",
    "InterpretError",
    "RefImpl",
    "evaluate",
    "has_reference",
]


class InterpretError(EmberError, ValueError):
    """The reference interpreter was given something it cannot run.

    Raised for a wrong entry function, wrong arguments, an op without a
    reference implementation, or an op that failed while running.
    """


RefImpl = Callable[[Sequence[np.ndarray], Mapping[str, Any], TensorType], np.ndarray]
"""A reference implementation: ``(inputs, decoded attributes, result type)``.

Inputs are already widened (f16 → f32); the caller rounds the value it
returns to the result dtype (see :func:`evaluate`).
"""

# Above this many float32 elements, conv2d's im2col buffer is built one batch
# slice at a time, so large batches do not need gigabytes of scratch memory.
_IM2COL_ELEMENT_LIMIT = 32 * 1024 * 1024


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _f32(value: float) -> np.float32:
    """A float32 scalar, so that attributes never promote a computation to f64."""
    return np.float32(value)


def _result_shape(result_type: TensorType) -> tuple[int, ...]:
    return tuple(result_type.get_shape())


def _along_axis(vector: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """Reshape a 1-D ``vector`` so it broadcasts along ``axis`` of a rank-``rank`` array."""
    shape = [1] * rank
    shape[axis % rank] = vector.shape[0]
    return vector.reshape(shape)


def _pad_hw(data: np.ndarray, padding: Sequence[int], fill: float = 0.0) -> np.ndarray:
    """Pad the H and W axes of NCHW data by ``[top, left, bottom, right]``."""
    top, left, bottom, right = padding
    if not any(padding):
        return data
    return np.pad(
        data,
        ((0, 0), (0, 0), (top, bottom), (left, right)),
        mode="constant",
        constant_values=fill,
    )


def _window_slices(
    kh: int, kw: int, strides: Sequence[int], out_hw: Sequence[int],
    dilation: Sequence[int] = (1, 1),
) -> list[tuple[slice, slice]]:
    """For each window offset (i, j), the H/W slices of a padded input that
    hold element (i, j) of every output window; used by the pools."""
    sh, sw = strides
    oh, ow = out_hw
    dh, dw = dilation
    return [
        (
            slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
            slice(j * dw, j * dw + sw * (ow - 1) + 1, sw),
        )
        for i in range(kh)
        for j in range(kw)
    ]


# --------------------------------------------------------------------------
# Convolution and dense algebra
# --------------------------------------------------------------------------


def _conv2d(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    """NCHW × OIHW convolution as im2col + one batched matmul over groups."""
    data, weight = inputs
    groups = attrs["groups"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilation"]
    n, _, oh, ow = _result_shape(result_type)
    out_channels, group_channels, kh, kw = weight.shape
    group_out = out_channels // groups
    reduction = group_channels * kh * kw

    padded = _pad_hw(data, attrs["padding"])
    extent = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    # windows[n, c, y, x, i, j] = padded[n, c, y*sh + i*dh, x*sw + j*dw] (a view)
    windows = sliding_window_view(padded, extent, axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]
    # Split C into (groups, channels per group): still a view.
    windows = windows.reshape(n, groups, group_channels, oh, ow, kh, kw)
    kernel = weight.reshape(groups, group_out, reduction)

    per_image = groups * reduction * oh * ow
    batch_chunk = max(1, _IM2COL_ELEMENT_LIMIT // max(per_image, 1))
    out = np.empty((n, groups, group_out, oh, ow), dtype=np.result_type(data, weight))
    for start in range(0, n, batch_chunk):
        stop = min(n, start + batch_chunk)
        chunk = stop - start
        # cols[g, (c, i, j), (n, y, x)]: the copy that makes the matmul contiguous.
        cols = (
            windows[start:stop]
            .transpose(1, 2, 5, 6, 0, 3, 4)
            .reshape(groups, reduction, chunk * oh * ow)
        )
        product = np.matmul(kernel, cols)  # (groups, group_out, chunk*oh*ow)
        out[start:stop] = product.reshape(groups, group_out, chunk, oh, ow).transpose(
            2, 0, 1, 3, 4
        )
    return out.reshape(n, out_channels, oh, ow)


def _conv2d_transpose(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    """Scatter form: each window offset adds ``data · weight[:, :, ky, kx]``
    into a strided view of the full output, which ``padding`` then crops."""
    data, weight = inputs
    n, c, h, w = data.shape
    _, og, kh, kw = weight.shape
    groups = attrs["groups"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilation"]
    pt, pl, _, _ = attrs["padding"]
    eh, ew = attrs["output_padding"]
    full_h = (h - 1) * sh + (kh - 1) * dh + 1 + eh
    full_w = (w - 1) * sw + (kw - 1) * dw + 1 + ew
    full = np.zeros((n, groups, og, full_h, full_w), dtype=np.float32)
    x = data.reshape(n, groups, c // groups, h, w)
    wg = weight.reshape(groups, c // groups, og, kh, kw)
    for ky in range(kh):
        for kx in range(kw):
            contribution = np.einsum("ngchw,gco->ngohw", x, wg[:, :, :, ky, kx])
            full[:, :, :, ky * dh : ky * dh + (h - 1) * sh + 1 : sh,
                 kx * dw : kx * dw + (w - 1) * sw + 1 : sw] += contribution
    _, out_c, oh, ow = _result_shape(result_type)
    return full.reshape(n, out_c, full_h, full_w)[:, :, pt : pt + oh, pl : pl + ow].copy()


def _dense(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data, weight = inputs
    return np.matmul(data, weight.T)


def _matmul(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    lhs, rhs = inputs
    return np.matmul(lhs, rhs)


def _bias_add(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data, bias = inputs
    return data + _along_axis(bias, attrs["axis"], data.ndim)


def _batch_norm(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data, gamma, beta, mean, var = inputs
    axis, rank = attrs["axis"], data.ndim
    std = np.sqrt(_along_axis(var, axis, rank) + _f32(attrs["epsilon"]))
    normalized = (data - _along_axis(mean, axis, rank)) / std
    return normalized * _along_axis(gamma, axis, rank) + _along_axis(beta, axis, rank)


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 ``maximum`` (LLVM's ``llvm.maximum``, MLIR's
    ``arith.maximumf``): NaN if either is NaN, and +0.0 above -0.0."""
    out = np.maximum(a, b)
    if out.dtype.kind != "f":
        return out
    # np.maximum returns either zero of an equal pair; pick the +0.0.
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), b, a), out)


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 ``minimum``: NaN if either is NaN, and -0.0 below +0.0."""
    out = np.minimum(a, b)
    if out.dtype.kind != "f":
        return out
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), a, b), out)


def _sigmoid_stable(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` without overflowing ``exp`` for large ``|x|``."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> RefImpl:
    def run(
        inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
    ) -> np.ndarray:
        return fn(inputs[0])

    return run


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> RefImpl:
    def run(
        inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
    ) -> np.ndarray:
        return fn(inputs[0], inputs[1])

    return run


def _clip(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    return _minimum(_maximum(inputs[0], _f32(attrs["min"])), _f32(attrs["max"]))


def _softmax(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    x = inputs[0]
    axis = attrs["axis"]
    # Subtracting the maximum keeps exp() finite; the value is unchanged.
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------


def _max_pool2d(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    # Padding with -inf means padding never wins the max (every window holds
    # at least one real element, which the verifier guarantees).
    padded = _pad_hw(inputs[0], attrs["padding"], fill=-np.inf)
    kh, kw = attrs["pool_size"]
    _, _, oh, ow = _result_shape(result_type)
    out: np.ndarray | None = None
    for rows, cols in _window_slices(kh, kw, attrs["strides"], (oh, ow), attrs["dilation"]):
        window = padded[:, :, rows, cols]
        out = window.copy() if out is None else _maximum(out, window)
    assert out is not None  # pool_size is positive (verified)
    return out


def _avg_pool2d(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data = inputs[0]
    padding = attrs["padding"]
    kh, kw = attrs["pool_size"]
    _, _, oh, ow = _result_shape(result_type)
    slices = _window_slices(kh, kw, attrs["strides"], (oh, ow), attrs["dilation"])
    padded = _pad_hw(data, padding)
    total = np.zeros(_result_shape(result_type), dtype=data.dtype)
    for rows, cols in slices:
        total += padded[:, :, rows, cols]
    if attrs["count_include_pad"]:
        return total / _f32(kh * kw)
    # The divisor is the number of real (unpadded) elements in each window.
    ones = _pad_hw(np.ones((1, 1) + data.shape[2:], dtype=data.dtype), padding)
    count = np.zeros((1, 1, oh, ow), dtype=data.dtype)
    for rows, cols in slices:
        count += ones[:, :, rows, cols]
    return total / count


def _global_avg_pool2d(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data = inputs[0]
    return data.mean(axis=(2, 3), keepdims=True, dtype=data.dtype)


# --------------------------------------------------------------------------
# Layout and data movement
# --------------------------------------------------------------------------


def _reshape_to_result(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    """batch_flatten and reshape: row-major reinterpretation to the result shape."""
    return inputs[0].reshape(_result_shape(result_type)).copy()


def _transpose(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data = inputs[0]
    return data.transpose(TransposeOp.normalized_axes(attrs["axes"], data.ndim)).copy()


def _concatenate(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    return np.concatenate(list(inputs), axis=attrs["axis"])


def _slice(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data = inputs[0]
    strides = attrs["strides"] or (1,) * data.ndim
    index = tuple(
        slice(b, e if e >= 0 else None, s)
        for b, e, s in zip(attrs["begin"], attrs["end"], strides)
    )
    return data[index].copy()


def _pad(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data = inputs[0]
    padding = attrs["padding"]
    widths = list(zip(padding[: data.ndim], padding[data.ndim :]))
    mode = attrs["mode"]
    if mode == "constant":
        fill = np.asarray(attrs["value"], dtype=np.float32).astype(data.dtype)
        return np.pad(data, widths, mode="constant", constant_values=fill)
    return np.pad(data, widths, mode=mode)


def resize_source(
    out_size: int, in_size: int, scale: float, mode: str
) -> np.ndarray:
    """Input coordinates (float32) of the ``out_size`` output pixels of one
    axis, by ONNX's coordinate transformations.  Shared with the kernel
    generator's arithmetic, which computes the same values in f32."""
    x = np.arange(out_size, dtype=np.float32)
    scale = np.float32(scale if scale > 0 else out_size / in_size)
    half = np.float32(0.5)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / scale
    if mode == "align_corners":
        if out_size == 1:
            return np.zeros_like(x)
        return x * np.float32((in_size - 1) / (out_size - 1))
    if mode == "pytorch_half_pixel" and out_size == 1:
        return np.zeros_like(x)
    return (x + half) / scale - half


def _nearest_index(coords: np.ndarray, rounding: str, in_size: int) -> np.ndarray:
    half = np.float32(0.5)
    if rounding == "round_prefer_floor":
        index = np.ceil(coords - half)
    elif rounding == "round_prefer_ceil":
        index = np.floor(coords + half)
    elif rounding == "floor":
        index = np.floor(coords)
    else:
        index = np.ceil(coords)
    return np.clip(index.astype(np.int64), 0, in_size - 1)


def _resize2d(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    data = inputs[0]
    _, _, h, w = data.shape
    out = data
    for axis, size, length, scale in ((2, attrs["size"][0], h, attrs["scale_h"]), (3, attrs["size"][1], w, attrs["scale_w"])):
        coords = resize_source(size, length, scale, attrs["coordinate_transformation_mode"])
        shape = [1, 1, 1, 1]
        shape[axis] = size
        if attrs["method"] == "nearest":
            out = np.take(out, _nearest_index(coords, attrs["nearest_mode"], length), axis=axis)
            continue
        low = np.floor(coords)
        weight = (coords - low).reshape(shape)
        first = np.clip(low.astype(np.int64), 0, length - 1)
        second = np.clip(low.astype(np.int64) + 1, 0, length - 1)
        out = np.take(out, first, axis=axis) * (np.float32(1) - weight) + np.take(out, second, axis=axis) * weight
    return out


def _lrn(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    x = inputs[0]
    size = attrs["size"]
    before, after = LrnOp.window(size)
    squares = np.square(x)
    widths = [(0, 0)] * x.ndim
    widths[1] = (before, after)
    padded = np.pad(squares, widths)
    channels = x.shape[1]
    total = np.zeros_like(x)
    for k in range(size):
        total += padded[:, k : k + channels]
    scale = _f32(attrs["bias"]) + _f32(attrs["alpha"]) / _f32(size) * total
    return x / np.power(scale, _f32(attrs["beta"]))


def _reduce(fn: Callable[..., np.ndarray]) -> RefImpl:
    def run(
        inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
    ) -> np.ndarray:
        data = inputs[0]
        axes = tuple(a % data.ndim for a in attrs["axes"])
        return fn(data, axis=axes, keepdims=bool(attrs["keepdims"]), dtype=data.dtype)

    return run


def _reduce_max(data: np.ndarray, axis: tuple[int, ...], keepdims: bool, dtype: Any) -> np.ndarray:
    return np.max(data, axis=axis, keepdims=keepdims)


def _cast(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    return inputs[0].astype(numpy_dtype(result_type.element_type))


def _constant(
    inputs: Sequence[np.ndarray], attrs: Mapping[str, Any], result_type: TensorType
) -> np.ndarray:
    return dense_to_array(attrs["value"])


# --------------------------------------------------------------------------
# The table and the entry point
# --------------------------------------------------------------------------

_BUILTIN_REFERENCES: dict[type[GraphOp], RefImpl] = {
    g.Conv2dOp: _conv2d,
    g.Conv2dTransposeOp: _conv2d_transpose,
    g.DenseOp: _dense,
    g.MatmulOp: _matmul,
    g.BiasAddOp: _bias_add,
    g.BatchNormOp: _batch_norm,
    g.ReluOp: _unary(lambda x: _maximum(x, x.dtype.type(0))),
    g.SigmoidOp: _unary(_sigmoid_stable),
    g.TanhOp: _unary(np.tanh),
    g.ExpOp: _unary(np.exp),
    g.SqrtOp: _unary(np.sqrt),
    g.LogOp: _unary(np.log),
    g.NegativeOp: _unary(np.negative),
    g.ClipOp: _clip,
    g.AddOp: _binary(np.add),
    g.SubtractOp: _binary(np.subtract),
    g.MultiplyOp: _binary(np.multiply),
    g.DivideOp: _binary(np.divide),
    g.MaximumOp: _binary(_maximum),
    g.MinimumOp: _binary(_minimum),
    g.SoftmaxOp: _softmax,
    g.MaxPool2dOp: _max_pool2d,
    g.AvgPool2dOp: _avg_pool2d,
    g.GlobalAvgPool2dOp: _global_avg_pool2d,
    g.BatchFlattenOp: _reshape_to_result,
    g.ReshapeOp: _reshape_to_result,
    g.TransposeOp: _transpose,
    g.ConcatenateOp: _concatenate,
    g.SliceOp: _slice,
    g.PadOp: _pad,
    g.Resize2dOp: _resize2d,
    g.LrnOp: _lrn,
    g.ReduceSumOp: _reduce(np.sum),
    g.ReduceMeanOp: _reduce(np.mean),
    g.ReduceMaxOp: _reduce(_reduce_max),
    g.CastOp: _cast,
    g.ConstantOp: _constant,
}
"""ember's ops → their definitions, registered below with ``@reference``."""

for _op_class, _impl in _BUILTIN_REFERENCES.items():
    reference(_op_class)(_impl)


class _ReferencesByName(Mapping[str, RefImpl]):
    """Op name → reference implementation: a live view of the registry
    (:func:`ember.dialects.graph_registry.reference`), registered ops included."""

    def _by_name(self) -> dict[str, RefImpl]:
        return {cls.name: impl for cls, impl in registered_references().items()}

    def __getitem__(self, name: str) -> RefImpl:
        return self._by_name()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name())

    def __len__(self) -> int:
        return len(registered_references())


REFERENCE_IMPLS: Mapping[str, RefImpl] = _ReferencesByName()
"""Op name → reference implementation, for every graph op that has one."""


def _reference_of(op: Operation) -> RefImpl | None:
    if not isinstance(op, GraphOp):
        return None
    return registered_reference(type(op))


def has_reference(op: Operation) -> bool:
    """Whether :func:`evaluate` can compute ``op``."""
    return _reference_of(op) is not None


def _widen(array: np.ndarray) -> np.ndarray:
    """f16 operands are computed in f32 (see the module docstring)."""
    return array.astype(np.float32) if array.dtype == np.float16 else array


def _check_inputs(op: GraphOp, inputs: Sequence[np.ndarray]) -> None:
    if len(inputs) != len(op.operands):
        raise InterpretError(
            f"{op.name}: expected {len(op.operands)} inputs, got {len(inputs)}"
        )
    for i, (value, operand) in enumerate(zip(inputs, op.operands)):
        t = operand.type
        assert isinstance(t, TensorType)  # graph op operands are verified tensors
        shape, dtype = tuple(t.get_shape()), numpy_dtype(t.element_type)
        if (
            not isinstance(value, np.ndarray)
            or value.shape != shape
            or value.dtype != dtype
        ):
            got = (
                f"array of shape {value.shape} and dtype {value.dtype}"
                if isinstance(value, np.ndarray)
                else type(value).__name__
            )
            raise InterpretError(
                f"{op.name}: input {i} must be an array of shape {shape} and "
                f"dtype {dtype} ({type_str(t)}), got {got}"
            )


def evaluate(op: Operation, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Compute graph op ``op`` on numpy ``inputs`` (one per operand).

    Uses the op's attributes (defaults filled in) and its result type.  The
    result is a new array, sharing no memory with the inputs, with exactly the
    result type's shape and dtype.  Raises :class:`InterpretError` for an op without
    a reference implementation or inputs that do not match the operand types.
    """
    impl = _reference_of(op)
    if impl is None:
        known = ", ".join(sorted(REFERENCE_IMPLS))
        raise InterpretError(
            f"no reference implementation for op '{op.name}' (known: {known})"
        )
    assert isinstance(op, GraphOp)
    _check_inputs(op, inputs)
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)  # verified
    # IEEE semantics are the definition: overflow to inf, NaN from invalid
    # operations, and undefined float-to-int casts are results, not warnings.
    with np.errstate(all="ignore"):
        value = impl([_widen(x) for x in inputs], op.attr_values(), result_type)
        return _finish(op, np.asarray(value), result_type)


def _finish(op: Operation, value: np.ndarray, result_type: TensorType) -> np.ndarray:
    """Round to the result dtype (the one f16 rounding) and check the shape."""
    dtype = numpy_dtype(result_type.element_type)
    if value.dtype != dtype:
        value = value.astype(dtype)
    shape = tuple(result_type.get_shape())
    if value.shape != shape:
        # A reference implementation disagreeing with infer_type is an ember bug.
        raise InterpretError(
            f"{op.name}: reference implementation produced shape {value.shape}, "
            f"but the result type is {type_str(result_type)}"
        )
    return value


def _check_table_complete() -> None:
    """Every graph op has a definition (checked at import, cheaply)."""
    missing = sorted(op.name for op in GRAPH_OPS if op not in _BUILTIN_REFERENCES)
    if missing:
        raise ImportError(f"graph ops without a reference implementation: {missing}")


_check_table_complete()
