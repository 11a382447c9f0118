"""ONNX import: ``module, params = ember.from_onnx(model, shape=None)``.

The counterpart of TVM's ``relay.frontend.from_onnx``.  An ONNX graph becomes
a graph-dialect ``@main`` whose arguments are the model's real inputs (in
ONNX order) followed by the initializers that ops read as tensors; ``params``
holds those initializers by name, ready for ``ember.build(..., params=...)``.
Results are the ONNX graph outputs, in order.

How it works:

* **One table of converters**, keyed by ONNX op type and opset range
  (``@converter("Softmax", 1, 12)``).  A node whose op type has no entry
  for the model's opset is an :class:`~ember.errors.OnnxImportError` naming
  the op type, the node and the opset — never a silently wrong graph.
* **Constant folding at import.**  A node whose inputs are all known at
  import time (initializers, ``Constant`` outputs, ``Shape`` of a static
  tensor, and anything computed from those) is evaluated by ONNX's own
  reference implementation (``onnx.reference``) with the model's opset, so
  the shape arithmetic that exporters emit (``Shape → Gather → Concat →
  Reshape``) folds to constants with exactly ONNX's semantics per opset.
* **Names.**  ONNX names may hold any character (``input.1``, ``x:0``,
  ``images/1``); each argument keeps its name in a ``graph.name`` argument
  attribute (:data:`ember.dialects.graph.ARGUMENT_NAME_ATTR`), which
  ``ember.build`` params, ``GraphExecutor.set_input`` and ``ember-run``
  read, and gets the nearest valid SSA name for readability.

``onnx`` is imported when :func:`from_onnx` runs, never at ``import ember``
(``pip install "ember[onnx]"``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph
from ember.dialects.graph import ARGUMENT_NAME_ATTR, GraphOp, shape_of, tensor_type
from ember.errors import EmberError, OnnxImportError

if TYPE_CHECKING:
    import onnx

__all__ = ["IMPORT_TIME_INPUTS", "SUPPORTED_OPSETS", "converters_table", "opset_ranges", "from_onnx", "parse_model_bytes"]

SUPPORTED_OPSETS = range(9, 22)
"""Opsets of the default ONNX domain that the converters cover (9–21)."""

# ONNX TensorProto element types ember has (FLOAT, INT32, INT64, FLOAT16).
_ONNX_DTYPES: dict[int, np.dtype] = {
    1: np.dtype(np.float32),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    10: np.dtype(np.float16),
}
_ONNX_DTYPE_NAMES = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16",
    6: "INT32", 7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE",
    12: "UINT32", 13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16",
}


def _dtype_name(elem_type: int) -> str:
    return _ONNX_DTYPE_NAMES.get(elem_type, f"type {elem_type}")


# --------------------------------------------------------------------------
# The converter table
# --------------------------------------------------------------------------

ConverterFn = Callable[["_Node"], Any]


@dataclass(frozen=True)
class _Converter:
    op_type: str
    first: int
    last: int
    convert: ConverterFn


_CONVERTERS: dict[str, list[_Converter]] = {}


def converter(op_type: str, first: int = 1, last: int = 10**6) -> Callable[[ConverterFn], ConverterFn]:
    """Register ``fn`` as the converter of ``op_type`` for opsets ``first…last``."""

    def register(fn: ConverterFn) -> ConverterFn:
        _CONVERTERS.setdefault(op_type, []).append(_Converter(op_type, first, last, fn))
        return fn

    return register


IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "ConstantOfShape": (0,),
    "Pad": (1, 2, 3),
    "Slice": (1, 2, 3, 4),
    "Split": (1,),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "ReduceMean": (1,),
    "ReduceSum": (1,),
    "ReduceMax": (1,),
    "Gather": (1,),
    "Dropout": (2,),
}
"""Inputs (by position) that fix a shape or an attribute: ember's shapes
are static, so these must be known at import time (initializers, Constant
outputs or values folded from them)."""


def converters_table() -> dict[str, list[tuple[int, int]]]:
    """ONNX op type → the opset ranges ember converts it for (for docs, tests)."""
    return {
        op: sorted((c.first, c.last) for c in entries)
        for op, entries in sorted(_CONVERTERS.items())
    }


def opset_ranges(op_type: str) -> str:
    """The opsets (from 9) ember converts ``op_type`` for, as the docs write
    them: ``"9–12, 13+"``; one entry per change of the op's signature."""
    parts = []
    for first, last in converters_table()[op_type]:
        first = max(first, SUPPORTED_OPSETS.start)
        if last < first:
            continue
        if last >= 10**6:
            parts.append(f"{first}+")
        elif last == first:
            parts.append(f"{first}")
        else:
            parts.append(f"{first}–{last}")
    return ", ".join(parts)


def _lookup(op_type: str, opset: int) -> _Converter | None:
    for entry in _CONVERTERS.get(op_type, ()):
        if entry.first <= opset <= entry.last:
            return entry
    return None


# --------------------------------------------------------------------------
# Import state
# --------------------------------------------------------------------------


@dataclass
class _Importer:
    """Values by ONNX name while the graph is converted.

    A name is bound to an SSA value (computed at run time) or to a numpy
    array (known at import time).  Initializers are arrays; the first time an
    op reads one as a tensor it becomes an argument of ``@main`` (a param).
    """

    opset: int
    block: Block
    values: dict[str, SSAValue | np.ndarray] = field(default_factory=dict)
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    arg_names: list[str] = field(default_factory=list)
    params: dict[str, np.ndarray] = field(default_factory=dict)
    param_values: dict[str, SSAValue] = field(default_factory=dict)
    materialized: dict[int, SSAValue] = field(default_factory=dict)

    def emit(self, op: GraphOp) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def add_argument(self, name: str, array_type: TensorType) -> SSAValue:
        arg = self.block.insert_arg(array_type, len(self.block.args))
        arg.name_hint = _ssa_name(name)
        self.arg_names.append(name)
        return arg

    def tensor(self, name: str) -> SSAValue:
        """The SSA value of ONNX value ``name`` (constants materialised)."""
        value = self.values[name]
        if isinstance(value, SSAValue):
            return value
        if name in self.initializers and self.initializers[name] is value:
            if name not in self.param_values:
                self.params[name] = value
                self.param_values[name] = self.add_argument(
                    name, tensor_type(value.shape, value.dtype)
                )
            return self.param_values[name]
        if value.dtype not in _ONNX_DTYPES.values():
            raise OnnxImportError(
                f"ONNX value '{name}' is a constant of element type {value.dtype}, which "
                "ember does not support (float32, float16, int32, int64)"
            )
        key = id(value)
        if key not in self.materialized:
            self.materialized[key] = self.emit(graph.ConstantOp.from_array(value))
        return self.materialized[key]


_SSA_NAME = re.compile(r"[A-Za-z_$.-][\w$.-]*")


def _ssa_name(name: str) -> str:
    """The nearest valid SSA name (``x:0`` → ``x_0``; ``1a`` → ``arg_1a``).

    xDSL drops a trailing ``_<digits>``, so a name must not be only that.
    """
    cleaned = re.sub(r"[^\w$.-]", "_", name)
    if not _SSA_NAME.fullmatch(cleaned) or re.fullmatch(r"_\d+", cleaned):
        cleaned = f"arg_{cleaned}"
    return cleaned


