"""``kernel-pack-layout``: read a kernel input in blocked layout, packed at bind time.

TVM's ``AlterOpLayout`` (OIHW → OIHW8o, NCHW → NCHW8c) as a kernel pass:
axis ``axis`` of input ``arg`` of kernel ``@kernel`` is split into blocks of
``lanes`` and the lane moved innermost — ``W[…, c, …]`` becomes the f32
``P[…, c // lanes, …, c % lanes]``, the elements past the end zero — and
each load from it reads the packed element instead::

    kernel-pack-layout{kernel=dense arg=1 lanes=8}          # OI → O/8·I·8o
    kernel-pack-layout{kernel=conv2d arg=0 axis=1 lanes=8}  # NCHW → NCHW8c

```mlir
%w = memref.load %W[%o, %k] : memref<10x784xf32>
  -->
%w = memref.load %W[%o / 8, %k, %o % 8] : memref<2x784x8xf32>
```

Along axis 0 this is the panel layout of the conv2d/dense micro-kernels
(:class:`~ember.lowering.graph_to_kernel.WeightPacking`).  The data is
repacked where it is bound, not at run time: every ``graph.call_kernel
@kernel`` in the module must pass a ``graph.constant`` there, which is
replaced by its packed copy (the original goes once nothing else reads it).
A kernel no one calls in the module changes its argument alone: the caller
passes packed data.  The pass refuses, naming the reason and before
changing anything, an input the kernel writes or passes on, one that is not
f32, an axis it does not have, and a call that passes a value that is not a
constant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from ember.dialects.graph import CallKernelOp, ConstantOp
from ember.dialects.kernel import find_kernel
from ember.errors import IRError, PassError


def _fail(message: str) -> PassError:
    return PassError(f"kernel-pack-layout: {message}")


def _checked_input(kernel: FuncOp, arg: int) -> tuple[SSAValue, MemRefType]:
    """Argument ``arg`` of ``kernel`` and its type, if it can change layout."""
    name = kernel.sym_name.data
    args = kernel.body.block.args
    if not 0 <= arg < len(args):
        raise _fail(f"@{name} has {len(args)} arguments, there is no arg={arg}")
    value = args[arg]
    t = value.type
    if not isinstance(t, MemRefType) or t.element_type != f32 or not t.get_shape():
        raise _fail(f"argument #{arg} of @{name} is {t}; only f32 memrefs of rank >= 1 are packed")
    for use in value.uses:
        if not isinstance(use.operation, memref.LoadOp) or use.index != 0:
            raise _fail(
                f"argument #{arg} of @{name} is used by {use.operation.name}; "
                "only an input the kernel reads with memref.load changes layout"
            )
    return value, t


def _callers(module: ModuleOp, name: str, arg: int) -> list[tuple[CallKernelOp, ConstantOp]]:
    calls = [op for op in module.walk() if isinstance(op, CallKernelOp) and op.callee == name]
    found = []
    for call in calls:
        source = call.operands[arg].owner
        if not isinstance(source, ConstantOp):
            raise _fail(
                f"operand #{arg} of a call of @{name} is not a graph.constant; "
                "layouts change at bind time, so the data must be bound"
            )
        found.append((call, source))
    return found


def packed_shape(shape: Sequence[int], axis: int, lanes: int) -> tuple[int, ...]:
    """``shape`` with ``axis`` split into blocks of ``lanes``, the lane last."""
    blocked = list(shape)
    blocked[axis] = -(-shape[axis] // lanes)
    return (*blocked, lanes)


def pack(array: np.ndarray, axis: int, lanes: int) -> np.ndarray:
    """``array`` in the layout of :func:`packed_shape`, as f32, zero-padded."""
    padded_shape = list(array.shape)
    padded_shape[axis] = -(-array.shape[axis] // lanes) * lanes
    padded = np.zeros(padded_shape, np.float32)
    padded[tuple(slice(0, n) for n in array.shape)] = array
    split = padded.reshape(*padded_shape[:axis], -1, lanes, *padded_shape[axis + 1 :])
    return np.ascontiguousarray(np.moveaxis(split, axis + 1, -1))


@dataclass(frozen=True)
class KernelPackLayoutPass(ModulePass):
    """Read input ``arg`` of ``@kernel`` with ``axis`` blocked by ``lanes``, packed at bind time."""

    name = "kernel-pack-layout"

    kernel: str = ""
    """The kernel whose input changes layout."""

    arg: int = 0
    """Which argument of the kernel (0 = first)."""

    axis: int = 0
    """The axis split into blocks (0: OIHW → OIHW8o, 1: NCHW → NCHW8c)."""

    lanes: int = 8
    """Elements of ``axis`` per block (the innermost axis of the layout)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.kernel:
            raise _fail("give the kernel to change: kernel-pack-layout{kernel=NAME arg=N lanes=L}")
        if self.lanes < 1:
            raise _fail(f"lanes must be >= 1, got {self.lanes}")
        try:
            kernel = find_kernel(op, self.kernel)
        except IRError as e:
            raise _fail(str(e)) from None
        value, t = _checked_input(kernel, self.arg)
        rank = len(t.get_shape())
        if not 0 <= self.axis < rank:
            raise _fail(
                f"argument #{self.arg} of @{self.kernel} has {rank} axes, there is no axis={self.axis}"
            )
        callers = _callers(op, self.kernel, self.arg)
        packed_type = MemRefType(f32, packed_shape(t.get_shape(), self.axis, self.lanes))
        packed: dict[ConstantOp, SSAValue] = {}
        for call, constant in callers:
            if constant not in packed:
                new = ConstantOp.from_array(pack(constant.to_array(), self.axis, self.lanes))
                block = constant.parent_block()
                assert block is not None  # constants live in function bodies
                block.insert_op_after(new, constant)
                hint = constant.results[0].name_hint
                new.results[0].name_hint = f"{hint}_packed" if hint else None
                packed[constant] = new.results[0]
            call.operands[self.arg] = packed[constant]
        for constant in packed:
            if not constant.results[0].uses:
                constant.parent_block().erase_op(constant)  # type: ignore[union-attr]
        loads = [use.operation for use in value.uses]
        new_value = Rewriter.replace_value_with_new_type(value, packed_type)
        kernel.update_function_type()
        for load in loads:
            assert isinstance(load, memref.LoadOp)  # checked by _checked_input
            _rewrite_load(load, new_value, self.axis, self.lanes)


def _rewrite_load(load: memref.LoadOp, packed: SSAValue, axis: int, lanes: int) -> None:
    """``load W[…, c, …]`` → ``load P[…, c / lanes, …, c % lanes]``."""
    block = load.parent_block()
    assert block is not None  # loads live in blocks
    indices = list(load.indices)
    width = arith.ConstantOp.from_int_and_width(lanes, IndexType())
    block_index = arith.DivSIOp(indices[axis], width)
    lane = arith.RemSIOp(indices[axis], width)
    indices[axis] = block_index.result
    new = memref.LoadOp.get(packed, [*indices, lane.result])
    block.insert_ops_before([width, block_index, lane, new], load)
    new.res.name_hint = load.res.name_hint
    load.res.replace_all_uses_with(new.res)
    block.erase_op(load)
