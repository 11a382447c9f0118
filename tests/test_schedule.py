"""Schedules as kernel passes (docs/passes.md, "Schedules").

* Each schedule pass is sound: random graph programs, lowered to their
  plain kernels (``lower-graph-to-kernel`` without a schedule), compute the
  same results, bit for bit, in the kernel interpreter after the pass.
  ``parallel`` and ``vectorized`` loops are run last iteration first
  (:func:`_reversed_independent_loops`), a legal order for a loop whose
  iterations are independent, so a wrongly marked loop shows.
* The target's default schedule reproduces the kernels the generators made
  when they chose loop kinds themselves: the kernel IR of mlp, convbnrelu,
  tiny_pipe and resnet18 equals what was recorded before the split
  (tests/golden/).
* The schedule is a build option, part of the cache key, and an
  ``ember-translate`` option; ``--emit=schedule`` prints it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.dialects.func import FuncOp

import ember
from ember.compiler import CompileOptions, bind_arguments, to_graph, to_kernel
from ember.dialects.graph import CallKernelOp, ConstantOp
from ember.dialects.kernel import BlockOp, ForOp, kernel_functions
from ember.errors import PassError, RuntimeFailure
from ember.passes.pipeline import apply_passes
from ember.target import Target
from ember.testing import workloads
from ember.testing.strategies import graph_programs
from ember.tools.ember_translate import main as ember_translate

GOLDEN = Path(__file__).parent / "golden"
PLAIN = "lower-graph-to-kernel{vector-bits=256}"
SOUNDNESS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _reversed_independent_loops(module: ModuleOp) -> ModuleOp:
    """A copy of ``module`` whose parallel and vectorized loops run their
    iterations in reverse: body index ``lb + last - i`` for loop index ``i``."""
    module = module.clone()
    for loop in [op for op in module.walk() if isinstance(op, ForOp)]:
        if loop.kind.data not in ("parallel", "vectorized") or loop.trip_count < 2:
            continue
        iv = loop.induction_var
        uses = list(iv.uses)
        last = loop.lb + (loop.trip_count - 1) * loop.step_value
        total = arith.ConstantOp.from_int_and_width(loop.lb + last, IndexType())
        flipped = arith.SubiOp(total, iv)
        block = loop.body.block
        if block.first_op is None:
            block.add_ops([total, flipped])
        else:
            block.insert_ops_before([total, flipped], block.first_op)
        for use in uses:
            use.operation.operands[use.index] = flipped.result
    return module


def _assert_same_results(before: ModuleOp, after: ModuleOp, inputs) -> None:
    ember.verify_module(after)
    expected = ember.interpret(before, "main", *inputs)
    got = ember.interpret(_reversed_independent_loops(after), "main", *inputs)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


def _plain_kernels(program) -> ModuleOp:
    return apply_passes(program.fresh_module(), PLAIN)


# --------------------------------------------------------------------------
# Soundness of each pass
# --------------------------------------------------------------------------


def test_reversing_exposes_a_loop_wrongly_marked_parallel() -> None:
    """The check the soundness tests rely on fails for an illegal mark: a
    running sum over a loop marked parallel changes when reversed."""
    module = ember.parse(
        """
