"""``kernel-pad-input``: guarded window reads become reads of a padded copy.

TVM's ``pad_temp`` as a kernel pass.  ``lower-graph-to-kernel`` emits a
conv2d that reads its NCHW input through the padding
(:func:`~ember.lowering.graph_to_kernel._window_read`): at ``[n, c, y, x]``
in padded coordinates it loads the input at the clamped
``[n, c, y - top, x - left]`` and selects the fill (0) where that is
outside the data — correct, but a bounds test per product.  This pass
copies the input once, before the kernel's loops, into a zero-filled f32
buffer padded on every side (:func:`~ember.lowering.graph_to_kernel.padded_copy`:
channels in parallel, rows vectorized; rows in parallel for a copy of at most
64 channels that convolutions read, :data:`ROWS_BELOW_CHANNELS`) and makes
each such read a plain load of the copy at ``[n, c, y, x]``; the copy is
freed at the end::

    kernel-pad-input

```mlir
kernel.block "conv2d" (...) {                  %pad = memref.alloc() : memref<1x3x11x11xf32>
  %y0 = arith.addi %y, %c-1                    kernel.for %n ... "pad_fill", "pad_copy"
  ... clamp %y0, %x0 into the data             kernel.block "conv2d" (...) {
  %in = arith.andi %same_y, %same_x      -->     %a = memref.load %pad[%vn, %vic, %y, %x]
  %v = memref.load %data[%vn, %vic, %cy, %cx]     ...
  %a = arith.select %in, %v, %zero
```

conv2d_transpose reads its input the same way with strides: at ``y`` the
element ``(y - top) / sh`` where that divides; its copy is the input
spread at stride steps (``fill`` between), from the first row the windows
read (a ``top`` below 0 crops: the read starts that far down).

A window read of an f16 input without padding is copied too (widened to
f32 once, not at every product).  A window read is one in a block with
``reduce`` variables whose last two indices each grow with a spatial and a
reduce variable (``y = oh·sh + kh·dh``).
The copy is as large as the reads need: ``top``/``left`` from the read's
offset, ``bottom``/``right`` from its largest index (a layer padded more
than its windows reach gets the rows they reach).  Reads whose indices the
pass cannot bound, and those of a fill that is not a constant, are left as
they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import Float16Type, FloatAttr, IntegerAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue

from ember import remarks
from ember.analysis.index_terms import index_terms
from ember.dialects.kernel import REDUCE, BlockOp, ForOp
from ember.lowering import graph_to_kernel as g2k
from ember.passes.kernel_pass import KernelPass


ROWS_BELOW_CHANNELS = 65
"""A copy of fewer channels than this, read by convolutions (every output
reading every channel of its window's rows), is made in parallel over its
rows, not its planes (``padded_copy(by_rows=True)``).

Split by planes, 3 channels keep one of two threads a third idle, and the
convolution reading the copy (in row tiles for so short a reduction, its
threads sharing the output rows) reads every channel of its rows, two
thirds of them written on the other core.  Measured on two Zen 4 vCPUs
(convbnrelu, 3×224×224, medians of 300 runs in fresh processes,
alternated): 0.261 → 0.245 ms with both vCPUs on one core complex (186 and
180 processes), 0.386 → 0.276 with them on two (9 and 14).

ResNet-18's 64-channel 56×56 copies too (below 65; 8 before).  Likely
why: the copy reads each thread's rows of every plane in runs of whole
rows, which the prefetcher can stream from the other core complex, where
a plane split left the convolution to fetch those lines a few at a time
(not measured apart; what is measured is the time).  Builds profiled in turn
in one process (AMD EPYC znver4, 2 vCPUs; per kernel, medians of ~500
profiles near and ~80 distant): near, the layer1 convolutions even
(-0.01 to +0.01 ms each), the whole 13.65 → 13.67 ms; distant, the second
to fourth (Winograd) 0.95, 0.83, 0.90 → 0.85, 0.75, 0.78 ms,
the whole 17.75 → 17.25 ms.  The 128-channel 28×28 copies by rows were
slower in both placements (layer2's Winograd convolutions +0.03 ms near,
+0.1 distant).

A pool or a depthwise convolution reads one channel per output: its copy
keeps the planes (a max pool's is then what ``kernel-separate-window``
recognises and drops)."""


@dataclass(frozen=True)
class WindowRead:
    """A read of NCHW kernel input ``source`` at ``at``: ``y``, ``x`` in the
    plane padded by ``before`` = (top, left) (negative: cropped) whose rows
    and columns are ``strides`` apart; ``fill`` outside the data."""

    value: SSAValue
    """What the read yields (the select, or the widened load)."""
    source: SSAValue
    at: tuple[SSAValue, ...]
    before: tuple[int, int]
    strides: tuple[int, int]
    fill: float
    last: tuple[int, int]
    """The largest ``y`` and ``x`` it reads."""
    all_channels: bool
    """Whether its channel index is a reduce variable of its block: each
    output then reads every channel of the window's rows (a convolution),
    not one channel's (a pool, a depthwise convolution)."""


def _constant(value: SSAValue) -> int | float | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr | FloatAttr):
        return op.value.value.data
    return None


