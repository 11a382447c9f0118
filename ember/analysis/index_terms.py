"""Index expressions of kernel loads and stores as sums of variables times factors.

What the schedule passes that recognise a nest from its loads and stores
(``kernel-tensorize``, ``kernel-pad-input``, ``kernel-separate-window``,
``kernel-accumulate-rows``) read an index as: :func:`index_terms` turns the
``arith`` ops an index is computed with (``addi``, ``muli`` by a constant,
``divsi``/``remsi`` of a variable by a constant, constants) into a
dictionary of :data:`Variable` → factor, or says it is not of that form.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import SSAValue

__all__ = ["ONE", "Index", "Variable", "index_terms", "is_zero_index"]

Variable = tuple[str, int] | tuple[str, int, int]
"""``("s", d)``: the result's index ``d``; ``("r", d)``: the reduction's;
``("s//", d, q)`` and ``("s%", d, q)``: the result's index ``d`` divided by
``q`` (rounding down) and its remainder (a grouped convolution's group and
channel in the group); ``ONE``: the constant 1 (its factor is an offset)."""
Index = tuple[tuple[Variable, int], ...]
"""An operand index as a sum of variables times factors, sorted;
``()`` is the constant 0."""

ONE: Variable = ("1", 0)


def is_zero_index(value: SSAValue) -> bool:
    op = value.owner
    return (
        isinstance(op, arith.ConstantOp)
        and isinstance(op.value, IntegerAttr)
        and op.value.value.data == 0
    )


def index_terms(value: SSAValue, variables: dict[SSAValue, Variable]) -> dict[Variable, int] | None:
    """``value`` as variables times factors, if it is one (``addi``, ``muli``
    by a constant, block variables and their ``divsi``/``remsi`` by a
    constant, constants)."""
    if value in variables:
        return {variables[value]: 1}
    op = value.owner
    if is_zero_index(value):
        return {}
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return {ONE: op.value.value.data}
    if isinstance(op, arith.AddiOp):
        lhs, rhs = index_terms(op.lhs, variables), index_terms(op.rhs, variables)
        if lhs is None or rhs is None:
            return None
        return {v: lhs.get(v, 0) + rhs.get(v, 0) for v in {*lhs, *rhs}}
    if isinstance(op, arith.MuliOp):
        factor = op.rhs.owner
        terms = index_terms(op.lhs, variables)
        if terms is None or not isinstance(factor, arith.ConstantOp):
            return None
        return {v: f * factor.value.value.data for v, f in terms.items()}  # type: ignore[attr-defined]
    if isinstance(op, arith.DivSIOp | arith.RemSIOp) and op.lhs in variables:
        divisor = op.rhs.owner
        if isinstance(divisor, arith.ConstantOp) and divisor.value.value.data > 0:  # type: ignore[attr-defined]
            kind, d = variables[op.lhs][:2]
            suffix = "//" if isinstance(op, arith.DivSIOp) else "%"
            return {(kind + suffix, d, divisor.value.value.data): 1}  # type: ignore[attr-defined]
    return None
