"""``fuse-ops``: group ops into fused functions that become one kernel each.

TVM's ``FuseOps`` in MLIR form.  Each group of graph ops that
``lower-graph-to-kernel`` can turn into ONE kernel (one loop nest, no
intermediate buffers) is outlined into a private function marked
``graph.fused`` and replaced by a ``func.call`` of it::

    %r = func.call @fused_conv2d_add_relu(%x, %w, %shift) : (…) -> tensor<…>
    …
    func.func private @fused_conv2d_add_relu(%data: …, %weight: …, %rhs: …)
        -> tensor<…> attributes {graph.fused} {
      %c = graph.conv2d %data, %weight …
      %b = graph.add %c, %rhs …
      %r = graph.relu %b …
      func.return %r : tensor<…>
    }

The program still means what it meant (the reference interpreter runs
``func.call``), so the pass is checked like any graph pass; the lowering
then makes one kernel of each fused function (``group_key``/``kernel_stem``
of :mod:`ember.analysis.op_groups`).

How groups are formed (TVM's rules, simplified to straight-line code):

* Ops are visited in program order.  An op that is not yet in a group starts
  one when it is an anchor (conv2d, dense, matmul, the pools: TVM's
  out-elementwise-fusable kind; reductions) or an elementwise / broadcast /
  injective op (so chains of those fuse too), and a kernel generator is
  registered for its class (:mod:`ember.dialects.graph_registry`).  Opaque ops (softmax, constants, calls) never join a group.
* The group then absorbs, in program order, the ops that consume its values,
  as long as :func:`~ember.analysis.op_groups.make_group` accepts the
  longer group (elementwise, broadcast or injective epilogue ops, no
  broadcast of a group value to a larger shape, nothing after a reshape
  reading a value from before it; no op reading the weight of a conv2d or
  dense anchor, which its kernel reads packed) and ``max-depth`` is not
  reached.  The
  first consumer that cannot join ends the growth: the value it reads
  escapes the group.  Operands from outside the group are then always
  computed without the group's values, so outlining creates no cycle.
* The group is cut back to its longest prefix in which only the LAST op's
  value is used outside the group: an intermediate value with a consumer
  outside (a value with several consumers, a function result) is never
  recomputed and never becomes an extra buffer.  A diamond whose every
  path stays inside the group (``add(conv, relu(conv))``) is one group.
* A group of one op stays a plain op: ``lower-graph-to-kernel`` lowers it
  alone, as without this pass.

Identical groups (same ops, attributes, wiring and types; weights are
arguments) share one fused function.  Names follow TVM's
(``fused_conv2d_add_relu``), with ``_1``, ``_2``, … for distinct groups of
the same ops.  Functions already marked ``graph.fused`` or
``kernel.kernel`` are left alone, so running the pass twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ember import remarks
from ember.analysis.op_groups import (
    GroupTable,
    OpGroup,
    make_group,
    replace_group,
    unsupported_reason,
)
from ember.dialects.graph import FusionKind, fusion_kind
from ember.dialects.kernel import is_kernel
from ember.errors import PassError
from ember.remarks import fused_location

__all__ = [
    "FUSED_ATTR",
    "FuseOpsPass",
    "erase_fused_functions",
    "fused_functions",
    "group_outputs",
    "inline_fused_calls",
    "is_fused",
    "plan_groups",
]

FUSED_ATTR = "graph.fused"
"""Unit attribute marking a function outlined by ``fuse-ops``."""

_HEAD_KINDS = frozenset(
    {
        FusionKind.ELEMENTWISE,
        FusionKind.BROADCAST,
        FusionKind.INJECTIVE,
        FusionKind.REDUCTION,
        FusionKind.OUT_ELEMENTWISE_FUSABLE,
    }
)
"""Kinds of ops that may start a group (everything but opaque)."""

_EPILOGUE_KINDS = frozenset(
    {FusionKind.ELEMENTWISE, FusionKind.BROADCAST, FusionKind.INJECTIVE}
)
"""Kinds of ops that may follow the first op of a group."""


def is_fused(op: Operation) -> bool:
    """Whether ``op`` is a ``func.func`` outlined by ``fuse-ops``."""
    return isinstance(op, FuncOp) and FUSED_ATTR in op.attributes


def fused_functions(module: ModuleOp) -> dict[str, FuncOp]:
    """The functions of ``module`` marked ``graph.fused``, by name."""
    return {op.sym_name.data: op for op in module.ops if is_fused(op)}


# --------------------------------------------------------------------------
# Planning: which ops form groups
# --------------------------------------------------------------------------


def _accepted(ops: Sequence[Operation]) -> OpGroup | None:
    """The group of ``ops`` if the kernel lowering accepts it, else None.

    :func:`make_group` is the one authority on what a kernel can compute, so
    this pass never forms a group the lowering would reject.
    """
    try:
        return make_group(ops)
    except PassError:
        return None


def _can_start_group(op: Operation) -> bool:
    return fusion_kind(op) in _HEAD_KINDS and unsupported_reason(op) is None


def _explain_no_start(op: Operation) -> None:
    """A missed remark for a graph op that is never fused (not for constants
    and terminators, which are never expected to be)."""
    if not remarks.enabled() or not op.name.startswith("graph.") or op.name == "graph.constant":
        return
    reason = unsupported_reason(op)
    if reason is None:
        why, rule = "it is opaque (TVM's kOpaque): it is never fused", "opaque"
    else:
        why, rule = f"no kernel generator takes it: {reason}", "unsupported"
    remarks.missed("fuse-ops", f"{op.name} not fused: {why}", [op], rule=rule)


def _uses_any(op: Operation, values: set[SSAValue]) -> bool:
    return any(v in values for v in op.operands)


_PANEL_ANCHORS = frozenset({"graph.conv2d", "graph.dense"})
"""Anchors whose kernels read their weight (operand 1) in packed panels."""


def _reads_anchor_weight(op: Operation, head: Operation) -> bool:
    """Whether ``op`` reads the weight of a conv2d/dense ``head``.

    ``make_group`` accepts such a group, but the register-blocked conv2d and
    dense kernels then have no plain copy of the weight to give the
    epilogue (``weight_packing`` declines and the generators require it), so
    the lowering would fail: such an op is not fused.
    """
    return head.name in _PANEL_ANCHORS and head.operands[1] in op.operands


def _grow(
    head: Operation,
    later_ops: Sequence[Operation],
    taken: set[Operation],
    max_depth: int,
) -> list[Operation]:
    """``head`` and the consumers that can join it, in program order.

    Stops at the first op that reads a group value but cannot join (the
    value escapes; every op visited before it that did not join reads no
    group value, so outside operands never depend on the group), at
    ``max_depth`` ops, or when no group value has a consumer left to visit.
    The op that stopped the growth, and why, is a missed remark.
    """
    group = [head]
    values = {head.results[0]}
    pending = {use.operation for use in head.results[0].uses}
    for op in later_ops:
        if not pending:
            break
        if not _uses_any(op, values):
            continue
        if len(group) >= max_depth:
            _missed(op, head, f"the group reached max-depth={max_depth}", "max-depth")
            break
        pending.discard(op)
        reason = _join_refusal(op, group, taken)
        if reason is not None:
            _missed(op, head, *reason)
            break
        group.append(op)
        values.add(op.results[0])
        pending.update(use.operation for use in op.results[0].uses)
    return group


def _join_refusal(
    op: Operation, group: Sequence[Operation], taken: set[Operation]
) -> tuple[str, str] | None:
    """Why ``op`` cannot join ``group`` (message, rule), or None if it can."""
    head = group[0]
    if op in taken:
        return "it is already in another group", "already-grouped"
    kind = fusion_kind(op)
    if kind not in _EPILOGUE_KINDS:
        return (
            f"its pattern kind is {kind.name.lower()}; only elementwise, broadcast or "
            "injective ops follow the first op of a group",
            "pattern-kind",
        )
    if _reads_anchor_weight(op, head):
        return f"it reads the weight of {head.name}, which the kernel reads packed", "reads-weight"
    try:
        make_group([*group, op])
    except PassError as error:
        reason = str(error).split("\n", 1)[0].removeprefix("lower-graph-to-kernel: ")
        return f"the kernel lowering cannot take it ({reason})", "lowering"
    return None


def _missed(op: Operation, head: Operation, why: str, rule: str) -> None:
    # A group ending at a function's result is no missed fusion.
    if remarks.enabled() and not isinstance(op, ReturnOp):
        remarks.missed(
            "fuse-ops",
            f"{op.name} not fused with {head.name}: {why}",
            [op, head],
            rule=rule,
        )


def _closed_prefix(group: Sequence[Operation]) -> list[Operation]:
    """The longest prefix of ``group`` whose values other than the last op's
    are used only inside the prefix (a single-output group)."""
    for end in range(len(group), 1, -1):
        members = set(group[:end])
        if all(
            use.operation in members
            for op in group[: end - 1]
            for use in op.results[0].uses
        ):
            break
    else:
        end = 1
    if end < len(group) and remarks.enabled():
        # The next longer prefix failed: one of its values escapes it.
        longer = set(group[: end + 1])
        escaping = next(
            op
            for op in group[:end]
            if any(use.operation not in longer for use in op.results[0].uses)
        )
        for op in group[end:]:
            remarks.missed(
                "fuse-ops",
                f"{op.name} not fused with {group[0].name}: the value of "
                f"{escaping.name} it follows has a consumer outside the group "
                "(multiple consumers), and it is never recomputed",
                [op, escaping],
                rule="multiple-consumers",
            )
    return list(group[:end])


def plan_groups(block: Block, max_depth: int) -> list[list[Operation]]:
    """The groups (two ops or more) to fuse among the ops of ``block``, in
    program order; each op is in at most one group."""
    ops = list(block.ops)
    taken: set[Operation] = set()
    groups: list[list[Operation]] = []
    for index, op in enumerate(ops):
        if op in taken:
            continue
        if not _can_start_group(op):
            _explain_no_start(op)
            continue
        group = _closed_prefix(_grow(op, ops[index + 1 :], taken, max_depth))
        if len(group) > 1:
            groups.append(group)
            taken.update(group)
    return groups


# --------------------------------------------------------------------------
# Outlining
# --------------------------------------------------------------------------


def _outlined_function(group: OpGroup, name: str) -> FuncOp:
    """``func.func private @name`` holding copies of the group's ops."""
    input_types = [v.type for v in group.inputs]
    output_types = [v.type for v in group.outputs]
    body = Block(arg_types=input_types)
    mapping: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(group.inputs, body.args):
        arg.name_hint = value.name_hint
        mapping[value] = arg
    for op in group.ops:
        body.add_op(op.clone(value_mapper=mapping))
    body.add_op(ReturnOp(*(mapping[v] for v in group.outputs)))
    func = FuncOp(name, (input_types, output_types), Region(body), "private")
    func.attributes[FUSED_ATTR] = UnitAttr()
    func.location = fused_location(group.ops)
    return func


