"""Hypothesis strategies that generate random, well-typed graph programs.

Use them to property-test a pass — ember's or your own — against the
reference interpreter::

    from hypothesis import given
    from ember.testing.strategies import graph_programs

    @given(graph_programs(dtypes=("float32", "float16")))
    def test_my_pass_is_sound(program):
        before = ember.interpret(program.module, program.entry, *program.inputs)
        module = program.fresh_module()
        MyPass().apply(make_context(), module)
        after = ember.interpret(module, program.entry, *program.inputs)
        ...  # compare before and after

This mirrors what compiler projects do with random program generators (Csmith
for C compilers, TVM's and MLIR's random-graph fuzzers): the generator knows
the typing rules of every op, so every program it produces verifies, and it
knows which values keep the arithmetic well defined, so no op overflows or
divides by zero on the generated inputs.  IEEE special values still occur:
by default some input arrays hold NaN, ±inf, -0.0 or denormals (see
below), and compiled code must give them the interpreter's results.

What a generated program looks like
-----------------------------------
One ``func.func @main`` over ``tensor<…>`` values built from the ops of
:mod:`ember.dialects.graph`: straight chains and DAGs (any earlier value may
be used again, so values have several consumers), numpy broadcasting between
operands of different ranks and shapes (rank-0 tensors included), weights and
other secondary operands that are either function arguments or
``graph.constant`` ops (often filled with 0, 1 or -1 so that algebraic
simplifications have something to fire on), and 1 to ``max_outputs`` results
(the last op's value always among them, then preferably values nobody
uses; the rest is dead code).  Each program draws its ops from a random
subset of the allowed ones ("swarm testing"), so chains such as
``transpose(transpose(x))`` that peephole patterns match are common.  Input
arrays are mostly dense random noise, sometimes hypothesis' edge cases.

How the arithmetic stays well defined
-------------------------------------
Every value carries a conservative interval ``[lo, hi]`` of what it can hold
on the generated inputs (interval arithmetic over the op's semantics).  An op
only takes operands whose interval suits it: ``sqrt`` needs ``lo >= 0``,
``divide`` a divisor bounded away from zero, ``exp`` an input ``<= 5``, and
no op may produce a value beyond ``±1e4`` (f16 overflows at 65504).  When no
existing value qualifies, the operand is a fresh argument or constant drawn
from ``[-2, 2]`` (or ``[0.5, 2]`` where a positive value is needed).

IEEE special values
-------------------
Unless ``graph_programs(finite=True)``, one data argument (a primary
operand, not a weight) in three gets one to three elements replaced by NaN,
+inf, -inf, -0.0 or a denormal, so NaN positions and inf signs are checked
exactly wherever results are compared
(:func:`ember.testing.assert_same_values`).  A value that may hold NaN or
inf (its bounds then describe only its finite elements, except that results
such as ``x / inf`` may be 0) is *special*, and so is every result computed
from it; special values are never divisors, batch_norm parameters or cast
to an integer type, whose results would not be defined, would depend on the
sign of a zero, or would change when batch_norm is folded into a multiply
and an add.  Constants, weights and positive arguments (divisors,
variances) are always finite.

Shapes are tiny (dimensions 1..6, spatial 1..8, rank <= 4) so the reference
interpreter runs each program in milliseconds.

Each draw builds a new module: passes mutate modules in place, so examples
never share IR.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.extra import numpy as hnp
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue

from ember.dialects import graph
from ember.dialects.graph import GRAPH_OPS, OPS_BY_NAME, GraphOp, tensor_type
from ember.ir import to_text

__all__ = [
    "DTYPES",
    "GraphProgram",
    "arrays_for",
    "graph_programs",
    "op_names",
    "tensor_types",
]

DTYPES: tuple[str, ...] = ("float32", "float16", "int32")
"""Element types the strategies can generate (numpy names)."""

_FLOATS = frozenset({"float32", "float16"})

# Ops that accept integer tensors (the others are float-only in graph.py).
_INT_OPS = frozenset(
    {
        "graph.negative",
        "graph.add",
        "graph.subtract",
        "graph.multiply",
        "graph.maximum",
        "graph.minimum",
        "graph.batch_flatten",
        "graph.reshape",
        "graph.transpose",
        "graph.concatenate",
        "graph.slice",
        "graph.pad",
        "graph.cast",
        "graph.constant",
    }
)

# No generated value may exceed this magnitude: f16 overflows at 65504, and
# keeping every value well inside it means no op ever meets infinity.
_MAGNITUDE_LIMIT = 1.0e4
# Range of fresh data: general and strictly positive (divisors, variances).
_ANY_RANGE = (-2.0, 2.0)
_POSITIVE_RANGE = (0.5, 2.0)
# A divisor must stay at least this far from zero; sqrt/rsqrt-like ops too.
_DIVISOR_GAP = 0.25
# exp of anything above this would exceed the magnitude limit too fast.
_EXP_INPUT_LIMIT = 5.0
# Tensor size limits: small enough that the interpreter is fast.
_MAX_DIM = 6
_MAX_SPATIAL = 8
_MAX_RANK = 4
_MAX_CONCAT_DIM = 12


# --------------------------------------------------------------------------
# The generated program
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class GraphProgram:
    """A generated graph module and input arrays for its entry function.

    ``module`` holds one ``func.func`` named ``entry``; ``inputs`` has one
    array per function argument, with the argument's shape and numpy dtype.
    The module is yours to mutate (run passes on it); :meth:`fresh_module`
    returns another copy of the program as generated, and :attr:`source` its
    text.  ``repr`` shows the generated IR and the inputs, so hypothesis
    failure reports are readable and reproducible.
    """

    module: ModuleOp
    inputs: tuple[np.ndarray, ...]
    entry: str = "main"
    _pristine: ModuleOp = field(init=False, repr=False)
    _source: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Snapshot before anyone mutates ``module``: failure reports and
        # ``fresh_module`` must show the program as it was generated.
        object.__setattr__(self, "_pristine", self.module.clone())
        object.__setattr__(self, "_source", to_text(self.module))

    @property
    def text(self) -> str:
        """``module`` printed in custom syntax, as it is now."""
        return to_text(self.module)

    @property
    def source(self) -> str:
        """The module's text as generated (unaffected by later passes)."""
        return self._source

    @property
    def op_names(self) -> tuple[str, ...]:
        """Names of the ops of the entry function as generated, in order."""
        return op_names(self._pristine, self.entry)

    def fresh_module(self) -> ModuleOp:
        """A new copy of the module as generated."""
        return self._pristine.clone()

    def __repr__(self) -> str:
        with np.printoptions(threshold=1_000_000, floatmode="unique", linewidth=100):
            arrays = "\n".join(
                f"  input {i} ({a.dtype}, shape {a.shape}):\n{np.array_repr(a)}"
                for i, a in enumerate(self.inputs)
            )
        return f"GraphProgram(entry={self.entry!r})\n{self._source}{arrays}\n"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # hypothesis prints examples with IPython's pretty printer, which
        # would otherwise walk the dataclass fields (the whole xDSL object
        # graph) instead of showing the IR.
        printer.text(repr(self))


