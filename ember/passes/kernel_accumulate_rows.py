"""``kernel-accumulate-rows``: a reduction per element becomes a row of accumulators.

TVM's ``reorder`` + ``cache_write`` (the accumulator promoted to a buffer
over the loop moved inside the reduction) applied by a default rule, for
the naive reduction nests ``lower-graph-to-kernel`` emits (pools, lrn,
reductions over an axis that is not the last): per output element a
one-element accumulator, blocks that initialise it, reduction loops that
update it, and a block that stores it.  When the innermost loop ``L`` of a
loop nest holds exactly such a reduction and every input the reduction
loads is read along its last (contiguous) axis by ``L``, the loop is
distributed over the reduction: the accumulator becomes a row over ``L``,
the initialising and storing blocks each get their own ``L`` loop, and
``L`` moves innermost into the reduction loops::

    kernel-parallelize,kernel-accumulate-rows,kernel-vectorize

```mlir
kernel.for %oh = 0 to 4 {                    %acc = memref.alloc() : memref<4xf32>
  kernel.for %ow = 0 to 4 {                  kernel.for %oh = 0 to 4 {
    %acc = memref.alloc() : memref<1xf32>      kernel.for %ow = 0 to 4 { init %acc[%vow] }
    kernel.block "max_pool2d_init" (...)  -->  kernel.for %kh = 0 to 3 {
    kernel.for %kh = 0 to 3 {                    kernel.for %kw = 0 to 3 {
      kernel.for %kw = 0 to 3 {                    kernel.for %ow = 0 to 4 { update %acc[%vow] }
        kernel.block "max_pool2d" (...)        kernel.for %ow = 0 to 4 { store %acc[%vow] }
    kernel.block "max_pool2d_store" (...)
```

Each output element still sums (or takes the max of) the same values in the
same order, so results are bit for bit the same; the loops over the row are
independent, and ``kernel-vectorize`` then marks them ``vectorized``.  It
runs after ``kernel-parallelize``: the row is allocated once, at the top of
the innermost ``parallel`` loop around it (scratch private to a thread's
iteration; without one, around the row loops), and initialised again for
every row.  Only ``serial`` and ``parallel`` loops are read; a nest with
other kinds (a micro-kernel's) is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import memref
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

from ember import remarks
from ember.analysis.index_terms import is_zero_index
from ember.analysis.loop_nests import computed_from, loop_nests, scheduled_kinds
from ember.dialects.kernel import SPATIAL, BlockOp, ForOp
from ember.passes.kernel_pass import KernelPass


@dataclass(frozen=True)
class KernelAccumulateRowsPass(KernelPass):
    """Make the per-element accumulator of a reduction nest a row over its innermost loop."""

    name = "kernel-accumulate-rows"

    def rewrite_kernel(self, kernel: FuncOp) -> None:
        for nest in loop_nests(kernel):
            if scheduled_kinds(nest[0]) - {"parallel"} or nest[-1].kind.data != "serial":
                continue
            acc = _row_accumulator(nest[-1])
            if acc is None:
                continue
            parallel = [loop for loop in nest[:-1] if loop.kind.data == "parallel"]
            home = parallel[-1] if parallel else None
            _accumulate_rows(nest[-1], acc, home)
            remarks.applied(
                self.name,
                f"kernel @{kernel.sym_name.data}: the accumulator of loop "
                f"%{nest[-1].induction_var.name_hint or '?'} made a row of "
                f"{nest[-1].trip_count}",
                [kernel],
                kernel=kernel.sym_name.data,
                extent=nest[-1].trip_count,
            )


def _row_accumulator(loop: ForOp) -> memref.AllocOp | None:
    """The one-element accumulator of the reduction ``loop`` holds, if it
    holds exactly one that may become a row over it (see the module doc)."""
    ops = list(loop.body.block.ops)
    if (
        loop.lb != 0
        or loop.step_value != 1
        or loop.trip_count < 2
        or len(ops) < 3
        or not isinstance(ops[0], memref.AllocOp)
        or not isinstance(ops[-1], memref.DeallocOp)
        or ops[-1].memref is not ops[0].memref
    ):
        return None
    acc = ops[0]
    shape = acc.memref.type.get_shape()
    if shape != (1,):
        return None
    inner = ops[1:-1]
    if not all(isinstance(op, BlockOp | ForOp) for op in inner):
        return None
    iv = loop.induction_var
    if any(op.bindings and not _binds_spatially(op, iv) for op in inner if isinstance(op, BlockOp)):
        return None
    if not any(isinstance(op, ForOp) for op in inner):
        return None  # no reduction loop: nothing to move the row loop into
    for use in acc.memref.uses:
        user = use.operation
        if user is ops[-1]:
            continue
        if not isinstance(user, memref.LoadOp | memref.StoreOp) or use.index != (
            1 if isinstance(user, memref.StoreOp) else 0
        ):
            return None
        if not all(is_zero_index(index) for index in user.indices) or _block_var(user, iv) is None:
            return None
    written: set[SSAValue] = set()
    for op in inner:
        if isinstance(op, BlockOp):
            written |= {s.memref for s in op.walk() if isinstance(s, memref.StoreOp)}
    for op in inner:
        if not isinstance(op, ForOp):
            continue
        body = _innermost_body(op)
        if body is None:
            return None
        for child in op.walk():
            if isinstance(child, ForOp) and (child.kind.data != "serial" or child.lb != 0):
                return None
            if isinstance(child, memref.StoreOp) and child.memref is not acc.memref:
                return None  # the reduction writes only its accumulator
            if isinstance(child, memref.LoadOp) and child.memref is not acc.memref:
                if child.memref in written:
                    return None  # it reads what a store block writes
                row = _block_var(child, iv)
                if row is None or not child.indices or not computed_from(child.indices[-1], row):
                    return None  # not read along its rows by the loop
    return acc


def _accumulate_rows(loop: ForOp, acc: memref.AllocOp, home: ForOp | None) -> None:
    """Distribute ``loop`` over its body, ``acc`` a row over it, allocated
    at the top of ``home`` (or around the loop)."""
    extent = loop.trip_count
    parent = loop.parent_block()
    assert parent is not None  # a kernel.for always lives in a block
    row = memref.AllocOp.get(acc.memref.type.get_element_type(), shape=[extent])
    row.memref.name_hint = acc.memref.name_hint
    if home is None:
        parent.insert_op_before(row, loop)
        parent.insert_op_after(memref.DeallocOp.get(row.memref), loop)
    else:
        home.body.block.insert_op_before(row, home.body.block.first_op)
        home.body.block.add_op(memref.DeallocOp.get(row.memref))
    accesses = [
        (use.operation, _block_var(use.operation, loop.induction_var))
        for use in acc.memref.uses
        if not isinstance(use.operation, memref.DeallocOp)
    ]
    for op in list(loop.body.block.ops)[1:-1]:
        op.detach()
        parent.insert_op_before(op, loop)
        rows = ForOp(0, extent, 1)
        rows.induction_var.name_hint = loop.induction_var.name_hint
        if isinstance(op, BlockOp):
            op.detach()
            parent.insert_op_before(rows, loop)
            rows.body.block.add_op(op)
        else:
            innermost = _innermost_body(op)
            assert innermost is not None
            for child in list(innermost.ops):
                child.detach()
                rows.body.block.add_op(child)
            innermost.add_op(rows)
        for use in list(loop.induction_var.uses):
            if rows.is_ancestor(use.operation):
                use.operation.operands[use.index] = rows.induction_var
    for user, var in accesses:
        assert var is not None
        (zero,) = user.indices
        if isinstance(user, memref.LoadOp):
            Rewriter.replace_op(user, memref.LoadOp.get(row.memref, [var]))
        else:
            Rewriter.replace_op(user, memref.StoreOp.get(user.value, row.memref, [var]))
        if not zero.uses and isinstance(zero.owner, Operation):
            Rewriter.erase_op(zero.owner)
    for op in (loop.body.block.last_op, acc, loop):
        assert op is not None
        op.detach()
        op.erase()


def _binds_spatially(block: BlockOp, iv: SSAValue) -> bool:
    return any(b is iv and k == SPATIAL for b, k in zip(block.bindings, block.kinds))


def _block_var(op: Operation, iv: SSAValue) -> SSAValue | None:
    """The variable of the outermost kernel block holding ``op`` that is
    bound (spatially) to ``iv``."""
    block, parent = None, op.parent_op()
    while parent is not None and not isinstance(parent, ForOp):
        if isinstance(parent, BlockOp):
            block = parent
        parent = parent.parent_op()
    if block is None:
        return None
    for var, bound, kind in zip(block.iter_vars, block.bindings, block.kinds):
        if bound is iv and kind == SPATIAL:
            return var
    return None


def _innermost_body(loop: ForOp) -> Block | None:
    """The body of the innermost loop of the perfect nest from ``loop``,
    if it holds only kernel blocks."""
    while True:
        ops = list(loop.body.block.ops)
        if len(ops) == 1 and isinstance(ops[0], ForOp):
            loop = ops[0]
            continue
        if all(isinstance(op, BlockOp) for op in ops):
            return loop.body.block
        return None


__all__ = ["KernelAccumulateRowsPass"]
