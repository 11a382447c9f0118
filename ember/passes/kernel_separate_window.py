"""``kernel-separate-window``: a 2-D max window as a max over rows, then a strided pick.

A max over a window ``kh × kw`` is separable: the max over the window's
rows first, for every column of the input row at once (contiguous loads,
one vector loop), then the max of ``kw`` of those column maxima per output
(loads from a row in cache).  ``max`` is exact, commutative and associative
(``arith.maximumf``: NaN if any is NaN, +0.0 above -0.0), so the result is
bit for bit the naive one's.  This is the rewrite that makes a stride-2
max_pool2d fast: the naive row loop reads the input ``kh · kw`` times at
stride 2, this one reads it ``kh`` times contiguously.

It applies to the row nests ``kernel-accumulate-rows`` makes, and runs
after it (before ``kernel-vectorize``, which marks the new row loops):
a loop ``P`` holding only a loop ``K`` holding only a loop ``L`` holding
only a block that binds ``P`` and ``K`` as reductions and ``L`` as spatial
and does ``row[vL] = maximumf(row[vL], B[…, s·vL + d·vK])``, where ``B``'s
other indices do not depend on ``vL`` or ``vK`` and ``row`` is allocated
outside ``P``::

    kernel-separate-window

```mlir
kernel.for %kh = 0 to 3 {                    kernel.for %x = 0 to 113 { window[x] = -inf }
  kernel.for %kw = 0 to 3 {                  kernel.for %kh = 0 to 3 {
    kernel.for %ow = 0 to 56 {         -->     kernel.for %x = 0 to 113 { window[x] = max(window[x], B[…, x]) }
      row[ow] = max(row[ow],                 kernel.for %kw = 0 to 3 {
                    B[…, 2·ow + kw])           kernel.for %ow = 0 to 56 { row[ow] = max(row[ow], window[2·ow + kw]) }
```

The column maxima live in a row ``window`` of ``s·(|L| - 1) + d·(|K| - 1) + 1``
elements allocated beside ``row``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from ember import remarks
from ember.analysis.index_terms import index_terms
from ember.analysis.loop_nests import computed_from
from ember.dialects.kernel import REDUCE, SPATIAL, BlockOp, ForOp
from ember.passes.kernel_pass import KernelPass


@dataclass(frozen=True)
class _Window:
    """A row nest as :func:`_match` read it."""

    rows: ForOp
    """``P``: the loop over the window's rows."""
    columns: ForOp
    """``K``: the loop over the window's columns."""
    row_loop: ForOp
    """``L``: the loop over the output row."""
    block: BlockOp
    read: memref.LoadOp
    """The load of ``B``."""
    stride: int
    dilation: int


@dataclass(frozen=True)
class KernelSeparateWindowPass(KernelPass):
    """Compute a 2-D max window's row maxima once per input column."""

    name = "kernel-separate-window"

    def rewrite_kernel(self, kernel: FuncOp) -> None:
        for loop in [op for op in kernel.walk() if isinstance(op, ForOp)]:
            window = _match(loop)
            if window is None:
                continue
            width = _separate(window)
            remarks.applied(
                self.name,
                f"kernel @{kernel.sym_name.data}: the {window.rows.trip_count}x"
                f"{window.columns.trip_count} max window of block "
                f"\"{window.block.block_name.data}\" taken over rows of {width} first",
                [kernel],
                kernel=kernel.sym_name.data,
            )


def _plain(loop: Operation | None) -> bool:
    return (
        isinstance(loop, ForOp)
        and loop.kind.data == "serial"
        and loop.lb == 0
        and loop.step_value == 1
    )


def _only(loop: ForOp) -> Operation | None:
    ops = list(loop.body.block.ops)
    return ops[0] if len(ops) == 1 else None


def _var(block: BlockOp, iv: SSAValue, kind: str) -> SSAValue | None:
    found = [v for v, b, k in zip(block.iter_vars, block.bindings, block.kinds) if b is iv and k == kind]
    return found[0] if len(found) == 1 else None


