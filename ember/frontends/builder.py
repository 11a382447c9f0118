"""Build graph-dialect functions from Python, in the style of ``relay.nn.*``.

Users coming from TVM Relay write networks as nested calls on expressions::

    from ember import builder as eb

    data = eb.var("data", shape=(1, 3, 8, 8))
    weight = eb.var("weight")                      # shape found by conv2d
    y = eb.conv2d(data, weight, channels=16, kernel_size=(3, 3), padding=1)
    y = eb.relu(y + 1.0)
    module = eb.module(eb.function(y))             # func.func @main(%data, %weight)

What it assumes and how it differs from Relay:

* Types are inferred eagerly, by the graph ops' own ``infer_type`` (the
  verifier's rule), so a shape error is raised by the call that causes it, as
  :class:`ember.errors.IRError` carrying the op's message.
* As in Relay, a ``var`` may be left without a shape where its consumer
  determines it: a conv2d weight (with ``channels`` and ``kernel_size``), a
  dense weight (with ``units``), a bias_add bias, batch_norm's four vectors.
  Such a var's dtype is the data's unless given.  Any other use of an untyped
  var is an error naming it.
* ``batch_norm`` returns ONE expression (the normalised data), not Relay's
  3-tuple: ember's batch_norm is the inference form and has one result, so
  ``batch_norm(...)[0]`` of Relay code becomes ``batch_norm(...)``.
* Expressions form a DAG of Python objects; :func:`function` turns it into a
  ``func.func`` (free vars become arguments carrying their names, in order of
  first use, like ``relay.analysis.free_vars``) and :func:`module` into a
  verified ``builtin.module``.  Attributes equal to their default are left out,
  so the IR printed is the shortest text that parses back to the same module.
* Numbers and numpy arrays mixed with expressions (``x * 2``, ``add(x, arr)``)
  become constants of the expression's dtype.
"""

from __future__ import annotations

import contextlib
import linecache
import math
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from types import CodeType
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph
from ember.dialects.graph import GraphOp
from ember.errors import IRError
from ember.ir import verify_module

__all__ = [
    "Call",
    "Constant",
    "Expr",
    "Var",
    "add",
    "avg_pool2d",
    "batch_flatten",
    "batch_norm",
    "bias_add",
    "call_extern",
    "call_kernel",
    "cast",
    "clip",
    "concatenate",
    "const",
    "conv2d",
    "dense",
    "divide",
    "exp",
    "function",
    "global_avg_pool2d",
    "ir_module",
    "matmul",
    "max_pool2d",
    "maximum",
    "minimum",
    "module",
    "multiply",
    "negative",
    "relu",
    "reshape",
    "sigmoid",
    "softmax",
    "sqrt",
    "subtract",
    "tanh",
    "transpose",
    "var",
]

# --------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# Source locations (for code traced by ember.script)
# --------------------------------------------------------------------------

_TRACED: ContextVar[CodeType | None] = ContextVar("ember_builder_traced", default=None)


@contextlib.contextmanager
def recording_locations(code: CodeType) -> Iterator[None]:
    """Inside the block, each expression records the line of ``code`` (a
    Python function being traced) that built it; its op gets that location,
    so diagnostics and remarks point at the user's source."""
    token = _TRACED.set(code)
    try:
        yield
    finally:
        _TRACED.reset(token)


def _source_location() -> tuple[str, int, int] | None:
    code = _TRACED.get()
    if code is None:
        return None
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    text = linecache.getline(code.co_filename, line)
    return code.co_filename, line, len(text) - len(text.lstrip()) + 1


