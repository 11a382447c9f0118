"""Canonicalization patterns of the graph dialect (MLIR's canonicalizers).

``PATTERNS`` maps an op name to the patterns rooted at that op; the ops that
carry ``_GraphCanonicalization`` in ``ember/dialects/graph.py`` look it up
lazily through :func:`ember.passes.canonicalization.patterns_for`, so the
stock ``canonicalize`` pass (ember-opt's and xdsl-opt's) applies them.

Every pattern is a local algebraic identity that holds under the reference
interpreter's numpy semantics (``ember.interp``), with one documented
relaxation: ``x + 0`` and ``x - 0`` may turn a ``-0.0`` result into ``+0.0``
or back, which compares equal (TVM's and most DL compilers' simplifiers make
the same choice).  A pattern never changes a value's type: binary identities
fire only when the result type equals the kept operand's type, because numpy
broadcasting may make ``x * 1`` larger than ``x``.

Two kinds of rewrite:

- *collapse*: the op is replaced by a value that already exists (``x``, or
  the inner op's result); it always fires, since it only removes work;
- *compose*: two ops become one new op on the inner op's operand; it fires
  only when the outer op is the inner op's sole user, otherwise the inner op
  survives and nothing is saved.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ember.dialects.graph import (
    AddOp,
    CastOp,
    ClipOp,
    ConstantOp,
    DivideOp,
    MultiplyOp,
    NegativeOp,
    ReluOp,
    ReshapeOp,
    SubtractOp,
    TransposeOp,
    splat_value,
)

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _is_constant_filled_with(value: SSAValue, scalar: float) -> bool:
    """Whether ``value`` is a ``graph.constant`` with every element ``scalar``."""
    owner = value.owner
    if not isinstance(owner, ConstantOp):
        return False
    splat = splat_value(owner.properties["value"])
    if splat is not None:  # a huge splat is never materialised to be compared
        return bool(splat == scalar)
    return bool(np.all(owner.to_array() == scalar))


def _producer(value: SSAValue, op_type: type[Operation]) -> Operation | None:
    """The op of type ``op_type`` that defines ``value``, if it is one."""
    owner = value.owner
    return owner if isinstance(owner, op_type) else None


def _replace_by_operand_if_neutral(
    op: Operation,
    rewriter: PatternRewriter,
    neutral: float,
    neutral_sides: tuple[int, ...],
) -> None:
    """Replace binary ``op`` by its other operand when one side is all ``neutral``.

    ``neutral_sides`` lists the operand indices at which a constant filled with
    ``neutral`` is an identity (``(0, 1)`` for ``+`` and ``*``, ``(1,)`` for
    ``-`` and ``/``).  Only fires when the result type equals the kept
    operand's type: broadcasting against the constant may change the shape.
    """
    result_type = op.results[0].type
    for side in neutral_sides:
        kept = op.operands[1 - side]
        if kept.type != result_type:
            continue
        if _is_constant_filled_with(op.operands[side], neutral):
            rewriter.replace(op, (), [kept])
            return


def _compose_permutations(
    inner: tuple[int, ...], outer: tuple[int, ...]
) -> tuple[int, ...]:
    """Axes of ``transpose(transpose(x, inner), outer)`` as one transpose of ``x``.

    ``np.transpose(y, outer).shape[i] == y.shape[outer[i]]`` and
    ``y.shape[j] == x.shape[inner[j]]``, hence the composition ``inner[outer[i]]``.
    """
    return tuple(inner[axis] for axis in outer)


def _transpose_axes(op: TransposeOp) -> tuple[int, ...]:
    """The normalized permutation of a (verified) transpose."""
    rank = len(op.operands[0].type.get_shape())
    return TransposeOp.normalized_axes(op.attr("axes"), rank)


def _is_identity_permutation(axes: tuple[int, ...]) -> bool:
    return axes == tuple(range(len(axes)))


# --------------------------------------------------------------------------
# Unary elementwise
# --------------------------------------------------------------------------


class ReluOfRelu(RewritePattern):
    """``relu(relu(x)) -> relu(x)``: relu is idempotent."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReluOp, rewriter: PatternRewriter) -> None:
        if _producer(op.operands[0], ReluOp) is None:
            return
        rewriter.replace(op, (), [op.operands[0]])