func.func @cumsum(%x: memref<4xf32>, %y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 parallel {
    kernel.block "y" (%vi = spatial %i) {
      %c1 = arith.constant 1 : index
      %c0 = arith.constant 0 : index
      %p = arith.subi %vi, %c1 : index
      %first = arith.cmpi eq, %vi, %c0 : index
      %prev = arith.select %first, %c0, %p : index
      %a = memref.load %y[%prev] : memref<4xf32>
      %b = memref.load %x[%vi] : memref<4xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%vi] : memref<4xf32>
    }
  }
  func.return
}
"""
    )
    from ember.interp.kernel_impls import run_kernel

    x = np.arange(1, 5, dtype=np.float32)
    forward, backward = np.zeros(4, np.float32), np.zeros(4, np.float32)
    run_kernel(module, "cumsum", x, forward)
    run_kernel(_reversed_independent_loops(module), "cumsum", x, backward)
    assert not np.array_equal(forward, backward)


SCHEDULES = {
    "default": st.just(Target("llvm").default_schedule),
    "kernel-parallelize": st.booleans().map(
        lambda leave: f"kernel-parallelize{{leave-innermost={str(leave).lower()}}}"
    ),
    "kernel-vectorize": st.integers(1, 6).map(lambda n: f"kernel-vectorize{{min-extent={n}}}"),
    # Tiled, then scheduled: the tile loops are independent too.
    "kernel-tile": st.lists(st.integers(0, 4), min_size=1, max_size=4).map(
        lambda sizes: f"kernel-tile{{sizes={','.join(map(str, sizes))}}},"
        "kernel-vectorize,kernel-parallelize"
    ),
    "kernel-unroll": st.integers(1, 5).map(lambda n: f"kernel-unroll{{max-extent={n}}}"),
}
"""Pass → pipelines that run it with drawn options."""


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_pass_is_sound(name) -> None:
    @SOUNDNESS
    @given(graph_programs(max_ops=4, max_outputs=2), SCHEDULES[name])
    def check(program, pipeline) -> None:
        plain = _plain_kernels(program)
        _assert_same_results(plain, apply_passes(plain, pipeline), program.inputs)

    check()


@SOUNDNESS
@given(
    graph_programs(max_ops=4, max_outputs=1), st.integers(0, 3), st.sampled_from([1, 3, 4, 8])
)
def test_kernel_pack_layout_is_sound(program, axis, lanes) -> None:
    """Every f32 constant a kernel only reads, repacked at bind time: the
    program computes what it did (inputs bound as constants first)."""
    module = program.fresh_module()
    main = next(op for op in module.ops if op.sym_name.data == "main")
    names = [f"input{n}" for n in range(len(main.body.block.args))]
    for arg, name in zip(main.body.block.args, names):
        arg.name_hint = name
    bind_arguments(module, "main", dict(zip(names, program.inputs)))
    plain = apply_passes(module, "lower-graph-to-kernel{vector-bits=256}")
    sites = [
        (call.callee, n)
        for call in plain.walk()
        if isinstance(call, CallKernelOp)
        for n, operand in enumerate(call.operands)
        if isinstance(operand.owner, ConstantOp)
    ]
    packed = plain
    for callee, n in sites:
        try:
            pipeline = f"kernel-pack-layout{{kernel={callee} arg={n} axis={axis} lanes={lanes}}}"
            packed = apply_passes(packed, pipeline)
        except PassError as e:
            assert any(
                reason in str(e) for reason in ("only", "not a graph.constant", "there is no axis")
            ), e
    assume(packed is not plain)
    expected = ember.interpret(plain, "main")
    got = ember.interpret(packed, "main")
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


@st.composite
def _reduction_ops(draw) -> tuple[str, str, str]:
    """One pool, global average pool, reduction, softmax or lrn on a small
    random NCHW input: (op text, input type, result type)."""
    n, c, h, w = draw(st.tuples(*[st.integers(1, 3)] * 2, *[st.integers(1, 7)] * 2))
    kind = draw(st.sampled_from(["max_pool2d", "avg_pool2d", "global_avg_pool2d",
                                 "reduce_sum", "reduce_mean", "reduce_max", "softmax", "lrn"]))
    shape = [n, c, h, w]
    attrs, out = "", list(shape)
    if kind in ("max_pool2d", "avg_pool2d"):
        kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        sh, sw, dh, dw = (draw(st.integers(1, 2)) for _ in range(4))
        # Unequal padding after the input is ceil_mode's extra row and column.
        pads = [draw(st.integers(0, k - 1)) for k in (kh, kh, kw, kw)]
        top, bottom, left, right = pads
        out[2] = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
        out[3] = (w + left + right - dw * (kw - 1) - 1) // sw + 1
        assume(out[2] > 0 and out[3] > 0)
        attrs = (f"pool_size = [{kh}, {kw}], strides = [{sh}, {sw}], "
                 f"padding = [{top}, {left}, {bottom}, {right}], dilation = [{dh}, {dw}]")
        if kind == "avg_pool2d":
            attrs += f", count_include_pad = {str(draw(st.booleans())).lower()}"
    elif kind == "global_avg_pool2d":
        out[2:] = [1, 1]
    elif kind.startswith("reduce"):
        axes = sorted(draw(st.sets(st.integers(0, 3), min_size=1, max_size=3)))
        keep = draw(st.booleans())
        out = [1 if d in axes else e for d, e in enumerate(shape) if keep or d not in axes]
        attrs = f"axes = {axes}, keepdims = {str(keep).lower()}"
    elif kind == "softmax":
        attrs = f"axis = {draw(st.integers(-4, 3))}"
    else:
        size = draw(st.sampled_from([1, 3, 5]))
        attrs = f"size = {size}, alpha = 1.0e-01 : f32, beta = 7.5e-01 : f32, bias = 2.0 : f32"
    typed = lambda dims: f"tensor<{'x'.join(map(str, dims))}xf32>"  # noqa: E731
    text = f"graph.{kind} %x" + (f" {{{attrs}}}" if attrs else "")
    return text, typed(shape), typed(out)


@SOUNDNESS
@given(
    st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 9), st.integers(1, 9)),
    st.tuples(st.integers(1, 3), st.integers(1, 3)),
    st.tuples(st.integers(1, 3), st.integers(1, 3)),
    st.tuples(st.integers(1, 2), st.integers(1, 2)),
    st.data(),
)
def test_a_max_pool_reads_its_input_in_place_exactly(shape, size, strides, dilation, data) -> None:
    """``kernel-separate-window`` reads a padded max_pool2d's input itself,
    rows clamped, with no padded copy, where it separates the window and
    every window reaches into the input (rows of dilation 1, padding below
    the window); the outputs are the naive kernel's bit for bit, NaN,
    infinities and signed zeros among the inputs."""
    n, c, h, w = shape
    pads = [data.draw(st.integers(0, k - 1)) for k in (size[0], size[0], size[1], size[1])]
    top, bottom, left, right = pads
    out = [
        (extent + a + b - d * (k - 1) - 1) // stride + 1
        for extent, a, b, d, k, stride in zip((h, w), (top, left), (bottom, right), dilation, size, strides)
    ]
    assume(min(out) > 0)
    source, result = f"tensor<{n}x{c}x{h}x{w}xf32>", f"tensor<{n}x{c}x{out[0]}x{out[1]}xf32>"
    attrs = (
        f"pool_size = [{size[0]}, {size[1]}], strides = [{strides[0]}, {strides[1]}], "
        f"padding = [{top}, {left}, {bottom}, {right}], dilation = [{dilation[0]}, {dilation[1]}]"
    )
    try:
        module = ember.parse(
            f"func.func @main(%x: {source}) -> {result} {{\n"
            f"  %y = graph.max_pool2d %x {{{attrs}}} : ({source}) -> {result}\n"
            f"  func.return %y : {result}\n}}\n"
        )
    except ember.IRError:
        assume(False)  # a dilated window of padding alone: not a valid pool
    plain = apply_passes(module, PLAIN)
    scheduled = apply_passes(plain, Target("llvm").default_schedule)
    blocks = {b.block_name.data for b in scheduled.walk() if isinstance(b, BlockOp)}
    if any(pads) and dilation[0] == 1 and "max_pool2d_window" in blocks:  # separated
        assert "pad_copy" not in blocks
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    mask = rng.random(x.shape) < 0.2
    x[mask] = rng.choice(specials, mask.sum())
    (expected,) = ember.interpret(plain, "main", x)
    (got,) = ember.interpret(_reversed_independent_loops(scheduled), "main", x)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_a_max_pool_keeps_its_copy_of_an_input_the_kernel_writes() -> None:
    """The window row reads the input in place only where nothing in the
    kernel writes the input after it was copied."""
    padded = Path(__file__).parent / "filecheck" / "passes" / "kernel-separate-window-padded.mlir"
    text = "\n".join(line for line in padded.read_text().splitlines() if not line.startswith("//"))
    write = """
  kernel.for %i = 0 to 8 {
    kernel.block "overwrite" (%vi = spatial %i) {
      %z = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %data[%z, %z, %z, %vi] : memref<1x2x6x8xf32>
    }
  }
  kernel.for %n_1 = 0 to 1 {"""
    assert text.count("  kernel.for %n_1 = 0 to 1 {") == 1
    changed = text.replace("  kernel.for %n_1 = 0 to 1 {", write)
    for source, copied in ((text, False), (changed, True)):
        after = apply_passes(ember.parse(source), "kernel-separate-window")
        blocks = {b.block_name.data for b in after.walk() if isinstance(b, BlockOp)}
        assert "max_pool2d_window" in blocks and ("pad_copy" in blocks) is copied


@SOUNDNESS
@given(_reduction_ops(), st.integers(0, 2**32 - 1))
def test_default_schedule_of_reductions_is_sound(op, seed) -> None:
    """Pools, global average pools, reductions, softmax and lrn, emitted naive,
    compute the same outputs bit for bit after the default schedule (with
    ``kernel-accumulate-rows``); a pool's rows become vector loops."""
    text, source, result = op
    module = ember.parse(
        f"func.func @main(%x: {source}) -> {result} {{\n"
        f"  %y = {text} : ({source}) -> {result}\n  func.return %y : {result}\n}}\n"
    )
    plain = apply_passes(module, PLAIN)
    name = text.split()[0].removeprefix("graph.")
    nests = [
        loop
        for loop in plain.walk()
        if isinstance(loop, ForOp)
        and isinstance(loop.parent_op(), FuncOp)
        and any(isinstance(b, BlockOp) and b.block_name.data.startswith(name) for b in loop.walk())
    ]
    assert nests and {op.kind.data for n in nests for op in n.walk() if isinstance(op, ForOp)} == {
        "serial"
    }  # the op's own nest is naive (a pool's padded copy is another's)
    scheduled = apply_passes(plain, Target("llvm").default_schedule)
    shape = [int(d) for d in source[len("tensor<") : -len("xf32>")].split("x")]
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    _assert_same_results(plain, scheduled, [x])
    *rows, width = (int(d) for d in result[len("tensor<") : -len("xf32>")].split("x"))
    if "pool2d %x {" in text and width > 1 and max(rows) > 1:  # else %ow is the parallel loop
        assert f"memref.alloc() : memref<{width}xf32>" in str(scheduled)


# --------------------------------------------------------------------------
# What the passes do (more cases in tests/filecheck/passes/kernel-*.mlir)
# --------------------------------------------------------------------------

ADD_RELU = """
func.func @main(%a: tensor<2x3x4x5xf32>, %b: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> {
  %s = graph.add %a, %b : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %r = graph.relu %s : tensor<2x3x4x5xf32>
  func.return %r : tensor<2x3x4x5xf32>
}
"""


def _loop_kinds(module: ModuleOp) -> list[tuple[int, str]]:
    return [(op.trip_count, op.kind.data) for op in module.walk() if isinstance(op, ForOp)]


def test_lowering_emits_plain_loops_and_the_default_schedule_marks_them() -> None:
    plain = apply_passes(ADD_RELU, "fuse-ops," + PLAIN)
    assert _loop_kinds(plain) == [(2, "serial"), (3, "serial"), (20, "serial")]
    scheduled = apply_passes(plain, Target("llvm").default_schedule)
    assert _loop_kinds(scheduled) == [(2, "parallel"), (3, "serial"), (20, "vectorized")]


def test_schedule_passes_report_each_loop_they_mark() -> None:
    plain = apply_passes(ADD_RELU, "fuse-ops," + PLAIN)
    _, records = apply_passes(plain, "kernel-vectorize,kernel-parallelize", remarks=True)
    said = [(r.pass_name, r.kind, r.message) for r in records]
    assert said == [
        ("kernel-vectorize", "applied", "kernel @fused_add_relu: loop %hw of 20 iterations made vectorized"),
        ("kernel-parallelize", "applied", "kernel @fused_add_relu: loop %i0 of 2 iterations made parallel"),
    ]


def test_kernel_tile_splits_independent_loops_and_leaves_the_rest() -> None:
    plain = apply_passes(ADD_RELU, "fuse-ops," + PLAIN)
    tiled = apply_passes(plain, "kernel-tile{sizes=0,0,5}")
    # 20 = 4 tiles of 5: the tile loop goes outside the point loops.
    assert _loop_kinds(tiled) == [(4, "serial"), (2, "serial"), (3, "serial"), (5, "serial")]
    untouched = apply_passes(plain, "kernel-tile{sizes=3,0,7}")  # neither divides
    assert str(untouched) == str(plain)


MATMUL_KERNEL = """
func.func @matmul(%x: memref<4x8xf32>, %w: memref<10x8xf32>, %y: memref<4x10xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 {
    kernel.for %j = 0 to 10 {
      kernel.for %k = 0 to 8 {
        kernel.block "y" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {
          kernel.init {
            %z = arith.constant 0.0 : f32
            memref.store %z, %y[%vi, %vj] : memref<4x10xf32>
          }
          %a = memref.load %x[%vi, %vk] : memref<4x8xf32>
          %b = memref.load %w[%vj, %vk] : memref<10x8xf32>
          %p = arith.mulf %a, %b : f32
          %s = memref.load %y[%vi, %vj] : memref<4x10xf32>
          %t = arith.addf %s, %p : f32
          memref.store %t, %y[%vi, %vj] : memref<4x10xf32>
        }
      }
    }
  }
  func.return
}
"""


def test_kernel_tile_leaves_reduction_loops() -> None:
    """Tiling a reduction would reorder a float sum: ``k`` stays whole."""
    tiled = apply_passes(MATMUL_KERNEL, "kernel-tile{sizes=2,5,4}")
    assert _loop_kinds(tiled) == [(2, "serial"), (2, "serial"), (2, "serial"), (5, "serial"), (8, "serial")]


def test_kernel_pack_layout_reads_panels() -> None:
    from ember.interp.kernel_impls import run_kernel
    from ember.lowering.graph_to_kernel import WeightPacking

    packed = apply_passes(MATMUL_KERNEL, "kernel-pack-layout{kernel=matmul arg=1 lanes=4}")
    [kernel] = kernel_functions(packed)
    assert [str(t) for t in kernel.function_type.inputs][1] == "memref<3x8x4xf32>"
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 8), np.float32), rng.standard_normal((10, 8), np.float32)
    expected, got = np.empty((4, 10), np.float32), np.empty((4, 10), np.float32)
    run_kernel(ember.parse(MATMUL_KERNEL), "matmul", x, w, expected)
    run_kernel(packed, "matmul", x, WeightPacking(4).pack(w), got)
    np.testing.assert_array_equal(got, expected)


