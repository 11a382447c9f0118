"""``lower-graph-to-kernel``: every graph op becomes a call of a generated kernel.

Relax's ``LegalizeOps`` + ``call_tir`` in MLIR form: each compute op of a
graph function is replaced by ``graph.call_kernel @k(inputs)`` and the kernel
``@k`` (from :mod:`ember.lowering.graph_to_kernel`) is added to the module.
One op per kernel for now (``fuse-ops`` decides groups); the grouping
machinery already accepts several ops per kernel.

* Kernels are named like TVM's: ``conv2d``, ``fused_conv2d_add_relu``;
  kernels of the same name but different shapes or attributes get a
  numeric suffix (``conv2d_1``); identical kernels are generated once and
  shared (ResNet-18 has 20 conv2d ops but far fewer distinct kernels).
* ``graph.constant`` stays a constant (data, not compute);
  ``graph.call_kernel``, ``graph.call_extern``, ``func.call`` and
  ``func.return`` stay as they are; functions already marked
  ``kernel.kernel`` are left alone.
* Anything else in a graph function is reported, naming the op, before the
  module is changed.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ember.dialects.graph import CallExternOp, CallKernelOp, ConstantOp
from ember.dialects.kernel import is_kernel
from ember.errors import PassError
from ember.ir import describe_op
from ember.lowering.graph_to_kernel import (
    OpGroup,
    cannot_lower,
    group_key,
    kernel_stem,
    lower_group,
    make_group,
    unsupported_reason,
)

_KEPT_OPS: tuple[type[Operation], ...] = (
    ConstantOp,
    CallKernelOp,
    CallExternOp,
    CallOp,
    ReturnOp,
)
"""Ops that a lowered graph function keeps as they are."""


class KernelTable:
    """The kernels added to a module: one name per distinct kernel."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.taken = {op.sym_name.data for op in module.ops if isinstance(op, FuncOp)}
        self.by_key: dict[Hashable, str] = {}

    def kernel_for(self, group: OpGroup) -> str:
        """The name of the kernel computing ``group``, generating it if new."""
        key = group_key(group)
        name = self.by_key.get(key)
        if name is None:
            name = self._fresh_name(kernel_stem(group))
            self.module.body.block.add_op(lower_group(group, name))
            self.by_key[key] = name
            self.taken.add(name)
        return name

    def _fresh_name(self, stem: str) -> str:
        if stem not in self.taken:
            return stem
        suffix = 1
        while f"{stem}_{suffix}" in self.taken:
            suffix += 1
        return f"{stem}_{suffix}"


def graph_functions(module: ModuleOp) -> list[FuncOp]:
    """The functions of ``module`` that hold graph programs (not kernels)."""
    return [
        op
        for op in module.ops
        if isinstance(op, FuncOp) and not is_kernel(op) and not op.is_declaration
    ]


def plan_function(func: FuncOp) -> list[list[Operation]]:
    """The groups of ops of ``func`` that become kernels (one op each), in
    program order; raises :class:`PassError` naming the first op that cannot
    be lowered, so nothing is changed when any op is unsupported."""
    groups: list[list[Operation]] = []
    for op in func.body.walk():
        if op is func or isinstance(op, _KEPT_OPS):
            continue
        reason = unsupported_reason(op)
        if reason is not None:
            raise cannot_lower(op, reason)
        make_group([op])  # validates; rebuilt when rewriting, as operands change
        groups.append([op])
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
    block.insert_op_before(call, last)
    for value, result in zip(group.outputs, call.results):
        result.name_hint = value.name_hint
        value.replace_all_uses_with(result)
    for op in reversed(group.ops):
        block.erase_op(op)
    return call


@dataclass(frozen=True)
class LowerGraphToKernelPass(ModulePass):
    """Replace every graph op by a graph.call_kernel of a generated kernel."""

    name = "lower-graph-to-kernel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        plans = [(func, plan_function(func)) for func in graph_functions(op)]
        table = KernelTable(op)
        for _, groups in plans:
            for ops in groups:
                # Built now: earlier rewrites replaced this group's operands.
                group = make_group(ops)
                replace_with_call(group, table.kernel_for(group))
