"""VM-style calls: ``lib["main"](x, w0, b0)`` and ``vm["main"](…)``.

Relax's way to run a compiled module (``vm = relax.VirtualMachine(ex, dev);
vm["main"](x, *params)``) beside the graph executor's set/run/get: a
function call that takes tensors and returns tensors.  Arguments are the
entry function's free inputs (params bound at build time are not passed),
positional in argument order or by name; each may be an ember
:class:`~ember.runtime.ndarray.NDArray`, a numpy array or any DLPack tensor
(PyTorch, CuPy on the host, JAX …).

**Zero copy where the memory allows.** An argument whose memory is
C-contiguous, 64-byte aligned and of the input's dtype and shape is passed to
the compiled code as it is (through DLPack for foreign tensors); anything
else is copied once into aligned storage.  Results are fresh NDArrays, one
per output (a tuple when there are several), that the caller owns: hand them
to PyTorch with ``torch.from_dlpack(out)`` without a copy.

Each call allocates its outputs and shares no state with other calls, so one
VM may be called from several threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.errors import RuntimeFailure
from ember.runtime.device import Device, cpu
from ember.runtime.module import Module
from ember.runtime.ndarray import NDArray, as_host_array, empty, empty_aligned, is_aligned

__all__ = ["VirtualMachine"]


class VirtualMachine:
    """Call a compiled module like a function (Relax's ``VirtualMachine``).

    ``vm = ember.VirtualMachine(lib, ember.cpu(0))``; ``vm["main"](x, w)``
    returns the output NDArray (a tuple for several outputs).
    """

    def __init__(self, lib: Module, device: Device | None = None) -> None:
        if not isinstance(lib, Module):
            raise RuntimeFailure(
                "VirtualMachine expects a module from ember.build or ember.load_module, "
                f"got {type(lib).__name__}"
            )
        device = cpu(0) if device is None else device
        if not isinstance(device, Device):
            raise RuntimeFailure(f"VirtualMachine: expected a Device such as ember.cpu(0), got {device!r}")
        if device.kind not in lib.device_kinds:
            raise RuntimeFailure(
                f"VirtualMachine: a {lib.target} module runs on {', '.join(lib.device_kinds)}, "
                f"not on {device}"
            )
        lib.resolve_externs(f"VirtualMachine(@{lib.entry_name})")
        self._lib = lib
        self._device = device

    @property
    def module(self) -> Module:
        return self._lib

    def __getitem__(self, name: str) -> Callable[..., Any]:
        """The function ``name`` (the module's entry, e.g. ``"main"``)."""
        if name != self._lib.entry_name:
            raise RuntimeFailure(
                f"the module has no function {name!r}; it was built for @{self._lib.entry_name}: "
                f"call vm[{self._lib.entry_name!r}](...)"
            )
        return self.invoke

    def invoke(self, *args: Any, **kwargs: Any) -> NDArray | tuple[NDArray, ...]:
        """Run the entry once on ``args`` (free inputs in order) and/or
        ``kwargs`` (by name); return the outputs."""
        inputs = self._inputs(args, kwargs)
        outputs = [empty(spec.shape, spec.dtype, self._device) for spec in self._lib.output_specs]
        self._lib.run(inputs, outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    __call__ = invoke

    def _inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[NDArray]:
        specs = self._lib.input_specs
        where = f"@{self._lib.entry_name}"
        names = [spec.name for spec in specs]
        if len(args) > len(specs):
            raise RuntimeFailure(
                f"{where} takes {len(specs)} input(s) ({', '.join(names) or 'none'}), got {len(args)}"
                + self._bound_hint()
            )
        given: dict[str, Any] = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names:
                raise RuntimeFailure(
                    f"{where} has no input {name!r}; inputs: {', '.join(names) or 'none'}"
                    + self._bound_hint()
                )
            if name in given:
                raise RuntimeFailure(f"{where}: input {name!r} given twice")
            given[name] = value
        missing = [n for n in names if n not in given]
        if missing:
            raise RuntimeFailure(f"{where}: missing input(s) {', '.join(missing)}")
        return [self._argument(spec, given[spec.name], where) for spec in specs]

    def _bound_hint(self) -> str:
        bound = list(self._lib.param_names)
        return f" (bound at build time: {', '.join(bound)})" if bound else ""

    @staticmethod
    def _argument(spec: Any, value: Any, where: str) -> NDArray:
        what = f"{where} input {spec.name!r}"
        if isinstance(value, NDArray) and value.device.kind != "cpu":
            raise RuntimeFailure(f"{what}: on {value.device}; this module reads host memory")
        values = as_host_array(value, what, dtype=np.dtype(spec.dtype))
        if values.shape != spec.shape or values.dtype.name != spec.dtype:
            raise RuntimeFailure(
                f"{what}: expected {spec.describe()}, got {values.dtype.name}{list(values.shape)}"
            )
        if isinstance(value, NDArray):
            return value
        if is_aligned(values):
            return NDArray(values, cpu(0))  # shared: no copy
        storage = empty_aligned(values.shape, values.dtype)
        np.copyto(storage, values)
        return NDArray(storage, cpu(0))
