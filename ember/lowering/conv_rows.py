"""Register-blocked row tiles: the direct conv2d for short reductions.

A stride-1 conv2d whose reduction (input channels × taps) is short — the
3-channel first layer of convbnrelu, 27 products per output — gains nothing
from weight panels: storing a tile of (pixels × channel panel) into NCHW is
a transpose that costs more than its FMAs (``ROWS_MAX_DEPTH`` in
:mod:`ember.lowering.graph_to_kernel`).  The plain row nest there keeps the
vector along the output row, but accumulates in a scratch row of the whole
width: every FMA is a load and a store of that row (~22 GFLOP/s on one
Zen 3 core, a quarter of its peak).

Here the vector stays along the output row and the accumulators stay in
registers, as in the register-blocked micro-kernel of XDSL_NOTES with the
roles of the operands swapped: a tile is ``channels`` output channels ×
``width`` consecutive output columns of one output row.  One reduction step
loads ``width / lanes`` input vectors (contiguous: stride 1), broadcasts one
weight per channel and issues ``channels × width / lanes`` FMAs; the tile is
stored through the epilogue as whole vectors of an NCHW row.  The weight is
read as it is (one scalar per channel and step): nothing to pack.

This is TVM's ``conv2d_nchw`` x86 schedule for small ``in_channels``
(``reorder`` + ``vectorize`` on the output width, ``unroll`` of an
output-channel block).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from ember.dialects import graph
from ember.dialects.graph import GraphOp
from ember.dialects.kernel import REDUCE, SPATIAL
from ember.lowering import graph_to_kernel as g2k

ROW_TILE_VECTORS = 2
"""Vectors of output columns per tile: 2 × 5 channels is the 10-accumulator
budget of ``TILE_ACCUMULATORS`` (16 vector registers)."""


def row_tile_shape(op: GraphOp, target: g2k.VectorTarget) -> tuple[int, int]:
    """``(channels, width)`` of ``op``'s tile: most output channels per tile
    and output columns per tile."""
    budget = (
        g2k.WIDE_TILE_ACCUMULATORS if target.registers >= 32 else g2k.TILE_ACCUMULATORS
    )
    return budget // ROW_TILE_VECTORS, ROW_TILE_VECTORS * target.vector_lanes


def _column_runs(width: int, tile: int) -> list[tuple[int, int, int]]:
    """``(start, count, size)`` runs of column tiles: whole tiles, then one
    narrower tile for the rest of the row."""
    full, rest = divmod(width, tile)
    runs = [(0, full, tile)] if full else []
    if rest:
        runs.append((full * tile, 1, rest))
    return runs


def gen_conv2d_row_tiles(em: g2k._Emitter, low: g2k._Lowering, op: GraphOp) -> None:
    """One-group conv2d with column stride 1 as register-blocked row tiles: one
    ``parallel`` loop over (batch, channel block, output row) per run of
    tiles of the same shape."""
    data, weight = op.operands
    n, out_channels, oh, ow = graph.shape_of(op.results[0])
    most_channels, tile_width = row_tile_shape(op, low.target)
    source, load_source, scratch = g2k._window_source(
        em, low, data, op.attr("padding"), 0.0
    )
    for channel_start, channel_blocks, channels in g2k._balanced_tiles(
        out_channels, most_channels
    ):
        for column_start, column_tiles, width in _column_runs(ow, tile_width):
            _emit_row_tiles(
                em,
                low,
                op,
                (source, load_source),
                _RowTiles(channel_start, channel_blocks, channels),
                (column_start, column_tiles, width),
            )
    if scratch:
        em.add(memref.DeallocOp.get(source))


@dataclass(frozen=True)
class _RowTiles:
    """``blocks`` blocks of ``channels`` output channels from ``start``."""

    start: int
    blocks: int
    channels: int


def _emit_row_tiles(
    em: g2k._Emitter,
    low: g2k._Lowering,
    op: GraphOp,
    source_and_loader: tuple[SSAValue, Callable[..., SSAValue]],
    block: _RowTiles,
    columns: tuple[int, int, int],
) -> None:
    source, load_source = source_and_loader
    data, weight = op.operands
    n, _, oh, _ = graph.shape_of(op.results[0])
    _, in_channels, kh, kw = graph.shape_of(weight)
    sh, _ = op.attr("strides")
    dh, dw = op.attr("dilation")
    column_start, column_tiles, width = columns
    weights = low.buffer(weight)
    outer = [n, block.blocks, oh, column_tiles]
    count = n * block.blocks * oh * column_tiles
    flops = 2 * count * block.channels * width * in_channels * kh * kw
    kind = "parallel" if count > 1 and flops >= g2k.PARALLEL_MIN_FLOPS else "serial"

    def tile_origin(vt: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
        """(batch, first channel, output row, first column) of tile ``vt``."""
        vn, vb, voh, vc = g2k._unflatten(em, vt, outer)
        first_channel = em.affine([(vb, block.channels)], block.start)
        first_column = em.affine([(vc, width)], column_start)
        return vn, first_channel, voh, first_column

    with em.loop("t", count, kind) as i_t:
        acc = em.alloc([block.channels, width])
        acc.name_hint = "acc"
        with (
            em.loop("l", width, "vectorized") as i_l,
            em.kblock("conv2d_init", g2k._spatial([i_t, i_l])) as (_, vl),
        ):
            for c in range(block.channels):
                em.store(em.const(0.0, f32), acc, [em.index(c), vl])
        with (
            em.nest(["ic", "kh", "kw"], [in_channels, kh, kw], ["serial"] * 3) as red,
            em.loop("l", width, "vectorized") as i_l,
        ):
            bindings = (
                [(i_t, SPATIAL)] + [(iv, REDUCE) for iv in red] + [(i_l, SPATIAL)]
            )
            with em.kblock("conv2d", bindings) as (vt, vic, vkh, vkw, vl):
                vn, first_channel, voh, first_column = tile_origin(vt)
                y = em.affine([(voh, sh), (vkh, dh)])
                x = em.affine([(first_column, 1), (vl, 1), (vkw, dw)])
                value = load_source(source, [vn, vic, y, x])
                for c in range(block.channels):
                    channel = em.add_index(first_channel, c)
                    w = em.load_widened(weights, [channel, vic, vkh, vkw])
                    slot = [em.index(c), vl]
                    total = em.add(
                        arith.AddfOp(em.load(acc, slot), em.add(arith.MulfOp(value, w)))
                    )
                    em.store(total, acc, slot)
        with (
            em.loop("l", width, "vectorized") as i_l,
            em.kblock("conv2d_store", g2k._spatial([i_t, i_l])) as (vt, vl),
        ):
            vn, first_channel, voh, first_column = tile_origin(vt)
            column = em.add_index(first_column, vl)
            for c in range(block.channels):
                value = em.load(acc, [em.index(c), vl])
                at = [vn, em.add_index(first_channel, c), voh, column]
                low.emit_result(em, value, at)
        em.add(memref.DeallocOp.get(acc))
