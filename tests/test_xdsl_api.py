"""ember uses xDSL's public API only.

A private name of xDSL (one starting with a single underscore that an xDSL
class defines: ``Interpreter._impls``, ``_InterpreterFunctionImpls._impl_dict``,
``Interpreter._run_op``) may change in any release.  ember's sources are read
with ``ast`` for attribute accesses of such names, and ember's subclasses of
xDSL classes are checked for overriding one.  A use the code still makes is
a *known exception*, named with the reason; one that no longer occurs fails
too (remove it from the list).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import xdsl

import ember

EMBER = Path(ember.__file__).resolve().parent
XDSL = Path(xdsl.__file__).resolve().parent

KNOWN: dict[tuple[str, str], str] = {}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _names_defined(root: Path) -> set[str]:
    """Private names the classes under ``root`` define: methods, class
    attributes and ``self._x = …`` fields."""
    names: set[str] = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        names.add(item.name)
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        names.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
    return {n for n in names if _is_private(n)}


def _xdsl_private_uses() -> set[tuple[str, str]]:
    """(file, name) for each access of an xDSL private name ember does not
    define itself, and each ember method overriding an xDSL private one."""
    xdsl_private = _names_defined(XDSL)
    ember_own = _names_defined(EMBER)
    uses: set[tuple[str, str]] = set()
    for path in EMBER.rglob("*.py"):
        where = str(path.relative_to(EMBER))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in xdsl_private - ember_own:
                uses.add((where, node.attr))
    for module_info in pkgutil.walk_packages([str(EMBER)], "ember."):
        try:
            module = importlib.import_module(module_info.name)
        except ImportError:  # an optional dependency (CUDA, ray) is missing
            continue
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            xdsl_bases = [b for b in cls.__mro__ if b.__module__.startswith("xdsl.")]
            for name in vars(cls):
                if name in xdsl_private and any(name in vars(b) for b in xdsl_bases):
                    path = Path(inspect.getfile(cls)).resolve().relative_to(EMBER)
                    uses.add((str(path), f"def {name}"))
    return uses


def test_ember_uses_no_private_xdsl_name() -> None:
    uses = _xdsl_private_uses()
    unexpected = sorted(uses - KNOWN.keys())
    assert not unexpected, f"private xDSL names used by ember: {unexpected}"
    gone = sorted(KNOWN.keys() - uses)
    assert not gone, f"known exceptions that no longer occur (remove them): {gone}"


def test_the_former_uses_are_among_those_checked() -> None:
    """The names the interpreter and the parser used to reach for are xDSL
    private names that the check sees."""
    interpreter = {"_impls", "_impl_dict", "_run_op"}
    parser = {
        "_current_token",
        "_resume_from",
        "_register_ssa_definition",
        "_parse_tensor_literal_element",
        "_parse_dense_literal_type",
    }
    former = interpreter | parser
    assert former <= _names_defined(XDSL)
    assert not former & _names_defined(EMBER)
