"""TVM's spellings of ember's API: thin aliases for code written against TVM.

ember has one canonical way to bind parameters: :func:`ember.bind_params`
(``module, {name: array}, entry=``), which the compiler driver's ``bind``
stage and ``ember.build(..., params=)`` use too, and ``bind-params{file=}``
for pipelines.  TVM spells the same thing several ways; they are here:

* ``relay.build_module.bind_params_by_name(func, params)`` →
  :func:`bind_params_by_name` (binds ``main``);
* ``relax.transform.BindParams("main", params)(mod)`` → :func:`BindParams`;
* ``relay.save_param_dict`` / ``relay.load_param_dict`` →
  :func:`save_param_dict` / :func:`load_param_dict`
  (:func:`ember.runtime.save_params` / :func:`ember.runtime.load_params`).

``GraphExecutor.set_input`` / ``load_params`` / ``lib["default"](dev)``
stay on the executor, where TVM users look for them.

docs/passes.md ("One way to bind") shows them side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from ember.runtime.module import load_params as load_param_dict
from ember.runtime.module import save_params as save_param_dict

__all__ = ["BindParams", "bind_params_by_name", "load_param_dict", "save_param_dict"]


def bind_params_by_name(module: ModuleOp, params: Mapping[str, Any]) -> ModuleOp:
    """Relay's ``bind_params_by_name``: :func:`ember.bind_params` on ``@main``."""
    from ember.passes.bind_params import bind_params

    return bind_params(module, params, entry="main")


def BindParams(func_name: str, params: Mapping[str, Any]) -> Callable[[ModuleOp], ModuleOp]:  # noqa: N802 (TVM's name)
    """Relax's ``BindParams(func_name, params)``: a transform that returns
    :func:`ember.bind_params` of the module it is called with."""
    from ember.passes.bind_params import bind_params

    return lambda module: bind_params(module, params, entry=func_name)
