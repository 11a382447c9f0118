"""``fold-constants``: evaluate what is known at compile time.

Two kinds of rewrite, both applied until nothing changes:

* **evaluation** — a graph op whose operands are all ``graph.constant`` is
  replaced by a constant holding its value, computed by the reference
  interpreter's definition of the op (:func:`ember.interp.evaluate`), so a
  folded program means exactly what the unfolded one meant, bit for bit;
* **scale into weights** — ``multiply(conv2d(x, W), s)`` with a constant
  weight ``W`` and a constant ``s`` that varies along output channels only
  becomes ``conv2d(x, W * s)`` (each output channel's filter scaled), and
  ``multiply(dense(x, W), s)`` with ``s`` varying along units only becomes
  ``dense(x, W * s)``.  This is what turns conv2d + batch_norm into one conv
  (after ``simplify-inference``): the batch_norm's shift stays a broadcast
  ``graph.add`` — a bias.  It fires only when it is sound: the scale must not
  broadcast the result to a larger shape, must be constant across batch and
  spatial positions, and the conv (or dense) result must have no other user.
  Scaling the weights instead of the result changes rounding, not meaning;
  a fold whose scaled weights would not be finite is not done.

It mirrors TVM's ``FoldConstant`` (evaluation with the reference executor)
and ``FoldScaleAxis`` (forward folding of per-channel scales into conv2d and
dense weights), and MLIR's constant folding through op folders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ember import remarks
from ember.dialects.graph import (
    ConstantOp,
    Conv2dOp,
    DenseOp,
    GraphOp,
    MultiplyOp,
    numpy_dtype,
    shape_of,
)
from ember.interp.reference import evaluate
from ember.limits import within_limit

__all__ = [
    "EvaluateConstantOp",
    "FoldConstantsPass",
    "FoldScaleIntoConv2dWeight",
    "FoldScaleIntoDenseWeight",
    "constant_array",
    "erase_unused_constants",
]


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The value of ``value`` if a ``graph.constant`` defines it, else None
    (read-only: a view of the constant's memory, not a copy)."""
    owner = value.owner
    return owner.to_array(copy=False) if isinstance(owner, ConstantOp) else None


def _materialisable(value: SSAValue) -> bool:
    """Whether ``value``'s array fits ember's allocation limit (:mod:`ember.limits`)."""
    t = value.type
    assert isinstance(t, TensorType)  # graph ops are verified
    itemsize = numpy_dtype(t.element_type).itemsize
    return within_limit(math.prod(t.get_shape()) * itemsize)


def erase_unused_constants(rewriter: PatternRewriter, values: list[SSAValue]) -> None:
    """Erase the constants among ``values``' definitions that a rewrite left
    without users (and only those: these passes are not dead-code eliminators)."""
    for owner in {v.owner for v in values}:
        if isinstance(owner, ConstantOp) and not owner.results[0].uses:
            rewriter.erase(owner)


# --------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------


