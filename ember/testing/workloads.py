"""The benchmark networks, built with ``ember.builder`` (``relay.testing.*``).

``get(name, dtype)`` returns ``(module, params)`` like
``relay.testing.resnet.get_workload``: ``main`` takes ``data`` first, then
the parameters in order of first use; ``params`` maps their names to seeded
random arrays (:func:`ember.testing.init.create_workload`, seed 0).

The networks are those of the TVM and Relax tutorials ember follows:

* ``mlp``: 1x784 → dense 128 + bias → relu → dense 10 + bias (params w0, b0,
  w1, b1), the MLP of the Relax tutorial;
* ``mlp_b64``: the same at batch 64 with 1024 hidden units;
* ``convbnrelu``: 1x3x224x224 → conv2d 16 3x3 pad 1 → batch_norm → relu
  (params weight, bn_gamma, bn_beta, bn_mean, bn_var), the external-library
  tutorial's network;
* ``tiny_pipe``: 1x3x8x8 → conv2d 16 3x3 pad 1 → batch_norm → relu →
  batch_flatten → dense to 1 (params weight, bn_gamma, bn_beta, bn_mean,
  bn_var, dweight), the pipeline-executor tutorial's network;
* ``resnet18``: ResNet-18 v1 in torchvision's layout, inference-form
  batch_norm; parameter names follow torchvision's state dict with ``_`` for
  ``.`` (``layer2_0_downsample_conv_weight``, ``fc_bias``, …) and
  gamma/beta/mean/var for batch_norm's weight/bias/running_mean/running_var.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from ember.errors import EmberError
from ember.frontends import builder as eb
from ember.testing.init import create_workload

__all__ = ["NAMES", "get", "network"]


def _mlp(dtype: str, batch: int, hidden: int) -> FuncOp:
    data = eb.var("data", (batch, 784), dtype)
    hidden_out = eb.relu(
        eb.bias_add(eb.dense(data, eb.var("w0"), units=hidden), eb.var("b0"))
    )
    logits = eb.bias_add(eb.dense(hidden_out, eb.var("w1"), units=10), eb.var("b1"))
    return eb.function(logits)


def _bn(x: eb.Expr, prefix: str) -> eb.Expr:
    """Inference batch_norm with vars ``<prefix>_gamma`` … ``<prefix>_var``."""
    return eb.batch_norm(
        x,
        eb.var(f"{prefix}_gamma"),
        eb.var(f"{prefix}_beta"),
        eb.var(f"{prefix}_mean"),
        eb.var(f"{prefix}_var"),
        epsilon=1e-5,
    )


def _conv_bn_relu(dtype: str, size: int) -> eb.Expr:
    data = eb.var("data", (1, 3, size, size), dtype)
    y = eb.conv2d(data, eb.var("weight"), channels=16, kernel_size=3, padding=1)
    return eb.relu(_bn(y, "bn"))


def _convbnrelu(dtype: str) -> FuncOp:
    return eb.function(_conv_bn_relu(dtype, 224))


def _tiny_pipe(dtype: str) -> FuncOp:
    y = eb.batch_flatten(_conv_bn_relu(dtype, 8))
    return eb.function(eb.dense(y, eb.var("dweight"), units=1))


def _conv(x: eb.Expr, name: str, channels: int, kernel: int, stride: int) -> eb.Expr:
    return eb.conv2d(
        x,
        eb.var(f"{name}_weight"),
        strides=stride,
        padding=kernel // 2,
        channels=channels,
        kernel_size=kernel,
    )


def _basic_block(x: eb.Expr, name: str, channels: int, stride: int) -> eb.Expr:
    """torchvision's BasicBlock: two 3x3 convs, projection when shapes change."""
    y = eb.relu(_bn(_conv(x, f"{name}_conv1", channels, 3, stride), f"{name}_bn1"))
    y = _bn(_conv(y, f"{name}_conv2", channels, 3, 1), f"{name}_bn2")
    if stride != 1 or x.shape[1] != channels:
        x = _bn(
            _conv(x, f"{name}_downsample_conv", channels, 1, stride),
            f"{name}_downsample_bn",
        )
    return eb.relu(eb.add(y, x))


def _resnet18(dtype: str) -> FuncOp:
    data = eb.var("data", (1, 3, 224, 224), dtype)
    y = eb.relu(_bn(_conv(data, "conv1", 64, 7, 2), "bn1"))
    y = eb.max_pool2d(y, pool_size=3, strides=2, padding=1)
    for stage, channels in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            y = _basic_block(y, f"layer{stage}_{block}", channels, stride)
    y = eb.batch_flatten(eb.global_avg_pool2d(y))
    return eb.function(
        eb.bias_add(eb.dense(y, eb.var("fc_weight"), units=1000), eb.var("fc_bias"))
    )


_NETWORKS: dict[str, Callable[[str], FuncOp]] = {
    "mlp": lambda dtype: _mlp(dtype, batch=1, hidden=128),
    "mlp_b64": lambda dtype: _mlp(dtype, batch=64, hidden=1024),
    "convbnrelu": _convbnrelu,
    "tiny_pipe": _tiny_pipe,
    "resnet18": _resnet18,
}

NAMES: tuple[str, ...] = tuple(_NETWORKS)


def network(name: str, dtype: str = "float32") -> FuncOp:
    """The ``main`` function of workload ``name``, without parameters."""
    if name not in _NETWORKS:
        raise EmberError(
            f"unknown workload {name!r}; known workloads: {', '.join(NAMES)}"
        )
    if dtype not in ("float32", "float16", np.float32, np.float16):
        raise EmberError(
            f"workload {name!r}: dtype must be float32 or float16, got {dtype!r}"
        )
    return _NETWORKS[name](np.dtype(dtype).name)


def get(
    name: str, dtype: str = "float32", seed: int = 0
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """``(module, params)`` for workload ``name`` in ``dtype`` (see the module docstring)."""
    return create_workload(network(name, dtype), seed=seed)
