"""A graph op defined outside ember: ``graph.hardswish``, in this file alone.

The op class and its registrations below are everything ember learns about
hardswish (docs/extending.md walks through the same steps); the tests show
that it then parses, verifies, interprets, fuses into a conv2d's kernel and
compiles, without an edit to ember's sources.
"""

from __future__ import annotations

import subprocess
import sys
from typing import ClassVar

import numpy as np
import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, TensorType, f32
from xdsl.irdl import OptPropertyDef, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

import ember
from ember.dialects.graph import FLOAT_TYPES, AttrSpec, FloatKind, FusionKind, GraphOp, graph_prop
from ember.dialects.graph_registry import (
    RegistrationError,
    reference,
    register_op,
    scalar_lowering,
    semantics,
    shape_rule,
)
from ember.errors import IRError


@register_op
@irdl_op_definition
class HardSwishOp(GraphOp):
    """``x * clip(x + 3, 0, 6) / 6`` (MobileNetV3's activation).

    ```mlir
    %0 = graph.hardswish %x : tensor<1x16xf32>
    ```
    """

    name = "graph.hardswish"
    x = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    FUSION_KIND: ClassVar = FusionKind.ELEMENTWISE
    SINGLE_TYPE: ClassVar = True


@shape_rule(HardSwishOp)
def _hardswish_shape(operand_types, attrs):
    (x,) = operand_types
    if not isinstance(x, TensorType) or x.element_type not in FLOAT_TYPES:
        raise VerifyException(f"graph.hardswish: operand must be a float tensor, got {x}")
    return x


@reference(HardSwishOp)
def _hardswish_reference(inputs, attrs, result_type):
    (x,) = inputs
    return x * np.clip(x + np.float32(3), 0, 6) / np.float32(6)


@scalar_lowering(HardSwishOp)
def _hardswish_scalar(em, op, args):
    (x,) = args  # in f32, the compute type of floats
    three, six = em.const(3.0, f32), em.const(6.0, f32)
    shifted = em.add(arith.AddfOp(x, three))
    clipped = em.add(arith.MinimumfOp(em.add(arith.MaximumfOp(shifted, em.const(0.0, f32))), six))
    return em.add(arith.DivfOp(em.add(arith.MulfOp(x, clipped)), six))


CONV_HARDSWISH = """
func.func @main(%data: tensor<1x3x8x8xf32>, %weight: tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32> {
  %0 = graph.conv2d %data, %weight {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
  %1 = graph.hardswish %0 : tensor<1x8x8x8xf32>
  func.return %1 : tensor<1x8x8x8xf32>
}
"""

RNG = np.random.default_rng(11)
DATA = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
WEIGHT = RNG.standard_normal((8, 3, 3, 3)).astype(np.float32)


def _hardswish(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x + 3, 0, 6) / 6


def test_parses_and_prints_in_the_graph_syntax() -> None:
    module = ember.parse(CONV_HARDSWISH)
    text = ember.to_text(module)
    assert "%1 = graph.hardswish %0 : tensor<1x8x8x8xf32>" in text
    assert ember.to_text(ember.parse(text)) == text


def test_verifier_rejects_a_bad_result_shape() -> None:
    bad = CONV_HARDSWISH.replace(
        "%1 = graph.hardswish %0 : tensor<1x8x8x8xf32>",
        "%1 = graph.hardswish %0 : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x4xf32>",
    ).replace("-> tensor<1x8x8x8xf32> {", "-> tensor<1x8x8x4xf32> {").replace(
        "func.return %1 : tensor<1x8x8x8xf32>", "func.return %1 : tensor<1x8x8x4xf32>"
    )
    with pytest.raises(IRError, match="graph.hardswish: result type tensor<1x8x8x4xf32> does not match"):
        ember.parse(bad)


def test_verifier_rejects_an_integer_operand() -> None:
    with pytest.raises(IRError, match="graph.hardswish: operand must be a float tensor"):
        ember.parse(
            "func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {\n"
            "  %0 = graph.hardswish %x : tensor<4xi32>\n"
            "  func.return %0 : tensor<4xi32>\n}"
        )


