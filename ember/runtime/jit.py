"""Native code in this process: object files linked by MCJIT, called by ctypes.

The runtime half of the CPU backend.  :mod:`ember.backends.cpu` compiles a
module of ``llvm.func`` / ``llvm.global`` ops to an optimised object file
(``compile_llvm``, ``emit_object``); here that object is linked into this
process (:func:`load_object`, :func:`load_native`) and kept as a
:class:`JitModule`, with its stages as text or bytes for inspection:

* ``JitModule.llvm_ir`` — the optimised LLVM IR text the object came from;
* ``JitModule.assembly()`` — the target's assembly of that IR;
* ``JitModule.emit_object()`` — the ELF object, which ``load_object`` maps
  back into a new engine without recompiling (the export path).

Kernels are ``void f(ptr, ptr, …)`` (:mod:`ember.abi`);
``JitModule.function(name, nargs)`` returns a ctypes callable and
``JitModule.run(name, *arrays)`` calls it on numpy arrays.  The
``JitModule`` holds the execution engine: the code lives only as long as
that object, so callers keep it referenced while calling.  Code for a CPU
with features this one lacks (cross-compiling) gets no engine: its IR,
assembly and object are there, calling it is an error.

Code built with ``bounds_check`` calls ``ember_bounds_error`` on an index out
of bounds (:data:`ember.abi.BOUNDS_ERROR_SYMBOL`).  An exception cannot cross
native frames, so that function, defined here for every engine, records the
first failure and the kernel returns; whoever made the native call raises it
with :func:`raise_bounds_error` (``JitModule.run`` and the ``llvm`` backend's
``run`` do).  The record is process-wide: two threads running checked code
that fails at the same moment may each see the other's error.

``compile_llvm``, ``compile_kernels``, ``translate`` and ``optimize`` moved
to :mod:`ember.backends.cpu`; the names still resolve here (a compat alias,
the runtime's one named exception to importing no compiler).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ember.abi import BOUNDS_ERROR_SYMBOL, BOUNDS_REPORTER_PROTOTYPE
from ember.errors import RuntimeFailure
from ember.target import OPT_LEVEL, Target, with_string_attributes

if TYPE_CHECKING:
    from llvmlite.binding import ExecutionEngine, TargetMachine


@cache
def _llvm() -> ModuleType:
    """llvmlite.binding, with the native target initialised once."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    return llvm


HOST = Target.host()


def host_target_machine() -> TargetMachine:
    """A new target machine for this CPU (its name and features), at O3."""
    _llvm()
    return HOST.target_machine()


@cache
def _shared_target_machine(target: Target = HOST) -> TargetMachine:
    """The target machine for optimising and emitting code; never given to an engine."""
    _llvm()
    return target.target_machine()


@dataclass
class JitModule:
    """Native code for one module, loaded in this process.

    Keep this object alive while any function address taken from it may be
    called: dropping it frees the machine code.
    """

    engine: ExecutionEngine | None
    """None for code this CPU cannot run (see :attr:`target`)."""
    ir: str | tuple[str, ...]
    """The optimised LLVM IR: one module's text, or the texts of the
    modules a build compiled apart (:attr:`llvm_ir` links them)."""
    target: Target = HOST
    _object: bytes | None = None
    _functions: dict[tuple[str, int], ctypes._CFuncPtr] = field(default_factory=dict)

    @property
    def llvm_ir(self) -> str:
        """The optimised LLVM IR as one module's text."""
        if not isinstance(self.ir, str):
            self.ir = link_ir(self.ir)
        return self.ir

    def address(self, name: str) -> int:
        """The address of function ``name``; ``RuntimeFailure`` if absent
        or if this CPU cannot run the code."""
        if self.engine is None:
            raise RuntimeFailure(cannot_run_message(self.target, f"@{name}"))
        address = self.engine.get_function_address(name)
        if not address:
            raise RuntimeFailure(f"the compiled module has no function @{name}")
        return address

    def function(self, name: str, nargs: int) -> ctypes._CFuncPtr:
        """``void name(void*, …)`` with ``nargs`` pointer arguments, as ctypes."""
        key = (name, nargs)
        if key not in self._functions:
            prototype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs))
            self._functions[key] = prototype(self.address(name))
        return self._functions[key]

    def run(self, name: str, *arrays: np.ndarray) -> None:
        """Call kernel ``name`` on C-contiguous numpy arrays (outputs last).

        Shapes and dtypes are the caller's responsibility (the kernel has
        static shapes compiled in); contiguity is checked because a strided
        view would be read as if it were dense.
        """
        for n, array in enumerate(arrays):
            if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
                raise RuntimeFailure(
                    f"calling @{name} on cpu: argument #{n} must be a C-contiguous "
                    "numpy array (use np.ascontiguousarray)"
                )
        self.function(name, len(arrays))(*(a.ctypes.data for a in arrays))
        raise_bounds_error(f"calling @{name} on cpu")

    def assembly(self) -> str:
        """Assembly of the optimised module for its target."""
        return assembly(self.llvm_ir, self.target)

    def emit_object(self) -> bytes:
        """An object file of the optimised module, for ``load_object``."""
        if self._object is None:
            llvm = _llvm()
            self._object = _shared_target_machine(self.target).emit_object(
                llvm.parse_assembly(self.llvm_ir)
            )
        return self._object


def _resolve_runtime_symbols() -> None:
    """Make the OpenMP entry points, ``ember_num_threads`` and
    ``ember_bounds_error`` resolvable.

    MCJIT aborts the process on an unresolved symbol, so this runs before
    any engine links code (compiled here or loaded from an object file).
    """
    from ember.runtime.threads import ensure_runtime

    ensure_runtime()
    _define_bounds_reporter()