def test_kernel_pack_layout_blocks_any_axis() -> None:
    """NCHW → NCHW8c: channels in blocks of 8, the lane innermost; along
    axis 0 the layout is the micro-kernels' weight panels."""
    from ember.lowering.graph_to_kernel import WeightPacking
    from ember.passes.kernel_pack_layout import pack, packed_shape

    x = np.arange(2 * 12 * 3 * 3, dtype=np.float32).reshape(2, 12, 3, 3)
    blocked = pack(x, 1, 8)
    assert blocked.shape == packed_shape(x.shape, 1, 8) == (2, 2, 3, 3, 8)
    assert blocked[1, 1, 2, 0, 3] == x[1, 8 + 3, 2, 0] and blocked[1, 1, 2, 0, 4] == 0
    np.testing.assert_array_equal(pack(x, 0, 4), WeightPacking(4).pack(x))


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("kernel-tile", "sizes must be one or more sizes"),
        ("kernel-tile{sizes=-1}", "sizes must be one or more sizes"),
        ("kernel-unroll{max-extent=0}", "max-extent must be >= 1"),
        ("kernel-pack-layout", "give the kernel to change"),
        ("kernel-pack-layout{kernel=nope}", "no kernel @nope in the module"),
        ("kernel-pack-layout{kernel=fused_add_relu arg=9}", "there is no arg=9"),
        ("kernel-pack-layout{kernel=fused_add_relu arg=2}", "used by memref.store"),
        ("kernel-pack-layout{kernel=fused_add_relu arg=0 axis=4}", "there is no axis=4"),
        ("kernel-pack-layout{kernel=fused_add_relu arg=0}", "not a graph.constant"),
        ("kernel-pack-layout{kernel=main}", "@main is not a kernel"),
    ],
)
def test_schedule_passes_reject_bad_options_naming_them(pipeline, message) -> None:
    plain = apply_passes(ADD_RELU, "fuse-ops," + PLAIN)
    with pytest.raises(PassError, match=message):
        apply_passes(plain, pipeline)


