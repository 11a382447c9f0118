"""Winograd convolution F(m×m, 3×3) for 3×3 stride-1 conv2d.

A 3×3 convolution computes an ``m × m`` tile of outputs from an
``α × α`` tile of inputs (``α = m + 2``) with ``α²`` products per channel
pair instead of ``9 m²`` (Lavin & Gray, "Fast Algorithms for Convolutional
Neural Networks", 2016)::

    Y = Aᵀ [ Σ_c (G g_kc Gᵀ) ⊙ (Bᵀ d_c B) ] A

The kernel runs it in four steps, each a plain loop nest, steps 2-4 once
per image over all its tiles:

1. the input is copied, zero-padded, so that whole ``α × α`` windows exist
   for every output tile (TVM's ``pad_temp``);
2. *input transform*: ``V[ξ, c, t] = (Bᵀ d B)[ξ]`` for every tile ``t`` and
   channel, the channels ``parallel``, the tile loop ``vectorized``;
3. ``α²`` independent products ``M[ξ, k, t] = Σ_c U[ξ, c, k] V[ξ, c, t]``,
   by the register-blocked GEMM micro-kernel of :mod:`ember.lowering.gemm`
   (vector along the tiles ``t``, a broadcast of ``U`` per output channel):
   ``V`` and ``M`` are read and written as whole vectors, with no transpose,
   and each ``U[ξ]`` is read once per image; or, for a layer of few tiles
   per channel, *by tile* into ``M[ξ, t, k]`` (vector along the output
   channels, a broadcast of ``V`` per tile: :func:`products_by_tile`);
4. *output transform*: ``Y = Aᵀ M A`` per tile, stored through the group's
   epilogue (batch_norm, relu… stay fused); tiles cut by the edge of the
   output store only their rows and columns inside it.

``V`` and ``M`` (3.2 MB each for a 64-channel 56×56 layer) are a
*workspace* the kernel takes as two more output arguments, planned once by
``plan-memory`` with the program's other buffers (:class:`WinogradConv`).
Measured on one Zen 3 core, 64 channels at 56×56: 1.6 ms, against 2.3 ms
for the former bands of 32 tiles on the stack, which re-read all of ``U``
per band (and which deeper layers could not use at all).  A layer of
``U`` up to 2 MB (AVX-512; 256 KB with AVX2) and enough rows runs steps
2-4 *in bands* instead, one tile row at a time per thread, ``V`` and
``M`` of the row on its stack (:func:`in_bands`).

The lowering emits every conv2d as its naive contraction; the schedule
pass ``kernel-tensorize`` (option ``winograd-min-channels``) rewrites a
naive nest that :func:`winograd_transform`'s rule chooses into this kernel
(:func:`emit_conv2d_winograd`).  The transformed weight ``U = G g Gᵀ`` is
computed at bind time when the weight is a constant (:class:`WinogradPacking`,
packed by that pass like the weight panels of direct kernels) and by the
kernel otherwise.  This is TVM's ``conv2d_nchw_winograd`` (``topi/nn/winograd_util.py``
for the matrices) with ``pre_computed`` weights.

Numerics: the transforms add and scale values before the products, so the
rounding error is larger than direct convolution's (see
docs/kernel-dialect.md, "Winograd convolution", for the bound the tests use).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import MemRefType, f32
from xdsl.ir import SSAValue

from ember.lowering import graph_to_kernel as g2k
from ember.lowering.kernel_to_llvm import STACK_LIMIT_BYTES
from ember.lowering.gemm import (
    Emitter,
    Indices,
    RowProduct,
    emit_row_product,
    raw_store,
    tile_shape,
)


def _matrix(rows: Sequence[Sequence[object]]) -> tuple[tuple[Fraction, ...], ...]:
    return tuple(tuple(Fraction(str(v)) for v in row) for row in rows)


@dataclass(frozen=True)
class WinogradTransform:
    """The matrices of F(m×m, 3×3): ``at`` (m × α), ``g`` (α × 3), ``bt`` (α × α)."""

    m: int
    at: tuple[tuple[Fraction, ...], ...]
    g: tuple[tuple[Fraction, ...], ...]
    bt: tuple[tuple[Fraction, ...], ...]

    @property
    def alpha(self) -> int:
        return self.m + 2


F2X2_3X3 = WinogradTransform(
    2,
    at=_matrix([[1, 1, 1, 0], [0, 1, -1, -1]]),
    g=_matrix([[1, 0, 0], ["1/2", "1/2", "1/2"], ["1/2", "-1/2", "1/2"], [0, 0, 1]]),
    bt=_matrix([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]),
)
"""F(2×2, 3×3): 16 products per 4 outputs (direct: 36); every transform
coefficient is 0, ±1 or ±1/2, so the transforms round almost nothing.
(F(4×4, 3×3) needs 36 per 16 but coefficients up to 8 and 1/24: measured
20× the error for little or no time saved, docs/kernel-dialect.md.)"""

WINOGRAD_TRANSFORM = F2X2_3X3
"""The transform chosen layers use."""


def winograd_transform(
    in_channels: int,
    out_channels: int,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    out_size: Sequence[int],
    target: g2k.VectorTarget,
) -> WinogradTransform | None:
    """The Winograd transform a one-group conv2d of these sizes is computed
    with, or ``None`` (direct): the rule of ``kernel-tensorize``'s
    ``winograd-min-channels`` option (``target.winograd_min_channels``; 0:
    never).

    A 3×3, stride-1, dilation-1 convolution with at least
    ``target.winograd_min_channels`` input and output channels and at least
    :data:`MIN_TILE_WIDTHS` micro-kernel tiles of output tiles per image
    (24 2×2 tiles with AVX2, a 10×10 output; 48 with AVX-512, 14×14).  The
    transforms cost about ``2α²`` additions per tile and channel against
    ``9m² - α²`` multiply-adds saved per pair of channels, so they pay with
    many channels; the products run over whole micro-kernel tiles of output
    tiles, so a plane of fewer wastes the rest.  Measured on one Zen 3 core
    (conv + bias + relu, min of 25 interleaved runs on a loaded machine),
    direct → Winograd: 16 channels at 56×56 0.24 → 0.19 ms, 32 at 56×56
    0.79 → 0.50, 64 at 56×56 2.7 → 1.6, 64 at 14×14 0.21 → 0.18, 128 at
    28×28 2.6 → 2.0, 256 at 14×14 2.7 → 2.2, and 512 at 7×7 (16 tiles, one
    micro-kernel tile) 3.38 → 3.35: no gain for the larger error, so
    direct.  With AVX-512's 32-column tiles, 256 channels at 14×14 (49
    output tiles in two micro-kernel tiles, 77% of their columns used) by
    Winograd took resnet18's three such layers from 1.13 to 0.90–0.94 ms
    each (two threads, Zen 4, best of 14 interleaved profiles).  The 7×7
    layers stay direct with AVX-512 too: by tile (nothing rounded), resnet18's
    three 512-channel layers took 2.2 ms each against 1.1 direct, and 1.3
    with ``U`` read from memory once (8-tile rows, column tiles outermost):
    a layer's ``U`` (16.8 MB, 16/9 of its weight) streams at ~13 GB/s,
    where the direct kernel's 9.4 MB arrive within its FMAs' time."""
    if tuple(kernel) != (3, 3) or tuple(strides) != (1, 1) or tuple(dilation) != (1, 1):
        return None
    minimum = target.winograd_min_channels
    if minimum <= 0 or min(in_channels, out_channels) < minimum:
        return None
    transform = WINOGRAD_TRANSFORM
    m = transform.m
    tiles = -(-out_size[0] // m) * -(-out_size[1] // m)
    if tiles < MIN_TILE_WIDTHS * tile_shape(target)[1]:
        return None
    return transform


MIN_TILE_WIDTHS = 1.5
"""Fewest micro-kernel tiles of output tiles (per image) a Winograd layer
has (see :func:`winograd_transform`): the products of a plane of fewer
waste over a quarter of their columns, or run as one tile (one thread)."""


@dataclass(frozen=True)
class WinogradPacking:
    """A 3×3 conv2d weight ``g[k, c]`` in the Winograd domain:
    ``U[ξ, c, k] = (G g[k, c] Gᵀ)[ξ]`` in f32, ``ξ = x·α + y`` over the
    ``α × α`` positions.  Output channels innermost: the product's reduction
    over ``c`` then reads ``U`` with a stride, so LLVM vectorises the tile's
    columns, not the reduction (with ``U[ξ, k, c]`` it transposed and spilled).

    The interface of :class:`~ember.lowering.graph_to_kernel.WeightPacking`
    (``shape``, ``pack``), so ``kernel-tensorize`` transforms a constant
    weight at bind time the way it packs the direct kernels' panels."""

    transform: WinogradTransform

    def shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        out_channels, in_channels, _, _ = shape
        return (self.transform.alpha**2, in_channels, padded_row(out_channels))

    def pack(self, array: np.ndarray) -> np.ndarray:
        """The transformed copy of ``array`` (any float dtype; the result is
        f32, computed in f64 so that it is the exact transform, rounded once),
        the columns past the output channels zero."""
        g_matrix = np.array(self.transform.g, dtype=np.float64)
        packed = np.zeros(self.shape(array.shape), np.float32)
        rows = packed.reshape(self.transform.alpha, self.transform.alpha, *packed.shape[1:])
        # A few output channels at a time: the f64 copy and product of a
        # 512-channel layer's whole weight would take ~40 MB at once.
        for start in range(0, array.shape[0], PACK_CHANNELS):
            taps = array[start : start + PACK_CHANNELS].transpose(2, 3, 1, 0)  # [i, j, c, k]
            block = taps.astype(np.float64)
            # G g (over i), then · Gᵀ (over j): two BLAS products, where a
            # three-operand einsum loops in C (3× the time at 256 channels).
            rows_done = np.tensordot(g_matrix, block, axes=(1, 0))  # [x, j, c, k]
            u = np.tensordot(g_matrix, rows_done, axes=(1, 1))  # [y, x, c, k]
            rows[..., start : start + block.shape[-1]] = u.transpose(1, 0, 2, 3)
        return packed


