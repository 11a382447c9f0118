"""Groups of graph ops that become one kernel, and what may form one.

``fuse-ops`` forms groups and ``lower-graph-to-kernel`` turns each into a
kernel; both ask :func:`make_group`, the one authority on what a kernel can
compute.  It reads only what ops declare: their fusion kind and the
capabilities registered for their class (:mod:`ember.dialects.graph_registry`:
a naive lowering, a scalar epilogue, an index remap), so neither pass imports
the lowering.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from ember.dialects.graph import ConstantOp, GraphOp, shape_of
from ember.dialects.graph_registry import semantics
from ember.errors import PassError
from ember.ir import describe_op, fresh_symbol
from ember.remarks import fused_location

__all__ = [
    "GroupTable",
    "OpGroup",
    "cannot_lower",
    "epilogue_reason",
    "group_key",
    "kernel_stem",
    "make_group",
    "replace_group",
    "short_name",
    "unsupported_reason",
]


@dataclass(frozen=True)
class OpGroup:
    """Graph ops that become one kernel.

    ``ops`` are in program order, anchor first; ``inputs`` are the values the
    group reads from outside (kernel arguments, in order of first use) and
    ``outputs`` the group values that leave it (the kernel's output buffers).
    Build one with :func:`make_group`, which checks the invariants.
    """

    ops: tuple[GraphOp, ...]
    inputs: tuple[SSAValue, ...]
    outputs: tuple[SSAValue, ...]


def short_name(op: Operation) -> str:
    """``conv2d`` for ``graph.conv2d``: the op's part of kernel names."""
    return op.name.removeprefix("graph.")


def cannot_lower(op: Operation, reason: str) -> PassError:
    """The diagnostic for an op this lowering rejects (names the op and its function)."""
    return PassError(
        f"lower-graph-to-kernel: cannot lower '{op.name}': {reason}\n{describe_op(op)}"
    )


def unsupported_reason(op: Operation) -> str | None:
    """Why ``op`` cannot start a kernel, or ``None`` if it can."""
    if isinstance(op, ConstantOp):
        return "a constant is data, not computation; it stays a graph.constant"
    if not isinstance(op, GraphOp):
        return "only graph ops can be lowered to kernels"
    if not semantics(type(op)).lowerable:
        return "no kernel generator exists for this op"
    return None


def _moves_index(op: Operation) -> bool:
    """Whether ``op`` only moves elements (an :func:`index_remap` op)."""
    return semantics(type(op)).remap is not None


def epilogue_reason(op: Operation, group_values: Sequence[SSAValue]) -> str | None:
    """Why ``op`` cannot follow ``group_values`` inside a group, or ``None``.

    An epilogue op must be elementwise, broadcast or injective (not
    concatenate), and every operand it takes from the group must have the
    op's result shape for elementwise/broadcast ops: the group's value at an
    index is computed once, so it cannot be broadcast to several indices.
    """
    if not isinstance(op, GraphOp) or not semantics(type(op)).epilogue:
        return (
            "only elementwise, broadcast and injective ops (except concatenate) "
            "can follow the first op of a group"
        )
    inside = [v for v in op.operands if v in group_values]
    if not inside:
        return "it uses no value of the group"
    if _moves_index(op):
        return None
    result_shape = shape_of(op.results[0])
    for value in inside:
        if shape_of(value) != result_shape:
            return (
                f"it broadcasts a group value of shape {list(shape_of(value))} "
                f"to {list(result_shape)}"
            )
    return None


def make_group(
    ops: Sequence[Operation], outputs: Sequence[SSAValue] | None = None
) -> OpGroup:
    """Check that ``ops`` can become one kernel and describe its interface.

    ``outputs`` defaults to the last op's result.  Raises
    :class:`~ember.errors.PassError` naming the offending op.
    """
    if not ops:
        raise PassError("lower-graph-to-kernel: a group needs at least one op")
    first = ops[0]
    reason = unsupported_reason(first)
    if reason is not None:
        raise cannot_lower(first, reason)
    group_values: list[SSAValue] = [first.results[0]]
    produced_so_far = {first.results[0]}
    for op in ops[1:]:
        reason = epilogue_reason(op, group_values)
        left_behind = [
            v for v in op.operands if v in produced_so_far and v not in group_values
        ]
        if reason is None and left_behind:
            reason = "it uses a group value computed before a reshape or transpose"
        if reason is not None:
            raise cannot_lower(op, f"it cannot be fused after '{first.name}': {reason}")
        if _moves_index(op):
            # A remapping op moves the index: earlier values are left behind.
            group_values = []
        group_values.append(op.results[0])
        produced_so_far.add(op.results[0])
    produced = {op.results[0] for op in ops}
    chosen = tuple(outputs) if outputs is not None else (ops[-1].results[0],)
    for value in chosen:
        if value not in produced:
            raise PassError(
                "lower-graph-to-kernel: a group output must be a result of one of "
                "its ops"
            )
    inputs: list[SSAValue] = []
    for op in ops:
        for value in op.operands:
            if value not in produced and value not in inputs:
                inputs.append(value)
    return OpGroup(tuple(ops), tuple(inputs), chosen)  # type: ignore[arg-type]



class GroupTable:
    """Functions added to a module, one per distinct group (by
    :func:`group_key`), named after their ops as TVM names them
    (``conv2d``, ``fused_conv2d_add_relu``, ``conv2d_1`` for another shape).

    ``build(group, name)`` makes the function: a kernel for
    ``lower-graph-to-kernel``, a fused graph function for ``fuse-ops``.
    """

    def __init__(
        self, module: ModuleOp, build: Callable[[OpGroup, str], FuncOp]
    ) -> None:
        self.module = module
        self.build = build
        self.taken = {op.sym_name.data for op in module.ops if isinstance(op, FuncOp)}
        self.by_key: dict[Hashable, str] = {}

    def name_for(self, group: OpGroup) -> str:
        """The name of the function computing ``group``, made if new."""
        key = group_key(group)
        name = self.by_key.get(key)
        if name is None:
            name = fresh_symbol(kernel_stem(group), self.taken)
            self.module.body.block.add_op(self.build(group, name))
            self.by_key[key] = name
            self.taken.add(name)
        return name


def replace_group(group: OpGroup, call: Operation) -> None:
    """Put ``call`` where the group's last op was, in place of the group:
    its results take the group outputs' uses and names, the ops are erased.

    The group's inputs are all defined before that point, so the call
    dominates every use of an output that the last op dominated.
    """
    last = group.ops[-1]
    block = last.parent_block()
    if block is None:
        raise PassError(f"{short_name(last)} is not in a block, so it cannot be replaced")
    call.location = fused_location(group.ops)
    block.insert_op_before(call, last)
    for value, result in zip(group.outputs, call.results, strict=True):
        result.name_hint = value.name_hint
        value.replace_all_uses_with(result)
    for op in reversed(group.ops):
        block.erase_op(op)


def kernel_stem(group: OpGroup) -> str:
    """TVM-style kernel name: ``conv2d`` or ``fused_conv2d_add_relu``."""
    names = [short_name(op) for op in group.ops]
    return names[0] if len(names) == 1 else "fused_" + "_".join(names)


def group_key(group: OpGroup) -> Hashable:
    """Equal keys mean identical kernels (ops, attributes, types, wiring)."""
    position = {v: ("in", i) for i, v in enumerate(group.inputs)}
    for n, op in enumerate(group.ops):
        position[op.results[0]] = ("op", n)
    ops = tuple(
        (
            op.name,
            tuple(sorted(op.attr_values().items())),
            tuple((position[v], v.type) for v in op.operands),
            op.results[0].type,
        )
        for op in group.ops
    )
    inputs = tuple(v.type for v in group.inputs)
    outputs = tuple(position[v] for v in group.outputs)
    return (ops, inputs, outputs)
