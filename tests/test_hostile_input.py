"""The tools and ``ember.parse`` on hostile input: never a traceback.

Bytes that are not UTF-8, a NUL byte, IR nested thousands deep, a tiny file
describing a 40 GB constant, an output path that cannot be written, element
types the runtime cannot hold, a negative seed: each ends as one located
diagnostic with exit code 1 from ``ember-opt`` / ``ember-run`` /
``ember-translate`` (called in process through their ``main(argv)``), and
as an :class:`~ember.errors.EmberError` from the library.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.dialects.graph import ConstantOp, splat_value
from ember.errors import AllocationError, IRError
from ember.tools import run_tool
from ember.tools.ember_opt import main as opt_main
from ember.tools.ember_run import main as run_main
from ember.tools.ember_translate import main as translate_main

Main = Callable[[Sequence[str] | None], int]

RELU = """\
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.relu %x : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""

# Each tool with the arguments that make it parse (and use) its input.
TOOLS: dict[str, tuple[Main, tuple[str, ...]]] = {
    "ember-opt": (opt_main, ()),
    "ember-run": (run_main, ("--random-inputs", "--interpret")),
    "ember-translate": (translate_main, ("--emit=graph",)),
}

HUGE_SPLAT = """\
func.func @main() -> tensor<100000x100000xf32> {
  %0 = graph.constant {value = dense<1.0> : tensor<100000x100000xf32>} : tensor<100000x100000xf32>
  func.return %0 : tensor<100000x100000xf32>
}
"""


