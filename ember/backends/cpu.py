"""The ``llvm`` backend's compile half: a graph program to native object code.

``Backend`` interface (:mod:`ember.backends`): :meth:`CpuBackend.compile`
runs the stages of :mod:`ember.compiler` (params bound as constants, graph
passes, kernels, the program as one native entry, LLVM IR optimised at O3
for the target's CPU) and returns an :class:`~ember.runtime.module.Artifact`
whose code is a :class:`~ember.runtime.cpu.NativeCode`: the object file,
its IR, the frame layout and the packed constants.
:meth:`CpuBackend.load` hands it to the runtime
(:meth:`ember.runtime.cpu.LLVMModule.load`), which links the object with
MCJIT and calls it — nothing is compiled there.

Below the program level, for kernels alone:

* :func:`emit_object` — llvm-dialect module → (optimised IR, object bytes);
  :func:`emit_ir_object` the same from unoptimised LLVM IR text;
* :func:`compile_llvm` — the same, linked into this process
  (a :class:`~ember.runtime.jit.JitModule`);
* :func:`compile_kernels` — kernel-dialect functions lowered and compiled;
* :func:`translate`, :func:`optimize` — the two LLVM steps, as text.

An ``llvm.func``'s ``passthrough`` attributes become LLVM function
attributes (``"prefer-vector-width"="512"``: the vector width a target asks
for, :func:`~ember.target.with_string_attributes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, i8
from xdsl.ir import Operation

from ember.abi import LAYOUT_DIGEST_SYMBOL, BufferSpec, ProgramLayout, layout_digest
from ember.backends import Backend
from ember.errors import RuntimeFailure
from ember.runtime.cpu import LLVMModule, NativeCode, pack_constants
from ember.runtime.jit import JitModule, _llvm, _shared_target_machine, load_native
from ember.runtime.module import Artifact, FunctionSignature, extern_function_names
from ember.target import OPT_LEVEL, Target, with_string_attributes

__all__ = [
    "INLINE_THRESHOLD",
    "RELEASE_BYTES",
    "CpuBackend",
    "compile_kernels",
    "compile_llvm",
    "emit_ir_object",
    "emit_object",
    "optimize",
    "pipeline_tuning",
    "translate",
]

RELEASE_BYTES = 8 << 20
"""Builds whose bound params take at least this many bytes release the
dead IR and free heap pages between stages (:func:`release_free_memory`)."""


class CpuBackend(Backend):
    """``llvm`` targets: native code for a CPU (this one by default)."""

    kind: ClassVar[str] = "llvm"
    module_class = LLVMModule

    def compile(
        self,
        module: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> Artifact:
        """Compile ``module`` (owned by the callee: it is lowered in place)
        with ``params`` (handed over too: no reference is kept once they are
        bound, so a weight the caller does not hold is freed as soon as it
        is folded or packed); ``options``
        (:class:`ember.compiler.CompileOptions`) changes the graph
        pipeline, e.g. to measure fusion on and off."""
        from ember import compiler, driver
        from ember.runtime.memory import release_free_memory

        options = replace(options or compiler.CompileOptions(), entry=signature.name)
        externs = extern_function_names(module)
        names = tuple(params)
        # Each stage lowers the last in place, and the dead IR (cycles: ops
        # point at their parents) and the heap pages it held are released
        # between stages: the weights then live only in the packed blob,
        # never in an old stage's attributes too.
        # A full collection costs ~60 ms with ember loaded: worth it only
        # when the weights are big enough to matter.
        release = (
            release_free_memory
            if sum(p.nbytes for p in params.values()) >= RELEASE_BYTES
            else lambda: None
        )
        handed = [module, params]
        del module, params
        program = driver.lower(
            handed.pop(0),
            driver.ARTIFACT_INPUT,
            handed.pop(),
            options,
            annotate=True,
            copy=False,
            after=lambda stage: release() if stage in ("graph", driver.ARTIFACT_INPUT) else None,
        )
        layout = program.layout
        layout.params = [
            BufferSpec(spec.name, tuple(spec.shape), spec.dtype)
            for spec in signature.inputs
            if spec.name in names
        ]
        blob = pack_constants(layout, program.constants)  # empties the list
        program.module.body.block.add_op(_digest_global(layout))
        _check_llvm_only(program.module)
        llvm_ir = translate(program.module, options.target)
        del program  # the llvm-dialect IR, before LLVM needs its memory
        release()
        llvm_ir, obj = emit_ir_object(llvm_ir, options.target)
        release()
        code = NativeCode(obj, llvm_ir, options.target, layout, blob)
        return Artifact(self.kind, signature, names, externs, code)


def _digest_global(layout: ProgramLayout) -> Operation:
    digest = layout_digest(json.loads(json.dumps(layout.to_json())))
    return llvm_dialect.GlobalOp(
        llvm_dialect.LLVMArrayType(len(digest), i8),
        LAYOUT_DIGEST_SYMBOL,
        "weak_odr",  # a definition that O3 keeps ("external" would declare it)
        constant=True,
        value=StringAttr(digest),
    )


# --------------------------------------------------------------------------
# llvm-dialect modules to object code
# --------------------------------------------------------------------------


def _check_llvm_only(module: ModuleOp) -> None:
    for op in module.ops:
        if not isinstance(op, llvm_dialect.FuncOp | llvm_dialect.GlobalOp):
            raise RuntimeFailure(
                f"cannot compile {op.name} to native code: the module must hold only "
                "llvm.func and llvm.global ops (run lower-kernel-to-llvm first)"
            )


def translate(module: ModuleOp, target: Target = Target()) -> str:
    """llvm-dialect module → LLVM IR text (xDSL's translator), unoptimised.

    xDSL's translator drops ``passthrough``; it is added here, as MLIR
    reads it: a bare name LLVM knows (``"optsize"``) is that attribute,
    any other entry a string attribute."""
    from xdsl.backend.llvm.convert import convert_module

    machine = _shared_target_machine(target)
    try:
        ir_module = convert_module(
            module,
            fallback_target_triple=machine.triple,
            data_layout=str(machine.target_data),
        )
    except (RuntimeError, NotImplementedError) as e:
        raise RuntimeFailure(f"LLVM rejected the module: {e}") from None
    for op in module.ops:
        if isinstance(op, llvm_dialect.FuncOp) and op.passthrough is not None:
            function = ir_module.get_global(op.sym_name.data)
            strings = _passthrough(op.passthrough)
            for name, value in list(strings.items()):
                if value is None:
                    try:
                        function.attributes.add(name)
                    except ValueError:  # not one of LLVM's enum attributes
                        continue
                    del strings[name]
            with_string_attributes(function, strings)
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


INLINE_THRESHOLD = 0
"""LLVM's inliner inlines a call only where that costs nothing (a callee no
bigger than the call), not at O3's default of 250.

