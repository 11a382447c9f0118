"""The ``llvm`` backend's compile half: a graph program to native object code.

``Backend`` interface (:mod:`ember.backends`): :meth:`CpuBackend.compile`
runs the stages of :mod:`ember.compiler` (params bound as constants, graph
passes, kernels, the program as one native entry, LLVM IR optimised (O2)
for the target's CPU) and returns an :class:`~ember.runtime.module.Artifact`
whose code is a :class:`~ember.runtime.cpu.NativeCode`: the object file,
its IR, the frame layout and the packed constants.  From the kernel
stage on, the stages are streamed (:func:`ember.compiler.scheduled_kernels`,
:func:`emit_program_object`): each kernel is scheduled, lowered, printed
and compiled by LLVM on a pool of threads while the next are scheduled
and lowered; the memory plan and the program's entry come last.
:meth:`CpuBackend.load` hands the artifact to the runtime
(:meth:`ember.runtime.cpu.LLVMModule.load`), which links the object with
MCJIT and calls it — nothing is compiled there.

Below the program level, for kernels alone:

* :func:`emit_object` — llvm-dialect module → (optimised IR, object bytes),
  compiled in parts (:func:`split_module`); :func:`emit_ir_object` the
  same from unoptimised LLVM IR text;
* :func:`compile_llvm` — the same, linked into this process
  (a :class:`~ember.runtime.jit.JitModule`);
* :func:`compile_kernels` — kernel-dialect functions lowered and compiled;
* :func:`translate`, :func:`optimize` — the two LLVM steps, as text
  (:mod:`ember.backends.llvm_text` prints the llvm dialect).

An ``llvm.func``'s ``passthrough`` attributes become LLVM function
attributes (``"prefer-vector-width"="512"``: the vector width a target asks
for, :func:`~ember.target.with_string_attributes`).
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolRefAttr, i8
from xdsl.ir import Operation

from ember.abi import (
    LAYOUT_DIGEST_SYMBOL,
    BufferSpec,
    ProgramLayout,
    layout_digest,
    profile_symbol,
)
from ember.backends import Backend
from ember.backends.link import link_objects
from ember.errors import RuntimeFailure
from ember.runtime.cpu import LLVMModule, NativeCode, pack_constants
from ember.runtime.held import HeldSetting
from ember.runtime.jit import JitModule, _llvm, _shared_target_machine, load_native
from ember.runtime.module import Artifact, FunctionSignature, extern_function_names
from ember.target import Target, with_string_attributes

__all__ = [
    "INLINE_THRESHOLD",
    "PIPELINE_LEVEL",
    "RELEASE_BYTES",
    "CpuBackend",
    "compile_kernels",
    "compile_llvm",
    "emit_ir_object",
    "emit_object",
    "emit_program_object",
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
        from ember.runtime.memory import release_free_memory, return_free_pages

        options = replace(options or compiler.CompileOptions(), entry=signature.name)
        externs = extern_function_names(module)
        names = tuple(params)
        # Each stage lowers the last in place, and the dead IR (cycles: ops
        # point at their parents) and the heap pages it held are released
        # between stages: the weights then live only in the packed blob,
        # never in an old stage's attributes too.
        # A full collection costs ~60 ms with ember loaded: worth it only
        # when the weights are big enough to matter.
        big = sum(p.nbytes for p in params.values()) >= RELEASE_BYTES
        release = release_free_memory if big else lambda: None
        handed = [module, params]
        del module, params
        done: dict[str, Any] = {}

        def packed(layout: ProgramLayout, constants: list[np.ndarray]) -> Operation:
            """The layout's bound params named and its constants packed
            (the list emptied); the layout's digest, to compile with it."""
            layout.params = [
                BufferSpec(spec.name, tuple(spec.shape), spec.dtype)
                for spec in signature.inputs
                if spec.name in names
            ]
            done["layout"], done["blob"] = layout, pack_constants(layout, constants)
            return _digest_global(layout)

        # A build that prints its stages runs them all, one after the
        # other; any other streams the kernels from the kernel stage to
        # LLVM (scheduled_kernels, emit_program_object).
        if driver.printing():
            program = driver.lower(
                handed.pop(0),
                driver.ARTIFACT_INPUT,
                handed.pop(),
                options,
                annotate=True,
                copy=False,
                after=lambda stage: release() if stage in ("graph", driver.ARTIFACT_INPUT) else None,
            )
            program.module.body.block.add_op(packed(program.layout, program.constants))
            entries = (program.layout.symbol, profile_symbol(program.layout.function))
            modules = [program.module]  # handed on, which drops it
            del program
            # The IR is released once it is all translated, while LLVM
            # compiles (on a core the Python stages left idle); LLVM's
            # memory once it is done.
            llvm_ir, obj = emit_object(modules.pop(), options.target, entries, translated=release)
        else:
            graph = driver.lower(
                handed.pop(0),
                "graph",
                handed.pop(),
                options,
                annotate=True,
                copy=False,
                after=lambda stage: release() if stage == "graph" else None,
            )
            kernels = [compiler.scheduled_kernels(graph, options, annotate=True)]

            def entry(module: ModuleOp) -> list[Operation]:
                # Every kernel is scheduled, lowered and dropped: the plan
                # and the entry see their final signatures.
                compiler.plan_entry(module, options.entry)
                return [packed(*compiler.lower_entry(module, options))]

            modules = [graph]  # handed on, as are the kernels: none is held here
            del graph
            llvm_ir, obj = emit_program_object(
                modules.pop(), options, entry, kernels.pop(), translated=release, handed=release
            )
        layout, blob = done["layout"], done["blob"]
        if big:
            return_free_pages()
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
    """llvm-dialect module → LLVM IR text, unoptimised.

    ember's own printer (:mod:`ember.backends.llvm_text`) writes the ops
    ember's lowerings make; a module with any other op is translated by
    xDSL's translator, with its ``passthrough`` added as MLIR reads it: a
    bare name LLVM knows (``"optsize"``) is that attribute, any other entry
    a string attribute."""
    from ember.backends.llvm_text import Unsupported, module_text

    machine = _shared_target_machine(target)
    try:
        return module_text(module, machine.triple, str(machine.target_data))
    except Unsupported:
        return _xdsl_translate(module, machine)