_bounds_lock = threading.Lock()
_bounds_failures: list[str] = []
_bounds_flag = ctypes.c_int32(0)
"""Nonzero while a failure is recorded: native code that chains calls
(:mod:`ember.runtime.call_list`) reads it after each call to stop at the
one that failed.  It holds the id of the thread that failed (Linux's
``gettid``), or :data:`SEVERAL_THREADS_FAILED` once another thread failed
too: stages running at once on their own threads tell their own failure
from another's by it."""

SEVERAL_THREADS_FAILED = -1
"""The flag's value once threads other than the first failed too."""


def _report_out_of_bounds(site: bytes, index: int, size: int) -> None:
    """``ember_bounds_error``: called by checked code, on whatever thread."""
    thread = threading.get_native_id()
    with _bounds_lock:
        if not _bounds_failures:  # the first failure explains; the rest follow from it
            _bounds_failures.append(
                f"{site.decode(errors='replace')} is {index}, out of bounds for size "
                f"{size} (valid: 0 to {size - 1}); the kernel stopped there"
            )
            _bounds_flag.value = thread
        elif _bounds_flag.value != thread:
            _bounds_flag.value = SEVERAL_THREADS_FAILED


_bounds_reporter = BOUNDS_REPORTER_PROTOTYPE(_report_out_of_bounds)


@cache
def _define_bounds_reporter() -> None:
    address = ctypes.cast(_bounds_reporter, ctypes.c_void_p).value
    _llvm().add_symbol(BOUNDS_ERROR_SYMBOL, address)


def bounds_error_pending() -> bool:
    """Whether :func:`raise_bounds_error` would raise: a lock-free check for
    the run path, which cannot afford a lock and a message per call."""
    return bool(_bounds_failures)


def raise_bounds_error(what: str) -> None:
    """Raise (and clear) the out-of-bounds access that code built with
    ``bounds_check`` reported during the native call ``what``, if any."""
    if not _bounds_failures:
        return
    with _bounds_lock:
        if not _bounds_failures:
            return
        message = _bounds_failures.pop()
        _bounds_flag.value = 0
    raise RuntimeFailure(f"{what}: {message}")


def bounds_flag() -> int:
    """The flag's value: 0, the id of the thread that failed, or
    :data:`SEVERAL_THREADS_FAILED`."""
    return _bounds_flag.value


def bounds_flag_address() -> int:
    """The address of an ``i32`` that is nonzero while :func:`raise_bounds_error`
    would raise, for native code that checks between calls."""
    return ctypes.addressof(_bounds_flag)


def link_ir(parts: tuple[str, ...]) -> str:
    """Modules of LLVM IR text (the parts a build compiled apart, which
    declare what they use from each other) as one module's text: LLVM's
    linker, in a context of its own."""
    llvm = _llvm()
    context = llvm.create_context()
    try:
        linked = llvm.parse_assembly(parts[0], context)
        try:
            for part in parts[1:]:
                linked.link_in(llvm.parse_assembly(part, context))
            return str(linked)
        finally:
            linked.close()
    finally:
        context.close()


def assembly(llvm_ir: str, target: Target = HOST) -> str:
    """``target``'s assembly for LLVM IR text."""
    llvm = _llvm()
    return _shared_target_machine(target).emit_assembly(llvm.parse_assembly(llvm_ir))


def cannot_run_message(target: Target, what: str) -> str:
    """Why code compiled for ``target`` cannot run here, and what to do."""
    from ember.target import host_cpu_name

    return (
        f"cannot run {what}: it was compiled for target {str(target)!r}, and this "
        f"CPU ({host_cpu_name()}) lacks {', '.join(target.missing_on_host()[:8])}; "
        "export it and run it on such a CPU, or build for target 'llvm' here"
    )


def load_native(
    data: bytes, llvm_ir: str | tuple[str, ...] = "", target: Target = HOST
) -> JitModule:
    """Object code from :mod:`ember.backends.cpu` as a :class:`JitModule`:
    linked now where this CPU can run it; for another CPU (cross-compiling)
    only its IR and object are kept, and calling it raises the reason."""
    if not target.runs_on_host():
        return JitModule(None, llvm_ir, target, _object=data)
    return load_object(data, llvm_ir, target)


def load_object(
    data: bytes, llvm_ir: str | tuple[str, ...] = "", target: Target = HOST
) -> JitModule:
    """Map an object file from ``JitModule.emit_object`` into this process.

    No optimisation or code generation runs: MCJIT only links the object.
    ``llvm_ir`` is kept for inspection if given; ``target`` is what the
    object was compiled for (the caller checked that this CPU runs it).
    """
    _resolve_runtime_symbols()
    llvm = _llvm()
    empty = llvm.parse_assembly("")
    empty.triple = _shared_target_machine().triple
    engine = llvm.create_mcjit_compiler(empty, host_target_machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(data))
    engine.finalize_object()
    return JitModule(engine, llvm_ir, target, _object=data)


_MOVED_TO_BACKEND = ("compile_kernels", "compile_llvm", "optimize", "translate")
"""Compiler functions that lived here before :mod:`ember.backends.cpu`."""


def __getattr__(name: str) -> object:
    # Compat aliases: the runtime does not import the compiler, except to
    # keep old imports of these names working.
    if name in _MOVED_TO_BACKEND:
        from ember.backends import cpu

        return getattr(cpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "JitModule",
    "OPT_LEVEL",
    "assembly",
    "cannot_run_message",
    "host_target_machine",
    "link_ir",
    "load_native",
    "load_object",
    "raise_bounds_error",
    "with_string_attributes",
]
