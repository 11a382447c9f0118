"""Measured seconds per graph op, from a profile: what balances pipeline stages.

``split-graph{balance=N costs=FILE}`` cuts a function into stages of
near-equal *measured* time when FILE gives each graph op's seconds, keyed
``(op name, occurrence)`` as cuts count ops
(:func:`ember.passes.split_graph.load_op_costs`).  :func:`op_costs` makes
those figures from a :class:`~ember.runtime.profiler.Profile` of the
function's build, and :func:`save_op_costs` writes the file
(``ember-run --profile N --costs-out FILE`` does both)::

    profile = GraphExecutor(ember.build(net, "llvm", params=params)).profile(20)
    save_op_costs("costs.json", op_costs(profile, net, params=params))
    split = ember.apply_passes(net, "split-graph{balance=2 costs=costs.json}")

A profile times kernels, and a kernel computes several graph ops after
fusion.  Which ones, the compiler says: the function is lowered again to
the ``kernel`` stage (:mod:`ember.driver`) with a location naming each op's
position in the function, and every kernel call carries the locations of
the ops it replaced (``fuse-ops``, ``lower-graph-to-kernel``).  A kernel's
time is split over its ops by their share of its estimated cost
(:mod:`ember.passes.cost`); ops that became no kernel (folded, aliased)
have no entry, which split-graph weighs as nothing.  This is TVM's
``relay.analysis`` cost annotation for its pipeline split, measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.traits import SymbolTable

from ember.errors import RuntimeFailure
from ember.passes.cost import op_cost
from ember.passes.split_graph import OpCosts, load_op_costs, op_keys, save_op_costs
from ember.runtime.profiler import Profile

__all__ = ["load_op_costs", "op_costs", "save_op_costs"]

_POSITION_FILE = "<ember.pipeline.costs: op position>"
"""The file of the locations that name each op's position (:func:`_kernel_ops`)."""

OpKey = tuple[str, int]


def op_costs(
    profile: Profile,
    module: ModuleOp,
    *,
    entry: str = "main",
    params: Mapping[str, Any] | None = None,
    target: str = "llvm",
    options: Mapping[str, Any] | None = None,
) -> OpCosts:
    """Measured seconds per graph op of ``@entry`` of ``module``, keyed
    ``(op name, occurrence)`` as ``split-graph`` counts ops.

    ``profile`` is of the library ``ember.build(module, target, params,
    entry=entry, options=options)`` made: the function is lowered again
    with those to find which ops each kernel call computes, and a profile
    of another build (other kernel calls) is a :class:`RuntimeFailure`.
    Profile with the kernel threads a stage will have (``limit_threads``).
    """
    calls = _kernel_ops(module, entry, params, target, options)
    names = [name for name, _ in calls]
    profiled = [row.name for row in profile.rows]
    if names != profiled:
        first = next(
            (i for i, (a, b) in enumerate(zip(names, profiled)) if a != b),
            min(len(names), len(profiled)),
        )
        raise RuntimeFailure(
            f"op costs: @{entry} of the module given lowers to {len(names)} kernel calls "
            f"but the profile has {len(profiled)} (call #{first}: "
            f"{names[first] if first < len(names) else 'none'} against "
            f"{profiled[first] if first < len(profiled) else 'none'}); give the module, "
            "params, target and options the profiled library was built with"
        )
    costs: dict[OpKey, float] = {}
    for row, (_, ops) in zip(profile.rows, calls):
        weights = [_static_weight(op) for _, op in ops]
        total = sum(weights)
        for (key, _), weight in zip(ops, weights):
            share = weight / total if total else 1 / len(ops)
            costs[key] = costs.get(key, 0.0) + row.median_ms / 1e3 * share
    return costs


def _static_weight(op: Operation) -> float:
    cost = op_cost(op)
    return cost.flops + cost.bytes / 1e6  # bytes weigh only ops without FLOPs


def _kernel_ops(
    module: ModuleOp,
    entry: str,
    params: Mapping[str, Any] | None,
    target: str,
    options: Mapping[str, Any] | None,
) -> list[tuple[str, list[tuple[OpKey, Operation]]]]:
    """Each kernel call ``ember.build`` makes of ``@entry``, in program order:
    its name and the ops of ``@entry`` it computes, with their keys."""
    from ember import driver
    from ember.build import _compile_options
    from ember.dialects.graph import CallExternOp, CallKernelOp
    from ember.remarks import locations_of
    from ember.target import Target

    parsed = Target.parse(target)
    if parsed.kind != "llvm" or parsed.libs:
        raise RuntimeFailure(
            f"op costs: only a profile of target 'llvm' can be mapped to graph ops, not {target!r}"
        )
    function = SymbolTable.lookup_symbol(module, entry)
    if not isinstance(function, FuncOp) or function.is_declaration:
        raise RuntimeFailure(f"op costs: the module has no function @{entry} with a body")
    body = list(function.body.block.ops)[:-1]  # the func.return costs nothing
    keys = op_keys(body)
    tagged = module.clone()
    tagged_function = SymbolTable.lookup_symbol(tagged, entry)
    assert isinstance(tagged_function, FuncOp)  # a clone of the function above
    for position, op in enumerate(tagged_function.body.block.ops):
        op.location = FileLineColLoc(StringAttr(_POSITION_FILE), IntAttr(position + 1), IntAttr(1))
    compile_options = _compile_options(options)
    compile_options = replace(compile_options.for_target(parsed), entry=entry)
    arrays = {name: np.asarray(value) for name, value in (params or {}).items()}
    lowered = driver.lower(tagged, "kernel", arrays, compile_options, annotate=True, copy=False)
    program = SymbolTable.lookup_symbol(lowered, entry)
    assert isinstance(program, FuncOp)  # the kernel stage keeps the entry
    calls = []
    for op in program.body.block.ops:
        if not isinstance(op, CallKernelOp | CallExternOp):
            continue
        name = op.callee if isinstance(op, CallKernelOp) else op.function
        positions = sorted(
            {
                loc.line - 1
                for loc in locations_of(op.location)
                if loc.file == _POSITION_FILE and 0 <= loc.line - 1 < len(body)
            }
        )
        if not positions:
            raise RuntimeFailure(
                f"op costs: kernel call #{len(calls)} ({name}) of @{entry} computes no op "
                "the compiler kept a location for; its time cannot be given to an op"
            )
        calls.append((name, [(keys[p], body[p]) for p in positions]))
    return calls
