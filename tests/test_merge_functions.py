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

import numpy as np
import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp

import ember
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


def _duplicates(module: ModuleOp) -> list[tuple[str, str]]:
    """Pairs of definitions whose text is the same but for their name."""
    seen: dict[str, str] = {}
    pairs = []
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and op.body.blocks:
            name = op.sym_name.data
            text = str(op).replace(f"@{name}(", "@_(", 1)
            if text in seen:
                pairs.append((seen[text], name))
            seen.setdefault(text, name)
    return pairs


def test_build_compiles_identical_outlined_loops_once(monkeypatch: pytest.MonkeyPatch) -> None:
    data = eb.var("data", (1, 16, 8, 8), "float32")
    first = eb.relu(eb.conv2d(data, eb.var("w1"), channels=16, kernel_size=(3, 3), padding=(1, 1)))
    second = eb.relu(eb.conv2d(first, eb.var("w2"), channels=8, kernel_size=(3, 3), padding=(1, 1)))
    module = eb.module(eb.function(second))
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((16, 16, 3, 3)).astype(np.float32),
        "w2": rng.standard_normal((8, 16, 3, 3)).astype(np.float32),
    }
    compiled: list[ModuleOp] = []
    split_module = cpu_backend.split_module

    def spy(module: ModuleOp, entries=()):  # noqa: ANN001, ANN202 - a pass-through
        compiled.append(module.clone())  # the program, before LLVM compiles it in parts
        return split_module(module, entries)

    monkeypatch.setattr(cpu_backend, "split_module", spy)
    # Every parallel loop outlined, so each conv pads its input in a loop of its own.
    lib = ember.build(module, "llvm", params, options={"min_parallel_work": 0}, cache=False)
    (program,) = compiled
    assert _duplicates(program) == []
    names = _definitions(program)
    assert sum(name.endswith("__parallel0_body") for name in names) == 1, names

    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.run(data=x)
    (expected,) = ember.interpret(module, "main", x, *params.values())
    np.testing.assert_allclose(ex.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-4)
