"""Compiled modules: the interface, the on-disk artifact, the interp backend.

A :class:`Module` is what ``ember.build`` returns and ``ember.load_module``
reads back — TVM's ``runtime.Module`` / Relax ``Executable``.  It knows its
entry function's signature (argument names as written in the IR text, shapes,
dtypes, results), the params bound at build time, the registered functions it
calls (``graph.call_extern``), and runs destination-passing style:
``run(inputs, outputs)`` reads the free inputs and writes preallocated
outputs.  :class:`~ember.runtime.graph_executor.GraphExecutor` drives it.

The runtime side of a backend is a Module subclass registered by target
name (:func:`register_backend`, lazily, by import path).  Each supplies
``load`` (an in-memory :class:`Artifact` that its compiler in
:mod:`ember.backends` produced → module; nothing is compiled here),
``run``, and its payload: the files that carry its code in an artifact.
:class:`InterpModule` (``target="interp"``) runs the graph with the
reference interpreter; its payload is the graph IR text.  The LLVM
module (:mod:`ember.runtime.cpu`) adds object code the same way.  A
user's backend may instead be one class whose ``compile`` classmethod
builds the module itself.

Artifact format (``export_library(path)``): a **directory** ::

    net.ember/
      manifest.json   format name and version, ember version, target, entry
                      signature, bound param names, extern function names,
                      backend metadata, for every file its sha256 and size,
                      and the sha256 of the manifest's own content
      params.npz      bound params (numpy .npz, no pickles), for backends
                      that read them at run time (interp); the llvm backend
                      compiles them into its constants and stores only those
      graph.mlir      backend payload files (interp: the graph IR text)

A directory rather than one archive because every part stays readable with
ordinary tools (``cat manifest.json``, ``ember-opt graph.mlir``,
``np.load('params.npz')``) and because payloads that the system must open by
path (a shared library for ``dlopen``, a cubin) need no extraction step.
The write is atomic (a sibling temporary directory renamed into place).
Loading reads every file as untrusted data through
:mod:`ember.runtime.artifact` (regular files only, bounded reads, checksums,
a schema) and cross-checks the manifest against the payload, so a truncated,
edited or forged artifact fails with a message naming the file and field
instead of producing wrong numbers or crashing.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import json
import os
import shutil
import uuid
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ember.errors import ArtifactError, EmberError, RuntimeFailure
from ember.runtime import artifact
from ember.runtime.artifact import ArtifactDir, check_schema, check_seal
from ember.runtime.device import Device
from ember.runtime.ndarray import NDArray
from ember.runtime.ndarray import array as nd_array
from ember.runtime.registry import check_registered

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

    from ember.runtime.graph_executor import GraphExecutor

FORMAT_NAME = "ember-module"
FORMAT_VERSION = 4
"""4: parallel loops call the runtime's loop schedule (``ember_loop_next``),
where version 3's object code called libgomp's dynamic one."""
MANIFEST_FILE = "manifest.json"
PARAMS_FILE = "params.npz"


# --------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorSpec:
    """Name, static shape and dtype of one argument or result."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def describe(self) -> str:
        return f"{self.dtype}{list(self.shape)}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_json(cls, data: Any) -> TensorSpec:
        name, shape, dtype = data["name"], data["shape"], data["dtype"]
        if (
            not isinstance(name, str)
            or not isinstance(dtype, str)
            or not isinstance(shape, list)
        ):
            raise TypeError(f"malformed tensor entry {data!r}")
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            raise TypeError(f"malformed shape {shape!r} of {name!r}")
        np.dtype(dtype)  # rejects unknown dtype names
        return cls(name, tuple(shape), dtype)


