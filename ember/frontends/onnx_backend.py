"""ember as an ONNX backend (``onnx.backend.base.Backend``).

The interface ONNX's own conformance suite drives (``onnx.backend.test``):
``EmberBackend.prepare(model, device="CPU")`` imports the model with
:func:`ember.from_onnx` and builds it; ``rep.run(inputs)`` sets the inputs
by their ONNX names and returns the outputs in ONNX order.  ``target``
picks ember's backend: ``"interp"`` (the reference interpreter, the
definition of every graph op; the default, fast to build) or ``"llvm"``.

```python-norun
from ember.frontends.onnx_backend import EmberBackend
rep = EmberBackend.prepare(model, "CPU", target="llvm")
outputs = rep.run([x])
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto
from onnx.backend.base import Backend, BackendRep

import ember
from ember.errors import OnnxImportError

__all__ = ["EmberBackend", "EmberRep"]


class EmberRep(BackendRep):
    """A built model: ``run(inputs)`` with inputs in ONNX input order (a list)
    or by name (a dict)."""

    def __init__(self, executor: Any, input_names: Sequence[str]) -> None:
        self.executor = executor
        self.input_names = list(input_names)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:  # type: ignore[override]
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(values) != len(self.input_names):
                raise OnnxImportError(
                    f"the model takes {len(self.input_names)} inputs "
                    f"({', '.join(self.input_names)}), got {len(values)}"
                )
            feeds = dict(zip(self.input_names, values))
        for name, value in feeds.items():
            self.executor.set_input(name, value)
        self.executor.run()
        return tuple(
            self.executor.get_output(i).numpy() for i in range(self.executor.get_num_outputs())
        )


class EmberBackend(Backend):
    """``onnx.backend.base.Backend`` for ember, CPU only."""

    @classmethod
    def is_compatible(cls, model: ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(  # type: ignore[override]
        cls, model: ModelProto, device: str = "CPU", target: str = "interp", **kwargs: Any
    ) -> EmberRep:
        if not cls.supports_device(device):
            raise OnnxImportError(f"ember's ONNX backend runs on CPU, not {device!r}")
        shape = kwargs.get("shape")
        module, params = ember.from_onnx(model, shape=shape)
        lib = ember.build(module, target, params=params)
        executor = ember.GraphExecutor(lib, ember.cpu())
        initializers = {init.name for init in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in initializers]
        return EmberRep(executor, names)

    @classmethod
    def run_model(  # type: ignore[override]
        cls, model: ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(  # type: ignore[override]
        cls, node: NodeProto, inputs: Any, device: str = "CPU", outputs_info: Any = None, **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        raise OnnxImportError("ember runs whole models: wrap the node in a graph (run_model)")

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().startswith("CPU")


prepare = EmberBackend.prepare
run_model = EmberBackend.run_model
supports_device = EmberBackend.supports_device
