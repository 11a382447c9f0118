"""Kernels to the xDSL ``llvm`` dialect: loops become branches, memrefs pointers.

Each kernel ``func.func @k(%A: memref<…>, …) attributes {kernel.kernel}``
becomes ``llvm.func @k(!llvm.ptr {llvm.noalias}, …)`` returning nothing, ready
to be printed as LLVM IR (:mod:`ember.backends.llvm_text`, or
``xdsl.backend.llvm.convert.convert_module``).  This is the job MLIR splits
over ``convert-scf-to-cf``, ``finalize-memref-to-llvm`` and
``convert-arith-to-llvm``; xDSL has none of them (its JIT shells out to
``mlir-opt``), and kernels are a small, structured subset, so one translator
walks each kernel once and emits LLVM ops in order.

What it relies on, and why the code LLVM gets vectorises:

* Shapes are static and layouts row-major, so an access ``%A[%i, %j]`` is
  ``gep inbounds f32, %A, (%i * stride + %j)`` with constant strides, and
  ``index`` is ``i64`` (no sign extensions in address arithmetic).
* Kernel buffers never alias (destination passing with distinct buffers, as
  TensorIR's ``tir.noalias``): every pointer argument is ``noalias``.
* Float arithmetic carries the ``reassoc`` and ``contract`` flags only, so
  LLVM may reassociate reductions (needed to vectorise them) and contract to
  FMA, but every result stays IEEE 754 as the interpreters define it: NaN
  and inf propagate, ``x - x`` is not folded to 0, nor ``x / 0`` changed.
  ``arith.maximumf``/``minimumf`` are ``llvm.maximum``/``llvm.minimum``
  (IEEE 754-2019 maximum/minimum: NaN wins, -0.0 < +0.0), which LLVM
  vectorises.  ``fast_math=True`` trades that for the full ``fast`` flags
  (``nnan ninf nsz arcp afn`` too) and compare-and-select min/max.
* Loops are emitted rotated (``do { … } while (++i < ub)``), as LLVM's own
  loop-rotate would make them, since every emitted loop runs at least once
  (an empty loop is not emitted at all).
* ``kernel.block`` disappears: its variables are the values they are bound
  to.  ``kernel.init`` becomes a branch taken when all reduction variables
  are 0; LLVM unswitches or peels it out of the loops.
* ``memref.alloc`` is an aligned ``alloca`` in the entry block up to
  ``STACK_LIMIT_BYTES`` and ``malloc``/``free`` beyond; ``memref.dealloc`` is
  implied at return.

Loop kinds ``serial``, ``vectorized`` and ``unrolled`` all become plain loops:
LLVM's vectoriser and unroller decide, but the latch of an ``unrolled``
loop carries ``ember.unroll = "full"``, which ember's LLVM IR printer
writes as the loop's ``llvm.loop.unroll.full`` metadata (LLVM unrolls it
fully, at any optimisation level; xDSL's translator, for a module
ember's printer does not print, drops it).  GPU-bound loops are an error
here.

A ``parallel`` loop with more than one iteration that is not nested in
another parallel loop runs on a team of threads, as clang lowers
``#pragma omp parallel for`` (MLIR's ``convert-openmp-to-llvm`` does the
same for ``omp.wsloop``), with a schedule of ember's own:

* its body is outlined into ``@<kernel>__parallel<N>_body(captures…, %begin,
  %end)``, a loop from ``%begin`` to ``%end`` over the values it uses from
  outside (buffers ``noalias``, so the outlined loop vectorises as the inline
  one would; constants are re-created inside instead of captured);
* ``@<kernel>__parallel<N>(%data: !llvm.ptr)`` is the thread entry point: it
  loads the captures from ``%data`` (one 8-byte slot each), then the body's
  address, the trip count, the lower bound, the step and the schedule's
  counters (:data:`LOOP_SLOT_TYPES`), and calls the body on each chunk
  ``ember_loop_next`` hands it until none is left
  (:data:`~ember.abi.LOOP_ENTRY_POINTS`, defined by
  :mod:`ember.runtime.threads`).  The range is cut into one block per
  thread; a thread takes its own block first, in chunks
  (:data:`~ember.runtime.threads.CHUNKS_PER_THREAD` per block), then the
  chunks left in the others'.  So thread ``t`` runs the same iterations in
  every call unless another thread was late: the cache lines it wrote in
  the last call, and the weights it read, are still in its core's caches.
  libgomp's dynamic schedule, used before, gave each chunk to whichever
  thread asked first, so every call moved half of every buffer between the
  cores (ResNet-18: 4 % slower on two cores of one complex, 13 % on a VM
  whose two vCPUs sat on two complexes).  Nothing in the entry point is
  the loop's own but the types of its captures, so the entry points of
  loops with the same capture types are one function once identical
  functions merge (one indirect call per chunk);
* the kernel reads the thread count from the external ``i32`` global
  ``@ember_num_threads`` (owned by :mod:`ember.runtime.threads`), limits it to
  the trip count, and, when that is above one, zeroes the counters
  (``ember_loop_reset``: an array in the kernel's frame that its parallel
  loops share) and calls ``GOMP_parallel(worker, data, n, 0)`` — otherwise
  it calls the body on the whole range directly, so one thread costs no fork.

A loop whose work is too small to pay for waking a team stays serial:
``min_parallel_work`` (``ember.build``'s default :data:`MIN_PARALLEL_WORK`,
0 here and in the pass) is compared with :func:`loop_work`, the number of
ops one run of the loop executes, counted statically from its trip counts.

Parallel loops inside a parallel loop run serially in their thread.  The
runtime must define the functions of :data:`OPENMP_ENTRY_POINTS` and
:data:`~ember.abi.LOOP_ENTRY_POINTS` and ``ember_num_threads`` before such
code is loaded:
``ember.runtime.threads.ensure_runtime()`` does (with a serial stand-in for
libgomp where it is missing).

With ``bounds_check`` (a debug build: ``ember.build(…, options={"bounds_check":
True})``), every load and store index that
:mod:`ember.analysis.index_bounds` does not prove in bounds is tested first,
as ``-fsanitize=bounds`` does: ``index <u size`` (one unsigned compare also
catches negative indices), and on failure a call to
``ember_bounds_error(site, index, size)`` — ``site`` a constant string naming
kernel, buffer, dimension and index — then a jump to the function's exit,
which frees its heap buffers and returns.  The runtime
(:mod:`ember.runtime.jit`) defines that function; it records the error, which
the caller raises once the native call is over.  Proven accesses cost
nothing, and without the option no code changes.

:func:`set_vector_width` gives every defined function the vector width of
its target as MLIR's ``passthrough`` attributes (``prefer-vector-width``,
``min-legal-vector-width``), which the JIT hands to LLVM: without them
LLVM's tuning for AVX-512 CPUs (``prefer-256-bit``) vectorises tiles shaped
for 16 lanes as 8-lane code.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
import math
from dataclasses import dataclass, field
from math import prod
from typing import Any

from xdsl.dialects import arith, func, llvm, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ember.analysis.index_bounds import (
    describe_buffer,
    describe_index,
    unproven_accesses,
)
from ember.dialects.kernel import (
    BlockOp,
    ForOp,
    InitOp,
    check_kernel_signature,
    kernel_functions,
)
from ember.abi import (  # the calling convention; names kept here for old imports
    BOUNDS_ERROR_SYMBOL,
    LOOP_BLOCKS,
    LOOP_COUNTER_BYTES,
    LOOP_ENTRY_POINTS,
    LOOP_NEXT_SYMBOL,
    LOOP_RESET_SYMBOL,
    NUM_THREADS_SYMBOL,
    OPENMP_ENTRY_POINTS,
)
from ember.errors import PassError
from ember.ir import describe_op
from ember.lowering import MIN_PARALLEL_WORK  # re-exported; defined there for the driver

BOUNDS_ERROR_TYPE = llvm.LLVMFunctionType([llvm.LLVMPointerType(), i64, i64])

CAPTURE_SLOT_BYTES = 8
"""Each value a parallel loop captures travels in one 8-byte slot."""

STACK_LIMIT_BYTES = 128 * 1024
"""Temporaries up to this size live on the stack; larger ones are malloc'd."""