def _report_group(ops: Sequence[Operation], name: str) -> None:
    head, *rest = ops
    remarks.applied(
        "fuse-ops",
        f"{head.name} anchors {name}: {len(ops)} ops in one kernel",
        ops,
        group=name,
        members=[op.name for op in ops],
    )
    for op in rest:
        remarks.applied("fuse-ops", f"{op.name} fused into {name}", [op], group=name)


def _replace_with_call(group: OpGroup, callee: str) -> CallOp:
    """Replace the group's ops by a ``func.call @callee`` where its last op was.

    The group's inputs are all defined before that point and its output is
    the last op's value, so the call dominates every use.
    """
    call = CallOp(callee, group.inputs, [v.type for v in group.outputs])
    replace_group(group, call)
    return call


def _graph_functions(module: ModuleOp) -> list[FuncOp]:
    return [
        op
        for op in module.ops
        if isinstance(op, FuncOp)
        and not op.is_declaration
        and not is_kernel(op)
        and not is_fused(op)
    ]


# --------------------------------------------------------------------------
# Inlining back, for lower-graph-to-kernel
# --------------------------------------------------------------------------


def inline_fused_calls(
    func: FuncOp, fused: Mapping[str, FuncOp]
) -> list[list[Operation]]:
    """Replace every ``func.call`` of a function in ``fused`` inside ``func``
    by a copy of the callee's ops; return the copies' op lists (those that
    :func:`make_group` accepts with the callee's results as outputs), in
    program order.

    ``lower-graph-to-kernel`` lowers each returned list as one kernel and
    every other copied op on its own, so a fused function that later passes
    changed (canonicalize inside it, say) still lowers correctly.
    """
    groups: list[list[Operation]] = []
    for call in [op for op in func.body.walk() if isinstance(op, CallOp)]:
        callee = fused.get(call.callee.root_reference.data)
        if callee is None:
            continue
        copies = _inline_call(call, callee)
        if len(copies) > 1 and _accepted_with_outputs(copies) is not None:
            groups.append(copies)
    return groups


