"""``partition-extern{libs=…}``: offload ops to external library functions.

Each matching graph op becomes a ``graph.call_extern`` of a function from the
runtime registry, computed by the library at run time::

    %y = graph.dense %x, %w : (tensor<64x784xf32>, tensor<1024x784xf32>) -> tensor<64x1024xf32>
    // becomes
    %y = graph.call_extern "blas.sgemm"(%x, %w) : (tensor<64x784xf32>, tensor<1024x784xf32>) -> tensor<64x1024xf32>

This is TVM's ``target="llvm -libs=cblas"`` / ``"cuda -libs=cublas,cudnn"``
(``relay.build`` then computes ``nn.dense`` / ``nn.conv2d`` with the library)
made a pass whose effect is visible in the IR, as Relax's BYOC partitioning
makes it a ``call_dps_packed``.  A ``graph.call_extern`` is opaque to fusion:
what follows an offloaded op (bias, batch_norm's scale and shift, relu) is
still fused, into its own kernel instead of the anchor's (seeds/002).

Libraries (``libs``, a comma list):

* ``blas`` (:mod:`ember.runtime.blas`, numpy's OpenBLAS): float32
  ``graph.dense`` → ``"blas.sgemm"``, ``graph.matmul`` → ``"blas.matmul"``,
  and ``graph.conv2d`` with ``groups = 1`` → ``"blas.conv2d"`` (im2col +
  sgemm; its strides, padding and dilation become an int64 constant operand,
  the registry passing tensors only).  float16 ops stay: OpenBLAS has no
  half-precision GEMM, and numpy's float16 matmul is a scalar loop, slower
  than ember's own kernels.  Grouped and depthwise convolutions stay: they
  are many small GEMMs, where ember's direct kernels win.

An unknown library is a :class:`~ember.errors.PassError` listing the known
ones, raised when the pass is configured, before any IR is touched.  Ops that
do not match are left as they are (they are not errors: they are compiled by
ember).  Offloaded names are registered when :mod:`ember.runtime.blas` is
imported, which this pass does, and which the registry does on its own when
it first looks up a ``blas.*`` name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
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
from ember.dialects.graph import CallExternOp, ConstantOp, Conv2dOp, DenseOp, MatmulOp
from ember.errors import PassError
from ember.runtime import blas

__all__ = [
    "LIBRARIES",
    "Conv2dToBlas",
    "DenseToBlasSgemm",
    "MatmulToBlas",
    "PartitionExternPass",
]


def _all_float32(values: Sequence[SSAValue]) -> bool:
    return all(
        isinstance(v.type, TensorType) and v.type.element_type == f32 for v in values
    )


def _replace_with_extern(
    op: Operation,
    function: str,
    operands: Sequence[SSAValue],
    rewriter: PatternRewriter,
    new_ops: Sequence[Operation] = (),
) -> None:
    """Replace ``op`` by ``graph.call_extern "function"(operands)`` of the same
    result type, keeping its result's name so the IR still reads the same."""
    call = CallExternOp(function, operands, [op.results[0].type])
    call.results[0].name_hint = op.results[0].name_hint
    remarks.inherit_location(op, [*new_ops, call])
    if remarks.enabled():
        remarks.applied(
            "partition-extern", f"{op.name} offloaded to {function}", [op], function=function
        )
    rewriter.replace(op, [*new_ops, call])


def _not_offloaded(op: Operation, library: str, why: str) -> None:
    """A missed remark: ``op`` stays generated code, and why."""
    if remarks.enabled():
        remarks.missed(
            "partition-extern",
            f"{op.name} not offloaded to {library}: {why}; it stays generated code",
            [op],
            library=library,
        )


def _float32_or_explain(op: Operation, library: str) -> bool:
    if _all_float32([*op.operands, *op.results]):
        return True
    types = ", ".join(sorted({str(v.type.element_type) for v in [*op.operands, *op.results] if isinstance(v.type, TensorType)}))
    _not_offloaded(op, library, f"{library} takes float32 only, this op has {types}")
    return False


class DenseToBlasSgemm(RewritePattern):
    """``graph.dense(x, w) -> graph.call_extern "blas.sgemm"(x, w)`` (float32)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DenseOp, rewriter: PatternRewriter) -> None:
        if not _float32_or_explain(op, "blas"):
            return
        _replace_with_extern(op, blas.SGEMM, list(op.operands), rewriter)


class MatmulToBlas(RewritePattern):
    """``graph.matmul(a, b) -> graph.call_extern "blas.matmul"(a, b)`` (float32)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        if not _float32_or_explain(op, "blas"):
            return
        _replace_with_extern(op, blas.MATMUL, list(op.operands), rewriter)


class Conv2dToBlas(RewritePattern):
    """``graph.conv2d(x, w) {attrs} -> graph.call_extern "blas.conv2d"(x, w, %attrs)``.

    float32 and ``groups = 1`` only; ``%attrs`` is an int64 constant holding
    strides, padding and dilation in :data:`ember.runtime.blas.CONV2D_ATTRS`
    order.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        if not _float32_or_explain(op, "blas"):
            return
        if op.attr("groups") != 1:
            _not_offloaded(op, "blas", f"groups={op.attr('groups')} (grouped convolution)")
            return
        attrs = ConstantOp.from_array(
            blas.conv2d_attrs(
                op.attr("strides"), op.attr("padding"), op.attr("dilation")
            )
        )
        if (name := op.results[0].name_hint) is not None:
            attrs.results[0].name_hint = f"{name}_attrs"
        operands = [*op.operands, attrs.results[0]]
        _replace_with_extern(op, blas.CONV2D, operands, rewriter, [attrs])


LIBRARIES: dict[str, Callable[[], list[RewritePattern]]] = {
    "blas": lambda: [DenseToBlasSgemm(), MatmulToBlas(), Conv2dToBlas()],
}
"""Library name (as written in ``libs``) → the patterns that offload to it."""


@dataclass(frozen=True)
class PartitionExternPass(ModulePass):
    """Offload dense, matmul and conv2d to external libraries (libs=blas) as graph.call_extern."""

    name = "partition-extern"

    libs: tuple[str, ...] = ("blas",)
    """Libraries to offload to, in priority order (the first that matches an
    op takes it); known: the keys of :data:`LIBRARIES`."""

    def __post_init__(self) -> None:
        # Checked when the pipeline is configured, so a typo fails before any
        # pass has run.
        unknown = [lib for lib in self.libs if lib not in LIBRARIES]
        if unknown or not self.libs:
            what = (
                f"unknown library {', '.join(repr(u) for u in unknown)}"
                if unknown
                else "no library"
            )
            raise PassError(
                f"partition-extern: {what} in libs={','.join(self.libs)}; "
                f"known libraries: {', '.join(sorted(LIBRARIES))}"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [p for lib in dict.fromkeys(self.libs) for p in LIBRARIES[lib]()]
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, ctx, dce_enabled=False)
        ).rewrite_module(op)