def _xdsl_translate(module: ModuleOp, machine: Any) -> str:
    """``module`` as LLVM IR text by xDSL's translator (through llvmlite)."""
    from xdsl.backend.llvm.convert import convert_module

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
    from ember.backends.llvm_text import Unsupported, passthrough_entries

    try:
        return passthrough_entries(attribute)
    except Unsupported as e:
        raise RuntimeFailure(str(e)) from None


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
LLVM's pipeline plus code generation take ~0.4 s less CPU."""


PIPELINE_LEVEL = 2
"""The level of LLVM's IR pipeline: O2 (code generation stays at
:data:`ember.target.OPT_LEVEL`, 3).

The loops a micro-kernel needs unrolled, the schedule marks ``unrolled``
(:func:`ember.lowering.microkernels.reduction_kinds`), and LLVM unrolls
them fully at any level (``llvm.loop.unroll.full``).  What O3 adds to
that is a larger unrolling budget for every other loop (epilogues,
padding copies: up to four copies of each) and non-trivial unswitching,
which doubled the optimised code of ResNet-18's largest loop bodies
(1071 lines → 583) for no speed: the same output bits and inner loops on
the five benchmark workloads (their hottest blocks compared, for znver3
and, compiled only, skylake-avx512), the same latency within noise, and
LLVM a fifth less CPU (ResNet-18, each function apart: 2.1–2.5 s →
1.6–2.0 s).
Without the marks, O2 left the 7×7 stem convolution's window loop rolled
(16% slower) and the 3×3 stride-2 ones' row loop (7%)."""


