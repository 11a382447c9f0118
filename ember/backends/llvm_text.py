"""llvm-dialect modules printed as LLVM IR text, directly.

xDSL's translator (``xdsl.backend.llvm.convert``) builds an llvmlite IR
module, object by object, and prints it: for ResNet-18's 11 000 llvm ops
that is 0.41 s of a cold build.  The ops ember's lowerings make are few,
and each is one line of LLVM IR, so :func:`module_text` prints them as
text in one walk (0.12 s), with the meaning xDSL's translator gives them
(LLVM makes the same object of both texts):

* ``llvm.mlir.constant`` and ``llvm.mlir.addressof`` are operands written
  inline (LLVM IR has no instruction for them); a block's arguments are
  ``phi`` nodes fed by the branches to it;
* an indirect ``llvm.call`` (no callee: its first operand is the function's
  address, as a parallel loop's thread entry point calls its body) calls
  through that address, which xDSL's translator does not translate;
* constant GEP indices are ``i32``, floats are written as LLVM's exact hex
  doubles, intrinsic ops (``llvm.intr.exp``…) call the intrinsic mangled
  for their type (``@llvm.exp.f32``), declared once;
* a function's ``passthrough`` entries are its attributes, as MLIR reads
  them: a bare name LLVM knows (``"optsize"``) is that attribute, any other
  entry a string attribute (``"prefer-vector-width"="512"``);
* a branch carrying ``ember.unroll = "full"`` (the latch of a kernel
  loop of kind ``unrolled``) is the latch of a loop LLVM unrolls fully:
  ``br …, !llvm.loop !N``, ``!N`` a distinct node holding
  ``!{!"llvm.loop.unroll.full"}``, numbered across the printer's symbols
  (xDSL's translator drops the attribute);
* functions are external whatever their ``linkage`` says (xDSL's
  ``llvm.func`` is ``internal`` unless told otherwise, and its translator
  ignores linkage: a function built without one must still be found);
  globals keep theirs.

Any op or property outside that subset (vector constants, atomics, operand
bundles, inline assembly…) raises :class:`Unsupported`, and
:func:`ember.backends.cpu.translate` falls back to xDSL's translator for the
whole module: the fast path never changes what a module means.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ember.lowering.kernel_to_llvm import UNROLL_ATTRIBUTE

__all__ = [
    "Printer",
    "Symbol",
    "Unsupported",
    "assemble",
    "global_name",
    "globals_first",
    "module_text",
    "passthrough_entries",
]

_LOOP_NODE = re.compile(r"!llvm\.loop !\d+")

KNOWN_FUNCTION_ATTRIBUTES = frozenset(
    "alwaysinline builtin cold convergent hot inlinehint jumptable minsize naked "
    "nobuiltin noduplicate noimplicitfloat noinline nonlazybind norecurse noredzone "
    "noreturn nounwind optnone optsize returns_twice sanitize_address sanitize_memory "
    "sanitize_thread ssp sspreq sspstrong uwtable willreturn".split()
)
"""Enum attributes a bare ``passthrough`` name may be; any other name is a
string attribute (``"key"``)."""

_ARG_FLAGS = {
    "llvm.inreg": "inreg",
    "llvm.nest": "nest",
    "llvm.noalias": "noalias",
    "llvm.nocapture": "captures(none)",
    "llvm.nofree": "nofree",
    "llvm.nonnull": "nonnull",
    "llvm.noundef": "noundef",
    "llvm.returned": "returned",
    "llvm.signext": "signext",
    "llvm.zeroext": "zeroext",
}
_ARG_INTS = {
    "llvm.align": "align",
    "llvm.dereferenceable": "dereferenceable",
    "llvm.dereferenceable_or_null": "dereferenceable_or_null",
}
"""Argument attributes, as xDSL's translator writes them."""

_FAST_MATH_ORDER = [flag for flag in llvm.FastMathFlag]


class Unsupported(Exception):
    """An op or attribute :func:`module_text` does not print."""


