"""The calling convention between compiled code and the runtime, in one place.

The code generator (:mod:`ember.lowering.program_to_llvm`,
:mod:`ember.lowering.kernel_to_llvm`) emits code that follows these rules;
the runtime (:mod:`ember.runtime.cpu`, :mod:`ember.runtime.jit`,
:mod:`ember.runtime.threads`) calls that code and provides the symbols it
needs.  Both import the names below from here, so that a change to the
convention is one change.  This module imports nothing of ember's besides
the errors: compiler and runtime alike may depend on it.

**Entry points.**  A graph function ``@f`` compiles to

    void __ember_entry_f(void **frame)                       (entry_symbol)
    void __ember_profile_f(void **frame, int64_t *clock)     (profile_symbol)

``frame`` is an array of pointers, in this order (:class:`ProgramLayout`)::

    [inputs…, outputs…, constants…, workspace, context]

the free inputs and the results in signature order, every constant (the
bound, folded and packed params), the workspace of the memory plan, and an
integer that identifies the module to :data:`EXTERN_SYMBOL`.  The profile
entry writes ``clock_gettime(CLOCK_MONOTONIC)`` into ``clock`` — one
``struct timespec`` (:data:`TIMESPEC_BYTES`: int64 seconds, int64
nanoseconds) before each call of :attr:`ProgramLayout.kernels` and one after
the last, so ``clock`` is ``int64[len(kernels) + 1, 2]``.

**Constants.**  Each starts at a multiple of :data:`ALIGNMENT` bytes in one
blob (:func:`constant_offsets`), which is what ``constants.bin`` of an
artifact holds; kernels may assume that alignment.

**Symbols the runtime provides** (resolved before any code is linked):

* :data:`EXTERN_SYMBOL` ``void ember_call_extern(void *context, int64_t site,
  void **buffers)``: a ``graph.call_extern``; ``site`` indexes
  :attr:`ProgramLayout.externs`, ``buffers`` holds its inputs then outputs;
* :data:`BOUNDS_ERROR_SYMBOL` ``void ember_bounds_error(const char *site,
  int64_t index, int64_t size)``: called by a ``bounds_check`` build;
* :data:`NUM_THREADS_SYMBOL`, an ``int32`` global: the thread count parallel
  loops read, the libgomp functions of :data:`OPENMP_ENTRY_POINTS`, and
  the loop schedule of :data:`LOOP_ENTRY_POINTS`.

**Kernels** are ``void kernel(void *buffer, …)``: one pointer per memref
argument, inputs then outputs.

**Layout digest.**  The object code carries :data:`LAYOUT_DIGEST_SYMBOL`,
the sha256 of the layout's JSON (:func:`layout_digest`), so that a loader
refuses a ``layout.json`` that does not describe the code.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from math import prod
from typing import Any

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import i8, i32, i64

__all__ = [
    "ALIGNMENT",
    "BOUNDS_ERROR_SYMBOL",
    "BOUNDS_REPORTER_PROTOTYPE",
    "BufferSpec",
    "EXTERN_PROTOTYPE",
    "EXTERN_SYMBOL",
    "ExternSite",
    "FLOPS_ATTR",
    "KernelSite",
    "LAYOUT_DIGEST_SYMBOL",
    "LOOP_BLOCKS",
    "LOOP_COUNTER_BYTES",
    "LOOP_ENTRY_POINTS",
    "LOOP_NEXT_SYMBOL",
    "LOOP_RESET_SYMBOL",
    "NUM_THREADS_SYMBOL",
    "OPENMP_ENTRY_POINTS",
    "OPS_ATTR",
    "ProgramLayout",
    "TIMESPEC_BYTES",
    "constant_offsets",
    "entry_symbol",
    "layout_digest",
    "profile_symbol",
]

ALIGNMENT = 64
"""Bytes every constant, workspace and NDArray buffer is aligned to."""

TIMESPEC_BYTES = 16  # struct timespec: i64 seconds, i64 nanoseconds
"""One entry of the profile entry's clock array."""