def pipeline_tuning() -> Any:
    """The tuning of LLVM's O3 pipeline that :func:`optimize` runs: loop and
    SLP vectorisation, unrolling and interleaving on (ember's register
    tiles are loops that LLVM vectorises and unrolls fully: without
    unrolling ResNet-18 runs 2.8x slower), inlining at
    :data:`INLINE_THRESHOLD`, at :data:`PIPELINE_LEVEL`."""
    tuning = _llvm().create_pipeline_tuning_options(speed_level=PIPELINE_LEVEL)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    tuning.loop_interleaving = True
    tuning.inlining_threshold = INLINE_THRESHOLD
    return tuning


def optimize(llvm_ir: str, target: Target = Target()) -> str:
    """LLVM IR text → IR text optimised for ``target``'s CPU
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
    keep every build's for the life of the process.  Nothing else uses
    the context, so LLVM parses without llvmlite's lock (:func:`_unlocked`)."""
    context = _llvm().create_context()
    try:
        module = _parse(llvm_ir, context)
        try:
            yield module
        finally:
            module.close()  # before its context
    finally:
        context.close()


def _parse(llvm_ir: str, context: Any) -> Any:
    """``llvmlite.binding.parse_assembly(llvm_ir, context)``, unlocked."""
    from llvmlite.binding import ffi
    from llvmlite.binding.module import ModuleRef

    parse = _unlocked("LLVMPY_ParseAssembly")
    with ffi.OutputString() as error:
        module = ModuleRef(parse(context, ctypes.c_char_p(llvm_ir.encode()), error), context)
        if error:
            module.close()
            raise RuntimeError(f"LLVM IR parsing error\n{error}")
    return module


def emit_object(
    module: ModuleOp,
    target: Target = Target(),
    entries: Collection[str] = (),
    translated: Callable[[], None] | None = None,
) -> tuple[str | tuple[str, ...], bytes]:
    """A module of llvm-dialect ops as (optimised LLVM IR, object file) for
    ``target``'s CPU, the module's functions compiled as
    :func:`split_module`'s parts on :func:`compile_threads` threads (the
    IR: one module's text, or the parts' texts, which
    :func:`~ember.runtime.jit.link_ir` makes one).  ``module`` is taken
    apart: its ops move to the parts.  ``entries`` name the functions that
    call the kernels (the program's entry points).  ``translated`` is called
    once the last part is translated, the module's IR dead, while LLVM
    compiles on (a build releases that IR there)."""
    _check_llvm_only(module)
    parts = split_module(module, entries)
    del module

    def texts() -> Iterator[tuple[str, tuple[str, ...]]]:
        while parts:  # each part dropped once translated
            kernels = _kernel_names(parts[0])
            yield translate(parts.pop(0), target), kernels

    return _compile_parts(texts(), target, translated, min(compile_threads(), len(parts)))


HANDOVER_INTERVAL = 0.0002
"""Seconds Python's thread runs before it hands the GIL to a thread waiting
for it (``sys.setswitchinterval``), while a build's LLVM threads compile.

Each part is a dozen calls into LLVM (parse, verify, the pass pipeline,
printing, code generation, the buffers between), each returning to Python,
whose thread then waits for the GIL: at the default 5 ms, while the main
thread made the next parts, resnet18's first parts took 0.04-0.05 s longer
than their CPU time (0.15 s) each.  At 0.2 ms, resnet18's cold
``ember.build`` went from 1.45 to 1.30 s (medians of seven fresh processes
each, alternated; 0.05 ms no better than 0.2; AMD EPYC znver4, 2 vCPUs)."""


def _set_switch_interval(seconds: float) -> None:
    """``sys.setswitchinterval`` to the nearest microsecond: the interpreter
    keeps whole microseconds, truncated, and reads them back as a float a
    hair below, so a plain read and write would lose one each time."""
    sys.setswitchinterval(round(seconds * 1e6) / 1e6 + 1e-10)


_SWITCH_INTERVAL = HeldSetting(sys.getswitchinterval, _set_switch_interval)


def quick_handover() -> Any:
    """A context manager: the GIL switch interval at most
    :data:`HANDOVER_INTERVAL` inside its block, and what it was before once
    the last overlapping block ends (:class:`~ember.runtime.held.HeldSetting`)."""
    return _SWITCH_INTERVAL.held(min(sys.getswitchinterval(), HANDOVER_INTERVAL))


