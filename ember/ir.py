"""Text in, module out: ``ember.parse`` and the located diagnostics behind it.

Parse errors and verifier failures become :class:`ember.errors.IRError`
whose message reads like ``mlir-opt``'s: ``file.mlir:3:8: error: message``,
then the source line with the place marked.  xDSL ops carry no source
location unless the text spells ``loc(…)``, so :class:`LocatingParser`
records where each op was written; a verifier failure then points at the
op's line instead of dumping the whole module in generic form (megabytes for
a network with bound weights).  The tools (``ember-opt``, ``ember-run``) and
the library report the same messages.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Iterator, Mapping
from io import StringIO
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyDenseElement,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    RankedStructure,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.irdl import base
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import (
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
)
from xdsl.utils.lexer import Input, Span

from ember.errors import IRError


def parse(
    text: str | bytes, *, name: str = "<string>", verify: bool = True
) -> ModuleOp:
    """Parse MLIR text (``str``, or UTF-8 ``bytes``) into a module and verify it.

    Raises :class:`IRError` with a located diagnostic on malformed or
    ill-typed IR, including text that is not UTF-8, holds a NUL byte or
    nests deeper than the parser can follow.
    """
    return parse_source(text, name, verify=verify).module


def as_module(
    module: ModuleOp | str, caller: str, error: type[Exception] = IRError
) -> ModuleOp:
    """A verified module from a ``ModuleOp`` or IR text (parsed here).

    Any other object raises ``error`` naming ``caller`` (the API the user
    called), so each API keeps its own error type.
    """
    if isinstance(module, str):
        return parse(module)
    if not isinstance(module, ModuleOp):
        raise error(
            f"{caller} expects a module (ember.parse(text)) or IR text, "
            f"got {type(module).__name__}"
        )
    verify_module(module)
    return module


def verify_module(module: ModuleOp) -> None:
    """Verify a module, turning verifier failures into :class:`IRError`."""
    verify_with_locations(module, {})


def describe_op(op: Operation) -> str:
    """One op in custom syntax, with the function that holds it (for errors)."""
    func = op.parent_op()
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op()
    where = f"in @{func.sym_name.data}" if isinstance(func, FuncOp) else "at"
    out = StringIO()
    printer = Printer(stream=out)
    if op.regions:
        printer.print_string(op.name)
    else:
        printer.print_op(op)
    return f"  {where}: {out.getvalue().strip()}"


def drop_held_attributes(op: Operation) -> None:
    """Drop the attributes and properties of ``op`` and every op inside it,
    once no IR holds ``op`` any more (erased): ops are reference cycles (an
    op and its results point at each other) that only a collection frees,
    and a build pauses collection, but what they hold, a graph's weights in
    its constants' attributes, is freed at once."""
    for inner in op.walk():
        inner.properties.clear()
        inner.attributes.clear()


def fresh_symbol(stem: str, taken: set[str]) -> str:
    """``stem``, or ``stem_1``, ``stem_2``, … : the first name not in ``taken``
    (TVM's naming of kernels and fused functions: ``conv2d``, ``conv2d_1``)."""
    if stem not in taken:
        return stem
    suffix = 1
    while f"{stem}_{suffix}" in taken:
        suffix += 1
    return f"{stem}_{suffix}"


def used_symbols(root: Operation, scope: Operation) -> Iterator[tuple[str, Operation]]:
    """Each symbol ``root`` refers to, transitively, as found in ``scope``'s
    symbol table: ``(name, op)`` once per name, ``root`` itself left out, and
    names ``scope`` does not define skipped (a stage function's callees, as
    the pipeline build and config copy them)."""
    from xdsl.dialects.builtin import SymbolRefAttr
    from xdsl.traits import SymbolTable

    def referenced(op: Operation) -> list[str]:
        names = {
            attr.root_reference.data
            for inner in op.walk()
            for attr in (*inner.attributes.values(), *inner.properties.values())
            if isinstance(attr, SymbolRefAttr)
        }
        return sorted(names)

    seen: set[str] = set()
    pending = referenced(root)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        found = SymbolTable.lookup_symbol(scope, name)
        if found is None or found is root:
            continue
        yield name, found
        pending += referenced(found)


