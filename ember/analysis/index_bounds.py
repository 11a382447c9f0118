"""Index ranges of kernel memory accesses, by interval analysis.

Every ``memref.load`` / ``memref.store`` of a kernel indexes a statically
shaped buffer.  This module computes, for each index, the integers it can
take, and sorts each access dimension into one of three verdicts:

* ``in bounds`` — proven: every value lies in ``[0, size)``;
* ``out of bounds`` — proven: the access runs and some value it takes lies
  outside (the kernel verifier rejects it);
* ``unknown`` — neither can be decided (an index loaded from memory, a
  product of two loop variables near the edge, an access under a guard);
  ``bounds_check`` builds test these at run time.

Indices are analysed as in MLIR's ``IntegerRangeAnalysis`` and TVM's
``arith::ConstIntBound``, with one refinement that makes rejection sound:
an index that is *affine* in loop variables (``%i * 4 + %j - 1``) is kept as
that linear form, so its range over the loops' constant bounds is exact —
both ends are values it really takes (loop variables are independent, and
each extreme is reached at a corner of the iteration box).  Anything else
(``divsi``/``remsi`` by a constant, ``select``, ``min``/``max`` patterns) is
a plain interval, which may be wider than what happens; such an interval
proves an access out of bounds only when it lies wholly outside.  An access
is assumed to run only when every op around it up to the kernel is a
non-empty ``kernel.for``, a ``kernel.block`` or the function; code under a
``kernel.init`` or any other region-holding op runs conditionally.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from ember.dialects.kernel import BlockOp, ForOp, is_kernel


@dataclass(frozen=True)
class IndexRange:
    """``[low, high]``; ``attained``: both ends are values the index takes."""

    low: int
    high: int
    attained: bool


@dataclass
class _Affine:
    """``constant + Σ coefficient · loop variable``."""

    terms: dict[BlockArgument, int]
    constant: int


_Expr = _Affine | IndexRange | None
"""What is known of an index: a linear form, an interval, or nothing."""


class Verdict(Enum):
    IN_BOUNDS = "in bounds"
    OUT_OF_BOUNDS = "out of bounds"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class AccessDimension:
    """One dimension of one load or store, and what is known of its index."""

    op: memref.LoadOp | memref.StoreOp
    dimension: int
    size: int
    range: IndexRange | None
    verdict: Verdict


def _loop_range(loop: ForOp) -> IndexRange | None:
    if loop.trip_count == 0:
        return None
    last = loop.lb + (loop.trip_count - 1) * loop.step_value
    return IndexRange(loop.lb, last, True)


def _tdiv(a: int, b: int) -> int:
    """``a / b`` rounded toward zero, as ``arith.divsi`` does (``b > 0``)."""
    return -(-a // b) if a < 0 else a // b


class _IndexAnalysis:
    """Linear forms and intervals of the index values of one kernel (memoised)."""

    def __init__(self) -> None:
        self._known: dict[SSAValue, _Expr] = {}

    def range_of(self, value: SSAValue) -> IndexRange | None:
        return self._as_range(self.expr(value))

    def expr(self, value: SSAValue) -> _Expr:
        if value not in self._known:
            self._known[value] = self._compute(value)
        return self._known[value]

    def _as_range(self, expr: _Expr) -> IndexRange | None:
        if not isinstance(expr, _Affine):
            return expr
        low = high = expr.constant
        for var, coefficient in expr.terms.items():
            loop = var.owner.parent_op()
            assert isinstance(loop, ForOp)
            bounds = _loop_range(loop)
            if bounds is None:
                return None
            ends = (coefficient * bounds.low, coefficient * bounds.high)
            low, high = low + min(ends), high + max(ends)
        return IndexRange(low, high, True)

    def _compute(self, value: SSAValue) -> _Expr:
        if isinstance(value, BlockArgument):
            owner = value.owner.parent_op()
            if isinstance(owner, ForOp) and value is owner.induction_var:
                return _Affine({value: 1}, 0) if owner.trip_count else None
            if isinstance(owner, BlockOp):
                return self.expr(owner.bindings[value.index])
            return None
        op = value.owner
        if isinstance(op, arith.ConstantOp):
            attr = op.value
            if not isinstance(attr, IntegerAttr):
                return None
            return _Affine({}, attr.value.data)
        if isinstance(op, arith.IndexCastOp) and isinstance(op.result.type, IndexType):
            return self.expr(op.input)
        if isinstance(op, arith.AddiOp | arith.SubiOp):
            sign = 1 if isinstance(op, arith.AddiOp) else -1
            return self._add(self.expr(op.lhs), self.expr(op.rhs), sign)
        if isinstance(op, arith.MuliOp):
            return self._mul(self.expr(op.lhs), self.expr(op.rhs))
        if isinstance(op, arith.DivSIOp | arith.RemSIOp):
            divisor = self.expr(op.rhs)
            positive = isinstance(divisor, _Affine) and divisor.constant > 0
            if not positive or divisor.terms:
                return None
            dividend = self.range_of(op.lhs)
            if dividend is None:
                return None
            if isinstance(op, arith.DivSIOp):
                return _divide(dividend, divisor.constant)
            return _remainder(dividend, divisor.constant)
        if isinstance(op, arith.SelectOp):
            return self._select(op)
        return None

    def _add(self, lhs: _Expr, rhs: _Expr, sign: int) -> _Expr:
        if isinstance(lhs, _Affine) and isinstance(rhs, _Affine):
            terms = dict(lhs.terms)
            for var, coefficient in rhs.terms.items():
                terms[var] = terms.get(var, 0) + sign * coefficient
            terms = {var: c for var, c in terms.items() if c}
            return _Affine(terms, lhs.constant + sign * rhs.constant)
        left, right = self._as_range(lhs), self._as_range(rhs)
        if left is None or right is None:
            return None
        if sign < 0:
            right = IndexRange(-right.high, -right.low, right.attained)
        # Shifting by a constant keeps the ends attained; a sum of two
        # intervals of unknown correlation does not.
        attained = (left.attained and right.low == right.high) or (
            right.attained and left.low == left.high
        )
        return IndexRange(left.low + right.low, left.high + right.high, attained)

    def _mul(self, lhs: _Expr, rhs: _Expr) -> _Expr:
        for factor, other in ((lhs, rhs), (rhs, lhs)):
            if isinstance(factor, _Affine) and not factor.terms:
                scale = factor.constant
                if isinstance(other, _Affine):
                    return _Affine(
                        {v: c * scale for v, c in other.terms.items() if c * scale},
                        other.constant * scale,
                    )
                if other is None:
                    return None
                ends = (other.low * scale, other.high * scale)
                return IndexRange(min(ends), max(ends), other.attained)
        left, right = self._as_range(lhs), self._as_range(rhs)
        if left is None or right is None:
            return None
        products = [
            a * b for a in (left.low, left.high) for b in (right.low, right.high)
        ]
        return IndexRange(min(products), max(products), False)

    def _select(self, op: arith.SelectOp) -> _Expr:
        """``select`` of two indices: their hull, or exactly ``max``/``min``
        for ``select(cmpi sgt|sge|slt|sle (a, b), a, b)`` (how the lowering
        clamps window bounds)."""
        first, second = self.range_of(op.lhs), self.range_of(op.rhs)
        if first is None or second is None:
            return None
        condition = op.cond.owner
        if (
            isinstance(condition, arith.CmpiOp)
            and {condition.lhs, condition.rhs} == {op.lhs, op.rhs}
            and condition.predicate.value.data in _SIGNED_ORDER
        ):
            picks_max = _SIGNED_ORDER[condition.predicate.value.data]
            if condition.lhs is not op.lhs:  # select(a < b, b, a) is max(a, b)
                picks_max = not picks_max
            pick = max if picks_max else min
            return IndexRange(
                pick(first.low, second.low), pick(first.high, second.high), False
            )
        return IndexRange(
            min(first.low, second.low), max(first.high, second.high), False
        )


_SIGNED_ORDER = {2: False, 3: False, 4: True, 5: True}
"""``arith.cmpi`` predicates slt, sle, sgt, sge → whether selecting the lhs
when true gives the maximum."""


def _divide(dividend: IndexRange, divisor: int) -> IndexRange:
    # Division by a positive constant is monotone: attained ends stay attained.
    return IndexRange(
        _tdiv(dividend.low, divisor), _tdiv(dividend.high, divisor), dividend.attained
    )


def _remainder(dividend: IndexRange, divisor: int) -> IndexRange:
    if dividend.low >= 0 and dividend.high < divisor:
        return dividend
    if dividend.high <= 0 and dividend.low > -divisor:
        return dividend
    low = 0 if dividend.low >= 0 else -(divisor - 1)
    high = 0 if dividend.high <= 0 else divisor - 1
    return IndexRange(low, high, False)


def _runs(op: Operation, kernel: FuncOp) -> bool | None:
    """Whether ``op`` runs on every iteration of the loops around it
    (``True``), never (``None``: an empty loop), or maybe (``False``)."""
    always = True
    parent = op.parent_op()
    while parent is not None and parent is not kernel:
        if isinstance(parent, ForOp):
            if parent.trip_count == 0:
                return None
        elif not isinstance(parent, BlockOp):
            always = False
        parent = parent.parent_op()
    return always


def kernel_accesses(kernel: FuncOp) -> Iterator[AccessDimension]:
    """Each dimension of each load and store of ``kernel``, with its verdict.

    Accesses that never run (under an empty loop) are in bounds.
    """
    analysis = _IndexAnalysis()
    for op in kernel.walk():
        if not isinstance(op, memref.LoadOp | memref.StoreOp):
            continue
        buffer_type = op.memref.type
        if not isinstance(buffer_type, MemRefType):
            continue
        runs = _runs(op, kernel)
        shape = buffer_type.get_shape()
        for dimension, (index, size) in enumerate(zip(op.indices, shape)):
            index_range = analysis.range_of(index) if runs is not None else None
            yield AccessDimension(
                op, dimension, size, index_range, _verdict(index_range, size, runs)
            )


def _verdict(index: IndexRange | None, size: int, runs: bool | None) -> Verdict:
    if runs is None:
        return Verdict.IN_BOUNDS
    if index is None or size < 0:
        return Verdict.UNKNOWN
    if 0 <= index.low and index.high < size:
        return Verdict.IN_BOUNDS
    wholly_outside = index.high < 0 or index.low >= size
    if runs and (index.attained or wholly_outside):
        return Verdict.OUT_OF_BOUNDS
    return Verdict.UNKNOWN


def unproven_accesses(kernel: FuncOp) -> dict[Operation, tuple[int, ...]]:
    """The dimensions of each access of ``kernel`` not proven in bounds
    (what a ``bounds_check`` build tests at run time)."""
    unproven: dict[Operation, tuple[int, ...]] = {}
    for access in kernel_accesses(kernel):
        if access.verdict is not Verdict.IN_BOUNDS:
            unproven[access.op] = (*unproven.get(access.op, ()), access.dimension)
    return unproven


def describe_buffer(buffer: SSAValue) -> str:
    """``%X (memref<4x8xf32>)``: how diagnostics name a buffer."""
    if buffer.name_hint:
        name = f"%{buffer.name_hint}"
    elif isinstance(buffer, BlockArgument):
        name = f"argument #{buffer.index}"
    else:
        name = "a buffer"
    return f"{name} ({buffer.type})"


def describe_index(op: memref.LoadOp | memref.StoreOp, dimension: int) -> str:
    index = op.indices[dimension]
    return f"%{index.name_hint}" if index.name_hint else f"#{dimension}"


def out_of_bounds_accesses(module: ModuleOp) -> Iterator[tuple[Operation, str]]:
    """Each load or store of a kernel of ``module`` proven out of bounds,
    with a message naming the kernel, buffer, dimension, index and range."""
    for kernel in (op for op in module.walk() if is_kernel(op)):
        assert isinstance(kernel, FuncOp)
        for access in kernel_accesses(kernel):
            if access.verdict is not Verdict.OUT_OF_BOUNDS:
                continue
            assert access.range is not None
            op = access.op
            verb = "reads" if isinstance(op, memref.LoadOp) else "writes"
            takes = "ranges over" if access.range.attained else "lies in"
            yield op, (
                f"kernel @{kernel.sym_name.data} {verb} {describe_buffer(op.memref)} "
                f"out of bounds: index {describe_index(op, access.dimension)} of "
                f"dimension {access.dimension} {takes} [{access.range.low}, "
                f"{access.range.high}], but that dimension has size {access.size} "
                f"(indices 0 to {access.size - 1})"
            )
