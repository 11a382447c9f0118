"""The CPU compiler's steps: graph IR to native code.

:mod:`ember.driver` runs them as its ordered list of named stages, each of
which can be printed (``ember-translate --emit=<stage>``) and re-read; the
functions here are the CPU-specific steps it calls (``to_kernel``,
``to_llvm_dialect``, ``to_llvm_ir``, ``to_asm``).

:class:`CompileOptions` is frozen: the graph pipeline, the entry name,
``bounds_check``, ``fast_math`` and the target are all that changes the
result.  The target (:class:`~ember.target.Target`, this CPU by default)
shapes the kernels' tiles by its vector width, asks LLVM for vectors that
wide in every function (``prefer-vector-width``: LLVM's default tuning keeps
AVX-512 CPUs at 256 bits) and is the CPU LLVM generates code for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ember.driver import stage_names
from ember.errors import PassError
from ember.lowering import MIN_PARALLEL_WORK
from ember.target import Target

if TYPE_CHECKING:
    from xdsl.dialects.func import FuncOp

    from ember.abi import ProgramLayout

STAGES: tuple[str, ...] = stage_names()
"""The driver's stage names (:data:`ember.driver.STAGES`)."""

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
    target: Target = Target()
    """The CPU compiled for; ``Target()`` is this one (``"llvm"``)."""
    min_parallel_work: int = MIN_PARALLEL_WORK
    """Parallel loops of fewer ops stay serial (:func:`~ember.lowering.kernel_to_llvm.loop_work`)."""
    winograd_min_channels: int | None = None
    """Sets the ``winograd-min-channels`` option of every ``kernel-tensorize``
    in the schedule: 3×3 stride-1 conv2d layers with at least this many
    input and output channels run as Winograd convolutions
    (:mod:`ember.lowering.winograd`), 0: none; ``None``: the schedule's own."""
    schedule: str | None = None
    """The schedule passes run on the kernels (a pipeline string,
    ``docs/passes.md``); ``None``: the target's
    (:attr:`~ember.target.Target.default_schedule`), ``""``: none, the
    kernels as the generators emit them."""

    @property
    def kernel_schedule(self) -> str:
        """The schedule this build runs: :attr:`schedule` or the target's."""
        return self.target.default_schedule if self.schedule is None else self.schedule

    def for_target(self, target: Target) -> CompileOptions:
        """These options compiling for ``target``, with the schedule spelled
        out (:attr:`kernel_schedule`, the new target's default unless one was
        given: its tiles are shaped for that target's vector width)."""
        retargeted = replace(self, target=target)
        return replace(retargeted, schedule=retargeted.kernel_schedule)


@dataclass
class LoweredProgram:
    """The ``llvm-dialect`` stage: a module of llvm ops plus the frame layout."""

    module: ModuleOp
    layout: ProgramLayout
    constants: list[np.ndarray]


def bind_arguments(module: ModuleOp, entry: str, params: Mapping[str, np.ndarray]) -> None:
    """Turn the named arguments of ``entry`` into ``graph.constant`` ops, in
    place: :func:`~ember.passes.bind_params.bind_params_in_place`, the one
    way ember binds (kept for older callers)."""
    if not params:
        return
    from ember.passes.bind_params import bind_params_in_place

    bind_params_in_place(module, dict(params), entry)


def to_graph(
    module: ModuleOp,
    params: Mapping[str, np.ndarray] | None = None,
    options: CompileOptions = CompileOptions(),
) -> ModuleOp:
    """Stage ``graph`` of :mod:`ember.driver`: a copy of ``module`` with
    params bound, passes applied."""
    from ember.driver import lower

    return lower(module, "graph", params, options)


def to_kernel(
    graph: ModuleOp,
    options: CompileOptions = CompileOptions(),
    annotate: bool = False,
    copy: bool = True,
) -> ModuleOp:
    """Stage ``kernel``: every graph op lowered to a kernel call, tiles
    shaped for the target's vector registers, then the schedule passes
    (:attr:`CompileOptions.kernel_schedule`); ``annotate`` records each
    call's graph ops and FLOPs for the profiler.  A copy; ``graph`` itself
    with ``copy=False``, so that weights the lowering repacks are not held
    twice."""
    kernel = graph.clone() if copy else graph
    ctx, schedule = _kernel_stage(kernel, options, annotate)
    for schedule_pass in schedule:
        schedule_pass.apply(ctx, kernel)
    return kernel


def scheduled_kernels(
    graph: ModuleOp, options: CompileOptions = CompileOptions(), annotate: bool = False
) -> Iterator[FuncOp]:
    """Stage ``kernel`` a kernel at a time: ``graph`` (changed in place) gets
    its kernels and their calls now (``lower-graph-to-kernel``), and each
    kernel, as the iterator yields it, has been through the whole schedule
    (:class:`~ember.passes.kernel_pass.KernelPass` steps, kernel by kernel),
    so that a build lowers and compiles the first kernels while Python
    schedules the next.  The module ends as :func:`to_kernel` makes it.  A
    schedule holding a pass that is not a ``KernelPass`` (it may need every
    kernel at once) runs whole, pass by pass, before the first kernel."""
    from ember.dialects.kernel import kernel_functions
    from ember.passes.kernel_pass import KernelPass

    ctx, schedule = _kernel_stage(graph, options, annotate)
    if not all(isinstance(p, KernelPass) for p in schedule):
        for schedule_pass in schedule:
            schedule_pass.apply(ctx, graph)
        return iter(kernel_functions(graph))
    kernels = list(kernel_functions(graph))
    steps = [p.kernel_step(ctx, graph) for p in schedule]  # bad options fail here

    def each() -> Iterator[FuncOp]:
        while kernels:  # none held here once yielded
            kernel = kernels.pop(0)
            for step in steps:
                step(kernel)
            yield kernel

    return each()


