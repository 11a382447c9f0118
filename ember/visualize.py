"""Pictures of a program: Graphviz DOT of the graph, fused groups and pipeline
stages drawn as clusters.

``ember.to_dot(module)`` (also ``module.to_dot()`` on any xDSL module once
ember is imported) returns DOT text; ``ember-translate net.mlir --emit=dot``
prints it, and ``ember.visualize.to_svg(module)`` renders it with Graphviz's
``dot`` when that program is installed.

What is drawn, for every function that is not a kernel or a fused body:

* arguments as ellipses, ops as boxes (the op name, its result type, and the
  callee of ``call_kernel`` / ``call_extern`` / ``func.call``), results as
  a double ellipse; an edge per use, from the value's producer;
* a ``func.call`` of a function outlined by ``fuse-ops`` as a cluster holding
  the group's ops, so the picture shows what became one kernel;
* a ``pipeline.graph`` with one cluster per stage (its function's ops inside,
  labelled with target and device) and the values crossing stages as edges.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue

from ember.dialects.graph import type_str
from ember.dialects.kernel import is_kernel
from ember.errors import EmberError

__all__ = ["to_dot", "to_svg"]

_FUSED_ATTR = "graph.fused"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Dot:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.depth = 1

    def node(self, label: str, **attrs: str) -> str:
        self.count += 1
        name = f"n{self.count}"
        extra = "".join(f", {k}={_quote(v)}" for k, v in attrs.items())
        self.emit(f"{name} [label={_quote(label)}{extra}];")
        return name

    def edge(self, source: str, target: str, label: str | None = None) -> None:
        suffix = f" [label={_quote(label)}]" if label else ""
        self.emit(f"{source} -> {target}{suffix};")

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def cluster(self, label: str, style: str) -> _Cluster:
        self.count += 1
        return _Cluster(self, f"cluster_{self.count}", label, style)


class _Cluster:
    def __init__(self, dot: _Dot, name: str, label: str, style: str) -> None:
        self.dot, self.name, self.label, self.style = dot, name, label, style

    def __enter__(self) -> None:
        self.dot.emit(f"subgraph {self.name} {{")
        self.dot.depth += 1
        self.dot.emit(f"label={_quote(self.label)}; {self.style}")

    def __exit__(self, *exc: object) -> None:
        self.dot.depth -= 1
        self.dot.emit("}")


def _op_label(op: Operation) -> str:
    label = op.name
    callee = op.attributes.get("callee") or op.properties.get("callee")
    if callee is not None and hasattr(callee, "root_reference"):
        label += f" @{callee.root_reference.data}"
    function = op.attributes.get("function")
    if function is not None and hasattr(function, "data"):
        label += f' "{function.data}"'
    if op.results:
        label += "\n" + ", ".join(type_str(r.type) for r in op.results)
    return label


def _draw_block(
    dot: _Dot,
    block: Block,
    producers: dict[SSAValue, str],
    functions: Mapping[str, Operation],
) -> list[SSAValue]:
    """Draw ``block``'s ops (arguments already in ``producers``); return the
    values its terminator returns."""
    returned: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, ReturnOp) or op.name == "pipeline.yield":
            returned = list(op.operands)
            continue
        if op.name == "graph.constant":
            continue  # weights clutter the picture; their users show them as inputs
        callee = _callee(op, functions)
        if callee is not None:
            _draw_inlined(dot, op, callee, producers, functions)
            continue
        node = dot.node(_op_label(op), shape="box")
        for operand in op.operands:
            if operand in producers:
                dot.edge(producers[operand], node)
        for result in op.results:
            producers[result] = node
    return returned


def _callee(op: Operation, functions: Mapping[str, Operation]) -> FuncOp | None:
    """The body to draw as a cluster in place of ``op``: a fused function or
    a pipeline stage's function."""
    if isinstance(op, CallOp):
        func = functions.get(op.callee.root_reference.data)
        if isinstance(func, FuncOp) and _FUSED_ATTR in func.attributes:
            return func
    if op.name == "pipeline.stage":
        func = functions.get(op.callee.root_reference.data)  # type: ignore[attr-defined]
        if isinstance(func, FuncOp) and not func.is_declaration:
            return func
    return None


