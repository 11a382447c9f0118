"""Tests of ``ember.builder``: the IR it builds, its type inference, its errors.

The builder must produce exactly what the graph dialect's text would, so the
main tests build a network and compare its printed module with hand-written
IR parsed and printed again.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import ember
from ember import builder as eb
from ember.errors import EmberError, IRError


def same_text(built: ModuleOp, hand_written: str) -> None:
    """The built module prints like the hand-written IR and re-parses stably."""
    text = str(built)
    assert text == str(ember.parse(hand_written))
    assert str(ember.parse(text)) == text


# --------------------------------------------------------------------------
# Same IR as hand-written text
# --------------------------------------------------------------------------


def test_mlp_matches_hand_written_ir() -> None:
    data = eb.var("data", (1, 784))
    h = eb.relu(eb.bias_add(eb.dense(data, eb.var("w0"), units=128), eb.var("b0")))
    out = eb.bias_add(eb.dense(h, eb.var("w1"), units=10), eb.var("b1"))
    same_text(
        eb.module(eb.function(out)),
        """
func.func @main(%data: tensor<1x784xf32>, %w0: tensor<128x784xf32>, %b0: tensor<128xf32>, %w1: tensor<10x128xf32>, %b1: tensor<10xf32>) -> tensor<1x10xf32> {
  %0 = graph.dense %data, %w0 : (tensor<1x784xf32>, tensor<128x784xf32>) -> tensor<1x128xf32>
  %1 = graph.bias_add %0, %b0 : (tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
  %2 = graph.relu %1 : tensor<1x128xf32>
  %3 = graph.dense %2, %w1 : (tensor<1x128xf32>, tensor<10x128xf32>) -> tensor<1x10xf32>
  %4 = graph.bias_add %3, %b1 : (tensor<1x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  func.return %4 : tensor<1x10xf32>
}
""",
    )


def test_tiny_pipe_f16_matches_hand_written_ir() -> None:
    # The pipeline-executor seed's network, written as in Relay.
    data = eb.var("data", (1, 3, 8, 8), "float16")
    dense_weight = eb.var("dweight", (1, 16 * 8 * 8), "float16")
    y = eb.conv2d(
        data, eb.var("weight"), kernel_size=(3, 3), channels=16, padding=(1, 1)
    )
    y = eb.batch_norm(
        y, eb.var("bn_gamma"), eb.var("bn_beta"), eb.var("bn_mean"), eb.var("bn_var")
    )
    y = eb.dense(eb.batch_flatten(eb.relu(y)), dense_weight)
    same_text(
        eb.module(eb.function(y)),
        """
func.func @main(%data: tensor<1x3x8x8xf16>, %weight: tensor<16x3x3x3xf16>, %bn_gamma: tensor<16xf16>, %bn_beta: tensor<16xf16>, %bn_mean: tensor<16xf16>, %bn_var: tensor<16xf16>, %dweight: tensor<1x1024xf16>) -> tensor<1x1xf16> {
  %0 = graph.conv2d %data, %weight {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf16>, tensor<16x3x3x3xf16>) -> tensor<1x16x8x8xf16>
  %1 = graph.batch_norm %0, %bn_gamma, %bn_beta, %bn_mean, %bn_var : (tensor<1x16x8x8xf16>, tensor<16xf16>, tensor<16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x16x8x8xf16>
  %2 = graph.relu %1 : tensor<1x16x8x8xf16>
  %3 = graph.batch_flatten %2 : (tensor<1x16x8x8xf16>) -> tensor<1x1024xf16>
  %4 = graph.dense %3, %dweight : (tensor<1x1024xf16>, tensor<1x1024xf16>) -> tensor<1x1xf16>
  func.return %4 : tensor<1x1xf16>
}
""",
    )


def test_every_attribute_form_matches_hand_written_ir() -> None:
    x = eb.var("x", (1, 4, 9, 9))
    conv = eb.conv2d(
        x,
        eb.var("w"),
        strides=2,
        padding=(1, 0, 2, 1),
        dilation=(1, 2),
        groups=2,
        channels=6,
        kernel_size=(3, 3),
    )
    bn = eb.batch_norm(
        conv, eb.var("g"), eb.var("b"), eb.var("m"), eb.var("v"), epsilon=1e-3
    )
    pooled = eb.max_pool2d(eb.clip(bn, 0.0, 6.0), pool_size=2, strides=(2, 2))
    avg = eb.avg_pool2d(conv, pool_size=(3, 3), padding=1)
    flat = eb.reshape(eb.transpose(pooled, (0, 2, 3, 1)), (1, -1))
    joined = eb.concatenate([flat, eb.batch_flatten(eb.global_avg_pool2d(avg))], axis=1)
    out = eb.softmax(eb.cast(joined, "float16"), axis=1)
    same_text(
        eb.module(eb.function([out, avg], name="net")),
        """
func.func @net(%x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>, %m: tensor<6xf32>, %v: tensor<6xf32>) -> (tensor<1x18xf16>, tensor<1x6x5x3xf32>) {
  %0 = graph.conv2d %x, %w {strides = [2, 2], padding = [1, 0, 2, 1], dilation = [1, 2], groups = 2} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x3xf32>
  %1 = graph.batch_norm %0, %g, %b, %m, %v {epsilon = 1.0e-03 : f32} : (tensor<1x6x5x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x5x3xf32>
  %2 = graph.clip %1 {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x6x5x3xf32>
  %3 = graph.max_pool2d %2 {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x6x5x3xf32>) -> tensor<1x6x2x1xf32>
  %4 = graph.transpose %3 {axes = [0, 2, 3, 1]} : (tensor<1x6x2x1xf32>) -> tensor<1x2x1x6xf32>
  %5 = graph.reshape %4 : (tensor<1x2x1x6xf32>) -> tensor<1x12xf32>
  %6 = graph.avg_pool2d %0 {pool_size = [3, 3], padding = [1, 1, 1, 1]} : (tensor<1x6x5x3xf32>) -> tensor<1x6x5x3xf32>
  %7 = graph.global_avg_pool2d %6 : (tensor<1x6x5x3xf32>) -> tensor<1x6x1x1xf32>
  %8 = graph.batch_flatten %7 : (tensor<1x6x1x1xf32>) -> tensor<1x6xf32>
  %9 = graph.concatenate %5, %8 {axis = 1} : (tensor<1x12xf32>, tensor<1x6xf32>) -> tensor<1x18xf32>
  %10 = graph.cast %9 : (tensor<1x18xf32>) -> tensor<1x18xf16>
  %11 = graph.softmax %10 {axis = 1} : (tensor<1x18xf16>) -> tensor<1x18xf16>
  func.return %11, %6 : tensor<1x18xf16>, tensor<1x6x5x3xf32>
}
""",
    )


def test_boolean_attribute_matches_hand_written_ir() -> None:
    x = eb.var("x", (1, 1, 4, 4))
    same_text(
        eb.module(eb.function(eb.avg_pool2d(x, 3, padding=1, count_include_pad=True))),
        """
func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %0 = graph.avg_pool2d %x {pool_size = [3, 3], padding = [1, 1, 1, 1], count_include_pad = true} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %0 : tensor<1x1x4x4xf32>
}
""",
    )


def test_elementwise_ops_and_python_operators_match_hand_written_ir() -> None:
    a = eb.var("a", (2, 3))
    b = eb.var("b", (3,))
    y = eb.maximum(eb.minimum(a, b), -a) / eb.sqrt(eb.exp(b))
    y = eb.tanh(eb.sigmoid(y * b - b + a @ eb.var("c", (3, 3))))
    same_text(
        eb.module(eb.function(y)),
        """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<3x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.minimum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.negative %a : tensor<2x3xf32>
  %2 = graph.maximum %0, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.exp %b : tensor<3xf32>
  %4 = graph.sqrt %3 : tensor<3xf32>
  %5 = graph.divide %2, %4 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %6 = graph.multiply %5, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %7 = graph.subtract %6, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %8 = graph.matmul %a, %c : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %9 = graph.add %7, %8 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = graph.sigmoid %9 : tensor<2x3xf32>
  %11 = graph.tanh %10 : tensor<2x3xf32>
  func.return %11 : tensor<2x3xf32>
}
""",
    )


def test_numbers_and_arrays_become_constants_of_the_expression_dtype() -> None:
    x = eb.var("x", (2, 3), "float16")
    y = 2 - x * np.array([1.0, 2.0, 3.0]) + np.float64(0.5)
    same_text(
        eb.module(eb.function(y)),
        """
func.func @main(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = graph.constant {value = dense<2.0> : tensor<f16>} : tensor<f16>
  %1 = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf16>} : tensor<3xf16>
  %2 = graph.multiply %x, %1 : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %3 = graph.subtract %0, %2 : (tensor<f16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  %4 = graph.constant {value = dense<5.0e-01> : tensor<f16>} : tensor<f16>
  %5 = graph.add %3, %4 : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
  func.return %5 : tensor<2x3xf16>
}
""",
    )


def test_operators_compute_in_the_written_order() -> None:
    # Reflected operators must not swap operands: 2 - x is not x - 2.
    x = eb.var("x", (4,))
    y = eb.var("y", (4,))
    module = eb.module(eb.function([2 - x, 1 / y, np.ones(4) * x, -x]))
    xs = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    ys = np.array([0.5, 4.0, -2.0, 8.0], np.float32)
    results = ember.interpret(module, "main", xs, ys)
    for got, want in zip(results, [2 - xs, 1 / ys, xs, -xs]):
        np.testing.assert_array_equal(got, want)


def test_several_functions_in_one_module() -> None:
    x = eb.var("x", (2, 2))
    first = eb.function(eb.relu(x), name="first")
    second = eb.function(eb.negative(x), name="second")
    same_text(
        eb.ir_module(first, second),
        """
func.func @first(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = graph.relu %x : tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
func.func @second(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = graph.negative %x : tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
""",
    )
    # A function already placed in a module is copied, not stolen.
    again = eb.module(first)
    assert first.parent is not None and again.body.block.first_op is not first


def test_params_fix_the_argument_order_and_may_add_unused_args() -> None:
    a, b, unused = eb.var("a", (2,)), eb.var("b", (2,)), eb.var("unused", (1,))
    func = eb.function(a + b, params=[b, unused, a])
    assert [arg.name_hint for arg in func.body.block.args] == ["b", "unused", "a"]
    assert [str(t) for t in func.function_type.inputs.data] == [
        "tensor<2xf32>",
        "tensor<1xf32>",
        "tensor<2xf32>",
    ]


def test_shared_subexpressions_are_built_once() -> None:
    x = eb.var("x", (3,))
    y = eb.relu(x)
    func = eb.function(y * y + y)
    assert [op.name for op in func.body.block.ops] == [
        "graph.relu",
        "graph.multiply",
        "graph.add",
        "func.return",
    ]


def test_attributes_equal_to_defaults_are_left_out() -> None:
    x = eb.var("x", (1, 2, 4, 4))
    y = eb.conv2d(
        x, eb.var("w", (2, 2, 1, 1)), strides=1, padding=0, dilation=(1, 1), groups=1
    )
    y = eb.batch_norm(
        y, *(eb.var(n) for n in ("g", "b", "m", "v")), axis=1, epsilon=1e-5
    )
    y = eb.softmax(eb.bias_add(y, eb.var("c"), axis=1), axis=-1)
    ops = list(eb.function(y).body.block.ops)[:-1]
    assert all(not op.attributes for op in ops), [str(op) for op in ops]


# --------------------------------------------------------------------------
# Type inference and untyped vars
# --------------------------------------------------------------------------


def test_untyped_vars_get_their_shape_from_the_consumer() -> None:
    data = eb.var("data", (2, 6, 10, 10), "float16")
    w = eb.var("w")
    y = eb.conv2d(data, w, channels=4, kernel_size=(3, 1), groups=2, strides=(1, 2))
    assert w.shape == (4, 3, 3, 1) and w.dtype == np.float16
    assert y.shape == (2, 4, 8, 5) and y.dtype == np.float16
    gamma, beta, mean, var = (eb.var(n) for n in ("gamma", "beta", "mean", "var"))
    eb.batch_norm(y, gamma, beta, mean, var)
    assert all(v.shape == (4,) for v in (gamma, beta, mean, var))
    bias = eb.var("bias")
    eb.bias_add(y, bias, axis=-1)
    assert bias.shape == (5,)
    dw = eb.var("dw")
    d = eb.dense(eb.batch_flatten(y), dw, units=7)
    assert dw.shape == (7, 160) and d.shape == (2, 7)


def test_untyped_var_keeps_a_requested_dtype_and_mismatch_is_reported() -> None:
    data = eb.var("data", (1, 8))
    w = eb.var("w", dtype="float16")
    with pytest.raises(IRError, match="element type f16"):
        eb.dense(data, w, units=4)
    assert not w.has_type  # a failed call leaves the var untyped


def test_a_typed_weight_is_checked_against_channels_and_units() -> None:
    data = eb.var("data", (1, 3, 8, 8))
    with pytest.raises(IRError, match="16 output channels but channels = 8"):
        eb.conv2d(data, eb.var("w", (16, 3, 3, 3)), channels=8)
    with pytest.raises(IRError, match=r"kernel \[3, 3\] but kernel_size = \[5, 5\]"):
        eb.conv2d(data, eb.var("w", (16, 3, 3, 3)), kernel_size=5)
    with pytest.raises(IRError, match="10 units but units = 5"):
        eb.dense(eb.var("x", (1, 4)), eb.var("w", (10, 4)), units=5)


def test_padding_forms_follow_relay() -> None:
    data = eb.var("data", (1, 1, 5, 5))
    w = eb.var("w", (1, 1, 1, 1))
    for padding, expected in [
        (1, (1, 1, 1, 1)),
        ((2,), (2, 2, 2, 2)),
        ((1, 2), (1, 2, 1, 2)),
        ((0, 1, 2, 3), (0, 1, 2, 3)),
    ]:
        conv = eb.conv2d(data, w, padding=padding)
        assert conv.attrs["padding"] == expected
        assert conv.shape == (
            1,
            1,
            5 + expected[0] + expected[2],
            5 + expected[1] + expected[3],
        )
    with pytest.raises(IRError, match="1, 2 or 4 ints"):
        eb.conv2d(data, w, padding=(1, 1, 1))


def test_reshape_infers_minus_one() -> None:
    x = eb.var("x", (2, 3, 4))
    assert eb.reshape(x, (4, -1)).shape == (4, 6)
    assert eb.reshape(x, -1).shape == (24,)
    with pytest.raises(IRError, match="cannot reshape"):
        eb.reshape(x, (5, -1))
    with pytest.raises(IRError, match="cannot reshape"):
        eb.reshape(x, (5, 5))
    with pytest.raises(IRError, match="at most one -1"):
        eb.reshape(x, (-1, -1))


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_shape_errors_are_raised_by_the_call_that_causes_them() -> None:
    data = eb.var("data", (1, 3, 8, 8))
    with pytest.raises(
        IRError, match="graph.conv2d: weight has 4 input channels but data has 3"
    ):
        eb.conv2d(data, eb.var("w", (8, 4, 3, 3)))
    with pytest.raises(
        IRError, match="graph.dense: weight has 5 input features but data has 192"
    ):
        eb.dense(eb.batch_flatten(data), eb.var("w", (10, 5)))
    with pytest.raises(IRError, match="cannot be broadcast"):
        eb.add(data, eb.var("b", (4,)))
    with pytest.raises(IRError, match="window 9 is larger"):
        eb.max_pool2d(data, pool_size=9)
    with pytest.raises(ValueError):  # IRError is also a ValueError
        eb.bias_add(data, eb.var("b", (5,)))


def test_an_untyped_var_where_nothing_determines_it_is_named() -> None:
    with pytest.raises(IRError, match="graph.relu: var 'mystery' has no type"):
        eb.relu(eb.var("mystery"))
    with pytest.raises(IRError, match="var 'x' has no type"):
        eb.conv2d(eb.var("x"), eb.var("w"), channels=2, kernel_size=1)
    with pytest.raises(IRError, match="weight var 'w'.*channels and kernel_size"):
        eb.conv2d(eb.var("x", (1, 1, 2, 2)), eb.var("w"), channels=2)
    with pytest.raises(IRError, match="weight var 'w'.*units"):
        eb.dense(eb.var("x", (1, 2)), eb.var("w"))


def test_an_untyped_var_at_function_build_is_named() -> None:
    x = eb.var("x", (2,))
    with pytest.raises(IRError, match="@main: var 'later' has no type"):
        eb.function(eb.relu(x), params=[x, eb.var("later")])


def test_function_argument_mistakes() -> None:
    a, b = eb.var("a", (2,)), eb.var("b", (2,))
    with pytest.raises(
        IRError, match=r"free var\(s\) \['b'\] are not among the params"
    ):
        eb.function(a + b, params=[a])
    with pytest.raises(IRError, match="two different vars are named 'a'"):
        eb.function(a + eb.var("a", (2,)))
    with pytest.raises(IRError, match="listed twice"):
        eb.function(a, params=[a, a])
    with pytest.raises(IRError, match="at least one output"):
        eb.function([])
    with pytest.raises(IRError, match="output 0 is ndarray"):
        eb.function([np.ones(2)])
    with pytest.raises(IRError, match="two functions are named @main"):
        eb.module(eb.function(a), eb.function(b))


@pytest.mark.parametrize("name", ["conv_1", "1x", "a b", ""])
def test_var_names_that_would_not_print_as_written_are_rejected(name: str) -> None:
    with pytest.raises(IRError, match="var name"):
        eb.var(name, (1,))


def test_constant_dtype_mistakes() -> None:
    i = eb.var("i", (3,), "int32")
    with pytest.raises(IRError, match="cannot mix float64 value 0.5 with a int32"):
        i + 0.5
    assert (i + 2).dtype == np.int32
    with pytest.raises(IRError, match="unsupported dtype"):
        eb.const(np.zeros(2, np.complex64))
    assert eb.const(1.5).dtype == np.float32 and eb.const(3).dtype == np.int32
    assert eb.const(np.zeros(2)).dtype == np.float32
    with pytest.raises(IRError, match="unsupported dtype"):
        eb.var("x", (1,), "float64")


def test_builder_errors_are_ember_errors() -> None:
    with pytest.raises(EmberError):
        eb.cast(eb.var("x", (1,)), "bfloat16")