@dataclass(frozen=True)
class Symbol:
    """One ``llvm.func`` or ``llvm.global`` as LLVM IR text."""

    name: str
    text: str
    """Its definition, or its declaration if it has no body or value."""
    declaration: str
    """What another module that uses it says: a declaration (a private
    global: its own copy)."""
    references: frozenset[str]
    """The symbols its body uses."""
    intrinsics: tuple[str, ...]
    """The declarations of the intrinsics it calls."""
    size: int
    """Its ops."""
    metadata: tuple[str, ...] = ()
    """The metadata nodes its text refers to (its loops'), numbered
    apart from every other symbol's of the same :class:`Printer`."""

    def body(self) -> str:
        """Its text without its name and its metadata numbers: equal for
        two functions that differ in nothing else."""
        text = self.text.replace(f"{global_name(self.name)}(", "@(", 1)
        return _LOOP_NODE.sub("!llvm.loop", text) if self.metadata else text


def module_text(module: ModuleOp, triple: str, data_layout: str) -> str:
    """``module`` (``llvm.func`` and ``llvm.global`` ops) as LLVM IR text."""
    if "llvm.target_triple" in module.attributes:
        raise Unsupported("llvm.target_triple")
    printer = Printer()
    return assemble(triple, data_layout, map(printer.symbol, globals_first(module.ops)))


def globals_first(ops: Iterable[Operation]) -> list[Operation]:
    """``ops``, the ``llvm.global`` ones first (the order LLVM IR reads best
    in: a function's uses of a global come after it)."""
    ops = list(ops)
    return [op for op in ops if isinstance(op, llvm.GlobalOp)] + [
        op for op in ops if not isinstance(op, llvm.GlobalOp)
    ]


def assemble(
    triple: str, data_layout: str, symbols: Iterable[Symbol], declarations: Iterable[str] = ()
) -> str:
    """One module's text: ``declarations`` (of what ``symbols`` use from
    other modules), then the symbols, then the intrinsics they call."""
    symbols = list(symbols)
    intrinsics = dict.fromkeys(line for symbol in symbols for line in symbol.intrinsics)
    return "\n".join(
        [
            f'target triple = "{triple}"',
            f'target datalayout = "{data_layout}"',
            "",
            *declarations,
            *(symbol.text for symbol in symbols),
            *intrinsics,
            *(line for symbol in symbols for line in symbol.metadata),
            "",
        ]
    )


class Printer:
    """Prints ops as :class:`Symbol` s; caches the text of types."""

    def __init__(self) -> None:
        self.types: dict[Attribute, str] = {}
        self.metadata_nodes = 0
        """Metadata nodes numbered so far (each symbol's are its own)."""

    def symbol(self, op: Operation) -> Symbol:
        if isinstance(op, llvm.GlobalOp):
            text = self._global(op)
            local = op.linkage.linkage.data in ("private", "internal")
            declaration = text
            if not local and op.value is not None:
                declaration = f"{global_name(op.sym_name.data)} = external global {self.type(op.global_type)}"
            return Symbol(op.sym_name.data, text, declaration, frozenset(), (), 1)
        if not isinstance(op, llvm.FuncOp):
            raise Unsupported(op.name)
        if op.CConv.cconv_name != "ccc" or op.res_attrs is not None:
            raise Unsupported("calling convention or result attributes")
        attributes = "" if op.passthrough is None else _passthrough(op.passthrough)
        declaration = f"declare {self._signature(op, None)}{attributes}\n"
        if not op.body.blocks:
            return Symbol(op.sym_name.data, declaration, declaration, frozenset(), (), 1)
        function = _FunctionPrinter(self, op)
        text = function.print(attributes)
        return Symbol(
            op.sym_name.data,
            text,
            declaration,
            frozenset(function.references),
            tuple(function.intrinsics.values()),
            function.size,
            tuple(function.metadata),
        )

    # -- types and constants -------------------------------------------------

    def type(self, t: Attribute) -> str:
        text = self.types.get(t)
        if text is None:
            text = self.types[t] = self._type(t)
        return text

    def _type(self, t: Attribute) -> str:
        if isinstance(t, IntegerType):
            return f"i{t.width.data}"
        if isinstance(t, Float32Type):
            return "float"
        if isinstance(t, Float64Type):
            return "double"
        if isinstance(t, Float16Type):
            return "half"
        if isinstance(t, BFloat16Type):
            return "bfloat"
        if isinstance(t, llvm.LLVMPointerType):
            space = t.addr_space.data if isinstance(t.addr_space, IntAttr) else 0
            return "ptr" if space == 0 else f"ptr addrspace({space})"
        if isinstance(t, llvm.LLVMVoidType):
            return "void"
        if isinstance(t, llvm.LLVMArrayType):
            return f"[{t.size.data} x {self.type(t.type)}]"
        if isinstance(t, llvm.LLVMStructType) and not t.struct_name.data:
            return "{" + ", ".join(self.type(e) for e in t.types.data) + "}"
        if isinstance(t, VectorType) and not t.get_num_scalable_dims():
            (count,) = t.get_shape()
            return f"<{count} x {self.type(t.element_type)}>"
        raise Unsupported(f"type {t}")

    def constant(self, value: Attribute, t: Attribute) -> str:
        if isinstance(value, IntegerAttr) and isinstance(t, IntegerType):
            number = value.value.data
            if t.width.data == 1:
                return "true" if number & 1 else "false"
            return str(number)
        if isinstance(value, FloatAttr):
            return _hex_float(value.value.data, t)
        raise Unsupported(f"constant {value}")

    # -- module level --------------------------------------------------------

    def _global(self, op: llvm.GlobalOp) -> str:
        if op.body.blocks or op.addr_space.value.data != 0:
            raise Unsupported("global with an initializer region or address space")
        linkage = op.linkage.linkage.data
        kind = "constant" if op.constant is not None else "global"
        name = global_name(op.sym_name.data)
        value = op.value
        if value is None:
            return f"{name} = {linkage} {kind} {self.type(op.global_type)}"
        if isinstance(value, StringAttr):
            raw = value.data.encode()
            return f"{name} = {linkage} {kind} [{len(raw)} x i8] {_string(raw)}"
        t = op.global_type
        return f"{name} = {linkage} {kind} {self.type(t)} {self.constant(value, t)}"

    def _signature(self, op: llvm.FuncOp, names: list[str] | None) -> str:
        t = op.function_type
        arg_attrs = op.arg_attrs.data if op.arg_attrs is not None else None
        params = []
        for k, input_type in enumerate(t.inputs.data):
            words = [self.type(input_type)]
            if arg_attrs is not None:
                words += _argument_attributes(arg_attrs[k])
            if names is not None:
                words.append(names[k])
            params.append(" ".join(words))
        if t.is_variadic:
            params.append("...")
        return f'{self.type(t.output)} {global_name(op.sym_name.data)}({", ".join(params)})'


