"""Values used before their definition are rejected at every entry.

The located diagnostics themselves are checked by
``tests/filecheck/dialects/invalid-use-before-def.mlir``; here: IR built in
Python (no source text), and each API and tool that takes IR.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i32

import ember
from ember.dialects.graph import AddOp
from ember.errors import IRError, PassError
from ember.ir import parse_source, uses_before_definition

SELF_USE = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def test_parse_rejects_a_value_used_by_its_own_definition() -> None:
    with pytest.raises(IRError, match=r"t\.mlir:3:3: error: %0 is used by its own definition"):
        ember.parse(SELF_USE, name="t.mlir")


def test_build_and_apply_passes_reject_it() -> None:
    # Unverified text keeps no names: the op is shown under the message.
    module = ember.parse(SELF_USE, verify=False)
    expected = r"operand #0 of graph.add is used by its own definition\n  in @main: %0 = graph.add"
    with pytest.raises(IRError, match=expected):
        ember.build(module, target="interp")
    with pytest.raises(IRError, match=expected):
        ember.verify_module(module)
    with pytest.raises((IRError, PassError), match=expected):
        ember.apply_passes(module, "canonicalize")


@pytest.mark.parametrize(
    "tool, options",
    [("ember-opt", []), ("ember-run", ["--random-inputs"]), ("ember-translate", ["--emit=graph"])],
)
def test_tools_reject_it_with_one_diagnostic(
    tool: str, options: list[str], tmp_path: Path
) -> None:
    source = tmp_path / "self.mlir"
    source.write_text(SELF_USE)
    scripts = Path(sys.executable).parent
    completed = subprocess.run(
        [str(scripts / tool), str(source), *options], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 1
    assert f"{source}:3:3: error: %0 is used by its own definition" in completed.stderr
    assert "Traceback" not in completed.stderr


def _graph_function(name: str) -> tuple[func.FuncOp, TensorType]:
    t = TensorType(f32, [4])
    return func.FuncOp(name, ((t,), (t,))), t


def test_built_ir_using_a_later_value_is_rejected() -> None:
    function, t = _graph_function("main")
    x = function.body.block.args[0]
    later = AddOp.build([x, x])
    first = AddOp.build([later.results[0], x])
    function.body.block.add_ops([first, later, func.ReturnOp(first.results[0])])
    module = ModuleOp([function])
    with pytest.raises(IRError, match="is used before it is defined\n  in @main: %0 = graph.add"):
        ember.verify_module(module)


def test_built_ir_using_a_value_of_another_function_is_rejected() -> None:
    one, _ = _graph_function("one")
    constant = arith.ConstantOp.from_int_and_width(1, i32)
    one.body.block.add_ops([constant, func.ReturnOp(one.body.block.args[0])])
    two, _ = _graph_function("two")
    use = arith.AddiOp(constant.result, constant.result)
    two.body.block.add_ops([use, func.ReturnOp(two.body.block.args[0])])
    failures = list(uses_before_definition(ModuleOp([one, two]), {}))
    assert [(op.name, message) for op, message in failures] == [
        ("arith.addi", "operand #0 of arith.addi is used outside the region that defines it")
    ] * 2


def test_values_defined_before_a_nested_region_may_be_used_in_it() -> None:
    module = ember.parse(
        """
        func.func @k(%X: memref<4xf32>) attributes {kernel.kernel} {
          %zero = arith.constant 0.0 : f32
          kernel.for %i = 0 to 4 {
            memref.store %zero, %X[%i] : memref<4xf32>
          }
          func.return
        }
        """
    )
    assert list(uses_before_definition(module, {})) == []


def test_values_are_named_as_written() -> None:
    """xDSL keeps no name hint for a numeric name: the parser records how
    each value was written (block arguments, results, a result of many)
    for the diagnostics to quote."""
    text = """\
func.func @main(%1: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = graph.call_extern "env.f"(%1) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %2 = graph.add %0#1, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""
    parsed = parse_source(text, "t.mlir", verify=False)
    assert list(parsed.value_names.values()) == ["%1", "%0#0", "%0#1", "%2"]
    with pytest.raises(IRError, match=r"t\.mlir:3:3: error: %2 is used by its own definition"):
        parse_source(text, "t.mlir")
