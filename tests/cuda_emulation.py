"""Run generated CUDA C on the CPU, for tests on machines without a GPU.

The renderer's code is plain C++ but for CUDA's built-in variables and
qualifiers: with ``blockIdx``/``threadIdx``/``gridDim``/``blockDim`` as
globals, the qualifiers defined away, and every (block, thread) of a launch
run one after another, g++ compiles and runs it. That is a faithful model
of what the code computes because bound loops are grid-stride loops over
independent iterations and the code uses no shared memory or barriers:
any order of the threads gives the same result. It checks the renderer's
arithmetic, indexing, loop bounds, launch shapes and f16 conversions
against the kernel interpreter; it says nothing about speed.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

import ember
from ember.backends.cuda import CudaSource
from ember.dialects.graph import CallKernelOp, ConstantOp

_HEADER = r"""
#include <math.h>
#include <cstring>
struct ember_dim3 { unsigned x, y, z; };
static ember_dim3 blockIdx, threadIdx, gridDim, blockDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
"""

_CACHE = Path(tempfile.gettempdir()) / "ember-cuda-emulation"


def _launcher(source: CudaSource) -> str:
    """``launch_<part>(void** args)``: every (block, thread) of the launch in turn."""
    lines = []
    for kernel in source.kernels:
        count = len(kernel.arguments) + len(kernel.scratch)
        for part in kernel.parts:
            (gx, gy, gz), (bx, by, bz) = part.grid, part.block
            fn = part.function
            args = ", ".join(f"(decltype(_ember_arg<{i}>({fn})))p[{i}]" for i in range(count))
            lines.append(
                f'extern "C" void launch_{fn}(void** p) {{\n'
                f"  gridDim = {{{gx}u, {gy}u, {gz}u}}; blockDim = {{{bx}u, {by}u, {bz}u}};\n"
                f"  for (unsigned z = 0; z < {gz}u; ++z) for (unsigned y = 0; y < {gy}u; ++y)\n"
                f"  for (unsigned x = 0; x < {gx}u; ++x) for (unsigned tz = 0; tz < {bz}u; ++tz)\n"
                f"  for (unsigned ty = 0; ty < {by}u; ++ty) for (unsigned tx = 0; tx < {bx}u; ++tx) {{\n"
                f"    blockIdx = {{x, y, z}}; threadIdx = {{tx, ty, tz}};\n"
                f"    {fn}({args});\n"
                "  }\n}\n"
            )
    return "\n".join(lines)


_ARG_TRAIT = r"""
template <int I, typename F, typename... A> struct ember_nth { typedef typename ember_nth<I - 1, A...>::type type; };
template <typename F, typename... A> struct ember_nth<0, F, A...> { typedef F type; };
template <int I, typename... A> typename ember_nth<I, A...>::type _ember_arg(void (*)(A...));
"""


class EmulatedModule:
    """The rendered kernels compiled for the host: ``run(kernel, *arrays)``."""

    def __init__(self, source: CudaSource) -> None:
        code = _HEADER + source.code + _ARG_TRAIT + _launcher(source)
        digest = hashlib.sha256(code.encode()).hexdigest()[:20]
        _CACHE.mkdir(exist_ok=True)
        library = _CACHE / f"{digest}.so"
        if not library.exists():
            path = _CACHE / f"{digest}.cpp"
            path.write_text(code)
            partial = library.with_suffix(f".{os.getpid()}.so")
            compiled = subprocess.run(
                ["g++", "-O1", "-shared", "-fPIC", "-std=c++17", "-w", str(path), "-o", str(partial)],
                capture_output=True,
                text=True,
                check=False,
            )
            if compiled.returncode != 0:
                raise AssertionError(f"g++ rejected the generated CUDA ({path}):\n{compiled.stderr[:4000]}")
            os.replace(partial, library)
        self._lib = ctypes.CDLL(str(library))
        self._source = source

    def run(self, name: str, *arrays: np.ndarray) -> None:
        kernel = self._source.kernel(name)
        scratch = [np.empty(shape, dtype) for shape, dtype in kernel.scratch]
        buffers = [*arrays, *scratch]
        pointers = (ctypes.c_void_p * len(buffers))(*[b.ctypes.data for b in buffers])
        for part in kernel.parts:
            getattr(self._lib, f"launch_{part.function}")(pointers)


def run_program(kernel_module: ModuleOp, source: CudaSource, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run ``@main`` of a kernel-stage module (graph.call_kernel and
    constants) with every kernel on the emulated GPU."""
    emulated = EmulatedModule(source)
    main = next(op for op in kernel_module.ops if getattr(op, "sym_name", None) and op.sym_name.data == "main")
    values: dict[object, np.ndarray] = {}
    for arg, array in zip(main.body.block.args, inputs):
        values[arg] = np.ascontiguousarray(array)
    results: list[np.ndarray] = []
    for op in main.body.block.ops:
        if isinstance(op, ConstantOp):
            values[op.results[0]] = np.ascontiguousarray(op.to_array())
        elif isinstance(op, CallKernelOp):
            outputs = [np.empty(r.type.get_shape(), ember.dialects.graph.numpy_dtype(r.type.element_type)) for r in op.results]
            emulated.run(op.callee, *[values[v] for v in op.operands], *outputs)
            for result, array in zip(op.results, outputs):
                values[result] = array
        elif op.name == "func.return":
            results = [values[v] for v in op.operands]
        else:
            raise AssertionError(f"unexpected {op.name} in a kernel-stage @main")
    return results