PACK_CHANNELS = 64
"""Output channels :meth:`WinogradPacking.pack` transforms at a time."""


ROW_ALIAS_BYTES = 512
"""A ``U`` row (one input channel's output channels) whose length in bytes
is a multiple of this gets :data:`ROW_PAD` unused floats more.  A tile of
the product reads one row's few output channels per step of its reduction
over input channels, so its steps lie a row apart; rows of 512 bytes (128
channels) or 1 KiB (256) put them in 8 or 4 of L1's 64 sets, whose 8 ways
cannot hold the tile's 128 or 256 rows, and every column tile read ``U``
from L2 again.  Measured on one Zen 3 core, the products of 128 channels at
28×28 and 256 at 14×14 ran at ~70 % of the FMA peak, 64 channels (256-byte
rows, 16 sets) at ~87 %."""

ROW_PAD = 16
"""Floats a padded ``U`` row gets: one cache line, so that successive rows
start in successive sets."""


def padded_row(out_channels: int) -> int:
    """The length of a ``U`` row for ``out_channels`` (see :data:`ROW_ALIAS_BYTES`)."""
    return out_channels + (ROW_PAD if out_channels * 4 % ROW_ALIAS_BYTES == 0 else 0)


# --------------------------------------------------------------------------
# Emitting the transforms
# --------------------------------------------------------------------------


