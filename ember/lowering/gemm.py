"""A register-blocked GEMM micro-kernel with the vector along the columns.

``out[b…, i, j] = Σ_r A(b…, i, r) · B(b…, r, j)``, with B read one vector of
consecutive columns at a time and A one scalar (broadcast) per row: the
orientation of BLIS/OpenBLAS sgemm micro-kernels for a row-major B, and of
TVM's x86 ``conv2d_nchw`` schedule (``vectorize`` on the output width,
``unroll`` of an output-channel block).  A *tile* is ``rows`` rows ×
``width`` columns of sums kept in a small scratch buffer whose column loop
is ``vectorized`` with a static trip count, so LLVM holds it in vector
registers: one reduction step is ``width / lanes`` vector loads of B, one
broadcast of A per row and ``rows × width / lanes`` FMAs, and the tile is
stored as whole vectors of output rows.

It is the counterpart of the ``_Product`` micro-kernel of
:mod:`ember.lowering.graph_to_kernel` (vector along the *output channels*,
over a packed weight), for products whose B operand is already laid out in
rows: shallow convolutions over wide output rows
(:mod:`ember.lowering.conv_rows`), Winograd's per-position products
(:mod:`ember.lowering.winograd`) and ``graph.matmul``.  The convolutions
read B in place (A's broadcasts hit a few cache lines); matmul reads B in
column panels one tile wide (:class:`ColumnPanels`, packed at bind time when
B is a constant), since a B row of a power-of-two width puts every step of
a tile in the same L1 set.  Measured on one Zen 3 core (rough, a shared
machine): 64×784·784×1024 from 26 % of the FMA peak (the former i-k-j nest
with a scratch row) to 89 %, 256×256·256×256 from 39 % to 82 %.

Tiles: rows in balanced blocks of at most ``most_rows``, columns in whole
tiles of ``width`` and one narrower tile for the rest; one ``parallel`` loop
per (row block size, column tile size) run covers the batch, row blocks and
column tiles, when the product has enough work for threads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from ember.lowering import graph_to_kernel as g2k
from ember.lowering import microkernels as mk

ROW_TILE_VECTORS = 2
"""Vectors of columns per tile: 2 vectors × 5 rows is the 10-accumulator
budget of ``TILE_ACCUMULATORS`` (16 vector registers), 2 × 7 of
``WIDE_TILE_ACCUMULATORS`` (32).  Measured on one Zen 3 core, convbnrelu's
conv: 5 × 2 and 4 × 2 vectors ~0.6 ms, 2 × 4 0.8 ms, 4 × 3 1.5 ms (spills),
8 × 1 8.9 ms (LLVM vectorises the wrong loop)."""

Emitter = g2k._Emitter
Indices = Sequence[SSAValue]
"""Batch or reduction indices handed to a product's callables."""
ScalarAt = Callable[..., SSAValue]


@dataclass(frozen=True)
class RowProduct:
    """What a GEMM computes, as callables that emit its operand loads.

    ``a_at(em, batch, row, red)`` and ``b_at(em, batch, red, first_column,
    lane)`` return f32 scalars (``batch`` the batch indices, ``red`` the
    reduction variables; B's column is ``first_column + lane``, the first
    column of the tile a multiple of its width, so a B packed in column
    panels finds its panel without a division per lane);
    ``store(em, batch, row, column, value)`` consumes a finished sum (a raw
    store, or the group's epilogue)."""

    name: str
    batch: tuple[int, ...]
    rows: int
    columns: int
    reduction: tuple[tuple[str, int], ...]
    """Names and extents of the reduction loops (outermost first)."""
    a_at: ScalarAt
    b_at: ScalarAt
    store: Callable[..., None]
    columns_outer: bool = False
    """Walk the tiles column tile by column tile (every row block of one, then
    the next) rather than row block by row block: a B column panel then
    serves all rows while it is in cache, where the default order keeps A's
    rows in cache instead."""


def tile_shape(target: g2k.VectorTarget) -> tuple[int, int]:
    """``(most rows, width)`` of a tile for ``target``'s vector registers."""
    budget = (
        mk.WIDE_TILE_ACCUMULATORS if target.registers >= 32 else mk.TILE_ACCUMULATORS
    )
    return budget // ROW_TILE_VECTORS, ROW_TILE_VECTORS * target.vector_lanes


def _column_runs(columns: int, width: int) -> list[tuple[int, int, int]]:
    """``(start, count, size)``: whole tiles, then one narrower for the rest."""
    full, rest = divmod(columns, width)
    runs = [(0, full, width)] if full else []
    if rest:
        runs.append((full * width, 1, rest))
    return runs


def emit_row_product(
    em: g2k._Emitter, product: RowProduct, target: g2k.VectorTarget
) -> None:
    """The loop nests computing ``product``, one per run of same-shape tiles."""
    most_rows, width = tile_shape(target)
    for row_run in mk.balanced_tiles(product.rows, most_rows):
        for column_run in _column_runs(product.columns, width):
            _emit_tiles(em, product, row_run, column_run, target.vector_lanes)


