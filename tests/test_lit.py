"""Run the lit + FileCheck suite (``tests/filecheck``) from pytest.

``pytest tests`` then runs everything.  lit runs with the Python that runs
pytest, so ``tests/filecheck/lit.cfg`` finds this environment's ``ember-opt``
and ``filecheck``.  On failure the assertion message holds lit's report of
each failing test: its RUN lines, the commands' stderr and FileCheck's
explanation.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).parent / "filecheck"


def _failure_report(output: str) -> str:
    """lit's block for each test that did not pass, and its summary of them."""
    blocks = re.findall(
        r"^\*{20} TEST '.*?' [A-Z]+ \*{20}$.*?^\*{20}$", output, re.DOTALL | re.MULTILINE
    )
    summary = re.search(r"^[A-Z][\w ]* Tests \(\d+\):$.*", output, re.DOTALL | re.MULTILINE)
    parts = [*blocks, summary.group(0) if summary else ""]
    return "\n\n".join(part for part in parts if part) or output


def test_lit_suite() -> None:
    # Inputs/ holds files that RUN lines read; lit.cfg excludes them too.
    tests = [p for p in SUITE.rglob("*.mlir") if "Inputs" not in p.parts]
    assert tests, f"no .mlir tests under {SUITE}"
    completed = subprocess.run(
        [sys.executable, "-c", "import lit.main; lit.main.main()", "-v", str(SUITE)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, "lit tests failed:\n" + _failure_report(output)
    # Guard against a suite that passes because lit found nothing to run.
    discovered = re.search(r"Total Discovered Tests: (\d+)", output)
    assert discovered is not None, output
    assert int(discovered.group(1)) == len(tests), output