def to_text(module: ModuleOp, *, generic: bool = False) -> str:
    """Print a module (``str(module)`` does the same in custom form)."""
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


# --------------------------------------------------------------------------
# Diagnostics with source locations
# --------------------------------------------------------------------------


class ParseDiagnostic(IRError):
    """Input text that does not parse (as opposed to IR that does not verify)."""


_BOM = "\ufeff"


def _position(text: str | bytes, offset: int, line_offset: int = 0) -> str:
    """``line:col`` (1-based) of ``offset`` in ``text``; bytes count bytes."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    line = text.count(newline, 0, offset) + 1 + line_offset  # type: ignore[arg-type]
    column = offset - text.rfind(newline, 0, offset)  # type: ignore[arg-type]
    return f"{line}:{column}"


def decode_source(text: str | bytes, name: str, line_offset: int = 0) -> str:
    """Source text as the parser may see it, or a located :class:`ParseDiagnostic`.

    The one gate for input text (``ember.parse`` and the three tools): bytes
    must be UTF-8 (the diagnostic names the first bad byte), a leading UTF-8
    byte-order mark is skipped as ``mlir-opt`` does, and a NUL character is
    refused (xDSL's lexer would stop at it with a message that prints the
    NUL itself).  Columns count bytes for bytes input, as ``mlir-opt``'s do.
    """
    if isinstance(text, bytes):
        try:
            decoded = text.decode("utf-8")
        except UnicodeDecodeError as error:
            bad = text[error.start : error.start + 1].hex()
            raise ParseDiagnostic(
                f"{name}:{_position(text, error.start, line_offset)}: error: "
                f"invalid UTF-8 byte 0x{bad} ({error.reason}); "
                "IR files must be UTF-8 text"
            ) from None
        nul = text.find(b"\0")
        if nul >= 0:
            raise ParseDiagnostic(
                f"{name}:{_position(text, nul, line_offset)}: error: "
                "NUL byte in the input; IR files must be text"
            )
        text = decoded
    else:
        nul = text.find("\0")
        if nul >= 0:
            raise ParseDiagnostic(
                f"{name}:{_position(text, nul, line_offset)}: error: "
                "NUL character in the input; IR must be text"
            )
    return text.removeprefix(_BOM)


def format_at(span: Span[Any], message: str, severity: str = "error") -> str:
    """``file:line:col: error: message``, then the source line with the span marked.

    One diagnostic, as ``mlir-opt`` prints it: the first line is what editors
    and ``grep`` understand (gcc's and mlir-opt's form), the source line and
    its ``^`` marks are xDSL's.  The message is not repeated under the marks
    (xDSL's own layout): it is on the first line already.
    """
    # print_with_context starts with the location on a line of its own.
    context = _clipped(span).print_with_context().split("\n", 1)[1].rstrip("\n")
    return f"{span.get_location()}: {severity}: {message}\n{context}"


_CONTEXT_WIDTH = 160
"""Source lines longer than this are shown as a window around the error."""


def _clipped(span: Span[Any]) -> Span[Any]:
    """``span``, or, on a very long line (minified or generated IR), the same
    place in a window of the line: a diagnostic stays a few lines long."""
    source = span.input
    line_start = source.get_start_of_line(span.start)
    line_end = source.get_end_of_line(span.start)
    if line_end - line_start <= _CONTEXT_WIDTH or not isinstance(source.content, str):
        return span
    start = max(line_start, span.start - _CONTEXT_WIDTH // 2)
    end = min(line_end, start + _CONTEXT_WIDTH)
    prefix = "…" if start > line_start else ""
    text = prefix + source.content[start:end] + ("…" if end < line_end else "")
    offset = len(prefix) - start
    return Span(
        span.start + offset, min(span.end, end) + offset, Input(text, source.name)
    )


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


def _may_be_splat(content: str, pos: int) -> bool:
    """Whether the dense literal at ``pos`` (its ``<``) holds one element:
    a scalar, a complex, or a hex string no longer than one element
    (16 bytes: ``complex<f64>``).  Read from the text (skipping blanks and
    comments as the lexer does), so a big literal goes to xDSL untouched."""
    if not content.startswith("<", pos):
        return False
    pos += 1
    while True:
        while pos < len(content) and content[pos] in " \t\r\n":
            pos += 1
        if not content.startswith("//", pos):
            break
        pos = content.find("\n", pos)
        if pos < 0:
            return False
    if pos >= len(content) or content[pos] in "[>":
        return False
    if content[pos] != '"':
        return True
    longest = len('"0x"') + 2 * _LARGEST_ELEMENT  # the string's quotes included
    return content.find('"', pos + 1, pos + longest) >= 0


_LARGEST_ELEMENT = 16
"""Bytes of the largest dense element (``complex<f64>``)."""


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
        self.value_names: dict[SSAValue, str] = {}
        """How each value was written (``%0``, ``%x#1``): xDSL keeps no name
        hint for numeric names, and diagnostics should quote the text."""
        self._first_forward_use: dict[str, Span[Any]] = {}
        # Line counting for op locations, incremental: ops start in order.
        self._line_pos = 0
        self._line = 1

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

    def _name_new_values(self) -> None:
        """Record how the values defined since the last call were written.

        xDSL's ``ssa_values`` maps each name in scope to its values, in the
        order they were defined (a region works on a copy of the enclosing
        scope and restores it on exit).  Called before and after each op,
        this sees every op result and every block argument of a block that
        holds an op, newest first, and stops at the first one named already.
        """
        for name, values in reversed(self.ssa_values.items()):
            if values and values[0] in self.value_names:
                return
            for index, value in enumerate(values):
                suffix = f"#{index}" if len(values) > 1 else ""
                self.value_names[value] = f"%{name}{suffix}"

    def _token_span(self) -> Span[Any]:
        """The span of the token the parser stands at: from its start
        (``pos``) to where the lexer stopped after reading it."""
        return Span(self.pos, self.lexer.pos, self.lexer.input)

    def parse_operation(self) -> Operation:
        self._name_new_values()  # the arguments of the block this op starts
        first = self._token_span()
        location = self._location_at(first)
        op = super().parse_operation()
        self._name_new_values()  # the op's results
        line_end = first.input.get_end_of_line(first.start)
        end = max(first.end, min(self.pos, line_end))
        self.op_spans[op] = Span(first.start, end, first.input, self.line_offset)
        if isinstance(op.location, UnknownLoc):
            # MLIR's convention: an op is located where it starts (``%0 = …``).
            # Clones keep it, so remarks and diagnostics about code made from
            # this op (fused functions, kernels) point back here.
            op.location = location
        return op

    def _location_at(self, span: Span[Any]) -> FileLineColLoc:
        """``loc("file":line:col)`` of ``span``'s start (counting lines from
        the previous op's start, not from the top: big files stay linear)."""
        content = span.input.content
        newline = "\n" if isinstance(content, str) else b"\n"
        if span.start < self._line_pos:
            self._line_pos, self._line = 0, 1
        self._line += content.count(newline, self._line_pos, span.start)
        self._line_pos = span.start
        line_start = content.rfind(newline, 0, span.start) + 1
        return FileLineColLoc(
            StringAttr(span.input.name),
            IntAttr(self._line + self.line_offset),
            IntAttr(span.start - line_start + 1),
        )

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        """xDSL's dense parser, except that a splat stays one element.

        xDSL repeats ``dense<1.0>`` once per element of the type, so a tiny
        file holding ``dense<1.0> : tensor<100000x100000xf32>`` needs 40 GB.
        MLIR stores a splat as its one value; so does ember: the values are
        materialised only where they are needed, through
        :func:`ember.dialects.graph.dense_to_array` and its allocation limit.
        A literal that cannot be a splat (``dense<[…]>``, ``dense<>``, a hex
        string longer than one element: bound weights) is xDSL's parser's
        business, decided from the source text before any token is read.
        """
        if not _may_be_splat(self.lexer.input.content, self.pos):
            return super().parse_dense_int_or_fp_elements_attr(type)
        self.parse_punctuation("<", " in dense attribute")
        element_start = self.pos
        hex_text = self.parse_optional_str_literal()
        if hex_text is None:
            self._step_over_literal_element()
        element_end = self.pos
        self.parse_punctuation(">", " in dense attribute")
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type = self._parse_dense_type()
        element_type = type.get_element_type()
        count = math.prod(type.get_shape())
        if hex_text is None:
            one = self._convert_element(element_start, element_end, type, count)
            if count <= 1:
                return one
            return DenseIntOrFPElementsAttr(type, BytesAttr(one.data.data))
        # xDSL's reading of a hex literal, but one element of a type of
        # many stays one element.
        try:
            data = bytes.fromhex(hex_text[2:])
        except ValueError:
            self.raise_error("Hex string in denseAttr is invalid")
        if len(data) == element_type.compile_time_size:
            if count > 1:
                return DenseIntOrFPElementsAttr(type, BytesAttr(data))
            data *= count
        attr = DenseIntOrFPElementsAttr(type, BytesAttr(data))
        if count != len(attr):
            self.raise_error(
                f"Shape mismatch in dense literal. Expected {count} "
                f"elements from the type, but got {len(attr)} elements."
            )
        return attr

    def _step_over_literal_element(self) -> None:
        """Read past one tensor literal element: ``true``, ``false``, a
        number, or a complex ``(re, im)`` of those (xDSL's grammar)."""

        def scalar() -> bool:
            if self.parse_optional_boolean() is not None:
                return True
            # xDSL gives up at a ``-`` with no number after it.
            after = self.lexer.input.content[self.pos : self.pos + 64]
            if after.startswith("-") and not after[1:].lstrip()[:1].isdigit():
                return False
            return self.parse_optional_number() is not None

        if self.parse_optional_punctuation("(") is not None:
            for delimiter in (",", ")"):
                if not scalar():
                    self.raise_error("either an int or float must be present")
                self.parse_punctuation(delimiter)
        elif not scalar():
            self.raise_error("Expected either a float, integer, or complex literal")

    def _parse_dense_type(self) -> RankedStructure[AnyDenseElement]:
        """The type after ``dense<…> :``, checked as xDSL checks it."""
        type = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        if not base(RankedStructure[AnyDenseElement]).verifies(type):
            self.raise_error(
                "Expected memref, vector or tensor type of "
                "integer, index, float, or complex type"
            )
        if any(dim == DYNAMIC_INDEX for dim in type.get_shape()):
            self.raise_error("Dense literal attribute should have a static shape.")
        return type

    def _convert_element(
        self,
        start: int,
        end: int,
        type: RankedStructure[AnyDenseElement],
        count: int,
    ) -> DenseIntOrFPElementsAttr:
        """The element written between ``start`` and ``end`` as a dense
        attribute of ``type`` (of its one element when ``count`` > 1).

        xDSL's public parser converts it (range checks, booleans only for
        ``i1``, …), reading just ``<element>``; its errors point into this
        file.
        """
        if count > 1:
            type = TensorType(type.get_element_type(), [])
        text = "<" + self.lexer.input.content[start:end] + ">"
        try:
            return Parser(self.ctx, text).parse_dense_int_or_fp_elements_attr(type)
        except ParseError as error:
            shift = start - 1  # the text's ``<`` stands for the source's
            span = Span(
                error.span.start + shift, error.span.end + shift, self.lexer.input
            )
            raise ParseError(span, error.msg) from None

    def current_span(self) -> Span[Any]:
        """The span of the token the parser stopped at (for errors without one)."""
        return dataclasses.replace(self._token_span(), line_offset=self.line_offset)


def verify_with_locations(
    module: ModuleOp,
    op_spans: Mapping[Operation, Span[Any]],
    context: str = "",
    value_names: Mapping[SSAValue, str] | None = None,
) -> None:
    """Verify every op; the first failure becomes an :class:`IRError`.

    An op that came from the input is reported at its source line; one that
    a pass created is shown in custom syntax with its enclosing function.
    ``context`` prefixes the message (e.g. which pass produced the IR).
    Besides each op's own verifier this checks what xDSL does not: that
    every value is defined before it is used (:func:`uses_before_definition`),
    and that no kernel indexes a buffer out of bounds
    (:func:`ember.analysis.index_bounds.out_of_bounds_accesses`).
    """

    def fail(op: Operation, message: str) -> IRError:
        span = op_spans.get(op)
        if span is not None:
            return IRError(format_at(span, context + message))
        return IRError(f"error: {context}{message}\n{describe_op(op)}")

    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as error:
            message = str(error).removeprefix("Operation does not verify: ")
            raise fail(op, message) from None
    for op, message in uses_before_definition(module, value_names or {}):
        raise fail(op, message)
    from ember.analysis.index_bounds import out_of_bounds_accesses

    for op, message in out_of_bounds_accesses(module):
        raise fail(op, message)


def uses_before_definition(
    module: ModuleOp, value_names: Mapping[SSAValue, str]
) -> Iterator[tuple[Operation, str]]:
    """Each op that uses a value its definition does not dominate, with why.

    xDSL's parser resolves forward references and its verifiers never check
    dominance, so ``%0 = graph.add %0, %x`` would reach the passes.  A value
    may be used after its definition in the same block, or in a region
    nested below it (a ``kernel.for`` body uses values defined before the
    loop); a block argument inside the region of its block.  Across the
    blocks of one multi-block region the order is not checked (that needs a
    dominator tree; ember's own regions have a single block).
    """
    position = {op: n for n, op in enumerate(module.walk())}

    def called(value: SSAValue, op: Operation) -> str:
        if value in value_names:
            return value_names[value]
        if value.name_hint:
            return f"%{value.name_hint}"
        return f"operand #{list(op.operands).index(value)} of {op.name}"

    for op in module.walk():
        for value in op.operands:
            if isinstance(value, BlockArgument):
                region = value.block.parent
                if region is None or not region.is_ancestor(op):
                    yield op, (
                        f"{called(value, op)} is used outside the region of its block"
                    )
                continue
            definition = value.owner
            assert isinstance(definition, Operation)
            defining_region = definition.parent_region()
            user = op
            while user is not None and user.parent_region() is not defining_region:
                user = user.parent_op()
            if user is None:
                yield op, (
                    f"{called(value, op)} is used outside the region that defines it"
                )
            elif user.parent_block() is not definition.parent_block():
                continue  # another block of a CFG region: needs a dominator tree
            elif user is definition:
                yield op, f"{called(value, op)} is used by its own definition"
            elif position[user] < position[definition]:
                yield op, f"{called(value, op)} is used before it is defined"


@dataclasses.dataclass
class ParsedSource:
    """A parsed module and where each of its ops was written."""

    module: ModuleOp
    op_spans: dict[Operation, Span[Any]]
    value_names: dict[SSAValue, str] = dataclasses.field(default_factory=dict)


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
    source = decode_source(text, name, line_offset)
    parser: LocatingParser | None = None
    try:
        # The lexer reads the first token in the constructor: a bad character
        # there is a ParseError too.
        parser = LocatingParser(ctx, source, name, line_offset)
        module = parser.parse_module(implicit_module)
    except RecursionError:
        # xDSL's parser is recursive descent: each level of nesting (regions,
        # brackets, types) costs Python frames.  Report where it gave up.
        where = parser.current_span() if parser is not None else None
        message = (
            f"IR nested too deeply to parse (Python's recursion limit, "
            f"{sys.getrecursionlimit()} frames, was reached here)"
        )
        if where is None:
            raise ParseDiagnostic(f"{name}: error: {message}") from None
        raise ParseDiagnostic(format_at(where, message)) from None
    except ParseError as error:
        raise ParseDiagnostic(format_parse_error(error, line_offset)) from None
    except (DiagnosticException, ValueError) as error:
        # Attribute and type constructors verify their parameters while the
        # parser builds them (e.g. a dense literal of the wrong size); some
        # raise ValueError (an integer out of its type's range).
        assert parser is not None  # the constructor raises ParseError only
        raise ParseDiagnostic(format_at(parser.current_span(), str(error))) from None
    if verify:
        verify_with_locations(module, parser.op_spans, value_names=parser.value_names)
    return ParsedSource(module, parser.op_spans, parser.value_names)
