"""``lower-graph-to-kernel``: every graph op becomes a call of a generated kernel.

Relax's ``LegalizeOps`` + ``call_tir`` in MLIR form: each compute op of a
graph function is replaced by ``graph.call_kernel @k(inputs)`` and the kernel
``@k`` (from :mod:`ember.lowering.graph_to_kernel`) is added to the module.
One op per kernel, except that a ``func.call`` of a function marked
``graph.fused`` (made by ``fuse-ops``) becomes ONE kernel computing the
callee's ops: the call is inlined, its ops lowered as one group, and the
fused function erased once nothing calls it.

* Kernels are named like TVM's: ``conv2d``, ``fused_conv2d_add_relu``;
  kernels of the same name but different shapes or attributes get a
  numeric suffix (``conv2d_1``); identical kernels are generated once and
  shared (ResNet-18 has 20 conv2d ops but far fewer distinct kernels).
* Every kernel reads its inputs as they are: weights are repacked (and
  Winograd's transformed) by the schedule pass ``kernel-tensorize``,
  through :class:`WeightPacker`.  ``vector-bits`` chooses the vector
  width kernels are shaped for (0, the default: this host's; ``ember.build``
  passes its target's).
* ``graph.constant`` stays a constant (data, not compute);
  ``graph.call_kernel``, ``graph.call_extern``, ``func.call`` and
  ``func.return`` stay as they are; functions already marked
  ``kernel.kernel`` are left alone.
* Anything else in a graph function is reported, naming the op, before the
  module is changed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from ember.abi import FLOPS_ATTR, OPS_ATTR
from ember.analysis.op_groups import replace_group
from ember.dialects.graph import CallExternOp, CallKernelOp, ConstantOp
from ember.dialects.kernel import is_kernel
from ember.errors import PassError
from ember.ir import describe_op
from ember.lowering.graph_to_kernel import (
    GroupTable,
    OpGroup,
    VectorTarget,
    cannot_lower,
    lower_group,
    make_group,
    unsupported_reason,
)
from ember.passes.cost import total_cost
from ember.passes.fuse_ops import (
    erase_fused_functions,
    fused_functions,
    group_outputs,
    inline_fused_calls,
    is_fused,
)

_KEPT_OPS: tuple[type[Operation], ...] = (
    ConstantOp,
    CallKernelOp,
    CallExternOp,
    CallOp,
    ReturnOp,
)
"""Ops that a lowered graph function keeps as they are."""


class Packing(Protocol):
    """A weight layout: the packed shape and the numpy packing
    (:class:`~ember.lowering.graph_to_kernel.WeightPacking`, ...)."""

    def shape(self, shape: Sequence[int]) -> tuple[int, ...]: ...

    def pack(self, array: Any) -> Any: ...


class WeightPacker:
    """Packs constant weights for their kernels, each constant once per
    layout (``kernel-tensorize``'s panels and Winograd transforms; TVM's
    ``AlterOpLayout`` + constant folding): a new constant feeds the kernel
    and the original goes away if nothing else uses it."""

    def __init__(self) -> None:
        self.packed: dict[tuple[ConstantOp, Hashable], SSAValue] = {}

    def pack(self, constant: ConstantOp, packing: Packing) -> SSAValue:
        """The constant holding ``constant`` packed by ``packing`` (made
        once, right after ``constant``)."""
        key = (constant, packing)
        if key not in self.packed:
            new = ConstantOp.from_array(
                packing.pack(constant.to_array(copy=False)), copy=False
            )
            block = constant.parent_block()
            assert block is not None  # constants live in function bodies
            block.insert_op_after(new, constant)
            hint = constant.results[0].name_hint
            new.results[0].name_hint = (hint or "weight") + "_packed"
            self.packed[key] = new.results[0]
        return self.packed[key]

    def erase_unused_originals(self) -> None:
        """Drop constants that only fed packed kernels (their arrays go with
        them, :meth:`ConstantOp.erase`): called after each kernel call, so
        that an original dies as soon as its last user is packed and the
        weights are never all held twice."""
        for constant, _ in self.packed:
            block = constant.parent_block()
            if block is not None and not constant.results[0].uses:
                block.erase_op(constant)


def graph_functions(module: ModuleOp) -> list[FuncOp]:
    """The functions of ``module`` that hold graph programs (not kernels,
    not fused functions: those are inlined where they are called)."""
    return [
        op
        for op in module.ops
        if isinstance(op, FuncOp)
        and not is_kernel(op)
        and not is_fused(op)
        and not op.is_declaration
    ]


def plan_function(
    func: FuncOp, fused: Sequence[Sequence[Operation]] = ()
) -> list[list[Operation]]:
    """The groups of ops of ``func`` that become kernels, in program order:
    each list of ``fused`` (ops of an inlined fused function) is one group,
    every other op its own; raises :class:`PassError` naming the first op
    that cannot be lowered, so nothing is changed when any op is unsupported."""
    group_of = {op: list(ops) for ops in fused for op in ops}
    groups: list[list[Operation]] = []
    for op in func.body.walk():
        if op is func or isinstance(op, _KEPT_OPS):
            continue
        reason = unsupported_reason(op)
        if reason is not None:
            raise cannot_lower(op, reason)
        members = group_of.get(op, [op])
        if op is members[0]:
            # Validates; rebuilt when rewriting, as operands change.
            make_group(members, group_outputs(members))
            groups.append(members)
    return groups


def replace_with_call(group: OpGroup, kernel: str) -> CallKernelOp:
    """Replace the ops of ``group`` by one ``graph.call_kernel @kernel``,
    placed where the group's last op was."""
    last = group.ops[-1]
    block = last.parent_block()
    assert block is not None  # graph ops live in function bodies
    members = set(group.ops)
    for op in group.ops:
        for use in op.results[0].uses:
            user = use.operation
            if user in members:
                continue
            if op.results[0] not in group.outputs:
                raise PassError(
                    f"lower-graph-to-kernel: the result of '{op.name}' is used "
                    f"outside its group but is not a group output\n{describe_op(user)}"
                )
            if user.parent_block() is not block or block.get_operation_index(
                user
            ) < block.get_operation_index(last):
                raise PassError(
                    f"lower-graph-to-kernel: '{user.name}' uses a group output "
                    f"before the group's last op\n{describe_op(user)}"
                )
    call = CallKernelOp(kernel, group.inputs, [v.type for v in group.outputs])
    replace_group(group, call)
    return call


