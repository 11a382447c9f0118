"""The pipeline dialect: a network split into stages placed on devices.

A ``pipeline.graph`` is TVM's pipeline-executor configuration
(``PipelineConfig`` in ``tvm.contrib.pipeline_executor_build``) written as
SSA IR.  Its block arguments are the global inputs, each ``pipeline.stage``
calls one ``func.func`` of the module (a subgraph, TVM's "module") on a
target and device, and ``pipeline.yield`` names the global outputs::

    pipeline.graph @net(%data: tensor<1x3x8x8xf32>) -> tensor<1x1xf32> {
      %a = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<1x3x8x8xf32>) -> tensor<1x16x8x8xf32>
      %b = pipeline.stage @mod1(%a) {target = "llvm", device = "cpu:0"} : (tensor<1x16x8x8xf32>) -> tensor<1x1xf32>
      pipeline.yield %b : tensor<1x1xf32>
    }

TVM checks its connection rules with asserts when a connection is made
(seed 004's ``add_dependent``).  In SSA most of them are structural: every
stage input is exactly one value, and a value is either a global input (a
block argument) or a stage output.  The verifiers check the rest, and name
both ends of the offending connection:

* a stage input is fed by a global input or by an output of an *earlier*
  stage (no self-dependency, no cycle);
* a global output is fed by a stage output (a global input feeds stage
  inputs only);
* the callee exists, is a ``func.func`` with a body, and its signature
  matches the stage: input and output counts, and the type at every
  connection;
* the body holds only stages and the final ``pipeline.yield``, whose types
  are the graph's results;
* ``device`` is ``cpu:N`` or ``cuda:N`` and suits the target (``llvm`` and
  ``interp`` run on ``cpu``, ``cuda`` on ``cuda``); other targets are left
  to the runtime's backend registry.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from io import StringIO

from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    lazy_traits_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    CallableOpInterface,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from ember.dialects.graph import type_str

__all__ = [
    "DEVICE_KINDS",
    "GraphOp",
    "Pipeline",
    "PipelineGraphOp",
    "StageOp",
    "YieldOp",
    "argument_names",
    "check_placement",
    "describe_source",
    "function_input_names",
]

DEVICE_KINDS: tuple[str, ...] = ("cpu", "cuda")
"""Device kinds a stage may be placed on (those of ``ember.runtime.device``)."""

# Targets whose device kind is known; other target names are accepted and
# left to the runtime's backend registry, which is open to extension.
_TARGET_DEVICE_KIND: dict[str, str] = {"llvm": "cpu", "interp": "cpu", "cuda": "cuda"}
_DEVICE_PATTERN = re.compile(r"(?P<kind>[a-z]+):(?P<index>\d+)")


# --------------------------------------------------------------------------
# Describing the ends of a connection (for diagnostics)
# --------------------------------------------------------------------------


def argument_names(block: Block) -> list[str]:
    """The names of a block's arguments as the printer writes them (no ``%``).

    xDSL keeps a value's name only as a hint without a trailing ``_<digits>``
    (``%data_n_0`` is read back as hint ``data_n``) and numbers repeated hints
    when printing (``%x``, ``%x_1``).  The name a user reads in the text is
    therefore the printer's, so that is the name diagnostics and
    :class:`ember.pipeline.PipelineConfig` use.  Unnamed arguments print as
    numbers (``%0``).
    """
    printer = Printer(stream=StringIO())
    return [printer.print_ssa_value(arg) for arg in block.args]


def function_input_names(func: FuncOp | PipelineGraphOp) -> list[str]:
    """Input names of a function or pipeline; ``arg<i>`` for a declaration."""
    if not func.body.blocks:
        return [f"arg{i}" for i in range(len(func.function_type.inputs.data))]
    return argument_names(func.body.block)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def describe_source(value: SSAValue) -> str:
    """What feeds a connection: ``global input 0 ("data")`` or ``@mod0 output 0``."""
    if isinstance(value, BlockArgument):
        name = argument_names(value.owner)[value.index]
        return f'global input {value.index} ("{name}")'
    owner = value.owner
    if isinstance(owner, StageOp):
        return f"@{owner.callee_name} output {value.index}"
    return f"a value of {owner.name}"


# --------------------------------------------------------------------------
# pipeline.graph
# --------------------------------------------------------------------------


class _GraphCallable(CallableOpInterface):
    """Lets xDSL's interpreter ``call_op`` a ``pipeline.graph`` like a function."""

    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        assert isinstance(op, PipelineGraphOp)
        return op.body

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, PipelineGraphOp)
        return op.function_type.inputs.data

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, PipelineGraphOp)
        return op.function_type.outputs.data


