"""The packed-function registry: named Python functions that IR can call.

Mirrors TVM's global function registry (``tvm.register_func``,
``tvm.get_global_func``) as used by Relax's ``R.call_dps_packed`` and by
ember's ``graph.call_extern "env.linear"(...)``.

Calling convention (destination passing, exactly as ``call_dps_packed``):
a registered function is called as ``f(*inputs, *outputs)`` where every
argument is an :class:`~ember.runtime.ndarray.NDArray` on the host, the
outputs are preallocated with the result types the IR declares, and ``f``
writes its results into them and returns ``None``.  Inputs must not be
written.  Inside ``f``, ``np.from_dlpack(out)`` / ``torch.from_dlpack(out)``
give writable views without a copy::

    @ember.register_func("env.linear", override=True)
    def linear(x, w, b, out):
        np.matmul(np.from_dlpack(x), np.from_dlpack(w).T, out=np.from_dlpack(out))
        np.add(np.from_dlpack(out), np.from_dlpack(b), out=np.from_dlpack(out))

:func:`call_dps_packed` is the one place that applies this convention, so the
interpreter and compiled modules call externs the same way.  Names are
resolved when a module is loaded (:func:`check_registered`), so an unknown
name fails before anything runs.

Functions that ember itself ships (``blas.*``, :mod:`ember.runtime.blas`)
are registered when their provider module is imported, and a lookup of a
missing name under a provider's prefix imports it first (:data:`PROVIDERS`):
IR that calls ``"blas.sgemm"`` runs in a fresh process, as TVM's contrib
functions are there once the library is loaded.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

import numpy as np

from ember.errors import EmberError, RuntimeFailure
from ember.runtime.ndarray import NDArray, as_ndarray, empty

F = TypeVar("F", bound=Callable[..., Any])


class UnknownFunctionError(RuntimeFailure, LookupError):
    """A name that no function is registered under."""


_registry: dict[str, Callable[..., Any]] = {}
# Registration may happen from pipeline worker threads while another thread
# resolves names; the lock keeps check-then-insert atomic.
_lock = threading.Lock()


PROVIDERS: dict[str, str] = {"blas.": "ember.runtime.blas"}
"""Name prefix → module that registers ember's functions under it on import."""


def _load_provider(name: str) -> bool:
    """Import the provider of ``name``'s prefix, if any; whether one was imported."""
    module = next((m for p, m in PROVIDERS.items() if name.startswith(p)), None)
    if module is None:
        return False
    importlib.import_module(module)  # registers on first import; a no-op later
    return True


def _origin(func: Callable[..., Any]) -> str:
    module = getattr(func, "__module__", None) or "?"
    name = getattr(func, "__qualname__", None) or type(func).__name__
    return f"{module}.{name}"


@overload
def register_func(
    func_name: str, f: None = None, override: bool = False
) -> Callable[[F], F]: ...
@overload
def register_func(func_name: str, f: F, override: bool = False) -> F: ...
@overload
def register_func(func_name: F, f: None = None, override: bool = False) -> F: ...


def register_func(func_name: Any, f: Any = None, override: bool = False) -> Any:
    """Register ``f`` under ``func_name`` (``tvm.register_func``).

    Three forms, as in TVM::

        register_func("env.relu", relu)                    # a call
        @register_func("env.relu", override=True)          # a decorator
        @register_func                                      # name = f.__name__

    Registering a taken name without ``override=True`` is an error naming
    the name and the function that holds it.  Returns ``f`` (the decorator
    leaves the function usable from Python).
    """
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str) or not func_name:
        raise RuntimeFailure(
            f"register_func: the name must be a non-empty string, got {func_name!r}"
        )

    def register(func: F) -> F:
        if not callable(func):
            raise RuntimeFailure(
                f"register_func({func_name!r}): expected a callable, got {func!r}"
            )
        with _lock:
            existing = _registry.get(func_name)
            if existing is not None and not override:
                raise RuntimeFailure(
                    f"global function {func_name!r} is already registered (by {_origin(existing)}); "
                    "pass override=True to replace it"
                )
            _registry[func_name] = func
        return func

    return register if f is None else register(f)