def profile_attributes(ops: Sequence[Operation]) -> dict[str, Attribute]:
    """The names and estimated FLOPs of ``ops`` (read before they are erased)."""
    return {
        OPS_ATTR: ArrayAttr([StringAttr(op.name) for op in ops]),
        FLOPS_ATTR: IntegerAttr(total_cost(ops).flops, i64),
    }


@dataclass(frozen=True)
class LowerGraphToKernelPass(ModulePass):
    """Replace every graph op by a graph.call_kernel of a generated kernel."""

    name = "lower-graph-to-kernel"

    vector_bits: int = 0
    """Vector register width kernels are shaped for; 0: this host's."""

    annotate: bool = False
    """Record on each ``graph.call_kernel`` the graph ops its kernel computes
    (``ember.ops``) and their estimated FLOPs (``ember.flops``): what the
    profiler reports per kernel.  ``ember.build`` turns it on."""

    pack_weights: bool | None = None
    """Moved: weights are packed by the ``kernel-tensorize`` schedule now;
    set, it is an error saying so."""

    winograd_min_channels: int | None = None
    """Moved to ``kernel-tensorize{winograd-min-channels=N}``; set, it is an
    error saying so."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.pack_weights is not None or self.winograd_min_channels is not None:
            moved = "pack-weights" if self.pack_weights is not None else "winograd-min-channels"
            raise PassError(
                f"lower-graph-to-kernel: option '{moved}' moved to the schedule: the "
                "lowering emits naive kernels, and kernel-tensorize packs weights "
                "(leave it out of the schedule to keep them unpacked) and chooses "
                "Winograd (kernel-tensorize{winograd-min-channels=N}; build option "
                "winograd_min_channels)"
            )
        bits = self.vector_bits or VectorTarget.host().bits
        target = VectorTarget(bits)
        fused = fused_functions(op)
        functions = graph_functions(op)
        for function in [*fused.values(), *functions]:
            plan_function(function)  # validates every op before anything changes
        plans = [
            (func, plan_function(func, inline_fused_calls(func, fused)))
            for func in functions
        ]
        erase_fused_functions(op)  # before naming kernels: frees their names
        table = GroupTable(op, lambda group, name: lower_group(group, name, target))
        for _, groups in plans:
            for ops in groups:
                # Built now: earlier rewrites replaced this group's operands.
                group = make_group(ops, group_outputs(ops))
                annotation = profile_attributes(group.ops) if self.annotate else {}
                call = replace_with_call(group, table.name_for(group))
                call.attributes.update(annotation)
