"""The ``llvm`` backend: a graph compiled to one native entry point on the CPU.

``ember.build(module, target="llvm", params=…)`` lands here.  Compilation is
the backend's (:mod:`ember.backends.cpu` runs the stages of
:mod:`ember.driver`: params bound as constants, graph passes, kernels, LLVM
(O2) for this CPU), which hands over a :class:`NativeCode` — object file, frame layout, packed constants — that
:meth:`LLVMModule.load` links with MCJIT.  Nothing here compiles.  Running
is one native call (the calling convention of :mod:`ember.abi`):

    entry(frame)   frame = [inputs…, outputs…, constants…, workspace, context]

The frame (a ctypes pointer array), the constants (64-byte aligned) and the
workspace are built once per module; a run only writes the input and output
pointers and calls the entry, under a lock because the workspace is shared.

``graph.call_extern`` sites call back into Python through the process-wide
symbol ``ember_call_extern(context, site, buffers)``: ``context`` identifies
the module, ``site`` the call; buffers are wrapped as NDArrays without copying
and handed to the registered function (destination passing).

Weights exist once.  The bound params become constants at build time
(folded, packed for the kernels); the module keeps only the packed
constants, in one 64-byte aligned blob (:func:`constant_offsets`), and
releases the IR, the LLVM module and the originals (``keeps_params`` is
False: ``lib.params`` is empty, ``lib.param_names`` lists them).

Artifact payload: ``program.o`` (the optimised object code, linked again by
MCJIT on load — nothing is recompiled), ``layout.json`` (the frame plan) and
``constants.bin`` (that blob, as is); no ``params.npz``.  Loading maps
``constants.bin`` (``mmap``, copy-on-write, checksummed once) and points the
frame into the mapping: no copy on the heap, and processes loading the same
file share its pages.  The backend metadata records the target the code was
compiled for (:class:`~ember.target.Target`), its CPU and the CPU features the
code may use, and loading on a CPU that lacks any of them is an error, not a
crash.  A module built for such a target (cross-compiling) exports, but
running it here raises :class:`RuntimeFailure` naming the missing features.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ember.abi import (
    EXTERN_PROTOTYPE,
    EXTERN_SYMBOL,
    LAYOUT_DIGEST_SYMBOL,
    BufferSpec,
    ProgramLayout,
    constant_offsets,
    layout_digest,
)
from ember.errors import ArtifactError, EmberError
from ember.runtime import elf
from ember.runtime.call_list import NativeRun
from ember.runtime.jit import bounds_error_pending, load_native, raise_bounds_error
from ember.runtime.artifact import (
    DTYPE,
    NAME,
    NATURAL,
    STRING,
    check_schema,
)
from ember.runtime.memory import return_free_pages
from ember.runtime.module import Artifact, FunctionSignature, Module
from ember.runtime.ndarray import NDArray, as_ndarray, empty_aligned, is_aligned
from ember.runtime.registry import call_dps_packed_into
from ember.target import Target, host_cpu_name, host_features

if TYPE_CHECKING:
    from ember.runtime.memory import MemoryReport

OBJECT_FILE = "program.o"
LAYOUT_FILE = "layout.json"
CONSTANTS_FILE = "constants.bin"
TRIM_BYTES = 256 << 10
"""A constant at least this big, once copied into the blob, has its heap
pages returned before the next is copied (:func:`pack_constants`)."""

_BUFFER = {"name": STRING, "shape": [NATURAL], "dtype": DTYPE}
LAYOUT_SCHEMA = {
    "function": STRING,
    "symbol": NAME,
    "inputs": [_BUFFER],
    "outputs": [_BUFFER],
    "constants": [_BUFFER],
    "params": [_BUFFER],
    "workspace_bytes": NATURAL,
    "peak_bytes": NATURAL,
    "naive_bytes": NATURAL,
    "externs": [{"function": STRING, "inputs": [_BUFFER], "outputs": [_BUFFER]}],
    "kernels": [{"name": STRING, "ops": [STRING], "shape": [NATURAL], "flops": NATURAL}],
}
METADATA_SCHEMA = {"target": STRING, "cpu": STRING, "features": [STRING]}


@dataclass
class NativeCode:
    """The ``llvm`` backend's compiled program (an artifact's code): what
    :mod:`ember.backends.cpu` produces and :meth:`LLVMModule.load` links."""

    object: bytes
    """The optimised object file (``program.o``)."""
    llvm_ir: str | tuple[str, ...]
    """The optimised LLVM IR it was generated from (for inspection): one
    module's text, or the parts compiled apart
    (:func:`~ember.runtime.jit.link_ir` makes them one)."""
    target: Target
    """The target the code was compiled for."""
    layout: ProgramLayout
    """The frame plan of the entry (:mod:`ember.abi`)."""
    constants: np.ndarray
    """The constants in one aligned blob (:func:`pack_constants`)."""


# --------------------------------------------------------------------------
# graph.call_extern: one process-wide callback, contexts by id
# --------------------------------------------------------------------------

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

        _callback = EXTERN_PROTOTYPE(callback)
        llvm.add_symbol(EXTERN_SYMBOL, ctypes.cast(_callback, ctypes.c_void_p).value)


_PENDING = threading.local()


# --------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------


class LLVMModule(Module):
    """A graph program compiled to native code for this CPU (``target="llvm"``)."""

    target = "llvm"
    run_is_locked = True  # run and bound runs hold the module's lock
    keeps_params = False  # they are in the constants, folded and packed
    mapped_files = (CONSTANTS_FILE,)

    def __init__(
        self,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray] | Sequence[str],
        extern_funcs: Sequence[str],
        jit: Any,
        layout: ProgramLayout,
        constants: Any,
    ) -> None:
        """``constants``: the constant arrays in slot order, or their blob
        (:func:`pack_constants`, or a mapping of ``constants.bin``), which
        the frame points into."""
        super().__init__(signature, params, extern_funcs)
        self._jit = jit  # owns the machine code: keep it alive with the module
        self._layout = layout
        if isinstance(constants, (list, tuple)):
            constants = pack_constants(layout, list(constants))
        self._constant_blob, self._constants = _constant_views(constants, layout)
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
        self._entry: Any = None  # bound on the first run: code for another CPU has none
        self._lock = threading.Lock()

    def __del__(self) -> None:
        _CONTEXTS.pop(getattr(self, "_context", None), None)

    @property
    def layout(self) -> ProgramLayout:
        return self._layout

    @property
    def llvm_ir(self) -> str:
        return self._jit.llvm_ir

    @property
    def compiled_for(self) -> Target:
        """The target the native code was compiled for."""
        return self._jit.target

    def memory_report(self) -> MemoryReport:
        """What the module's memory holds: its constants (the packed weights)
        and the workspace of its memory plan, against the peak of live
        activations and the naive one-buffer-per-tensor sum."""
        from ember.runtime.memory import MemoryReport

        layout = self._layout
        return MemoryReport(
            weights_bytes=sum(c.nbytes for c in self._constants),
            workspace_bytes=layout.workspace_bytes,
            peak_activation_bytes=layout.peak_bytes,
            naive_activation_bytes=layout.naive_bytes,
        )

    # -- load --------------------------------------------------------------

    @classmethod
    def load(cls, artifact: Artifact) -> LLVMModule:
        """Link the object code of ``artifact`` (:class:`NativeCode`) into
        this process; code for a CPU this one is not runs nowhere here, and
        calling it raises the reason."""
        code = artifact.code
        if code.layout.externs:
            _install_callback()
        jit = load_native(code.object, code.llvm_ir, code.target)
        return cls(
            artifact.signature,
            artifact.params,
            artifact.extern_funcs,
            jit,
            code.layout,
            code.constants,
        )

    @classmethod
    def compile(
        cls,
        ir: Any,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> LLVMModule:
        """Compat alias of ``CpuBackend().build`` (:mod:`ember.backends.cpu`)."""
        from ember.backends.cpu import CpuBackend

        return CpuBackend().build(ir, signature, params, options)  # type: ignore[return-value]

    # -- run ---------------------------------------------------------------

    def _main(self) -> Any:
        """The entry as ctypes, bound on first use: code for another CPU
        has none, and asking for it raises the reason."""
        if self._entry is None:
            address = self._jit.address(self._layout.symbol)
            self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        return self._entry

    def run(self, inputs: Sequence[NDArray], outputs: Sequence[NDArray]) -> None:
        entry = self._main()
        frame = self._frame
        with self._lock:
            for i, array in enumerate((*inputs, *outputs)):
                frame[i] = array.data_ptr
            self._invoke(entry, (frame,))

    def bind(self, inputs: Sequence[NDArray], outputs: Sequence[NDArray]) -> Callable[[], None]:
        """``run(inputs, outputs)`` as a call without arguments, over a frame
        of its own that holds these buffers' addresses: a run writes nothing
        into a frame, it only takes the lock and calls the entry."""
        if self._jit.engine is None:
            return self._main  # code for another CPU: running raises the reason
        return self._bound(self._main(), inputs, outputs)

    def bind_timed(
        self, inputs: Sequence[NDArray], outputs: Sequence[NDArray], clock: np.ndarray
    ) -> Callable[[], None]:
        """:meth:`bind` through the profile entry, which writes the monotonic
        clock (seconds, nanoseconds) into ``clock`` (C-order int64, one row
        per call of ``layout.kernels`` and one more) before each kernel
        call and after the last."""
        expected = (len(self._layout.kernels) + 1, 2)
        if clock.dtype != np.int64 or clock.shape != expected or not clock.flags.c_contiguous:
            raise EmberError(
                f"bind_timed: the clock array must be C-contiguous int64{list(expected)}, "
                f"got {clock.dtype.name}{list(clock.shape)}"
            )
        entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
            self._jit.address(self._layout.profile_symbol)
        )
        return self._bound(entry, inputs, outputs, clock.ctypes.data)

    def _bound(
        self, entry: Any, inputs: Sequence[NDArray], outputs: Sequence[NDArray], *extra: int
    ) -> Callable[[], None]:
        frame = (ctypes.c_void_p * self._layout.frame_size)()
        ctypes.memmove(frame, self._frame, ctypes.sizeof(frame))  # constants, workspace…
        buffers = (*inputs, *outputs)  # kept alive by the closure
        for i, array in enumerate(buffers):
            frame[i] = array.data_ptr
        arguments = (frame, *extra)
        lock, invoke = self._lock, self._invoke

        def run() -> None:
            # The per-inference overhead outside kernels is this function:
            # a lock and one native call (see docs/runtime.md, Profiling).
            with lock:
                invoke(entry, arguments)

        run.buffers = buffers  # type: ignore[attr-defined]
        # For a CallList (several bound runs in one native call); not where
        # errors come back through Python (extern functions) or the entry
        # takes more than the frame.
        run.native = (  # type: ignore[attr-defined]
            None
            if extra or self._layout.externs
            else NativeRun(ctypes.cast(entry, ctypes.c_void_p).value, frame, lock)
        )
        return run

    def _invoke(self, entry: Any, arguments: tuple[Any, ...]) -> None:
        """Call ``entry(*arguments)`` (the lock held) and raise what the
        kernels or registered functions reported."""
        if not self._layout.externs:
            entry(*arguments)
            if bounds_error_pending():
                raise_bounds_error(f"running @{self.entry_name} on cpu")
            return
        _PENDING.error = None
        entry(*arguments)
        error, _PENDING.error = _PENDING.error, None
        raise_bounds_error(f"running @{self.entry_name} on cpu")
        if error is None:
            return
        if isinstance(error, EmberError):
            raise error
        raise EmberError(
            f"a registered function called by @{self.entry_name} failed: "
            f"{type(error).__name__}: {error}"
        ) from error

    # -- export / load ------------------------------------------------------

    def payload(self) -> dict[str, bytes]:
        return {
            OBJECT_FILE: self._jit.emit_object(),
            LAYOUT_FILE: json.dumps(self._layout.to_json(), indent=1).encode(),
            CONSTANTS_FILE: memoryview(self._constant_blob).cast("B"),  # no copy
        }

    def backend_metadata(self) -> dict[str, Any]:
        target = self._jit.target
        return {
            "target": str(target),
            "cpu": target.cpu,
            "features": sorted(target.features),
        }

    @classmethod
    def from_payload(
        cls,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray] | Sequence[str],
        extern_funcs: Sequence[str],
        files: Mapping[str, bytes],
        metadata: Mapping[str, Any],
    ) -> LLVMModule:
        """Check everything the native code will rely on, then link it.

        Each manifest field and layout.json entry is cross-checked against
        what the payload itself says: the object file is a sound ELF object
        for this machine (:mod:`ember.runtime.elf`) defining the entry and
        the layout digest, the digest is layout.json's, the signature is the
        layout's, the constants are what the layout says, and every symbol
        the code needs exists in this process.  Nothing native runs before.
        """
        from ember.runtime.jit import load_object

        for name in (OBJECT_FILE, LAYOUT_FILE, CONSTANTS_FILE):
            if name not in files:
                raise ArtifactError(f"the llvm payload needs {name}, which the manifest does not list")
        check_schema(metadata, METADATA_SCHEMA, "corrupt manifest", "backend")
        _check_cpu(metadata)
        layout_json = _read_layout_json(files[LAYOUT_FILE])
        layout = ProgramLayout.from_json(layout_json)
        obj = _read_object(files[OBJECT_FILE], layout, layout_json)
        _check_signature(signature, params, extern_funcs, layout)
        constants = files[CONSTANTS_FILE]
        _, size = constant_offsets(layout.constants)
        if len(constants) != size:
            raise ArtifactError(
                f"corrupt llvm payload: {CONSTANTS_FILE} has {len(constants)} bytes; the "
                f"{len(layout.constants)} constants {LAYOUT_FILE} lists take {size}"
            )
        _check_symbols_resolve(obj)
        try:
            jit = load_object(files[OBJECT_FILE], target=_recorded_target(metadata))
            jit.address(layout.symbol)
        except (RuntimeError, EmberError) as e:
            raise ArtifactError(f"cannot load {OBJECT_FILE}: {e}") from None
        return cls(signature, params, extern_funcs, jit, layout, constants)


def _check_cpu(metadata: Mapping[str, Any]) -> None:
    missing = sorted(set(metadata["features"]) - host_features())
    if missing:
        raise ArtifactError(
            f"the module was compiled for target {metadata['target']!r} (a "
            f"{metadata['cpu']} CPU); this CPU ({host_cpu_name()}) lacks "
            f"{', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}: "
            "build it again for this machine (target 'llvm')"
        )


def _recorded_target(metadata: Mapping[str, Any]) -> Target:
    try:
        return Target.parse(metadata["target"])
    except EmberError as e:
        raise ArtifactError(f"corrupt manifest: field backend.target: {e}") from None


def _read_layout_json(data: bytes) -> dict[str, Any]:
    where = f"corrupt llvm payload: {LAYOUT_FILE}"
    try:
        layout_json = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ArtifactError(f"{where}: the JSON is nested too deeply") from None
    except ValueError as e:
        raise ArtifactError(f"{where}: not valid JSON: {e}") from None
    check_schema(layout_json, LAYOUT_SCHEMA, where)
    return layout_json


def _read_object(
    data: bytes, layout: ProgramLayout, layout_json: Mapping[str, Any]
) -> elf.ObjectFile:
    """The checked object file, which must be the code ``layout`` describes."""
    import llvmlite.binding as llvm

    machine = llvm.get_process_triple().split("-")[0]
    obj = elf.read_object(data, machine, OBJECT_FILE)
    if obj.function(layout.symbol) is None:
        raise ArtifactError(
            f"corrupt llvm payload: {OBJECT_FILE} defines no function {layout.symbol}, "
            f"the entry {LAYOUT_FILE} names"
        )
    recorded = obj.object_bytes(LAYOUT_DIGEST_SYMBOL)
    if recorded is None:
        raise ArtifactError(
            f"corrupt llvm payload: {OBJECT_FILE} records no frame layout "
            f"({LAYOUT_DIGEST_SYMBOL}); export it again with this ember"
        )
    if recorded != layout_digest(layout_json).encode():
        raise ArtifactError(
            f"corrupt llvm payload: {LAYOUT_FILE} does not describe {OBJECT_FILE} "
            "(the code was compiled for another frame layout: shapes, sizes or "
            "symbols were edited, or the files come from two exports)"
        )
    return obj


def _check_signature(
    signature: FunctionSignature,
    params: Mapping[str, np.ndarray] | Sequence[str],
    extern_funcs: Sequence[str],
    layout: ProgramLayout,
) -> None:
    """The manifest's signature is the one the code was compiled for."""
    if signature.name != layout.function:
        raise ArtifactError(
            f"corrupt artifact: the manifest names entry @{signature.name}, but "
            f"{OBJECT_FILE} was compiled for @{layout.function}"
        )
    compiled_params = {b.name: b for b in layout.params}
    for spec in signature.inputs:
        if spec.name not in params:
            continue
        buffer = compiled_params.get(spec.name)
        if buffer is None or (tuple(spec.shape), spec.dtype) != (buffer.shape, buffer.dtype):
            compiled = f"{buffer.dtype}{list(buffer.shape)}" if buffer else "not bound"
            raise ArtifactError(
                f"corrupt artifact: bound param {spec.name!r} ({spec.describe()}) does not "
                f"match the entry signature {OBJECT_FILE} was compiled for ({compiled})"
            )
    free = [spec for spec in signature.inputs if spec.name not in params]
    for what, specs, buffers in (
        ("inputs", free, layout.inputs),
        ("outputs", signature.outputs, layout.outputs),
    ):
        declared = [(tuple(s.shape), s.dtype) for s in specs]
        compiled = [(tuple(b.shape), b.dtype) for b in buffers]
        if declared != compiled:
            raise ArtifactError(
                f"corrupt artifact: the manifest's entry {what} "
                f"({', '.join(s.describe() for s in specs) or 'none'}) are not the "
                f"{what} {OBJECT_FILE} was compiled for "
                f"({', '.join(f'{b.dtype}{list(b.shape)}' for b in buffers) or 'none'})"
            )
    unlisted = sorted({site.function for site in layout.externs} - set(extern_funcs))
    if unlisted:
        raise ArtifactError(
            f"corrupt artifact: {OBJECT_FILE} calls {', '.join(unlisted)}, which the "
            "manifest's extern_funcs does not list"
        )


