"""``simplify-inference``: batch_norm becomes a per-channel scale and shift.

In inference form batch normalisation is an affine map per channel::

    scale = gamma / sqrt(var + epsilon)
    shift = beta - mean * scale
    batch_norm(x) = x * scale + shift        (scale, shift broadcast along axis)

This pass rewrites every ``graph.batch_norm`` into ``graph.multiply`` and
``graph.add``.  When gamma, beta, mean and var are all ``graph.constant``
ops (for instance after ``bind-params``) the scale and shift are computed here,
once, in float64 and rounded to the element type, and become two constants
(parameter constants left without users are erased); otherwise they are computed by graph ops over the parameters (add, sqrt,
divide, multiply, subtract), which ``fold-constants`` folds where it can.
The 1-D scale and shift are reshaped to ``C×1×…×1`` (one 1 per axis after
``axis``) so numpy broadcasting lines them up with ``axis``.

It mirrors TVM's ``SimplifyInference`` (``relay.transform.SimplifyInference``
unpacks ``batch_norm`` the same way); together with ``fold-constants`` it
folds a batch_norm that follows a conv2d into the conv's weights.

Numerics: the result equals the reference ``batch_norm`` up to rounding
(float32: a few ulps; float16: the multiply and the add each round once,
where the reference rounds once per op).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ember import remarks
from ember.dialects.graph import (
    AddOp,
    BatchNormOp,
    ConstantOp,
    DivideOp,
    MultiplyOp,
    ReshapeOp,
    SqrtOp,
    SubtractOp,
    numpy_dtype,
    shape_of,
    tensor_type,
)
from ember.passes.fold_constants import constant_array, erase_unused_constants

__all__ = ["BatchNormToScaleShift", "SimplifyInferencePass", "channel_shape"]


def channel_shape(channels: int, axis: int, rank: int) -> tuple[int, ...]:
    """The shape that makes a length-``channels`` vector broadcast along
    ``axis`` of a rank-``rank`` tensor: ``(C, 1, …, 1)`` with ``rank - 1 -
    axis`` ones (leading axes are supplied by broadcasting)."""
    return (channels,) + (1,) * (rank - 1 - axis)


def _constant_scale_shift(
    params: list[np.ndarray], epsilon: float, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Scale and shift from constant parameters, in float64, rounded once."""
    gamma, beta, mean, var = (p.astype(np.float64) for p in params)
    # The reference adds epsilon as a float32 scalar; so do we.
    scale = gamma / np.sqrt(var + np.float64(np.float32(epsilon)))
    shift = beta - mean * scale
    return scale.astype(dtype), shift.astype(dtype)


def _scale_shift_ops(
    op: BatchNormOp, epsilon: float, dtype: np.dtype
) -> tuple[list[Operation], SSAValue, SSAValue]:
    """Graph ops computing the 1-D scale and shift from non-constant parameters."""
    _, gamma, beta, mean, var = op.operands
    eps = ConstantOp.from_array(np.asarray(np.float32(epsilon), dtype=dtype))
    var_eps = AddOp.build([var, eps.result])
    std = SqrtOp.build([var_eps.result])
    scale = DivideOp.build([gamma, std.result])
    mean_scale = MultiplyOp.build([mean, scale.result])
    shift = SubtractOp.build([beta, mean_scale.result])
    _name_results(
        op,
        {eps: "eps", var_eps: "var_eps", std: "std", scale: "scale",
         mean_scale: "mean_scale", shift: "shift"},
    )
    ops: list[Operation] = [eps, var_eps, std, scale, mean_scale, shift]
    return ops, scale.result, shift.result


def _name_results(op: Operation, suffixes: dict[Operation, str]) -> None:
    """Name new ops after the batch_norm they replace (``%y_scale``), so the
    rewritten IR still reads like the original.  (Ops left unnamed would all
    inherit the batch_norm's own name from the rewriter.)"""
    base = op.results[0].name_hint
    if base is None:
        return
    for new_op, suffix in suffixes.items():
        new_op.results[0].name_hint = f"{base}_{suffix}"


def _broadcastable(
    value: SSAValue, shape: tuple[int, ...], element: Attribute, ops: list[Operation]
) -> SSAValue:
    """``value`` reshaped to ``shape`` (a new op appended to ``ops``) unless it
    already has that shape."""
    if shape_of(value) == shape:
        return value
    reshape = ReshapeOp.build([value], tensor_type(shape, element))
    if value.name_hint is not None:
        reshape.results[0].name_hint = f"{value.name_hint}_bcast"
    ops.append(reshape)
    return reshape.result


class BatchNormToScaleShift(RewritePattern):
    """``batch_norm(x, gamma, beta, mean, var) -> x * scale + shift``.

    ``scale = gamma / sqrt(var + epsilon)`` and ``shift = beta - mean * scale``
    become constants when all four parameters are constants, graph ops
    otherwise; both are shaped to broadcast along ``axis``.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BatchNormOp, rewriter: PatternRewriter) -> None:
        data = op.operands[0]
        data_type = data.type
        if not isinstance(data_type, TensorType):
            return  # the verifier rejects this; nothing to rewrite
        dtype = numpy_dtype(data_type.element_type)
        rank = len(data_type.get_shape())
        axis = op.attr("axis") % rank
        epsilon = op.attr("epsilon")
        shape = channel_shape(data_type.get_shape()[axis], axis, rank)

        params = [constant_array(v) for v in op.operands[1:]]
        ops: list[Operation] = []
        if all(p is not None for p in params):
            scale_array, shift_array = _constant_scale_shift(
                [p for p in params if p is not None], epsilon, dtype
            )
            scale_const = ConstantOp.from_array(scale_array.reshape(shape))
            shift_const = ConstantOp.from_array(shift_array.reshape(shape))
            _name_results(op, {scale_const: "scale", shift_const: "shift"})
            ops += [scale_const, shift_const]
            scale, shift = scale_const.result, shift_const.result
        else:
            ops, flat_scale, flat_shift = _scale_shift_ops(op, epsilon, dtype)
            element = data_type.element_type
            scale = _broadcastable(flat_scale, shape, element, ops)
            shift = _broadcastable(flat_shift, shape, element, ops)

        scaled = MultiplyOp.build([data, scale])
        shifted = AddOp.build([scaled.result, shift])
        _name_results(op, {scaled: "scaled"})
        shifted.results[0].name_hint = op.results[0].name_hint
        parameters = list(op.operands[1:])
        new_ops = [*ops, scaled, shifted]
        remarks.inherit_location(op, new_ops)
        if remarks.enabled():
            how = "constant scale and shift" if ops and all(
                isinstance(o, ConstantOp) for o in ops
            ) else "scale and shift computed from its parameters"
            remarks.applied(
                "simplify-inference",
                f"graph.batch_norm rewritten as multiply and add ({how})",
                [op],
                epsilon=epsilon,
                axis=axis,
            )
        rewriter.replace(op, new_ops)
        erase_unused_constants(rewriter, parameters)


@dataclass(frozen=True)
class SimplifyInferencePass(ModulePass):
    """Rewrite inference-only ops (batch_norm) into multiply and add."""

    name = "simplify-inference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(BatchNormToScaleShift()).rewrite_module(op)
