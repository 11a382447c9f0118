"""The compiler driver: the ordered, named stages from parsed IR to native code.

As in Triton's ``backend/compiler.py`` (and MLIR's ``--mlir-print-ir-after``),
compilation is one list of stages, each a small function from the last
stage's result to the next; every stage can be printed and the IR stages
read back (``ember-opt``, :func:`ember.parse`):

================  ==============================================================
``parse``         the input, parsed and verified (a copy of a ``ModuleOp``)
``bind``          params of the entry bound as ``graph.constant`` ops (``bind-params``)
``graph``         the graph pipeline (``simplify-inference``, ``fold-constants``,
                  ``canonicalize``, ``cse``, ``dce``, ``fuse-ops``:
                  :data:`~ember.compiler.DEFAULT_GRAPH_PIPELINE`)
``kernel``        every (fused) graph op a ``graph.call_kernel`` of a kernel function
``plan``          the workspace plan of the program (``plan-memory``), in the IR
``llvm-dialect``  the program's one native entry and its kernels as xDSL ``llvm`` ops
``llvm-ir``       LLVM IR text, optimised (O2) for the target's CPU
``asm``           the target's assembly
================  ==============================================================

The artifact, an :class:`~ember.runtime.cpu.LLVMModule`, is made from the
``llvm-dialect`` stage (:data:`ARTIFACT_INPUT`): ``ember.build`` asks the
backend for it and the backend runs :func:`lower`; ``ember-translate
--emit=<stage>`` prints :func:`emit`; ``ember-run --print-after=<stage>`` and
:func:`print_after` print stages while a build runs.

Stages work in place on one module: only ``parse`` copies (and not with
``copy=False``), so a big network's weights are never held twice.  The
options of every stage are one frozen :class:`~ember.compiler.CompileOptions`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from xdsl.dialects.builtin import ModuleOp

from ember.errors import PassError

if TYPE_CHECKING:
    import numpy as np

    from ember.compiler import CompileOptions, LoweredProgram

__all__ = [
    "ARTIFACT_INPUT",
    "STAGES",
    "Compilation",
    "Stage",
    "checked_stage_names",
    "emit",
    "lower",
    "print_after",
    "printing",
    "stage_names",
    "stage_text",
]


@dataclass
class Compilation:
    """What every stage reads: the params to bind and the build options."""

    params: Mapping[str, np.ndarray]
    options: CompileOptions
    annotate: bool = False
    """Record each kernel call's graph ops and FLOPs (for the profiler)."""
    copy: bool = True
    """Copy an input ``ModuleOp`` first; without, the stages consume it."""


@dataclass(frozen=True)
class Stage:
    """One step of the driver: ``run`` turns the last stage's result into this one's."""

    name: str
    summary: str
    run: Callable[[Any, Compilation], Any] = field(repr=False)


def _bind(module: ModuleOp, compilation: Compilation) -> ModuleOp:
    from ember.passes.bind_params import bind_params_in_place

    if compilation.params:
        bind_params_in_place(module, compilation.params, compilation.options.entry)
    # The module's constants hold the arrays now: a weight the graph and
    # kernel stages fold or repack is freed then, unless the caller keeps it.
    compilation.params = {}
    return module


def _graph(module: ModuleOp, compilation: Compilation) -> ModuleOp:
    from ember.passes.pipeline import run_passes

    if compilation.options.graph_pipeline:
        run_passes(module, compilation.options.graph_pipeline)
    return module


def _kernel(module: ModuleOp, compilation: Compilation) -> ModuleOp:
    from ember.compiler import to_kernel

    return to_kernel(module, compilation.options, annotate=compilation.annotate, copy=False)


def _plan(module: ModuleOp, compilation: Compilation) -> ModuleOp:
    from ember.compiler import plan_entry

    return plan_entry(module, compilation.options.entry)


def _llvm_dialect(module: ModuleOp, compilation: Compilation) -> LoweredProgram:
    from ember.compiler import to_llvm_dialect

    return to_llvm_dialect(module, compilation.options, copy=False)


def _llvm_ir(program: LoweredProgram, compilation: Compilation) -> str:
    from ember.compiler import to_llvm_ir

    return to_llvm_ir(program, compilation.options.target)


def _asm(llvm_ir: str, compilation: Compilation) -> str:
    from ember.compiler import to_asm

    return to_asm(llvm_ir, compilation.options.target)


def _parse(module: ModuleOp | str, compilation: Compilation) -> ModuleOp:
    """IR text parsed and verified; a ``ModuleOp`` (verified by its
    maker: ember.parse, ember.build) copied unless the caller gave it away."""
    from ember.ir import parse

    if isinstance(module, str):
        return parse(module)
    if not isinstance(module, ModuleOp):
        raise PassError(
            "the compiler driver expects a module (ember.parse(text)) or IR text, "
            f"got {type(module).__name__}"
        )
    return module.clone() if compilation.copy else module


