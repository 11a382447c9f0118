"""The "numpy" peer: each benchmark workload written by hand in plain numpy.

These forward passes are what a careful numpy user would write, and they are
independent of ember: no IR, no interpreter, no compiled code — only the
params dict that ``ember.testing.workloads.get(name)`` returns (same names,
same shapes), so ember and its peers compute the same function of the same
weights.

"Careful" means what any inference engine does before the first run, done
once in :func:`prepare`:

* batch_norm (inference form) is folded into the preceding convolution's
  weights and a per-channel bias (ONNX Runtime and TVM's ``FoldScaleAxis``
  do the same);
* convolution is im2col + one sgemm per image: the k×k shifted (and strided)
  views of the padded input are copied into one ``(C·k·k) × (H·W)`` matrix,
  which OpenBLAS multiplies by the ``O × (C·k·k)`` weight matrix; a 1×1
  convolution skips the copy;
* bias, residual add and relu are applied in place on the sgemm's output.

numpy's thread count is OpenBLAS's, as the environment sets it.
Entry point: ``prepare(name, params)`` returns a function ``x -> output``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ember.errors import EmberError

__all__ = ["MODELS", "Forward", "prepare"]

Forward = Callable[[np.ndarray], np.ndarray]
Params = Mapping[str, np.ndarray]

BN_EPSILON = 1e-5  # every workload's batch_norm uses relay's default epsilon


@dataclass(frozen=True)
class Conv:
    """A convolution with batch_norm folded in: ``y = W ⊛ x + bias``.

    ``matrix`` is the OIHW weight reshaped to ``O × (I·k·k)``; square kernels,
    equal strides and symmetric padding (all the workloads use).
    """

    matrix: np.ndarray
    bias: np.ndarray | None
    kernel: int
    stride: int
    padding: int

    @property
    def out_channels(self) -> int:
        return self.matrix.shape[0]

    def __call__(
        self, x: np.ndarray, relu: bool, residual: np.ndarray | None = None
    ) -> np.ndarray:
        n, _, h, w = x.shape
        k, s, p = self.kernel, self.stride, self.padding
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))) if p else x
        out = np.empty((n, self.out_channels, oh, ow), dtype=x.dtype)
        for image in range(n):
            cols = self._im2col(padded[image], oh, ow)
            np.matmul(self.matrix, cols, out=out[image].reshape(self.out_channels, -1))
        if self.bias is not None:
            out += self.bias
        if residual is not None:
            out += residual
        if relu:
            np.maximum(out, 0, out=out)
        return out

    def _im2col(self, image: np.ndarray, oh: int, ow: int) -> np.ndarray:
        """``cols[(c, i, j), (y, x)] = image[c, y·s + i, x·s + j]``."""
        channels = image.shape[0]
        k, s = self.kernel, self.stride
        if k == 1 and s == 1:
            return image.reshape(channels, oh * ow)  # already the matrix
        cols = np.empty((channels, k, k, oh, ow), dtype=image.dtype)
        for i in range(k):
            for j in range(k):
                cols[:, i, j] = image[
                    :, i : i + s * (oh - 1) + 1 : s, j : j + s * (ow - 1) + 1 : s
                ]
        return cols.reshape(channels * k * k, oh * ow)


def fold_conv_bn(
    params: Params,
    weight: str,
    bn: str | None,
    stride: int = 1,
    padding: int | None = None,
) -> Conv:
    """:class:`Conv` from ``params[weight]`` (OIHW) and batch_norm ``<bn>_gamma…_var``."""
    kernel_weight = params[weight].astype(np.float32)
    out_channels, _, k, _ = kernel_weight.shape
    bias = None
    if bn is not None:
        scale = params[f"{bn}_gamma"] / np.sqrt(
            params[f"{bn}_var"] + np.float32(BN_EPSILON)
        )
        kernel_weight = kernel_weight * scale[:, None, None, None]
        bias = (params[f"{bn}_beta"] - params[f"{bn}_mean"] * scale).astype(np.float32)
        bias = bias.reshape(out_channels, 1, 1)
    return Conv(
        matrix=np.ascontiguousarray(kernel_weight.reshape(out_channels, -1)),
        bias=bias,
        kernel=k,
        stride=stride,
        padding=k // 2 if padding is None else padding,
    )


def _dense_weight(params: Params, name: str) -> np.ndarray:
    """TVM's dense weight is ``units × in``; ``x @ W.T`` wants it transposed."""
    return np.ascontiguousarray(params[name].T)


