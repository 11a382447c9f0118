"""Compiled code computes what the interpreter computes, NaN and inf included.

docs/graph-dialect.md ("Floating-point semantics") states the rules; these
tests pin the cases that LLVM's fast-math flags used to break (vectorised
``x / 0`` gave NaN, ``x - x`` folded to 0, ``relu`` dropped NaN depending on
operand order, …) and the ``fast_math=True`` opt-in that brings the flags
back.  Random programs with special values are compared in
tests/test_cpu_backend.py and tests/test_onnxruntime_differential.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import assert_same_values

NAN, INF = np.float32(np.nan), np.float32(np.inf)

# Every special value next to ordinary ones, 32 wide so that loops vectorise.
SPECIALS = np.array(
    [NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 3e38, 1e-45, -1e-45, 2.5, -7.0] * 3,
    np.float32,
)[:32]


def _unary(body: str, n: int = 32) -> str:
    return f"""
    func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
      %0 = {body} : tensor<{n}xf32>
      func.return %0 : tensor<{n}xf32>
    }}
    """


def _binary(op: str, lhs: str, rhs: str, n: int = 32) -> str:
    t = f"tensor<{n}xf32>"
    return f"""
    func.func @main(%x: {t}, %y: {t}) -> {t} {{
      %0 = {op} {lhs}, {rhs} : ({t}, {t}) -> {t}
      func.return %0 : {t}
    }}
    """


def compiled_and_interpreted(
    text: str, *inputs: np.ndarray, fast_math: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    module = ember.parse(text)
    (expected,) = ember.interpret(module, "main", *inputs)
    lib = ember.build(module, target="llvm", fast_math=fast_math)
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.run(**dict(zip([s.name for s in lib.input_specs], inputs, strict=True)))
    return ex.get_output(0).numpy(), expected


def check(text: str, *inputs: np.ndarray) -> np.ndarray:
    got, expected = compiled_and_interpreted(text, *inputs)
    assert_same_values(got, expected, what=text)
    # The sign of a zero result is defined too (IEEE 754-2019 maximum/minimum).
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros]))
    return got


ZEROS = np.zeros(32, np.float32)
REVERSED = SPECIALS[::-1].copy()


@pytest.mark.parametrize(
    ("name", "text", "inputs"),
    [
        ("x / 0 (vectorised)", _binary("graph.divide", "%x", "%y"), (SPECIALS, ZEROS)),
        ("x / -0.0", _binary("graph.divide", "%x", "%y"), (SPECIALS, -ZEROS)),
        ("x - x", _binary("graph.subtract", "%x", "%x"), (SPECIALS, ZEROS)),
        ("x / x", _binary("graph.divide", "%x", "%x"), (SPECIALS, ZEROS)),
        ("0 * x", _binary("graph.multiply", "%y", "%x"), (SPECIALS, ZEROS)),
        ("maximum(x, y)", _binary("graph.maximum", "%x", "%y"), (SPECIALS, REVERSED)),
        ("maximum(y, x)", _binary("graph.maximum", "%y", "%x"), (SPECIALS, REVERSED)),
        ("minimum(x, y)", _binary("graph.minimum", "%x", "%y"), (SPECIALS, REVERSED)),
        ("minimum(y, x)", _binary("graph.minimum", "%y", "%x"), (SPECIALS, REVERSED)),
        ("maximum(x, 0) with zeros", _binary("graph.maximum", "%x", "%y"), (SPECIALS, -ZEROS)),
        ("minimum(0, x) with zeros", _binary("graph.minimum", "%y", "%x"), (SPECIALS, ZEROS)),
        ("relu", _unary("graph.relu %x"), (SPECIALS,)),
        ("clip", _unary("graph.clip %x {min = -1.5 : f32, max = 2.0 : f32}"), (SPECIALS,)),
        ("clip to [-1, 0]", _unary("graph.clip %x {min = -1.0 : f32, max = 0.0 : f32}"), (SPECIALS,)),
        ("clip to [0, 0]", _unary("graph.clip %x {min = 0.0 : f32, max = 0.0 : f32}"), (SPECIALS,)),
        ("sqrt", _unary("graph.sqrt %x"), (SPECIALS,)),
        ("negative", _unary("graph.negative %x"), (SPECIALS,)),
        ("exp", _unary("graph.exp %x"), (SPECIALS,)),
        ("tanh", _unary("graph.tanh %x"), (SPECIALS,)),
        ("sigmoid", _unary("graph.sigmoid %x"), (SPECIALS,)),
    ],
)
def test_elementwise_special_values(name: str, text: str, inputs: tuple) -> None:
    check(text, *inputs)


def test_relu_propagates_nan_in_every_lane() -> None:
    got = check(_unary("graph.relu %x"), np.full(32, NAN))
    assert np.isnan(got).all()


def test_sqrt_of_a_negative_number_next_to_relu() -> None:
    # With nnan, LLVM may assume sqrt's operand is not negative and fold the
    # relu into it; finite inputs then gave wrong results.
    text = """
    func.func @main(%x: tensor<32xf32>) -> tensor<32xf32> {
      %0 = graph.sqrt %x : tensor<32xf32>
      %1 = graph.relu %0 : tensor<32xf32>
      %2 = graph.add %1, %x : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
      func.return %2 : tensor<32xf32>
    }
    """
    x = np.linspace(-4, 4, 32, dtype=np.float32)
    got = check(text, x)
    assert np.isnan(got[x < 0]).all()


@pytest.mark.parametrize("fill", [INF, -INF, NAN])
def test_softmax_over_a_size_1_axis(fill: np.float32) -> None:
    text = """
    func.func @main(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
      %0 = graph.softmax %x {axis = 1} : (tensor<4x1xf32>) -> tensor<4x1xf32>
      func.return %0 : tensor<4x1xf32>
    }
    """
    x = np.array([[fill], [1.0], [-0.0], [fill]], np.float32)
    got = check(text, x)
    assert np.isnan(got[[0, 3]]).all()  # inf - inf, NaN - NaN
    np.testing.assert_array_equal(got[[1, 2]], 1.0)


def _pool(op: str, attrs: str) -> str:
    return f"""
    func.func @main(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x2x4xf32> {{
      %0 = {op} %x {{{attrs}}} : (tensor<1x2x4x8xf32>) -> tensor<1x2x2x4xf32>
      func.return %0 : tensor<1x2x2x4xf32>
    }}
    """


@pytest.mark.parametrize(
    "text",
    [
        _pool("graph.max_pool2d", "pool_size = [2, 2], strides = [2, 2]"),
        _pool("graph.avg_pool2d", "pool_size = [2, 2], strides = [2, 2]"),
        _pool(
            "graph.avg_pool2d",
            "pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1], count_include_pad = false",
        ),
        _pool("graph.max_pool2d", "pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]"),
    ],
)
def test_pools_propagate_nan_and_inf(text: str) -> None:
    x = SPECIALS[np.arange(64) % 32].reshape(1, 2, 4, 8)
    got = check(text, x)
    assert np.isnan(got).any()


def test_avg_pool_over_minus_inf_is_minus_inf() -> None:
    x = np.full((1, 2, 4, 8), -INF)
    got = check(_pool("graph.avg_pool2d", "pool_size = [2, 2], strides = [2, 2]"), x)
    assert (got == -INF).all()


def test_max_pool_nan_in_any_window_position() -> None:
    text = _pool("graph.max_pool2d", "pool_size = [2, 2], strides = [2, 2]")
    for position in range(4):
        x = np.ones((1, 2, 4, 8), np.float32)
        x[0, :, position // 2, position % 2] = NAN
        got = check(text, x)
        assert np.isnan(got[0, :, 0, 0]).all() and not np.isnan(got[0, :, 1:, :]).any()


def test_dense_and_global_pool_reductions_propagate() -> None:
    text = """
    func.func @main(%x: tensor<2x16xf32>, %w: tensor<8x16xf32>) -> tensor<2x8xf32> {
      %0 = graph.dense %x, %w : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
      func.return %0 : tensor<2x8xf32>
    }
    """
    x = np.ones((2, 16), np.float32)
    x[0, 3] = NAN
    x[1, 5], x[1, 6] = INF, -INF  # inf - inf in one dot product: NaN
    w = np.ones((8, 16), np.float32)
    got = check(text, x, w)
    assert np.isnan(got).all()
    x[1, 6] = 1.0
    got = check(text, x, w)
    assert (got[1] == INF).all()


def test_fast_math_is_an_explicit_opt_in() -> None:
    text = _binary("graph.subtract", "%x", "%x")
    exact, expected = compiled_and_interpreted(text, SPECIALS, ZEROS)
    assert np.isnan(exact[:3]).all() and np.isnan(expected[:3]).all()
    module = ember.parse(text)
    safe = ember.build(module, target="llvm").llvm_ir
    fast = ember.build(module, target="llvm", fast_math=True).llvm_ir
    assert "fsub reassoc contract" in safe and " fast " not in safe
    assert "fsub" not in fast  # x - x folded to 0: allowed once NaN/inf are ruled out


def test_fast_math_flags_reach_the_llvm_ir() -> None:
    text = _binary("graph.divide", "%x", "%y")
    module = ember.parse(text)
    assert "fdiv fast" in ember.build(module, target="llvm", fast_math=True).llvm_ir
    assert "fdiv fast" not in ember.build(module, target="llvm").llvm_ir


def test_fast_math_is_checked() -> None:
    module = ember.parse(_unary("graph.relu %x"))
    with pytest.raises(ember.RuntimeFailure, match="fast_math=True is an option of the 'llvm' target"):
        ember.build(module, target="interp", fast_math=True)
    with pytest.raises(ember.RuntimeFailure, match="fast_math must be True or False, got 'yes'"):
        ember.build(module, target="llvm", fast_math="yes")