# --------------------------------------------------------------------------
# The default schedule reproduces the generators' kernels
# --------------------------------------------------------------------------

CPUS = ("znver3", "skylake-avx512")


def _kernel_text(name: str, cpu: str, schedule: str | None = None) -> str:
    module, params = workloads.get(name)
    options = CompileOptions(target=Target.parse(f"llvm -mcpu={cpu}"), schedule=schedule)
    kernels = to_kernel(to_graph(module, params, options), options)
    return "\n".join(str(f) for f in kernel_functions(kernels)) + "\n"


_REGENERATE = (
    "the kernels of {0} differ from tests/golden/ (recorded when the "
    "generators chose loop kinds themselves); if a change to a kernel "
    "generator meant this, record the new kernels (see tests/golden/README)"
)


@pytest.mark.parametrize("cpu", CPUS)
@pytest.mark.parametrize("name", ["mlp", "convbnrelu", "tiny_pipe"])
def test_default_schedule_reproduces_the_recorded_kernels(name, cpu) -> None:
    expected = (GOLDEN / f"kernels-{name}-{cpu}.mlir").read_text(encoding="utf-8")
    assert _kernel_text(name, cpu) == expected, _REGENERATE.format(name)


@pytest.mark.parametrize("cpu", CPUS)
def test_default_schedule_reproduces_resnet18s_kernels(cpu) -> None:
    expected = json.loads((GOLDEN / "kernels-sha256.json").read_text(encoding="utf-8"))[f"resnet18-{cpu}"]
    text = _kernel_text("resnet18", cpu)
    assert hashlib.sha256(text.encode()).hexdigest() == expected, _REGENERATE.format("resnet18")