class NegativeOfNegative(RewritePattern):
    """``negative(negative(x)) -> x`` (exact, also for wrapping integers)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegativeOp, rewriter: PatternRewriter) -> None:
        inner = _producer(op.operands[0], NegativeOp)
        if inner is None:
            return
        rewriter.replace(op, (), [inner.operands[0]])


class ClipOfClip(RewritePattern):
    """``clip(clip(x, a, b), c, d) -> clip(x, max(a, c), min(b, d))``.

    Only when the two intervals overlap (``max(a, c) <= min(b, d)``); when
    they do not, the result is a constant and a single clip cannot say it.
    A compose rewrite: the inner clip must have no other user.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ClipOp, rewriter: PatternRewriter) -> None:
        inner = _producer(op.operands[0], ClipOp)
        if inner is None or not inner.results[0].has_one_use():
            return
        low = max(inner.attr("min"), op.attr("min"))
        high = min(inner.attr("max"), op.attr("max"))
        if low > high:
            return
        source = inner.operands[0]
        merged = ClipOp.build([source], op.results[0].type, min=low, max=high)
        rewriter.replace(op, merged)


class CastToSameType(RewritePattern):
    """``cast(x) -> x`` when the target type is already ``x``'s type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter) -> None:
        if op.operands[0].type != op.results[0].type:
            return
        rewriter.replace(op, (), [op.operands[0]])


# --------------------------------------------------------------------------
# Binary arithmetic with a neutral constant
# --------------------------------------------------------------------------


class MultiplyByOne(RewritePattern):
    """``x * 1 -> x`` and ``1 * x -> x`` (1: a constant of all ones, no broadcast)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MultiplyOp, rewriter: PatternRewriter) -> None:
        _replace_by_operand_if_neutral(op, rewriter, 1, (1, 0))


class AddZero(RewritePattern):
    """``x + 0 -> x`` and ``0 + x -> x`` (0: a constant of all zeros, no broadcast)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter) -> None:
        _replace_by_operand_if_neutral(op, rewriter, 0, (1, 0))


class SubtractZero(RewritePattern):
    """``x - 0 -> x`` (``0 - x`` is ``-x``, not ``x``: only the right side)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SubtractOp, rewriter: PatternRewriter) -> None:
        _replace_by_operand_if_neutral(op, rewriter, 0, (1,))


class DivideByOne(RewritePattern):
    """``x / 1 -> x`` (only the right side)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DivideOp, rewriter: PatternRewriter) -> None:
        _replace_by_operand_if_neutral(op, rewriter, 1, (1,))


# --------------------------------------------------------------------------
# Shape ops
# --------------------------------------------------------------------------


class ReshapeToSameType(RewritePattern):
    """``reshape(x) -> x`` when the result type is ``x``'s type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.operands[0].type != op.results[0].type:
            return
        rewriter.replace(op, (), [op.operands[0]])


class ReshapeOfReshape(RewritePattern):
    """``reshape(reshape(x)) -> reshape(x)``: row-major reshapes compose.

    Collapses to ``x`` itself when the outer type is ``x``'s type; otherwise a
    compose rewrite that needs the inner reshape to have no other user.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = _producer(op.operands[0], ReshapeOp)
        if inner is None:
            return
        source = inner.operands[0]
        if source.type == op.results[0].type:
            rewriter.replace(op, (), [source])
            return
        if not inner.results[0].has_one_use():
            return
        rewriter.replace(op, ReshapeOp.build([source], op.results[0].type))


class IdentityTranspose(RewritePattern):
    """``transpose(x, axes) -> x`` when ``axes`` is ``0, 1, …, rank-1``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        if not _is_identity_permutation(_transpose_axes(op)):
            return
        rewriter.replace(op, (), [op.operands[0]])


class TransposeOfTranspose(RewritePattern):
    """``transpose(transpose(x, p), q) -> transpose(x, p∘q)``, or ``x`` if identity.

    The identity case always fires; otherwise a compose rewrite that needs the
    inner transpose to have no other user.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = _producer(op.operands[0], TransposeOp)
        if inner is None:
            return
        axes = _compose_permutations(_transpose_axes(inner), _transpose_axes(op))
        source = inner.operands[0]
        if _is_identity_permutation(axes):
            rewriter.replace(op, (), [source])
            return
        if not inner.results[0].has_one_use():
            return
        rewriter.replace(op, TransposeOp.build([source], axes=axes))


PATTERNS: dict[str, tuple[RewritePattern, ...]] = {
    ReluOp.name: (ReluOfRelu(),),
    NegativeOp.name: (NegativeOfNegative(),),
    ClipOp.name: (ClipOfClip(),),
    CastOp.name: (CastToSameType(),),
    MultiplyOp.name: (MultiplyByOne(),),
    AddOp.name: (AddZero(),),
    SubtractOp.name: (SubtractZero(),),
    DivideOp.name: (DivideByOne(),),
    ReshapeOp.name: (ReshapeToSameType(), ReshapeOfReshape()),
    TransposeOp.name: (IdentityTranspose(), TransposeOfTranspose()),
}
"""Canonicalization patterns by op name (looked up by ``patterns_for``)."""
