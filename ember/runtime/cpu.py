"""The ``llvm`` backend: a graph compiled to one native entry point on the CPU.

``ember.build(module, target="llvm", params=…)`` lands here.  Compilation is
the driver in :mod:`ember.compiler` (params bound as constants, graph passes,
kernels, LLVM at O3 for this CPU, MCJIT).  Running is one native call:

    entry(frame)   frame = [inputs…, outputs…, constants…, workspace, context]

The frame (a ctypes pointer array), the constants (64-byte aligned) and the
workspace are built once per module; a run only writes the input and output
pointers and calls the entry, under a lock because the workspace is shared.

``graph.call_extern`` sites call back into Python through the process-wide
symbol ``ember_call_extern(context, site, buffers)``: ``context`` identifies
the module, ``site`` the call; buffers are wrapped as NDArrays without copying
and handed to the registered function (destination passing).

Artifact payload: ``program.o`` (the optimised object code, linked again by
MCJIT on load — nothing is recompiled), ``layout.json`` (the frame plan) and
``constants.npz``; the backend metadata records the CPU the code was compiled
for, and loading on a CPU that lacks its features is an error, not a crash.
"""

from __future__ import annotations

import ctypes
import io
import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ember.errors import EmberError
from ember.lowering.program_to_llvm import EXTERN_SYMBOL, BufferSpec, ProgramLayout
from ember.runtime.module import ArtifactError, FunctionSignature, Module
from ember.runtime.ndarray import NDArray, as_ndarray, empty_aligned
from ember.runtime.registry import call_dps_packed_into

OBJECT_FILE = "program.o"
LAYOUT_FILE = "layout.json"
CONSTANTS_FILE = "constants.npz"

# --------------------------------------------------------------------------
# graph.call_extern: one process-wide callback, contexts by id
# --------------------------------------------------------------------------

_EXTERN_PROTOTYPE = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)
)
_CONTEXTS: dict[int, Sequence[Any]] = {}
_CONTEXT_IDS = itertools.count(1)
_CALLBACK_LOCK = threading.Lock()
_callback: Any = None


def _view(pointer: int, spec: BufferSpec) -> NDArray:
    """A zero-copy NDArray over a frame buffer (frame buffers are aligned)."""
    raw = (ctypes.c_byte * spec.nbytes).from_address(pointer)
    view = np.frombuffer(raw, dtype=np.dtype(spec.dtype)).reshape(spec.shape)
    return as_ndarray(view, f"buffer {spec.name}")


def _dispatch(context: int, site: int, buffers: Any) -> None:
    extern = _CONTEXTS[context][site]
    pointers = [buffers[i] for i in range(len(extern.inputs) + len(extern.outputs))]
    inputs = [_view(p, s) for p, s in zip(pointers, extern.inputs)]
    outputs = [_view(p, s) for p, s in zip(pointers[len(inputs) :], extern.outputs)]
    call_dps_packed_into(extern.function, inputs, outputs)


def _install_callback() -> None:
    """Make ``ember_call_extern`` resolvable by JIT-linked code (once)."""
    global _callback
    with _CALLBACK_LOCK:
        if _callback is not None:
            return
        import llvmlite.binding as llvm

        def callback(context: int, site: int, buffers: Any) -> None:
            # An exception cannot cross native frames: keep it for run() to raise.
            try:
                _dispatch(context, site, buffers)
            except BaseException as e:  # noqa: BLE001 - re-raised by LLVMModule.run
                _PENDING.error = e

        _callback = _EXTERN_PROTOTYPE(callback)
        llvm.add_symbol(EXTERN_SYMBOL, ctypes.cast(_callback, ctypes.c_void_p).value)


_PENDING = threading.local()


# --------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------


