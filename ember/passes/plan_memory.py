"""``plan-memory``: where each intermediate tensor of a kernel program lives.

After ``lower-graph-to-kernel`` a graph function is a *program*: constants,
``graph.call_kernel`` / ``graph.call_extern`` calls and ``func.return``.
Every call result is a buffer.  This pass gives each one an offset in one
*workspace* buffer, reusing memory once a value is dead (TVM's
``StaticMemoryPlan``, MLIR's buffer reuse): a linear scan over the op order,
a free block of the buffer's own size first, else first fit, 64-byte
aligned offsets; a buffer is freed after its last use,
once the results of that use are placed, so no call writes a buffer it reads.
A result that the function returns (at its first position) is written
straight into that output buffer and takes no workspace.

The plan is IR, so it can be printed, tested and read back:

```mlir
func.func @main(%x: tensor<1x64xf32>) -> tensor<1x64xf32> attributes {ember.naive_bytes = 512 : i64, ember.peak_bytes = 512 : i64, ember.workspace_bytes = 512 : i64} {
  %a = graph.call_kernel @relu0(%x) {ember.offsets = array<i64: 0>} : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %b = graph.call_kernel @relu1(%a) {ember.offsets = array<i64: 256>} : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %c = graph.call_kernel @relu2(%b) {ember.offsets = array<i64: -1>} : (tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %c : tensor<1x64xf32>
}
```

``ember.offsets`` holds one byte offset per result, ``-1`` for a result
written into an output.  On the function, ``ember.workspace_bytes`` is the
workspace size, ``ember.peak_bytes`` the most intermediate bytes live at any
one time (the lower bound of any plan) and ``ember.naive_bytes`` what one
buffer per tensor would take.  The program lowering
(:mod:`ember.lowering.program_to_llvm`) places buffers where the plan says,
planning first if the function carries no plan, and checks a plan it reads
(:func:`checked_plan`): two tensors live at once never share bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ember.dialects.graph import CallExternOp, CallKernelOp, ConstantOp, numpy_dtype
from ember.errors import PassError
from ember.ir import describe_op

ALIGNMENT = 64
OFFSETS = "ember.offsets"
WORKSPACE_BYTES = "ember.workspace_bytes"
PEAK_BYTES = "ember.peak_bytes"
NAIVE_BYTES = "ember.naive_bytes"
DIRECT = -1
"""The offset of a result written straight into the function's output."""

__all__ = ["MemoryPlan", "PlanMemoryPass", "checked_plan", "plan_function"]