class _FunctionPrinter:
    """One function body: values and blocks named in order, phis from the
    branches' block arguments."""

    def __init__(self, printer: Printer, op: llvm.FuncOp) -> None:
        self.printer = printer
        self.op = op
        self.names: dict[SSAValue, str] = {}
        """Each value's operand text: ``%vN``, or a constant written inline."""
        self.labels: dict[Block, str] = {}
        self.lines: list[str] = []
        self.count = 0
        self.references: set[str] = set()
        self.intrinsics: dict[str, str] = {}
        """Name → declaration of each intrinsic the ops call."""
        self.size = 0
        self.metadata: list[str] = []

    def loop_metadata(self, op: Operation) -> str:
        """``, !llvm.loop !N`` for a branch that is a loop's latch with
        loop properties (:data:`UNROLL_ATTRIBUTE`), else nothing."""
        unroll = op.attributes.get(UNROLL_ATTRIBUTE)
        if unroll is None:
            return ""
        if unroll != StringAttr("full"):
            raise Unsupported(f"{UNROLL_ATTRIBUTE} = {unroll}")
        loop = self.printer.metadata_nodes
        self.printer.metadata_nodes += 2
        self.metadata += [
            f"!{loop} = distinct !{{!{loop}, !{loop + 1}}}",
            f'!{loop + 1} = !{{!"llvm.loop.unroll.full"}}',
        ]
        return f", !llvm.loop !{loop}"

    def intrinsic(self, name: str, result: str, args: list[str]) -> None:
        if name not in self.intrinsics:
            self.intrinsics[name] = f'declare {result} {global_name(name)}({", ".join(args)})'

    def print(self, attributes: str) -> str:
        blocks = list(self.op.body.blocks)
        arguments = blocks[0].args
        for k, argument in enumerate(arguments):
            self.names[argument] = f"%a{k}"
        for k, block in enumerate(blocks):
            self.labels[block] = f"b{k}"
        incoming: dict[Block, list[tuple[Block, tuple[SSAValue, ...]]]] = {}
        for block in blocks:
            terminator = block.last_op
            if terminator is not None:
                for successor, values in _edges(terminator):
                    if successor.args:
                        incoming.setdefault(successor, []).append((block, values))
        for block in blocks:  # every name first: phis and constants come before use
            if block is not blocks[0]:
                for argument in block.args:
                    self.names[argument] = self._fresh()
            for inner in block.ops:
                if type(inner) in _INLINE:
                    _HANDLERS[type(inner)](self, inner)
                elif inner.results:
                    self.names[inner.results[0]] = self._fresh()
        signature = self.printer._signature(self.op, [f"%a{k}" for k in range(len(arguments))])
        lines = self.lines
        lines.append(f"define {signature}{attributes} {{")
        for block in blocks:
            lines.append(f"{self.labels[block]}:")
            for k, argument in enumerate(block.args if block is not blocks[0] else ()):
                sources = ", ".join(
                    f"[{self.names[values[k]]}, %{self.labels[source]}]"
                    for source, values in incoming.get(block, ())
                )
                lines.append(f"  {self.names[argument]} = phi {self.type(argument.type)} {sources}")
            for inner in block.ops:
                self.size += 1
                handler = _HANDLERS.get(type(inner))
                if handler is None or len(inner.results) > 1:
                    raise Unsupported(inner.name)
                if type(inner) not in _INLINE:
                    lines.append(f"  {handler(self, inner)}")
        lines.append("}\n")
        return "\n".join(lines)

    def _fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def type(self, t: Attribute) -> str:
        return self.printer.type(t)

    def result(self, op: Operation) -> str:
        """The name of ``op``'s one result."""
        return self.names[op.results[0]]

    def typed(self, value: SSAValue) -> str:
        return f"{self.type(value.type)} {self.names[value]}"

    def ref(self, value: SSAValue) -> str:
        return self.names[value]


