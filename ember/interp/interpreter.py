"""Run a function of a module with the reference interpreter.

Built on xDSL's ``Interpreter``: ``func.func`` / ``func.call`` /
``func.return`` come from xDSL's ``FuncFunctions`` (so nested calls work), the
graph ops from :class:`ember.interp.graph_impls.GraphFunctions`, and more ops
(``graph.call_kernel``, ``graph.call_extern``, kernel-dialect ops) plug in as
further ``InterpreterFunctions`` classes through :func:`register_functions`
or the ``functions=`` argument.

Everything a user can get wrong is checked before anything runs, and reported
as :class:`~ember.interp.reference.InterpretError` naming the function and the
argument: an unknown entry function, the number of arguments, each argument's
shape and dtype, and ops that have no implementation.  Arguments are never
silently converted to another dtype (a float64 array for an f32 argument is an
error); Python lists and numbers, having no dtype of their own, are converted
to the argument's dtype when that loses no kind (integers into floats, never
floats into integers).
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import MemRefType, ModuleOp, SymbolRefAttr, TensorType
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from ember.dialects.graph import numpy_dtype, type_str
from ember.errors import EmberError
from ember.interp.graph_impls import GraphFunctions, OpFailed, graph_functions, op_failed
from ember.interp.reference import InterpretError
from ember.ir import describe_op
from ember.limits import check_allocation, within_limit

__all__ = [
    "EmberInterpreter",
    "FunctionsSpec",
    "interpret",
    "interpret_function",
    "make_interpreter",
    "register_functions",
]

FunctionsSpec = type[InterpreterFunctions] | InterpreterFunctions | str
"""An ``InterpreterFunctions`` class or instance, or ``"module:ClassName"``
(imported on first use, so registering costs no import)."""

# Always present, in this order; later registrations override earlier ones.
_BUILTIN_FUNCTIONS: tuple[type[InterpreterFunctions], ...] = (
    FuncFunctions,
    GraphFunctions,
)
# ember's other ops, imported on first use: pipelines, kernel calls, and
# graph.call_extern through the runtime registry.
_REGISTERED_FUNCTIONS: list[FunctionsSpec] = [
    "ember.interp.pipeline_impls:PipelineFunctions",
    "ember.interp.kernel_impls:CallKernelFunctions",
    "ember.runtime.module:ExternFunctions",
]


def register_functions(functions: FunctionsSpec) -> None:
    """Make every later interpreter use ``functions`` as well.

    This is the extension point for ops that live outside the graph dialect,
    e.g. ``register_functions("ember.interp.kernel:KernelFunctions")``.  A
    later registration overrides earlier implementations of the same op.
    Registering the same spec twice has no further effect.
    """
    if functions not in _REGISTERED_FUNCTIONS:
        _REGISTERED_FUNCTIONS.append(functions)


def _resolve(spec: FunctionsSpec) -> InterpreterFunctions:
    if isinstance(spec, InterpreterFunctions):
        return spec
    if isinstance(spec, str):
        module_name, _, class_name = spec.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as e:
            raise InterpretError(
                f"cannot load interpreter functions '{spec}': {e}"
            ) from None
        return cls()
    return spec()


class _OpGuard(Interpreter.Listener):
    """Follows the ops being run (innermost last) and checks each result's
    size before the op's implementation allocates it."""

    def __init__(self) -> None:
        self.running: list[Operation] = []

    def will_interpret_op(self, op: Operation, args: tuple[Any, ...]) -> None:
        try:
            _check_result_sizes(op)
        except EmberError as e:
            raise OpFailed(e) from None
        self.running.append(op)

    def did_interpret_op(self, op: Operation, results: tuple[Any, ...]) -> None:
        self.running.pop()


@dataclass
class EmberInterpreter(Interpreter):
    """xDSL's interpreter with ember's checks and error reporting, on xDSL's
    public API (``register_implementations``, ``call_op``, ``listeners``).

    A failing op is reported alone as an :class:`InterpretError` (xDSL
    would print the whole module, in generic form); results too large for
    ember's allocation limit are refused before they are allocated.
    """

    def __post_init__(self) -> None:
        self._guard = _OpGuard()
        self.listeners = (*self.listeners, self._guard)
        self._functions: list[InterpreterFunctions] = []
        self._implemented: dict[type[Operation], bool] = {}

    def register_implementations(
        self, impls: InterpreterFunctions, /, override: bool = False
    ) -> None:
        super().register_implementations(impls, override=override)
        self._functions.append(impls)
        self._implemented.clear()

    def implements(self, op: Operation) -> bool:
        """Whether some registered ``InterpreterFunctions`` runs ``op``.

        xDSL has no public query for this; its public contract is that
        registering a second implementation of an op without ``override``
        is refused, so a fresh interpreter holding the same functions is
        asked to take one for ``type(op)``."""
        op_type = type(op)
        if op_type not in self._implemented:
            probe = Interpreter(self.module)
            for functions in self._functions:
                probe.register_implementations(functions, override=True)
            try:
                probe.register_implementations(_probe_functions(op_type))
            except (ValueError, InterpretationError):
                self._implemented[op_type] = True
            else:
                self._implemented[op_type] = False
        return self._implemented[op_type]

    def call_op(
        self, op: Operation | str | SymbolRefAttr, inputs: tuple[Any, ...] = ()
    ) -> tuple[Any, ...]:
        """xDSL's ``call_op``; a failing op is an :class:`EmberError` naming it."""
        if self._guard.running:  # a call from inside an op: the outer call reports
            return super().call_op(op, inputs)
        try:
            return super().call_op(op, inputs)
        except OpFailed as failure:
            raise failure.error from failure.error.__cause__
        except EmberError:
            raise
        except Exception as e:
            if not self._guard.running:
                raise
            failed = self._guard.running[-1]
            if not self.implements(failed):  # e.g. a pipeline's stage, not checked
                raise InterpretError(_no_impl_message(failed)) from None
            raise op_failed(failed, e) from e
        finally:
            self._guard.running.clear()