def get_global_func(
    name: str, allow_missing: bool = False
) -> Callable[..., Any] | None:
    """The function registered under ``name`` (``tvm.get_global_func``).

    An unknown name raises :class:`UnknownFunctionError` suggesting close
    matches, or returns ``None`` with ``allow_missing=True``.
    """
    with _lock:
        func = _registry.get(name)
    if func is None and _load_provider(name):
        with _lock:
            func = _registry.get(name)
    if func is None and not allow_missing:
        raise UnknownFunctionError(_unknown_message(name))
    return func


def _unknown_message(name: str) -> str:
    with _lock:
        names = sorted(_registry)
    message = f"no global function is registered under {name!r}"
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        return message + "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if not names:
        message += " (the registry is empty)"
    return message + "; register one with ember.register_func(name, f)"


def list_global_func_names() -> list[str]:
    """All registered names, sorted."""
    with _lock:
        return sorted(_registry)


def remove_global_func(name: str) -> None:
    """Unregister ``name``; an unknown name is an error (with suggestions)."""
    with _lock:
        if name in _registry:
            del _registry[name]
            return
    raise UnknownFunctionError(_unknown_message(name))


def check_registered(
    names: Sequence[str], where: str, sites: Mapping[str, str] | None = None
) -> None:
    """Fail unless every name in ``names`` is registered; ``where`` says who asked.

    Lists all missing names at once, each with its suggestions (and, from
    ``sites``, where the program calls it), so a user fixing a model does not
    discover them one run at a time.
    """
    missing = [
        name
        for name in dict.fromkeys(names)
        if get_global_func(name, allow_missing=True) is None
    ]
    if not missing:
        return
    sites = sites or {}
    details = "\n".join(
        f"  {sites[name]}: {_unknown_message(name)}" if name in sites else f"  {_unknown_message(name)}"
        for name in missing
    )
    raise UnknownFunctionError(
        f"{where} calls external functions that are not registered:\n{details}"
    )


def call_dps_packed(
    func_name: str,
    inputs: Sequence[Any],
    output_types: Sequence[tuple[Sequence[int], Any]],
) -> list[NDArray]:
    """Call registered ``func_name`` destination-passing style and return its outputs.

    ``inputs`` are NDArrays or numpy arrays (numpy ones are wrapped without a
    copy when already aligned); ``output_types`` are ``(shape, dtype)`` pairs,
    for which fresh outputs are allocated.  The function must return ``None``
    (or one of its outputs); returning anything else means it computed a
    result instead of writing it, which would silently be lost.
    """
    outputs = [empty(tuple(shape), np.dtype(dtype)) for shape, dtype in output_types]
    call_dps_packed_into(func_name, inputs, outputs)
    return outputs


def call_dps_packed_into(
    func_name: str, inputs: Sequence[Any], outputs: Sequence[NDArray]
) -> None:
    """Call registered ``func_name`` as ``f(*inputs, *outputs)`` on given outputs.

    The one place the destination-passing convention is applied; compiled
    code calls it with views of its own buffers.
    """
    func = get_global_func(func_name)
    args = [
        as_ndarray(value, f"input {i} of {func_name!r}")
        for i, value in enumerate(inputs)
    ]
    try:
        returned = func(*args, *outputs)
    except EmberError:
        raise
    except Exception as e:
        raise RuntimeFailure(
            f"external function {func_name!r} ({_origin(func)}) failed: {type(e).__name__}: {e}"
        ) from e
    if returned is not None and not any(returned is out for out in outputs):
        raise RuntimeFailure(
            f"external function {func_name!r} returned a {type(returned).__name__}; functions called "
            "destination-passing style must write into their output arguments and return None"
        )
