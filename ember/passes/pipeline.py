"""Pass pipelines from text: the one place that knows every pass.

``ember-opt -p``, :func:`ember.apply_passes` and ``ember.build`` all read a
pipeline written in xDSL/MLIR's textual form::

    simplify-inference,fold-constants,fuse-ops
    bind-params{file="params.npz" names=w0,b0},canonicalize

and resolve its names against the same registry: xDSL's own passes
(``canonicalize``, ``cse``, ``dce``, … from :func:`xdsl.transforms.
get_all_passes`) merged with ember's (:data:`ember.passes.PASSES`).  Pass
classes are imported only for the names a pipeline uses.

Options are written as ``mlir-opt`` reads them: a value runs to the next
space, ``,`` or ``}``, so ``split-graph{ops=graph.relu,graph.add
indices=0,2}`` needs no quotes (a value in quotes or braces may hold those
characters), and each value is read as the option's declared type, so
``entry=3`` is the string ``"3"`` where the option is a string.  xDSL's
reader (:func:`xdsl.utils.arg_spec.parse_pipeline`) rejects dotted names and
guesses types from the text; ember reads the text itself.

Mistakes are :class:`ember.errors.PassError` naming what is wrong: a
malformed pipeline (with the place marked), an unknown pass (with the
closest name, or ember's passes when none is close), an unknown option or
a value of the wrong type (with the pass's options).  This mirrors
``mlir-opt --pass-pipeline`` and ``PassManager.parse`` in MLIR's Python bindings.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, NoReturn, Union, get_args, get_origin, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import (
    ModulePass,
    PassPipeline,
    PassPipelineCallbackType,
    get_pass_option_infos,
)
from xdsl.utils.arg_spec import ArgSpec, ParameterType
from xdsl.utils.exceptions import DiagnosticException

from ember.errors import EmberError, IRError, PassError
from ember.ir import as_module
from ember.remarks import Remark
from ember.remarks import collect as collect_remarks

__all__ = [
    "PassRegistry",
    "apply_passes",
    "available_passes",
    "build_pipeline",
    "parse_passes",
    "run_passes",
]

PassRegistry = dict[str, Callable[[], type[ModulePass]]]


def available_passes() -> PassRegistry:
    """Every pass a pipeline may name: xDSL's, then ember's.

    A name both define keeps xDSL's pass, as ``xdsl-opt`` with ember's
    entry point does; ember's names are chosen not to collide.
    """
    from xdsl.transforms import get_all_passes

    from ember.passes import PASSES

    passes: PassRegistry = dict(get_all_passes())
    for name, factory in PASSES.items():
        passes.setdefault(name, factory)
    return passes


def _unknown_pass_message(name: str, passes: PassRegistry) -> str:
    from ember.passes import PASSES

    close = difflib.get_close_matches(name, passes, n=1)
    if close:
        return f"unknown pass '{name}'; did you mean '{close[0]}'?"
    ember_names = sorted(n for n in passes if n in PASSES)
    return (
        f"unknown pass '{name}' (ember's passes: {', '.join(ember_names) or 'none'}; "
        "'ember-opt --help' lists them all)"
    )


def _options_of(pass_class: type[ModulePass]) -> str:
    options = [
        f"{o.name.replace('_', '-')}: {o.expected_type}" for o in get_pass_option_infos(pass_class)
    ]
    return ", ".join(options) or "none"


# --------------------------------------------------------------------------
# Pipeline text
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Value:
    """One element of an option's value list, as written."""

    text: str
    quoted: bool


@dataclass(frozen=True)
class _PassText:
    """``name{key=v1,v2 flag}`` before its values are given types."""

    name: str
    options: dict[str, tuple[_Value, ...]]