class Expr:
    """A tensor-valued expression whose type is known once it is built."""

    location: tuple[str, int, int] | None = None
    """Where it was built, when a traced function built it (``ember.script``)."""
    name: str | None = None
    """The name its value gets in the IR (``%lv0``), when one was given."""

    # Make numpy defer to our reflected operators: ``array + expr`` must build
    # an ``add``, not an object array of per-element expressions.
    __array_ufunc__ = None

    _type: TensorType
    """Set by every expression when it is built (a var: once inferred)."""

    @property
    def type(self) -> TensorType:
        return self._type

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def dtype(self) -> np.dtype:
        return graph.numpy_dtype(self.type.element_type)

    # Python operators, as on Relay expressions.
    def __add__(self, other: Any) -> Expr:
        return add(self, other)

    def __radd__(self, other: Any) -> Expr:
        return add(other, self)

    def __sub__(self, other: Any) -> Expr:
        return subtract(self, other)

    def __rsub__(self, other: Any) -> Expr:
        return subtract(other, self)

    def __mul__(self, other: Any) -> Expr:
        return multiply(self, other)

    def __rmul__(self, other: Any) -> Expr:
        return multiply(other, self)

    def __truediv__(self, other: Any) -> Expr:
        return divide(self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        return divide(other, self)

    def __matmul__(self, other: Any) -> Expr:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Expr:
        return matmul(other, self)

    def __neg__(self) -> Expr:
        return negative(self)


class Var(Expr):
    """A free variable: becomes a function argument named ``name``.

    Its type may be unknown (``None``) until a consumer determines it.
    """

    def __init__(self, name: str, type: TensorType | None, dtype: Attribute | None):
        self.name = name
        self._type = type
        # The element type asked for when no shape was given (None: the data's).
        self.requested_element_type = dtype

    @property
    def type(self) -> TensorType:
        if self._type is None:
            raise IRError(_untyped_message(self))
        return self._type

    @property
    def has_type(self) -> bool:
        return self._type is not None

    def __repr__(self) -> str:
        t = graph.type_str(self._type) if self._type is not None else "?"
        return f"var({self.name!r}: {t})"


class Constant(Expr):
    """A constant tensor (a read-only copy of the array it was made from)."""

    def __init__(self, value: np.ndarray):
        value = np.array(value, copy=True)
        value.flags.writeable = False
        self.value = value
        self._type = graph.tensor_type(value.shape, value.dtype)
        self.location = _source_location()

    def __repr__(self) -> str:
        return f"const({graph.type_str(self._type)})"


class Call(Expr):
    """A graph op applied to expressions.

    ``attrs`` holds only the attributes that differ from the op's defaults,
    in the order of the op's attribute table (so printing is canonical).
    """

    def __init__(
        self,
        op: type[GraphOp],
        args: Sequence[Expr],
        attrs: Mapping[str, Any],
        result_type: TensorType,
    ):
        self.op = op
        self.args = tuple(args)
        self.attrs = dict(attrs)
        self._type = result_type
        self.location = _source_location()

    def __repr__(self) -> str:
        return f"{self.op.name}(…) : {graph.type_str(self._type)}"


class CallOut(Expr):
    """A call of a kernel (``graph.call_kernel``, Relax's ``call_tir``) or of
    a registered function (``graph.call_extern``, ``call_dps_packed``): the
    callee is named, its result type given by the caller (``out_sinfo``)."""

    def __init__(self, op: str, callee: str, args: Sequence[Expr], result_type: TensorType):
        self.op = op
        self.callee = callee
        self.args = tuple(args)
        self._type = result_type
        self.location = _source_location()

    def __repr__(self) -> str:
        return f"{self.op} {self.callee}(…) : {graph.type_str(self._type)}"


# --------------------------------------------------------------------------
# Leaves: var and const
# --------------------------------------------------------------------------

# The names xDSL prints as written: a trailing ``_<digits>`` is taken as a
# uniquing suffix and dropped, so ``conv_1`` would print as ``%conv``.
_NAME = re.compile(r"[A-Za-z_$.-][\w$.-]*")
_UNIQUING_SUFFIX = re.compile(r"_\d+$")


def var(
    name: str,
    shape: Sequence[int] | TensorType | None = None,
    dtype: Any = None,
) -> Var:
    """A free variable (``relay.var``).

    ``shape`` may be omitted where a consumer determines it (see the module
    docstring).  ``dtype`` defaults to float32 when a shape is given, and to
    the consumer's data dtype when it is not.
    """
    _check_name(name)
    elem = _element_type(dtype) if dtype is not None else None
    if isinstance(shape, TensorType):
        if elem is not None and elem != shape.element_type:
            raise IRError(
                f"var '{name}': dtype {dtype} contradicts the type {graph.type_str(shape)}"
            )
        return Var(name, shape, shape.element_type)
    if shape is None:
        return Var(name, None, elem)
    dims = _int_tuple(f"var '{name}': shape", shape)
    if any(d < 0 for d in dims):
        raise IRError(f"var '{name}': shape {list(dims)} has a negative dimension")
    return Var(name, graph.tensor_type(dims, elem or graph.f32), elem)


def const(value: Any, dtype: Any = None) -> Constant:
    """A constant tensor (``relay.const``).

    Without ``dtype``: Python floats become float32 and Python ints int32 (as
    in Relay); numpy arrays keep their dtype, except float64 which becomes
    float32 (ember has no f64 tensors).
    """
    if dtype is not None:
        array = np.asarray(value, dtype=graph.numpy_dtype(_element_type(dtype)))
    elif isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
    else:
        array = np.asarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        elif array.dtype.kind in "iub":
            array = array.astype(np.int32)
    _element_type(array.dtype)  # rejects unsupported dtypes with a clear message
    return Constant(array)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise IRError(
            f"var name {name!r} is not a valid SSA name: use letters, digits and "
            "_ $ . -, not starting with a digit"
        )
    if _UNIQUING_SUFFIX.search(name):
        raise IRError(
            f"var name {name!r} ends in '_<digits>', which MLIR printing treats "
            f"as a uniquing suffix (it would print as %{_UNIQUING_SUFFIX.sub('', name)}); "
            "choose another name, e.g. without the underscore"
        )


def _element_type(dtype: Any) -> Attribute:
    if isinstance(dtype, Attribute):
        if dtype not in graph.ALL_TYPES:
            raise IRError(
                f"unsupported element type {dtype}: expected f32, f16, i32 or i64"
            )
        return dtype
    try:
        return graph.element_type(dtype)
    except ValueError as e:
        raise IRError(str(e)) from None


def _as_expr(value: Any, like: Expr | None = None) -> Expr:
    """An expression for ``value``; numbers and arrays take ``like``'s dtype."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (Operation, SSAValue)):
        raise IRError(
            f"expected a builder expression, got the xDSL object {type(value).__name__}"
        )
    if like is not None and (not isinstance(like, Var) or like.has_type):
        target = like.dtype
        array = np.asarray(value)
        if array.dtype.kind not in "fiub":
            raise IRError(f"cannot make a {target} constant from {value!r}")
        if not np.can_cast(array.dtype, target, casting="same_kind"):
            raise IRError(
                f"cannot mix {array.dtype} value {value!r} with a {target} expression"
            )
        return const(array.astype(target))
    return const(value)


# --------------------------------------------------------------------------
# Making a call: type inference, untyped vars, attributes
# --------------------------------------------------------------------------


def _untyped_message(v: Var) -> str:
    return (
        f"var '{v.name}' has no type: give it a shape (var('{v.name}', shape=...)) "
        "or use it first where its shape is determined (conv2d weight with "
        "channels and kernel_size, dense weight with units, bias_add bias, "
        "batch_norm parameters)"
    )


def _call(
    op: type[GraphOp],
    args: Sequence[Expr],
    attrs: Mapping[str, Any] | None = None,
    *,
    var_types: Mapping[int, TensorType] | None = None,
    result_type: TensorType | None = None,
) -> Call:
    """Build a call of ``op``, inferring its type with ``op.infer_type``.

    ``var_types`` gives types for untyped vars among ``args`` (by position);
    they are assigned only if the call type-checks, so a failed call leaves
    its vars as they were.  ``result_type`` is for ops whose result the
    attributes cannot express (reshape, cast); the op's verifier checks it.
    """
    pending: dict[Var, TensorType] = {}
    for index, t in (var_types or {}).items():
        arg = args[index]
        if isinstance(arg, Var) and not arg.has_type:
            requested = arg.requested_element_type
            if requested is not None and requested != t.element_type:
                t = TensorType(requested, t.get_shape())
            pending[arg] = t
    operand_types: list[Attribute] = []
    for arg in args:
        if isinstance(arg, Var) and not arg.has_type:
            if arg not in pending:
                raise IRError(f"{op.name}: {_untyped_message(arg)}")
            operand_types.append(pending[arg])
        else:
            operand_types.append(arg.type)
    kept = _non_default_attrs(op, attrs or {})
    decoded = {name: kept.get(name, spec.default) for name, spec in op.ATTRS.items()}
    try:
        if result_type is None:
            result_type = op.infer_type(operand_types, decoded)
        else:
            _check_given_result(op, operand_types, kept, result_type)
    except VerifyException as e:
        raise IRError(str(e)) from None
    for v, t in pending.items():
        v._type = t
    return Call(op, args, kept, result_type)


def _non_default_attrs(op: type[GraphOp], attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes that differ from the op's defaults, in table order."""
    kept: dict[str, Any] = {}
    for name, spec in op.ATTRS.items():
        if name not in attrs or attrs[name] is None:
            continue
        value = attrs[name]
        if spec.kind == "ints":
            value = tuple(int(v) for v in value)
        elif spec.kind == "float":
            value = float(value)
        elif spec.kind == "int":
            value = int(value)
        elif spec.kind == "bool":
            value = bool(value)
        if spec.default is not None and value == spec.default:
            continue
        kept[name] = value
    unknown = set(attrs) - set(op.ATTRS)
    if unknown:
        raise IRError(f"{op.name}: unknown attribute(s) {sorted(unknown)}")
    return kept


def _check_given_result(
    op: type[GraphOp],
    operand_types: Sequence[Attribute],
    attrs: Mapping[str, Any],
    result_type: TensorType,
) -> None:
    """Run the op's verifier on a detached op with the given result type.

    The operands are arguments of a throwaway block: the op exists only for
    the check and is garbage with the block afterwards.
    """
    scratch = Block(arg_types=operand_types)
    op.build(list(scratch.args), result_type, **attrs).verify_result_type()


def _pair(what: str, value: int | Sequence[int]) -> tuple[int, int]:
    """``2`` or ``(2, 2)`` -> ``(2, 2)``."""
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    values = _int_tuple(what, value)
    if len(values) != 2:
        raise IRError(f"{what} must be one int or two ints, got {list(values)}")
    return values  # type: ignore[return-value]


def _padding(what: str, value: int | Sequence[int]) -> tuple[int, int, int, int]:
    """Relay's padding forms -> ``(top, left, bottom, right)``.

    One int pads all sides; two are (vertical, horizontal); four are
    (top, left, bottom, right).
    """
    if isinstance(value, (int, np.integer)):
        p = int(value)
        return (p, p, p, p)
    values = _int_tuple(what, value)
    if len(values) == 1:
        return (values[0],) * 4  # type: ignore[return-value]
    if len(values) == 2:
        return (values[0], values[1], values[0], values[1])
    if len(values) == 4:
        return values  # type: ignore[return-value]
    raise IRError(f"{what} must have 1, 2 or 4 ints, got {list(values)}")


def _int_tuple(what: str, value: Iterable[Any]) -> tuple[int, ...]:
    try:
        items = tuple(value)
    except TypeError:
        raise IRError(f"{what} must be a sequence of ints, got {value!r}") from None
    if not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items
    ):
        raise IRError(f"{what} must be a sequence of ints, got {list(items)}")
    return tuple(int(v) for v in items)


