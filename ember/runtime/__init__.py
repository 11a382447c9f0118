"""ember's runtime: devices, NDArrays, the function registry, compiled modules.

The counterpart of ``tvm.runtime`` / ``tvm.nd`` / ``tvm.contrib.graph_executor``:

* :mod:`~ember.runtime.device` — ``cpu(0)``, ``cuda(0)``, :class:`Device`;
* :mod:`~ember.runtime.ndarray` — :class:`NDArray` (aligned numpy storage,
  DLPack both ways), ``nd.array`` / ``nd.empty`` / ``nd.from_dlpack``;
* :mod:`~ember.runtime.registry` — ``register_func`` / ``get_global_func``,
  the destination-passing functions that ``graph.call_extern`` calls;
* :mod:`~ember.runtime.module` — the compiled :class:`Module` interface,
  backends by target name, ``export_library`` / ``load_module`` and the
  artifact format, ``save_params`` / ``load_params``;
* :mod:`~ember.runtime.graph_executor` — :class:`GraphExecutor`.

``ember.build`` lives in :mod:`ember.build`.  Nothing here needs a GPU, a
driver or llvmlite to import, and nothing here compiles: the runtime loads
and runs what a backend (:mod:`ember.backends`) compiled, by the calling
convention of :mod:`ember.abi` (docs/architecture.md).
"""

from __future__ import annotations

from ember.runtime import ndarray as nd
from ember.runtime.device import Device, cpu, cuda, device
from ember.runtime.graph_executor import BenchmarkResult, GraphExecutor, GraphModule
from ember.runtime.module import (
    ArtifactError,
    FunctionSignature,
    Module,
    TensorSpec,
    available_targets,
    load_module,
    load_params,
    register_backend,
    save_params,
)
from ember.runtime.ndarray import NDArray
from ember.runtime.registry import (
    UnknownFunctionError,
    call_dps_packed,
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)

# TVM's names for the params blob functions.
save_param_dict = save_params
load_param_dict = load_params

__all__ = [
    "ArtifactError",
    "BenchmarkResult",
    "Device",
    "FunctionSignature",
    "GraphExecutor",
    "GraphModule",
    "Module",
    "NDArray",
    "TensorSpec",
    "UnknownFunctionError",
    "available_targets",
    "call_dps_packed",
    "cpu",
    "cuda",
    "device",
    "get_global_func",
    "list_global_func_names",
    "load_module",
    "load_param_dict",
    "load_params",
    "nd",
    "register_backend",
    "register_func",
    "remove_global_func",
    "save_param_dict",
    "save_params",
]
