"""The kernel dialect: tensor programs in the style of TVM's TensorIR.

A *kernel* is a ``func.func`` over statically shaped memrefs in
destination-passing style (inputs first, outputs last, no results), marked
with the unit attribute ``kernel.kernel``.  Its body is a nest of loops and
blocks; memory is touched with ``memref.load`` / ``memref.store``, temporaries
come from ``memref.alloc`` (TensorIR's ``alloc_buffer``) and scalar work uses
``arith`` and ``math``.  The dialect adds only what those lack::

    func.func @relu0(%X: memref<1x128xf32>, %Y: memref<1x128xf32>) attributes {kernel.kernel} {
      kernel.for %i = 0 to 1 {
        kernel.for %j = 0 to 128 parallel {
          kernel.block "Y" (%vi = spatial %i, %vj = spatial %j) {
            %x = memref.load %X[%vi, %vj] : memref<1x128xf32>
            ...
          }
        }
      }
      func.return
    }

What each op mirrors in TensorIR:

* ``kernel.for`` is a ``tir.For``: an ``index`` induction variable over a
  static range ``lb to ub step s`` and a loop *kind* (``serial`` — the
  default, not printed — ``parallel``, ``vectorized``, ``unrolled``, or a GPU
  binding ``gpu.block.x|y|z`` / ``gpu.thread.x|y|z``).  Bounds are static
  because ember's shapes are; schedules that tile a loop build the index
  expression (``%ko * 4 + %ki``) with ``arith``.
* ``kernel.block`` is a ``tir.Block`` with ``T.axis.remap``: it names its
  iteration variables, says whether each is ``spatial`` or ``reduce``, and
  binds each to an index value of the surrounding loops (``T.axis.remap``).
  A variable's range is that of the value it is bound to; ranges start at 0,
  as TensorIR's block domains do.  Code in the block sees only the block
  variables, which is what lets schedules rewrite the loops around a block
  without touching its body.
* ``kernel.init`` is ``T.init()``: placed first in a block with reduction
  variables, its region runs when every reduction variable of that block is
  0 (its first value), before the body's update.

Regions have no terminator (``NoTerminator``), so neither form prints one.
Invariants are checked by verifiers; helpers at the bottom (``kernel_functions``,
``check_kernel_signature``) check the function-level contract that a
verifier on ``func.func`` cannot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import (
    Block,
    BlockArgument,
    Dialect,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

KERNEL_ATTR = "kernel.kernel"
"""The unit attribute that marks a ``func.func`` as a kernel."""

LOOP_KINDS: tuple[str, ...] = (
    "serial",
    "parallel",
    "vectorized",
    "unrolled",
    "gpu.block.x",
    "gpu.block.y",
    "gpu.block.z",
    "gpu.thread.x",
    "gpu.thread.y",
    "gpu.thread.z",
)
"""The kinds a ``kernel.for`` may carry (TensorIR's ``ForKind`` + thread binding)."""

SPATIAL = "spatial"
REDUCE = "reduce"
ITER_KINDS: tuple[str, ...] = (SPATIAL, REDUCE)


def _index_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, IndexType())


def _name(value: SSAValue) -> str:
    """How a value is called in a diagnostic: its name in the text if known."""
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _verify_in_kernel(op: Operation, where: str) -> None:
    """Kernel ops mean something only in a kernel: a function that holds one
    but lacks the marker would be taken for a graph function by every pass."""
    func = op.parent_op()
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op()
    if isinstance(func, FuncOp) and KERNEL_ATTR not in func.attributes:
        raise VerifyException(
            f"{where} is in @{func.sym_name.data}, which lacks the {KERNEL_ATTR} "
            f"attribute: mark kernels with `attributes {{{KERNEL_ATTR}}}`"
        )


