"""Graph passes simplify-inference, fold-constants, bind-params and apply_passes.

Soundness is shown the way DESIGN.md asks: random well-typed programs from
:mod:`ember.testing.strategies`, interpreted before and after the pass, must
agree (exactly where the pass only evaluates the reference semantics, within
a tolerance by dtype where it re-associates arithmetic), and the result must
verify.  Unit tests pin the API: new modules are returned, arguments are never
modified, and every mistake is a PassError naming what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

import ember
from ember.dialects.graph import ConstantOp, Conv2dOp, DenseOp, MultiplyOp, tensor_type
from ember.errors import IRError, PassError
from ember.ir import to_text
from ember.passes import PASSES
from ember.passes.bind_params import bind_params
from ember.passes.fold_constants import FoldConstantsPass
from ember.passes.pipeline import apply_passes, available_passes, parse_passes
from ember.passes.simplify_inference import SimplifyInferencePass
from ember.testing import assert_same_values, workloads
from ember.testing.strategies import GraphProgram, arrays_for, graph_programs, op_names

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

# Relative tolerance by dtype for passes that change rounding (scale folded
# into weights, batch_norm as multiply + add): a few ulps of f32, and for f16
# the extra roundings of the decomposed ops.
_RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float16): 1e-2}

# Programs checked within a tolerance leave out the ops whose output can move
# far when an input moves by an ulp: sqrt near 0 (unbounded slope), divide,
# exp, softmax (amplify), and casts to integers (jump).
_SMOOTH_OPS = (
    "conv2d", "dense", "matmul", "bias_add", "batch_norm", "relu", "sigmoid",
    "tanh", "clip", "add", "subtract", "multiply", "maximum", "minimum",
    "max_pool2d", "avg_pool2d", "global_avg_pool2d", "batch_flatten",
    "reshape", "transpose", "concatenate", "constant",
)  # fmt: skip


def assert_close(after: list[np.ndarray], before: list[np.ndarray]) -> None:
    """Same dtypes and shapes; values within the dtype's tolerance, measured
    against the largest magnitude of the output (cancellation in a sum makes
    small elements carry the absolute error of large ones)."""
    assert len(after) == len(before)
    for got, want in zip(after, before):
        rtol = _RTOL.get(want.dtype, 0.0)
        assert_same_values(got, want, rtol=rtol, atol=rtol, scale_atol=True)


def run(program: GraphProgram, module: ModuleOp, *inputs: np.ndarray) -> list[np.ndarray]:
    return ember.interpret(module, program.entry, *inputs)


def entry_ops(module: ModuleOp) -> tuple[str, ...]:
    return op_names(module, "main")


# --------------------------------------------------------------------------
# Soundness: property tests
# --------------------------------------------------------------------------


@given(
    graph_programs(
        ops=("batch_norm", "conv2d", "relu", "constant"),
        dtypes=("float32", "float16"),
        max_ops=5,
    )
)
def test_simplify_inference_is_sound(program: GraphProgram) -> None:
    assume("graph.batch_norm" in program.op_names)
    before = run(program, program.module, *program.inputs)
    module = apply_passes(program.module, "simplify-inference")
    ember.verify_module(module)
    assert "graph.batch_norm" not in entry_ops(module)
    assert_close(run(program, module, *program.inputs), before)


_NO_ANCHORS = tuple(
    name for name in (op.name.removeprefix("graph.") for op in ember.dialects.graph.GRAPH_OPS)
    if name not in ("conv2d", "dense")
)


@given(graph_programs(ops=_NO_ANCHORS, dtypes=("float32", "float16", "int32")))
def test_fold_constants_evaluation_is_exact(program: GraphProgram) -> None:
    """Without conv2d/dense only evaluation fires: the reference semantics,
    so the results are bit-identical."""
    before = run(program, program.module, *program.inputs)
    module = apply_passes(program.module, "fold-constants")
    ember.verify_module(module)
    for got, want in zip(run(program, module, *program.inputs), before):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # Nothing is left that only needs constants.
    for op in module.walk():
        if isinstance(op, ember.dialects.graph.GraphOp) and op.operands:
            assert not all(
                isinstance(v.owner, ember.dialects.graph.ConstantOp) for v in op.operands
            ), f"{op.name} on constants was not folded"


@given(
    graph_programs(
        ops=("conv2d", "dense", "batch_norm", "multiply", "relu", "constant", "add"),
        dtypes=("float32", "float16"),
        max_ops=6,
    )
)
def test_simplify_inference_then_fold_constants_is_sound(program: GraphProgram) -> None:
    """With conv2d/dense and batch_norm/multiply, scales fold into weights."""
    before = run(program, program.module, *program.inputs)
    module = apply_passes(program.module, "simplify-inference,fold-constants")
    ember.verify_module(module)
    assert_close(run(program, module, *program.inputs), before)


@given(graph_programs(ops=_SMOOTH_OPS, dtypes=("float32", "float16")))
def test_pipeline_is_sound_on_mixed_programs(program: GraphProgram) -> None:
    """Every op family at once (bar the non-smooth ones, see _SMOOTH_OPS)."""
    before = run(program, program.module, *program.inputs)
    module = apply_passes(program.module, "simplify-inference,fold-constants")
    ember.verify_module(module)
    assert_close(run(program, module, *program.inputs), before)


@st.composite
def scaled_anchors(draw: st.DrawFn) -> tuple[str, np.ndarray, bool]:
    """``multiply(conv2d or dense(x, W), s)`` with constant W and s: random
    geometry, a scale of a per-channel shape or not, in either operand order,
    and sometimes a second user of the anchor's result.  Returns the IR text,
    an input and whether the fold must fire (per-channel scale, one user)."""
    dtype = draw(st.sampled_from(["float32", "float16"]))

    def constant(shape: tuple[int, ...]) -> ConstantOp:
        return ConstantOp.from_array(draw(arrays_for(tensor_type(shape, dtype))))

    if draw(st.booleans()):
        groups = draw(st.integers(1, 2))
        n, c, o = draw(st.integers(1, 2)), groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 3))
        size, kernel = draw(st.integers(3, 5)), draw(st.integers(1, 3))
        x_type = tensor_type((n, c, size, size), dtype)
        weight = constant((o, c // groups, kernel, kernel))
        stride, pad = draw(st.integers(1, 2)), draw(st.integers(0, 1))
        block = Block(arg_types=[x_type])
        anchor = Conv2dOp.build(
            [block.args[0], weight], strides=(stride, stride), padding=(pad,) * 4, groups=groups
        )
        per_channel = [(o, 1, 1), (1, o, 1, 1), (), (1,)]
        others = [(anchor.result.type.get_shape()[3],), (n, 1, 1, 1), (2, 1, o, 1, 1)]
    else:
        n, k, units = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
        x_type = tensor_type((n, k), dtype)
        weight = constant((units, k))
        block = Block(arg_types=[x_type])
        anchor = DenseOp.build([block.args[0], weight])
        per_channel = [(units,), (1, units), ()]
        others = [(n, 1), (2, n, units)]
    scale_shape = draw(st.sampled_from(per_channel + others))
    scale = constant(scale_shape)
    operands = [anchor.result, scale.result]
    if draw(st.booleans()):
        operands.reverse()
    product = MultiplyOp.build(operands)
    shared = draw(st.booleans())
    results = [product.result, anchor.result] if shared else [product.result]
    block.add_ops([weight, scale, anchor, product, ReturnOp(*results)])
    func = FuncOp("main", ([x_type], [r.type for r in results]), Region(block))
    x = draw(arrays_for(x_type))
    # Per channel: after left-padding to the result's rank, every axis but
    # axis 1 (channels, units) has size 1.
    rank = len(anchor.result.type.get_shape())
    padded = (1,) * (rank - len(scale_shape)) + scale_shape
    per_output_channel = len(scale_shape) <= rank and all(
        size == 1 for axis, size in enumerate(padded) if axis != 1
    )
    # IR text, so that a failing example prints readably.
    return to_text(ModuleOp([func])), x, per_output_channel and not shared


@given(scaled_anchors())
def test_fold_scale_into_weights_is_sound(case: tuple[str, np.ndarray, bool]) -> None:
    text, x, must_fold = case
    module = ember.parse(text)
    before = ember.interpret(module, "main", x)
    folded = apply_passes(module, "fold-constants")
    ember.verify_module(folded)
    assert_close(ember.interpret(folded, "main", x), before)
    assert ("graph.multiply" not in entry_ops(folded)) == must_fold


@given(graph_programs(dtypes=("float32", "float16", "int32")), st.data())
def test_bind_params_is_sound(program: GraphProgram, data: st.DataObject) -> None:
    """Bind a random subset of the arguments to the program's own inputs."""
    count = len(program.inputs)
    assume(count > 0)
    chosen = data.draw(st.sets(st.integers(0, count - 1), min_size=1), label="bound")
    params = {f"arg{i}": program.inputs[i] for i in chosen}
    text_before = to_text(program.module)
    before = run(program, program.module, *program.inputs)

    module = bind_params(program.module, params)

    assert to_text(program.module) == text_before, "bind_params modified its argument"
    ember.verify_module(module)
    remaining = [x for i, x in enumerate(program.inputs) if i not in chosen]
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    assert len(func.args) == count - len(chosen)
    for got, want in zip(run(program, module, *remaining), before):
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------
# conv2d + batch_norm on a real workload
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_convbnrelu_folds_into_conv_weights(dtype: str) -> None:
    module, params = workloads.get("convbnrelu", dtype)
    bound = bind_params(module, params)
    folded = apply_passes(bound, "simplify-inference,fold-constants")

    ops = entry_ops(folded)
    assert "graph.batch_norm" not in ops and "graph.multiply" not in ops
    assert [o for o in ops if o != "graph.constant"] == ["graph.conv2d", "graph.add", "graph.relu", "func.return"]
    assert ops.count("graph.constant") == 2  # folded weight, shift
    func = next(op for op in folded.ops if isinstance(op, FuncOp))
    assert [a.name_hint for a in func.args] == ["data"]

    data = np.random.default_rng(1).uniform(-1, 1, (1, 3, 224, 224)).astype(dtype)
    (want,) = ember.interpret(module, "main", data, *params.values())
    (got,) = ember.interpret(folded, "main", data)
    assert_close([got], [want])