CLOCK_SYMBOL = "clock_gettime"
"""libc's ``int clock_gettime(clockid_t, struct timespec *)``, which timed
entries (and the pipeline lane's call list) read."""
CLOCK_MONOTONIC = 1  # Linux's clockid_t

OPS_ATTR = "ember.ops"
FLOPS_ATTR = "ember.flops"
"""Attributes ``lower-graph-to-kernel{annotate=true}`` puts on each
``graph.call_kernel``: the graph ops the kernel computes, their FLOPs; the
program lowering copies them into :attr:`ProgramLayout.kernels`, which the
profiler reports against the profile entry's clock."""

# --------------------------------------------------------------------------
# Symbols the runtime provides to compiled code
# --------------------------------------------------------------------------

EXTERN_SYMBOL = "ember_call_extern"
"""The runtime-provided function ``void (ptr context, i64 site, ptr buffers)``."""

EXTERN_PROTOTYPE = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)
)
""":data:`EXTERN_SYMBOL` as ctypes sees it."""

BOUNDS_ERROR_SYMBOL = "ember_bounds_error"
"""``void ember_bounds_error(const char *site, i64 index, i64 size)``: what a
``bounds_check`` build calls when an index fails its test."""

BOUNDS_REPORTER_PROTOTYPE = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64
)
""":data:`BOUNDS_ERROR_SYMBOL` as ctypes sees it."""

NUM_THREADS_SYMBOL = "ember_num_threads"
"""External ``i32`` global that parallel loops read their thread count from."""

OPENMP_ENTRY_POINTS: dict[str, llvm.LLVMFunctionType] = {
    # void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags)
    "GOMP_parallel": llvm.LLVMFunctionType([llvm.LLVMPointerType()] * 2 + [i32, i32]),
    "omp_get_thread_num": llvm.LLVMFunctionType([], i32),
    "omp_get_num_threads": llvm.LLVMFunctionType([], i32),
}
"""The libgomp functions parallel loops call (the GNU OpenMP ABI that gcc emits)."""

LOOP_BLOCKS = 64
"""A parallel loop's range is cut into ``min(team, LOOP_BLOCKS)`` equal
blocks, block ``b`` the home of thread ``b`` (and of ``b + LOOP_BLOCKS``…)."""

LOOP_COUNTER_BYTES = 64
"""Each block's counter has a cache line of its own: its owner claims
chunks from it without bouncing a line with the others."""

LOOP_RESET_SYMBOL = "ember_loop_reset"
LOOP_NEXT_SYMBOL = "ember_loop_next"
LOOP_ENTRY_POINTS: dict[str, llvm.LLVMFunctionType] = {
    # void ember_loop_reset(int64_t *counters, int64_t team)
    LOOP_RESET_SYMBOL: llvm.LLVMFunctionType([llvm.LLVMPointerType(), i64]),
    # bool ember_loop_next(int64_t *counters, int64_t count, int64_t thread,
    #                      int64_t team, int64_t *visited, int64_t *first, int64_t *last)
    LOOP_NEXT_SYMBOL: llvm.LLVMFunctionType(
        [llvm.LLVMPointerType(), i64, i64, i64] + [llvm.LLVMPointerType()] * 3, i8
    ),
}
"""The runtime's schedule of a parallel loop's iterations (defined by
:mod:`ember.runtime.threads`).  The caller keeps ``LOOP_BLOCKS`` counters,
:data:`LOOP_COUNTER_BYTES` apart, and zeroes the team's with
``ember_loop_reset`` before the fork; each thread then calls
``ember_loop_next`` until it returns 0, with ``*visited`` 0 at first: it
hands out chunks of ``[0, count)`` from the thread's own block first, then
from the others' (``*visited`` counts the blocks the thread has emptied),
and writes a chunk's bounds to ``*first`` / ``*last``.  A thread therefore
runs the same iterations in every call of a kernel unless another was
late, and a late thread's work is taken over instead of waited for."""

LAYOUT_DIGEST_SYMBOL = "__ember_layout_sha256"
"""A constant in the object code: the sha256 (hex) of the frame layout it
was compiled for, so that a layout.json that does not describe the code is
refused at load (see :func:`layout_digest`)."""

