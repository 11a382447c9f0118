"""Tests of the benchmark workloads and of ``create_workload``.

Each workload is interpreted with ``ember.interpret`` and compared with an
independent float64 numpy formulation of the network written here: the
convolution sums shifted slices over kernel offsets, pooling takes the max of
shifted slices, batch_norm is spelled out.  Nothing is shared with
``ember.interp``.  f32 results must match to 1e-4 relative to the largest
magnitude of the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import ember
from ember.dialects import graph
from ember.errors import EmberError
from ember.testing import init, workloads
from ember.testing.init import create_workload

F32_TOLERANCE = 1e-4

Params = Mapping[str, np.ndarray]

# --------------------------------------------------------------------------
# The reference: numpy, float64, written from the network descriptions
# --------------------------------------------------------------------------


def ref_conv2d(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """NCHW x OIHW convolution: one tensordot per kernel offset."""
    n, _, h, wd = x.shape
    out_channels, _, kh, kw = w.shape
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, out_channels, oh, ow))
    for i in range(kh):
        for j in range(kw):
            window = padded[
                :,
                :,
                i : i + stride * (oh - 1) + 1 : stride,
                j : j + stride * (ow - 1) + 1 : stride,
            ]
            out += np.einsum("oc,nchw->nohw", w[:, :, i, j], window, optimize=True)
    return out


def ref_batch_norm(x: np.ndarray, p: Params, prefix: str) -> np.ndarray:
    gamma, beta, mean, var = (
        p[f"{prefix}_{k}"].reshape(1, -1, 1, 1)
        for k in ("gamma", "beta", "mean", "var")
    )
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def ref_max_pool_3x3_s2_p1(x: np.ndarray) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    oh = (x.shape[2] - 1) // 2 + 1
    ow = (x.shape[3] - 1) // 2 + 1
    windows = [
        padded[:, :, i : i + 2 * (oh - 1) + 1 : 2, j : j + 2 * (ow - 1) + 1 : 2]
        for i in range(3)
        for j in range(3)
    ]
    return np.max(windows, axis=0)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def ref_mlp(x: np.ndarray, p: Params) -> np.ndarray:
    hidden = relu(x @ p["w0"].T + p["b0"])
    return hidden @ p["w1"].T + p["b1"]


def ref_convbnrelu(x: np.ndarray, p: Params) -> np.ndarray:
    return relu(ref_batch_norm(ref_conv2d(x, p["weight"], 1, 1), p, "bn"))


def ref_tiny_pipe(x: np.ndarray, p: Params) -> np.ndarray:
    y = ref_convbnrelu(x, p).reshape(x.shape[0], -1)
    return y @ p["dweight"].T


def ref_resnet18(x: np.ndarray, p: Params) -> np.ndarray:
    y = relu(ref_batch_norm(ref_conv2d(x, p["conv1_weight"], 2, 3), p, "bn1"))
    y = ref_max_pool_3x3_s2_p1(y)
    for stage in (1, 2, 3, 4):
        for block in (0, 1):
            name = f"layer{stage}_{block}"
            stride = 2 if stage > 1 and block == 0 else 1
            z = relu(
                ref_batch_norm(
                    ref_conv2d(y, p[f"{name}_conv1_weight"], stride, 1),
                    p,
                    f"{name}_bn1",
                )
            )
            z = ref_batch_norm(
                ref_conv2d(z, p[f"{name}_conv2_weight"], 1, 1), p, f"{name}_bn2"
            )
            if stage > 1 and block == 0:
                y = ref_batch_norm(
                    ref_conv2d(y, p[f"{name}_downsample_conv_weight"], stride, 0),
                    p,
                    f"{name}_downsample_bn",
                )
            y = relu(z + y)
    return y.mean(axis=(2, 3)) @ p["fc_weight"].T + p["fc_bias"]


REFERENCES: dict[str, Callable[[np.ndarray, Params], np.ndarray]] = {
    "mlp": ref_mlp,
    "mlp_b64": ref_mlp,
    "convbnrelu": ref_convbnrelu,
    "tiny_pipe": ref_tiny_pipe,
    "resnet18": ref_resnet18,
}

DATA_SHAPES = {
    "mlp": (1, 784),
    "mlp_b64": (64, 784),
    "convbnrelu": (1, 3, 224, 224),
    "tiny_pipe": (1, 3, 8, 8),
    "resnet18": (1, 3, 224, 224),
}

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def main_of(module: ModuleOp) -> FuncOp:
    return next(
        op
        for op in module.body.block.ops
        if isinstance(op, FuncOp) and op.sym_name.data == "main"
    )


def arg_types(module: ModuleOp) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    return [
        (a.name_hint, tuple(a.type.get_shape()), graph.numpy_dtype(a.type.element_type))
        for a in main_of(module).body.block.args
    ]


def random_data(name: str, dtype: str, seed: int = 42) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, DATA_SHAPES[name]).astype(dtype)


def max_relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))


@pytest.fixture(scope="module")
def f32_workloads() -> dict[str, tuple[ModuleOp, dict[str, np.ndarray]]]:
    return {name: workloads.get(name) for name in workloads.NAMES}


# --------------------------------------------------------------------------
# The workloads
# --------------------------------------------------------------------------


def test_names() -> None:
    assert workloads.NAMES == ("mlp", "mlp_b64", "convbnrelu", "tiny_pipe", "resnet18")


@pytest.mark.parametrize(
    "name", ["mlp", "mlp_b64", "convbnrelu", "tiny_pipe", "resnet18"]
)
def test_workload_matches_numpy_reference(name: str, f32_workloads) -> None:
    module, params = f32_workloads[name]
    data = random_data(name, "float32")
    (got,) = ember.interpret(module, "main", data, *params.values())
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    want = REFERENCES[name](data.astype(np.float64), p64)
    assert got.shape == want.shape and got.dtype == np.float32
    assert max_relative_error(got, want) <= F32_TOLERANCE
    # The comparison means something: the output is neither tiny nor huge
    # and depends on the data (a network that ignored it would pass anything).
    assert 0.05 < np.max(np.abs(want)) < 100
    other = REFERENCES[name](random_data(name, "float64", seed=7), p64)
    assert max_relative_error(other, want) > 100 * F32_TOLERANCE


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("mlp", ["w0", "b0", "w1", "b1"]),
        ("mlp_b64", ["w0", "b0", "w1", "b1"]),
        ("convbnrelu", ["weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var"]),
        (
            "tiny_pipe",
            ["weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var", "dweight"],
        ),
    ],
)
def test_small_workload_signatures(name: str, params: list[str], f32_workloads) -> None:
    module, values = f32_workloads[name]
    args = arg_types(module)
    assert [a[0] for a in args] == ["data", *params] == ["data", *values]
    assert args[0][1] == DATA_SHAPES[name]
    for arg_name, shape, dtype in args[1:]:
        assert values[arg_name].shape == shape and values[arg_name].dtype == dtype


def test_resnet18_layout(f32_workloads) -> None:
    module, params = f32_workloads["resnet18"]
    shapes = {name: shape for name, shape, _ in arg_types(module)}
    assert shapes["conv1_weight"] == (64, 3, 7, 7)
    assert shapes["layer2_0_downsample_conv_weight"] == (128, 64, 1, 1)
    assert shapes["layer4_1_conv2_weight"] == (512, 512, 3, 3)
    assert shapes["fc_weight"] == (1000, 512) and shapes["fc_bias"] == (1000,)
    assert "layer1_0_downsample_conv_weight" not in shapes
    assert sum(1 for name in shapes if name.endswith("_weight")) == 20 + 1
    # torchvision's ResNet-18 has 11,689,512 parameters (batch_norm's running
    # statistics not counted); ours counts them: 9,600 more.
    assert sum(v.size for v in params.values()) == 11_689_512 + 9_600
    ops = [op.name for op in main_of(module).body.block.ops]
    assert ops.count("graph.conv2d") == 20 and ops.count("graph.batch_norm") == 20
    assert ops.count("graph.add") == 8 and ops.count("graph.max_pool2d") == 1


@pytest.mark.parametrize(
    "name", ["mlp", "mlp_b64", "convbnrelu", "tiny_pipe", "resnet18"]
)
def test_float16_workloads_build_and_print_stably(name: str) -> None:
    module, params = workloads.get(name, "float16")
    assert all(dtype == np.float16 for _, _, dtype in arg_types(module))
    assert all(v.dtype == np.float16 for v in params.values())
    text = str(module)
    assert str(ember.parse(text)) == text


def test_float16_tiny_pipe_is_close_to_the_reference() -> None:
    module, params = workloads.get("tiny_pipe", "float16")
    data = random_data("tiny_pipe", "float16")
    (got,) = ember.interpret(module, "main", data, *params.values())
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    want = ref_tiny_pipe(data.astype(np.float64), p64)
    assert got.dtype == np.float16
    assert max_relative_error(got, want) <= 1e-2


def test_f16_and_f32_weights_agree_up_to_rounding() -> None:
    _, p16 = workloads.get("convbnrelu", "float16")
    _, p32 = workloads.get("convbnrelu", "float32")
    for name in p32:
        np.testing.assert_allclose(p16[name], p32[name], rtol=1e-3, atol=1e-4)


def test_unknown_workload_lists_the_names() -> None:
    with pytest.raises(
        EmberError,
        match="unknown workload 'resnet50'.*mlp, mlp_b64, convbnrelu, tiny_pipe, resnet18",
    ):
        workloads.get("resnet50")
    with pytest.raises(EmberError, match="float32 or float16"):
        workloads.get("mlp", "int8")


# --------------------------------------------------------------------------
# create_workload
# --------------------------------------------------------------------------

BN_TEXT = """
func.func @main(%data: tensor<2x8x3x3xf32>, %w: tensor<8x8x3x3xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %bias: tensor<8xf32>, %other: tensor<3xf32>) -> tensor<2x8x3x3xf32> {
  %0 = graph.conv2d %data, %w {padding = [1, 1, 1, 1]} : (tensor<2x8x3x3xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x3x3xf32>
  %1 = graph.batch_norm %0, %g, %b, %m, %v : (tensor<2x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x3x3xf32>
  %2 = graph.bias_add %1, %bias : (tensor<2x8x3x3xf32>, tensor<8xf32>) -> tensor<2x8x3x3xf32>
  %3 = graph.add %2, %other : (tensor<2x8x3x3xf32>, tensor<3xf32>) -> tensor<2x8x3x3xf32>
  func.return %3 : tensor<2x8x3x3xf32>
}
"""


def test_create_workload_initialises_by_role() -> None:
    _module, params = create_workload(ember.parse(BN_TEXT), seed=3)
    assert list(params) == ["w", "g", "b", "m", "v", "bias", "other"]
    bound = np.sqrt(3.0 / (8 * 3 * 3))
    assert np.all(np.abs(params["w"]) <= bound) and np.std(params["w"]) > bound / 3
    for name, low, high in [
        ("g", 0.5, 1.5),
        ("b", -0.5, 0.5),
        ("m", -0.5, 0.5),
        ("v", 0.5, 1.5),
    ]:
        assert np.all((params[name] >= low) & (params[name] <= high)), name
    assert np.all(np.abs(params["bias"]) <= init.BIAS_BOUND)
    assert all(v.dtype == np.float32 for v in params.values())


def test_create_workload_is_seeded() -> None:
    _, first = create_workload(ember.parse(BN_TEXT), seed=1)
    _, again = create_workload(ember.parse(BN_TEXT), seed=1)
    _, other = create_workload(ember.parse(BN_TEXT), seed=2)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
        assert not np.array_equal(first[name], other[name])


def test_create_workload_accepts_a_builder_function() -> None:
    from ember import builder as eb

    x = eb.var("data", (1, 4))
    func = eb.function(eb.dense(x, eb.var("w"), units=2))
    module, params = create_workload(func)
    assert main_of(module) is func and list(params) == ["w"]
    # A function already inside a module is copied into the new one.
    module2, _ = create_workload(func)
    assert main_of(module2) is not func


def test_create_workload_needs_argument_names() -> None:
    module = ember.parse(
        """
func.func @main(%data: tensor<2xf32>, %0: tensor<2xf32>) -> tensor<2xf32> {
  %1 = graph.add %data, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %1 : tensor<2xf32>
}
"""
    )
    with pytest.raises(EmberError, match="@main: argument 1 has no name"):
        create_workload(module)
