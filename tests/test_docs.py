"""Every code example in README.md and docs/**/*.md is checked.

Documentation examples rot silently unless something runs them; this module
is ember's equivalent of Rust's doctests or MLIR's checked ``.mlir`` snippets.
It reads the Markdown files that exist when the tests are collected (a new
``docs/*.md`` file is covered without touching this module), extracts the
fenced code blocks, and checks them by the fence's info string:

``mlir``
    Must parse and verify with :func:`ember.parse`.  A block whose top-level
    ops are ``func.func`` / ``builtin.module`` is parsed as it is.  Any other
    block is a *fragment* (one or more op lines): it is wrapped into a
    ``func.func`` whose arguments are the values the fragment uses but does not
    define, typed as the fragment's own syntax types them (the parser's forward
    references), so ``%0 = graph.relu %x : tensor<4xf32>`` is checked as is.
``mlir-error``
    An intentionally invalid example.  It must FAIL with an ``IRError``, and
    each ``// expected-error {{message}}`` comment in it (MLIR's
    ``-verify-diagnostics`` spelling) names a substring the diagnostic must
    contain; at least one is required.
``python``
    Runs with ``exec`` in a fresh namespace (``__name__ == "__main__"``), the
    working directory at the repository root.  Each block stands alone.
``mlir-norun``, ``python-norun``
    Shown, not checked (sketches with ``…``, code that needs a GPU).

Other languages (``sh``, ``text``, …) are not run.  An info string that starts
with ``mlir`` or ``python`` but is none of the above (``mlir-eror``) is an
error, so a typo cannot silently switch a check off.  Failures name the file
and the line of the block; diagnostics and tracebacks point at the Markdown
file's own line numbers.

It also checks that ``docs/graph-dialect.md`` has a section for every op of the
graph dialect, with an example, its attributes and its fusion kind, so the
reference cannot fall behind the dialect.
"""

from __future__ import annotations

import os
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation
from xdsl.parser import MLIRTokenKind, Parser
from xdsl.utils.exceptions import ParseError

import ember
from ember.context import make_context
from ember.dialects.graph import Graph
from ember.errors import IRError

REPO_ROOT = Path(__file__).resolve().parent.parent
GRAPH_DIALECT_DOC = REPO_ROOT / "docs" / "graph-dialect.md"

MLIR_KINDS = ("mlir", "mlir-error", "mlir-norun")
PYTHON_KINDS = ("python", "python-norun")

# A fence opens with 3+ backticks or tildes, possibly indented (inside a list
# item); what follows is the info string.  Backtick fences may not have a
# backtick in their info string (CommonMark), which keeps inline code out.
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_EXPECTED_ERROR = re.compile(r"//\s*expected-error\s*\{\{(?P<message>.*?)\}\}")


class MarkdownError(Exception):
    """A Markdown file whose code blocks cannot be extracted reliably."""


@dataclass(frozen=True)
class CodeBlock:
    """One fenced code block: where it is, its info string and its text."""

    path: Path
    line: int  # 1-based line of the block's first content line
    info: str
    text: str

    @property
    def kind(self) -> str:
        """The first word of the info string, lower-cased (``mlir-error``)."""
        words = self.info.split()
        return words[0].lower() if words else ""

    @property
    def shown_path(self) -> str:
        """The file's path relative to the repository when it lies inside it."""
        try:
            return str(self.path.relative_to(REPO_ROOT))
        except ValueError:
            return str(self.path)

    @property
    def where(self) -> str:
        """``docs/graph-dialect.md:42``: the file and the block's first line."""
        return f"{self.shown_path}:{self.line}"

    def numbered_source(self, first_line: int | None = None) -> str:
        """The text padded with blank lines so that line numbers match the file.

        ``first_line`` is the file line the text's first line should get.
        """
        start = self.line if first_line is None else first_line
        return "\n" * (start - 1) + self.text