def _picks(value: SSAValue, predicate: str) -> tuple[SSAValue, SSAValue] | None:
    """``(a, b)`` when ``value`` is ``select(cmpi predicate a b, a, b)``
    (:func:`~ember.lowering.graph_to_kernel._max` / ``_min`` of indices)."""
    op = value.owner
    if not isinstance(op, arith.SelectOp) or not isinstance(op.cond.owner, arith.CmpiOp):
        return None
    compare = op.cond.owner
    names = arith.CMPI_COMPARISON_OPERATIONS
    if names[compare.predicate.value.data] != predicate:
        return None
    if (compare.lhs, compare.rhs) != (op.lhs, op.rhs):
        return None
    return op.lhs, op.rhs


def _unclamped(value: SSAValue, size: int) -> SSAValue | None:
    """``i`` when ``value`` is ``min(max(i, 0), size - 1)``."""
    upper = _picks(value, "slt")
    if upper is None or _constant(upper[1]) != size - 1:
        return None
    lower = _picks(upper[0], "sgt")
    if lower is None or _constant(lower[1]) != 0:
        return None
    return lower[0]


def _unshifted(value: SSAValue) -> tuple[SSAValue, int]:
    """``(y, before)`` for ``value = y - before`` (an ``addi`` of a
    constant), else ``(value, 0)``."""
    op = value.owner
    if isinstance(op, arith.AddiOp):
        offset = _constant(op.rhs)
        if isinstance(offset, int):
            return op.lhs, -offset
    return value, 0


def _divided(value: SSAValue, stride: int) -> SSAValue | None:
    """``i`` when ``value`` is ``i`` (stride 1) or ``divsi i, stride``."""
    if stride == 1:
        return value
    op = value.owner
    if isinstance(op, arith.DivSIOp) and _constant(op.rhs) == stride:
        return op.lhs
    return None


def _axis(index: SSAValue, back: SSAValue, clamped: SSAValue, size: int) -> tuple[SSAValue, int, int] | None:
    """``(y, before, stride)`` of one axis of a guarded read: the load is at
    ``clamped = clamp(index / stride)`` and the guard compares ``index`` with
    ``back = clamped · stride``, ``index = y - before``."""
    op = back.owner
    stride = 1
    if back is not clamped:
        factor = _constant(op.rhs) if isinstance(op, arith.MuliOp) and op.lhs is clamped else None
        if not isinstance(factor, int) or factor < 2:
            return None
        stride = factor
    step = _unclamped(clamped, size)
    if step is None or _divided(step, stride) is not index:
        return None
    y, before = _unshifted(index)
    return y, before, stride