def _compile_parts(
    texts: Iterator[tuple[str, tuple[str, ...]]],
    target: Target,
    translated: Callable[[], None] | None,
    threads: int,
    handed: Callable[[], None] | None = None,
) -> tuple[str | tuple[str, ...], bytes]:
    """LLVM IR texts of parts (with the kernels each holds, for errors) as
    (optimised IR, one object), compiled on ``threads`` threads as
    ``texts`` makes them: LLVM compiles the first parts while Python
    makes the next.

    While Python makes parts, one thread fewer compiles (at least one):
    Python's thread is the one the build waits for, and a third busy
    thread on two cores took a third of its core (resnet18: both LLVM
    threads busy for ~0.5 s of the stream).  Once the last part is made,
    all ``threads`` compile what is left.

    ``handed`` is called after each part is handed to LLVM, ``translated``
    once the last part is made and every part has started (a build's
    collections of the IR its kernels left dead, while LLVM compiles: a
    collection holds the GIL, and a thread waiting to start a part sits
    it out).  Collected part by part, resnet18's dead IR takes ~3 ms a
    part (young objects only, :func:`ember.runtime.memory.release_free_memory`);
    collected whole at the end, 0.1-0.15 s, the threads stalled."""
    pool = ThreadPoolExecutor(threads, "ember-llvm") if threads > 1 else None
    turns = _Turns(max(1, threads - 1))

    def compile_part(turn: int, llvm_ir: str, kernels: tuple[str, ...]) -> tuple[str, bytes]:
        turns.start(turn)
        try:
            return _compile_part(llvm_ir, target, kernels)
        finally:
            turns.free()

    with quick_handover():  # LLVM threads waiting for the GIL get it soon
        try:
            # No text is kept here once handed to the pool.
            results: list[Any] = []
            for llvm_ir, kernels in texts:
                if pool is None:
                    results.append(_compile_part(llvm_ir, target, kernels))
                else:
                    results.append(pool.submit(compile_part, len(results), llvm_ir, kernels))
                del llvm_ir
                if handed is not None:
                    handed()
            turns.free()  # Python is done: every thread compiles
            if pool is not None:
                turns.wait_started(len(results))
            if translated is not None:
                translated()
            if pool is not None:
                results = [future.result() for future in results]
        finally:
            if pool is not None:  # after an error, the parts not started are dropped
                pool.shutdown(wait=True, cancel_futures=True)
    if len(results) == 1:
        return results[0]
    return tuple(ir for ir, _ in results), link_objects([obj for _, obj in results])


class _Turns:
    """Parts start in the order they were made, at most ``slots`` at once.
    (With a semaphore, the thread that had just finished a part took the
    next one before a waiting thread woke, the main thread holding the
    GIL: resnet18's largest part, second in line, started last.)"""

    def __init__(self, slots: int) -> None:
        self._condition = threading.Condition()
        self._next = 0
        self._free = slots

    def start(self, turn: int) -> None:
        """Wait until part ``turn`` is next and a slot is free; take it."""
        with self._condition:
            self._condition.wait_for(lambda: self._next == turn and self._free > 0)
            self._next += 1
            self._free -= 1
            self._condition.notify_all()

    def free(self) -> None:
        """One more slot: a part is done, or Python is."""
        with self._condition:
            self._free += 1
            self._condition.notify_all()

    def wait_started(self, count: int) -> None:
        """Wait until ``count`` parts have started."""
        with self._condition:
            self._condition.wait_for(lambda: self._next >= count)


