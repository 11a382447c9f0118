"""``kernel-vectorize``: mark the innermost loops of each loop nest ``vectorized``.

TensorIR's ``sch.vectorize`` applied by a default rule: in every perfect
loop nest at the top of a kernel (:func:`~ember.analysis.loop_nests.
loop_nests`) whose loops are all ``serial`` or ``parallel`` — a nest no
schedule step but ``kernel-parallelize`` has touched — each ``serial``
loop under it that holds no loop (the innermost loop of the nest, a
softmax's store loop, the row loops of ``kernel-accumulate-rows``) becomes
``vectorized`` when it has at least ``min-extent`` iterations and its
iterations are independent
(:func:`~ember.analysis.loop_nests.is_independent`).  The default schedule
runs it after ``kernel-parallelize`` (which leaves the innermost loop
alone) and ``kernel-accumulate-rows``.

```mlir
kernel.for %i0 = 0 to 4 {                  kernel.for %i0 = 0 to 4 {
  kernel.for %hw = 0 to 64 {        -->      kernel.for %hw = 0 to 64 vectorized {
```

On the CPU a ``vectorized`` loop is a plain loop that LLVM's vectoriser
turns into vector code (the lowering cannot attach loop metadata); the kind
records that its iterations are independent, which ``kernel-bind-gpu``
reads to spread them over GPU threads.  The micro-kernels whose loop kinds
are chosen (conv2d, dense and matmul by ``kernel-tensorize``, row tiles,
Winograd) are left as they are: their nests already hold ``vectorized``
loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.func import FuncOp

from ember.analysis.loop_nests import (
    is_independent,
    is_leaf,
    loop_nests,
    mark_loop,
    scheduled_kinds,
)
from ember.dialects.kernel import ForOp
from ember.passes.kernel_pass import KernelPass


@dataclass(frozen=True)
class KernelVectorizePass(KernelPass):
    """Mark the innermost independent loop of each nest ``vectorized``."""

    name = "kernel-vectorize"

    min_extent: int = 2
    """Loops with fewer iterations stay serial."""

    def rewrite_kernel(self, kernel: FuncOp) -> None:
        for nest in loop_nests(kernel):
            if scheduled_kinds(nest[0]) - {"parallel"}:
                continue
            for loop in [op for op in nest[0].walk() if isinstance(op, ForOp)]:
                if (
                    loop.kind.data == "serial"
                    and is_leaf(loop)
                    and loop.trip_count >= self.min_extent
                    and is_independent(loop)
                ):
                    mark_loop(self.name, kernel, loop, "vectorized")