def _edges(op: Operation) -> list[tuple[Block, tuple[SSAValue, ...]]]:
    if isinstance(op, llvm.BrOp):
        return [(op.successor, tuple(op.arguments))]
    if isinstance(op, llvm.CondBrOp):
        if op.then_block is op.else_block and op.then_block.args:
            raise Unsupported("a conditional branch to one block with arguments")
        return [
            (op.then_block, tuple(op.then_arguments)),
            (op.else_block, tuple(op.else_arguments)),
        ]
    return []


def _fast_math(attribute: llvm.FastMathAttr | None) -> str:
    if attribute is None or not attribute.data:
        return ""
    return " ".join(flag.value for flag in _FAST_MATH_ORDER if flag in attribute.data) + " "


def _hex_float(value: float, t: Attribute) -> str:
    """LLVM's exact form of a float constant: the hex of the double whose
    value the constant has once rounded to ``t``."""
    if isinstance(t, Float32Type):
        value = float(np.float32(value))
    elif isinstance(t, Float16Type):
        value = float(np.float16(value))
    elif not isinstance(t, Float64Type):
        raise Unsupported(f"float constant of type {t}")
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


def _quoted(raw: bytes) -> str:
    """``raw`` between double quotes, as LLVM IR escapes it (``\\22``)."""
    return '"' + "".join(
        chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in raw
    ) + '"'


def _string(raw: bytes) -> str:
    return "c" + _quoted(raw)


def global_name(name: str) -> str:
    """``@"name"``: a function's or global's name in LLVM IR, quoted and
    escaped (xDSL symbols may hold any character)."""
    return "@" + _quoted(name.encode())


def _argument_attributes(attributes: DictionaryAttr) -> list[str]:
    words = []
    for name, value in attributes.data.items():
        if name in _ARG_FLAGS:
            words.append(_ARG_FLAGS[name])
        elif name in _ARG_INTS and isinstance(value, IntegerAttr):
            words.append(f"{_ARG_INTS[name]}({value.value.data})")
        elif name.startswith("llvm."):
            raise Unsupported(f"argument attribute {name}")
    return words


def passthrough_entries(attribute: ArrayAttr) -> dict[str, str | None]:
    """MLIR's ``passthrough = ["key", ["key", "value"]]`` as a dict (``None``
    for a bare ``"key"``); :class:`Unsupported` names an entry of another
    shape."""
    pairs: dict[str, str | None] = {}
    for item in attribute.data:
        if isinstance(item, StringAttr):
            pairs[item.data] = None
        elif isinstance(item, ArrayAttr) and len(item.data) == 2 and all(
            isinstance(part, StringAttr) for part in item.data
        ):
            pairs[item.data[0].data] = item.data[1].data  # type: ignore[attr-defined]
        else:
            raise Unsupported(f"passthrough entry {item} must be \"key\" or [\"key\", \"value\"]")
    return pairs


