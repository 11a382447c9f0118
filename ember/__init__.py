"""ember: a deep-learning compiler toolkit built on xDSL.

The top-level namespace holds what a user touches first::

    module = ember.parse(text)                 # verified module
    outs = ember.interpret(module, "main", x)  # reference semantics (numpy)

Heavy parts (the interpreter, code generation, the runtime) are imported on
first use, so ``import ember`` is cheap and never needs a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember.errors import EmberError, IRError, PassError, RuntimeFailure
from ember.ir import parse, to_text, verify_module

__version__ = "0.1.0"

__all__ = [
    "EmberError",
    "IRError",
    "PassError",
    "RuntimeFailure",
    "parse",
    "to_text",
    "verify_module",
    "interpret",
]


def interpret(module: Any, entry: str = "main", *args: Any) -> list[Any]:
    """Run function ``entry`` of ``module`` with the reference interpreter.

    Returns a list of numpy arrays, one per result.
    """
    from ember.interp import interpret as _interpret

    return _interpret(module, entry, *args)


def __getattr__(name: str) -> Any:
    # Submodules that users reach as attributes (ember.builder, ember.testing).
    import importlib

    if name == "builder":
        return importlib.import_module("ember.frontends.builder")
    if name in ("testing", "interp", "dialects", "passes"):
        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


if TYPE_CHECKING:
    from ember.frontends import builder as builder  # noqa: F401