@dataclass(frozen=True)
class FunctionSignature:
    """The entry function: its name, arguments in order, and results."""

    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def input(self, name: str) -> TensorSpec | None:
        return next((spec for spec in self.inputs if spec.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "inputs": [spec.to_json() for spec in self.inputs],
            "outputs": [spec.to_json() for spec in self.outputs],
        }

    @classmethod
    def from_json(cls, data: Any) -> FunctionSignature:
        name = data["name"]
        if not isinstance(name, str):
            raise TypeError(f"malformed function name {name!r}")
        inputs = tuple(TensorSpec.from_json(item) for item in data["inputs"])
        outputs = tuple(TensorSpec.from_json(item) for item in data["outputs"])
        return cls(name, inputs, outputs)


@dataclass
class Artifact:
    """A compiled program in memory: what a backend's ``compile`` returns
    and its runtime class's :meth:`Module.load` runs (:mod:`ember.backends`).

    ``code`` is the backend's own: :class:`ember.runtime.cpu.NativeCode`
    (object file, frame layout, constants) for ``llvm``, the graph IR for
    ``interp``.  ``params`` are arrays by name where the module reads them
    at run time (:attr:`Module.keeps_params`), their names otherwise.
    """

    target: str
    signature: FunctionSignature
    params: Mapping[str, np.ndarray] | Sequence[str]
    extern_funcs: tuple[str, ...]
    code: Any


def find_function(ir: ModuleOp, entry: str) -> FuncOp:
    """Function ``@entry`` of ``ir``; an unknown name lists the functions."""
    from xdsl.dialects.func import FuncOp

    functions = {op.sym_name.data: op for op in ir.ops if isinstance(op, FuncOp)}
    func = functions.get(entry)
    if func is None:
        known = ", ".join(f"@{name}" for name in functions) or "none"
        raise RuntimeFailure(
            f"the module has no function @{entry} to build (functions: {known})"
        )
    if not func.body.blocks:
        raise RuntimeFailure(
            f"@{entry} is a declaration without a body; it cannot be an entry point"
        )
    return func


def _tensor_spec(name: str, t: Any, what: str) -> TensorSpec:
    from xdsl.dialects.builtin import TensorType

    from ember.dialects.graph import numpy_dtype, type_str

    if not isinstance(t, TensorType):
        raise RuntimeFailure(
            f"{what} has type {t}; compiled modules take and return tensors only"
        )
    shape = tuple(t.get_shape())
    if any(d < 0 for d in shape):
        raise RuntimeFailure(
            f"{what} has dynamic shape {type_str(t)}; ember compiles static shapes only"
        )
    try:
        dtype = numpy_dtype(t.element_type)
    except ValueError as e:
        raise RuntimeFailure(f"{what}: {e}") from None
    return TensorSpec(name, shape, dtype.name)


def signature_of(ir: ModuleOp, entry: str = "main") -> FunctionSignature:
    """The signature of ``@entry``: argument names are the SSA names written
    in the text (``%data`` → ``"data"``; an unnamed ``%0`` → ``"arg0"``, the
    interpreter's convention)."""
    func = find_function(ir, entry)
    from ember.dialects.graph import argument_name

    names = [argument_name(func, i) for i in range(len(func.args))]
    clashing = sorted({name for name in names if names.count(name) > 1})
    if clashing:
        raise RuntimeFailure(
            f"@{entry} has arguments that share the name(s) {', '.join(clashing)} "
            "(an unnamed argument is called argN); rename them in the IR"
        )
    inputs = tuple(
        _tensor_spec(name, t, f"argument %{name} of @{entry}")
        for name, t in zip(names, func.function_type.inputs.data)
    )
    outputs = tuple(
        _tensor_spec(f"output{i}", t, f"result #{i} of @{entry}")
        for i, t in enumerate(func.function_type.outputs.data)
    )
    return FunctionSignature(entry, inputs, outputs)


def extern_function_names(ir: ModuleOp) -> tuple[str, ...]:
    """Names of the registered functions ``graph.call_extern`` ops call, each once."""
    from ember.dialects.graph import CallExternOp

    names = (op.function for op in ir.walk() if isinstance(op, CallExternOp))
    return tuple(dict.fromkeys(names))


# --------------------------------------------------------------------------
# The Module interface
# --------------------------------------------------------------------------


class Module(ABC):
    """A compiled entry function with its bound params (TVM ``runtime.Module``).

    Subclasses are backends: set :attr:`target`, implement :meth:`compile`,
    :meth:`run`, :meth:`payload` and :meth:`from_payload`, and register with
    :func:`register_backend`.  Everything else — params, signature checks,
    export, extern resolution — is shared here.
    """

    target: ClassVar[str]
    """The target name this backend is registered under (``"interp"``)."""
    device_kinds: ClassVar[tuple[str, ...]] = ("cpu",)
    """Device kinds whose memory :meth:`run` reads and writes."""
    extern_sites: Mapping[str, str] = MappingProxyType({})
    """Where the source calls each external function (``file:line:col``),
    named when one is not registered; set by ``ember.build``."""
    remarks: tuple[Any, ...] = ()
    """The optimization remarks of the build that made this module
    (``ember.build(..., remarks=True)``; :class:`ember.remarks.Remark`)."""
    run_is_locked: ClassVar[bool] = False
    """Whether :meth:`run` serialises concurrent calls itself; executors
    lock around it otherwise."""
    keeps_params: ClassVar[bool] = True
    """Whether :meth:`run` reads the bound params (interp).  A backend that
    compiles them into its own payload (llvm: packed constants) sets False:
    the module keeps only their names, so the arrays are released once
    built, and its artifacts hold no ``params.npz``."""
    mapped_files: ClassVar[tuple[str, ...]] = ()
    """Payload files that loading maps into memory (``mmap``, checksummed
    once) instead of reading: :meth:`from_payload` gets a read-only buffer
    backed by the file, so every process loading it shares its pages."""

    def __init__(
        self,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray] | Sequence[str],
        extern_funcs: Sequence[str] = (),
    ) -> None:
        self._signature = signature
        self._param_names = tuple(params)
        kept = dict(params) if self.keeps_params else {}  # type: ignore[arg-type]
        self._params: Mapping[str, np.ndarray] = MappingProxyType(kept)
        self._extern_funcs = tuple(extern_funcs)
        free = tuple(
            spec for spec in signature.inputs if spec.name not in self._param_names
        )
        self._input_specs = free

    # -- what the module is ------------------------------------------------

    @property
    def signature(self) -> FunctionSignature:
        """The entry function's full signature (bound params included)."""
        return self._signature

    @property
    def entry_name(self) -> str:
        return self._signature.name

    @property
    def params(self) -> Mapping[str, np.ndarray]:
        """Params bound at build time, by argument name (read-only), where
        the backend keeps them (:attr:`keeps_params`); empty otherwise."""
        return self._params

    @property
    def param_names(self) -> tuple[str, ...]:
        """The names of the arguments bound at build time (every backend)."""
        return self._param_names

    def memory_report(self) -> Any:
        """Weights, workspace and activation bytes (:class:`~ember.runtime.memory.MemoryReport`)."""
        raise RuntimeFailure(
            f"target {self.target!r} plans no memory; memory_report() is an llvm module's"
        )

    @property
    def input_specs(self) -> tuple[TensorSpec, ...]:
        """The free inputs, in argument order: what :meth:`run` takes."""
        return self._input_specs

    @property
    def output_specs(self) -> tuple[TensorSpec, ...]:
        return self._signature.outputs

    @property
    def extern_funcs(self) -> tuple[str, ...]:
        """Registered functions this module calls (``graph.call_extern``)."""
        return self._extern_funcs

    def resolve_externs(self, where: str | None = None) -> None:
        """Fail now, naming every missing one, unless all externs are registered."""
        check_registered(
            self._extern_funcs,
            where or f"module @{self.entry_name} ({self.target})",
            self.extern_sites,
        )

    def __repr__(self) -> str:
        inputs = ", ".join(f"{s.name}: {s.describe()}" for s in self._input_specs)
        outputs = ", ".join(s.describe() for s in self.output_specs)
        return f"<ember.Module target={self.target} @{self.entry_name}({inputs}) -> ({outputs})>"

    # -- what a backend provides --------------------------------------------

    @classmethod
    @abstractmethod
    def compile(
        cls,
        ir: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> Module:
        """Compile ``ir`` (already verified, owned by the callee) into a module,
        with ``options`` (``ember.build``'s :class:`~ember.compiler.CompileOptions`,
        checked) where they apply.  For a backend that is one class (a
        user's, registered with :func:`register_backend`); ember's own
        compile in :mod:`ember.backends` and :meth:`load` here."""

    @classmethod
    def load(cls, artifact: Artifact) -> Module:
        """The module that runs ``artifact`` (what a backend compiled for
        this class): nothing is compiled here."""
        raise RuntimeFailure(
            f"target {cls.target!r} has no loader for compiled artifacts; build it with "
            "ember.build"
        )

    @abstractmethod
    def run(self, inputs: Sequence[NDArray], outputs: Sequence[NDArray]) -> None:
        """Run once: read ``inputs`` (the free inputs, in :attr:`input_specs`
        order) and write every result into ``outputs`` (preallocated, in
        :attr:`output_specs` order).  Callers have checked shapes and dtypes."""

    def bind(self, inputs: Sequence[NDArray], outputs: Sequence[NDArray]) -> Callable[[], None]:
        """``run(inputs, outputs)`` as a call without arguments, for callers
        that run the same buffers again and again (an executor's slots);
        backends may prepare what a run would redo each time."""
        return functools.partial(self.run, list(inputs), list(outputs))

    @abstractmethod
    def payload(self) -> dict[str, bytes]:
        """The backend's files for an artifact: plain file name → contents."""

    def backend_metadata(self) -> dict[str, Any]:
        """JSON-able facts the backend needs at load (e.g. the CPU it targets)."""
        return {}

    @classmethod
    @abstractmethod
    def from_payload(
        cls,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray] | Sequence[str],
        extern_funcs: Sequence[str],
        files: Mapping[str, bytes],
        metadata: Mapping[str, Any],
    ) -> Module:
        """Rebuild a module from :meth:`payload` files; raise
        :class:`ArtifactError` when they cannot be used.  ``params`` are
        arrays by name, or only the names where not :attr:`keeps_params`;
        files in :attr:`mapped_files` are mappings, not bytes."""

    # -- shared behaviour ---------------------------------------------------

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write this module to directory ``path`` (see the module docstring).

        An existing ember artifact at ``path`` is replaced; any other existing
        file or non-empty directory is left alone and reported.
        """
        write_artifact(self, Path(path))

    def __getitem__(self, name: str) -> Callable[..., Any]:
        """``lib["default"](dev)``: TVM's way to make a graph executor;
        ``lib["main"](x, …)``: call the entry function on the host, VM-style
        (:class:`~ember.runtime.vm.VirtualMachine`)."""
        if name == "default":
            from ember.runtime.graph_executor import GraphExecutor

            return lambda device: GraphExecutor(self, device)
        if name == self.entry_name:
            from ember.runtime.vm import VirtualMachine

            return VirtualMachine(self)[name]
        raise RuntimeFailure(
            f"module has no function {name!r}: call lib[{self.entry_name!r}](...) "
            "or make a graph executor with lib['default'](dev)"
        )


# --------------------------------------------------------------------------
# Backends by target name
# --------------------------------------------------------------------------

# Target name → "module:Class" (imported on first use) or the class itself.
_BACKENDS: dict[str, str | type[Module]] = {
    "interp": "ember.runtime.module:InterpModule",
    "llvm": "ember.runtime.cpu:LLVMModule",
}

# Targets the design promises but whose code generation does not exist yet.
# Building for them is an error: a silent interpreter fallback would make
# benchmarks and tests lie.  A backend's registration removes its entry.
_PLANNED_TARGETS: dict[str, str] = {
    "cuda": "CUDA code generation is not available yet",
}


def register_backend(
    target: str, backend: str | type[Module], override: bool = False
) -> None:
    """Make ``ember.build(target=target)`` and artifacts of ``target`` use ``backend``.

    ``backend`` is a Module subclass or its lazy ``"package.module:Class"``
    path.
    """
    if target in _BACKENDS and not override:
        raise RuntimeFailure(f"a backend for target {target!r} is already registered")
    _BACKENDS[target] = backend
    _PLANNED_TARGETS.pop(target, None)


def available_targets() -> list[str]:
    return sorted(_BACKENDS)


def backend_for(target: str) -> type[Module]:
    """The backend class for ``target``; unknown or unavailable targets are errors."""
    if not isinstance(target, str):
        raise RuntimeFailure(
            f"target must be a string such as 'interp', got {target!r}"
        )
    backend = _BACKENDS.get(target)
    if backend is None:
        available = ", ".join(available_targets())
        if target in _PLANNED_TARGETS:
            raise RuntimeFailure(
                f"target {target!r}: {_PLANNED_TARGETS[target]}; available targets: {available}"
            )
        raise RuntimeFailure(
            f"unknown target {target!r}; available targets: {available}"
        )
    if isinstance(backend, str):
        module_name, _, class_name = backend.partition(":")
        backend = getattr(importlib.import_module(module_name), class_name)
        _BACKENDS[target] = backend
    return backend


# --------------------------------------------------------------------------
# The interp backend
# --------------------------------------------------------------------------


class InterpModule(Module):
    """Runs the entry function with the reference interpreter (``ember.interpret``).

    Slow but exact: the semantics every compiled backend is checked against,
    and a way to run any graph program before code generation supports it.
    Payload: the IR text (``graph.mlir``); params travel in ``params.npz``.
    """

    target = "interp"
    GRAPH_FILE = "graph.mlir"

    def __init__(
        self,
        ir: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        extern_funcs: Sequence[str] = (),
    ) -> None:
        super().__init__(signature, params, extern_funcs)
        self._ir = ir
        # Argument list in signature order, with None where a free input goes;
        # built once so that run() only fills the holes.
        self._arg_template = [self._params.get(spec.name) for spec in signature.inputs]

    @property
    def ir(self) -> ModuleOp:
        return self._ir

    @classmethod
    def compile(
        cls,
        ir: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> InterpModule:
        # No option applies: the interpreter checks every index anyway.
        return cls(ir, signature, params, extern_function_names(ir))

    @classmethod
    def load(cls, artifact: Artifact) -> InterpModule:
        """``artifact.code`` is the graph IR the interpreter runs."""
        return cls(artifact.code, artifact.signature, artifact.params, artifact.extern_funcs)

    def run(self, inputs: Sequence[NDArray], outputs: Sequence[NDArray]) -> None:
        from ember.interp import interpret_function

        free = iter(inputs)
        args = [
            np.asarray(next(free)) if bound is None else bound
            for bound in self._arg_template
        ]
        results = interpret_function(
            self._ir, self.entry_name, args, functions=(_extern_functions(),)
        )
        for out, result in zip(outputs, results, strict=True):
            np.copyto(np.asarray(out), result)

    def payload(self) -> dict[str, bytes]:
        from ember.ir import to_text

        return {self.GRAPH_FILE: to_text(self._ir).encode()}

    @classmethod
    def from_payload(
        cls,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        extern_funcs: Sequence[str],
        files: Mapping[str, bytes],
        metadata: Mapping[str, Any],
    ) -> InterpModule:
        from ember.ir import parse

        text = files.get(cls.GRAPH_FILE)
        if text is None:
            raise ArtifactError(
                f"the interp payload needs {cls.GRAPH_FILE}, which the manifest does not list"
            )
        try:
            ir = parse(text.decode(), name=cls.GRAPH_FILE)
        except (EmberError, UnicodeDecodeError) as e:
            raise ArtifactError(
                f"{cls.GRAPH_FILE} does not hold valid IR:\n{e}"
            ) from None
        if signature_of(ir, signature.name) != signature:
            raise ArtifactError(
                f"{cls.GRAPH_FILE} does not match the manifest: @{signature.name} has another signature"
            )
        if tuple(extern_funcs) != extern_function_names(ir):
            raise ArtifactError(
                f"{cls.GRAPH_FILE} does not match the manifest: it calls "
                f"[{', '.join(extern_function_names(ir))}], the manifest lists "
                f"[{', '.join(extern_funcs)}] as extern_funcs"
            )
        return cls(ir, signature, params, extern_funcs)


@functools.cache
def _extern_functions() -> type:
    """xDSL interpreter functions running ``graph.call_extern`` through the registry.

    Built on first use so that importing the runtime does not import the
    graph dialect and xDSL's interpreter.
    """
    from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

    from ember.dialects.graph import CallExternOp, numpy_dtype
    from ember.runtime.registry import call_dps_packed

    @register_impls
    class ExternFunctions(InterpreterFunctions):
        @impl(CallExternOp)
        def run_call_extern(
            self, interpreter: Interpreter, op: CallExternOp, args: tuple[Any, ...]
        ) -> tuple[Any, ...]:
            output_types = [
                (r.type.get_shape(), numpy_dtype(r.type.element_type))
                for r in op.results
            ]
            outputs = call_dps_packed(op.function, args, output_types)
            return tuple(np.asarray(out) for out in outputs)

    return ExternFunctions


def __getattr__(name: str) -> Any:
    # "ember.runtime.module:ExternFunctions" is a valid lazy spec for
    # ember.interp.register_functions, without importing xDSL's interpreter here.
    if name == "ExternFunctions":
        return _extern_functions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------
# Params blobs (TVM's save_param_dict / load_param_dict)
# --------------------------------------------------------------------------


def save_params(params: Mapping[str, Any]) -> bytes:
    """Serialise named arrays to bytes (an uncompressed .npz; no pickles).

    Values: NDArrays, numpy arrays, or anything :func:`ember.nd.array` takes.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, value in params.items():
            if not isinstance(name, str) or not name:
                raise RuntimeFailure(
                    f"save_params: param names must be non-empty strings, got {name!r}"
                )
            values = (
                np.asarray(value)
                if isinstance(value, (NDArray, np.ndarray))
                else nd_array(value).numpy()
            )
            # Written entry by entry (as np.savez does) so that any name,
            # including "file", is allowed.
            with archive.open(f"{name}.npy", "w", force_zip64=True) as entry:
                np.lib.format.write_array(entry, values, allow_pickle=False)
    return buffer.getvalue()


