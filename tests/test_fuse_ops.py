"""fuse-ops: groups are sound, maximal where they may be, and become one kernel.

* Property tests on random programs (:func:`ember.testing.strategies.
  graph_programs`): after ``fuse-ops`` the module verifies and the reference
  interpreter computes the same results (bit for bit: fusion only moves ops
  into functions, it never changes arithmetic); every fused function is a
  group that ``lower-graph-to-kernel`` accepts; no two plain ops are left
  that could have formed a group; running the pass again changes nothing.
  On small programs the fused kernels themselves are run by the kernel
  interpreter and compared with the reference (tolerance by dtype).
* Unit tests for the rules (several consumers, opaque ops, max-depth,
  names), and the workloads: kernel counts with and without fusion, and
  convbnrelu built to native code with fusion still computing what the
  reference interpreter computes.

IR in and out, case by case, is in ``tests/filecheck/passes/fuse-ops.mlir``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp

import ember
from ember.dialects.graph import CallKernelOp, FusionKind, fusion_kind, shape_of
from ember.dialects.kernel import is_kernel
from ember.errors import PassError
from ember.lowering.graph_to_kernel import make_group
from ember.passes.fuse_ops import FUSED_ATTR, FuseOpsPass, fused_functions
from ember.testing import assert_same_values, workloads
from ember.testing.strategies import GraphProgram, graph_programs

# (rtol, atol) by result dtype for kernels against the reference; ints exact.
TOLERANCES = {
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float16): (1e-2, 1e-2),
}

FOLD = "simplify-inference,fold-constants"
FUSED_PIPELINE = "simplify-inference,fold-constants,canonicalize,cse,dce,fuse-ops"

ALL_PROGRAMS = graph_programs(dtypes=("float32", "float16", "int32"), max_ops=10)
"""Every op, DAGs with shared values, opaque softmax among them."""

FUSABLE_OPS = (
    "conv2d", "dense", "matmul", "max_pool2d", "global_avg_pool2d", "bias_add",
    "relu", "sigmoid", "exp", "clip", "negative", "add", "multiply", "maximum",
    "batch_flatten", "reshape", "transpose", "cast", "constant",
)  # fmt: skip
FUSABLE_PROGRAMS = graph_programs(
    ops=FUSABLE_OPS, dtypes=("float32", "float16"), max_ops=8
)
"""Anchors and epilogue ops only, so that most programs have groups."""

# dense is left out until its generator handles a weight that is also read
# elsewhere (dense(x, x) trips an assertion in graph_to_kernel._gen_dense);
# the dense groups of the workloads are checked below.
KERNEL_OPS = (
    "matmul", "bias_add", "relu", "sigmoid", "clip", "add", "multiply",
    "subtract", "transpose", "reshape", "batch_flatten", "cast", "constant",
)  # fmt: skip
KERNEL_PROGRAMS = graph_programs(ops=KERNEL_OPS, dtypes=("float32", "int32"), max_ops=5)
"""Ops whose tiny kernels the (slow) kernel interpreter runs quickly."""


def fuse(module: ModuleOp | str, options: str = "") -> ModuleOp:
    return ember.apply_passes(module, f"fuse-ops{options}")


def main_of(module: ModuleOp) -> FuncOp:
    return next(
        op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == "main"
    )


def body_ops(func: FuncOp) -> list:
    return [op for op in func.body.block.ops if not isinstance(op, ReturnOp)]


def callees(func: FuncOp) -> list[str]:
    """Names called by ``func`` (func.call and graph.call_kernel), in order."""
    names = []
    for op in func.body.block.ops:
        if isinstance(op, CallOp):
            names.append(op.callee.root_reference.data)
        elif isinstance(op, CallKernelOp):
            names.append(op.callee)
    return names


def assert_same(
    before: Sequence[np.ndarray], after: Sequence[np.ndarray], where: str, exact: bool
) -> None:
    assert len(after) == len(before)
    for i, (b, a) in enumerate(zip(before, after)):
        message = f"result {i} of\n{where}"
        rtol, atol = (0.0, 0.0) if exact else TOLERANCES.get(b.dtype, (0.0, 0.0))
        assert_same_values(a, b, rtol=rtol, atol=atol, what=message)


def assert_no_group_left(module: ModuleOp) -> None:
    """No plain op with a single consumer that could have started a group
    with it: fuse-ops is maximal along single-consumer chains."""
    for op in body_ops(main_of(module)):
        uses = list(op.results[0].uses) if len(op.results) == 1 else []
        if len(uses) != 1 or fusion_kind(op) is FusionKind.OPAQUE:
            continue
        consumer = uses[0].operation
        if isinstance(consumer, (CallOp, ReturnOp)) or fusion_kind(consumer) not in (
            FusionKind.ELEMENTWISE,
            FusionKind.BROADCAST,
            FusionKind.INJECTIVE,
        ):
            continue
        if (
            op.name in ("graph.conv2d", "graph.dense")
            and op.operands[1] in consumer.operands
        ):
            continue  # the anchor's kernel reads its weight packed
        try:
            make_group([op, consumer])
        except PassError:
            continue
        raise AssertionError(f"{op.name} and {consumer.name} were left unfused")


def check_fused_functions(module: ModuleOp) -> None:
    """Every fused function is private, holds a group the lowering accepts,
    and of at least two ops."""
    for name, func in fused_functions(module).items():
        assert func.sym_visibility is not None and func.sym_visibility.data == "private"
        ops = body_ops(func)
        assert len(ops) >= 2, name
        outputs = list(func.body.block.last_op.operands)
        make_group(ops, outputs)  # raises if the lowering would reject it


# -- soundness on random programs ------------------------------------------------


@given(ALL_PROGRAMS)
def test_fuse_ops_is_sound(program: GraphProgram) -> None:
    before = ember.interpret(program.module, program.entry, *program.inputs)
    fused = fuse(program.module)  # verifies the result
    after = ember.interpret(fused, program.entry, *program.inputs)
    assert_same(before, after, program.source, exact=True)
    check_fused_functions(fused)
    assert_no_group_left(fused)
    event(f"fused functions: {min(len(fused_functions(fused)), 2)}")


@given(FUSABLE_PROGRAMS)
def test_fuse_ops_is_sound_on_fusable_programs(program: GraphProgram) -> None:
    before = ember.interpret(program.module, program.entry, *program.inputs)
    fused = fuse(program.module)
    after = ember.interpret(fused, program.entry, *program.inputs)
    assert_same(before, after, program.source, exact=True)
    check_fused_functions(fused)
    assert_no_group_left(fused)
    event(f"fused functions: {min(len(fused_functions(fused)), 2)}")
    # Idempotent: a second run finds nothing left to fuse.
    assert str(fuse(fused)) == str(fused)


@settings(max_examples=15)
@given(KERNEL_PROGRAMS)
def test_fused_kernels_compute_the_reference(program: GraphProgram) -> None:
    # The interpreter's graph.call_kernel passes a rank-0 tensor as shape (1,)
    # (np.ascontiguousarray), which run_kernel rejects: not fuse-ops' concern.
    assume(
        all(shape_of(v) for op in main_of(program.module).walk() for v in op.operands)
    )
    before = ember.interpret(program.module, program.entry, *program.inputs)
    fused = fuse(program.module)
    event(f"fused functions: {min(len(fused_functions(fused)), 2)}")
    lowered = ember.apply_passes(fused, "lower-graph-to-kernel{vector-bits=256}")
    assert not fused_functions(lowered)
    assert not any(isinstance(op, CallOp) for op in main_of(lowered).walk())
    after = ember.interpret(lowered, program.entry, *program.inputs)
    assert_same(before, after, program.source, exact=False)


# -- the rules ---------------------------------------------------------------------

CONV_ADD_RELU = """
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %a = graph.add %c, %b : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %r = graph.relu %a : tensor<1x3x4x4xf32>
  func.return %r : tensor<1x3x4x4xf32>
}
"""


def test_conv_add_relu_becomes_one_fused_function() -> None:
    fused = fuse(CONV_ADD_RELU)
    assert callees(main_of(fused)) == ["fused_conv2d_add_relu"]
    function = fused_functions(fused)["fused_conv2d_add_relu"]
    assert FUSED_ATTR in function.attributes
    assert [op.name for op in body_ops(function)] == [
        "graph.conv2d",
        "graph.add",
        "graph.relu",
    ]


def test_conv_add_relu_lowers_to_one_kernel_that_computes_the_reference() -> None:
    module = ember.parse(CONV_ADD_RELU)
    lowered = ember.apply_passes(
        module, "fuse-ops,lower-graph-to-kernel{vector-bits=256}"
    )
    assert callees(main_of(lowered)) == ["fused_conv2d_add_relu"]
    assert [op.sym_name.data for op in lowered.ops if is_kernel(op)] == [
        "fused_conv2d_add_relu"
    ]
    assert not fused_functions(lowered)
    rng = np.random.default_rng(0)
    args = [
        rng.standard_normal(tuple(t.get_shape())).astype(np.float32)
        for t in main_of(module).function_type.inputs.data
    ]
    want = ember.interpret(module, "main", *args)
    got = ember.interpret(lowered, "main", *args)
    assert_same(want, got, CONV_ADD_RELU, exact=False)


@pytest.mark.parametrize(
    ("second_use", "result"),
    [
        (
            "%s = graph.sigmoid %d : tensor<2x4xf32>",
            "%r, %s : tensor<2x4xf32>, tensor<2x4xf32>",
        ),
        ("", "%d, %r : tensor<2x4xf32>, tensor<2x4xf32>"),
    ],
    ids=["two-consumers", "returned"],
)
def test_a_value_with_another_consumer_is_not_fused(
    second_use: str, result: str
) -> None:
    text = f"""
