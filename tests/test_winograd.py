"""Winograd F(2×2, 3×3) conv2d: chosen by rule, transformed at bind time,
and equal to direct convolution within the documented bound.

The bound (docs/kernel-dialect.md, "Winograd convolution"): every output
differs from the exact convolution by at most ``WINOGRAD_ERROR_ULPS · ε ·
(|x| ⊛ |w|)`` (ε the f32 unit roundoff 2⁻²⁴, ``|x| ⊛ |w|`` the convolution
of the magnitudes at that output), plus the same for the reference itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context

import ember
from ember.dialects.graph import ConstantOp
from ember.dialects.kernel import is_kernel
from ember.interp.kernel_impls import run_kernel
from ember.lowering.graph_to_kernel import VectorTarget, lower_group, make_group
from ember.lowering import winograd
from ember.lowering.winograd import F2X2_3X3, WinogradPacking, padded_row, winograd_transform
from ember.passes.bind_params import bind_params_in_place
from ember.passes.kernel_pad_input import KernelPadInputPass
from ember.passes.kernel_tensorize import KernelTensorizePass
from ember.passes.lower_graph_to_kernel import LowerGraphToKernelPass
from ember.passes.pipeline import apply_passes

WINOGRAD_ERROR_ULPS = 16
"""Bound of the test, in units of ε · (|x| ⊛ |w|): measured errors stay
below ~2 on random data, the reference's own below ~5 (see the docs)."""

EPSILON = 2.0**-24


def conv_text(
    data: tuple[int, ...], out_channels: int, padding: tuple[int, int, int, int], dtype: str = "f32"
) -> str:
    n, c, h, w = data
    top, left, bottom, right = padding
    oh, ow = h + top + bottom - 2, w + left + right - 2
    x = f"tensor<{n}x{c}x{h}x{w}x{dtype}>"
    k = f"tensor<{out_channels}x{c}x3x3x{dtype}>"
    y = f"tensor<{n}x{out_channels}x{oh}x{ow}x{dtype}>"
    return f"""
func.func @main(%x: {x}, %w: {k}) -> {y} {{
  %0 = graph.conv2d %x, %w {{padding = [{top}, {left}, {bottom}, {right}]}} : ({x}, {k}) -> {y}
  func.return %0 : {y}
}}"""


