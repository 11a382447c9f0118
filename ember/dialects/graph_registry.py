"""What each graph op means, registered by op class.

An op class (an ``irdl_op_definition`` subclass of
:class:`~ember.dialects.graph.GraphOp`) declares its syntax, operands and
fusion kind (``FUSION_KIND``, TVM's ``OpPatternKind``) itself.  What it
*means* is registered here, keyed by the class, by decorators that may live
anywhere — ember's own modules or a user's file:

* :func:`shape_rule` — ``rule(operand_types, attrs) -> result type`` when the
  class does not override ``infer_type``; the verifier compares with it.
* :func:`reference` — the numpy definition, ``impl(inputs, attrs,
  result_type) -> array`` (:mod:`ember.interp.reference` documents the
  conventions); the interpreter and constant folding run it.
* :func:`scalar_lowering` — for elementwise and broadcast ops, the scalar
  the op computes, ``fn(em, op, args) -> value`` (``args`` in the compute
  type: f32 for floats).  Such an op lowers to a naive loop nest alone and
  fuses after an anchor (conv2d, dense, …) as an epilogue.
* :func:`index_remap` — for injective ops that only move elements
  (transpose, reshape): ``fn(em, op, indices) -> result indices``.
* :func:`naive_lowering` — any other op: ``gen(em, low, op)`` emits the
  loop nests of a kernel whose first op is ``op``.

:func:`register_op` makes a class known to the ``graph`` dialect, so that
``ember.parse`` and the tools read it.  Passes ask :func:`semantics` what an
op can do; they never import the lowering.  ember's own registrations are
imported on the first question (:data:`_BUILTIN_MODULES`), so importing this
module stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ember.errors import EmberError

if TYPE_CHECKING:
    from ember.dialects.graph import GraphOp

__all__ = [
    "OpSemantics",
    "RegistrationError",
    "index_remap",
    "naive_lowering",
    "reference",
    "register_op",
    "registered_ops",
    "scalar_lowering",
    "semantics",
    "shape_rule",
]

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


class RegistrationError(EmberError):
    """A graph op class or one of its semantics was registered wrongly."""


@dataclass
class OpSemantics:
    """Everything registered for one op class (``None``: not registered)."""

    shape: Callable[..., Any] | None = None
    reference: Callable[..., Any] | None = None
    scalar: Callable[..., Any] | None = None
    remap: Callable[..., Any] | None = None
    kernel: Callable[..., Any] | None = None

    @property
    def lowerable(self) -> bool:
        """Whether a kernel can start with the op."""
        return any(f is not None for f in (self.scalar, self.remap, self.kernel))

    @property
    def epilogue(self) -> bool:
        """Whether the op can follow a group's first op inside its kernel."""
        return self.scalar is not None or self.remap is not None


_SEMANTICS: dict[type, OpSemantics] = {}
_USER_OPS: dict[str, type] = {}

_BUILTIN_MODULES = ("ember.interp.reference", "ember.lowering.graph_to_kernel")
"""Modules registering ember's own ops (references, then lowerings),
imported on the first question that needs them."""
_loaded: set[str] = set()


def _load_builtins(modules: tuple[str, ...] = _BUILTIN_MODULES) -> None:
    for module in modules:
        if module not in _loaded:
            _loaded.add(module)
            importlib.import_module(module)


def _graph_op_class(op_class: Any, what: str) -> type[GraphOp]:
    from ember.dialects.graph import GraphOp

    if not (isinstance(op_class, type) and issubclass(op_class, GraphOp)):
        raise RegistrationError(
            f"{what} is registered for graph op classes, got {op_class!r}"
        )
    return op_class


def _registrar(field: str) -> Callable[[type], Callable[[F], F]]:
    def decorator_for(op_class: type) -> Callable[[F], F]:
        cls = _graph_op_class(op_class, f"a {field} function")

        def register(fn: F) -> F:
            setattr(_SEMANTICS.setdefault(cls, OpSemantics()), field, fn)
            return fn

        return register

    decorator_for.__name__ = field
    return decorator_for


shape_rule = _registrar("shape")
shape_rule.__doc__ = """``@shape_rule(Op)``: ``rule(operand_types, attrs)``
returns the result type or raises ``VerifyException`` naming what is wrong."""
reference = _registrar("reference")
reference.__doc__ = """``@reference(Op)``: ``impl(inputs, attrs, result_type)``
returns the numpy result (f16 inputs arrive widened to f32)."""
scalar_lowering = _registrar("scalar")
scalar_lowering.__doc__ = """``@scalar_lowering(Op)``: ``fn(em, op, args)``
returns the op's value at one index from its operands' values there, built
with ``em.add(xdsl_op)`` and ``em.const(value, type)``."""
index_remap = _registrar("remap")
index_remap.__doc__ = """``@index_remap(Op)``: ``fn(em, op, indices)`` returns
the result index that input element ``indices`` moves to."""
naive_lowering = _registrar("kernel")
naive_lowering.__doc__ = """``@naive_lowering(Op)``: ``gen(em, low, op)`` emits
the loop nests of a kernel whose first op is ``op`` (see
:mod:`ember.lowering.graph_to_kernel`)."""


def semantics(op_class: type) -> OpSemantics:
    """What is registered for ``op_class`` (ember's own ops included)."""
    _load_builtins()
    return _SEMANTICS.get(op_class) or OpSemantics()


def registered_shape_rule(op_class: type) -> Callable[..., Any] | None:
    """The shape rule registered for ``op_class`` (no built-in import needed:
    ember's own ops define ``infer_type`` on the class)."""
    entry = _SEMANTICS.get(op_class)
    return entry.shape if entry is not None else None


def registered_reference(op_class: type) -> Callable[..., Any] | None:
    """The reference implementation of ``op_class``, if one is registered
    (one dict lookup: the interpreter asks this per op it runs)."""
    _load_builtins(_BUILTIN_MODULES[:1])
    entry = _SEMANTICS.get(op_class)
    return entry.reference if entry is not None else None


def registered_references() -> dict[type, Callable[..., Any]]:
    """Op class -> reference implementation, for every op that has one
    (imports no lowering)."""
    _load_builtins(_BUILTIN_MODULES[:1])
    return {cls: s.reference for cls, s in _SEMANTICS.items() if s.reference}


def register_op(op_class: C) -> C:
    """Make ``op_class`` a graph op that ``ember.parse`` and the tools know.

    Use it as a class decorator above ``@irdl_op_definition``.  The name must
    be ``graph.<something>`` and not taken by another class; registering
    the same class again changes nothing.  Contexts made afterwards
    (:func:`ember.context.make_context`) parse the op.
    """
    from ember.dialects.graph import OPS_BY_NAME

    cls = _graph_op_class(op_class, "register_op")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name.startswith("graph."):
        raise RegistrationError(
            f"register_op: {cls.__name__} must be named 'graph.<op>', got {name!r}"
        )
    if "get_irdl_definition" not in cls.__dict__:
        raise RegistrationError(
            f"register_op: {cls.__name__} must be decorated with @irdl_op_definition"
        )
    taken = OPS_BY_NAME.get(name) or _USER_OPS.get(name)
    if taken is not None and taken is not cls:
        raise RegistrationError(
            f"register_op: '{name}' is already the op {taken.__module__}."
            f"{taken.__qualname__}"
        )
    _USER_OPS[name] = cls
    return op_class


def registered_ops() -> tuple[type[GraphOp], ...]:
    """The op classes added with :func:`register_op`, in registration order."""
    return tuple(_USER_OPS.values())