def _aligned(n: int) -> int:
    return (max(n, 1) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def buffer_bytes(value: SSAValue) -> int:
    """The aligned size of a call result's buffer."""
    t = value.type
    assert isinstance(t, TensorType)  # guaranteed by the graph verifiers
    return _aligned(prod(t.get_shape()) * numpy_dtype(t.element_type).itemsize)


@dataclass(frozen=True)
class MemoryPlan:
    """Where every call result of one program lives."""

    offsets: dict[SSAValue, int]
    """Byte offset in the workspace, or :data:`DIRECT` (an output buffer)."""
    workspace_bytes: int
    peak_bytes: int
    naive_bytes: int


def check_program(function: func.FuncOp, who: str) -> None:
    """``function`` holds only constants, calls and its return, in one block."""
    for op in function.body.walk():
        if not isinstance(op, ConstantOp | CallKernelOp | CallExternOp | func.ReturnOp):
            raise PassError(
                f"{who}: {op.name} is not lowered to a kernel call "
                f"(run lower-graph-to-kernel first)\n{describe_op(op)}"
            )
    if len(function.body.blocks) != 1:
        raise PassError(f"{who}: @{function.sym_name.data} has several blocks")


def direct_outputs(function: func.FuncOp) -> dict[SSAValue, int]:
    """Call results computed straight into an output: value → output position
    (its first; a value returned twice is copied to the later ones)."""
    ops = list(function.body.block.ops)
    ret = ops[-1]
    assert isinstance(ret, func.ReturnOp)
    direct: dict[SSAValue, int] = {}
    for i, value in enumerate(ret.arguments):
        if isinstance(value.owner, CallKernelOp | CallExternOp) and value not in direct:
            direct[value] = i
    return direct


def _lifetimes(function: func.FuncOp) -> list[tuple[SSAValue, int, int]]:
    """(value, defining position, last-use position) of every workspace buffer."""
    ops = list(function.body.block.ops)
    position = {op: i for i, op in enumerate(ops)}
    direct = direct_outputs(function)
    return [
        (result, i, max((position[u.operation] for u in result.uses), default=i))
        for i, op in enumerate(ops)
        if isinstance(op, CallKernelOp | CallExternOp)
        for result in op.results
        if result not in direct
    ]


class _FirstFit:
    """First-fit allocation of intermediate tensors in one buffer, a free
    block of exactly the size asked for taken first (the latest freed).

    The buffers of one size in a network are mostly made by kernels of one
    kind, whose threads write the same parts of them: a block reused at its
    own size is written by the thread that wrote it last, which on two
    cores of different complexes would otherwise first fetch the dead
    lines from the other core (resnet18 on two Zen 4 vCPUs two complexes
    apart: 17.93 → 17.65 ms, with the same 4.4 MB; docs/runtime.md)."""

    def __init__(self) -> None:
        self.live: list[tuple[int, int]] = []  # (offset, size), sorted by offset
        self.freed: list[tuple[int, int]] = []  # (offset, size), oldest first
        self.size = 0

    def allocate(self, nbytes: int) -> int:
        offset = self._freed_of_size(nbytes)
        if offset is None:
            offset = 0
            for start, size in self.live:
                if start - offset >= nbytes:
                    break
                offset = start + size
        self.live.append((offset, nbytes))
        self.live.sort()
        self.size = max(self.size, offset + nbytes)
        return offset

    def _freed_of_size(self, nbytes: int) -> int | None:
        """The latest freed block of ``nbytes`` still free; forgets the
        freed blocks that live ones overlap now."""
        self.freed = [block for block in self.freed if not self._overlaps_live(*block)]
        for offset, size in reversed(self.freed):
            if size == nbytes:
                self.freed.remove((offset, size))
                return offset
        return None

    def _overlaps_live(self, offset: int, nbytes: int) -> bool:
        return any(start < offset + nbytes and offset < start + size for start, size in self.live)

    def free(self, offset: int) -> None:
        self.freed += [(o, s) for o, s in self.live if o == offset]
        self.live = [(o, s) for o, s in self.live if o != offset]


def _peak(lifetimes: list[tuple[SSAValue, int, int]]) -> int:
    """The most bytes live at once: a buffer is live from its call to its last use."""
    events = [0] * (max((end for _, _, end in lifetimes), default=0) + 2)
    for value, start, end in lifetimes:
        events[start] += buffer_bytes(value)
        events[end + 1] -= buffer_bytes(value)
    peak = live = 0
    for change in events:
        live += change
        peak = max(peak, live)
    return peak


def plan_function(function: func.FuncOp) -> MemoryPlan:
    """Plan ``function``'s buffers (first fit over the op order)."""
    check_program(function, "plan-memory")
    lifetimes = _lifetimes(function)
    ends: dict[int, list[SSAValue]] = {}
    for value, _, end in lifetimes:
        ends.setdefault(end, []).append(value)
    allocator = _FirstFit()
    offsets: dict[SSAValue, int] = dict.fromkeys(direct_outputs(function), DIRECT)
    for position, op in enumerate(function.body.block.ops):
        for result in op.results:
            if isinstance(op, CallKernelOp | CallExternOp) and result not in offsets:
                offsets[result] = allocator.allocate(buffer_bytes(result))
        for value in ends.get(position, ()):
            allocator.free(offsets[value])
    return MemoryPlan(
        offsets,
        allocator.size,
        _peak(lifetimes),
        sum(buffer_bytes(value) for value, _, _ in lifetimes),
    )


def annotate(function: func.FuncOp, plan: MemoryPlan) -> None:
    """Write ``plan`` into ``function`` as the attributes above."""
    for op in function.body.block.ops:
        if isinstance(op, CallKernelOp | CallExternOp):
            op.attributes[OFFSETS] = DenseArrayBase.from_list(
                i64, [plan.offsets[r] for r in op.results]
            )
    for name, value in (
        (WORKSPACE_BYTES, plan.workspace_bytes),
        (PEAK_BYTES, plan.peak_bytes),
        (NAIVE_BYTES, plan.naive_bytes),
    ):
        function.attributes[name] = IntegerAttr(value, i64)


def _read_plan(function: func.FuncOp, who: str) -> MemoryPlan:
    """The plan written in ``function``'s attributes, as written (unchecked)."""
    sizes = []
    for name in (WORKSPACE_BYTES, PEAK_BYTES, NAIVE_BYTES):
        attr = function.attributes.get(name)
        if not isinstance(attr, IntegerAttr) or attr.value.data < 0:
            raise PassError(
                f"{who}: @{function.sym_name.data} has no valid {name} "
                f"(a non-negative i64; got {attr})"
            )
        sizes.append(attr.value.data)
    offsets: dict[SSAValue, int] = {}
    for op in function.body.block.ops:
        if not isinstance(op, CallKernelOp | CallExternOp):
            continue
        attr = op.attributes.get(OFFSETS)
        values = attr.get_values() if isinstance(attr, DenseArrayBase) else None
        if values is None or len(values) != len(op.results):
            raise PassError(
                f"{who}: {op.name} needs {OFFSETS}, one i64 per result "
                f"({len(op.results)}), got {attr}\n{describe_op(op)}"
            )
        offsets.update(zip(op.results, (int(v) for v in values)))
    return MemoryPlan(offsets, *sizes)


def checked_plan(function: func.FuncOp, who: str) -> MemoryPlan:
    """The plan in ``function``'s attributes (planned now if it has none),
    checked: direct results are the function's outputs, every other buffer
    is aligned and inside the workspace, and buffers live at the same time
    do not overlap.  A wrong plan is a :class:`PassError` naming the op."""
    check_program(function, who)
    if WORKSPACE_BYTES not in function.attributes:
        annotate(function, plan_function(function))
    plan = _read_plan(function, who)
    direct = direct_outputs(function)

    def bad(value: SSAValue, why: str) -> PassError:
        assert isinstance(value.owner, Operation)
        return PassError(f"{who}: wrong memory plan: {why}\n{describe_op(value.owner)}")

    lifetimes = _lifetimes(function)
    for value in direct:
        if plan.offsets[value] != DIRECT:
            raise bad(value, f"{value.name_hint or 'a result'} is returned, so its offset must be {DIRECT}")
    for value, _, _ in lifetimes:
        offset = plan.offsets[value]
        if offset < 0 or offset % ALIGNMENT or offset + buffer_bytes(value) > plan.workspace_bytes:
            raise bad(
                value,
                f"offset {offset} of a {buffer_bytes(value)}-byte buffer is not a multiple "
                f"of {ALIGNMENT} inside the {plan.workspace_bytes}-byte workspace",
            )
    by_start = sorted(lifetimes, key=lambda item: item[1])
    for i, (value, start, end) in enumerate(by_start):
        low, high = plan.offsets[value], plan.offsets[value] + buffer_bytes(value)
        for other, other_start, _ in by_start[i + 1 :]:
            if other_start > end:
                break
            other_low = plan.offsets[other]
            if other_low < high and low < other_low + buffer_bytes(other):
                raise bad(
                    other,
                    f"its buffer [{other_low}, {other_low + buffer_bytes(other)}) overlaps "
                    f"[{low}, {high}) of a value still live",
                )
    return plan


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Plan the workspace of every program function (not the kernels)."""

    name = "plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        programs = [
            f
            for f in op.ops
            if isinstance(f, func.FuncOp) and "kernel.kernel" not in f.attributes
        ]
        plans = [plan_function(f) for f in programs]  # every check before any change
        for function, plan in zip(programs, plans):
            annotate(function, plan)