def run(
    tool: str, path: Path | str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    """Run ``tool`` in process on ``path``; exit code, stdout, stderr."""
    main, args = TOOLS[tool]
    code = main([str(path), *args, *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


def write(tmp_path: Path, data: bytes | str, name: str = "input.mlir") -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


NOT_UTF8 = RELU.encode().replace(b"graph.relu", b"graph.r\xffelu")
WITH_NUL = RELU.encode().replace(b"graph.relu", b"graph.\x00relu")
DEEP_REGIONS = "builtin.module {" * 3000 + "}" * 3000 + "\n"
DEEP_TYPES = (
    "func.func @main(%x: " + "tuple<" * 3000 + "f32" + ">" * 3000 + ") {\n  func.return\n}\n"
)


@pytest.mark.parametrize("tool", list(TOOLS))
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (NOT_UTF8, ":2:15: error: invalid UTF-8 byte 0xff"),
        (WITH_NUL, ":2:14: error: NUL byte in the input"),
        (DEEP_REGIONS, ": error: IR nested too deeply to parse"),
        (DEEP_TYPES, ": error: IR nested too deeply to parse"),
    ],
    ids=["not-utf8", "nul", "deep-regions", "deep-types"],
)
def test_tools_diagnose_hostile_text(
    tool: str, data: bytes | str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, data)
    code, out, err = run(tool, path, capsys)
    assert code == 1
    assert err.startswith(f"{path}:") and expected in err.splitlines()[0], err[:500]
    # A 50 kB line is shown as a window around the place, not in full.
    assert max(len(line) for line in err.splitlines()) < 400, err[:500]
    assert out == "" or tool == "ember-run"


@pytest.mark.parametrize("tool", list(TOOLS))
def test_tools_skip_a_byte_order_mark(
    tool: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(tool, write(tmp_path, b"\xef\xbb\xbf" + RELU.encode()), capsys)
    assert (code, err) == (0, "")
    assert "tensor<2xf32>" in out


def test_parse_gates_its_input_like_the_tools() -> None:
    assert len(ember.parse("\ufeff" + RELU).body.block.ops) == 1
    assert len(ember.parse(RELU.encode()).body.block.ops) == 1
    with pytest.raises(IRError, match=r"^<string>:2:15: error: invalid UTF-8 byte 0xff"):
        ember.parse(NOT_UTF8)
    with pytest.raises(IRError, match=r"^<string>:2:14: error: NUL character"):
        ember.parse(WITH_NUL.decode())
    with pytest.raises(IRError, match="nested too deeply"):
        ember.parse(DEEP_REGIONS)
    # xDSL raises ValueError for an integer out of its type's range.
    with pytest.raises(IRError, match=r"^<string>:2:\d+: error: Integer value 99999999999 is out"):
        ember.parse(
            "func.func @main() -> tensor<2xi32> {\n"
            "  %0 = graph.constant {value = dense<[99999999999, 1]> : tensor<2xi32>} : tensor<2xi32>\n"
            "  func.return %0 : tensor<2xi32>\n}\n"
        )
    # A bad first character is located too (the lexer reads it early).
    with pytest.raises(IRError, match=r"^<string>:1:1: error: Unexpected character"):
        ember.parse("\x01")


# --------------------------------------------------------------------------
# Splat constants and the allocation limit
# --------------------------------------------------------------------------


def test_a_huge_splat_stays_one_element_through_parse_print_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = ember.parse(HUGE_SPLAT)
    (constant, _) = module.body.block.first_op.body.block.ops  # type: ignore[union-attr]
    assert isinstance(constant, ConstantOp)
    assert splat_value(constant.value) == 1.0  # type: ignore[arg-type]
    assert len(constant.value.data.data) == 4  # type: ignore[attr-defined]
    path = write(tmp_path, HUGE_SPLAT)
    code, out, _ = run("ember-opt", path, capsys, "-p", "canonicalize,cse,fold-constants")
    assert code == 0
    assert "dense<1.000000e+00> : tensor<100000x100000xf32>" in out
    # The printed form reads back as the same splat.
    assert str(ember.parse(out)) == str(module)


def test_a_hex_splat_stays_one_element() -> None:
    module = ember.parse(HUGE_SPLAT.replace("dense<1.0>", 'dense<"0x0000803F">'))
    (constant, _) = module.body.block.first_op.body.block.ops  # type: ignore[union-attr]
    assert splat_value(constant.value) == 1.0  # type: ignore[attr-defined]
    assert len(constant.value.data.data) == 4  # type: ignore[attr-defined]


# Dense literals whose value is not a splat of many elements, and malformed
# ones: ember's parser reads each as xDSL's own parser does (the value, or the
# error message and its span).
AS_XDSL_READS_IT = [
    "dense<1.0> : tensor<1xf32>",
    "dense<7> : tensor<i64>",
    "dense<1.0> : tensor<0xf32>",
    'dense<"0x0000803F"> : tensor<1xf32>',
    'dense<"0x0000803F"> : tensor<0xf32>',
    'dense<"0x0000803F"> : tensor<2xf16>',
    'dense<"0x0100000002000000"> : tensor<2xi32>',
    'dense<"0x0100000002000000"> : tensor<4xi32>',
    'dense<"0xZZ"> : tensor<4xi32>',
    'dense<"abc"> : tensor<2xf16>',
    "dense<[1.0, 2.0]> : tensor<2xf32>",
    "dense< // a comment\n [2.0, 1.0] > : tensor<2xf32>",
    "dense<> : tensor<0xf32>",
    "dense<1.5> : tensor<4xi32>",
    "dense<300> : tensor<4xi8>",
    "dense<true> : tensor<4xi32>",
    "dense<-1> : tensor<4xui32>",
    "dense<- true> : tensor<4xi32>",
    "dense<-x> : tensor<4xi32>",
    "dense<foo> : tensor<4xi32>",
    "dense<(1, 2.0)> : tensor<4xcomplex<f32>>",
    "dense<(1.0, )> : tensor<4xcomplex<f32>>",
    "dense<(- true, 1)> : tensor<4xcomplex<f32>>",
    "dense<1> : tensor<?xi32>",
    "dense<1> : i32",
    "dense<1> :",
    "dense<1>",
    "dense<1.0 : tensor<3xf32>",
    "dense<1.0, 2.0> : tensor<3xf32>",
]


@pytest.mark.parametrize("literal", AS_XDSL_READS_IT)
def test_dense_literals_read_as_xdsl_reads_them(literal: str) -> None:
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from ember.context import make_context
    from ember.ir import LocatingParser

    text = f"%0 = graph.constant {{value = {literal}}} : tensor<4xi32>\n"

    def read(parser: Parser) -> str:
        try:
            op = parser.parse_module().body.block.first_op
        except ParseError as error:
            return f"{error.msg} at {error.span.start}-{error.span.end}"
        except ValueError as error:  # an integer out of its type's range
            return str(error)
        assert isinstance(op, ConstantOp)
        return f"{op.value} {op.value.data.data.hex()}"  # type: ignore[attr-defined]

    ctx = make_context()
    assert read(LocatingParser(ctx, text, "t")) == read(Parser(ctx, text, "t"))


@pytest.mark.parametrize("engine", [(), ("--interpret",)], ids=["llvm", "interpret"])
def test_running_a_huge_splat_is_an_allocation_error(
    engine: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run("ember-translate", write(tmp_path, HUGE_SPLAT), capsys, "--emit=llvm-ir")
    assert code == 1 and "graph.constant in @main (tensor<100000x100000xf32>)" in err
    code, _, err = run("ember-run", write(tmp_path, HUGE_SPLAT), capsys, *engine)
    assert code == 1
    assert "graph.constant" in err and "tensor<100000x100000xf32>" in err
    assert "needs 40000000000 bytes (37.3 GiB), more than ember's allocation limit" in err


def test_fold_constants_leaves_a_fold_over_the_limit_undone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = HUGE_SPLAT.replace(
        "  func.return %0",
        "  %1 = graph.relu %0 : tensor<100000x100000xf32>\n  func.return %1",
    )
    code, out, err = run("ember-opt", write(tmp_path, text), capsys, "-p", "fold-constants")
    assert (code, err) == (0, "")
    assert "graph.relu" in out and "dense<1.000000e+00>" in out


def test_canonicalize_compares_a_splat_without_materialising_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = ember.parse(
        "func.func @main(%x: tensor<1000x1000xf32>) -> tensor<1000x1000xf32> {\n"
        "  %one = graph.constant {value = dense<1.0> : tensor<1000x1000xf32>} : tensor<1000x1000xf32>\n"
        "  %y = graph.multiply %x, %one : (tensor<1000x1000xf32>, tensor<1000x1000xf32>) -> tensor<1000x1000xf32>\n"
        "  func.return %y : tensor<1000x1000xf32>\n}\n"
    )
    monkeypatch.setenv("EMBER_MAX_ALLOC_BYTES", "1000")
    out = ember.apply_passes(module, "canonicalize")
    assert [op.name for op in out.body.block.first_op.body.block.ops] == ["func.return"]  # type: ignore[union-attr]


def test_the_allocation_limit_is_configurable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, RELU)
    monkeypatch.setenv("EMBER_MAX_ALLOC_BYTES", "4")
    code, _, err = run("ember-run", path, capsys)
    assert code == 1
    assert "random input 'x' (tensor<2xf32>) needs 8 bytes, more than ember's allocation limit of 4 bytes" in err
    with pytest.raises(AllocationError, match=r"result 0 of graph.relu \(tensor<2xf32>\) needs 8 bytes"):
        ember.interpret(ember.parse(RELU), "main", np.ones(2, np.float32))
    with pytest.raises(AllocationError, match=r"runtime buffer \(float32\[2\]\) needs 8 bytes"):
        ember.nd.empty((2,), "float32")
    monkeypatch.setenv("EMBER_MAX_ALLOC_BYTES", "lots")
    code, _, err = run("ember-run", path, capsys)
    assert code == 1 and "EMBER_MAX_ALLOC_BYTES='lots' must be a non-negative number of bytes" in err


def test_uniform_arrays_become_splats_with_the_same_values() -> None:
    for array in (
        np.full((3, 4), 2.5, np.float32),
        np.full((5,), np.nan, np.float16),
        np.full((2, 2), -7, np.int64),
    ):
        op = ConstantOp.from_array(array)
        assert len(op.value.data.data) == array.dtype.itemsize  # type: ignore[attr-defined]
        np.testing.assert_array_equal(op.to_array(), array)
    varied = np.arange(6, dtype=np.int32).reshape(2, 3)
    op = ConstantOp.from_array(varied)
    assert splat_value(op.value) is None  # type: ignore[arg-type]
    np.testing.assert_array_equal(op.to_array(), varied)


# --------------------------------------------------------------------------
# Outputs, dtypes and options
# --------------------------------------------------------------------------


def test_translate_output_into_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "out.mlir"
    code, out, err = run("ember-translate", write(tmp_path, RELU), capsys, "-o", str(missing))
    assert code == 1 and out == ""
    assert err == f"ember-translate: error: cannot write output file '{missing}': No such file or directory\n"
    code, _, err = run("ember-translate", write(tmp_path, RELU), capsys, "-o", str(tmp_path))
    assert code == 1 and "Is a directory" in err


@pytest.mark.parametrize("dtype", ["f64", "bf16", "i8"])
@pytest.mark.parametrize("tool", ["ember-run", "ember-translate"])
def test_unsupported_argument_dtypes_are_diagnosed(
    dtype: str, tool: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        f"func.func @main(%x: tensor<2x{dtype}>) -> tensor<2x{dtype}> {{\n"
        f"  func.return %x : tensor<2x{dtype}>\n}}\n"
    )
    extra = ("--emit=llvm-ir",) if tool == "ember-translate" else ()
    main, _ = TOOLS[tool]
    code = main([str(write(tmp_path, text)), *extra, *(("--random-inputs",) if tool == "ember-run" else ())])
    _, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    assert f"argument %x of @main: unsupported element type {dtype}" in err or (
        f"argument 'x' of @main: unsupported element type {dtype}" in err
    ), err
    assert "ember's tensors hold f32, f16, i32 or i64" in err


def test_run_rejects_a_negative_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run("ember-run", write(tmp_path, RELU), capsys, "--seed", "-1")
    assert code == 1 and out == ""
    assert err == "ember-run: error: --seed needs a non-negative integer, got -1\n"


def test_opt_reads_mlir_pass_option_syntax(
    capsys: pytest.CaptureFixture[str],
) -> None:
    mlp = Path(__file__).resolve().parent.parent / "examples" / "mlp.mlir"
    code = opt_main([str(mlp), "-p", "split-graph{ops=graph.relu,graph.dense indices=0,1}"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.count("pipeline.stage @main_") == 3
    code = opt_main([str(mlp), "-p", "fuse-op"])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err == "ember-opt: error: unknown pass 'fuse-op'; did you mean 'fuse-ops'?\n"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (MemoryError(), "ember-x: error: out of memory: the input needs more memory"),
        (RecursionError(), "ember-x: error: the input is nested too deeply"),
    ],
)
def test_tools_report_running_out_of_memory_or_stack(
    error: Exception, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def body(argv: Sequence[str] | None) -> int:
        raise error

    assert run_tool("ember-x", body, []) == 1
    assert capsys.readouterr().err.startswith(expected)