def op_names(module: ModuleOp, entry: str = "main") -> tuple[str, ...]:
    """Names of the ops directly in function ``entry`` of ``module``."""
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == entry:
            return tuple(o.name for o in op.body.block.ops)
    raise KeyError(f"no function @{entry} in the module")


# --------------------------------------------------------------------------
# Low-level strategies: types and arrays
# --------------------------------------------------------------------------


def _check_dtypes(dtypes: Iterable[str]) -> tuple[str, ...]:
    dtypes = tuple(dtypes)
    if not dtypes:
        raise InvalidArgument("dtypes must name at least one element type")
    for d in dtypes:
        if d not in DTYPES:
            raise InvalidArgument(
                f"unsupported dtype {d!r}: expected one of {', '.join(DTYPES)}"
            )
    return dtypes


def _shapes(
    min_rank: int, max_rank: int, max_dim: int
) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(
        min_dims=min_rank, max_dims=max_rank, min_side=1, max_side=max_dim
    )


def tensor_types(
    *,
    dtypes: Sequence[str] = ("float32",),
    min_rank: int = 0,
    max_rank: int = _MAX_RANK,
    max_dim: int = _MAX_DIM,
) -> st.SearchStrategy[TensorType]:
    """Static ``tensor<…>`` types with ``min_rank..max_rank`` dimensions of
    size ``1..max_dim`` and an element type from ``dtypes`` (numpy names)."""
    dtypes = _check_dtypes(dtypes)
    if not 0 <= min_rank <= max_rank:
        raise InvalidArgument(
            f"need 0 <= min_rank <= max_rank, got {min_rank}, {max_rank}"
        )
    if max_dim < 1:
        raise InvalidArgument(f"max_dim must be at least 1, got {max_dim}")
    return st.builds(
        tensor_type, _shapes(min_rank, max_rank, max_dim), st.sampled_from(dtypes)
    )


def _inner_bounds(dtype: np.dtype, low: float, high: float) -> tuple[float, float]:
    """``[low, high]`` shrunk to the nearest values representable in ``dtype``."""
    lo, hi = dtype.type(low), dtype.type(high)
    if lo < low:
        lo = np.nextafter(lo, dtype.type(np.inf))
    if hi > high:
        hi = np.nextafter(hi, dtype.type(-np.inf))
    if lo > hi:
        raise InvalidArgument(f"no {dtype} value lies in [{low}, {high}]")
    return float(lo), float(hi)


def arrays_for(
    t: TensorType,
    *,
    low: float = _ANY_RANGE[0],
    high: float = _ANY_RANGE[1],
    special_values: bool = False,
) -> st.SearchStrategy[np.ndarray]:
    """Arrays with the shape and dtype of tensor type ``t``, elements in
    ``[low, high]`` (integers for integer types), never NaN or infinite
    unless ``special_values``: then (float types only) one to three elements
    at drawn positions are NaN, +inf or -inf, or, if ``low < 0 < high``,
    also -0.0 or a denormal of either sign.

    Three draws in four are dense uniform noise (from a drawn seed): a wrong
    rewrite rarely survives random data.  The fourth uses hypothesis'
    element strategies, which favour edge cases (zeros, bounds, repeated
    values, ties for ``maximum`` and pooling).  Float elements are values of
    the element type, so what the strategy draws is what the program sees.
    """
    if low > high:
        raise InvalidArgument(f"need low <= high, got {low} > {high}")
    dtype = graph.numpy_dtype(t.element_type)
    shape = tuple(t.get_shape())
    if dtype.kind == "f":
        lo, hi = _inner_bounds(dtype, low, high)
        width = 16 if dtype == np.float16 else 32
        elements: st.SearchStrategy[Any] = st.floats(lo, hi, width=width)
    else:
        lo, hi = math.ceil(low), math.floor(high)
        if lo > hi:
            raise InvalidArgument(f"no integer lies in [{low}, {high}]")
        elements = st.integers(lo, hi)

    def noise(seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        if dtype.kind != "f":
            values = rng.integers(lo, hi, size=shape, endpoint=True)
        else:
            # Rounding to f16 may step just outside the bounds: clip back.
            values = np.clip(rng.uniform(lo, hi, size=shape).astype(dtype), lo, hi)
        # asarray: numpy returns scalars, not 0-d arrays, for shape ().
        return np.asarray(values, dtype=dtype)

    edge_cases = hnp.arrays(dtype, shape, elements=elements)
    finite = st.integers(0, 3).flatmap(
        lambda kind: edge_cases if kind == 3 else st.integers(0, 2**32 - 1).map(noise)
    )
    if not special_values or dtype.kind != "f":
        return finite
    return st.tuples(finite, _special_elements(dtype, shape, lo < 0 < hi)).map(
        _with_specials
    )


def _special_elements(
    dtype: np.dtype, shape: tuple[int, ...], around_zero: bool
) -> st.SearchStrategy[list[tuple[int, float]]]:
    """One to three (flat position, special value) pairs for an array."""
    tiny = float(np.finfo(dtype).smallest_subnormal)
    values = [math.nan, math.inf, -math.inf]
    if around_zero:
        values += [-0.0, tiny, -tiny, 3 * tiny]
    size = math.prod(shape)
    element = st.tuples(st.integers(0, size - 1), st.sampled_from(values))
    return st.lists(element, min_size=1, max_size=3)


def _with_specials(
    drawn: tuple[np.ndarray, list[tuple[int, float]]],
) -> np.ndarray:
    array, specials = drawn
    array = array.copy()
    flat = array.reshape(-1)  # a view: arrays_for's arrays are contiguous
    for position, value in specials:
        flat[position] = value
    return array


# --------------------------------------------------------------------------
# The program builder
# --------------------------------------------------------------------------


@dataclass
class _Value:
    """A value of the function being built, with bounds on what it holds."""

    ssa: SSAValue
    lo: float
    hi: float
    special: bool = False
    """May hold NaN or ±inf (see "IEEE special values" above)."""

    @property
    def type(self) -> TensorType:
        t = self.ssa.type
        assert isinstance(t, TensorType)  # every graph value is a tensor
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> str:
        return graph.numpy_dtype(self.type.element_type).name

    @property
    def is_float(self) -> bool:
        return self.dtype in _FLOATS

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))


