"""The CUDA backend's compile half: kernels → CUDA C → NVRTC (PTX, CUBIN).

One renderer turns kernel-dialect functions into readable CUDA C, as
tinygrad's and TVM's CUDA code generators do; NVRTC (``cuda.bindings.nvrtc``,
the ``nvidia-cuda-nvrtc`` wheel of the CUDA 13.0 line) compiles it to PTX
for a virtual architecture and to CUBIN for a real one. None of this needs a
GPU or a driver: building and inspecting CUDA code works on any machine.

**How a kernel becomes CUDA.** A kernel's top-level statements run one after
another over the whole grid, so each top-level loop nest (or run of other
statements) becomes its own ``__global__`` function, launched in order on
one stream: ``@k`` gives ``k_0``, ``k_1``, … A buffer allocated at the top
level lives across those launches, so it becomes a global scratch buffer
that the caller allocates (:attr:`CudaKernel.scratch`); one allocated inside
a loop is private to an iteration and becomes a local array.

Loops bound by ``kernel-bind-gpu`` render as grid-stride loops, correct for
any trip count and any launch size::

    gpu.block.x   for (i = lb + blockIdx.x * s; i < ub; i += gridDim.x * s)
    gpu.thread.x  for (i = lb + threadIdx.x * s; i < ub; i += blockDim.x * s)

and every other kind as a plain ``for``. Each part's launch is its bound
loops' trip counts (:class:`LaunchPart`), with ``__launch_bounds__`` set to
its block size. A ``kernel.block``'s iteration variables are its bindings;
its ``kernel.init`` runs when every reduce variable is 0.

As a backend (:class:`CudaBackend`, the interface of :mod:`ember.backends`)
it compiles a graph program's kernels to a :class:`CudaSource`; there is no
CUDA runtime to load it yet.

Floating point follows ember's semantics: ``arith.maximumf``/``minimumf``
propagate NaN and order -0 below +0 (helpers below, not ``fmaxf``), float
to integer conversions saturate, and NVRTC is not given ``--use_fast_math``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from xdsl.dialects import arith, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    f16,
    f32,
    f64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ember.backends import Backend
from ember.dialects.kernel import BlockOp, ForOp, InitOp, check_kernel_signature, kernel_functions
from ember.errors import EmberError, PassError, TargetError
from ember.target import DEFAULT_CUDA_ARCH, cuda_arch

__all__ = [
    "CudaBackend",
    "CudaError",
    "CudaKernel",
    "CudaSource",
    "LaunchPart",
    "compile_cubin",
    "compile_ptx",
    "parse_arch",
    "ptxas_check",
    "render_module",
]

DEFAULT_ARCH = DEFAULT_CUDA_ARCH


class CudaError(EmberError):
    """CUDA code that cannot be generated or compiled (names the kernel)."""


@dataclass(frozen=True)
class LaunchPart:
    """One ``__global__`` function of a kernel and its launch shape."""

    function: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


@dataclass(frozen=True)
class CudaKernel:
    """A kernel rendered to CUDA: its parts in launch order, its buffers
    (``(shape, dtype)`` of each argument) and the scratch buffers the caller
    allocates and passes after the arguments."""

    name: str
    parts: tuple[LaunchPart, ...]
    arguments: tuple[tuple[tuple[int, ...], str], ...]
    scratch: tuple[tuple[tuple[int, ...], str], ...]


@dataclass(frozen=True)
class CudaSource:
    """CUDA C for a module's kernels, and how to launch each."""

    code: str
    kernels: tuple[CudaKernel, ...] = field(default=())

    def kernel(self, name: str) -> CudaKernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise CudaError(f"no CUDA kernel @{name} (kernels: {', '.join(k.name for k in self.kernels)})")


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

_C_TYPES = {f16: "ember_half", f32: "float", f64: "double"}
_NUMPY_NAMES = {f16: "float16", f32: "float32", f64: "float64"}
_MAX_GRID = (2**31 - 1, 65535, 65535)


def _c_type(t: Attribute, where: str) -> str:
    if t in _C_TYPES:
        return _C_TYPES[t]
    if isinstance(t, IndexType):
        return "long long"
    if isinstance(t, IntegerType):
        width = t.width.data
        if width == 1:
            return "bool"
        if width in (8, 16, 32, 64):
            return {8: "signed char", 16: "short", 32: "int", 64: "long long"}[width]
    raise CudaError(f"{where}: no CUDA type for {t}")


