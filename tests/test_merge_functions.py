"""Identical llvm functions are compiled once (:mod:`ember.lowering.merge_functions`).

Unit tests on llvm-dialect text (what merges, what must not, callers that
become identical once their callees are merged), and an end-to-end build
whose two convolutions pad tensors of one shape with the same outlined
loop: the module given to LLVM holds no two identical definitions (checked
independently, on the printed functions), and the results are the
interpreter's.  ``tests/filecheck/lowering/merge-functions.mlir`` shows the
merge in the ``llvm-dialect`` stage.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp

import ember
from ember import driver
from ember.backends import cpu as cpu_backend
from ember.frontends import builder as eb
from ember.ir import parse
from ember.lowering.merge_functions import merge_identical_functions


def _function(name: str, value: int, callee: str | None = None) -> str:
    call = f"llvm.call @{callee}() : () -> ()\n" if callee else ""
    return f"""
  llvm.func @{name}(%p: !llvm.ptr {{llvm.noalias}}) {{
    %0 = llvm.mlir.constant({value}) : i64
    llvm.store %0, %p : i64, !llvm.ptr
    {call}llvm.return
  }}"""


def _module(*functions: str) -> ModuleOp:
    return parse("builtin.module {" + "".join(functions) + "\n}")


def _definitions(module: ModuleOp) -> list[str]:
    return [op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)]


def _callees(module: ModuleOp) -> list[str]:
    return [op.callee.string_value() for op in module.walk() if isinstance(op, llvm.CallOp)]


def test_identical_definitions_merge_into_the_first() -> None:
    module = _module(
        _function("a", 1), _function("b", 1), _function("c", 2), _function("user", 0, "b")
    )
    assert merge_identical_functions(module) == {"b": "a"}
    assert _definitions(module) == ["a", "c", "user"]
    assert _callees(module) == ["a"]


def test_callers_of_merged_functions_merge_too() -> None:
    # x and y differ only in their callees, which are identical.
    module = _module(
        _function("a", 1),
        _function("b", 1),
        _function("x", 7, "a"),
        _function("y", 7, "b"),
        _function("top", 0, "y"),
    )
    assert merge_identical_functions(module) == {"b": "a", "y": "x"}
    assert _definitions(module) == ["a", "x", "top"]
    assert _callees(module) == ["a", "x"]


def test_uses_outside_functions_follow_the_merge() -> None:
    """A global whose initializer takes a merged function's address points
    at the function that stayed."""
    table = """
  llvm.mlir.global internal constant @table() {addr_space = 0 : i32} : !llvm.ptr {
    %0 = llvm.mlir.addressof @b : !llvm.ptr
    llvm.return %0 : !llvm.ptr
  }"""
    module = _module(_function("a", 1), _function("b", 1), table)
    assert merge_identical_functions(module) == {"b": "a"}
    (address,) = [op for op in module.walk() if isinstance(op, llvm.AddressOfOp)]
    assert address.global_name.string_value() == "a"


def test_kept_symbols_are_not_merged_away() -> None:
    module = _module(_function("a", 1), _function("entry", 1))
    assert merge_identical_functions(module, keep=("entry",)) == {}
    assert _definitions(module) == ["a", "entry"]


def _definitions_in(texts: list[str]) -> dict[str, str]:
    """Each function the LLVM IR ``texts`` define → its text, its name left out."""
    found = {}
    for text in texts:
        for match in re.finditer(r'^define [^@]*@"([^"]+)"\(.*?^}$', text, re.M | re.S):
            found[match.group(1)] = match.group(0).replace(f'@"{match.group(1)}"(', "@(", 1)
    return found


def _compiled_definitions(monkeypatch: pytest.MonkeyPatch, build) -> dict[str, str]:  # noqa: ANN001
    """The functions LLVM compiles in ``build()``, from the parts' texts."""
    texts: list[str] = []
    compile_part = cpu_backend._compile_part

    def spy(llvm_ir: str, *args):  # noqa: ANN002, ANN202 - a pass-through
        texts.append(llvm_ir)
        return compile_part(llvm_ir, *args)

    monkeypatch.setattr(cpu_backend, "_compile_part", spy)
    build()
    monkeypatch.undo()
    return _definitions_in(texts)


def test_build_compiles_identical_outlined_loops_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build streams kernels to LLVM, merging each function with an
    identical one printed before: it compiles the functions
    merge_identical_functions keeps of the whole llvm-dialect stage (a
    build that prints its stages makes that stage whole)."""
    data = eb.var("data", (1, 16, 8, 8), "float32")
    first = eb.relu(eb.conv2d(data, eb.var("w1"), channels=16, kernel_size=(3, 3), padding=(1, 1)))
    second = eb.relu(eb.conv2d(first, eb.var("w2"), channels=8, kernel_size=(3, 3), padding=(1, 1)))
    module = eb.module(eb.function(second))
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((16, 16, 3, 3)).astype(np.float32),
        "w2": rng.standard_normal((8, 16, 3, 3)).astype(np.float32),
    }
    # Every parallel loop outlined, so each conv pads its input in a loop of its own.
    options = {"min_parallel_work": 0}
    built = []

    def build() -> None:
        built.append(ember.build(module, "llvm", params, options=options, cache=False))

    def build_whole() -> None:
        with driver.print_after(["graph"], io.StringIO()):
            build()

    streamed = _compiled_definitions(monkeypatch, build)
    assert sum(name.endswith("__parallel0_body") for name in streamed) == 1, list(streamed)
    assert len(set(streamed.values())) == len(streamed)  # no two the same but for the name
    whole = _compiled_definitions(monkeypatch, build_whole)
    assert sorted(streamed) == sorted(whole)

    lib = built[0]
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.run(data=x)
    (expected,) = ember.interpret(module, "main", x, *params.values())
    np.testing.assert_allclose(ex.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-4)
