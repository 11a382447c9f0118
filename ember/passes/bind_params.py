"""``bind-params``: named function arguments become constants.

A network's weights usually arrive as function arguments next to its data
(``main(%data, %w0, %b0, …)`` with a dict of arrays, as ``relay.testing``
workloads and :func:`ember.testing.workloads.get` give them).  Binding turns
each named argument into a ``graph.constant`` holding its array and removes it
from the signature, so that ``simplify-inference`` and ``fold-constants`` can
see the values (conv2d + batch_norm folds into one conv only once the weights
are constants).  This is Relax's ``BindParams`` (``relax.transform.
BindParams("main", params)``).

Two forms:

* Python, the main API: ``ember.bind_params(module, {"w0": array, …})``
  returns a new module and leaves its argument alone.
* Pass: ``bind-params{file="params.npz" names=w0,b0 entry=main}`` reads the
  arrays from a numpy ``.npz`` archive (``numpy.savez("params.npz",
  **params)``); ``names`` picks which of its arrays to bind (default: all of
  them); ``entry`` is the function (default ``main``).  A pipeline text cannot
  hold arrays, hence the file.

Arguments are named by their SSA name (``%w0`` is ``"w0"``); an argument
without a name is ``argN`` (N its position), as the reference interpreter's
messages call it.  Every mistake is an :class:`ember.errors.PassError` raised
before the module changes: an unknown name (the message lists the valid
ones), an array whose shape or dtype differs from the argument's (naming the
argument), a function that other functions call (its signature would change
under them).
"""

from __future__ import annotations

import difflib
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, BlockArgument
from xdsl.passes import ModulePass

from ember import remarks
from ember.dialects.graph import ConstantOp, argument_name, numpy_dtype, type_str
from ember.errors import PassError

__all__ = ["BindParamsPass", "bind_params", "bind_params_in_place", "load_params_file"]


# --------------------------------------------------------------------------
# Finding the function and its arguments
# --------------------------------------------------------------------------


def _argument_name(arg: BlockArgument) -> str:
    func = arg.block.parent_op()
    assert isinstance(func, FuncOp)  # only entry-function arguments are bound
    return argument_name(func, arg.index)


def _entry_function(module: ModuleOp, entry: str) -> FuncOp:
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}
    func = functions.get(entry)
    if func is None:
        known = ", ".join(f"@{name}" for name in functions) or "none"
        raise PassError(f"bind-params: no function @{entry} in the module (functions: {known})")
    if func.is_declaration:
        raise PassError(f"bind-params: @{entry} is a declaration; it has no body to bind into")
    return func


def _check_not_called(module: ModuleOp, func: FuncOp) -> None:
    """Removing arguments would break any op that refers to the function."""
    name = func.sym_name.data
    for op in module.walk():
        if op is func:
            continue
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, SymbolRefAttr) and attr.root_reference.data == name:
                raise PassError(
                    f"bind-params: @{name} is referenced by {op.name}; binding "
                    "its arguments would change the signature its callers use"
                )


def _arguments_by_name(func: FuncOp) -> dict[str, BlockArgument]:
    by_name: dict[str, BlockArgument] = {}
    for arg in func.args:
        name = _argument_name(arg)
        if name in by_name:
            raise PassError(
                f"bind-params: @{func.sym_name.data} has two arguments named "
                f"'{name}'; a param cannot say which one it binds"
            )
        by_name[name] = arg
    return by_name


def _unknown_name_message(name: object, func: FuncOp, known: list[str]) -> str:
    message = f"bind-params: @{func.sym_name.data} has no argument named {name!r}"
    close = difflib.get_close_matches(str(name), known, n=1)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message + f" (arguments: {', '.join(known) or 'none'})"


# --------------------------------------------------------------------------
# Checking the arrays
# --------------------------------------------------------------------------