# --------------------------------------------------------------------------
# kernel.for
# --------------------------------------------------------------------------


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop over a static index range, with a kind (TensorIR's ``tir.For``).

    ```mlir
    kernel.for %i = 0 to 128 step 4 vectorized {
      ...
    }
    ```

    ``step 1`` and the kind ``serial`` are the defaults and are not printed.
    """

    name = "kernel.for"

    lower_bound = prop_def(IntegerAttr)
    upper_bound = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    kind = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(
        self,
        lower: int,
        upper: int,
        step: int = 1,
        kind: str = "serial",
        body: Region | None = None,
    ) -> None:
        if body is None:
            body = Region(Block(arg_types=[IndexType()]))
        super().__init__(
            properties={
                "lower_bound": _index_attr(lower),
                "upper_bound": _index_attr(upper),
                "step": _index_attr(step),
                "kind": StringAttr(kind),
            },
            regions=[body],
        )

    @property
    def lb(self) -> int:
        return self.lower_bound.value.data

    @property
    def ub(self) -> int:
        return self.upper_bound.value.data

    @property
    def step_value(self) -> int:
        return self.step.value.data

    @property
    def trip_count(self) -> int:
        return max(0, -(-(self.ub - self.lb) // self.step_value))

    @property
    def induction_var(self) -> BlockArgument:
        return self.body.block.args[0]

    def verify_(self) -> None:
        where = f"kernel.for {_name(self.induction_var)}" if self.body.blocks else "kernel.for"
        _verify_in_kernel(self, where)
        if self.kind.data not in LOOP_KINDS:
            raise VerifyException(
                f"{where}: unknown loop kind '{self.kind.data}', expected one of "
                + ", ".join(LOOP_KINDS)
            )
        if self.step_value < 1:
            raise VerifyException(f"{where}: step must be positive, got {self.step_value}")
        if self.lb > self.ub:
            raise VerifyException(
                f"{where}: lower bound {self.lb} is greater than upper bound {self.ub}"
            )
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise VerifyException(
                f"{where}: the body must take exactly one index argument, "
                f"got ({', '.join(str(a.type) for a in args)})"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        induction = parser.parse_argument(expect_type=False).resolve(IndexType())
        parser.parse_punctuation("=")
        lower = parser.parse_integer(context_msg=" (loop lower bound)")
        parser.parse_keyword("to")
        upper = parser.parse_integer(context_msg=" (loop upper bound)")
        step = 1
        if parser.parse_optional_keyword("step"):
            step = parser.parse_integer(context_msg=" (loop step)")
        kind = parser.parse_optional_identifier() or "serial"
        body = parser.parse_region((induction,))
        op = cls(lower, upper, step, kind, body)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(f" = {self.lb} to {self.ub}")
        if self.step_value != 1:
            printer.print_string(f" step {self.step_value}")
        if self.kind.data != "serial":
            printer.print_string(f" {self.kind.data}")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)


# --------------------------------------------------------------------------
# kernel.block
# --------------------------------------------------------------------------


@irdl_op_definition
class BlockOp(IRDLOperation):
    """A named computation over iteration variables (TensorIR's ``T.block``).

    ```mlir
    kernel.block "Y" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k) {
      kernel.init {
        memref.store %zero, %Y[%vi, %vj] : memref<1x128xf32>
      }
      ...
    }
    ```

    Each iteration variable is a block argument of the body bound to one
    ``index`` operand; ``iter_kinds`` says whether it is spatial or a
    reduction.
    """

    name = "kernel.block"

    bindings = var_operand_def(IndexType)
    block_name = prop_def(StringAttr, prop_name="name")
    iter_kinds = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(
        self,
        block_name: str,
        bindings: Sequence[SSAValue],
        iter_kinds: Sequence[str],
        body: Region | None = None,
    ) -> None:
        if body is None:
            body = Region(Block(arg_types=[IndexType()] * len(bindings)))
        super().__init__(
            operands=[bindings],
            properties={
                "name": StringAttr(block_name),
                "iter_kinds": ArrayAttr([StringAttr(k) for k in iter_kinds]),
            },
            regions=[body],
        )

    @property
    def iter_vars(self) -> tuple[BlockArgument, ...]:
        return tuple(self.body.block.args)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k.data for k in self.iter_kinds.data)

    @property
    def reduce_vars(self) -> tuple[BlockArgument, ...]:
        return tuple(v for v, k in zip(self.iter_vars, self.kinds) if k == REDUCE)

    @property
    def init(self) -> InitOp | None:
        first = self.body.block.first_op if self.body.blocks else None
        return first if isinstance(first, InitOp) else None

    def verify_(self) -> None:
        where = f'kernel.block "{self.block_name.data}"'
        _verify_in_kernel(self, where)
        count = len(self.bindings)
        if not (len(self.iter_kinds) == count == len(self.iter_vars)):
            raise VerifyException(
                f"{where}: {count} bindings, {len(self.iter_vars)} iteration "
                f"variables and {len(self.iter_kinds)} kinds must agree"
            )
        for var, kind, bound in zip(self.iter_vars, self.kinds, self.bindings):
            self._verify_var(where, var, kind, bound)
        self._verify_init(where)
        self._verify_stores(where)

    @staticmethod
    def _verify_var(where: str, var: BlockArgument, kind: str, bound: SSAValue) -> None:
        if not isinstance(var.type, IndexType):
            raise VerifyException(f"{where}: iteration variable {_name(var)} must be index")
        if kind not in ITER_KINDS:
            raise VerifyException(
                f"{where}: iteration variable {_name(var)} has kind '{kind}', "
                "expected 'spatial' or 'reduce'"
            )
        if (
            isinstance(bound, BlockArgument)
            and isinstance(loop := bound.owner.parent_op(), ForOp)
            and loop.lb < 0
        ):
            raise VerifyException(
                f"{where}: {_name(var)} is bound to {_name(bound)}, whose loop "
                f"starts at {loop.lb}; iteration variables range from 0"
            )

    def _verify_init(self, where: str) -> None:
        inits = [op for op in self.body.ops if isinstance(op, InitOp)]
        if not inits:
            return
        if not self.reduce_vars:
            raise VerifyException(
                f"{where}: kernel.init needs at least one reduce iteration variable"
            )
        if len(inits) > 1 or self.init is not inits[0]:
            raise VerifyException(f"{where}: kernel.init must be the first op, and only once")
        reduce_vars = set(self.reduce_vars)
        for op in inits[0].walk():
            for operand in op.operands:
                if operand in reduce_vars:
                    raise VerifyException(
                        f"{where}: kernel.init uses reduce variable {_name(operand)} "
                        f"in {op.name}; the init region may use only spatial variables"
                    )
        for var, kind, bound in zip(self.iter_vars, self.kinds, self.bindings):
            if (
                kind == REDUCE
                and isinstance(bound, BlockArgument)
                and isinstance(loop := bound.owner.parent_op(), ForOp)
                and loop.lb > 0
            ):
                raise VerifyException(
                    f"{where}: reduce variable {_name(var)} is bound to {_name(bound)}, "
                    f"whose loop starts at {loop.lb}: kernel.init runs when every reduce "
                    "variable is 0, so it would never run"
                )

    def _verify_stores(self, where: str) -> None:
        """A reduction block writes each output element for all reduce values:
        indexing a store by a reduction variable would make that a scatter."""
        reduce_vars = set(self.reduce_vars)
        if not reduce_vars:
            return
        for op in _ops_outside_nested_blocks(self.body):
            if not isinstance(op, memref.StoreOp):
                continue
            for index in op.indices:
                culprit = _depends_on(index, reduce_vars)
                if culprit is not None:
                    raise VerifyException(
                        f"{where}: memref.store into {_name(op.memref)} is indexed by "
                        f"reduce variable {_name(culprit)}; a reduction block may "
                        "index what it writes only by spatial variables"
                    )

    @classmethod
    def parse(cls, parser: Parser) -> BlockOp:
        block_name = parser.parse_str_literal(" (the block name)")
        entries = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: _parse_binding(parser)
        )
        body = parser.parse_region([arg for arg, _, _ in entries])
        op = cls(
            block_name,
            [bound for _, _, bound in entries],
            [kind for _, kind, _ in entries],
            body,
        )
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.block_name.data)
        printer.print_string(" (")
        entries = zip(self.iter_vars, self.kinds, self.bindings)
        for n, (var, kind, bound) in enumerate(entries):
            if n:
                printer.print_string(", ")
            printer.print_ssa_value(var)
            printer.print_string(f" = {kind} ")
            printer.print_ssa_value(bound)
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)


def _parse_binding(parser: Parser) -> tuple[Parser.Argument, str, SSAValue]:
    """``%v = spatial %bound`` or ``%v = reduce %bound``."""
    arg = parser.parse_argument(expect_type=False).resolve(IndexType())
    parser.parse_punctuation("=")
    kind_pos = parser.pos
    kind = parser.parse_identifier(" (spatial or reduce)")
    if kind not in ITER_KINDS:
        parser.raise_error(
            f"expected 'spatial' or 'reduce', got '{kind}'", kind_pos, parser.pos
        )
    bound = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
    return arg, kind, bound


def _ops_outside_nested_blocks(region: Region) -> Iterable[Operation]:
    """Ops of a block body, descending into loops but not into nested blocks."""
    for op in region.walk():
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, BlockOp):
            parent = parent.parent_op()
        if parent is region.parent_op():
            yield op


def _depends_on(value: SSAValue, targets: set[BlockArgument]) -> SSAValue | None:
    """The target that ``value`` is computed from, following defining ops."""
    seen: set[SSAValue] = set()
    stack = [value]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in targets:
            return current
        owner = current.owner
        if isinstance(owner, Operation):
            stack.extend(owner.operands)
    return None


# --------------------------------------------------------------------------
# kernel.init
# --------------------------------------------------------------------------


@irdl_op_definition
class InitOp(IRDLOperation):
    """The init statement of a reduction block (TensorIR's ``T.init()``).

    ```mlir
    kernel.init {
      memref.store %zero, %Y[%vi, %vj] : memref<1x128xf32>
    }
    ```

    Runs when every reduction variable of the enclosing block is 0.
    """

    name = "kernel.init"

    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(self, body: Region | None = None) -> None:
        super().__init__(regions=[body if body is not None else Region(Block())])

    @property
    def parent_block_op(self) -> BlockOp | None:
        parent = self.parent_op()
        return parent if isinstance(parent, BlockOp) else None

    def verify_(self) -> None:
        if self.parent_block_op is None:
            raise VerifyException("kernel.init must be directly inside a kernel.block")
        if self.body.block.args:
            raise VerifyException("kernel.init: the init region takes no arguments")

    @classmethod
    def parse(cls, parser: Parser) -> InitOp:
        body = parser.parse_region()
        if not body.blocks:  # `{ }` parses as no block; the op needs one
            body.add_block(Block())
        op = cls(body)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_region(self.body)
        printer.print_op_attributes(self.attributes)


# --------------------------------------------------------------------------
# Function-level helpers
# --------------------------------------------------------------------------


def is_kernel(op: Operation) -> bool:
    """Whether ``op`` is a ``func.func`` marked ``kernel.kernel``."""
    return isinstance(op, FuncOp) and KERNEL_ATTR in op.attributes


def mark_kernel(func: FuncOp) -> FuncOp:
    """Mark a function as a kernel (for builders); returns it."""
    func.attributes[KERNEL_ATTR] = UnitAttr()
    return func


def kernel_functions(module: ModuleOp) -> list[FuncOp]:
    """The kernels of a module, in order."""
    return [op for op in module.ops if is_kernel(op)]


def find_kernel(module: ModuleOp, name: str) -> FuncOp:
    """Kernel ``@name`` of ``module``; :class:`ember.errors.IRError` naming
    what is there otherwise."""
    from ember.errors import IRError

    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            if not is_kernel(op):
                raise IRError(f"@{name} is not a kernel (it lacks the kernel.kernel attribute)")
            return op
    kernels = [op.sym_name.data for op in module.ops if is_kernel(op)]
    raise IRError(f"no kernel @{name} in the module; kernels: {kernels}")


def check_kernel_signature(func: FuncOp) -> list[MemRefType]:
    """The memref argument types of a kernel; ``VerifyException`` naming the
    function and argument if the destination-passing contract is broken
    (every argument a statically shaped memref, no results)."""
    where = f"kernel @{func.sym_name.data}"
    if func.function_type.outputs.data:
        raise VerifyException(
            f"{where} returns values; kernels write their outputs into the "
            "last arguments (destination-passing style) and return nothing"
        )
    types: list[MemRefType] = []
    for n, t in enumerate(func.function_type.inputs.data):
        if not isinstance(t, MemRefType) or any(d < 0 for d in t.get_shape()):
            raise VerifyException(
                f"{where}: argument #{n} has type {t}, expected a statically shaped memref"
            )
        types.append(t)
    return types


KERNEL_OPS: tuple[type[IRDLOperation], ...] = (ForOp, BlockOp, InitOp)

Kernel = Dialect("kernel", list(KERNEL_OPS), [])

__all__ = [
    "ITER_KINDS",
    "KERNEL_ATTR",
    "KERNEL_OPS",
    "LOOP_KINDS",
    "REDUCE",
    "SPATIAL",
    "BlockOp",
    "ForOp",
    "InitOp",
    "Kernel",
    "check_kernel_signature",
    "find_kernel",
    "is_kernel",
    "kernel_functions",
    "mark_kernel",
]