def _passthrough(attribute: ArrayAttr) -> str:
    """``passthrough`` as function attributes: a bare name LLVM knows is
    that attribute, any other entry a string attribute."""
    words = []
    for name, value in passthrough_entries(attribute).items():
        if value is not None:
            words.append(f'"{name}"="{value}"')
        else:
            words.append(name if name in KNOWN_FUNCTION_ATTRIBUTES else f'"{name}"')
    return "".join(f" {word}" for word in words)


# -- ops ---------------------------------------------------------------------

_Handler = Callable[[_FunctionPrinter, Operation], "str | None"]
_HANDLERS: dict[type[Operation], _Handler] = {}


def _handles(*classes: type[Operation]) -> Callable[[_Handler], _Handler]:
    def register(handler: _Handler) -> _Handler:
        for cls in classes:
            _HANDLERS[cls] = handler
        return handler

    return register


_INTEGER_BINARY = {
    llvm.AddOp: "add", llvm.SubOp: "sub", llvm.MulOp: "mul", llvm.SDivOp: "sdiv",
    llvm.UDivOp: "udiv", llvm.SRemOp: "srem", llvm.URemOp: "urem", llvm.AndOp: "and",
    llvm.OrOp: "or", llvm.XOrOp: "xor", llvm.ShlOp: "shl", llvm.LShrOp: "lshr",
    llvm.AShrOp: "ashr",
}  # fmt: skip
_FLOAT_BINARY = {
    llvm.FAddOp: "fadd", llvm.FSubOp: "fsub", llvm.FMulOp: "fmul", llvm.FDivOp: "fdiv",
    llvm.FRemOp: "frem",
}  # fmt: skip
_CASTS = {
    llvm.TruncOp: "trunc", llvm.ZExtOp: "zext", llvm.SExtOp: "sext",
    llvm.PtrToIntOp: "ptrtoint", llvm.IntToPtrOp: "inttoptr", llvm.BitcastOp: "bitcast",
    llvm.FPExtOp: "fpext", llvm.FPTruncOp: "fptrunc", llvm.SIToFPOp: "sitofp",
}  # fmt: skip
_UNARY_INTRINSICS = {
    llvm.FAbsOp: "llvm.fabs", llvm.FExpOp: "llvm.exp", llvm.FCeilOp: "llvm.ceil",
    llvm.FSinOp: "llvm.sin", llvm.FFloorOp: "llvm.floor", llvm.FExp2Op: "llvm.exp2",
    llvm.FSqrtOp: "llvm.sqrt", llvm.FLogOp: "llvm.log", llvm.FCosOp: "llvm.cos",
    llvm.FLog2Op: "llvm.log2",
}  # fmt: skip
_BINARY_INTRINSICS = {
    llvm.FPowOp: "llvm.pow", llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum", llvm.FCopySignOp: "llvm.copysign",
}  # fmt: skip


_OVERFLOW_WORDS: dict[int, list[str]] = {}
"""``nsw``/``nuw`` for each value of an ``overflowFlags`` property."""


def _integer_flags(op: Operation) -> str:
    words: list[str] = []
    if isinstance(op, llvm.ArithmeticBinOpOverflow) and op.overflowFlags:
        value = op.overflowFlags.value.data
        if value not in _OVERFLOW_WORDS:
            _OVERFLOW_WORDS[value] = [f.value for f in llvm.OverflowAttr.from_int(value).data]
        words += _OVERFLOW_WORDS[value]
    if isinstance(op, llvm.ArithmeticBinOpExact) and op.is_exact:
        words.append("exact")
    if isinstance(op, llvm.ArithmeticBinOpDisjoint) and op.is_disjoint:
        words.append("disjoint")
    return "".join(f"{word} " for word in sorted(words))


@_handles(*_INTEGER_BINARY)
def _integer_binary(p: _FunctionPrinter, op: Operation) -> str:
    lhs, rhs = op.operands
    return (
        f"{p.result(op)} = {_INTEGER_BINARY[type(op)]} {_integer_flags(op)}"
        f"{p.typed(lhs)}, {p.ref(rhs)}"
    )


