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
``sh``
    Shell commands, run with ``bash`` in a fresh temporary directory holding
    a copy of ``examples/`` and every *named file* of the docs (below), with
    this checkout's ``ember`` first on ``PYTHONPATH`` and this Python's
    scripts first on ``PATH``.  Two forms:

    - a *transcript*: lines starting with ``$ `` are commands; the lines after
      one, up to the next ``$ `` or the block's end, are its expected output
      (stdout and stderr together, as a terminal shows them).  They are
      compared line by line, trailing spaces ignored, with one wildcard:
      ``...`` matches any text within a line, and a line that is only
      ``...`` matches any number of lines (timings, long listings).  A
      command whose expected output holds ``error:`` must exit with status 1
      (a tool's user error); any other must exit 0.
    - otherwise every line is a command (blank lines and ``#`` comment lines
      aside) and must exit 0; its output is not compared.

    Skipped, by rule: commands starting with ``pip install`` (they would
    change the environment the suite runs in) and ``pytest`` (the suite
    would run itself).
``mlir-norun``, ``python-norun``, ``sh-norun``
    Shown, not checked (sketches with ``…``, code that needs a GPU).

**Named files.**  ``file=NAME`` in a block's info string (``mlir-error
file=bad.mlir``) also writes the block's text to ``NAME`` in the directory
where the ``sh`` blocks run, so a snippet can use a file the page shows.
The block is checked by its kind as any other; a name used twice in the
docs is an error.

Other languages (``text``, …) are not run.  An info string that starts
with ``mlir``, ``python`` or ``sh`` but is none of the above (``mlir-eror``)
is an error, so a typo cannot silently switch a check off.  Failures name
the file and the line of the block; diagnostics and tracebacks point at the
Markdown file's own line numbers.

It also checks that ``docs/graph-dialect.md`` has a section for every op of the
graph dialect, with an example, its attributes and its fusion kind, so the
reference cannot fall behind the dialect.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
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
SH_KINDS = ("sh", "sh-norun")
CHECKED_KINDS = MLIR_KINDS + PYTHON_KINDS + SH_KINDS

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
    def file_name(self) -> str | None:
        """``NAME`` of a ``file=NAME`` word in the info string, if any."""
        for word in self.info.split()[1:]:
            if word.startswith("file="):
                return word.removeprefix("file=")
        return None

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


def _collect() -> tuple[list[CodeBlock], dict[str, CodeBlock], list[str]]:
    """The checked blocks of all docs, the named files (``file=NAME`` blocks
    of any kind, by name), and the problems found collecting them."""
    blocks: list[CodeBlock] = []
    named: dict[str, CodeBlock] = {}
    problems: list[str] = []
    for path in doc_files():
        try:
            found = extract_blocks(path)
        except MarkdownError as e:
            problems.append(str(e))
            continue
        for block in found:
            kind = block.kind
            if kind in CHECKED_KINDS:
                blocks.append(block)
            elif kind.startswith(("mlir", "python", "sh")):
                known = ", ".join(CHECKED_KINDS)
                problems.append(
                    f"{block.where}: unknown code block kind {kind!r} (known: {known})"
                )
            name = block.file_name
            if name is None:
                continue
            if not re.fullmatch(r"[\w][\w.-]*", name):
                problems.append(
                    f"{block.where}: file={name} must be a plain file name "
                    "(letters, digits, '_', '-', '.')"
                )
            elif name in named:
                problems.append(
                    f"{block.where}: file={name} is already the block at "
                    f"{named[name].where}"
                )
            else:
                named[name] = block
    return blocks, named, problems


BLOCKS, NAMED_FILES, PROBLEMS = _collect()


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
# Shell examples
# --------------------------------------------------------------------------

# Commands not run, by rule (see the module docstring).
SKIPPED_COMMANDS = {
    "pip install": "it would change the environment the suite runs in",
    "pytest": "the suite would run itself",
}
_WILDCARD = "..."


@dataclass(frozen=True)
class ShellCommand:
    """One command of an ``sh`` block and, in a transcript, its output."""

    line: int  # the command's line in the Markdown file
    command: str
    expected: tuple[str, ...] | None  # None: not a transcript, output unchecked

    @property
    def expected_status(self) -> int:
        """1 for a transcript that shows a tool's error, else 0."""
        shows_error = self.expected is not None and any(
            "error:" in line for line in self.expected
        )
        return 1 if shows_error else 0


