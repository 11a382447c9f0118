"""The import rules of docs/architecture.md, checked on ember's sources.

Every module's imports are read with ``ast`` — module-level and inside
functions, absolute and relative, and lazy ``"ember.x:Name"`` specs (what
``register_backend`` and ``register_functions`` import on first use).
Imports under ``if TYPE_CHECKING:`` are types only and create no
dependency at run time; they are not counted.

A rule the code does not meet yet is a *known exception*, named edge by
edge with the reason; any other forbidden edge fails, and so does a known
exception that no longer occurs (remove it from the list: the rule holds).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import ember

ROOT = Path(ember.__file__).resolve().parent
LAZY_SPEC = re.compile(r"^(ember(?:\.\w+)+):\w+$")


@dataclass(frozen=True)
class Rule:
    name: str
    importers: tuple[str, ...]
    """Module prefixes the rule applies to (``ember.runtime`` covers its submodules)."""
    forbidden: tuple[str, ...]
    """Module prefixes they must not import."""
    allowed: tuple[str, ...] = ()
    """Prefixes of ``forbidden`` that stay allowed (``ember.errors``)."""
    exempt: tuple[str, ...] = ()
    """Importers the rule does not apply to, by design."""


RULES = (
    Rule(
        "the runtime is a leaf: it loads and runs artifacts, it compiles nothing",
        ("ember.runtime",),
        (
            "ember.passes",
            "ember.lowering",
            "ember.compiler",
            "ember.backends",
            "ember.build",
            "ember.driver",
            "ember.frontends",
            "ember.pipeline",
            "ember.tools",
        ),
    ),
    Rule(
        "passes never import the lowering to LLVM, a backend or the driver "
        "(but the conversion pass lower-kernel-to-llvm, which wraps that lowering)",
        ("ember.passes",),
        (
            "ember.lowering.kernel_to_llvm",
            "ember.lowering.program_to_llvm",
            "ember.backends",
            "ember.compiler",
            "ember.build",
            "ember.driver",
            "ember.runtime.jit",
            "ember.runtime.cpu",
        ),
        exempt=("ember.passes.lower_kernel_to_llvm",),
    ),
    Rule(
        "transformation passes do not ask a lowering (fusion reads op traits); "
        "only the conversion passes lower-* wrap theirs",
        (
            "ember.passes.canonicalization",
            "ember.passes.cse",
            "ember.passes.dce",
            "ember.passes.fold_constants",
            "ember.passes.fuse_ops",
            "ember.passes.partition_extern",
            "ember.passes.plan_memory",
            "ember.passes.simplify_inference",
            "ember.passes.split_graph",
            "ember.passes.bind_params",
            "ember.passes.cost",
            "ember.passes.pipeline",
        ),
        ("ember.lowering",),
    ),
    Rule(
        "dialects import no passes, lowering, interpreter, runtime or backend",
        ("ember.dialects",),
        (
            "ember.passes",
            "ember.lowering",
            "ember.interp",
            "ember.runtime",
            "ember.backends",
            "ember.compiler",
            "ember.build",
            "ember.driver",
            "ember.frontends",
            "ember.pipeline",
        ),
    ),
    Rule(
        "lowering produces IR: it does not reach the runtime, a backend or the driver",
        ("ember.lowering",),
        (
            "ember.runtime",
            "ember.backends",
            "ember.compiler",
            "ember.build",
            "ember.driver",
            "ember.frontends",
            "ember.pipeline",
            "ember.tools",
        ),
    ),
    Rule(
        "the interpreter runs IR: it compiles nothing",
        ("ember.interp",),
        (
            "ember.passes",
            "ember.lowering",
            "ember.backends",
            "ember.compiler",
            "ember.build",
            "ember.driver",
        ),
    ),
    Rule(
        "the base modules import nothing of ember's but the errors",
        ("ember.abi", "ember.errors", "ember.limits", "ember.target"),
        ("ember",),
        allowed=("ember.errors",),
    ),
    Rule(
        "only the tools import the tools",
        tuple(
            f"ember.{p.stem if p.is_file() else p.name}"
            for p in ROOT.iterdir()
            if p.name not in ("tools", "__init__.py", "__pycache__")
            and (p.suffix == ".py" or (p / "__init__.py").exists())
        ),
        ("ember.tools",),
    ),
)

KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("ember.runtime.jit", "ember.backends.cpu"): (
        "compat aliases: compile_llvm, compile_kernels, translate and optimize "
        "moved to ember.backends.cpu and still resolve in ember.runtime.jit"
    ),
    ("ember.runtime.cpu", "ember.backends.cpu"): (
        "compat aliases: LLVMModule.compile and RELEASE_BYTES moved to "
        "ember.backends.cpu (CpuBackend) and still resolve"
    ),
    ("ember.dialects.graph", "ember.passes.canonicalization"): (
        "graph ops find their canonicalization patterns there; target: the "
        "patterns are declared with the ops (docs/architecture.md)"
    ),
}
"""Forbidden edges the code still has: (importer, imported) → why."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """The ember modules ``module`` imports (see the module docstring).

    ``from X import name`` counts as importing ``X.name`` where that is a
    module of ember's, ``X`` otherwise."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if _is_module(candidate) else base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = LAZY_SPEC.match(node.value)
            if match:
                found.add(match.group(1))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if name == "ember" or name.startswith("ember.")}