@pytest.mark.parametrize("name", ["mlp", "convbnrelu", "tiny_pipe", "resnet18"])
def test_kernels_scheduled_one_at_a_time_are_the_stages_kernels(name) -> None:
    """A build takes each kernel through the whole schedule before the next
    (``scheduled_kernels``, the default schedule's passes all
    ``KernelPass``es): each kernel as it is yielded, and the module at the
    end (the entry, whose weights ``kernel-tensorize`` packs), are what the
    ``kernel`` stage makes pass after pass."""
    from ember.compiler import scheduled_kernels
    from ember.passes.kernel_pass import KernelPass
    from ember.passes.pipeline import parse_passes

    options = CompileOptions(target=Target.parse("llvm -mcpu=znver3"))
    assert all(isinstance(p, KernelPass) for p in parse_passes(options.kernel_schedule))
    module, params = workloads.get(name)
    expected = to_kernel(to_graph(module, params, options), options)
    graph = to_graph(module, params, options)
    stream = scheduled_kernels(graph, options)
    assert " parallel" not in str(graph)  # nothing scheduled before it is asked for
    yielded = [str(kernel) for kernel in stream]  # each as it is yielded
    assert yielded == [str(kernel) for kernel in kernel_functions(expected)]
    assert str(graph) == str(expected)


