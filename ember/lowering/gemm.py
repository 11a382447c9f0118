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
(:mod:`ember.lowering.winograd`) and ``graph.matmul``.  Nothing needs
packing: B is read in place and A's broadcasts hit a few cache lines.

Tiles: rows in balanced blocks of at most ``most_rows``, columns in whole
tiles of ``width`` and one narrower tile for the rest; one ``parallel`` loop
per (row block size, column tile size) run covers the batch, row blocks and
column tiles, when the product has enough work for threads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from ember.dialects.kernel import REDUCE, SPATIAL
from ember.lowering import graph_to_kernel as g2k

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

    ``a_at(em, batch, row, red)`` and ``b_at(em, batch, red, column)`` return
    f32 scalars (``batch`` the batch indices, ``red`` the reduction
    variables); ``store(em, batch, row, column, value)`` consumes a finished
    sum (a raw store, or the group's epilogue)."""

    name: str
    batch: tuple[int, ...]
    rows: int
    columns: int
    reduction: tuple[tuple[str, int], ...]
    """Names and extents of the reduction loops (outermost first)."""
    a_at: ScalarAt
    b_at: ScalarAt
    store: Callable[..., None]


def tile_shape(target: g2k.VectorTarget) -> tuple[int, int]:
    """``(most rows, width)`` of a tile for ``target``'s vector registers."""
    budget = (
        g2k.WIDE_TILE_ACCUMULATORS if target.registers >= 32 else g2k.TILE_ACCUMULATORS
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
    for row_run in g2k._balanced_tiles(product.rows, most_rows):
        for column_run in _column_runs(product.columns, width):
            _emit_tiles(em, product, row_run, column_run)


def _emit_tiles(
    em: g2k._Emitter,
    product: RowProduct,
    row_run: tuple[int, int, int],
    column_run: tuple[int, int, int],
) -> None:
    row_start, row_blocks, rows = row_run
    column_start, column_tiles, width = column_run
    outer = [*product.batch, row_blocks, column_tiles]
    count = math.prod(outer)
    depth = math.prod(extent for _, extent in product.reduction)
    flops = 2 * count * rows * width * depth
    kind = "parallel" if count > 1 and flops >= g2k.PARALLEL_MIN_FLOPS else "serial"
    name = product.name

    def tile_origin(vt: SSAValue) -> tuple[list[SSAValue], SSAValue, SSAValue]:
        """(batch indices, first row, first column) of tile ``vt``."""
        *batch, block, tile = g2k._unflatten(em, vt, outer)
        first_row = em.affine([(block, rows)], row_start)
        first_column = em.affine([(tile, width)], column_start)
        return batch, first_row, first_column

    with em.loop("t", count, kind) as i_t:
        acc = em.alloc([rows, width])
        acc.name_hint = "acc"
        with (
            em.loop("l", width, "vectorized") as i_l,
            em.kblock(f"{name}_init", g2k._spatial([i_t, i_l])) as (_, vl),
        ):
            for r in range(rows):
                em.store(em.const(0.0, f32), acc, [em.index(r), vl])
        names = [n for n, _ in product.reduction]
        extents = [e for _, e in product.reduction]
        with (
            em.nest(names, extents, ["serial"] * len(extents)) as red,
            em.loop("l", width, "vectorized") as i_l,
        ):
            bindings = (
                [(i_t, SPATIAL)] + [(iv, REDUCE) for iv in red] + [(i_l, SPATIAL)]
            )
            with em.kblock(name, bindings) as (vt, *vred, vl):
                batch, first_row, first_column = tile_origin(vt)
                value = product.b_at(em, batch, vred, em.add_index(first_column, vl))
                for r in range(rows):
                    a = product.a_at(em, batch, em.add_index(first_row, r), vred)
                    slot = [em.index(r), vl]
                    total = em.add(
                        arith.AddfOp(em.load(acc, slot), em.add(arith.MulfOp(a, value)))
                    )
                    em.store(total, acc, slot)
        with (
            em.loop("l", width, "vectorized") as i_l,
            em.kblock(f"{name}_store", g2k._spatial([i_t, i_l])) as (vt, vl),
        ):
            batch, first_row, first_column = tile_origin(vt)
            column = em.add_index(first_column, vl)
            for r in range(rows):
                value = em.load(acc, [em.index(r), vl])
                product.store(em, batch, em.add_index(first_row, r), column, value)
        em.add(memref.DeallocOp.get(acc))


def raw_store(buffer: SSAValue) -> Callable[..., None]:
    """A ``store`` that writes sums as they are to ``buffer[batch…, row, column]``."""

    def store(
        em: Emitter, batch: Indices, row: SSAValue, column: SSAValue, value: SSAValue
    ) -> None:
        em.store(value, buffer, [*batch, row, column])

    return store