def _draw_inlined(
    dot: _Dot,
    op: Operation,
    func: FuncOp,
    producers: dict[SSAValue, str],
    functions: Mapping[str, Operation],
) -> None:
    name = func.sym_name.data
    if op.name == "pipeline.stage":
        target = op.target.data  # type: ignore[attr-defined]
        device = op.device.data  # type: ignore[attr-defined]
        label, style = f"stage @{name} ({target}, {device})", "style=rounded; color=blue;"
    else:
        label, style = f"fused @{name}", "style=filled; color=lightgrey;"
    inner: dict[SSAValue, str] = {}
    with dot.cluster(label, style):
        for arg, operand in zip(func.body.block.args, op.operands):
            if operand in producers:
                inner[arg] = producers[operand]
        returned = _draw_block(dot, func.body.block, inner, functions)
    for result, value in zip(op.results, returned):
        if value in inner:
            producers[result] = inner[value]


def _draw_callable(dot: _Dot, op: Operation, functions: Mapping[str, Operation]) -> None:
    name = op.sym_name.data  # type: ignore[attr-defined]
    block = op.regions[0].block
    kind = "pipeline " if op.name == "pipeline.graph" else ""
    with dot.cluster(f"{kind}@{name}", "style=dashed;"):
        producers: dict[SSAValue, str] = {}
        for index, arg in enumerate(block.args):
            label = f"%{arg.name_hint or f'arg{index}'}\n{type_str(arg.type)}"
            producers[arg] = dot.node(label, shape="ellipse")
        returned = _draw_block(dot, block, producers, functions)
        for index, value in enumerate(returned):
            out = dot.node(f"result {index}\n{type_str(value.type)}", shape="doubleoctagon")
            if value in producers:
                dot.edge(producers[value], out)


def to_dot(module: ModuleOp, *, name: str = "ember") -> str:
    """DOT text for ``module``'s graph functions and pipelines."""
    if not isinstance(module, ModuleOp):
        raise EmberError(f"to_dot expects a module, got {type(module).__name__}")
    functions = {
        op.sym_name.data: op  # type: ignore[attr-defined]
        for op in module.ops
        if hasattr(op, "sym_name")
    }
    staged = {
        stage.callee.root_reference.data  # type: ignore[attr-defined]
        for op in module.ops
        if op.name == "pipeline.graph"
        for stage in op.regions[0].block.ops
        if stage.name == "pipeline.stage"
    }
    dot = _Dot()
    for op in module.ops:
        if op.name == "pipeline.graph":
            _draw_callable(dot, op, functions)
        elif (
            isinstance(op, FuncOp)
            and not op.is_declaration
            and not is_kernel(op)
            and _FUSED_ATTR not in op.attributes
            and op.sym_name.data not in staged
        ):
            _draw_callable(dot, op, functions)
    body = "\n".join(dot.lines)
    return (
        f"digraph {_quote(name)} {{\n"
        '  node [fontname="monospace", fontsize=10];\n'
        "  compound=true;\n"
        f"{body}\n}}\n"
    )


def to_svg(module: ModuleOp, path: str | None = None) -> str:
    """SVG of :func:`to_dot` through Graphviz's ``dot`` (saved to ``path`` if
    given); an error saying how to install it when it is missing."""
    dot = shutil.which("dot")
    if dot is None:
        raise EmberError(
            "rendering SVG needs Graphviz's 'dot' program (apt-get install graphviz, "
            "or brew install graphviz); ember.to_dot(module) gives the DOT text"
        )
    result = subprocess.run(
        [dot, "-Tsvg"], input=to_dot(module), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise EmberError(f"dot failed: {result.stderr.strip()}")
    if path is not None:
        with open(path, "w", encoding="utf-8") as out:
            out.write(result.stdout)
    return result.stdout