def _same_pairs(cond: SSAValue) -> list[tuple[SSAValue, SSAValue]]:
    """The ``(a, b)`` of each ``cmpi eq a, b`` the ``andi`` chain ``cond`` joins."""
    op = cond.owner
    if isinstance(op, arith.AndIOp):
        return _same_pairs(op.lhs) + _same_pairs(op.rhs)
    if isinstance(op, arith.CmpiOp) and arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data] == "eq":
        return [(op.lhs, op.rhs)]
    return []


def _loaded(value: SSAValue, args: Sequence[SSAValue]) -> memref.LoadOp | None:
    """The load of a rank-4 kernel input ``value`` is (through an ``extf``)."""
    if isinstance(value.owner, arith.ExtFOp):
        value = value.owner.input
    load = value.owner
    if isinstance(load, memref.LoadOp) and load.memref in args and len(load.indices) == 4:
        return load
    return None


def _guarded(select: arith.SelectOp, args: Sequence[SSAValue]) -> tuple | None:
    """``(source, at, before, strides, fill)`` of a guarded window read
    (:func:`~ember.lowering.graph_to_kernel._window_read`): ``select(y₀ ==
    clamp(y₀ / sh)·sh and x₀ == …, source[n, c, clamp(y₀ / sh), clamp(x₀ /
    sw)], fill)`` with ``y₀ = y - top``, ``x₀ = x - left``."""
    fill = _constant(select.rhs)
    load = _loaded(select.lhs, args)
    pairs = _same_pairs(select.cond)
    if not isinstance(fill, float) or load is None or len(pairs) != 2:
        return None
    n, c, *clamped = load.indices
    sizes = load.memref.type.get_shape()[2:]  # type: ignore[attr-defined]
    axes = [_axis(i, b, v, size) for (i, b), v, size in zip(pairs, clamped, sizes)]
    if None in axes:
        return None
    (y, top, sh), (x, left, sw) = axes  # type: ignore[misc]
    return load.memref, (n, c, y, x), (top, left), (sh, sw), fill


def _largest(value: SSAValue, variables: dict[SSAValue, tuple[str, int]], extents: list[int]) -> int | None:
    """The largest value of window index ``value`` (one that grows with a
    spatial and a reduce variable of the block), or ``None``."""
    terms = index_terms(value, variables)  # type: ignore[arg-type]
    if terms is None or any(len(v) != 2 or f < 0 for v, f in terms.items()):
        return None
    if {v[0] for v in terms} != {"s", "r"}:
        return None
    return sum(f * (extents[v[1]] - 1) for v, f in terms.items())  # type: ignore[misc]


def window_reads(kernel: FuncOp) -> list[WindowRead]:
    """The window reads of ``kernel`` this pass copies: guarded ones, and
    plain loads of an f16 input."""
    args = list(kernel.body.block.args)
    reads: list[WindowRead] = []
    for block in kernel.walk():
        if not isinstance(block, BlockOp) or REDUCE not in [k for k in block.kinds]:
            continue
        # Variables by position, "r" for reduce: _largest needs only whether
        # a reduce variable is among the terms, and each one's extent.
        variables = {
            v: ("r" if kind == REDUCE else "s", d)
            for d, (v, kind) in enumerate(zip(block.iter_vars, block.kinds))
        }
        extents = [_extent(bound) for bound in block.bindings]
        for op in block.body.block.ops:
            found = None
            if isinstance(op, arith.SelectOp) and g2k._is_float(op.result.type):
                found = _guarded(op, args)
                value = op.result
            elif isinstance(op, arith.ExtFOp) and isinstance(op.input.type, Float16Type):
                load = _loaded(op.result, args)
                if load is not None:
                    found = load.memref, tuple(load.indices), (0, 0), (1, 1), 0.0
                value = op.result
            if found is None:
                continue
            source, at, before, strides, fill = found
            last = [_largest(v, variables, extents) for v in at[2:]]
            if None in last:
                continue
            all_channels = variables.get(at[1], ("s", 0))[0] == "r"
            reads.append(
                WindowRead(value, source, at, before, strides, fill, tuple(last), all_channels)  # type: ignore[arg-type]
            )
    return reads