Every call in ember's code is from a program or kernel to a kernel or to
a loop outlined from one (``*__parallelN_body``, called by the serial path
and by each thread's worker): once per kernel or per chunk of iterations,
never in an inner loop.  O3 inlined a loop body into both callers and then
vectorised and unrolled it three times over; now each kernel loop is
optimised once, into the same machine code as before (ResNet-18: the
outlined bodies' optimised IR is identical, the callers call them), and
LLVM's O3 plus code generation take ~0.4 s less CPU."""


def pipeline_tuning() -> Any:
    """The tuning of LLVM's O3 pipeline that :func:`optimize` runs: loop and
    SLP vectorisation, unrolling and interleaving on (ember's register
    tiles are loops that LLVM vectorises and unrolls fully: without
    unrolling ResNet-18 runs 2.8x slower), inlining at
    :data:`INLINE_THRESHOLD`."""
    tuning = _llvm().create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    tuning.loop_interleaving = True
    tuning.inlining_threshold = INLINE_THRESHOLD
    return tuning


def optimize(llvm_ir: str, target: Target = Target()) -> str:
    """LLVM IR text → O3-optimised IR text for ``target``'s CPU
    (:func:`pipeline_tuning`)."""
    with _private_module(llvm_ir) as parsed:
        parsed.verify()
        builder = _llvm().create_pass_builder(
            _shared_target_machine(target), pipeline_tuning()
        )
        builder.getModulePassManager().run(parsed, builder)
        return str(parsed)


@contextmanager
def _private_module(llvm_ir: str) -> Iterator[Any]:
    """``llvm_ir`` parsed in an LLVM context of its own, which is disposed,
    with the module, on exit: the types, constants and metadata LLVM
    uniques in a context are freed with it, where the global context would
    keep every build's for the life of the process."""
    context = _llvm().create_context()
    try:
        module = _llvm().parse_assembly(llvm_ir, context)
        try:
            yield module
        finally:
            module.close()  # before its context
    finally:
        context.close()


def emit_object(module: ModuleOp, target: Target = Target()) -> tuple[str, bytes]:
    """A module of llvm-dialect ops as (optimised LLVM IR text, object file)
    for ``target``'s CPU."""
    _check_llvm_only(module)
    return emit_ir_object(translate(module, target), target)


def emit_ir_object(llvm_ir: str, target: Target = Target()) -> tuple[str, bytes]:
    """:func:`emit_object` from the unoptimised LLVM IR text that
    :func:`translate` makes: the caller may drop the llvm-dialect module
    first, so that it and LLVM's module are not in memory together."""
    try:
        llvm_ir = optimize(llvm_ir, target)
        with _private_module(llvm_ir) as optimized:
            obj = _shared_target_machine(target).emit_object(optimized)
    except (RuntimeError, NotImplementedError) as e:
        raise RuntimeFailure(f"LLVM rejected the module: {e}") from None
    return llvm_ir, obj


def compile_llvm(module: ModuleOp, target: Target = Target()) -> JitModule:
    """Compile a module of llvm-dialect ops to native code for ``target``.

    Code generation emits an object file, which the engine links as on
    load (:func:`~ember.runtime.jit.load_object`) when this CPU can run it:
    the engine then holds the machine code alone, not the LLVM module it
    came from, and an export reuses the object without generating code
    again."""
    llvm_ir, obj = emit_object(module, target)
    return load_native(obj, llvm_ir, target)


def compile_kernels(
    module: ModuleOp, *, bounds_check: bool = False, target: Target = Target()
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