# --------------------------------------------------------------------------
# A node being converted
# --------------------------------------------------------------------------


class _Node:
    """What a converter sees: the node's attributes, inputs and outputs."""

    def __init__(self, importer: _Importer, proto: onnx.NodeProto) -> None:
        import onnx

        self.importer = importer
        self.proto = proto
        self.op_type = proto.op_type
        self.name = proto.name or (proto.output[0] if proto.output else proto.op_type)
        self.opset = importer.opset
        self.attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}

    # ---- errors ------------------------------------------------------------

    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(
            f"ONNX node '{self.name}' ({self.op_type}, opset {self.opset}): {message}"
        )

    def unsupported(self, what: str) -> OnnxImportError:
        return self.error(f"{what} is not supported")

    # ---- attributes --------------------------------------------------------

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.attrs.get(name, default)
        if isinstance(value, bytes):
            return value.decode()
        return value

    def ints(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        value = self.attrs.get(name)
        return [int(v) for v in value] if value is not None else (
            list(default) if default is not None else None
        )

    # ---- inputs --------------------------------------------------------------

    def has_input(self, index: int) -> bool:
        return index < len(self.proto.input) and self.proto.input[index] != ""

    def input_name(self, index: int) -> str:
        return self.proto.input[index]

    def tensor(self, index: int) -> SSAValue:
        """Input ``index`` as an SSA value."""
        if not self.has_input(index):
            raise self.error(f"input {index} is missing")
        return self.importer.tensor(self.proto.input[index])

    def tensors(self) -> list[SSAValue]:
        return [self.tensor(i) for i in range(len(self.proto.input)) if self.has_input(i)]

    def constant(self, index: int, what: str) -> np.ndarray:
        """Input ``index``, which must be known at import time."""
        if not self.has_input(index):
            raise self.error(f"input {index} ({what}) is missing")
        value = self.importer.values[self.proto.input[index]]
        if isinstance(value, SSAValue):
            raise self.error(
                f"input {index} ({what}) must be a constant known at import time, "
                f"but '{self.proto.input[index]}' is computed by the graph"
            )
        return value

    def is_computed(self, index: int) -> bool:
        """Whether input ``index`` is computed at run time (not a constant)."""
        return isinstance(self.importer.values[self.proto.input[index]], SSAValue)

    def optional_constant(self, index: int, what: str) -> np.ndarray | None:
        return self.constant(index, what) if self.has_input(index) else None

    def shape(self, index: int) -> tuple[int, ...]:
        value = self.importer.values[self.proto.input[index]]
        return value.shape if isinstance(value, np.ndarray) else shape_of(value)

    def dtype(self, index: int) -> np.dtype:
        value = self.importer.values[self.proto.input[index]]
        if isinstance(value, np.ndarray):
            return value.dtype
        return graph.numpy_dtype(value.type.element_type)  # type: ignore[union-attr]

    def output_used(self, index: int) -> bool:
        return index < len(self.proto.output) and self.proto.output[index] != ""

    # ---- building ------------------------------------------------------------

    def emit(self, op_class: type[GraphOp], operands: Sequence[SSAValue], **attrs: Any) -> SSAValue:
        """Build and append a graph op; a verifier failure names this node."""
        try:
            op = op_class.build(list(operands), **attrs)
        except (ValueError, VerifyException) as error:
            raise self.error(str(error)) from None
        return self.importer.emit(op)

    def const(self, value: Any, like: SSAValue) -> SSAValue:
        """A rank-0 constant with ``like``'s element type."""
        array = np.asarray(value, dtype=graph.numpy_dtype(like.type.element_type))  # type: ignore[union-attr]
        return self.importer.emit(graph.ConstantOp.from_array(array))

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape) == shape_of(value):
            return value
        result = tensor_type(shape, value.type.element_type)  # type: ignore[union-attr]
        return self.emit_typed(graph.ReshapeOp, [value], result)

    def emit_typed(
        self, op_class: type[GraphOp], operands: Sequence[SSAValue], result: TensorType, **attrs: Any
    ) -> SSAValue:
        try:
            op = op_class.build(list(operands), result, **attrs)
            op.verify()
        except (ValueError, VerifyException) as error:
            raise self.error(str(error)) from None
        return self.importer.emit(op)


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def from_onnx(
    model: onnx.ModelProto | str | os.PathLike[str],
    shape: Mapping[str, Sequence[int]] | None = None,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Import an ONNX model as a graph module and its params.

    ``model``: an ``onnx.ModelProto`` or the path of a ``.onnx`` file.
    ``shape``: {input name: shape} fixing the model's dynamic dimensions; a
    dynamic dimension left unfixed is an error naming the input.

    Returns ``(module, params)``: ``@main`` takes the model's inputs (not its
    initializers) and then the params, whose values ``params`` holds by name.
    Raises :class:`~ember.errors.OnnxImportError` for anything ember cannot
    import faithfully.
    """
    try:
        import onnx  # noqa: F401 - only to say how to install it
    except ImportError:  # pragma: no cover - depends on the installation
        raise OnnxImportError(
            'ONNX import needs the onnx package: pip install "ember[onnx]"'
        ) from None
    proto = _load_model(model)
    opset = _default_opset(proto)
    graph_proto = proto.graph
    block = Block()
    importer = _Importer(opset, block)
    for init in graph_proto.initializer:
        importer.initializers[init.name] = _initializer_array(init)
    importer.values.update(importer.initializers)
    _add_inputs(importer, graph_proto, dict(shape or {}))
    for node_proto in graph_proto.node:
        _convert_node(importer, node_proto)
    outputs: list[SSAValue] = []
    for out in graph_proto.output:
        if out.name not in importer.values:
            raise OnnxImportError(f"ONNX graph output '{out.name}' is not computed by any node")
        outputs.append(importer.tensor(out.name))
    block.add_op(ReturnOp(*outputs))
    func = FuncOp(
        "main",
        ([a.type for a in block.args], [v.type for v in outputs]),
        Region(block),
    )
    func.arg_attrs = ArrayAttr(
        [DictionaryAttr({ARGUMENT_NAME_ATTR: StringAttr(n)}) for n in importer.arg_names]
    )
    module = ModuleOp([func])
    try:
        module.verify()
    except VerifyException as error:  # a converter bug, reported with context
        raise OnnxImportError(f"ONNX import produced invalid IR: {error}") from None
    return module, importer.params


def _load_model(model: Any) -> onnx.ModelProto:
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            with open(path, "rb") as stream:
                data = stream.read()
        except OSError as error:
            raise OnnxImportError(f"cannot read ONNX model '{path}': {error.strerror or error}") from None
        return parse_model_bytes(data, path)
    raise OnnxImportError(
        f"from_onnx expects an onnx.ModelProto or a path to a .onnx file, got {type(model).__name__}"
    )


def parse_model_bytes(data: bytes, name: str = "<bytes>") -> onnx.ModelProto:
    """An ``onnx.ModelProto`` from the bytes of a ``.onnx`` file."""
    import onnx

    try:
        return onnx.load_model_from_string(data)
    except Exception as error:  # protobuf's DecodeError and friends
        raise OnnxImportError(
            f"'{name}' is not a valid ONNX model: {type(error).__name__}: {error}"
        ) from None


def _default_opset(proto: onnx.ModelProto) -> int:
    versions = {imp.domain or "ai.onnx": imp.version for imp in proto.opset_import}
    opset = versions.get("ai.onnx")
    if opset is None:
        raise OnnxImportError("the ONNX model imports no opset of the default domain")
    if opset < SUPPORTED_OPSETS.start:
        raise OnnxImportError(
            f"ONNX opset {opset} is not supported (ember imports opsets "
            f"{SUPPORTED_OPSETS.start} to {SUPPORTED_OPSETS.stop - 1} and later; "
            "convert the model with onnx.version_converter)"
        )
    return opset


def _initializer_array(init: onnx.TensorProto) -> np.ndarray:
    from onnx import numpy_helper

    try:
        return numpy_helper.to_array(init)
    except Exception as error:
        raise OnnxImportError(f"ONNX initializer '{init.name}' cannot be read: {error}") from None


def _add_inputs(
    importer: _Importer, graph_proto: onnx.GraphProto, shapes: dict[str, Sequence[int]]
) -> None:
    real_inputs = [i for i in graph_proto.input if i.name not in importer.initializers]
    known = {i.name for i in real_inputs}
    for name in shapes:
        if name not in known:
            raise OnnxImportError(
                f"shape given for '{name}', which is not an input of the ONNX model "
                f"(inputs: {', '.join(sorted(known)) or 'none'})"
            )
    for value_info in real_inputs:
        name = value_info.name
        tensor = value_info.type.tensor_type
        if not value_info.type.HasField("tensor_type"):
            raise OnnxImportError(f"ONNX input '{name}' is not a tensor")
        dtype = _ONNX_DTYPES.get(tensor.elem_type)
        if dtype is None:
            raise OnnxImportError(
                f"ONNX input '{name}' has element type {_dtype_name(tensor.elem_type)}, "
                "which ember does not support (float32, float16, int32, int64)"
            )
        dims = _input_dims(name, tensor, shapes.get(name))
        importer.values[name] = importer.add_argument(name, tensor_type(dims, dtype))


def _input_dims(name: str, tensor: Any, fixed: Sequence[int] | None) -> list[int]:
    declared = [
        d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim
    ] if tensor.HasField("shape") else None
    if fixed is not None:
        dims = [int(d) for d in fixed]
        if declared is not None and (
            len(dims) != len(declared)
            or any(d is not None and d != f for d, f in zip(declared, dims))
        ):
            shown = ["?" if d is None else d for d in declared]
            raise OnnxImportError(
                f"shape {dims} given for ONNX input '{name}' does not match its declared shape {shown}"
            )
        if any(d < 0 for d in dims):
            raise OnnxImportError(f"shape {dims} given for ONNX input '{name}' has a negative dimension")
        return dims
    if declared is None:
        raise OnnxImportError(
            f"ONNX input '{name}' has no shape; fix it with shape={{'{name}': [...]}}"
        )
    if any(d is None for d in declared):
        symbolic = [
            d.dim_param or "?" if not d.HasField("dim_value") else str(d.dim_value)
            for d in tensor.shape.dim
        ]
        raise OnnxImportError(
            f"ONNX input '{name}' has dynamic shape [{', '.join(symbolic)}]; "
            f"fix it with shape={{'{name}': [...]}}"
        )
    return [int(d) for d in declared]  # type: ignore[arg-type]


def _convert_node(importer: _Importer, proto: onnx.NodeProto) -> None:
    node = _Node(importer, proto)
    if proto.domain not in ("", "ai.onnx"):
        raise node.error(f"operator domain '{proto.domain}' is not supported")
    for name in proto.input:
        if name and name not in importer.values:
            raise node.error(f"input '{name}' is not defined before this node")
    entry = _lookup(proto.op_type, importer.opset)
    inputs = [importer.values[n] for n in proto.input if n]
    if all(isinstance(v, np.ndarray) for v in inputs) and proto.op_type not in _NEVER_FOLD:
        results = _fold(node)
    elif entry is None:
        ranges = converters_table().get(proto.op_type)
        hint = (
            f" (ember converts it for opsets {', '.join(f'{a}-{b}' if b < 10**6 else f'{a}+' for a, b in ranges)})"
            if ranges
            else ""
        )
        raise node.error(f"unsupported ONNX operator '{proto.op_type}'{hint}")
    else:
        try:
            converted = entry.convert(node)
        except EmberError:
            raise
        except (ValueError, VerifyException) as error:
            raise node.error(str(error)) from None
        except (TypeError, KeyError, IndexError, AttributeError) as error:
            # A node missing an attribute or input the operator requires.
            raise node.error(f"malformed node: {type(error).__name__}: {error}") from None
        results = list(converted) if isinstance(converted, (list, tuple)) else [converted]
    for index, name in enumerate(proto.output):
        if not name:
            continue
        if index >= len(results) or results[index] is None:
            raise node.error(f"output {index} ('{name}') is not supported")
        importer.values[name] = results[index]


# Ops whose result differs from run to run, or that have no values to fold.
_NEVER_FOLD = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"})


def _fold(node: _Node) -> list[np.ndarray]:
    """Evaluate a node on constant inputs with ONNX's reference implementation."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    proto = node.proto
    importer = node.importer
    inputs = [n for n in proto.input if n]
    feeds = {n: importer.values[n] for n in inputs}
    graph_inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for n, v in feeds.items()
    ]
    outputs = [n for n in proto.output if n]
    graph_outputs = [helper.make_empty_tensor_value_info(n) for n in outputs]
    model = helper.make_model(
        helper.make_graph([proto], "fold", graph_inputs, graph_outputs),
        opset_imports=[helper.make_opsetid("", node.opset)],
    )
    try:
        results = ReferenceEvaluator(model).run(None, feeds)
    except Exception as error:
        raise node.error(f"cannot evaluate on constant inputs: {type(error).__name__}: {error}") from None
    by_name = dict(zip(outputs, results))
    return [np.asarray(by_name[n]) if n else None for n in proto.output]  # type: ignore[misc]