def _as_array(value: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """``value`` as a numpy array; Python numbers and lists take ``dtype``."""
    if isinstance(value, np.ndarray):
        return value
    try:
        if hasattr(value, "__dlpack__"):
            return np.from_dlpack(value)
        if hasattr(value, "numpy"):  # ember.runtime NDArray and the like
            return np.asarray(value.numpy())
        if hasattr(value, "dtype"):
            return np.asarray(value)
        # Python data has no dtype of its own: it takes the argument's, as
        # long as no kind is lost (floats never silently become integers).
        array = np.asarray(value)
        if array.dtype.kind not in "iuf" or (array.dtype.kind == "f" and dtype.kind != "f"):
            raise TypeError(f"{array.dtype} elements do not convert to {dtype}")
        return array.astype(dtype)
    except (TypeError, ValueError, RuntimeError, BufferError) as e:
        raise PassError(f"{what}: cannot use {type(value).__name__} as an array: {e}") from None


def _checked_array(value: Any, arg: BlockArgument, func: FuncOp) -> np.ndarray:
    """``value`` as an array of exactly the argument's shape and dtype (not
    copied here: the constant made from it holds a read-only array as it is
    and copies a writable one, :meth:`ConstantOp.from_array`)."""
    what = f"bind-params: argument %{_argument_name(arg)} of @{func.sym_name.data}"
    t = arg.type
    if not isinstance(t, TensorType):
        raise PassError(f"{what} has type {t}; only tensor arguments can be bound")
    dtype = numpy_dtype(t.element_type)
    shape = tuple(t.get_shape())
    array = _as_array(value, dtype, what)
    if array.dtype.newbyteorder("=") != dtype or array.shape != shape:
        raise PassError(
            f"{what} is {type_str(t)} ({dtype}{list(shape)}), but the array is "
            f"{array.dtype.newbyteorder('=')}{list(array.shape)}"
        )
    return np.asarray(array, dtype=dtype)


# --------------------------------------------------------------------------
# Binding
# --------------------------------------------------------------------------


def _drop_arguments(func: FuncOp, bound: list[BlockArgument]) -> None:
    """Remove now-unused block arguments and their types and attributes."""
    indices = {arg.index for arg in bound}
    kept_inputs = [t for i, t in enumerate(func.function_type.inputs.data) if i not in indices]
    if func.arg_attrs is not None:
        kept_attrs = [a for i, a in enumerate(func.arg_attrs.data) if i not in indices]
        func.arg_attrs = ArrayAttr(kept_attrs)
    for arg in sorted(bound, key=lambda a: a.index, reverse=True):
        func.body.block.erase_arg(arg)
    outputs: list[Attribute] = list(func.function_type.outputs.data)
    func.function_type = FunctionType.from_lists(kept_inputs, outputs)


def bind_params_in_place(
    module: ModuleOp, params: Mapping[str, Any], entry: str = "main"
) -> None:
    """Bind ``params`` into function ``entry`` of ``module``, modifying it.

    Everything is checked before the module changes; see :func:`bind_params`.
    """
    if not isinstance(params, Mapping):
        raise PassError(
            f"bind-params: params must map argument names to arrays, got {type(params).__name__}"
        )
    func = _entry_function(module, entry)
    arguments = _arguments_by_name(func)
    arrays: dict[str, np.ndarray] = {}
    for name, value in params.items():
        if name not in arguments:
            raise PassError(_unknown_name_message(name, func, list(arguments)))
        arrays[name] = _checked_array(value, arguments[name], func)
    if arrays:
        _check_not_called(module, func)

    block = func.body.block
    first = block.first_op
    for name, array in arrays.items():
        constant = ConstantOp.from_array(array)
        # The constant keeps the argument's name: %w0 stays %w0 in the text.
        constant.results[0].name_hint = arguments[name].name_hint
        constant.location = func.location
        if remarks.enabled():
            remarks.applied(
                "bind-params",
                f"%{name} of @{entry} bound as a constant {constant.result.type} "
                f"({array.nbytes} bytes)",
                [func],
                param=name,
                bytes=int(array.nbytes),
            )
        if first is None:
            block.add_op(constant)
        else:
            block.insert_op_before(constant, first)  # in params order, before the body
        arguments[name].replace_all_uses_with(constant.results[0])
    _drop_arguments(func, [arguments[name] for name in arrays])


def bind_params(module: ModuleOp, params: Mapping[str, Any], *, entry: str = "main") -> ModuleOp:
    """A copy of ``module`` where each named argument of ``entry`` is a constant.

    ``params`` maps argument names (``"w0"`` for ``%w0``; ``"argN"`` for an
    unnamed argument) to arrays (numpy, DLPack, ember NDArray; Python lists
    take the argument's dtype).  Each array must have exactly its argument's
    shape and dtype.  A writable array is copied; a read-only one is held
    as it is, without a copy (so do not change it through another view while
    the module lives: ``ember.build`` binds read-only views of its params for
    the build's duration).  The bound arguments leave the signature:
    call the result with the remaining arguments, in their order.

    Raises :class:`PassError` for an unknown name (listing the arguments), a
    shape or dtype mismatch (naming the argument), or a function that others
    call.  ``module`` itself is never modified.
    """
    if not isinstance(module, ModuleOp):
        raise PassError(f"bind_params expects a module (ember.parse(text)), got {type(module).__name__}")
    result = module.clone()
    bind_params_in_place(result, params, entry)
    return result


def load_params_file(path: str) -> dict[str, np.ndarray]:
    """The arrays of a numpy ``.npz`` archive, by name (``numpy.savez``)."""
    try:
        loaded = np.load(path, allow_pickle=False)
    except OSError as e:
        raise PassError(f"bind-params: cannot read params file '{path}': {e.strerror or e}") from None
    except (ValueError, zipfile.BadZipFile) as e:
        raise PassError(f"bind-params: '{path}' is not a numpy .npz archive: {e}") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise PassError(
            f"bind-params: '{path}' holds one array, not a .npz archive of named "
            "arrays (write it with numpy.savez(path, name=array, ...))"
        )
    with loaded as archive:
        return {name: archive[name] for name in archive.files}


@dataclass(frozen=True)
class BindParamsPass(ModulePass):
    """Turn named function arguments into constants, from a .npz params file."""

    name = "bind-params"

    file: str | None = None
    """Path of a ``.npz`` archive (``numpy.savez``) of argument name -> array."""

    names: tuple[str, ...] = ()
    """Which arrays of the file to bind; empty: all of them."""

    entry: str = "main"
    """The function whose arguments are bound."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.file:
            raise PassError(
                'bind-params needs a params file: bind-params{file="params.npz"} '
                "(from Python, call ember.bind_params(module, {name: array}))"
            )
        arrays = load_params_file(self.file)
        names = self.names or tuple(arrays)
        missing = [n for n in names if n not in arrays]
        if missing:
            raise PassError(
                f"bind-params: '{self.file}' has no array named {', '.join(map(repr, missing))} "
                f"(it has: {', '.join(arrays) or 'none'})"
            )
        bind_params_in_place(op, {n: arrays[n] for n in names}, self.entry)
