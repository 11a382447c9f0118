"""A graph program to ONE native entry point: the graph executor's plan in code.

After ``lower-graph-to-kernel`` a graph function holds only
``graph.constant``, ``graph.call_kernel``, ``graph.call_extern`` and
``func.return``.  This lowering turns such a function into

    llvm.func @__ember_entry_<name>(%frame: !llvm.ptr)

that calls every kernel in order, so that running a network costs one native
call instead of one Python call per kernel (what TVM's graph executor does in
C++, and what Relax's VM does with its instruction list).

``frame`` is an array of pointers that the runtime fills once:

    [inputs…, outputs…, constants…, workspace, context]

* Intermediate tensors live in one *workspace* buffer, at the offsets of
  the ``plan-memory`` pass (:mod:`ember.passes.plan_memory`; planned here
  if the function carries no plan, and checked either way): a buffer is
  reused once its value is dead.
* A value the function returns is computed straight into its output buffer
  (destination passing); one that is an argument, a constant or already
  returned at another position is copied with ``memcpy``.
* ``graph.call_extern`` calls ``ember_call_extern(context, site, buffers)``,
  a symbol the runtime provides: ``site`` numbers the call in
  :attr:`ProgramLayout.externs`, ``buffers`` points at the inputs then the
  outputs.  The runtime maps it to the registered Python function.

A second entry, ``llvm.func @__ember_profile_<name>(%frame, %clock)``, is
the same program with a ``clock_gettime(CLOCK_MONOTONIC)`` into
``clock[i]`` (16-byte timespecs) before call ``i`` and one after the last:
what the profiler runs.  The plain entry has no timer calls, so a normal
run costs what it did; both call the same kernels.  Each call is described
in :attr:`ProgramLayout.kernels` (kernel, graph ops, shape, FLOPs).

The plan (:class:`ProgramLayout`) is plain data that serialises to JSON, so
an exported artifact can rebuild the frame without the IR.  The frame, the
entry names and the runtime's symbols are the calling convention of
:mod:`ember.abi`, which the runtime reads too.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from ember.dialects.graph import (
    CallExternOp,
    CallKernelOp,
    ConstantOp,
    argument_name,
    numpy_dtype,
)
from ember.abi import (  # the calling convention; names kept here for old imports
    CLOCK_MONOTONIC,
    CLOCK_SYMBOL,
    EXTERN_SYMBOL,
    FLOPS_ATTR,
    OPS_ATTR,
    TIMESPEC_BYTES,
    BufferSpec,
    ExternSite,
    KernelSite,
    ProgramLayout,
    entry_symbol,
    profile_symbol,
)
from ember.errors import PassError
from ember.ir import drop_held_attributes
from ember.passes.plan_memory import DIRECT, check_program, checked_plan, direct_outputs

PTR = llvm.LLVMPointerType()


def _spec(name: str, value: SSAValue) -> BufferSpec:
    t = value.type
    assert isinstance(t, TensorType)  # guaranteed by the graph verifiers
    return BufferSpec(name, tuple(t.get_shape()), numpy_dtype(t.element_type).name)


def _kernel_site(op: CallKernelOp | CallExternOp) -> KernelSite:
    """What the profiler says about a call: the ops and FLOPs
    ``lower-graph-to-kernel{annotate=true}`` recorded, else its name alone."""
    shape = tuple(op.results[0].type.get_shape()) if op.results else ()
    if isinstance(op, CallExternOp):
        return KernelSite(op.function, (op.name,), shape, 0)
    ops = op.attributes.get(OPS_ATTR)
    flops = op.attributes.get(FLOPS_ATTR)
    # Hand-written IR may carry anything under these names: take only what
    # the pass would have written.
    names = (
        tuple(a.data for a in ops.data)
        if isinstance(ops, ArrayAttr) and all(isinstance(a, StringAttr) for a in ops.data)
        else ()
    )
    count = flops.value.data if isinstance(flops, IntegerAttr) else 0
    return KernelSite(op.callee, names, shape, max(count, 0))


class _ProgramTranslator:
    """Builds the entry of ``function``; with ``profile``, its timed copy
    (a second argument, the clock array, read before every call)."""

    def __init__(self, function: func.FuncOp, profile: bool = False) -> None:
        self.function = function
        self.name = function.sym_name.data
        self.layout = ProgramLayout(self.name, entry_symbol(self.name))
        self.profile = profile
        self.block = Block(arg_types=[PTR, PTR] if profile else [PTR])
        self.frame = self.block.args[0]
        self.frame.name_hint = "frame"
        if profile:
            self.block.args[1].name_hint = "clock"
        self.pointers: dict[SSAValue, SSAValue] = {}
        self.constants: list[np.ndarray] = []

    def _emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def _i64(self, value: int) -> SSAValue:
        return self._emit(llvm.ConstantOp(IntegerAttr(value, i64), i64))

    def _slot(self, index: int, name: str) -> SSAValue:
        address = self._emit(llvm.GEPOp(self.frame, [index], PTR, inbounds=True))
        pointer = self._emit(llvm.LoadOp(address, PTR))
        pointer.name_hint = name
        return pointer

    def _workspace_pointer(self, workspace: SSAValue, offset: int) -> SSAValue:
        if offset == 0:
            return workspace
        return self._emit(
            llvm.GEPOp(workspace, [offset], IntegerType(8), inbounds=True)
        )

    def translate(self) -> tuple[llvm.FuncOp, ProgramLayout, list[np.ndarray]]:
        body = self.function.body.block
        ops = list(body.ops)
        ret = ops[-1]
        assert isinstance(ret, func.ReturnOp)
        returned = list(ret.arguments)

        # Slots: inputs, outputs, constants, workspace, context.
        for arg in body.args:
            self.layout.inputs.append(_spec(argument_name(self.function, arg.index), arg))
        for i, value in enumerate(returned):
            self.layout.outputs.append(_spec(f"output{i}", value))
        constant_ops = [op for op in ops if isinstance(op, ConstantOp)]
        for i, op in enumerate(constant_ops):
            self.layout.constants.append(
                _spec(op.result.name_hint or f"const{i}", op.result)
            )
            if not self.profile:  # the plain entry's translation returns them
                self.constants.append(op.to_array(copy=False))

        n_in, n_out = len(self.layout.inputs), len(self.layout.outputs)
        for i, arg in enumerate(body.args):
            self.pointers[arg] = self._slot(i, arg.name_hint or f"arg{i}")
        output_pointers = [self._slot(n_in + i, f"out{i}") for i in range(n_out)]
        for i, op in enumerate(constant_ops):
            self.pointers[op.result] = self._slot(n_in + n_out + i, f"c{i}")
        workspace = self._slot(self.layout.workspace_slot, "workspace")
        context = self._slot(self.layout.context_slot, "context")

        plan = checked_plan(self.function, "lower-program-to-llvm")
        direct = direct_outputs(self.function)
        self.layout.workspace_bytes = plan.workspace_bytes
        self.layout.peak_bytes = plan.peak_bytes
        self.layout.naive_bytes = plan.naive_bytes
        for value, offset in plan.offsets.items():
            if offset == DIRECT:
                self.pointers[value] = output_pointers[direct[value]]
            else:
                self.pointers[value] = self._workspace_pointer(workspace, offset)

        for op in ops:
            if isinstance(op, CallKernelOp | CallExternOp):
                self._read_clock()
                self.layout.kernels.append(_kernel_site(op))
            if isinstance(op, CallKernelOp):
                buffers = [self.pointers[v] for v in (*op.operands, *op.results)]
                self._emit(llvm.CallOp(op.callee, *buffers))
            elif isinstance(op, CallExternOp):
                self._call_extern(op, context)
        self._read_clock()

        for i, value in enumerate(returned):
            if direct.get(value) == i:
                continue
            nbytes = self._i64(self.layout.outputs[i].nbytes)
            self._emit(
                llvm.CallOp(
                    "memcpy",
                    output_pointers[i],
                    self.pointers[value],
                    nbytes,
                    return_type=PTR,
                )
            )
        self.block.add_op(llvm.ReturnOp())

        entry = llvm.FuncOp(
            self.layout.profile_symbol if self.profile else self.layout.symbol,
            llvm.LLVMFunctionType([PTR] * len(self.block.args)),
            linkage=llvm.LinkageAttr("external"),
            body=Region(self.block),
        )
        return entry, self.layout, self.constants

    def _read_clock(self) -> None:
        """In the profile entry: the next timespec of the clock array."""
        if not self.profile:
            return
        index = len(self.layout.kernels)
        clock = self.block.args[1]
        address = (
            clock
            if index == 0
            else self._emit(
                llvm.GEPOp(clock, [index * TIMESPEC_BYTES], IntegerType(8), inbounds=True)
            )
        )
        clock_id = self._emit(
            llvm.ConstantOp(IntegerAttr(CLOCK_MONOTONIC, IntegerType(32)), IntegerType(32))
        )
        self._emit(
            llvm.CallOp(CLOCK_SYMBOL, clock_id, address, return_type=IntegerType(32))
        )

    def _call_extern(self, op: CallExternOp, context: SSAValue) -> None:
        site = len(self.layout.externs)
        self.layout.externs.append(
            ExternSite(
                op.function,
                tuple(_spec(f"in{i}", v) for i, v in enumerate(op.operands)),
                tuple(_spec(f"out{i}", v) for i, v in enumerate(op.results)),
            )
        )
        values = [*op.operands, *op.results]
        count = self._i64(len(values))
        array = self._emit(llvm.AllocaOp(count, PTR))
        for i, value in enumerate(values):
            address = self._emit(llvm.GEPOp(array, [i], PTR, inbounds=True))
            self.block.add_op(llvm.StoreOp(self.pointers[value], address))
        self._emit(llvm.CallOp(EXTERN_SYMBOL, context, self._i64(site), array))


def lower_program_to_llvm(
    module: ModuleOp, function: str = "main"
) -> tuple[ProgramLayout, list[np.ndarray]]:
    """Replace graph function ``function`` by its native entry, in place.

    Returns the frame layout and the constant arrays (in constant-slot
    order).  Raises :class:`PassError` before changing anything when the
    function still holds graph ops other than constants and calls.
    """
    target = next(
        (
            op
            for op in module.ops
            if isinstance(op, func.FuncOp) and op.sym_name.data == function
        ),
        None,
    )
    if target is None:
        raise PassError(f"lower-program-to-llvm: no function @{function}")
    check_program(target, "lower-program-to-llvm")
    entry, layout, constants = _ProgramTranslator(target).translate()
    timed, _, _ = _ProgramTranslator(target, profile=True).translate()
    module.body.block.insert_op_before(entry, target)
    module.body.block.insert_op_before(timed, target)
    module.body.block.erase_op(target)
    drop_held_attributes(target)  # the weights in its constants: freed now
    declared = {op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)}
    # Declare only what is called: MCJIT must resolve every declared symbol
    # it links, and EXTERN_SYMBOL exists only once the runtime installed it.
    declarations = {
        "memcpy": llvm.LLVMFunctionType([PTR, PTR, i64], PTR),
        CLOCK_SYMBOL: llvm.LLVMFunctionType([IntegerType(32), PTR], IntegerType(32)),
    }
    if layout.externs:
        declarations[EXTERN_SYMBOL] = llvm.LLVMFunctionType([PTR, i64, PTR])
    for name, signature in declarations.items():
        if name not in declared:
            module.body.block.add_op(
                llvm.FuncOp(name, signature, linkage=llvm.LinkageAttr("external"))
            )
    return layout, constants
