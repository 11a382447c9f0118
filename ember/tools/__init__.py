"""ember's command-line tools, ``ember-opt`` and ``ember-run``, and what they share.

Like ``mlir-opt`` and ``mlir-cpu-runner`` (TVM: ``tvmc compile`` / ``tvmc
run``), each tool is a ``main(argv) -> int`` that a console script in
``pyproject.toml`` calls.  The rule they share lives here: a user mistake is
an :class:`ember.errors.EmberError` and ends as one diagnostic on stderr with
exit code 1; only a bug in ember may show a Python traceback.

Diagnostics read like ``mlir-opt``'s: ``file.mlir:3:8: error: message`` and the
source line with the place marked.  xDSL ops carry no source location unless
the text spells ``loc(…)``, so :class:`LocatingParser` records where each op
was parsed; verifier failures then point at the op's line instead of dumping
the whole module in generic form (megabytes for a network with bound weights).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.exceptions import (
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
)
from xdsl.utils.lexer import Span

from ember.errors import EmberError, IRError
from ember.ir import describe_op

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


def run_tool(
    tool: str, body: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None
) -> int:
    """Run a tool's ``body`` and turn user errors into exit code 1.

    A closed stdout (``ember-opt big.mlir | head``) ends the tool quietly, as
    Unix filters do.
    """
    try:
        return body(argv)
    except EmberError as error:
        report_error(tool, str(error))
        return 1
    except BrokenPipeError:
        # Python would print a second error while flushing the closed pipe at
        # exit; point stdout at nothing so that it stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def read_source(path: str) -> tuple[str, str]:
    """The text of ``path`` (``-``: stdin) and the name diagnostics use for it."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read(), path
    except OSError as error:
        raise EmberError(f"cannot read input file '{path}': {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise EmberError(
            f"input file '{path}' is not UTF-8 text: {error.reason}"
        ) from None


# --------------------------------------------------------------------------
# Diagnostics with source locations
# --------------------------------------------------------------------------


class ParseDiagnostic(IRError):
    """Input text that does not parse (as opposed to IR that does not verify)."""


def format_at(span: Span[Any], message: str, severity: str = "error") -> str:
    """``file:line:col: error: message``, then xDSL's marked source line and message.

    The first line is what editors and ``grep`` understand (gcc's and
    mlir-opt's form); the block under it is exactly what ``xdsl-opt`` prints,
    so FileCheck tests written against xDSL's diagnostics match ours.
    """
    return f"{span.get_location()}: {severity}: {message}\n" + span.print_with_context(
        message
    ).split("\n", 1)[1].rstrip("\n")


def format_parse_error(error: ParseError, line_offset: int = 0) -> str:
    """A parse error as one diagnostic, with notes for the spans it refers to."""

    def shifted(span: Span[Any]) -> Span[Any]:
        return dataclasses.replace(span, line_offset=line_offset)

    lines = [format_at(shifted(error.span), error.msg)]
    if isinstance(error, MultipleSpansParseError):
        if error.ref_text:
            lines.append(error.ref_text.rstrip("\n"))
        for span, note in error.refs:
            lines.append(format_at(shifted(span), note or "here", "note"))
    return "\n".join(lines)


class LocatingParser(Parser):
    """An xDSL parser that remembers where each operation was written.

    ``op_spans`` maps each parsed op to the span of its first source line
    (from its first token, ``%0`` or the op name).  ``line_offset`` shifts
    reported line numbers, for ``--split-input-file`` chunks.
    """

    def __init__(
        self, ctx: Context, text: str | bytes, name: str, line_offset: int = 0
    ) -> None:
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        self.op_spans: dict[Operation, Span[Any]] = {}
        self._first_forward_use: dict[str, Span[Any]] = {}

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as error:
            # xDSL reports undefined values at the end of the input; point at
            # the first use of the first one instead.
            undefined = [
                name
                for name in self.forward_ssa_references
                if name in self._first_forward_use
            ]
            if not undefined or not error.msg.startswith("values used but not defined"):
                raise
            names = ", ".join(f"%{name}" for name in undefined)
            raise ParseError(
                self._first_forward_use[undefined[0]], f"use of undefined value {names}"
            ) from None

    def resolve_operand(self, operand: UnresolvedOperand, type: Any) -> SSAValue:
        if operand.operand_name not in self.ssa_values:
            self._first_forward_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_operation(self) -> Operation:
        first = self._current_token.span
        op = super().parse_operation()
        line_end = first.input.get_end_of_line(first.start)
        end = max(first.end, min(self.pos, line_end))
        self.op_spans[op] = Span(first.start, end, first.input, self.line_offset)
        return op

    def current_span(self) -> Span[Any]:
        """The span of the token the parser stopped at (for errors without one)."""
        token = self._current_token.span
        return Span(token.start, token.end, token.input, self.line_offset)


def verify_with_locations(
    module: ModuleOp, op_spans: Mapping[Operation, Span[Any]], context: str = ""
) -> None:
    """Verify every op; the first failure becomes an :class:`IRError`.

    An op that came from the input is reported at its source line; one that
    a pass created is shown in custom syntax with its enclosing function.
    ``context`` prefixes the message (e.g. which pass produced the IR).
    """
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as error:
            message = str(error).removeprefix("Operation does not verify: ")
            span = op_spans.get(op)
            if span is not None:
                raise IRError(format_at(span, context + message)) from None
            raise IRError(f"error: {context}{message}\n{describe_op(op)}") from None


@dataclasses.dataclass
class ParsedSource:
    """A parsed module and where each of its ops was written."""

    module: ModuleOp
    op_spans: dict[Operation, Span[Any]]


def parse_source(
    text: str | bytes,
    name: str,
    *,
    ctx: Context | None = None,
    line_offset: int = 0,
    implicit_module: bool = True,
    verify: bool = True,
) -> ParsedSource:
    """Parse (and verify) MLIR text; failures are located :class:`IRError` s.

    ``ctx`` defaults to :func:`ember.context.make_context` (what ember knows).
    """
    if ctx is None:
        from ember.context import make_context

        ctx = make_context()
    parser = LocatingParser(ctx, text, name, line_offset)
    try:
        module = parser.parse_module(implicit_module)
    except ParseError as error:
        raise ParseDiagnostic(format_parse_error(error, line_offset)) from None
    except DiagnosticException as error:
        # Attribute and type constructors verify their parameters while the
        # parser builds them (e.g. a dense literal of the wrong size).
        raise ParseDiagnostic(format_at(parser.current_span(), str(error))) from None
    if verify:
        verify_with_locations(module, parser.op_spans)
    return ParsedSource(module, parser.op_spans)