BUFFER_ALIGNMENT = 64
"""Alignment of temporaries: a cache line, enough for any vector load."""

FAST = llvm.FastMathAttr("fast")
"""Every fast-math flag: results may change for NaN, inf, -0.0 (opt-in only)."""

IEEE_SAFE = llvm.FastMathAttr(
    (llvm.FastMathFlag.REASSOC, llvm.FastMathFlag.ALLOW_CONTRACT)
)
"""The flags that keep IEEE special values: reassociation and FMA contraction."""

NSW = IntegerAttr(llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP]).to_int(), 32)
"""``nsw``, as the attribute the integer ops hold: made once, not converted
from an ``OverflowAttr`` for every op (attributes are verified as made)."""

PTR = llvm.LLVMPointerType()

_ICMP_PREDICATES = {flag: IntegerAttr(flag.to_int(), i64) for flag in llvm.ICmpPredicateFlag}

_INBOUNDS_GEP = {
    "rawConstantIndices": DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL]),
    "noWrapFlags": IntegerAttr(0, 32),
    "inbounds": UnitAttr(),
}
"""The properties of ``getelementptr inbounds T, ptr %base, i64 %offset``
but its element type, made once (:func:`_element_address`)."""


def _element_address(base: SSAValue, offset: SSAValue, element: Attribute) -> llvm.GEPOp:
    """``getelementptr inbounds element, ptr base, i64 offset``: the op that
    ``llvm.GEPOp(base, [GEP_USE_SSA_VAL], element, ssa_indices=[offset],
    inbounds=True)`` builds, without making and verifying its attributes
    again for each of a kernel's accesses."""
    return _made(llvm.GEPOp, [base, offset], [PTR], {**_INBOUNDS_GEP, "elem_type": element})


_NSW = {"overflowFlags": NSW}
_NOT_ATOMIC = {"ordering": IntegerAttr(0, i64)}
"""The properties the constructors of ``add nsw`` (``mul``, ``sub``) and of
non-atomic loads and stores set (:func:`_made`)."""


def _made(
    cls: type[Operation],
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    properties: dict[str, Attribute],
) -> Operation:
    """The op ``cls``'s constructor makes of these operands with these
    properties (those it sets): made directly, without building and
    verifying its argument lists again for each of a kernel's ops (a third
    of the time xDSL takes to make one)."""
    return cls.create(operands=operands, result_types=result_types, properties=dict(properties))


def _indirect_call(callee: SSAValue, args: Sequence[SSAValue]) -> Operation:
    """``call void %callee(args…)``: MLIR's indirect ``llvm.call``, whose
    first operand is the function's address (xDSL's constructor makes
    direct calls only)."""
    return llvm.CallOp.create(
        operands=[callee, *args],
        properties={
            "fastmathFlags": llvm.FastMathAttr(None),
            "CConv": llvm.CallingConventionAttr("ccc"),
            "op_bundle_sizes": DenseArrayBase.from_list(i32, ()),
            "operandSegmentSizes": DenseArrayBase.from_list(i32, [len(args) + 1, 0]),
            "TailCallKind": llvm.TailCallKindAttr(llvm.TailCallKind.NONE),
        },
    )


UNROLL_ATTRIBUTE = "ember.unroll"
"""On an ``llvm.br`` or ``llvm.cond_br``: ``"full"`` makes it the latch of
a loop LLVM unrolls fully (an ``unrolled`` kernel loop's; ember's LLVM IR
printer writes it as ``llvm.loop.unroll.full`` metadata)."""

LOOP_SLOT_TYPES = (PTR, i64, i64, i64, PTR)
"""The data of a parallel loop's workers ends in these slots: the body's
address, the trip count, the lower bound, the step and the schedule's
block counters (:data:`~ember.abi.LOOP_ENTRY_POINTS`)."""

_RUNTIME_ENTRY_POINTS = {**OPENMP_ENTRY_POINTS, **LOOP_ENTRY_POINTS}
"""The functions parallel loops call, by name: libgomp's and the schedule's."""

_FLOAT_TYPES = (Float16Type, Float32Type, Float64Type)


def _scalar_type(t: Attribute) -> Attribute:
    """The LLVM type of a kernel scalar: ``index`` is ``i64``."""
    return i64 if isinstance(t, IndexType) else t


_FLOAT_BINARY: dict[type[Operation], type[llvm.AbstractFloatArithOp]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}

_INT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
}

_MATH_INTRINSICS: dict[type[Operation], type[Operation]] = {
    xmath.ExpOp: llvm.FExpOp,
    xmath.SqrtOp: llvm.FSqrtOp,
    xmath.LogOp: llvm.FLogOp,
    xmath.AbsFOp: llvm.FAbsOp,
    xmath.FloorOp: llvm.FFloorOp,
    xmath.CeilOp: llvm.FCeilOp,
}

_LIBM_CALLS: dict[type[Operation], str] = {xmath.TanhOp: "tanh", xmath.PowFOp: "pow"}
"""Math ops with no LLVM intrinsic: called from the C library (``tanhf``…)."""

_LIBM_SUFFIX: dict[type[Attribute], str] = {Float32Type: "f", Float64Type: ""}


@dataclass
class _ModuleDeclarations:
    """What the lowered kernels of one module need declared beside them."""

    externals: dict[str, llvm.LLVMFunctionType] = field(default_factory=dict)
    external_globals: dict[str, Attribute] = field(default_factory=dict)
    outlined: list[llvm.FuncOp] = field(default_factory=list)
    """Outlined parallel-loop functions, in the order they were made."""
    workers: dict[tuple[Attribute, ...], str] = field(default_factory=dict)
    """Capture types → the thread entry point made for them (one per
    signature: nothing else of a loop is in it)."""
    bounds_check: bool = False
    """Test, at run time, the accesses not proven in bounds."""
    min_parallel_work: int = 0
    """Parallel loops doing fewer ops (:func:`loop_work`) run serially."""
    bounds_sites: dict[str, str] = field(default_factory=dict)
    """Global name → text naming one checked access (kernel, buffer, index)."""
    unproven: dict[str, dict[Operation, tuple[int, ...]]] = field(default_factory=dict)
    """Kernel name → the dimensions of each of its accesses to check."""
    bodies: dict[Hashable, str] = field(default_factory=dict)
    """A parallel loop's :func:`loop_structure` (with its capture types and
    whether its kernel is cold) → the body outlined for the first such loop:
    a later one, in any kernel, calls that body instead of lowering its own
    (resnet18: the Winograd input transforms and products of a layer shared
    by two kernels that differ in their epilogue, a fifth of its llvm ops)."""
    cold: bool = False
    """The kernel being lowered is cold (:class:`KernelLowering`): its bodies
    are marked ``optsize``, so a hot kernel does not call them."""

    def unproven_in(self, kernel: func.FuncOp) -> dict[Operation, tuple[int, ...]]:
        """The access dimensions of ``kernel`` to test at run time (none
        without ``bounds_check``); analysed once per kernel."""
        if not self.bounds_check:
            return {}
        name = kernel.sym_name.data
        if name not in self.unproven:
            self.unproven[name] = unproven_accesses(kernel)
        return self.unproven[name]


