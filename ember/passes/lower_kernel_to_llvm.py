"""``lower-kernel-to-llvm``: kernels become ``llvm.func`` over raw pointers.

The pass form of :func:`ember.lowering.kernel_to_llvm.lower_kernels_to_llvm`
(MLIR's ``convert-scf-to-cf`` + ``finalize-memref-to-llvm`` +
``convert-arith-to-llvm``, for ember's kernel dialect).  Functions that are
not kernels are left as they are.  A kernel that cannot be lowered fails the
pass with a diagnostic naming the op, before any kernel is changed.

Option ``fast_math`` (``lower-kernel-to-llvm{fast_math=true}``) allows LLVM
every fast-math flag, which changes results for NaN, inf and -0.0.
Option ``min_parallel_work`` keeps parallel loops of fewer ops serial.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ember.lowering.kernel_to_llvm import lower_kernels_to_llvm


@dataclass(frozen=True)
class LowerKernelToLLVMPass(ModulePass):
    """Lower every ``kernel.kernel`` function to the xDSL ``llvm`` dialect."""

    name = "lower-kernel-to-llvm"

    fast_math: bool = False

    min_parallel_work: int = 0
    """Parallel loops of fewer ops than this stay serial (``ember.build``
    uses ``MIN_PARALLEL_WORK``)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_kernels_to_llvm(
            op, fast_math=self.fast_math, min_parallel_work=self.min_parallel_work
        )
