"""A static cost model of graph ops: FLOPs and bytes moved, from types alone.

Used where a pass weighs parts of a graph against each other (split-graph's
stage costs, in its remarks) without running anything.  The figures are
estimates with TVM's conventions: a multiply-add is 2 FLOPs, an elementwise
op 1 per output element, and bytes are the operands read plus the results
written once each (no cache model).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

__all__ = ["Cost", "op_cost", "total_cost"]


@dataclass(frozen=True)
class Cost:
    flops: int = 0
    bytes: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.bytes + other.bytes)

    def describe(self) -> str:
        return f"{_si(self.flops)}FLOP, {_si(self.bytes)}B"


def _si(value: float) -> str:
    for unit in ("", "k", "M", "G", "T"):
        if abs(value) < 1000:
            return f"{value:.3g} {unit}" if unit else f"{value:.3g} "
        value /= 1000
    return f"{value:.3g} P"


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape()) if isinstance(value.type, TensorType) else ()


def _bytes(value: SSAValue) -> int:
    if not isinstance(value.type, TensorType):
        return 0
    width = getattr(value.type.element_type, "bitwidth", 32)
    return math.prod(_shape(value)) * max(width, 8) // 8


def op_cost(op: Operation) -> Cost:
    """The estimated cost of one graph op (0 for constants and terminators)."""
    if op.name in ("graph.constant", "func.return") or not op.results:
        return Cost()
    out = math.prod(_shape(op.results[0]))
    if op.name == "graph.conv2d":
        _, cin_per_group, kh, kw = _shape(op.operands[1])
        flops = 2 * out * cin_per_group * kh * kw
    elif op.name == "graph.dense":
        flops = 2 * out * _shape(op.operands[1])[-1]
    elif op.name == "graph.matmul":
        flops = 2 * out * _shape(op.operands[0])[-1]
    elif op.name in ("graph.max_pool2d", "graph.avg_pool2d"):
        flops = out * math.prod(op.attr("pool_size"))  # type: ignore[attr-defined]
    elif op.name == "graph.global_avg_pool2d":
        flops = math.prod(_shape(op.operands[0]))
    elif op.name == "graph.softmax":
        flops = 4 * out
    else:
        flops = out
    moved = sum(_bytes(v) for v in op.operands) + sum(_bytes(v) for v in op.results)
    return Cost(flops, moved)


def total_cost(ops: Iterable[Operation]) -> Cost:
    """The sum of :func:`op_cost` over ``ops`` (nested ops included)."""
    total = Cost()
    for op in ops:
        for inner in op.walk():
            total += op_cost(inner)
    return total
