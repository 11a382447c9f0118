"""``ember-translate``: print one stage of the CPU compiler for an IR file.

The counterpart of ``mlir-translate`` and of TVM's ``lib.get_source()``: each
stage of :mod:`ember.compiler` can be printed and, for the IR stages, read
back by ``ember-opt``::

    ember-translate net.mlir --emit=kernel        # kernel-dialect functions
    ember-translate net.mlir --emit=llvm-dialect  # xDSL llvm ops
    ember-translate net.mlir --emit=llvm-ir       # optimised LLVM IR
    ember-translate net.mlir --emit=asm           # host assembly

``--emit=graph`` prints the graph program after the graph pipeline that
``ember.build`` runs (``--pipeline`` changes it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ember.ir import parse_source
from ember.tools import read_source, run_tool, write_output

TOOL = "ember-translate"


def _argument_parser() -> argparse.ArgumentParser:
    from ember.compiler import DEFAULT_GRAPH_PIPELINE, STAGES

    parser = argparse.ArgumentParser(
        prog=TOOL, description="Print a stage of ember's CPU compiler for an IR file."
    )
    parser.add_argument("input_file", help="the .mlir file ('-' reads stdin)")
    parser.add_argument(
        "--emit", required=True, choices=STAGES, help="the stage to print"
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
    from ember.compiler import CompileOptions, lower_to_stage

    args = _argument_parser().parse_args(argv)
    text, name = read_source(args.input_file)
    module = parse_source(text, name).module
    options = CompileOptions(entry=args.entry, graph_pipeline=args.pipeline)
    result = lower_to_stage(module, args.emit, options=options)
    if args.output:
        write_output(args.output, result)
    else:
        sys.stdout.write(result if result.endswith("\n") else result + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: ``ember-translate FILE --emit=STAGE``."""
    return run_tool(TOOL, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
