"""ember's command-line tools, ``ember-opt`` and ``ember-run``, and what they share.

Like ``mlir-opt`` and ``mlir-cpu-runner`` (TVM: ``tvmc compile`` / ``tvmc
run``), each tool is a ``main(argv) -> int`` that a console script in
``pyproject.toml`` calls.  The rule they share lives here: a user mistake is
an :class:`ember.errors.EmberError` and ends as one diagnostic on stderr with
exit code 1; only a bug in ember may show a Python traceback.

Diagnostics read like ``mlir-opt``'s (``file.mlir:3:8: error: message`` and
the source line with the place marked); the located parser behind them is
:mod:`ember.ir`'s, shared with ``ember.parse``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence

from typing import TYPE_CHECKING

from ember.errors import EmberError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def _has_severity(text: str) -> bool:
    first_line = text.split("\n", 1)[0]
    return ": error:" in first_line or first_line.startswith("error:")


def as_diagnostic(message: str, prefix: str = "") -> str:
    """``message`` as a diagnostic: ``error: …`` unless it already says so.

    Diagnostics that already start with a location (``file.mlir:3:5: error:``)
    or with ``error:`` are kept as they are; ``prefix`` (a tool's name) goes
    in front of those that do not.
    """
    text = message.rstrip("\n")
    if _has_severity(text):
        return text
    return f"{prefix}: error: {text}" if prefix else f"error: {text}"


def report_error(tool: str, message: str) -> None:
    """Print ``message`` as a diagnostic of ``tool`` on stderr."""
    sys.stdout.flush()
    print(as_diagnostic(message, tool), file=sys.stderr, flush=True)


def remark_arguments() -> argparse.ArgumentParser:
    """The optimization-remark flags every tool takes (LLVM's ``-Rpass`` family);
    a tool's own parser lists them with ``parents=[remark_arguments()]``."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    group = parser.add_argument_group(
        "optimization remarks (printed to stderr as file:line:col: remark: [pass] ...)"
    )
    group.add_argument(
        "--remarks",
        metavar="PASS-REGEX",
        help="print what the passes matching PASS-REGEX did (e.g. 'fuse-ops', '.*')",
    )
    group.add_argument(
        "--remarks-missed",
        metavar="PASS-REGEX",
        help="print what those passes did not do, and why",
    )
    group.add_argument(
        "--remarks-analysis",
        metavar="PASS-REGEX",
        help="print the facts those passes decided on (costs, schedules)",
    )
    group.add_argument(
        "--remarks-file",
        metavar="FILE",
        help="save every remark as JSON (or YAML for .yaml) records (docs/passes.md)",
    )
    return parser


@contextlib.contextmanager
def reporting_remarks(options: argparse.Namespace) -> Iterator[None]:
    """Collect remarks while the tool runs when its flags ask for any; then
    print the selected ones and save the file (also after a failure)."""
    from ember import remarks

    selection = remarks.RemarkFilter.from_strings(
        options.remarks, options.remarks_missed, options.remarks_analysis
    )
    if not selection.active and not options.remarks_file:
        yield
        return
    with remarks.collect() as records:
        try:
            yield
        finally:
            sys.stdout.flush()
            for remark in records:
                if selection.selects(remark):
                    print(remark.format(), file=sys.stderr)
            sys.stderr.flush()
            if options.remarks_file:
                remarks.write_records(records, options.remarks_file)


def run_tool(
    tool: str, body: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None
) -> int:
    """Run a tool's ``body`` and turn user errors into exit code 1.

    The remark flags (:func:`remark_arguments`) are taken out of ``argv``
    here, for every tool alike.  A closed stdout (``ember-opt big.mlir |
    head``) ends the tool quietly, as Unix filters do.  Running out of memory
    or stack is the input's doing too (a huge tensor, IR nested thousands
    deep) wherever ember did not foresee it: a diagnostic, not a traceback.
    """
    try:
        arguments = sys.argv[1:] if argv is None else list(argv)
        options, rest = remark_arguments().parse_known_args(arguments)
        with reporting_remarks(options):
            return body(rest)
    except EmberError as error:
        report_error(tool, str(error))
        return 1
    except MemoryError:
        report_error(
            tool,
            "out of memory: the input needs more memory than this machine has "
            "(EMBER_MAX_ALLOC_BYTES limits the size of one value)",
        )
        return 1
    except RecursionError:
        report_error(
            tool, "the input is nested too deeply (Python's recursion limit was reached)"
        )
        return 1
    except BrokenPipeError:
        # Python would print a second error while flushing the closed pipe at
        # exit; point stdout at nothing so that it stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def read_source(path: str) -> tuple[str, str]:
    """The text of ``path`` (``-``: stdin) and the name diagnostics use for it.

    The one way the tools read IR: the bytes go through
    :func:`ember.ir.decode_source`, so a file that is not UTF-8 or holds a
    NUL byte is a located diagnostic, and a byte-order mark is skipped.
    """
    from ember.ir import decode_source

    if path == "-":
        # Bytes where the platform gives them (a real stdin), text otherwise.
        stdin = getattr(sys.stdin, "buffer", sys.stdin)
        return decode_source(stdin.read(), "<stdin>"), "<stdin>"
    return decode_source(read_bytes(path), path), path


def read_bytes(path: str) -> bytes:
    """The contents of input file ``path``; one that cannot be read is an
    :class:`EmberError` naming it."""
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as error:
        raise EmberError(f"cannot read input file '{path}': {error.strerror}") from None


def write_output(path: str, text: str) -> None:
    """Write ``text`` to file ``path``; a path that cannot be written (a
    missing directory, no permission, a directory) is an :class:`EmberError`."""
    try:
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
    except OSError as error:
        raise EmberError(
            f"cannot write output file '{path}': {error.strerror or error}"
        ) from None


# --------------------------------------------------------------------------
# Reading a model: IR text or an ONNX file
# --------------------------------------------------------------------------


def is_onnx_path(path: str | None) -> bool:
    """Whether the tools read ``path`` as an ONNX model (by its extension)."""
    return path is not None and path.lower().endswith(".onnx")


def onnx_module(data: bytes, name: str) -> ModuleOp:
    """The graph module of ONNX model bytes, its initializers bound as constants.

    The tools take ``model.onnx`` wherever they take ``.mlir``: the weights
    are in the file, so they are bound (``bind-params``) and ``@main`` takes
    only the model's real inputs.
    """
    from ember.frontends.onnx import from_onnx, parse_model_bytes
    from ember.passes.bind_params import bind_params

    module, params = from_onnx(parse_model_bytes(data, name))
    return bind_params(module, params) if params else module


def read_module(path: str) -> tuple[ModuleOp, str]:
    """The verified module in ``path`` (``.mlir`` text, ``.onnx``, ``-`` for
    stdin) and the name diagnostics use for it."""
    from ember.ir import parse_source

    if is_onnx_path(path):
        return onnx_module(read_bytes(path), path), path
    text, name = read_source(path)
    return parse_source(text, name).module, name
