"""Identical ``llvm.func`` definitions merged into one, before LLVM sees them.

LLVM's ``mergefunc`` at the llvm-dialect level: kernels that differ only in
their name, and the loop bodies and thread trampolines the lowering outlines
from them (ResNet-18 pads six tensors of three shapes with the same
``__parallel0_body``), are translated, optimised and compiled once.  O3
and code generation cost grows with the code they are given, and one
definition instead of several is the same machine code for every caller:
the one that stays is untouched, its duplicates' callers call it instead.

Two definitions are identical when every property but the name and every
op of the body are (:meth:`~xdsl.ir.Operation.is_structurally_equivalent`:
same ops, attributes, types and use-def structure).  Merging callees makes
their callers identical, so this repeats until nothing changes.  Symbols in
``keep`` (what the runtime looks up by name: the program's entry points)
are never merged away.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Attribute, Operation

__all__ = ["merge_identical_functions", "rename_symbols"]


def merge_identical_functions(
    module: ModuleOp, keep: Collection[str] = ()
) -> dict[str, str]:
    """Erase every ``llvm.func`` definition of ``module`` identical to an
    earlier one and point its uses at that one, in place.

    Returns the merged symbols: erased name → the name that replaced it.
    """
    definitions = [
        op for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks
    ]
    references = {function: _symbol_uses(function) for function in definitions}
    # Uses outside definitions (a global's initializer) follow the renames too.
    elsewhere = [
        use for op in module.ops if op not in references for use in _symbol_uses(op)
    ]
    originals: dict[Hashable, list[llvm.FuncOp]] = {}
    merged: dict[str, str] = {}
    # Only a definition whose references were renamed can have become
    # identical to another: after the first round, only those are looked at.
    changed = definitions
    while changed:
        renames: dict[str, str] = {}
        for function in changed:
            candidates = originals.setdefault(_fingerprint(function), [])
            name = function.sym_name.data
            original = None
            if name not in keep:
                original = next(
                    (c for c in candidates if c.body.is_structurally_equivalent(function.body)),
                    None,
                )
            if original is None:
                if function not in candidates:
                    candidates.append(function)
                continue
            renames[name] = original.sym_name.data
            module.body.block.erase_op(function)
            del references[function]
        for name, target in merged.items():
            merged[name] = renames.get(target, target)
        merged.update(renames)
        _rename(elsewhere, renames)
        changed = [
            function
            for function, uses in references.items()
            if _rename(uses, renames) and _forget(function, originals)
        ]
    return merged


def _fingerprint(function: llvm.FuncOp) -> Hashable:
    """Equal for identical definitions: the function's properties, its ops'
    names in order and its constants (kernels of other shapes differ in
    them); a match is then checked op by op."""
    ops = list(function.body.walk())
    return (
        tuple(sorted((k, v) for k, v in function.properties.items() if k != "sym_name")),
        tuple(sorted(function.attributes.items())),
        tuple(op.name for op in ops),
        tuple(op.value for op in ops if isinstance(op, llvm.ConstantOp)),
    )


def _forget(function: llvm.FuncOp, originals: dict[Hashable, list[llvm.FuncOp]]) -> bool:
    """Drop ``function`` from the originals (its body is about to change)."""
    for candidates in originals.values():
        if function in candidates:
            candidates.remove(function)
    return True


SymbolUse = tuple[dict[str, Attribute], str]
"""A properties or attributes dict of an op, and the key of a symbol in it."""


def _symbol_uses(root: Operation) -> list[SymbolUse]:
    """Where the ops inside ``root`` refer to a symbol by a flat reference."""
    uses: list[SymbolUse] = []
    for op in root.walk():  # a name (sym_name) is a StringAttr, never a use
        for fields in (op.properties, op.attributes):
            for key, value in fields.items():
                if isinstance(value, SymbolRefAttr) and not value.nested_references.data:
                    uses.append((fields, key))
    return uses


def rename_symbols(root: Operation, renames: dict[str, str]) -> None:
    """Point the flat symbol references inside ``root`` (``root`` too) at
    the new names of ``renames``, in place."""
    if renames:
        _rename(_symbol_uses(root), renames)


def _rename(uses: list[SymbolUse], renames: dict[str, str]) -> bool:
    """Point ``uses`` of renamed symbols at their new names; whether any was."""
    renamed = False
    for fields, key in uses:
        target = renames.get(fields[key].root_reference.data)  # type: ignore[attr-defined]
        if target is not None:
            fields[key] = SymbolRefAttr(target)
            renamed = True
    return renamed