# --------------------------------------------------------------------------
# bind_params: API and errors
# --------------------------------------------------------------------------

_MLP = """
func.func @main(%x: tensor<1x3xf32>, %w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<1x2xf32> {
  %d = graph.dense %x, %w : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
  %y = graph.bias_add %d, %b : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
"""


def test_bind_params_returns_a_new_module_without_the_bound_arguments() -> None:
    module = ember.parse(_MLP)
    text = to_text(module)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    bound = bind_params(module, {"w": w, "b": [1.0, -1.0]})
    assert to_text(module) == text
    func = next(op for op in bound.ops if isinstance(op, FuncOp))
    assert [a.name_hint for a in func.args] == ["x"]
    assert [str(t) for t in func.function_type.inputs] == ["tensor<1x3xf32>"]
    w[0, 0] = 100.0  # the module holds a copy
    x = np.ones((1, 3), np.float32)
    (y,) = ember.interpret(bound, "main", x)
    np.testing.assert_array_equal(y, [[4.0, 11.0]])


def test_bind_params_unknown_name_lists_the_arguments() -> None:
    with pytest.raises(PassError, match=r"@main has no argument named 'bias' \(arguments: x, w, b\)"):
        bind_params(ember.parse(_MLP), {"bias": np.zeros(2, np.float32)})
    with pytest.raises(PassError, match=r"no argument named 'w0'; did you mean 'w'\?"):
        bind_params(ember.parse(_MLP), {"w0": np.zeros((2, 3), np.float32)})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.zeros((3, 2), np.float32), r"argument %w of @main is tensor<2x3xf32> \(float32\[2, 3\]\), but the array is float32\[3, 2\]"),
        (np.zeros((2, 3), np.float16), r"argument %w .* but the array is float16\[2, 3\]"),
        ("weights", r"argument %w of @main: cannot use str as an array"),
    ],
)
def test_bind_params_checks_shape_and_dtype(value: object, message: str) -> None:
    module = ember.parse(_MLP)
    text = to_text(module)
    with pytest.raises(PassError, match=message):
        bind_params(module, {"b": np.zeros(2, np.float32), "w": value})
    assert to_text(module) == text