# --------------------------------------------------------------------------
# Shared helpers for converters
# --------------------------------------------------------------------------


def _normalize_axes(node: _Node, axes: Sequence[int], rank: int) -> list[int]:
    result = []
    for axis in axes:
        if not -rank <= axis < rank:
            raise node.error(f"axis {axis} is out of range for rank {rank}")
        result.append(int(axis) % rank)
    return result


def _spatial_pads(
    node: _Node, in_hw: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> list[int]:
    """ONNX pads/auto_pad for 2-D windows → ember's ``[top, left, bottom, right]``."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        pads = node.ints("pads", [0, 0, 0, 0])
        if len(pads) != 4:
            raise node.error(f"pads must have 4 values for 2-D data, got {pads}")
        return pads
    if auto_pad == "VALID":
        return [0, 0, 0, 0]
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise node.error(f"auto_pad '{auto_pad}' is not an ONNX auto_pad value")
    begin, end = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        if auto_pad == "SAME_UPPER":
            begin.append(small)
            end.append(total - small)
        else:
            begin.append(total - small)
            end.append(small)
    return [*begin, *end]


def _require_rank(node: _Node, index: int, rank: int, what: str) -> None:
    shape = node.shape(index)
    if len(shape) != rank:
        raise node.unsupported(f"{what} of rank {len(shape)} (shape {list(shape)})")


def _unused_outputs(node: _Node, first: int, what: str) -> None:
    for index in range(first, len(node.proto.output)):
        if node.output_used(index):
            raise node.unsupported(f"output {index} ({what})")


# --------------------------------------------------------------------------
# Converters: elementwise
# --------------------------------------------------------------------------


def _binary(op_class: type[GraphOp]) -> ConverterFn:
    def convert(node: _Node) -> SSAValue:
        return node.emit(op_class, [node.tensor(0), node.tensor(1)])

    return convert


for _name, _cls in (
    ("Add", graph.AddOp),
    ("Sub", graph.SubtractOp),
    ("Mul", graph.MultiplyOp),
    ("Div", graph.DivideOp),
):
    converter(_name, 7)(_binary(_cls))


def _variadic(op_class: type[GraphOp]) -> ConverterFn:
    def convert(node: _Node) -> SSAValue:
        values = node.tensors()
        result = values[0]
        for value in values[1:]:
            result = node.emit(op_class, [result, value])
        return result

    return convert


converter("Max", 8)(_variadic(graph.MaximumOp))
converter("Min", 8)(_variadic(graph.MinimumOp))
converter("Sum", 8)(_variadic(graph.AddOp))


def _unary(op_class: type[GraphOp]) -> ConverterFn:
    def convert(node: _Node) -> SSAValue:
        return node.emit(op_class, [node.tensor(0)])

    return convert


for _name, _cls in (
    ("Relu", graph.ReluOp),
    ("Sigmoid", graph.SigmoidOp),
    ("Tanh", graph.TanhOp),
    ("Exp", graph.ExpOp),
    ("Sqrt", graph.SqrtOp),
    ("Neg", graph.NegativeOp),
):
    converter(_name, 6)(_unary(_cls))


@converter("Abs", 6)
def _abs(node: _Node) -> SSAValue:
    # max(x, -x): exact, and NaN stays NaN.
    x = node.tensor(0)
    return node.emit(graph.MaximumOp, [x, node.emit(graph.NegativeOp, [x])])


@converter("Reciprocal", 6)
def _reciprocal(node: _Node) -> SSAValue:
    x = node.tensor(0)
    return node.emit(graph.DivideOp, [node.const(1.0, x), x])


@converter("Identity", 1)
def _identity(node: _Node) -> SSAValue:
    return node.tensor(0)


@converter("Dropout", 7)
def _dropout(node: _Node) -> SSAValue:
    if node.opset >= 12 and node.has_input(2):
        training = node.constant(2, "training_mode")
        if bool(np.asarray(training).reshape(-1)[0]):
            raise node.unsupported("training_mode = true")
    _unused_outputs(node, 1, "the dropout mask")
    return node.tensor(0)


def _negative_part(node: _Node, x: SSAValue) -> SSAValue:
    """``min(x, 0)``: x where x < 0, else 0 (NaN stays NaN)."""
    return node.emit(graph.MinimumOp, [x, node.const(0.0, x)])


@converter("LeakyRelu", 6)
def _leaky_relu(node: _Node) -> SSAValue:
    # relu(x) + alpha·min(x, 0) is exactly x for x ≥ 0 and alpha·x for x < 0.
    x = node.tensor(0)
    alpha = float(node.attr("alpha", 0.01))
    scaled = node.emit(graph.MultiplyOp, [_negative_part(node, x), node.const(alpha, x)])
    return node.emit(graph.AddOp, [node.emit(graph.ReluOp, [x]), scaled])


@converter("PRelu", 9)
def _prelu(node: _Node) -> SSAValue:
    x, slope = node.tensor(0), node.tensor(1)
    scaled = node.emit(graph.MultiplyOp, [_negative_part(node, x), slope])
    result = node.emit(graph.AddOp, [node.emit(graph.ReluOp, [x]), scaled])
    if shape_of(result) != shape_of(x):
        raise node.error(
            f"slope of shape {list(shape_of(slope))} does not broadcast to X of shape {list(shape_of(x))}"
        )
    return result


@converter("Elu", 6)
def _elu(node: _Node) -> SSAValue:
    # relu(x) + alpha·(exp(min(x, 0)) − 1): for x > 0 the second term is 0.
    x = node.tensor(0)
    alpha = float(node.attr("alpha", 1.0))
    expm1 = node.emit(
        graph.SubtractOp, [node.emit(graph.ExpOp, [_negative_part(node, x)]), node.const(1.0, x)]
    )
    scaled = node.emit(graph.MultiplyOp, [expm1, node.const(alpha, x)])
    return node.emit(graph.AddOp, [node.emit(graph.ReluOp, [x]), scaled])


@converter("Selu", 6)
def _selu(node: _Node) -> SSAValue:
    # gamma·(relu(x) + (alpha·exp(min(x, 0)) − alpha)).
    x = node.tensor(0)
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    exp = node.emit(graph.ExpOp, [_negative_part(node, x)])
    negative = node.emit(
        graph.SubtractOp,
        [node.emit(graph.MultiplyOp, [exp, node.const(alpha, x)]), node.const(alpha, x)],
    )
    total = node.emit(graph.AddOp, [node.emit(graph.ReluOp, [x]), negative])
    return node.emit(graph.MultiplyOp, [total, node.const(gamma, x)])


def _hard_sigmoid_of(node: _Node, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    affine = node.emit(
        graph.AddOp, [node.emit(graph.MultiplyOp, [x, node.const(alpha, x)]), node.const(beta, x)]
    )
    return node.emit(graph.ClipOp, [affine], min=0.0, max=1.0)


@converter("HardSigmoid", 6)
def _hard_sigmoid(node: _Node) -> SSAValue:
    return _hard_sigmoid_of(
        node, node.tensor(0), float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))
    )


@converter("HardSwish", 14)
def _hard_swish(node: _Node) -> SSAValue:
    x = node.tensor(0)
    return node.emit(graph.MultiplyOp, [x, _hard_sigmoid_of(node, x, 1.0 / 6.0, 0.5)])


_FLT_MAX = float(np.finfo(np.float32).max)


@converter("Clip", 6, 10)
def _clip_6(node: _Node) -> SSAValue:
    # Before opset 11 the bounds are attributes defaulting to ±FLT_MAX.
    x = node.tensor(0)
    low = float(node.attr("min", -_FLT_MAX))
    high = float(node.attr("max", _FLT_MAX))
    return _clip_to(node, x, low, high)


@converter("Clip", 11)
def _clip_11(node: _Node) -> SSAValue:
    x = node.tensor(0)
    if any(node.has_input(i) and node.is_computed(i) for i in (1, 2)):
        # Bounds fed at run time: min(max(x, lo), hi), exactly numpy.clip.
        result = x
        if node.has_input(1):
            result = node.emit(graph.MaximumOp, [result, node.tensor(1)])
        if node.has_input(2):
            result = node.emit(graph.MinimumOp, [result, node.tensor(2)])
        return result
    low = node.optional_constant(1, "min")
    high = node.optional_constant(2, "max")
    return _clip_to(
        node,
        x,
        float(low) if low is not None else -math.inf,
        float(high) if high is not None else math.inf,
    )


def _clip_to(node: _Node, x: SSAValue, low: float, high: float) -> SSAValue:
    if low > high:
        # ONNX (numpy.clip) gives max for every element when min > max.
        low = high
    result = x
    if low != -math.inf:
        result = node.emit(graph.MaximumOp, [result, node.const(low, x)])
    if high != math.inf:
        result = node.emit(graph.MinimumOp, [result, node.const(high, x)])
    return result


# --------------------------------------------------------------------------
# Converters: softmax
# --------------------------------------------------------------------------


@converter("Softmax", 1, 12)
def _softmax_1(node: _Node) -> SSAValue:
    # Before opset 13: the input is flattened to 2-D at `axis` and the
    # softmax runs over the whole second dimension.
    x = node.tensor(0)
    shape = shape_of(x)
    axis = _normalize_axes(node, [node.attr("axis", 1)], len(shape))[0] if shape else 0
    flat = node.reshape(x, [math.prod(shape[:axis]), math.prod(shape[axis:])])
    return node.reshape(node.emit(graph.SoftmaxOp, [flat], axis=-1), shape)


@converter("Softmax", 13)
def _softmax_13(node: _Node) -> SSAValue:
    return node.emit(graph.SoftmaxOp, [node.tensor(0)], axis=int(node.attr("axis", -1)))


# --------------------------------------------------------------------------
# Converters: convolution, dense algebra, normalisation
# --------------------------------------------------------------------------


def _window_data(node: _Node) -> tuple[SSAValue, bool]:
    """Input 0 as NCHW, and whether it was lifted: 1-D windows over N×C×W
    are the 2-D windows of height 1 over N×C×1×W (exactly), so the node's
    1-D attributes are rewritten to 2-D ones."""
    shape = node.shape(0)
    if len(shape) == 4:
        return node.tensor(0), False
    if len(shape) != 3:
        raise node.unsupported(
            f"{node.op_type} on data of rank {len(shape)} (shape {list(shape)}; "
            "ember has 1-D and 2-D windows)"
        )
    for name, lifted in (
        ("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("output_padding", 0), ("output_shape", 1)
    ):
        if name in node.attrs and len(node.attrs[name]) == 1:
            node.attrs[name] = [lifted, *node.attrs[name]]
    if "pads" in node.attrs and len(node.attrs["pads"]) == 2:
        begin, end = node.attrs["pads"]
        node.attrs["pads"] = [0, begin, 0, end]
    n, c, w = shape
    return node.reshape(node.tensor(0), [n, c, 1, w]), True


def _window_result(node: _Node, result: SSAValue, lifted: bool) -> SSAValue:
    if not lifted:
        return result
    n, c, _, w = shape_of(result)
    return node.reshape(result, [n, c, w])


@converter("Conv", 1)
def _conv(node: _Node) -> SSAValue:
    data, lifted = _window_data(node)
    weight = node.tensor(1)
    if lifted:
        o, i, k = shape_of(weight)
        weight = node.reshape(weight, [o, i, 1, k])
    kernel = node.ints("kernel_shape", shape_of(weight)[2:])
    strides = node.ints("strides", [1, 1])
    dilations = node.ints("dilations", [1, 1])
    pads = _spatial_pads(node, shape_of(data)[2:], kernel, strides, dilations)
    if list(kernel) != list(shape_of(weight)[2:]):
        raise node.error(f"kernel_shape {kernel} differs from the weight's {list(shape_of(weight)[2:])}")
    result = node.emit(
        graph.Conv2dOp,
        [data, weight],
        strides=strides,
        padding=pads,
        dilation=dilations,
        groups=int(node.attr("group", 1)),
    )
    if node.has_input(2):
        result = node.emit(graph.BiasAddOp, [result, node.tensor(2)], axis=1)
    return _window_result(node, result, lifted)


@converter("ConvTranspose", 1)
def _conv_transpose(node: _Node) -> SSAValue:
    data, lifted = _window_data(node)
    weight = node.tensor(1)
    if lifted:
        i, o, k = shape_of(weight)
        weight = node.reshape(weight, [i, o, 1, k])
    kernel = node.ints("kernel_shape", shape_of(weight)[2:])
    if list(kernel) != list(shape_of(weight)[2:]):
        raise node.error(f"kernel_shape {kernel} differs from the weight's {list(shape_of(weight)[2:])}")
    strides = node.ints("strides", [1, 1])
    dilations = node.ints("dilations", [1, 1])
    extra = node.ints("output_padding", [0, 0])
    auto_pad = node.attr("auto_pad", "NOTSET") or "NOTSET"
    output_shape = node.ints("output_shape")
    sizes = shape_of(data)[2:]
    if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [size * s for size, s in zip(sizes, strides)]
    if output_shape is not None:
        output_shape = list(output_shape[-2:])
        begin, end = [], []
        for size, k, s, d, e, want in zip(sizes, kernel, strides, dilations, extra, output_shape):
            total = s * (size - 1) + e + (k - 1) * d + 1 - want
            small = total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else total - small)
            end.append(total - small if auto_pad == "SAME_UPPER" else small)
        pads = [*begin, *end]
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = node.ints("pads", [0, 0, 0, 0])
    # A negative pad (output_shape beyond the full result) adds zero rows or
    # columns, to which the bias is added like everywhere else.
    result = node.emit(
        graph.Conv2dTransposeOp,
        [data, weight],
        strides=strides,
        padding=[max(p, 0) for p in pads],
        dilation=dilations,
        output_padding=extra,
        groups=int(node.attr("group", 1)),
    )
    grow = [max(-p, 0) for p in pads]
    if any(grow):
        result = node.emit(graph.PadOp, [result], padding=[0, 0, grow[0], grow[1], 0, 0, grow[2], grow[3]])
    if node.has_input(2):
        result = node.emit(graph.BiasAddOp, [result, node.tensor(2)], axis=1)
    return _window_result(node, result, lifted)


@converter("BatchNormalization", 9)
def _batch_norm(node: _Node) -> SSAValue:
    if node.attr("training_mode", 0):
        raise node.unsupported("training_mode = 1")
    _unused_outputs(node, 1, "running statistics of training")
    operands = [node.tensor(i) for i in range(5)]
    return node.emit(graph.BatchNormOp, operands, epsilon=float(node.attr("epsilon", 1e-5)), axis=1)


@converter("Gemm", 9)
def _gemm(node: _Node) -> SSAValue:
    a, b = node.tensor(0), node.tensor(1)
    if node.attr("transA", 0):
        a = node.emit(graph.TransposeOp, [a], axes=[1, 0])
    if node.attr("transB", 0):
        product = node.emit(graph.DenseOp, [a, b])
    else:
        product = node.emit(graph.MatmulOp, [a, b])
    alpha = float(node.attr("alpha", 1.0))
    beta = float(node.attr("beta", 1.0))
    if alpha != 1.0:
        product = node.emit(graph.MultiplyOp, [product, node.const(alpha, product)])
    if node.has_input(2) and beta != 0.0:
        c = node.tensor(2)
        if beta != 1.0:
            c = node.emit(graph.MultiplyOp, [c, node.const(beta, c)])
        result = node.emit(graph.AddOp, [product, c])
        if shape_of(result) != shape_of(product):
            raise node.error(f"C of shape {list(shape_of(c))} does not broadcast to {list(shape_of(product))}")
        return result
    return product


@converter("MatMul", 9)
def _matmul(node: _Node) -> SSAValue:
    a, b = node.tensor(0), node.tensor(1)
    a_shape, b_shape = shape_of(a), shape_of(b)
    if not a_shape or not b_shape:
        raise node.error("MatMul operands must have rank >= 1")
    if len(a_shape) == 1:
        a = node.reshape(a, [1, a_shape[0]])
    if len(b_shape) == 1:
        b = node.reshape(b, [b_shape[0], 1])
    result = node.emit(graph.MatmulOp, [a, b])
    out = list(shape_of(result))
    if len(a_shape) == 1:
        out.pop(-2)
    if len(b_shape) == 1:
        out.pop(-1)
    return node.reshape(result, out)


# --------------------------------------------------------------------------
# Converters: pooling
# --------------------------------------------------------------------------


def _pool_window(node: _Node, data: SSAValue) -> tuple[dict[str, Any], int]:
    """The pool's attributes (kernel, strides, dilation, ember padding with
    the extra bottom/right padding of ``ceil_mode`` — windows that start
    inside the input or its left padding) and whether there is such extra."""
    kernel = node.ints("kernel_shape")
    if kernel is None or len(kernel) != 2:
        raise node.unsupported(f"kernel_shape {kernel} (only 2-D pooling)")
    strides = node.ints("strides", [1, 1])
    dilations = node.ints("dilations", [1, 1])
    h, w = shape_of(data)[2:]
    pads = _spatial_pads(node, (h, w), kernel, strides, dilations)
    extra = [0, 0]
    if node.attr("ceil_mode", 0):
        for i, (size, k, s, d) in enumerate(zip((h, w), kernel, strides, dilations)):
            padded = size + pads[i] + pads[i + 2]
            effective = (k - 1) * d + 1
            out = -(-(padded - effective) // s) + 1
            if (out - 1) * s >= size + pads[i]:
                out -= 1  # the last window would start in the right padding
            extra[i] = max((out - 1) * s + effective - padded, 0)
    padding = [pads[0], pads[1], pads[2] + extra[0], pads[3] + extra[1]]
    attrs = {"pool_size": kernel, "strides": strides, "padding": padding, "dilation": dilations}
    return attrs, int(extra[0] > 0 or extra[1] > 0)


@converter("MaxPool", 8)
def _max_pool(node: _Node) -> SSAValue:
    _unused_outputs(node, 1, "argmax indices")
    if node.attr("storage_order", 0):
        raise node.unsupported("storage_order = 1")
    data, lifted = _window_data(node)
    attrs, _ = _pool_window(node, data)
    result = node.emit(graph.MaxPool2dOp, [data], **attrs)
    return _window_result(node, result, lifted)


@converter("AveragePool", 7)
def _avg_pool(node: _Node) -> SSAValue:
    data, lifted = _window_data(node)
    attrs, ceil_extra = _pool_window(node, data)
    include_pad = bool(node.attr("count_include_pad", 0))
    if include_pad and ceil_extra:
        # ONNX counts the explicit pads but not the ceil_mode overhang.
        raise node.unsupported("count_include_pad = 1 together with a ceil_mode overhang")
    result = node.emit(graph.AvgPool2dOp, [data], count_include_pad=include_pad, **attrs)
    return _window_result(node, result, lifted)


@converter("GlobalAveragePool", 1)
def _global_avg_pool(node: _Node) -> SSAValue:
    _require_rank(node, 0, 4, "GlobalAveragePool on data")
    return node.emit(graph.GlobalAvgPool2dOp, [node.tensor(0)])


@converter("GlobalMaxPool", 1)
def _global_max_pool(node: _Node) -> SSAValue:
    _require_rank(node, 0, 4, "GlobalMaxPool on data")
    data = node.tensor(0)
    return node.emit(graph.MaxPool2dOp, [data], pool_size=list(shape_of(data)[2:]))


# --------------------------------------------------------------------------
# Converters: layout
# --------------------------------------------------------------------------


@converter("Flatten", 9)
def _flatten(node: _Node) -> SSAValue:
    x = node.tensor(0)
    shape = shape_of(x)
    axis = int(node.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise node.error(f"axis {axis} is out of range for rank {len(shape)}")
    if axis < 0:
        axis += len(shape)
    return node.reshape(x, [math.prod(shape[:axis]), math.prod(shape[axis:])])


@converter("Reshape", 5)
def _reshape(node: _Node) -> SSAValue:
    x = node.tensor(0)
    target = [int(d) for d in node.constant(1, "shape").reshape(-1)]
    return node.reshape(x, _reshape_target(node, shape_of(x), target, bool(node.attr("allowzero", 0))))


def _reshape_target(node: _Node, shape: Sequence[int], target: list[int], allowzero: bool) -> list[int]:
    dims = list(target)
    for i, d in enumerate(dims):
        if d == 0 and not allowzero:
            if i >= len(shape):
                raise node.error(f"shape {target} copies dimension {i}, but the input has rank {len(shape)}")
            dims[i] = shape[i]
    if dims.count(-1) > 1:
        raise node.error(f"shape {target} has more than one -1")
    total = math.prod(shape)
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or total % known:
            raise node.error(f"cannot reshape {list(shape)} to {target}")
        dims[dims.index(-1)] = total // known
    if math.prod(dims) != total or any(d < 0 for d in dims):
        raise node.error(f"cannot reshape {list(shape)} ({total} elements) to {target}")
    return dims


@converter("Transpose", 1)
def _transpose(node: _Node) -> SSAValue:
    x = node.tensor(0)
    perm = node.ints("perm", list(reversed(range(len(shape_of(x))))))
    return node.emit(graph.TransposeOp, [x], axes=perm)


def _squeeze(node: _Node, axes: Sequence[int] | None) -> SSAValue:
    x = node.tensor(0)
    shape = shape_of(x)
    if axes is None:
        drop = {i for i, d in enumerate(shape) if d == 1}
    else:
        drop = set(_normalize_axes(node, axes, len(shape)))
        for axis in drop:
            if shape[axis] != 1:
                raise node.error(f"cannot squeeze axis {axis} of size {shape[axis]}")
    return node.reshape(x, [d for i, d in enumerate(shape) if i not in drop])


@converter("Squeeze", 1, 12)
def _squeeze_1(node: _Node) -> SSAValue:
    return _squeeze(node, node.ints("axes"))


@converter("Squeeze", 13)
def _squeeze_13(node: _Node) -> SSAValue:
    axes = node.optional_constant(1, "axes")
    return _squeeze(node, None if axes is None else [int(a) for a in axes.reshape(-1)])


def _unsqueeze(node: _Node, axes: Sequence[int]) -> SSAValue:
    x = node.tensor(0)
    shape = list(shape_of(x))
    rank = len(shape) + len(axes)
    positions = sorted(_normalize_axes(node, axes, rank))
    if len(set(positions)) != len(positions):
        raise node.error(f"axes {list(axes)} repeat an axis")
    for axis in positions:
        shape.insert(axis, 1)
    return node.reshape(x, shape)


@converter("Unsqueeze", 1, 12)
def _unsqueeze_1(node: _Node) -> SSAValue:
    return _unsqueeze(node, node.ints("axes", []))


@converter("Unsqueeze", 13)
def _unsqueeze_13(node: _Node) -> SSAValue:
    return _unsqueeze(node, [int(a) for a in node.constant(1, "axes").reshape(-1)])


@converter("Concat", 4)
def _concat(node: _Node) -> SSAValue:
    values = node.tensors()
    return node.emit(graph.ConcatenateOp, values, axis=int(node.attr("axis")))


@converter("Constant", 9)
@converter("ConstantOfShape", 9)
def _constant(node: _Node) -> list[np.ndarray]:
    # Reached only when an input is computed: ConstantOfShape of a shape
    # known only at run time (Constant has no inputs and always folds).
    raise node.error("the shape input must be known at import time")


@converter("Shape", 1)
def _shape(node: _Node) -> np.ndarray:
    shape = np.array(node.shape(0), dtype=np.int64)
    if node.opset >= 15:
        rank = len(shape)
        start = int(node.attr("start", 0))
        end = node.attr("end")
        start = min(max(start + rank if start < 0 else start, 0), rank)
        stop = rank if end is None else min(max(int(end) + rank if end < 0 else int(end), 0), rank)
        shape = shape[start:stop]
    return shape


@converter("Size", 1)
def _size(node: _Node) -> np.ndarray:
    return np.array(math.prod(node.shape(0)), dtype=np.int64)


@converter("Cast", 6)
def _cast(node: _Node) -> SSAValue:
    x = node.tensor(0)
    to = int(node.attr("to"))
    dtype = _ONNX_DTYPES.get(to)
    if dtype is None:
        raise node.unsupported(f"Cast to {_dtype_name(to)}")
    if graph.numpy_dtype(x.type.element_type) == dtype:  # type: ignore[union-attr]
        return x
    return node.emit_typed(graph.CastOp, [x], tensor_type(shape_of(x), dtype))


# --------------------------------------------------------------------------
# Converters: slicing, gathering, padding
# --------------------------------------------------------------------------


def _slice_axis(size: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice's index rules for one axis → graph.slice's explicit begin/end."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        return min(max(start, 0), size), min(max(end, 0), size)
    return min(max(start, -1), size - 1), min(max(end, -1), size - 1)


def _emit_slice(
    node: _Node, x: SSAValue, begin: Sequence[int], end: Sequence[int], strides: Sequence[int]
) -> SSAValue:
    shape = shape_of(x)
    if all(b == 0 and e == n and s == 1 for b, e, s, n in zip(begin, end, strides, shape)):
        return x
    extents = [graph.slice_extent(b, e, s) for b, e, s in zip(begin, end, strides)]
    if 0 in extents:
        raise node.unsupported(f"an empty result (slice of {list(shape)} has shape {extents})")
    return node.emit(graph.SliceOp, [x], begin=list(begin), end=list(end), strides=list(strides))


def _slice(node: _Node, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None, steps: Sequence[int] | None) -> SSAValue:
    x = node.tensor(0)
    shape = shape_of(x)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps must have the same length")
    begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
    normalized = _normalize_axes(node, axes, len(shape))
    if len(set(normalized)) != len(normalized):
        raise node.error(f"axes {axes} repeat an axis")
    for axis, start, stop, step in zip(normalized, starts, ends, steps):
        if step == 0:
            raise node.error(f"step of axis {axis} is 0")
        # ONNX uses INT64_MAX/MIN for "to the end": Python ints hold them exactly.
        begin[axis], end[axis] = _slice_axis(shape[axis], int(start), int(stop), int(step))
        strides[axis] = int(step)
    return _emit_slice(node, x, begin, end, strides)


@converter("Slice", 1, 9)
def _slice_1(node: _Node) -> SSAValue:
    return _slice(node, node.ints("starts"), node.ints("ends"), node.ints("axes"), None)


@converter("Slice", 10)
def _slice_10(node: _Node) -> SSAValue:
    def ints(index: int, what: str) -> list[int] | None:
        value = node.optional_constant(index, what)
        return None if value is None else [int(v) for v in value.reshape(-1)]

    return _slice(node, ints(1, "starts"), ints(2, "ends"), ints(3, "axes"), ints(4, "steps"))  # type: ignore[arg-type]


def _split(node: _Node, sizes: Sequence[int] | None) -> list[SSAValue]:
    x = node.tensor(0)
    shape = shape_of(x)
    axis = _normalize_axes(node, [int(node.attr("axis", 0))], len(shape))[0]
    count = len(node.proto.output)
    if sizes is None:
        parts = int(node.attr("num_outputs", count))
        chunk = -(-shape[axis] // parts)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(parts)]
    if sum(sizes) == shape[axis] and 0 in sizes:
        raise node.unsupported(f"an empty output (split sizes {list(sizes)})")
    if sum(sizes) != shape[axis] or any(s <= 0 for s in sizes):
        raise node.error(f"split sizes {list(sizes)} do not divide axis {axis} of size {shape[axis]}")
    results, offset = [], 0
    for size in sizes:
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis] = offset, offset + size
        results.append(_emit_slice(node, x, begin, end, [1] * len(shape)))
        offset += size
    return results


@converter("Split", 2, 12)
def _split_2(node: _Node) -> list[SSAValue]:
    return _split(node, node.ints("split"))


@converter("Split", 13)
def _split_13(node: _Node) -> list[SSAValue]:
    sizes = node.optional_constant(1, "split")
    return _split(node, None if sizes is None else [int(s) for s in sizes.reshape(-1)])


@converter("Gather", 1)
def _gather(node: _Node) -> SSAValue:
    # Constant indices: runs of consecutive indices become slices, joined
    # along the axis and reshaped to the gathered shape (pure data movement).
    x = node.tensor(0)
    shape = shape_of(x)
    axis = _normalize_axes(node, [int(node.attr("axis", 0))], len(shape))[0]
    indices = node.constant(1, "indices").astype(np.int64)
    size = shape[axis]
    if np.any((indices < -size) | (indices >= size)):
        raise node.error(f"indices {indices.reshape(-1).tolist()} out of range for axis {axis} of size {size}")
    flat = [int(i) % size for i in indices.reshape(-1)]
    if not flat:
        raise node.unsupported("an empty indices tensor")
    runs: list[list[int]] = [[flat[0], flat[0] + 1]]
    for i in flat[1:]:
        if i == runs[-1][1]:
            runs[-1][1] += 1
        else:
            runs.append([i, i + 1])
    pieces = []
    for start, stop in runs:
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis] = start, stop
        pieces.append(_emit_slice(node, x, begin, end, [1] * len(shape)))
    joined = pieces[0] if len(pieces) == 1 else node.emit(graph.ConcatenateOp, pieces, axis=axis)
    out_shape = [*shape[:axis], *indices.shape, *shape[axis + 1 :]]
    return node.reshape(joined, out_shape)


def _pad(node: _Node, pads: Sequence[int], mode: str, value: float, axes: Sequence[int] | None) -> SSAValue:
    x = node.tensor(0)
    shape = shape_of(x)
    rank = len(shape)
    if mode not in graph.PAD_MODES:
        raise node.unsupported(f"mode '{mode}'")
    if axes is not None:
        axes = _normalize_axes(node, axes, rank)
        if len(pads) != 2 * len(axes):
            raise node.error(f"pads {list(pads)} must have two values per axis in {axes}")
        full = [0] * (2 * rank)
        for i, axis in enumerate(axes):
            full[axis], full[rank + axis] = pads[i], pads[len(axes) + i]
        pads = full
    if len(pads) != 2 * rank:
        raise node.error(f"pads {list(pads)} must have {2 * rank} values for rank {rank}")
    # Negative pads crop: slice first, then pad by the positive amounts.
    begin = [max(-p, 0) for p in pads[:rank]]
    end = [n - max(-p, 0) for n, p in zip(shape, pads[rank:])]
    if any(b >= e for b, e in zip(begin, end)):
        raise node.unsupported(f"pads {list(pads)} that crop {list(shape)} to nothing")
    x = _emit_slice(node, x, begin, end, [1] * rank)
    positive = [max(p, 0) for p in pads]
    if not any(positive):
        return x
    return node.emit(graph.PadOp, [x], padding=positive, mode=mode, value=float(value))


@converter("Pad", 2, 10)
def _pad_2(node: _Node) -> SSAValue:
    return _pad(node, node.ints("pads"), node.attr("mode", "constant"), float(node.attr("value", 0.0)), None)


@converter("Pad", 11)
def _pad_11(node: _Node) -> SSAValue:
    pads = [int(p) for p in node.constant(1, "pads").reshape(-1)]
    fill = node.optional_constant(2, "constant_value")
    axes = node.optional_constant(3, "axes") if node.opset >= 18 else None
    return _pad(
        node,
        pads,
        node.attr("mode", "constant"),
        0.0 if fill is None else float(np.asarray(fill).reshape(-1)[0]),
        None if axes is None else [int(a) for a in axes.reshape(-1)],
    )


# --------------------------------------------------------------------------
# Converters: reductions and log-softmax
# --------------------------------------------------------------------------


def _reduce(op_class: type[GraphOp], axes_input_from: int) -> ConverterFn:
    def convert(node: _Node) -> SSAValue:
        x = node.tensor(0)
        rank = len(shape_of(x))
        keepdims = bool(node.attr("keepdims", 1))
        if node.opset >= axes_input_from:
            value = node.optional_constant(1, "axes")
            axes = None if value is None else [int(a) for a in value.reshape(-1)]
            if not axes and node.attr("noop_with_empty_axes", 0):
                return x
        else:
            axes = node.ints("axes")
        if not axes:
            axes = list(range(rank))
        return node.emit(op_class, [x], axes=axes, keepdims=keepdims)

    return convert


converter("ReduceSum", 1)(_reduce(graph.ReduceSumOp, 13))
converter("ReduceMean", 1)(_reduce(graph.ReduceMeanOp, 18))
converter("ReduceMax", 1)(_reduce(graph.ReduceMaxOp, 18))


def _log_softmax_of(node: _Node, x: SSAValue, axis: int) -> SSAValue:
    # x − max − log(Σ exp(x − max)), ONNX's definition, along `axis`.
    peak = node.emit(graph.ReduceMaxOp, [x], axes=[axis], keepdims=True)
    shifted = node.emit(graph.SubtractOp, [x, peak])
    total = node.emit(graph.ReduceSumOp, [node.emit(graph.ExpOp, [shifted])], axes=[axis], keepdims=True)
    return node.emit(graph.SubtractOp, [shifted, node.emit(graph.LogOp, [total])])


@converter("LogSoftmax", 1, 12)
def _log_softmax_1(node: _Node) -> SSAValue:
    x = node.tensor(0)
    shape = shape_of(x)
    axis = _normalize_axes(node, [node.attr("axis", 1)], len(shape))[0]
    flat = node.reshape(x, [math.prod(shape[:axis]), math.prod(shape[axis:])])
    return node.reshape(_log_softmax_of(node, flat, 1), shape)


@converter("LogSoftmax", 13)
def _log_softmax_13(node: _Node) -> SSAValue:
    return _log_softmax_of(node, node.tensor(0), int(node.attr("axis", -1)))


@converter("Log", 6)
def _log(node: _Node) -> SSAValue:
    return node.emit(graph.LogOp, [node.tensor(0)])


# --------------------------------------------------------------------------
# Converters: resizing
# --------------------------------------------------------------------------


def _resize(
    node: _Node,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
    method: str,
    coordinates: str,
    rounding: str,
) -> SSAValue:
    x = node.tensor(0)
    shape = shape_of(x)
    if len(shape) != 4:
        raise node.unsupported(f"resizing data of rank {len(shape)} (ember resizes H and W of NCHW)")
    if method not in graph.RESIZE_METHODS:
        raise node.unsupported(f"mode '{method}'")
    if coordinates not in graph.RESIZE_COORDINATES:
        raise node.unsupported(f"coordinate_transformation_mode '{coordinates}'")
    if rounding not in graph.RESIZE_ROUNDING:
        raise node.unsupported(f"nearest_mode '{rounding}'")
    if sizes is not None and sizes.size:
        out = [int(v) for v in sizes.reshape(-1)]
        if len(out) != 4:
            raise node.error(f"sizes {out} must have 4 values")
        scale_h = scale_w = 0.0
    elif scales is not None and scales.size:
        factors = [float(v) for v in scales.reshape(-1)]
        if len(factors) != 4:
            raise node.error(f"scales {factors} must have 4 values")
        out = [int(math.floor(n * f)) for n, f in zip(shape, factors)]
        scale_h, scale_w = factors[2], factors[3]
    else:
        raise node.error("needs scales or sizes")
    if out[:2] != list(shape[:2]):
        raise node.unsupported(f"resizing the N or C axis ({list(shape)} to {out})")
    return node.emit(
        graph.Resize2dOp,
        [x],
        size=out[2:],
        method=method,
        coordinate_transformation_mode=coordinates,
        nearest_mode=rounding,
        scale_h=scale_h,
        scale_w=scale_w,
    )


def _legacy_resize(node: _Node, scales: np.ndarray) -> SSAValue:
    # Upsample and Resize-10: asymmetric coordinates; nearest truncates when
    # enlarging and rounds up when shrinking (onnxruntime's "simple" mode).
    method = node.attr("mode", "nearest")
    rounding = "floor" if np.all(scales >= 1) else "ceil"
    return _resize(node, scales, None, method, "asymmetric", rounding)


@converter("Upsample", 9, 9)
def _upsample(node: _Node) -> SSAValue:
    return _legacy_resize(node, node.constant(1, "scales").astype(np.float32))


@converter("Resize", 10, 10)
def _resize_10(node: _Node) -> SSAValue:
    return _legacy_resize(node, node.constant(1, "scales").astype(np.float32))


@converter("Resize", 11)
def _resize_11(node: _Node) -> SSAValue:
    if node.attr("antialias", 0):
        raise node.unsupported("antialias = 1")
    if node.opset >= 18 and node.attr("axes") is not None:
        raise node.unsupported("the axes attribute")
    if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise node.unsupported(f"keep_aspect_ratio_policy '{node.attr('keep_aspect_ratio_policy')}'")
    scales = node.optional_constant(2, "scales")
    sizes = node.optional_constant(3, "sizes")
    return _resize(
        node,
        None if scales is None else scales.astype(np.float32),
        sizes,
        node.attr("mode", "nearest"),
        node.attr("coordinate_transformation_mode", "half_pixel"),
        node.attr("nearest_mode", "round_prefer_floor"),
    )


@converter("LRN", 1)
def _lrn(node: _Node) -> SSAValue:
    return node.emit(
        graph.LrnOp,
        [node.tensor(0)],
        size=int(node.attr("size")),
        alpha=float(node.attr("alpha", 1e-4)),
        beta=float(node.attr("beta", 0.75)),
        bias=float(node.attr("bias", 1.0)),
    )