def shell_commands(block: CodeBlock) -> list[ShellCommand]:
    """The commands of an ``sh`` block, in order (see the module docstring).

    Raises :class:`MarkdownError` for a transcript with text before its
    first ``$ `` command.
    """
    lines = block.text.splitlines()
    if not any(line.startswith("$ ") for line in lines):
        return [
            ShellCommand(block.line + i, line.strip(), None)
            for i, line in enumerate(lines)
            if line.strip() and not line.lstrip().startswith("#")
        ]
    commands: list[ShellCommand] = []
    for i, line in enumerate(lines):
        if line.startswith("$ "):
            commands.append(ShellCommand(block.line + i, line[2:].strip(), ()))
        elif not commands:
            if line.strip():
                raise MarkdownError(
                    f"{block.shown_path}:{block.line + i}: transcript text before "
                    "its first '$ ' command"
                )
        else:
            last = commands[-1]
            expected = (*(last.expected or ()), line.rstrip())
            commands[-1] = ShellCommand(last.line, last.command, expected)
    return [
        ShellCommand(c.line, c.command, _drop_trailing_blanks(c.expected or ()))
        for c in commands
    ]


def _drop_trailing_blanks(lines: tuple[str, ...]) -> tuple[str, ...]:
    end = len(lines)
    while end and not lines[end - 1]:
        end -= 1
    return lines[:end]


def skip_reason(command: str) -> str | None:
    """Why ``command`` is not run, or None when it is."""
    for prefix, reason in SKIPPED_COMMANDS.items():
        if command == prefix or command.startswith(prefix + " "):
            return reason
    return None


def output_matches(expected: tuple[str, ...], actual: str) -> bool:
    """``actual`` (trailing spaces and blank lines aside) is ``expected``,
    ``...`` matching any text in a line and a ``...`` line any lines."""
    pattern = ""
    for line in expected:
        if line.strip() == _WILDCARD:
            pattern += r"(?:[^\n]*\n)*?"
        else:
            parts = (re.escape(part) for part in line.split(_WILDCARD))
            pattern += "[^\n]*?".join(parts) + r"\n"
    lines = _drop_trailing_blanks(tuple(line.rstrip() for line in actual.splitlines()))
    text = "".join(line + "\n" for line in lines)
    return re.fullmatch(pattern, text) is not None


