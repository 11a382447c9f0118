"""Register-tiled micro-kernels: what ``kernel-tensorize`` builds.

The conv2d and dense products and the tile loop the row GEMM
(:mod:`ember.lowering.gemm`) shares with them; the
:mod:`~ember.passes.kernel_tensorize` schedule pass emits them in place of
the naive contractions :mod:`ember.lowering.graph_to_kernel` lowers those
ops to.

Both products multiply a (pixels × reduction) operand by a
(channels × reduction) weight.  The weight is read in *panels*: the channel
axis split into blocks of ``lanes`` and moved innermost
(``W[o, r…] → P[o // lanes, r…, o % lanes]``, zero-padded; TVM's
``AlterOpLayout`` to OIHW16o, :class:`~ember.lowering.graph_to_kernel.
WeightPacking`).  A micro-kernel keeps a tile of ``pixels × lanes``
accumulators in a small scratch buffer, whose lane loop is ``vectorized``
with a static trip count: LLVM turns each row of the tile into vector
registers, so one reduction step is one panel load, one broadcast per pixel
and ``pixels × lanes / vector width`` FMAs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from ember.dialects.kernel import REDUCE, SPATIAL
from ember.lowering import graph_to_kernel as g2k


class Epilogue(Protocol):
    """Where a finished sum goes: ``emit_result(em, sum, index)`` stores it
    through the fused epilogue (``kernel-tensorize``'s clone of the naive
    store block)."""

    def emit_result(self, em: g2k._Emitter, value: SSAValue, indices: Sequence[SSAValue]) -> None: ...


TILE_ACCUMULATORS = 10
"""Vector accumulators of a micro-kernel tile with 16 vector registers
(AVX2): tiles of 5 (or 4) pixels × 2 vectors.  Code generated for znver3
(run on a Zen 5 with ymm registers) reaches 94-106 GFLOP/s per core on
ResNet-18's convs with 10, ~90 % of its ymm peak; with the 12 of XDSL_NOTES'
hand-written 6×16 kernel LLVM spills accumulators in the unrolled kernel
taps and falls to 45-60."""

WIDE_TILE_ACCUMULATORS = 14
"""The same with 32 vector registers (AVX-512).  Measured on znver5: 12 and
14 run at ~200-220 GFLOP/s per core on ResNet-18's 3×3 convs, 24 at
120-200; 14 lets 7-pixel tiles cover every ResNet plane (7 divides 112, 56,
28, 14 and 7) with one tile size, which is one micro-kernel to compile."""

NARROW_ROWS = 3
"""A dense product with fewer rows than this spreads its accumulators over
a wider panel, so that enough FMA chains stay independent."""

NARROW_ROW_VECTORS = 8
"""Vectors of accumulators a narrow dense product keeps per tile, spread
over its rows (8 for one row, 4 each for two).  A panel of one row must also
be long enough that LLVM does not unroll its lane loop completely (it then
vectorises the reduction loop around it with strided loads: 10 instead of
30 GFLOP/s for 1×784 · 784×128 with AVX2)."""


UNROLL_BUDGET = 80
"""Vector FMAs one step of a micro-kernel's reduction may grow to by
unrolling its innermost reduction loops fully (:func:`reduction_kinds`).
With AVX2 a 3×3 window over a tile of 4 pixels × 2 vectors (72) is
unrolled whole, over 5 × 2 (90) only along its row, a 7×7 window over
4 × 2 along its row (56); with AVX-512's 7 × 2 tiles, a 3×3 window
along its row (42).  These are the loops LLVM's O3 unrolled by its own
cost budget (AVX2); the schedule asks for them (kind ``unrolled``:
LLVM's ``llvm.loop.unroll.full``), so that the micro-kernel does not
depend on the optimisation level, nor on how LLVM costs its body."""


def reduction_kinds(extents: Sequence[int], step: int) -> list[str]:
    """The kinds of a reduction nest of ``extents`` around a micro-kernel
    step of ``step`` vector FMAs: innermost first, each loop ``unrolled``
    while the unrolled step stays within :data:`UNROLL_BUDGET`, the loops
    outside it ``serial``."""
    kinds = ["serial"] * len(extents)
    size = step
    for k in reversed(range(len(extents))):
        size *= extents[k]
        if size > UNROLL_BUDGET:
            break
        kinds[k] = "unrolled"
    return kinds


def step_fmas(rows: int, width: int, vector_lanes: int) -> int:
    """The vector FMAs of one reduction step of a ``rows × width`` tile."""
    return rows * -(-width // vector_lanes)


def product_tile(
    channels: int, rows: int, target: g2k.VectorTarget, row_bytes: int = 0
) -> tuple[int, int]:
    """``(lanes, pixels)`` of a product's micro-kernel tile over ``channels``
    output channels (units): channels per panel and most pixels (rows) per
    tile; ``rows`` (a dense product's, 0 for a conv2d's) below
    :data:`NARROW_ROWS` widen the panel.  ``row_bytes``: for a product
    whose tile reads one element of each of its rows per step (dense), the
    distance between rows (:func:`rows_within_ways`)."""
    vectors = 1 if channels <= target.vector_lanes else 2
    if 0 < rows < NARROW_ROWS:
        vectors = NARROW_ROW_VECTORS // rows
    budget = WIDE_TILE_ACCUMULATORS if target.registers >= 32 else TILE_ACCUMULATORS
    pixels = max(1, budget // vectors)
    return vectors * target.vector_lanes, rows_within_ways(pixels, row_bytes)


L1_SET_BYTES = 4096
"""Bytes after which L1 set indices repeat: 64 sets of 64-byte lines (the
L1 data caches of Zen 2-5, Skylake to Sapphire Rapids)."""

L1_ROW_WAYS = 7
"""Ways of an L1 set a tile's rows may hold: of 8 (Zen 2-4, Skylake; newer
cores have 12), one left for the weight panel's stream."""


