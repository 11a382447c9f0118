"""The ``interp`` backend: the reference interpreter as a backend.

Compiling keeps the graph program as it is (no pass runs: the interpreter
gives every program its reference semantics, and checks every index); the
artifact's code is that IR, and :class:`~ember.runtime.module.InterpModule`
runs it with :func:`ember.interp.interpret_function`.  Slow but exact: what
every compiled backend is checked against.  Interface: :mod:`ember.backends`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ember.backends import Backend
from ember.runtime.module import Artifact, FunctionSignature, InterpModule, extern_function_names

__all__ = ["InterpBackend"]


class InterpBackend(Backend):
    """``interp`` targets: the graph IR, interpreted."""

    kind: ClassVar[str] = "interp"
    module_class = InterpModule

    def compile(
        self,
        module: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> Artifact:
        # No option applies: the interpreter checks every index anyway.
        return Artifact(self.kind, signature, dict(params), extern_function_names(module), module)
