"""``kernel-pack-layout``: read a kernel input in panels, packed at bind time.

TVM's ``AlterOpLayout`` (OIHW → OIHW8o, NCHW → NCHW8c) as a kernel pass:
input ``arg`` of kernel ``@kernel``, ``W[o, r…]``, becomes the f32 panels
``P[o // lanes, r…, o % lanes]`` (the channels past the end zero,
:class:`~ember.lowering.graph_to_kernel.WeightPacking`), and each load from
it reads the panel element instead::

    kernel-pack-layout{kernel=dense arg=1 lanes=8}

```mlir
%w = memref.load %W[%o, %k] : memref<10x784xf32>
  -->
%w = memref.load %W[%o / 8, %k, %o % 8] : memref<2x784x8xf32>
```

The data is repacked where it is bound, not at run time: every
``graph.call_kernel @kernel`` in the module must pass a ``graph.constant``
there, which is replaced by its packed copy (the original goes once nothing
else reads it).  A kernel no one calls in the module changes its argument
alone: the caller passes panels.  The pass refuses, naming the reason and
before changing anything, an input the kernel writes or passes on, one that
is not f32, and a call that passes a value that is not a constant.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from ember.lowering.graph_to_kernel import WeightPacking


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


@dataclass(frozen=True)
class KernelPackLayoutPass(ModulePass):
    """Read input ``arg`` of ``@kernel`` in panels of ``lanes``, packed at bind time."""

    name = "kernel-pack-layout"

    kernel: str = ""
    """The kernel whose input changes layout."""

    arg: int = 0
    """Which argument of the kernel (0 = first)."""

    lanes: int = 8
    """Elements of the first axis per panel (the innermost axis of the layout)."""

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
        callers = _callers(op, self.kernel, self.arg)
        packing = WeightPacking(self.lanes)
        packed_type = MemRefType(f32, packing.shape(t.get_shape()))
        packed: dict[ConstantOp, SSAValue] = {}
        for call, constant in callers:
            if constant not in packed:
                new = ConstantOp.from_array(packing.pack(constant.to_array()))
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
            _rewrite_load(load, new_value, self.lanes)


def _rewrite_load(load: memref.LoadOp, panels: SSAValue, lanes: int) -> None:
    """``load W[o, r…]`` → ``load P[o / lanes, r…, o % lanes]``."""
    block = load.parent_block()
    assert block is not None  # loads live in blocks
    first, *rest = load.indices
    width = arith.ConstantOp.from_int_and_width(lanes, IndexType())
    panel = arith.DivSIOp(first, width)
    lane = arith.RemSIOp(first, width)
    new = memref.LoadOp.get(panels, [panel.result, *rest, lane.result])
    block.insert_ops_before([width, panel, lane, new], load)
    new.res.name_hint = load.res.name_hint
    load.res.replace_all_uses_with(new.res)
    block.erase_op(load)
