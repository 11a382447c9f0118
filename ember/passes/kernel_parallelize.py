"""``kernel-parallelize``: run one loop of each loop nest on a team of threads.

TensorIR's ``sch.parallel`` applied by a default rule, as TVM's CPU
schedules and tinygrad's heuristics do: in every perfect loop nest at the
top of a kernel (:func:`~ember.analysis.loop_nests.loop_nests`) whose loops
are all ``serial`` but for its innermost loop (which ``kernel-vectorize``
may have marked) — a nest no other schedule step has touched — the
outermost ``serial`` loop with more than one
iteration whose iterations are independent
(:func:`~ember.analysis.loop_nests.is_independent`) becomes ``parallel``.
With ``leave-innermost`` (the default), the innermost loop of a nest is
left alone when it holds no loop and has more than one iteration: it is the
vector loop
(``kernel-vectorize`` runs first), and one thread team over the outer loops
with vectors within is the shape wanted.  The default schedule runs it
before ``kernel-accumulate-rows`` and ``kernel-vectorize``, which accept a
nest with a ``parallel`` loop.

```mlir
kernel.for %i0 = 0 to 4 {                  kernel.for %i0 = 0 to 4 parallel {
  kernel.for %hw = 0 to 64 vectorized { -->  kernel.for %hw = 0 to 64 vectorized {
```

Whether a parallel loop is worth its thread team is decided at code
generation (``min_parallel_work``), where the work of the loop is known.
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
from ember.passes.kernel_pass import KernelPass


@dataclass(frozen=True)
class KernelParallelizePass(KernelPass):
    """Mark the outermost independent loop of each nest ``parallel``."""

    name = "kernel-parallelize"

    leave_innermost: bool = True
    """Leave the innermost loop of a nest (if it holds no loop and has more
    than one iteration) to ``kernel-vectorize``."""

    def rewrite_kernel(self, kernel: FuncOp) -> None:
        for nest in loop_nests(kernel):
            innermost = nest[-1].kind.data
            if innermost not in ("serial", "vectorized") or scheduled_kinds(
                nest[0], ignore=nest[-1]
            ):
                continue
            candidates = nest
            if self.leave_innermost and is_leaf(nest[-1]) and nest[-1].trip_count > 1:
                candidates = nest[:-1]
            for loop in candidates:
                if (
                    loop.kind.data == "serial"
                    and loop.trip_count > 1
                    and is_independent(loop)
                ):
                    mark_loop(self.name, kernel, loop, "parallel")
                    break