def _match(row_loop: ForOp) -> _Window | None:
    columns, block = row_loop.parent_op(), _only(row_loop)
    rows = columns.parent_op() if columns is not None else None
    if not (
        _plain(row_loop)
        and _plain(columns)
        and _plain(rows)
        and rows.trip_count > 1
        and isinstance(block, BlockOp)
        and _only(columns) is row_loop  # type: ignore[arg-type]
        and _only(rows) is columns  # type: ignore[arg-type]
    ):
        return None
    assert isinstance(columns, ForOp) and isinstance(rows, ForOp)
    v_l = _var(block, row_loop.induction_var, SPATIAL)
    v_k = _var(block, columns.induction_var, REDUCE)
    v_p = _var(block, rows.induction_var, REDUCE)
    if v_l is None or v_k is None or v_p is None:
        return None
    inner = (row_loop.induction_var, columns.induction_var, rows.induction_var)
    if any(b not in inner and any(computed_from(b, iv) for iv in inner) for b in block.bindings):
        return None
    stores = [op for op in block.walk() if isinstance(op, memref.StoreOp)]
    loads = [op for op in block.walk() if isinstance(op, memref.LoadOp)]
    if len(stores) != 1 or len(loads) != 2 or any(
        op.parent_op() is not block for op in block.walk() if op is not block
    ):
        return None
    (store,) = stores
    combine = store.value.owner
    if not isinstance(combine, arith.MaximumfOp) or list(store.indices) != [v_l]:
        return None
    row = store.memref
    old, read = loads if loads[0].memref is row else loads[::-1]
    if (
        old.memref is not row
        or list(old.indices) != [v_l]
        or {combine.lhs, combine.rhs} != {old.res, read.res}
        or read.memref is row
        or not read.indices
        or not isinstance(row.owner, memref.AllocOp)
        or rows.is_ancestor(row.owner)
        or not any(isinstance(u.operation, memref.DeallocOp) for u in row.uses)
        or any(
            isinstance(op, memref.StoreOp) and op.memref is read.memref
            for op in rows.walk()
        )
    ):
        return None
    terms = index_terms(read.indices[-1], {v_l: ("s", 0), v_k: ("r", 0)})
    if terms is None or set(terms) != {("s", 0), ("r", 0)}:
        return None
    if any(computed_from(i, v) for i in read.indices[:-1] for v in (v_l, v_k)):
        return None
    if any(use.operation not in _slice(read.indices[:-1], block) for use in v_p.uses):
        return None  # the window's row is used for more than reading B
    return _Window(rows, columns, row_loop, block, read, terms[("s", 0)], terms[("r", 0)])