def _read_npz(source: bytes, what: str) -> dict[str, np.ndarray]:
    return artifact.read_npz(source, what, "params")


def load_params(blob: bytes | bytearray | memoryview) -> dict[str, NDArray]:
    """Read bytes written by :func:`save_params` into NDArrays by name."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise RuntimeFailure(
            f"load_params expects bytes from save_params, got {type(blob).__name__}"
        )
    arrays = _read_npz(bytes(blob), "the params blob")
    return {name: nd_array(values) for name, values in arrays.items()}


# --------------------------------------------------------------------------
# Writing and reading artifacts
# --------------------------------------------------------------------------


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest(module: Module, files: Mapping[str, bytes]) -> dict[str, Any]:
    from ember import __version__

    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "ember_version": __version__,
        "target": module.target,
        "entry": module.signature.to_json(),
        "params": sorted(module.param_names),
        "extern_funcs": list(module.extern_funcs),
        "backend": module.backend_metadata(),
        "files": {
            name: {"sha256": _sha256(data), "bytes": len(data)}
            for name, data in files.items()
        },
        "payload": [name for name in files if name != PARAMS_FILE],
    }
    return artifact.seal(manifest)


def format_json(value: Any, indent: int = 0) -> str:
    """JSON for people: objects of objects expand, each leaf value stays on
    one line (a tensor entry reads ``{"name": "data", "shape": [1, 784], …}``)."""
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict) and any(_is_nested(v) for v in value.values()):
        items = [
            f"{inner}{json.dumps(k)}: {format_json(v, indent + 2)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        items = [f"{inner}{format_json(v, indent + 2)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value)


def _is_nested(value: Any) -> bool:
    if isinstance(value, dict):
        return bool(value)
    return isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)


def _check_file_name(name: str) -> None:
    if (
        not name
        or name != Path(name).name
        or name.startswith(".")
        or name in (MANIFEST_FILE, PARAMS_FILE)
    ):
        raise ArtifactError(
            f"invalid artifact file name {name!r}: plain names only, not {MANIFEST_FILE}/{PARAMS_FILE}"
        )


def write_artifact(module: Module, path: Path) -> None:
    """Write ``module`` to directory ``path`` atomically."""
    payload = module.payload()
    for name in payload:
        _check_file_name(name)
    files = dict(payload)
    if module.keeps_params:
        files = {PARAMS_FILE: save_params(module.params), **files}
    manifest = _manifest(module, files)

    if path.exists() and not _replaceable(path):
        raise ArtifactError(
            f"cannot export to {path}: it exists and is not an ember artifact; choose a new path"
        )
    staging = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
        for name, data in files.items():
            (staging / name).write_bytes(data)
        (staging / MANIFEST_FILE).write_text(format_json(manifest) + "\n")
        _swap_into_place(staging, path)
    except OSError as e:
        raise ArtifactError(f"cannot export module to {path}: {e}") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _replaceable(path: Path) -> bool:
    """An old artifact or an empty directory may be overwritten; nothing else."""
    if not path.is_dir():
        return False
    return (path / MANIFEST_FILE).is_file() or not any(path.iterdir())


def _swap_into_place(staging: Path, path: Path) -> None:
    if not path.exists():
        staging.rename(path)
        return
    retired = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
    path.rename(retired)
    staging.rename(path)
    shutil.rmtree(retired, ignore_errors=True)


def check_format_version(version: Any, expected: int, what: str) -> None:
    """Fail unless ``version`` is ``expected``, saying whether to upgrade
    ember (a newer artifact) or export again (an older one)."""
    if version == expected:
        return
    hint = (
        "upgrade ember"
        if isinstance(version, int) and version > expected
        else "export it again"
    )
    raise ArtifactError(
        f"{what} format version {version!r}, but this ember reads version {expected}; {hint}"
    )


MANIFEST_SCHEMA = {
    "target": artifact.STRING,
    "entry": {
        "name": artifact.NAME,
        "inputs": [artifact.TENSOR],
        "outputs": [artifact.TENSOR],
    },
    "params": [artifact.STRING],
    "extern_funcs": [artifact.STRING],
    "backend": artifact.MapOf(artifact.ANY),
    "files": artifact.MapOf({"sha256": artifact.SHA256, "bytes": artifact.NATURAL}),
    "payload": [artifact.STRING],
}
"""What ``manifest.json`` must hold (besides format, version and its seal)."""


def load_module(path: str | os.PathLike[str]) -> Module:
    """Load a module written by ``export_library`` (``tvm.runtime.load_module``).

    Every problem is an :class:`ArtifactError` naming the file and field: a
    missing path or manifest, malformed JSON, another format version, an
    unknown target, a missing, altered or non-regular file, a manifest
    field that disagrees with the payload.  Externs are resolved now, so an
    unregistered ``graph.call_extern`` name fails here, not mid-run.
    """
    return load_artifact(ArtifactDir(_artifact_directory(Path(path))))


def load_artifact(
    directory: ArtifactDir, manifest_sha256: str | None = None
) -> Module:
    """The module in ``directory``; with ``manifest_sha256`` (what a pipeline
    config records), ``manifest.json`` must also have that digest."""
    path = directory.path
    manifest, raw, where = directory.read_json(MANIFEST_FILE, "corrupt manifest")
    if manifest_sha256 is not None and _sha256(raw) != manifest_sha256:
        raise ArtifactError(
            f"corrupt artifact {path}: {MANIFEST_FILE} does not match the checksum "
            "its pipeline config records (modified after export)"
        )
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise ArtifactError(f"{where}: it does not declare format {FORMAT_NAME!r}")
    check_format_version(
        manifest.get("format_version"), FORMAT_VERSION, f"{path} has artifact"
    )
    check_schema(manifest, MANIFEST_SCHEMA, where)
    check_seal(manifest, where)
    try:
        backend = backend_for(manifest["target"])
    except RuntimeFailure as e:
        raise ArtifactError(f"cannot load {path}: {e}") from None
    signature = FunctionSignature.from_json(manifest["entry"])
    _check_manifest_names(manifest, signature, where, backend.keeps_params)

    listed = manifest["files"]
    contents = {
        name: directory.read(name, listed[name]["bytes"], listed[name]["sha256"])
        for name in manifest["payload"]
        if name not in backend.mapped_files
    }
    contents.update(
        (name, directory.map(name, listed[name]["bytes"], listed[name]["sha256"]))
        for name in backend.mapped_files
        if name in listed
    )
    params: Mapping[str, np.ndarray] | Sequence[str] = manifest["params"]
    if backend.keeps_params:
        params = _read_npz(
            directory.read(
                PARAMS_FILE, listed[PARAMS_FILE]["bytes"], listed[PARAMS_FILE]["sha256"]
            ),
            str(path / PARAMS_FILE),
        )
    _check_params(params, manifest["params"], signature, path)
    try:
        module = backend.from_payload(
            signature, params, manifest["extern_funcs"], contents, manifest["backend"]
        )
    except ArtifactError as e:
        raise ArtifactError(f"cannot load {path}: {e}") from None
    module.resolve_externs(f"module {path}")
    return module


def _check_manifest_names(
    manifest: Mapping[str, Any],
    signature: FunctionSignature,
    where: str,
    keeps_params: bool,
) -> None:
    """Names in the manifest are unique, and every file has exactly one checksum."""
    for field, names in (
        ("entry.inputs", [spec.name for spec in signature.inputs]),
        ("entry.outputs", [spec.name for spec in signature.outputs]),
        ("params", manifest["params"]),
        ("payload", manifest["payload"]),
    ):
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ArtifactError(f"{where}: field {field} names {', '.join(twice)} twice")
    for name in manifest["payload"]:
        if not artifact.is_plain_name(name) or name in (MANIFEST_FILE, PARAMS_FILE):
            raise ArtifactError(
                f"{where}: field payload: invalid artifact file name {name!r}: plain "
                f"names only, not {MANIFEST_FILE}/{PARAMS_FILE}"
            )
    expected = {PARAMS_FILE, *manifest["payload"]} if keeps_params else set(manifest["payload"])
    listed = set(manifest["files"])
    if listed != expected:
        problems = [f"no checksum for {name}" for name in sorted(expected - listed)]
        problems += [
            f"{name} is not a file of the artifact" for name in sorted(listed - expected)
        ]
        raise ArtifactError(f"{where}: field files: {'; '.join(problems)}")


def _artifact_directory(path: Path) -> Path:
    if not os.path.lexists(path):
        raise ArtifactError(f"cannot load module: {path} does not exist")
    if path.name == MANIFEST_FILE and not path.is_dir():
        return path.parent  # the user pointed at the manifest itself
    if not path.is_dir():
        raise ArtifactError(
            f"cannot load module: {path} is a file; ember modules are directories written by export_library"
        )
    if not os.path.lexists(path / MANIFEST_FILE):
        raise ArtifactError(
            f"cannot load module: {path} has no {MANIFEST_FILE}; it is not an exported ember module"
        )
    return path


def _check_params(
    params: Mapping[str, np.ndarray] | Sequence[str],
    names: Sequence[str],
    signature: FunctionSignature,
    directory: Path,
) -> None:
    """Bound params (arrays, or names where the backend compiled them in)
    are arguments of the entry, of its shapes and dtypes."""
    if sorted(params) != sorted(names):
        raise ArtifactError(
            f"corrupt artifact {directory}: {PARAMS_FILE} holds {sorted(params)}, the manifest lists {sorted(names)}"
        )
    for name in params:
        spec = signature.input(name)
        if spec is None:
            raise ArtifactError(
                f"corrupt artifact {directory}: bound param {name!r} is not an argument "
                f"of @{signature.name}"
            )
        values = params[name] if isinstance(params, Mapping) else None
        if values is not None and (
            values.shape != spec.shape
            or values.dtype.name != spec.dtype
        ):
            raise ArtifactError(
                f"corrupt artifact {directory}: param {name!r} ({values.dtype}{list(values.shape)}) "
                "does not match the entry signature"
            )
