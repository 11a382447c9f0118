"""Optimization remarks: every decision a pass makes, tied to source locations.

LLVM's ``-Rpass``/``-Rpass-missed``/``-Rpass-analysis`` and MLIR's remark
engine in ember's terms.  A pass reports a decision with one call::

    from ember import remarks

    remarks.applied("fuse-ops", "graph.relu fused into fused_conv2d_add_relu",
                    ops=[relu], group="fused_conv2d_add_relu")
    remarks.missed("fuse-ops", "graph.relu stays outside: ...", ops=[relu],
                   rule="multiple-consumers")

and whoever listens collects the records::

    with remarks.collect() as records:
        module = ember.apply_passes(module, "fuse-ops")
    for record in records:
        print(record.format())

Nobody listening costs one context-variable lookup per call: the record is
not built.  A remark's locations are those of the ops it concerns —
``FileLineColLoc`` set by :func:`ember.parse` on every op it reads, kept by
cloning, merged into a ``FusedLoc`` when ops become one fused function or
kernel — so a remark about a kernel points at the graph ops it came from.

Records serialise to JSON (:meth:`Remark.to_json`, :data:`REMARK_SCHEMA`);
``ember-opt --remarks-file=out.json`` writes ``{"version": 1, "remarks":
[...]}``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation

__all__ = [
    "KINDS",
    "REMARK_SCHEMA",
    "Remark",
    "RemarkFilter",
    "SourceLocation",
    "analysis",
    "applied",
    "collect",
    "enabled",
    "fused_location",
    "inherit_location",
    "locations_of",
    "missed",
    "write_records",
]

Kind = Literal["applied", "missed", "analysis"]
KINDS: tuple[Kind, ...] = ("applied", "missed", "analysis")

FORMAT_VERSION = 1


@dataclass(frozen=True)
class SourceLocation:
    """Where an op was written: ``file:line:col`` (1-based line and column)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Remark:
    """One decision of one pass about some ops."""

    kind: Kind
    pass_name: str
    message: str
    ops: tuple[str, ...] = ()
    """The names of the ops concerned (``graph.relu``), in the order given."""
    locations: tuple[SourceLocation, ...] = ()
    """Their source locations, first op first (none for ops built in Python)."""
    function: str | None = None
    """The function holding the first op, when it is in one."""
    args: dict[str, Any] = field(default_factory=dict)
    """Key/values for tools: a group's name, a rule, tile sizes, a cost."""

    def format(self) -> str:
        """``file:line:col: remark: [pass] message`` (LLVM's form); a missed
        or analysis remark says so after the pass name."""
        where = f"{self.locations[0]}: " if self.locations else ""
        kind = "" if self.kind == "applied" else f" {self.kind}:"
        return f"{where}remark: [{self.pass_name}]{kind} {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The record as :data:`REMARK_SCHEMA` describes it."""
        return {
            "kind": self.kind,
            "pass": self.pass_name,
            "message": self.message,
            "ops": list(self.ops),
            "locations": [
                {"file": loc.file, "line": loc.line, "column": loc.column}
                for loc in self.locations
            ],
            "function": self.function,
            "args": {key: _jsonable(value) for key, value in self.args.items()},
        }


REMARK_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "ember optimization remarks",
    "type": "object",
    "required": ["version", "remarks"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": FORMAT_VERSION},
        "remarks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kind", "pass", "message", "ops", "locations", "function", "args"],
                "additionalProperties": False,
                "properties": {
                    "kind": {"enum": list(KINDS)},
                    "pass": {"type": "string", "minLength": 1},
                    "message": {"type": "string", "minLength": 1},
                    "ops": {"type": "array", "items": {"type": "string"}},
                    "locations": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["file", "line", "column"],
                            "additionalProperties": False,
                            "properties": {
                                "file": {"type": "string"},
                                "line": {"type": "integer", "minimum": 1},
                                "column": {"type": "integer", "minimum": 1},
                            },
                        },
                    },
                    "function": {"type": ["string", "null"]},
                    "args": {"type": "object"},
                },
            },
        },
    },
}
"""JSON Schema of a remarks file (``--remarks-file``), documented in docs/passes.md."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


# --------------------------------------------------------------------------
# Emitting
# --------------------------------------------------------------------------

class _Records(list):  # type: ignore[type-arg]
    """The remarks of one ``collect`` block, each decision once (a greedy
    rewriter may look at the same op several times)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[Any, ...]] = set()

    def add(self, remark: Remark, identity: tuple[int, ...] = ()) -> None:
        key = (remark.kind, remark.pass_name, remark.message, remark.locations, identity)
        if key not in self.seen:
            self.seen.add(key)
            self.append(remark)


_SINK: ContextVar[_Records | None] = ContextVar("ember_remarks", default=None)


def enabled() -> bool:
    """Whether anyone collects remarks now (guard costly messages with it)."""
    return _SINK.get() is not None


def _emit(
    kind: Kind, pass_name: str, message: str, ops: Iterable[Operation], args: dict[str, Any]
) -> None:
    sink = _SINK.get()
    if sink is None:
        return
    ops = tuple(ops)
    locations: list[SourceLocation] = []
    for op in ops:
        for loc in locations_of(op.location):
            if loc not in locations:
                locations.append(loc)
    sink.add(
        Remark(
            kind,
            pass_name,
            message,
            tuple(op.name for op in ops),
            tuple(locations),
            _function_of(ops[0]) if ops else None,
            args,
        ),
        tuple(id(op) for op in ops),
    )


