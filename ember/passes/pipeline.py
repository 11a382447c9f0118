"""Pass pipelines from text: the one place that knows every pass.

``ember-opt -p``, :func:`ember.apply_passes` and ``ember.build`` all read a
pipeline written in xDSL/MLIR's textual form::

    simplify-inference,fold-constants,fuse-ops
    bind-params{file="params.npz" names=w0,b0},canonicalize

and resolve its names against the same registry: xDSL's own passes
(``canonicalize``, ``cse``, ``dce``, … from :func:`xdsl.transforms.
get_all_passes`) merged with ember's (:data:`ember.passes.PASSES`).  Pass
classes are imported only for the names a pipeline uses.

Mistakes are :class:`ember.errors.PassError` naming what is wrong: a
malformed pipeline (with the place marked), an unknown pass (with close
matches and the known passes), an unknown option or a value of the wrong type
(with the pass's options).  This mirrors ``mlir-opt --pass-pipeline`` and
``PassManager.parse`` in MLIR's Python bindings.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import (
    ModulePass,
    PassPipeline,
    PassPipelineCallbackType,
    get_pass_option_infos,
)
from xdsl.utils.arg_spec import ArgSpec, ArgSpecParseError, parse_pipeline
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

    close = difflib.get_close_matches(name, passes, n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    ember_names = sorted(n for n in passes if n in PASSES)
    other_names = sorted(n for n in passes if n not in PASSES)
    return (
        f"unknown pass '{name}'{hint}\n"
        f"  ember passes: {', '.join(ember_names) or 'none'}\n"
        f"  xDSL passes: {', '.join(other_names) or 'none'}"
    )


def _options_of(pass_class: type[ModulePass]) -> str:
    options = [
        f"{o.name.replace('_', '-')}: {o.expected_type}" for o in get_pass_option_infos(pass_class)
    ]
    return ", ".join(options) or "none"


def _instantiate(spec: ArgSpec, passes: PassRegistry) -> ModulePass:
    pass_class = passes[spec.name]()
    try:
        return pass_class.from_pass_spec(spec)
    except (ValueError, TypeError) as error:
        raise PassError(
            f"invalid options for pass '{spec.name}': {error} "
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
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as error:
        raise PassError(f"invalid pass pipeline '{spec}': {error}") from None
    for pass_spec in specs:
        if pass_spec.name not in registry:
            raise PassError(_unknown_pass_message(pass_spec.name, registry))
    return tuple(_instantiate(s, registry) for s in specs)


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
    from ember.context import make_context

    passes = _pass_list(pipeline)
    result = as_module(module, "apply_passes", PassError).clone()
    ctx = make_context()
    if not remarks:
        for pass_ in passes:
            _run_pass(pass_, ctx, result, verify)
        return result
    with collect_remarks() as records:
        for pass_ in passes:
            _run_pass(pass_, ctx, result, verify)
    return result, list(records)
