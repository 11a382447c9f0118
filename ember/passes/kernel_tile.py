"""``kernel-tile``: split the loops of each loop nest into tiles.

TensorIR's ``sch.split`` + ``sch.reorder`` (MLIR's ``scf`` tiling): in every
perfect loop nest at the top of a kernel whose loops are all ``serial``,
loop ``d`` (outermost first) with ``sizes[d] > 0`` becomes a *tile* loop over
``extent / size`` tiles and a *point* loop over the ``size`` elements of one
tile; the tile loops go outside, in the nest's order, the point loops inside,
and the body reads ``tile * size + point`` where it read the loop's index::

    kernel-tile{sizes=2,4}

```mlir
kernel.for %i = 0 to 4 {               kernel.for %i_o = 0 to 2 {
  kernel.for %j = 0 to 8 {               kernel.for %j_o = 0 to 2 {
    kernel.block "y" (%vi = spatial %i,    kernel.for %i_i = 0 to 2 {
                      %vj = spatial %j)      kernel.for %j_i = 0 to 4 {
                                   -->         %i = %i_o * 2 + %i_i
                                               %j = %j_o * 4 + %j_i
                                               kernel.block "y" (...)
```

A loop is tiled only when tiling keeps every result bit for bit: its
iterations are independent (:func:`~ember.analysis.loop_nests.
is_independent`: reordering them cannot change a float sum), it starts at 0
with step 1, and ``size`` divides its extent (ember's loop bounds are
static; a partial tile would need a second nest).  Other loops of the nest
stay as they are; ``0`` or a missing size leaves a loop untiled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass

from ember.analysis.loop_nests import is_independent, loop_nests, scheduled_kinds
from ember.dialects.kernel import ForOp, kernel_functions
from ember.errors import PassError


def _tile_size(loop: ForOp, size: int) -> int:
    """``size`` if ``loop`` may be split into tiles of it, else 0."""
    if size <= 0 or loop.lb != 0 or loop.step_value != 1:
        return 0
    if size >= loop.ub or loop.ub % size or not is_independent(loop):
        return 0
    return size


def _hint(loop: ForOp, suffix: str) -> str | None:
    name = loop.induction_var.name_hint
    return f"{name}_{suffix}" if name else None


def tile_nest(nest: Sequence[ForOp], sizes: Sequence[int]) -> bool:
    """Tile ``nest`` (outermost loop first) by ``sizes``; whether it changed."""
    plan = [
        (loop, _tile_size(loop, sizes[d]) if d < len(sizes) else 0)
        for d, loop in enumerate(nest)
    ]
    if not any(size for _, size in plan):
        return False
    new_loops: list[ForOp] = []
    tiles: dict[ForOp, SSAValue] = {}
    for loop, size in plan:
        if size:
            tile = ForOp(0, loop.ub // size)
            tile.induction_var.name_hint = _hint(loop, "o")
            tiles[loop] = tile.induction_var
            new_loops.append(tile)
    for loop, size in plan:
        point = ForOp(0, size, 1) if size else ForOp(loop.lb, loop.ub, loop.step_value)
        point.induction_var.name_hint = _hint(loop, "i") if size else loop.induction_var.name_hint
        new_loops.append(point)
    for outer, inner in zip(new_loops, new_loops[1:]):
        outer.body.block.add_op(inner)
    body: Block = new_loops[-1].body.block
    points = new_loops[len(tiles) :]
    for (loop, size), point in zip(plan, points):
        index: SSAValue = point.induction_var
        if size:
            factor = arith.ConstantOp.from_int_and_width(size, IndexType())
            scaled = arith.MuliOp(tiles[loop], factor)
            combined = arith.AddiOp(scaled, point.induction_var)
            combined.result.name_hint = loop.induction_var.name_hint
            body.add_ops([factor, scaled, combined])
            index = combined.result
        loop.induction_var.replace_all_uses_with(index)
    for op in list(nest[-1].body.block.ops):
        op.detach()
        body.add_op(op)
    parent = nest[0].parent_block()
    assert parent is not None  # loop_nests yields loops in a kernel body
    parent.insert_op_before(new_loops[0], nest[0])
    parent.erase_op(nest[0])
    return True


@dataclass(frozen=True)
class KernelTilePass(ModulePass):
    """Split the loops of each untouched nest into tile and point loops."""

    name = "kernel-tile"

    sizes: tuple[int, ...] = ()
    """Tile size per loop of a nest, outermost first; 0: not tiled."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.sizes or any(size < 0 for size in self.sizes):
            raise PassError(
                f"kernel-tile: sizes must be one or more sizes >= 0 (0: not tiled), "
                f"got sizes={','.join(map(str, self.sizes)) or '(none)'}"
            )
        for kernel in kernel_functions(op):
            for nest in loop_nests(kernel):
                if not scheduled_kinds(nest[0]):
                    tile_nest(nest, self.sizes)
