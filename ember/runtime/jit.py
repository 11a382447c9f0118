"""llvm-dialect module → native code in this process (llvmlite, O3, MCJIT).

``compile_llvm(module)`` takes a module of ``llvm.func`` / ``llvm.global`` ops
(what ``lower-kernel-to-llvm`` produces), translates it with xDSL's
``convert_module``, optimises it with LLVM's new pass manager at O3 with loop
and SLP vectorisation for a :class:`~ember.target.Target`'s CPU (by default
this one: its name and features, so AVX2/AVX-512 and FMA are used where
present), and loads it with MCJIT.  An ``llvm.func``'s ``passthrough``
attributes become LLVM function attributes (``"prefer-vector-width"="512"``:
the vector width a target asks for, :func:`with_string_attributes`).  This is the CPU
half of TVM's ``tvm.build(..., target="llvm")`` / Triton's driver stages
``llir → asm → bin``, each stage kept as text or bytes on the result:

* ``JitModule.llvm_ir`` — optimised LLVM IR text;
* ``JitModule.assembly()`` — the target's assembly;
* ``JitModule.emit_object()`` — an ELF object, which ``load_object`` maps
  back into a new engine without recompiling (the export path).

Kernels are ``void f(ptr, ptr, …)``; ``JitModule.function(name, nargs)``
returns a ctypes callable and ``JitModule.run(name, *arrays)`` calls it on
numpy arrays.  The ``JitModule`` holds the execution engine: the code lives
only as long as that object, so callers keep it referenced while calling.
Code for a CPU with features this one lacks (cross-compiling) gets no
engine: its IR, assembly and object are there, calling it is an error.

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
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from ember.errors import RuntimeFailure
from ember.target import Target

if TYPE_CHECKING:
    from llvmlite import ir
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


@cache
def _attributes_with_strings() -> type:
    """llvmlite's function attribute set, plus ``strings``: LLVM string
    attributes, which llvmlite's set refuses (it knows only enum ones)."""
    from llvmlite.ir.values import FunctionAttributes

    class AttributesWithStrings(FunctionAttributes):
        strings: dict[str, str | None]

        def __bool__(self) -> bool:
            return True  # printed even when only string attributes are set

        def _to_list(self, ret_type: ir.Type) -> list[str]:
            pairs = self.strings.items()
            return [
                *super()._to_list(ret_type),
                *(f'"{k}"' + ("" if v is None else f'="{v}"') for k, v in pairs),
            ]

    return AttributesWithStrings


def with_string_attributes(function: ir.Function, attributes: dict[str, str | None]) -> None:
    """Give an llvmlite function LLVM string attributes (``"key"="value"``,
    or ``"key"`` for None)."""
    known = function.attributes
    replacement = _attributes_with_strings()(known)
    replacement.alignstack, replacement.personality = known.alignstack, known.personality
    replacement.strings = {**getattr(known, "strings", {}), **attributes}
    function.attributes = replacement


@dataclass
class JitModule:
    """Native code for one module, loaded in this process.

    Keep this object alive while any function address taken from it may be
    called: dropping it frees the machine code.
    """

    engine: ExecutionEngine | None
    """None for code this CPU cannot run (see :attr:`target`)."""
    llvm_ir: str
    target: Target = HOST
    _object: bytes | None = None
    _functions: dict[tuple[str, int], ctypes._CFuncPtr] = field(default_factory=dict)

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


def _check_llvm_only(module: ModuleOp) -> None:
    for op in module.ops:
        if not isinstance(op, llvm_dialect.FuncOp | llvm_dialect.GlobalOp):
            raise RuntimeFailure(
                f"cannot compile {op.name} to native code: the module must hold only "
                "llvm.func and llvm.global ops (run lower-kernel-to-llvm first)"
            )


def translate(module: ModuleOp, target: Target = HOST) -> str:
    """llvm-dialect module → LLVM IR text (xDSL's translator), unoptimised.

    xDSL's translator drops ``passthrough``; it is added here."""
    from xdsl.backend.llvm.convert import convert_module

    machine = _shared_target_machine(target)
    ir_module = convert_module(
        module,
        fallback_target_triple=machine.triple,
        data_layout=str(machine.target_data),
    )
    for op in module.ops:
        if isinstance(op, llvm_dialect.FuncOp) and op.passthrough is not None:
            with_string_attributes(
                ir_module.get_global(op.sym_name.data), _passthrough(op.passthrough)
            )
    return str(ir_module)


def _passthrough(attribute: ArrayAttr) -> dict[str, str | None]:
    """MLIR's ``passthrough = ["key", ["key", "value"]]`` as a dict."""
    pairs: dict[str, str | None] = {}
    for item in attribute.data:
        if isinstance(item, StringAttr):
            pairs[item.data] = None
        elif isinstance(item, ArrayAttr) and len(item.data) == 2 and all(
            isinstance(part, StringAttr) for part in item.data
        ):
            pairs[item.data[0].data] = item.data[1].data  # type: ignore[attr-defined]
        else:
            raise RuntimeFailure(
                f"passthrough entry {item} must be \"key\" or [\"key\", \"value\"]"
            )
    return pairs


def optimize(llvm_ir: str, target: Target = HOST) -> str:
    """LLVM IR text → O3-optimised IR text for ``target``'s CPU."""
    llvm = _llvm()
    parsed = llvm.parse_assembly(llvm_ir)
    parsed.verify()
    tuning = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    tuning.loop_interleaving = True
    builder = llvm.create_pass_builder(_shared_target_machine(target), tuning)
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
    raise RuntimeFailure(f"{what}: {message}")


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


def compile_llvm(module: ModuleOp, target: Target = HOST) -> JitModule:
    """Compile a module of llvm-dialect ops to native code for ``target``.

    Code generation emits an object file, which the engine links as on
    load (:func:`load_object`) when this CPU can run it: the engine then
    holds the machine code alone, not the LLVM module it came from, and an
    export reuses the object without generating code again."""
    _check_llvm_only(module)
    try:
        llvm_ir = optimize(translate(module, target), target)
        obj = _shared_target_machine(target).emit_object(_llvm().parse_assembly(llvm_ir))
    except (RuntimeError, NotImplementedError) as e:
        raise RuntimeFailure(f"LLVM rejected the module: {e}") from None
    if target.missing_on_host():
        return JitModule(None, llvm_ir, target, _object=obj)
    return load_object(obj, llvm_ir, target)


def load_object(data: bytes, llvm_ir: str = "", target: Target = HOST) -> JitModule:
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


def compile_kernels(
    module: ModuleOp, *, bounds_check: bool = False, target: Target = HOST
) -> JitModule:
    """Lower the kernels of ``module`` (a copy) to LLVM and compile them for
    ``target``, with its vector width; ``bounds_check`` tests the accesses
    not proven in bounds at run time."""
    from ember.lowering.kernel_to_llvm import lower_kernels_to_llvm, set_vector_width

    lowered = module.clone()
    lower_kernels_to_llvm(lowered, bounds_check=bounds_check)
    for op in list(lowered.ops):
        if not isinstance(op, llvm_dialect.FuncOp | llvm_dialect.GlobalOp):
            lowered.body.block.erase_op(op)  # non-kernel functions are not compiled here
    set_vector_width(lowered, target.vector_bits)
    return compile_llvm(lowered, target)


__all__ = [
    "JitModule",
    "assembly",
    "cannot_run_message",
    "compile_kernels",
    "compile_llvm",
    "host_target_machine",
    "load_object",
    "optimize",
    "raise_bounds_error",
    "translate",
    "with_string_attributes",
]