def test_bind_params_names_unnamed_arguments_by_position() -> None:
    module = ember.parse(
        "func.func @main(%0: tensor<2xf32>, %1: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %2 = graph.add %0, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
        "  func.return %2 : tensor<2xf32>\n}\n"
    )
    bound = bind_params(module, {"arg1": np.array([1, 2], np.float32)})
    (y,) = ember.interpret(bound, "main", np.array([10, 20], np.float32))
    np.testing.assert_array_equal(y, [11, 22])


def test_bind_params_rejects_other_entries_and_called_functions() -> None:
    with pytest.raises(PassError, match=r"no function @net in the module \(functions: @main\)"):
        bind_params(ember.parse(_MLP), {}, entry="net")
    called = _MLP + (
        "func.func @caller(%x: tensor<1x3xf32>, %w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<1x2xf32> {\n"
        "  %y = func.call @main(%x, %w, %b) : (tensor<1x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<1x2xf32>\n"
        "  func.return %y : tensor<1x2xf32>\n}\n"
    )
    with pytest.raises(PassError, match="@main is referenced by func.call"):
        bind_params(ember.parse(called), {"b": np.zeros(2, np.float32)})
    with pytest.raises(PassError, match="params must map argument names to arrays"):
        bind_params(ember.parse(_MLP), [np.zeros(2, np.float32)])  # type: ignore[arg-type]