func.func @main(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {{
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %r = graph.relu %d : tensor<2x4xf32>
  {second_use}
  func.return {result}
}}
"""
    fused = fuse(text)
    assert not fused_functions(fused)
    assert str(fused) == str(ember.parse(text))


@pytest.mark.parametrize(
    "opaque",
    [
        '%e = graph.call_extern "env.scale"(%d) : (tensor<2x4xf32>) -> tensor<2x4xf32>',
        "%e = graph.softmax %d : tensor<2x4xf32>",
    ],
    ids=["call_extern", "softmax"],
)
def test_no_fusion_across_an_opaque_op(opaque: str) -> None:
    text = f"""
func.func @main(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> tensor<2x4xf32> {{
  %d = graph.dense %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  {opaque}
  %r = graph.relu %e : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}}
"""
    fused = fuse(text)
    assert not fused_functions(fused)
    assert str(fused) == str(ember.parse(text))


CHAIN = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.exp %x : tensor<4xf32>
  %b = graph.negative %a : tensor<4xf32>
  %c = graph.relu %b : tensor<4xf32>
  %d = graph.sigmoid %c : tensor<4xf32>
  %e = graph.tanh %d : tensor<4xf32>
  func.return %e : tensor<4xf32>
}
"""


@pytest.mark.parametrize(
    ("depth", "expected"),
    [
        (256, ["fused_exp_negative_relu_sigmoid_tanh"]),
        (3, ["fused_exp_negative_relu", "fused_sigmoid_tanh"]),
        (2, ["fused_exp_negative", "fused_relu_sigmoid", "graph.tanh"]),
        (
            1,
            [
                "graph.exp",
                "graph.negative",
                "graph.relu",
                "graph.sigmoid",
                "graph.tanh",
            ],
        ),
    ],
)
def test_max_depth_bounds_group_size(depth: int, expected: list[str]) -> None:
    fused = fuse(CHAIN, f"{{max-depth={depth}}}")
    names = [
        op.callee.root_reference.data if isinstance(op, CallOp) else op.name
        for op in body_ops(main_of(fused))
    ]
    assert names == expected
    x = np.linspace(-2, 2, 4, dtype=np.float32)
    assert_same(
        ember.interpret(ember.parse(CHAIN), "main", x),
        ember.interpret(fused, "main", x),
        CHAIN,
        exact=True,
    )


def test_max_depth_must_be_positive() -> None:
    with pytest.raises(PassError, match="max-depth must be at least 1, got 0"):
        fuse(CHAIN, "{max-depth=0}")
    with pytest.raises(PassError, match="max-depth must be at least 1, got -1"):
        ember.apply_passes(CHAIN, FuseOpsPass(max_depth=-1))


def test_output_is_deterministic() -> None:
    module, params = workloads.get("resnet18")
    folded = ember.apply_passes(ember.bind_params(module, params), FOLD)
    assert str(fuse(folded)) == str(fuse(folded))


def test_a_changed_fused_function_still_lowers_op_by_op() -> None:
    # A graph.fused function that is no group the lowering accepts (written
    # by hand, or changed by later passes) is inlined and lowered op by op.
    text = """
func.func @main(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x2xf32> {
  %y = func.call @f(%x, %w) : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
func.func private @f(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> tensor<1x2xf32> attributes {graph.fused} {
  %r = graph.relu %x : tensor<1x4xf32>
  %d = graph.dense %r, %w : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  func.return %d : tensor<1x2xf32>
}
"""
    lowered = ember.apply_passes(text, "lower-graph-to-kernel{vector-bits=256}")
    assert callees(main_of(lowered)) == ["relu", "dense"]
    assert not fused_functions(lowered)
    x = np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4)
    w = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    want = ember.interpret(ember.parse(text), "main", x, w)
    assert_same(want, ember.interpret(lowered, "main", x, w), text, exact=False)


# -- workloads ---------------------------------------------------------------------


def kernel_count(module: ModuleOp, pipeline: str) -> tuple[int, int]:
    """(kernel functions, graph.call_kernel ops in main) after ``pipeline``."""
    lowered = ember.apply_passes(module, pipeline)
    kernels = sum(1 for op in lowered.ops if is_kernel(op))
    calls = sum(
        1 for op in main_of(lowered).body.block.ops if isinstance(op, CallKernelOp)
    )
    return kernels, calls


@pytest.mark.parametrize(
    ("name", "unfused", "fused"),
    [
        ("mlp", (5, 5), (2, 2)),
        ("mlp_b64", (5, 5), (2, 2)),
        ("convbnrelu", (3, 3), (1, 1)),
        ("tiny_pipe", (5, 5), (2, 2)),
    ],
)
def test_workload_kernel_counts(
    name: str, unfused: tuple[int, int], fused: tuple[int, int]
) -> None:
    module, params = workloads.get(name)
    bound = ember.bind_params(module, params)
    lower = "lower-graph-to-kernel{vector-bits=256}"
    assert kernel_count(bound, f"{FOLD},{lower}") == unfused
    assert kernel_count(bound, f"{FOLD},fuse-ops,{lower}") == fused


def test_convbnrelu_built_with_fusion_matches_the_interpreter() -> None:
    from ember import compiler
    from ember.runtime.cpu import LLVMModule
    from ember.backends.cpu import compile_llvm
    from ember.runtime.module import signature_of

    module, params = workloads.get("convbnrelu")
    bound = ember.bind_params(module, params)
    options = compiler.CompileOptions(graph_pipeline=FUSED_PIPELINE)
    kernel = compiler.to_kernel(compiler.to_graph(bound, None, options))
    assert callees(main_of(kernel)) == ["fused_conv2d_add_relu"]
    program = compiler.to_llvm_dialect(kernel, options)
    lib = LLVMModule(
        signature_of(bound), {}, (), compile_llvm(program.module), program.layout,
        program.constants,
    )  # fmt: skip
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
    executor = ember.GraphExecutor(lib, ember.cpu(0))
    executor.set_input("data", data)
    executor.run()
    got = executor.get_output(0).numpy()
    (want,) = ember.interpret(module, "main", data, *params.values())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_op_reading_the_anchor_weight_is_not_fused() -> None:
    # The dense kernel reads its weight in packed panels; an epilogue op
    # reading the weight too would have no plain copy of it.
    text = """
func.func @main(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %d = graph.dense %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = graph.add %d, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %a : tensor<4x4xf32>
}
"""
    assert not fused_functions(fuse(text))
    lowered = ember.apply_passes(
        text, "fuse-ops,lower-graph-to-kernel{vector-bits=256}"
    )
    assert callees(main_of(lowered)) == ["dense", "add"]