def magnitude_bound(text: str, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``|x| ⊛ |w|`` by the reference interpreter (computed in f64)."""
    module = ember.parse(text)
    (magnitudes,) = ember.interpret(
        module, "main", np.abs(x).astype(x.dtype), np.abs(w).astype(w.dtype)
    )
    return magnitudes.astype(np.float64)


def assert_within_bound(
    got: np.ndarray, want: np.ndarray, magnitudes: np.ndarray
) -> None:
    error = np.abs(got.astype(np.float64) - want.astype(np.float64))
    allowed = WINOGRAD_ERROR_ULPS * EPSILON * magnitudes + 1e-30
    worst = float(np.max(error / allowed))
    assert worst <= 1.0, f"error {worst:.2f}x the Winograd bound"


@st.composite
def conv_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 5))
    k = draw(st.integers(1, 6))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(4))
    # Outputs of 3×3 or more: at least 4 tiles, two micro-kernel tiles of
    # columns at vector-bits=32, so that the rule takes every case.
    h = draw(st.integers(5 - padding[0] - padding[2], 9))
    w = draw(st.integers(5 - padding[1] - padding[3], 9))
    return (n, c, h, w), k, padding


RULES = ("BY_TILE_MOST_TILES_PER_CHANNEL", "BY_TILE_MIN_REGISTERS", "BANDS_MIN_ROWS")
ORIENTATIONS = {
    "by channel": (0, 0, 10**6),
    "by tile": (10**6, 0, 10**6),
    "in bands": (0, 0, 1),
}
"""Values of :data:`RULES` that make every layer run its products by
channel or by tile over the whole layer (:func:`winograd.products_by_tile`),
or in bands of one tile row (:func:`winograd.in_bands`), on any target."""


@contextmanager
def products(orientation: str) -> Iterator[None]:
    """Every Winograd layer compiled meanwhile has its products ``orientation``."""
    saved = [getattr(winograd, rule) for rule in RULES]
    for rule, value in zip(RULES, ORIENTATIONS[orientation]):
        setattr(winograd, rule, value)
    try:
        yield
    finally:
        for rule, value in zip(RULES, saved):
            setattr(winograd, rule, value)


@pytest.mark.parametrize(
    "tiles,channels,bits,by_tile",
    [
        (49, 256, 512, True),  # ResNet-18's 256-channel 14×14 layers
        (196, 128, 512, True),  # its 128-channel 28×28 ones
        (784, 64, 512, False),  # its 64-channel 56×56 ones
        (49, 256, 256, False),  # AVX2: by channel
    ],
)
def test_products_run_by_tile_where_few_tiles_per_channel_on_avx512(
    tiles: int, channels: int, bits: int, by_tile: bool
) -> None:
    assert winograd.products_by_tile(tiles, channels, VectorTarget(bits)) is by_tile


@settings(max_examples=max(3, settings.default.max_examples // 3))
@given(case=conv_cases(), seed=st.integers(0, 2**16), orientation=st.sampled_from(list(ORIENTATIONS)))
def test_winograd_matches_direct_convolution(
    case: tuple[tuple[int, ...], int, tuple[int, ...]], seed: int, orientation: str
) -> None:
    """Compiled (LLVM) Winograd against the reference's direct convolution:
    odd sizes cut tiles at the edges, batch 2, any padding, the products
    by channel or by tile, or the layer in bands."""
    data, out_channels, padding = case
    text = conv_text(data, out_channels, padding)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(data).astype(np.float32)
    w = rng.standard_normal((out_channels, data[1], 3, 3)).astype(np.float32)
    (want,) = ember.interpret(ember.parse(text), "main", x, w)
    with products(orientation):
        lib = ember.build(text, options={"schedule": SCHEDULE_32})
    got = lib["main"](x, w).numpy()
    assert_within_bound(got, want, magnitude_bound(text, x, w))


@settings(max_examples=max(3, settings.default.max_examples // 6))
@given(
    case=conv_cases(),
    seed=st.integers(0, 2**16),
    bound=st.booleans(),
    orientation=st.sampled_from(list(ORIENTATIONS)),
)
def test_winograd_schedule_matches_the_naive_kernel(
    case: tuple[tuple[int, ...], int, tuple[int, ...]], seed: int, bound: bool, orientation: str
) -> None:
    """``kernel-tensorize{winograd-min-channels=1}`` against the naive
    kernel it rewrites, both run by the kernel interpreter: the weight an
    argument (transformed by the kernel) or bound (transformed at bind time),
    the products by channel or by tile, or the layer in bands."""
    data, out_channels, padding = case
    text = conv_text(data, out_channels, padding)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(data).astype(np.float32)
    w = rng.standard_normal((out_channels, data[1], 3, 3)).astype(np.float32)
    module = ember.parse(text)
    if bound:
        bind_params_in_place(module, {"w": w}, "main")
    inputs = [x] if bound else [x, w]
    naive = apply_passes(module, "lower-graph-to-kernel{vector-bits=32}")
    with products(orientation):
        scheduled = apply_passes(
            naive, "kernel-pad-input,kernel-tensorize{vector-bits=32 winograd-min-channels=1}"
        )
    blocks = {op.block_name.data for op in scheduled.walk() if op.name == "kernel.block"}
    assert "winograd_input" in blocks and ("winograd_weight" in blocks) is not bound
    (want,) = ember.interpret(naive, "main", *inputs)
    (got,) = ember.interpret(scheduled, "main", *inputs)
    assert_within_bound(got, want, magnitude_bound(text, x, w))


SCHEDULE_32 = "kernel-pad-input,kernel-tensorize{vector-bits=32 winograd-min-channels=1},kernel-vectorize,kernel-parallelize"
"""Winograd for every 3×3 layer of at least 4 tiles (tiles shaped for
32-bit vectors: correct on any CPU)."""


def _lowered(text: str, params: dict[str, np.ndarray] | None = None) -> ember.ir.ModuleOp:
    module = ember.parse(text)
    if params:
        bind_params_in_place(module, params, "main")
    LowerGraphToKernelPass(vector_bits=32).apply(Context(), module)
    KernelPadInputPass().apply(Context(), module)
    KernelTensorizePass(vector_bits=32, winograd_min_channels=1).apply(Context(), module)
    ember.verify_module(module)
    return module


def test_weight_is_transformed_at_bind_time() -> None:
    """A constant weight becomes the constant U = G g Gᵀ, in f64 rounded
    once, and the kernel reads it as it is (no transform in the kernel)."""
    text = conv_text((1, 2, 4, 4), 3, (1, 1, 1, 1))
    w = np.random.default_rng(0).standard_normal((3, 2, 3, 3)).astype(np.float32)
    module = _lowered(text, {"w": w})
    (constant,) = [op for op in module.walk() if isinstance(op, ConstantOp)]
    np.testing.assert_array_equal(constant.to_array(), WinogradPacking(F2X2_3X3).pack(w))
    kernel = next(op for op in module.ops if is_kernel(op))
    blocks = {op.block_name.data for op in kernel.walk() if op.name == "kernel.block"}
    assert "winograd_input" in blocks and "winograd_weight" not in blocks
    assert str(kernel.function_type.inputs.data[1]) == "memref<16x2x3xf32>"


def test_pack_is_the_transform() -> None:
    """U[ξ, c, k] = (G g Gᵀ) at ξ = x·4 + y, for one weight by hand."""
    g = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    matrix = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
    expected = (matrix @ g[0, 0] @ matrix.T).reshape(16, 1, 1)
    np.testing.assert_allclose(WinogradPacking(F2X2_3X3).pack(g), expected)


def test_u_rows_of_a_cache_aliasing_length_get_a_line_more() -> None:
    """Rows of 128 or 256 output channels (512 B, 1 KiB) would put a tile's
    reduction steps in a few L1 sets: they get 16 unused floats more."""
    assert [padded_row(k) for k in (3, 64, 96, 128, 256, 512)] == [3, 64, 96, 144, 272, 528]


@pytest.mark.parametrize("bound", [True, False])
def test_padded_u_rows_compute_the_convolution(monkeypatch, bound: bool) -> None:
    """Every row padded (the threshold lowered to one float): the packed
    constant's extra columns are zero, the kernel that transforms a weight
    argument writes only the real ones, and both compute the convolution."""
    monkeypatch.setattr(winograd, "ROW_ALIAS_BYTES", 4)
    data, out_channels = (1, 3, 6, 7), 5
    text = conv_text(data, out_channels, (1, 1, 1, 1))
    rng = np.random.default_rng(7)
    x = rng.standard_normal(data).astype(np.float32)
    w = rng.standard_normal((out_channels, 3, 3, 3)).astype(np.float32)
    packed = WinogradPacking(F2X2_3X3).pack(w)
    assert packed.shape == (16, 3, out_channels + winograd.ROW_PAD)
    assert not packed[..., out_channels:].any()
    (want,) = ember.interpret(ember.parse(text), "main", x, w)
    options = {"schedule": SCHEDULE_32}  # built here, not from the cache: the threshold is patched
    if bound:
        got = ember.build(text, params={"w": w}, options=options, cache=False)["main"](x).numpy()
    else:
        got = ember.build(text, options=options, cache=False)["main"](x, w).numpy()
    assert_within_bound(got, want, magnitude_bound(text, x, w))


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_runtime_weight_and_fused_epilogue_in_the_kernel_interpreter(dtype: str) -> None:
    """A weight that is an argument is transformed by the kernel itself;
    batch_norm + relu stay fused into the output transform; a 5×3 output
    cuts the last tile row and column."""
    t = dtype
    text = f"""
func.func @main(%x: tensor<2x2x5x3x{t}>, %w: tensor<3x2x3x3x{t}>, %g: tensor<3x{t}>, %b: tensor<3x{t}>, %m: tensor<3x{t}>, %v: tensor<3x{t}>) -> tensor<2x3x5x3x{t}> {{
  %0 = graph.conv2d %x, %w {{padding = [1, 1, 1, 1]}} : (tensor<2x2x5x3x{t}>, tensor<3x2x3x3x{t}>) -> tensor<2x3x5x3x{t}>
  %1 = graph.batch_norm %0, %g, %b, %m, %v : (tensor<2x3x5x3x{t}>, tensor<3x{t}>, tensor<3x{t}>, tensor<3x{t}>, tensor<3x{t}>) -> tensor<2x3x5x3x{t}>
  %2 = graph.relu %1 : tensor<2x3x5x3x{t}>
  func.return %2 : tensor<2x3x5x3x{t}>
}}"""
    module = ember.parse(text)
    main = next(op for op in module.ops if op.sym_name.data == "main")
    ops = list(main.body.block.ops)[:-1]
    group = make_group(ops)
    kernel = lower_group(group, "fused", VectorTarget(32))
    kernel_module = ember.ir.ModuleOp([kernel])
    KernelPadInputPass().apply(Context(), kernel_module)
    KernelTensorizePass(vector_bits=32, winograd_min_channels=1).apply(Context(), kernel_module)
    blocks = {op.block_name.data for op in kernel.walk() if op.name == "kernel.block"}
    assert {"winograd_weight", "winograd_input", "winograd_output"} <= blocks
    rng = np.random.default_rng(1)
    numpy_type = np.float16 if dtype == "f16" else np.float32
    args = [rng.standard_normal(tuple(a.type.get_shape())).astype(numpy_type) for a in main.args]
    args[5] = np.abs(args[5]) + numpy_type(0.5)  # variance
    (want,) = ember.interpret(module, "main", *args)
    got = np.full(want.shape, np.nan, want.dtype)
    # The workspace (V, M) the kernel took as two more output arguments.
    workspace = [
        np.full(a.type.get_shape(), np.nan, np.float32) for a in kernel.body.block.args[-2:]
    ]
    run_kernel(kernel_module, "fused", *args, got, *workspace)
    tolerance = 2e-3 if dtype == "f16" else 1e-5
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


def _conv_op(text: str) -> ember.dialects.graph.GraphOp:
    main = next(op for op in ember.parse(text).ops if op.sym_name.data == "main")
    return next(iter(main.body.block.ops))


def _transform(op: ember.dialects.graph.GraphOp, target: VectorTarget) -> object:
    """The rule on ``op``'s sizes, checked against what ``kernel-tensorize``
    makes of ``op``'s naive kernel (a grouped conv stays direct: Winograd
    takes one-group layers only)."""
    kernels = ember.ir.ModuleOp([lower_group(make_group([op]), "k", target)])
    minimum = target.winograd_min_channels
    KernelPadInputPass().apply(Context(), kernels)
    KernelTensorizePass(vector_bits=target.bits, winograd_min_channels=minimum).apply(
        Context(), kernels
    )
    blocks = {b.block_name.data for b in kernels.walk() if b.name == "kernel.block"}
    if op.attr("groups") != 1:
        assert "winograd_input" not in blocks
        return None
    out_channels, in_channels, kh, kw = op.operands[1].type.get_shape()
    out_size = op.results[0].type.get_shape()[2:]
    transform = winograd_transform(
        in_channels, out_channels, (kh, kw), op.attr("strides"), op.attr("dilation"), out_size, target
    )
    assert ("winograd_input" in blocks) is (transform is not None)
    return transform


@pytest.mark.parametrize(
    "channels,attrs,chosen",
    [
        (64, "padding = [1, 1, 1, 1]", True),
        (32, "", True),
        (16, "padding = [1, 1, 1, 1]", False),  # too few channels
        (128, "padding = [1, 1, 1, 1]", True),
        (64, "strides = [2, 2]", False),
        (64, "dilation = [2, 2]", False),
        (64, "groups = 2", False),
    ],
)
def test_the_rule_chooses_winograd_per_layer(channels: int, attrs: str, chosen: bool) -> None:
    groups = 2 if "groups" in attrs else 1
    dilation = 2 if "dilation" in attrs else 1
    stride = 2 if "strides" in attrs else 1
    pad = 1 if "padding" in attrs else 0
    size = (16 + 2 * pad - (2 * dilation + 1)) // stride + 1
    x = f"tensor<1x{channels}x16x16xf32>"
    w = f"tensor<{channels}x{channels // groups}x3x3xf32>"
    y = f"tensor<1x{channels}x{size}x{size}xf32>"
    text = f"""
