"""``kernel-unroll``: replace short innermost loops by copies of their body.

TensorIR's ``sch.unroll`` done in the IR, so that the result can be printed
and checked: every innermost loop (one with no loop inside) of kind
``serial`` or ``unrolled`` with at most ``max-extent`` iterations becomes
one copy of its body per iteration, in order, each reading the iteration's
index as a constant::

    kernel-unroll{max-extent=2}

```mlir
kernel.for %k = 0 to 2 {                  %c0 = arith.constant 0 : index
  kernel.block "s" (%vk = reduce %k) {    kernel.block "s" (%vk = reduce %c0) {...}
    ...                             -->   %c1 = arith.constant 1 : index
  }                                       kernel.block "s" (%vk = reduce %c1) {...}
}
```

The iterations run in the same order as before, so any loop may be
unrolled, reductions included.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from ember.analysis.loop_nests import is_leaf
from ember.dialects.kernel import ForOp, kernel_functions
from ember.errors import PassError


def unroll(loop: ForOp) -> None:
    """Replace ``loop`` by one copy of its body per iteration."""
    parent = loop.parent_block()
    assert parent is not None  # a kernel.for always lives in a block
    for k in range(loop.trip_count):
        index = arith.ConstantOp.from_int_and_width(loop.lb + k * loop.step_value, IndexType())
        parent.insert_op_before(index, loop)
        mapping: dict[SSAValue, SSAValue] = {loop.induction_var: index.result}
        for op in loop.body.block.ops:
            parent.insert_op_before(op.clone(value_mapper=mapping), loop)
    parent.erase_op(loop)


@dataclass(frozen=True)
class KernelUnrollPass(ModulePass):
    """Fully unroll innermost serial loops of at most ``max-extent`` iterations."""

    name = "kernel-unroll"

    max_extent: int = 4
    """Longest loop unrolled."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_extent < 1:
            raise PassError(f"kernel-unroll: max-extent must be >= 1, got {self.max_extent}")
        for kernel in kernel_functions(op):
            loops = [
                loop
                for loop in kernel.walk()
                if isinstance(loop, ForOp)
                and loop.kind.data in ("serial", "unrolled")
                and 0 < loop.trip_count <= self.max_extent
                and is_leaf(loop)
            ]
            for loop in loops:
                unroll(loop)