# --------------------------------------------------------------------------
# The schedule as an option: build, cache key, ember-translate
# --------------------------------------------------------------------------


def test_build_takes_a_schedule_and_computes_the_same() -> None:
    inputs = [np.linspace(-1, 1, 120, dtype=np.float32).reshape(2, 3, 4, 5)] * 2
    expected = ember.interpret(ember.parse(ADD_RELU), "main", *inputs)[0]
    for schedule in ("", "kernel-tile{sizes=0,0,4},kernel-vectorize,kernel-parallelize"):
        lib = ember.build(ADD_RELU, "llvm", options={"schedule": schedule}, cache=False)
        got = lib["main"](*inputs)
        np.testing.assert_array_equal(np.asarray(got), expected)


def test_the_schedule_is_part_of_the_cache_key() -> None:
    from ember.runtime.cache import build_key

    keys = {
        build_key(ADD_RELU, "llvm", CompileOptions(schedule=schedule), {})
        for schedule in ("", "kernel-vectorize", "kernel-vectorize,kernel-parallelize")
    }
    assert len(keys) == 3


def test_build_rejects_a_bad_schedule_before_compiling() -> None:
    with pytest.raises(PassError, match="unknown pass 'kernel-vectorise'"):
        ember.build(ADD_RELU, "llvm", options={"schedule": "kernel-vectorise"}, cache=False)
    with pytest.raises(RuntimeFailure, match="build option 'schedule' must be a str"):
        ember.build(ADD_RELU, "llvm", options={"schedule": 3}, cache=False)


def test_ember_translate_prints_and_overrides_the_schedule(tmp_path, capsys) -> None:
    source = tmp_path / "net.mlir"
    source.write_text(ADD_RELU)
    assert ember_translate([str(source), "--emit=schedule"]) == 0
    assert capsys.readouterr().out == Target("llvm").default_schedule + "\n"
    assert ember_translate([str(source), "--emit=schedule", "--schedule=kernel-unroll"]) == 0
    assert capsys.readouterr().out == "kernel-unroll\n"
    assert ember_translate([str(source), "--emit=kernel", "--schedule="]) == 0
    assert " parallel" not in capsys.readouterr().out
    assert ember_translate([str(source), "--emit=kernel"]) == 0
    assert " parallel" in capsys.readouterr().out
    assert ember_translate([str(source), "--emit=kernel", "--schedule=nope"]) == 1
    err = capsys.readouterr().err
    assert "unknown pass 'nope'" in err and "Traceback" not in err
