"""``kernel-tensorize``: naive dense/matmul contractions become micro-kernels.

* Soundness: random small dense and matmul programs (batch axes that
  broadcast, rows across ``PACK_MIN_ROWS``, columns off the tile width,
  fused epilogues, f16, B bound or passed in), lowered to their naive
  kernels, compute the same results bit for bit in the kernel interpreter
  after the pass: every sum adds the same products in the same order.
  Parallel and vectorized loops run last iteration first
  (tests/test_schedule.py), so a wrongly marked loop shows.
* The pass recognises the naive nest before it changes it: a nest that
  differs from the op it is named after is left alone.
* ``schedule=""`` builds the naive kernels, and they compute the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import memref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.compiler import CompileOptions, to_graph, to_kernel
from ember.dialects.graph import CallKernelOp, ConstantOp
from ember.dialects.kernel import BlockOp, ForOp, kernel_functions
from ember.errors import PassError
from ember.lowering import microkernels as mk
from ember.lowering.gemm import PACK_MIN_ROWS
from ember.passes.bind_params import bind_params_in_place
from ember.passes.kernel_tensorize import match_contraction
from ember.passes.pipeline import apply_passes
from tests.test_schedule import _reversed_independent_loops

SOUNDNESS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _t(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def _program(
    op: str,
    a: tuple[int, ...],
    b: tuple[int, ...],
    out: tuple[int, ...],
    dtype: str,
    epilogue: str,
    attrs: str = "",
) -> str:
    ta, tb, to = _t(a, dtype), _t(b, dtype), _t(out, dtype)
    lines = [f"  %0 = graph.{op} %a, %b {attrs} : ({ta}, {tb}) -> {to}"]
    last = "%0"
    axis = 1 if op.startswith("conv2d") else -1
    if epilogue == "bias_relu":
        tc = _t((out[axis],), dtype)
        lines += [
            f"  %1 = graph.bias_add %0, %c {{axis = {axis}}} : ({to}, {tc}) -> {to}",
            f"  %2 = graph.relu %1 : {to}",
        ]
        last = "%2"
        params = f", %c: {tc}"
    elif epilogue == "reads_b":
        # The epilogue reads B too: it cannot change layout.
        lines += [f"  %1 = graph.add %0, %b : ({to}, {tb}) -> {to}"]
        last = "%1"
        params = ""
    else:
        params = ""
    body = "\n".join(lines)
    return f"""