def _dtype_name(t: Attribute) -> str:
    if t in _NUMPY_NAMES:
        return _NUMPY_NAMES[t]
    if isinstance(t, IntegerType):
        return f"int{t.width.data}" if t.width.data > 1 else "bool"
    return str(t)


_PRELUDE = r"""// Generated by ember (ember/backends/cuda.py); needs no headers.
// f16 is stored as its 16 bits and computed in f32, converted by PTX's cvt.
typedef unsigned short ember_half;
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float ember_h2f(ember_half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ ember_half ember_f2h(float f) {
  ember_half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#else  // host emulation (tests run the generated code on the CPU)
__device__ __forceinline__ float ember_h2f(ember_half h) {
  _Float16 v;
  __builtin_memcpy(&v, &h, 2);
  return (float)v;
}
__device__ __forceinline__ ember_half ember_f2h(float f) {
  _Float16 v = (_Float16)f;
  ember_half h;
  __builtin_memcpy(&h, &v, 2);
  return h;
}
#endif

// arith.maximumf / minimumf: NaN propagates, -0 < +0 (not fmaxf's rules).
template <typename T> __device__ __forceinline__ T ember_max(T a, T b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit((double)a) ? b : a;
  return a > b ? a : b;
}
template <typename T> __device__ __forceinline__ T ember_min(T a, T b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit((double)a) ? a : b;
  return a < b ? a : b;
}
// arith.fptosi: saturating, NaN to 0 (LLVM's fptosi.sat).
template <typename I> __device__ __forceinline__ I ember_fptosi(double x, double lo, double hi) {
  if (x != x) return (I)0;
  if (x <= lo) return (I)lo;
  if (x >= hi) return (I)hi;
  return (I)x;
}
__device__ __forceinline__ long long ember_floordiv(long long a, long long b) {
  long long q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
"""


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------