def emit_program_object(
    module: ModuleOp,
    options: Any,
    entry: Callable[[ModuleOp], Sequence[Operation]],
    kernels: Iterable[Operation] | None = None,
    translated: Callable[[], None] | None = None,
    handed: Callable[[], None] | None = None,
) -> tuple[str | tuple[str, ...], bytes]:
    """The kernel-stage ``module`` as :func:`emit_object` makes the
    llvm-dialect stage, for ``options`` (:class:`~ember.compiler.CompileOptions`):
    the parts' optimised IR and one object.  ``module`` is taken apart.
    ``kernels`` (default: the module's) may schedule each kernel as it is
    asked for (:func:`ember.compiler.scheduled_kernels`); once every kernel
    is lowered and dropped, ``entry(module)`` lowers the program's entry
    in place (:func:`ember.compiler.lower_entry`) and returns the llvm ops
    to print beside it (the layout digest).

    The stages are streamed: each kernel is lowered to llvm ops (with the
    functions outlined from it), printed as LLVM IR text and dropped, and a
    part goes to LLVM on :func:`compile_threads` threads as soon as its
    kernels hold :data:`PART_OPS` ops (the first part a quarter of that),
    so that LLVM compiles the first parts while Python schedules and
    lowers the next kernels.  As
    ``merge_identical_functions`` would, a function whose text is that of
    one printed before but for its name is not printed again: its callers
    call that one (its callees come first, so that they are merged before
    it is compared).  The entries come last, in the last part, calling
    the kernels by their merged names.  The parts depend on the module
    alone, not on the thread count.  ``handed`` and ``translated``: as
    :func:`_compile_parts` calls them."""
    texts = _program_texts(module, options, entry, kernels)
    del module, kernels  # the parts' texts hold what is left of them
    return _compile_parts(texts, options.target, translated, compile_threads(), handed)