def _emit_tiles(
    em: g2k._Emitter,
    product: RowProduct,
    row_run: tuple[int, int, int],
    column_run: tuple[int, int, int],
    vector_lanes: int,
) -> None:
    row_start, row_blocks, rows = row_run
    column_start, column_tiles, width = column_run
    outer = (
        [*product.batch, column_tiles, row_blocks]
        if product.columns_outer
        else [*product.batch, row_blocks, column_tiles]
    )
    count = math.prod(outer)
    depth = math.prod(extent for _, extent in product.reduction)
    flops = 2 * count * rows * width * depth
    kind = "parallel" if count > 1 and flops >= mk.PARALLEL_MIN_FLOPS else "serial"
    name = product.name

    def tile_origin(vt: SSAValue) -> tuple[list[SSAValue], SSAValue, SSAValue]:
        """(batch indices, first row, first column) of tile ``vt``."""
        *batch, block, tile = g2k._unflatten(em, vt, outer)
        if product.columns_outer:
            block, tile = tile, block
        first_row = em.affine([(block, rows)], row_start)
        first_column = em.affine([(tile, width)], column_start)
        return batch, first_row, first_column

    def operands(
        vt: SSAValue, vred: list[SSAValue], vl: SSAValue
    ) -> tuple[Callable[[int], SSAValue], SSAValue]:
        batch, first_row, first_column = tile_origin(vt)
        value = product.b_at(em, batch, vred, first_column, vl)

        def row(r: int) -> SSAValue:
            return product.a_at(em, batch, em.add_index(first_row, r), vred)

        return row, value

    def store(vt: SSAValue, vl: SSAValue) -> Callable[[int, SSAValue], None]:
        batch, first_row, first_column = tile_origin(vt)
        column = em.add_index(first_column, vl)
        return lambda r, value: product.store(
            em, batch, em.add_index(first_row, r), column, value
        )

    mk.emit_register_tiles(
        em,
        name,
        ("t", count, kind),
        (rows, width, width),
        product.reduction,
        operands,
        store,
        vector_lanes,
    )


def raw_store(buffer: SSAValue) -> Callable[..., None]:
    """A ``store`` that writes sums as they are to ``buffer[batch…, row, column]``."""

    def store(
        em: Emitter, batch: Indices, row: SSAValue, column: SSAValue, value: SSAValue
    ) -> None:
        em.store(value, buffer, [*batch, row, column])

    return store


# --------------------------------------------------------------------------
# graph.matmul: B in column panels
# --------------------------------------------------------------------------

PACK_MIN_ROWS = 64
"""A matmul whose B is computed at run time packs it in column panels (a
copy of B per call) when A has at least this many rows: 2·M·K·N FLOPs then
outweigh the K·N copy ~100 to 1.  A constant B is packed at bind time
whatever M is; a short product over a computed B reads B in place."""


@dataclass(frozen=True)
class ColumnPanels:
    """B (``… × K × N``) read in panels of ``width`` columns:
    ``P[…, j // width, k, j % width] = B[…, k, j]`` in f32, columns past ``N``
    zero.  A tile's step over the reduction then reads one contiguous
    ``width``-float run (consecutive in k: the prefetcher's stream), where B
    in place strides by a whole row of ``N`` floats — with ``N`` a multiple
    of 1024 every step of a tile maps to the same L1 set."""

    width: int

    def shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        *batch, depth, columns = shape
        return (*batch, -(-columns // self.width), depth, self.width)

    def pack(self, array: np.ndarray) -> np.ndarray:
        """The packed copy of ``array`` (any float dtype; the result is f32)."""
        *batch, depth, columns = array.shape
        panels = -(-columns // self.width)
        padded = np.zeros((*batch, depth, panels * self.width), np.float32)
        padded[..., :columns] = array
        split = padded.reshape(*batch, depth, panels, self.width)
        return np.ascontiguousarray(np.swapaxes(split, -3, -2))


def matmul_packing(
    constant_b: bool, rows: int, target: g2k.VectorTarget
) -> ColumnPanels | None:
    """How a matmul of ``rows`` rows reads B: in column panels as wide as a
    tile when B is a constant (``constant_b``: packed once, at bind time) or
    A has :data:`PACK_MIN_ROWS` rows or more (packed by the kernel); else in
    place."""
    if not constant_b and rows < PACK_MIN_ROWS:
        return None
    return ColumnPanels(tile_shape(target)[1])


def column_panels(
    em: Emitter, b: SSAValue, shape: Sequence[int], packing: ColumnPanels
) -> SSAValue:
    """A scratch buffer of the column panels of ``b`` (of ``shape``), filled
    here (the columns past the end zero)."""
    *batch, depth, columns = shape
    width = packing.width
    panels = em.alloc(packing.shape(shape))
    panels.name_hint = "panels"
    used = columns % width
    if used:
        extents = [*batch, depth, width - used]
        with (
            em.nest(g2k._names("r", len(extents)), extents) as ivs,
            em.kblock("pack_zero", g2k._spatial(ivs)) as (*vb, vk, vl),
        ):
            at = [*vb, em.index(columns // width), vk, em.add_index(vl, used)]
            em.store(em.const(0.0, f32), panels, at)
    with (
        em.nest(g2k._names("r", len(shape)), shape) as ivs,
        em.kblock("pack", g2k._spatial(ivs)) as (*vb, vk, vj),
    ):
        value = em.load_widened(b, [*vb, vk, vj])
        panel = em.add(arith.DivSIOp(vj, em.index(width)))
        lane = em.add(arith.RemSIOp(vj, em.index(width)))
        em.store(value, panels, [*vb, panel, vk, lane])
    return panels