def pack_constants(layout: ProgramLayout, arrays: list[np.ndarray]) -> np.ndarray:
    """The constants in one aligned blob (``constants.bin``'s content).

    Takes the arrays out of ``arrays`` one by one, so that each is freed
    once copied, and the blob's zero pages take memory only as a constant
    is copied in: the weights are never all in memory twice."""
    offsets, size = constant_offsets(layout.constants)
    if len(arrays) != len(offsets):
        raise EmberError(f"{len(arrays)} constants for the {len(offsets)} slots of the layout")
    # Zeros, the padding too: exports of one build are byte for byte equal.
    blob = empty_aligned(
        (size,), np.uint8, what=f"the constants of @{layout.function} (its weights)", zeroed=True
    )
    arrays.reverse()
    for offset, spec in zip(offsets, layout.constants):
        raw = np.ascontiguousarray(arrays.pop(), dtype=spec.dtype).reshape(-1).view(np.uint8)
        blob[offset : offset + raw.size] = raw
        if raw.size >= TRIM_BYTES:
            del raw  # the last reference to the constant's array
            return_free_pages()
    return blob


def _constant_views(blob: Any, layout: ProgramLayout) -> tuple[Any, list[np.ndarray]]:
    """Read-only arrays over ``blob`` (copied once into aligned memory if
    its start is not 64-byte aligned; a mapping or a packed blob is)."""
    data = np.frombuffer(blob, dtype=np.uint8)
    if not is_aligned(data):
        data = empty_aligned(data.shape, np.uint8)
        data[:] = np.frombuffer(blob, dtype=np.uint8)
        blob = data
    offsets, _ = constant_offsets(layout.constants)
    views = []
    for offset, spec in zip(offsets, layout.constants):
        dtype = np.dtype(spec.dtype)
        count = spec.nbytes // dtype.itemsize
        view = data[offset : offset + spec.nbytes].view(dtype)[:count].reshape(spec.shape)
        view.flags.writeable = False
        views.append(view)
    return blob, views


# Resolved by RuntimeDyld itself, not looked up in the process.
_LINKER_SYMBOLS = frozenset({"_GLOBAL_OFFSET_TABLE_"})


def _check_symbols_resolve(obj: elf.ObjectFile) -> None:
    """Every symbol the code needs exists here (MCJIT aborts the process otherwise)."""
    import llvmlite.binding as llvm

    from ember.runtime.jit import _resolve_runtime_symbols

    _resolve_runtime_symbols()
    if EXTERN_SYMBOL in obj.undefined:
        _install_callback()
    missing = [
        name
        for name in obj.undefined
        if name not in _LINKER_SYMBOLS and not llvm.address_of_symbol(name)
    ]
    if missing:
        raise ArtifactError(
            f"{OBJECT_FILE} needs {', '.join(missing[:8])}, which this process does not "
            "provide"
        )


def __getattr__(name: str) -> Any:
    # A compat alias: the build setting moved to the backend with the build.
    if name == "RELEASE_BYTES":
        from ember.backends import cpu

        return cpu.RELEASE_BYTES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