func.func @main(%x: {x}, %w: {w}) -> {y} {{
  %0 = graph.conv2d %x, %w {{{attrs}}} : ({x}, {w}) -> {y}
  func.return %0 : {y}
}}"""
    target = VectorTarget(256, winograd_min_channels=32)
    assert (_transform(_conv_op(text), target) is F2X2_3X3) is chosen
    assert _transform(_conv_op(text), VectorTarget(256)) is None  # off by default


@pytest.mark.parametrize(
    "size,bits,chosen",
    [
        (7, 256, False),  # 16 2x2 tiles: one micro-kernel tile of AVX2's 16 columns
        (7, 128, True),  # two of 8 columns
        (8, 256, False),  # 16 tiles again
        (9, 256, True),  # 25 tiles in two: 78% of the columns used
        (7, 512, False),  # AVX-512's 32 columns: half of one tile
        (12, 512, False),  # 36 tiles in two: 56% used
        (14, 512, True),  # 49 in two: 77% (resnet18's 256-channel layers)
    ],
)
def test_a_plane_of_fewer_than_one_and_a_half_micro_kernel_tiles_stays_direct(
    size: int, bits: int, chosen: bool
) -> None:
    """Winograd's products run over whole micro-kernel tiles of 2×2 output
    tiles: a plane of fewer than 1.5 tiles' columns wastes over a quarter of
    them (or runs as one tile) and stays direct."""
    x, w = f"tensor<1x64x{size}x{size}xf32>", "tensor<64x64x3x3xf32>"
    text = f"""
