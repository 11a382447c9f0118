"""``split-graph``: cut a function into consecutive subgraphs and a pipeline.

The seeds' ``graph_split(net["main"], [{"op_name": "nn.relu", "op_index":
0}], params)`` (TVM's ``tests/python/relay/test_pipeline_executor.py``) as a
pass.  ``split-graph{ops=relu indices=0}`` splits ``@main`` after its first
``graph.relu``: the ops up to and including it become ``@main_0``, the rest
``@main_1``, and ``@main`` itself becomes the ``pipeline.graph @main`` that
connects them (see ``ember.dialects.pipeline``).

The split specification
-----------------------
``ops`` and ``indices`` describe the cuts.  Cut ``k`` is made right after the
``indices[k]``-th (0-based) occurrence of op ``ops[k]`` among the ops directly
in the function body, counting occurrences of each op name separately.  When
``ops`` names one op, it applies to every index (``ops=relu indices=0,2`` cuts
after the first and the third relu); otherwise ``ops`` and ``indices`` must
have the same length.  Cuts may be listed in any order; the stages follow
program order.  An op name without a dialect prefix means the ``graph`` op
(``relu`` is ``graph.relu``); dotted names need no quotes, as in
``mlir-opt`` (``ops=graph.relu,graph.add``).  ``N`` cuts give ``N + 1``
stages.

These are errors, reported before anything changes: no cut, a length
mismatch, an op the function does not contain, an index out of range, two
cuts at the same op, a cut after the function's last op (the last stage
would be empty), and a function that does not exist or has no body.

What crosses a cut
------------------
Every value a stage uses but does not define becomes an input of that stage:
a function argument (with its name kept) or an output of the earlier stage
that defines it (named ``data_n``; the printer numbers repeats within a stage,
``%data_n``, ``%data_n_1``, …, and ``data_n_0`` addresses the first in
:class:`~ember.pipeline.PipelineConfig`, as TVM's ``data_n_0`` did).  A
stage's outputs are the values it defines that a later stage or the function
result uses, in program order; each is connected directly to every stage
that uses it, so a value produced in stage 0 and used in stage 2 does not
pass through stage 1.  A function argument returned as a result goes through
the last stage (a pipeline's global input may feed only stage inputs).
Running the stages one after another therefore computes exactly what the
function did.  Each stage is placed on ``target``/``device`` (``llvm`` on
``cpu:0`` by default); ``ember.pipeline.PipelineConfig`` re-places them.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from ember import remarks
from ember.passes.cost import op_cost, total_cost
from ember.dialects.graph import ConstantOp
from ember.dialects.pipeline import GraphOp, StageOp, YieldOp, check_placement
from ember.errors import PassError

__all__ = [
    "SplitGraphPass",
    "SplitPlan",
    "balanced_cuts",
    "load_op_costs",
    "op_keys",
    "plan_split",
    "save_op_costs",
    "split_graph",
    "stage_functions",
]

# Name of stage inputs that carry values of earlier stages (TVM: data_n_<k>).
_CROSSING_PREFIX = "data_n"


# --------------------------------------------------------------------------
# The split specification
# --------------------------------------------------------------------------


def _full_op_name(name: str) -> str:
    return name if "." in name else f"graph.{name}"


def _spec_text(ops: Sequence[str], indices: Sequence[int]) -> str:
    return f"split-graph{{ops={','.join(ops)} indices={','.join(map(str, indices))}}}"


def _normalized_cuts(
    ops: Sequence[str], indices: Sequence[int], spec: str
) -> list[tuple[str, int]]:
    """``(op name, occurrence)`` per cut, after the one-op-for-all-indices rule."""
    if not ops or not indices:
        raise PassError(f"{spec}: give at least one op name and one index to cut after")
    names = [_full_op_name(name) for name in ops]
    if len(names) == 1:
        names = names * len(indices)
    if len(names) != len(indices):
        raise PassError(
            f"{spec}: ops has {len(ops)} names but indices has {len(indices)} values; "
            f"give one index per op, or one op for all indices"
        )
    for index in indices:
        if index < 0:
            raise PassError(f"{spec}: indices must be 0 or more, got {index}")
    return list(zip(names, indices))


# --------------------------------------------------------------------------
# Planning: where to cut and what crosses each cut (no IR is changed)
# --------------------------------------------------------------------------


@dataclass
class SplitPlan:
    """The stages of a split: the ops of each and the values crossing cuts.

    ``stages[s]`` are the ops of stage ``s`` in program order;
    ``inputs[s]`` and ``outputs[s]`` the values (of the original function)
    it receives and produces; ``returned`` the function's result values;
    ``constants[s]`` the ``graph.constant`` ops of other stages that stage
    ``s`` uses: each stage gets its own copy (bound weights stay with the
    stage that reads them instead of flowing through the queues).
    """

    func: FuncOp
    stages: list[list[Operation]]
    inputs: list[list[SSAValue]] = field(default_factory=list)
    outputs: list[list[SSAValue]] = field(default_factory=list)
    returned: list[SSAValue] = field(default_factory=list)
    constants: list[list[Operation]] = field(default_factory=list)


def _function(module: ModuleOp, entry: str, spec: str) -> FuncOp:
    found = SymbolTable.lookup_symbol(module, entry)
    if found is None:
        raise PassError(f"{spec}: no function @{entry} in the module")
    if not isinstance(found, FuncOp):
        raise PassError(f"{spec}: @{entry} is a {found.name}, not a func.func")
    if found.is_declaration:
        raise PassError(f"{spec}: @{entry} is a declaration without a body")
    if len(found.body.blocks) != 1:
        raise PassError(
            f"{spec}: @{entry} has several blocks; only straight-line bodies split"
        )
    return found


def _cut_positions(
    body: list[Operation], cuts: list[tuple[str, int]], entry: str, spec: str
) -> list[int]:
    """The body position after which each cut is made, in program order."""
    positions: dict[int, tuple[str, int]] = {}
    for name, index in cuts:
        found = [i for i, op in enumerate(body) if op.name == name]
        if not found:
            present = ", ".join(sorted({op.name for op in body})) or "none"
            raise PassError(f"{spec}: @{entry} has no {name} op (its ops: {present})")
        if index >= len(found):
            raise PassError(
                f"{spec}: index {index} of {name} is out of range: @{entry} has "
                f"{len(found)} {name} op{'s' if len(found) > 1 else ''} "
                f"(indices 0..{len(found) - 1})"
            )
        position = found[index]
        if position in positions:
            raise PassError(
                f"{spec}: {name} #{index} is cut twice, which would leave an empty stage"
            )
        if position == len(body) - 1:
            raise PassError(
                f"{spec}: {name} #{index} is the last op of @{entry}; a cut after it "
                f"would leave the last stage empty"
            )
        positions[position] = (name, index)
    return sorted(positions)


def _used_values(op: Operation) -> list[SSAValue]:
    """Values ``op`` (or an op nested in it) uses that are defined outside ``op``."""
    used: list[SSAValue] = []
    for inner in op.walk():
        for value in inner.operands:
            if not _defined_inside(value, op) and value not in used:
                used.append(value)
    return used


def _defined_inside(value: SSAValue, op: Operation) -> bool:
    owner = value.owner
    defining = owner.parent_op() if isinstance(owner, Block) else owner
    while defining is not None:
        if defining is op:
            return True
        defining = defining.parent_op()
    return False


def plan_split(
    module: ModuleOp,
    ops: Sequence[str],
    indices: Sequence[int],
    entry: str = "main",
) -> SplitPlan:
    """Check the specification and work out the stages; changes nothing."""
    spec = _spec_text(ops, indices)
    func = _function(module, entry, spec)
    cuts = _normalized_cuts(ops, indices, spec)
    *body, terminator = list(func.body.block.ops)
    if not isinstance(terminator, ReturnOp):
        raise PassError(f"{spec}: @{entry} does not end with func.return")
    bounds = [0, *(p + 1 for p in _cut_positions(body, cuts, entry, spec)), len(body)]
    plan = SplitPlan(func, [body[a:b] for a, b in pairwise(bounds)])
    _plan_connections(plan, terminator)
    return plan


def _plan_connections(plan: SplitPlan, terminator: ReturnOp) -> None:
    """Fill ``inputs``/``outputs``: every value used across a stage boundary."""
    stage_of: dict[SSAValue, int] = {}
    for s, stage in enumerate(plan.stages):
        for op in stage:
            stage_of.update((result, s) for result in op.results)
    used_by: list[list[SSAValue]] = [
        [v for op in stage for v in _used_values(op)] for stage in plan.stages
    ]
    last = len(plan.stages) - 1
    plan.returned = list(terminator.operands)
    # A returned argument is routed through the last stage.
    used_by[last] += [v for v in plan.returned if isinstance(v, BlockArgument)]
    crossing: set[SSAValue] = {v for v in plan.returned if v in stage_of}
    for s, used in enumerate(used_by):
        received = {v for v in used if stage_of.get(v) != s}
        copied = {v for v in received if isinstance(v.owner, ConstantOp)}
        plan.constants.append([v.owner for v in _in_program_order(plan, copied)])
        received -= copied
        crossing |= {v for v in received if v in stage_of}
        plan.inputs.append(_in_program_order(plan, received))
    for s in range(len(plan.stages)):
        defined = {v for v in crossing if stage_of[v] == s}
        plan.outputs.append(_in_program_order(plan, defined))
    for v in plan.returned:
        if isinstance(v, BlockArgument) and v not in plan.outputs[last]:
            plan.outputs[last].append(v)


def _in_program_order(plan: SplitPlan, values: set[SSAValue]) -> list[SSAValue]:
    """Op results in program order (the data flowing down the pipeline, as in
    TVM's subgraphs), then function arguments in argument order."""
    ordered: list[SSAValue] = []
    for stage in plan.stages:
        for op in stage:
            ordered += [r for r in op.results if r in values]
    return ordered + [a for a in plan.func.args if a in values]


# --------------------------------------------------------------------------
# Building the stage functions and the pipeline
# --------------------------------------------------------------------------


def _crossing_names(plan: SplitPlan) -> dict[SSAValue, str]:
    """``data_n`` for each op result that crosses a cut (TVM's ``data_n_<k>``).

    xDSL prints repeated names with a suffix (``%data_n``, ``%data_n_1``, …),
    and :class:`ember.pipeline.PipelineConfig` accepts ``data_n_0`` for the
    unsuffixed first one, so the seeds' ``cfg[mod1]["input"]["data_n_0"]``
    works as written.
    """
    names: dict[SSAValue, str] = {}
    for outputs in plan.outputs:
        for value in outputs:
            if not isinstance(value, BlockArgument):
                names[value] = _CROSSING_PREFIX
    return names


def _stage_function(
    plan: SplitPlan, s: int, name: str, crossing_names: dict[SSAValue, str]
) -> FuncOp:
    inputs, outputs = plan.inputs[s], plan.outputs[s]
    block = Block(arg_types=[v.type for v in inputs])
    mapper: dict[SSAValue, SSAValue] = {}
    for original, arg in zip(inputs, block.args):
        arg.name_hint = crossing_names.get(original, original.name_hint)
        mapper[original] = arg
    used_here = {v for op in plan.stages[s] for v in _used_values(op)} | set(outputs)
    for op in plan.constants[s]:
        block.add_op(op.clone(value_mapper=mapper))
    for op in plan.stages[s]:
        if isinstance(op, ConstantOp) and op.results[0] not in used_here:
            continue  # only later stages read it; they have their own copy
        block.add_op(op.clone(value_mapper=mapper))
    block.add_op(ReturnOp(*(mapper[v] for v in outputs)))
    types: tuple[list[Attribute], list[Attribute]] = (
        [v.type for v in inputs],
        [v.type for v in outputs],
    )
    return FuncOp(name, types, Region(block))


def _pipeline_graph(
    plan: SplitPlan,
    names: list[str],
    crossing_names: dict[SSAValue, str],
    target: str,
    device: str,
) -> GraphOp:
    func = plan.func
    graph = GraphOp(
        func.sym_name.data,
        func.function_type.inputs.data,
        func.function_type.outputs.data,
        arg_names=[a.name_hint for a in func.args],
    )
    connected: dict[SSAValue, SSAValue] = dict(zip(func.args, graph.args))
    for s, name in enumerate(names):
        stage = StageOp(
            name,
            [connected[v] for v in plan.inputs[s]],
            [v.type for v in plan.outputs[s]],
            target=target,
            device=device,
        )
        for original, result in zip(plan.outputs[s], stage.results):
            result.name_hint = crossing_names.get(original, original.name_hint)
        graph.body.block.add_op(stage)
        # A returned argument's last-stage output replaces the argument.
        connected.update(zip(plan.outputs[s], stage.results))
    graph.body.block.add_op(YieldOp(*(connected[v] for v in plan.returned)))
    return graph


def _stage_names(module: ModuleOp, plan: SplitPlan, spec: str) -> list[str]:
    entry = plan.func.sym_name.data
    names = [f"{entry}_{s}" for s in range(len(plan.stages))]
    for name in names:
        if SymbolTable.lookup_symbol(module, name) is not None:
            raise PassError(
                f"{spec}: the module already has a symbol @{name}, the name of a "
                f"stage function to create"
            )
    return names


def _report_split(
    plan: SplitPlan, names: Sequence[str], measured: OpCosts | None
) -> None:
    """Remarks: each cut (at the op it follows) and each stage's estimated
    cost, and its measured time when ``measured`` gives one."""
    costs = [total_cost(ops) for ops in plan.stages]
    total = sum(c.flops for c in costs) or 1
    times: list[float] = []
    if measured is not None:
        body = [op for ops in plan.stages for op in ops]
        key_of = dict(zip(body, op_keys(body)))
        times = [sum(measured.get(key_of[op], 0.0) for op in ops) for ops in plan.stages]
    for s, (ops, name) in enumerate(zip(plan.stages, names)):
        if s + 1 < len(plan.stages):
            last = ops[-1]
            earlier = {op for stage in plan.stages[: s + 1] for op in stage}
            crossing = sum(
                1
                for stage_inputs in plan.inputs[s + 1 :]
                for value in stage_inputs
                if value.owner in earlier
            )
            remarks.applied(
                "split-graph",
                f"cut after {last.name}: @{name} ends here, @{names[s + 1]} starts "
                f"({crossing} value{'s' if crossing != 1 else ''} cross{'es' if crossing == 1 else ''})",
                [last],
                stage=name,
                next_stage=names[s + 1],
            )
        timed = {}
        text = ""
        if times:
            timed = {"seconds": times[s]}
            text = (
                f"; measured {times[s] * 1e3:.3g} ms "
                f"({100 * times[s] / (sum(times) or 1):.0f}% of the time)"
            )
        remarks.analysis(
            "split-graph",
            f"stage @{name}: {sum(1 for o in ops if o.name != 'graph.constant')} ops, "
            f"estimated {costs[s].describe()} "
            f"({100 * costs[s].flops / total:.0f}% of the FLOPs){text}",
            ops[:1],
            stage=name,
            ops=len(ops),
            flops=costs[s].flops,
            bytes=costs[s].bytes,
            **timed,
        )


def apply_split(
    module: ModuleOp,
    ops: Sequence[str],
    indices: Sequence[int],
    entry: str = "main",
    target: str = "llvm",
    device: str = "cpu:0",
    measured: OpCosts | None = None,
) -> GraphOp:
    """Split ``@entry`` of ``module`` in place; returns the new ``pipeline.graph``.

    Raises :class:`PassError` before changing anything when the
    specification does not fit the function.  ``measured``: per-op times
    the stage remarks report beside the estimate.
    """
    spec = _spec_text(ops, indices)
    try:
        check_placement(spec, target, device)
    except VerifyException as e:
        raise PassError(str(e)) from None
    plan = plan_split(module, ops, indices, entry)
    names = _stage_names(module, plan, spec)
    if remarks.enabled():
        _report_split(plan, names, measured)
    crossing_names = _crossing_names(plan)
    functions = [
        _stage_function(plan, s, name, crossing_names) for s, name in enumerate(names)
    ]
    graph = _pipeline_graph(plan, names, crossing_names, target, device)
    module.body.block.insert_ops_before([*functions, graph], plan.func)
    module.body.block.erase_op(plan.func)
    return graph


def split_graph(
    module: ModuleOp,
    ops: Sequence[str],
    indices: Sequence[int],
    *,
    entry: str = "main",
    target: str = "llvm",
    device: str = "cpu:0",
) -> ModuleOp:
    """A copy of ``module`` with ``@entry`` split (``module`` is not changed).

    ``split_graph(module, ["relu"], [0])`` is the seeds' ``graph_split(mod,
    [{"op_name": "nn.relu", "op_index": 0}])``; :func:`stage_functions` lists
    the resulting subgraphs.
    """
    result = module.clone()
    apply_split(result, ops, indices, entry, target, device)
    return result


def stage_functions(module: ModuleOp, entry: str = "main") -> list[FuncOp]:
    """The subgraph functions of ``pipeline.graph @entry``, in stage order."""
    graph = SymbolTable.lookup_symbol(module, entry)
    if not isinstance(graph, GraphOp):
        raise PassError(f"no pipeline.graph @{entry} in the module")
    functions: list[FuncOp] = []
    for stage in graph.stages:
        callee = SymbolTable.lookup_symbol(module, stage.callee_name)
        if not isinstance(callee, FuncOp):
            raise PassError(
                f"pipeline @{entry}: stage @{stage.callee_name} has no function"
            )
        functions.append(callee)
    return functions


OpCosts = Mapping[tuple[str, int], float]
"""Measured cost per op, keyed as cuts are: ``(op name, occurrence)``."""


def op_keys(body: Sequence[Operation]) -> list[tuple[str, int]]:
    """``(op name, occurrence)`` of each op of ``body``, as cuts count them
    (the keys of :data:`OpCosts`)."""
    seen: dict[str, int] = {}
    keys = []
    for op in body:
        keys.append((op.name, seen.get(op.name, 0)))
        seen[op.name] = seen.get(op.name, 0) + 1
    return keys


def _measured_weights(
    body: Sequence[Operation], costs: OpCosts, entry: str, spec: str
) -> list[float]:
    """Each op's measured cost; ops not listed (fused into a listed one, or
    too small to time) weigh nothing.  Every listed op must exist."""
    keys = op_keys(body)
    present = set(keys)
    for (name, index), value in costs.items():
        if (name, index) not in present:
            count = sum(1 for key in keys if key[0] == name)
            raise PassError(
                f"{spec}: a measured cost is given for {name} #{index}, but @{entry} has "
                f"{count} {name} op{'s' if count != 1 else ''}"
            )
        if not (isinstance(value, (int, float)) and 0 <= value < math.inf):
            raise PassError(
                f"{spec}: the measured cost of {name} #{index} must be a finite number "
                f">= 0, got {value!r}"
            )
    if not any(costs.values()):
        raise PassError(f"{spec}: the measured costs are all zero; nothing to balance")
    return [float(costs.get(key, 0.0)) for key in keys]


def load_op_costs(path: str | os.PathLike[str]) -> dict[tuple[str, int], float]:
    """Read measured per-op costs for ``split-graph{balance=N costs=FILE}``.

    The file is JSON: ``{"ops": [{"op": "graph.conv2d", "index": 0,
    "seconds": 0.0012}, ...]}`` — ``op`` and ``index`` name an op as a
    cut does (a bare name means ``graph.<name>``).  Raises
    :class:`PassError` naming the file and the entry that is wrong.
    """
    where = f"split-graph costs file {path}"
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PassError(f"cannot read {where}: {e}") from None
    entries = data.get("ops") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise PassError(f"{where}: expected an object with a list \"ops\"")
    costs: dict[tuple[str, int], float] = {}
    for number, entry in enumerate(entries):
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("op"), str)
            and type(entry.get("index")) is int
            and entry["index"] >= 0
            and type(entry.get("seconds")) in (int, float)
        )
        if not ok:
            raise PassError(
                f'{where}: ops[{number}] must be {{"op": name, "index": n >= 0, '
                f'"seconds": number}}, got {json.dumps(entry)[:200]}'
            )
        key = (_full_op_name(entry["op"]), entry["index"])
        if key in costs:
            raise PassError(f"{where}: ops[{number}] repeats {key[0]} #{key[1]}")
        costs[key] = entry["seconds"]
    return costs


