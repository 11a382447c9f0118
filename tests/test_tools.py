"""Command-line behaviour of ``ember-opt`` and ``ember-run``.

The tools run as users run them: the environment's console scripts in a
subprocess.  Every kind of user mistake must end with one diagnostic on
stderr and exit code 1, never a Python traceback; results are checked
against numpy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ember.dialects.graph import ReluOp, tensor_type
from ember.passes import PASSES
from ember.tools import as_diagnostic
from ember.tools.ember_opt import describe_passes
from ember.tools.ember_opt import main as ember_opt_main
from ember.tools.ember_run import Argument, random_array

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _script(name: str) -> str:
    """The console script next to this Python, else the one on PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e .)")
    return found


def run_tool(
    tool: str, *args: str | Path, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_script(tool), *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def assert_user_error(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    """Exit code 1, no traceback, and each ``expected`` text on stderr."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


RELU_TWICE = """\
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu %x : tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
"""

MALFORMED = """\
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu %x : tensor<2x3xf32
  func.return %0 : tensor<2x3xf32>
}
"""

UNKNOWN_OP = """\
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.frobnicate %x : tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
"""

SHAPE_ERROR = """\
func.func @main(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) -> tensor<2x4xf32> {
  %0 = graph.dense %x, %w : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
"""


@pytest.fixture
def relu_file(tmp_path: Path) -> Path:
    path = tmp_path / "relu.mlir"
    path.write_text(RELU_TWICE)
    return path


# --------------------------------------------------------------------------
# ember-opt
# --------------------------------------------------------------------------


def test_opt_runs_a_pipeline(relu_file: Path) -> None:
    result = run_tool("ember-opt", relu_file, "-p", "canonicalize,cse,dce")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("graph.relu") == 1
    assert "func.return %0 : tensor<2x3xf32>" in result.stdout


@pytest.mark.parametrize("args", [["-"], []], ids=["dash", "no-file"])
def test_opt_reads_stdin(args: list[str]) -> None:
    result = run_tool("ember-opt", *args, "--print-op-generic", stdin=RELU_TWICE)
    assert result.returncode == 0, result.stderr
    assert '"graph.relu"(%0)' in result.stdout


def test_opt_writes_output_file(relu_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = run_tool("ember-opt", relu_file, "-p", "canonicalize", "-o", out)
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8").count("graph.relu") == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MALFORMED, ["bad.mlir:3:3: error: Expected '>'"]),
        (UNKNOWN_OP, ["bad.mlir:2:25: error: Operation graph.frobnicate is not registered"]),
        (
            SHAPE_ERROR,
            [
                "bad.mlir:2:3: error: graph.dense: weight has 5 input features but data has 3",
                "%0 = graph.dense %x, %w",
            ],
        ),
    ],
    ids=["malformed", "unknown-op", "shape-error"],
)
def test_opt_bad_input_is_located(tmp_path: Path, text: str, expected: list[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    result = run_tool("ember-opt", path)
    assert_user_error(result, *expected)
    assert result.stdout == ""
    # One diagnostic: the message is on the located line, not repeated under it.
    message = expected[0].split(": error: ", 1)[1]
    assert result.stderr.count(message) == 1, result.stderr


@pytest.mark.parametrize(
    ("pipeline", "expected"),
    [
        ("canonicalise", ["unknown pass 'canonicalise'", "did you mean 'canonicalize'"]),
        ("canonicalize{bad-option=1}", ["invalid options for pass 'canonicalize'"]),
        ("canonicalize{", ["invalid pass pipeline 'canonicalize{'"]),
    ],
    ids=["unknown-pass", "bad-option", "bad-syntax"],
)
def test_opt_bad_pipeline(relu_file: Path, pipeline: str, expected: list[str]) -> None:
    assert_user_error(run_tool("ember-opt", relu_file, "-p", pipeline), *expected)


def test_opt_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.mlir"
    assert_user_error(
        run_tool("ember-opt", missing),
        f"ember-opt: error: cannot read input file '{missing}': No such file",
    )


def test_opt_split_input_file_processes_every_chunk() -> None:
    text = "\n// -----\n".join([SHAPE_ERROR, RELU_TWICE, MALFORMED])
    result = run_tool("ember-opt", "-", "--split-input-file", stdin=text)
    assert_user_error(result, "<stdin>:2:3: error: graph.dense", "<stdin>:16:3: error: Expected")
    # The good chunk in the middle is still printed.
    assert result.stdout.count("graph.relu") == 2


def test_opt_verify_diagnostics_prints_to_stdout() -> None:
    result = run_tool("ember-opt", "-", "--verify-diagnostics", stdin=SHAPE_ERROR)
    assert result.returncode == 0, result.stderr
    assert "error: graph.dense: weight has 5 input features" in result.stdout


def test_opt_help_lists_passes_without_heavy_imports() -> None:
    # In a fresh interpreter: --help must not pull in code generation or CUDA.
    code = (
        "import sys\n"
        "from ember.tools.ember_opt import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('llvmlite', 'cuda'))\n"
        "print('HEAVY:', heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "ember modular optimizer driver" in result.stdout
    assert "ember passes" in result.stdout
    assert "HEAVY: []" in result.stdout


def test_describe_passes_lists_summaries_and_options() -> None:
    @dataclass(frozen=True)
    class FusePass(ModulePass):
        """Fuse anchors with their elementwise consumers.

        More text that --help leaves out.
        """

        name = "fuse-ops"
        max_depth: int = 8

    text = describe_passes({"fuse-ops": lambda: FusePass})
    lines = text.splitlines()
    assert lines[1].split() == ["fuse-ops", *["Fuse", "anchors", "with", "their", "elementwise", "consumers."]]
    assert "max-depth: int = 8" in lines[2]
    assert "More text" not in text
    assert "none registered" in describe_passes({})


@dataclass(frozen=True)
class FailingPass(ModulePass):
    """Fails the way xDSL passes do, with a diagnostic exception."""

    name = "test-failing"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassFailedException("graph.relu: not supported here")


@dataclass(frozen=True)
class BreakingPass(ModulePass):
    """Leaves IR that does not verify: a relu with an attribute it does not have."""

    name = "test-breaking"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        relu = next(o for o in op.walk() if isinstance(o, ReluOp))
        relu.attributes["alpha"] = StringAttr("leaky")


@pytest.mark.parametrize(
    ("pass_class", "expected"),
    [
        (FailingPass, "error: pass 'test-failing' failed: graph.relu: not supported here"),
        (
            BreakingPass,
            "relu.mlir:2:3: error: IR after pass 'test-breaking' does not verify: "
            "graph.relu: unknown attribute 'alpha' (known: none)",
        ),
    ],
    ids=["fails", "breaks-ir"],
)
def test_opt_reports_pass_failures(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    relu_file: Path,
    pass_class: type[ModulePass],
    expected: str,
) -> None:
    # In-process: the pass exists only in this test's registry.
    monkeypatch.setitem(PASSES, pass_class.name, lambda: pass_class)
    exit_code = ember_opt_main([str(relu_file), "-p", f"cse,{pass_class.name}"])
    assert exit_code == 1
    assert expected in capsys.readouterr().err


def test_as_diagnostic_keeps_located_messages() -> None:
    assert as_diagnostic("f.mlir:1:2: error: bad") == "f.mlir:1:2: error: bad"
    assert as_diagnostic("bad", "ember-opt") == "ember-opt: error: bad"
    assert as_diagnostic("bad\n") == "error: bad"


# --------------------------------------------------------------------------
# ember-run
# --------------------------------------------------------------------------

MLP_ARGUMENTS = [
    Argument("data", tensor_type((1, 784)), 0),
    Argument("w0", tensor_type((128, 784)), 1),
    Argument("b0", tensor_type((128,)), 2),
    Argument("w1", tensor_type((10, 128)), 3),
    Argument("b1", tensor_type((10,)), 4),
]


def numpy_mlp(data, w0, b0, w1, b1):
    hidden = np.maximum(data @ w0.T + b0, 0)
    return hidden @ w1.T + b1


def test_run_mlp_with_random_inputs(tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    result = run_tool(
        "ember-run", EXAMPLES / "mlp.mlir", "--random-inputs", "--seed", "3", "--output", out
    )
    assert result.returncode == 0, result.stderr
    assert "input w0: tensor<128x784xf32> (random, seed 3)" in result.stdout
    assert "output0: tensor<1x10xf32>  min" in result.stdout
    with np.load(out) as saved:
        assert list(saved.keys()) == ["output0"]
        output = saved["output0"]
    assert output.shape == (1, 10) and output.dtype == np.float32
    inputs = [random_array(a, 3) for a in MLP_ARGUMENTS]
    np.testing.assert_allclose(output, numpy_mlp(*inputs), rtol=1e-4)


def test_run_mixes_files_and_random(tmp_path: Path) -> None:
    data = np.linspace(-1, 1, 784, dtype=np.float32).reshape(1, 784)
    np.save(tmp_path / "data.npy", data)
    out = tmp_path / "out.npz"
    result = run_tool(
        "ember-run",
        EXAMPLES / "mlp.mlir",
        "--input", f"data={tmp_path / 'data.npy'}",
        "--input", "w0=random",
        "--random-inputs",
        "--output", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    inputs = [data, *(random_array(a, 0) for a in MLP_ARGUMENTS[1:])]
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["output0"], numpy_mlp(*inputs), rtol=1e-4)


def test_run_every_input_random_by_name() -> None:
    names = ["data", "w0", "b0", "w1", "b1"]
    args = [arg for name in names for arg in ("--input", f"{name}=random")]
    result = run_tool("ember-run", EXAMPLES / "mlp.mlir", *args)
    assert result.returncode == 0, result.stderr
    assert "output0: tensor<1x10xf32>" in result.stdout


def test_run_convbnrelu_example() -> None:
    result = run_tool("ember-run", EXAMPLES / "convbnrelu.mlir", "--random-inputs")
    assert result.returncode == 0, result.stderr
    for name in ("data", "weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var"):
        assert f"input {name}:" in result.stdout
    summary = result.stdout.split("output0: tensor<1x16x224x224xf32>  min ", 1)[1]
    assert float(summary.split()[0]) >= 0  # relu output


def test_run_reads_stdin() -> None:
    result = run_tool("ember-run", "-", "--random-inputs", stdin=RELU_TWICE)
    assert result.returncode == 0, result.stderr
    assert "input x: tensor<2x3xf32>" in result.stdout


def test_random_inputs_are_seeded_per_argument() -> None:
    data, w0 = MLP_ARGUMENTS[0], MLP_ARGUMENTS[1]
    np.testing.assert_array_equal(random_array(data, 1), random_array(data, 1))
    assert not np.array_equal(random_array(data, 1), random_array(data, 2))
    assert random_array(w0, 0).dtype == np.float32
    ints = random_array(Argument("i", tensor_type((50,), "int64"), 5), 0)
    assert ints.dtype == np.int64 and ints.min() >= 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--input", "data=random"], ["missing inputs: w0 (tensor<128x784xf32>)", "--random-inputs"]),
        (["--input", "weights=random", "--random-inputs"], ["no argument 'weights'", "arguments: data, w0, b0, w1, b1"]),
        (["--input", "data", "--random-inputs"], ["--input 'data' must be NAME=FILE.npy or NAME=random"]),
        (["--input", "data=random", "--input", "data=random"], ["--input 'data' is given twice"]),
        (["--entry", "forward", "--random-inputs"], ["no function @forward", "(functions: @main)"]),
        (["--input", "data=/nonexistent/data.npy", "--random-inputs"], ["input 'data' (/nonexistent/data.npy): cannot read"]),
    ],
    ids=["missing-input", "unknown-name", "no-value", "twice", "unknown-entry", "missing-npy"],
)
def test_run_bad_arguments(args: list[str], expected: list[str]) -> None:
    assert_user_error(run_tool("ember-run", EXAMPLES / "mlp.mlir", *args), *expected)


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        (np.zeros((784,), np.float32), "has shape (784,), expected (1, 784) (tensor<1x784xf32>)"),
        (np.zeros((1, 784), np.float64), "has dtype float64, expected float32"),
    ],
    ids=["shape", "dtype"],
)
def test_run_wrong_npy(tmp_path: Path, array: np.ndarray, expected: str) -> None:
    np.save(tmp_path / "data.npy", array)
    result = run_tool(
        "ember-run", EXAMPLES / "mlp.mlir", "--input", f"data={tmp_path / 'data.npy'}",
        "--random-inputs",
    )  # fmt: skip
    assert_user_error(result, f"input 'data' ({tmp_path / 'data.npy'}) {expected}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MALFORMED, "<stdin>:3:3: error: Expected '>'"),
        (UNKNOWN_OP, "<stdin>:2:25: error: Operation graph.frobnicate is not registered"),
        (SHAPE_ERROR, "<stdin>:2:3: error: graph.dense: weight has 5 input features"),
    ],
    ids=["malformed", "unknown-op", "shape-error"],
)
def test_run_bad_ir(text: str, expected: str) -> None:
    assert_user_error(run_tool("ember-run", "-", "--random-inputs", stdin=text), expected)


def test_run_missing_file(tmp_path: Path) -> None:
    assert_user_error(
        run_tool("ember-run", tmp_path / "nope.mlir"), "ember-run: error: cannot read input file"
    )