def _known_type(op: str, what: str, e: Expr) -> TensorType:
    if isinstance(e, Var) and not e.has_type:
        raise IRError(f"{op}: {what}: {_untyped_message(e)}")
    return e.type


# --------------------------------------------------------------------------
# Operators (relay.nn.* and relay.*)
# --------------------------------------------------------------------------


def conv2d(
    data: Expr,
    weight: Expr | np.ndarray,
    strides: int | Sequence[int] = (1, 1),
    padding: int | Sequence[int] = (0, 0),
    dilation: int | Sequence[int] = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: int | Sequence[int] | None = None,
) -> Call:
    """2-D convolution, NCHW data and OIHW weight (``relay.nn.conv2d``).

    ``channels`` and ``kernel_size`` give an untyped weight var its shape
    (channels × C/groups × kh × kw); for a typed weight they are checked.
    """
    op = graph.Conv2dOp.name
    data = _as_expr(data)
    weight = _as_expr(weight, data)
    attrs = {
        "strides": _pair(f"{op}: strides", strides),
        "padding": _padding(f"{op}: padding", padding),
        "dilation": _pair(f"{op}: dilation", dilation),
        "groups": groups,
    }
    kernel = (
        _pair(f"{op}: kernel_size", kernel_size) if kernel_size is not None else None
    )
    var_types: dict[int, TensorType] = {}
    if isinstance(weight, Var) and not weight.has_type:
        if channels is None or kernel is None:
            raise IRError(
                f"{op}: cannot infer the shape of weight var '{weight.name}': "
                "give channels and kernel_size, or a shape to the var"
            )
        d = _known_type(op, "data", data)
        in_channels = d.get_shape()[1] if d.get_shape() else 0
        if groups <= 0 or in_channels % groups:
            raise IRError(
                f"{op}: data has {in_channels} channels, not divisible by groups = {groups}"
            )
        var_types[1] = graph.tensor_type(
            (channels, in_channels // groups, *kernel), d.element_type
        )
    else:
        w = weight.shape
        if channels is not None and len(w) == 4 and w[0] != channels:
            raise IRError(
                f"{op}: weight has {w[0]} output channels but channels = {channels}"
            )
        if kernel is not None and len(w) == 4 and tuple(w[2:]) != kernel:
            raise IRError(
                f"{op}: weight has kernel {list(w[2:])} but kernel_size = {list(kernel)}"
            )
    return _call(graph.Conv2dOp, [data, weight], attrs, var_types=var_types)


def dense(data: Expr, weight: Expr | np.ndarray, units: int | None = None) -> Call:
    """``data (N×K) · weightᵀ (units×K)`` (``relay.nn.dense``).

    ``units`` gives an untyped weight var its shape (units × K).
    """
    op = graph.DenseOp.name
    data = _as_expr(data)
    weight = _as_expr(weight, data)
    var_types: dict[int, TensorType] = {}
    if isinstance(weight, Var) and not weight.has_type:
        if units is None:
            raise IRError(
                f"{op}: cannot infer the shape of weight var '{weight.name}': "
                "give units, or a shape to the var"
            )
        d = _known_type(op, "data", data)
        in_features = d.get_shape()[-1] if d.get_shape() else 0
        var_types[1] = graph.tensor_type((units, in_features), d.element_type)
    elif units is not None and weight.shape and weight.shape[0] != units:
        raise IRError(f"{op}: weight has {weight.shape[0]} units but units = {units}")
    return _call(graph.DenseOp, [data, weight], var_types=var_types)


def matmul(lhs: Expr, rhs: Expr | np.ndarray) -> Call:
    """Matrix product with batch broadcasting (``lhs @ rhs``)."""
    lhs = _as_expr(lhs)
    return _call(graph.MatmulOp, [lhs, _as_expr(rhs, lhs)])


def bias_add(data: Expr, bias: Expr | np.ndarray, axis: int = 1) -> Call:
    """Add a 1-D bias along ``axis`` (``relay.nn.bias_add``)."""
    data = _as_expr(data)
    bias = _as_expr(bias, data)
    return _call(
        graph.BiasAddOp,
        [data, bias],
        {"axis": axis},
        var_types=_channel_vectors(graph.BiasAddOp.name, data, [bias], axis, first=1),
    )


def batch_norm(
    data: Expr,
    gamma: Expr | np.ndarray,
    beta: Expr | np.ndarray,
    moving_mean: Expr | np.ndarray,
    moving_var: Expr | np.ndarray,
    axis: int = 1,
    epsilon: float = 1e-5,
) -> Call:
    """Inference-form batch normalisation along ``axis``.

    Unlike ``relay.nn.batch_norm`` this returns ONE expression (the
    normalised data), not a tuple: write ``batch_norm(...)`` where Relay code
    has ``batch_norm(...)[0]``.
    """
    data = _as_expr(data)
    params = [_as_expr(p, data) for p in (gamma, beta, moving_mean, moving_var)]
    return _call(
        graph.BatchNormOp,
        [data, *params],
        {"epsilon": epsilon, "axis": axis},
        var_types=_channel_vectors(graph.BatchNormOp.name, data, params, axis, first=1),
    )


def _channel_vectors(
    op: str, data: Expr, vectors: Sequence[Expr], axis: int, first: int
) -> dict[int, TensorType]:
    """Types (C,) for the untyped vars among ``vectors`` (operands first, …)."""
    untyped = [
        i for i, v in enumerate(vectors) if isinstance(v, Var) and not v.has_type
    ]
    if not untyped:
        return {}
    d = _known_type(op, "data", data)
    shape = d.get_shape()
    if not -len(shape) <= axis < len(shape):
        raise IRError(f"{op}: axis {axis} is out of range for rank {len(shape)}")
    t = graph.tensor_type((shape[axis],), d.element_type)
    return {first + i: t for i in untyped}


def _unary(op: type[GraphOp], x: Expr, attrs: Mapping[str, Any] | None = None) -> Call:
    return _call(op, [_as_expr(x)], attrs)


def relu(x: Expr) -> Call:
    """``max(x, 0)`` (``relay.nn.relu``)."""
    return _unary(graph.ReluOp, x)


def sigmoid(x: Expr) -> Call:
    """``1 / (1 + exp(-x))``."""
    return _unary(graph.SigmoidOp, x)


def tanh(x: Expr) -> Call:
    """Hyperbolic tangent."""
    return _unary(graph.TanhOp, x)


def exp(x: Expr) -> Call:
    """``e ** x``."""
    return _unary(graph.ExpOp, x)


def sqrt(x: Expr) -> Call:
    """Square root."""
    return _unary(graph.SqrtOp, x)


def negative(x: Expr) -> Call:
    """``-x`` (also ``-expr``)."""
    return _unary(graph.NegativeOp, x)


def clip(x: Expr, a_min: float, a_max: float) -> Call:
    """``min(max(x, a_min), a_max)`` (``relay.clip``)."""
    return _unary(graph.ClipOp, x, {"min": a_min, "max": a_max})


def _binary(op: type[GraphOp], lhs: Any, rhs: Any) -> Call:
    # A number or array takes the dtype of the expression it is mixed with.
    if isinstance(lhs, Expr):
        lhs_e = lhs
        rhs_e = _as_expr(rhs, lhs)
    else:
        rhs_e = _as_expr(rhs)
        lhs_e = _as_expr(lhs, rhs_e)
    return _call(op, [lhs_e, rhs_e])


def add(lhs: Any, rhs: Any) -> Call:
    """Elementwise sum with numpy broadcasting (also ``lhs + rhs``)."""
    return _binary(graph.AddOp, lhs, rhs)


def subtract(lhs: Any, rhs: Any) -> Call:
    """Elementwise difference (also ``lhs - rhs``)."""
    return _binary(graph.SubtractOp, lhs, rhs)


def multiply(lhs: Any, rhs: Any) -> Call:
    """Elementwise product (also ``lhs * rhs``)."""
    return _binary(graph.MultiplyOp, lhs, rhs)


def divide(lhs: Any, rhs: Any) -> Call:
    """Elementwise quotient (also ``lhs / rhs``)."""
    return _binary(graph.DivideOp, lhs, rhs)


def maximum(lhs: Any, rhs: Any) -> Call:
    """Elementwise maximum with broadcasting."""
    return _binary(graph.MaximumOp, lhs, rhs)


def minimum(lhs: Any, rhs: Any) -> Call:
    """Elementwise minimum with broadcasting."""
    return _binary(graph.MinimumOp, lhs, rhs)


def softmax(x: Expr, axis: int = -1) -> Call:
    """Softmax along ``axis`` (``relay.nn.softmax``)."""
    return _unary(graph.SoftmaxOp, x, {"axis": axis})


def _pool_attrs(
    op: str,
    pool_size: int | Sequence[int],
    strides: int | Sequence[int],
    padding: int | Sequence[int],
) -> dict[str, Any]:
    return {
        "pool_size": _pair(f"{op}: pool_size", pool_size),
        "strides": _pair(f"{op}: strides", strides),
        "padding": _padding(f"{op}: padding", padding),
    }


def max_pool2d(
    x: Expr,
    pool_size: int | Sequence[int],
    strides: int | Sequence[int] = (1, 1),
    padding: int | Sequence[int] = (0, 0),
) -> Call:
    """Max pooling over NCHW windows (``relay.nn.max_pool2d``)."""
    attrs = _pool_attrs(graph.MaxPool2dOp.name, pool_size, strides, padding)
    return _unary(graph.MaxPool2dOp, x, attrs)


def avg_pool2d(
    x: Expr,
    pool_size: int | Sequence[int],
    strides: int | Sequence[int] = (1, 1),
    padding: int | Sequence[int] = (0, 0),
    count_include_pad: bool = False,
) -> Call:
    """Average pooling (``relay.nn.avg_pool2d``)."""
    attrs = _pool_attrs(graph.AvgPool2dOp.name, pool_size, strides, padding)
    attrs["count_include_pad"] = count_include_pad
    return _unary(graph.AvgPool2dOp, x, attrs)


def global_avg_pool2d(x: Expr) -> Call:
    """Mean over H and W: ``N×C×H×W → N×C×1×1``."""
    return _unary(graph.GlobalAvgPool2dOp, x)


def batch_flatten(x: Expr) -> Call:
    """``N×… → N×(product of the rest)`` (``relay.nn.batch_flatten``)."""
    return _unary(graph.BatchFlattenOp, x)


def reshape(x: Expr, newshape: int | Sequence[int]) -> Call:
    """Reinterpret the elements with ``newshape``; one ``-1`` is inferred.

    Relay's other special values (0, -2, -3, -4) are not supported.
    """
    x = _as_expr(x)
    op = graph.ReshapeOp.name
    t = _known_type(op, "data", x)
    dims = (
        (int(newshape),)
        if isinstance(newshape, (int, np.integer))
        else _int_tuple(f"{op}: newshape", newshape)
    )
    if any(d < -1 for d in dims) or dims.count(-1) > 1:
        raise IRError(
            f"{op}: newshape {list(dims)} may hold at most one -1 and no other negatives"
        )
    total = math.prod(t.get_shape())
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or total % known:
            raise IRError(
                f"{op}: cannot reshape {graph.type_str(t)} ({total} elements) to {list(dims)}"
            )
        dims = tuple(total // known if d == -1 else d for d in dims)
    return _call(
        graph.ReshapeOp, [x], result_type=graph.tensor_type(dims, t.element_type)
    )


def transpose(x: Expr, axes: Sequence[int] | None = None) -> Call:
    """Permute the axes; ``None`` reverses them (``relay.transpose``)."""
    op = graph.TransposeOp.name
    attrs = {"axes": _int_tuple(f"{op}: axes", axes)} if axes is not None else {}
    return _unary(graph.TransposeOp, x, attrs)


def concatenate(xs: Sequence[Expr], axis: int = 0) -> Call:
    """Join tensors along ``axis`` (``relay.concatenate``)."""
    exprs = [_as_expr(x) for x in xs]
    return _call(graph.ConcatenateOp, exprs, {"axis": axis})


def cast(x: Expr, dtype: Any) -> Call:
    """Convert the element type (``relay.cast``)."""
    x = _as_expr(x)
    t = _known_type(graph.CastOp.name, "data", x)
    target = _element_type(dtype)
    return _call(graph.CastOp, [x], result_type=TensorType(target, t.get_shape()))


# --------------------------------------------------------------------------
# Functions and modules
# --------------------------------------------------------------------------


def _call_out(
    op: str, callee: Any, args: Sequence[Any], out: Any, what: str
) -> CallOut:
    if not isinstance(callee, str) or not callee:
        raise IRError(f"{op}: {what} must be a non-empty name, got {callee!r}")
    if isinstance(args, Expr) or not isinstance(args, (list, tuple)):
        raise IRError(f"{op} {callee}: args must be a tuple of expressions, e.g. (x, w)")
    exprs = []
    for i, a in enumerate(args):
        e = _as_expr(a)
        if isinstance(e, Var) and not e.has_type:
            raise IRError(f"{op} {callee}: argument {i}: {_untyped_message(e)}")
        exprs.append(e)
    if isinstance(out, TensorType):
        result = out
    elif isinstance(out, tuple) and len(out) == 2 and not isinstance(out[0], int):
        result = graph.tensor_type(out[0], out[1])  # (shape, dtype)
    elif hasattr(out, "type") and isinstance(out.type, TensorType):
        result = out.type  # ember.script.Tensor
    else:
        raise IRError(
            f"{op} {callee}: out must be the result type: a TensorType, "
            f"(shape, dtype) or T.Tensor(shape, dtype), got {out!r}"
        )
    return CallOut(op, callee, exprs, result)


def call_kernel(kernel: Any, args: Sequence[Any], out: Any) -> CallOut:
    """``graph.call_kernel @kernel(args)`` (Relax's ``call_tir``): a kernel of
    the same module, by name (or anything with a ``.name``, such as a
    ``FuncOp``'s ``sym_name`` or an ember-script kernel), whose result type is
    ``out``: a ``TensorType``, ``(shape, dtype)`` or ``T.Tensor``.  The module
    verifier checks the kernel's buffers against the call."""
    name = kernel
    if isinstance(kernel, FuncOp):
        name = kernel.sym_name.data
    elif not isinstance(kernel, str) and hasattr(kernel, "name"):
        name = kernel.name
    return _call_out("graph.call_kernel", name, args, out, "the kernel")


def call_extern(function: str, args: Sequence[Any], out: Any) -> CallOut:
    """``graph.call_extern "function"(args)`` (Relax's ``call_dps_packed``):
    a function of the packed-function registry (``ember.register_func``),
    looked up when the module is built; ``out`` as for :func:`call_kernel`."""
    return _call_out("graph.call_extern", function, args, out, "the function name")


def function(
    outputs: Expr | Sequence[Expr],
    params: Sequence[Var] | None = None,
    name: str = "main",
) -> FuncOp:
    """Turn expressions into ``func.func @name`` (``relay.Function``).

    The arguments are ``params`` when given (every free var must be among
    them), otherwise the free vars in order of first use.  Several outputs
    give several results.  Each argument carries its var's name.
    """
    results = [outputs] if isinstance(outputs, Expr) else list(outputs)
    if not results:
        raise IRError(f"function @{name}: needs at least one output")
    for i, r in enumerate(results):
        if not isinstance(r, Expr):
            raise IRError(
                f"function @{name}: output {i} is {type(r).__name__}, not a builder expression"
            )
    order = _post_order(results)
    free = [e for e in order if isinstance(e, Var)]
    args = _arguments(name, free, params)
    block = Block(arg_types=[v.type for v in args])
    values: dict[Expr, SSAValue] = {}
    for v, arg in zip(args, block.args):
        arg.name_hint = v.name
        values[v] = arg
    for e in order:
        if e not in values:
            values[e] = _materialize(e, values, block)
    block.add_op(ReturnOp(*[values[r] for r in results]))
    signature = ([v.type for v in args], [r.type for r in results])
    return FuncOp(name, signature, Region(block))


def _post_order(roots: Sequence[Expr]) -> list[Expr]:
    """Every expression reachable from ``roots``, operands before users.

    Iterative, so deep networks do not hit Python's recursion limit; operands
    are visited left to right, so vars appear in order of first use.
    """
    seen: set[int] = set()
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        e, expanded = stack.pop()
        if expanded:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        if isinstance(e, (Call, CallOut)):
            stack.extend((a, False) for a in reversed(e.args) if id(a) not in seen)
    return order


def _arguments(fname: str, free: list[Var], params: Sequence[Var] | None) -> list[Var]:
    args = free if params is None else list(params)
    for p in args:
        if not isinstance(p, Var):
            raise IRError(f"function @{fname}: params must be vars, got {p!r}")
        if not p.has_type:
            raise IRError(f"function @{fname}: {_untyped_message(p)}")
    if params is not None:
        missing = [v.name for v in free if v not in set(args)]
        if missing:
            raise IRError(
                f"function @{fname}: free var(s) {missing} are not among the params"
            )
    names: dict[str, Var] = {}
    for p in args:
        other = names.setdefault(p.name, p)
        if other is not p:
            raise IRError(f"function @{fname}: two different vars are named '{p.name}'")
    if len(set(args)) != len(args):
        raise IRError(f"function @{fname}: a var is listed twice in params")
    return args


def _materialize(e: Expr, values: Mapping[Expr, SSAValue], block: Block) -> SSAValue:
    if isinstance(e, Constant):
        op: Operation = graph.ConstantOp.from_array(e.value)
    elif isinstance(e, Call):
        op = e.op.build([values[a] for a in e.args], e.type, **e.attrs)
    elif isinstance(e, CallOut) and e.op == "graph.call_kernel":
        op = graph.CallKernelOp(e.callee, [values[a] for a in e.args], [e.type])
    elif isinstance(e, CallOut):
        op = graph.CallExternOp(e.callee, [values[a] for a in e.args], [e.type])
    else:  # an unlisted Var is rejected by _arguments before we get here
        raise IRError(f"unexpected expression {e!r}")
    if e.name is not None and _NAME.fullmatch(e.name) and not _UNIQUING_SUFFIX.search(e.name):
        op.results[0].name_hint = e.name
    if e.location is not None:
        file, line, column = e.location
        op.location = FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(column))
    block.add_op(op)
    return op.results[0]


def module(*functions: FuncOp) -> ModuleOp:
    """A verified ``builtin.module`` holding ``functions`` (``tvm.IRModule``).

    A function that already belongs to a module is cloned, not moved.
    """
    if len(functions) == 1 and isinstance(functions[0], (list, tuple)):
        functions = tuple(functions[0])
    names: set[str] = set()
    body: list[FuncOp] = []
    for f in functions:
        if not isinstance(f, FuncOp):
            raise IRError(
                f"module: expected func.func operations, got {type(f).__name__}"
            )
        if f.sym_name.data in names:
            raise IRError(f"module: two functions are named @{f.sym_name.data}")
        names.add(f.sym_name.data)
        body.append(f.clone() if f.parent is not None else f)
    result = ModuleOp(body)
    verify_module(result)
    return result


ir_module = module
