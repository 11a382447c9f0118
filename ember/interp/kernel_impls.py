"""Reference semantics of kernels: xDSL interpreter functions, on numpy buffers.

``run_kernel(module, "linear0", x, w, b, z)`` runs one kernel the way TVM's
"low-level numpy" listings do, loop by loop and element by element, writing
its outputs into the arrays passed last (destination-passing style).  It is
the definition of what a kernel means, against which schedules and the LLVM
backend are checked; at ~10k loop iterations a second it is for small shapes.

Memrefs are numpy arrays: loads return numpy scalars of the element type, so
float arithmetic rounds to f32 as compiled code does (float constants are
numpy scalars too).  ``memref.alloc`` fills float buffers with NaN — TensorIR's
``alloc_buffer`` is uninitialised, and NaN makes a read before a write show
in the result instead of passing by luck.  Out-of-bounds accesses raise
:class:`ember.errors.RuntimeFailure` naming the op, buffer and indices (numpy
would silently wrap negative indices).

xDSL 0.74 interprets ``arith`` only in part; the float ops kernels need that
it lacks (``divf``, ``negf``, casts, ``math.tanh`` …) are defined
here, in one place.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, builtin, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.math import MathFunctions
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError, VerifyException

from ember.dialects.graph import CallKernelOp
from ember.dialects.kernel import (
    BlockOp,
    ForOp,
    InitOp,
    check_kernel_signature,
    find_kernel,
)
from ember.errors import IRError, RuntimeFailure

_DTYPES: dict[Attribute, np.dtype] = {
    builtin.f16: np.dtype(np.float16),
    builtin.f32: np.dtype(np.float32),
    builtin.f64: np.dtype(np.float64),
    builtin.i1: np.dtype(np.bool_),
    builtin.i8: np.dtype(np.int8),
    builtin.i32: np.dtype(np.int32),
    builtin.i64: np.dtype(np.int64),
}


def dtype_of(element_type: Attribute) -> np.dtype:
    """The numpy dtype that holds values of a scalar type."""
    try:
        return _DTYPES[element_type]
    except KeyError:
        raise RuntimeFailure(
            f"the kernel interpreter does not support element type {element_type}"
        ) from None


# --------------------------------------------------------------------------
# kernel ops
# --------------------------------------------------------------------------


@register_impls
class KernelFunctions(InterpreterFunctions):
    """``kernel.for``, ``kernel.block`` and ``kernel.init``."""

    @impl(ForOp)
    def run_for(self, interpreter: Interpreter, op: ForOp, args: PythonValues) -> PythonValues:
        for i in range(op.lb, op.ub, op.step_value):
            interpreter.run_ssacfg_region(op.body, (i,), "kernel.for")
        return ()

    @impl(BlockOp)
    def run_block(
        self, interpreter: Interpreter, op: BlockOp, args: PythonValues
    ) -> PythonValues:
        interpreter.run_ssacfg_region(op.body, tuple(args), op.block_name.data)
        return ()

    @impl(InitOp)
    def run_init(self, interpreter: Interpreter, op: InitOp, args: PythonValues) -> PythonValues:
        block = op.parent_block_op
        assert block is not None  # guaranteed by InitOp's verifier
        if all(v == 0 for v in interpreter.get_values(block.reduce_vars)):
            interpreter.run_ssacfg_region(op.body, (), "kernel.init")
        return ()


# --------------------------------------------------------------------------
# memref on numpy arrays
# --------------------------------------------------------------------------


def _checked_index(op: memref.LoadOp | memref.StoreOp, array: np.ndarray, indices: Sequence[int]) -> tuple[int, ...]:
    index = tuple(int(i) for i in indices)
    if len(index) != array.ndim or any(not 0 <= i < n for i, n in zip(index, array.shape)):
        buffer = op.memref.name_hint or "buffer"
        raise RuntimeFailure(
            f"{op.name}: index {list(index)} is out of bounds for %{buffer} of "
            f"shape {list(array.shape)}"
        )
    return index


@register_impls
class NumpyMemRefFunctions(InterpreterFunctions):
    """``memref.alloc/dealloc/load/store`` with numpy arrays as memrefs."""

    @impl(memref.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues) -> PythonValues:
        memref_type = op.memref.type
        dtype = dtype_of(memref_type.get_element_type())
        shape = tuple(memref_type.get_shape())
        if np.issubdtype(dtype, np.floating):
            return (np.full(shape, np.nan, dtype=dtype),)
        return (np.zeros(shape, dtype=dtype),)

    @impl(memref.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: memref.DeallocOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues) -> PythonValues:
        array, *indices = args
        value = array[_checked_index(op, array, indices)]
        # xDSL's integer arith works on Python ints (numpy ints overflow in its
        # two's-complement helpers); floats stay numpy scalars to round alike.
        return (value.item() if array.dtype.kind in "iu" else value,)

    @impl(memref.StoreOp)
    def run_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues) -> PythonValues:
        value, array, *indices = args
        array[_checked_index(op, array, indices)] = value
        return ()


# --------------------------------------------------------------------------
# scalar ops xDSL's arith/math interpreters lack
# --------------------------------------------------------------------------


def _scalar(op_type: Attribute, value: Any) -> Any:
    """``value`` as a numpy scalar of ``op_type`` (so arithmetic rounds alike)."""
    return dtype_of(op_type).type(value)


@register_impls
class KernelScalarFunctions(InterpreterFunctions):
    """Float ops and casts for kernel bodies, computed in the element type."""

    @impl(arith.DivfOp)
    def run_divf(self, interpreter: Interpreter, op: arith.DivfOp, args: PythonValues) -> PythonValues:
        lhs, rhs = (_scalar(op.result.type, a) for a in args)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (lhs / rhs,)

    @impl(arith.NegfOp)
    def run_negf(self, interpreter: Interpreter, op: arith.NegfOp, args: PythonValues) -> PythonValues:
        return (-_scalar(op.result.type, args[0]),)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter: Interpreter, op: arith.SIToFPOp, args: PythonValues) -> PythonValues:
        return (_scalar(op.result.type, args[0]),)

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interpreter: Interpreter, op: arith.FPToSIOp, args: PythonValues) -> PythonValues:
        return (math.trunc(float(args[0])),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op: arith.ExtFOp, args: PythonValues) -> PythonValues:
        return (_scalar(op.result.type, args[0]),)

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op: arith.TruncFOp, args: PythonValues) -> PythonValues:
        return (_scalar(op.result.type, args[0]),)

    @impl(xmath.TanhOp)
    def run_tanh(self, interpreter: Interpreter, op: xmath.TanhOp, args: PythonValues) -> PythonValues:
        return (np.tanh(_scalar(op.result.type, args[0])),)

    @impl(xmath.AbsFOp)
    def run_absf(self, interpreter: Interpreter, op: xmath.AbsFOp, args: PythonValues) -> PythonValues:
        return (np.abs(_scalar(op.result.type, args[0])),)

    @impl(xmath.PowFOp)
    def run_powf(self, interpreter: Interpreter, op: xmath.PowFOp, args: PythonValues) -> PythonValues:
        base, exponent = (_scalar(op.result.type, a) for a in args)
        with np.errstate(all="ignore"):
            return (np.power(base, exponent),)

    @impl(xmath.FloorOp)
    def run_floor(self, interpreter: Interpreter, op: xmath.FloorOp, args: PythonValues) -> PythonValues:
        return (np.floor(_scalar(op.result.type, args[0])),)

    @impl(xmath.CeilOp)
    def run_ceil(self, interpreter: Interpreter, op: xmath.CeilOp, args: PythonValues) -> PythonValues:
        return (np.ceil(_scalar(op.result.type, args[0])),)

    @impl(xmath.RsqrtOp)
    def run_rsqrt(self, interpreter: Interpreter, op: xmath.RsqrtOp, args: PythonValues) -> PythonValues:
        value = _scalar(op.result.type, args[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            return (value.dtype.type(1) / np.sqrt(value),)


@register_impls
class FloatConstantFunctions(InterpreterFunctions):
    """Float ``arith.constant`` as a numpy scalar (xDSL gives a Python float,
    which would make constant-only arithmetic run in double precision)."""

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues) -> PythonValues:
        if isinstance(op.value, FloatAttr):
            return (_scalar(op.result.type, op.value.value.data),)
        return ArithFunctions().run_constant(interpreter, op, args).values


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def kernel_interpreter(module: ModuleOp) -> Interpreter:
    """An interpreter that knows kernels, numpy memrefs, arith, math and func."""
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(MathFunctions())
    interpreter.register_implementations(KernelScalarFunctions())
    interpreter.register_implementations(FloatConstantFunctions(), override=True)
    interpreter.register_implementations(NumpyMemRefFunctions())
    interpreter.register_implementations(KernelFunctions())
    return interpreter


def _check_arrays(func: FuncOp, arrays: Sequence[np.ndarray]) -> None:
    try:
        types = check_kernel_signature(func)
    except VerifyException as e:
        raise IRError(str(e)) from None
    name = func.sym_name.data
    if len(arrays) != len(types):
        raise RuntimeFailure(f"kernel @{name} takes {len(types)} arrays, got {len(arrays)}")
    for n, (array, t) in enumerate(zip(arrays, types)):
        if not isinstance(array, np.ndarray):
            raise RuntimeFailure(
                f"kernel @{name}: argument #{n} must be a numpy array, got {type(array).__name__}"
            )
        want_shape, want_dtype = tuple(t.get_shape()), dtype_of(t.get_element_type())
        if array.shape != want_shape or array.dtype != want_dtype:
            raise RuntimeFailure(
                f"kernel @{name}: argument #{n} is {array.dtype}{list(array.shape)}, "
                f"expected {want_dtype}{list(want_shape)} ({t})"
            )


def run_kernel(module: ModuleOp, name: str, *arrays: np.ndarray) -> None:
    """Interpret kernel ``@name`` on numpy arrays, writing its outputs in place.

    ``arrays`` match the kernel's memref arguments in order, outputs last
    (destination-passing style); shapes and dtypes must match exactly.
    """
    func = find_kernel(module, name)
    _check_arrays(func, arrays)
    try:
        kernel_interpreter(module).call_op(func, tuple(arrays))
    except InterpretationError as e:
        raise RuntimeFailure(f"interpreting kernel @{name} failed: {e}") from None


# --------------------------------------------------------------------------
# graph.call_kernel in graph programs (Relax call_tir's reference semantics)
# --------------------------------------------------------------------------


@register_impls
class CallKernelFunctions(InterpreterFunctions):
    """``graph.call_kernel``: allocate the outputs, interpret the kernel on them."""

    @impl(CallKernelOp)
    def run_call_kernel(
        self, interpreter: Interpreter, op: CallKernelOp, args: PythonValues
    ) -> PythonValues:
        outputs = [
            np.empty(tuple(r.type.get_shape()), dtype_of(r.type.element_type))
            for r in op.results
        ]
        module = op.get_toplevel_object()
        assert isinstance(module, ModuleOp)  # call_kernel verifies its callee there
        inputs = [np.ascontiguousarray(a).reshape(np.shape(a)) for a in args]
        run_kernel(module, op.callee, *inputs, *outputs)
        return tuple(outputs)
