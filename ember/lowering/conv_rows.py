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
registers: the conv is a :class:`~ember.lowering.gemm.RowProduct` per
(image, output row) — rows are output channels, columns output columns, the
reduction runs over input channels and taps, B is the padded input row
(contiguous: column stride 1) and A the weight, read as it is (one
broadcast per channel and step: nothing to pack).  The tile is stored
through the epilogue as whole vectors of an NCHW row.

This is TVM's ``conv2d_nchw`` x86 schedule for small ``in_channels``
(``reorder`` + ``vectorize`` on the output width, ``unroll`` of an
output-channel block).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from ember.lowering import graph_to_kernel as g2k
from ember.lowering.gemm import Emitter, Indices, RowProduct, emit_row_product


def emit_conv2d_row_tiles(
    em: g2k._Emitter,
    source: SSAValue,
    weights: SSAValue,
    shape: tuple[int, int, int, int],
    reduction: tuple[int, int, int],
    row_stride: int,
    dilation: tuple[int, int],
    emit_result: Callable[[g2k._Emitter, SSAValue, list[SSAValue]], None],
    target: g2k.VectorTarget,
) -> None:
    """One-group conv2d with column stride 1 as register-blocked row tiles:
    ``shape`` the result's (n, out channels, rows, columns), ``reduction``
    (in channels, kernel rows, kernel columns), ``source`` the (padded)
    input, ``weights`` OIHW as it is; ``emit_result(em, sum, index)``
    stores a finished sum through the epilogue."""
    n, out_channels, oh, ow = shape
    in_channels, kh, kw = reduction
    sh = row_stride
    dh, dw = dilation

    def a_at(em: Emitter, batch: Indices, row: SSAValue, red: Indices) -> SSAValue:
        return em.load_widened(weights, [row, *red])

    def b_at(
        em: Emitter, batch: Indices, red: Indices, first: SSAValue, lane: SSAValue
    ) -> SSAValue:
        vn, voh = batch
        vic, vkh, vkw = red
        y = em.affine([(voh, sh), (vkh, dh)])
        x = em.affine([(first, 1), (lane, 1), (vkw, dw)])
        return em.load_widened(source, [vn, vic, y, x])

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
