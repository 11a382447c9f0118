"""Export an ember graph function to ONNX, for the onnxruntime peer.

The translation reads ember's graph IR — the same ``func.func @main`` that
``ember.build`` compiles — and emits one ONNX node per graph op with
``onnx.helper``, so onnxruntime runs exactly the network ember runs:

=====================  ==============================================
ember op               ONNX
=====================  ==============================================
conv2d                 Conv (pads top, left, bottom, right as given)
batch_norm             BatchNormalization (inference form, axis 1)
dense [+ bias_add]     Gemm transB=1 (bias as C when dense feeds only it)
bias_add               Reshape the bias to broadcast along ``axis``, Add
matmul                 MatMul
max_pool2d/avg_pool2d  MaxPool/AveragePool (floor mode, dilations)
global_avg_pool2d      GlobalAveragePool
batch_flatten          Flatten axis=1
reshape                Reshape to the result type's shape
clip                   Clip (bounds as scalar inputs of the data's type)
concatenate            Concat
relu, add, …           the ONNX op of the same meaning
constant               an initializer
=====================  ==============================================

Arguments of the function whose names are in ``params`` become
initializers (so onnxruntime can fold and pre-pack them, as it does for a
model exported from a framework); the others are the model's inputs, by the
names written in the IR.  Graph optimisations (batch_norm folding, Conv+Relu
fusion, …) are left to onnxruntime, whose default level enables them all.

It mirrors what ``torch.onnx.export`` produces for these networks; the
opposite direction (ONNX into ember) is ``ember.frontends.onnx``'s job.
The benchmarks (benchmarks/compare.py) time onnxruntime on the exported
model; the test suite compares ember's compiled code with it, NaN and inf
included.  Requires the optional ``onnx`` and ``onnxruntime`` packages
(``pip install -e .[test]`` or ``.[bench]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from ember.dialects import graph
from ember.errors import EmberError

if TYPE_CHECKING:
    import onnx
    import onnxruntime

__all__ = ["EXPORTABLE_OPS", "OPSET", "OnnxExportError", "export", "inference_session"]

OPSET = 19  # AveragePool takes dilations from 19; the other ops' meaning is that of 13
IR_VERSION = 9  # the oldest IR version that opset 19 allows

INSTALL_HINT = "install the test or benchmark extra: pip install -e .[test]"


class OnnxExportError(EmberError):
    """A module that cannot be exported: an unsupported op or a missing package."""


def _require_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise OnnxExportError(
            f"exporting to ONNX needs the 'onnx' package; {INSTALL_HINT}"
        ) from None
    return onnx


@dataclass
class _Exporter:
    """Builds the ONNX graph of one function, op by op."""

    onnx: Any
    names: dict[SSAValue, str] = field(default_factory=dict)
    nodes: list[Any] = field(default_factory=list)
    initializers: list[Any] = field(default_factory=list)
    # bias_add ops already emitted as the C operand of the Gemm before them.
    absorbed: set[Operation] = field(default_factory=set)

    def name(self, value: SSAValue) -> str:
        return self.names[value]

    def fresh(self, value: SSAValue) -> str:
        name = f"v{len(self.names)}"
        self.names[value] = name
        return name

    def fresh_name(self, hint: str) -> str:
        """A name for an intermediate that has no ember value of its own."""
        return f"{hint}_{len(self.nodes)}"

    def constant(self, hint: str, array: np.ndarray) -> str:
        name = f"{hint}_{len(self.initializers)}"
        self.initializers.append(
            self.onnx.numpy_helper.from_array(np.asarray(array), name)
        )
        return name

    def node(self, op_type: str, inputs: list[str], output: str, **attrs: Any) -> None:
        self.nodes.append(
            self.onnx.helper.make_node(
                op_type, inputs, [output], name=f"n{len(self.nodes)}", **attrs
            )
        )

    def emit(self, op: Operation) -> None:
        if op in self.absorbed:
            return
        translate = _TRANSLATIONS.get(op.name)
        if translate is None:
            known = ", ".join(sorted(_TRANSLATIONS))
            raise OnnxExportError(
                f"cannot export '{op.name}' to ONNX (exportable ops: {known})"
            )
        translate(self, op)


Translation = Callable[[_Exporter, Any], None]


def _simple(op_type: str) -> Translation:
    """An op whose operands and meaning are ONNX ``op_type``'s."""

    def translate(ex: _Exporter, op: graph.GraphOp) -> None:
        ex.node(op_type, [ex.name(v) for v in op.operands], ex.fresh(op.results[0]))

    return translate


