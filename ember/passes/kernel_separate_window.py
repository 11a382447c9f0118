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

When ``B`` is the padded copy ``kernel-pad-input`` made of an f32 input
``D`` (which the kernel never writes) for this read alone (filled with
``-inf``, ``D`` stored at ``[…, h +
top, w + left]``; or ``D`` copied whole, where the windows reach no
padding), the window row reads ``D`` itself and the copy goes: the
columns of ``D`` land at ``window[x + left]`` and the padding columns keep
the ``-inf`` the window starts with; a row of the padding becomes the
nearest row of ``D`` (``clamp(y - top, 0, H - 1)``), which the window holds
anyway when every window of the plane reaches into ``D`` (checked, for
windows of dilation 1; else the copy stays): ``max`` of a value already
taken changes nothing, NaN and signed zeros included.  resnet18's
max_pool2d copied its 64×112×112 input into a 113×113 plane per channel
before pooling; the kernel took 0.27–0.31 ms of a resnet18 inference
(znver4), onnxruntime's MaxPool 0.07–0.10.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import FloatAttr, IndexType, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

from ember import remarks
from ember.analysis.index_terms import ONE, index_terms
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

    # window[x] = max(window[x], B[…, x]) for each row of the window
    # (or window[x + left] = max(…, D[…, clamped row, x]), B a padded copy of D).
    direct = _direct_source(w)
    columns = ForOp(0, width if direct is None else direct.columns(width), 1)
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
    indices = [mapping.get(i, i) for i in read.indices[:-1]]
    if direct is None:
        value = memref.LoadOp.get(read.memref, [*indices, x])
        at = x
    else:
        row, ops = direct.row(indices[-1])
        left = arith.ConstantOp.from_int_and_width(direct.left, IndexType())
        shifted = arith.AddiOp(x, left.result)
        value = memref.LoadOp.get(direct.source, [*indices[:-1], row, x])
        rows_block.body.block.add_ops([*ops, left, shifted])
        at = shifted.result
    old = memref.LoadOp.get(window.memref, [at])
    best = arith.MaximumfOp(old.res, value.res)
    rows_block.body.block.add_ops(
        [value, old, best, memref.StoreOp.get(best.result, window.memref, [at])]
    )

    # row[ow] = max(row[ow], window[s·ow + d·kw]), after the rows' loop.
    w.columns.detach()
    parent.insert_op_after(w.columns, w.rows)
    pick = memref.LoadOp.get(window.memref, [read.indices[-1]])
    Rewriter.replace_op(read, pick)
    if direct is not None:
        direct.erase_copy()
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


@dataclass(frozen=True)
class _PaddedCopy:
    """``B``, the padded copy of ``source`` that a window reads, as
    :func:`_direct_source` found it."""

    source: SSAValue
    """``D``: ``[N, C, H, W]`` f32."""
    top: int
    left: int
    copy: Operation
    """The loop nest (in the kernel's body) that fills ``B`` and copies ``D`` in."""
    buffer: SSAValue

    def columns(self, width: int) -> int:
        """How many of ``D``'s columns a window row of ``width`` holds."""
        return max(0, min(self.source.type.get_shape()[-1], width - self.left))  # type: ignore[attr-defined]

    def row(self, padded: SSAValue) -> tuple[SSAValue, list[Operation]]:
        """The row of ``D`` for row ``padded`` of ``B``: ``clamp(padded - top, 0, H - 1)``."""
        height = self.source.type.get_shape()[-2]  # type: ignore[attr-defined]
        ops: list[Operation] = []

        def const(value: int) -> SSAValue:
            ops.append(arith.ConstantOp.from_int_and_width(value, IndexType()))
            return ops[-1].results[0]

        def add(op: Operation) -> SSAValue:
            ops.append(op)
            return op.results[0]

        row = add(arith.AddiOp(padded, const(-self.top)))
        zero, last = const(0), const(height - 1)
        row = add(arith.SelectOp(add(arith.CmpiOp(row, zero, "sgt")), row, zero))
        row = add(arith.SelectOp(add(arith.CmpiOp(row, last, "slt")), row, last))
        return row, ops

    def erase_copy(self) -> None:
        """Erase the copy's nest and ``B``, read by nothing now."""
        Rewriter.erase_op(self.copy)
        for use in list(self.buffer.uses):
            Rewriter.erase_op(use.operation)
        Rewriter.erase_op(self.buffer.owner)  # type: ignore[arg-type]