Predicate = Callable[[_Value], bool]


class _ProgramBuilder:
    """Builds one function op by op from hypothesis draws.

    ``values`` is the pool of everything defined so far (arguments, constants
    and op results); generators pick operands from it, most recent first, so
    that shrinking tends towards simple chains.
    """

    def __init__(
        self,
        draw: st.DrawFn,
        dtypes: tuple[str, ...],
        constants: bool,
        finite: bool = False,
    ) -> None:
        self.draw = draw
        self.dtypes = dtypes
        self.constants = constants
        self.finite = finite
        self.block = Block()
        self.inputs: list[np.ndarray] = []
        self.values: list[_Value] = []

    # ---- fresh values ---------------------------------------------------------

    def argument(
        self,
        shape: Sequence[int],
        dtype: str,
        positive: bool = False,
        weight: bool = False,
    ) -> _Value:
        """A new function argument with a drawn input array; special values
        only in data (not ``positive``, not a ``weight``)."""
        lo, hi = _POSITIVE_RANGE if positive else _ANY_RANGE
        t = tensor_type(shape, dtype)
        specials = (
            not self.finite
            and not positive
            and not weight
            and dtype in _FLOATS
            and self.draw(st.integers(0, 2)) == 0
        )
        array = self.draw(arrays_for(t, low=lo, high=hi, special_values=specials))
        self.inputs.append(array)
        arg = self.block.insert_arg(t, len(self.block.args))
        return self._push(arg, lo, hi, special=not np.isfinite(array).all())

    def constant(
        self, shape: Sequence[int], dtype: str, positive: bool = False
    ) -> _Value:
        """A new ``graph.constant``: random, or filled with a value that
        algebraic simplifications recognise (0, 1, -1, …)."""
        lo, hi = _POSITIVE_RANGE if positive else _ANY_RANGE
        t = tensor_type(shape, dtype)
        specials = (1.0, 2.0) if positive else (0.0, 1.0, -1.0, 2.0)
        # Mostly special fills: a pattern such as ``0 - x -> x`` (wrong) is
        # only caught if ``0 - x`` is generated often enough.
        if self.draw(st.integers(0, 3)) < 3:
            fill = self.draw(st.sampled_from(specials))
            array = np.full(shape, fill, dtype=graph.numpy_dtype(t.element_type))
            lo = hi = fill
        else:
            array = self.draw(arrays_for(t, low=lo, high=hi))
        op = graph.ConstantOp.from_array(array)
        self.block.add_op(op)
        return self._push(op.results[0], lo, hi)

    def secondary(
        self, shape: Sequence[int], dtype: str, positive: bool = False
    ) -> _Value:
        """A fresh weight-like operand: an argument or (if allowed) a constant;
        always finite (folding batch_norm into ``x * scale + shift`` differs
        from the reference for infinite parameters: ``0 * inf``)."""
        if self.constants and self.draw(st.booleans()):
            return self.constant(shape, dtype, positive)
        return self.argument(shape, dtype, positive, weight=True)

    # ---- choosing operands -------------------------------------------------

    def operand(
        self, accept: Predicate, fresh: Callable[[], _Value], reuse_odds: int = 1
    ) -> _Value:
        """An existing value that ``accept``s, or a ``fresh()`` one.

        An existing value is taken with odds ``reuse_odds : 1`` when there is
        one (so a program with no suitable value still gets an operand);
        candidates are ordered most recent first, so shrinking tends towards
        chains.
        """
        candidates = [v for v in reversed(self.values) if accept(v)]
        if not candidates or self.draw(st.integers(0, reuse_odds)) == reuse_odds:
            return fresh()
        # Half the time the most recent value: long chains such as
        # transpose(transpose(x)) are what peephole patterns match.
        if self.draw(st.booleans()):
            return candidates[self.draw(st.integers(0, len(candidates) - 1))]
        return candidates[0]

    def primary(
        self,
        op_name: str,
        accept: Predicate,
        fresh_shape: st.SearchStrategy[tuple[int, ...]],
        positive: bool = False,
    ) -> _Value:
        """The main operand of ``op_name``: an existing value that ``accept``s,
        or a new argument (drawn positive if ``positive``, which must then
        satisfy ``accept`` as ``[-2, 2]`` data satisfies the others)."""
        allowed = self.dtypes_for(op_name)

        def ok(v: _Value) -> bool:
            return v.dtype in allowed and accept(v)

        def fresh() -> _Value:
            dtype = self.draw(st.sampled_from(allowed))
            return self.argument(self.draw(fresh_shape), dtype, positive)

        # Mostly consume what exists: programs are connected DAGs, not forests.
        return self.operand(ok, fresh, reuse_odds=3)

    def dtypes_for(self, op_name: str) -> tuple[str, ...]:
        if op_name in _INT_OPS:
            return self.dtypes
        return tuple(d for d in self.dtypes if d in _FLOATS)

    def maybe_default(self, value: Any, default: Any) -> Any:
        """``value``, or ``None`` (attribute left out) when it is the default
        and a draw says so: both spellings must mean the same."""
        if value == default and self.draw(st.booleans()):
            return None
        return value

    # ---- adding ops ---------------------------------------------------------

    def add(self, op: Operation, lo: float, hi: float) -> _Value:
        """Append ``op``, whose result lies in ``[lo, hi]`` where its operands
        are finite; it is special if any operand is."""
        special = any(v.special for v in self.values if v.ssa in op.operands)
        self.block.add_op(op)
        return self._push(op.results[0], lo, hi, special)

    def _push(
        self, ssa: SSAValue, lo: float, hi: float, special: bool = False
    ) -> _Value:
        value = _Value(ssa, float(lo), float(hi), special)
        self.values.append(value)
        return value

    # ---- finishing ------------------------------------------------------------

    def finish(self, max_outputs: int) -> GraphProgram:
        last = self.values[-1]
        # Prefer results nobody uses: an unused op is dead code that a pass
        # may delete without anyone noticing whether it broke it.
        sinks = [
            v
            for v in self.values[:-1]
            if isinstance(v.ssa, OpResult) and v.ssa.first_use is None
        ]
        extra = self.draw(
            st.lists(st.sampled_from(sinks or self.values), max_size=max_outputs - 1)
        )
        results = [v.ssa for v in [last, *extra]]
        self.block.add_op(ReturnOp(*results))
        arg_types = [a.type for a in self.block.args]
        func = FuncOp(
            "main", (arg_types, [r.type for r in results]), Region(self.block)
        )
        return GraphProgram(ModuleOp([func]), tuple(self.inputs))