class _FunctionWriter:
    """Renders one part: names values, indents, knows the buffers."""

    def __init__(self, kernel: str, buffers: dict[SSAValue, str]) -> None:
        self.kernel = kernel
        self.names: dict[SSAValue, str] = dict(buffers)
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.block_sizes = [1, 1, 1]
        self.grid_sizes = [1, 1, 1]

    def name(self, value: SSAValue, stem: str = "v") -> str:
        self.counter += 1
        hint = value.name_hint
        text = f"{hint}_{self.counter}" if hint and hint.isidentifier() else f"{stem}{self.counter}"
        self.names[value] = text
        return text

    def __getitem__(self, value: SSAValue) -> str:
        try:
            return self.names[value]
        except KeyError:
            raise CudaError(f"kernel @{self.kernel}: a value is used outside its scope") from None

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def where(self, op: Operation) -> str:
        return f"cannot render {op.name} in kernel @{self.kernel}"

    # ---- statements ----------------------------------------------------------

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, ForOp):
            self.loop(op)
        elif isinstance(op, BlockOp):
            self.kblock(op)
        elif isinstance(op, (ReturnOp, memref.DeallocOp)):
            pass
        elif isinstance(op, memref.AllocOp):
            t = op.memref.type
            assert isinstance(t, MemRefType)
            size = 1
            for d in t.get_shape():
                size *= d
            name = self.name(op.memref, "buf")
            self.emit(f"{_c_type(t.element_type, self.where(op))} {name}[{max(size, 1)}];")
        elif isinstance(op, memref.LoadOp):
            ref = op.memref
            self.emit(
                f"{_c_type(op.res.type, self.where(op))} {self.name(op.res)} = "
                f"{self[ref]}[{self.offset(ref, op.indices)}];"
            )
        elif isinstance(op, memref.StoreOp):
            self.emit(f"{self[op.memref]}[{self.offset(op.memref, op.indices)}] = {self[op.value]};")
        else:
            self.scalar(op)

    def offset(self, ref: SSAValue, indices: Sequence[SSAValue]) -> str:
        t = ref.type
        assert isinstance(t, MemRefType)
        shape = t.get_shape()
        terms: list[str] = []
        stride = 1
        for dim, index in reversed(list(zip(shape, indices))):
            terms.append(self[index] if stride == 1 else f"{self[index]} * {stride}LL")
            stride *= dim
        return " + ".join(reversed(terms)) or "0"

    def loop(self, op: ForOp) -> None:
        kind = op.kind.data
        iv = self.name(op.induction_var, "i")
        lb, ub, step = op.lb, op.ub, op.step_value
        if kind.startswith("gpu."):
            _, level, axis = kind.split(".")
            d = "xyz".index(axis)
            base, count = ("blockIdx", "gridDim") if level == "block" else ("threadIdx", "blockDim")
            sizes = self.grid_sizes if level == "block" else self.block_sizes
            sizes[d] = max(sizes[d], op.trip_count)
            self.emit(
                f"for (long long {iv} = {lb}LL + (long long){base}.{axis} * {step}LL; {iv} < {ub}LL; "
                f"{iv} += (long long){count}.{axis} * {step}LL) {{"
            )
        else:
            if kind == "unrolled":
                self.emit("#pragma unroll")
            self.emit(f"for (long long {iv} = {lb}LL; {iv} < {ub}LL; {iv} += {step}LL) {{  // {kind}")
        self.depth += 1
        self.block(op.body.block)
        self.depth -= 1
        self.emit("}")

    def kblock(self, op: BlockOp) -> None:
        self.emit(f"{{  // block \"{op.properties['name'].data}\"")  # type: ignore[union-attr]
        self.depth += 1
        for var, bound in zip(op.iter_vars, op.operands):
            self.emit(f"const long long {self.name(var, 'v')} = {self[bound]};")
        reduce_vars = [v for v, k in zip(op.iter_vars, op.kinds) if k == "reduce"]
        for inner in op.body.block.ops:
            if isinstance(inner, InitOp):
                condition = " && ".join(f"{self[v]} == 0" for v in reduce_vars) or "true"
                self.emit(f"if ({condition}) {{")
                self.depth += 1
                self.block(inner.body.block)
                self.depth -= 1
                self.emit("}")
            else:
                self.op(inner)
        self.depth -= 1
        self.emit("}")

    # ---- scalars ---------------------------------------------------------------

    def scalar(self, op: Operation) -> None:
        if not op.results:
            raise CudaError(f"{self.where(op)}: no CUDA rendering for this op")
        result = op.results[0]
        ctype = _c_type(result.type, self.where(op))
        expression = self.expression(op)
        self.emit(f"const {ctype} {self.name(result)} = {expression};")

    def expression(self, op: Operation) -> str:
        a = [self[v] for v in op.operands]
        where = self.where(op)
        if isinstance(op, arith.ConstantOp):
            return _constant(op.value, where)
        binary = {
            arith.AddfOp: "+", arith.SubfOp: "-", arith.MulfOp: "*", arith.DivfOp: "/",
            arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*",
            arith.DivSIOp: "/", arith.RemSIOp: "%",
            arith.AndIOp: "&", arith.OrIOp: "|", arith.XOrIOp: "^",
        }
        for op_type, symbol in binary.items():
            if isinstance(op, op_type):
                if op.results[0].type == f16:
                    return f"ember_f2h(ember_h2f({a[0]}) {symbol} ember_h2f({a[1]}))"
                return f"({a[0]} {symbol} {a[1]})"
        if isinstance(op, arith.FloorDivSIOp):
            return f"ember_floordiv({a[0]}, {a[1]})"
        if isinstance(op, arith.NegfOp):
            return f"(-{a[0]})"
        if isinstance(op, (arith.MaximumfOp, arith.MinimumfOp)):
            fn = "ember_max" if isinstance(op, arith.MaximumfOp) else "ember_min"
            if op.results[0].type == f16:
                return f"ember_f2h({fn}(ember_h2f({a[0]}), ember_h2f({a[1]})))"
            return f"{fn}({a[0]}, {a[1]})"
        if isinstance(op, (arith.MaxSIOp, arith.MinSIOp)):
            cmp = ">" if isinstance(op, arith.MaxSIOp) else "<"
            return f"({a[0]} {cmp} {a[1]} ? {a[0]} : {a[1]})"
        if isinstance(op, arith.SelectOp):
            return f"({a[0]} ? {a[1]} : {a[2]})"
        if isinstance(op, arith.CmpfOp):
            return _cmpf(op.predicate.value.data, a[0], a[1], op.operands[0].type == f16, where)
        if isinstance(op, arith.CmpiOp):
            symbols = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">="}
            predicate = op.predicate.value.data
            if predicate not in symbols:
                raise CudaError(f"{where}: unsigned comparisons are not supported")
            return f"({a[0]} {symbols[predicate]} {a[1]})"
        if isinstance(op, (arith.IndexCastOp, arith.ExtSIOp, arith.TruncIOp)):
            return f"(({_c_type(op.results[0].type, where)}){a[0]})"
        if isinstance(op, arith.SIToFPOp):
            out = op.results[0].type
            return f"ember_f2h((float){a[0]})" if out == f16 else f"(({_c_type(out, where)}){a[0]})"
        if isinstance(op, arith.FPToSIOp):
            out = op.results[0].type
            assert isinstance(out, IntegerType)
            bits = out.width.data
            lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
            source = f"ember_h2f({a[0]})" if op.operands[0].type == f16 else a[0]
            return f"ember_fptosi<{_c_type(out, where)}>((double){source}, {lo}.0, {hi}.0)"
        if isinstance(op, arith.ExtFOp):
            source, out = op.operands[0].type, op.results[0].type
            if source == f16:
                inner = f"ember_h2f({a[0]})"
                return inner if out == f32 else f"((double){inner})"
            return f"(({_c_type(out, where)}){a[0]})"
        if isinstance(op, arith.TruncFOp):
            out = op.results[0].type
            if out == f16:
                return f"ember_f2h((float){a[0]})"
            return f"(({_c_type(out, where)}){a[0]})"
        math_functions = {
            xmath.ExpOp: "exp", xmath.SqrtOp: "sqrt", xmath.LogOp: "log", xmath.TanhOp: "tanh",
            xmath.AbsFOp: "fabs", xmath.FloorOp: "floor", xmath.CeilOp: "ceil",
        }
        for op_type, fn in math_functions.items():
            if isinstance(op, op_type):
                t = op.results[0].type
                if t == f16:
                    return f"ember_f2h({fn}f(ember_h2f({a[0]})))"
                return f"{fn}{'f' if t == f32 else ''}({a[0]})"
        raise CudaError(f"{where}: no CUDA rendering for this op")