def applied(
    pass_name: str, message: str, ops: Iterable[Operation] = (), /, **args: Any
) -> None:
    """Report a transformation ``pass_name`` made."""
    _emit("applied", pass_name, message, ops, args)


def missed(
    pass_name: str, message: str, ops: Iterable[Operation] = (), /, **args: Any
) -> None:
    """Report a transformation ``pass_name`` did not make, and why."""
    _emit("missed", pass_name, message, ops, args)


def analysis(
    pass_name: str, message: str, ops: Iterable[Operation] = (), /, **args: Any
) -> None:
    """Report a fact ``pass_name`` based a decision on (a cost, a schedule)."""
    _emit("analysis", pass_name, message, ops, args)


@contextlib.contextmanager
def collect() -> Iterator[list[Remark]]:
    """Collect the remarks emitted inside the ``with`` block (nested blocks
    collect their own; the outer one sees them too)."""
    outer = _SINK.get()
    records = _Records()
    token = _SINK.set(records)
    try:
        yield records
    finally:
        _SINK.reset(token)
        if outer is not None:
            outer.extend(records)


# --------------------------------------------------------------------------
# Locations
# --------------------------------------------------------------------------


def locations_of(location: Attribute) -> list[SourceLocation]:
    """The file positions inside an op's location attribute, in order."""
    if isinstance(location, FileLineColLoc):
        return [
            SourceLocation(
                location.filename.data,
                location.line.data,
                location.column.data,
            )
        ]
    if isinstance(location, FusedLoc):
        return [loc for inner in location.locations for loc in locations_of(inner)]
    if isinstance(location, NameLoc):
        return locations_of(location.location)
    if isinstance(location, CallSiteLoc):
        return locations_of(location.callee)
    return []


def file_location(file: str, line: int, column: int) -> FileLineColLoc:
    """xDSL's ``loc("file":line:col)`` attribute."""
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(column))


def fused_location(ops: Sequence[Operation]) -> Attribute:
    """One location for ops that became one (a fused function, a kernel):
    MLIR's ``FusedLoc`` of their file positions, or the single one."""
    parts: list[Attribute] = []
    seen: set[SourceLocation] = set()
    for op in ops:
        for loc in locations_of(op.location):
            if loc not in seen:
                seen.add(loc)
                parts.append(file_location(loc.file, loc.line, loc.column))
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return ops[0].location if ops else UnknownLoc()
    return FusedLoc(parts, NoneAttr())


def inherit_location(source: Operation, ops: Iterable[Operation]) -> None:
    """Give ``ops`` (built by a rewrite of ``source``) ``source``'s location,
    where they have none of their own: what a pass makes from an op is
    reported at that op's place."""
    for op in ops:
        if isinstance(op.location, UnknownLoc):
            op.location = source.location


def _function_of(op: Operation) -> str | None:
    from xdsl.dialects.func import FuncOp

    parent = op.parent_op()
    while parent is not None and not isinstance(parent, FuncOp):
        parent = parent.parent_op()
    return parent.sym_name.data if isinstance(parent, FuncOp) else None


# --------------------------------------------------------------------------
# Filtering and writing (the tools' --remarks* flags)
# --------------------------------------------------------------------------


@dataclass
class RemarkFilter:
    """Which remarks to print: a pass-name regex per kind (None: none).

    ``--remarks=fuse|split`` sets ``applied``; ``--remarks-missed=.*`` sets
    ``missed``; ``--remarks-analysis=…`` sets ``analysis``.  A regex matches
    when it matches the whole pass name (LLVM's ``-Rpass`` matches anywhere;
    ``.*`` or a bare name both work here).
    """

    applied: re.Pattern[str] | None = None
    missed: re.Pattern[str] | None = None
    analysis: re.Pattern[str] | None = None

    @classmethod
    def from_strings(
        cls, applied: str | None, missed: str | None, analysis: str | None
    ) -> RemarkFilter:
        from ember.errors import EmberError

        def compile_(flag: str, text: str | None) -> re.Pattern[str] | None:
            if text is None:
                return None
            try:
                return re.compile(text)
            except re.error as error:
                raise EmberError(f"{flag}: invalid regular expression {text!r}: {error}") from None

        return cls(
            compile_("--remarks", applied),
            compile_("--remarks-missed", missed),
            compile_("--remarks-analysis", analysis),
        )

    @property
    def active(self) -> bool:
        return any(p is not None for p in (self.applied, self.missed, self.analysis))

    def selects(self, remark: Remark) -> bool:
        pattern = getattr(self, remark.kind)
        return pattern is not None and pattern.search(remark.pass_name) is not None


def records_document(records: Sequence[Remark]) -> dict[str, Any]:
    """The JSON document of ``records`` (:data:`REMARK_SCHEMA`)."""
    return {"version": FORMAT_VERSION, "remarks": [r.to_json() for r in records]}


def write_records(records: Sequence[Remark], path: str) -> None:
    """Save ``records`` to ``path``: JSON, or YAML when the name ends in
    ``.yaml``/``.yml`` (one document, the same fields; needs PyYAML)."""
    from ember.errors import EmberError

    document = records_document(records)
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise EmberError(
                f"--remarks-file={path}: YAML output needs PyYAML (pip install pyyaml); "
                "use a .json name instead"
            ) from None
        text = yaml.safe_dump(document, sort_keys=False)
    else:
        text = json.dumps(document, indent=1) + "\n"
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as error:
        raise EmberError(f"--remarks-file: cannot write {path}: {error.strerror}") from None
