"""``ember.build``: compile a graph module for a target into a runtime Module.

Mirrors ``tvm.relay.build(mod, target, params=...)`` / ``relax.build``: the
result is a :class:`~ember.runtime.module.Module` that a
:class:`~ember.runtime.graph_executor.GraphExecutor` runs and that
``export_library`` writes to disk.

``params`` are bound to the entry function's arguments of the same name: they
stop being inputs of the built module, and are stored with it.  The ``llvm``
backend binds them as constants (Relax ``BindParams``) so the graph passes
fold them (batch_norm into conv weights, weights packed for the kernels);
the ``interp`` backend passes them at run time.  Every param is checked here
— its name must be an argument, its shape and dtype the argument's — so a
mistake fails at build time, naming the argument, rather than as a shape
error deep inside a kernel.

The target picks a backend (:func:`ember.runtime.module.backend_for`):
``"interp"`` runs the reference interpreter; ``"llvm"`` is the CPU code
generator (:mod:`ember.runtime.cpu`); ``"cuda"`` is planned and asking for it
is an error — never a silent fallback to the interpreter.  TVM's library
option works as there: ``"llvm -libs=blas"``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ember.errors import RuntimeFailure
from ember.ir import as_module

if TYPE_CHECKING:
    import numpy as np

    from ember.runtime.module import FunctionSignature, Module, TensorSpec

# The runtime (and numpy) are imported on the first build, not here: ember's
# __init__ imports this module eagerly, and ``import ember`` must stay cheap.

__all__ = ["build"]


def build(
    module: ModuleOp | str,
    target: str = "llvm",
    params: Mapping[str, Any] | None = None,
    *,
    entry: str = "main",
    fast_math: bool = False,
) -> Module:
    """Compile function ``entry`` of ``module`` for ``target``.

    ``module``: a verified ``ModuleOp`` (or IR text, parsed here).
    ``target``: ``"interp"`` or ``"llvm"`` (see :func:`~ember.runtime.module.available_targets`),
    optionally with TVM's library option: ``"llvm -libs=blas"`` offloads
    dense, matmul and conv2d to BLAS (``partition-extern``) after the params
    are bound and batch_norm is folded into the weights.
    ``params``: argument name → array (numpy, NDArray, DLPack, list), bound
    as constants; copied, so later changes to the caller's arrays do not
    leak into the module.
    ``fast_math``: let the ``llvm`` target assume that no value is NaN, inf
    or -0.0 (LLVM's ``fast`` flags).  Off by default: compiled code then
    computes what the interpreter computes, NaN and inf included (see
    docs/graph-dialect.md); on, results for such values are unspecified.

    The caller's ``module`` is not modified.
    """
    from ember.runtime.module import backend_for, signature_of

    ir = as_module(module, "ember.build", RuntimeFailure)
    target_name, libs = parse_target(target)
    backend = backend_for(target_name)
    signature = signature_of(ir, entry)
    bound = _bind_params(signature, params)
    if libs:
        ir, bound = _offload(ir, entry, bound, libs), {}
        signature = signature_of(ir, entry)
    if not isinstance(fast_math, bool):
        raise RuntimeFailure(f"fast_math must be True or False, got {fast_math!r}")
    if fast_math:
        if target_name != "llvm":
            raise RuntimeFailure(
                f"fast_math=True is an option of the 'llvm' target, not {target_name!r}"
            )
        from ember.compiler import CompileOptions

        options = CompileOptions(entry=entry, fast_math=True)
        return backend.compile(ir.clone(), signature, bound, options)  # type: ignore[call-arg]
    return backend.compile(ir.clone(), signature, bound)


def parse_target(target: str) -> tuple[str, tuple[str, ...]]:
    """``"llvm -libs=blas,x"`` → ``("llvm", ("blas", "x"))``."""
    if not isinstance(target, str):
        raise RuntimeFailure(f"target must be a string such as 'llvm', got {target!r}")
    name, *options = target.split()
    libs: tuple[str, ...] = ()
    for option in options:
        key, _, value = option.partition("=")
        if key != "-libs" or not value:
            raise RuntimeFailure(
                f"unknown target option {option!r} in {target!r}; "
                "the only option is -libs=NAME[,NAME…] (e.g. 'llvm -libs=blas')"
            )
        libs += tuple(v for v in value.split(",") if v)
    return name, libs


def _offload(
    ir: ModuleOp, entry: str, params: Mapping[str, np.ndarray], libs: tuple[str, ...]
) -> ModuleOp:
    """Bind params, fold batch_norm into weights, then offload to ``libs``."""
    from ember.passes.bind_params import bind_params
    from ember.passes.pipeline import apply_passes

    bound = bind_params(ir, params, entry=entry) if params else ir
    pipeline = f"simplify-inference,fold-constants,partition-extern{{libs={','.join(libs)}}}"
    return apply_passes(bound, pipeline)


def _bind_params(
    signature: FunctionSignature, params: Mapping[str, Any] | None
) -> dict[str, np.ndarray]:
    """Checked, read-only copies of ``params``, by argument name."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise RuntimeFailure(
            f"params must be a dict of argument name -> array, got {type(params).__name__}"
        )
    bound: dict[str, np.ndarray] = {}
    for name, value in params.items():
        spec = signature.input(name) if isinstance(name, str) else None
        if spec is None:
            raise RuntimeFailure(_unknown_param_message(name, signature))
        bound[name] = _param_array(value, spec, signature.name)
    return bound


def _unknown_param_message(name: Any, signature: FunctionSignature) -> str:
    names = [spec.name for spec in signature.inputs]
    message = f"params has {name!r}, but @{signature.name} has no argument of that name"
    close = difflib.get_close_matches(str(name), names, n=1)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message + f" (arguments: {', '.join(names) or 'none'})"


def _param_array(value: Any, spec: TensorSpec, entry: str) -> np.ndarray:
    import numpy as np

    from ember.runtime.ndarray import as_host_array

    what = f"param {spec.name!r} (argument %{spec.name} of @{entry})"
    # Python data has no dtype of its own: it takes the argument's.
    values = as_host_array(value, what, dtype=np.dtype(spec.dtype))
    if values.shape != spec.shape or values.dtype.name != spec.dtype:
        raise RuntimeFailure(
            f"{what} must be {spec.describe()}, got {values.dtype.name}{list(values.shape)}"
        )
    # A private, frozen copy: the caller may go on changing its array.
    bound = np.array(values, dtype=values.dtype.newbyteorder("="), order="C", copy=True)
    bound.flags.writeable = False
    return bound