class LLVMModule(Module):
    """A graph program compiled to native code for this CPU (``target="llvm"``)."""

    target = "llvm"

    def __init__(
        self,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        extern_funcs: Sequence[str],
        jit: Any,
        layout: ProgramLayout,
        constants: Sequence[np.ndarray],
    ) -> None:
        super().__init__(signature, params, extern_funcs)
        self._jit = jit  # owns the machine code: keep it alive with the module
        self._layout = layout
        self._constants = [_aligned_copy(c) for c in constants]
        self._workspace = empty_aligned(
            (max(layout.workspace_bytes, 1),),
            np.uint8,
            what=f"the workspace of @{layout.function} (its intermediate tensors)",
        )
        self._frame = (ctypes.c_void_p * layout.frame_size)()
        first_constant = len(layout.inputs) + len(layout.outputs)
        for i, constant in enumerate(self._constants):
            self._frame[first_constant + i] = constant.ctypes.data
        self._frame[layout.workspace_slot] = self._workspace.ctypes.data
        self._context = next(_CONTEXT_IDS)
        self._frame[layout.context_slot] = self._context
        if layout.externs:
            _CONTEXTS[self._context] = layout.externs
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(jit.address(layout.symbol))
        self._lock = threading.Lock()

    def __del__(self) -> None:
        _CONTEXTS.pop(getattr(self, "_context", None), None)

    @property
    def layout(self) -> ProgramLayout:
        return self._layout

    @property
    def llvm_ir(self) -> str:
        return self._jit.llvm_ir

    # -- compile -----------------------------------------------------------

    @classmethod
    def compile(
        cls,
        ir: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> LLVMModule:
        """Compile ``ir``; ``options`` (:class:`ember.compiler.CompileOptions`)
        changes the graph pipeline, e.g. to measure fusion on and off."""
        from dataclasses import replace

        from ember import compiler
        from ember.runtime.jit import compile_llvm
        from ember.runtime.module import extern_function_names

        options = replace(options or compiler.CompileOptions(), entry=signature.name)
        graph = compiler.to_graph(ir, params, options)
        program = compiler.to_llvm_dialect(compiler.to_kernel(graph), options)
        if program.layout.externs:
            _install_callback()
        jit = compile_llvm(program.module)
        return cls(
            signature, params, extern_function_names(ir), jit, program.layout, program.constants
        )

    # -- run ---------------------------------------------------------------

    def run(self, inputs: Sequence[NDArray], outputs: Sequence[NDArray]) -> None:
        frame = self._frame
        with self._lock:
            for i, array in enumerate(inputs):
                frame[i] = array.data_ptr
            first_output = len(inputs)
            for i, array in enumerate(outputs):
                frame[first_output + i] = array.data_ptr
            _PENDING.error = None
            self._entry(frame)
            error, _PENDING.error = _PENDING.error, None
        if error is not None:
            if isinstance(error, EmberError):
                raise error
            raise EmberError(
                f"a registered function called by @{self.entry_name} failed: "
                f"{type(error).__name__}: {error}"
            ) from error

    # -- export / load ------------------------------------------------------

    def payload(self) -> dict[str, bytes]:
        constants = io.BytesIO()
        np.savez(constants, *self._constants)
        return {
            OBJECT_FILE: self._jit.emit_object(),
            LAYOUT_FILE: json.dumps(self._layout.to_json(), indent=1).encode(),
            CONSTANTS_FILE: constants.getvalue(),
        }

    def backend_metadata(self) -> dict[str, Any]:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        return {
            "cpu": llvm.get_host_cpu_name(),
            "features": sorted(name for name, on in features.items() if on),
        }

    @classmethod
    def from_payload(
        cls,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        extern_funcs: Sequence[str],
        files: Mapping[str, bytes],
        metadata: Mapping[str, Any],
    ) -> LLVMModule:
        import llvmlite.binding as llvm

        from ember.runtime.jit import load_object

        for name in (OBJECT_FILE, LAYOUT_FILE, CONSTANTS_FILE):
            if name not in files:
                raise ArtifactError(f"the llvm payload needs {name}, which the manifest does not list")
        host = {name for name, on in llvm.get_host_cpu_features().items() if on}
        missing = sorted(set(metadata.get("features", [])) - host)
        if missing:
            raise ArtifactError(
                f"the module was compiled for a {metadata.get('cpu', 'different')} CPU; this "
                f"CPU ({llvm.get_host_cpu_name()}) lacks {', '.join(missing[:8])}: "
                "build it again on this machine"
            )
        try:
            layout = ProgramLayout.from_json(json.loads(files[LAYOUT_FILE]))
            with np.load(io.BytesIO(files[CONSTANTS_FILE]), allow_pickle=False) as npz:
                constants = [npz[f"arr_{i}"] for i in range(len(npz.files))]
        except (ValueError, KeyError, TypeError, OSError) as e:
            raise ArtifactError(f"corrupt llvm payload ({LAYOUT_FILE}/{CONSTANTS_FILE}): {e}") from None
        for spec, constant in zip(layout.constants, constants, strict=False):
            if constant.shape != spec.shape or constant.dtype.name != spec.dtype:
                raise ArtifactError(f"corrupt llvm payload: constant {spec.name} does not match {LAYOUT_FILE}")
        if len(constants) != len(layout.constants):
            raise ArtifactError(f"corrupt llvm payload: {CONSTANTS_FILE} does not match {LAYOUT_FILE}")
        if layout.externs:
            _install_callback()
        try:
            jit = load_object(files[OBJECT_FILE])
            jit.address(layout.symbol)
        except (RuntimeError, EmberError) as e:
            raise ArtifactError(f"cannot load {OBJECT_FILE}: {e}") from None
        return cls(signature, params, extern_funcs, jit, layout, constants)


def _aligned_copy(array: np.ndarray) -> np.ndarray:
    out = empty_aligned(array.shape, array.dtype)
    np.copyto(out, array)
    return out