@irdl_op_definition
class PipelineGraphOp(IRDLOperation):
    """A pipeline: global inputs, stages in execution order, global outputs.

    ```mlir
    pipeline.graph @net(%data: tensor<1x8xf32>) -> tensor<1x8xf32> {
      %0 = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<1x8xf32>) -> tensor<1x8xf32>
      pipeline.yield %0 : tensor<1x8xf32>
    }
    ```
    """

    name = "pipeline.graph"
    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), _GraphCallable())

    def __init__(
        self,
        name: str,
        input_types: Sequence[Attribute],
        output_types: Sequence[Attribute],
        arg_names: Sequence[str | None] | None = None,
        region: Region | None = None,
    ) -> None:
        if region is None:
            block = Block(arg_types=input_types)
            for arg, arg_name in zip(block.args, arg_names or ()):
                arg.name_hint = arg_name
            region = Region(block)
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(input_types, output_types),
            },
            regions=[region],
        )

    # ---- accessors -----------------------------------------------------------

    @property
    def graph_name(self) -> str:
        return self.sym_name.data

    @property
    def args(self) -> tuple[BlockArgument, ...]:
        """The global inputs, as the body's block arguments."""
        return tuple(self.body.block.args)

    @property
    def stages(self) -> list[StageOp]:
        """The stages in execution order."""
        return [op for op in self.body.block.ops if isinstance(op, StageOp)]

    @property
    def yield_op(self) -> YieldOp | None:
        last = self.body.block.last_op
        return last if isinstance(last, YieldOp) else None

    # ---- text form -----------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> PipelineGraphOp:
        name, input_types, output_types, region, extra, arg_attrs, res_attrs = (
            parse_func_op_like(
                parser, reserved_attr_names=("sym_name", "function_type")
            )
        )
        if arg_attrs is not None or res_attrs is not None:
            parser.raise_error(
                "pipeline.graph: arguments and results take no attributes"
            )
        if not region.blocks:
            parser.raise_error(f"pipeline.graph @{name} needs a body")
        op = cls(name, input_types, output_types, region=region)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            reserved_attr_names=("sym_name", "function_type"),
        )

    # ---- verification ----------------------------------------------------------

    def verify_(self) -> None:
        where = f"{self.name} @{self.graph_name}"
        signature = self.function_type.inputs.data
        if len(self.args) != len(signature):
            raise VerifyException(
                f"{where}: the body has {_count(len(self.args), 'global input')} but the "
                f"signature declares {len(signature)}"
            )
        for arg, declared in zip(self.args, signature):
            if arg.type != declared:
                raise VerifyException(
                    f"{where}: {describe_source(arg)} is {type_str(arg.type)} but the "
                    f"signature declares {type_str(declared)}"
                )
        for op in self.body.block.ops:
            if not isinstance(op, StageOp | YieldOp):
                raise VerifyException(
                    f"{where}: only pipeline.stage ops and a final pipeline.yield may "
                    f"appear in a pipeline, found {op.name}"
                )
        if not self.stages:
            raise VerifyException(f"{where}: a pipeline needs at least one stage")
        if self.yield_op is None:
            raise VerifyException(f"{where}: the body must end with pipeline.yield")


# --------------------------------------------------------------------------
# pipeline.stage
# --------------------------------------------------------------------------


def check_placement(where: str, target: str, device: str) -> None:
    """Raise ``VerifyException`` (prefixed ``where``) for a bad target/device pair."""
    if not target:
        raise VerifyException(f"{where}: target must be a non-empty string")
    match = _DEVICE_PATTERN.fullmatch(device)
    if match is None or match["kind"] not in DEVICE_KINDS:
        kinds = " or ".join(f"{k}:N" for k in DEVICE_KINDS)
        raise VerifyException(f'{where}: device "{device}" must be {kinds}')
    kind = _TARGET_DEVICE_KIND.get(target)
    if kind is not None and match["kind"] != kind:
        raise VerifyException(
            f'{where}: target "{target}" runs on {kind} devices, not on "{device}"'
        )


