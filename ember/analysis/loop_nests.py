"""Loop nests of kernels, and which loops may run their iterations in any order.

What the schedule passes (``kernel-tile``, ``kernel-parallelize``,
``kernel-vectorize``, ``kernel-unroll``) read before they change a kernel,
in the manner of TensorIR's schedule primitives, which check a block's
iteration kinds before ``parallel`` / ``vectorize`` / ``split``:

* :func:`loop_nests`: the *nests* of a kernel, each the loops from one
  ``kernel.for`` at the top of the function body down through loops that are
  the only op of their parent's body (a perfect nest, outermost first);
* :func:`is_independent`: whether a loop's iterations touch disjoint data, so
  that they may run in any order or at once (TensorIR's rule for
  ``parallel``/``vectorize``: every block under the loop binds it to
  spatial iteration variables only, and scratch buffers are private to an
  iteration);
* :func:`scheduled_kinds`: the loop kinds already chosen under a loop;
* :func:`mark_loop`: how a schedule pass gives a loop its kind, with the
  remark that says so.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import memref
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from ember import remarks
from ember.dialects.kernel import REDUCE, BlockOp, ForOp

__all__ = ["is_independent", "is_leaf", "loop_nests", "mark_loop", "scheduled_kinds", "uses_of"]


def loop_nests(kernel: FuncOp) -> list[list[ForOp]]:
    """The perfect loop nests at the top of ``kernel``, outermost loop first."""
    nests: list[list[ForOp]] = []
    for op in kernel.body.block.ops:
        if not isinstance(op, ForOp):
            continue
        nest = [op]
        while True:
            inner = list(nest[-1].body.block.ops)
            if len(inner) != 1 or not isinstance(inner[0], ForOp):
                break
            nest.append(inner[0])
        nests.append(nest)
    return nests


def is_leaf(loop: ForOp) -> bool:
    """Whether ``loop`` holds no other loop (a candidate vector loop)."""
    return not any(isinstance(op, ForOp) for op in loop.body.walk())


def scheduled_kinds(loop: ForOp, ignore: ForOp | None = None) -> set[str]:
    """The kinds other than ``serial`` of ``loop`` and every loop inside it,
    except ``ignore``."""
    kinds = {op.kind.data for op in loop.walk() if isinstance(op, ForOp) and op is not ignore}
    return kinds - {"serial"}


def uses_of(value: SSAValue, inside: Operation) -> Iterator[Operation]:
    """Ops under ``inside`` computed from ``value`` (through index arithmetic
    outside kernel blocks), ending at the kernel blocks that bind them."""
    stack = [value]
    seen: set[SSAValue] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for use in current.uses:
            user = use.operation
            if not inside.is_ancestor(user):
                continue
            yield user
            if not isinstance(user, BlockOp):
                stack.extend(user.results)


def is_independent(loop: ForOp) -> bool:
    """Whether the iterations of ``loop`` may run in any order, or at once.

    True when every ``kernel.block`` under the loop binds the loop's index
    (directly or through index arithmetic) to spatial variables and never to
    a reduction variable, and every store under the loop is inside such a
    block and writes either a buffer allocated inside the loop (scratch of
    one iteration) or an element whose index depends on the loop's index
    (so that two iterations never write the same element).
    """
    iv = loop.induction_var
    bound_vars: dict[BlockOp, set[SSAValue]] = {}
    for user in uses_of(iv, loop):
        if not isinstance(user, BlockOp):
            continue
        for var, kind, bound in zip(user.iter_vars, user.kinds, user.bindings):
            if bound is iv or computed_from(bound, iv):
                if kind == REDUCE:
                    return False
                bound_vars.setdefault(user, set()).add(var)
    for op in loop.walk():
        if isinstance(op, BlockOp) and _enclosing_block(op, loop) is None:
            if op not in bound_vars:
                return False  # every iteration would run it on the same elements
        if not isinstance(op, memref.StoreOp):
            continue
        block = _enclosing_block(op, loop)
        if block is None:
            return False  # a store outside any block: no contract to read
        target = op.memref.owner
        if isinstance(target, memref.AllocOp) and loop.is_ancestor(target):
            continue
        outer = _outermost_block(op, loop)
        variables = bound_vars.get(outer, set())
        if not any(computed_from(index, v) for index in op.indices for v in variables):
            return False
    return True


def _enclosing_block(op: Operation, loop: ForOp) -> BlockOp | None:
    """The innermost kernel block under ``loop`` that holds ``op``."""
    parent = op.parent_op()
    while parent is not None and parent is not loop:
        if isinstance(parent, BlockOp):
            return parent
        parent = parent.parent_op()
    return None


def _outermost_block(op: Operation, loop: ForOp) -> BlockOp | None:
    """The outermost kernel block under ``loop`` that holds ``op``."""
    found = None
    parent = op.parent_op()
    while parent is not None and parent is not loop:
        if isinstance(parent, BlockOp):
            found = parent
        parent = parent.parent_op()
    return found


def computed_from(value: SSAValue, source: SSAValue) -> bool:
    """Whether ``value`` is ``source`` or computed from it (through any op)."""
    stack, seen = [value], set()
    while stack:
        current = stack.pop()
        if current is source:
            return True
        if current in seen or not isinstance(current.owner, Operation):
            continue
        seen.add(current)
        stack.extend(current.owner.operands)
    return False


def mark_loop(pass_name: str, kernel: FuncOp, loop: ForOp, kind: str) -> None:
    """Give ``loop`` of ``kernel`` the kind ``kind``, and say so (an applied remark)."""
    loop.kind = StringAttr(kind)
    remarks.applied(
        pass_name,
        f"kernel @{kernel.sym_name.data}: loop %{loop.induction_var.name_hint or '?'} "
        f"of {loop.trip_count} iterations made {kind}",
        [kernel],
        kernel=kernel.sym_name.data,
        extent=loop.trip_count,
    )