def _shell_environment() -> dict[str, str]:
    """This checkout's ember and this Python's tools first; plain diagnostics."""
    env = dict(os.environ)
    scripts = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join([scripts, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
    )
    env["NO_COLOR"] = "1"
    env["LC_ALL"] = "C.UTF-8"
    return env


def prepare_shell_directory(directory: Path) -> None:
    """A copy of ``examples/`` and every named file of the docs."""
    shutil.copytree(REPO_ROOT / "examples", directory / "examples")
    for name, block in NAMED_FILES.items():
        (directory / name).write_text(block.text, encoding="utf-8")


def run_shell_example(block: CodeBlock, directory: Path) -> None:
    """Run every command of an ``sh`` block in ``directory``, in order."""
    where = block.shown_path
    for command in shell_commands(block):
        if skip_reason(command.command) is not None:
            continue
        done = subprocess.run(
            ["bash", "-c", command.command],
            cwd=directory,
            env=_shell_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        shown = f"$ {command.command}\n{done.stdout}"
        if done.returncode != command.expected_status:
            pytest.fail(
                f"{where}:{command.line}: exit status {done.returncode}, "
                f"expected {command.expected_status}:\n{shown}",
                pytrace=False,
            )
        if command.expected is not None and not output_matches(
            command.expected, done.stdout
        ):
            wanted = "\n".join(command.expected)
            pytest.fail(
                f"{where}:{command.line}: the output is not the one shown.\n"
                f"shown:\n{wanted}\nprinted:\n{shown}",
                pytrace=False,
            )


@pytest.mark.parametrize("block", _blocks_of("sh"))
def test_shell_example_runs(block: CodeBlock, tmp_path: Path) -> None:
    prepare_shell_directory(tmp_path)
    run_shell_example(block, tmp_path)


# --------------------------------------------------------------------------
# Files and sections the docs refer to exist
# --------------------------------------------------------------------------

_PATH_EXTENSIONS = (".py", ".md", ".mlir", ".toml", ".cfg", ".json")
# `ember/runtime/blas.py`, `tests/filecheck/`, `ANCHORS.md`: inline code that
# names a file or folder of the repository.
_CODE_PATH = re.compile(r"`([\w.-]+(?:/[\w.*-]+)+/?|[\w.-]+\.md)`")
# [text](runtime.md#threads), [text](#ops)
_LINK = re.compile(r"\]\((?P<file>[\w./-]*\.md)?(?:#(?P<anchor>[\w-]*))?\)")


def _names_repository_path(text: str) -> bool:
    first = text.split("/", 1)[0]
    return (REPO_ROOT / first).is_dir() or text.endswith(_PATH_EXTENSIONS)


def heading_anchors(path: Path) -> set[str]:
    """The anchors GitHub makes of a Markdown file's headings."""
    anchors: set[str] = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if heading and not in_fence:
            text = re.sub(r"[^\w\- ]", "", heading[1].lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


def broken_references(path: Path) -> list[str]:
    """Paths and links in ``path`` that name nothing in the repository."""
    problems: list[str] = []
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in _CODE_PATH.finditer(line):
            name = match[1]
            if not _names_repository_path(name):
                continue
            if "*" in name:
                found = any(REPO_ROOT.glob(name))
            else:
                found = any((root / name).exists() for root in (REPO_ROOT, path.parent))
            if not found:
                problems.append(f"{shown}:{number}: `{name}` is not in the repository")
        for match in _LINK.finditer(line):
            target = path.parent / match["file"] if match["file"] else path
            if not target.is_file():
                problems.append(f"{shown}:{number}: link to missing {match['file']}")
            elif match["anchor"] and match["anchor"] not in heading_anchors(target):
                problems.append(
                    f"{shown}:{number}: {target.name} has no section #{match['anchor']}"
                )
    return problems


@pytest.mark.parametrize(
    "path", doc_files(), ids=lambda p: str(p.relative_to(REPO_ROOT))
)
def test_docs_refer_to_files_and_sections_that_exist(path: Path) -> None:
    problems = broken_references(path)
    assert not problems, "\n".join(problems)


def test_broken_references_are_found(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# A title\n\nSee `ANCHORS.md`, `ember/nothing.py`, `ember/ir.py`,\n"
        "`gpu.block.x/y/z`, [x](#a-title), [y](#no-such), [z](other.md).\n"
    )
    assert broken_references(doc) == [
        f"{doc}:3: `ANCHORS.md` is not in the repository",
        f"{doc}:3: `ember/nothing.py` is not in the repository",
        f"{doc}:4: doc.md has no section #no-such",
        f"{doc}:4: link to missing other.md",
    ]


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


def test_shell_transcript_is_split_into_commands_and_output() -> None:
    block = CodeBlock(
        Path("sample.md"),
        5,
        "sh",
        "$ echo one\none\n$ ember-opt bad.mlir\nbad.mlir:2:3: error: boom\n\n",
    )
    commands = shell_commands(block)
    assert [(c.line, c.command, c.expected) for c in commands] == [
        (5, "echo one", ("one",)),
        (7, "ember-opt bad.mlir", ("bad.mlir:2:3: error: boom",)),
    ]
    assert [c.expected_status for c in commands] == [0, 1]
    plain = CodeBlock(
        Path("sample.md"), 5, "sh", "# a comment\n\nls examples  # list\n"
    )
    assert [(c.line, c.command, c.expected) for c in shell_commands(plain)] == [
        (7, "ls examples  # list", None)
    ]
    with pytest.raises(MarkdownError, match=r"sample\.md:5: transcript text before"):
        shell_commands(CodeBlock(Path("sample.md"), 5, "sh", "stray\n$ ls\n"))


def test_shell_skip_rules() -> None:
    assert skip_reason("pip install -e .") is not None
    assert skip_reason("pytest tests") is not None
    assert skip_reason("pip installer") is None
    assert skip_reason("ember-run examples/mlp.mlir") is None


def test_shell_output_wildcards() -> None:
    shown = ("input x", "...", "latency: median ... ms", "done")
    assert output_matches(shown, "input x\na\nb\nlatency: median 0.5 ms  \ndone\n\n")
    assert output_matches(shown, "input x\nlatency: median 12 ms\ndone")
    assert not output_matches(shown, "input x\nlatency: median 0.5 s\ndone\n")
    assert not output_matches(shown, "input x\nlatency: median 1 ms\ndone\nmore\n")
    assert not output_matches(("a.b",), "axb\n")  # only ... is special


def test_shell_example_with_wrong_output_or_status_fails(tmp_path: Path) -> None:
    wrong_output = CodeBlock(Path("sample.md"), 3, "sh", "$ echo two\none\n")
    with pytest.raises(pytest.fail.Exception, match=r"sample\.md:3: the output"):
        run_shell_example(wrong_output, tmp_path)
    failing = CodeBlock(Path("sample.md"), 3, "sh", "true\nfalse\n")
    with pytest.raises(pytest.fail.Exception, match=r"sample\.md:4: exit status 1"):
        run_shell_example(failing, tmp_path)
    # A shown error must be a tool's error exit.
    no_error_exit = CodeBlock(
        Path("sample.md"), 3, "sh", "$ echo 'x: error: y'\nx: error: y\n"
    )
    with pytest.raises(pytest.fail.Exception, match="exit status 0, expected 1"):
        run_shell_example(no_error_exit, tmp_path)