def _separate(w: _Window) -> int:
    """Rewrite the nest of ``w`` (see the module doc); the window row's width."""
    block, read = w.block, w.read
    width = w.stride * (w.row_loop.trip_count - 1) + w.dilation * (w.columns.trip_count - 1) + 1
    accumulator = next(op for op in block.walk() if isinstance(op, memref.StoreOp)).memref
    alloc = accumulator.owner
    assert isinstance(alloc, memref.AllocOp)
    home = alloc.parent_block()
    assert home is not None
    window = memref.AllocOp.get(f32, shape=[width])
    window.memref.name_hint = "window"
    home.insert_op_after(window, alloc)
    dealloc = next(u.operation for u in accumulator.uses if isinstance(u.operation, memref.DeallocOp))
    home.insert_op_before(memref.DeallocOp.get(window.memref), dealloc)

    inner = (w.row_loop.induction_var, w.columns.induction_var, w.rows.induction_var)
    outer = [(b, k) for b, k in zip(block.bindings, block.kinds) if b not in inner]
    name = block.block_name.data
    parent = w.rows.parent_block()
    assert parent is not None

    # window[x] = -inf, before the rows' loop.
    init = ForOp(0, width, 1)
    init.induction_var.name_hint = "x"
    parent.insert_op_before(init, w.rows)
    fill = _new_block(f"{name}_window_init", outer, (init.induction_var, SPATIAL), init)
    minus_inf = arith.ConstantOp(FloatAttr(float("-inf"), f32))
    fill.body.block.add_ops(
        [minus_inf, memref.StoreOp.get(minus_inf.result, window.memref, [fill.iter_vars[-1]])]
    )

    # window[x] = max(window[x], B[…, x]) for each row of the window.
    columns = ForOp(0, width, 1)
    columns.induction_var.name_hint = "x"
    w.rows.body.block.insert_op_before(columns, w.columns)
    bindings = [*outer, (w.rows.induction_var, REDUCE), (columns.induction_var, SPATIAL)]
    rows_block = _new_block(f"{name}_window", bindings[:-1], bindings[-1], columns)
    mapping: dict[SSAValue, SSAValue] = {
        old: new for old, new in zip(_vars(block, outer), rows_block.iter_vars)
    }
    mapping[_var(block, w.rows.induction_var, REDUCE)] = rows_block.iter_vars[-2]  # type: ignore[index]
    needed = _slice(read.indices[:-1], block)
    for op in block.body.block.ops:
        if op in needed:
            rows_block.body.block.add_op(op.clone(value_mapper=mapping))
    x = rows_block.iter_vars[-1]
    value = memref.LoadOp.get(read.memref, [mapping.get(i, i) for i in read.indices[:-1]] + [x])
    old = memref.LoadOp.get(window.memref, [x])
    best = arith.MaximumfOp(old.res, value.res)
    rows_block.body.block.add_ops(
        [value, old, best, memref.StoreOp.get(best.result, window.memref, [x])]
    )

    # row[ow] = max(row[ow], window[s·ow + d·kw]), after the rows' loop.
    w.columns.detach()
    parent.insert_op_after(w.columns, w.rows)
    pick = memref.LoadOp.get(window.memref, [read.indices[-1]])
    Rewriter.replace_op(read, pick)
    _erase_dead(block)
    kept = [(b, k) for b, k in zip(block.bindings, block.kinds) if b is not w.rows.induction_var]
    moved = BlockOp(name, [b for b, _ in kept], [k for _, k in kept])
    for new, old_var in zip(moved.iter_vars, _vars(block, kept)):
        new.name_hint = old_var.name_hint
        old_var.replace_all_uses_with(new)
    for op in list(block.body.block.ops):
        op.detach()
        moved.body.block.add_op(op)
    Rewriter.replace_op(block, moved, [])
    return width


def _vars(block: BlockOp, bindings: list[tuple[SSAValue, str]]) -> list[SSAValue]:
    """The variables of ``block`` bound by ``bindings`` (a subsequence of its own)."""
    wanted = [b for b, _ in bindings]
    return [v for v, b in zip(block.iter_vars, block.bindings) if b in wanted]


def _new_block(
    name: str,
    outer: list[tuple[SSAValue, str]],
    last: tuple[SSAValue, str],
    loop: ForOp,
) -> BlockOp:
    bindings = [*outer, last]
    block = BlockOp(name, [b for b, _ in bindings], [k for _, k in bindings])
    for var, (bound, _) in zip(block.iter_vars, bindings):
        if bound.name_hint:
            var.name_hint = "v" + bound.name_hint
    loop.body.block.add_op(block)
    return block


def _slice(values: list[SSAValue] | tuple[SSAValue, ...], block: BlockOp) -> set[Operation]:
    """The ops of ``block``'s body that ``values`` are computed from."""
    needed: set[Operation] = set()
    stack = list(values)
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, Operation) and owner.parent_op() is block and owner not in needed:
            needed.add(owner)
            stack.extend(owner.operands)
    return needed


def _erase_dead(block: BlockOp) -> None:
    """Erase the arithmetic of ``block`` no longer used."""
    for op in reversed(list(block.body.block.ops)):
        if isinstance(op, arith.ConstantOp | arith.AddiOp | arith.MuliOp) and not any(
            r.uses for r in op.results
        ):
            Rewriter.erase_op(op)


__all__ = ["KernelSeparateWindowPass"]