STAGES: tuple[Stage, ...] = (
    Stage("parse", "the input, parsed and verified", _parse),
    Stage("bind", "params bound as graph.constant ops (bind-params)", _bind),
    Stage("graph", "the graph pipeline (default: DEFAULT_GRAPH_PIPELINE)", _graph),
    Stage("kernel", "every graph op a call of a kernel (lower-graph-to-kernel)", _kernel),
    Stage("plan", "the workspace memory plan of the program (plan-memory)", _plan),
    Stage("llvm-dialect", "the native entry and the kernels as llvm ops", _llvm_dialect),
    Stage("llvm-ir", "LLVM IR optimised (O2) for the target", _llvm_ir),
    Stage("asm", "the target's assembly", _asm),
)
"""The stages in the order they run."""

ARTIFACT_INPUT = "llvm-dialect"
"""The stage the CPU backend turns into a loadable module."""

_PRINT_AFTER: ContextVar[tuple[frozenset[str], TextIO] | None] = ContextVar(
    "ember_driver_print_after", default=None
)


def stage_names() -> tuple[str, ...]:
    return tuple(stage.name for stage in STAGES)


def _stage_index(name: str) -> int:
    names = stage_names()
    if name not in names:
        raise PassError(f"unknown stage {name!r}; stages: {', '.join(names)}")
    return names.index(name)


def stage_text(result: Any) -> str:
    """A stage's result as text: IR for modules, the text stages as they are."""
    from ember.compiler import LoweredProgram

    if isinstance(result, LoweredProgram):
        return str(result.module)
    return result if isinstance(result, str) else str(result)


def checked_stage_names(stages: Collection[str]) -> frozenset[str]:
    """``stages`` as a set (``"all"``: every stage); an unknown name is a
    :class:`PassError` listing the stages."""
    if "all" in stages:
        return frozenset(stage_names())
    for name in stages:
        _stage_index(name)
    return frozenset(stages)


def printing() -> bool:
    """Whether :func:`print_after` is active here (a cached build would print nothing)."""
    return _PRINT_AFTER.get() is not None


@contextmanager
def print_after(stages: Collection[str], stream: TextIO | None = None) -> Iterator[None]:
    """Print the result of each stage named in ``stages`` (``"all"``: every
    one) to ``stream`` (stderr) whenever :func:`lower` runs one, in this
    thread, inside the ``with``; as MLIR's ``--mlir-print-ir-after``."""
    token = _PRINT_AFTER.set((checked_stage_names(stages), stream or sys.stderr))
    try:
        yield
    finally:
        _PRINT_AFTER.reset(token)


def lower(
    module: ModuleOp | str,
    until: str,
    params: Mapping[str, np.ndarray] | None = None,
    options: CompileOptions | None = None,
    *,
    annotate: bool = False,
    copy: bool = True,
    after: Callable[[str], None] | None = None,
) -> Any:
    """Run the stages from ``parse`` to ``until`` and return ``until``'s result.

    ``module``: a ``ModuleOp`` (copied first unless ``copy=False``: then
    the stages consume it) or IR text.  ``after(name)`` is called once each
    stage is done (the CPU backend releases dead IR there).
    """
    from ember.compiler import CompileOptions

    last = _stage_index(until)
    compilation = Compilation(params or {}, options or CompileOptions(), annotate, copy)
    printing = _PRINT_AFTER.get()
    result: Any = module
    del module, params  # with copy=False, the stages' result is the only reference
    for stage in STAGES[: last + 1]:
        result = stage.run(result, compilation)
        if printing is not None and stage.name in printing[0]:
            printing[1].write(f"// -----// IR after stage '{stage.name}' //----- //\n")
            printing[1].write(stage_text(result).rstrip("\n") + "\n")
        if after is not None:
            after(stage.name)
    return result


def emit(
    module: ModuleOp | str,
    stage: str,
    params: Mapping[str, np.ndarray] | None = None,
    options: CompileOptions | None = None,
) -> str:
    """The text of ``stage`` for function ``options.entry`` of ``module``
    (what ``ember-translate --emit=<stage>`` prints); ``module`` is not changed."""
    from ember.compiler import CompileOptions
    from ember.runtime.module import signature_of

    _stage_index(stage)
    options = options or CompileOptions()
    parsed = lower(module, "parse")
    # An unknown entry, or arguments and results the runtime cannot hold
    # (f64, i8, bf16, dynamic shapes), fail before any work, as in ember.build.
    signature_of(parsed, options.entry)
    return stage_text(lower(parsed, stage, params, options, copy=False))