def _kernel_stage(module: ModuleOp, options: CompileOptions, annotate: bool) -> tuple[Any, list[Any]]:
    """``lower-graph-to-kernel`` applied to ``module``, in place: the
    context and the schedule passes to run next (a bad schedule fails
    first, before the module changes)."""
    from ember.context import make_context
    from ember.passes.kernel_tensorize import with_winograd_min_channels
    from ember.passes.lower_graph_to_kernel import LowerGraphToKernelPass
    from ember.passes.pipeline import parse_passes

    schedule = list(parse_passes(options.kernel_schedule))
    if options.winograd_min_channels is not None:
        schedule = with_winograd_min_channels(schedule, options.winograd_min_channels)
    ctx = make_context()
    LowerGraphToKernelPass(
        vector_bits=options.target.vector_bits, annotate=annotate
    ).apply(ctx, module)
    return ctx, schedule


def plan_entry(module: ModuleOp, entry: str) -> ModuleOp:
    """Stage ``plan``: ``plan-memory`` on the function ``entry`` of the
    kernel-stage ``module``, in place, unless it carries a plan already (a
    plan written in the input is kept, for the program lowering to check)."""
    from xdsl.dialects.func import FuncOp

    from ember.passes.plan_memory import WORKSPACE_BYTES, annotate, plan_function

    for op in module.ops:
        if (
            isinstance(op, FuncOp)
            and op.sym_name.data == entry
            and "kernel.kernel" not in op.attributes
            and WORKSPACE_BYTES not in op.attributes
        ):
            annotate(op, plan_function(op))
    return module


def to_llvm_dialect(
    kernel: ModuleOp, options: CompileOptions = CompileOptions(), copy: bool = True
) -> LoweredProgram:
    """Stage ``llvm-dialect``: the entry program and its kernels as llvm ops
    (a copy; ``kernel`` itself with ``copy=False``)."""
    from ember.lowering.kernel_to_llvm import lower_kernels_to_llvm, set_vector_width
    from ember.lowering.merge_functions import merge_identical_functions

    lowered = kernel.clone() if copy else kernel
    layout, constants = lower_entry(lowered, options)
    lower_kernels_to_llvm(lowered, **kernel_lowering_options(options))
    # Kernels and outlined loops that came out the same are compiled once.
    merge_identical_functions(lowered, keep=(layout.symbol, layout.profile_symbol))
    set_vector_width(lowered, options.target.vector_bits)
    return LoweredProgram(lowered, layout, constants)


def lower_entry(
    module: ModuleOp, options: CompileOptions
) -> tuple[ProgramLayout, list[np.ndarray]]:
    """The entry function of the kernel-stage ``module`` lowered to its
    native entries (``lower_program_to_llvm``), in place, once every other
    function is checked to be a kernel: its frame layout and constants."""
    from xdsl.dialects import func

    from ember.lowering.program_to_llvm import lower_program_to_llvm

    for op in module.ops:
        if (
            isinstance(op, func.FuncOp)
            and op.sym_name.data != options.entry
            and "kernel.kernel" not in op.attributes
        ):
            raise PassError(
                f"cannot compile @{op.sym_name.data}: only the entry function "
                f"@{options.entry} and kernels are compiled to native code"
            )
    return lower_program_to_llvm(module, options.entry)


def kernel_lowering_options(options: CompileOptions) -> dict[str, Any]:
    """The keyword arguments of ``lower_kernels_to_llvm`` for ``options``."""
    from ember.lowering import COLD_WORK_FRACTION

    return {
        "bounds_check": options.bounds_check,
        "fast_math": options.fast_math,
        "min_parallel_work": options.min_parallel_work,
        "cold_work_fraction": COLD_WORK_FRACTION,
    }


def to_llvm_ir(program: LoweredProgram, target: Target = Target()) -> str:
    """Stage ``llvm-ir``: optimised LLVM IR text for ``target``'s CPU."""
    from ember.backends.cpu import optimize, translate

    return optimize(translate(program.module, target), target)


def to_asm(llvm_ir: str, target: Target = Target()) -> str:
    """Stage ``asm``: ``target``'s assembly."""
    from ember.runtime.jit import assembly

    return assembly(llvm_ir, target)


def lower_to_stage(
    module: ModuleOp,
    stage: str,
    params: Mapping[str, np.ndarray] | None = None,
    options: CompileOptions = CompileOptions(),
) -> str:
    """The text of ``stage`` for ``module``: :func:`ember.driver.emit`."""
    from ember.driver import emit

    return emit(module, stage, params, options)
