"""The "pytorch" peer: each benchmark workload in PyTorch eager mode, on the CPU.

Optional (``pip install -e .[bench]``): compare.py reads the column as n/a
when torch cannot be imported.  The networks are numpy_models.py's, built
from the same params with the same preparation an inference user does
(batch_norm folded into the convolutions by
:func:`numpy_models.fold_conv_bn`), then run by ``torch.nn.functional``
under ``torch.inference_mode()`` with ``torch.set_num_threads(threads)``.

Entry point: ``prepare(name, params, threads)`` returns ``x -> output``
over numpy arrays (the conversions are zero-copy views).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy_models

from ember.errors import EmberError

__all__ = ["INSTALL_HINT", "missing", "prepare"]

INSTALL_HINT = "install it with pip install -e .[bench] (the CPU wheel is enough)"

Forward = Callable[[np.ndarray], np.ndarray]
Params = Mapping[str, np.ndarray]


def missing() -> str | None:
    """Why the pytorch peer cannot run here, or ``None`` if it can."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return f"torch is not installed; {INSTALL_HINT}"
    return None


def _tensor(array: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(array))


def _conv(conv: numpy_models.Conv) -> Callable[..., Any]:
    """A folded convolution as ``F.conv2d`` (+ residual) (+ relu)."""
    import torch.nn.functional as F

    out_channels = conv.out_channels
    weight = _tensor(conv.matrix.reshape(out_channels, -1, conv.kernel, conv.kernel))
    bias = None if conv.bias is None else _tensor(conv.bias.reshape(-1))

    def forward(x: Any, relu: bool, residual: Any = None) -> Any:
        y = F.conv2d(x, weight, bias, stride=conv.stride, padding=conv.padding)
        if residual is not None:
            y += residual
        return F.relu(y, inplace=True) if relu else y

    return forward


def _mlp(params: Params) -> Callable[[Any], Any]:
    import torch.nn.functional as F

    w0, b0, w1, b1 = (_tensor(params[k]) for k in ("w0", "b0", "w1", "b1"))
    return lambda x: F.linear(F.relu(F.linear(x, w0, b0)), w1, b1)


def _convbnrelu(params: Params) -> Callable[[Any], Any]:
    conv = _conv(numpy_models.fold_conv_bn(params, "weight", "bn"))
    return lambda x: conv(x, relu=True)


def _tiny_pipe(params: Params) -> Callable[[Any], Any]:
    import torch.nn.functional as F

    conv = _conv(numpy_models.fold_conv_bn(params, "weight", "bn"))
    dweight = _tensor(params["dweight"])
    return lambda x: F.linear(conv(x, relu=True).flatten(1), dweight)


def _resnet18(params: Params) -> Callable[[Any], Any]:
    import torch.nn.functional as F

    stem = _conv(numpy_models.fold_conv_bn(params, "conv1_weight", "bn1", stride=2))
    blocks = []
    for stage in range(1, 5):
        for block in range(2):
            first_of_stage = stage > 1 and block == 0
            folded = numpy_models._basic_block(
                params, f"layer{stage}_{block}", stride=2 if first_of_stage else 1,
                project=first_of_stage,
            )
            blocks.append(
                (
                    _conv(folded.conv1),
                    _conv(folded.conv2),
                    None if folded.downsample is None else _conv(folded.downsample),
                )
            )
    fc_weight, fc_bias = _tensor(params["fc_weight"]), _tensor(params["fc_bias"])

    def forward(x: Any) -> Any:
        y = F.max_pool2d(stem(x, relu=True), kernel_size=3, stride=2, padding=1)
        for conv1, conv2, downsample in blocks:
            shortcut = y if downsample is None else downsample(y, relu=False)
            y = conv2(conv1(y, relu=True), relu=True, residual=shortcut)
        return F.linear(y.mean(dim=(2, 3)), fc_weight, fc_bias)

    return forward


MODELS: dict[str, Callable[[Params], Callable[[Any], Any]]] = {
    "mlp": _mlp,
    "mlp_b64": _mlp,
    "convbnrelu": _convbnrelu,
    "tiny_pipe": _tiny_pipe,
    "resnet18": _resnet18,
}


def prepare(name: str, params: Params, threads: int) -> Forward:
    """The eager PyTorch forward pass of workload ``name`` on ``threads`` threads."""
    import torch

    if name not in MODELS:
        raise EmberError(f"no pytorch model for workload {name!r}; known: {', '.join(MODELS)}")
    torch.set_num_threads(threads)
    model = MODELS[name](params)

    def forward(x: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return model(torch.from_numpy(x)).numpy()

    return forward