# --------------------------------------------------------------------------
# Shapes and small helpers
# --------------------------------------------------------------------------


def _any_shape(min_rank: int = 1) -> st.SearchStrategy[tuple[int, ...]]:
    return _shapes(min_rank, _MAX_RANK, _MAX_DIM)


def _nchw() -> st.SearchStrategy[tuple[int, ...]]:
    dim = st.integers(1, _MAX_DIM)
    spatial = st.integers(1, _MAX_SPATIAL)
    return st.tuples(st.integers(1, 2), dim, spatial, spatial)


def _within_limit(lo: float, hi: float) -> bool:
    return max(abs(lo), abs(hi)) <= _MAGNITUDE_LIMIT


def _symmetric(bound: float) -> tuple[float, float]:
    return -bound, bound


def _product_interval(
    a: tuple[float, float], b: tuple[float, float]
) -> tuple[float, float]:
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


def _away_from_zero(v: _Value) -> bool:
    """Whether ``v`` may divide: no element near zero, none NaN or inf (a
    special value's finite elements may be 0, as in ``x / inf``)."""
    return not v.special and (v.lo >= _DIVISOR_GAP or v.hi <= -_DIVISOR_GAP)


def _broadcast(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """numpy's broadcast shape of ``a`` and ``b``, or None if they clash."""
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return None


def _window_params(
    b: _ProgramBuilder,
    size: int,
    max_kernel: int,
    dilation: int,
    with_padding_limit: bool,
) -> tuple[int, int, int]:
    """Draw (kernel, pad_before, pad_after) along one spatial axis of ``size``
    so that the (dilated) window fits without padding; padding stays below the
    window so every window holds a real element."""
    largest = min(max_kernel, (size - 1) // dilation + 1)
    kernel = b.draw(st.integers(1, largest))
    effective = (kernel - 1) * dilation + 1
    pad_limit = min(2, effective - 1) if with_padding_limit else effective - 1
    before = b.draw(st.integers(0, pad_limit))
    after = b.draw(st.integers(0, pad_limit))
    return kernel, before, after


def _output_size(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    return (size + pad - ((kernel - 1) * dilation + 1)) // stride + 1


# --------------------------------------------------------------------------
# One generator per op family
# --------------------------------------------------------------------------


def _gen_conv2d(b: _ProgramBuilder) -> None:
    # Worst-case growth: channels-per-group × 3×3 window × |weight| <= 2.
    data = b.primary(
        "graph.conv2d",
        lambda v: v.rank == 4 and v.bound * v.shape[1] * 9 * 2 <= _MAGNITUDE_LIMIT,
        _nchw(),
    )
    _, c, h, w = data.shape
    groups = b.draw(st.sampled_from([g for g in range(1, c + 1) if c % g == 0]))
    out_channels = groups * b.draw(st.integers(1, max(1, _MAX_DIM // groups)))
    dh, dw = b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2))
    sh, sw = b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2))
    kh, pt, pb = _window_params(b, h, 3, dh, True)
    kw, pl, pr = _window_params(b, w, 3, dw, True)
    padding = (pt, pl, pb, pr)
    if (
        _output_size(h, kh, sh, pt + pb, dh) > _MAX_SPATIAL
        or _output_size(w, kw, sw, pl + pr, dw) > _MAX_SPATIAL
    ):
        padding = (0, 0, 0, 0)
    weight_shape = (out_channels, c // groups, kh, kw)
    weight = b.operand(
        lambda v: v.shape == weight_shape and v.dtype == data.dtype and v.bound <= 2,
        lambda: b.secondary(weight_shape, data.dtype),
    )
    op = graph.Conv2dOp.build(
        [data.ssa, weight.ssa],
        strides=b.maybe_default((sh, sw), (1, 1)),
        padding=b.maybe_default(padding, (0, 0, 0, 0)),
        dilation=b.maybe_default((dh, dw), (1, 1)),
        groups=b.maybe_default(groups, 1),
    )
    b.add(op, *_symmetric(data.bound * weight.bound * (c // groups) * kh * kw))


def _gen_conv2d_transpose(b: _ProgramBuilder) -> None:
    data = b.primary(
        "graph.conv2d_transpose",
        lambda v: v.rank == 4 and v.bound * v.shape[1] * 9 * 2 <= _MAGNITUDE_LIMIT
        and max(v.shape[2:]) <= 4,
        st.tuples(st.integers(1, 2), st.integers(1, _MAX_DIM), st.integers(1, 4), st.integers(1, 4)),
    )
    _, c, h, w = data.shape
    groups = b.draw(st.sampled_from([g for g in range(1, c + 1) if c % g == 0]))
    per_group = b.draw(st.integers(1, max(1, _MAX_DIM // groups)))
    strides = (b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2)))
    dilation = (b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2)))
    kernel = (b.draw(st.integers(1, 3)), b.draw(st.integers(1, 3)))
    extra = tuple(b.draw(st.integers(0, max(s, d) - 1)) for s, d in zip(strides, dilation))
    full = [(n - 1) * s + (k - 1) * d + 1 + e for n, s, k, d, e in zip((h, w), strides, kernel, dilation, extra)]
    padding = [b.draw(st.integers(0, min(2, (f - 1) // 2))) for f in full for _ in range(2)]
    padding = [padding[0], padding[2], padding[1], padding[3]]
    weight_shape = (c, per_group, *kernel)
    weight = b.operand(
        lambda v: v.shape == weight_shape and v.dtype == data.dtype and v.bound <= 2,
        lambda: b.secondary(weight_shape, data.dtype),
    )
    op = graph.Conv2dTransposeOp.build(
        [data.ssa, weight.ssa],
        strides=b.maybe_default(strides, (1, 1)),
        padding=b.maybe_default(tuple(padding), (0, 0, 0, 0)),
        dilation=b.maybe_default(dilation, (1, 1)),
        output_padding=b.maybe_default(extra, (0, 0)),
        groups=b.maybe_default(groups, 1),
    )
    b.add(op, *_symmetric(data.bound * weight.bound * (c // groups) * kernel[0] * kernel[1]))


def _gen_dense(b: _ProgramBuilder) -> None:
    data = b.primary(
        "graph.dense",
        lambda v: v.rank == 2 and v.bound * v.shape[1] * 2 <= _MAGNITUDE_LIMIT,
        st.tuples(st.integers(1, 4), st.integers(1, 8)),
    )
    _, k = data.shape
    units = b.draw(st.integers(1, _MAX_DIM))
    weight = b.operand(
        lambda v: (
            v.rank == 2 and v.shape[1] == k and v.dtype == data.dtype and v.bound <= 2
        ),
        lambda: b.secondary((units, k), data.dtype),
    )
    op = graph.DenseOp.build([data.ssa, weight.ssa])
    b.add(op, *_symmetric(data.bound * weight.bound * k))


def _matmul_rhs_shape(b: _ProgramBuilder, lhs: tuple[int, ...]) -> tuple[int, ...]:
    """A rhs shape ``batch × K × N`` whose batch broadcasts with ``lhs``'s."""
    k = lhs[-1]
    batch = [b.draw(st.sampled_from([d, 1])) for d in lhs[:-2]]
    batch = batch[b.draw(st.integers(0, len(batch))) :]  # maybe fewer batch dims
    if len(lhs) == 2 and b.draw(st.booleans()):
        batch = [b.draw(st.integers(1, 3))]  # rhs batch broadcasts over lhs
    return (*batch, k, b.draw(st.integers(1, _MAX_DIM)))


def _gen_matmul(b: _ProgramBuilder) -> None:
    lhs = b.primary(
        "graph.matmul",
        lambda v: v.rank >= 2 and v.bound * v.shape[-1] * 2 <= _MAGNITUDE_LIMIT,
        _shapes(2, _MAX_RANK, _MAX_DIM),
    )

    def fits(v: _Value) -> bool:
        return (
            v.rank >= 2
            and v.dtype == lhs.dtype
            and v.shape[-2] == lhs.shape[-1]
            and _broadcast(lhs.shape[:-2], v.shape[:-2]) is not None
            and max(lhs.rank, v.rank) <= _MAX_RANK
            and _within_limit(*_symmetric(lhs.bound * v.bound * lhs.shape[-1]))
        )

    rhs = b.operand(
        fits, lambda: b.secondary(_matmul_rhs_shape(b, lhs.shape), lhs.dtype)
    )
    op = graph.MatmulOp.build([lhs.ssa, rhs.ssa])
    b.add(op, *_symmetric(lhs.bound * rhs.bound * lhs.shape[-1]))


def _gen_bias_add(b: _ProgramBuilder) -> None:
    data = b.primary(
        "graph.bias_add",
        lambda v: v.rank >= 1 and v.bound <= _MAGNITUDE_LIMIT - 2,
        _any_shape(),
    )
    axis = b.draw(st.integers(-data.rank, data.rank - 1))
    size = data.shape[axis]
    bias = b.operand(
        lambda v: (
            v.shape == (size,)
            and v.dtype == data.dtype
            and _within_limit(data.lo + v.lo, data.hi + v.hi)
        ),
        lambda: b.secondary((size,), data.dtype),
    )
    op = graph.BiasAddOp.build([data.ssa, bias.ssa], axis=b.maybe_default(axis, 1))
    b.add(op, data.lo + bias.lo, data.hi + bias.hi)


def _gen_batch_norm(b: _ProgramBuilder) -> None:
    data = b.primary(
        "graph.batch_norm", lambda v: v.rank >= 1 and v.bound <= 1000, _any_shape()
    )
    axis = b.draw(st.integers(-data.rank, data.rank - 1))
    size = data.shape[axis]

    def parameter(positive: bool) -> _Value:
        def ok(v: _Value) -> bool:
            in_range = _away_from_zero(v) and v.lo > 0 if positive else v.bound <= 2
            return (
                v.shape == (size,)
                and v.dtype == data.dtype
                and in_range
                and not v.special
            )

        return b.operand(ok, lambda: b.secondary((size,), data.dtype, positive))

    gamma, beta, mean, var = (
        parameter(False),
        parameter(False),
        parameter(False),
        parameter(True),
    )
    epsilon = b.draw(st.sampled_from([1e-5, 1e-3, 0.1]))
    op = graph.BatchNormOp.build(
        [data.ssa, gamma.ssa, beta.ssa, mean.ssa, var.ssa],
        epsilon=b.maybe_default(epsilon, 1e-5),
        axis=b.maybe_default(axis, 1),
    )
    # |x - mean| / sqrt(var + eps) * |gamma| + |beta|, var >= its lower bound.
    scale = (data.bound + mean.bound) / math.sqrt(var.lo) * gamma.bound
    b.add(op, *_symmetric(scale + beta.bound))


def _unary(
    name: str,
    accept: Predicate,
    interval: Callable[[_Value], tuple[float, float]],
    positive: bool = False,
) -> Callable[[_ProgramBuilder], None]:
    """A generator for a one-operand elementwise op with no attributes;
    ``positive`` makes a fresh operand positive (for ``sqrt``)."""

    def generate(b: _ProgramBuilder) -> None:
        x = b.primary(name, accept, _any_shape(min_rank=0), positive)
        b.add(graph.OPS_BY_NAME[name].build([x.ssa]), *interval(x))

    return generate


def _sigmoid_interval(x: _Value) -> tuple[float, float]:
    return 1 / (1 + math.exp(-x.lo)), 1 / (1 + math.exp(-x.hi))


_gen_relu = _unary(
    "graph.relu", lambda v: True, lambda x: (max(x.lo, 0.0), max(x.hi, 0.0))
)
_gen_sigmoid = _unary("graph.sigmoid", lambda v: v.bound <= 30, _sigmoid_interval)
_gen_tanh = _unary(
    "graph.tanh", lambda v: True, lambda x: (math.tanh(x.lo), math.tanh(x.hi))
)
_gen_exp = _unary(
    "graph.exp",
    lambda v: v.hi <= _EXP_INPUT_LIMIT,
    lambda x: (math.exp(x.lo), math.exp(x.hi)),
)
_gen_sqrt = _unary(
    "graph.sqrt",
    lambda v: v.lo >= 0,
    lambda x: (math.sqrt(x.lo), math.sqrt(x.hi)),
    positive=True,
)
_gen_negative = _unary("graph.negative", lambda v: True, lambda x: (-x.hi, -x.lo))
_gen_log = _unary(
    "graph.log",
    lambda v: v.lo >= 0.25,
    lambda x: (math.log(x.lo), math.log(x.hi)),
    positive=True,
)


def _gen_clip(b: _ProgramBuilder) -> None:
    x = b.primary("graph.clip", lambda v: True, _any_shape(min_rank=0))
    # Quarter steps are exact in f16 and f32: the bounds mean the same in both.
    low = b.draw(st.integers(-12, 4)) / 4
    high = low + b.draw(st.integers(0, 12)) / 4
    op = graph.ClipOp.build([x.ssa], min=low, max=high)
    b.add(op, min(max(x.lo, low), high), min(max(x.hi, low), high))


def _broadcast_partner_shape(
    b: _ProgramBuilder, shape: tuple[int, ...]
) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: half the time ``shape`` itself
    (algebraic simplifications only fire when no broadcast is involved),
    otherwise a suffix of it with some dimensions set to 1 (or, where
    ``shape`` has a 1, grown), possibly with new leading dimensions."""
    if b.draw(st.booleans()):
        return shape
    suffix = shape[b.draw(st.integers(0, len(shape))) :]
    dims = [b.draw(st.sampled_from([d, 1] if d != 1 else [1, 2, 3])) for d in suffix]
    if len(suffix) == len(shape):
        leading = b.draw(st.lists(st.integers(1, 3), max_size=_MAX_RANK - len(shape)))
        dims = leading + dims
    return tuple(dims)


def _binary(
    name: str, interval: Callable[[_Value, _Value], tuple[float, float]]
) -> Callable[[_ProgramBuilder], None]:
    """A generator for a broadcasting binary op; ``divide`` gets a divisor
    bounded away from zero."""
    divide = name == "graph.divide"

    def generate(b: _ProgramBuilder) -> None:
        positive = divide and b.draw(st.booleans())  # a fresh one may divide
        first = b.primary(name, lambda v: True, _any_shape(min_rank=0), positive)
        # The partner comes first half the time (where ``first`` may divide).
        swap = b.draw(st.booleans()) and (not divide or _away_from_zero(first))

        def ordered(partner: _Value) -> tuple[_Value, _Value]:
            return (partner, first) if swap else (first, partner)

        def fits(v: _Value) -> bool:
            shape = _broadcast(first.shape, v.shape)
            return (
                v.dtype == first.dtype
                and shape is not None
                and len(shape) <= _MAX_RANK
                and math.prod(shape) <= 4 * _MAX_SPATIAL**2 * _MAX_DIM
                and _within_limit(*interval(*ordered(v)))
            )

        def fresh() -> _Value:
            shape = _broadcast_partner_shape(b, first.shape)
            return b.secondary(shape, first.dtype, positive=divide and not swap)

        lhs, rhs = ordered(b.operand(fits, fresh))
        op = graph.OPS_BY_NAME[name].build([lhs.ssa, rhs.ssa])
        b.add(op, *interval(lhs, rhs))

    return generate


def _divide_interval(a: _Value, d: _Value) -> tuple[float, float]:
    if not _away_from_zero(d):
        return -math.inf, math.inf  # rejected by the limit check
    return _product_interval((a.lo, a.hi), (1 / d.hi, 1 / d.lo))


_gen_add = _binary("graph.add", lambda a, c: (a.lo + c.lo, a.hi + c.hi))
_gen_subtract = _binary("graph.subtract", lambda a, c: (a.lo - c.hi, a.hi - c.lo))
_gen_multiply = _binary(
    "graph.multiply", lambda a, c: _product_interval((a.lo, a.hi), (c.lo, c.hi))
)
_gen_divide = _binary("graph.divide", _divide_interval)
_gen_maximum = _binary("graph.maximum", lambda a, c: (max(a.lo, c.lo), max(a.hi, c.hi)))
_gen_minimum = _binary("graph.minimum", lambda a, c: (min(a.lo, c.lo), min(a.hi, c.hi)))


def _gen_softmax(b: _ProgramBuilder) -> None:
    x = b.primary("graph.softmax", lambda v: v.rank >= 1, _any_shape())
    axis = b.draw(st.integers(-x.rank, x.rank - 1))
    b.add(graph.SoftmaxOp.build([x.ssa], axis=b.maybe_default(axis, -1)), 0.0, 1.0)


def _gen_pool(name: str) -> Callable[[_ProgramBuilder], None]:
    """max_pool2d / avg_pool2d with drawn window, strides and padding."""

    def generate(b: _ProgramBuilder) -> None:
        data = b.primary(name, lambda v: v.rank == 4, _nchw())
        _, _, h, w = data.shape
        kh, pt, pb = _window_params(b, h, 3, 1, False)
        kw, pl, pr = _window_params(b, w, 3, 1, False)
        sh, sw = b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2))
        padding = (pt, pl, pb, pr)
        if (
            _output_size(h, kh, sh, pt + pb, 1) > _MAX_SPATIAL
            or _output_size(w, kw, sw, pl + pr, 1) > _MAX_SPATIAL
        ):
            padding = (0, 0, 0, 0)
        dilation = (1, 1)
        if padding == (0, 0, 0, 0) and b.draw(st.integers(0, 3)) == 0:
            # A dilated window that fits the data without padding.
            dilation = tuple(
                max(1, min(2, (n - 1) // max(k - 1, 1))) for n, k in ((h, kh), (w, kw))
            )
        attrs: dict[str, Any] = {
            "pool_size": (kh, kw),
            "strides": b.maybe_default((sh, sw), (1, 1)),
            "padding": b.maybe_default(padding, (0, 0, 0, 0)),
            "dilation": b.maybe_default(dilation, (1, 1)),
        }
        lo, hi = data.lo, data.hi
        if name == "graph.avg_pool2d":
            include_pad = b.draw(st.booleans())
            attrs["count_include_pad"] = b.maybe_default(include_pad, False)
            if include_pad and any(padding):
                lo, hi = min(lo, 0.0), max(hi, 0.0)  # zeros join the average
        b.add(graph.OPS_BY_NAME[name].build([data.ssa], **attrs), lo, hi)

    return generate


def _gen_global_avg_pool2d(b: _ProgramBuilder) -> None:
    data = b.primary("graph.global_avg_pool2d", lambda v: v.rank == 4, _nchw())
    b.add(graph.GlobalAvgPool2dOp.build([data.ssa]), data.lo, data.hi)


def _gen_batch_flatten(b: _ProgramBuilder) -> None:
    data = b.primary("graph.batch_flatten", lambda v: v.rank >= 1, _any_shape())
    b.add(graph.BatchFlattenOp.build([data.ssa]), data.lo, data.hi)


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors + ([n] if n > 1 else [])


def _gen_reshape(b: _ProgramBuilder) -> None:
    data = b.primary("graph.reshape", lambda v: True, _any_shape(min_rank=0))
    # Deal the prime factors of the element count out to the new dimensions.
    rank = b.draw(st.integers(1, _MAX_RANK))
    dims = [1] * rank
    for p in _prime_factors(math.prod(data.shape)):
        dims[b.draw(st.integers(0, rank - 1))] *= p
    op = graph.ReshapeOp.build([data.ssa], tensor_type(dims, data.dtype))
    b.add(op, data.lo, data.hi)


def _gen_transpose(b: _ProgramBuilder) -> None:
    data = b.primary("graph.transpose", lambda v: v.rank >= 1, _any_shape())
    axes = b.draw(st.permutations(range(data.rank)))
    reverse = tuple(reversed(range(data.rank)))
    op = graph.TransposeOp.build([data.ssa], axes=b.maybe_default(tuple(axes), reverse))
    b.add(op, data.lo, data.hi)


def _concat_part(b: _ProgramBuilder, first: _Value, axis: int, total: int) -> _Value:
    """Another operand for concatenating onto ``first`` along ``axis``, when
    the parts so far hold ``total`` elements along it."""
    axis %= first.rank

    def fits(v: _Value) -> bool:
        return (
            v.rank == first.rank
            and v.dtype == first.dtype
            and total + v.shape[axis] <= _MAX_CONCAT_DIM
            and all(
                a == c
                for i, (a, c) in enumerate(zip(v.shape, first.shape))
                if i != axis
            )
        )

    def fresh() -> _Value:
        shape = list(first.shape)
        shape[axis] = b.draw(st.integers(1, max(1, min(4, _MAX_CONCAT_DIM - total))))
        return b.secondary(shape, first.dtype)

    return b.operand(fits, fresh)


def _gen_concatenate(b: _ProgramBuilder) -> None:
    first = b.primary("graph.concatenate", lambda v: v.rank >= 1, _any_shape())
    axis = b.draw(st.integers(-first.rank, first.rank - 1))
    parts = [first]
    for _ in range(b.draw(st.integers(0, 2))):
        total = sum(p.shape[axis] for p in parts)
        if total >= _MAX_CONCAT_DIM:
            break  # keep tensors small
        parts.append(_concat_part(b, first, axis, total))
    op = graph.ConcatenateOp.build(
        [p.ssa for p in parts], axis=b.maybe_default(axis, 0)
    )
    b.add(op, min(p.lo for p in parts), max(p.hi for p in parts))


def _gen_slice(b: _ProgramBuilder) -> None:
    data = b.primary("graph.slice", lambda v: v.rank >= 1, _any_shape())
    begin, end, strides = [], [], []
    for size in data.shape:
        stride = b.draw(st.sampled_from([1, 1, 2, -1]))
        first = b.draw(st.integers(0, size - 1))
        if stride > 0:
            last = b.draw(st.integers(first + 1, size))
        else:
            last = b.draw(st.integers(-1, first - 1))
        begin.append(first)
        end.append(last)
        strides.append(stride)
    ones = (1,) * data.rank
    op = graph.SliceOp.build(
        [data.ssa], begin=begin, end=end, strides=b.maybe_default(tuple(strides), ones)
    )
    b.add(op, data.lo, data.hi)


def _gen_pad(b: _ProgramBuilder) -> None:
    data = b.primary("graph.pad", lambda v: v.rank >= 1, _any_shape())
    mode = b.draw(st.sampled_from(graph.PAD_MODES))
    padding = []
    for _ in range(2):
        for size in data.shape:
            limit = size - 1 if mode == "reflect" else 2
            padding.append(b.draw(st.integers(0, min(2, limit))))
    lo, hi = data.lo, data.hi
    attrs: dict[str, Any] = {"padding": padding, "mode": b.maybe_default(mode, "constant")}
    if mode == "constant":
        # Quarter steps are exact in every dtype; integers take whole values.
        value = b.draw(st.integers(-8, 8)) / (4 if data.is_float else 1)
        attrs["value"] = b.maybe_default(value, 0.0)
        if any(padding):
            lo, hi = min(lo, value), max(hi, value)
    b.add(graph.PadOp.build([data.ssa], **attrs), lo, hi)


def _gen_resize2d(b: _ProgramBuilder) -> None:
    data = b.primary("graph.resize2d", lambda v: v.rank == 4, _nchw())
    size = (b.draw(st.integers(1, _MAX_SPATIAL)), b.draw(st.integers(1, _MAX_SPATIAL)))
    method = b.draw(st.sampled_from(graph.RESIZE_METHODS))
    mode = b.draw(st.sampled_from(graph.RESIZE_COORDINATES))
    rounding = b.draw(st.sampled_from(graph.RESIZE_ROUNDING))
    op = graph.Resize2dOp.build(
        [data.ssa],
        size=size,
        method=b.maybe_default(method, "nearest"),
        coordinate_transformation_mode=b.maybe_default(mode, "half_pixel"),
        nearest_mode=b.maybe_default(rounding, "round_prefer_floor"),
    )
    b.add(op, data.lo, data.hi)  # nearest picks, linear blends convexly


def _gen_lrn(b: _ProgramBuilder) -> None:
    data = b.primary("graph.lrn", lambda v: v.rank >= 2, _any_shape(min_rank=2))
    size = b.draw(st.integers(1, 5))
    beta = b.draw(st.sampled_from([0.5, 0.75, 1.0]))
    op = graph.LrnOp.build(
        [data.ssa], size=size, alpha=b.maybe_default(1e-4, 1e-4), beta=b.maybe_default(beta, 0.75),
        bias=b.draw(st.sampled_from([1.0, 2.0])),
    )
    # The divisor is at least 1 (bias >= 1, the sum of squares >= 0).
    b.add(op, min(data.lo, 0.0), max(data.hi, 0.0))


def _gen_reduce(name: str) -> Callable[[_ProgramBuilder], None]:
    def generate(b: _ProgramBuilder) -> None:
        data = b.primary(name, lambda v: v.rank >= 1, _any_shape())
        axes = b.draw(
            st.lists(st.integers(-data.rank, data.rank - 1), min_size=1, max_size=data.rank,
                     unique_by=lambda a: a % data.rank)
        )
        keepdims = b.draw(st.booleans())
        op = graph.OPS_BY_NAME[name].build(
            [data.ssa], axes=axes, keepdims=b.maybe_default(keepdims, True)
        )
        count = math.prod(data.shape[a % data.rank] for a in axes)
        lo, hi = data.lo, data.hi
        if name == "graph.reduce_sum":
            lo, hi = min(lo * count, lo), max(hi * count, hi)
        b.add(op, lo, hi)

    return generate


def _gen_cast(b: _ProgramBuilder) -> None:
    data = b.primary("graph.cast", lambda v: True, _any_shape(min_rank=0))
    # NaN and inf have no integer value (numpy leaves the cast undefined).
    targets = [d for d in b.dtypes if d in _FLOATS or not data.special]
    target = b.draw(st.sampled_from(targets))
    op = graph.CastOp.build([data.ssa], dtype=target)
    if target in _FLOATS:
        b.add(op, data.lo, data.hi)
    else:
        b.add(op, math.trunc(data.lo), math.trunc(data.hi))  # astype truncates


def _gen_constant(b: _ProgramBuilder) -> None:
    dtype = b.draw(st.sampled_from(b.dtypes))
    b.constant(b.draw(_any_shape(min_rank=0)), dtype)


_GENERATORS: dict[str, Callable[[_ProgramBuilder], None]] = {
    "graph.conv2d": _gen_conv2d,
    "graph.conv2d_transpose": _gen_conv2d_transpose,
    "graph.dense": _gen_dense,
    "graph.matmul": _gen_matmul,
    "graph.bias_add": _gen_bias_add,
    "graph.batch_norm": _gen_batch_norm,
    "graph.relu": _gen_relu,
    "graph.sigmoid": _gen_sigmoid,
    "graph.tanh": _gen_tanh,
    "graph.exp": _gen_exp,
    "graph.sqrt": _gen_sqrt,
    "graph.log": _gen_log,
    "graph.negative": _gen_negative,
    "graph.clip": _gen_clip,
    "graph.add": _gen_add,
    "graph.subtract": _gen_subtract,
    "graph.multiply": _gen_multiply,
    "graph.divide": _gen_divide,
    "graph.maximum": _gen_maximum,
    "graph.minimum": _gen_minimum,
    "graph.softmax": _gen_softmax,
    "graph.max_pool2d": _gen_pool("graph.max_pool2d"),
    "graph.avg_pool2d": _gen_pool("graph.avg_pool2d"),
    "graph.global_avg_pool2d": _gen_global_avg_pool2d,
    "graph.batch_flatten": _gen_batch_flatten,
    "graph.reshape": _gen_reshape,
    "graph.transpose": _gen_transpose,
    "graph.concatenate": _gen_concatenate,
    "graph.slice": _gen_slice,
    "graph.pad": _gen_pad,
    "graph.resize2d": _gen_resize2d,
    "graph.lrn": _gen_lrn,
    "graph.reduce_sum": _gen_reduce("graph.reduce_sum"),
    "graph.reduce_mean": _gen_reduce("graph.reduce_mean"),
    "graph.reduce_max": _gen_reduce("graph.reduce_max"),
    "graph.cast": _gen_cast,
    "graph.constant": _gen_constant,
}


# --------------------------------------------------------------------------
# The public strategy
# --------------------------------------------------------------------------


def _op_name(op: str | type[GraphOp]) -> str:
    name = op if isinstance(op, str) else getattr(op, "name", repr(op))
    full = name if name.startswith("graph.") else f"graph.{name}"
    if full not in _GENERATORS:
        known = ", ".join(sorted(n.removeprefix("graph.") for n in _GENERATORS))
        raise InvalidArgument(f"graph_programs: unknown op {op!r} (known: {known})")
    return full


def graph_programs(
    *,
    ops: Iterable[str | type[GraphOp]] | None = None,
    dtypes: Sequence[str] = ("float32",),
    min_ops: int = 1,
    max_ops: int = 8,
    max_outputs: int = 3,
    finite: bool = False,
) -> st.SearchStrategy[GraphProgram]:
    """Random well-typed graph programs, with inputs that never make an op
    overflow or divide by zero.

    - ``ops``: the graph ops the program may contain, as names (``"conv2d"``
      or ``"graph.conv2d"``) or op classes; default: every op of
      :data:`ember.dialects.graph.GRAPH_OPS`.  Secondary operands (weights,
      biases, broadcast partners) become ``graph.constant`` ops only when
      ``constant`` is among ``ops``; otherwise they are function arguments.
    - ``dtypes``: element types arguments and constants may have, numpy
      names from :data:`DTYPES`; ``graph.cast`` converts between them.
      Float-only ops need a float type in the list.
    - ``min_ops``/``max_ops``: how many ops (of ``ops``) the program has, not
      counting the constants made for secondary operands.
    - ``max_outputs``: the entry function returns 1..max_outputs values.
    - ``finite``: no NaN, ±inf, -0.0 or denormal in the inputs.  By default
      some float inputs hold them (see the module docstring), so compare
      results with :func:`ember.testing.assert_same_values`, which requires
      NaN positions and inf signs to match exactly.

    Every program verifies (``ember.verify_module``); every draw builds a new
    module.
    """
    names = tuple(
        dict.fromkeys(_op_name(o) for o in (ops if ops is not None else GRAPH_OPS))
    )
    if not names:
        raise InvalidArgument("graph_programs: ops must name at least one op")
    dtypes = _check_dtypes(dtypes)
    if not any(d in _FLOATS for d in dtypes) and any(n not in _INT_OPS for n in names):
        float_only = ", ".join(n for n in names if n not in _INT_OPS)
        raise InvalidArgument(
            f"graph_programs: {float_only} need a float dtype, but dtypes is {dtypes}"
        )
    if not 1 <= min_ops <= max_ops:
        raise InvalidArgument(
            f"graph_programs: need 1 <= min_ops <= max_ops, got {min_ops}, {max_ops}"
        )
    if max_outputs < 1:
        raise InvalidArgument(
            f"graph_programs: max_outputs must be at least 1, got {max_outputs}"
        )
    constants = "graph.constant" in names

    @st.composite
    def programs(draw: st.DrawFn) -> GraphProgram:
        builder = _ProgramBuilder(draw, dtypes, constants, finite)
        # Swarm testing (Groce et al., ISSTA 2012): each program uses a random
        # subset of the ops, so same-op chains and rare combinations are
        # common instead of drowned in a uniform mix.
        # Here: one to three ops drawn uniformly, or a quarter of the time all.
        size = draw(st.integers(1, 4))
        swarm = names if size == 4 else draw(st.permutations(names))[:size]
        for _ in range(draw(st.integers(min_ops, max_ops))):
            _GENERATORS[draw(st.sampled_from(swarm))](builder)
        return builder.finish(max_outputs)

    return programs()


def _check_generators_complete() -> None:
    """Every graph op has a generator (checked at import, cheaply)."""
    missing = sorted(set(OPS_BY_NAME) - set(_GENERATORS))
    if missing:
        raise ImportError(f"graph ops without a program generator: {missing}")


_check_generators_complete()
