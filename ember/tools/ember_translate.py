"""``ember-translate``: print one stage of the CPU compiler for an IR file.

The counterpart of ``mlir-translate`` and of TVM's ``lib.get_source()``: each
stage of the compiler driver (:mod:`ember.driver`: parse, bind, graph,
kernel, plan, llvm-dialect, llvm-ir, asm) can be printed and, for the IR
stages, read back by ``ember-opt``::

    ember-translate net.mlir --emit=kernel        # kernel-dialect functions
    ember-translate net.mlir --emit=plan          # ... with the memory plan
    ember-translate net.mlir --emit=llvm-dialect  # xDSL llvm ops
    ember-translate net.mlir --emit=llvm-ir       # optimised LLVM IR
    ember-translate net.mlir --emit=asm           # assembly for this CPU (or --target)
    ember-translate net.mlir --emit=cuda          # the kernels as CUDA C
    ember-translate net.mlir --emit=ptx           # ... compiled by NVRTC
    ember-translate net.mlir --emit=schedule      # the schedule passes run on the kernels

``--emit=graph`` prints the graph program after the graph pipeline that
``ember.build`` runs (``--pipeline`` changes it).  ``--target`` is a target
string (:class:`ember.target.Target`): ``--target="llvm -mcpu=skylake-avx512"``
prints the kernels, IR and assembly for that CPU, which need not be this one.
``--schedule`` replaces the target's default schedule (the kernel passes
after lowering, ``--emit=schedule`` prints it): ``--schedule=""`` shows the
kernels as the generators emit them, ``--schedule="kernel-tile{sizes=4},
kernel-vectorize"`` another schedule.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp

from ember.compiler import CompileOptions
from ember.errors import TargetError
from ember.target import Target
from ember.tools import read_module, remark_arguments, run_tool, write_output

TOOL = "ember-translate"


def _argument_parser() -> argparse.ArgumentParser:
    from ember.compiler import DEFAULT_GRAPH_PIPELINE
    from ember.driver import stage_names

    parser = argparse.ArgumentParser(
        prog=TOOL,
        description="Print a stage of ember's CPU compiler for an IR file.",
        parents=[remark_arguments()],
    )
    parser.add_argument("input_file", help="the .mlir file ('-' reads stdin)")
    parser.add_argument(
        "--emit",
        required=True,
        choices=(*stage_names(), "dot", "cuda", "ptx", "schedule"),
        help="the driver stage to print; dot: a Graphviz picture of the graph stage "
        "(fused groups and pipeline stages as clusters); cuda / ptx: the "
        "kernels bound to the GPU (kernel-bind-gpu) as CUDA C / as PTX from NVRTC; "
        "schedule: the schedule passes run on the kernels (the target's or --schedule)",
    )
    parser.add_argument(
        "--schedule",
        default=None,
        help="schedule passes run on the kernels after lowering, as a pipeline "
        "(default: the target's, see --emit=schedule; '' runs none)",
    )
    parser.add_argument(
        "--arch",
        default=None,
        help="CUDA architecture for --emit=ptx (default sm_90)",
    )
    parser.add_argument(
        "--target",
        default="llvm",
        help="target string for the CPU stages, e.g. 'llvm -mcpu=skylake-avx512' "
        "or 'llvm -mattr=-avx' (default: llvm, this CPU)",
    )
    parser.add_argument(
        "--entry", default="main", help="function to compile (default: main)"
    )
    parser.add_argument(
        "--pipeline",
        default=DEFAULT_GRAPH_PIPELINE,
        help=f"graph passes before lowering (default: {DEFAULT_GRAPH_PIPELINE})",
    )
    parser.add_argument("-o", "--output", help="write to this file instead of stdout")
    return parser


def _main(argv: Sequence[str] | None) -> int:
    from ember.driver import emit
    from ember.passes.pipeline import parse_passes

    args = _argument_parser().parse_args(argv)
    target = Target.parse(args.target)  # a bad target fails before any work
    if target.kind != "llvm":
        raise TargetError(
            f"--target {args.target!r}: ember-translate prints the stages of the "
            "'llvm' compiler (--emit=cuda and ptx take --arch)"
        )
    options = CompileOptions(
        entry=args.entry, graph_pipeline=args.pipeline, target=target, schedule=args.schedule
    )
    parse_passes(options.kernel_schedule)  # a bad schedule fails before any work
    module, _ = read_module(args.input_file)
    if args.emit == "schedule":
        result = options.kernel_schedule
    elif args.emit == "dot":
        result = _dot(module, options)
    elif args.emit in ("cuda", "ptx"):
        result = _cuda(module, options, args.emit, args.arch)
    else:
        result = emit(module, args.emit, options=options)
    if args.output:
        write_output(args.output, result)
    else:
        sys.stdout.write(result if result.endswith("\n") else result + "\n")
    return 0


def _driver_stage(module: ModuleOp, options: CompileOptions, stage: str) -> ModuleOp:
    """Driver stage ``stage`` (an unknown entry fails before any work)."""
    from ember.driver import lower
    from ember.runtime.module import find_function

    find_function(module, options.entry)
    return lower(module, stage, options=options)


def _cuda(module: ModuleOp, options: CompileOptions, emit: str, arch: str | None) -> str:
    """The kernel stage bound to the GPU, as CUDA C or PTX."""
    from ember.backends.cuda import compile_ptx, kernels_to_cuda, parse_arch

    arch = parse_arch(arch)  # a bad --arch fails before any work
    source = kernels_to_cuda(_driver_stage(module, options, "kernel"))
    return source.code if emit == "cuda" else compile_ptx(source, arch)


def _dot(module: ModuleOp, options: CompileOptions) -> str:
    """The graph stage as DOT; a pipeline file is drawn as written."""
    from ember.visualize import to_dot

    if any(op.name == "pipeline.graph" for op in module.ops):
        return to_dot(module)
    return to_dot(_driver_stage(module, options, "graph"))


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: ``ember-translate FILE --emit=STAGE``."""
    return run_tool(TOOL, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