def _is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(edges: dict[str, set[str]]) -> dict[tuple[str, str], str]:
    """Forbidden (importer, imported) edges, each with the rule it breaks."""
    found: dict[tuple[str, str], str] = {}
    for importer, imported in edges.items():
        for rule in RULES:
            if not any(_under(importer, p) for p in rule.importers) or importer in rule.exempt:
                continue
            for name in imported:
                if any(_under(name, p) for p in rule.importers):
                    continue  # within the layer
                if any(_under(name, p) for p in rule.forbidden) and not any(
                    _under(name, p) for p in rule.allowed
                ):
                    found.setdefault((importer, name), rule.name)
    return found


def ember_edges() -> dict[str, set[str]]:
    return {
        module_name(path): imports_of(
            path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"
        )
        for path in sorted(ROOT.rglob("*.py"))
    }


@pytest.fixture(scope="module")
def edges() -> dict[str, set[str]]:
    return ember_edges()


def test_no_forbidden_import(edges: dict[str, set[str]]) -> None:
    new = {
        edge: rule for edge, rule in violations(edges).items() if edge not in KNOWN_EXCEPTIONS
    }
    assert not new, "forbidden imports (docs/architecture.md):\n" + "\n".join(
        f"  {a} imports {b}: {rule}" for (a, b), rule in sorted(new.items())
    )


def test_every_known_exception_still_occurs(edges: dict[str, set[str]]) -> None:
    """An exception the code no longer needs is removed from the list, so
    that the rule guards that edge again."""
    found = violations(edges)
    stale = [edge for edge in KNOWN_EXCEPTIONS if edge not in found]
    assert not stale, f"these edges are gone; delete them from KNOWN_EXCEPTIONS: {stale}"


def test_the_reader_sees_lazy_relative_and_spec_imports() -> None:
    """What a runtime module could hide a compiler import in is still seen."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ember.compiler import CompileOptions\n"
        "def compile_now():\n"
        "    from ..lowering import kernel_to_llvm\n"
        "    import ember.passes.fuse_ops\n"
        "BACKENDS = {'llvm': 'ember.backends.cpu:CpuBackend'}\n"
    )
    imported = imports_of(source, "ember.runtime.example")
    assert imported == {
        "ember.lowering.kernel_to_llvm",
        "ember.passes.fuse_ops",
        "ember.backends.cpu",
    }
    broken = violations({"ember.runtime.example": imported})
    assert set(broken) == {("ember.runtime.example", name) for name in imported}


def test_the_base_modules_may_import_the_errors_only() -> None:
    assert violations({"ember.abi": {"ember.errors"}}) == {}
    assert ("ember.abi", "ember.runtime.cpu") in violations({"ember.abi": {"ember.runtime.cpu"}})


def test_every_rule_applies_to_modules_that_exist(edges: dict[str, set[str]]) -> None:
    """A rule whose importers were all renamed away would check nothing."""
    for rule in RULES:
        assert any(
            any(_under(module, p) for p in rule.importers) for module in edges
        ), rule.name
