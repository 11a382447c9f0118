"""llvm-dialect module → native code in this process (llvmlite, O3, MCJIT).

``compile_llvm(module)`` takes a module of ``llvm.func`` / ``llvm.global`` ops
(what ``lower-kernel-to-llvm`` produces), translates it with xDSL's
``convert_module``, optimises it with LLVM's new pass manager at O3 with loop
and SLP vectorisation for the host CPU (its name and features, so AVX2/AVX-512
and FMA are used where present), and loads it with MCJIT.  This is the CPU
half of TVM's ``tvm.build(..., target="llvm")`` / Triton's driver stages
``llir → asm → bin``, each stage kept as text or bytes on the result:

* ``JitModule.llvm_ir`` — optimised LLVM IR text;
* ``JitModule.assembly()`` — host assembly;
* ``JitModule.emit_object()`` — an ELF object, which ``load_object`` maps
  back into a new engine without recompiling (the export path).

Kernels are ``void f(ptr, ptr, …)``; ``JitModule.function(name, nargs)``
returns a ctypes callable and ``JitModule.run(name, *arrays)`` calls it on
numpy arrays.  The ``JitModule`` holds the execution engine: the code lives
only as long as that object, so callers keep it referenced while calling.

Code built with ``bounds_check`` calls ``ember_bounds_error`` on an index out
of bounds (:mod:`ember.lowering.kernel_to_llvm`).  An exception cannot cross
native frames, so that function, defined here for every engine, records the
first failure and the kernel returns; whoever made the native call raises it
with :func:`raise_bounds_error` (``JitModule.run`` and the ``llvm`` backend's
``run`` do).  The record is process-wide: two threads running checked code
that fails at the same moment may each see the other's error.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ModuleOp

from ember.errors import RuntimeFailure

if TYPE_CHECKING:
    from llvmlite.binding import ExecutionEngine, TargetMachine

OPT_LEVEL = 3


@cache
def _llvm() -> ModuleType:
    """llvmlite.binding, with the native target initialised once."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    return llvm


def host_target_machine() -> TargetMachine:
    """A new target machine for this CPU (its name and features), at O3.

    New each time because an MCJIT engine takes ownership of (and frees) the
    target machine it is created with.
    """
    llvm = _llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=OPT_LEVEL,
        reloc="default",
        codemodel="jitdefault",
    )


@cache
def _shared_target_machine() -> TargetMachine:
    """The target machine for optimising and emitting code; never given to an engine."""
    return host_target_machine()


@dataclass
class JitModule:
    """Native code for one module, loaded in this process.

    Keep this object alive while any function address taken from it may be
    called: dropping it frees the machine code.
    """

    engine: ExecutionEngine
    llvm_ir: str
    _object: bytes | None = None
    _functions: dict[tuple[str, int], ctypes._CFuncPtr] = field(default_factory=dict)

    def address(self, name: str) -> int:
        """The address of function ``name``; ``RuntimeFailure`` if absent."""
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
        """Host assembly of the optimised module."""
        return assembly(self.llvm_ir)

    def emit_object(self) -> bytes:
        """An object file of the optimised module, for ``load_object``."""
        if self._object is None:
            llvm = _llvm()
            self._object = _shared_target_machine().emit_object(
                llvm.parse_assembly(self.llvm_ir)
            )
        return self._object


def _check_llvm_only(module: ModuleOp) -> None:
    for op in module.ops:
        if not isinstance(op, llvm_dialect.FuncOp | llvm_dialect.GlobalOp):
            raise RuntimeFailure(
                f"cannot compile {op.name} to native code: the module must hold only "
                "llvm.func and llvm.global ops (run lower-kernel-to-llvm first)"
            )


def translate(module: ModuleOp) -> str:
    """llvm-dialect module → LLVM IR text (xDSL's translator), unoptimised."""
    from xdsl.backend.llvm.convert import convert_module

    machine = _shared_target_machine()
    ir_module = convert_module(
        module,
        fallback_target_triple=machine.triple,
        data_layout=str(machine.target_data),
    )
    return str(ir_module)


def optimize(llvm_ir: str) -> str:
    """LLVM IR text → O3-optimised IR text for the host CPU."""
    llvm = _llvm()
    parsed = llvm.parse_assembly(llvm_ir)
    parsed.verify()
    tuning = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    tuning.loop_interleaving = True
    builder = llvm.create_pass_builder(_shared_target_machine(), tuning)
    builder.getModulePassManager().run(parsed, builder)
    return str(parsed)