def save_op_costs(path: str | os.PathLike[str], costs: OpCosts) -> None:
    """Write ``costs`` as the file :func:`load_op_costs` reads (what
    :func:`ember.pipeline.op_costs` measures)."""
    entries = [
        {"op": name, "index": index, "seconds": float(seconds)}
        for (name, index), seconds in costs.items()
    ]
    try:
        Path(path).write_text(json.dumps({"ops": entries}, indent=1) + "\n")
    except OSError as e:
        raise PassError(f"cannot write split-graph costs file {path}: {e}") from None


def balanced_cuts(
    module: ModuleOp,
    stages: int,
    entry: str = "main",
    costs: OpCosts | None = None,
) -> tuple[list[str], list[int]]:
    """``(ops, indices)`` cutting ``@entry`` into ``stages`` stages of
    near-equal cost, minimising the costliest stage; cuts fall after graph
    ops only (never after a constant, which every stage that reads it
    copies).  The cost is ``costs`` when given — measured times by
    ``(op name, occurrence)``, see :func:`load_op_costs` — else the static
    estimate of :mod:`ember.passes.cost` (FLOPs, then bytes moved)."""
    spec = f"split-graph{{balance={stages}}}"
    if stages < 2:
        raise PassError(f"{spec}: balance needs 2 stages or more")
    func = _function(module, entry, spec)
    *body, _ = list(func.body.block.ops)
    candidates = [
        i for i, op in enumerate(body[:-1]) if op.name != "graph.constant"
    ]
    if len(candidates) < stages - 1:
        raise PassError(
            f"{spec}: @{entry} has {len(candidates) + 1} ops to cut between, "
            f"too few for {stages} stages"
        )
    if costs is not None:
        weights = _measured_weights(body, costs, entry, spec)
    else:
        # Weigh FLOPs first; bytes break ties between equally heavy cuts.
        weights = [c.flops + c.bytes / 1e6 for c in map(op_cost, body)]
    prefix = [0.0]
    for w in weights:
        prefix.append(prefix[-1] + w)

    def segment(a: int, b: int) -> float:  # ops a..b inclusive
        return prefix[b + 1] - prefix[a]

    # best[k][j]: the least possible costliest stage when the first k+1
    # stages end after candidate position j (j an index into candidates).
    ends = candidates + [len(body) - 1]
    n = len(ends)
    inf = float("inf")
    best = [[inf] * n for _ in range(stages)]
    back = [[-1] * n for _ in range(stages)]
    for j in range(n):
        best[0][j] = segment(0, ends[j])
    for k in range(1, stages):
        for j in range(k, n):
            for i in range(k - 1, j):
                value = max(best[k - 1][i], segment(ends[i] + 1, ends[j]))
                if value < best[k][j]:
                    best[k][j], back[k][j] = value, i
    cuts: list[int] = []
    j = n - 1
    for k in range(stages - 1, 0, -1):
        j = back[k][j]
        cuts.append(ends[j])
    cuts.reverse()
    ops: list[str] = []
    indices: list[int] = []
    for position in cuts:
        name = body[position].name
        ops.append(name)
        indices.append(sum(1 for op in body[:position] if op.name == name))
    return ops, indices