def extract_blocks(path: Path, text: str | None = None) -> list[CodeBlock]:
    """All fenced code blocks of a Markdown file, in order.

    Raises :class:`MarkdownError` (naming the file and line) for a fence that
    is never closed, since everything after it would silently go unchecked.
    """
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[CodeBlock] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body_start = i + 1
        j = body_start
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        if j == len(lines):
            raise MarkdownError(f"{path}:{i + 1}: code fence {fence} is never closed")
        body = [_dedent(line, indent) for line in lines[body_start:j]]
        blocks.append(
            CodeBlock(
                path, body_start + 1, opening["info"].strip(), "\n".join(body) + "\n"
            )
        )
        i = j + 1
    return blocks


def _dedent(line: str, indent: str) -> str:
    """Remove the fence's indentation (a block inside a list item)."""
    return line[len(indent) :] if line.startswith(indent) else line.lstrip(" \t")


def doc_files() -> list[Path]:
    """README.md and every Markdown file under docs/, those that exist."""
    files = [REPO_ROOT / "README.md"]
    files += sorted((REPO_ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def _collect() -> tuple[list[CodeBlock], list[str]]:
    """The checked blocks of all docs, and the problems found collecting them."""
    blocks: list[CodeBlock] = []
    problems: list[str] = []
    for path in doc_files():
        try:
            found = extract_blocks(path)
        except MarkdownError as e:
            problems.append(str(e))
            continue
        for block in found:
            kind = block.kind
            if kind in MLIR_KINDS or kind in PYTHON_KINDS:
                blocks.append(block)
            elif kind.startswith(("mlir", "python")):
                known = ", ".join(MLIR_KINDS + PYTHON_KINDS)
                problems.append(
                    f"{block.where}: unknown code block kind {kind!r} (known: {known})"
                )
    return blocks, problems


BLOCKS, PROBLEMS = _collect()


def _blocks_of(*kinds: str) -> list[object]:
    return [pytest.param(b, id=b.where) for b in BLOCKS if b.kind in kinds]


# --------------------------------------------------------------------------
# MLIR examples
# --------------------------------------------------------------------------


class _FragmentParser(Parser):
    """Parses a sequence of top-level ops, leaving undefined values open."""

    def parse_fragment(self) -> tuple[list[Operation], dict[str, Attribute]]:
        """The ops, and each used-but-undefined value with its type.

        Unlike ``parse_module`` this does not reject forward references:
        they are exactly the values a fragment takes from its surroundings.
        """
        ops: list[Operation] = []
        while self._current_token.kind != MLIRTokenKind.EOF:
            ops.append(
                self.expect(self.parse_optional_operation, "expected an operation")
            )
        free: dict[str, Attribute] = {}
        for name, by_index in self.forward_ssa_references.items():
            if set(by_index) != {0}:
                self.raise_error(
                    f"fragment uses results of %{name} that it does not define; "
                    "write the example as a complete func.func"
                )
            free[name] = by_index[0].type
        return ops, free


def parse_example(block: CodeBlock) -> ModuleOp:
    """Parse and verify an ``mlir`` block, wrapping a fragment into a function.

    Raises :class:`IRError` exactly as :func:`ember.parse` does.
    """
    name = block.shown_path
    try:
        ops, free = _FragmentParser(
            make_context(), block.numbered_source(), name
        ).parse_fragment()
    except ParseError as e:
        raise IRError(str(e)) from None
    if not ops:
        raise IRError(f"{block.where}: the block holds no operation")
    if all(isinstance(op, FuncOp | ModuleOp) for op in ops):
        # A complete example; ember.parse reports any value left undefined.
        return ember.parse(block.numbered_source(), name=name)
    if any(isinstance(op, FuncOp | ModuleOp) for op in ops):
        raise IRError(
            f"{block.where}: mixes functions with loose ops; write either a "
            "complete func.func or op lines only"
        )
    args = ", ".join(f"%{value}: {t}" for value, t in free.items())
    # The header sits on the line of the opening fence, so diagnostics still
    # point at the Markdown file's own line numbers.
    wrapped = (
        "\n" * (block.line - 2)
        + f"func.func @doc_example({args}) {{\n"
        + block.text
        + "  func.return\n}\n"
    )
    return ember.parse(wrapped, name=name)


def expected_errors(block: CodeBlock) -> list[str]:
    """The messages of the block's ``// expected-error {{…}}`` comments."""
    return [m["message"].strip() for m in _EXPECTED_ERROR.finditer(block.text)]


def check_error_example(block: CodeBlock) -> None:
    """Fail unless the block is rejected with every documented message."""
    messages = expected_errors(block)
    if not messages:
        pytest.fail(
            f"{block.where}: an mlir-error block needs at least one "
            "'// expected-error {{message}}' comment"
        )
    try:
        parse_example(block)
    except IRError as e:
        diagnostic = str(e)
    else:
        pytest.fail(f"{block.where}: this invalid example parsed and verified")
    missing = [m for m in messages if m not in diagnostic]
    if missing:
        pytest.fail(
            f"{block.where}: the diagnostic does not contain {missing!r}; "
            f"it reads:\n{diagnostic}"
        )


def test_docs_are_well_formed() -> None:
    """Every fence is closed and every mlir*/python* kind is a known one."""
    assert not PROBLEMS, "\n".join(PROBLEMS)


@pytest.mark.parametrize("block", _blocks_of("mlir"))
def test_mlir_example_parses_and_verifies(block: CodeBlock) -> None:
    diagnostic = None
    try:
        parse_example(block)
    except IRError as e:
        diagnostic = str(e)
    if diagnostic is not None:
        pytest.fail(
            f"{block.where}: the example does not parse or verify:\n{diagnostic}",
            pytrace=False,
        )


@pytest.mark.parametrize("block", _blocks_of("mlir-error"))
def test_mlir_error_example_fails_as_documented(block: CodeBlock) -> None:
    check_error_example(block)


# --------------------------------------------------------------------------
# Python examples
# --------------------------------------------------------------------------


def run_python_example(block: CodeBlock) -> None:
    """Run a python block in a fresh namespace; fail naming the file and line."""
    code = compile(block.numbered_source(), block.shown_path, "exec")
    namespace: dict[str, object] = {"__name__": "__main__"}
    trace = None
    try:
        # Running the documentation's own code is the point of this test.
        exec(code, namespace)  # noqa: S102
    except Exception as e:  # noqa: BLE001 - any failure of an example is reported
        # Drop this function's own frame: the first frame shown is the doc's.
        trace = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
    if trace is not None:
        pytest.fail(
            f"{block.where}: the python example failed:\n{trace}", pytrace=False
        )


@pytest.mark.parametrize("block", _blocks_of("python"))
def test_python_example_runs(block: CodeBlock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    run_python_example(block)


# --------------------------------------------------------------------------
# The graph dialect reference covers the whole dialect
# --------------------------------------------------------------------------


def _sections(text: str) -> dict[str, str]:
    """``graph.x`` -> the text of the section whose heading names it."""
    sections: dict[str, str] = {}
    heading = re.compile(r"^(#{1,6})\s+`?(graph\.[a-z_0-9]+)`?\s*$")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = heading.match(line)
        if match is None:
            continue
        level = len(match[1])
        end = i + 1
        while end < len(lines) and not re.match(rf"^#{{1,{level}}}\s", lines[end]):
            end += 1
        sections[match[2]] = "\n".join(lines[i:end])
    return sections


@pytest.mark.parametrize("op", list(Graph.operations), ids=lambda op: op.name)
def test_graph_dialect_doc_covers_op(op: type[Operation]) -> None:
    """A section per op, with a checked example, its attributes, its fusion kind."""
    sections = _sections(GRAPH_DIALECT_DOC.read_text(encoding="utf-8"))
    assert op.name in sections, (
        f"docs/graph-dialect.md has no section '### `{op.name}`'"
    )
    section = sections[op.name]
    examples = [
        b
        for b in extract_blocks(GRAPH_DIALECT_DOC, section)
        if b.kind == "mlir" and op.name in b.text
    ]
    assert examples, f"the section of {op.name} has no ```mlir example using it"
    for attribute in getattr(op, "ATTRS", {}):
        assert f"`{attribute}`" in section, (
            f"the section of {op.name} does not document attribute `{attribute}`"
        )
    kind = op.FUSION_KIND.name.lower().replace("_", "-")  # type: ignore[attr-defined]
    assert f"Fusion kind: `{kind}`" in section, (
        f"the section of {op.name} must say 'Fusion kind: `{kind}`'"
    )


# --------------------------------------------------------------------------
# The checker itself: each of these would catch a broken harness
# --------------------------------------------------------------------------


_SAMPLE = """\
# Title

```mlir
%0 = graph.relu %x : tensor<4xf32>
```

1. In a list:

   ~~~python
   x = 1
   ~~~

``` python-norun extra words
raise SystemExit
```

Inline ```code``` is not a fence.
"""


def test_extract_blocks_finds_lines_kinds_and_indented_fences() -> None:
    blocks = extract_blocks(Path("sample.md"), _SAMPLE)
    assert [(b.line, b.kind) for b in blocks] == [
        (4, "mlir"),
        (10, "python"),
        (14, "python-norun"),
    ]
    assert blocks[1].text == "x = 1\n"


def test_extract_blocks_rejects_an_unclosed_fence() -> None:
    with pytest.raises(MarkdownError, match=r"sample\.md:3: code fence"):
        extract_blocks(Path("sample.md"), "text\n\n```mlir\n%0 = graph.relu\n")


def test_fragment_is_wrapped_with_its_free_values() -> None:
    block = CodeBlock(
        Path("sample.md"),
        7,
        "mlir",
        "%0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
        "%1 = graph.relu %0 : tensor<2x3xf32>\n",
    )
    module = parse_example(block)
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    assert [str(t) for t in func.function_type.inputs] == [
        "tensor<2x3xf32>",
        "tensor<3xf32>",
    ]


def test_invalid_fragment_reports_the_markdown_line() -> None:
    block = CodeBlock(
        Path("sample.md"), 12, "mlir", "%0 = graph.relu %x : tensor<4xi32>\n"
    )
    with pytest.raises(IRError, match="element type i32"):
        parse_example(block)
    parse_error = CodeBlock(Path("sample.md"), 12, "mlir", "%0 = graph.relu %x : 42\n")
    with pytest.raises(IRError, match=r"sample\.md:12:"):
        parse_example(parse_error)


def test_error_example_with_a_wrong_message_fails() -> None:
    block = CodeBlock(
        Path("sample.md"),
        3,
        "mlir-error",
        "// expected-error {{this is not what the verifier says}}\n"
        "%0 = graph.relu %x : tensor<4xi32>\n",
    )
    with pytest.raises(pytest.fail.Exception, match="does not contain"):
        check_error_example(block)


def test_error_example_that_verifies_fails() -> None:
    block = CodeBlock(
        Path("sample.md"),
        3,
        "mlir-error",
        "// expected-error {{anything}}\n%0 = graph.relu %x : tensor<4xf32>\n",
    )
    with pytest.raises(pytest.fail.Exception, match="parsed and verified"):
        check_error_example(block)


def test_python_failure_names_the_markdown_line() -> None:
    block = CodeBlock(
        Path("sample.md"), 20, "python", "x = 1\nraise ValueError('boom')\n"
    )
    with pytest.raises(pytest.fail.Exception) as failure:
        run_python_example(block)
    assert 'File "sample.md", line 21' in str(failure.value)
    assert os.path.basename(__file__) not in str(failure.value).split("Traceback")[1]
