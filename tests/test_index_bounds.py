"""Interval analysis of kernel indices: what the verifier rejects, what it
proves, what it leaves to a ``bounds_check`` build.

Diagnostics as the user sees them are in
``tests/filecheck/dialects/kernel/invalid.mlir``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.runtime
from ember.analysis.index_bounds import IndexRange, Verdict, kernel_accesses
from ember.backends.cpu import compile_kernels
from ember.dialects.kernel import kernel_functions
from ember.errors import IRError, RuntimeFailure


def _kernel(body: str, args: str = "%X: memref<4xf32>, %Y: memref<4xf32>") -> str:
    return f"""
    func.func @k({args}) attributes {{kernel.kernel}} {{
      {body}
      func.return
    }}
    """


def _verdicts(text: str) -> list[tuple[str, Verdict, IndexRange | None]]:
    """(buffer, verdict, range) of each access dimension, in program order."""
    module = ember.parse(text, verify=False)
    (kernel,) = kernel_functions(module)
    return [
        (access.op.memref.name_hint or "", access.verdict, access.range)
        for access in kernel_accesses(kernel)
    ]


def test_affine_index_in_range_is_proven() -> None:
    text = _kernel(
        """kernel.for %o = 0 to 2 {
             kernel.for %l = 0 to 2 {
               %two = arith.constant 2 : index
               %base = arith.muli %o, %two : index
               %at = arith.addi %base, %l : index
               %x = memref.load %X[%at] : memref<4xf32>
               memref.store %x, %Y[%at] : memref<4xf32>
             }
           }"""
    )
    assert _verdicts(text) == [
        ("X", Verdict.IN_BOUNDS, IndexRange(0, 3, True)),
        ("Y", Verdict.IN_BOUNDS, IndexRange(0, 3, True)),
    ]
    ember.parse(text)


def test_a_variable_that_cancels_out_is_exact() -> None:
    # Plain interval arithmetic would give %i - %i the range [-3, 3].
    text = _kernel(
        """kernel.for %i = 0 to 4 {
             %d = arith.subi %i, %i : index
             %x = memref.load %X[%d] : memref<4xf32>
             memref.store %x, %Y[%i] : memref<4xf32>
           }"""
    )
    assert _verdicts(text)[0] == ("X", Verdict.IN_BOUNDS, IndexRange(0, 0, True))


def test_step_and_lower_bound_give_the_last_value() -> None:
    text = _kernel(
        """kernel.for %i = 1 to 8 step 3 {
             %x = memref.load %X[%i] : memref<4xf32>
           }""",
        args="%X: memref<4xf32>",
    )
    # %i takes 1, 4, 7.
    assert _verdicts(text) == [("X", Verdict.OUT_OF_BOUNDS, IndexRange(1, 7, True))]


def test_divsi_and_remsi_unflatten_an_index() -> None:
    text = _kernel(
        """kernel.for %f = 0 to 12 {
             %four = arith.constant 4 : index
             %row = arith.divsi %f, %four : index
             %col = arith.remsi %f, %four : index
             %x = memref.load %X[%row, %col] : memref<3x4xf32>
             memref.store %x, %Y[%row, %col] : memref<2x4xf32>
           }""",
        args="%X: memref<3x4xf32>, %Y: memref<2x4xf32>",
    )
    assert _verdicts(text) == [
        ("X", Verdict.IN_BOUNDS, IndexRange(0, 2, True)),
        ("X", Verdict.IN_BOUNDS, IndexRange(0, 3, False)),
        ("Y", Verdict.OUT_OF_BOUNDS, IndexRange(0, 2, True)),
        ("Y", Verdict.IN_BOUNDS, IndexRange(0, 3, False)),
    ]
    with pytest.raises(IRError, match=r"writes %Y \(memref<2x4xf32>\) out of bounds: index %row"):
        ember.parse(text)


def test_clamped_window_index_is_proven_in_bounds() -> None:
    # How pooling clamps a window start: max(%o - 1, 0), then min(…, 3).
    text = _kernel(
        """kernel.for %o = 0 to 6 {
             %one = arith.constant 1 : index
             %zero = arith.constant 0 : index
             %last = arith.constant 3 : index
             %start = arith.subi %o, %one : index
             %neg = arith.cmpi slt, %start, %zero : index
             %low = arith.select %neg, %zero, %start : index
             %over = arith.cmpi sgt, %low, %last : index
             %at = arith.select %over, %last, %low : index
             %x = memref.load %X[%at] : memref<4xf32>
           }""",
        args="%X: memref<4xf32>",
    )
    # A hull of the select operands would be [-1, 4].
    assert _verdicts(text) == [("X", Verdict.IN_BOUNDS, IndexRange(0, 3, False))]


def test_select_guarded_padding_is_not_rejected() -> None:
    # Padding code: the index is -1 or 4 at the edges, but a select picks a
    # safe one there.  Its range is a hull, not attained: undecided.
    text = _kernel(
        """kernel.for %o = 0 to 4 {
             %one = arith.constant 1 : index
             %zero = arith.constant 0 : index
             %at = arith.addi %o, %one : index
             %inside = arith.cmpi ult, %at, %one : index
             %safe = arith.select %inside, %at, %zero : index
             %x = memref.load %X[%safe] : memref<4xf32>
           }""",
        args="%X: memref<4xf32>",
    )
    assert _verdicts(text) == [("X", Verdict.UNKNOWN, IndexRange(0, 4, False))]
    ember.parse(text)


def test_access_under_init_is_conditional() -> None:
    text = _kernel(
        """kernel.for %i = 0 to 4 {
             kernel.for %k = 0 to 4 {
               kernel.block "S" (%vi = spatial %i, %vk = reduce %k) {
                 kernel.init {
                   %zero = arith.constant 0.0 : f32
                   %one = arith.constant 1 : index
                   %next = arith.addi %vi, %one : index
                   memref.store %zero, %Y[%next] : memref<4xf32>
                 }
               }
             }
           }"""
    )
    assert _verdicts(text) == [("Y", Verdict.UNKNOWN, IndexRange(1, 4, True))]


def test_empty_loop_never_runs() -> None:
    text = _kernel(
        """kernel.for %i = 0 to 0 {
             %ten = arith.constant 10 : index
             %at = arith.addi %i, %ten : index
             %x = memref.load %X[%at] : memref<4xf32>
           }""",
        args="%X: memref<4xf32>",
    )
    assert _verdicts(text) == [("X", Verdict.IN_BOUNDS, None)]
    ember.parse(text)


def test_loaded_index_is_unknown() -> None:
    text = _kernel(
        """kernel.for %i = 0 to 4 {
             %raw = memref.load %I[%i] : memref<4xi64>
             %at = arith.index_cast %raw : i64 to index
             %x = memref.load %X[%at] : memref<4xf32>
           }""",
        args="%I: memref<4xi64>, %X: memref<4xf32>",
    )
    assert _verdicts(text) == [
        ("I", Verdict.IN_BOUNDS, IndexRange(0, 3, True)),
        ("X", Verdict.UNKNOWN, None),
    ]


def test_interval_wholly_outside_is_rejected_even_when_not_exact() -> None:
    text = _kernel(
        """kernel.for %i = 0 to 2 {
             kernel.for %j = 0 to 2 {
               %four = arith.constant 4 : index
               %ij = arith.muli %i, %j : index
               %at = arith.addi %ij, %four : index
               %x = memref.load %X[%at] : memref<4xf32>
             }
           }""",
        args="%X: memref<4xf32>",
    )
    assert _verdicts(text) == [("X", Verdict.OUT_OF_BOUNDS, IndexRange(4, 5, False))]
    with pytest.raises(IRError, match=r"index %at of dimension 0 lies in \[4, 5\]"):
        ember.parse(text)


def test_product_of_loop_variables_near_the_edge_is_undecided() -> None:
    text = _kernel(
        """kernel.for %i = 0 to 3 {
             kernel.for %j = 0 to 3 {
               %at = arith.muli %i, %j : index
               %x = memref.load %X[%at] : memref<4xf32>
             }
           }""",
        args="%X: memref<4xf32>",
    )
    assert _verdicts(text) == [("X", Verdict.UNKNOWN, IndexRange(0, 4, False))]


# --------------------------------------------------------------------------
# bounds_check builds: what the verifier cannot decide is tested at run time
# --------------------------------------------------------------------------

GATHER = """
func.func @gather(%I: memref<4xi64>, %X: memref<8xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
  kernel.for %i = 0 to 4 LOOP_KIND {
    kernel.block "Y" (%vi = spatial %i) {
      %raw = memref.load %I[%vi] : memref<4xi64>
      %at = arith.index_cast %raw : i64 to index
      %x = memref.load %X[%at] : memref<8xf32>
      memref.store %x, %Y[%vi] : memref<4xf32>
    }
  }
  func.return
}