@functools.cache
def _probe_functions(op_type: type[Operation]) -> InterpreterFunctions:
    """``InterpreterFunctions`` implementing ``op_type`` alone (never run)."""

    @impl(op_type)
    def run(self: Any, interpreter: Interpreter, op: Operation, args: Any) -> Any:
        raise AssertionError("a probe is never run")

    return register_impls(type("Probe", (InterpreterFunctions,), {"run": run}))()


def _check_result_sizes(op: Operation) -> None:
    """Each statically shaped result must fit ember's allocation limit
    (:mod:`ember.limits`) before the op's implementation allocates it."""
    for index, result in enumerate(op.results):
        t = result.type
        if not isinstance(t, TensorType | MemRefType):
            continue
        if any(d < 0 for d in t.get_shape()):
            continue
        try:
            dtype = numpy_dtype(t.element_type)
        except ValueError:
            continue  # not a type ember allocates (index, i1, …)
        nbytes = math.prod(t.get_shape()) * dtype.itemsize
        if not within_limit(nbytes):  # the op is printed only when it fails
            what = f"result {index} of {op.name} ({type_str(t)})"
            check_allocation(nbytes, what, describe_op(op))


def _no_impl_message(op: Operation) -> str:
    return (
        f"the reference interpreter has no implementation of '{op.name}' "
        f"(register one with ember.interp.register_functions)\n{describe_op(op)}"
    )


def make_interpreter(
    module: ModuleOp, functions: Iterable[FunctionsSpec] = ()
) -> EmberInterpreter:
    """An interpreter for ``module`` with the built-in, registered and given functions."""
    interpreter = EmberInterpreter(module)
    graph_functions()  # ops registered since the last interpreter, too
    for spec in (*_BUILTIN_FUNCTIONS, *_REGISTERED_FUNCTIONS, *functions):
        interpreter.register_implementations(_resolve(spec), override=True)
    return interpreter


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


# Ops that run like functions: func.func, and pipeline.graph (whose stages
# are functions run one after another: the pipeline's reference semantics).
_CALLABLE_OPS = ("func.func", "pipeline.graph")


def _functions_of(module: ModuleOp) -> dict[str, FuncOp]:
    return {
        op.sym_name.data: op
        for op in module.body.block.ops
        if op.name in _CALLABLE_OPS
    }


def _entry_function(module: Any, entry: str | FuncOp) -> FuncOp:
    if not isinstance(module, ModuleOp):
        raise InterpretError(
            f"interpret expects a module (ember.parse returns one), got "
            f"{type(module).__name__}"
        )
    functions = _functions_of(module)
    if isinstance(entry, FuncOp):
        if functions.get(entry.sym_name.data) is not entry:
            raise InterpretError(
                f"function @{entry.sym_name.data} is not in the module"
            )
        func = entry
    elif entry in functions:
        func = functions[entry]
    else:
        existing = ", ".join(f"@{name}" for name in functions) or "none"
        raise InterpretError(
            f"no function @{entry} in the module (functions: {existing})"
        )
    if getattr(func, "is_declaration", False):
        raise InterpretError(f"@{func.sym_name.data} is a declaration without a body")
    return func


def _check_implemented(interpreter: EmberInterpreter, entry: FuncOp) -> None:
    """Every op reachable from ``entry`` through ``func.call`` has an implementation."""
    functions = _functions_of(interpreter.module)
    pending, seen = [entry], {entry.sym_name.data}
    while pending:
        func = pending.pop()
        for op in func.body.walk():
            if not interpreter.implements(op):
                raise InterpretError(_no_impl_message(op))
            callee_name = _callee_name(op)
            if callee_name is not None:
                callee = functions.get(callee_name)
                if (
                    callee is not None
                    and not callee.is_declaration
                    and (callee.sym_name.data not in seen)
                ):
                    seen.add(callee.sym_name.data)
                    pending.append(callee)


def _argument_names(func: FuncOp) -> list[str]:
    return [arg.name_hint or f"arg{i}" for i, arg in enumerate(func.args)]