@_handles(*_FLOAT_BINARY)
def _float_binary(p: _FunctionPrinter, op: Operation) -> str:
    lhs, rhs = op.operands
    flags = _fast_math(op.fastmathFlags)  # type: ignore[attr-defined]
    return f"{p.result(op)} = {_FLOAT_BINARY[type(op)]} {flags}{p.typed(lhs)}, {p.ref(rhs)}"


@_handles(llvm.FNegOp)
def _fneg(p: _FunctionPrinter, op: llvm.FNegOp) -> str:
    return f"{p.result(op)} = fneg {_fast_math(op.fastmathFlags)}{p.typed(op.arg)}"


@_handles(*_CASTS)
def _cast(p: _FunctionPrinter, op: Operation) -> str:
    flags = ""
    if isinstance(op, llvm.IntegerConversionOpOverflow) and op.overflowFlags:
        flags = "".join(f"{f.value} " for f in op.overflowFlags.data)
    elif isinstance(op, llvm.IntegerConversionOpNNeg) and op.non_neg:
        flags = "nneg "
    (source,) = op.operands
    result_type = p.type(op.results[0].type)
    return f"{p.result(op)} = {_CASTS[type(op)]} {flags}{p.typed(source)} to {result_type}"


@_handles(llvm.ICmpOp)
def _icmp(p: _FunctionPrinter, op: llvm.ICmpOp) -> str:
    predicate = llvm.ICmpPredicateFlag.from_int(op.predicate.value.data).value
    return f"{p.result(op)} = icmp {predicate} {p.typed(op.lhs)}, {p.ref(op.rhs)}"


@_handles(llvm.FCmpOp)
def _fcmp(p: _FunctionPrinter, op: llvm.FCmpOp) -> str:
    predicate = llvm.FCmpPredicateFlag.from_int(op.predicate.value.data).value.strip("_")
    flags = _fast_math(op.fastmathFlags)
    return f"{p.result(op)} = fcmp {flags}{predicate} {p.typed(op.lhs)}, {p.ref(op.rhs)}"


@_handles(llvm.SelectOp)
def _select(p: _FunctionPrinter, op: llvm.SelectOp) -> str:
    return (
        f"{p.result(op)} = select {_fast_math(op.fastmathFlags)}{p.typed(op.cond)}, "
        f"{p.typed(op.lhs)}, {p.typed(op.rhs)}"
    )


def _align(op: Operation) -> str:
    alignment = op.alignment  # type: ignore[attr-defined]
    return f", align {alignment.value.data}" if alignment else ""


@_handles(llvm.LoadOp)
def _load(p: _FunctionPrinter, op: llvm.LoadOp) -> str:
    if op.ordering.value.data != 0:
        raise Unsupported("atomic load")
    result_type = p.type(op.results[0].type)
    return f"{p.result(op)} = load {result_type}, {p.typed(op.ptr)}{_align(op)}"


@_handles(llvm.StoreOp)
def _store(p: _FunctionPrinter, op: llvm.StoreOp) -> str:
    if op.ordering.value.data != 0 or op.volatile_ or op.nontemporal:
        raise Unsupported("atomic, volatile or nontemporal store")
    return f"store {p.typed(op.value)}, {p.typed(op.ptr)}{_align(op)}"


@_handles(llvm.GEPOp)
def _gep(p: _FunctionPrinter, op: llvm.GEPOp) -> str:
    dynamic = iter(op.ssa_indices)
    indices = [
        p.typed(next(dynamic)) if index == llvm.GEP_USE_SSA_VAL else f"i32 {index}"
        for index in op.rawConstantIndices.iter_values()
    ]
    inbounds = "inbounds " if op.inbounds is not None else ""
    return (
        f"{p.result(op)} = getelementptr {inbounds}{p.type(op.elem_type)}, "
        f"{p.typed(op.ptr)}, {', '.join(indices)}"
    )


@_handles(llvm.AllocaOp)
def _alloca(p: _FunctionPrinter, op: llvm.AllocaOp) -> str:
    return f"{p.result(op)} = alloca {p.type(op.elem_type)}, {p.typed(op.size)}{_align(op)}"


@_handles(llvm.ConstantOp)
def _constant(p: _FunctionPrinter, op: llvm.ConstantOp) -> None:
    p.names[op.result] = p.printer.constant(op.value, op.result.type)