def _constant(value: Attribute, where: str) -> str:
    if isinstance(value, FloatAttr):
        number = value.value.data
        t = value.type
        if number != number:
            text = "__int_as_float(0x7fc00000)"
        elif number in (float("inf"), float("-inf")):
            text = ("-" if number < 0 else "") + "__int_as_float(0x7f800000)"
        else:
            text = repr(float(number))
            if t != f64:
                text += "f"
        return f"ember_f2h({text})" if t == f16 else text
    if isinstance(value, IntegerAttr):
        number = value.value.data
        if isinstance(value.type, IntegerType) and value.type.width.data == 1:
            return "true" if number else "false"
        return f"{number}LL"
    raise CudaError(f"{where}: constant {value}")


_CMPF = {
    # predicate number (arith.CmpFPredicateAttr order) -> (ordered form, negate)
    0: ("false", None), 1: ("==", False), 2: (">", False), 3: (">=", False),
    4: ("<", False), 5: ("<=", False), 6: ("one", None), 7: ("ord", None),
    8: ("ueq", None), 9: ("<=", True), 10: ("<", True), 11: (">=", True),
    12: (">", True), 13: ("!=", False), 14: ("uno", None), 15: ("true", None),
}


def _cmpf(predicate: int, a: str, b: str, half: bool, where: str) -> str:
    if half:
        a, b = f"ember_h2f({a})", f"ember_h2f({b})"
    symbol, negate = _CMPF.get(predicate, (None, None))
    if symbol is None:
        raise CudaError(f"{where}: comparison predicate {predicate}")
    special = {
        "false": "false", "true": "true",
        "one": f"({a} < {b} || {a} > {b})",
        "ord": f"({a} == {a} && {b} == {b})",
        "uno": f"({a} != {a} || {b} != {b})",
        "ueq": f"!({a} < {b} || {a} > {b})",
    }
    if symbol in special:
        return special[symbol]
    # Unordered predicates are the negation of the opposite ordered one.
    return f"!({a} {symbol} {b})" if negate else f"({a} {symbol} {b})"


def _parts(func: FuncOp) -> tuple[list[list[Operation]], list[Operation], list[Operation]]:
    """Top-level statements grouped into launches; the constants every part
    repeats; the top-level allocations (scratch buffers)."""
    constants: list[Operation] = []
    scratch: list[Operation] = []
    parts: list[list[Operation]] = []
    pending: list[Operation] = []
    for op in func.body.block.ops:
        if isinstance(op, arith.ConstantOp):
            constants.append(op)
        elif isinstance(op, memref.AllocOp):
            scratch.append(op)
        elif isinstance(op, (memref.DeallocOp, ReturnOp)):
            continue
        elif isinstance(op, ForOp):
            if pending:
                parts.append(pending)
                pending = []
            parts.append([op])
        else:
            pending.append(op)
    if pending:
        parts.append(pending)
    return parts, constants, scratch


