"""ember script: kernels and whole modules written in Python (TVMScript's role).

Write a kernel as a Python function over buffers, with TensorIR's vocabulary,
and ``@T.kernel`` parses its source (it never runs it) into the ``kernel``
dialect::

    from ember import script as T

    @T.kernel
    def relu0(X: T.Buffer((1, 128), "float32"), Y: T.Buffer((1, 128), "float32")):
        for i, j in T.grid(1, 128):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    print(relu0)        # func.func @relu0(...) attributes {kernel.kernel} {...}

and a module as a class holding kernels and graph functions, where a graph
function calls kernels (``T.call_kernel``, Relax's ``call_tir``), functions
of the packed-function registry (``T.call_extern``, ``call_dps_packed``) and
graph ops (``ember.builder``'s functions), and refers to the class's kernels
as ``cls.name``::

    @T.module
    class MLP:
        relu0 = relu0                       # a kernel defined elsewhere, or
        @T.kernel
        def linear0(...): ...               # one defined here

        @T.function
        def main(x: T.Tensor((1, 784), "float32"), ...):
            lv0 = T.call_kernel(cls.linear0, (x, w0, b0), out=T.Tensor((1, 128), "float32"))
            lv1 = T.call_extern("env.relu", (lv0,), out=T.Tensor((1, 128), "float32"))
            return lv1

``MLP`` is then a verified ``builtin.module`` (xDSL ``ModuleOp``) that
``ember.build``, ``ember.apply_passes`` and ``ember.interpret`` take.

What a kernel body may contain (everything else is an error at its line):

* loops: ``for i in range(n)`` / ``T.serial(n)`` / ``T.parallel(n)`` /
  ``T.vectorized(n)`` / ``T.unroll(n)`` (also ``(start, stop[, step])``), and
  ``for i, j in T.grid(n, m)``;
* ``with T.block("name"):`` whose first statements bind the iteration
  variables — ``vi, vj, vk = T.axis.remap("SSR", [i, j, k])`` or
  ``vi = T.axis.spatial(n, i)`` / ``T.axis.reduce(n, k)`` — then
  ``with T.init():`` (first, for a reduction) and the body;
* ``A = T.alloc_buffer((n, m), "float32")``;
* ``B[i, j] = expr`` (a store), ``B[i, j]`` in expressions (a load),
  ``x = expr`` (a scalar), ``B[i, j] += expr``;
* arithmetic ``+ - * / // % -x``, comparisons, ``and``/``or``, numbers,
  ``T.max/min/exp/sqrt/log/tanh/abs/floor/ceil``,
  ``T.if_then_else(c, a, b)``, ``T.float32(x)``/``T.float16``/``T.float64``/
  ``T.int32``/``T.int64``, ``T.cast(x, dtype)``.

Errors point at the user's source line: :class:`ScriptError` reads
``file.py:12:9: error: …`` with the line and a caret, like every other
ember diagnostic.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, math, memref
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    f16,
    f32,
    f64,
    i1,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ember.dialects.graph import tensor_type
from ember.dialects.kernel import BlockOp, ForOp, InitOp, mark_kernel
from ember.errors import EmberError, IRError
from ember.remarks import file_location

__all__ = [
    "Buffer",
    "Kernel",
    "ScriptError",
    "Tensor",
    "alloc_buffer",
    "axis",
    "block",
    "call_extern",
    "call_kernel",
    "function",
    "grid",
    "init",
    "kernel",
    "module",
    "parallel",
    "prim_func",
    "serial",
    "unroll",
    "vectorized",
]


class ScriptError(IRError):
    """A construct in an ember-script function that cannot become IR; the
    message points at the source line."""


def _located(
    file: str, line: int, column: int, message: str, text: str | None = None
) -> ScriptError:
    """``file:line:col: error: message``, the source line and a caret under
    ``column`` (1-based); ``text`` is the line when linecache cannot read it."""
    if text is None:
        text = linecache.getline(file, line).rstrip("\n")
    return ScriptError(f"{file}:{line}:{column}: error: {message}\n{text}\n{' ' * (column - 1)}^")


# --------------------------------------------------------------------------
# Type annotations and markers (evaluated or recognised, never run)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Buffer:
    """A kernel argument: ``T.Buffer((1, 128), "float32")`` is ``memref<1x128xf32>``."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __init__(self, shape: Sequence[int] | int, dtype: Any = "float32") -> None:
        object.__setattr__(self, "shape", _shape_tuple(shape, "T.Buffer"))
        object.__setattr__(self, "dtype", np.dtype(dtype).name)
        _element_type(self.dtype)  # checked now

    @property
    def type(self) -> MemRefType:
        return MemRefType(_element_type(self.dtype), list(self.shape))