def _resolve_runtime_symbols() -> None:
    """Make the OpenMP entry points, ``ember_num_threads`` and
    ``ember_bounds_error`` resolvable.

    MCJIT aborts the process on an unresolved symbol, so this runs before
    any engine links code (compiled here or loaded from an object file).
    """
    from ember.runtime.threads import ensure_runtime

    ensure_runtime()
    _define_bounds_reporter()


_BOUNDS_REPORTER_TYPE = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64
)
_bounds_lock = threading.Lock()
_bounds_failures: list[str] = []


def _report_out_of_bounds(site: bytes, index: int, size: int) -> None:
    """``ember_bounds_error``: called by checked code, on whatever thread."""
    with _bounds_lock:
        if not _bounds_failures:  # the first failure explains; the rest follow from it
            _bounds_failures.append(
                f"{site.decode(errors='replace')} is {index}, out of bounds for size "
                f"{size} (valid: 0 to {size - 1}); the kernel stopped there"
            )


_bounds_reporter = _BOUNDS_REPORTER_TYPE(_report_out_of_bounds)


@cache
def _define_bounds_reporter() -> None:
    from ember.lowering.kernel_to_llvm import BOUNDS_ERROR_SYMBOL

    address = ctypes.cast(_bounds_reporter, ctypes.c_void_p).value
    _llvm().add_symbol(BOUNDS_ERROR_SYMBOL, address)


def raise_bounds_error(what: str) -> None:
    """Raise (and clear) the out-of-bounds access that code built with
    ``bounds_check`` reported during the native call ``what``, if any."""
    with _bounds_lock:
        if not _bounds_failures:
            return
        message = _bounds_failures.pop()
    raise RuntimeFailure(f"{what}: {message}")


def assembly(llvm_ir: str) -> str:
    """Host assembly for LLVM IR text."""
    llvm = _llvm()
    return _shared_target_machine().emit_assembly(llvm.parse_assembly(llvm_ir))


def compile_llvm(module: ModuleOp) -> JitModule:
    """Compile a module of llvm-dialect ops to native code in this process.

    Code generation emits an object file, which the engine links as on
    load (:func:`load_object`): the engine then holds the machine code
    alone, not the LLVM module it came from, and an export reuses the
    object without generating code again."""
    _check_llvm_only(module)
    try:
        llvm_ir = optimize(translate(module))
        obj = _shared_target_machine().emit_object(_llvm().parse_assembly(llvm_ir))
    except (RuntimeError, NotImplementedError) as e:
        raise RuntimeFailure(f"LLVM rejected the module: {e}") from None
    return load_object(obj, llvm_ir)


def load_object(data: bytes, llvm_ir: str = "") -> JitModule:
    """Map an object file from ``JitModule.emit_object`` into this process.

    No optimisation or code generation runs: MCJIT only links the object.
    ``llvm_ir`` is kept for inspection if given.
    """
    _resolve_runtime_symbols()
    llvm = _llvm()
    empty = llvm.parse_assembly("")
    empty.triple = _shared_target_machine().triple
    engine = llvm.create_mcjit_compiler(empty, host_target_machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(data))
    engine.finalize_object()
    return JitModule(engine, llvm_ir, _object=data)


def compile_kernels(module: ModuleOp, *, bounds_check: bool = False) -> JitModule:
    """Lower the kernels of ``module`` (a copy) to LLVM and compile them;
    ``bounds_check`` tests the accesses not proven in bounds at run time."""
    from ember.lowering.kernel_to_llvm import lower_kernels_to_llvm

    lowered = module.clone()
    lower_kernels_to_llvm(lowered, bounds_check=bounds_check)
    for op in list(lowered.ops):
        if not isinstance(op, llvm_dialect.FuncOp | llvm_dialect.GlobalOp):
            lowered.body.block.erase_op(op)  # non-kernel functions are not compiled here
    return compile_llvm(lowered)


__all__ = [
    "JitModule",
    "assembly",
    "compile_kernels",
    "compile_llvm",
    "host_target_machine",
    "load_object",
    "optimize",
    "raise_bounds_error",
    "translate",
]