@dataclass(frozen=True)
class SplitGraphPass(ModulePass):
    """Split a function after named ops into subgraph functions joined by a pipeline.graph.

    ``ops``/``indices``: cut after occurrence ``indices[k]`` (0-based) of op
    ``ops[k]``; one op name applies to all indices.  ``balance=N`` instead:
    N stages of near-equal estimated cost (:func:`balanced_cuts`), or of
    near-equal measured time with ``costs=FILE.json`` (:func:`load_op_costs`).
    ``entry``: the function to split.  ``target``/``device``: where every
    stage is placed.
    """

    name = "split-graph"

    ops: tuple[str, ...] = ()
    indices: tuple[int, ...] = ()
    balance: int = 0
    costs: str = ""
    entry: str = "main"
    target: str = "llvm"
    device: str = "cpu:0"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ops, indices = self.ops, self.indices
        measured = None
        if self.balance:
            if ops or indices:
                raise PassError(
                    "split-graph: give either balance=N or ops=/indices=, not both"
                )
            measured = load_op_costs(self.costs) if self.costs else None
            ops, indices = balanced_cuts(op, self.balance, self.entry, measured)
        elif self.costs:
            raise PassError("split-graph: costs= weighs the stages of balance=N; give balance")
        apply_split(op, ops, indices, self.entry, self.target, self.device, measured)
