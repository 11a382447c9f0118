"""The CPU compiler driver: graph IR to native code, as an ordered list of stages.

As in Triton's driver, compilation is a sequence of named stages, each of
which can be printed (``ember-translate --emit=<stage>``) and re-read:

============  ===============================================================
``graph``     the graph program after binding params and the graph pipeline
``kernel``    every op a ``graph.call_kernel`` of a kernel-dialect function
``llvm-dialect``  kernels and the program entry as xDSL ``llvm`` ops
``llvm-ir``   LLVM IR text, optimised at O3 for the host CPU
``asm``       host assembly
============  ===============================================================

:class:`CompileOptions` is frozen: the graph pipeline, the entry name and
``bounds_check`` and ``fast_math`` are all that changes the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ember.errors import PassError
from ember.lowering.program_to_llvm import ProgramLayout

STAGES: tuple[str, ...] = ("graph", "kernel", "llvm-dialect", "llvm-ir", "asm")

DEFAULT_GRAPH_PIPELINE = (
    "simplify-inference,fold-constants,canonicalize,cse,dce,fuse-ops"
)
"""Graph passes ``ember.build`` runs before lowering."""


@dataclass(frozen=True)
class CompileOptions:
    entry: str = "main"
    graph_pipeline: str = DEFAULT_GRAPH_PIPELINE
    bounds_check: bool = False
    """Test kernel accesses not proven in bounds at run time (a debug build)."""
    fast_math: bool = False
    """Let LLVM assume no NaN, inf or signed zero (results change for them)."""


@dataclass
class LoweredProgram:
    """The ``llvm-dialect`` stage: a module of llvm ops plus the frame layout."""

    module: ModuleOp
    layout: ProgramLayout
    constants: list[np.ndarray]


def bind_arguments(module: ModuleOp, entry: str, params: Mapping[str, np.ndarray]) -> None:
    """Turn the named arguments of ``entry`` into ``graph.constant`` ops, in place."""
    if not params:
        return
    from ember.passes.bind_params import bind_params_in_place

    bind_params_in_place(module, dict(params), entry)


def to_graph(
    module: ModuleOp,
    params: Mapping[str, np.ndarray] | None = None,
    options: CompileOptions = CompileOptions(),
) -> ModuleOp:
    """Stage ``graph``: a copy of ``module`` with params bound, passes applied."""
    from ember.passes.pipeline import apply_passes

    graph = module.clone()
    bind_arguments(graph, options.entry, params or {})
    if options.graph_pipeline:
        graph = apply_passes(graph, options.graph_pipeline)
    return graph


def to_kernel(graph: ModuleOp, copy: bool = True) -> ModuleOp:
    """Stage ``kernel``: every graph op lowered to a kernel call (a copy;
    ``graph`` itself with ``copy=False``, so that weights the lowering
    repacks are not held twice)."""
    from ember.context import make_context
    from ember.passes.lower_graph_to_kernel import LowerGraphToKernelPass

    kernel = graph.clone() if copy else graph
    LowerGraphToKernelPass().apply(make_context(), kernel)
    return kernel


def to_llvm_dialect(
    kernel: ModuleOp, options: CompileOptions = CompileOptions(), copy: bool = True
) -> LoweredProgram:
    """Stage ``llvm-dialect``: the entry program and its kernels as llvm ops
    (a copy; ``kernel`` itself with ``copy=False``)."""
    from xdsl.dialects import func

    from ember.lowering.kernel_to_llvm import lower_kernels_to_llvm
    from ember.lowering.program_to_llvm import lower_program_to_llvm

    lowered = kernel.clone() if copy else kernel
    for op in list(lowered.ops):
        if (
            isinstance(op, func.FuncOp)
            and op.sym_name.data != options.entry
            and "kernel.kernel" not in op.attributes
        ):
            raise PassError(
                f"cannot compile @{op.sym_name.data}: only the entry function "
                f"@{options.entry} and kernels are compiled to native code"
            )
    layout, constants = lower_program_to_llvm(lowered, options.entry)
    lower_kernels_to_llvm(
        lowered, bounds_check=options.bounds_check, fast_math=options.fast_math
    )
    return LoweredProgram(lowered, layout, constants)


def to_llvm_ir(program: LoweredProgram) -> str:
    """Stage ``llvm-ir``: optimised LLVM IR text for the host CPU."""
    from ember.runtime.jit import optimize, translate

    return optimize(translate(program.module))


def to_asm(llvm_ir: str) -> str:
    """Stage ``asm``: host assembly."""
    from ember.runtime.jit import assembly

    return assembly(llvm_ir)


def lower_to_stage(
    module: ModuleOp,
    stage: str,
    params: Mapping[str, np.ndarray] | None = None,
    options: CompileOptions = CompileOptions(),
) -> str:
    """The text of ``stage`` for ``module`` (what ``ember-translate`` prints)."""
    if stage not in STAGES:
        raise PassError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    from ember.runtime.module import signature_of

    # An unknown entry, or arguments and results the runtime cannot hold
    # (f64, i8, bf16, dynamic shapes), fail before any work, as in ember.build.
    signature_of(module, options.entry)
    graph = to_graph(module, params, options)
    if stage == "graph":
        return str(graph)
    kernel = to_kernel(graph)
    if stage == "kernel":
        return str(kernel)
    program = to_llvm_dialect(kernel, options)
    if stage == "llvm-dialect":
        return str(program.module)
    llvm_ir = to_llvm_ir(program)
    return llvm_ir if stage == "llvm-ir" else to_asm(llvm_ir)