def test_builds_with_ember_and_xdsl_arguments() -> None:
    module = ember.parse(CONV_HARDSWISH)
    x = next(iter(module.ops)).args[0]
    t = TensorType(f32, [1, 3, 8, 8])
    assert HardSwishOp.build([x]).result.type == t
    assert HardSwishOp.build(operands=[x], result_types=[t]).result.type == t


def test_interprets_against_numpy() -> None:
    (out,) = ember.interpret(ember.parse(CONV_HARDSWISH), "main", DATA, WEIGHT)
    (conv,) = ember.interpret(_conv_only(), "main", DATA, WEIGHT)
    assert (conv < -3).any() and (conv > 3).any()  # every piece of the op is hit
    np.testing.assert_allclose(out, _hardswish(conv), rtol=1e-6, atol=1e-6)


def _conv_only():
    return ember.parse(
        """
        func.func @main(%data: tensor<1x3x8x8xf32>, %weight: tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32> {
          %0 = graph.conv2d %data, %weight {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
          func.return %0 : tensor<1x8x8x8xf32>
        }
        """
    )


def test_fuses_into_the_conv2d_group() -> None:
    fused = ember.apply_passes(ember.parse(CONV_HARDSWISH), "fuse-ops")
    names = [op.sym_name.data for op in fused.ops]
    assert names == ["main", "fused_conv2d_hardswish"]
    (out,) = ember.interpret(fused, "main", DATA, WEIGHT)
    (ref,) = ember.interpret(ember.parse(CONV_HARDSWISH), "main", DATA, WEIGHT)
    np.testing.assert_array_equal(out, ref)


