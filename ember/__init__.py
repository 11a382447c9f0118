"""ember: a deep-learning compiler toolkit built on xDSL.

The top-level namespace holds what a user touches first::

    module = ember.parse(text)                 # verified module
    outs = ember.interpret(module, "main", x)  # reference semantics (numpy)

Heavy parts (the interpreter, code generation, the runtime) are imported on
first use, so ``import ember`` is cheap and never needs a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import ModuleOp as _ModuleOp

from ember.build import build  # eager: a lazy one would be shadowed by ember/build.py
from ember.errors import (
    ArtifactError,
    EmberError,
    IRError,
    OnnxImportError,
    PassError,
    RuntimeFailure,
    TargetError,
)
from ember.ir import parse, to_text, verify_module

__version__ = "0.1.0"

__all__ = [
    "ArtifactError",
    "EmberError",
    "GraphExecutor",
    "GraphModule",
    "IRError",
    "OnnxImportError",
    "PassError",
    "RuntimeFailure",
    "TargetError",
    "VirtualMachine",
    "apply_passes",
    "bind_params",
    "build",
    "cpu",
    "cuda",
    "from_onnx",
    "get_global_func",
    "interpret",
    "load_module",
    "nd",
    "parse",
    "register_func",
    "register_op",
    "script",
    "to_dot",
    "to_text",
    "verify_module",
]


def interpret(module: Any, entry: str = "main", *args: Any) -> list[Any]:
    """Run function ``entry`` of ``module`` with the reference interpreter.

    Returns a list of numpy arrays, one per result.
    """
    from ember.interp import interpret as _interpret

    return _interpret(module, entry, *args)


def from_onnx(model: Any, shape: Any = None) -> tuple[Any, dict[str, Any]]:
    """Import an ONNX model (``onnx.ModelProto`` or ``.onnx`` path) as
    ``(module, params)``; see :mod:`ember.frontends.onnx`.  Needs the
    ``onnx`` package (``pip install "ember[onnx]"``), imported only here."""
    from ember.frontends.onnx import from_onnx as _from_onnx

    return _from_onnx(model, shape)


_RUNTIME_EXPORTS: dict[str, str] = {
    "Device": "ember.runtime.device",
    "cpu": "ember.runtime.device",
    "cuda": "ember.runtime.device",
    "device": "ember.runtime.device",
    "NDArray": "ember.runtime.ndarray",
    "register_func": "ember.runtime.registry",
    "get_global_func": "ember.runtime.registry",
    "list_global_func_names": "ember.runtime.registry",
    "remove_global_func": "ember.runtime.registry",
    "load_module": "ember.runtime.module",
    "save_params": "ember.runtime.module",
    "load_params": "ember.runtime.module",
    "GraphExecutor": "ember.runtime.graph_executor",
    "VirtualMachine": "ember.runtime.vm",
    "GraphModule": "ember.runtime.graph_executor",
    "register_op": "ember.dialects.graph_registry",
}


def apply_passes(
    module: Any, pipeline: Any, *, verify: bool = True, remarks: bool = False
) -> Any:
    """Run a pass pipeline (``"simplify-inference,fold-constants"``, as for
    ``ember-opt -p``) on a copy of ``module`` and return the copy; with
    ``remarks=True``, ``(copy, records)`` with the passes' remarks."""
    from ember.passes.pipeline import apply_passes as _apply_passes

    return _apply_passes(module, pipeline, verify=verify, remarks=remarks)


def to_dot(module: Any, **kwargs: Any) -> str:
    """Graphviz DOT of ``module``'s graph, fused groups and pipeline stages as
    clusters (:mod:`ember.visualize`); also ``module.to_dot()``."""
    from ember.visualize import to_dot as _to_dot

    return _to_dot(module, **kwargs)


def _module_to_dot(self: Any, **kwargs: Any) -> str:
    return to_dot(self, **kwargs)


# ``module.to_dot()`` on xDSL modules: ember's one extension method on them.
if not hasattr(_ModuleOp, "to_dot"):
    _ModuleOp.to_dot = _module_to_dot  # type: ignore[attr-defined]


def bind_params(module: Any, params: Any, *, entry: str = "main") -> Any:
    """A copy of ``module`` whose named arguments of ``entry`` are constants
    (Relax ``BindParams``)."""
    from ember.passes.bind_params import bind_params as _bind_params

    return _bind_params(module, params, entry=entry)


def __getattr__(name: str) -> Any:
    # Lazily imported parts that users reach as attributes (ember.cpu,
    # ember.builder, ember.testing): `import ember` stays cheap.
    import importlib

    if name in _RUNTIME_EXPORTS:
        value = getattr(importlib.import_module(_RUNTIME_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name == "nd":
        return importlib.import_module("ember.runtime.ndarray")
    if name == "runtime":
        return importlib.import_module("ember.runtime")

    if name == "builder":
        return importlib.import_module("ember.frontends.builder")
    if name in ("testing", "interp", "dialects", "passes", "pipeline", "script", "remarks"):
        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


if TYPE_CHECKING:
    from ember.frontends import builder as builder
