"""Code-generation backends behind one small interface, one module each.

========  ====================  =========================================
kind      module                compiles a graph program to
========  ====================  =========================================
``llvm``  :mod:`.cpu`           native object code for a CPU (LLVM, O2)
``interp`` :mod:`.interp`       nothing: the graph IR, run by the
                                reference interpreter
``cuda``  :mod:`.cuda`          CUDA C for NVIDIA GPUs (NVRTC: PTX,
                                CUBIN); no runtime to run it yet
========  ====================  =========================================

The interface (what a driver calls)::

    from ember.backends import backend_for

    backend = backend_for(target)                 # "llvm", Target, "interp"
    artifact = backend.compile(module, signature, params, options)
    lib = backend.load(artifact)                  # a runtime Module
    lib = backend.build(module, signature, params, options)   # both

* ``compile(module, signature, params, options) -> Artifact``: ``module``
  is a verified graph ``ModuleOp`` that the backend owns (it may lower it in
  place); ``signature`` the entry's
  (:func:`ember.runtime.module.signature_of`), ``params`` the checked arrays
  bound to its arguments, ``options`` a
  :class:`~ember.compiler.CompileOptions` (its ``target`` included).  The
  :class:`~ember.runtime.module.Artifact` holds the signature, the params
  (arrays or names), the externs it calls and the backend's code.
* ``load(artifact) -> Module``: the runtime's module that runs it
  (:attr:`Backend.module_class`'s ``load``); it compiles nothing.

The runtime (:mod:`ember.runtime`) never imports a backend: backends import
the runtime, produce what it loads, and follow the calling convention of
:mod:`ember.abi`.  A runtime :class:`~ember.runtime.module.Module` class
registered with :func:`ember.runtime.register_backend` that compiles
itself (a ``compile`` classmethod; user backends) is served through
:class:`ModuleBackend`.  Importing this package loads no backend.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp

    from ember.runtime.module import Artifact, FunctionSignature, Module
    from ember.target import Target

__all__ = ["Backend", "ModuleBackend", "backend_for", "get_backend", "register"]


class Backend(ABC):
    """Compile a graph program for one target kind; load what it compiled."""

    kind: ClassVar[str]
    """The target kind it serves (``Target.kind``: ``"llvm"``)."""
    module_class: ClassVar[type[Module] | None] = None
    """The runtime class that runs its artifacts; None where ember has no
    runtime for them (``cuda``)."""

    @property
    def keeps_params(self) -> bool:
        """Whether its modules read the bound params at run time (then the
        caller hands it private copies)."""
        return self.module_class is None or self.module_class.keeps_params

    @abstractmethod
    def compile(
        self,
        module: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> Artifact:
        """``module`` (owned by the callee) compiled: see the module docstring."""

    def load(self, artifact: Artifact) -> Module:
        """The runtime module that runs ``artifact``."""
        if self.module_class is None:
            from ember.errors import RuntimeFailure

            raise RuntimeFailure(
                f"target {self.kind!r}: ember compiles for it but has no runtime to load "
                "the result in this process"
            )
        return self.module_class.load(artifact)

    def build(
        self,
        module: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> Module:
        """``load(compile(…))``.  ``module`` and ``params`` are handed
        over: this frame keeps no reference to them, so that the IR stages
        compile lowers the module into, and params it has bound, are freed
        once compile lets go of them (a local here would keep the whole
        llvm-dialect module and every weight alive while LLVM runs)."""
        handed = [module, params]
        del module, params
        return self.load(self.compile(handed.pop(0), signature, handed.pop(), options))


class ModuleBackend(Backend):
    """A runtime Module class that compiles itself (``Module.compile``), as
    a user's backend registered with :func:`ember.runtime.register_backend`
    is: its artifact is the module."""

    def __init__(self, module_class: type[Module]) -> None:
        self.module_class = module_class  # type: ignore[misc]
        self.kind = module_class.target  # type: ignore[misc]

    def compile(
        self,
        module: ModuleOp,
        signature: FunctionSignature,
        params: Mapping[str, np.ndarray],
        options: Any = None,
    ) -> Any:
        return self.module_class.compile(module, signature, params, options)  # type: ignore[union-attr]

    def load(self, artifact: Any) -> Module:
        return artifact  # type: ignore[no-any-return]


_BACKENDS: dict[str, str | Backend] = {
    "llvm": "ember.backends.cpu:CpuBackend",
    "interp": "ember.backends.interp:InterpBackend",
    "cuda": "ember.backends.cuda:CudaBackend",
}
"""Target kind → the backend, or its ``"module:Class"`` (imported on first use)."""


def register(kind: str, backend: str | Backend, override: bool = False) -> None:
    """Serve target kind ``kind`` with ``backend`` (an instance or its lazy
    ``"package.module:Class"`` path)."""
    from ember.errors import RuntimeFailure

    if kind in _BACKENDS and not override:
        raise RuntimeFailure(f"a backend for target kind {kind!r} is already registered")
    _BACKENDS[kind] = backend


def get_backend(kind: str) -> Backend | None:
    """The backend registered for target kind ``kind``, if any."""
    backend = _BACKENDS.get(kind)
    if isinstance(backend, str):
        module_name, _, class_name = backend.partition(":")
        backend = getattr(importlib.import_module(module_name), class_name)()
        _BACKENDS[kind] = backend
    return backend


def backend_for(target: str | Target) -> Backend:
    """The backend that builds for ``target`` (a target string or
    :class:`~ember.target.Target`) into a module this process can run.

    The runtime decides which targets can run
    (:func:`ember.runtime.module.backend_for`: unknown and planned targets
    are errors there, with its messages); a runtime class registered for
    the kind that is not this package's backend's is used as it compiles
    itself (:class:`ModuleBackend`)."""
    from ember.runtime.module import backend_for as runtime_class_for
    from ember.target import Target

    kind = Target.parse(target).kind
    module_class = runtime_class_for(kind)
    backend = get_backend(kind)
    if backend is not None and backend.module_class is module_class:
        return backend
    return ModuleBackend(module_class)