class EvaluateConstantOp(RewritePattern):
    """``op(constant, …, constant) -> constant(evaluate(op))`` for any graph op."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, GraphOp) or isinstance(op, ConstantOp) or not op.operands:
            return
        if not all(isinstance(v.owner, ConstantOp) for v in op.operands):
            return
        if not all(_materialisable(v) for v in (*op.operands, *op.results)):
            return  # folding is optional: a huge splat stays a splat
        inputs = [constant_array(v) for v in op.operands]
        value = evaluate(op, [a for a in inputs if a is not None])
        operands = list(op.operands)
        constant = ConstantOp.from_array(value, copy=False)
        remarks.inherit_location(op, [constant])
        if remarks.enabled():
            remarks.applied(
                "fold-constants",
                f"{op.name} evaluated at compile time into a constant {constant.result.type}",
                [op],
                rule="evaluate",
            )
        rewriter.replace(op, constant)
        erase_unused_constants(rewriter, operands)


# --------------------------------------------------------------------------
# Per-channel scales into weights
# --------------------------------------------------------------------------


def _per_channel_vector(
    scale: np.ndarray, out_shape: tuple[int, ...], axis: int
) -> np.ndarray | None:
    """The 1-D per-channel factors if ``scale`` broadcast against a tensor of
    ``out_shape`` varies along ``axis`` only and does not enlarge it; else None.
    """
    rank = len(out_shape)
    if scale.ndim > rank:
        return None
    padded = scale.reshape((1,) * (rank - scale.ndim) + scale.shape)
    if any(size != 1 for d, size in enumerate(padded.shape) if d != axis):
        return None
    if padded.shape[axis] not in (1, out_shape[axis]):
        return None
    return np.broadcast_to(padded.reshape(-1), (out_shape[axis],))


def _fold_scale_into_weight(
    op: MultiplyOp,
    rewriter: PatternRewriter,
    anchor_type: type[GraphOp],
    channel_axis: int,
) -> None:
    """``multiply(anchor(x, W), s) -> anchor(x, W * s)`` (either operand order),
    where the anchor's output channel ``o`` is computed from ``W[o]`` alone."""
    for side in (0, 1):
        anchor = op.operands[side].owner
        if not isinstance(anchor, anchor_type):
            continue
        product = op.results[0]
        anchor_result = anchor.results[0]
        if product.type != anchor_result.type or not anchor_result.has_one_use():
            continue
        weight = constant_array(anchor.operands[1])
        scale = constant_array(op.operands[1 - side])
        if weight is None or scale is None:
            continue
        vector = _per_channel_vector(scale, shape_of(anchor_result), channel_axis)
        if vector is None:
            continue
        # Output channel o of conv2d/dense reads only weight[o]: scale it there.
        factors = vector.reshape((-1,) + (1,) * (weight.ndim - 1))
        scaled = np.empty_like(weight)
        with np.errstate(all="ignore"):
            if weight.dtype == factors.dtype == np.float32:
                # IEEE rounds an f32 product once, as f64 then f32 would
                # (its 48-bit exact product fits in f64): the same bits,
                # 3-4x faster (resnet18's 20 folds: 15 → 4 ms).
                np.multiply(weight, factors, out=scaled)
            else:
                # In f64, rounded once; numpy's buffered loop converts a
                # block at a time, so no f64 copy of the whole weight is made.
                np.multiply(weight, factors, out=scaled, dtype=np.float64, casting="unsafe")
        if not np.all(np.isfinite(scaled)):
            # An overflowing or non-finite weight would turn a rounding change
            # into a different result (inf * 0 is NaN): keep the multiply.
            continue
        new_weight = ConstantOp.from_array(scaled, copy=False)
        if (weight_name := anchor.operands[1].name_hint) is not None:
            new_weight.results[0].name_hint = f"{weight_name}_scaled"
        folded = anchor_type.create(
            operands=[anchor.operands[0], new_weight.result],
            result_types=[anchor_result.type],
            properties=dict(anchor.properties),
            attributes=dict(anchor.attributes),
        )
        old_constants = [anchor.operands[1], op.operands[1 - side]]
        remarks.inherit_location(anchor, [new_weight, folded])
        if remarks.enabled():
            remarks.applied(
                "fold-constants",
                f"per-channel graph.multiply folded into the weight of {anchor.name}",
                [op, anchor],
                rule="scale-into-weight",
            )
        rewriter.replace(op, [new_weight, folded])
        rewriter.erase(anchor)
        erase_unused_constants(rewriter, old_constants)
        return


class FoldScaleIntoConv2dWeight(RewritePattern):
    """``multiply(conv2d(x, W), s) -> conv2d(x, W * s[:, None, None, None])``.

    ``W`` and ``s`` constant, ``s`` varying along the output channels only,
    the conv result used by this multiply alone.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MultiplyOp, rewriter: PatternRewriter) -> None:
        _fold_scale_into_weight(op, rewriter, Conv2dOp, channel_axis=1)


class FoldScaleIntoDenseWeight(RewritePattern):
    """``multiply(dense(x, W), s) -> dense(x, W * s[:, None])``.

    ``W`` and ``s`` constant, ``s`` varying along the units only, the dense
    result used by this multiply alone.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MultiplyOp, rewriter: PatternRewriter) -> None:
        _fold_scale_into_weight(op, rewriter, DenseOp, channel_axis=1)


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Evaluate ops on constants; fold per-channel scales into conv2d/dense weights."""

    name = "fold-constants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [
            EvaluateConstantOp(),
            FoldScaleIntoConv2dWeight(),
            FoldScaleIntoDenseWeight(),
        ]
        # Dead code that folding did not create is left alone (that is dce's job).
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, ctx, dce_enabled=False)
        ).rewrite_module(op)