@dataclass
class _KernelTranslator:
    """Translates one kernel into one ``llvm.func`` (plus the functions its
    parallel loops are outlined into); touches nothing else.

    An outlined loop body is translated by a second translator of the same
    kernel (``in_parallel``), which starts from the captured values.
    """

    kernel: func.FuncOp
    declarations: _ModuleDeclarations
    fast_math: bool = False
    """Use every fast-math flag (see the module docstring), not only the safe ones."""
    in_parallel: bool = False
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    region: Region = field(default_factory=Region)
    entry: Block = field(init=False)
    block: Block = field(init=False)
    heap_buffers: list[SSAValue] = field(default_factory=list)
    bounds_exit: Block | None = None
    """Where a failed bounds check jumps: frees and returns (made on first use)."""
    parallel_loops: int = 0
    """How many parallel loops of this kernel were outlined so far (names them)."""
    loop_counters: SSAValue | None = None
    """The schedule's block counters, one array in the frame that the
    function's parallel loops share (they run one after another)."""
    constants: dict[tuple[Attribute, str], SSAValue] = field(default_factory=dict)
    """The function's constants by type and value (``repr``: -0.0 is not 0.0),
    each made once, in the entry block: LLVM IR has them inline anyway, and
    one op per use made a quarter of the ops xDSL builds and translates."""
    integers: dict[SSAValue, int] = field(default_factory=dict)
    """The value of each integer constant among those: addresses fold them."""

    def translate(self) -> llvm.FuncOp:
        try:
            arg_types = check_kernel_signature(self.kernel)
        except VerifyException as e:
            raise PassError(f"lower-kernel-to-llvm: {e}") from None
        for t in arg_types:
            self._check_layout(t, "argument of type")
        self._start([PTR] * len(arg_types))
        for old, new in zip(self.kernel.args, self.entry.args):
            new.name_hint = old.name_hint  # keeps the lowered IR readable
            self.values[old] = new
        self._lower_ops(self.kernel.body.block.ops)
        return self._function(self.kernel.sym_name.data, [PTR] * len(arg_types))

    # -- helpers -----------------------------------------------------------

    def _start(self, arg_types: Sequence[Attribute]) -> None:
        """Open the entry block of the function being built."""
        self.entry = Block(arg_types=arg_types)
        self.region.add_block(self.entry)
        self.block = self.entry

    def _function(self, name: str, arg_types: Sequence[Attribute]) -> llvm.FuncOp:
        """The ``llvm.func`` of the region built so far; pointers are ``noalias``."""
        if self.bounds_exit is not None:
            # Last, so that it frees every heap buffer of the function.
            self.region.add_block(self.bounds_exit)
            self.block = self.bounds_exit
            self._return()
        noalias = DictionaryAttr({"llvm.noalias": UnitAttr()})
        plain = DictionaryAttr({})
        arg_attrs = [noalias if t == PTR else plain for t in arg_types]
        return llvm.FuncOp(
            name,
            llvm.LLVMFunctionType(arg_types),
            linkage=llvm.LinkageAttr("external"),
            body=self.region,
            other_props={"arg_attrs": ArrayAttr(arg_attrs)},
        )

    def _append(self, op: Operation) -> None:
        self.block.add_op(op)

    def _emit(self, op: Operation) -> SSAValue:
        """Append an op with one result and return that result."""
        self.block.add_op(op)
        return op.results[0]

    def _emit_in_entry(self, ops: Sequence[Operation]) -> SSAValue:
        """Put ops in the entry block (before its branch, if it has one) and
        return the last one's result: allocations made there happen once per
        call, however many loops surround the op that asked for them."""
        terminator = self.entry.last_op
        if self.block is self.entry or terminator is None:
            for op in ops:
                self._append(op)
        else:
            self.entry.insert_ops_before(list(ops), terminator)
        return ops[-1].results[0]

    def _const(self, value: float, t: Attribute) -> SSAValue:
        key = (t, repr(value))
        constant = self.constants.get(key)
        if constant is None:
            attr = (
                FloatAttr(value, t)
                if isinstance(t, _FLOAT_TYPES)
                else IntegerAttr(value, t)
            )
            constant = self._emit_in_entry([_made(llvm.ConstantOp, [], [t], {"value": attr})])
            self.constants[key] = constant
            if isinstance(attr, IntegerAttr):
                self.integers[constant] = int(value)
        return constant

    def _icmp(
        self, predicate: llvm.ICmpPredicateFlag, lhs: SSAValue, rhs: SSAValue
    ) -> SSAValue:
        return self._emit(
            _made(llvm.ICmpOp, [lhs, rhs], [i1], {"predicate": _ICMP_PREDICATES[predicate]})
        )

    def _declare(self, name: str) -> None:
        self.declarations.externals[name] = _RUNTIME_ENTRY_POINTS[name]

    def _fail(self, op: Operation, why: str) -> PassError:
        return PassError(
            f"lower-kernel-to-llvm: cannot lower {op.name} in kernel "
            f"@{self.kernel.sym_name.data}: {why}\n{describe_op(op)}"
        )

    def _check_layout(
        self, t: Attribute, what: str, op: Operation | None = None
    ) -> MemRefType:
        """``t``, checked; else an error saying ``what`` (``"access to"``) ``t``
        is (the message is made only then: this runs for every access)."""
        if (
            not isinstance(t, MemRefType)
            or not isinstance(t.layout, NoneAttr)
            or any(d < 0 for d in t.get_shape())
        ):
            message = f"{what} {t}: only statically shaped row-major memrefs are supported"
            if op is not None:
                raise self._fail(op, message)
            raise PassError(
                f"lower-kernel-to-llvm: kernel @{self.kernel.sym_name.data}: {message}"
            )
        return t

    @property
    def _float_flags(self) -> llvm.FastMathAttr:
        return FAST if self.fast_math else IEEE_SAFE

    def _lower_ops(self, ops: Sequence[Operation] | object) -> None:
        for op in ops:  # type: ignore[attr-defined]
            handler = _HANDLERS.get(type(op))
            if handler is not None:
                handler(self, op)
            elif type(op) in _FLOAT_BINARY:
                self._lower_float_binary(op)
            elif type(op) in _INT_BINARY:
                self._lower_int_binary(op)
            elif type(op) in _MATH_INTRINSICS:
                self._lower_math_intrinsic(op)
            elif type(op) in _LIBM_CALLS:
                self._lower_libm_call(op)
            else:
                raise self._fail(op, "no lowering for this op")

    def _operand(self, value: SSAValue) -> SSAValue:
        return self.values[value]

    # -- structure ---------------------------------------------------------

    def _lower_for(self, op: ForOp) -> None:
        if op.kind.data.startswith("gpu."):
            raise self._fail(
                op, f"a loop bound to {op.kind.data} needs the CUDA backend"
            )
        if op.trip_count == 0:
            return
        if (
            op.kind.data == "parallel"
            and op.trip_count > 1
            and not self.in_parallel
            and loop_work(op) >= self.declarations.min_parallel_work
        ):
            self._lower_parallel_for(op)
            return
        self._loop(op, self._const(op.lb, i64))

    def _loop(self, op: ForOp, first: SSAValue, bound: SSAValue | None = None) -> None:
        """``do { body } while ((iv += step) < bound)`` from ``first``: the
        caller guarantees at least one iteration.  ``bound`` defaults to the
        loop's static upper bound."""
        body = Block(arg_types=[i64])
        body.args[0].name_hint = op.induction_var.name_hint
        self._append(llvm.BrOp(body, first))
        self.region.add_block(body)
        self.block = body
        self.values[op.induction_var] = body.args[0]
        self._lower_ops(op.body.block.ops)
        step = self._const(op.step_value, i64)
        following = self._emit(_made(llvm.AddOp, [body.args[0], step], [i64], _NSW))
        if bound is None:
            bound = self._const(op.ub, i64)
        more = self._icmp(llvm.ICmpPredicateFlag.SLT, following, bound)
        exit_block = Block()
        latch = llvm.CondBrOp(more, body, [following], exit_block, [])
        if op.kind.data == "unrolled":
            latch.attributes[UNROLL_ATTRIBUTE] = StringAttr("full")
        self._append(latch)
        self.region.add_block(exit_block)
        self.block = exit_block

    def _lower_block(self, op: BlockOp) -> None:
        self.values.update(zip(op.iter_vars, (self._operand(b) for b in op.bindings)))
        init = op.init
        if init is not None:
            self._lower_init(op, init)
        self._lower_ops(o for o in op.body.block.ops if o is not init)

    def _lower_init(self, block: BlockOp, init: InitOp) -> None:
        zero = self._const(0, i64)
        first: SSAValue | None = None
        for var in block.reduce_vars:
            is_zero = self._icmp(llvm.ICmpPredicateFlag.EQ, self._operand(var), zero)
            first = is_zero if first is None else self._emit(llvm.AndOp(first, is_zero))
        assert first is not None  # the verifier requires a reduce variable
        then_block, after = Block(), Block()
        self._append(llvm.CondBrOp(first, then_block, [], after, []))
        self.region.add_block(then_block)
        self.block = then_block
        self._lower_ops(init.body.block.ops)
        self._append(llvm.BrOp(after))
        self.region.add_block(after)
        self.block = after

    def _lower_return(self, op: func.ReturnOp) -> None:
        if op.arguments:
            raise self._fail(op, "kernels return nothing")
        self._return()

    def _return(self) -> None:
        """Free what was malloc'd and return."""
        for buffer in self.heap_buffers:
            self._append(llvm.CallOp("free", buffer))
            self.declarations.externals["free"] = llvm.LLVMFunctionType([PTR])
        self._append(llvm.ReturnOp())

    # -- parallel loops ----------------------------------------------------

    def _lower_parallel_for(self, op: ForOp) -> None:
        """Outline the loop and run it on a thread team (``omp parallel for``)."""
        captured = _captured_values(op)
        name = f"{self.kernel.sym_name.data}__parallel{self.parallel_loops}"
        self.parallel_loops += 1
        capture_types = [self._operand(v).type for v in captured]
        body_name = self._body_for(op, captured, capture_types, f"{name}_body")
        entry_name = self.declarations.workers.setdefault(tuple(capture_types), name)
        if entry_name == name:
            self.declarations.outlined.append(self._outline_worker(capture_types, name))
        self.declarations.external_globals[NUM_THREADS_SYMBOL] = i32

        # n = min(ember_num_threads, trip count): fork only when n > 1.
        count = self._const(op.trip_count, i64)
        setting = self._emit(llvm.AddressOfOp(NUM_THREADS_SYMBOL, PTR))
        requested = self._emit(llvm.SExtOp(self._emit(llvm.LoadOp(setting, i32)), i64))
        fewer = self._icmp(llvm.ICmpPredicateFlag.SLT, requested, count)
        threads = self._emit(llvm.SelectOp(fewer, requested, count))
        several = self._icmp(llvm.ICmpPredicateFlag.SGT, threads, self._const(1, i64))
        fork, inline, after = Block(), Block(), Block()
        self._append(llvm.CondBrOp(several, fork, [], inline, []))

        self.region.add_block(fork)
        self.block = fork
        body_address = self._emit(llvm.AddressOfOp(body_name, PTR))
        counters = self._loop_counters()
        self._declare(LOOP_RESET_SYMBOL)
        self._append(llvm.CallOp(LOOP_RESET_SYMBOL, counters, threads))
        data = self._pack_captures(
            [self._operand(v) for v in captured],
            [
                body_address,
                count,
                self._const(op.lb, i64),
                self._const(op.step_value, i64),
                counters,
            ],
        )
        self._declare("GOMP_parallel")
        team_size = self._emit(llvm.TruncOp(threads, i32))
        entry_point = self._emit(llvm.AddressOfOp(entry_name, PTR))
        self._append(
            llvm.CallOp(
                "GOMP_parallel", entry_point, data, team_size, self._const(0, i32)
            )
        )
        self._append(llvm.BrOp(after))

        self.region.add_block(inline)
        self.block = inline
        whole_range = [self._const(op.lb, i64), self._const(op.ub, i64)]
        self._append(
            llvm.CallOp(body_name, *(self._operand(v) for v in captured), *whole_range)
        )
        self._append(llvm.BrOp(after))

        self.region.add_block(after)
        self.block = after

    def _loop_counters(self) -> SSAValue:
        """:attr:`loop_counters`, allocated in the entry block on first use."""
        if self.loop_counters is None:
            words = LOOP_BLOCKS * LOOP_COUNTER_BYTES // 8
            size = llvm.ConstantOp(IntegerAttr(words, i64), i64)
            self.loop_counters = self._emit_in_entry(
                [size, llvm.AllocaOp(size.results[0], i64, alignment=LOOP_COUNTER_BYTES)]
            )
        return self.loop_counters

    def _body_for(
        self,
        op: ForOp,
        captured: Sequence[SSAValue],
        capture_types: Sequence[Attribute],
        name: str,
    ) -> str:
        """The name of the function that runs a chunk of parallel loop
        ``op``: one outlined for a loop of the same structure before
        (:attr:`_ModuleDeclarations.bodies`), else ``name``, outlined now.
        Bounds-checked bodies name their kernel in their errors: never shared."""
        declarations = self.declarations
        if declarations.bounds_check:
            key = None
        else:
            key = (loop_structure(op, captured), tuple(capture_types), declarations.cold)
            if key in declarations.bodies:
                return declarations.bodies[key]
        declarations.outlined.append(self._outline_body(op, captured, capture_types, name))
        if key is not None:
            declarations.bodies[key] = name
        return name

    def _pack_captures(
        self, captured: Sequence[SSAValue], loop: Sequence[SSAValue]
    ) -> SSAValue:
        """An array of 8-byte slots in the entry block's frame: the captured
        values, then ``loop`` (:data:`LOOP_SLOT_TYPES`: the body's address, the
        trip count, the lower bound and the step); the threads read it while
        ``GOMP_parallel`` waits for them."""
        values = [*captured, *loop]
        slots = llvm.ConstantOp(IntegerAttr(len(values), i64), i64)
        data = self._emit_in_entry(
            [slots, llvm.AllocaOp(slots.results[0], PTR, alignment=CAPTURE_SLOT_BYTES)]
        )
        for n, value in enumerate(values):
            self._append(llvm.StoreOp(value, self._slot(data, n, value.type)))
        return data

    def _slot(self, data: SSAValue, n: int, t: Attribute) -> SSAValue:
        """The address of capture slot ``n`` as a pointer to ``t``.  The GEP
        steps in units of ``t`` because llvmlite types the pointer it returns."""
        width = CAPTURE_SLOT_BYTES if t == PTR else _byte_width(t)
        return self._emit(
            llvm.GEPOp(data, [n * CAPTURE_SLOT_BYTES // width], t, inbounds=True)
        )

    def _outline_body(
        self,
        op: ForOp,
        captured: Sequence[SSAValue],
        capture_types: Sequence[Attribute],
        name: str,
    ) -> llvm.FuncOp:
        """``void name(captures…, i64 %begin, i64 %end)``: the loop over
        ``[begin, end)``, translated like any loop but in its own function."""
        outlined = _KernelTranslator(
            self.kernel, self.declarations, self.fast_math, in_parallel=True
        )
        arg_types = [*capture_types, i64, i64]
        outlined._start(arg_types)
        for value, arg in zip(captured, outlined.entry.args):
            arg.name_hint = value.name_hint
            outlined.values[value] = arg
        for constant in _captured_constants(op):
            outlined._lower_constant(constant)
        begin, end = outlined.entry.args[-2:]
        begin.name_hint, end.name_hint = "begin", "end"
        # A thread's chunk may be empty (more threads than iterations).
        some = outlined._icmp(llvm.ICmpPredicateFlag.SLT, begin, end)
        run, done = Block(), Block()
        outlined._append(llvm.CondBrOp(some, run, [], done, []))
        outlined.region.add_block(run)
        outlined.block = run
        outlined._loop(op, begin, end)
        outlined._append(llvm.BrOp(done))
        outlined.region.add_block(done)
        outlined.block = done
        outlined._return()
        return outlined._function(name, arg_types)

    def _outline_worker(self, capture_types: Sequence[Attribute], name: str) -> llvm.FuncOp:
        """``void name(ptr %data)``, run by every thread of the team: unpack
        the captures, then take chunks of the iteration range from
        ``ember_loop_next`` (the thread's own block first) until none is
        left, running the body on each.

        The body, the trip count, the lower bound, the step and the
        counters come in the data too (:data:`LOOP_SLOT_TYPES`), and the body
        is called through its address: the loops whose captures have the same
        types share one worker, made for the first of them
        (:attr:`_ModuleDeclarations.workers`; resnet18: 53 parallel loops, 7
        workers)."""
        worker = _KernelTranslator(
            self.kernel, self.declarations, self.fast_math, in_parallel=True
        )
        worker._start([PTR])
        data = worker.entry.args[0]
        data.name_hint = "data"
        loaded: list[SSAValue] = []
        for n, t in enumerate([*capture_types, *LOOP_SLOT_TYPES]):
            loaded.append(worker._emit(llvm.LoadOp(worker._slot(data, n, t), t)))
        *captures, body_address, count, lower, step, counters = loaded
        worker._declare("omp_get_thread_num")
        worker._declare("omp_get_num_threads")
        thread, team = (
            worker._emit(
                llvm.SExtOp(worker._emit(llvm.CallOp(callee, return_type=i32)), i64)
            )
            for callee in ("omp_get_thread_num", "omp_get_num_threads")
        )
        # visited (blocks emptied), then a chunk's first and last iteration
        cursor = worker._emit_in_entry(
            [
                three := llvm.ConstantOp(IntegerAttr(3, i64), i64),
                llvm.AllocaOp(three.results[0], i64, alignment=8),
            ]
        )
        first, last = (
            worker._emit(llvm.GEPOp(cursor, [n], i64, inbounds=True)) for n in (1, 2)
        )
        worker._append(llvm.StoreOp(worker._const(0, i64), cursor))
        worker._declare(LOOP_NEXT_SYMBOL)
        claim = [counters, count, thread, team, cursor, first, last]
        started = worker._emit(llvm.CallOp(LOOP_NEXT_SYMBOL, *claim, return_type=i8))
        run, done = Block(), Block()
        worker._branch_if_true(started, run, done)

        worker.region.add_block(run)
        worker.block = run
        begin, end = (
            worker._emit(
                llvm.AddOp(
                    lower,
                    worker._emit(llvm.MulOp(iteration, step, overflow=NSW)),
                    overflow=NSW,
                )
            )
            for iteration in (
                worker._emit(llvm.LoadOp(first, i64)),
                worker._emit(llvm.LoadOp(last, i64)),
            )
        )
        worker._append(_indirect_call(body_address, [*captures, begin, end]))
        more = worker._emit(llvm.CallOp(LOOP_NEXT_SYMBOL, *claim, return_type=i8))
        worker._branch_if_true(more, run, done)

        worker.region.add_block(done)
        worker.block = done
        worker._append(llvm.ReturnOp())
        return worker._function(name, [PTR])

    def _branch_if_true(self, flag: SSAValue, then: Block, otherwise: Block) -> None:
        """Branch on a C ``bool`` returned by libgomp (an ``i8``, 0 or 1)."""
        true = self._icmp(llvm.ICmpPredicateFlag.NE, flag, self._const(0, i8))
        self._append(llvm.CondBrOp(true, then, [], otherwise, []))

    def _address(self, op: memref.LoadOp | memref.StoreOp) -> SSAValue:
        t = self._check_layout(op.memref.type, "access to", op)
        shape = t.get_shape()
        strides = [prod(shape[d + 1 :]) for d in range(len(shape))]
        offset: SSAValue | None = None
        fixed = 0  # the part of the offset that constant indices make, added last
        checked = self.declarations.unproven_in(self.kernel).get(op, ())
        for dimension, (index, stride) in enumerate(zip(op.indices, strides)):
            term = self._operand(index)
            if dimension in checked:
                self._check_bounds(op, dimension, term, shape[dimension])
            if term in self.integers:
                fixed += self.integers[term] * stride
                continue
            if stride != 1:
                term = self._emit(
                    _made(llvm.MulOp, [term, self._const(stride, i64)], [i64], _NSW)
                )
            offset = (
                term
                if offset is None
                else self._emit(_made(llvm.AddOp, [offset, term], [i64], _NSW))
            )
        if fixed or offset is None:  # constant indices (or a rank-0 memref)
            constant = self._const(fixed, i64)
            offset = (
                constant
                if offset is None
                else self._emit(_made(llvm.AddOp, [offset, constant], [i64], _NSW))
            )
        return self._emit(
            _element_address(self._operand(op.memref), offset, t.get_element_type())
        )

    def _check_bounds(
        self,
        op: memref.LoadOp | memref.StoreOp,
        dimension: int,
        index: SSAValue,
        size: int,
    ) -> None:
        """``if (index >=u size) { ember_bounds_error(site, index, size); exit }``."""
        sites = self.declarations.bounds_sites
        site = f"{self.kernel.sym_name.data}__bounds{len(sites)}"
        sites[site] = (
            f"kernel @{self.kernel.sym_name.data}: {op.name} of "
            f"{describe_buffer(op.memref)}, dimension {dimension}, index "
            f"{describe_index(op, dimension)}"
        )
        self.declarations.externals[BOUNDS_ERROR_SYMBOL] = BOUNDS_ERROR_TYPE
        inside = self._icmp(llvm.ICmpPredicateFlag.ULT, index, self._const(size, i64))
        if self.bounds_exit is None:
            self.bounds_exit = Block()
        report, following = Block(), Block()
        self._append(llvm.CondBrOp(inside, following, [], report, []))
        self.region.add_block(report)
        self.block = report
        where = self._emit(llvm.AddressOfOp(site, PTR))
        size_value = self._const(size, i64)
        self._append(llvm.CallOp(BOUNDS_ERROR_SYMBOL, where, index, size_value))
        self._append(llvm.BrOp(self.bounds_exit))
        self.region.add_block(following)
        self.block = following

    def _lower_load(self, op: memref.LoadOp) -> None:
        address = self._address(op)
        self.values[op.res] = self._emit(
            _made(llvm.LoadOp, [address], [op.res.type], _NOT_ATOMIC)
        )

    def _lower_store(self, op: memref.StoreOp) -> None:
        address = self._address(op)
        self._append(_made(llvm.StoreOp, [self._operand(op.value), address], [], _NOT_ATOMIC))

    def _lower_alloc(self, op: memref.AllocOp) -> None:
        # In the entry block, so that a loop around the alloc neither grows the
        # stack nor leaks: one buffer per call (per thread in an outlined loop).
        t = self._check_layout(op.memref.type, "allocation of", op)
        elem = t.get_element_type()
        count = prod(t.get_shape())
        size_bytes = count * _byte_width(elem)
        if size_bytes <= STACK_LIMIT_BYTES:
            size = llvm.ConstantOp(IntegerAttr(count, i64), i64)
            alloca = llvm.AllocaOp(size.results[0], elem, alignment=BUFFER_ALIGNMENT)
            self.values[op.memref] = self._emit_in_entry([size, alloca])
            return
        nbytes = llvm.ConstantOp(IntegerAttr(size_bytes, i64), i64)
        call = llvm.CallOp("malloc", nbytes.results[0], return_type=PTR)
        self.declarations.externals["malloc"] = llvm.LLVMFunctionType([i64], PTR)
        pointer = self._emit_in_entry([nbytes, call])
        self.heap_buffers.append(pointer)
        self.values[op.memref] = pointer

    def _lower_dealloc(self, op: memref.DeallocOp) -> None:
        """Buffers are freed at return (heap) or with the frame (stack)."""

    # -- scalars -----------------------------------------------------------

    def _lower_constant(self, op: arith.ConstantOp) -> None:
        t = _scalar_type(op.result.type)
        value = op.value
        if isinstance(value, IntegerAttr | FloatAttr):
            self.values[op.result] = self._const(value.value.data, t)
        else:
            raise self._fail(
                op, "only scalar integer and float constants are supported"
            )

    def _lower_float_binary(self, op: Operation) -> None:
        lhs, rhs = (self._operand(v) for v in op.operands)
        self.values[op.results[0]] = self._emit(
            _made(_FLOAT_BINARY[type(op)], [lhs, rhs], [lhs.type], {"fastmathFlags": self._float_flags})
        )

    def _lower_int_binary(self, op: Operation) -> None:
        lhs, rhs = (self._operand(v) for v in op.operands)
        llvm_type = _INT_BINARY[type(op)]
        flags = _NSW if llvm_type in (llvm.AddOp, llvm.SubOp, llvm.MulOp) else {}
        self.values[op.results[0]] = self._emit(_made(llvm_type, [lhs, rhs], [lhs.type], flags))

    def _lower_negf(self, op: arith.NegfOp) -> None:
        self.values[op.result] = self._emit(
            llvm.FNegOp(self._operand(op.operand), self._float_flags)
        )

    def _lower_min_max(self, op: arith.MaximumfOp | arith.MinimumfOp) -> None:
        """``arith.maximumf``/``minimumf`` mean IEEE 754-2019 maximum/minimum,
        as ``llvm.maximum``/``minimum`` do: a NaN operand gives NaN, whichever
        side it is on (x86's ``maxps`` alone returns its second operand).
        LLVM lowers the intrinsics to ``vmaxps`` plus a NaN blend (three
        instructions).  Against a constant ``c`` (relu, clip) the same
        result is ``x ugt c ? x : c`` (``ult`` for the minimum): true for a
        NaN ``x``, one or two instructions; unless ``c`` is the zero that
        loses the tie (``maximum(-0.0, +0.0)`` is ``+0.0``)."""
        lhs, rhs = self._operand(op.lhs), self._operand(op.rhs)
        is_max = isinstance(op, arith.MaximumfOp)
        if self.fast_math:
            predicate = "ogt" if is_max else "olt"
        elif _wins_zero_tie(op.rhs, is_max):
            predicate = "ugt" if is_max else "ult"
        else:
            t = op.result.type
            name = f"llvm.{'maximum' if is_max else 'minimum'}.f{_byte_width(t) * 8}"
            call = llvm.CallIntrinsicOp(name, [lhs, rhs], [t])
            self.values[op.result] = self._emit(call)
            return
        pick_lhs = self._emit(llvm.FCmpOp(lhs, rhs, predicate))
        self.values[op.result] = self._emit(llvm.SelectOp(pick_lhs, lhs, rhs))

    def _lower_cmpf(self, op: arith.CmpfOp) -> None:
        # arith and llvm number float predicates alike (false, oeq, ogt, …).
        predicate = IntegerAttr(op.predicate.value.data, i64)
        lhs, rhs = self._operand(op.lhs), self._operand(op.rhs)
        self.values[op.result] = self._emit(llvm.FCmpOp(lhs, rhs, predicate))

    def _lower_cmpi(self, op: arith.CmpiOp) -> None:
        # arith and llvm number integer predicates alike (eq, ne, slt, …).
        predicate = IntegerAttr(op.predicate.value.data, i64)
        lhs, rhs = self._operand(op.lhs), self._operand(op.rhs)
        self.values[op.result] = self._emit(llvm.ICmpOp(lhs, rhs, predicate))

    def _lower_select(self, op: arith.SelectOp) -> None:
        cond, lhs, rhs = (self._operand(v) for v in op.operands)
        self.values[op.result] = self._emit(llvm.SelectOp(cond, lhs, rhs))

    def _lower_index_cast(self, op: arith.IndexCastOp) -> None:
        source = self._operand(op.input)
        source_width = _int_width(_scalar_type(op.input.type))
        target_type = _scalar_type(op.result.type)
        target_width = _int_width(target_type)
        if source_width == target_width:
            self.values[op.result] = source
        elif source_width > target_width:
            self.values[op.result] = self._emit(llvm.TruncOp(source, target_type))
        else:
            self.values[op.result] = self._emit(llvm.SExtOp(source, target_type))

    def _lower_cast(self, op: Operation) -> None:
        casts: dict[type[Operation], type[Operation]] = {
            arith.SIToFPOp: llvm.SIToFPOp,
            arith.ExtFOp: llvm.FPExtOp,
            arith.TruncFOp: llvm.FPTruncOp,
            arith.ExtSIOp: llvm.SExtOp,
            arith.TruncIOp: llvm.TruncOp,
        }
        source = self._operand(op.operands[0])
        self.values[op.results[0]] = self._emit(
            casts[type(op)](source, op.results[0].type)
        )  # type: ignore[call-arg]

    def _lower_fptosi(self, op: arith.FPToSIOp) -> None:
        """Float to int through ``llvm.fptosi.sat``: xDSL's translator has no
        ``fptosi``, and the saturating form is defined for every input (NaN
        gives 0, out-of-range values clamp) where plain ``fptosi`` is poison."""
        source = op.operands[0].type
        target = op.results[0].type
        name = f"llvm.fptosi.sat.i{_int_width(target)}.f{_byte_width(source) * 8}"
        call = llvm.CallIntrinsicOp(name, [self._operand(op.operands[0])], [target])
        self.values[op.results[0]] = self._emit(call)

    def _lower_math_intrinsic(self, op: Operation) -> None:
        new = _MATH_INTRINSICS[type(op)].create(
            operands=[self._operand(op.operands[0])],
            result_types=[op.results[0].type],
            properties={"fastmathFlags": llvm.FastMathAttr(None)},
        )
        self.values[op.results[0]] = self._emit(new)

    def _lower_libm_call(self, op: Operation) -> None:
        t = op.results[0].type
        suffix = _LIBM_SUFFIX.get(type(t))
        if suffix is None:
            raise self._fail(op, f"no C library function for {t}")
        name = _LIBM_CALLS[type(op)] + suffix
        operands = [self._operand(v) for v in op.operands]
        self.declarations.externals[name] = llvm.LLVMFunctionType([t] * len(operands), t)
        call = llvm.CallOp(name, *operands, return_type=t)
        self.values[op.results[0]] = self._emit(call)


def _wins_zero_tie(bound: SSAValue, is_max: bool) -> bool:
    """Whether ``bound`` is a float constant, not NaN, that IEEE 754-2019
    ``maximum`` (``is_max``) or ``minimum`` returns when ``x`` equals it:
    any non-zero value, and +0.0 for the maximum, -0.0 for the minimum."""
    owner = bound.owner
    if not isinstance(owner, arith.ConstantOp) or not isinstance(
        owner.value, FloatAttr
    ):
        return False
    value = owner.value.value.data
    if math.isnan(value):
        return False
    return value != 0 or math.copysign(1.0, value) == (1.0 if is_max else -1.0)


def _int_width(t: Attribute) -> int:
    assert isinstance(t, IntegerType)
    return t.width.data


def _byte_width(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    return {Float16Type: 2, Float32Type: 4, Float64Type: 8}[type(t)]


_HANDLERS: dict[type[Operation], Callable[[_KernelTranslator, Operation], None]] = {
    ForOp: _KernelTranslator._lower_for,  # type: ignore[dict-item]
    BlockOp: _KernelTranslator._lower_block,  # type: ignore[dict-item]
    func.ReturnOp: _KernelTranslator._lower_return,  # type: ignore[dict-item]
    memref.LoadOp: _KernelTranslator._lower_load,  # type: ignore[dict-item]
    memref.StoreOp: _KernelTranslator._lower_store,  # type: ignore[dict-item]
    memref.AllocOp: _KernelTranslator._lower_alloc,  # type: ignore[dict-item]
    memref.DeallocOp: _KernelTranslator._lower_dealloc,  # type: ignore[dict-item]
    arith.ConstantOp: _KernelTranslator._lower_constant,  # type: ignore[dict-item]
    arith.NegfOp: _KernelTranslator._lower_negf,  # type: ignore[dict-item]
    arith.MaximumfOp: _KernelTranslator._lower_min_max,  # type: ignore[dict-item]
    arith.MinimumfOp: _KernelTranslator._lower_min_max,  # type: ignore[dict-item]
    arith.CmpfOp: _KernelTranslator._lower_cmpf,  # type: ignore[dict-item]
    arith.CmpiOp: _KernelTranslator._lower_cmpi,  # type: ignore[dict-item]
    arith.SelectOp: _KernelTranslator._lower_select,  # type: ignore[dict-item]
    arith.IndexCastOp: _KernelTranslator._lower_index_cast,  # type: ignore[dict-item]
    arith.SIToFPOp: _KernelTranslator._lower_cast,  # type: ignore[dict-item]
    arith.ExtSIOp: _KernelTranslator._lower_cast,  # type: ignore[dict-item]
    arith.TruncIOp: _KernelTranslator._lower_cast,  # type: ignore[dict-item]
    arith.FPToSIOp: _KernelTranslator._lower_fptosi,  # type: ignore[dict-item]
    arith.ExtFOp: _KernelTranslator._lower_cast,  # type: ignore[dict-item]
    arith.TruncFOp: _KernelTranslator._lower_cast,  # type: ignore[dict-item]
}


def _captured_values(loop: ForOp) -> list[SSAValue]:
    """Values defined outside ``loop`` and used inside it, in order of first
    use, except constants (which the outlined function re-creates)."""
    captured: dict[SSAValue, None] = {}
    for op in loop.walk():
        for operand in op.operands:
            owner = operand.owner
            if loop.is_ancestor(owner) or isinstance(owner, arith.ConstantOp):
                continue
            captured[operand] = None
    return list(captured)


def loop_structure(loop: ForOp, captured: Sequence[SSAValue]) -> tuple[Hashable, ...]:
    """``loop`` as a value equal for two loops exactly when their bodies
    lower to the same function: each op's name, properties, attributes and
    result types, with its operands numbered (the ``captured`` values by
    position, values made inside in order, constants from outside by value),
    and each block's argument types.  Names (``name_hint``) are left out;
    attributes compare as xDSL defines (``-0.0`` is not ``0.0``)."""
    numbers: dict[SSAValue, int] = {value: n for n, value in enumerate(captured)}
    items: list[Hashable] = []

    def operand(value: SSAValue) -> Hashable:
        number = numbers.get(value)
        if number is not None:
            return number
        owner = value.owner
        assert isinstance(owner, arith.ConstantOp)  # the rest is captured
        return (owner.value, value.type)

    def visit(op: Operation) -> None:
        items.append(
            (
                op.name,
                tuple(operand(value) for value in op.operands),
                tuple(result.type for result in op.results),
                tuple(sorted(op.properties.items())),
                tuple(sorted(op.attributes.items())),
            )
        )
        for result in op.results:
            numbers[result] = len(numbers)
        for region in op.regions:
            for block in region.blocks:
                items.append(tuple(arg.type for arg in block.args))
                for arg in block.args:
                    numbers[arg] = len(numbers)
                for inner in block.ops:
                    visit(inner)
                items.append(None)  # the block's end

    visit(loop)
    return tuple(items)


def _captured_constants(loop: ForOp) -> list[arith.ConstantOp]:
    """The ``arith.constant`` ops outside ``loop`` whose values it uses."""
    constants: dict[arith.ConstantOp, None] = {}
    for op in loop.walk():
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, arith.ConstantOp) and not loop.is_ancestor(owner):
                constants[owner] = None
    return list(constants)


def loop_work(loop: ForOp) -> int:
    """The ops one run of ``loop`` executes: each op of its body once per
    iteration, a nested loop's body once per iteration of that loop too."""

    def ops_in(block: Block) -> int:
        total = 0
        for op in block.ops:
            inner = sum(ops_in(b) for region in op.regions for b in region.blocks)
            total += op.trip_count * inner if isinstance(op, ForOp) else 1 + inner
        return total

    return loop.trip_count * ops_in(loop.body.block)


def kernel_work(kernel: func.FuncOp) -> int:
    """The ops one call of ``kernel`` executes (:func:`loop_work` of its loops)."""
    return sum(
        loop_work(op) if isinstance(op, ForOp) else 1 for op in kernel.body.block.ops
    )


def lower_kernels_to_llvm(module: ModuleOp, **options: Any) -> None:
    """Replace every kernel of ``module`` by its ``llvm.func``, in place.
    ``options``: ``bounds_check``, ``fast_math``, ``min_parallel_work``,
    ``cold_work_fraction`` (:class:`KernelLowering`'s, all off by default).

    ``fast_math``: allow LLVM every fast-math assumption (no NaN, no inf, no
    signed zeros, reciprocals), which changes results for such values; off,
    compiled code computes what the interpreters compute.

    Every kernel is translated before the module is changed, so a kernel that
    cannot be lowered raises :class:`PassError` and leaves the module as it
    was.  Functions outlined from parallel loops follow their kernel; C
    library and OpenMP functions, and the thread-count global, are declared
    once, at the end.  ``bounds_check`` tests the accesses not proven in
    bounds at run time (see the module docstring); parallel loops of fewer
    than ``min_parallel_work`` ops (:func:`loop_work`) stay serial.  A
    kernel doing less than ``cold_work_fraction`` of all the kernels' work
    is marked ``passthrough = ["optsize"]``, with the functions outlined
    from it (:data:`~ember.lowering.COLD_WORK_FRACTION`).
    """
    lowering = KernelLowering(module, **options)
    lowered = list(lowering)
    for kernel, replacements in lowered:
        module.body.block.insert_ops_before(replacements, kernel)
        module.body.block.erase_op(kernel)
    declared = {
        op.sym_name.data
        for op in module.ops
        if isinstance(op, llvm.FuncOp | llvm.GlobalOp)
    }
    module.body.block.add_ops(
        op for op in lowering.declarations() if op.sym_name.data not in declared
    )


def _taken(kernels: Iterable[func.FuncOp]) -> Iterator[func.FuncOp]:
    """``kernels`` one by one, a list's dropped from it as each is taken
    (so that a kernel's IR dies once its caller is done with it)."""
    if isinstance(kernels, list):
        while kernels:
            yield kernels.pop(0)
    else:
        yield from kernels


class KernelLowering:
    """The kernels of a module lowered one by one: iterating yields each
    kernel with its ``llvm.func`` and the functions outlined from it (the
    module is not changed); :meth:`declarations` then are the ops that
    the functions lowered so far need beside them (see
    :func:`lower_kernels_to_llvm` for the options).  A build streams
    kernels to LLVM this way, compiling the first while the next lower.

    ``kernels`` (default: the module's, in order) may be an iterator that
    schedules each kernel as it is asked for
    (:func:`ember.compiler.scheduled_kernels`); which kernels are cold
    (``cold_work_fraction``) is decided by their work as they stand when
    the lowering is made, before such a schedule changes them."""

    def __init__(
        self,
        module: ModuleOp,
        *,
        kernels: Iterable[func.FuncOp] | None = None,
        bounds_check: bool = False,
        fast_math: bool = False,
        min_parallel_work: int = 0,
        cold_work_fraction: float = 0.0,
    ) -> None:
        if min_parallel_work < 0:
            raise PassError(
                f"lower-kernel-to-llvm: min_parallel_work must be >= 0, got {min_parallel_work}"
            )
        self._declarations = _ModuleDeclarations(
            bounds_check=bounds_check, min_parallel_work=min_parallel_work
        )
        self.fast_math = fast_math
        self.works = {k.sym_name.data: kernel_work(k) for k in kernel_functions(module)}
        self.cold_work = cold_work_fraction * sum(self.works.values())
        self.kernels = kernel_functions(module) if kernels is None else kernels

    def __iter__(self) -> Iterator[tuple[func.FuncOp, list[llvm.FuncOp]]]:
        declarations = self._declarations
        kernels = self.kernels
        self.kernels = ()  # a kernel's IR is the caller's alone once lowered
        for kernel in _taken(kernels):
            work = self.works[kernel.sym_name.data]
            declarations.cold = work < self.cold_work
            replacement = _KernelTranslator(kernel, declarations, self.fast_math).translate()
            functions = [replacement, *declarations.outlined]
            declarations.outlined.clear()
            declarations.unproven.clear()
            if declarations.cold:
                entries = set(declarations.workers.values())  # shared by hot loops too
                for function in functions:
                    if function.sym_name.data not in entries:
                        function.passthrough = ArrayAttr([StringAttr("optsize")])
            yield kernel, functions

    def declarations(self) -> list[Operation]:
        """The thread-count global, the bounds-check sites, and the C
        library and OpenMP functions the kernels lowered so far use."""
        declarations = self._declarations
        ops: list[Operation] = [
            llvm.GlobalOp(t, name, "external")
            for name, t in sorted(declarations.external_globals.items())
        ]
        for name, text in declarations.bounds_sites.items():
            data = text.encode() + b"\0"
            ops.append(
                llvm.GlobalOp(
                    llvm.LLVMArrayType(len(data), IntegerType(8)),
                    name,
                    "private",
                    constant=True,
                    value=StringAttr(data.decode()),
                )
            )
        ops += [
            llvm.FuncOp(name, signature, linkage=llvm.LinkageAttr("external"))
            for name, signature in sorted(declarations.externals.items())
        ]
        return ops


VECTOR_WIDTH_ATTRIBUTES = ("prefer-vector-width", "min-legal-vector-width")
"""LLVM's function attributes that set the vector width code is generated for."""


def set_vector_width(module: ModuleOp, bits: int) -> None:
    """Ask LLVM for ``bits``-wide vectors in every function ``module`` defines
    (``passthrough = [["prefer-vector-width", "512"], …]`` after any it
    has), in place."""
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and op.body.blocks:
            set_function_vector_width(op, bits)


def set_function_vector_width(function: llvm.FuncOp, bits: int) -> None:
    """:func:`set_vector_width` for one function."""
    width = StringAttr(str(bits))
    kept = [] if function.passthrough is None else function.passthrough.data
    function.passthrough = ArrayAttr(
        [*kept, *(ArrayAttr([StringAttr(name), width]) for name in VECTOR_WIDTH_ATTRIBUTES)]
    )