func.func @main(%x: {x}, %w: {w}) -> {x} {{
  %0 = graph.conv2d %x, %w {{padding = [1, 1, 1, 1]}} : ({x}, {w}) -> {x}
  func.return %0 : {x}
}}"""
    target = VectorTarget(bits, winograd_min_channels=32)
    assert (_transform(_conv_op(text), target) is F2X2_3X3) is chosen


def test_a_3x3_convolution_of_5x5_kernels_is_direct() -> None:
    text = """
func.func @main(%x: tensor<1x64x8x8xf32>, %w: tensor<64x64x5x5xf32>) -> tensor<1x64x4x4xf32> {
  %0 = graph.conv2d %x, %w : (tensor<1x64x8x8xf32>, tensor<64x64x5x5xf32>) -> tensor<1x64x4x4xf32>
  func.return %0 : tensor<1x64x4x4xf32>
}"""
    target = VectorTarget(256, winograd_min_channels=32)
    assert _transform(_conv_op(text), target) is None


@pytest.mark.parametrize(
    "orientation,shapes",
    [
        # 9 tiles in 10 columns (whole tiles of 2 at vector-bits=32), 8 channels + 1
        ("by channel", [(16, 9, 10), (16, 9, 10)]),
        # V over the 9 tiles; M a row of 8 channels per tile
        ("by tile", [(16, 9, 9), (16, 9, 8)]),
    ],
)
def test_the_workspace_is_planned_memory_not_allocated_per_call(
    orientation: str, shapes: list[tuple[int, ...]]
) -> None:
    """Every call of a Winograd kernel (two layers share one) gets two more
    results, V and M, which nothing reads: plan-memory gives them offsets in
    the program's workspace, and the kernel allocates no scratch of theirs."""
    t = "tensor<1x8x6x6xf32>"
    text = f"""
func.func @main(%x: {t}, %w: tensor<8x8x3x3xf32>) -> {t} {{
  %0 = graph.conv2d %x, %w {{padding = [1, 1, 1, 1]}} : ({t}, tensor<8x8x3x3xf32>) -> {t}
  %1 = graph.conv2d %0, %w {{padding = [1, 1, 1, 1]}} : ({t}, tensor<8x8x3x3xf32>) -> {t}
  func.return %1 : {t}
}}"""
    with products(orientation):
        module = apply_passes(
            ember.parse(text),
            "lower-graph-to-kernel{vector-bits=32},kernel-pad-input,"
            "kernel-tensorize{vector-bits=32 winograd-min-channels=1},plan-memory",
        )
    calls = [op for op in module.walk() if op.name == "graph.call_kernel"]
    assert len(calls) == 2 and len({call.callee for call in calls}) == 1
    for call in calls:
        assert [r.type.get_shape() for r in call.results[1:]] == shapes
        assert all(not r.uses for r in call.results[1:])
        assert all(offset >= 0 for offset in call.attributes["ember.offsets"].get_values()[1:])
    kernel = next(op for op in module.ops if is_kernel(op))
    allocated = {tuple(op.results[0].type.get_shape()) for op in kernel.walk() if op.name == "memref.alloc"}
    assert not allocated & set(shapes)
    x = np.random.default_rng(3).standard_normal((1, 8, 6, 6)).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((8, 8, 3, 3)).astype(np.float32)
    (want,) = ember.interpret(ember.parse(text), "main", x, w)
    with products(orientation):
        got = ember.build(text, options={"schedule": SCHEDULE_32})["main"](x, w).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "channels,size,bits,banded",
    [
        (64, 56, 512, True),  # ResNet-18's 64-channel layers: U 256 KB, 28 rows
        (64, 56, 256, True),
        (64, 14, 512, True),  # 7 rows
        (64, 12, 512, False),  # 6 rows
        (128, 28, 512, True),  # U 1.2 MB, read from L3 by every row
        (128, 28, 256, False),  # AVX2's 5-row tiles read U three times a row: whole
        (256, 14, 512, False),  # U 4.4 MB
        (32, 224, 512, False),  # a row of 112 tiles: V 236 KB, more than the stack takes
        (32, 112, 512, True),  # 56 tiles: 118 KB
    ],
)
def test_layers_of_small_weights_and_enough_rows_run_in_bands(
    channels: int, size: int, bits: int, banded: bool
) -> None:
    tiles = (-(-size // 2),) * 2
    assert winograd.in_bands(F2X2_3X3, channels, channels, tiles, VectorTarget(bits)) is banded


def test_a_layer_in_bands_takes_no_workspace_and_keeps_its_row_buffers_in_the_band_loop() -> None:
    """In bands, the kernel takes no V and M: each row's are allocated
    inside the ``parallel`` loop over tile rows (on the stack of the thread
    that runs the row), one row of tiles each; the results are the
    convolution's."""
    t = "tensor<2x8x7x6xf32>"
    text = f"""
func.func @main(%x: {t}, %w: tensor<8x8x3x3xf32>) -> {t} {{
  %0 = graph.conv2d %x, %w {{padding = [1, 1, 1, 1]}} : ({t}, tensor<8x8x3x3xf32>) -> {t}
  func.return %0 : {t}
}}"""
    with products("in bands"):
        module = apply_passes(
            ember.parse(text),
            "lower-graph-to-kernel{vector-bits=32},kernel-pad-input,"
            "kernel-tensorize{vector-bits=32 winograd-min-channels=1},plan-memory",
        )
    (call,) = [op for op in module.walk() if op.name == "graph.call_kernel"]
    assert len(call.results) == 1
    kernel = next(op for op in module.ops if is_kernel(op))
    bands = [
        op for op in kernel.walk()
        if op.name == "kernel.for" and op.induction_var.name_hint == "band"
    ]
    # A run of 3 whole rows of tiles, then the row the output's edge cuts.
    assert [(op.kind.data, op.upper_bound.value.data) for op in bands] == [("parallel", 3), ("serial", 1)]
    allocated = [
        (op.results[0].name_hint, tuple(op.results[0].type.get_shape()))
        for band in bands for op in band.walk()
        if op.name == "memref.alloc" and op.results[0].name_hint.startswith("winograd")
    ]
    rows = [("winograd_band_input", (16, 9, 3)), ("winograd_band_products", (16, 3, 8))]
    assert allocated == rows * 2
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 8, 7, 6)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    (want,) = ember.interpret(ember.parse(text), "main", x, w)
    with products("in bands"):
        got = ember.build(text, options={"schedule": SCHEDULE_32}, cache=False)["main"](x, w).numpy()
    assert_within_bound(got, want, magnitude_bound(text, x, w))


def test_build_option_turns_winograd_off() -> None:
    """``winograd_min_channels`` 0 or above the channel counts compiles the
    conv direct, 1 as Winograd (a 16×16 output: 64 tiles, enough for the
    rule with AVX2 and AVX-512); all agree with the reference."""
    text = conv_text((1, 4, 16, 16), 4, (1, 1, 1, 1))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 4, 16, 16)).astype(np.float32)
    w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    (want,) = ember.interpret(ember.parse(text), "main", x, w)
    for minimum in (1, 0, 5):
        lib = ember.build(
            text, params={"w": w}, options={"winograd_min_channels": minimum}, remarks=True
        )
        winograd = any("Winograd F(2x2, 3x3) convolution" in r.message for r in lib.remarks)
        assert winograd is (minimum == 1)
        assert_within_bound(lib["main"](x).numpy(), want, magnitude_bound(text, x, w))


@pytest.mark.parametrize("channels,size,chosen", [(64, 16, True), (16, 16, False), (64, 4, False)])
def test_the_llvm_default_schedule_runs_winograd_where_the_rule_takes_a_layer(
    channels: int, size: int, chosen: bool
) -> None:
    """On by default (min 32 channels): a 64-channel 16×16 layer is
    Winograd with AVX2; 16 channels, or a 4×4 plane (4 tiles), stay direct."""
    from ember.target import Target

    x, w = f"tensor<1x{channels}x{size}x{size}xf32>", f"tensor<{channels}x{channels}x3x3xf32>"
    text = f"""
func.func @main(%x: {x}, %w: {w}) -> {x} {{
  %0 = graph.conv2d %x, %w {{padding = [1, 1, 1, 1]}} : ({x}, {w}) -> {x}
  func.return %0 : {x}
}}"""
    naive = apply_passes(ember.parse(text), "lower-graph-to-kernel{vector-bits=256}")
    scheduled = apply_passes(naive, Target.parse("llvm -mcpu=znver3").default_schedule)
    blocks = {op.block_name.data for op in scheduled.walk() if op.name == "kernel.block"}
    assert ("winograd_input" in blocks) is chosen