def _combine(
    em: g2k._Emitter, coefficients: Sequence[Fraction], values: Sequence[SSAValue]
) -> SSAValue:
    """``Σ coefficient · value`` with the zero terms left out and ±1 as an
    addition or subtraction (the transforms are mostly 0 and ±1)."""
    total: SSAValue | None = None
    for coefficient, value in zip(coefficients, values):
        if coefficient == 0:
            continue
        magnitude = abs(coefficient)
        term = (
            value
            if magnitude == 1
            else em.add(arith.MulfOp(value, em.const(float(magnitude), f32)))
        )
        if total is None:
            total = term if coefficient > 0 else em.add(arith.NegfOp(term))
        elif coefficient > 0:
            total = em.add(arith.AddfOp(total, term))
        else:
            total = em.add(arith.SubfOp(total, term))
    return total if total is not None else em.const(0.0, f32)


def _sandwich(
    em: g2k._Emitter,
    left: Sequence[Sequence[Fraction]],
    tile: Sequence[Sequence[SSAValue]],
) -> list[list[SSAValue]]:
    """``L · tile · Lᵀ`` for a matrix of scalars, in two passes (rows, then
    columns), as the transforms are written."""
    rows = [
        [_combine(em, row, [tile[i][j] for i in range(len(tile))]) for j in range(len(tile[0]))]
        for row in left
    ]
    return [[_combine(em, column, rows[x]) for column in left] for x in range(len(left))]


@dataclass(frozen=True)
class WinogradConv:
    """The convolution a Winograd kernel computes, as the naive conv2d nest
    reads it: ``out[n, k, y, x] = Σ source[n, c, y + i, x + j] · g[k, c, i, j]``
    over an already padded ``source``; each result goes to ``emit_result``
    (the group's epilogue)."""

    source: SSAValue
    weight: SSAValue
    """``g`` (``[K, C, 3, 3]``), or ``U`` (:class:`WinogradPacking`'s
    layout) when ``transformed``."""
    transformed: bool
    out_shape: tuple[int, int, int, int]
    emit_result: Callable[[g2k._Emitter, SSAValue, Sequence[SSAValue]], None]
    workspace: tuple[SSAValue, ...]
    """``V`` and ``M`` of one image (:func:`workspace_shapes`), or none: the
    layer runs in bands (:func:`in_bands`, decided there).  Buffers the
    caller allocates once (``kernel-tensorize`` makes them results of the
    kernel's calls, which ``plan-memory`` places in the program's
    workspace).  Malloc'd per call they page-faulted in again every time
    (~1700 faults, 3× the direct convolution's time at 64 channels)."""


