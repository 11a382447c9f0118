"""The kernel dialect: parsing, printing, verifiers and the reference interpreter.

The seed-003 kernels (``linear0``, ``relu0``, ``linear1``) live in the
filecheck round-trip file and are read from there, so the text that lit checks
is the text whose meaning is checked against numpy here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import FloatAttr, MemRefType, ModuleOp, f32

import ember
from ember.dialects.kernel import (
    BlockOp,
    ForOp,
    InitOp,
    kernel_functions,
    mark_kernel,
)
from ember.errors import IRError, RuntimeFailure
from ember.interp.kernel_impls import run_kernel

SEED_FILE = Path(__file__).parent / "filecheck" / "dialects" / "kernel" / "seed-003.mlir"


@pytest.fixture(scope="module")
def seed_module() -> ModuleOp:
    return ember.parse(SEED_FILE.read_text(encoding="utf-8"), name=str(SEED_FILE))


def _random(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


# --------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------


def test_seed_kernels_are_kernels(seed_module: ModuleOp) -> None:
    names = [f.sym_name.data for f in kernel_functions(seed_module)]
    assert names == ["linear0", "relu0", "linear1", "tiled"]


def test_round_trip_custom_and_generic(seed_module: ModuleOp) -> None:
    text = ember.to_text(seed_module)
    assert ember.to_text(ember.parse(text)) == text
    generic = ember.to_text(seed_module, generic=True)
    assert '"kernel.block"(' in generic and '"kernel.block"(' not in text
    assert ember.to_text(ember.parse(generic)) == text


def test_loop_defaults_are_not_printed() -> None:
    module = ember.parse(
        """
        func.func @k(%A: memref<8xf32>) attributes {kernel.kernel} {
          kernel.for %i = 0 to 8 step 1 serial {
          }
          kernel.for %j = 0 to 8 step 2 parallel {
          }
          func.return
        }
        """
    )
    text = ember.to_text(module)
    assert "kernel.for %i = 0 to 8 {" in text
    assert "kernel.for %j = 0 to 8 step 2 parallel {" in text


def test_gpu_binding_kinds_parse() -> None:
    module = ember.parse(
        """
        func.func @k(%A: memref<8xf32>) attributes {kernel.kernel} {
          kernel.for %b = 0 to 2 gpu.block.x {
            kernel.for %t = 0 to 4 gpu.thread.x {
            }
          }
          func.return
        }
        """
    )
    kinds = [op.kind.data for op in module.walk() if isinstance(op, ForOp)]
    assert kinds == ["gpu.block.x", "gpu.thread.x"]


# --------------------------------------------------------------------------
# Verifiers
# --------------------------------------------------------------------------


def _kernel(body: str, args: str = "%Y: memref<4x4xf32>") -> str:
    return f"func.func @k({args}) attributes {{kernel.kernel}} {{\n{body}\n  func.return\n}}"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("kernel.for %i = 0 to 4 step -1 {\n}", "kernel.for %i: step must be positive, got -1"),
        ("kernel.for %i = 5 to 4 {\n}", "lower bound 5 is greater than upper bound 4"),
        ("kernel.for %i = 0 to 4 spiral {\n}", "unknown loop kind 'spiral'"),
        (
            """kernel.for %i = 0 to 4 {
                 kernel.for %k = 0 to 4 {
                   kernel.block "R" (%vi = spatial %i, %vk = reduce %k) {
                     %c = arith.constant 1 : index
                     %idx = arith.addi %vk, %c : index
                     %z = arith.constant 0.0 : f32
                     memref.store %z, %Y[%vi, %idx] : memref<4x4xf32>
                   }
                 }
               }""",
            'kernel.block "R": memref.store into %Y is indexed by reduce variable %vk',
        ),
        (
            """kernel.for %i = 0 to 4 {
                 kernel.for %k = 0 to 4 {
                   kernel.block "R" (%vi = spatial %i, %vk = reduce %k) {
                     kernel.init {
                       %z = arith.constant 0.0 : f32
                       memref.store %z, %Y[%vi, %vk] : memref<4x4xf32>
                     }
                   }
                 }
               }""",
            "kernel.init uses reduce variable %vk in memref.store",
        ),
    ],
)
def test_verifier_errors_name_op_and_values(body: str, message: str) -> None:
    with pytest.raises(IRError) as info:
        ember.parse(_kernel(body))
    assert message in str(info.value)


def test_store_by_spatial_var_in_reduction_block_is_fine() -> None:
    """Only a store indexed by a reduce variable is a scatter: %vi is spatial."""
    module = ember.parse(
        _kernel(
            """kernel.for %i = 0 to 4 {
                 kernel.for %k = 0 to 4 {
                   kernel.block "R" (%vi = spatial %i, %vk = reduce %k) {
                     %z = arith.constant 0.0 : f32
                     memref.store %z, %Y[%vi, %vi] : memref<4x4xf32>
                   }
                 }
               }"""
        )
    )
    (block,) = [op for op in module.walk() if isinstance(op, BlockOp)]
    assert block.kinds == ("spatial", "reduce")
    y = np.ones((4, 4), np.float32)
    run_kernel(module, "k", y)
    np.testing.assert_array_equal(y, 1 - np.eye(4, dtype=np.float32))


def test_unknown_iteration_kind_is_a_parse_error() -> None:
    with pytest.raises(IRError, match="expected 'spatial' or 'reduce', got 'sideways'"):
        ember.parse(
            _kernel(
                """kernel.for %i = 0 to 4 {
                     kernel.block "B" (%vi = sideways %i) {
                     }
                   }"""
            )
        )


# --------------------------------------------------------------------------
# Interpreter
# --------------------------------------------------------------------------


def test_relu0_matches_numpy(seed_module: ModuleOp) -> None:
    x = _random((1, 128))
    y = np.zeros((1, 128), np.float32)
    run_kernel(seed_module, "relu0", x, y)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


@pytest.mark.parametrize(("name", "units", "inputs"), [("linear1", 10, 128), ("linear0", 128, 784)])
def test_linear_matches_numpy(seed_module: ModuleOp, name: str, units: int, inputs: int) -> None:
    x, w, b = _random((1, inputs), 1), _random((units, inputs), 2), _random((units,), 3)
    z = np.zeros((1, units), np.float32)
    run_kernel(seed_module, name, x, w, b, z)
    np.testing.assert_allclose(z, x @ w.T + b, rtol=1e-5, atol=1e-4)


def test_tiled_kernel_matches_numpy(seed_module: ModuleOp) -> None:
    a = _random((64,))
    c = np.zeros(64, np.float32)
    run_kernel(seed_module, "tiled", a, c)
    np.testing.assert_allclose(c, np.exp(a), rtol=1e-6)


def test_scalar_ops_xdsl_lacks() -> None:
    module = ember.parse(
        _kernel(
            """kernel.for %i = 0 to 4 {
                 kernel.block "B" (%vi = spatial %i) {
                   %a = memref.load %A[%vi] : memref<4xf32>
                   %n = arith.negf %a : f32
                   %ii = arith.index_cast %vi : index to i32
                   %f = arith.sitofp %ii : i32 to f32
                   %one = arith.constant 1.0 : f32
                   %den = arith.addf %f, %one : f32
                   %q = arith.divf %n, %den : f32
                   %t = math.tanh %q : f32
                   memref.store %t, %Y[%vi] : memref<4xf32>
                 }
               }""",
            args="%A: memref<4xf32>, %Y: memref<4xf32>",
        )
    )
    a = _random((4,))
    y = np.zeros(4, np.float32)
    run_kernel(module, "k", a, y)
    np.testing.assert_allclose(y, np.tanh(-a / (np.arange(4) + 1)), rtol=1e-6)


def test_reading_uninitialised_temporary_gives_nan() -> None:
    module = ember.parse(
        _kernel(
            """%T = memref.alloc() : memref<4xf32>
               kernel.for %i = 0 to 4 {
                 kernel.block "B" (%vi = spatial %i) {
                   %t = memref.load %T[%vi] : memref<4xf32>
                   memref.store %t, %Y[%vi] : memref<4xf32>
                 }
               }""",
            args="%Y: memref<4xf32>",
        )
    )
    y = np.zeros(4, np.float32)
    run_kernel(module, "k", y)
    assert np.isnan(y).all()


def test_out_of_bounds_access_is_reported() -> None:
    # The verifier rejects this kernel (tests/test_index_bounds.py); the
    # interpreter checks every access itself, for IR that was not verified.
    module = ember.parse(
        _kernel(
            """kernel.for %i = 0 to 5 {
                 kernel.block "B" (%vi = spatial %i) {
                   %z = arith.constant 0.0 : f32
                   memref.store %z, %Y[%vi] : memref<4xf32>
                 }
               }""",
            args="%Y: memref<4xf32>",
        ),
        verify=False,
    )
    with pytest.raises(RuntimeFailure, match=r"memref.store: index \[4\] is out of bounds for %Y of shape \[4\]"):
        run_kernel(module, "k", np.zeros(4, np.float32))


def test_run_kernel_checks_its_arguments(seed_module: ModuleOp) -> None:
    x = np.zeros((1, 128), np.float32)
    with pytest.raises(RuntimeFailure, match=r"argument #1 is float64\[1, 128\], expected float32\[1, 128\]"):
        run_kernel(seed_module, "relu0", x, np.zeros((1, 128)))
    with pytest.raises(RuntimeFailure, match="takes 2 arrays, got 1"):
        run_kernel(seed_module, "relu0", x)
    with pytest.raises(IRError, match="no kernel @nope"):
        run_kernel(seed_module, "nope", x)


def _build_matmul(m: int, n: int, k: int) -> ModuleOp:
    """C = A @ B as a kernel built from Python (loop order i, k, j)."""
    a_t, b_t, c_t = MemRefType(f32, [m, k]), MemRefType(f32, [k, n]), MemRefType(f32, [m, n])
    kernel = mark_kernel(func.FuncOp("matmul", ((a_t, b_t, c_t), ())))
    a, b, c = kernel.args
    with ImplicitBuilder(kernel.body):
        loop_i = ForOp(0, m)
        with ImplicitBuilder(loop_i.body):
            loop_k = ForOp(0, k)
            with ImplicitBuilder(loop_k.body):
                loop_j = ForOp(0, n, kind="vectorized")
                with ImplicitBuilder(loop_j.body):
                    ivs = (loop_i.induction_var, loop_j.induction_var, loop_k.induction_var)
                    block = BlockOp("C", ivs, ("spatial", "spatial", "reduce"))
                    vi, vj, vk = block.iter_vars
                    with ImplicitBuilder(block.body):
                        init = InitOp()
                        with ImplicitBuilder(init.body):
                            zero = arith.ConstantOp(FloatAttr(0.0, f32))
                            memref.StoreOp.get(zero, c, (vi, vj))
                        acc = memref.LoadOp.get(c, (vi, vj))
                        x = memref.LoadOp.get(a, (vi, vk))
                        y = memref.LoadOp.get(b, (vk, vj))
                        prod = arith.MulfOp(x, y)
                        memref.StoreOp.get(arith.AddfOp(acc, prod), c, (vi, vj))
        func.ReturnOp()
    module = ModuleOp([kernel])
    ember.verify_module(module)
    return module


@given(m=st.integers(1, 4), n=st.integers(1, 5), k=st.integers(1, 6))
def test_built_matmul_matches_numpy(m: int, n: int, k: int) -> None:
    module = _build_matmul(m, n, k)
    a, b = _random((m, k), 4), _random((k, n), 5)
    c = np.full((m, n), 7.0, np.float32)  # init must overwrite, not accumulate
    run_kernel(module, "matmul", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    text = ember.to_text(module)
    assert ember.to_text(ember.parse(text)) == text