def _program_texts(
    module: ModuleOp,
    options: Any,
    entry: Callable[[ModuleOp], Sequence[Operation]],
    kernels: Iterable[Operation] | None,
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The LLVM IR texts of :func:`emit_program_object`'s parts, made as
    they are asked for."""
    from ember.backends.llvm_text import Printer, Symbol, Unsupported, assemble
    from ember.compiler import kernel_lowering_options
    from ember.lowering.kernel_to_llvm import KernelLowering, set_function_vector_width
    from ember.lowering.merge_functions import rename_symbols

    machine = _shared_target_machine(options.target)
    printer = Printer()
    lowering = KernelLowering(module, kernels=kernels, **kernel_lowering_options(options))
    del kernels
    known: dict[str, Symbol] = {}
    """Every symbol printed or declared so far, for the parts that use it."""
    first_of: dict[str, str] = {}
    """A function's text with its name left out → the first function's name."""
    renames: dict[str, str] = {}

    def declare(ops: list[Operation]) -> None:
        for op in ops:
            if op.sym_name.data not in known:
                known[op.sym_name.data] = printer.symbol(op)

    def part(symbols: list[Symbol]) -> tuple[str, tuple[str, ...]]:
        defined = {symbol.name for symbol in symbols}
        used = sorted({name for s in symbols for name in s.references} - defined)
        declarations = [known[name].declaration for name in used if name in known]
        text = assemble(machine.triple, str(machine.target_data), symbols, declarations)
        return text, tuple(s.name for s in symbols if s.text.startswith("define"))

    parts = 0
    try:
        symbols: list[Symbol] = []
        for kernel, functions in lowering:
            module.body.block.erase_op(kernel)
            for function in [*functions[1:], functions[0]]:  # outlined loops first
                rename_symbols(function, renames)
                set_function_vector_width(function, options.target.vector_bits)
                symbol = printer.symbol(function)
                first = first_of.setdefault(symbol.body(), symbol.name)
                if first != symbol.name:
                    renames[symbol.name] = first
                    continue
                known[symbol.name] = symbol
                symbols.append(symbol)
            # The first part is smaller: LLVM starts on it sooner.
            if sum(s.size for s in symbols) >= (PART_OPS if parts else PART_OPS // 4):
                declare(lowering.declarations())
                yield part(symbols)
                symbols = []
                parts += 1
        declare(lowering.declarations())
        kernel = functions = function = None  # the loop's last (some may be unbound)
        extra = entry(module)
        # The entries, calling the kernels by their merged names.
        last = [*_renamed_symbols(printer, [*module.ops, *extra], renames), *symbols]
    except Unsupported as e:  # ember's lowerings make no such op
        raise RuntimeFailure(f"cannot print the program as LLVM IR: {e}") from None
    # No IR is left alive while LLVM compiles the last part.
    del module, extra, lowering
    yield part(last)


def _renamed_symbols(printer: Any, ops: list[Operation], renames: dict[str, str]) -> list[Any]:
    """``ops`` printed, globals first, their uses of symbols renamed."""
    from ember.backends.llvm_text import globals_first
    from ember.lowering.merge_functions import rename_symbols

    for op in ops:
        rename_symbols(op, renames)
    return [printer.symbol(op) for op in globals_first(ops)]


def emit_ir_object(llvm_ir: str, target: Target = Target()) -> tuple[str, bytes]:
    """The optimised IR and object file of one module of unoptimised LLVM
    IR text (as :func:`translate` makes it)."""
    return _compile_part(llvm_ir, target, ())


def compile_threads() -> int:
    """How many threads a build runs LLVM on: ember's thread count
    (:func:`ember.runtime.threads.set_num_threads`; by default the cores
    this process may use)."""
    from ember.runtime.threads import num_threads

    return num_threads()


PART_OPS = 1000
"""About how many llvm-dialect ops each part of a split module holds
(:func:`split_module`): ResNet-18's 10917 make 11 parts.  A build's
stream sends its first part at a quarter of that (ResNet-18: the first
kernel, which LLVM then starts on ~0.15 s sooner).  A fixed size, not
one part per thread, so that the object file is the same bytes whatever
the thread count."""


def split_module(module: ModuleOp, entries: Collection[str] = ()) -> list[ModuleOp]:
    """``module``'s functions as modules that LLVM compiles apart, each
    declaring what it uses from the others; the ops move to the parts.

    A function and every function it references stay in one part (a
    kernel and its outlined loops: LLVM sees each kernel whole, and
    optimises it as in one module), except references from ``entries``:
    the entries are part 0, with the globals no function uses (the layout
    digest).  The other units are dealt to ``ceil(ops / PART_OPS)`` parts,
    largest first to the lightest part, each part keeping the module's
    order: the split depends on the module alone."""
    ops = list(module.ops)
    defined = {
        op.sym_name.data: k
        for k, op in enumerate(ops)
        if isinstance(op, llvm_dialect.FuncOp) and op.body.blocks
    }
    references = {name: set() for name in defined}
    sizes = dict.fromkeys(defined, 0)
    for name, k in defined.items():
        for inner in ops[k].walk():
            sizes[name] += 1
            for attribute in (*inner.properties.values(), *inner.attributes.values()):
                if isinstance(attribute, SymbolRefAttr):
                    references[name].add(attribute.root_reference.data)
    # Units: connected functions, by union-find, entries apart.
    owner = {name: name for name in defined}

    def find(name: str) -> str:
        while owner[name] != name:
            owner[name] = owner[owner[name]]
            name = owner[name]
        return name

    entry_names = [name for name in defined if name in entries]
    for name in entry_names[1:]:
        owner[find(name)] = find(entry_names[0])
    for name, used in references.items():
        for callee in used:
            if callee in defined and (
                name not in entries and callee not in entries or _is_local(ops[defined[callee]])
            ):
                owner[find(callee)] = find(name)
    units: dict[str, list[str]] = {}
    for name in defined:
        units.setdefault(find(name), []).append(name)
    count = max(1, min(len(units), -(-sum(sizes.values()) // PART_OPS)))
    if count == 1:
        return [module]
    first = [find(entry_names[0])] if entry_names else []
    others = sorted(
        (root for root in units if root not in first),
        key=lambda root: (-sum(sizes[name] for name in units[root]), defined[root]),
    )
    part_of: dict[str, int] = {}
    loads = [0] * count
    for root in first + others:
        lightest = loads.index(min(loads))
        loads[lightest] += sum(sizes[name] for name in units[root])
        for name in units[root]:
            part_of[name] = lightest
    return _build_parts(ops, part_of, references, count)


def _build_parts(
    ops: list[Operation],
    part_of: dict[str, int],
    references: dict[str, set[str]],
    count: int,
) -> list[ModuleOp]:
    """Modules holding the functions ``part_of`` assigns them, in the order
    of ``ops``, with the declarations and private globals they use."""
    used: list[set[str]] = [set() for _ in range(count)]
    for name, part in part_of.items():
        used[part] |= references[name]
    blocks: list[list[Operation]] = [[] for _ in range(count)]
    for op in ops:
        name = op.sym_name.data
        home = part_of.get(name)
        if home is None:  # a global or a declaration: where it is used
            users = [k for k in range(count) if name in used[k]]
            if isinstance(op, llvm_dialect.GlobalOp) and (op.value is not None or op.body.blocks):
                home = users[0] if users else 0
            for k in users:
                if k != home:
                    blocks[k].append(_declaration(op))
            if home is not None:
                op.detach()
                blocks[home].append(op)
            continue
        for k in range(count):
            if k != home and name in used[k]:
                blocks[k].append(_declaration(op))
        op.detach()
        blocks[home].append(op)
    return [ModuleOp(block) for block in blocks]


def _is_local(op: Operation) -> bool:
    return op.linkage.linkage.data in ("private", "internal")  # type: ignore[attr-defined]


def _declaration(op: Operation) -> Operation:
    """What a part that uses ``op`` but does not hold it declares: a
    function's signature and attributes; a global itself where it is
    private to each module, else an external declaration."""
    if isinstance(op, llvm_dialect.FuncOp):
        return op.clone_without_regions()
    if _is_local(op) or not (op.value is not None or op.body.blocks):
        return op.clone()
    return llvm_dialect.GlobalOp(op.global_type, op.sym_name, "external")


def _kernel_names(part: ModuleOp) -> tuple[str, ...]:
    return tuple(
        op.sym_name.data
        for op in part.ops
        if isinstance(op, llvm_dialect.FuncOp) and op.body.blocks
    )


_THREAD = threading.local()


def _thread_machine(target: Target) -> Any:
    """This thread's target machine for ``target``: LLVM's code generator
    is not to be shared between threads."""
    machines = _THREAD.__dict__.setdefault("machines", {})
    if target not in machines:
        _llvm()
        machines[target] = target.target_machine()
    return machines[target]


def _compile_part(
    llvm_ir: str, target: Target, kernels: tuple[str, ...]
) -> tuple[str, bytes]:
    """One module of unoptimised LLVM IR text → (optimised IR text, object
    file), in an LLVM context of its own with this thread's target
    machine; the long calls (parse, optimise, print, code generation)
    without llvmlite's lock (:func:`_unlocked`), so that threads compiling
    parts run at once."""
    from llvmlite.binding import ffi

    llvm = _llvm()
    machine = _thread_machine(target)
    try:
        with _private_module(llvm_ir) as module:
            module.verify()
            builder = llvm.create_pass_builder(machine, pipeline_tuning())
            _unlocked("LLVMPY_RunNewModulePassManager")(
                builder.getModulePassManager(), module, builder
            )
            with ffi.OutputString() as text:
                _unlocked("LLVMPY_PrintModuleToString")(module, text)
                optimized = str(text)
        # Code is generated from the optimised IR as text, read back: the
        # object is then the one MCJIT would make of ``optimized``.
        with _private_module(optimized) as module:
            with ffi.OutputString() as error:
                buffer = _unlocked("LLVMPY_TargetMachineEmitToMemory")(machine, module, 1, error)
                if not buffer:
                    raise RuntimeError(str(error))
        try:
            obj = ctypes.string_at(
                ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer)
            )
        finally:
            ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)
    except (RuntimeError, NotImplementedError) as e:
        where = f" (the part holding {', '.join(kernels)})" if kernels else ""
        raise RuntimeFailure(f"LLVM rejected the module{where}: {e}") from None
    return optimized, obj


def _unlocked(name: str) -> Any:
    """llvmlite's C function ``name``, called without the process-wide lock
    llvmlite takes around every call (ctypes releases the GIL; the lock
    would still let one thread into LLVM at a time).  Only for calls on
    objects no other thread touches: a module in a context of its own,
    this thread's target machine."""
    from llvmlite.binding import ffi

    function = getattr(ffi.lib, name)
    return getattr(function, "_cfn", function)  # llvmlite's wrapper keeps it there


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
