"""Run the lit + FileCheck suite (``tests/filecheck``) from pytest, one item per file.

``pytest tests`` then runs everything, and a failure names its file:
``tests/test_lit.py::test_lit_file[passes/fuse-ops.mlir]``.  Starting lit
once per file would cost its start-up every time, so the first item of a
session runs lit ONCE on every ``.mlir`` file the session selected (``-k``
and ``::`` selections included), in parallel, writing lit's JSON results
(``lit -o``); each item then reports its own file's result, with lit's
record of the RUN lines, the commands' output and FileCheck's explanation.

lit runs with the Python that runs pytest, so ``tests/filecheck/lit.cfg``
finds this environment's ``ember-opt`` and ``filecheck``, and lit.cfg points
the tools' ``PYTHONPATH`` at this checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SUITE = Path(__file__).parent / "filecheck"

# lit's result codes that mean the test did what it should.
_PASSED = {"PASS", "XFAIL"}
_SKIPPED = {"UNSUPPORTED"}


def lit_test_files() -> list[str]:
    """Every test of the suite, relative to it (``passes/cse.mlir``).

    Inputs/ holds files that RUN lines read; lit.cfg excludes them too.
    """
    files = [p.relative_to(SUITE) for p in SUITE.rglob("*.mlir")]
    return sorted(p.as_posix() for p in files if "Inputs" not in p.parts)


LIT_TESTS = lit_test_files()


def run_lit(
    suite: Path, files: list[str], results_path: Path
) -> dict[str, dict[str, Any]]:
    """Run lit on ``files`` (relative to ``suite``); each file's JSON result.

    The key is the file as given; a file lit did not report is missing.
    Raises ``AssertionError`` with lit's own output when lit wrote no results
    (a broken lit.cfg, a crash).
    """
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import lit.main; lit.main.main()",
            "-q",
            "-o",
            str(results_path),
            *(str(suite / f) for f in files),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if not results_path.exists():
        raise AssertionError(
            f"lit wrote no results (exit status {completed.returncode}):\n"
            + completed.stdout
            + completed.stderr
        )
    report = json.loads(results_path.read_text(encoding="utf-8"))
    # lit names a test "<suite name> :: <path in the suite>".
    return {test["name"].split(" :: ", 1)[1]: test for test in report["tests"]}


@pytest.fixture(scope="session")
def lit_results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """lit's result for every lit file this session runs, from one lit run."""
    selected = [
        item.callspec.params["lit_file"]
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == "test_lit_file"
        and hasattr(item, "callspec")
    ]
    results_path = tmp_path_factory.mktemp("lit") / "results.json"
    return run_lit(SUITE, selected, results_path)


def check_lit_result(lit_file: str, results: dict[str, dict[str, Any]]) -> None:
    """Pass, skip or fail as lit's result for ``lit_file`` says."""
    result = results.get(lit_file)
    if result is None:
        pytest.fail(
            f"{lit_file}: lit reported no result for it (is it excluded by lit.cfg?)",
            pytrace=False,
        )
    code = result["code"]
    if code in _SKIPPED:
        pytest.skip(f"{lit_file}: lit says {code}")
    if code not in _PASSED:
        pytest.fail(f"{lit_file}: lit says {code}\n{result['output']}", pytrace=False)


def test_lit_suite_has_tests() -> None:
    # Guard against a suite that passes because nothing is found to run.
    assert LIT_TESTS, f"no .mlir tests under {SUITE}"


@pytest.mark.parametrize("lit_file", LIT_TESTS)
def test_lit_file(lit_file: str, lit_results: dict[str, dict[str, Any]]) -> None:
    check_lit_result(lit_file, lit_results)


# --------------------------------------------------------------------------
# The harness itself: a failing file fails its own item, naming it
# --------------------------------------------------------------------------


def test_a_failing_lit_file_fails_its_item_with_lit_output(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "lit.cfg").write_text((SUITE / "lit.cfg").read_text(encoding="utf-8"))
    (suite / "good.mlir").write_text("// RUN: true\n")
    (suite / "bad.mlir").write_text("// RUN: echo boom-from-lit && false\n")
    results = run_lit(suite, ["good.mlir", "bad.mlir"], tmp_path / "results.json")
    check_lit_result("good.mlir", results)
    with pytest.raises(pytest.fail.Exception) as failure:
        check_lit_result("bad.mlir", results)
    assert "bad.mlir: lit says FAIL" in str(failure.value)
    assert "boom-from-lit" in str(failure.value)
    with pytest.raises(pytest.fail.Exception, match="missing.mlir: lit reported no"):
        check_lit_result("missing.mlir", results)