def _to_numpy(value: Any, what: str) -> tuple[np.ndarray, bool]:
    """``value`` as an array, and whether its dtype is its own (not inferred
    by numpy from Python numbers)."""
    if isinstance(value, np.ndarray):
        return value, True
    try:
        if hasattr(value, "__dlpack__"):
            return np.from_dlpack(value), True
        array = np.asarray(value)
    except (TypeError, ValueError, RuntimeError, BufferError) as e:
        raise InterpretError(
            f"{what}: cannot convert {type(value).__name__} to an array: {e}"
        ) from None
    return array, hasattr(value, "dtype")


def _convert_python_data(array: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """Lists and numbers take the argument's dtype, if no kind is lost."""
    kind, target = array.dtype.kind, dtype.kind
    if (kind == "f" and target == "f") or (kind in "iu" and target in "fiu"):
        if target in "iu":
            info = np.iinfo(dtype)
            if array.size and (array.min() < info.min or array.max() > info.max):
                raise InterpretError(f"{what}: values do not fit in {dtype}")
        return array.astype(dtype)
    raise InterpretError(
        f"{what}: expected {dtype} values, got Python data of kind {array.dtype}"
    )


def _check_argument(value: Any, t: Attribute, what: str) -> np.ndarray:
    if not isinstance(t, TensorType):
        raise InterpretError(
            f"{what} has type {t}; the reference interpreter runs functions over "
            f"tensors only"
        )
    try:
        dtype = numpy_dtype(t.element_type)
    except ValueError as e:
        raise InterpretError(f"{what}: {e}") from None
    shape = tuple(t.get_shape())
    array, has_own_dtype = _to_numpy(value, what)
    if not has_own_dtype:
        array = _convert_python_data(array, dtype, what)
    if array.dtype.newbyteorder("=") != dtype:
        raise InterpretError(
            f"{what} must have dtype {dtype} ({type_str(t)}), got {array.dtype}; "
            f"convert it explicitly, e.g. x.astype('{dtype}')"
        )
    if array.shape != shape:
        raise InterpretError(
            f"{what} must have shape {shape} ({type_str(t)}), got {array.shape}"
        )
    return array.astype(dtype, copy=False)  # native byte order


def _check_arguments(func: FuncOp, args: Sequence[Any]) -> tuple[np.ndarray, ...]:
    name = func.sym_name.data
    names = _argument_names(func)
    if len(args) != len(names):
        listed = ", ".join(names) or "none"
        plural = "" if len(names) == 1 else "s"
        raise InterpretError(
            f"@{name} takes {len(names)} argument{plural} ({listed}), got {len(args)}"
        )
    return tuple(
        _check_argument(value, t, f"argument '{arg_name}' (#{i}) of @{name}")
        for i, (value, t, arg_name) in enumerate(
            zip(args, func.function_type.inputs.data, names)
        )
    )


def _check_results(func: FuncOp, results: Sequence[Any]) -> list[np.ndarray]:
    """Fresh arrays, checked against the function's result types."""
    out: list[np.ndarray] = []
    for i, (value, t) in enumerate(zip(results, func.function_type.outputs.data)):
        array = np.array(value, copy=True)
        if isinstance(t, TensorType) and (
            array.shape != tuple(t.get_shape())
            or array.dtype != numpy_dtype(t.element_type)
        ):
            raise InterpretError(
                f"@{func.sym_name.data}: result #{i} should be {type_str(t)}, the "
                f"interpreter produced shape {array.shape} and dtype {array.dtype}"
            )
        out.append(array)
    return out


def _callee_name(op: Operation) -> str | None:
    """The function ``op`` calls: ``func.call`` or a ``pipeline.stage``."""
    if isinstance(op, CallOp):
        return op.callee.root_reference.data
    return getattr(op, "callee_name", None)


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def interpret_function(
    module: ModuleOp,
    entry: str | FuncOp,
    args: Sequence[Any],
    *,
    functions: Iterable[FunctionsSpec] = (),
) -> list[np.ndarray]:
    """Run function ``entry`` of ``module`` on ``args``; one array per result.

    ``functions`` adds ``InterpreterFunctions`` for this call only (on top of
    the built-in and registered ones).  Raises :class:`InterpretError` on
    any mistake, before running anything where it can be known in advance.
    """
    func = _entry_function(module, entry)
    arrays = _check_arguments(func, args)
    interpreter = make_interpreter(module, functions)
    _check_implemented(interpreter, func)
    try:
        results = interpreter.call_op(func, arrays)
    except InterpretationError as e:  # raised by xDSL itself, e.g. a missing symbol
        raise InterpretError(f"while interpreting @{func.sym_name.data}: {e}") from None
    return _check_results(func, results)


def interpret(
    module: ModuleOp,
    entry: str = "main",
    *args: Any,
    functions: Iterable[FunctionsSpec] = (),
) -> list[np.ndarray]:
    """Run function ``entry`` of ``module`` with the reference interpreter.

    ``args`` are numpy arrays, anything ``np.asarray`` accepts, or objects
    with ``__dlpack__``; each must have exactly its argument's shape and dtype.
    Returns a list of fresh numpy arrays, one per function result.
    """
    return interpret_function(module, entry, args, functions=functions)
