"""``kernel-vectorize``: mark the innermost loop of each loop nest ``vectorized``.

TensorIR's ``sch.vectorize`` applied by a default rule: in every perfect
loop nest at the top of a kernel (:func:`~ember.analysis.loop_nests.
loop_nests`) whose loops are all ``serial`` — a nest no schedule step has
touched — the innermost loop of the nest becomes ``vectorized`` when it
holds no loop, has at least ``min-extent`` iterations and its iterations
are independent
(:func:`~ember.analysis.loop_nests.is_independent`).  It runs before
``kernel-parallelize``, which then leaves the vector loop alone.

```mlir
kernel.for %i0 = 0 to 4 {                  kernel.for %i0 = 0 to 4 {
  kernel.for %hw = 0 to 64 {        -->      kernel.for %hw = 0 to 64 vectorized {
```

On the CPU a ``vectorized`` loop is a plain loop that LLVM's vectoriser
turns into vector code (the lowering cannot attach loop metadata); the kind
records that its iterations are independent, which ``kernel-bind-gpu``
reads to spread them over GPU threads.  The kernel generators that still
choose their own loop kinds (micro-kernels: conv2d and dense products, row
tiles, Winograd, pools, reductions, softmax, matmul) are left as they are:
their nests already hold ``vectorized`` loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ember.analysis.loop_nests import (
    is_independent,
    is_leaf,
    loop_nests,
    mark_loop,
    scheduled_kinds,
)
from ember.dialects.kernel import kernel_functions


@dataclass(frozen=True)
class KernelVectorizePass(ModulePass):
    """Mark the innermost independent loop of each nest ``vectorized``."""

    name = "kernel-vectorize"

    min_extent: int = 2
    """Loops with fewer iterations stay serial."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernel_functions(op):
            for nest in loop_nests(kernel):
                loop = nest[-1]
                if (
                    not scheduled_kinds(nest[0])
                    and is_leaf(loop)
                    and loop.trip_count >= self.min_extent
                    and is_independent(loop)
                ):
                    mark_loop(self.name, kernel, loop, "vectorized")