def _direct_source(w: _Window) -> _PaddedCopy | None:
    """The padded copy ``w`` reads, if the window row can read its source
    instead (see the module doc), else ``None``."""
    buffer = w.read.memref
    alloc, kernel = buffer.owner, w.rows
    while kernel is not None and not isinstance(kernel, FuncOp):
        kernel = kernel.parent_op()
    if not isinstance(alloc, memref.AllocOp) or kernel is None or alloc.parent_op() is not kernel:
        return None
    users = [use.operation for use in buffer.uses]
    stores = [op for op in users if isinstance(op, memref.StoreOp)]
    if (
        len(users) != len(stores) + 2
        or sum(isinstance(op, memref.DeallocOp) for op in users) != 1
        or w.read not in users
    ):
        return None
    fills = [op for op in stores if isinstance(op.value.owner, arith.ConstantOp)]
    copies = [op for op in stores if isinstance(op.value.owner, memref.LoadOp)]
    if len(copies) != 1 or len(fills) + 1 != len(stores) or len(fills) > 1:
        return None
    (copy,) = copies
    if fills and fills[0].value.owner.value != FloatAttr(float("-inf"), f32):  # type: ignore[attr-defined]
        return None
    load = copy.value.owner
    assert isinstance(load, memref.LoadOp)
    source = load.memref
    shape = source.type.get_shape()  # type: ignore[attr-defined]
    if (
        source.type.element_type != f32  # type: ignore[attr-defined]
        or any(isinstance(use.operation, memref.StoreOp) for use in source.uses)
        or len(shape) != 4
        or len(copy.indices) != 4
        or list(load.indices[:2]) != list(copy.indices[:2])
    ):
        return None
    offsets = []
    for read_at, stored_at in zip(load.indices[2:], copy.indices[2:]):
        terms = index_terms(stored_at, {read_at: ("v", 0)})
        if terms is None or terms.get(("v", 0)) != 1 or set(terms) - {("v", 0), ONE}:
            return None
        offsets.append(terms.get(ONE, 0))
    if not fills and buffer.type.get_shape() != shape:  # type: ignore[attr-defined]
        return None  # a copy with padding never filled: not kernel-pad-input's
    nest = _outermost(copy, kernel)
    if any(_outermost(op, kernel) is not nest for op in stores) or any(
        isinstance(op, memref.StoreOp) and op not in stores for op in nest.walk()
    ):
        return None
    found = _PaddedCopy(source, offsets[0], offsets[1], nest, buffer)
    return found if _windows_reach_rows(w, found.top, shape[-2]) else None


def _outermost(op: Operation, kernel: FuncOp) -> Operation:
    """The op of ``kernel``'s body that holds ``op``."""
    while op.parent_op() is not kernel:
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return op


def _windows_reach_rows(w: _Window, top: int, height: int) -> bool:
    """Whether every window's rows (dilation 1) reach into rows ``[top,
    top + height)`` of ``B``: then a clamped row is one of its own."""
    spatial = {v: ("s", n) for n, (v, k) in enumerate(zip(w.block.iter_vars, w.block.kinds)) if k == SPATIAL}
    v_p = _var(w.block, w.rows.induction_var, REDUCE)
    terms = index_terms(w.read.indices[-2], {**spatial, v_p: ("r", 0)})  # type: ignore[dict-item]
    if terms is None or terms.get(("r", 0)) != 1:
        return False  # no term of the rows, or a dilated one
    steps = [(v, f) for v, f in terms.items() if v not in (("r", 0), ONE) and f]
    if len(steps) > 1:
        return False
    origins = [terms.get(ONE, 0)]
    if steps:
        (variable, factor), = steps
        var = next(v for v, name in spatial.items() if name == variable)
        binding = w.block.bindings[list(w.block.iter_vars).index(var)]
        loop = binding.owner.parent_op() if isinstance(binding.owner, Block) else None
        if not isinstance(loop, ForOp) or loop.lb != 0 or loop.step_value != 1:
            return False
        origins = [terms.get(ONE, 0) + factor * i for i in range(loop.trip_count)]
    rows = w.rows.trip_count
    return all(y + rows - 1 >= top and y <= top + height - 1 for y in origins)


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