class _PipelineReader:
    """MLIR's textual pass pipeline (``mlir-opt -p``), read by hand.

    ``pipeline ::= pass (',' pass)*``, ``pass ::= name ('{' option* '}')?``,
    ``option ::= key ('=' value (',' value)*)?``.  A value is a quoted
    string, a balanced ``{…}`` group, or anything up to the next space,
    ``,`` or ``}`` — so dotted op names and file paths need no quotes.
    """

    _NAME = re.compile(r"[A-Za-z0-9_.\-]+")
    _KEY = re.compile(r"[A-Za-z0-9_\-]+")
    _BARE_VALUE = re.compile(r"[^\s,{}\"']+")

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.pos = 0

    def fail(self, message: str) -> NoReturn:
        marker = " " * self.pos + "^"
        raise PassError(
            f"invalid pass pipeline '{self.spec}': {message} at column {self.pos + 1}\n"
            f"  {self.spec}\n  {marker}"
        )

    def skip_space(self) -> None:
        while self.pos < len(self.spec) and self.spec[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.spec[self.pos] if self.pos < len(self.spec) else ""

    def match(self, pattern: re.Pattern[str], what: str) -> str:
        found = pattern.match(self.spec, self.pos)
        if found is None:
            self.fail(f"expected {what}")
        self.pos = found.end()
        return found.group()

    def passes(self) -> list[_PassText]:
        self.skip_space()
        if not self.peek():
            return []
        result = [self.one_pass()]
        while True:
            self.skip_space()
            if not self.peek():
                return result
            if self.peek() != ",":
                self.fail("expected ',' between passes")
            self.pos += 1
            self.skip_space()
            result.append(self.one_pass())

    def one_pass(self) -> _PassText:
        name = self.match(self._NAME, "a pass name")
        self.skip_space()
        options: dict[str, tuple[_Value, ...]] = {}
        if self.peek() != "{":
            return _PassText(name, options)
        self.pos += 1
        while True:
            self.skip_space()
            if self.peek() == "}":
                self.pos += 1
                return _PassText(name, options)
            if not self.peek():
                self.fail(f"missing '}}' after the options of pass '{name}'")
            key = self.match(self._KEY, "an option name or '}'")
            values: tuple[_Value, ...] = ()
            if self.peek() == "=":
                self.pos += 1
                values = self.values()
            if self.peek() not in ("", "}") and not self.peek().isspace():
                self.fail("expected a space or '}' after an option")
            options[key] = values

    def values(self) -> tuple[_Value, ...]:
        values = [self.value()]
        while self.peek() == ",":
            self.pos += 1
            values.append(self.value())
        return tuple(values)

    def value(self) -> _Value:
        quote = self.peek()
        if quote in ("'", '"'):
            end = self.spec.find(quote, self.pos + 1)
            if end < 0:
                self.fail(f"unterminated {quote}-quoted value")
            text = self.spec[self.pos + 1 : end]
            self.pos = end + 1
            return _Value(text, quoted=True)
        if quote == "{":
            depth, start = 0, self.pos
            while self.pos < len(self.spec):
                depth += {"{": 1, "}": -1}.get(self.spec[self.pos], 0)
                self.pos += 1
                if depth == 0:
                    return _Value(self.spec[start + 1 : self.pos - 1], quoted=True)
            self.pos = start
            self.fail("unbalanced '{' in a value")
        return _Value(self.match(self._BARE_VALUE, "a value"), quoted=False)


def _scalar_types(hint: Any) -> tuple[type, ...]:
    """The scalar types an option's annotation allows
    (``tuple[int, ...] | None``: int)."""
    if hint in (bool, int, float, str):
        return (hint,)
    if get_origin(hint) in (Union, UnionType, tuple):
        return tuple(t for arg in get_args(hint) for t in _scalar_types(arg))
    return ()


_INT = re.compile(r"[-+]?[0-9]+")


def _typed(value: _Value, allowed: tuple[type, ...]) -> ParameterType:
    """``value`` as the first of the option's types that can read it.

    Unreadable text becomes what xDSL's own reader would make of it, so that
    xDSL reports the mismatch with the option's type.
    """
    text = value.text
    if value.quoted:
        return text
    if bool in allowed and text in ("true", "false"):
        return text == "true"
    if int in allowed and _INT.fullmatch(text):
        return int(text)
    if float in allowed:
        try:
            return float(text)
        except ValueError:
            pass
    if str in allowed:
        return text
    if _INT.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return {"true": True, "false": False}.get(text, text)


def _instantiate(text: _PassText, passes: PassRegistry) -> ModulePass:
    pass_class = passes[text.name]()
    try:
        hints = get_type_hints(pass_class)
        parameters: dict[str, tuple[ParameterType, ...]] = {}
        for key, values in text.options.items():
            allowed = _scalar_types(hints.get(key.replace("-", "_")))
            parameters[key] = tuple(_typed(v, allowed) for v in values)
        return pass_class.from_pass_spec(ArgSpec(text.name, parameters))
    except (ValueError, TypeError) as error:
        raise PassError(
            f"invalid options for pass '{text.name}': {error} "
            f"(options: {_options_of(pass_class)})"
        ) from None


def parse_passes(spec: str, passes: PassRegistry | None = None) -> tuple[ModulePass, ...]:
    """The passes of pipeline text ``spec``, configured, in order.

    ``passes`` defaults to :func:`available_passes`.  Every name is checked
    before any pass class is imported.
    """
    if not isinstance(spec, str):
        raise PassError(f"a pass pipeline is text such as 'cse,dce', got {type(spec).__name__}")
    registry = available_passes() if passes is None else passes
    texts = _PipelineReader(spec).passes()
    for text in texts:
        if text.name not in registry:
            raise PassError(_unknown_pass_message(text.name, registry))
    return tuple(_instantiate(t, registry) for t in texts)


def build_pipeline(
    spec: str,
    callback: PassPipelineCallbackType | None = None,
    passes: PassRegistry | None = None,
) -> PassPipeline:
    """An xDSL :class:`PassPipeline` for ``spec`` (what ``ember-opt -p`` runs)."""
    return PassPipeline(parse_passes(spec, passes), callback)


def _pass_list(pipeline: str | ModulePass | Sequence[ModulePass]) -> tuple[ModulePass, ...]:
    if isinstance(pipeline, str):
        return parse_passes(pipeline)
    items = (pipeline,) if isinstance(pipeline, ModulePass) else tuple(pipeline)
    for item in items:
        if not isinstance(item, ModulePass):
            raise PassError(
                f"apply_passes: expected pipeline text or ModulePass instances, got {item!r}"
            )
    return items


def _run_pass(pass_: ModulePass, ctx: Context, module: ModuleOp, verify: bool) -> None:
    from ember.ir import verify_module

    try:
        pass_.apply(ctx, module)
    except EmberError:
        raise
    except DiagnosticException as error:
        # xDSL passes report failures this way (emit_error, PassFailedException).
        raise PassError(f"pass '{pass_.name}' failed: {error}") from None
    if verify:
        try:
            verify_module(module)
        except IRError as error:
            raise PassError(f"IR after pass '{pass_.name}' does not verify: {error}") from None


def apply_passes(
    module: ModuleOp | str,
    pipeline: str | ModulePass | Sequence[ModulePass],
    *,
    verify: bool = True,
    remarks: bool = False,
) -> ModuleOp | tuple[ModuleOp, list[Remark]]:
    """Run ``pipeline`` on a copy of ``module`` and return the copy.

    With ``remarks=True`` the result is ``(module, records)``: the
    optimization remarks (:class:`ember.remarks.Remark`) the passes made.

    ``pipeline`` is text as for ``ember-opt -p`` (``"simplify-inference,
    fold-constants"``) or pass instances.  ``module`` (a ``ModuleOp`` or IR
    text) is verified first and never modified.  With ``verify`` the IR is
    verified after every pass, so a broken pass is named at once.

    Raises :class:`PassError` for a bad pipeline, a pass that fails, or IR
    that no longer verifies; :class:`ember.errors.IRError` for invalid input.
    """
    passes = _pass_list(pipeline)
    result = as_module(module, "apply_passes", PassError).clone()
    if not remarks:
        run_passes(result, passes, verify=verify)
        return result
    with collect_remarks() as records:
        run_passes(result, passes, verify=verify)
    return result, list(records)


def run_passes(
    module: ModuleOp,
    pipeline: str | ModulePass | Sequence[ModulePass],
    *,
    verify: bool = True,
) -> None:
    """Run ``pipeline`` on ``module`` itself, in place (the compiler driver's
    form of :func:`apply_passes`, which works on a copy)."""
    from ember.context import make_context

    ctx = make_context()
    for pass_ in _pass_list(pipeline):
        _run_pass(pass_, ctx, module, verify)