def rows_within_ways(rows: int, row_bytes: int) -> int:
    """At most ``rows``, and few enough that rows ``row_bytes`` apart, one
    line of each live at once, take at most :data:`L1_ROW_WAYS` lines of
    any L1 set.  Rows a multiple of 4 KiB apart all fall in one set: a
    one-vector dense tile of 14 rows over a 1024-deep reduction missed L1
    on every line (64×1024 · 1024×10 on two Zen 4 threads: 16.4 µs in
    14-row tiles, 10.5 in 7-row ones; 1000 deep, 11.2 in 14-row tiles)."""
    if row_bytes <= 0:
        return rows
    sets = min(L1_SET_BYTES // 64, L1_SET_BYTES // math.gcd(row_bytes, L1_SET_BYTES))
    return min(rows, sets * L1_ROW_WAYS)


ROWS_MAX_DEPTH = 160
"""A one-group conv2d whose reduction (in channels × kernel taps) is at most
this long, over output rows at least :data:`ROWS_MIN_VECTORS` vectors wide,
keeps the vector along the output row (register-blocked row tiles,
:mod:`ember.lowering.conv_rows`): with so little work per output, storing
channel panels (a transpose, element by element) costs more than the FMAs.
A strided layer reads its input split in column phases (stride 2: even and
odd columns), so its windows are contiguous runs too.  Measured on Zen 4
(two threads, conv + bias + relu at 224×224 input, panels → rows, in ms),
AVX-512 code (``llvm``) / AVX2 code (``llvm -mattr=-avx512f``):

- ResNet-18's 3-channel 7×7 stride-2 stem (depth 147): 1.40 → 1.07 /
  1.39 → 1.13;
- 3-channel 7×7 stride 1 at 112×112 (147): 1.35 → 1.15 / 1.52 → 1.16;
- 8 channels 5×5 stride 2 (200): 1.76 → 1.59 / 2.19 → 1.74;
- 16 channels 3×3 stride 2 (144): even / 1.25 → 1.11;
- 32 channels 3×3 stride 2 (288): even / 3.78 → 4.12;
- 64 channels 3×3 stride 2 (576): 5.3 → 7.0 (AVX-512).

The bound takes the stem with a margin and stops short of 288, where the
rows stop winning.  On znver5, convbnrelu's 3→16-channel 3×3 conv: 0.46 ms
in rows, 0.58 ms in panels; on one Zen 3 core the row tiles took it from
~1.4-2.0 ms (a scratch row, ~22 GFLOP/s) to ~0.59 ms (~74 GFLOP/s)."""

ROWS_MIN_VECTORS = 4


def in_rows(depth: int, out_width: int, target: g2k.VectorTarget) -> bool:
    """Whether a one-group conv2d with this reduction depth (in channels ×
    taps) and output width keeps the vector along the output row
    (:data:`ROWS_MAX_DEPTH`) rather than in weight panels."""
    return depth <= ROWS_MAX_DEPTH and out_width >= ROWS_MIN_VECTORS * target.vector_lanes


def weight_panels(
    em: g2k._Emitter, weight: SSAValue, shape: Sequence[int], packing: g2k.WeightPacking
) -> SSAValue:
    """A scratch buffer of the panels of ``weight`` (of ``shape``), filled
    here: the channels past the end zero, then the weight."""
    first, *rest = shape
    lanes = packing.lanes
    panels = em.alloc(packing.shape([first, *rest]))
    panels.name_hint = "panels"
    used = first % lanes
    if used:
        extents = [*rest, lanes - used]
        with (
            em.nest(g2k._names("r", len(extents)), extents) as ivs,
            em.kblock("pack_zero", g2k._spatial(ivs)) as vs,
        ):
            *vr, vl = vs
            at = [em.index(first // lanes), *vr, em.add_index(vl, used)]
            em.store(em.const(0.0, f32), panels, at)
    shape = [first, *rest]
    with (
        em.nest(g2k._names("r", len(shape)), shape) as ivs,
        em.kblock("pack", g2k._spatial(ivs)) as (vo, *vr),
    ):
        value = em.load_widened(weight, [vo, *vr])
        block = em.add(arith.DivSIOp(vo, em.index(lanes)))
        lane = em.add(arith.RemSIOp(vo, em.index(lanes)))
        em.store(value, panels, [block, *vr, lane])
    return panels


def pixel_tiles(total: int, most: int) -> list[tuple[int, int, int]]:
    """``(start, count, size)`` runs of tiles covering ``total`` pixels, at
    most ``most`` per tile, one run where it can be (one micro-kernel to
    compile): tiles of ``most`` or ``most - 1`` pixels when that divides the
    total, else ``most``-pixel tiles whose last overhangs the end by at most
    :data:`OVERHANG` of the total (:func:`clamped_pixel`; ResNet-18's 7×7
    planes, 49 pixels in ten tiles of 5), else :func:`balanced_tiles`."""
    for size in (most, most - 1):
        if size >= 1 and total % size == 0:
            return [(0, total // size, size)]
    count = -(-total // most)
    if (count * most - total) * OVERHANG <= total:
        return [(0, count, most)]
    return balanced_tiles(total, most)


OVERHANG = 16
"""A run of tiles may compute up to 1/16 of its pixels twice (the last
tile's pixels past the end) to be one micro-kernel instead of two: a
micro-kernel is most of a convolution's compile time (the 512-channel 3×3
layers of ResNet-18: 0.15 s of LLVM each, 0.02 s less with one), and the
second, narrower tile ran no faster per pixel."""


def clamped_pixel(em: g2k._Emitter, pixel: SSAValue, total: int, run: tuple[int, int, int]) -> SSAValue:
    """``pixel`` of a tile of ``run`` (of :func:`pixel_tiles`), the pixels
    past the last of ``total`` read as the last: a tile that overhangs the
    end computes its last pixel again and stores the same value twice
    (each tile runs on one thread, and the epilogue reads no output)."""
    start, count, size = run
    if start + count * size <= total:
        return pixel
    return g2k._min(em, pixel, em.index(total - 1))


def balanced_tiles(total: int, most: int) -> list[tuple[int, int, int]]:
    """``(start, count, size)`` runs of tiles covering ``total`` items, at most
    ``most`` per tile, sizes differing by at most one (49 by 6 is 4×6 + 5×5,
    not 8×6 + 1: a 1-pixel tile would run at a fraction of the speed)."""
    count = -(-total // most)
    size, bigger = divmod(total, count)
    runs = [(0, bigger, size + 1)] if bigger else []
    if count > bigger:
        runs.append((bigger * (size + 1), count - bigger, size))
    return runs


Source = Callable[[g2k._Emitter, SSAValue, Sequence[SSAValue]], SSAValue]
"""``(emitter, pixel, reduction variables) → operand scalar (f32)``."""
ResultAt = Callable[[g2k._Emitter, SSAValue, SSAValue], list[SSAValue]]
"""``(emitter, channel, pixel) → index of the result element``."""


@dataclass(frozen=True)
class Product:
    """``out[pixel, channel] = sum_r source(pixel, r) * W[channel, r]``, with
    ``W`` read from ``panels``; what conv2d and dense have in common."""

    name: str
    pixels: int
    channels: int
    reduction: tuple[tuple[str, int], ...]
    """Names and extents of the reduction loops (outermost first)."""
    panels: SSAValue
    lanes: int
    tile: int
    """Most pixels per micro-kernel tile."""
    source: Source
    result_at: ResultAt
    vector_lanes: int
    """The target's vector width in elements."""
    source_bytes: int
    """Bytes of the buffer ``source`` reads (the input, or its padded copy):
    with the weight's, what decides the order of the tiles
    (:func:`tiles_outermost`)."""


def tiles_outermost(product: Product) -> bool:
    """Whether ``product``'s threads split its pixel tiles, each tile taking
    every panel, rather than its panels: when its source outweighs its
    weight.

    Panel-major, each of two threads reads half the weight and all of the
    source, half of which the other core wrote (the layer before split its
    channels); tile-major, all the weight (read-only: each core keeps its
    copy) and its own rows of the source.  ResNet-18's 3×3 stride-2
    convolution 64 → 128 channels (830 KB of padded input, 295 KB of
    weight), builds profiled in turn in one process (AMD EPYC znver4, 2
    vCPUs; medians of ~500 profiles near and ~80 distant): 0.570 → 0.546 ms
    with the vCPUs on one core complex, 1.040 → 0.801 ms on two; its 1×1
    downsample (800 KB, 32 KB) 0.086 → 0.081 and 0.173 → 0.155.  The 1×1
    downsample 256 → 512 (200 KB, 524 KB) was slower tile-major (0.074 →
    0.078, 0.102 → 0.127)."""
    weight_bytes = product.channels * math.prod(n for _, n in product.reduction) * 4  # f32 panels
    return product.source_bytes > weight_bytes


def emit_product(em: g2k._Emitter, low: Epilogue, product: Product) -> None:
    """One micro-kernel nest per run of same-size tiles and per full/partial
    panel run (the last panel stores only its real channels); a product
    whose panels are too long to stay in cache between its tiles runs in
    reduction chunks (:func:`reduction_chunk`)."""
    full, rest = divmod(product.channels, product.lanes)
    panel_runs = [(0, full, product.lanes)] if full else []
    if rest:
        panel_runs.append((full, 1, rest))
    chunk = reduction_chunk(product)
    for panel_start, panel_count, stored in panel_runs:
        if chunk is not None:
            emit_chunked_panels(em, low, product, (panel_start, panel_count, stored), chunk)
            continue
        for tile_start, tile_count, tile in pixel_tiles(product.pixels, product.tile):
            nest = TileNest(
                panel_start, panel_count, stored, tile_start, tile_count, tile
            )
            emit_tile_nest(em, low, product, nest)


@dataclass(frozen=True)
class TileNest:
    """``panel_count`` panels from ``panel_start`` (storing ``stored_lanes``
    channels each) × ``tile_count`` tiles of ``tile`` pixels from
    ``tile_start``: the iteration space of one micro-kernel nest."""

    panel_start: int
    panel_count: int
    stored_lanes: int
    tile_start: int
    tile_count: int
    tile: int


def emit_tile_nest(
    em: g2k._Emitter, low: Epilogue, product: Product, nest: TileNest
) -> None:
    """One ``parallel`` loop over (panel, tile) pairs, so that every thread
    gets a run of tiles of the same panel whatever the thread count
    (panel-major), or a run of tiles each with every panel (tile-major,
    :func:`tiles_outermost`); each tile zeroes its accumulators, runs the
    reduction, and stores through the epilogue."""
    lanes, tile, tiles = product.lanes, nest.tile, nest.tile_count
    name = product.name
    count = nest.panel_count * tiles
    kind = "parallel" if count > 1 and worth_threads(product) else "serial"
    run = (nest.tile_start, tiles, tile)

    def at_pixel(first: SSAValue, p: int) -> SSAValue:
        return clamped_pixel(em, em.add_index(first, p), product.pixels, run)

    tile_major = tiles_outermost(product)

    def panel_and_first_pixel(vpt: SSAValue) -> tuple[SSAValue, SSAValue]:
        if tile_major:
            vt, vob = g2k._unflatten(em, vpt, [tiles, nest.panel_count])
        else:
            vob, vt = g2k._unflatten(em, vpt, [nest.panel_count, tiles])
        return (
            em.add_index(vob, nest.panel_start),
            em.affine([(vt, tile)], nest.tile_start),
        )

    def operands(
        vpt: SSAValue, vred: list[SSAValue], vl: SSAValue
    ) -> tuple[Callable[[int], SSAValue], SSAValue]:
        panel, first = panel_and_first_pixel(vpt)
        weight = em.load(product.panels, [panel, *vred, vl])

        def pixel(p: int) -> SSAValue:
            return product.source(em, at_pixel(first, p), vred)

        return pixel, weight

    def store(vpt: SSAValue, vl: SSAValue) -> Callable[[int, SSAValue], None]:
        panel, first = panel_and_first_pixel(vpt)
        channel = em.affine([(panel, lanes), (vl, 1)])

        def put(p: int, value: SSAValue) -> None:
            at = product.result_at(em, channel, at_pixel(first, p))
            low.emit_result(em, value, at)

        return put

    emit_register_tiles(
        em,
        name,
        ("pt", count, kind),
        (tile, lanes, nest.stored_lanes),
        product.reduction,
        operands,
        store,
        product.vector_lanes,
    )


CHUNKED_PANEL_BYTES = 64 << 10
"""A product whose weight panel is longer than this (its reduction × lanes
in f32) runs in reduction chunks (:func:`reduction_chunk`).  Tile after
tile reads the whole panel; one this long is gone from L1 and L2 before
the next tile comes back to it, and in a network whose weights outgrow the
L3 (ResNet-18's 46 MB) the first tile pulls it from memory at the FMAs'
pace, stalling.  Measured on one Zen 3 core, ResNet-18's 512-channel 7×7
3×3 conv (295 KB panels): 2.45 ms with its weights in cache, 2.81 ms after
touching 64 MB, as in the network."""

CHUNK_BYTES = 64 << 10
"""A reduction chunk's slice of a panel with vectors of 8 lanes or fewer
(AVX2): at most 64 KB, which stays in any x86 core's L2 (256 KB and up)
between the chunk's tiles.  Each chunk of each tile costs a fixed ~30 ns
(its partial sums loaded and stored, its loops entered): ~13 % of a
chunk of 16 input channels with 5 × 2-vector tiles.  Measured with
``-mattr=-avx512f`` on Zen 4 (AVX2 code, not an AVX2 CPU; two threads):
ResNet-18's 512-channel 3×3 conv at 7×7, in chunks of 16 / 64 input
channels (9 / 36 KB of panel) / none, 1.33 / 1.22 / 1.18 ms with its
weights in cache, 1.55 / 1.42 / 1.35 ms with them evicted; the
whole network 16.34 / 15.62 / 15.62 ms (builds alternated in one process).
On one Zen 3 core, 16 KB chunks against none had taken those layers from
2.91–3.00 to 2.81–2.83 ms (an L2 of 512 KB, which a 295 KB panel and the
input outgrow together): 64 KB slices still stay in L2 there."""

WIDE_CHUNK_BYTES = 8 << 10
"""The same with 16-lane vectors (AVX-512), whose panels have rows twice as
long.  The first tile of a chunk pulls its slice from memory, the other
tiles none; shorter chunks spread those reads over more of the FMAs.
Measured on Zen 4 with two threads: ResNet-18's 512-channel 3×3 conv at
7×7 (590 KB panels), each run after reading 96 MB (the weights evicted, as
in the network), in chunks of 8 / 4 / 2 input channels (9, 4.5, 2.3 KB of
panel) / none: 1.32 / 1.19 / 1.15 / 1.21 ms; the whole network (builds
alternated in one process) 14.19 → 13.68 ms from 16 KB to 8 KB, 13.72 at
4 KB, 14.04 unchunked.  mlp_b64's dense (784-deep panels of 32 lanes, its
weights in L3) is even: 0.472 → 0.477 ms (4 KB: 0.489).  zmm FMAs take
two cycles on Zen 4, so a chunk's fixed cost weighs half as much there as
with AVX2 code (:data:`CHUNK_BYTES`)."""


def chunk_bytes(vector_lanes: int) -> int:
    """:data:`CHUNK_BYTES` or, for 16-lane vectors and wider,
    :data:`WIDE_CHUNK_BYTES`."""
    return WIDE_CHUNK_BYTES if vector_lanes >= 16 else CHUNK_BYTES


CHUNKED_MIN_PANELS = 8
"""Fewest panels a product runs in reduction chunks: its threads share the
panels (each has its partial sums), so fewer would leave cores idle."""


def reduction_chunk(product: Product) -> int | None:
    """The chunk of the product's outermost reduction loop (a divisor of its
    extent) whose panel slice is at most :func:`chunk_bytes`, or None: its
    panel is short enough (:data:`CHUNKED_PANEL_BYTES`), one tile covers
    every pixel (nothing reads a panel twice), it has fewer panels than
    :data:`CHUNKED_MIN_PANELS`, or the whole loop fits a chunk."""
    (_, outer), *rest = product.reduction
    row_bytes = math.prod(extent for _, extent in rest) * product.lanes * 4
    if (
        outer * row_bytes <= CHUNKED_PANEL_BYTES
        or product.pixels <= product.tile
        or -(-product.channels // product.lanes) < CHUNKED_MIN_PANELS
    ):
        return None
    most = max(1, chunk_bytes(product.vector_lanes) // row_bytes)
    chunk = max(d for d in range(1, min(most, outer) + 1) if outer % d == 0)
    return None if chunk == outer else chunk


def emit_chunked_panels(
    em: g2k._Emitter,
    low: Epilogue,
    product: Product,
    panels: tuple[int, int, int],
    chunk: int,
) -> None:
    """``panels`` (``(start, count, stored lanes)``) of ``product`` with its
    reduction in chunks of ``chunk`` steps of the outermost reduction loop:
    a ``parallel`` loop over panels, each summing into a scratch row of
    partial sums per pixel; per chunk every tile loads its partial sums
    into its accumulators, adds the chunk's products and stores them back,
    so the chunk's slice of the panel, read from memory by the first tile,
    stays in L1 for the others (TVM's ``split`` of the reduction with
    ``reorder`` and ``cache_write``).  The epilogue stores the sums once,
    after the last chunk."""
    panel_start, panel_count, stored = panels
    lanes, pixels, name = product.lanes, product.pixels, product.name
    (outer_name, outer), *_ = product.reduction
    kind = "parallel" if panel_count > 1 and worth_threads(product) else "serial"
    with em.loop("p", panel_count, kind) as ip:
        partial = em.alloc([pixels, lanes])
        partial.name_hint = "partial"
        with (
            em.loop("q", pixels) as iq,
            em.loop("l", lanes, "vectorized") as il,
            em.kblock(f"{name}_init", g2k._spatial([ip, iq, il])) as (_, vq, vl),
        ):
            em.store(em.const(0.0, f32), partial, [vq, vl])
        with em.loop(f"{outer_name}o", outer // chunk) as io:
            for run in pixel_tiles(pixels, product.tile):
                with em.loop("t", run[1]) as it:
                    _emit_chunk_tile(em, product, partial, (ip, io, it), (panel_start, run), chunk)
        with (
            em.loop("q", pixels) as iq,
            em.loop("l", stored, "vectorized") as il,
            em.kblock(f"{name}_store", g2k._spatial([ip, iq, il])) as (vp, vq, vl),
        ):
            channel = em.affine([(vp, lanes), (vl, 1)], panel_start * lanes)
            low.emit_result(em, em.load(partial, [vq, vl]), product.result_at(em, channel, vq))
        em.add(memref.DeallocOp.get(partial))


def _emit_chunk_tile(
    em: g2k._Emitter,
    product: Product,
    partial: SSAValue,
    loops: tuple[SSAValue, SSAValue, SSAValue],
    where: tuple[int, tuple[int, int, int]],
    chunk: int,
) -> None:
    """One tile's share of one chunk (see :func:`emit_chunked_panels`):
    ``loops`` are the panel, chunk and tile loops' variables, ``where`` the
    first panel and the tile run (of :func:`pixel_tiles`)."""
    ip, io, it = loops
    panel_start, run = where
    tile_start, _, tile = run
    lanes, name = product.lanes, product.name
    (outer_name, _), *rest = product.reduction
    carried = [(ip, SPATIAL), (io, REDUCE), (it, SPATIAL)]
    acc = em.alloc([tile, lanes])
    acc.name_hint = "acc"

    def first_pixel(vt: SSAValue) -> SSAValue:
        return em.affine([(vt, tile)], tile_start)

    def at_pixel(first: SSAValue, r: int) -> SSAValue:
        return clamped_pixel(em, em.add_index(first, r), product.pixels, run)

    with (
        em.loop("l", lanes, "vectorized") as il,
        em.kblock(f"{name}_load", [*carried, (il, SPATIAL)]) as (_, _, vt, vl),
    ):
        first = first_pixel(vt)
        for r in range(tile):
            value = em.load(partial, [at_pixel(first, r), vl])
            em.store(value, acc, [em.index(r), vl])
    names = [f"{outer_name}i", *(n for n, _ in rest)]
    extents = [chunk, *(e for _, e in rest)]
    with (
        em.nest(
            names, extents, reduction_kinds(extents, step_fmas(tile, lanes, product.vector_lanes))
        ) as red,
        em.loop("l", lanes, "vectorized") as il,
    ):
        bindings = [*carried, *((iv, REDUCE) for iv in red), (il, SPATIAL)]
        with em.kblock(name, bindings) as (vp, vo, vt, vi, *vrest, vl):
            vred = [em.affine([(vo, chunk), (vi, 1)]), *vrest]
            panel = em.add_index(vp, panel_start)
            b = em.load(product.panels, [panel, *vred, vl])
            first = first_pixel(vt)
            _accumulate(
                em, acc, tile, lambda r: product.source(em, at_pixel(first, r), vred), b, vl
            )
    with (
        em.loop("l", lanes, "vectorized") as il,
        em.kblock(f"{name}_save", [*carried, (il, SPATIAL)]) as (_, _, vt, vl),
    ):
        first = first_pixel(vt)
        for r in range(tile):
            em.store(em.load(acc, [em.index(r), vl]), partial, [at_pixel(first, r), vl])
    em.add(memref.DeallocOp.get(acc))


def _accumulate(
    em: g2k._Emitter,
    acc: SSAValue,
    rows: int,
    row_operand: Callable[[int], SSAValue],
    b: SSAValue,
    vl: SSAValue,
) -> None:
    """One reduction step of a register tile: ``acc[r, l] += a(r) × b`` for
    each of its ``rows`` (``vl`` the lane)."""
    for r in range(rows):
        a = row_operand(r)
        slot = [em.index(r), vl]
        total = em.add(arith.AddfOp(em.load(acc, slot), em.add(arith.MulfOp(a, b))))
        em.store(total, acc, slot)


def emit_register_tiles(
    em: g2k._Emitter,
    name: str,
    loop: tuple[str, int, str],
    tile: tuple[int, int, int],
    reduction: Sequence[tuple[str, int]],
    operands: Callable[
        [SSAValue, list[SSAValue], SSAValue], tuple[Callable[[int], SSAValue], SSAValue]
    ],
    store: Callable[[SSAValue, SSAValue], Callable[[int, SSAValue], None]],
    vector_lanes: int,
) -> None:
    """The register-tile micro-kernel that conv2d/dense products and the row
    GEMM (:mod:`ember.lowering.gemm`) share: a loop ``(name, count, kind)``
    over tiles, each accumulating ``rows × width`` sums in a scratch tile,
    ``acc[r, l] += a(r) × b(l)`` over the ``reduction`` loops, then storing
    ``stored`` of its ``width`` lanes.

    ``operands(tile, reduction ivs, lane)`` gives (``r ↦ a(r)``, ``b``) inside
    the reduction block; ``store(tile, lane)`` gives ``(r, sum) ↦ None``
    inside the store block; ``vector_lanes``, the target's, sizes what
    of the reduction is unrolled (:func:`reduction_kinds`)."""
    loop_name, count, kind = loop
    rows, width, stored = tile
    with em.loop(loop_name, count, kind) as it:
        acc = em.alloc([rows, width])
        acc.name_hint = "acc"
        with (
            em.loop("l", width, "vectorized") as l,
            em.kblock(f"{name}_init", g2k._spatial([it, l])) as (_, vl),
        ):
            for r in range(rows):
                em.store(em.const(0.0, f32), acc, [em.index(r), vl])
        names = [n for n, _ in reduction]
        extents = [e for _, e in reduction]
        with (
            em.nest(
                names, extents, reduction_kinds(extents, step_fmas(rows, width, vector_lanes))
            ) as red,
            em.loop("l", width, "vectorized") as l,
        ):
            bindings = [(it, SPATIAL)] + [(iv, REDUCE) for iv in red] + [(l, SPATIAL)]
            with em.kblock(name, bindings) as (vt, *vred, vl):
                row_operand, b = operands(vt, vred, vl)
                _accumulate(em, acc, rows, row_operand, b, vl)
        with (
            em.loop("l", stored, "vectorized") as l,
            em.kblock(f"{name}_store", g2k._spatial([it, l])) as (vt, vl),
        ):
            put = store(vt, vl)
            for r in range(rows):
                put(r, em.load(acc, [em.index(r), vl]))
        em.add(memref.DeallocOp.get(acc))


PARALLEL_MIN_FLOPS = 1 << 20
"""Products smaller than this run on one thread: ~5 µs of one core's work,
about what forking and joining a thread team costs on a busy machine
(XDSL_NOTES: ~2 µs per region when threads spin, ~8 µs when they sleep)."""


def worth_threads(product: Product) -> bool:
    """Whether ``product`` runs enough FLOPs for a thread team: those of its
    whole panels, the lanes past its channels included (they run as the
    others do: 64×784 · 784×10 in one 16-lane panel took 13.6 µs on one
    Zen 4 thread, 9 µs on two)."""
    depth = math.prod(extent for _, extent in product.reduction)
    lanes = -(-product.channels // product.lanes) * product.lanes
    return 2 * product.pixels * lanes * depth >= PARALLEL_MIN_FLOPS