def test_bind_params_pass_reads_an_npz_file(tmp_path) -> None:
    path = tmp_path / "params.npz"
    np.savez(path, w=np.ones((2, 3), np.float32), b=np.zeros(2, np.float32))
    bound = apply_passes(_MLP, f'bind-params{{file="{path}" names=w}}')
    func = next(op for op in bound.ops if isinstance(op, FuncOp))
    assert [a.name_hint for a in func.args] == ["x", "b"]
    with pytest.raises(PassError, match="bind-params needs a params file"):
        apply_passes(_MLP, "bind-params")
    not_npz = tmp_path / "w.npy"
    np.save(not_npz, np.ones(2))
    with pytest.raises(PassError, match="holds one array, not a .npz archive"):
        apply_passes(_MLP, f'bind-params{{file="{not_npz}"}}')


# --------------------------------------------------------------------------
# apply_passes and the registry
# --------------------------------------------------------------------------


def test_apply_passes_returns_a_new_module_and_leaves_its_argument() -> None:
    module, params = workloads.get("tiny_pipe")
    text = to_text(module)
    out = apply_passes(module, "simplify-inference,canonicalize,cse,dce")
    assert to_text(module) == text
    assert out is not module
    assert "graph.batch_norm" not in entry_ops(out)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    assert_close(
        ember.interpret(out, "main", x, *params.values()),
        ember.interpret(module, "main", x, *params.values()),
    )


def test_apply_passes_accepts_pass_instances_and_text() -> None:
    out = apply_passes(_MLP, [SimplifyInferencePass(), FoldConstantsPass()])
    assert entry_ops(out) == ("graph.dense", "graph.bias_add", "func.return")
    with pytest.raises(PassError, match="expected pipeline text or ModulePass instances"):
        apply_passes(_MLP, ["fold-constants"])  # type: ignore[list-item]
    with pytest.raises(IRError):
        apply_passes("func.func @main(", "cse")


def test_unknown_pass_suggests_the_closest_name_alone() -> None:
    with pytest.raises(PassError) as error:
        apply_passes(_MLP, "simplify-inference,fold-constant")
    # One line, not the 150 passes xDSL registers.
    assert str(error.value) == "unknown pass 'fold-constant'; did you mean 'fold-constants'?"


def test_unknown_pass_without_a_close_name_lists_embers_passes() -> None:
    with pytest.raises(PassError) as error:
        apply_passes(_MLP, "zzqqxx")
    message = str(error.value)
    assert message.startswith("unknown pass 'zzqqxx' (ember's passes: bind-params, ")
    assert "ember-opt --help" in message and "convert-arith-to-riscv" not in message


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bind-params{nmes=w}", r"invalid options for pass 'bind-params'.*nmes.*\(options: file: .*names: .*entry: "),
        ("split-graph{indices=x}", r"invalid options for pass 'split-graph': Incompatible types"),
        ("cse,,dce", r"invalid pass pipeline 'cse,,dce': expected a pass name at column 5"),
        ("cse dce", r"expected ',' between passes at column 5"),
        ("canonicalize{", r"missing '}' after the options of pass 'canonicalize'"),
        ('split-graph{ops="relu}', r'unterminated "-quoted value at column 17'),
        ("split-graph{ops={{relu}", r"unbalanced '\{' in a value"),
    ],
)
def test_bad_pipelines_are_pass_errors(spec: str, message: str) -> None:
    with pytest.raises(PassError, match=message):
        parse_passes(spec)


@pytest.mark.parametrize(
    ("spec", "ops", "indices"),
    [
        # MLIR's syntax: dotted names and comma-separated lists, unquoted.
        ("split-graph{ops=graph.relu indices=0}", ("graph.relu",), (0,)),
        ("split-graph{ops=graph.relu,graph.add indices=0,2}", ("graph.relu", "graph.add"), (0, 2)),
        ("split-graph{ ops=graph.relu  indices=1 }", ("graph.relu",), (1,)),
        # The short and quoted forms still work.
        ("split-graph{ops=relu indices=0}", ("relu",), (0,)),
        ('split-graph{ops="graph.relu","add" indices=0,0}', ("graph.relu", "add"), (0, 0)),
        ("split-graph{ops='graph.relu' indices=3}", ("graph.relu",), (3,)),
        ("split-graph{ops={graph.relu} indices=3}", ("graph.relu",), (3,)),
    ],
)
def test_pass_options_in_mlir_syntax(spec: str, ops: tuple[str, ...], indices: tuple[int, ...]) -> None:
    (split,) = parse_passes(spec)
    assert (split.ops, split.indices) == (ops, indices)  # type: ignore[attr-defined]


