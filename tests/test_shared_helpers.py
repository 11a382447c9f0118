"""Helpers that several passes and builds share instead of each keeping a copy:
``ember.ir.used_symbols`` (pipeline build and config) and
``ember.analysis.op_groups.replace_group`` (fuse-ops and lower-graph-to-kernel);
and the one pass table every pass is registered and exported from."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp

import ember
from ember.analysis.op_groups import make_group, replace_group
from ember.ir import used_symbols

CALLS = """
func.func @leaf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @middle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @leaf(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @middle(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func @top(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @middle(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @leaf(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func @unused(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
"""


def _function(module: ModuleOp, name: str) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == name)


def test_used_symbols_is_the_transitive_closure_once_per_name() -> None:
    module = ember.parse(CALLS)
    found = list(used_symbols(_function(module, "top"), module))
    assert [name for name, _ in found] == ["middle", "leaf"]
    assert all(op is _function(module, name) for name, op in found)
    # A function calling itself does not list itself.
    assert [name for name, _ in used_symbols(_function(module, "middle"), module)] == ["leaf"]
    assert list(used_symbols(_function(module, "unused"), module)) == []


FUSABLE = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  %e = graph.exp %r : tensor<4xf32>
  %out = graph.add %e, %x : tensor<4xf32>
  func.return %out : tensor<4xf32>
}
"""


def test_replace_group_puts_the_call_in_place_of_the_ops() -> None:
    module = ember.parse(FUSABLE)
    main = _function(module, "main")
    relu, exp, add, _ = list(main.body.block.ops)
    group = make_group([relu, exp])
    call = CallOp("fused", group.inputs, [v.type for v in group.outputs])
    replace_group(group, call)
    assert [op.name for op in main.body.block.ops] == ["func.call", "graph.add", "func.return"]
    assert add.operands[0] is call.results[0]
    assert call.results[0].name_hint == "e"


def test_every_pass_is_registered_and_exported_from_ember_passes() -> None:
    import importlib
    import inspect
    import pkgutil

    from xdsl.passes import ModulePass

    import ember.passes

    defined: dict[str, type[ModulePass]] = {}
    for info in pkgutil.iter_modules(ember.passes.__path__):
        module = importlib.import_module(f"ember.passes.{info.name}")
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, ModulePass)
                and value.__module__ == module.__name__
                and "name" in vars(value)  # a pass, not a base of passes (KernelPass)
            ):
                defined[value.__name__] = value
    assert defined, "no pass classes found"
    registered = {load().name: load() for load in ember.passes.PASSES.values()}
    for class_name, cls in defined.items():
        assert registered.get(cls.name) is cls, f"{class_name} is not in ember.passes.PASSES"
        assert getattr(ember.passes, class_name) is cls
        assert class_name in ember.passes.__all__