@irdl_op_definition
class StageOp(IRDLOperation):
    """Run one subgraph function on a target and device.

    Inputs are global inputs or outputs of earlier stages; a stage may have
    several outputs.

    ```mlir
    %a, %b = pipeline.stage @mod0(%data) {target = "llvm", device = "cpu:0"} : (tensor<1x8xf32>) -> (tensor<1x8xf32>, tensor<1x4xf32>)
    ```
    """

    name = "pipeline.stage"
    callee = prop_def(SymbolRefAttr)
    target = prop_def(StringAttr)
    device = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    traits = lazy_traits_def(lambda: (HasParent(PipelineGraphOp),))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"
    )

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        target: str = "llvm",
        device: str = "cpu:0",
    ) -> None:
        ref = SymbolRefAttr(callee) if isinstance(callee, str) else callee
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={
                "callee": ref,
                "target": StringAttr(target),
                "device": StringAttr(device),
            },
        )

    @property
    def callee_name(self) -> str:
        return self.callee.root_reference.data

    @property
    def where(self) -> str:
        return f"{self.name} @{self.callee_name}"

    def callee_function(self) -> Operation | None:
        """The op the callee symbol names, or None outside a module."""
        return SymbolTable.lookup_symbol(self, self.callee_name)

    def verify_(self) -> None:
        check_placement(self.where, self.target.data, self.device.data)
        self._verify_sources()
        if not isinstance(self.get_toplevel_object(), ModuleOp):
            return  # built on its own: symbols cannot be resolved yet
        callee = self._resolved_callee()
        self._verify_signature(callee)

    def _verify_sources(self) -> None:
        """Each input is a global input or an output of an earlier stage."""
        graph = self.parent_op()
        for i, value in enumerate(self.inputs):
            if isinstance(value, BlockArgument) and value.owner is self.parent_block():
                continue
            owner = value.owner
            if owner is self:
                raise VerifyException(
                    f"{self.where}: input {i} is fed by its own output {value.index}; "
                    f"a stage cannot depend on itself"
                )
            same_graph = isinstance(owner, StageOp) and owner.parent_op() is graph
            if same_graph and owner.is_before_in_block(self):
                continue
            if same_graph:
                raise VerifyException(
                    f"{self.where}: input {i} comes from {describe_source(value)}, a "
                    f"later stage; a stage output may feed only later stages or "
                    f"global outputs"
                )
            raise VerifyException(
                f"{self.where}: input {i} comes from {describe_source(value)}; a stage "
                f"input must be a global input or an output of an earlier stage"
            )

    def _resolved_callee(self) -> FuncOp:
        callee = self.callee_function()
        if callee is None:
            raise VerifyException(
                f"{self.where}: no function @{self.callee_name} in the module"
            )
        if not isinstance(callee, FuncOp):
            raise VerifyException(
                f"{self.where}: @{self.callee_name} is a {callee.name}, not a func.func"
            )
        if callee.is_declaration:
            raise VerifyException(
                f"{self.where}: @{self.callee_name} is a declaration without a body; "
                f"a stage needs a function it can build"
            )
        return callee

    def _verify_signature(self, callee: FuncOp) -> None:
        params = callee.function_type.inputs.data
        returns = callee.function_type.outputs.data
        if len(params) != len(self.inputs):
            names = ", ".join(function_input_names(callee))
            raise VerifyException(
                f"{self.where}: the stage passes {_count(len(self.inputs), 'input')} but "
                f"@{self.callee_name} takes {len(params)} ({names or 'none'})"
            )
        if len(returns) != len(self.outputs):
            raise VerifyException(
                f"{self.where}: the stage has {_count(len(self.outputs), 'output')} but "
                f"@{self.callee_name} returns {len(returns)}"
            )
        input_names = function_input_names(callee)
        for i, (value, param) in enumerate(zip(self.inputs, params)):
            if value.type != param:
                raise VerifyException(
                    f'{self.where}: input {i} ("{input_names[i]}") has '
                    f"type {type_str(param)} but {describe_source(value)} gives "
                    f"{type_str(value.type)}"
                )
        for i, (result, returned) in enumerate(zip(self.outputs, returns)):
            if result.type != returned:
                raise VerifyException(
                    f"{self.where}: output {i} is declared {type_str(result.type)} but "
                    f"@{self.callee_name} returns {type_str(returned)}"
                )


# --------------------------------------------------------------------------
# pipeline.yield
# --------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The global outputs of a pipeline, each an output of some stage.

    ```mlir
    pipeline.yield %b, %a : tensor<1x1xf32>, tensor<1x8xf32>
    ```
    """

    name = "pipeline.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(HasParent(PipelineGraphOp), IsTerminator())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue | Operation) -> None:
        super().__init__(operands=[values])

    def verify_(self) -> None:
        graph = self.parent_op()
        assert isinstance(graph, PipelineGraphOp)  # HasParent is verified first
        declared = graph.function_type.outputs.data
        where = f"{self.name} in @{graph.graph_name}"
        if len(declared) != len(self.values):
            raise VerifyException(
                f"{where}: yields {_count(len(self.values), 'value')} but @{graph.graph_name} "
                f"returns {len(declared)}"
            )
        for i, (value, expected) in enumerate(zip(self.values, declared)):
            if not isinstance(value.owner, StageOp):
                raise VerifyException(
                    f"{where}: global output {i} comes from {describe_source(value)}; "
                    f"a global input may feed only stage inputs"
                )
            if value.type != expected:
                raise VerifyException(
                    f"{where}: global output {i} has type {type_str(expected)} but "
                    f"{describe_source(value)} gives {type_str(value.type)}"
                )


GraphOp = PipelineGraphOp
"""The former name of :class:`PipelineGraphOp` (``graph.*`` ops subclass
:class:`ember.dialects.graph.GraphOp`, a different class)."""

Pipeline = Dialect("pipeline", [PipelineGraphOp, StageOp, YieldOp], [])