def _inline_call(call: CallOp, callee: FuncOp) -> list[Operation]:
    """Copy ``callee``'s body in place of ``call``; the copied ops."""
    block = call.parent_block()
    assert block is not None  # a call inside a function body
    body = callee.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(body.args, call.operands))
    terminator = body.last_op
    if not isinstance(terminator, ReturnOp):
        raise PassError(
            f"fused function @{callee.sym_name.data} does not end in func.return"
        )
    copies: list[Operation] = []
    for op in body.ops:
        if op is terminator:
            break
        copy = op.clone(value_mapper=mapping)
        # A fused function is shared by every group with its key: its ops
        # carry the first group's locations.  The call's location is this
        # group's own ops (fuse-ops sets it), so the kernel says which ops
        # it computes here (the profiler's per-op costs read it).
        copy.location = call.location
        block.insert_op_before(copy, call)
        copies.append(copy)
    for result, value in zip(call.results, terminator.operands):
        mapped = mapping.get(value, value)
        if result.name_hint is not None and mapped.owner in copies:
            mapped.name_hint = result.name_hint
        result.replace_all_uses_with(mapped)
    block.erase_op(call)
    return copies


def group_outputs(ops: Sequence[Operation]) -> list[SSAValue] | None:
    """The values of ``ops`` used by an op outside them, in program order
    (the outputs of their kernel); None when there are none, which
    :func:`make_group` reads as "the last op's value"."""
    members = set(ops)
    outputs = [
        op.results[0]
        for op in ops
        if any(use.operation not in members for use in op.results[0].uses)
    ]
    return outputs or None


def _accepted_with_outputs(ops: Sequence[Operation]) -> OpGroup | None:
    try:
        return make_group(ops, group_outputs(ops))
    except PassError:
        return None


def erase_fused_functions(module: ModuleOp) -> None:
    """Erase the ``graph.fused`` functions that no ``func.call`` calls any more."""
    called = {
        op.callee.root_reference.data for op in module.walk() if isinstance(op, CallOp)
    }
    for name, func in fused_functions(module).items():
        if name not in called:
            module.body.block.erase_op(func)


# --------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Outline groups of fusable ops (anchor + elementwise epilogue) into fused functions."""

    name = "fuse-ops"

    max_depth: int = 256
    """The most ops one group may hold (TVM's ``max_fuse_depth``)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_depth < 1:
            raise PassError(
                f"fuse-ops: max-depth must be at least 1, got {self.max_depth}"
            )
        table = GroupTable(op, _outlined_function)
        for func in _graph_functions(op):
            for block in func.body.blocks:
                for ops in plan_groups(block, self.max_depth):
                    group = make_group(ops)
                    name = table.name_for(group)
                    if remarks.enabled():
                        _report_group(ops, name)
                    _replace_with_call(group, name)