@dataclass(frozen=True)
class Tensor:
    """A graph value: ``T.Tensor((1, 784), "float32")`` is ``tensor<1x784xf32>``
    (graph function arguments, and the ``out=`` of calls)."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __init__(self, shape: Sequence[int] | int, dtype: Any = "float32") -> None:
        object.__setattr__(self, "shape", _shape_tuple(shape, "T.Tensor"))
        object.__setattr__(self, "dtype", np.dtype(dtype).name)

    @property
    def type(self) -> TensorType:
        return tensor_type(self.shape, np.dtype(self.dtype))


def _element_type(dtype: Any) -> Attribute:
    """The scalar type of a numpy dtype or name, for kernel buffers."""
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise IRError(f"unknown dtype {dtype!r}") from None
    if name in _FLOAT_NAMES:
        return _FLOAT_NAMES[name]
    if name in _INT_NAMES:
        return IntegerType(_INT_NAMES[name])
    raise IRError(f"dtype {name} has no kernel type (float16/32/64, int8/16/32/64)")


def _shape_tuple(shape: Sequence[int] | int, what: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in dims):
        raise IRError(f"{what}: a shape is non-negative integers, got {shape!r}")
    return tuple(int(d) for d in dims)


def _marker(name: str) -> Callable[..., Any]:
    def marker(*args: Any, **kwargs: Any) -> Any:
        raise EmberError(
            f"T.{name} is ember-script syntax: it is read by @T.kernel, not called"
        )

    marker.__name__ = name
    return marker


grid = _marker("grid")
serial = _marker("serial")
parallel = _marker("parallel")
vectorized = _marker("vectorized")
unroll = _marker("unroll")
block = _marker("block")
init = _marker("init")
alloc_buffer = _marker("alloc_buffer")


class _Axis:
    remap = staticmethod(_marker("axis.remap"))
    spatial = staticmethod(_marker("axis.spatial"))
    reduce = staticmethod(_marker("axis.reduce"))


axis = _Axis()

_LOOP_KINDS = {
    "range": "serial",
    "serial": "serial",
    "parallel": "parallel",
    "vectorized": "vectorized",
    "unroll": "unrolled",
}

_FLOAT_NAMES = {"float16": f16, "float32": f32, "float64": f64}
_INT_NAMES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------


class Kernel:
    """A kernel made by ``@T.kernel``: ``.func`` is the ``func.func``;
    ``str(k)`` its text; ``k.module()`` a module holding it alone."""

    def __init__(self, func: FuncOp) -> None:
        self.func = func

    @property
    def name(self) -> str:
        return self.func.sym_name.data

    def module(self) -> ModuleOp:
        from ember.ir import verify_module

        result = ModuleOp([self.func.clone()])
        verify_module(result)
        return result

    def __str__(self) -> str:
        from ember.ir import to_text

        return to_text(self.module())

    def __repr__(self) -> str:
        return f"<ember kernel @{self.name}>"


def kernel(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Parse a Python function into a kernel (TVMScript's ``@T.prim_func``)."""
    if fn is None:
        return lambda f: kernel(f, name=name)
    source = _Source.of(fn)
    func = _KernelParser(source, fn, name or fn.__name__).parse()
    return Kernel(func)


prim_func = kernel


@dataclass
class _Source:
    """A function's source: its AST, and where each line is in the file."""

    tree: ast.FunctionDef
    filename: str
    first_line: int
    indent: int
    lines: list[str]

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> _Source:
        if not callable(fn) or not hasattr(fn, "__code__"):
            raise EmberError(f"ember script needs a Python function, got {fn!r}")
        try:
            lines, first_line = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            raise EmberError(
                f"ember script cannot read the source of {fn.__name__} (functions "
                "typed at an interactive prompt have none): write it in a file"
            ) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip())
        tree = ast.parse(dedented)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise EmberError(f"ember script: {fn.__name__} is not a plain function")
        filename = inspect.getsourcefile(fn) or "<unknown>"
        return cls(node, filename, first_line, indent, lines)

    def error(self, node: ast.AST, message: str) -> ScriptError:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.indent
        file_line = self.first_line + line - 1
        text = linecache.getline(self.filename, file_line).rstrip("\n") or (
            self.lines[line - 1].rstrip("\n") if line - 1 < len(self.lines) else ""
        )
        return _located(self.filename, file_line, col + 1, message, text)


