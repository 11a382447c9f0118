"""Rules the test suite keeps about itself, checked on its own source.

- No fixture is named ``test_*``: pytest (before 8.4) collects such a
  function as a test as well, which runs the fixture body as a test that
  cannot fail.
- No test asserts on wall-clock time: on a shared, loaded machine a duration
  proves nothing and fails at random.  A test that needs a bound on a wait
  passes a timeout to the call instead, which turns a hang into a failure.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TEST_FILES = sorted(TESTS.glob("*.py"))

# Calls that read a clock.
_CLOCKS = {
    "time.time",
    "time.monotonic",
    "time.perf_counter",
    "monotonic",
    "perf_counter",
}


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in ("pytest.fixture", "fixture")


def fixtures_named_test(source: str) -> list[str]:
    """The fixtures in ``source`` whose name starts with ``test``."""
    return [
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test")
        and any(_is_fixture(d) for d in node.decorator_list)
    ]


def clock_asserts(source: str) -> list[int]:
    """Lines of ``assert`` statements that test a value computed from a clock.

    A name assigned from an expression that reads a clock (``elapsed =
    time.monotonic() - start``) is clock-derived, as is every name assigned
    from a clock-derived one, within the same function.
    """
    lines: list[int] = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        timed: set[str] = set()

        def reads_clock(expr: ast.AST) -> bool:
            for node in ast.walk(expr):
                if isinstance(node, ast.Call) and ast.unparse(node.func) in _CLOCKS:
                    return True
                if isinstance(node, ast.Name) and node.id in timed:
                    return True
            return False

        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and reads_clock(node.value):
                timed.update(
                    t.id for target in node.targets for t in ast.walk(target)
                    if isinstance(t, ast.Name)
                )
        lines += [
            node.lineno
            for node in ast.walk(function)
            if isinstance(node, ast.Assert) and reads_clock(node.test)
        ]
    return sorted(set(lines))


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.name)
def test_no_fixture_is_named_like_a_test(path: Path) -> None:
    names = fixtures_named_test(path.read_text(encoding="utf-8"))
    assert not names, f"{path.name}: fixtures named like tests: {names}"


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.name)
def test_no_test_asserts_a_duration(path: Path) -> None:
    lines = clock_asserts(path.read_text(encoding="utf-8"))
    assert not lines, f"{path.name}: assertions on wall-clock time at lines {lines}"


def test_the_rules_catch_what_they_name() -> None:
    assert fixtures_named_test(
        "import pytest\n@pytest.fixture\ndef test_externs():\n    yield\n"
        "@pytest.fixture(scope='module')\ndef test_data():\n    return 1\n"
        "@pytest.fixture\ndef externs():\n    yield\n"
    ) == ["test_externs", "test_data"]
    timed = (
        "import time\n"
        "def test_soak():\n"
        "    start = time.monotonic()\n"
        "    work()\n"
        "    elapsed = time.monotonic() - start\n"
        "    seconds = elapsed * 1\n"
        "    assert seconds < 50\n"
        "    assert time.perf_counter() > 0\n"
        "    assert work() == 1\n"
    )
    assert clock_asserts(timed) == [7, 8]