def max_pool_3x3_s2(x: np.ndarray) -> np.ndarray:
    """3×3 max pooling, stride 2, padding 1 (ResNet's stem); padding never wins."""
    h, w = x.shape[2:]
    oh, ow = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    out = padded[:, :, 0 : 2 * oh : 2, 0 : 2 * ow : 2].copy()
    for i in range(3):
        for j in range(3):
            if i or j:
                np.maximum(
                    out, padded[:, :, i : i + 2 * oh : 2, j : j + 2 * ow : 2], out=out
                )
    return out


# --------------------------------------------------------------------------
# The workloads (see ember/testing/workloads.py for the networks)
# --------------------------------------------------------------------------


def _mlp(params: Params) -> Forward:
    w0, b0 = _dense_weight(params, "w0"), params["b0"]
    w1, b1 = _dense_weight(params, "w1"), params["b1"]

    def forward(x: np.ndarray) -> np.ndarray:
        hidden = x @ w0
        hidden += b0
        np.maximum(hidden, 0, out=hidden)
        logits = hidden @ w1
        logits += b1
        return logits

    return forward


def _convbnrelu(params: Params) -> Forward:
    conv = fold_conv_bn(params, "weight", "bn")
    return lambda x: conv(x, relu=True)


def _tiny_pipe(params: Params) -> Forward:
    conv = fold_conv_bn(params, "weight", "bn")
    dweight = _dense_weight(params, "dweight")

    def forward(x: np.ndarray) -> np.ndarray:
        features = conv(x, relu=True)
        return features.reshape(features.shape[0], -1) @ dweight

    return forward


@dataclass(frozen=True)
class _BasicBlock:
    """torchvision's BasicBlock with batch_norm folded into its convolutions."""

    conv1: Conv
    conv2: Conv
    downsample: Conv | None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        shortcut = x if self.downsample is None else self.downsample(x, relu=False)
        return self.conv2(self.conv1(x, relu=True), relu=True, residual=shortcut)


def _basic_block(params: Params, name: str, stride: int, project: bool) -> _BasicBlock:
    return _BasicBlock(
        conv1=fold_conv_bn(params, f"{name}_conv1_weight", f"{name}_bn1", stride),
        conv2=fold_conv_bn(params, f"{name}_conv2_weight", f"{name}_bn2"),
        downsample=(
            fold_conv_bn(
                params,
                f"{name}_downsample_conv_weight",
                f"{name}_downsample_bn",
                stride,
            )
            if project
            else None
        ),
    )


def _resnet18(params: Params) -> Forward:
    stem = fold_conv_bn(params, "conv1_weight", "bn1", stride=2)
    blocks = []
    for stage in range(1, 5):
        for block in range(2):
            first_of_stage = stage > 1 and block == 0
            blocks.append(
                _basic_block(
                    params,
                    f"layer{stage}_{block}",
                    stride=2 if first_of_stage else 1,
                    project=first_of_stage,
                )
            )
    fc_weight, fc_bias = _dense_weight(params, "fc_weight"), params["fc_bias"]

    def forward(x: np.ndarray) -> np.ndarray:
        y = max_pool_3x3_s2(stem(x, relu=True))
        for block in blocks:
            y = block(y)
        pooled = y.mean(axis=(2, 3), dtype=np.float32)  # global_avg_pool + flatten
        logits = pooled @ fc_weight
        logits += fc_bias
        return logits

    return forward


MODELS: dict[str, Callable[[Params], Forward]] = {
    "mlp": _mlp,
    "mlp_b64": _mlp,  # the same network at batch 64; shapes come from params
    "convbnrelu": _convbnrelu,
    "tiny_pipe": _tiny_pipe,
    "resnet18": _resnet18,
}


def prepare(name: str, params: Params) -> Forward:
    """The numpy forward pass of workload ``name`` over ``params``.

    ``params`` is the dict from ``ember.testing.workloads.get(name)``; the
    weights are folded and copied here, so later changes to it do not leak in.
    """
    if name not in MODELS:
        raise EmberError(
            f"no numpy model for workload {name!r}; known: {', '.join(MODELS)}"
        )
    not_float32 = [k for k, v in params.items() if v.dtype != np.float32]
    if not_float32:
        raise EmberError(
            f"numpy model {name!r} runs in float32, but params {not_float32} are not"
        )
    try:
        return MODELS[name](params)
    except KeyError as error:
        raise EmberError(
            f"numpy model {name!r}: params has no {error.args[0]!r}; pass the params "
            f"of ember.testing.workloads.get({name!r})"
        ) from None