func.func @main(%idx: tensor<4xi64>, %x: tensor<8xf32>) -> tensor<4xf32> {
  %0 = graph.call_kernel @gather(%idx, %x) : (tensor<4xi64>, tensor<8xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""

GATHER_ERROR = (
    r"running @main on cpu: kernel @gather: memref.load of %X \(memref<8xf32>\), "
    r"dimension 0, index %at is {value}, out of bounds for size 8 \(valid: 0 to 7\)"
)

X = np.arange(8, dtype=np.float32)


def _gather(loop_kind: str = "") -> str:
    return GATHER.replace("LOOP_KIND", loop_kind)


def _run(lib: ember.runtime.Module, idx: list[int]) -> np.ndarray:
    executor = ember.GraphExecutor(lib)
    executor.set_input("idx", np.array(idx, np.int64))
    executor.set_input("x", X)
    executor.run()
    return executor.get_output(0).numpy()


@pytest.mark.parametrize("loop_kind", ["", "parallel"])
def test_bounds_check_reports_kernel_buffer_and_index(loop_kind: str) -> None:
    lib = ember.build(_gather(loop_kind), target="llvm", options={"bounds_check": True})
    with pytest.raises(RuntimeFailure, match=GATHER_ERROR.format(value=9)):
        _run(lib, [0, 3, 9, 1])
    with pytest.raises(RuntimeFailure, match=GATHER_ERROR.format(value=-1)):
        _run(lib, [-1, 3, 2, 1])
    # The failure is not left behind for the next run.
    np.testing.assert_array_equal(_run(lib, [0, 3, 7, 1]), [0, 3, 7, 1])


def test_bounds_check_survives_export(tmp_path: Path) -> None:
    lib = ember.build(_gather(), target="llvm", options={"bounds_check": True})
    lib.export_library(tmp_path / "gather")
    loaded = ember.load_module(tmp_path / "gather")
    with pytest.raises(RuntimeFailure, match=GATHER_ERROR.format(value=8)):
        _run(loaded, [8, 0, 0, 0])


def test_without_the_option_nothing_is_checked() -> None:
    plain = ember.build(_gather(), target="llvm")
    assert "ember_bounds_error" not in plain.llvm_ir
    checked = ember.build(_gather(), target="llvm", options={"bounds_check": True})
    assert "ember_bounds_error" in checked.llvm_ir


def test_proven_accesses_are_not_checked() -> None:
    proven = ember.parse(
        """
        func.func @copy(%X: memref<4xf32>, %Y: memref<4xf32>) attributes {kernel.kernel} {
          kernel.for %i = 0 to 4 {
            %x = memref.load %X[%i] : memref<4xf32>
            memref.store %x, %Y[%i] : memref<4xf32>
          }
          func.return
        }
        """
    )
    assert "ember_bounds_error" not in compile_kernels(proven, bounds_check=True).llvm_ir


def test_compiled_kernels_raise_after_the_call() -> None:
    module = ember.parse(_gather())
    jit = compile_kernels(module, bounds_check=True)
    y = np.zeros(4, np.float32)
    with pytest.raises(RuntimeFailure, match=r"calling @gather on cpu: kernel @gather: .* is 12,"):
        jit.run("gather", np.array([12, 0, 0, 0], np.int64), X, y)


def test_build_options_are_checked() -> None:
    with pytest.raises(RuntimeFailure, match="unknown build option 'bound_check'; did you mean 'bounds_check'"):
        ember.build(_gather(), target="llvm", options={"bound_check": True})
    with pytest.raises(RuntimeFailure, match="build option 'bounds_check' must be a bool, got 1"):
        ember.build(_gather(), target="llvm", options={"bounds_check": 1})
    with pytest.raises(RuntimeFailure, match="options must be a dict"):
        ember.build(_gather(), target="llvm", options=["bounds_check"])  # type: ignore[arg-type]


def test_ember_run_check_bounds(tmp_path: Path) -> None:
    source = tmp_path / "gather.mlir"
    source.write_text(_gather())
    np.save(tmp_path / "idx.npy", np.array([0, 1, 2, 30], np.int64))
    ember_run = Path(sys.executable).parent / "ember-run"
    command = [str(ember_run), str(source), f"--input=idx={tmp_path / 'idx.npy'}", "--input=x=random"]
    completed = subprocess.run(
        [*command, "--check-bounds"], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr.startswith("ember-run: error: running @main on cpu: kernel @gather:")
    assert "index %at is 30, out of bounds for size 8" in completed.stderr
    assert "Traceback" not in completed.stderr
