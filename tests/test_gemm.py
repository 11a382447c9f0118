"""The GEMM micro-kernels of dense and matmul (:mod:`ember.lowering.gemm`)
against numpy, at random shapes and on one and two threads.

Shapes cross the tile edges on purpose: rows on both sides of
``PACK_MIN_ROWS`` (B packed by the kernel or read in place), columns that
are not a multiple of the tile width (the last column panel is partly zero),
reductions of any length, and batch axes that broadcast.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

import ember
from ember.dialects.kernel import BlockOp, ForOp, is_kernel
from ember.lowering.gemm import PACK_MIN_ROWS, ColumnPanels
from ember.passes.bind_params import bind_params_in_place
from ember.passes.kernel_tensorize import KernelTensorizePass
from ember.passes.lower_graph_to_kernel import LowerGraphToKernelPass
from ember.runtime import threads


@pytest.fixture(autouse=True)
def restore_thread_count() -> Iterator[None]:
    before = threads.num_threads()
    yield
    threads.set_num_threads(before)


def _tensor(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


Shape = tuple[int, ...]
Case = tuple[str, Shape, Shape, Shape, bool]
"""op, A's shape, B's shape, the result's shape, whether B is a constant."""


def _program(op: str, a: Shape, b: Shape, out: Shape) -> str:
    ta, tb, to = _tensor(a), _tensor(b), _tensor(out)
    return f"""
func.func @main(%a: {ta}, %b: {tb}) -> {to} {{
  %0 = graph.{op} %a, %b : ({ta}, {tb}) -> {to}
  func.return %0 : {to}
}}"""


def _random(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _run(
    text: str, a: np.ndarray, b: np.ndarray, constant_b: bool
) -> dict[int, np.ndarray]:
    """The result on 1 and 2 threads, B bound as a constant or passed in."""
    params = {"b": b} if constant_b else {}
    lib = ember.build(ember.parse(text), target="llvm", params=params)
    executor = ember.GraphExecutor(lib["default"](ember.cpu()))
    executor.set_input(**({"a": a} if constant_b else {"a": a, "b": b}))
    results = {}
    for count in (1, 2):
        threads.set_num_threads(count)
        executor.run()
        results[count] = executor.get_output(0).numpy().copy()
    return results


def _kernel_of(text: str, params: dict[str, np.ndarray]) -> FuncOp:
    module = ember.parse(text)
    bind_params_in_place(module, params, "main")
    # AVX2's 8 lanes, whatever this host has: the panel widths below are 2 x 8.
    LowerGraphToKernelPass(vector_bits=256).apply(Context(), module)
    KernelTensorizePass(vector_bits=256).apply(Context(), module)
    return next(op for op in module.ops if is_kernel(op))


def test_column_panels_layout() -> None:
    """``P[…, j // w, k, j % w] = B[…, k, j]``, the columns past N zero."""
    b = _random((2, 3, 5), 0)
    packed = ColumnPanels(4).pack(b)
    assert packed.shape == ColumnPanels(4).shape(b.shape) == (2, 2, 3, 4)
    for j in range(5):
        np.testing.assert_array_equal(packed[:, j // 4, :, j % 4], b[:, :, j])
    np.testing.assert_array_equal(packed[:, 1, :, 1:], 0.0)


def test_matmul_reads_b_in_column_panels() -> None:
    """A constant B becomes a packed kernel argument (bind time); a computed
    B is packed by the kernel when A has PACK_MIN_ROWS rows, else read in
    place."""
    rows, depth, columns = PACK_MIN_ROWS, 12, 20
    text = _program("matmul", (rows, depth), (depth, columns), (rows, columns))
    kernel = _kernel_of(text, {"b": _random((depth, columns), 1)})
    assert str(kernel.function_type.inputs.data[1]) == "memref<2x12x16xf32>"
    assert {"matmul"} <= _blocks(kernel) and "pack" not in _blocks(kernel)
    assert "pack" in _blocks(_kernel_of(text, {}))
    short = _program("matmul", (rows - 1, depth), (depth, columns), (rows - 1, columns))
    assert "pack" not in _blocks(_kernel_of(short, {}))


def _blocks(kernel: FuncOp) -> set[str]:
    return {op.block_name.data for op in kernel.walk() if isinstance(op, BlockOp)}


@st.composite
def gemm_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(["matmul", "dense"]))
    rows = draw(
        st.one_of(st.integers(1, 9), st.integers(PACK_MIN_ROWS, PACK_MIN_ROWS + 7))
    )
    depth = draw(st.integers(1, 40))
    columns = draw(st.integers(1, 40))
    constant_b = draw(st.booleans())
    if op == "dense":
        return op, (rows, depth), (columns, depth), (rows, columns), constant_b
    batch_a = draw(st.sampled_from([(), (3,), (2, 1)]))
    batch_b = draw(st.sampled_from([(), (3,), (1,), (1, 3)]))
    batch = np.broadcast_shapes(batch_a, batch_b)
    return (
        op,
        (*batch_a, rows, depth),
        (*batch_b, depth, columns),
        (*batch, rows, columns),
        constant_b,
    )


@settings(max_examples=20)
@given(gemm_cases())
def test_gemm_matches_numpy_on_one_and_two_threads(case: Case) -> None:
    op, a_shape, b_shape, out_shape, constant_b = case
    a, b = _random(a_shape, 2), _random(b_shape, 3)
    want = a.astype(np.float64) @ (b.T if op == "dense" else b).astype(np.float64)
    depth = a_shape[-1]
    results = _run(_program(op, a_shape, b_shape, out_shape), a, b, constant_b)
    for count, got in results.items():
        assert got.shape == out_shape
        # f32 sums of `depth` products of standard normals, in any order.
        np.testing.assert_allclose(
            got, want, rtol=1e-4, atol=1e-5 * depth, err_msg=f"{count} threads"
        )


@pytest.mark.parametrize(
    "case",
    [
        ("matmul", (2, 70, 150), (150, 77), (2, 70, 77), False),
        ("matmul", (70, 150), (2, 150, 77), (2, 70, 77), True),
        ("dense", (67, 300), (45, 300), (67, 45), True),
    ],
)
def test_gemm_large_enough_for_threads(case: Case) -> None:
    """Products over PARALLEL_MIN_FLOPS: their tile loop is parallel, and two
    threads (dynamic chunks, a partial last tile) compute what one does."""
    op, a_shape, b_shape, out_shape, constant_b = case
    text = _program(op, a_shape, b_shape, out_shape)
    a, b = _random(a_shape, 4), _random(b_shape, 5)
    kernel = _kernel_of(text, {"b": b} if constant_b else {})
    loops = [op for op in kernel.walk() if isinstance(op, ForOp)]
    assert any(loop.kind.data == "parallel" for loop in loops)
    want = a.astype(np.float64) @ (b.T if op == "dense" else b).astype(np.float64)
    results = _run(text, a, b, constant_b)
    for count, got in results.items():
        np.testing.assert_allclose(
            got, want, rtol=1e-4, atol=1e-5 * a_shape[-1], err_msg=f"{count} threads"
        )
    np.testing.assert_allclose(results[2], results[1], rtol=1e-6, atol=1e-6)
