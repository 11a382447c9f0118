"""The graph dialect: neural-network operators on statically shaped tensors.

This mirrors Relay's operator level (``relay.nn.*``) with MLIR conventions.
Every op takes ``tensor<…>`` operands, returns one ``tensor<…>``, and is
written as operands, an optional attribute dictionary, ``:`` and a function
type; unary elementwise ops (and ``graph.constant``) print a single type::

    %0 = graph.conv2d %data, %weight {strides = [1, 1], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
    %1 = graph.relu %0 : tensor<1x16x8x8xf32>

Each op class knows how to infer its result type from its operand types and
attributes (``infer_type``); the verifier is "infer and compare", so the
Python builder and the verifier can never disagree.  Attributes are IRDL
properties whose constraint is their kind (:class:`AttrKind`), declared with
:func:`graph_prop`: omitted ones take their documented default, misspelt ones
are rejected, and every diagnostic names the op and the attribute.

Each op also declares its fusion kind (TVM's ``OpPatternKind``) for
``fuse-ops``.  Program-level ops (``graph.call_kernel``, ``graph.call_extern``)
live here too because they are what graph functions become after lowering.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    f16,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrConstraint,
    IRDLOperation,
    OptPropertyDef,
    PropertyDef,
    VerificationContext,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure, SymbolTable
from xdsl.utils.exceptions import VerifyException

from ember.dialects.graph_registry import registered_ops, registered_shape_rule

# --------------------------------------------------------------------------
# Fusion kinds
# --------------------------------------------------------------------------


class FusionKind(IntEnum):
    """How an op may be fused; the order matters (TVM's ``OpPatternKind``)."""

    ELEMENTWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    REDUCTION = 3
    OUT_ELEMENTWISE_FUSABLE = 4
    OPAQUE = 8


# --------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------

FLOAT_TYPES: tuple[Attribute, ...] = (f32, f16)
INT_TYPES: tuple[Attribute, ...] = (i32, i64)
ALL_TYPES: tuple[Attribute, ...] = FLOAT_TYPES + INT_TYPES

_NUMPY_DTYPES: dict[Attribute, np.dtype] = {
    f32: np.dtype(np.float32),
    f16: np.dtype(np.float16),
    i32: np.dtype(np.int32),
    i64: np.dtype(np.int64),
}
_ELEMENT_TYPES: dict[np.dtype, Attribute] = {v: k for k, v in _NUMPY_DTYPES.items()}
_DTYPE_NAMES = {"float32": f32, "float16": f16, "int32": i32, "int64": i64}


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of an element type (f32, f16, i32, i64)."""
    try:
        return _NUMPY_DTYPES[element_type]
    except KeyError:
        raise ValueError(
            f"unsupported element type {element_type}: ember's tensors hold "
            "f32, f16, i32 or i64"
        ) from None


def element_type(dtype: Any) -> Attribute:
    """The element type for a numpy dtype or a name such as ``"float32"``."""
    if isinstance(dtype, str) and dtype in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype]
    try:
        return _ELEMENT_TYPES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError(
            f"unsupported dtype {dtype!r}: expected float32, float16, int32 or int64"
        ) from None


def tensor_type(shape: Sequence[int], dtype: Any = "float32") -> TensorType:
    """``tensor<shape x dtype>`` from a shape and a numpy dtype or name."""
    elem = dtype if isinstance(dtype, Attribute) else element_type(dtype)
    return TensorType(elem, [int(d) for d in shape])


def type_str(t: Attribute) -> str:
    """A compact textual form of a type, for diagnostics."""
    if isinstance(t, TensorType):
        dims = "x".join(str(d) for d in t.get_shape())
        return f"tensor<{dims + 'x' if dims else ''}{t.element_type}>"
    return str(t)


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


# --------------------------------------------------------------------------
# Attribute kinds: IRDL constraints that speak ember's diagnostics
# --------------------------------------------------------------------------


def _int_of(attr: Attribute) -> int | None:
    if isinstance(attr, IntegerAttr) and isinstance(attr.type, IntegerType):
        return attr.value.data
    return None


@dataclass(frozen=True)
class AttrKind(AttrConstraint):
    """The kind of a graph op's attribute, as an IRDL constraint.

    ``decode`` turns a stored attribute into the Python value that shape
    rules and references see (``(1, 1)``, ``1e-5``, ``"nearest"``) and
    raises :class:`VerifyException` with the end of ember's message
    (``must have 4 values, got 2``): :meth:`GraphOp.verify` puts the op and
    the attribute in front.  ``encode`` is the way back.
    """

    KIND: ClassVar[str]
    BASES: ClassVar[tuple[type[Attribute], ...]]

    def verify(
        self, attr: Attribute, constraint_context: VerificationContext | None = None
    ) -> None:
        self.decode(attr)

    def get_bases(self) -> set[type[Attribute]]:
        return set(self.BASES)

    def mapping_type_vars(self, type_var_mapping: Mapping[Any, Any]) -> AttrKind:
        return self

    def decode(self, attr: Attribute) -> Any:
        raise NotImplementedError

    def encode(self, value: Any) -> Attribute:
        raise NotImplementedError

    def encode_default(self, value: Any) -> Attribute:
        """The attribute that stands for an absent one (IRDL's default)."""
        return self.encode(value)


@dataclass(frozen=True)
class IntArrayKind(AttrKind):
    """A list of integers, ``[1, 1]`` (``ArrayAttr`` of i64), of ``length``
    values when given."""

    length: int | None = None
    KIND: ClassVar = "ints"
    BASES: ClassVar = (ArrayAttr,)

    def decode(self, attr: Attribute) -> tuple[int, ...]:
        if not isinstance(attr, ArrayAttr) or any(
            _int_of(a) is None for a in attr.data
        ):
            raise VerifyException(f"must be a list of integers, got {attr}")
        values = tuple(_int_of(a) for a in attr.data)
        if self.length is not None and len(values) != self.length:
            raise VerifyException(
                f"must have {self.length} values, got {len(values)}"
            )
        return values  # type: ignore[return-value]

    def encode(self, value: Any) -> Attribute:
        return ArrayAttr([IntegerAttr(int(v), i64) for v in value])


@dataclass(frozen=True)
class IntKind(AttrKind):
    """An integer, ``1`` (``IntegerAttr``, i64 when ember makes one)."""

    KIND: ClassVar = "int"
    BASES: ClassVar = (IntegerAttr,)

    def decode(self, attr: Attribute) -> int:
        value = _int_of(attr)
        if value is None:
            raise VerifyException(f"must be an integer, got {attr}")
        return value

    def encode(self, value: Any) -> Attribute:
        return IntegerAttr(int(value), i64)


@dataclass(frozen=True)
class BoolKind(AttrKind):
    """``true`` or ``false`` (``IntegerAttr`` of i1; 0 and 1 also do)."""

    KIND: ClassVar = "bool"
    BASES: ClassVar = (IntegerAttr,)

    def decode(self, attr: Attribute) -> bool:
        value = IntKind().decode(attr)
        # xDSL stores i1 ``true`` as -1 (two's complement), MLIR as 1.
        if value not in (0, 1, -1):
            raise VerifyException(f"must be true or false, got {attr}")
        return value != 0

    def encode(self, value: Any) -> Attribute:
        return IntegerAttr(int(bool(value)), IntegerType(1))


@dataclass(frozen=True)
class FloatKind(AttrKind):
    """A number, ``1.0e-05 : f32`` (``FloatAttr``; an integer also does)."""

    KIND: ClassVar = "float"
    BASES: ClassVar = (FloatAttr, IntegerAttr)

    def decode(self, attr: Attribute) -> float:
        if isinstance(attr, FloatAttr):
            return float(attr.value.data)
        value = _int_of(attr)
        if value is None:
            raise VerifyException(f"must be a number, got {attr}")
        return float(value)

    def encode(self, value: Any) -> Attribute:
        return FloatAttr(float(value), f32)

    def encode_default(self, value: Any) -> Attribute:
        # f64, so that a default such as 1e-5 decodes to exactly that.
        return FloatAttr(float(value), f64)


@dataclass(frozen=True)
class StringKind(AttrKind):
    """A string, ``"nearest"`` (``StringAttr``)."""

    KIND: ClassVar = "str"
    BASES: ClassVar = (StringAttr,)

    def decode(self, attr: Attribute) -> str:
        if not isinstance(attr, StringAttr):
            raise VerifyException(f"must be a string, got {attr}")
        return attr.data

    def encode(self, value: Any) -> Attribute:
        return StringAttr(str(value))


@dataclass(frozen=True)
class DenseKind(AttrKind):
    """A ``dense<…> : tensor<…>`` value (``DenseIntOrFPElementsAttr``),
    kept as the attribute."""

    KIND: ClassVar = "dense"
    BASES: ClassVar = (DenseIntOrFPElementsAttr,)

    def decode(self, attr: Attribute) -> DenseIntOrFPElementsAttr:
        if not isinstance(attr, DenseIntOrFPElementsAttr):
            raise VerifyException("must be a dense elements attribute")
        return attr

    def encode(self, value: Any) -> Attribute:
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise ValueError(f"cannot encode {value!r} as a dense attribute")
        return value


def graph_prop(kind: AttrKind, default: Any = None) -> Any:
    """The IRDL declaration of a graph op attribute: a property of ``kind``,
    optional with ``default`` (a Python value, e.g. ``(1, 1)``) when one is
    given, required otherwise.  ``Conv2dOp.get_irdl_definition().properties``
    lists them."""
    if default is None:
        return prop_def(kind)
    return opt_prop_def(kind, default_value=kind.encode_default(default))


_KINDS: dict[str, type[AttrKind]] = {
    k.KIND: k for k in (IntArrayKind, IntKind, BoolKind, FloatKind, StringKind, DenseKind)
}


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of a graph op in short: its kind, default and arity.

    ``kind`` is ``"ints"`` (a list of integers, printed ``[1, 1]``), ``"int"``,
    ``"float"``, ``"bool"``, ``"dense"`` or ``"str"``.  ``length`` fixes the
    length of an ``"ints"`` list.  ``default`` of ``None`` means the attribute
    is required.  ``Op.ATTRS`` describes an op's IRDL properties this way;
    a subclass that still sets ``ATTRS`` to such a table gets each entry
    declared as :func:`graph_prop` (the older way of declaring attributes).
    """

    kind: str
    default: Any = None
    length: int | None = None

    def constraint(self) -> AttrKind:
        """The IRDL constraint of this kind."""
        if self.kind == "ints":
            return IntArrayKind(self.length)
        return _KINDS[self.kind]()

    def prop(self) -> Any:
        """The IRDL declaration (:func:`graph_prop`) of this attribute."""
        return graph_prop(self.constraint(), self.default)


def _spec_of(prop: PropertyDef) -> AttrSpec:
    kind = prop.constr
    if not isinstance(kind, AttrKind):
        return AttrSpec("attribute", prop.default_value)
    default = None if prop.default_value is None else kind.decode(prop.default_value)
    return AttrSpec(kind.KIND, default, getattr(kind, "length", None))


class _AttrTable:
    """``Op.ATTRS``: attribute name -> :class:`AttrSpec`, read from the op's
    IRDL properties (declaration order)."""

    def __get__(self, obj: Any, cls: type[GraphOp]) -> Mapping[str, AttrSpec]:
        return _attr_table(cls)


def _attr_table(cls: type[GraphOp]) -> Mapping[str, AttrSpec]:
    table = _ATTR_TABLES.get(cls)
    if table is None:
        op_def = cls.get_irdl_definition()
        if op_def is None:  # a base class, not an op
            return {}
        # Declaration order, base classes first (IRDL lists a subclass's own first).
        props = op_def.properties
        names = dict.fromkeys(
            n for c in reversed(cls.__mro__) for n in vars(c) if n in props
        )
        table = MappingProxyType({name: _spec_of(props[name]) for name in names})
        _ATTR_TABLES[cls] = table
    return table


_ATTR_TABLES: MutableMapping[type, Mapping[str, AttrSpec]] = weakref.WeakKeyDictionary()


# --------------------------------------------------------------------------
# The base class: syntax, attribute access, verification
# --------------------------------------------------------------------------


_XDSL_BUILD_ARGS = frozenset({"result_types", "attributes", "properties"})

# Dense constants with more elements than this print as a hex blob: a 44 MB
# ResNet-18 then prints and parses in about a second instead of minutes.
HEX_THRESHOLD = 100


def _print_attr_value(printer: Printer, attr: Attribute) -> None:
    """Print an attribute value the way users write it (``[1, 1]``, ``1``)."""
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        printer.print_string(str(attr.value.data))
    elif isinstance(attr, IntegerAttr) and attr.type == IntegerType(1):
        printer.print_string("true" if attr.value.data else "false")
    elif isinstance(attr, ArrayAttr) and all(
        isinstance(a, IntegerAttr) and a.type == i64 for a in attr.data
    ):
        printer.print_string(
            "[" + ", ".join(str(_int_of(a)) for a in attr.data) + "]"
        )
    elif isinstance(attr, DenseIntOrFPElementsAttr) and len(attr) > HEX_THRESHOLD:
        printer.print_string(f'dense<"0x{attr.data.data.hex().upper()}"> : ')
        printer.print_attribute(attr.type)
    else:
        printer.print_attribute(attr)


class GraphOp(IRDLOperation):
    """Base of all graph operators: one tensor result, custom syntax.

    Subclasses declare their attributes as IRDL properties with
    :func:`graph_prop` (``strides = graph_prop(IntArrayKind(2), (1, 1))``),
    set ``FUSION_KIND``, and implement ``infer_type``.  ``op.attr(name)``
    reads one decoded, its default filled in; ``op.strides`` is the stored
    attribute (xDSL's accessor, the default when absent).
    """

    ATTRS: ClassVar[Mapping[str, AttrSpec]] = _AttrTable()  # type: ignore[assignment]
    FUSION_KIND: ClassVar[FusionKind] = FusionKind.OPAQUE
    SINGLE_TYPE: ClassVar[bool] = False
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOAT_TYPES

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass that sets ``ATTRS`` to a table of :class:`AttrSpec`
        (the older way) gets each entry declared with :func:`graph_prop`."""
        super().__init_subclass__(**kwargs)
        table = cls.__dict__.get("ATTRS")
        if isinstance(table, Mapping):
            for name, spec in table.items():
                if name not in cls.__dict__:
                    setattr(cls, name, spec.prop())
            delattr(cls, "ATTRS")

    # ---- construction ----------------------------------------------------

    @classmethod
    def build(
        cls,
        operands: Sequence[SSAValue | Operation] = (),
        result_type: Attribute | None = None,
        **attributes: Any,
    ) -> GraphOp:
        """Build the op; the result type is inferred when not given.

        Attributes are Python values (``strides=(2, 2)``) or xDSL attributes;
        ``None`` values are left out (the default applies).  xDSL's form,
        ``build(operands=[…], result_types=[t], properties={…})`` (or
        ``attributes={…}``), means the same.
        """
        result_type, attributes = cls._ember_build_args(result_type, attributes)
        values = [SSAValue.get(o) for o in operands]
        props = cls.get_irdl_definition().properties
        stored: dict[str, Attribute] = {}
        for name, value in attributes.items():
            if value is None:
                continue
            if name not in props:
                raise ValueError(f"{cls.name}: unknown attribute '{name}'")
            kind = props[name].constr
            if isinstance(value, Attribute) or not isinstance(kind, AttrKind):
                stored[name] = value
            else:
                stored[name] = kind.encode(value)
        if result_type is None:
            try:
                decoded = {n: cls._decode(n, stored.get(n)) for n in props}
                result_type = cls.infer_type([v.type for v in values], decoded)
            except VerifyException as e:
                raise ValueError(str(e)) from None
        return cls.create(
            operands=values, result_types=[result_type], properties=stored
        )

    @classmethod
    def _ember_build_args(
        cls, result_type: Attribute | None, attributes: Mapping[str, Any]
    ) -> tuple[Attribute | None, dict[str, Any]]:
        """xDSL's ``result_types=``/``attributes=``/``properties=`` keywords
        turned into ember's ``result_type`` and attribute keywords."""
        attrs = dict(attributes)
        if not _XDSL_BUILD_ARGS & attrs.keys():
            return result_type, attrs
        result_types = list(attrs.pop("result_types", None) or ())
        if result_types:
            if result_type is not None or len(result_types) != 1:
                raise ValueError(
                    f"{cls.name}: give one result type, got "
                    f"{len(result_types) + (result_type is not None)}"
                )
            result_type = result_types[0]
        for group in ("attributes", "properties"):
            for name, value in dict(attrs.pop(group, None) or {}).items():
                if name in attrs:
                    raise ValueError(f"{cls.name}: attribute '{name}' is given twice")
                attrs[name] = value
        return result_type, attrs

    # ---- attribute access -----------------------------------------------

    @classmethod
    def _decode(cls, name: str, attr: Attribute | None) -> Any:
        """Attribute ``name``'s value (``attr``, else its default) decoded,
        or ``None`` for an absent attribute without a default; a wrong kind
        is a :class:`VerifyException` naming the op and the attribute."""
        prop = cls.get_irdl_definition().properties[name]
        if attr is None:
            attr = prop.default_value
            if attr is None:
                return None
        kind = prop.constr
        try:
            if isinstance(kind, AttrKind):
                return kind.decode(attr)
            kind.verify(attr, VerificationContext())
            return attr
        except VerifyException as e:
            raise VerifyException(f"{cls.name}: attribute '{name}' {e}") from None

    def attr(self, name: str) -> Any:
        """The decoded value of attribute ``name`` (or its default)."""
        value = self._decode(name, self.properties.get(name))
        if value is None:
            raise VerifyException(f"{self.name}: missing attribute '{name}'")
        return value

    def attr_values(self) -> dict[str, Any]:
        """All attributes decoded, defaults filled in."""
        return {
            name: self.attr(name) for name in self.get_irdl_definition().properties
        }

    @classmethod
    def infer_type(
        cls, operand_types: Sequence[Attribute], attrs: Mapping[str, Any]
    ) -> Attribute:
        """The result type: the class's override, else its registered
        :func:`~ember.dialects.graph_registry.shape_rule`."""
        rule = registered_shape_rule(cls)
        if rule is None:
            raise VerifyException(
                f"{cls.name}: no shape rule (override infer_type or register "
                "one with @shape_rule)"
            )
        return rule(operand_types, attrs)

    @property
    def result(self) -> SSAValue:
        return self.results[0]

    def verify(self, verify_nested_ops: bool = True) -> None:
        """xDSL's verification, the attributes checked first.

        IRDL checks each property against its constraint before the op's
        ``verify_``, and its message names neither the op nor the property;
        here the same constraints are checked in ember's words
        (``graph.conv2d: attribute 'padding' must have 4 values, got 2``),
        reported the way xDSL reports a failing ``verify_``.
        """
        try:
            self.verify_attributes()
        except VerifyException as err:
            self.emit_error(f"Operation does not verify: {err}", err)
        super().verify(verify_nested_ops)

    def verify_attributes(self) -> None:
        """Each attribute is declared, of its kind, and present if required;
        discardable ones (``{graph.…}``, with a dot) are left alone."""
        props = self.get_irdl_definition().properties
        for name in (*self.properties, *self.attributes):
            if name not in props and "." not in name:
                known = ", ".join(self.ATTRS) or "none"
                raise VerifyException(
                    f"{self.name}: unknown attribute '{name}' (known: {known})"
                )
        for name in props:
            if name in self.properties:
                self._decode(name, self.properties[name])
            elif props[name].default_value is None and not isinstance(
                props[name], OptPropertyDef
            ):
                raise VerifyException(f"{self.name}: missing attribute '{name}'")

    def verify_(self) -> None:
        for i, operand in enumerate(self.operands):
            t = operand.type
            if not isinstance(t, TensorType):
                raise VerifyException(
                    f"{self.name}: operand {i} must be a tensor, got {t}"
                )
        if len(self.results) != 1 or not isinstance(self.results[0].type, TensorType):
            raise VerifyException(f"{self.name}: must have one tensor result")
        self.verify_result_type()

    def verify_result_type(self) -> None:
        """Infer the result type and compare it with the declared one."""
        inferred = self.infer_type(
            [o.type for o in self.operands], self.attr_values()
        )
        declared = self.results[0].type
        if inferred != declared:
            raise VerifyException(
                f"{self.name}: result type {type_str(declared)} does not match "
                f"the inferred type {type_str(inferred)}"
            )

    # ---- syntax --------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> GraphOp:
        pos = parser.pos
        operands = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand,
            parser.parse_unresolved_operand,
        ) or []
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        parsed = parser.parse_type()
        if isinstance(parsed, FunctionType):
            operand_types = list(parsed.inputs.data)
            result_types = list(parsed.outputs.data)
            if len(result_types) != 1:
                parser.raise_error(
                    f"{cls.name} has one result, the type gives {len(result_types)}",
                    type_pos,
                    parser.pos,
                )
            result_type = result_types[0]
        else:
            operand_types = [parsed] * len(operands)
            result_type = parsed
        if len(operand_types) != len(operands):
            parser.raise_error(
                f"{cls.name}: {len(operands)} operands but the type lists "
                f"{len(operand_types)}",
                pos,
                parser.pos,
            )
        values = parser.resolve_operands(operands, operand_types, pos)
        declared = cls.get_irdl_definition().properties
        return cls.create(
            operands=values,
            result_types=[result_type],
            properties={k: v for k, v in attributes.items() if k in declared},
            attributes={k: v for k, v in attributes.items() if k not in declared},
        )

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        if self.properties or self.attributes:
            printer.print_string(" {")
            printer.print_list(
                [*self.properties.items(), *self.attributes.items()],
                lambda kv: (
                    printer.print_string(f"{kv[0]} = "),
                    _print_attr_value(printer, kv[1]),
                ),
            )
            printer.print_string("}")
        printer.print_string(" : ")
        result_type = self.results[0].type
        if self.SINGLE_TYPE and all(
            o.type == result_type for o in self.operands
        ):
            printer.print_attribute(result_type)
        else:
            printer.print_string("(")
            printer.print_list([o.type for o in self.operands], printer.print_attribute)
            printer.print_string(") -> ")
            printer.print_attribute(result_type)


# --------------------------------------------------------------------------
# Shape helpers used by infer_type
# --------------------------------------------------------------------------


def _fail(msg: str) -> None:
    raise VerifyException(msg)


def _tensor(op: str, what: str, t: Attribute) -> TensorType:
    if not isinstance(t, TensorType):
        raise VerifyException(f"{op}: {what} must be a tensor, got {t}")
    for d in t.get_shape():
        if d < 0:
            raise VerifyException(f"{op}: {what} must have a static shape, got {t}")
    return t


def _check_dtype(op: str, what: str, t: TensorType, allowed: Iterable[Attribute]) -> None:
    allowed = tuple(allowed)
    if t.element_type not in allowed:
        names = ", ".join(str(a) for a in allowed)
        raise VerifyException(
            f"{op}: {what} has element type {t.element_type}, expected one of {names}"
        )


def _same_dtype(op: str, types: Sequence[tuple[str, TensorType]]) -> None:
    first_name, first = types[0]
    for name, t in types[1:]:
        if t.element_type != first.element_type:
            raise VerifyException(
                f"{op}: {name} has element type {t.element_type} but "
                f"{first_name} has {first.element_type}"
            )


def _rank(op: str, what: str, t: TensorType, rank: int, layout: str = "") -> tuple[int, ...]:
    shape = tuple(t.get_shape())
    if len(shape) != rank:
        lay = f" ({layout})" if layout else ""
        raise VerifyException(
            f"{op}: {what} must have rank {rank}{lay}, got {type_str(t)}"
        )
    return shape


def _axis(op: str, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise VerifyException(f"{op}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def broadcast_shapes(op: str, a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of two static shapes, with a diagnostic on failure."""
    out: list[int] = []
    for i in range(max(len(a), len(b))):
        da = a[len(a) - 1 - i] if i < len(a) else 1
        db = b[len(b) - 1 - i] if i < len(b) else 1
        if da != db and 1 not in (da, db):
            raise VerifyException(
                f"{op}: shapes {list(a)} and {list(b)} cannot be broadcast "
                f"(dimension {da} vs {db})"
            )
        out.append(max(da, db) if 0 not in (da, db) else 0)
    return tuple(reversed(out))


def _window_out(
    op: str, size: int, kernel: int, stride: int, pad: int, dilation: int, axis: str
) -> int:
    if stride <= 0 or dilation <= 0:
        _fail(f"{op}: strides and dilation must be positive")
    if pad < 0:
        _fail(f"{op}: padding must not be negative")
    effective = (kernel - 1) * dilation + 1
    extent = size + pad - effective
    if extent < 0:
        _fail(
            f"{op}: window {effective} is larger than the padded {axis} extent "
            f"{size + pad}"
        )
    return extent // stride + 1


# --------------------------------------------------------------------------
# Operators
# --------------------------------------------------------------------------

_TRAITS = traits_def(Pure())


class _GraphCanonicalization(HasCanonicalizationPatternsTrait):
    """Looks up canonicalization patterns lazily (no import cycle)."""

    def get_patterns(self, op: type[Operation]):  # type: ignore[override]
        from ember.passes.canonicalization import patterns_for

        return patterns_for(op.name)

    @classmethod
    def get_canonicalization_patterns(cls):
        return ()


_CANON_TRAITS = traits_def(Pure(), _GraphCanonicalization())


def _conv_operands(
    op: str, operand_types: Sequence[Attribute], weight_layout: str
) -> tuple[TensorType, tuple[int, ...], tuple[int, ...]]:
    """A convolution's float NCHW data and its rank-4 weight of the same
    dtype (``weight_layout`` names its axes in errors): the data type and
    both shapes."""
    data = _tensor(op, "data", operand_types[0])
    weight = _tensor(op, "weight", operand_types[1])
    _check_dtype(op, "data", data, FLOAT_TYPES)
    _same_dtype(op, [("data", data), ("weight", weight)])
    return (
        data,
        _rank(op, "data", data, 4, "NCHW"),
        _rank(op, "weight", weight, 4, weight_layout),
    )


@irdl_op_definition
class Conv2dOp(GraphOp):
    """2-D convolution, data NCHW, weight OIHW (``relay.nn.conv2d``).

    ```mlir
    %0 = graph.conv2d %data, %weight {strides = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
    ```
    """

    name = "graph.conv2d"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OUT_ELEMENTWISE_FUSABLE
    strides = graph_prop(IntArrayKind(2), (1, 1))
    padding = graph_prop(IntArrayKind(4), (0, 0, 0, 0))
    dilation = graph_prop(IntArrayKind(2), (1, 1))
    groups = graph_prop(IntKind(), 1)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data, (n, c, h, w), (o, i, kh, kw) = _conv_operands(op, operand_types, "OIHW")
        groups = attrs["groups"]
        if groups <= 0:
            _fail(f"{op}: groups must be positive, got {groups}")
        if c % groups:
            _fail(f"{op}: data has {c} channels, not divisible by groups = {groups}")
        if o % groups:
            _fail(f"{op}: weight has {o} output channels, not divisible by groups = {groups}")
        if i * groups != c:
            if groups == 1:
                _fail(f"{op}: weight has {i} input channels but data has {c}")
            _fail(
                f"{op}: weight has {i} input channels per group but data has "
                f"{c} channels in {groups} groups ({c // groups} per group)"
            )
        sh, sw = attrs["strides"]
        pt, pl, pb, pr = attrs["padding"]
        dh, dw = attrs["dilation"]
        oh = _window_out(op, h, kh, sh, pt + pb, dh, "height")
        ow = _window_out(op, w, kw, sw, pl + pr, dw, "width")
        return TensorType(data.element_type, [n, o, oh, ow])


@irdl_op_definition
class Conv2dTransposeOp(GraphOp):
    """Transposed 2-D convolution (``relay.nn.conv2d_transpose``, ONNX
    ``ConvTranspose``), data NCHW, weight IOHW (input channels, output
    channels per group, KH, KW): every input pixel scatters its weighted
    window into the output, ``padding`` crops the full result.

    ```mlir
    %0 = graph.conv2d_transpose %x, %w {strides = [2, 2], padding = [1, 1, 1, 1], output_padding = [1, 1]} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10x10xf32>
    ```
    """

    name = "graph.conv2d_transpose"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OUT_ELEMENTWISE_FUSABLE
    strides = graph_prop(IntArrayKind(2), (1, 1))
    padding = graph_prop(IntArrayKind(4), (0, 0, 0, 0))
    dilation = graph_prop(IntArrayKind(2), (1, 1))
    output_padding = graph_prop(IntArrayKind(2), (0, 0))
    groups = graph_prop(IntKind(), 1)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data, (n, c, h, w), (i, o, kh, kw) = _conv_operands(op, operand_types, "IOHW")
        groups = attrs["groups"]
        if groups <= 0 or c % groups:
            _fail(f"{op}: data has {c} channels, not divisible by groups = {groups}")
        if i != c:
            _fail(f"{op}: weight has {i} input channels but data has {c}")
        out = []
        for size, k, s, d, p0, p1, extra, axis in zip(
            (h, w), (kh, kw), attrs["strides"], attrs["dilation"],
            attrs["padding"][:2], attrs["padding"][2:], attrs["output_padding"], ("height", "width"),
        ):
            if s <= 0 or d <= 0 or k <= 0:
                _fail(f"{op}: strides, dilation and the window must be positive")
            if min(p0, p1, extra) < 0:
                _fail(f"{op}: padding and output_padding must not be negative")
            if extra >= max(s, d):
                _fail(f"{op}: output_padding {extra} must be smaller than the stride or dilation of the {axis}")
            full = (size - 1) * s + (k - 1) * d + 1 + extra
            if full - p0 - p1 <= 0:
                _fail(f"{op}: padding {p0 + p1} crops the whole {axis} ({full})")
            out.append(full - p0 - p1)
        return TensorType(data.element_type, [n, o * groups, *out])


@irdl_op_definition
class DenseOp(GraphOp):
    """Fully connected layer, TVM semantics: ``data (N×K) · weightᵀ (U×K) → N×U``.

    ```mlir
    %0 = graph.dense %x, %w : (tensor<1x784xf32>, tensor<128x784xf32>) -> tensor<1x128xf32>
    ```
    """

    name = "graph.dense"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OUT_ELEMENTWISE_FUSABLE

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        weight = _tensor(op, "weight", operand_types[1])
        _check_dtype(op, "data", data, FLOAT_TYPES)
        _same_dtype(op, [("data", data), ("weight", weight)])
        n, k = _rank(op, "data", data, 2, "N×K")
        u, k2 = _rank(op, "weight", weight, 2, "units×K")
        if k != k2:
            _fail(f"{op}: weight has {k2} input features but data has {k}")
        return TensorType(data.element_type, [n, u])


@irdl_op_definition
class MatmulOp(GraphOp):
    """Matrix product ``lhs (… × M × K) · rhs (… × K × N)`` with batch broadcasting.

    ```mlir
    %0 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    ```
    """

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OUT_ELEMENTWISE_FUSABLE

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        lhs = _tensor(op, "lhs", operand_types[0])
        rhs = _tensor(op, "rhs", operand_types[1])
        _check_dtype(op, "lhs", lhs, FLOAT_TYPES)
        _same_dtype(op, [("lhs", lhs), ("rhs", rhs)])
        a, b = shape_of(lhs), shape_of(rhs)
        if len(a) < 2 or len(b) < 2:
            _fail(f"{op}: operands must have rank >= 2, got {type_str(lhs)} and {type_str(rhs)}")
        if a[-1] != b[-2]:
            _fail(f"{op}: lhs has {a[-1]} columns but rhs has {b[-2]} rows")
        batch = broadcast_shapes(op, a[:-2], b[:-2])
        return TensorType(lhs.element_type, [*batch, a[-2], b[-1]])


@irdl_op_definition
class BiasAddOp(GraphOp):
    """Add a 1-D bias along ``axis`` (``relay.nn.bias_add``).

    ```mlir
    %0 = graph.bias_add %x, %b {axis = 1} : (tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
    ```
    """

    name = "graph.bias_add"
    data = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.BROADCAST
    axis = graph_prop(IntKind(), 1)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        bias = _tensor(op, "bias", operand_types[1])
        _check_dtype(op, "data", data, FLOAT_TYPES)
        _same_dtype(op, [("data", data), ("bias", bias)])
        shape = shape_of(data)
        axis = _axis(op, attrs["axis"], len(shape))
        (b,) = _rank(op, "bias", bias, 1)
        if b != shape[axis]:
            _fail(f"{op}: bias has {b} elements but data has {shape[axis]} along axis {axis}")
        return data


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Batch normalisation in inference form; one result.

    ``(x - mean) / sqrt(var + epsilon) * gamma + beta`` along ``axis``.

    ```mlir
    %0 = graph.batch_norm %x, %gamma, %beta, %mean, %var {epsilon = 1.0e-05 : f32} : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
    ```
    """

    name = "graph.batch_norm"
    data = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    moving_mean = operand_def(TensorType)
    moving_var = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.BROADCAST
    epsilon = graph_prop(FloatKind(), 1e-5)
    axis = graph_prop(IntKind(), 1)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        _check_dtype(op, "data", data, FLOAT_TYPES)
        shape = shape_of(data)
        axis = _axis(op, attrs["axis"], len(shape))
        params = []
        for name, t in zip(("gamma", "beta", "mean", "var"), operand_types[1:]):
            t = _tensor(op, name, t)
            params.append((name, t))
            (n,) = _rank(op, name, t, 1)
            if n != shape[axis]:
                _fail(
                    f"{op}: {name} has {n} elements but data has {shape[axis]} "
                    f"channels along axis {axis}"
                )
        _same_dtype(op, [("data", data), *params])
        if attrs["epsilon"] < 0:
            _fail(f"{op}: epsilon must not be negative")
        return data


class _UnaryElementwise(GraphOp):
    x = operand_def(TensorType)
    output = result_def(TensorType)
    FUSION_KIND: ClassVar = FusionKind.ELEMENTWISE
    SINGLE_TYPE: ClassVar = True

    @classmethod
    def infer_type(cls, operand_types, attrs):
        x = _tensor(cls.name, "operand", operand_types[0])
        _check_dtype(cls.name, "operand", x, cls.DTYPES)
        return x


@irdl_op_definition
class ReluOp(_UnaryElementwise):
    """``max(x, 0)``.

    ```mlir
    %0 = graph.relu %x : tensor<1x16xf32>
    ```
    """

    name = "graph.relu"
    traits = _CANON_TRAITS


@irdl_op_definition
class SigmoidOp(_UnaryElementwise):
    """``1 / (1 + exp(-x))``."""

    name = "graph.sigmoid"
    traits = _TRAITS


@irdl_op_definition
class TanhOp(_UnaryElementwise):
    """Hyperbolic tangent."""

    name = "graph.tanh"
    traits = _TRAITS


@irdl_op_definition
class ExpOp(_UnaryElementwise):
    """``e ** x``."""

    name = "graph.exp"
    traits = _TRAITS


@irdl_op_definition
class SqrtOp(_UnaryElementwise):
    """Square root (NaN for negative inputs, as in IEEE 754)."""

    name = "graph.sqrt"
    traits = _TRAITS


@irdl_op_definition
class LogOp(_UnaryElementwise):
    """Natural logarithm (``-inf`` at 0, NaN for negative inputs, as in IEEE 754).

    ```mlir
    %0 = graph.log %x : tensor<1x16xf32>
    ```
    """

    name = "graph.log"
    traits = _TRAITS


@irdl_op_definition
class NegativeOp(_UnaryElementwise):
    """``-x``."""

    name = "graph.negative"
    traits = _CANON_TRAITS
    DTYPES: ClassVar = ALL_TYPES


@irdl_op_definition
class ClipOp(_UnaryElementwise):
    """``min(max(x, min), max)``.

    ```mlir
    %0 = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x16xf32>
    ```
    """

    name = "graph.clip"
    traits = _CANON_TRAITS
    min = graph_prop(FloatKind())
    max = graph_prop(FloatKind())

    @classmethod
    def infer_type(cls, operand_types, attrs):
        if attrs["min"] is None or attrs["max"] is None:
            _fail(f"{cls.name}: attributes 'min' and 'max' are required")
        if attrs["min"] > attrs["max"]:
            _fail(f"{cls.name}: min {attrs['min']} is greater than max {attrs['max']}")
        return super().infer_type(operand_types, attrs)


class _BinaryBroadcast(GraphOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    FUSION_KIND: ClassVar = FusionKind.BROADCAST
    DTYPES: ClassVar = ALL_TYPES

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        lhs = _tensor(op, "lhs", operand_types[0])
        rhs = _tensor(op, "rhs", operand_types[1])
        _check_dtype(op, "lhs", lhs, cls.DTYPES)
        _same_dtype(op, [("lhs", lhs), ("rhs", rhs)])
        shape = broadcast_shapes(op, shape_of(lhs), shape_of(rhs))
        return TensorType(lhs.element_type, shape)


@irdl_op_definition
class AddOp(_BinaryBroadcast):
    """Elementwise sum with numpy broadcasting.

    ```mlir
    %0 = graph.add %a, %b : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
    ```
    """

    name = "graph.add"
    traits = _CANON_TRAITS


@irdl_op_definition
class SubtractOp(_BinaryBroadcast):
    """Elementwise difference with numpy broadcasting."""

    name = "graph.subtract"
    traits = _CANON_TRAITS


@irdl_op_definition
class MultiplyOp(_BinaryBroadcast):
    """Elementwise product with numpy broadcasting."""

    name = "graph.multiply"
    traits = _CANON_TRAITS


@irdl_op_definition
class DivideOp(_BinaryBroadcast):
    """Elementwise quotient with numpy broadcasting (floats only)."""

    name = "graph.divide"
    traits = _CANON_TRAITS
    DTYPES: ClassVar = FLOAT_TYPES


@irdl_op_definition
class MaximumOp(_BinaryBroadcast):
    """Elementwise maximum with numpy broadcasting."""

    name = "graph.maximum"
    traits = _TRAITS


@irdl_op_definition
class MinimumOp(_BinaryBroadcast):
    """Elementwise minimum with numpy broadcasting."""

    name = "graph.minimum"
    traits = _TRAITS


@irdl_op_definition
class SoftmaxOp(GraphOp):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (default -1).

    ```mlir
    %0 = graph.softmax %x {axis = -1} : (tensor<1x10xf32>) -> tensor<1x10xf32>
    ```
    """

    name = "graph.softmax"
    x = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OPAQUE
    axis = graph_prop(IntKind(), -1)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        x = _tensor(cls.name, "operand", operand_types[0])
        _check_dtype(cls.name, "operand", x, FLOAT_TYPES)
        _axis(cls.name, attrs["axis"], len(shape_of(x)))
        return x


class _Pool2d(GraphOp):
    data = operand_def(TensorType)
    output = result_def(TensorType)
    pool_size = graph_prop(IntArrayKind(2))
    strides = graph_prop(IntArrayKind(2), (1, 1))
    padding = graph_prop(IntArrayKind(4), (0, 0, 0, 0))
    dilation = graph_prop(IntArrayKind(2), (1, 1))
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OUT_ELEMENTWISE_FUSABLE

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        _check_dtype(op, "data", data, FLOAT_TYPES)
        n, c, h, w = _rank(op, "data", data, 4, "NCHW")
        kh, kw = attrs["pool_size"]
        if kh <= 0 or kw <= 0:
            _fail(f"{op}: pool_size must be positive, got {[kh, kw]}")
        sh, sw = attrs["strides"]
        pt, pl, pb, pr = attrs["padding"]
        dh, dw = attrs["dilation"]
        if max(pt, pb) >= (kh - 1) * max(dh, 1) + 1 or max(pl, pr) >= (kw - 1) * max(dw, 1) + 1:
            _fail(f"{op}: padding {[pt, pl, pb, pr]} must be smaller than pool_size {[kh, kw]}")
        oh = _window_out(op, h, kh, sh, pt + pb, dh, "height")
        ow = _window_out(op, w, kw, sw, pl + pr, dw, "width")
        for size, k, s, d, pad, out, axis in ((h, kh, sh, dh, pt, oh, "height"), (w, kw, sw, dw, pl, ow, "width")):
            if d > 1 and not _windows_hit_data(size, k, s, d, pad, out):
                _fail(f"{op}: a dilated window along the {axis} holds only padding")
        return TensorType(data.element_type, [n, c, oh, ow])


def _windows_hit_data(size: int, kernel: int, stride: int, dilation: int, pad: int, out: int) -> bool:
    """Whether every (dilated) window holds at least one real element."""
    return all(
        any(0 <= o * stride - pad + k * dilation < size for k in range(kernel))
        for o in range(out)
    )


@irdl_op_definition
class MaxPool2dOp(_Pool2d):
    """Max pooling over NCHW windows; padding never wins the max.

    ```mlir
    %0 = graph.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    ```
    """

    name = "graph.max_pool2d"


@irdl_op_definition
class AvgPool2dOp(_Pool2d):
    """Average pooling; ``count_include_pad`` counts padding in the divisor."""

    name = "graph.avg_pool2d"
    count_include_pad = graph_prop(BoolKind(), False)


@irdl_op_definition
class GlobalAvgPool2dOp(GraphOp):
    """Mean over H and W: ``N×C×H×W → N×C×1×1``."""

    name = "graph.global_avg_pool2d"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OUT_ELEMENTWISE_FUSABLE

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = _tensor(cls.name, "data", operand_types[0])
        _check_dtype(cls.name, "data", data, FLOAT_TYPES)
        n, c, _, _ = _rank(cls.name, "data", data, 4, "NCHW")
        return TensorType(data.element_type, [n, c, 1, 1])


@irdl_op_definition
class BatchFlattenOp(GraphOp):
    """``N×… → N×(product of the rest)``."""

    name = "graph.batch_flatten"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.INJECTIVE
    DTYPES: ClassVar = ALL_TYPES

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = _tensor(cls.name, "data", operand_types[0])
        _check_dtype(cls.name, "data", data, ALL_TYPES)
        shape = shape_of(data)
        if not shape:
            _fail(f"{cls.name}: data must have rank >= 1")
        return TensorType(data.element_type, [shape[0], math.prod(shape[1:])])


@irdl_op_definition
class ReshapeOp(GraphOp):
    """Reinterpret the elements (row-major) with a new shape.

    The shape is the result type; no attribute is needed.

    ```mlir
    %0 = graph.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
    ```
    """

    name = "graph.reshape"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _CANON_TRAITS
    FUSION_KIND: ClassVar = FusionKind.INJECTIVE

    @classmethod
    def build(cls, operands=(), result_type=None, **attributes):
        result_type, attributes = cls._ember_build_args(result_type, attributes)
        if result_type is None:
            raise ValueError(f"{cls.name}: the result type must be given")
        return super().build(operands, result_type, **attributes)

    def verify_result_type(self) -> None:
        data = _tensor(self.name, "data", self.operands[0].type)
        out = _tensor(self.name, "result", self.results[0].type)
        _check_dtype(self.name, "data", data, ALL_TYPES)
        if data.element_type != out.element_type:
            _fail(
                f"{self.name}: result element type {out.element_type} differs "
                f"from the data's {data.element_type}"
            )
        n_in, n_out = math.prod(shape_of(data)), math.prod(shape_of(out))
        if n_in != n_out:
            _fail(
                f"{self.name}: cannot reshape {type_str(data)} ({n_in} elements) "
                f"to {type_str(out)} ({n_out} elements)"
            )


@irdl_op_definition
class TransposeOp(GraphOp):
    """Permute the axes; ``axes`` defaults to reversing them.

    ```mlir
    %0 = graph.transpose %x {axes = [0, 2, 3, 1]} : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
    ```
    """

    name = "graph.transpose"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _CANON_TRAITS
    FUSION_KIND: ClassVar = FusionKind.INJECTIVE
    axes = graph_prop(IntArrayKind(), ())

    @classmethod
    def infer_type(cls, operand_types, attrs):
        data = _tensor(cls.name, "data", operand_types[0])
        _check_dtype(cls.name, "data", data, ALL_TYPES)
        shape = shape_of(data)
        axes = cls.normalized_axes(attrs["axes"], len(shape))
        return TensorType(data.element_type, [shape[a] for a in axes])

    @classmethod
    def normalized_axes(cls, axes: Sequence[int], rank: int) -> tuple[int, ...]:
        if not axes:
            return tuple(reversed(range(rank)))
        if len(axes) != rank:
            _fail(f"{cls.name}: axes {list(axes)} must list {rank} axes")
        norm = tuple(_axis(cls.name, a, rank) for a in axes)
        if sorted(norm) != list(range(rank)):
            _fail(f"{cls.name}: axes {list(axes)} is not a permutation of 0..{rank - 1}")
        return norm


@irdl_op_definition
class ConcatenateOp(GraphOp):
    """Join tensors along ``axis`` (all other dimensions equal).

    ```mlir
    %0 = graph.concatenate %a, %b {axis = 1} : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
    ```
    """

    name = "graph.concatenate"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.INJECTIVE
    axis = graph_prop(IntKind(), 0)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        if not operand_types:
            _fail(f"{op}: needs at least one operand")
        types = [_tensor(op, f"operand {i}", t) for i, t in enumerate(operand_types)]
        _check_dtype(op, "operand 0", types[0], ALL_TYPES)
        _same_dtype(op, [(f"operand {i}", t) for i, t in enumerate(types)])
        first = shape_of(types[0])
        axis = _axis(op, attrs["axis"], len(first))
        total = 0
        for i, t in enumerate(types):
            s = shape_of(t)
            if len(s) != len(first) or any(
                a != b for d, (a, b) in enumerate(zip(s, first)) if d != axis
            ):
                _fail(
                    f"{op}: operand {i} has shape {list(s)}, incompatible with "
                    f"{list(first)} outside axis {axis}"
                )
            total += s[axis]
        out = list(first)
        out[axis] = total
        return TensorType(types[0].element_type, out)


def slice_extent(begin: int, end: int, stride: int) -> int:
    """How many elements ``begin, begin + stride, …`` stop before ``end``."""
    if stride > 0:
        return max(0, -(-(end - begin) // stride))
    return max(0, -(-(begin - end) // -stride))


@irdl_op_definition
class SliceOp(GraphOp):
    """Strided slice (``relay.strided_slice``): along axis ``d``, element
    ``i`` of the result is element ``begin[d] + i·strides[d]`` of ``data``;
    ``end`` is exclusive, a negative stride walks backwards (``end = -1``
    then means "through index 0").  Indices are explicit: no Python-style
    negative indices, nothing clamped.

    ```mlir
    %0 = graph.slice %x {begin = [0, 1], end = [2, 7], strides = [1, 2]} : (tensor<2x8xf32>) -> tensor<2x3xf32>
    ```
    """

    name = "graph.slice"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.INJECTIVE
    DTYPES: ClassVar = ALL_TYPES
    begin = graph_prop(IntArrayKind())
    end = graph_prop(IntArrayKind())
    strides = graph_prop(IntArrayKind(), ())

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        _check_dtype(op, "data", data, ALL_TYPES)
        shape = shape_of(data)
        begin, end = attrs["begin"], attrs["end"]
        if begin is None or end is None:
            _fail(f"{op}: attributes 'begin' and 'end' are required")
        strides = attrs["strides"] or (1,) * len(shape)
        for name, values in (("begin", begin), ("end", end), ("strides", strides)):
            if len(values) != len(shape):
                _fail(f"{op}: '{name}' has {len(values)} values but data has rank {len(shape)}")
        out = []
        for d, (size, b, e, s) in enumerate(zip(shape, begin, end, strides)):
            if s == 0:
                _fail(f"{op}: stride of axis {d} is 0")
            if s > 0 and not (0 <= b < e <= size):
                _fail(f"{op}: axis {d} of size {size}: need 0 <= begin < end <= size, got begin {b}, end {e}")
            if s < 0 and not (-1 <= e < b < size):
                _fail(f"{op}: axis {d} of size {size}: a negative stride needs -1 <= end < begin < size, got begin {b}, end {e}")
            out.append(slice_extent(b, e, s))
        return TensorType(data.element_type, out)


PAD_MODES = ("constant", "reflect", "edge")


@irdl_op_definition
class PadOp(GraphOp):
    """Pad every axis (``relay.nn.pad``).  ``padding`` lists the elements
    added before each axis, then after each axis (ONNX's order:
    ``[b0, b1, …, e0, e1, …]``).  ``mode``: ``constant`` fills with
    ``value``; ``reflect`` mirrors without repeating the edge
    (``[1, 2, 3]`` → ``[3, 2, 1, 2, 3, 2, 1]``); ``edge`` repeats the edge.

    ```mlir
    %0 = graph.pad %x {padding = [0, 0, 1, 2, 0, 0, 1, 2], mode = "reflect"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x8xf32>
    ```
    """

    name = "graph.pad"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.INJECTIVE
    DTYPES: ClassVar = ALL_TYPES
    padding = graph_prop(IntArrayKind())
    mode = graph_prop(StringKind(), "constant")
    value = graph_prop(FloatKind(), 0.0)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        _check_dtype(op, "data", data, ALL_TYPES)
        shape = shape_of(data)
        padding, mode = attrs["padding"], attrs["mode"]
        if padding is None:
            _fail(f"{op}: missing attribute 'padding'")
        if len(padding) != 2 * len(shape):
            _fail(f"{op}: 'padding' has {len(padding)} values, expected {2 * len(shape)} for rank {len(shape)}")
        if mode not in PAD_MODES:
            _fail(f"{op}: mode '{mode}' is not one of {', '.join(PAD_MODES)}")
        rank = len(shape)
        out = []
        for d, size in enumerate(shape):
            before, after = padding[d], padding[rank + d]
            if before < 0 or after < 0:
                _fail(f"{op}: padding must not be negative, got {list(padding)}")
            if mode == "reflect" and max(before, after) > size - 1:
                _fail(f"{op}: reflect padding of axis {d} ({before}, {after}) must be smaller than its size {size}")
            if mode == "edge" and size == 0 and before + after:
                _fail(f"{op}: edge padding of the empty axis {d}")
            out.append(size + before + after)
        return TensorType(data.element_type, out)


RESIZE_METHODS = ("nearest", "linear")
RESIZE_COORDINATES = (
    "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
)
RESIZE_ROUNDING = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@irdl_op_definition
class Resize2dOp(GraphOp):
    """Resize the H and W axes of NCHW data (``relay.image.resize2d``, ONNX
    ``Resize``/``Upsample``): output pixel ``x`` reads input coordinate
    ``x_in = f(x)`` by ``coordinate_transformation_mode`` with the axis's
    scale (``scale_h``/``scale_w``; 0 means output size / input size), then
    takes the nearest pixel (``nearest_mode``) or interpolates linearly
    between the two neighbours; indices outside the input clamp to its edge.

    ```mlir
    %0 = graph.resize2d %x {size = [8, 8], method = "linear"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
    ```
    """

    name = "graph.resize2d"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.INJECTIVE
    size = graph_prop(IntArrayKind(2))
    method = graph_prop(StringKind(), "nearest")
    coordinate_transformation_mode = graph_prop(StringKind(), "half_pixel")
    nearest_mode = graph_prop(StringKind(), "round_prefer_floor")
    scale_h = graph_prop(FloatKind(), 0.0)
    scale_w = graph_prop(FloatKind(), 0.0)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        _check_dtype(op, "data", data, FLOAT_TYPES)
        n, c, _, _ = _rank(op, "data", data, 4, "NCHW")
        if attrs["size"] is None:
            _fail(f"{op}: missing attribute 'size'")
        oh, ow = attrs["size"]
        if oh <= 0 or ow <= 0:
            _fail(f"{op}: size must be positive, got {[oh, ow]}")
        for name, allowed in (
            ("method", RESIZE_METHODS),
            ("coordinate_transformation_mode", RESIZE_COORDINATES),
            ("nearest_mode", RESIZE_ROUNDING),
        ):
            if attrs[name] not in allowed:
                _fail(f"{op}: {name} '{attrs[name]}' is not one of {', '.join(allowed)}")
        if attrs["scale_h"] < 0 or attrs["scale_w"] < 0:
            _fail(f"{op}: scales must not be negative")
        return TensorType(data.element_type, [n, c, oh, ow])


@irdl_op_definition
class LrnOp(GraphOp):
    """Local response normalisation across channels (``relay.nn.lrn``, ONNX
    ``LRN``): ``x / (bias + alpha/size · Σ x²)^beta``, the sum over the
    ``size`` channels around each one (axis 1; windows stop at the edges).

    ```mlir
    %0 = graph.lrn %x {size = 5, alpha = 1.0e-04 : f32, beta = 7.5e-01 : f32, bias = 2.0 : f32} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    ```
    """

    name = "graph.lrn"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OPAQUE
    size = graph_prop(IntKind())
    alpha = graph_prop(FloatKind(), 1e-4)
    beta = graph_prop(FloatKind(), 0.75)
    bias = graph_prop(FloatKind(), 1.0)

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        _check_dtype(op, "data", data, FLOAT_TYPES)
        if len(shape_of(data)) < 2:
            _fail(f"{op}: data must have rank >= 2 (channels on axis 1), got {type_str(data)}")
        if attrs["size"] is None or attrs["size"] <= 0:
            _fail(f"{op}: size must be a positive integer, got {attrs['size']}")
        return data

    @staticmethod
    def window(size: int) -> tuple[int, int]:
        """Channels before and after each channel in its window."""
        before = (size - 1) // 2
        return before, size - 1 - before


class _Reduce(GraphOp):
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.REDUCTION
    axes = graph_prop(IntArrayKind())
    keepdims = graph_prop(BoolKind(), True)

    @classmethod
    def reduced_axes(cls, axes: Sequence[int], rank: int) -> tuple[int, ...]:
        norm = tuple(sorted({_axis(cls.name, a, rank) for a in axes}))
        if len(norm) != len(axes):
            _fail(f"{cls.name}: axes {list(axes)} repeat an axis")
        return norm

    @classmethod
    def infer_type(cls, operand_types, attrs):
        op = cls.name
        data = _tensor(op, "data", operand_types[0])
        _check_dtype(op, "data", data, FLOAT_TYPES)
        shape = shape_of(data)
        if attrs["axes"] is None or not attrs["axes"]:
            _fail(f"{op}: 'axes' must name at least one axis")
        axes = cls.reduced_axes(attrs["axes"], len(shape))
        if any(shape[a] == 0 for a in axes):
            _fail(f"{op}: cannot reduce an empty axis")
        if attrs["keepdims"]:
            out = [1 if d in axes else n for d, n in enumerate(shape)]
        else:
            out = [n for d, n in enumerate(shape) if d not in axes]
        return TensorType(data.element_type, out)


@irdl_op_definition
class ReduceSumOp(_Reduce):
    """Sum over ``axes`` (``relay.sum``); ``keepdims`` keeps them as size 1.

    ```mlir
    %0 = graph.reduce_sum %x {axes = [2, 3]} : (tensor<1x4x5x5xf32>) -> tensor<1x4x1x1xf32>
    ```
    """

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(_Reduce):
    """Mean over ``axes`` (``relay.mean``): the sum divided by the count.

    ```mlir
    %0 = graph.reduce_mean %x {axes = [-1], keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
    ```
    """

    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(_Reduce):
    """Maximum over ``axes`` (``relay.max``); NaN anywhere gives NaN.

    ```mlir
    %0 = graph.reduce_max %x {axes = [1]} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
    ```
    """

    name = "graph.reduce_max"


@irdl_op_definition
class CastOp(GraphOp):
    """Convert the element type (numpy ``astype``: floats to ints truncate).

    ```mlir
    %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf16>
    ```
    """

    name = "graph.cast"
    data = operand_def(TensorType)
    output = result_def(TensorType)
    traits = _CANON_TRAITS
    FUSION_KIND: ClassVar = FusionKind.ELEMENTWISE

    @classmethod
    def build(cls, operands=(), result_type=None, dtype: Any = None, **attributes):
        """``dtype`` (a numpy dtype, a name or an element type) gives the target."""
        result_type, attributes = cls._ember_build_args(result_type, attributes)
        if result_type is None:
            if dtype is None:
                raise ValueError(f"{cls.name}: give the target dtype")
            elem = dtype if isinstance(dtype, Attribute) else element_type(dtype)
            result_type = TensorType(elem, shape_of(SSAValue.get(operands[0])))
        return super().build(operands, result_type, **attributes)

    def verify_result_type(self) -> None:
        data = _tensor(self.name, "data", self.operands[0].type)
        out = _tensor(self.name, "result", self.results[0].type)
        _check_dtype(self.name, "data", data, ALL_TYPES)
        _check_dtype(self.name, "result", out, ALL_TYPES)
        if shape_of(data) != shape_of(out):
            _fail(
                f"{self.name}: result shape {list(shape_of(out))} differs from "
                f"the data's {list(shape_of(data))}"
            )


@irdl_op_definition
class ConstantOp(GraphOp):
    """A constant tensor.  Large values print as a hex blob.

    ```mlir
    %0 = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
    ```
    """

    name = "graph.constant"
    output = result_def(TensorType)
    traits = _TRAITS
    FUSION_KIND: ClassVar = FusionKind.OPAQUE
    SINGLE_TYPE: ClassVar = True
    DTYPES: ClassVar = ALL_TYPES
    value = graph_prop(DenseKind())

    @classmethod
    def infer_type(cls, operand_types, attrs):
        value = attrs["value"]
        if value is None:
            _fail(f"{cls.name}: attribute 'value' is required")
        t = value.type
        if not isinstance(t, TensorType):
            _fail(f"{cls.name}: value must have a tensor type, got {t}")
        _check_dtype(cls.name, "value", t, ALL_TYPES)
        return t

    @classmethod
    def from_array(cls, array: Any, *, copy: bool | None = None) -> ConstantOp:
        """A constant holding a numpy array (f32, f16, i32 or i64).

        The constant holds the array's memory, not a copy of it, where it can:
        a read-only array is held as it is (whoever froze it promises not to
        change it through another view: ``ember.build`` freezes views of its
        params for the build's duration); a writable one is copied, since its
        owner may change it later.  ``copy=False`` hands a fresh array over
        (a folded or packed weight): it is made read-only and held.  The
        attribute is xDSL's ``dense`` as ever: it prints, parses, hashes and
        compares like one made from bytes (:func:`held_bytes`).

        An array whose elements are all equal is stored as one element, a
        splat, as MLIR stores ``dense<1.0>``.
        """
        array = np.asarray(array)
        array = array.astype(array.dtype.newbyteorder("<"), order="C", copy=False)
        if copy is False:
            array.flags.writeable = False
        elif copy or array.flags.writeable:
            array = array.copy()
            array.flags.writeable = False
        t = tensor_type(array.shape, array.dtype)
        flat = array.reshape(-1)
        if _is_splat(flat):
            data: bytes | memoryview = flat[:1].tobytes()
        else:
            data = held_bytes(flat)
        value = DenseIntOrFPElementsAttr(t, _bytes_attr(data))
        return cls.create(result_types=[t], properties={"value": value})

    def to_array(self, copy: bool = True) -> np.ndarray:
        """The value as a numpy array: a fresh, writable copy, or with
        ``copy=False`` a read-only view of the constant's memory (a splat
        broadcast from its one element), which costs nothing.

        Checked against ember's allocation limit first: a splat of a huge
        type is an :class:`~ember.errors.AllocationError` naming this op.
        """
        hint = self.output.name_hint
        func = self.parent_op()
        where = f" in @{func.sym_name.data}" if isinstance(func, FuncOp) else ""
        what = f"graph.constant{' %' + hint if hint else ''}{where}"
        return dense_to_array(self.properties["value"], what, copy)

    def erase(self, safe_erase: bool = True, drop_references: bool = True) -> None:
        """Erase the op and let go of its value at once: a weight's array is
        freed when its last holder drops it, not when the garbage collector
        gets round to the op's reference cycles (op <-> results)."""
        super().erase(safe_erase, drop_references)
        self.properties.pop("value", None)


class _HashableArray(np.ndarray):
    """An ndarray a memoryview can be hashed over (numpy arrays are
    unhashable, and a memoryview hashes only over a hashable exporter); the
    memoryview's hash is that of its bytes, never this object's."""

    __hash__ = object.__hash__


def held_bytes(array: np.ndarray) -> memoryview:
    """The bytes of read-only, C-contiguous ``array`` without copying them: a
    read-only memoryview that hashes and compares as the equal ``bytes`` do,
    so a ``BytesAttr`` (and a ``dense`` attribute) over it is interchangeable
    with one over bytes, for CSE and the compile cache alike."""
    assert not array.flags.writeable and array.flags.c_contiguous
    return memoryview(array.view(_HashableArray)).cast("B")


def _is_splat(flat: np.ndarray) -> bool:
    """Whether the 1-D ``flat`` has more than one element, all with the same
    bytes (compared as unsigned integers: NaNs and -0.0 count as bytes)."""
    if flat.size <= 1:
        return False
    bits = flat.view(np.dtype(f"u{flat.dtype.itemsize}"))
    return bool(bits[0] == bits[1]) and bool(np.all(bits == bits[0]))


def _bytes_attr(data: bytes | memoryview):
    from xdsl.dialects.builtin import BytesAttr

    return BytesAttr(data)


def splat_value(attr: DenseIntOrFPElementsAttr) -> np.generic | None:
    """The one element of a splat stored as one element (``dense<1.0>`` of
    many), without materialising the others; None for any other attribute."""
    if math.prod(attr.type.get_shape()) <= 1 or len(attr) != 1:
        return None
    dtype = numpy_dtype(attr.type.element_type).newbyteorder("<")
    return np.frombuffer(attr.data.data, dtype=dtype)[0]


def dense_to_array(
    attr: Attribute, what: str = "a dense constant", copy: bool = True
) -> np.ndarray:
    """A dense elements attribute as a numpy array (splats expanded): a
    writable copy, or with ``copy=False`` a read-only view of its bytes.

    The values are materialised only here, after a check against the
    allocation limit (:func:`ember.limits.check_array`) that names ``what``.
    """
    from ember.limits import check_array

    assert isinstance(attr, DenseIntOrFPElementsAttr)
    t = attr.type
    dtype = numpy_dtype(t.element_type).newbyteorder("<")
    shape = tuple(t.get_shape())
    check_array(shape, dtype, f"{what} ({type_str(t)})")
    flat = np.frombuffer(attr.data.data, dtype=dtype)
    native = dtype.newbyteorder("=")
    if flat.size == 1 and math.prod(shape) != 1:
        if not copy:
            return np.broadcast_to(flat.astype(native, copy=False), shape)
        return np.full(shape, flat[0], dtype=native)
    return flat.reshape(shape).astype(native, copy=copy)


# --------------------------------------------------------------------------
# Program-level ops: calls into kernels and into the runtime registry
# --------------------------------------------------------------------------


def _print_call(
    printer: Printer, print_callee: Callable[[], None], op: Operation
) -> None:
    printer.print_string(" ")
    print_callee()
    printer.print_string("(")
    printer.print_list(op.operands, printer.print_operand)
    printer.print_string(")")
    extra = {k: v for k, v in op.attributes.items() if k not in ("callee", "function")}
    if extra:
        printer.print_string(" ")
        printer.print_attr_dict(extra)
    printer.print_string(" : ")
    printer.print_function_type(
        [o.type for o in op.operands], [r.type for r in op.results]
    )


def _parse_call_rest(parser: Parser) -> tuple[list[SSAValue], list[Attribute], dict[str, Attribute]]:
    pos = parser.pos
    operands = parser.parse_comma_separated_list(
        parser.Delimiter.PAREN, parser.parse_unresolved_operand
    )
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    type_pos = parser.pos
    ftype = parser.parse_type()
    if not isinstance(ftype, FunctionType):
        parser.raise_error("expected a function type", type_pos, parser.pos)
    values = parser.resolve_operands(operands, list(ftype.inputs.data), pos)
    return values, list(ftype.outputs.data), attributes


@irdl_op_definition
class CallKernelOp(IRDLOperation):
    """Call a kernel function in destination-passing style (Relax ``call_tir``).

    The callee is a ``func.func`` over memrefs taking the inputs, then one
    output buffer per result; the call allocates the outputs and returns them
    as tensors.

    ```mlir
    %0 = graph.call_kernel @relu0(%x) : (tensor<1x128xf32>) -> tensor<1x128xf32>
    ```
    """

    name = "graph.call_kernel"
    args = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    traits = traits_def(Pure())
    FUSION_KIND: ClassVar[FusionKind] = FusionKind.OPAQUE

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        args: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
    ) -> None:
        ref = SymbolRefAttr(callee) if isinstance(callee, str) else callee
        super().__init__(
            operands=[args], result_types=[result_types], attributes={"callee": ref}
        )

    @property
    def callee(self) -> str:
        return self.attributes["callee"].root_reference.data  # type: ignore[union-attr]

    @classmethod
    def parse(cls, parser: Parser) -> CallKernelOp:
        callee = parser.parse_symbol_name()
        values, results, attributes = _parse_call_rest(parser)
        op = cls(callee.data, values, results)
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        _print_call(
            printer, lambda: printer.print_string(f"@{self.callee}"), self
        )

    def verify_(self) -> None:
        if not isinstance(self.attributes.get("callee"), SymbolRefAttr):
            raise VerifyException(f"{self.name}: needs a callee symbol")
        module = self.get_toplevel_object()
        if not isinstance(module, Operation):
            return
        callee = SymbolTable.lookup_symbol(module, self.callee)
        if callee is None:
            raise VerifyException(f"{self.name}: no kernel named @{self.callee}")
        if not isinstance(callee, FuncOp):
            raise VerifyException(f"{self.name}: @{self.callee} is not a function")
        expected = [*self.operands, *self.results]
        params = callee.function_type.inputs.data
        if len(params) != len(expected):
            raise VerifyException(
                f"{self.name}: @{self.callee} takes {len(params)} buffers but the "
                f"call passes {len(self.operands)} inputs and {len(self.results)} "
                f"outputs"
            )
        for i, (value, param) in enumerate(zip(expected, params)):
            t = value.type
            assert isinstance(t, TensorType)
            if not isinstance(param, MemRefType) or (
                tuple(param.get_shape()) != tuple(t.get_shape())
                or param.element_type != t.element_type
            ):
                what = f"input {i}" if i < len(self.operands) else f"output {i - len(self.operands)}"
                raise VerifyException(
                    f"{self.name}: {what} is {type_str(t)} but @{self.callee} "
                    f"expects {param}"
                )
        if "kernel.kernel" not in callee.attributes:
            raise VerifyException(
                f"{self.name}: @{self.callee} is not a kernel: it lacks the "
                "kernel.kernel attribute (`attributes {kernel.kernel}`)"
            )


@irdl_op_definition
class CallExternOp(IRDLOperation):
    """Call a function from the runtime registry (Relax ``call_dps_packed``).

    The function is looked up by name when the module is loaded and called as
    ``f(*inputs, *outputs)`` on preallocated output buffers.

    ```mlir
    %0 = graph.call_extern "env.relu"(%x) : (tensor<1x128xf32>) -> tensor<1x128xf32>
    ```
    """

    name = "graph.call_extern"
    args = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    FUSION_KIND: ClassVar[FusionKind] = FusionKind.OPAQUE

    def __init__(
        self,
        function: str,
        args: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
    ) -> None:
        super().__init__(
            operands=[args],
            result_types=[result_types],
            attributes={"function": StringAttr(function)},
        )

    @property
    def function(self) -> str:
        return self.attributes["function"].data  # type: ignore[union-attr]

    @classmethod
    def parse(cls, parser: Parser) -> CallExternOp:
        function = parser.parse_str_literal()
        values, results, attributes = _parse_call_rest(parser)
        op = cls(function, values, results)
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        _print_call(
            printer, lambda: printer.print_string_literal(self.function), self
        )

    def verify_(self) -> None:
        if not isinstance(self.attributes.get("function"), StringAttr) or not self.function:
            raise VerifyException(f"{self.name}: needs a function name")
        if not self.results:
            raise VerifyException(f"{self.name}: must have at least one result")


GRAPH_OPS: tuple[type[GraphOp], ...] = (
    Conv2dOp,
    Conv2dTransposeOp,
    DenseOp,
    MatmulOp,
    BiasAddOp,
    BatchNormOp,
    ReluOp,
    SigmoidOp,
    TanhOp,
    ExpOp,
    SqrtOp,
    LogOp,
    NegativeOp,
    ClipOp,
    AddOp,
    SubtractOp,
    MultiplyOp,
    DivideOp,
    MaximumOp,
    MinimumOp,
    SoftmaxOp,
    MaxPool2dOp,
    AvgPool2dOp,
    GlobalAvgPool2dOp,
    BatchFlattenOp,
    ReshapeOp,
    TransposeOp,
    ConcatenateOp,
    SliceOp,
    PadOp,
    Resize2dOp,
    LrnOp,
    ReduceSumOp,
    ReduceMeanOp,
    ReduceMaxOp,
    CastOp,
    ConstantOp,
)

OPS_BY_NAME: dict[str, type[GraphOp]] = {op.name: op for op in GRAPH_OPS}


ARGUMENT_NAME_ATTR = "graph.name"
"""Argument attribute holding a function argument's external name.

SSA names cannot hold every name a model uses (ONNX has ``x:0`` and
``images/1``, and xDSL drops a trailing ``_<digits>`` when printing), so an
importer writes ``%x_0: tensor<…> {graph.name = "x:0"}``; everything that
names arguments (``ember.build`` params, ``GraphExecutor.set_input``,
``bind-params``, ``ember-run --input``) asks :func:`argument_name`.
"""


def argument_name(func: FuncOp, index: int) -> str:
    """The name of argument ``index`` of ``func``: its ``graph.name``
    attribute, else its SSA name, else ``arg<index>``."""
    if func.arg_attrs is not None and index < len(func.arg_attrs.data):
        name = func.arg_attrs.data[index].data.get(ARGUMENT_NAME_ATTR)
        if isinstance(name, StringAttr):
            return name.data
    return func.args[index].name_hint or f"arg{index}"


def fusion_kind(op: Operation) -> FusionKind:
    """The fusion kind of any op (non-graph ops are opaque)."""
    return getattr(type(op), "FUSION_KIND", FusionKind.OPAQUE)


Graph = Dialect("graph", [*GRAPH_OPS, CallKernelOp, CallExternOp], [])
"""ember's own graph ops; :func:`graph_dialect` adds the registered ones."""


def graph_dialect() -> Dialect:
    """The graph dialect with the ops added by
    :func:`~ember.dialects.graph_registry.register_op` so far."""
    user_ops = registered_ops()
    if not user_ops:
        return Graph
    return Dialect("graph", [*Graph.operations, *user_ops], [])
