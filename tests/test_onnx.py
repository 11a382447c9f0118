"""ONNX import (``ember.from_onnx``) against onnxruntime.

Single-operator models, generated for each opset where the operator's
signature changed, run through the reference interpreter (the definition of
every graph op) and are compared with onnxruntime; the ResNet-like and
MobileNet-like models are compiled for the CPU.  Tolerances: 1e-5 relative
and absolute for single ops, 1e-4 for whole networks (float32 accumulation
order differs).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402

import ember  # noqa: E402
from ember.runtime.module import signature_of  # noqa: E402
from ember.testing.onnx_models import (  # noqa: E402
    make_model,
    mobilenet_like,
    resnet_like,
    unet_like,
)

F32 = np.float32


def run_ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_ember(model: Any, feeds: dict[str, np.ndarray], target: str = "interp", shape: Any = None) -> list[np.ndarray]:
    module, params = ember.from_onnx(model, shape=shape)
    lib = ember.build(module, target, params=params)
    executor = ember.GraphExecutor(lib, ember.cpu())
    for name, value in feeds.items():
        executor.set_input(name, value)
    executor.run()
    return [executor.get_output(i).numpy() for i in range(executor.get_num_outputs())]


def assert_matches_ort(model: Any, feeds: dict[str, np.ndarray], target: str = "interp", tol: float = 1e-5) -> None:
    expected = run_ort(model, feeds)
    got = run_ember(model, feeds, target)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


# --------------------------------------------------------------------------
# Single-operator models per opset
# --------------------------------------------------------------------------

Case = Callable[[int], tuple[Any, dict[str, np.ndarray]]]


def _one(op_type: str, x_shape: Sequence[int], inits: dict[str, np.ndarray] | None = None,
         extra_inputs: Sequence[str] = (), **attrs: Any) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        node = helper.make_node(op_type, ["x", *extra_inputs], ["y"], **attrs)
        model = make_model([node], {"x": (x_shape, F32)}, ["y"], inits, opset)
        return model, {"x": _rand(*x_shape)}

    return build


def _conv(opset: int, **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    group = attrs.get("group", 1)
    w = _rand(8, 8 // group, 3, 3, seed=1)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    model = make_model([node], {"x": ((2, 8, 9, 10), F32)}, ["y"], {"w": w, "b": _rand(8, seed=2)}, opset)
    return model, {"x": _rand(2, 8, 9, 10)}


def _gemm(opset: int, trans_a: int, trans_b: int, alpha: float, beta: float) -> tuple[Any, dict[str, np.ndarray]]:
    a_shape = (6, 4) if trans_a else (4, 6)
    b = _rand(*((5, 6) if trans_b else (6, 5)), seed=1)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    model = make_model([node], {"a": (a_shape, F32)}, ["y"], {"b": b, "c": _rand(5, seed=3)}, opset)
    return model, {"a": _rand(*a_shape)}


def _matmul(a_shape: Sequence[int], b_shape: Sequence[int]) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        node = helper.make_node("MatMul", ["a", "b"], ["y"])
        model = make_model([node], {"a": (a_shape, F32), "b": (b_shape, F32)}, ["y"], None, opset)
        return model, {"a": _rand(*a_shape), "b": _rand(*b_shape, seed=1)}

    return build


def _binary(op_type: str, b_shape: Sequence[int]) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        node = helper.make_node(op_type, ["a", "b"], ["y"])
        model = make_model([node], {"a": ((2, 3, 4), F32), "b": (b_shape, F32)}, ["y"], None, opset)
        b = _rand(*b_shape, seed=1)
        return model, {"a": _rand(2, 3, 4), "b": b + 3 * np.sign(b) if op_type == "Div" else b}

    return build


def _clip(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
    if opset < 11:
        return _one("Clip", (3, 4), min=-0.5, max=0.7)(opset)
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
    inits = {"lo": np.array(-0.5, F32), "hi": np.array(0.7, F32)}
    return make_model([node], {"x": ((3, 4), F32)}, ["y"], inits, opset), {"x": _rand(3, 4)}


def _axes_op(op_type: str, shape: Sequence[int], axes: Sequence[int], attr_until: int = 12) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        if opset <= attr_until:
            node = helper.make_node(op_type, ["x"], ["y"], axes=list(axes))
            inits = None
        else:
            node = helper.make_node(op_type, ["x", "axes"], ["y"])
            inits = {"axes": np.array(axes, np.int64)}
        return make_model([node], {"x": (shape, F32)}, ["y"], inits, opset), {"x": _rand(*shape)}

    return build


def _reshape_with_shape_arithmetic(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
    # What exporters write for x.view(x.size(0), -1): Shape → Gather →
    # Unsqueeze → Concat → Reshape, all folded at import.
    unsqueeze = (
        helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0])
        if opset < 13
        else helper.make_node("Unsqueeze", ["n", "zero_axes"], ["n1"])
    )
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        unsqueeze,
        helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = {
        "zero": np.array(0, np.int64),
        "zero_axes": np.array([0], np.int64),
        "minus_one": np.array([-1], np.int64),
    }
    return make_model(nodes, {"x": ((2, 3, 4), F32)}, ["y"], inits, opset), {"x": _rand(2, 3, 4)}


def _slice_case(starts: Any, ends: Any, axes: Any, steps: Any) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        shape = (5, 6, 7)
        if opset < 10:
            node = helper.make_node("Slice", ["x"], ["y"], starts=starts, ends=ends, axes=axes)
            inits = None
        else:
            names = ["x", "starts", "ends", "axes"] + (["steps"] if steps is not None else [])
            node = helper.make_node("Slice", names, ["y"])
            inits = {"starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64),
                     "axes": np.array(axes, np.int64)}
            if steps is not None:
                inits["steps"] = np.array(steps, np.int64)
        return make_model([node], {"x": (shape, F32)}, ["y"], inits, opset), {"x": _rand(*shape)}

    return build


def _split_case(sizes: Any) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        outputs = ["a", "b"]
        inits = None
        if sizes is None:
            attrs = {"num_outputs": 2} if opset >= 18 else {}
            node = helper.make_node("Split", ["x"], outputs, axis=1, **attrs)
        elif opset < 13:
            node = helper.make_node("Split", ["x"], outputs, axis=1, split=sizes)
        else:
            node = helper.make_node("Split", ["x", "split"], outputs, axis=1)
            inits = {"split": np.array(sizes, np.int64)}
        return make_model([node], {"x": ((2, 4, 3), F32)}, outputs, inits, opset), {"x": _rand(2, 4, 3)}

    return build


def _gather_case(indices: Any, axis: int) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
        inits = {"i": np.array(indices, np.int64)}
        return make_model([node], {"x": ((2, 3, 4), F32)}, ["y"], inits, opset), {"x": _rand(2, 3, 4)}

    return build


def _pad_case(mode: str, pads: list[int]) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        if opset < 11:
            node = helper.make_node("Pad", ["x"], ["y"], mode=mode, pads=pads, value=1.5)
            inits = None
        else:
            inputs = ["x", "pads"] + (["value"] if mode == "constant" else [])
            node = helper.make_node("Pad", inputs, ["y"], mode=mode)
            inits = {"pads": np.array(pads, np.int64), "value": np.array(1.5, F32)}
        return make_model([node], {"x": ((1, 3, 4, 5), F32)}, ["y"], inits, opset), {"x": _rand(1, 3, 4, 5)}

    return build


def _reduce_case(op_type: str, axes: Any, keepdims: int) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        axes_as_input = opset >= (13 if op_type == "ReduceSum" else 18)
        inits = None
        if axes is None:
            node = helper.make_node(op_type, ["x"], ["y"], keepdims=keepdims)
        elif axes_as_input:
            node = helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=keepdims)
            inits = {"axes": np.array(axes, np.int64)}
        else:
            node = helper.make_node(op_type, ["x"], ["y"], axes=axes, keepdims=keepdims)
        return make_model([node], {"x": ((2, 3, 4, 5), F32)}, ["y"], inits, opset), {"x": _rand(2, 3, 4, 5)}

    return build


def _conv1d(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 2], strides=[2], dilations=[2])
    model = make_model([node], {"x": ((2, 3, 11), F32)}, ["y"], {"w": _rand(4, 3, 3, seed=1)}, opset)
    return model, {"x": _rand(2, 3, 11)}


def _conv_transpose(opset: int, **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    group = attrs.get("group", 1)
    w = _rand(4, 6 // group, 3, 3, seed=1)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    model = make_model([node], {"x": ((2, 4, 7, 6), F32)}, ["y"], {"w": w, "b": _rand(6, seed=2)}, opset)
    return model, {"x": _rand(2, 4, 7, 6)}


def _conv_transpose1d(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2], pads=[1, 0], output_padding=[1])
    model = make_model([node], {"x": ((1, 3, 5), F32)}, ["y"], {"w": _rand(3, 2, 4, seed=1)}, opset)
    return model, {"x": _rand(1, 3, 5)}


def _resize_case(scales: Any = None, sizes: Any = None, **attrs: Any) -> Case:
    def build(opset: int) -> tuple[Any, dict[str, np.ndarray]]:
        inits: dict[str, np.ndarray] = {}
        if opset < 11:
            op_type = "Upsample" if opset == 9 else "Resize"
            node = helper.make_node(op_type, ["x", "scales"], ["y"], **attrs)
            inits["scales"] = np.array(scales, F32)
        else:
            # roi and scales are required (possibly empty) inputs before opset 13.
            roi = "roi" if opset < 13 else ""
            inits["roi"] = np.array([], F32)
            if sizes is not None:
                node = helper.make_node("Resize", ["x", roi, "scales" if opset < 13 else "", "sizes"], ["y"], **attrs)
                inits["sizes"] = np.array(sizes, np.int64)
                inits["scales"] = np.array([], F32)
            else:
                node = helper.make_node("Resize", ["x", roi, "scales"], ["y"], **attrs)
                inits["scales"] = np.array(scales, F32)
        return make_model([node], {"x": ((1, 3, 5, 4), F32)}, ["y"], inits, opset), {"x": _rand(1, 3, 5, 4)}

    return build


SINGLE_OP_CASES: dict[str, tuple[Case, Sequence[int]]] = {
    "Conv": (lambda o: _conv(o, pads=[1, 0, 2, 1], strides=[2, 1]), (9, 11, 21)),
    "Conv-depthwise": (lambda o: _conv(o, group=8, dilations=[2, 2], pads=[2, 2, 2, 2]), (11, 21)),
    "Conv-groups-same_upper": (lambda o: _conv(o, group=2, auto_pad="SAME_UPPER", strides=[2, 2]), (11, 21)),
    "Conv-same_lower": (lambda o: _conv(o, auto_pad="SAME_LOWER", strides=[2, 2]), (11,)),
    "Conv-valid": (lambda o: _conv(o, auto_pad="VALID"), (11,)),
    "Gemm": (lambda o: _gemm(o, 0, 1, 1.0, 1.0), (9, 11, 13)),
    "Gemm-transA-alpha-beta": (lambda o: _gemm(o, 1, 0, 0.5, 2.0), (9, 13)),
    "MatMul-2d": (_matmul((4, 6), (6, 5)), (9, 13)),
    "MatMul-batched": (_matmul((2, 3, 4, 6), (3, 6, 5)), (13,)),
    "MatMul-vector": (_matmul((6,), (2, 6, 5)), (13,)),
    "Add": (_binary("Add", (3, 1)), (9, 14)),
    "Sub": (_binary("Sub", (4,)), (9, 14)),
    "Mul": (_binary("Mul", (2, 1, 4)), (9, 14)),
    "Div": (_binary("Div", (1,)), (9, 14)),
    "Max": (_binary("Max", (3, 4)), (9, 13)),
    "Min": (_binary("Min", (3, 4)), (9, 13)),
    "Relu": (_one("Relu", (3, 4)), (9, 14)),
    "Sigmoid": (_one("Sigmoid", (3, 4)), (9, 13)),
    "Tanh": (_one("Tanh", (3, 4)), (9, 13)),
    "Exp": (_one("Exp", (3, 4)), (9, 13)),
    "Abs": (_one("Abs", (3, 4)), (9, 13)),
    "Neg": (_one("Neg", (3, 4)), (9, 13)),
    "LeakyRelu": (_one("LeakyRelu", (3, 4), alpha=0.2), (9, 16)),
    "PRelu": (_one("PRelu", (2, 3, 4), {"slope": _rand(3, 1, seed=4)}, ["slope"]), (9, 16)),
    "Elu": (_one("Elu", (3, 4), alpha=0.7), (9,)),
    "Selu": (_one("Selu", (3, 4)), (9,)),
    "HardSigmoid": (_one("HardSigmoid", (3, 4), alpha=0.3, beta=0.4), (9,)),
    "HardSwish": (_one("HardSwish", (3, 4)), (14,)),
    "Clip": (_clip, (9, 11, 13)),
    "Softmax-axis1": (_one("Softmax", (2, 3, 4), axis=1), (9, 11, 13)),
    "Softmax-default": (_one("Softmax", (2, 3, 4)), (9, 13)),
    "BatchNormalization": (
        _one("BatchNormalization", (2, 3, 4, 5),
             {"s": _rand(3, seed=1), "bias": _rand(3, seed=2), "m": _rand(3, seed=3),
              "v": np.abs(_rand(3, seed=4)) + 0.5},
             ["s", "bias", "m", "v"], epsilon=1e-3),
        (9, 14, 15),
    ),
    "MaxPool": (_one("MaxPool", (1, 2, 9, 9), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), (9, 12)),
    "MaxPool-ceil": (_one("MaxPool", (1, 2, 10, 10), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), (10, 12)),
    "MaxPool-dilated": (_one("MaxPool", (1, 2, 9, 9), kernel_shape=[3, 2], dilations=[2, 3], pads=[1, 0, 2, 1]), (10, 12)),
    "MaxPool-dilated-ceil": (_one("MaxPool", (1, 2, 10, 10), kernel_shape=[2, 2], dilations=[2, 2], strides=[3, 3], ceil_mode=1), (12,)),
    "AveragePool-dilated": (_one("AveragePool", (1, 2, 9, 9), kernel_shape=[3, 2], dilations=[2, 3], pads=[1, 0, 2, 1]), (19,)),
    "MaxPool-same_upper": (_one("MaxPool", (1, 2, 7, 7), kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER"), (9, 12)),
    "AveragePool": (_one("AveragePool", (1, 2, 9, 9), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), (9, 11, 19)),
    "AveragePool-include-pad": (
        _one("AveragePool", (1, 2, 9, 9), kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1), (9, 19)),
    "AveragePool-ceil": (_one("AveragePool", (1, 2, 10, 10), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), (10, 19)),
    "GlobalAveragePool": (_one("GlobalAveragePool", (2, 3, 5, 4)), (9,)),
    "GlobalMaxPool": (_one("GlobalMaxPool", (2, 3, 5, 4)), (9,)),
    "Flatten": (_one("Flatten", (2, 3, 4, 5), axis=2), (9, 13)),
    "Flatten-negative": (_one("Flatten", (2, 3, 4, 5), axis=-1), (11,)),
    "Transpose": (_one("Transpose", (2, 3, 4), perm=[1, 2, 0]), (9, 13)),
    "Squeeze": (_axes_op("Squeeze", (2, 1, 4, 1), [1, -1]), (9, 11, 13)),
    "Unsqueeze": (_axes_op("Unsqueeze", (2, 4), [0, -1]), (9, 11, 13)),
    "Reshape-shape-arithmetic": (_reshape_with_shape_arithmetic, (9, 11, 13, 21)),
    "Slice": (_slice_case([1, -3], [100, -1], [1, 2], None), (9,)),
    "Slice-steps": (_slice_case([1, -1, 0], [4, -100, 100], [0, 1, -1], [2, -2, 3]), (10, 13)),
    "Split-attr": (_split_case([1, 3]), (11,)),
    "Split-input": (_split_case([1, 3]), (13,)),
    "Split-equal": (_split_case(None), (11, 13, 18)),
    "Gather": (_gather_case([[0, 2], [-1, 1]], 1), (9, 13)),
    "Gather-scalar": (_gather_case(2, 2), (11, 13)),
    "Pad-constant": (_pad_case("constant", [0, 1, 2, 0, 0, 2, 1, 0]), (9, 11, 13, 18)),
    "Pad-reflect": (_pad_case("reflect", [0, 0, 2, 1, 0, 0, 1, 3]), (9, 11, 18)),
    "Pad-edge": (_pad_case("edge", [0, 1, 0, 2, 0, 2, 1, 0]), (11, 18)),
    "Pad-negative": (_pad_case("constant", [0, 0, -1, 2, 0, 0, 1, -2]), (11,)),
    "ReduceMean": (_reduce_case("ReduceMean", [2, 3], 1), (9, 13, 18)),
    "ReduceSum": (_reduce_case("ReduceSum", [-1], 0), (9, 13)),
    "ReduceMax": (_reduce_case("ReduceMax", [1], 1), (9, 13, 18)),
    "ReduceMax-all": (_reduce_case("ReduceMax", None, 0), (11, 18)),
    "LogSoftmax-axis1": (_one("LogSoftmax", (2, 3, 4), axis=1), (9, 11, 13)),
    "LogSoftmax-default": (_one("LogSoftmax", (2, 3, 4)), (9, 13)),
    "Conv1d": (_conv1d, (11, 13)),
    "MaxPool1d": (_one("MaxPool", (1, 2, 9), kernel_shape=[3], strides=[2], pads=[1, 1]), (12,)),
    "ConvTranspose": (lambda o: _conv_transpose(o, strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), (9, 11, 21)),
    "ConvTranspose-groups-dilated": (lambda o: _conv_transpose(o, group=2, dilations=[2, 1], pads=[0, 1, 2, 0]), (11,)),
    "ConvTranspose-output_shape": (lambda o: _conv_transpose(o, strides=[3, 2], output_shape=[20, 12]), (11,)),
    "ConvTranspose-same_upper": (lambda o: _conv_transpose(o, strides=[2, 2], auto_pad="SAME_UPPER"), (11,)),
    "ConvTranspose1d": (_conv_transpose1d, (13,)),
    "Upsample-nearest": (_resize_case(scales=[1, 1, 2, 3], mode="nearest"), (9,)),
    "Upsample-linear": (_resize_case(scales=[1, 1, 2, 2], mode="linear"), (9,)),
    "Resize10-nearest": (_resize_case(scales=[1, 1, 2, 2], mode="nearest"), (10,)),
    "Resize10-linear-down": (_resize_case(scales=[1, 1, 0.6, 0.5], mode="linear"), (10,)),
    "Resize-nearest-half_pixel": (_resize_case(scales=[1, 1, 2, 1.5], mode="nearest"), (11, 13, 19)),
    "Resize-nearest-asymmetric-floor": (
        _resize_case(sizes=[1, 3, 9, 7], mode="nearest", coordinate_transformation_mode="asymmetric",
                     nearest_mode="floor"), (13,)),
    "Resize-nearest-ceil-align": (
        _resize_case(sizes=[1, 3, 3, 4], mode="nearest", coordinate_transformation_mode="align_corners",
                     nearest_mode="ceil"), (13,)),
    "Resize-nearest-tf": (
        _resize_case(scales=[1, 1, 1.5, 2], mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn",
                     nearest_mode="round_prefer_ceil"), (13,)),
    "Resize-linear-half_pixel": (_resize_case(scales=[1, 1, 2, 2], mode="linear"), (11, 13, 18)),
    "Resize-linear-pytorch": (
        _resize_case(sizes=[1, 3, 9, 1], mode="linear", coordinate_transformation_mode="pytorch_half_pixel"), (13,)),
    "Resize-linear-align_corners": (
        _resize_case(sizes=[1, 3, 7, 3], mode="linear", coordinate_transformation_mode="align_corners"), (13,)),
    "LRN": (_one("LRN", (2, 7, 3, 3), size=3, alpha=0.2, beta=0.6, bias=1.5), (9, 13)),
    "LRN-size1": (_one("LRN", (1, 5, 2, 2), size=1, alpha=0.5), (13,)),
    "Identity": (_one("Identity", (3, 4)), (9, 16)),
    "Dropout": (_one("Dropout", (3, 4)), (9, 12, 13)),
}


@pytest.mark.parametrize(
    "case,opset",
    [(name, opset) for name, (_, opsets) in SINGLE_OP_CASES.items() for opset in opsets],
)
def test_single_op_matches_onnxruntime(case: str, opset: int) -> None:
    build, _ = SINGLE_OP_CASES[case]
    model, feeds = build(opset)
    assert_matches_ort(model, feeds)


# --------------------------------------------------------------------------
# Networks, compiled
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make,input_name",
    [(resnet_like, "input.1"), (mobilenet_like, "images:0"), (unet_like, "x")],
    ids=["resnet-like", "mobilenet-like", "unet-like"],
)
def test_network_compiled_matches_onnxruntime(make: Callable[..., Any], input_name: str) -> None:
    model = make(batch=2, size=32)
    x = _rand(2, 3, 32, 32, seed=7)
    assert_matches_ort(model, {input_name: x}, target="llvm", tol=1e-4)


# --------------------------------------------------------------------------
# The contract: arguments, names, shapes, errors
# --------------------------------------------------------------------------


def test_main_takes_real_inputs_then_params_by_onnx_name() -> None:
    model = resnet_like(batch=1, size=16, widths=(8,))
    module, params = ember.from_onnx(model)
    names = [spec.name for spec in signature_of(module).inputs]
    initializers = [init.name for init in model.graph.initializer]
    assert names[0] == "input.1"
    assert set(names[1:]) == set(params) and set(params) <= set(initializers)
    for name, value in params.items():
        np.testing.assert_array_equal(value, onnx.numpy_helper.to_array(
            next(i for i in model.graph.initializer if i.name == name)))


@pytest.mark.parametrize("name", ["input.1", "data_0", "x:0", "images/1", "0"])
def test_set_input_takes_the_onnx_name_as_written(name: str) -> None:
    node = helper.make_node("Relu", [name], ["out:0"])
    model = make_model([node], {name: ((2, 3), F32)}, ["out:0"])
    x = _rand(2, 3)
    (out,) = run_ember(model, {name: x}, target="llvm")
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    module, _ = ember.from_onnx(model)
    reparsed = ember.parse(str(module))  # the name survives printing
    (again,) = run_ember_module(reparsed, {name: x})
    np.testing.assert_array_equal(again, np.maximum(x, 0))


def run_ember_module(module: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    executor = ember.GraphExecutor(ember.build(module, "interp"), ember.cpu())
    for name, value in feeds.items():
        executor.set_input(name, value)
    executor.run()
    return [executor.get_output(i).numpy() for i in range(executor.get_num_outputs())]


def test_outputs_come_in_onnx_order() -> None:
    nodes = [helper.make_node("Neg", ["x"], ["b"]), helper.make_node("Relu", ["x"], ["a"])]
    model = make_model(nodes, {"x": ((4,), F32)}, ["a", "b"])
    x = _rand(4)
    a, b = run_ember(model, {"x": x})
    np.testing.assert_array_equal(a, np.maximum(x, 0))
    np.testing.assert_array_equal(b, -x)


def test_dynamic_dimension_needs_shape() -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3])],
        [helper.make_empty_tensor_value_info("y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    with pytest.raises(ember.OnnxImportError, match=r"ONNX input 'x' has dynamic shape \[batch, 3\]"):
        ember.from_onnx(model)
    module, _ = ember.from_onnx(model, shape={"x": [5, 3]})
    assert "tensor<5x3xf32>" in str(module)
    with pytest.raises(ember.OnnxImportError, match="shape given for 'y', which is not an input"):
        ember.from_onnx(model, shape={"y": [5, 3]})
    with pytest.raises(ember.OnnxImportError, match="does not match its declared shape"):
        ember.from_onnx(model, shape={"x": [5, 4]})


def test_unsupported_operator_names_op_node_and_opset() -> None:
    node = helper.make_node("Einsum", ["x", "x"], ["y"], name="mix", equation="ij,ij->ij")
    model = make_model([node], {"x": ((2, 2), F32)}, ["y"], opset=12)
    with pytest.raises(ember.OnnxImportError) as info:
        ember.from_onnx(model)
    message = str(info.value)
    assert "Einsum" in message and "'mix'" in message and "opset 12" in message


def test_operator_outside_its_opset_range_says_which_opsets() -> None:
    node = helper.make_node("HardSwish", ["x"], ["y"], name="hs")
    model = make_model([node], {"x": ((2,), F32)}, ["y"], opset=13)
    with pytest.raises(ember.OnnxImportError, match=r"'hs' \(HardSwish, opset 13\).*opsets 14\+"):
        ember.from_onnx(model)


def test_unsupported_attribute_is_an_error_not_a_wrong_answer() -> None:
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool", kernel_shape=[2, 2])
    model = make_model([node], {"x": ((1, 1, 6, 6), F32)}, ["y", "i"], opset=12)
    with pytest.raises(ember.OnnxImportError, match=r"'pool' \(MaxPool, opset 12\): output 1 \(argmax"):
        ember.from_onnx(model)


def test_malformed_node_is_an_import_error() -> None:
    node = helper.make_node("Concat", ["x", "x"], ["y"], name="cat")  # no axis
    model = make_model([node], {"x": ((2, 2), F32)}, ["y"])
    with pytest.raises(ember.OnnxImportError, match=r"'cat' \(Concat, opset 17\): malformed node"):
        ember.from_onnx(model)


def test_unsupported_dtype_and_damaged_file(tmp_path: Path) -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make_model([node], {"x": ((2,), np.float64)}, ["y"])
    with pytest.raises(ember.OnnxImportError, match="element type DOUBLE"):
        ember.from_onnx(model)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not a model")
    with pytest.raises(ember.OnnxImportError, match="not a valid ONNX model"):
        ember.from_onnx(bad)
    with pytest.raises(ember.OnnxImportError, match="no such file|No such file"):
        ember.from_onnx(tmp_path / "missing.onnx")


def test_from_onnx_reads_a_path(tmp_path: Path) -> None:
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": ((3,), F32)}, ["y"])
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    module, params = ember.from_onnx(str(path))
    assert params == {} and "graph.relu" in str(module)


def test_import_ember_does_not_import_onnx() -> None:
    code = "import sys, ember; assert 'onnx' not in sys.modules and 'ember.frontends.onnx' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------


def _tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / name
    command = [str(script)] if script.exists() else [name]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=600)


def test_tools_accept_onnx_files(tmp_path: Path) -> None:
    model = resnet_like(batch=1, size=16, widths=(8,))
    path = tmp_path / "net.onnx"
    onnx.save(model, path)
    run = _tool("ember-run", str(path), "--random-inputs", "--interpret")
    assert run.returncode == 0, run.stderr
    assert "input input.1: tensor<1x3x16x16xf32>" in run.stdout and "output0: tensor<1x10xf32>" in run.stdout
    opt = _tool("ember-opt", str(path), "-p", "simplify-inference")
    assert opt.returncode == 0, opt.stderr
    assert '{graph.name = "input.1"}' in opt.stdout and "graph.batch_norm" not in opt.stdout
    translate = _tool("ember-translate", str(path), "--emit=graph")
    assert translate.returncode == 0, translate.stderr
    assert "{graph.name = \"input.1\"}" in translate.stdout and "graph.conv2d" in translate.stdout


def test_tools_report_bad_onnx_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    unsupported = tmp_path / "einsum.onnx"
    node = helper.make_node("Einsum", ["x", "x"], ["y"], name="mix", equation="ij,ij->ij")
    onnx.save(make_model([node], {"x": ((2, 2), F32)}, ["y"]), unsupported)
    for tool in ("ember-run", "ember-opt", "ember-translate"):
        extra = ["--emit=graph"] if tool == "ember-translate" else []
        for path, message in ((bad, "not a valid ONNX model"), (unsupported, "unsupported ONNX operator 'Einsum'")):
            result = _tool(tool, str(path), *extra)
            assert result.returncode == 1, (tool, result.stderr)
            assert message in result.stderr and "Traceback" not in result.stderr, (tool, result.stderr)


# --------------------------------------------------------------------------
# docs/onnx.md states the converter table
# --------------------------------------------------------------------------


def test_docs_table_lists_every_converter_with_its_opsets() -> None:
    import re

    from ember.frontends.onnx import converters_table, opset_ranges

    text = (Path(__file__).resolve().parent.parent / "docs" / "onnx.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", text, flags=re.MULTILINE))
    assert rows == {op: opset_ranges(op) for op in converters_table()}