def _render_kernel(func: FuncOp) -> tuple[str, CudaKernel]:
    name = func.sym_name.data
    try:
        types = check_kernel_signature(func)
    except Exception as error:  # VerifyException: the DPS contract
        raise CudaError(str(error)) from None
    parts, constants, scratch = _parts(func)
    buffers: list[tuple[SSAValue, MemRefType, str]] = []
    taken: set[str] = set()
    for index, (arg, t) in enumerate(zip(func.body.block.args, types)):
        hint = arg.name_hint if arg.name_hint and arg.name_hint.isidentifier() else "arg"
        if hint in taken:
            hint = f"{hint}{index}"
        taken.add(hint)
        buffers.append((arg, t, hint))
    for index, op in enumerate(scratch):
        t = op.memref.type
        assert isinstance(t, MemRefType)
        buffers.append((op.memref, t, f"scratch{index}"))
    written = _written_buffers(func)
    params = ", ".join(
        f"{'' if value in written else 'const '}{_c_type(t.element_type, f'kernel @{name}')}* __restrict__ {n}"
        for value, t, n in buffers
    )
    chunks: list[str] = []
    launches: list[LaunchPart] = []
    for index, statements in enumerate(parts or [[]]):
        writer = _FunctionWriter(name, {v: n for v, _, n in buffers})
        for op in constants:
            writer.scalar(op)
        for op in statements:
            writer.op(op)
        threads = writer.block_sizes[0] * writer.block_sizes[1] * writer.block_sizes[2]
        if threads > 1024:
            raise CudaError(
                f"kernel @{name}: {threads} threads per block (bound loops' trip counts "
                f"{writer.block_sizes}); at most 1024 — split the loop (kernel-bind-gpu)"
            )
        grid = tuple(min(s, m) for s, m in zip(writer.grid_sizes, _MAX_GRID))
        part = f"{name}_{index}"
        launches.append(LaunchPart(part, grid, tuple(writer.block_sizes)))  # type: ignore[arg-type]
        body = "\n".join(writer.lines)
        chunks.append(
            f'extern "C" __global__ void __launch_bounds__({threads}) {part}({params}) {{\n{body}\n}}\n'
        )
    kernel = CudaKernel(
        name,
        tuple(launches),
        tuple((tuple(t.get_shape()), _dtype_name(t.element_type)) for t in types),
        tuple(
            (tuple(op.memref.type.get_shape()), _dtype_name(op.memref.type.element_type))  # type: ignore[union-attr]
            for op in scratch
        ),
    )
    return f"// kernel @{name}\n" + "\n".join(chunks), kernel


def _written_buffers(func: FuncOp) -> set[SSAValue]:
    return {op.memref for op in func.walk() if isinstance(op, memref.StoreOp)}


def render_module(module: ModuleOp, names: Iterable[str] | None = None) -> CudaSource:
    """CUDA C for the kernels of ``module`` (all, or those in ``names``)."""
    wanted = None if names is None else set(names)
    pieces = [_PRELUDE]
    kernels: list[CudaKernel] = []
    for func in kernel_functions(module):
        if wanted is not None and func.sym_name.data not in wanted:
            continue
        text, kernel = _render_kernel(func)
        pieces.append(text)
        kernels.append(kernel)
    return CudaSource("\n".join(pieces), tuple(kernels))


# --------------------------------------------------------------------------
# NVRTC
# --------------------------------------------------------------------------


def parse_arch(arch: str | None) -> str:
    """``sm_90`` (also ``90`` or ``compute_90``) checked; None: the default
    (:func:`ember.target.cuda_arch`, raising :class:`CudaError`)."""
    try:
        return cuda_arch(arch)
    except TargetError as error:
        raise CudaError(str(error)) from None


def _nvrtc():  # type: ignore[no-untyped-def]
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise CudaError(
            "compiling CUDA needs NVRTC from cuda-python: pip install \"ember[cuda]\""
        ) from None
    return nvrtc


def _check(nvrtc, result, what: str) -> None:  # type: ignore[no-untyped-def]
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, message = nvrtc.nvrtcGetErrorString(result)
        raise CudaError(f"NVRTC {what}: {message.decode() if isinstance(message, bytes) else message}")