func.func @main(%a: {ta}, %b: {tb}{params}) -> {to} {{
{body}
  func.return {last} : {to}
}}"""


@st.composite
def convolutions(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(program, bound params, inputs) of a small conv2d: strides, padding,
    dilation, groups (depthwise too); wide rows of a short reduction (row
    tiles) too."""
    dtype = draw(st.sampled_from(["f32", "f32", "f16"]))
    kind = draw(st.sampled_from(["one", "one", "grouped", "depthwise"]))
    groups = {"one": 1, "grouped": draw(st.integers(2, 3)), "depthwise": draw(st.integers(1, 4))}[kind]
    in_channels = groups * (1 if kind == "depthwise" else draw(st.integers(1, 2)))
    out_channels = groups * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pad = draw(st.lists(st.integers(0, 1), min_size=4, max_size=4))
    h = draw(st.integers((kh - 1) * dh + 1, 6))
    w = draw(st.integers((kw - 1) * dw + 1, 12))
    oh = (h + pad[0] + pad[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pad[1] + pad[3] - (kw - 1) * dw - 1) // sw + 1
    x, wt, out = (1, in_channels, h, w), (out_channels, in_channels // groups, kh, kw), (1, out_channels, oh, ow)
    attrs = (
        f"{{strides = [{sh}, {sw}], dilation = [{dh}, {dw}], padding = {pad}, groups = {groups}}}"
    )
    epilogue = draw(st.sampled_from(["none", "bias_relu"]))
    np_type = np.float16 if dtype == "f16" else np.float32
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = {"a": rng.standard_normal(x), "b": rng.standard_normal(wt), "c": rng.standard_normal(out_channels)}
    values = {k: v.astype(np_type) for k, v in values.items()}
    if epilogue != "bias_relu":
        del values["c"]
    params = {"b": values.pop("b")} if draw(st.booleans()) else {}
    return _program("conv2d", x, wt, out, dtype, epilogue, attrs), params, values


@st.composite
def transposed_convolutions(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(program, bound params, inputs) of a small conv2d_transpose:
    strides, dilation, padding (past the taps too: the input cropped),
    output padding, groups."""
    dtype = draw(st.sampled_from(["f32", "f32", "f16"]))
    groups = draw(st.sampled_from([1, 1, 2]))
    in_channels = groups * draw(st.integers(1, 2))
    out_per_group = draw(st.integers(1, 2))
    h, w = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    extra = [draw(st.integers(0, max(s, d) - 1)) for s, d in ((sh, dh), (sw, dw))]
    full = [(h - 1) * sh + (kh - 1) * dh + 1 + extra[0], (w - 1) * sw + (kw - 1) * dw + 1 + extra[1]]
    pad = [draw(st.integers(0, min(2, (f - 1) // 2))) for f in (full[0], full[1], full[0], full[1])]
    out = (1, groups * out_per_group, full[0] - pad[0] - pad[2], full[1] - pad[1] - pad[3])
    x, wt = (1, in_channels, h, w), (in_channels, out_per_group, kh, kw)
    attrs = (
        f"{{strides = [{sh}, {sw}], dilation = [{dh}, {dw}], padding = {pad}, "
        f"output_padding = {extra}, groups = {groups}}}"
    )
    epilogue = draw(st.sampled_from(["none", "bias_relu"]))
    np_type = np.float16 if dtype == "f16" else np.float32
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = {"a": rng.standard_normal(x), "b": rng.standard_normal(wt), "c": rng.standard_normal(out[1])}
    values = {k: v.astype(np_type) for k, v in values.items()}
    if epilogue != "bias_relu":
        del values["c"]
    params = {"b": values.pop("b")} if draw(st.booleans()) else {}
    return _program("conv2d_transpose", x, wt, out, dtype, epilogue, attrs), params, values


@st.composite
def contractions(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(program, bound params, inputs)."""
    op = draw(st.sampled_from(["dense", "matmul"]))
    dtype = draw(st.sampled_from(["f32", "f32", "f16"]))
    rows = draw(st.one_of(st.integers(1, 7), st.just(PACK_MIN_ROWS)))
    depth = draw(st.integers(1, 5))
    columns = draw(st.integers(1, 11))
    if op == "dense":
        a, b, out = (rows, depth), (columns, depth), (rows, columns)
        epilogues = ["none", "bias_relu"]
    else:
        batch_a = draw(st.sampled_from([(), (2,), (2, 1)]))
        batch_b = draw(st.sampled_from([(), (2,), (1,)]))
        if rows == PACK_MIN_ROWS:
            batch_a = batch_b = ()  # the interpreter is slow
        batch = tuple(np.broadcast_shapes(batch_a, batch_b))
        a, b, out = (*batch_a, rows, depth), (*batch_b, depth, columns), (*batch, rows, columns)
        epilogues = ["none", "bias_relu"] + (["reads_b"] if b == out else [])
    epilogue = draw(st.sampled_from(epilogues))
    np_type = np.float16 if dtype == "f16" else np.float32
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = {"a": rng.standard_normal(a), "b": rng.standard_normal(b), "c": rng.standard_normal(out[-1])}
    values = {k: v.astype(np_type) for k, v in values.items()}
    if epilogue != "bias_relu":
        del values["c"]
    bound = draw(st.sampled_from([(), ("b",)]))
    params = {k: values.pop(k) for k in bound}
    return _program(op, a, b, out, dtype, epilogue), params, values


def assert_same_bits(naive, scheduled, inputs: dict[str, np.ndarray]) -> None:
    """``scheduled`` (its independent loops run backwards) computes what
    ``naive`` does, bit for bit, on ``inputs`` (``a``, ``b``, ``c``, those given)."""
    args = [inputs[name] for name in ("a", "b", "c") if name in inputs]
    expected = ember.interpret(naive, "main", *args)
    got = ember.interpret(_reversed_independent_loops(scheduled), "main", *args)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


def _naive(text: str, params: dict[str, np.ndarray], bits: int):
    module = ember.parse(text)
    bind_params_in_place(module, params, "main")
    return apply_passes(module, f"fuse-ops,lower-graph-to-kernel{{vector-bits={bits}}}")


@SOUNDNESS
@given(
    st.one_of(contractions(), convolutions(), transposed_convolutions()),
    st.sampled_from([64, 128, 256, 512]),
)
def test_kernel_tensorize_is_sound(case, bits) -> None:
    text, params, inputs = case
    naive = _naive(text, params, bits)
    schedule = f"kernel-pad-input,kernel-tensorize{{vector-bits={bits}}},kernel-vectorize,kernel-parallelize"
    tiled = apply_passes(naive, schedule)
    ember.verify_module(tiled)
    [kernel] = [k for k in kernel_functions(tiled) if k.sym_name.data != "add"]
    assert match_contraction(kernel) is None  # rewritten
    assert any(isinstance(op, ForOp) and op.kind.data == "vectorized" for op in kernel.walk())
    assert_same_bits(naive, tiled, inputs)


@st.composite
def strided_row_convolutions(
    draw: st.DrawFn,
) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(program, bound params, inputs) of a one-group conv2d (one or two
    images) with column stride 2 or 3 over rows wide enough for row tiles
    at 64-bit vectors (8+ output columns): read through its input's
    column phases."""
    dtype = draw(st.sampled_from(["f32", "f16"]))
    in_channels, out_channels = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(2, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pad = draw(st.lists(st.integers(0, 2), min_size=4, max_size=4))
    ow = draw(st.integers(8, 11))
    h = draw(st.integers(max(1, (kh - 1) * dh + 1 - pad[0] - pad[2]), 4))
    w = (ow - 1) * sw + (kw - 1) * dw + 1 - pad[1] - pad[3] + draw(st.integers(0, sw - 1))
    oh = (h + pad[0] + pad[2] - (kh - 1) * dh - 1) // sh + 1
    n = draw(st.integers(1, 2))
    x, wt = (n, in_channels, h, w), (out_channels, in_channels, kh, kw)
    attrs = f"{{strides = [{sh}, {sw}], dilation = [{dh}, {dw}], padding = {pad}}}"
    return _conv_bias_relu(draw, dtype, x, wt, (n, out_channels, oh, ow), attrs)


def _conv_bias_relu(
    draw: st.DrawFn,
    dtype: str,
    x: tuple[int, ...],
    wt: tuple[int, ...],
    out: tuple[int, ...],
    attrs: str,
) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(program, bound params, inputs) of conv2d + bias + relu of these
    shapes and attributes, random values, the weight bound or not."""
    np_type = np.float16 if dtype == "f16" else np.float32
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = {
        "a": rng.standard_normal(x).astype(np_type),
        "b": rng.standard_normal(wt).astype(np_type),
        "c": rng.standard_normal(out[1]).astype(np_type),
    }
    params = {"b": values.pop("b")} if draw(st.booleans()) else {}
    return _program("conv2d", x, wt, out, dtype, "bias_relu", attrs), params, values


@settings(SOUNDNESS, max_examples=12)
@given(strided_row_convolutions())
def test_a_strided_row_tile_conv_reads_column_phases(case) -> None:
    """Row tiles of a stride-2 or -3 conv2d (ResNet's 7×7 stride-2 stem
    takes them) read the input split in column phases and compute the
    naive kernel's sums, bit for bit: the same products in the same order."""
    text, params, inputs = case
    naive = _naive(text, params, 64)
    tiled = apply_passes(
        naive, "kernel-pad-input,kernel-tensorize{vector-bits=64},kernel-vectorize,kernel-parallelize"
    )
    ember.verify_module(tiled)
    blocks = {op.block_name.data for op in tiled.walk() if isinstance(op, BlockOp)}
    assert "column_phases" in blocks
    assert_same_bits(naive, tiled, inputs)


@st.composite
def deep_convolutions(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(program, bound params, inputs) of a one-group conv2d with a few input
    channels (so that its reduction splits) and more output pixels than a
    tile holds."""
    dtype = draw(st.sampled_from(["f32", "f16"]))
    in_channels, out_channels = draw(st.integers(2, 3)), draw(st.integers(1, 5))
    kh, kw, s = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    h, w = draw(st.integers(4, 5)) * s, draw(st.integers(5, 6)) * s  # 20+ pixels: 2+ tiles
    oh, ow = (h + 2 - kh) // s + 1, (w + 2 - kw) // s + 1
    attrs = f"{{strides = [{s}, {s}], padding = [1, 1, 1, 1]}}"
    x, wt = (1, in_channels, h, w), (out_channels, in_channels, kh, kw)
    return _conv_bias_relu(draw, dtype, x, wt, (1, out_channels, oh, ow), attrs)


@settings(SOUNDNESS, max_examples=8)
@given(deep_convolutions(), st.sampled_from([128, 256, 512]))
def test_a_reduction_in_chunks_is_sound(case, bits) -> None:
    """Every panel "too long for the cache" (the thresholds lowered, so
    small convolutions take the path ResNet's deep layers take): the
    reduction runs in chunks through a row of partial sums per pixel, in
    the naive order, so the sums are the same bits."""
    text, params, inputs = case
    naive = _naive(text, params, bits)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mk, "CHUNKED_PANEL_BYTES", 0)
        patch.setattr(mk, "CHUNK_BYTES", 1)
        patch.setattr(mk, "WIDE_CHUNK_BYTES", 1)
        patch.setattr(mk, "CHUNKED_MIN_PANELS", 1)
        tiled = apply_passes(naive, f"kernel-pad-input,kernel-tensorize{{vector-bits={bits}}}")
    ember.verify_module(tiled)
    loops = {op.induction_var.name_hint for op in tiled.walk() if isinstance(op, ForOp)}
    blocks = {op.block_name.data for op in tiled.walk() if isinstance(op, BlockOp)}
    assert "conv2d_save" in blocks and "ico" in loops  # chunked
    assert_same_bits(naive, tiled, inputs)


@pytest.mark.parametrize("chunked", [False, True])
def test_a_tile_overhanging_the_plane_computes_its_last_pixel_again(chunked) -> None:
    """A 7×7 output (49 pixels) in ten 5-pixel tiles, one micro-kernel: the
    last tile's fifth pixel is the 49th again (clamped), stored twice with
    the same value, in the panels (and the chunked path's partial sums)."""
    x, wt, out = (1, 2, 7, 7), (16, 2, 3, 3), (1, 16, 7, 7)
    attrs = "{strides = [1, 1], padding = [1, 1, 1, 1]}"
    text = _program("conv2d", x, wt, out, "f32", "bias_relu", attrs)
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(shape).astype(np.float32) for shape in (x, wt, (16,)))
    with pytest.MonkeyPatch.context() as patch:
        if chunked:
            patch.setattr(mk, "CHUNKED_PANEL_BYTES", 0)
            patch.setattr(mk, "CHUNK_BYTES", 1)
            patch.setattr(mk, "WIDE_CHUNK_BYTES", 1)
            patch.setattr(mk, "CHUNKED_MIN_PANELS", 1)
        # 128-bit vectors: panels of two 4-lane vectors, tiles of 5 pixels.
        tiled = apply_passes(
            _naive(text, {"b": b}, 128), "kernel-pad-input,kernel-tensorize{vector-bits=128}"
        )
        lib = ember.build(text, target="llvm", params={"b": b}, cache=False)
    blocks = [op.block_name.data for op in tiled.walk() if isinstance(op, BlockOp)]
    assert blocks.count("conv2d") == 1  # one micro-kernel, not a 5- and a 4-pixel one
    assert ("conv2d_save" in blocks) == chunked
    padded = np.pad(a[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
    expected = np.einsum("cyxij,ocij->oyx", windows, b.astype(np.float64))
    expected = np.maximum(expected + c[:, None, None], 0)[None]
    np.testing.assert_allclose(lib["main"](a, c), expected, rtol=1e-5, atol=1e-5)


def test_deep_layers_run_their_reduction_in_chunks() -> None:
    """ResNet-18's 512-channel 3×3 layer at 7×7 (295 KB panels with AVX2):
    chunks of 64 input channels (36 KB of panel), parallel over the 32
    panels."""
    product = mk.Product(
        "conv2d", 49, 512, (("ic", 512), ("kh", 3), ("kw", 3)), None, 16, 5, None, None, 8, 0  # type: ignore[arg-type]
    )
    assert mk.reduction_chunk(product) == 64
    shallow = mk.Product("conv2d", 49, 512, (("ic", 64), ("kh", 3), ("kw", 3)), None, 16, 5, None, None, 8, 0)  # type: ignore[arg-type]
    assert mk.reduction_chunk(shallow) is None  # 37 KB panels stay in L2
    one_tile = mk.Product("dense", 1, 1000, (("k", 4096),), None, 16, 5, None, None, 8, 0)  # type: ignore[arg-type]
    assert mk.reduction_chunk(one_tile) is None  # each panel is read once
    few = mk.Product("conv2d", 3136, 32, (("ic", 512), ("kh", 3), ("kw", 3)), None, 16, 5, None, None, 8, 0)  # type: ignore[arg-type]
    assert mk.reduction_chunk(few) is None  # 2 panels: the threads share (panel, tile) pairs
    # AVX-512: 590 KB panels of 32 lanes, chunks of 4 input channels
    # (4.5 KB of panel, WIDE_CHUNK_BYTES).
    wide = mk.Product("conv2d", 49, 512, (("ic", 512), ("kh", 3), ("kw", 3)), None, 32, 7, None, None, 16, 0)  # type: ignore[arg-type]
    assert mk.reduction_chunk(wide) == 4


def test_threads_split_the_pixel_tiles_where_the_source_outweighs_the_weight() -> None:
    """ResNet-18's 3×3 stride-2 conv 64 → 128 (830 KB of padded input, 295 KB
    of weight) and its 1×1 downsample split pixel tiles; the 1×1 downsample
    256 → 512 (200 KB, 524 KB) and mlp_b64's dense (200 KB, 3.2 MB) panels."""

    def product(channels: int, reduction: tuple, source_bytes: int) -> mk.Product:
        return mk.Product("conv2d", 0, channels, reduction, None, 32, 7, None, None, 16, source_bytes)  # type: ignore[arg-type]

    assert mk.tiles_outermost(product(128, (("ic", 64), ("kh", 3), ("kw", 3)), 64 * 57 * 57 * 4))
    assert mk.tiles_outermost(product(128, (("ic", 64), ("kh", 1), ("kw", 1)), 64 * 56 * 56 * 4))
    assert not mk.tiles_outermost(product(512, (("ic", 256), ("kh", 1), ("kw", 1)), 256 * 14 * 14 * 4))
    assert not mk.tiles_outermost(product(1024, (("k", 784),), 64 * 784 * 4))


@pytest.mark.parametrize(
    "x, wt", [((1, 4, 6, 6), (12, 4, 1, 1)), ((1, 2, 8, 8), (9, 2, 3, 3))]
)
def test_a_tile_major_conv_computes_the_naive_sums(monkeypatch: pytest.MonkeyPatch, x, wt) -> None:
    """Panels (a full one, a partial one) of a conv whose input outweighs
    its weight, split by pixel tiles: the naive kernel's sums, bit for bit."""
    orders: list[bool] = []
    original = mk.tiles_outermost
    monkeypatch.setattr(mk, "tiles_outermost", lambda p: orders.append(original(p)) or orders[-1])
    out = (1, wt[0], *x[2:])
    pad = (wt[2] - 1) // 2
    text = _program("conv2d", x, wt, out, "f32", "none", f"{{padding = [{pad}, {pad}, {pad}, {pad}]}}")
    rng = np.random.default_rng(wt[2])
    inputs = {"a": rng.standard_normal(x).astype(np.float32), "b": rng.standard_normal(wt).astype(np.float32)}
    naive = _naive(text, {}, 128)
    schedule = "kernel-pad-input,kernel-tensorize{vector-bits=128},kernel-vectorize,kernel-parallelize"
    tiled = apply_passes(naive, schedule)
    assert orders and all(orders)
    assert_same_bits(naive, tiled, inputs)


def test_a_product_is_worth_threads_by_the_lanes_it_runs() -> None:
    """64×784 · 784×10 runs 16-lane panels: 1.6 MFLOPs of FMAs, though
    only 1.0 of them are the product's (PARALLEL_MIN_FLOPS is 1 Mi)."""
    ten = mk.Product("dense", 64, 10, (("k", 784),), None, 16, 14, None, None, 16, 0)  # type: ignore[arg-type]
    assert mk.worth_threads(ten)
    small = mk.Product("dense", 16, 10, (("k", 784),), None, 16, 14, None, None, 16, 0)  # type: ignore[arg-type]
    assert not mk.worth_threads(small)  # 0.4 MFLOPs


@pytest.mark.parametrize(
    "rows,row_bytes,kept",
    [
        (14, 1024 * 4, 7),  # every row in one L1 set: 7 of its 8 ways
        (14, 2048 * 4, 7),
        (14, 512 * 4, 14),  # rows alternate between 2 sets
        (14, 784 * 4, 14),  # 49 lines apart: every set once
        (14, 1000 * 4, 14),
        (14, 0, 14),  # not a product whose rows lie apart
        (5, 4096, 5),
    ],
)
def test_a_tile_keeps_its_rows_within_the_ways_of_an_l1_set(rows, row_bytes, kept) -> None:
    assert mk.rows_within_ways(rows, row_bytes) == kept


def test_a_one_vector_dense_over_a_1024_deep_reduction_takes_7_rows() -> None:
    """64×1024 · 1024×10 with AVX-512: one 16-lane panel, 14 rows would fit
    the registers but their x rows, 4 KiB apart, would share one L1 set."""
    text = _program("dense", (64, 1024), (10, 1024), (64, 10), "f32", "none")
    _, records = apply_passes(_naive(text, {}, 512), "kernel-tensorize{vector-bits=512}", remarks=True)
    assert any("register tile 7 rows x 16 units" in r.message for r in records)
    narrow = _program("dense", (64, 1000), (10, 1000), (64, 10), "f32", "none")
    _, records = apply_passes(_naive(narrow, {}, 512), "kernel-tensorize{vector-bits=512}", remarks=True)
    assert any("register tile 14 rows x 16 units" in r.message for r in records)


DENSE = _program("dense", (3, 8), (10, 8), (3, 10), "f32", "bias_relu")


def test_bound_weight_is_repacked_once_and_the_kernel_reads_panels() -> None:
    naive = _naive(DENSE, {"b": np.ones((10, 8), np.float32)}, 256)
    tiled = apply_passes(naive, "kernel-tensorize{vector-bits=256}")
    [call] = [op for op in tiled.walk() if isinstance(op, CallKernelOp)]
    packed = call.operands[1].owner
    assert isinstance(packed, ConstantOp) and packed.to_array().shape == (1, 8, 16)
    assert [op for op in tiled.walk() if isinstance(op, ConstantOp)] == [packed]
    [kernel] = kernel_functions(tiled)
    blocks = {op.block_name.data for op in kernel.walk() if isinstance(op, BlockOp)}
    assert blocks == {"dense_init", "dense", "dense_store"}


def test_a_nest_that_is_not_the_named_op_is_left_alone() -> None:
    """A "dense" block whose weight is read at [k, j] is not a dense: the
    pass checks the indices before rewriting."""
    naive = _naive(DENSE, {}, 256)
    text = str(naive).replace("%weight[%vj_1, %vk]", "%weight[%vk, %vj_1]").replace(
        "memref<10x8xf32>", "memref<8x10xf32>"
    ).replace("tensor<10x8xf32>", "tensor<8x10xf32>")
    swapped = ember.parse(text)
    assert str(apply_passes(swapped, "kernel-tensorize{vector-bits=256}")) == str(swapped)
    assert str(apply_passes(naive, "kernel-tensorize{ops=matmul}")) == str(naive)


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("kernel-tensorize{ops=dense,conv3d}", "kernel-tensorize: unknown op 'conv3d' in ops="),
        ("kernel-tensorize{vector-bits=48}", "kernel-tensorize: vector-bits must be .* got 48"),
        (
            "kernel-tensorize{winograd-min-channels=-1}",
            "kernel-tensorize: winograd-min-channels must be 0 .* got -1",
        ),
    ],
)
def test_kernel_tensorize_rejects_bad_options(pipeline, message) -> None:
    with pytest.raises(PassError, match=message):
        apply_passes(_naive(DENSE, {}, 256), pipeline)


@pytest.mark.parametrize("option", ["pack-weights=false", "winograd-min-channels=8"])
def test_the_lowerings_moved_options_say_where_they_went(option) -> None:
    """lower-graph-to-kernel's former packing and Winograd options are the
    schedule's now: set, they are an error naming the new spelling."""
    with pytest.raises(PassError, match=r"moved to the schedule.*kernel-tensorize\{winograd-min-channels=N\}"):
        apply_passes(ember.parse(DENSE), f"lower-graph-to-kernel{{{option}}}")


BUILDS = {
    "matmul": ("matmul", (2, 5, 6), (6, 9), (2, 5, 9), ""),
    "conv2d": ("conv2d", (1, 3, 9, 9), (4, 3, 3, 3), (1, 4, 5, 5), "{strides = [2, 2], padding = [1, 1, 1, 1]}"),
    "dense": ("dense", (3, 7), (5, 7), (3, 5), ""),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_build_without_a_schedule_runs_the_naive_kernels(name) -> None:
    op, a_shape, b_shape, out_shape, attrs = BUILDS[name]
    text = _program(op, a_shape, b_shape, out_shape, "f32", "bias_relu", attrs)
    rng = np.random.default_rng(0)
    channels = out_shape[1] if op == "conv2d" else out_shape[-1]
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in (a_shape, b_shape, (channels,)))
    expected = ember.interpret(ember.parse(text), "main", a, b, c)[0]
    options = CompileOptions(schedule="")
    naive = to_kernel(to_graph(ember.parse(text), {}, options), options)
    # Naive: no padded copy of the input (conv2d reads through its padding)
    # until kernel-pad-input makes one; then each is the contraction.
    assert not any(isinstance(op, memref.AllocOp) for k in kernel_functions(naive) for op in k.body.block.ops)
    padded = apply_passes(naive, "kernel-pad-input")
    assert all(match_contraction(k) is not None for k in kernel_functions(padded))
    for schedule in ("", None):
        options = {} if schedule is None else {"schedule": schedule}
        lib = ember.build(text, "llvm", options=options, cache=False)
        got = np.asarray(lib["main"](a, b, c))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


GROUPED = _program(
    "conv2d", (1, 4, 6, 6), (4, 2, 3, 3), (1, 4, 4, 4), "f32", "bias_relu", "{groups = 2}"
)


def test_a_grouped_nest_is_recognised_by_its_channel_index() -> None:
    """Grouped conv2d reads channel (oc // 2)·2 + ic: rewritten into the row
    nest.  Read at (oc % 2)·2 + ic it is not a grouped conv2d, and is left."""
    naive = _naive(GROUPED, {}, 256)
    [contraction] = [match_contraction(k) for k in kernel_functions(naive)]
    assert contraction is not None and contraction.name == "conv2d"  # lowered naive
    tiled = apply_passes(naive, "kernel-tensorize{vector-bits=256}")
    [kernel] = kernel_functions(tiled)
    assert match_contraction(kernel) is None
    assert [op.kind.data for op in kernel.walk() if isinstance(op, ForOp)][:2] == ["serial", "parallel"]
    text = str(naive)
    assert text.count("arith.divsi %voc_1") == 1
    other = ember.parse(text.replace("arith.divsi %voc_1", "arith.remsi %voc_1"))
    assert str(apply_passes(other, "kernel-tensorize{vector-bits=256}")) == str(other)


def test_reduction_kinds_unroll_the_innermost_loops_within_the_budget() -> None:
    """AVX2: a 3×3 window over a 4 × 2-vector tile is unrolled whole, over
    5 × 2 only along its row; a 7×7 window along its row; AVX-512's 7 × 2
    tiles, a 3×3 window along its row; the channel loop never."""
    avx2, avx512 = 8, 16
    assert mk.step_fmas(4, 16, avx2) == 8 and mk.step_fmas(7, 32, avx512) == 14
    assert mk.step_fmas(3, 20, avx2) == 9  # a partial vector is one FMA too
    assert mk.reduction_kinds([3, 3, 3], 8) == ["serial", "unrolled", "unrolled"]
    assert mk.reduction_kinds([16, 3, 3], 10) == ["serial", "serial", "unrolled"]
    assert mk.reduction_kinds([3, 7, 7], 8) == ["serial", "serial", "unrolled"]
    assert mk.reduction_kinds([64, 3, 3], 14) == ["serial", "serial", "unrolled"]
    assert mk.reduction_kinds([512], 8) == ["serial"]
    assert mk.reduction_kinds([2], 8) == ["unrolled"]
    assert mk.reduction_kinds([], 8) == []
    assert mk.reduction_kinds([3], mk.UNROLL_BUDGET + 1) == ["serial"]


@given(
    st.lists(st.integers(1, 20), max_size=4),
    st.integers(1, mk.UNROLL_BUDGET),
)
@settings(max_examples=60, deadline=None)
def test_reduction_kinds_are_a_suffix_as_long_as_the_budget_allows(extents, step) -> None:
    kinds = mk.reduction_kinds(extents, step)
    unrolled = kinds.count("unrolled")
    assert kinds == ["serial"] * (len(extents) - unrolled) + ["unrolled"] * unrolled
    inner = step * int(np.prod(extents[len(extents) - unrolled :]))
    assert inner <= mk.UNROLL_BUDGET
    if unrolled < len(extents):  # the next loop out would go over
        assert inner * extents[len(extents) - unrolled - 1] > mk.UNROLL_BUDGET