class _KernelParser:
    """Walks a function's AST, emitting kernel-dialect ops."""

    def __init__(self, source: _Source, fn: Callable[..., Any], name: str) -> None:
        self.source = source
        self.fn = fn
        self.name = name
        self.env: dict[str, SSAValue] = {}
        self.block: Block | None = None
        # Buffers allocated in each open scope, freed when it ends.
        self.allocations: list[list[SSAValue]] = [[]]

    # ---- entry ------------------------------------------------------------

    def parse(self) -> FuncOp:
        tree = self.source.tree
        if tree.args.vararg or tree.args.kwarg or tree.args.kwonlyargs:
            raise self.source.error(tree, "a kernel takes plain buffer arguments only")
        types_: list[MemRefType] = []
        names: list[str] = []
        for arg in tree.args.args:
            buffer = self._annotation(arg)
            types_.append(buffer.type)
            names.append(arg.arg)
        if tree.returns is not None:
            raise self.source.error(
                tree.returns, "a kernel returns nothing: it writes its output buffers"
            )
        body = Block(arg_types=types_)
        for arg, name in zip(body.args, names):
            arg.name_hint = name
            self.env[name] = arg
        self.block = body
        statements = tree.body
        if statements and _is_docstring(statements[0]):
            statements = statements[1:]
        for statement in statements:
            self._statement(statement)
        self._free_scope()
        body.add_op(ReturnOp())
        func = mark_kernel(FuncOp(self.name, (types_, []), Region(body)))
        try:
            func.verify()
        except VerifyException as error:
            raise self.source.error(tree, str(error)) from None
        return func

    def _annotation(self, arg: ast.arg) -> Buffer:
        if arg.annotation is None:
            raise self.source.error(
                arg, f"argument '{arg.arg}' needs a type: {arg.arg}: T.Buffer((...), \"float32\")"
            )
        value = self._evaluate(arg.annotation)
        if not isinstance(value, Buffer):
            raise self.source.error(
                arg.annotation, f"argument '{arg.arg}' must be a T.Buffer, got {value!r}"
            )
        return value

    def _evaluate(self, node: ast.expr) -> Any:
        """A compile-time Python value (shapes, annotations), in the
        function's globals and closure."""
        scope = dict(self.fn.__globals__)
        if self.fn.__closure__:
            scope.update(
                {
                    n: c.cell_contents
                    for n, c in zip(self.fn.__code__.co_freevars, self.fn.__closure__)
                }
            )
        try:
            return eval(compile(ast.Expression(node), self.source.filename, "eval"), scope)
        except EmberError as error:
            raise self.source.error(node, str(error)) from None
        except Exception as error:  # the user's expression: report it here
            raise self.source.error(node, f"{type(error).__name__}: {error}") from None

    # ---- emission helpers -----------------------------------------------------

    def add(self, op: Operation) -> SSAValue:
        assert self.block is not None
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    @contextmanager
    def inside(self, block: Block) -> Iterator[None]:
        """Emit into ``block``; buffers allocated there are freed at its end
        (TensorIR's ``alloc_buffer`` lives as long as its scope)."""
        outer, self.block = self.block, block
        self.allocations.append([])
        try:
            yield
            self._free_scope()
        finally:
            self.allocations.pop()
            self.block = outer

    def _free_scope(self) -> None:
        for buffer in self.allocations[-1]:
            self.add(memref.DeallocOp.get(buffer))

    def constant(self, value: Any, t: Attribute, node: ast.AST) -> SSAValue:
        if isinstance(t, IndexType):
            return self.add(arith.ConstantOp.from_int_and_width(int(value), t))
        if isinstance(t, IntegerType):
            return self.add(arith.ConstantOp(IntegerAttr(int(value), t)))
        if t in (f16, f32, f64):
            return self.add(arith.ConstantOp(FloatAttr(float(value), t)))
        raise self.source.error(node, f"no constant of type {t}")

    # ---- statements ------------------------------------------------------------

    def _statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.For):
            self._for(node)
        elif isinstance(node, ast.With):
            self._with(node)
        elif isinstance(node, ast.Assign):
            self._assign(node)
        elif isinstance(node, ast.AugAssign):
            self._aug_assign(node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._assign(ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno, col_offset=node.col_offset))
        elif isinstance(node, ast.Pass) or _is_docstring(node):
            pass
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            raise self.source.error(
                node, "a call on its own does nothing in a kernel; store its value"
            )
        else:
            raise self.source.error(
                node, f"ember script does not support {type(node).__name__} statements in a kernel"
            )

    def _loop_spec(self, call: ast.expr) -> tuple[str, list[tuple[int, int, int]]]:
        """(kind, [(lower, upper, step)…]) of ``range``/``T.serial``/``T.grid``…"""
        if not isinstance(call, ast.Call):
            raise self.source.error(
                call, "loop over range(n), T.serial/parallel/vectorized/unroll(n) or T.grid(...)"
            )
        fname = _callee_name(call.func)
        if call.keywords:
            raise self.source.error(call, f"{fname}: keyword arguments are not supported")
        values = [self._static_int(a) for a in call.args]
        if fname == "grid":
            if not values:
                raise self.source.error(call, "T.grid needs at least one extent")
            return "serial", [(0, v, 1) for v in values]
        if fname not in _LOOP_KINDS:
            raise self.source.error(
                call, f"cannot loop over {fname}(...): use range, T.serial, T.parallel, "
                "T.vectorized, T.unroll or T.grid"
            )
        if not 1 <= len(values) <= 3:
            raise self.source.error(call, f"{fname} takes (n), (start, stop) or (start, stop, step)")
        if len(values) == 1:
            values = [0, values[0]]
        lower, upper, step = (*values, 1)[:3]
        if step <= 0 or lower > upper:
            raise self.source.error(call, f"{fname}{tuple(values)}: needs start <= stop and a positive step")
        return _LOOP_KINDS[fname], [(lower, upper, step)]

    def _static_int(self, node: ast.expr) -> int:
        value = self._evaluate(node)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise self.source.error(node, f"a loop bound must be a constant integer, got {value!r}")
        return int(value)

    def _for(self, node: ast.For) -> None:
        if node.orelse:
            raise self.source.error(node, "for ... else is not supported in a kernel")
        kind, ranges = self._loop_spec(node.iter)
        targets = _target_names(node.target)
        if targets is None or len(targets) != len(ranges):
            raise self.source.error(
                node.target, f"this loop binds {len(ranges)} variable(s): name each one"
            )
        saved = dict(self.env)
        try:
            self._nest(node, list(zip(targets, ranges)), kind)
        finally:
            self.env = saved

    def _nest(self, node: ast.For, loops: list[tuple[str, tuple[int, int, int]]], kind: str) -> None:
        """One ``kernel.for`` per loop variable, the body in the innermost."""
        (name, (lower, upper, step)), rest = loops[0], loops[1:]
        loop = ForOp(lower, upper, step, kind)
        self.add(loop)
        loop.induction_var.name_hint = name
        self.env[name] = loop.induction_var
        with self.inside(loop.body.block):
            if rest:
                self._nest(node, rest, kind)
            else:
                for statement in node.body:
                    self._statement(statement)

    def _with(self, node: ast.With) -> None:
        if len(node.items) != 1:
            raise self.source.error(node, "one T.block(...) or T.init() per with")
        item = node.items[0].context_expr
        fname = _callee_name(item.func) if isinstance(item, ast.Call) else None
        if fname == "block":
            self._block(node, item)  # type: ignore[arg-type]
        elif fname == "init":
            if node.items[0].optional_vars is not None:
                raise self.source.error(node, "with T.init(): takes no 'as'")
            op = InitOp()
            self.add(op)
            saved = dict(self.env)
            with self.inside(op.body.block):
                for statement in node.body:
                    self._statement(statement)
            self.env = saved
        else:
            raise self.source.error(item, "a kernel's with statement is T.block(\"name\") or T.init()")

    def _block(self, node: ast.With, call: ast.Call) -> None:
        if len(call.args) != 1 or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
            raise self.source.error(call, 'T.block takes the block\'s name: T.block("Y")')
        block_name = call.args[0].value
        bindings: list[tuple[str, SSAValue, str]] = []
        statements = list(node.body)
        while statements and self._is_axis_binding(statements[0]):
            bindings.extend(self._axis_binding(statements.pop(0)))  # type: ignore[arg-type]
        op = BlockOp(block_name, [b for _, b, _ in bindings], [k for _, _, k in bindings])
        self.add(op)
        saved = dict(self.env)
        for var, (name, _, _) in zip(op.iter_vars, bindings):
            var.name_hint = name
            self.env[name] = var
        with self.inside(op.body.block):
            for statement in statements:
                self._statement(statement)
        self.env = saved
        try:
            op.verify()
        except VerifyException as error:
            raise self.source.error(node, str(error)) from None

    @staticmethod
    def _is_axis_binding(node: ast.stmt) -> bool:
        return (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _callee_name(node.value.func) in ("remap", "spatial", "reduce")
        )

    def _axis_binding(self, node: ast.Assign) -> list[tuple[str, SSAValue, str]]:
        call = node.value
        assert isinstance(call, ast.Call)
        fname = _callee_name(call.func)
        targets = _target_names(node.targets[0]) if len(node.targets) == 1 else None
        if targets is None:
            raise self.source.error(node, "bind block variables to names: vi, vj = T.axis.remap(...)")
        if fname == "remap":
            if len(call.args) != 2 or not isinstance(call.args[0], ast.Constant):
                raise self.source.error(call, 'T.axis.remap("SSR", [i, j, k])')
            kinds = call.args[0].value
            bound = call.args[1]
            if not isinstance(kinds, str) or not isinstance(bound, (ast.List, ast.Tuple)):
                raise self.source.error(call, 'T.axis.remap("SSR", [i, j, k])')
            if len(kinds) != len(bound.elts) or len(targets) != len(kinds):
                raise self.source.error(
                    call, f"T.axis.remap: {len(kinds)} kinds, {len(bound.elts)} loop variables "
                    f"and {len(targets)} names must agree"
                )
            result = []
            for name, letter, expr in zip(targets, kinds, bound.elts):
                if letter not in "SR":
                    raise self.source.error(call, f"T.axis.remap: kind {letter!r} is not S (spatial) or R (reduce)")
                result.append((name, self._index(expr), "spatial" if letter == "S" else "reduce"))
            return result
        if len(targets) != 1 or len(call.args) != 2:
            raise self.source.error(call, f"vi = T.axis.{fname}(extent, loop_variable)")
        self._static_int(call.args[0])
        return [(targets[0], self._index(call.args[1]), fname)]

    def _assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.source.error(node, "one target per assignment")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            buffer, indices = self._subscript(target)
            value = self._expr(node.value, _element(buffer))
            self._store(value, buffer, indices, node)
            return
        if not isinstance(target, ast.Name):
            raise self.source.error(target, "assign to a name or to a buffer element B[i, j]")
        if isinstance(node.value, ast.Call) and _callee_name(node.value.func) == "alloc_buffer":
            self.env[target.id] = self._alloc(node.value, target.id)
            return
        value = self._expr(node.value)
        if value.name_hint is None and not isinstance(value.owner, Block):
            value.name_hint = target.id  # %x for ``x = X[vi, vj]``
        self.env[target.id] = value

    def _aug_assign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Subscript):
            target = ast.Name(id=getattr(node.target, "id", "?"), ctx=ast.Load(), lineno=node.lineno, col_offset=node.col_offset)
            self._assign(ast.Assign(targets=[node.target], value=ast.BinOp(target, node.op, node.value, lineno=node.lineno, col_offset=node.col_offset), lineno=node.lineno, col_offset=node.col_offset))
            return
        load = ast.Subscript(node.target.value, node.target.slice, ast.Load(), lineno=node.lineno, col_offset=node.col_offset)
        value = ast.BinOp(load, node.op, node.value, lineno=node.lineno, col_offset=node.col_offset)
        self._assign(ast.Assign(targets=[node.target], value=value, lineno=node.lineno, col_offset=node.col_offset))

    def _alloc(self, call: ast.Call, name: str) -> SSAValue:
        args = [self._evaluate(a) for a in call.args]
        kwargs = {k.arg: self._evaluate(k.value) for k in call.keywords}
        try:
            spec = Buffer(*args, **kwargs)
        except (TypeError, EmberError) as error:
            raise self.source.error(call, f"T.alloc_buffer(shape, dtype): {error}") from None
        value = self.add(memref.AllocOp.get(spec.type.element_type, shape=list(spec.shape)))
        value.name_hint = name
        self.allocations[-1].append(value)
        return value

    def _store(self, value: SSAValue, buffer: SSAValue, indices: list[SSAValue], node: ast.AST) -> None:
        element = _element(buffer)
        if value.type != element:
            raise self.source.error(
                node, f"stores a {value.type} into a buffer of {element}: convert with T.cast(x, dtype)"
            )
        self.add(memref.StoreOp.get(value, buffer, indices))

    def _subscript(self, node: ast.Subscript) -> tuple[SSAValue, list[SSAValue]]:
        if not isinstance(node.value, ast.Name):
            raise self.source.error(node.value, "index a buffer argument or an allocated buffer by name")
        if node.value.id not in self.env:
            raise self.source.error(node.value, f"unknown name '{node.value.id}' in a kernel")
        buffer = self.env[node.value.id]
        if not isinstance(buffer.type, MemRefType):
            raise self.source.error(node.value, f"'{node.value.id}' is a scalar, not a buffer")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        rank = len(buffer.type.get_shape())
        if len(items) != rank:
            raise self.source.error(
                node, f"'{node.value.id}' has {rank} dimension(s) but is indexed with {len(items)}"
            )
        return buffer, [self._index(item) for item in items]

    # ---- expressions --------------------------------------------------------------

    def _index(self, node: ast.expr) -> SSAValue:
        value = self._expr(node, IndexType())
        if not isinstance(value.type, IndexType):
            raise self.source.error(node, f"an index must be an integer expression, got {value.type}")
        return value

    def _expr(self, node: ast.expr, expected: Attribute | None = None) -> SSAValue:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            t = expected or (IndexType() if isinstance(node.value, int) else f32)
            if isinstance(node.value, float) and not _is_float(t):
                raise self.source.error(node, f"the float {node.value} where {t} is expected")
            return self.constant(node.value, t, node)
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                raise self.source.error(node, f"unknown name '{node.id}' in a kernel")
            value = self.env[node.id]
            if isinstance(value.type, MemRefType):
                raise self.source.error(node, f"buffer '{node.id}' used as a value: index it, {node.id}[...]")
            return value
        if isinstance(node, ast.Subscript):
            buffer, indices = self._subscript(node)
            return self.add(memref.LoadOp.get(buffer, indices))
        if isinstance(node, ast.UnaryOp):
            return self._unary(node, expected)
        if isinstance(node, ast.BinOp):
            return self._binary(node, expected)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            values = [self._expr(v, i1) for v in node.values]
            op_type = arith.AndIOp if isinstance(node.op, ast.And) else arith.OrIOp
            result = values[0]
            for value in values[1:]:
                result = self.add(op_type(result, value))
            return result
        if isinstance(node, ast.Call):
            return self._call(node, expected)
        raise self.source.error(node, f"ember script does not support {type(node).__name__} expressions in a kernel")

    def _operands(self, left: ast.expr, right: ast.expr, expected: Attribute | None) -> tuple[SSAValue, SSAValue]:
        """Both sides, a number taking the other side's type; an ``index``
        (a loop or block variable) meeting an integer becomes that integer."""
        if _is_number(left) and not _is_number(right):
            b = self._expr(right, expected)
            a = self._expr(left, b.type)
        else:
            a = self._expr(left, expected)
            b = self._expr(right, a.type)
        if isinstance(a.type, IndexType) and isinstance(b.type, IntegerType):
            a = self.add(arith.IndexCastOp(a, b.type))
        elif isinstance(b.type, IndexType) and isinstance(a.type, IntegerType):
            b = self.add(arith.IndexCastOp(b, a.type))
        return a, b

    def _binary(self, node: ast.BinOp, expected: Attribute | None) -> SSAValue:
        a, b = self._operands(node.left, node.right, expected)
        if a.type != b.type:
            raise self.source.error(node, f"operands of {type(node.op).__name__} are {a.type} and {b.type}: convert with T.cast")
        float_ops = {ast.Add: arith.AddfOp, ast.Sub: arith.SubfOp, ast.Mult: arith.MulfOp, ast.Div: arith.DivfOp}
        int_ops = {ast.Add: arith.AddiOp, ast.Sub: arith.SubiOp, ast.Mult: arith.MuliOp, ast.FloorDiv: arith.FloorDivSIOp, ast.Mod: arith.RemSIOp}
        table = float_ops if _is_float(a.type) else int_ops
        op_type = table.get(type(node.op))
        if op_type is None:
            raise self.source.error(node, f"{type(node.op).__name__} is not supported on {a.type}")
        return self.add(op_type(a, b))

    def _unary(self, node: ast.UnaryOp, expected: Attribute | None) -> SSAValue:
        if isinstance(node.op, ast.USub):
            if _is_number(node.operand):
                value = -node.operand.value  # type: ignore[attr-defined]
                return self._expr(ast.Constant(value, lineno=node.lineno, col_offset=node.col_offset), expected)
            x = self._expr(node.operand, expected)
            if _is_float(x.type):
                return self.add(arith.NegfOp(x))
            return self.add(arith.SubiOp(self.constant(0, x.type, node), x))
        if isinstance(node.op, ast.UAdd):
            return self._expr(node.operand, expected)
        if isinstance(node.op, ast.Not):
            x = self._expr(node.operand, i1)
            return self.add(arith.XOrIOp(x, self.constant(1, i1, node)))
        raise self.source.error(node, f"{type(node.op).__name__} is not supported")

    def _compare(self, node: ast.Compare) -> SSAValue:
        if len(node.ops) != 1:
            raise self.source.error(node, "one comparison at a time (a < b < c: write (a < b) and (b < c))")
        a, b = self._operands(node.left, node.comparators[0], None)
        op = type(node.ops[0])
        if _is_float(a.type):
            names = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq", ast.NotEq: "une"}
            if op not in names:
                raise self.source.error(node, f"{op.__name__} is not supported")
            return self.add(arith.CmpfOp(a, b, names[op]))
        names = {ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge", ast.Eq: "eq", ast.NotEq: "ne"}
        if op not in names:
            raise self.source.error(node, f"{op.__name__} is not supported")
        return self.add(arith.CmpiOp(a, b, names[op]))

    def _call(self, node: ast.Call, expected: Attribute | None) -> SSAValue:
        fname = _callee_name(node.func)
        if node.keywords:
            raise self.source.error(node, f"T.{fname}: keyword arguments are not supported here")
        if fname in _FLOAT_NAMES or fname in _INT_NAMES:
            t = _FLOAT_NAMES.get(fname) or IntegerType(_INT_NAMES[fname])
            (arg,) = self._args(node, 1)
            if _is_number(arg):
                return self._expr(arg, t)
            return self._convert(self._expr(arg), t, node)
        if fname == "cast":
            if len(node.args) != 2:
                raise self.source.error(node, "T.cast(value, dtype)")
            dtype = self._evaluate(node.args[1])
            try:
                t = IndexType() if dtype == "index" else _element_type(dtype)
            except IRError as error:
                raise self.source.error(node, str(error)) from None
            return self._convert(self._expr(node.args[0]), t, node)
        if fname in ("max", "min"):
            a, b = self._operands(*self._args(node, 2), expected)
            if a.type != b.type:
                raise self.source.error(node, f"T.{fname} of {a.type} and {b.type}")
            if _is_float(a.type):
                op_type = arith.MaximumfOp if fname == "max" else arith.MinimumfOp
            else:
                op_type = arith.MaxSIOp if fname == "max" else arith.MinSIOp
            return self.add(op_type(a, b))
        unary = {"exp": math.ExpOp, "sqrt": math.SqrtOp, "log": math.LogOp, "tanh": math.TanhOp,
                 "abs": math.AbsFOp, "floor": math.FloorOp, "ceil": math.CeilOp}
        if fname in unary:
            (arg,) = self._args(node, 1)
            x = self._expr(arg, expected if expected is not None and _is_float(expected) else f32)
            if not _is_float(x.type):
                raise self.source.error(node, f"T.{fname} takes a float, got {x.type}")
            return self.add(unary[fname](x))
        if fname == "if_then_else":
            cond, then, other = self._args(node, 3)
            c = self._expr(cond, i1)
            a, b = self._operands(then, other, expected)
            return self.add(arith.SelectOp(c, a, b))
        raise self.source.error(node, f"unknown function {fname}(...) in a kernel")

    def _args(self, node: ast.Call, count: int) -> list[ast.expr]:
        if len(node.args) != count:
            raise self.source.error(node, f"T.{_callee_name(node.func)} takes {count} argument(s)")
        return list(node.args)

    def _convert(self, x: SSAValue, t: Attribute, node: ast.AST) -> SSAValue:
        s = x.type
        if s == t:
            return x
        if _is_float(s) and _is_float(t):
            width = {f16: 16, f32: 32, f64: 64}
            op = arith.ExtFOp(x, t) if width[s] < width[t] else arith.TruncFOp(x, t)
            return self.add(op)
        if isinstance(s, IndexType) and isinstance(t, IntegerType):
            return self.add(arith.IndexCastOp(x, t))
        if isinstance(s, IntegerType) and isinstance(t, IndexType):
            return self.add(arith.IndexCastOp(x, t))
        if isinstance(s, (IntegerType, IndexType)) and _is_float(t):
            if isinstance(s, IndexType):
                x = self.add(arith.IndexCastOp(x, IntegerType(64)))
            return self.add(arith.SIToFPOp(x, t))
        if _is_float(s) and isinstance(t, IntegerType):
            return self.add(arith.FPToSIOp(x, t))
        if isinstance(s, IntegerType) and isinstance(t, IntegerType):
            op = arith.ExtSIOp(x, t) if s.width.data < t.width.data else arith.TruncIOp(x, t)
            return self.add(op)
        raise self.source.error(node, f"cannot convert {s} to {t}")


def _is_float(t: Attribute) -> bool:
    return t in (f16, f32, f64)


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_number(node.operand)
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _element(buffer: SSAValue) -> Attribute:
    assert isinstance(buffer.type, MemRefType)
    return buffer.type.element_type


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _callee_name(func: ast.expr) -> str:
    """``T.grid`` → ``grid``; ``range`` → ``range``; ``T.axis.remap`` → ``remap``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return "?"


def _target_names(target: ast.expr) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]  # type: ignore[attr-defined]
    return None


# --------------------------------------------------------------------------
# Graph functions and modules
# --------------------------------------------------------------------------


class GraphFunction:
    """A graph function made by ``@T.function``: traced with
    :mod:`ember.builder` expressions when its module is built."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or fn.__name__

    def trace(self, namespace: Mapping[str, Any]) -> FuncOp:
        """Call the Python function on builder vars, ``cls`` bound to
        ``namespace`` (the module's kernels), and build its ``func.func``."""
        from ember.frontends import builder

        signature = inspect.signature(self.fn)
        params = []
        for param in signature.parameters.values():
            annotation = param.annotation
            if isinstance(annotation, str):
                annotation = eval(annotation, self.fn.__globals__)  # noqa: S307 - the user's own annotation
            if not isinstance(annotation, Tensor):
                raise _traced_error(
                    self.fn, f"argument '{param.name}' of @{self.name} needs a type: "
                    f"{param.name}: T.Tensor((...), \"float32\")"
                )
            params.append(builder.var(param.name, annotation.shape, annotation.dtype))
        scope = dict(self.fn.__globals__)
        scope["cls"] = types.SimpleNamespace(**namespace)
        traced = types.FunctionType(
            self.fn.__code__, scope, self.fn.__name__, self.fn.__defaults__, self.fn.__closure__
        )
        try:
            with builder.recording_locations(self.fn.__code__):
                outputs, names = _call_keeping_locals(traced, params)
            for name, value in names.items():
                if isinstance(value, builder.Expr) and not isinstance(value, builder.Var):
                    value.name = value.name or name  # %lv0 for ``lv0 = ...``
            func = builder.function(outputs, params, name=self.name)
        except ScriptError:
            raise
        except EmberError as error:
            raise _traced_error(self.fn, str(error)) from None
        code = self.fn.__code__
        func.location = file_location(code.co_filename, code.co_firstlineno, 1)
        return func


def _call_keeping_locals(
    fn: Callable[..., Any], args: Sequence[Any]
) -> tuple[Any, dict[str, Any]]:
    """``fn(*args)`` and its local variables at return (for value names)."""
    import sys

    captured: dict[str, Any] = {}

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is fn.__code__:
            captured.update(frame.f_locals)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(previous)
    return result, captured


def function(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Mark a graph function of a ``@T.module`` class (Relax's ``@R.function``)."""
    if fn is None:
        return lambda f: function(f, name=name)
    return GraphFunction(fn, name)


def _traced_error(fn: Callable[..., Any], message: str) -> ScriptError:
    """``message`` at the line of ``fn`` that was running (the innermost frame
    of ``fn``'s code in the current exception), or at its definition."""
    import sys

    line = fn.__code__.co_firstlineno
    tb = sys.exc_info()[2]
    while tb is not None:
        if tb.tb_frame.f_code is fn.__code__:
            line = tb.tb_lineno
        tb = tb.tb_next
    filename = fn.__code__.co_filename
    text = linecache.getline(filename, line).rstrip("\n")
    return _located(filename, line, len(text) - len(text.lstrip()) + 1, message, text)


def call_kernel(kernel: Any, args: Sequence[Any], out: Tensor | Sequence[Tensor]) -> Any:
    """``R.call_tir``: call a kernel (``cls.k``, a :class:`Kernel` or a name)
    on graph values; ``out`` gives the result's ``T.Tensor``."""
    from ember.frontends import builder

    name = kernel.name if isinstance(kernel, Kernel) else kernel
    return builder.call_kernel(name, args, out)


def call_extern(name: str, args: Sequence[Any], out: Tensor | Sequence[Tensor]) -> Any:
    """``R.call_dps_packed``: call a registered packed function by name."""
    from ember.frontends import builder

    return builder.call_extern(name, args, out)


def module(cls: type) -> ModuleOp:
    """A verified module from a class of kernels and graph functions
    (TVMScript's ``@I.ir_module``)."""
    from ember.ir import verify_module

    if not isinstance(cls, type):
        raise EmberError(f"@T.module decorates a class, got {cls!r}")
    kernels: dict[str, Kernel] = {}
    functions: list[GraphFunction] = []
    for attr, value in vars(cls).items():
        if isinstance(value, Kernel):
            kernels[attr] = value
        elif isinstance(value, GraphFunction):
            functions.append(value)
    if not kernels and not functions:
        raise EmberError(f"@T.module class {cls.__name__} holds no @T.kernel or @T.function")
    ops: list[FuncOp] = []
    for attr, k in kernels.items():
        func = k.func.clone()
        func.sym_name = type(func.sym_name)(attr) if attr != k.name else func.sym_name
        ops.append(func)
    namespace = {attr: Kernel(op) for attr, op in zip(kernels, ops)}
    for f in functions:
        ops.append(f.trace(namespace))
    names = [op.sym_name.data for op in ops]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EmberError(f"@T.module {cls.__name__}: two functions are named @{duplicates[0]}")
    result = ModuleOp(ops)
    _verify_at_source(result)
    verify_module(result)
    return result


ir_module = module


def _verify_at_source(module: ModuleOp) -> None:
    """Verify each op of the traced graph functions; a failure is reported
    at the Python line that built the op."""
    from xdsl.dialects.builtin import FileLineColLoc

    for op in module.walk():
        if not isinstance(op.location, FileLineColLoc):
            continue
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as error:
            loc = op.location
            message = str(error).removeprefix("Operation does not verify: ")
            raise _located(
                loc.filename.data, loc.line.data, loc.column.data, message
            ) from None