@_handles(llvm.AddressOfOp)
def _addressof(p: _FunctionPrinter, op: llvm.AddressOfOp) -> None:
    name = op.global_name.root_reference.data
    p.references.add(name)
    p.names[op.result] = global_name(name)


@_handles(llvm.ZeroOp)
def _zero(p: _FunctionPrinter, op: llvm.ZeroOp) -> None:
    p.names[op.res] = "zeroinitializer"


@_handles(llvm.UndefOp)
def _undef(p: _FunctionPrinter, op: llvm.UndefOp) -> None:
    p.names[op.res] = "undef"


def _call(
    p: _FunctionPrinter,
    op: Operation,
    callee: str,
    result_type: str,
    flags: str,
    args: Sequence[SSAValue] | None = None,
) -> str:
    listed = ", ".join(p.typed(arg) for arg in (op.operands if args is None else args))
    call = f"call {flags}{result_type} {callee}({listed})"
    return f"{p.result(op)} = {call}" if op.results else call


@_handles(llvm.CallOp)
def _call_op(p: _FunctionPrinter, op: llvm.CallOp) -> str:
    if op.op_bundle_operands or op.CConv.cconv_name != "ccc" or op.var_callee_type is not None:
        raise Unsupported("a variadic call, operand bundles or a calling convention")
    returned = op.returned
    result_type = "void" if returned is None else p.type(returned.type)
    flags = _fast_math(op.fastmathFlags) if returned is not None and result_type in (
        "half", "float", "double"
    ) else ""
    if op.callee is None:  # indirect: the first operand is the function's address
        callee, args = p.ref(op.operands[0]), op.operands[1:]
    else:
        name = op.callee.string_value()
        p.references.add(name)
        callee, args = global_name(name), op.operands
    call = _call(p, op, callee, result_type, flags, args)
    tail = op.TailCallKind.data
    return call if tail == "none" else call.replace("call ", f"{tail} call ", 1)


@_handles(llvm.CallIntrinsicOp)
def _call_intrinsic(p: _FunctionPrinter, op: llvm.CallIntrinsicOp) -> str:
    if op.op_bundle_operands or op.fastmathFlags.data:
        raise Unsupported("an intrinsic call with operand bundles or fast-math flags")
    name = op.intrin.data
    result_type = "void" if not op.results else p.type(op.results[0].type)
    p.intrinsic(name, result_type, [p.type(arg.type) for arg in op.args])
    return _call(p, op, global_name(name), result_type, "")


@_handles(*_UNARY_INTRINSICS, *_BINARY_INTRINSICS)
def _intrinsic_op(p: _FunctionPrinter, op: Operation) -> str:
    base = (_UNARY_INTRINSICS | _BINARY_INTRINSICS)[type(op)]
    t = op.results[0].type
    name = f"{base}.{_suffix(t)}"
    result_type = p.type(t)
    p.intrinsic(name, result_type, [p.type(arg.type) for arg in op.operands])
    return _call(p, op, global_name(name), result_type, "")


def _suffix(t: Attribute) -> str:
    names = {Float16Type: "f16", Float32Type: "f32", Float64Type: "f64"}
    if isinstance(t, VectorType):
        return f"v{t.get_shape()[0]}{_suffix(t.element_type)}"
    if type(t) in names:
        return names[type(t)]
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    raise Unsupported(f"intrinsic of type {t}")


_INLINE = frozenset({llvm.ConstantOp, llvm.AddressOfOp, llvm.ZeroOp, llvm.UndefOp})
"""Ops whose result is written inline where it is used: no instruction."""


@_handles(llvm.BrOp)
def _br(p: _FunctionPrinter, op: llvm.BrOp) -> str:
    return f"br label %{p.labels[op.successor]}{p.loop_metadata(op)}"


@_handles(llvm.CondBrOp)
def _cond_br(p: _FunctionPrinter, op: llvm.CondBrOp) -> str:
    return (
        f"br {p.typed(op.cond)}, label %{p.labels[op.then_block]}, "
        f"label %{p.labels[op.else_block]}{p.loop_metadata(op)}"
    )


@_handles(llvm.ReturnOp)
def _return(p: _FunctionPrinter, op: llvm.ReturnOp) -> str:
    return f"ret {p.typed(op.operands[0])}" if op.operands else "ret void"


@_handles(llvm.UnreachableOp)
def _unreachable(p: _FunctionPrinter, op: llvm.UnreachableOp) -> str:
    return "unreachable"