_OPTIONS = ("-std=c++17", "--diag-suppress=177")
"""NVRTC options besides the architecture: no fast math (ember's float
semantics), and no warnings for block variables a body does not read."""


def _compile(source: str, options: list[str]):  # type: ignore[no-untyped-def]
    nvrtc = _nvrtc()
    err, program = nvrtc.nvrtcCreateProgram(source.encode(), b"ember.cu", 0, [], [])
    _check(nvrtc, err, "create program")
    (result,) = nvrtc.nvrtcCompileProgram(program, len(options), [o.encode() for o in options])
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(program, log)
        nvrtc.nvrtcDestroyProgram(program)
        raise CudaError(f"NVRTC could not compile the generated CUDA:\n{log.decode(errors='replace').strip()}")
    return nvrtc, program


def _compiled(code: str, architecture: str, what: str) -> bytes:
    """NVRTC's ``what`` (``PTX`` or ``CUBIN``) for ``code``."""
    nvrtc, program = _compile(code, [f"--gpu-architecture={architecture}", *_OPTIONS])
    try:
        _, size = getattr(nvrtc, f"nvrtcGet{what}Size")(program)
        output = b" " * size
        _check(nvrtc, getattr(nvrtc, f"nvrtcGet{what}")(program, output)[0], f"get {what}")
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return bytes(output)


def compile_ptx(source: CudaSource | str, arch: str | None = None) -> str:
    """PTX of ``source`` for ``compute_XY`` of ``arch`` (portable: a driver
    JIT-compiles it for newer GPUs)."""
    code = source.code if isinstance(source, CudaSource) else source
    number = parse_arch(arch).removeprefix("sm_")
    return _compiled(code, f"compute_{number}", "PTX").rstrip(b"\x00").decode()


def compile_cubin(source: CudaSource | str, arch: str | None = None) -> bytes:
    """CUBIN of ``source`` for the real architecture ``arch`` (``sm_90``)."""
    code = source.code if isinstance(source, CudaSource) else source
    return _compiled(code, parse_arch(arch), "CUBIN")


def ptxas_check(ptx: str, arch: str | None = None) -> None:
    """Assemble ``ptx`` with ``ptxas`` (when installed) to validate it
    offline; raise :class:`CudaError` with its messages on failure."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        raise CudaError("ptxas is not installed (it comes with the CUDA toolkit)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ember.ptx")
        with open(path, "w") as out:
            out.write(ptx)
        result = subprocess.run(
            [ptxas, f"-arch={parse_arch(arch)}", path, "-o", os.path.join(tmp, "ember.cubin")],
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode != 0:
        raise CudaError(f"ptxas rejected the PTX:\n{result.stderr.strip()}")


def kernels_to_cuda(module: ModuleOp, bind: bool = True) -> CudaSource:
    """Bind loops (``kernel-bind-gpu``) on a copy of ``module`` and render it."""
    if bind:
        from ember.passes.kernel_bind_gpu import bind_gpu

        module = module.clone()
        bind_gpu(module)
    try:
        return render_module(module)
    except CudaError:
        raise
    except PassError as error:
        raise CudaError(str(error)) from None


class CudaBackend(Backend):
    """``cuda`` targets, compile half (:mod:`ember.backends`): a graph
    program's kernels as CUDA C (:class:`CudaSource`, the artifact's code).
    There is no CUDA runtime yet, so :meth:`load` raises and
    ``ember.build(target="cuda")`` says so before any work."""

    kind: ClassVar[str] = "cuda"

    def compile(
        self,
        module: ModuleOp,
        signature: Any,
        params: Mapping[str, Any],
        options: Any = None,
    ) -> Any:
        from dataclasses import replace

        from ember import compiler
        from ember.runtime.module import Artifact, extern_function_names
        from ember.target import Target

        # Kernels are shaped as ember-translate --emit=cuda shapes them
        # (tiles for this CPU's vector width) until GPU schedules exist.
        options = replace(options or compiler.CompileOptions(), entry=signature.name)
        kernel_options = replace(options, target=Target())
        graph = compiler.to_graph(module, params, kernel_options)
        source = kernels_to_cuda(compiler.to_kernel(graph, kernel_options, copy=False))
        return Artifact(
            self.kind, signature, tuple(params), extern_function_names(module), source
        )
