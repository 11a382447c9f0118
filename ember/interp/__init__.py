"""The reference interpreter: what every ember program means, in numpy.

* :mod:`ember.interp.reference` — the numpy definition of each graph op
  (:func:`evaluate`, :data:`REFERENCE_IMPLS`), shared with constant folding;
  its docstring states the numerical conventions (f16 computes in f32 and
  rounds once per op).
* :mod:`ember.interp.graph_impls` — those definitions as xDSL
  ``InterpreterFunctions``.
* :mod:`ember.interp.interpreter` — :func:`interpret` (re-exported as
  ``ember.interpret``): validate the arguments, then run a function with
  xDSL's interpreter; :func:`register_functions` plugs in more ops.

This is the counterpart of TVM's debug executor / ``relay.create_executor
("debug")`` and of the Python reference kernels in ``tvm.topi.testing``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ember.interp.interpreter import (
        EmberInterpreter,
        FunctionsSpec,
        interpret,
        interpret_function,
        make_interpreter,
        register_functions,
    )
    from ember.interp.reference import (
        REFERENCE_IMPLS,
        InterpretError,
        RefImpl,
        evaluate,
        has_reference,
    )

# Imported on first use: constant folding needs only ``reference``, and the
# interpreter pulls in xDSL's interpreters (every dialect's, riscv's
# included: a fifth of a second that a build does not need).
_SUBMODULE = {
    **dict.fromkeys(
        (
            "EmberInterpreter",
            "FunctionsSpec",
            "interpret",
            "interpret_function",
            "make_interpreter",
            "register_functions",
        ),
        "interpreter",
    ),
    **dict.fromkeys(
        ("REFERENCE_IMPLS", "InterpretError", "RefImpl", "evaluate", "has_reference"),
        "reference",
    ),
}


def __getattr__(name: str) -> Any:
    submodule = _SUBMODULE.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


__all__ = [
    "REFERENCE_IMPLS",
    "EmberInterpreter",
    "FunctionsSpec",
    "InterpretError",
    "RefImpl",
    "evaluate",
    "has_reference",
    "interpret",
    "interpret_function",
    "make_interpreter",
    "register_functions",
]
