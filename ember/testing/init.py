"""Seeded parameter initialisation: ``create_workload`` as in ``relay.testing``.

``relay.testing.create_workload(func)`` turns a function into a module and a
dict of random parameters for every argument but the data.  ember does the
same for a graph ``func.func`` (from the builder or parsed text):

* the first argument is the data; every other argument is a parameter, keyed
  by its name (the argument's SSA name hint, as the builder sets it);
* each parameter's values depend on how the function uses it, found from its
  first use: conv2d/dense/matmul weights are LeCun-uniform (variance
  1/fan_in), biases are small, batch_norm's gamma/beta/mean/var are non-trivial so that
  tests can tell a wrong normalisation from a right one;
* values are drawn in float64 from ``numpy.random.default_rng(seed)``, one
  parameter after another in argument order, then cast to the argument's
  dtype: the float16 and float32 versions of a network get the same weights
  up to rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument

from ember.dialects import graph
from ember.errors import EmberError
from ember.ir import verify_module

__all__ = ["create_workload", "init_param", "param_names"]

# Weights are U(-b, b) with b = sqrt(3 / fan_in), i.e. variance 1/fan_in.
# He's variance 2/fan_in is right for a plain ReLU stack, but batch_norm with
# random statistics does not renormalise, and every residual block then
# doubles the variance: ResNet-18's logits reach ~300.  With 1/fan_in its
# activations stay between 0.4 and 2.5 (standard deviation) from the stem to
# the logits, so a relative tolerance of 1e-4 means the same thing everywhere
# and float16 never comes near overflow.
WEIGHT_VARIANCE_SCALE = 1.0
BIAS_BOUND = 0.1

Initializer = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def _fan_in_uniform(fan_in: int) -> Initializer:
    bound = np.sqrt(3.0 * WEIGHT_VARIANCE_SCALE / max(fan_in, 1))
    return lambda rng, shape: rng.uniform(-bound, bound, shape)


def _uniform(low: float, high: float) -> Initializer:
    return lambda rng, shape: rng.uniform(low, high, shape)


# batch_norm operand index -> initialiser (gamma, beta, moving mean, moving var).
_BATCH_NORM = {
    1: _uniform(0.5, 1.5),
    2: _uniform(-0.5, 0.5),
    3: _uniform(-0.5, 0.5),
    4: _uniform(0.5, 1.5),
}


def _initializer_for(arg: BlockArgument) -> Initializer:
    """Pick an initialiser from the first use of ``arg``."""
    shape = tuple(arg.type.get_shape())
    for use in arg.uses:
        op, index = use.operation, use.index
        if isinstance(op, graph.Conv2dOp) and index == 1:
            return _fan_in_uniform(int(np.prod(shape[1:])))
        if isinstance(op, graph.DenseOp) and index == 1:
            return _fan_in_uniform(shape[-1])
        if isinstance(op, graph.MatmulOp) and index == 1 and len(shape) >= 2:
            return _fan_in_uniform(shape[-2])
        if isinstance(op, graph.BatchNormOp) and index in _BATCH_NORM:
            return _BATCH_NORM[index]
        if isinstance(op, (graph.BiasAddOp, graph.AddOp)):
            return _uniform(-BIAS_BOUND, BIAS_BOUND)
    # Any other use: values of unit scale.
    return _uniform(-1.0, 1.0)


def init_param(arg: BlockArgument, rng: np.random.Generator) -> np.ndarray:
    """A random value for function argument ``arg``, of its type."""
    t = arg.type
    if not isinstance(t, TensorType):
        raise EmberError(f"argument {arg.name_hint or arg.index} is not a tensor: {t}")
    dtype = graph.numpy_dtype(t.element_type)
    values = _initializer_for(arg)(rng, tuple(t.get_shape()))
    if dtype.kind == "i":
        values = np.rint(values * 10)
    return np.asarray(values).astype(dtype)


def param_names(func: FuncOp) -> list[str]:
    """The names of ``func``'s parameters (all arguments but the first)."""
    names: list[str] = []
    for arg in func.body.block.args[1:]:
        if arg.name_hint is None:
            raise EmberError(
                f"@{func.sym_name.data}: argument {arg.index} has no name; "
                "parameters are keyed by argument name"
            )
        if arg.name_hint in names:
            raise EmberError(
                f"@{func.sym_name.data}: two arguments are named '{arg.name_hint}'"
            )
        names.append(arg.name_hint)
    return names


def create_workload(
    func_or_module: FuncOp | ModuleOp, seed: int = 0
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """A verified module and seeded parameters for its ``main`` function.

    A module must hold ``main`` (or exactly one function); a function that
    already belongs to a module is cloned into a new one.  Returns
    ``(module, params)`` with ``params`` mapping each parameter name to a
    numpy array of the parameter's dtype, in argument order.
    """
    module = _as_module(func_or_module)
    verify_module(module)
    func = _main(module)
    names = param_names(func)
    rng = np.random.default_rng(seed)
    params = {
        name: init_param(arg, rng) for name, arg in zip(names, func.body.block.args[1:])
    }
    return module, params


def _as_module(func_or_module: FuncOp | ModuleOp) -> ModuleOp:
    if isinstance(func_or_module, ModuleOp):
        return func_or_module
    if isinstance(func_or_module, FuncOp):
        f = (
            func_or_module.clone()
            if func_or_module.parent is not None
            else func_or_module
        )
        return ModuleOp([f])
    raise EmberError(
        f"create_workload expects a func.func or a module, got {type(func_or_module).__name__}"
    )


def _main(module: ModuleOp) -> FuncOp:
    funcs = [op for op in module.body.block.ops if isinstance(op, FuncOp)]
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    if len(funcs) == 1:
        return funcs[0]
    names = ", ".join(f"@{f.sym_name.data}" for f in funcs) or "none"
    raise EmberError(f"create_workload: the module has no @main (functions: {names})")
