"""ONNX models built with ``onnx.helper`` for tests and benchmarks.

The shapes of networks that users import: a ResNet-like net (conv, batch
norm, relu, residual adds, max pool, global pool, Gemm), a MobileNet-like net
(depthwise and pointwise convs, Clip as ReLU6, HardSwish, Flatten) and a
UNet-like net (ConvTranspose, Resize, Concat, Pad) — exported the way
PyTorch exports them, weights as initializers, with seeded random weights.
``onnx`` is imported when a function runs, never at import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

__all__ = ["OnnxBuilder", "make_model", "mobilenet_like", "resnet_like", "unet_like"]

IR_VERSION = 10
"""ONNX IR version of the models built here (onnxruntime 1.31 reads up to 13)."""


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, tuple[Sequence[int], Any]],
    outputs: Sequence[str],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """A one-graph model: ``inputs`` maps names to (shape, numpy dtype)."""
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        list(nodes),
        "model",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape)
            )
            for name, (shape, dtype) in inputs.items()
        ],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        [numpy_helper.from_array(np.asarray(v), name) for name, v in (initializers or {}).items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION
    )


class OnnxBuilder:
    """Appends nodes and seeded initializers, naming values as exporters do."""

    def __init__(self, seed: int = 0) -> None:
        from onnx import helper

        self.helper = helper
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, np.ndarray] = {}
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}.{self.count}"

    def weight(self, stem: str, shape: Sequence[int], scale: float | None = None) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        std = scale if scale is not None else (2.0 / fan_in) ** 0.5
        name = self.fresh(stem)
        self.initializers[name] = (self.rng.standard_normal(shape) * std).astype(np.float32)
        return name

    def constant(self, stem: str, value: np.ndarray) -> str:
        name = self.fresh(stem)
        self.initializers[name] = np.asarray(value)
        return name

    def node(self, op_type: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> Any:
        outputs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(
            self.helper.make_node(op_type, list(inputs), outputs, name=self.fresh(op_type), **attrs)
        )
        return outputs[0] if n_out == 1 else outputs

    def conv(
        self, x: str, cin: int, cout: int, k: int, stride: int = 1, pad: int | None = None,
        group: int = 1, bias: bool = False,
    ) -> str:
        w = self.weight("conv.weight", (cout, cin // group, k, k))
        inputs = [x, w] + ([self.weight("conv.bias", (cout,), 0.1)] if bias else [])
        p = k // 2 if pad is None else pad
        return self.node(
            "Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p], group=group
        )

    def batch_norm(self, x: str, channels: int) -> str:
        rng = self.rng
        scale = self.constant("bn.weight", (1 + 0.1 * rng.standard_normal(channels)).astype(np.float32))
        bias = self.constant("bn.bias", (0.1 * rng.standard_normal(channels)).astype(np.float32))
        mean = self.constant("bn.running_mean", (0.1 * rng.standard_normal(channels)).astype(np.float32))
        var = self.constant("bn.running_var", rng.uniform(0.5, 1.5, channels).astype(np.float32))
        return self.node("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5)

    def model(self, inputs: Mapping[str, tuple[Sequence[int], Any]], outputs: Sequence[str], opset: int) -> onnx.ModelProto:
        return make_model(self.nodes, inputs, outputs, self.initializers, opset)


def resnet_like(
    batch: int = 1, size: int = 32, widths: Sequence[int] = (16, 32), classes: int = 10,
    opset: int = 13, seed: int = 0,
) -> onnx.ModelProto:
    """ResNet-style: 7×7/2 stem + BN + ReLU + 3×3/2 max pool, basic blocks with
    residual adds (a 1×1/2 projection where the width changes), global
    average pool, Flatten and Gemm — as ``torch.onnx.export`` writes them,
    input named ``input.1``."""
    b = OnnxBuilder(seed)
    x = b.node("Relu", [b.batch_norm(b.conv("input.1", 3, widths[0], 7, 2, 3), widths[0])])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = widths[0]
    for i, width in enumerate(widths):
        stride = 1 if i == 0 else 2
        y = b.node("Relu", [b.batch_norm(b.conv(x, cin, width, 3, stride), width)])
        y = b.batch_norm(b.conv(y, width, width, 3), width)
        shortcut = x
        if stride != 1 or cin != width:
            shortcut = b.batch_norm(b.conv(x, cin, width, 1, stride, 0), width)
        x = b.node("Relu", [b.node("Add", [y, shortcut])])
        cin = width
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    w = b.weight("fc.weight", (classes, cin))
    bias = b.weight("fc.bias", (classes,), 0.1)
    y = b.node("Gemm", [x, w, bias], alpha=1.0, beta=1.0, transB=1)
    return b.model({"input.1": ((batch, 3, size, size), np.float32)}, [y], opset)


def mobilenet_like(
    batch: int = 1, size: int = 32, widths: Sequence[int] = (16, 24, 32), classes: int = 10,
    opset: int = 14, seed: int = 1,
) -> onnx.ModelProto:
    """MobileNet-style: 3×3/2 stem, inverted residual blocks (1×1 expand,
    3×3 depthwise, 1×1 project) with Clip(0, 6) and HardSwish, a residual Add
    where shapes allow, GlobalAveragePool, Reshape and MatMul + Add; input
    ``images:0``."""
    b = OnnxBuilder(seed)
    zero = b.constant("clip.min", np.array(0.0, np.float32))
    six = b.constant("clip.max", np.array(6.0, np.float32))

    def relu6(v: str) -> str:
        return b.node("Clip", [v, zero, six])

    x = relu6(b.batch_norm(b.conv("images:0", 3, widths[0], 3, 2), widths[0]))
    cin = widths[0]
    for i, width in enumerate(widths):
        hidden = cin * 4
        y = relu6(b.batch_norm(b.conv(x, cin, hidden, 1, pad=0), hidden))
        y = b.node("HardSwish", [b.batch_norm(b.conv(y, hidden, hidden, 3, 1 if i == 0 else 2, group=hidden), hidden)])
        y = b.batch_norm(b.conv(y, hidden, width, 1, pad=0), width)
        x = b.node("Add", [x, y]) if i == 0 and cin == width else y
        cin = width
    pooled = b.node("GlobalAveragePool", [x])
    flat = b.node("Reshape", [pooled, b.constant("shape", np.array([batch, -1], np.int64))])
    w = b.weight("classifier.weight", (cin, classes))
    logits = b.node("Add", [b.node("MatMul", [flat, w]), b.weight("classifier.bias", (classes,), 0.1)])
    y = b.node("Softmax", [logits], axis=-1)
    return b.model({"images:0": ((batch, 3, size, size), np.float32)}, [y], opset)


def unet_like(
    batch: int = 1, size: int = 32, width: int = 8, classes: int = 3, opset: int = 13, seed: int = 2,
) -> onnx.ModelProto:
    """UNet-style: two encoder levels (conv + ReLU, 2×2 max pool), a
    bottleneck, a ConvTranspose 2×2/2 up-step and a linear Resize up-step,
    each concatenated with its skip connection, a reflect Pad before the last
    unpadded conv, and a Sigmoid; input ``x``."""
    b = OnnxBuilder(seed)
    relu = lambda v: b.node("Relu", [v])  # noqa: E731
    enc1 = relu(b.conv("x", 3, width, 3, bias=True))
    enc2 = relu(b.conv(b.node("MaxPool", [enc1], kernel_shape=[2, 2], strides=[2, 2]), width, 2 * width, 3, bias=True))
    bottom = relu(b.conv(b.node("MaxPool", [enc2], kernel_shape=[2, 2], strides=[2, 2]), 2 * width, 2 * width, 3, bias=True))
    up2 = b.node(
        "ConvTranspose", [bottom, b.weight("up.weight", (2 * width, 2 * width, 2, 2)), b.weight("up.bias", (2 * width,), 0.1)],
        kernel_shape=[2, 2], strides=[2, 2],
    )
    dec2 = relu(b.conv(b.node("Concat", [up2, enc2], axis=1), 4 * width, 2 * width, 3, bias=True))
    roi = b.constant("roi", np.array([], np.float32))
    scales = b.constant("scales", np.array([1, 1, 2, 2], np.float32))
    up1 = b.node("Resize", [dec2, roi, scales], mode="linear", coordinate_transformation_mode="half_pixel")
    merged = b.node("Concat", [up1, enc1], axis=1)
    pads = b.constant("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
    padded = b.node("Pad", [merged, pads], mode="reflect")
    logits = b.conv(padded, 3 * width, classes, 3, pad=0, bias=True)
    y = b.node("Sigmoid", [logits])
    return b.model({"x": ((batch, 3, size, size), np.float32)}, [y], opset)