def workspace_shapes(
    transform: WinogradTransform,
    in_channels: int,
    out_shape: Sequence[int],
    target: g2k.VectorTarget,
) -> tuple[tuple[int, int, int], ...]:
    """The shapes of the two workspace buffers, ``V[ξ, c, t]`` and ``M[ξ,
    k, t]`` over one image's tiles ``t``, rounded up to whole micro-kernel
    tiles of columns, with one unused channel more: with power-of-two
    channel counts the α² planes would otherwise lie a multiple of 4 KiB
    apart, and the transforms' α² loads or stores per tile would all fall
    in one L1 set (measured, 128 channels at 28×28 on Zen 3: the input
    transform 1.24 ms, 0.1 ms with the extra channel).  By tile
    (:func:`products_by_tile`) the tiles are not rounded up and ``M`` is
    ``[ξ, t, k]`` (:func:`by_tile_shapes`).  None for a layer run in bands
    (:func:`in_bands`), whose buffers are on the stack."""
    _, out_channels, oh, ow = out_shape
    m, width = transform.m, tile_shape(target)[1]
    tile_rows, tile_columns = -(-oh // m), -(-ow // m)
    tiles = tile_rows * tile_columns
    positions = transform.alpha**2
    if in_bands(transform, in_channels, out_channels, (tile_rows, tile_columns), target):
        return ()
    if products_by_tile(tiles, out_channels, target):
        return by_tile_shapes(transform, in_channels, tiles, out_channels)
    tiles = -(-tiles // width) * width
    return (positions, in_channels + 1, tiles), (positions, out_channels + 1, tiles)


def by_tile_shapes(
    transform: WinogradTransform, in_channels: int, tiles: int, out_channels: int
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``V[ξ, c, t]`` and ``M[ξ, t, k]`` of ``tiles`` tiles whose products
    run by tile: ``V`` with one unused channel more (see
    :func:`workspace_shapes`), ``M``'s rows :func:`padded_row` long as
    ``U``'s are (a tile's stores of its rows lie a row apart, as its loads
    of ``U`` rows do)."""
    positions = transform.alpha**2
    return (positions, in_channels + 1, tiles), (positions, tiles, padded_row(out_channels))


BANDS_L2_WEIGHT_BYTES = 256 << 10
"""The largest ``U`` (bytes) of a layer run in bands (:func:`in_bands`)
on any target: every band reads all of it, and this much stays in a
core's L2 between bands (64 channels: 256 KB)."""

BANDS_MOST_WEIGHT_BYTES = 2 << 20
"""The largest ``U`` (bytes) of a layer run in bands on a target of
:data:`BY_TILE_MIN_REGISTERS` vector registers, read from L3 by every
band (128 channels: 1.2 MB, twice per 14-tile row).  ResNet-18's
256-channel 14×14 layers (``U`` 4.4 MB, 7 rows) stay whole.  Measured on
two Zen 4 threads, 128 channels at 28×28 (three conv + relu layers in a
row, their weights in cache, builds alternated in one process, median ms
per layer), whole → bands: 0.62-0.64 → 0.61-0.62 with
the two vCPUs on one core complex, 1.02-1.07 → 0.80-0.82 on two.  In
ResNet-18, whose weights leave the caches between layers, its three such
layers took 0.63-0.72 → 0.70-0.74 ms near and 1.02-1.07 → 0.93-0.98
distant, the network 13.5-13.7 → 13.8 and 16.7-17.2 → 16.4-16.8 ms
(docs/kernel-dialect.md, "In bands").  With ``-mattr=-avx512f`` (5-row
tiles: ``U`` read three times per 14-tile row, not twice), the three
layers in a row gained too, but ResNet-18 took 15.02 → 15.26 ms near and
17.88 → 17.92 distant, so AVX2 targets keep :data:`BANDS_L2_WEIGHT_BYTES`."""

BAND_MOST_BYTES = STACK_LIMIT_BYTES
"""The largest band buffer (``V`` or ``M`` of one tile row): both live on
the running thread's stack (``kernel_to_llvm``'s limit for an ``alloca``)."""

BANDS_MIN_ROWS = 7
"""Fewest tile rows of a layer run in bands: the rows are the threads'
shares, and a few split unevenly between two.  Measured on two Zen 4
threads (64 channels, conv + bias + relu, whole layer → bands, median ms
with the weights in cache / evicted): 14×14 (7 rows) 0.058 → 0.060 /
0.146 → 0.132, 28×28 0.214 → 0.195 / 0.321 → 0.284."""


def in_bands(
    transform: WinogradTransform,
    in_channels: int,
    out_channels: int,
    tiles: tuple[int, int],
    target: g2k.VectorTarget,
) -> bool:
    """Whether a layer of ``tiles`` (tile rows, tile columns) runs *in
    bands*: a ``parallel`` loop over tile rows, each row's input transform,
    products (by tile) and output transform run by one thread in two stack
    buffers, rather than each step over the whole layer through a planned
    workspace.

    Whole-layer steps split their work differently (the input transform by
    channel, the products by position ``ξ``, the output transform by
    channel), so on two threads half of ``V`` and ``M`` (3.2 MB each for
    64 channels at 56×56) moves between the cores at every step, and
    both pass through L3.  In bands, ``V`` and ``M`` of a row stay in the
    core's L2, and only the rows at a band's edge are read from the other
    core's share of the input.  (Splitting the whole layer's three steps by
    the same rows, with each thread's ``V`` contiguous, did not do it: on
    two core complexes the 128-channel 28×28 layers took 0.95-1.25 ms
    against 1.05-1.09 whole and 0.86 in bands.  The likely reason is that
    the workspace's bytes are other buffers' too, written by other splits;
    a band's buffers are on its own thread's stack.)  It suits a layer
    whose ``U`` every band reads from L2 (:data:`BANDS_L2_WEIGHT_BYTES`),
    or from L3 for ``target`` (:data:`BANDS_MOST_WEIGHT_BYTES`), whose row
    buffers fit the stack (:data:`BAND_MOST_BYTES`) and with enough rows
    (:data:`BANDS_MIN_ROWS`)."""
    tile_rows, tile_columns = tiles
    weight_bytes = transform.alpha**2 * in_channels * padded_row(out_channels) * 4
    band_bytes = max(
        math.prod(shape) * 4
        for shape in by_tile_shapes(transform, in_channels, tile_columns, out_channels)
    )
    most_weight_bytes = (
        BANDS_MOST_WEIGHT_BYTES
        if target.registers >= BY_TILE_MIN_REGISTERS
        else BANDS_L2_WEIGHT_BYTES
    )
    return (
        tile_rows >= BANDS_MIN_ROWS
        and weight_bytes <= most_weight_bytes
        and band_bytes <= BAND_MOST_BYTES
    )


BY_TILE_MOST_TILES_PER_CHANNEL = 2
"""A layer with at most this many output tiles per output channel computes
its products by tile on a target of :data:`BY_TILE_MIN_REGISTERS` vector
registers (:func:`products_by_tile`)."""

BY_TILE_MIN_REGISTERS = 32
"""The fewest vector registers of a target whose Winograd layers may run
their products by tile: AVX-512's.  With AVX2's 5-row tiles, ``U`` is read
once per 5 tiles; measured with ``-mattr=-avx512f`` on Zen 4, 256 channels
at 14×14 by tile took 0.73 ms against 0.83 with the weights in cache but
1.31 against 1.03 with them evicted (as in a network)."""


def products_by_tile(tiles: int, out_channels: int, target: g2k.VectorTarget) -> bool:
    """Whether the products of a layer with ``tiles`` output tiles per image
    and ``out_channels`` run *by tile* for ``target``, ``M[ξ, t, k]``: a
    micro-kernel tile is a few output tiles (rows, ``V`` broadcast) × a
    vector run of output channels (columns, ``U``'s rows read in place), and
    the output transform vectorises over the channels.  Otherwise *by
    channel*, ``M[ξ, k, t]``: the rows are output channels and the columns
    the tiles, rounded up to whole micro-kernel tiles.

    By tile wastes no columns where few tiles round up badly (14×14: 49
    tiles in 64 columns with AVX-512), but reads ``U`` once per block of
    tiles where by channel reads each ``V`` row once per block of channels.
    Measured on two Zen 4 threads (conv + bias + relu, AVX-512, median ms
    with the weights in cache / evicted), by channel → by tile: 256 channels
    at 14×14 (0.19 tiles per channel) 0.75 → 0.56 / 1.05 → 0.96, 256 at
    28×28 2.69 → 2.41 / 3.07 → 2.78, 64 at 14×14 0.075 → 0.065 / 0.21 → 0.20,
    128 at 28×28 (1.5) 0.68 → 0.62 / 0.88 → 0.81; 64 at 28×28 (3.1) 0.21 →
    0.19 / 0.33 → 0.34, even; 64 at 56×56 (12) 0.61 → 0.66 / 0.93 → 1.08.
    ResNet-18 took 13.79 ms against 14.44 (median of 736 alternated
    profiles; its three 256-channel layers 0.88 → 0.76 ms each, its three
    128-channel 3×3 layers at 28×28 0.74 → 0.67)."""
    return (
        target.registers >= BY_TILE_MIN_REGISTERS
        and tiles <= BY_TILE_MOST_TILES_PER_CHANNEL * out_channels
    )


@dataclass(frozen=True)
class _Image:
    """One image's tiles, inside the loop over images (``index``)."""

    index: SSAValue
    tile_rows: int
    tile_columns: int
    out_channels: int
    out_width: int
    by_tile: bool
    """The products are ``M[ξ, t, k]`` (:func:`products_by_tile`)."""


@dataclass(frozen=True)
class _Rows:
    """``count`` tile rows from ``first``, whose tiles keep ``kept`` of their
    m output rows (fewer only in a row cut by the output's edge)."""

    first: int
    count: int
    kept: int


def emit_conv2d_winograd(
    em: g2k._Emitter,
    conv: WinogradConv,
    transform: WinogradTransform,
    target: g2k.VectorTarget,
) -> None:
    """conv2d by Winograd (see the module docstring for the steps), one
    image at a time.  In bands (:func:`in_bands`): a ``parallel`` loop over
    tile rows, each transformed, multiplied and transformed back by one
    thread in stack buffers.  Otherwise the whole layer: its input
    transformed into the workspace, the α² products over all its tiles
    (each ``U[ξ]`` read once per image), the output transformed; the
    threads share the input transform's channels, the products' positions
    ``ξ`` and the output transform's channels (by tile: its rows of tiles)."""
    n, out_channels, oh, ow = conv.out_shape
    m = transform.m
    tile_rows, tile_columns = -(-oh // m), -(-ow // m)
    padded, scratch = _whole_windows(em, conv.source, tile_rows * m + 2, tile_columns * m + 2)
    weights = conv.weight if conv.transformed else _transformed_weight(em, conv.weight, transform)
    banded = not conv.workspace  # workspace_shapes gave none: in_bands chose bands
    by_tile = banded or products_by_tile(tile_rows * tile_columns, out_channels, target)
    full, rest = divmod(oh, m)
    row_runs = [_Rows(0, full, m)] if full else []
    if rest:
        row_runs.append(_Rows(full, 1, rest))
    with em.loop("image", n) as i_image:
        image = _Image(i_image, tile_rows, tile_columns, out_channels, ow, by_tile)
        if banded:
            for rows in row_runs:
                _bands(em, conv.emit_result, transform, target, image, rows, padded, weights)
        else:
            transformed_input, products = conv.workspace
            _input_transform(em, transform, image, padded, transformed_input)
            _product(em, target, weights, transformed_input, products, out_channels, by_tile)
            for rows in row_runs:
                _output_transform(em, conv.emit_result, transform, image, rows, products)
    if scratch:
        em.add(memref.DeallocOp.get(padded))
    if not conv.transformed:
        em.add(memref.DeallocOp.get(weights))


def _bands(
    em: g2k._Emitter,
    emit_result: Callable[[g2k._Emitter, SSAValue, Sequence[SSAValue]], None],
    transform: WinogradTransform,
    target: g2k.VectorTarget,
    image: _Image,
    rows: _Rows,
    padded: SSAValue,
    weights: SSAValue,
) -> None:
    """The tile rows of ``rows`` in bands of one row (:func:`in_bands`): per
    row, its input transform into a stack buffer ``V[ξ, c, tx]``, its
    products by tile into another, ``M[ξ, tx, k]``, and its output
    transform, all on the thread that runs the row."""
    in_channels = memref_shape(weights)[1]
    shapes = by_tile_shapes(transform, in_channels, image.tile_columns, image.out_channels)
    kind = "parallel" if rows.count > 1 else "serial"
    with em.loop("band", rows.count, kind) as i_band:
        transformed_input, products = (em.alloc(shape) for shape in shapes)
        transformed_input.name_hint = "winograd_band_input"
        products.name_hint = "winograd_band_products"
        _input_transform(em, transform, image, padded, transformed_input, (i_band, rows.first))
        _product(em, target, weights, transformed_input, products, image.out_channels, True)
        _output_transform(em, emit_result, transform, image, rows, products, i_band)
        em.add(memref.DeallocOp.get(transformed_input))
        em.add(memref.DeallocOp.get(products))


def _whole_windows(
    em: g2k._Emitter, source: SSAValue, height: int, width: int
) -> tuple[SSAValue, bool]:
    """``source``, or a zero-extended f32 copy of it when the tiles cut by
    the output's bottom or right edge read past it (their extra rows and
    columns are never stored, but must not be garbage); and whether it is
    the copy (scratch)."""
    n, channels, h, w = memref_shape(source)
    if h >= height and w >= width and source.type.element_type == f32:  # type: ignore[attr-defined]
        return source, False
    extended = em.alloc([n, channels, height, width])
    extended.name_hint = "winograd_pad"
    with (
        em.nest(["n", "c", "h", "w"], [n, channels, height, width]) as ivs,
        em.kblock("winograd_pad_fill", g2k._spatial(ivs)) as vs,
    ):
        em.store(em.const(0.0, f32), extended, vs)
    with (
        em.nest(["n", "c", "h", "w"], [n, channels, h, w]) as ivs,
        em.kblock("winograd_pad_copy", g2k._spatial(ivs)) as vs,
    ):
        em.store(em.load_widened(source, vs), extended, vs)
    return extended, True


def _product(
    em: g2k._Emitter,
    target: g2k.VectorTarget,
    weights: SSAValue,
    transformed_input: SSAValue,
    products: SSAValue,
    out_channels: int,
    by_tile: bool,
) -> None:
    """``products[ξ, k, t] = Σ_c weights[ξ, c, k] · transformed_input[ξ, c, t]``
    for the ``out_channels`` first columns ``k`` of ``weights``' rows, or
    ``products[ξ, t, k]`` by tile (:func:`products_by_tile`)."""
    positions, _, tiles = memref_shape(transformed_input)
    _, in_channels, _ = memref_shape(weights)
    # Rows broadcast from one operand, columns read as vectors from the
    # other; both indexed [ξ, c, row or column].
    rows, columns = (transformed_input, weights) if by_tile else (weights, transformed_input)

    def a_at(em: Emitter, batch: Indices, row: SSAValue, red: Indices) -> SSAValue:
        return em.load(rows, [*batch, *red, row])

    def b_at(
        em: Emitter, batch: Indices, red: Indices, first: SSAValue, lane: SSAValue
    ) -> SSAValue:
        return em.load(columns, [*batch, *red, em.add_index(first, lane)])

    product = RowProduct(
        "winograd_product",
        (positions,),
        tiles if by_tile else out_channels,
        out_channels if by_tile else tiles,
        (("c", in_channels),),
        a_at,
        b_at,
        raw_store(products),
    )
    emit_row_product(em, product, target)


def memref_shape(buffer: SSAValue) -> tuple[int, ...]:
    t = buffer.type
    assert isinstance(t, MemRefType)  # scratch buffers made here
    return tuple(t.get_shape())


def _input_transform(
    em: g2k._Emitter,
    transform: WinogradTransform,
    image: _Image,
    padded: SSAValue,
    out: SSAValue,
    band: tuple[SSAValue, int] | None = None,
) -> None:
    """``out[ξ, c, t] = (Bᵀ d B)[ξ]`` for the ``α × α`` window ``d`` of the
    image's tile ``t``; of one tile row (``band``: the band loop's variable
    and the first row of its run), ``t`` its column, the channels then
    ``serial`` (the bands are the threads' share)."""
    m, alpha = transform.m, transform.alpha
    positions, _, tiles = memref_shape(out)
    in_channels = memref_shape(padded)[1]
    used = image.tile_columns * (1 if band else image.tile_rows)
    if tiles > used:
        # Zeros in the columns past the image's tiles: their products are
        # never read, but must not be NaN or denormal garbage.
        with (
            em.nest(
                ["x", "c", "t"],
                [positions, in_channels, tiles - used],
                g2k._nest_kinds([positions, in_channels, tiles - used]),
            ) as ivs,
            em.kblock("winograd_input_zero", g2k._spatial(ivs)) as (vx, vc, vt),
        ):
            em.store(em.const(0.0, f32), out, [vx, vc, em.add_index(vt, used)])
    if band is None:
        outer = [image.index]
        names = ["c", "ty", "tx"]
        extents = [in_channels, image.tile_rows, image.tile_columns]
        kinds = ["parallel", "serial", "vectorized"]
    else:
        outer = [image.index, band[0]]
        names, extents, kinds = ["c", "tx"], [in_channels, image.tile_columns], ["serial", "vectorized"]
    with (
        em.nest(names, extents, kinds) as ivs,
        em.kblock("winograd_input", g2k._spatial([*outer, *ivs])) as vs,
    ):
        vimage, *loop_vars = vs
        if band is None:
            vc, vty, vtx = loop_vars
            tile = em.affine([(vty, image.tile_columns), (vtx, 1)])
        else:
            vband, vc, vtx = loop_vars
            vty, tile = em.add_index(vband, band[1]), vtx
        window = [
            [
                em.load(
                    padded,
                    [vimage, vc, em.affine([(vty, m)], i), em.affine([(vtx, m)], j)],
                )
                for j in range(alpha)
            ]
            for i in range(alpha)
        ]
        values = _sandwich(em, transform.bt, window)
        for x in range(alpha):
            for y in range(alpha):
                em.store(values[x][y], out, [em.index(x * alpha + y), vc, tile])


def _output_transform(
    em: g2k._Emitter,
    emit_result: Callable[[g2k._Emitter, SSAValue, Sequence[SSAValue]], None],
    transform: WinogradTransform,
    image: _Image,
    rows: _Rows,
    products: SSAValue,
    band: SSAValue | None = None,
) -> None:
    """``Y = Aᵀ M A`` per tile of ``rows`` (of the one row ``band`` of them,
    the band loop's variable, whose ``M`` holds that row's tiles), through
    the epilogue: one nest for the whole tile columns, one for a column cut
    by the output's edge."""
    m = transform.m
    full, rest = divmod(image.out_width, m)
    column_runs = [(0, full, m)] if full else []
    if rest:
        column_runs.append((full, 1, rest))
    for column_run in column_runs:
        _output_nest(em, emit_result, transform, image, rows, products, column_run, band)


def _output_nest(
    em: g2k._Emitter,
    emit_result: Callable[[g2k._Emitter, SSAValue, Sequence[SSAValue]], None],
    transform: WinogradTransform,
    image: _Image,
    rows: _Rows,
    products: SSAValue,
    column_run: tuple[int, int, int],
    band: SSAValue | None,
) -> None:
    """Tiles of ``rows`` (or of its row ``band``) × ``column_run``
    (``(first, count, kept)``: the tile columns and how many of their m
    output columns are inside the output)."""
    m, alpha = transform.m, transform.alpha
    column_start, column_count, kept_columns = column_run
    by_tile = image.by_tile
    outer, outer_names = [image.index], ["image"]
    if band is not None:
        outer, outer_names = [image.index, band], ["image", "band"]
        names, extents = ["tx", "k"], [column_count, image.out_channels]
        kinds = ["serial", "vectorized"]
    elif by_tile:
        # M[ξ, t, k]: the channels are the vector (M's rows read whole).
        names = ["ty", "tx", "k"]
        extents = [rows.count, column_count, image.out_channels]
        kinds = ["parallel" if rows.count > 1 else "serial", "serial", "vectorized"]
    else:
        names = ["k", "ty", "tx"]
        extents = [image.out_channels, rows.count, column_count]
        kinds = ["parallel", "serial", "vectorized" if column_count > 1 else "serial"]
    with (
        em.nest(names, extents, kinds) as ivs,
        em.kblock("winograd_output", g2k._spatial([*outer, *ivs])) as vs,
    ):
        named = dict(zip([*outer_names, *names], vs))
        vimage, vk, vtx = named["image"], named["k"], named["tx"]
        row = em.add_index(named["band" if band is not None else "ty"], rows.first)
        column = em.add_index(vtx, column_start)
        # A band's M holds its own row's tiles only.
        tile = column if band is not None else em.affine([(row, image.tile_columns), (column, 1)])

        def product_at(position: int) -> list[SSAValue]:
            xi = em.index(position)
            return [xi, tile, vk] if by_tile else [xi, vk, tile]

        sums = [
            [em.load(products, product_at(x * alpha + y)) for y in range(alpha)]
            for x in range(alpha)
        ]
        values = _sandwich(em, transform.at, sums)
        for i in range(rows.kept):
            for j in range(kept_columns):
                at = [vimage, vk, em.affine([(row, m)], i), em.affine([(column, m)], j)]
                emit_result(em, values[i][j], at)


def _transformed_weight(
    em: g2k._Emitter, weight: SSAValue, transform: WinogradTransform
) -> SSAValue:
    """``U`` of a weight that is not bound at build time: a scratch buffer
    computed here, at every call."""
    out_channels, in_channels, kh, kw = memref_shape(weight)
    alpha = transform.alpha
    transformed = em.alloc(WinogradPacking(transform).shape([out_channels, in_channels, kh, kw]))
    transformed.name_hint = "winograd_weight"
    with (
        em.nest(["k", "c"], [out_channels, in_channels]) as ivs,
        em.kblock("winograd_weight", g2k._spatial(ivs)) as (vk, vc),
    ):
        taps = [
            [em.load_widened(weight, [vk, vc, em.index(i), em.index(j)]) for j in range(3)]
            for i in range(3)
        ]
        values = _sandwich(em, transform.g, taps)
        for x in range(alpha):
            for y in range(alpha):
                em.store(values[x][y], transformed, [em.index(x * alpha + y), vc, vk])
    return transformed