def test_option_values_take_the_options_declared_type() -> None:
    # A string option keeps digits and dots as text, as mlir-opt reads it.
    (bind,) = parse_passes("bind-params{file=/tmp/w.v1.npz names=0,w.1 entry=3}")
    assert (bind.file, bind.names, bind.entry) == ("/tmp/w.v1.npz", ("0", "w.1"), "3")  # type: ignore[attr-defined]
    passes = parse_passes("cse,lower-graph-to-kernel{vector-bits=256 annotate=true}")
    assert (passes[1].vector_bits, passes[1].annotate) == (256, True)  # type: ignore[attr-defined]


def test_registry_merges_xdsl_and_ember_passes() -> None:
    passes = available_passes()
    for name in ("canonicalize", "cse", "dce", *PASSES):
        assert name in passes
    for name in ("simplify-inference", "fold-constants", "bind-params"):
        pass_class = passes[name]()
        assert issubclass(pass_class, ModulePass) and pass_class.name == name
        assert (pass_class.__doc__ or "").strip(), f"{name} has no description"


def test_fold_constants_keeps_dead_code_it_did_not_create() -> None:
    module = ember.parse(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %dead = graph.relu %x : tensor<2xf32>\n"
        "  %c = graph.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>\n"
        "  %unused = graph.constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>\n"
        "  %n = graph.negative %c : tensor<2xf32>\n"
        "  func.return %n : tensor<2xf32>\n}\n"
    )
    out = apply_passes(module, "fold-constants")
    assert entry_ops(out) == ("graph.relu", "graph.constant", "graph.constant", "func.return")


def test_fold_constants_keeps_a_scale_whose_folded_weight_would_overflow() -> None:
    module = ember.parse(
        "func.func @main(%x: tensor<1x2xf16>) -> tensor<1x1xf16> {\n"
        "  %w = graph.constant {value = dense<60000.0> : tensor<1x2xf16>} : tensor<1x2xf16>\n"
        "  %s = graph.constant {value = dense<2.0> : tensor<1xf16>} : tensor<1xf16>\n"
        "  %d = graph.dense %x, %w : (tensor<1x2xf16>, tensor<1x2xf16>) -> tensor<1x1xf16>\n"
        "  %y = graph.multiply %d, %s : (tensor<1x1xf16>, tensor<1xf16>) -> tensor<1x1xf16>\n"
        "  func.return %y : tensor<1x1xf16>\n}\n"
    )
    out = apply_passes(module, "fold-constants")
    assert entry_ops(out) == entry_ops(module)
    x = np.array([[1e-4, -1e-4]], np.float16)
    np.testing.assert_array_equal(
        ember.interpret(out, "main", x)[0], ember.interpret(module, "main", x)[0]
    )


def test_bind_params_never_truncates_python_floats_into_integers() -> None:
    module = ember.parse(
        "func.func @main(%x: tensor<2xi32>, %k: tensor<2xi32>) -> tensor<2xi32> {\n"
        "  %y = graph.add %x, %k : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>\n"
        "  func.return %y : tensor<2xi32>\n}\n"
    )
    with pytest.raises(PassError, match="argument %k of @main: .*float64 elements do not convert to int32"):
        bind_params(module, {"k": [1.5, 2.0]})
    bound = bind_params(module, {"k": [1, 2]})
    (y,) = ember.interpret(bound, "main", np.array([10, 20], np.int32))
    np.testing.assert_array_equal(y, [11, 22])


@dataclass(frozen=True)
class _FailingPass(ModulePass):
    """Fails as xDSL passes do, with a diagnostic."""

    name = "test-failing"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise DiagnosticException("graph.relu: cannot handle this op")


@dataclass(frozen=True)
class _BreakingPass(ModulePass):
    """Leaves IR that does not verify (a relu with an unknown attribute)."""

    name = "test-breaking"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        relu = next(o for o in op.walk() if o.name == "graph.relu")
        relu.attributes["bogus"] = UnitAttr()


def test_apply_passes_reports_failing_and_breaking_passes() -> None:
    text = (
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %y = graph.relu %x : tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n"
    )
    with pytest.raises(PassError, match="pass 'test-failing' failed: graph.relu: cannot handle"):
        apply_passes(text, [_FailingPass()])
    with pytest.raises(PassError, match="IR after pass 'test-breaking' does not verify"):
        apply_passes(text, [_BreakingPass()])
    apply_passes(text, [_BreakingPass()], verify=False)  # the caller's choice