def _extent(bound: SSAValue) -> int:
    owner = bound.owner
    assert isinstance(owner, Block) and isinstance(owner.parent_op(), ForOp)
    loop = owner.parent_op()
    return loop.lb + (loop.trip_count - 1) * loop.step_value + 1  # type: ignore[union-attr]


def _erase_dead(block: Block) -> None:
    """Erase the ops of ``block`` whose results nothing uses and that only
    compute (arith) or load."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            pure = op.dialect_name() == "arith" or isinstance(op, memref.LoadOp)
            if pure and op.results and all(not r.uses for r in op.results):
                block.erase_op(op)
                changed = True


def _pad_inputs(kernel: FuncOp) -> list[str]:
    """Rewrite ``kernel``'s window reads; describe each copy made."""
    copies: dict[tuple, list[WindowRead]] = {}
    for read in window_reads(kernel):
        copies.setdefault((read.source, read.before, read.strides, read.fill), []).append(read)
    body = kernel.body.block
    made: list[str] = []
    for (source, before, strides, fill), group in copies.items():
        # The data's first row goes to row ``top`` of the copy (never
        # above row 0: a read that starts inside the data reads further down).
        top, left = (max(b, 0) for b in before)
        shift = (top - before[0], left - before[1])
        height, width = ((size - 1) * s + 1 for size, s in zip(source.type.get_shape()[2:], strides))  # type: ignore[attr-defined]
        bottom = max(0, max(r.last[0] for r in group) + shift[0] - top - height + 1)
        right = max(0, max(r.last[1] for r in group) + shift[1] - left - width + 1)
        channels = source.type.get_shape()[1]  # type: ignore[attr-defined]
        by_rows = (
            channels < ROWS_BELOW_CHANNELS
            and strides == (1, 1)
            and all(read.all_channels for read in group)
        )
        staging = Block()
        em = g2k._Emitter(staging)
        padded = g2k.padded_copy(em, source, [top, left, bottom, right], fill, strides, by_rows)
        ops = list(staging.ops)
        for op in ops:
            op.detach()
        body.insert_ops_before(ops, body.first_op)  # type: ignore[arg-type]
        ret = body.last_op
        assert isinstance(ret, ReturnOp)
        body.insert_op_before(memref.DeallocOp.get(padded), ret)
        for read in group:
            use_site: Operation = read.value.owner  # type: ignore[assignment]
            block = use_site.parent_block()
            assert block is not None
            staging = Block()
            em = g2k._Emitter(staging)
            n, c, y, x = read.at
            load = em.load(padded, [n, c, em.add_index(y, shift[0]), em.add_index(x, shift[1])])
            for op in list(staging.ops):
                op.detach()
                block.insert_op_before(op, use_site)
            read.value.replace_all_uses_with(load)
            _erase_dead(block)
        name = source.name_hint or "input"
        spread = f", rows and columns {strides[0]} and {strides[1]} apart," if strides != (1, 1) else ""
        split = " (threads share its rows)" if by_rows else ""
        made.append(
            f"%{name}{spread} padded by [{top}, {left}, {bottom}, {right}] into %{padded.name_hint}{split}"
        )
    return made


@dataclass(frozen=True)
class KernelPadInputPass(KernelPass):
    """Make guarded window reads of a kernel input reads of a padded f32 copy."""

    name = "kernel-pad-input"

    def rewrite_kernel(self, kernel: FuncOp) -> None:
        made = _pad_inputs(kernel)
        if made:
            name = kernel.sym_name.data
            remarks.applied(
                self.name,
                f"kernel @{name}: window reads of " + "; ".join(made),
                [kernel],
                kernel=name,
            )
