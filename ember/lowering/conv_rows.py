"""Register-blocked row tiles: the direct conv2d for short reductions.

A conv2d whose reduction (input channels × taps) is short — the 3-channel
first layer of convbnrelu, 27 products per output, or ResNet-18's 7×7
stride-2 stem, 147 — gains nothing from weight panels: storing a tile of
(pixels × channel panel) into NCHW is a transpose that costs more than its
FMAs (``ROWS_MAX_DEPTH`` in :mod:`ember.lowering.microkernels`).  The plain
row nest of :mod:`ember.lowering.graph_to_kernel` keeps the vector along
the output row, but accumulates in a scratch row of the whole width: every
FMA is a load and a store of that row (~22 GFLOP/s on one Zen 3 core, a
quarter of its peak).

Here the vector stays along the output row and the accumulators stay in
registers: the conv is a :class:`~ember.lowering.gemm.RowProduct` per
(image, output row) — rows are output channels, columns output columns, the
reduction runs over input channels and taps, B is the padded input row
(contiguous with column stride 1; with stride ``s`` the input is first
copied split in ``s`` column phases, ``P[n, c, y, p, x] = in[n, c, y, s·x +
p]``, and tap ``j`` reads phase ``j % s`` from column ``x + j // s``:
contiguous again) and A the weight, read as it is (one broadcast per
channel and step: nothing to pack).  The tile is stored through the
epilogue as whole vectors of an NCHW row.

This is TVM's ``conv2d_nchw`` x86 schedule for small ``in_channels``
(``reorder`` + ``vectorize`` on the output width, ``unroll`` of an
output-channel block).

Grouped conv2d (depthwise too; :func:`emit_grouped_conv2d_rows`) keeps the
vector along the output row as well, with a scratch row of the whole width
as its accumulator: the reduction per output channel is short (one group's
channels × taps) and has nothing to share across channels.  Both are what
``kernel-tensorize`` makes of the naive conv2d nest.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from ember.dialects.kernel import REDUCE
from ember.lowering import graph_to_kernel as g2k
from ember.lowering.gemm import Emitter, Indices, RowProduct, emit_row_product


def emit_conv2d_row_tiles(
    em: g2k._Emitter,
    source: SSAValue,
    weights: SSAValue,
    shape: tuple[int, int, int, int],
    reduction: tuple[int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    emit_result: Callable[[g2k._Emitter, SSAValue, list[SSAValue]], None],
    target: g2k.VectorTarget,
) -> None:
    """One-group conv2d as register-blocked row tiles (a strided one over
    its input's column phases, :func:`_column_phases`):
    ``shape`` the result's (n, out channels, rows, columns), ``reduction``
    (in channels, kernel rows, kernel columns), ``source`` the (padded)
    input, ``weights`` OIHW as it is; ``emit_result(em, sum, index)``
    stores a finished sum through the epilogue."""
    n, out_channels, oh, ow = shape
    in_channels, kh, kw = reduction
    sh, sw = strides
    dh, dw = dilation
    phases = _column_phases(em, source, sw) if sw > 1 else source

    def a_at(em: Emitter, batch: Indices, row: SSAValue, red: Indices) -> SSAValue:
        return em.load_widened(weights, [row, *red])

    def b_at(
        em: Emitter, batch: Indices, red: Indices, first: SSAValue, lane: SSAValue
    ) -> SSAValue:
        vn, voh = batch
        vic, vkh, vkw = red
        y = em.affine([(voh, sh), (vkh, dh)])
        if sw == 1:
            x = em.affine([(first, 1), (lane, 1), (vkw, dw)])
            return em.load_widened(source, [vn, vic, y, x])
        # Column sw·(first + lane) + kw·dw of the input: phase (kw·dw) % sw,
        # column first + lane + (kw·dw) // sw of that phase.
        tap = em.mul_index(vkw, dw)
        phase = em.add(arith.RemSIOp(tap, em.index(sw)))
        shift = em.add(arith.DivSIOp(tap, em.index(sw)))
        x = em.affine([(first, 1), (lane, 1), (shift, 1)])
        return em.load(phases, [vn, vic, y, phase, x])

    def store(
        em: Emitter, batch: Indices, row: SSAValue, column: SSAValue, value: SSAValue
    ) -> None:
        vn, voh = batch
        emit_result(em, value, [vn, row, voh, column])

    product = RowProduct(
        "conv2d",
        (n, oh),
        out_channels,
        ow,
        (("ic", in_channels), ("kh", kh), ("kw", kw)),
        a_at,
        b_at,
        store,
    )
    emit_row_product(em, product, target)
    if sw > 1:
        em.add(memref.DeallocOp.get(phases))


def _column_phases(em: g2k._Emitter, source: SSAValue, stride: int) -> SSAValue:
    """``P[n, c, y, p, x] = source[n, c, y, stride·x + p]`` in f32 (zero past
    the row's end): a stride-``stride`` window read of one phase is then a
    contiguous run, so row tiles vectorise along the output row with plain
    vector loads."""
    n, channels, h, w = source.type.get_shape()  # type: ignore[attr-defined]
    width = -(-w // stride)
    phases = em.alloc([n, channels, h, stride, width])
    phases.name_hint = "phases"
    # One parallel loop over the rows of all channels, row-major: a 3-channel
    # input would keep a third of a pair of threads idle, and the row tiles
    # reading P split by output rows, so each thread reads rows it wrote.
    with (
        em.loop("n", n) as i_n,
        em.loop("yc", h * channels, "parallel" if channels * h > 1 else "serial") as i_yc,
        em.loop("p", stride) as i_p,
        em.loop("x", width, "vectorized") as i_x,
        em.kblock("column_phases", g2k._spatial([i_n, i_yc, i_p, i_x])) as (vn, vyc, vp, vx),
    ):
        vy, vc = g2k._unflatten(em, vyc, [h, channels])
        vs = [vn, vc, vy, vp, vx]
        column = em.affine([(vx, stride), (vp, 1)])
        inside = em.add(arith.CmpiOp(column, em.index(w), "slt"))
        clamped = em.add(arith.SelectOp(inside, column, em.index(w - 1)))
        value = em.load_widened(source, [vn, vc, vy, clamped])
        em.store(em.add(arith.SelectOp(inside, value, em.const(0.0, f32))), phases, vs)
    return phases


def emit_grouped_conv2d_rows(
    em: g2k._Emitter,
    source: SSAValue,
    weights: SSAValue,
    shape: tuple[int, int, int, int],
    reduction: tuple[int, int, int],
    group_out: int,
    strides: tuple[int, int],
    dilation: tuple[int, int],
    emit_result: Callable[[g2k._Emitter, SSAValue, list[SSAValue]], None],
) -> None:
    """Grouped conv2d (``group_out`` output channels per group, depthwise
    too): output channels in ``parallel``, the reduction outside a
    ``vectorized`` loop over the output row, accumulated in a scratch row.
    ``shape`` is the result's (n, out channels, rows, columns),
    ``reduction`` (in channels per group, kernel rows, kernel columns),
    ``source`` the (padded) input, ``weights`` OIHW as it is."""
    n, out_channels, oh, ow = shape
    group_channels, kh, kw = reduction
    grouped = group_out < out_channels
    sh, sw = strides
    dh, dw = dilation
    with em.loop("n", n) as i_n, em.loop("oc", out_channels, "parallel") as i_oc:
        row = em.alloc([ow])
        row.name_hint = "acc"
        with em.loop("oh", oh) as i_oh:
            with (
                em.loop("ow", ow, "vectorized") as i_ow,
                em.kblock("conv2d_init", g2k._spatial([i_n, i_oc, i_oh, i_ow])) as vs,
            ):
                em.store(em.const(0.0, f32), row, [vs[3]])
            with (
                em.loop("ic", group_channels) as i_ic,
                em.loop("kh", kh) as i_kh,
                em.loop("kw", kw) as i_kw,
                em.loop("ow", ow, "vectorized") as i_ow,
            ):
                bindings = g2k._spatial([i_n, i_oc, i_oh, i_ow]) + [
                    (i_ic, REDUCE),
                    (i_kh, REDUCE),
                    (i_kw, REDUCE),
                ]
                with em.kblock("conv2d", bindings) as (vn, voc, voh, vow, vic, vkh, vkw):
                    channel = vic
                    if grouped:
                        group = em.add(arith.DivSIOp(voc, em.index(group_out)))
                        channel = em.affine([(group, group_channels), (vic, 1)])
                    y = em.affine([(voh, sh), (vkh, dh)])
                    x = em.affine([(vow, sw), (vkw, dw)])
                    a = em.load_widened(source, [vn, channel, y, x])
                    b = em.load_widened(weights, [voc, vic, vkh, vkw])
                    acc = em.load(row, [vow])
                    product = em.add(arith.MulfOp(a, b))
                    em.store(em.add(arith.AddfOp(acc, product)), row, [vow])
            with (
                em.loop("ow", ow, "vectorized") as i_ow,
                em.kblock("conv2d_store", g2k._spatial([i_n, i_oc, i_oh, i_ow])) as vs,
            ):
                emit_result(em, em.load(row, [vs[3]]), vs)
        em.add(memref.DeallocOp.get(row))