def test_compiles_and_matches_the_interpreter() -> None:
    module = ember.parse(CONV_HARDSWISH)
    lib = ember.build(module, target="llvm", params={"weight": WEIGHT}, remarks=True)
    fused = [r for r in lib.remarks if r.pass_name == "fuse-ops" and "hardswish" in r.message]
    assert {r.args.get("group") for r in fused if r.kind == "applied"} == {"fused_conv2d_hardswish"}
    assert not [r for r in fused if r.kind == "missed"]
    ex = ember.GraphExecutor(lib, ember.cpu(0))
    ex.set_input(data=DATA)
    ex.run()
    (ref,) = ember.interpret(module, "main", DATA, WEIGHT)
    np.testing.assert_allclose(ex.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_standalone_op_lowers_to_its_own_kernel() -> None:
    module = ember.parse(
        "func.func @main(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {\n"
        "  %0 = graph.hardswish %x : tensor<2x5xf32>\n"
        "  func.return %0 : tensor<2x5xf32>\n}"
    )
    x = np.linspace(-5, 5, 10, dtype=np.float32).reshape(2, 5)
    ex = ember.GraphExecutor(ember.build(module, target="llvm"), ember.cpu(0))
    ex.set_input(x=x)
    ex.run()
    np.testing.assert_allclose(ex.get_output(0).numpy(), _hardswish(x), rtol=1e-6, atol=1e-6)


def test_registrations_are_keyed_by_class() -> None:
    entry = semantics(HardSwishOp)
    assert entry.reference is _hardswish_reference and entry.scalar is _hardswish_scalar
    assert entry.lowerable and entry.epilogue
    assert "graph.hardswish" in ember.interp.REFERENCE_IMPLS


def test_bad_registrations_are_refused() -> None:
    with pytest.raises(RegistrationError, match="already the op"):

        @register_op
        @irdl_op_definition
        class OtherRelu(GraphOp):
            name = "graph.relu"

    with pytest.raises(RegistrationError, match="must be named 'graph.<op>'"):

        @register_op
        @irdl_op_definition
        class Elsewhere(GraphOp):
            name = "mine.op"

    with pytest.raises(RegistrationError, match="graph op classes"):
        reference(int)


def test_fuse_ops_does_not_import_the_lowering() -> None:
    code = (
        "import sys, ember.passes.fuse_ops\n"
        "print(sorted(m for m in sys.modules if m.startswith('ember.lowering')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_graph_op_attributes_are_declared_to_irdl() -> None:
    """Each attribute is an IRDL property of its kind, with its default;
    ``op.<name>`` is xDSL's accessor, ``op.attr(name)`` the decoded value."""
    from ember.dialects.graph import AttrSpec, Conv2dOp, IntArrayKind, IntKind, MaxPool2dOp

    op_def = Conv2dOp.get_irdl_definition()
    assert not op_def.attributes
    assert list(op_def.properties) == list(Conv2dOp.ATTRS)
    assert op_def.properties["padding"].constr == IntArrayKind(4)
    assert op_def.properties["groups"].constr == IntKind()
    assert isinstance(op_def.properties["groups"], OptPropertyDef)
    pool_size = MaxPool2dOp.get_irdl_definition().properties["pool_size"]
    assert not isinstance(pool_size, OptPropertyDef)  # required: no default
    assert Conv2dOp.ATTRS["padding"] == AttrSpec("ints", (0, 0, 0, 0), 4)
    conv = next(iter(next(iter(ember.parse(CONV_HARDSWISH).ops)).body.block.ops))
    assert conv.padding is conv.properties["padding"] and not conv.attributes
    assert conv.strides == IntArrayKind(2).encode((1, 1))  # the declared default
    assert conv.attr("strides") == (1, 1)


def test_generic_form_holds_properties_and_reads_the_older_attribute_form() -> None:
    module = ember.parse(CONV_HARDSWISH)
    generic = ember.to_text(module, generic=True)
    assert '"graph.conv2d"(%data, %weight) <{padding = [1 : i64, 1 : i64, 1 : i64, 1 : i64]}> :' in generic
    assert ember.to_text(ember.parse(generic)) == ember.to_text(module)
    older = generic.replace("<{padding", "{padding").replace("]}> :", "]} :")
    assert ember.to_text(ember.parse(older)) == ember.to_text(module)


@register_op
@irdl_op_definition
class ScaledTanhOp(GraphOp):
    """``alpha * tanh(x)``: a user op with an attribute declared to IRDL."""

    name = "graph.test_scaled_tanh"
    x = operand_def(TensorType)
    output = result_def(TensorType)
    alpha = graph_prop(FloatKind(), 1.0)
    SINGLE_TYPE: ClassVar = True


@register_op
@irdl_op_definition
class ScaledTanhTableOp(GraphOp):
    """The same op declared the older way, with an ``ATTRS`` table."""

    name = "graph.test_scaled_tanh_table"
    x = operand_def(TensorType)
    output = result_def(TensorType)
    ATTRS: ClassVar = {"alpha": AttrSpec("float", 1.0)}
    SINGLE_TYPE: ClassVar = True


for _op in (ScaledTanhOp, ScaledTanhTableOp):
    shape_rule(_op)(lambda operand_types, attrs: operand_types[0])


@pytest.mark.parametrize("op", [ScaledTanhOp, ScaledTanhTableOp])
def test_user_op_attributes_parse_verify_and_build(op: type[GraphOp]) -> None:
    assert op.get_irdl_definition().properties == ScaledTanhOp.get_irdl_definition().properties
    text = (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        f"  %0 = {op.name} %x {{alpha = 0.5 : f32}} : tensor<4xf32>\n"
        "  func.return %0 : tensor<4xf32>\n}\n"
    )
    module = ember.parse(text)
    (user,) = [o for o in module.walk() if isinstance(o, op)]
    assert user.attr("alpha") == 0.5 and f"{op.name} %x {{alpha = 5.000000e-01 : f32}}" in ember.to_text(module)
    with pytest.raises(IRError, match=f"{op.name}: attribute 'alpha' must be a number, got \"half\""):
        ember.parse(text.replace("0.5 : f32", '"half"'))
    with pytest.raises(IRError, match=f"{op.name}: unknown attribute 'beta' \\(known: alpha\\)"):
        ember.parse(text.replace("alpha", "beta"))
    x = next(iter(module.ops)).args[0]
    assert op.build([x], alpha=0.25).attr("alpha") == 0.25
    assert op.build(operands=[x], result_types=[x.type], properties={"alpha": FloatAttr(2.0, f32)}).attr("alpha") == 2.0
    assert op.build([x]).attr("alpha") == 1.0 and not op.build([x]).properties
