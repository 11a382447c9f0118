"""``kernel-pad-input``: a naive conv2d's guarded window reads become reads
of a padded f32 copy of its input.

* Soundness: random small convolutions (padding on any side, strides,
  dilation, groups, depthwise, f16, fused epilogues) and transposed
  convolutions (their input spread at stride steps), lowered naive,
  compute the same results bit for bit in the kernel interpreter after the
  pass, and no read of the input is left guarded.
* The copy is as large as the windows read, not as the layer's padding.
* A pool's window reads get a copy padded with its fill (-inf for max);
  kernels without window reads (dense) are left as they are.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import FloatAttr

import ember
from ember.dialects.kernel import BlockOp, kernel_functions
from ember.passes.kernel_pad_input import window_reads
from ember.passes.pipeline import apply_passes
from tests.test_kernel_tensorize import (
    assert_same_bits,
    SOUNDNESS,
    _naive,
    _program,
    convolutions,
    transposed_convolutions,
)
from tests.test_schedule import _reversed_independent_loops


def _conv_kernel(module):
    [kernel] = [k for k in kernel_functions(module) if k.sym_name.data.removeprefix("fused_").startswith("conv2d")]
    return kernel


@SOUNDNESS
@given(st.one_of(convolutions(), transposed_convolutions()))
def test_kernel_pad_input_is_sound(case) -> None:
    text, params, inputs = case
    naive = _naive(text, params, 256)
    padded = apply_passes(naive, "kernel-pad-input")
    ember.verify_module(padded)
    kernel = _conv_kernel(padded)
    assert window_reads(kernel) == []
    names = ("conv2d", "conv2d_transpose")
    [block] = [op for op in kernel.walk() if isinstance(op, BlockOp) and op.block_name.data in names]
    assert not any(isinstance(op, arith.SelectOp) for op in block.body.block.ops)
    if "padding = [0, 0, 0, 0]" not in text or "f16" in text or "transpose" in text:
        # The product reads the copy, which the kernel frees at the end.
        [alloc] = [op for op in kernel.body.block.ops if isinstance(op, memref.AllocOp)]
        reads = {op.memref for op in block.body.block.ops if isinstance(op, memref.LoadOp)}
        assert alloc.memref in reads
        assert isinstance(kernel.body.block.last_op.prev_op, memref.DeallocOp)
    assert_same_bits(naive, padded, inputs)


def test_the_copy_holds_what_the_windows_read() -> None:
    """Padding [top 1, left 0, bottom 2, right 1], stride 2, 3x3 over 9x9:
    the windows reach padded rows 0..10 and columns 0..8, so the copy is
    11 x 9 (one row on top, one below; no column added)."""
    text = _program(
        "conv2d", (1, 2, 9, 9), (3, 2, 3, 3), (1, 3, 5, 4), "f32", "bias_relu",
        "{strides = [2, 2], padding = [1, 0, 2, 1]}",
    )
    naive = _naive(text, {}, 256)
    padded = apply_passes(naive, "kernel-pad-input")
    kernel = _conv_kernel(padded)
    [alloc] = [op for op in kernel.body.block.ops if isinstance(op, memref.AllocOp)]
    assert alloc.memref.type.get_shape() == (1, 2, 11, 9)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((1, 2, 9, 9), (3, 2, 3, 3), (3,))]
    expected = ember.interpret(ember.parse(text), "main", *args)[0]
    scheduled = apply_passes(padded, "kernel-tensorize{vector-bits=256},kernel-vectorize,kernel-parallelize")
    np.testing.assert_allclose(ember.interpret(scheduled, "main", *args)[0], expected, rtol=1e-5, atol=1e-5)


POOL = """
func.func @main(%x: tensor<1x2x6x6xf16>, %w: tensor<5x7xf16>, %y: tensor<3x7xf16>) -> (tensor<1x2x3x3xf16>, tensor<3x5xf16>) {
  %0 = graph.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x2x6x6xf16>) -> tensor<1x2x3x3xf16>
  %1 = graph.dense %y, %w : (tensor<3x7xf16>, tensor<5x7xf16>) -> tensor<3x5xf16>
  func.return %0, %1 : tensor<1x2x3x3xf16>, tensor<3x5xf16>
}
"""


def test_a_pool_reads_a_copy_padded_with_its_fill_and_dense_is_left_alone() -> None:
    """The pools read through their padding too (-inf for max): the pass
    gives the max pool an f32 copy filled with -inf, bit for bit the same
    results; dense has no window read and stays as it was."""
    naive = _naive(POOL, {}, 256)
    padded = apply_passes(naive, "kernel-pad-input")
    kernels = {k.sym_name.data: k for k in kernel_functions(padded)}
    naive_kernels = {k.sym_name.data: k for k in kernel_functions(naive)}
    [pool] = [name for name in kernels if "max_pool2d" in name]
    [dense] = [name for name in kernels if "dense" in name]
    assert window_reads(naive_kernels[pool]) != []
    assert window_reads(kernels[pool]) == []
    fills = [
        op.value.value.data
        for op in kernels[pool].walk()
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr)
    ]
    assert -np.inf in fills
    assert window_reads(naive_kernels[dense]) == []
    assert str(kernels[dense]) == str(naive_kernels[dense])
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(s).astype(np.float16) for s in ((1, 2, 6, 6), (5, 7), (3, 7))]
    expected = ember.interpret(naive, "main", *args)
    got = ember.interpret(_reversed_independent_loops(padded), "main", *args)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