def _conv2d(ex: _Exporter, op: graph.Conv2dOp) -> None:
    attrs = op.attr_values()
    kernel = list(graph.shape_of(op.operands[1])[2:])
    ex.node(
        "Conv",
        [ex.name(op.operands[0]), ex.name(op.operands[1])],
        ex.fresh(op.results[0]),
        kernel_shape=kernel,
        strides=list(attrs["strides"]),
        pads=list(
            attrs["padding"]
        ),  # ember's (top, left, bottom, right) is ONNX's order
        dilations=list(attrs["dilation"]),
        group=attrs["groups"],
    )


def _batch_norm(ex: _Exporter, op: graph.BatchNormOp) -> None:
    attrs = op.attr_values()
    if attrs["axis"] != 1:
        raise OnnxExportError(
            f"cannot export graph.batch_norm with axis={attrs['axis']}: "
            "ONNX BatchNormalization normalises axis 1"
        )
    ex.node(
        "BatchNormalization",
        [ex.name(v) for v in op.operands],
        ex.fresh(op.results[0]),
        epsilon=attrs["epsilon"],
    )


def _gemm_bias(op: graph.DenseOp) -> graph.BiasAddOp | None:
    """The bias_add that is the only user of ``op``'s result, if it adds along axis 1."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].operation
    if isinstance(user, graph.BiasAddOp) and user.attr_values()["axis"] in (1, -1):
        return user
    return None


def _dense(ex: _Exporter, op: graph.DenseOp) -> None:
    inputs = [ex.name(op.operands[0]), ex.name(op.operands[1])]
    result = op.results[0]
    bias_add = _gemm_bias(op)
    if bias_add is not None:
        ex.absorbed.add(bias_add)
        inputs.append(ex.name(bias_add.operands[1]))
        result = bias_add.results[0]
    ex.node("Gemm", inputs, ex.fresh(result), transB=1)


def _bias_add(ex: _Exporter, op: graph.BiasAddOp) -> None:
    rank = len(graph.shape_of(op.operands[0]))
    axis = op.attr_values()["axis"] % rank
    # Broadcast the 1-D bias along `axis`: shape (C, 1, …, 1) with rank-1-axis ones.
    shape = np.array([-1] + [1] * (rank - 1 - axis), dtype=np.int64)
    bias = ex.fresh_name("bias_bcast")
    ex.node("Reshape", [ex.name(op.operands[1]), ex.constant("shape", shape)], bias)
    ex.node("Add", [ex.name(op.operands[0]), bias], ex.fresh(op.results[0]))


def _pool(op_type: str) -> Translation:
    def translate(ex: _Exporter, op: graph.GraphOp) -> None:
        attrs = op.attr_values()
        extra = {}
        if "count_include_pad" in attrs:
            extra["count_include_pad"] = int(attrs["count_include_pad"])
        ex.node(
            op_type,
            [ex.name(op.operands[0])],
            ex.fresh(op.results[0]),
            kernel_shape=list(attrs["pool_size"]),
            strides=list(attrs["strides"]),
            pads=list(attrs["padding"]),
            dilations=list(attrs["dilation"]),
            **extra,
        )

    return translate


def _batch_flatten(ex: _Exporter, op: graph.GraphOp) -> None:
    ex.node("Flatten", [ex.name(op.operands[0])], ex.fresh(op.results[0]), axis=1)


def _reshape(ex: _Exporter, op: graph.GraphOp) -> None:
    shape = np.array(graph.shape_of(op.results[0]), dtype=np.int64)
    ex.node(
        "Reshape",
        [ex.name(op.operands[0]), ex.constant("shape", shape)],
        ex.fresh(op.results[0]),
    )


def _softmax(ex: _Exporter, op: graph.GraphOp) -> None:
    axis = op.attr_values()["axis"]
    ex.node("Softmax", [ex.name(op.operands[0])], ex.fresh(op.results[0]), axis=axis)


def _clip(ex: _Exporter, op: graph.GraphOp) -> None:
    attrs = op.attr_values()
    dtype = graph.numpy_dtype(op.operands[0].type.element_type)
    bounds = [ex.constant(k, np.array(attrs[k], dtype)) for k in ("min", "max")]
    ex.node("Clip", [ex.name(op.operands[0]), *bounds], ex.fresh(op.results[0]))


def _concatenate(ex: _Exporter, op: graph.GraphOp) -> None:
    axis = op.attr_values()["axis"]
    ex.node(
        "Concat", [ex.name(v) for v in op.operands], ex.fresh(op.results[0]), axis=axis
    )


def _constant(ex: _Exporter, op: graph.GraphOp) -> None:
    array = graph.dense_to_array(op.properties["value"])
    ex.names[op.results[0]] = ex.constant("const", array)


_TRANSLATIONS: dict[str, Translation] = {
    "graph.conv2d": _conv2d,
    "graph.batch_norm": _batch_norm,
    "graph.dense": _dense,
    "graph.bias_add": _bias_add,
    "graph.matmul": _simple("MatMul"),
    "graph.max_pool2d": _pool("MaxPool"),
    "graph.avg_pool2d": _pool("AveragePool"),
    "graph.global_avg_pool2d": _simple("GlobalAveragePool"),
    "graph.batch_flatten": _batch_flatten,
    "graph.reshape": _reshape,
    "graph.softmax": _softmax,
    "graph.clip": _clip,
    "graph.concatenate": _concatenate,
    "graph.constant": _constant,
    "graph.relu": _simple("Relu"),
    "graph.sigmoid": _simple("Sigmoid"),
    "graph.tanh": _simple("Tanh"),
    "graph.exp": _simple("Exp"),
    "graph.sqrt": _simple("Sqrt"),
    "graph.log": _simple("Log"),
    "graph.negative": _simple("Neg"),
    "graph.add": _simple("Add"),
    "graph.subtract": _simple("Sub"),
    "graph.multiply": _simple("Mul"),
    "graph.divide": _simple("Div"),
    "graph.maximum": _simple("Max"),
    "graph.minimum": _simple("Min"),
}


EXPORTABLE_OPS: frozenset[str] = frozenset(_TRANSLATIONS)
"""Names of the graph ops :func:`export` translates."""


def _entry(module: ModuleOp, entry: str) -> func.FuncOp:
    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            return op
    raise OnnxExportError(f"the module has no function @{entry} to export")


def _value_info(onnx: Any, name: str, value: SSAValue) -> Any:
    t = value.type
    if not isinstance(t, TensorType):
        raise OnnxExportError(f"cannot export {name!r}: its type {t} is not a tensor")
    dtype = graph.numpy_dtype(t.element_type)
    elem = onnx.helper.np_dtype_to_tensor_dtype(dtype)
    return onnx.helper.make_tensor_value_info(name, elem, list(t.get_shape()))


def export(
    module: ModuleOp,
    params: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str = "main",
) -> onnx.ModelProto:
    """The ONNX model of function ``entry`` of ``module``, ``params`` bound as initializers.

    Raises :class:`OnnxExportError` naming an op that has no ONNX translation,
    or a param that is not an argument of ``entry``.
    """
    onnx = _require_onnx()
    params = dict(params or {})
    function = _entry(module, entry)
    ex = _Exporter(onnx)
    inputs = []
    arg_names = []
    for index, arg in enumerate(function.body.block.args):
        name = arg.name_hint or f"arg{index}"
        arg_names.append(name)
        ex.names[arg] = name
        if name in params:
            ex.initializers.append(
                onnx.numpy_helper.from_array(np.asarray(params[name]), name)
            )
        else:
            inputs.append(_value_info(onnx, name, arg))
    unknown = sorted(set(params) - set(arg_names))
    if unknown:
        raise OnnxExportError(
            f"params {unknown} are not arguments of @{entry} (arguments: {', '.join(arg_names)})"
        )
    outputs = []
    for op in function.body.block.ops:
        if isinstance(op, func.ReturnOp):
            outputs = [_value_info(onnx, ex.name(v), v) for v in op.operands]
            continue
        ex.emit(op)
    model = onnx.helper.make_model(
        onnx.helper.make_graph(ex.nodes, entry, inputs, outputs, ex.initializers),
        opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        producer_name="ember-benchmarks",
        ir_version=IR_VERSION,
    )
    onnx.checker.check_model(model)
    return model


def inference_session(
    model: onnx.ModelProto, threads: int = 2
) -> onnxruntime.InferenceSession:
    """An onnxruntime CPU session for ``model`` with ``threads`` intra-op threads.

    All graph optimisations on; one inter-op thread (the workloads are
    chains), so ``threads`` is the whole thread budget.
    """
    try:
        import onnxruntime
    except ImportError:
        raise OnnxExportError(
            f"running ONNX models needs 'onnxruntime'; {INSTALL_HINT}"
        ) from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = (
        3  # warnings about unused initializers etc. are noise here
    )
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