# --------------------------------------------------------------------------
# Entry points and the frame
# --------------------------------------------------------------------------


def entry_symbol(function: str) -> str:
    """The native symbol of a lowered graph function."""
    return f"__ember_entry_{function}"


def profile_symbol(function: str) -> str:
    """The native symbol of the timed copy of a lowered graph function."""
    return f"__ember_profile_{function}"


@dataclass(frozen=True)
class BufferSpec:
    """Shape and dtype of one tensor crossing the frame."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class ExternSite:
    """One ``graph.call_extern``: which function, with which buffers."""

    function: str
    inputs: tuple[BufferSpec, ...]
    outputs: tuple[BufferSpec, ...]


@dataclass(frozen=True)
class KernelSite:
    """One native call of the program (a kernel or a registered function),
    as the profiler reports it."""

    name: str
    """The kernel's symbol (``fused_conv2d_add_relu_1``) or the function's name."""
    ops: tuple[str, ...]
    """The graph ops it computes, in order (``graph.conv2d``, ``graph.add``…)."""
    shape: tuple[int, ...]
    """The shape of its first result."""
    flops: int
    """Estimated FLOPs (:mod:`ember.passes.cost`), 0 where unknown."""


@dataclass
class ProgramLayout:
    """Everything the runtime needs to build the frame and call the entry."""

    function: str
    symbol: str
    inputs: list[BufferSpec] = field(default_factory=list)
    outputs: list[BufferSpec] = field(default_factory=list)
    constants: list[BufferSpec] = field(default_factory=list)
    workspace_bytes: int = 0
    externs: list[ExternSite] = field(default_factory=list)
    kernels: list[KernelSite] = field(default_factory=list)
    """Every call of the entry in order; the profile entry's clock ``i`` is
    read just before call ``i``, clock ``len(kernels)`` after the last."""
    peak_bytes: int = 0
    """The most intermediate bytes live at once (the plan's lower bound)."""
    naive_bytes: int = 0
    """One buffer per intermediate tensor: what the plan saves against."""
    params: list[BufferSpec] = field(default_factory=list)
    """Entry arguments bound at build time, now inside the constants: kept
    so that a loader can check a manifest's signature against the code."""

    @property
    def profile_symbol(self) -> str:
        return profile_symbol(self.function)

    @property
    def workspace_slot(self) -> int:
        return len(self.inputs) + len(self.outputs) + len(self.constants)

    @property
    def context_slot(self) -> int:
        return self.workspace_slot + 1

    @property
    def frame_size(self) -> int:
        return self.context_slot + 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProgramLayout:
        def specs(items: list[dict[str, Any]]) -> list[BufferSpec]:
            return [BufferSpec(d["name"], tuple(d["shape"]), d["dtype"]) for d in items]

        return cls(
            function=data["function"],
            symbol=data["symbol"],
            inputs=specs(data["inputs"]),
            outputs=specs(data["outputs"]),
            constants=specs(data["constants"]),
            workspace_bytes=int(data["workspace_bytes"]),
            peak_bytes=int(data["peak_bytes"]),
            naive_bytes=int(data["naive_bytes"]),
            params=specs(data["params"]),
            externs=[
                ExternSite(
                    e["function"], tuple(specs(e["inputs"])), tuple(specs(e["outputs"]))
                )
                for e in data["externs"]
            ],
            kernels=[
                KernelSite(k["name"], tuple(k["ops"]), tuple(k["shape"]), int(k["flops"]))
                for k in data["kernels"]
            ],
        )


def constant_offsets(specs: Sequence[BufferSpec]) -> tuple[list[int], int]:
    """Where each constant starts in the blob (in slot order, each at a
    multiple of 64 bytes, as kernels expect), and the blob's size."""
    offsets, end = [], 0
    for spec in specs:
        offsets.append(end)
        end += -(-spec.nbytes // ALIGNMENT) * ALIGNMENT
    return offsets, end


def layout_digest(layout_json: Mapping[str, Any]) -> str:
    """sha256 of the canonical text (sorted keys, compact) of a layout's JSON."""
    text = json.dumps(layout_json, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
