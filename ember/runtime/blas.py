"""``blas.*``: graph ops computed by BLAS, as registered external functions.

What ``partition-extern{libs=blas}`` offloads to (TVM's ``-libs=cblas`` /
``-libs=cublas`` contrib functions; Relax ``call_dps_packed`` targets).
Importing this module registers, destination-passing style
(:mod:`ember.runtime.registry`: ``f(*inputs, *outputs)`` on NDArrays):

==================  ========================================================
``blas.sgemm``      ``(data N×K, weight U×K) -> N×U``: ``data · weightᵀ``,
                    ``graph.dense`` (TVM semantics); one sgemm, weight
                    transposed by the BLAS, not copied
``blas.matmul``     ``(lhs …×M×K, rhs …×K×N) -> …×M×N``: ``graph.matmul``,
                    numpy broadcasting of the batch axes; one sgemm per
                    batch entry
``blas.conv2d``     ``(data NCHW, weight OIHW, attrs) -> NOHW``:
                    ``graph.conv2d`` with ``groups = 1`` by im2col and one
                    sgemm ``weight (O × C·KH·KW) · columns (C·KH·KW × OH·OW)``
                    per image; ``attrs`` is an int64 tensor
                    ``[stride_h, stride_w, pad_top, pad_left, pad_bottom,
                    pad_right, dilation_h, dilation_w]`` (:data:`CONV2D_ATTRS`)
==================  ========================================================

The registry passes only tensors (no scalars, unlike TVM's packed calls), so
the convolution's attributes travel as a small constant tensor operand.
Every function is float32 only: the pass offloads nothing else.  A name the
user registered before this module is imported is kept, so a user's own
``blas.sgemm`` wins; the registry imports this module when a ``blas.*`` name
is first looked up, so a module calling these functions runs in a fresh
process with nothing imported by hand.

Which BLAS, and why.  numpy's bundled OpenBLAS (``scipy-openblas``,
``np.show_config()``), called through ``np.matmul(…, out=…)``: it is the
best-kept BLAS that every ember install already has (no new dependency), it
picks the kernel for this CPU at load time (``DYNAMIC_ARCH``), and
``np.matmul`` hands 2-D float32 operands straight to ``cblas_sgemm``, with a
transposed view (``weight.T``) passed as a transpose flag rather than
copied and the result written into our output buffer.  Calling
``cblas_sgemm`` from that library through ctypes instead gave the same
speed on mlp_b64's 64×784·784×1024 and on ResNet-18's im2col GEMMs (within
the noise of a loaded machine) but costs ~25 µs more per call in argument
conversion — a loss on small layers — and ties ember to one library's
symbol names.

Threads: one pool per process.  OpenBLAS keeps its own pool (all cores
unless ``OPENBLAS_NUM_THREADS`` says otherwise) next to ember's libgomp pool
(:mod:`ember.runtime.threads`), and its idle workers spin for tens of
milliseconds after each call — exactly when ember's parallel kernels that
follow want those cores.  Measured on the 2-core development machine with
``OPENBLAS_NUM_THREADS`` unset: ResNet-18 with its convolutions offloaded
took 290–550 ms per inference with OpenBLAS on 2 threads, 64–69 ms with
OpenBLAS on 1 thread (ember alone: 34–53 ms).  So every ``blas.*`` call
runs OpenBLAS on one thread, set for the calling thread only
(``openblas_set_num_threads_local``, OpenBLAS ≥ 0.3.27) and restored
afterwards: numpy calls elsewhere in the user's program keep numpy's pool as
configured.  Where that function is missing (another BLAS behind numpy), the
calls run as numpy configured them; ``ember.runtime.threads.
limit_blas_threads(1)`` then does it process-wide.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import RuntimeFailure
from ember.runtime.ndarray import NDArray
from ember.runtime.registry import list_global_func_names, register_func

__all__ = [
    "CONV2D",
    "CONV2D_ATTRS",
    "FUNCTIONS",
    "MATMUL",
    "SGEMM",
    "conv2d",
    "conv2d_attrs",
    "matmul",
    "sgemm",
]

SGEMM = "blas.sgemm"
MATMUL = "blas.matmul"
CONV2D = "blas.conv2d"

CONV2D_ATTRS: tuple[str, ...] = (
    "stride_h",
    "stride_w",
    "pad_top",
    "pad_left",
    "pad_bottom",
    "pad_right",
    "dilation_h",
    "dilation_w",
)
"""Order of the entries of ``blas.conv2d``'s int64 attribute operand."""


def conv2d_attrs(
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    dilation: tuple[int, int],
) -> np.ndarray:
    """The int64 attribute tensor ``blas.conv2d`` reads (:data:`CONV2D_ATTRS`)."""
    return np.array([*strides, *padding, *dilation], dtype=np.int64)


@functools.cache
def _local_thread_setter() -> Callable[[int], int] | None:
    """OpenBLAS's ``openblas_set_num_threads_local`` of the library numpy
    loaded (``int f(int)``, returns the previous count), or None."""
    from ember.runtime.threads import loaded_libraries

    for path in loaded_libraries():
        if "openblas" not in Path(path).name.lower():
            continue
        setter = getattr(ctypes.CDLL(path), "openblas_set_num_threads_local", None)
        if setter is not None:
            setter.argtypes = [ctypes.c_int]
            setter.restype = ctypes.c_int
            return setter
    return None


@contextmanager
def _single_threaded() -> Iterator[None]:
    """Run the BLAS calls inside on this thread alone (see the module
    docstring), with NaN and inf results as compiled code gives them: no
    numpy warnings (docs/graph-dialect.md, "Floating-point semantics")."""
    setter = _local_thread_setter()
    with np.errstate(all="ignore"):
        if setter is None:
            yield
            return
        previous = setter(1)
        try:
            yield
        finally:
            setter(previous)


def _float32(array: NDArray, what: str, function: str) -> np.ndarray:
    values = np.asarray(array)  # NDArray storage, no copy
    if values.dtype != np.float32:
        raise RuntimeFailure(
            f"{function}: {what} is {values.dtype}; the BLAS functions take float32 only"
        )
    return values


def sgemm(data: NDArray, weight: NDArray, out: NDArray) -> None:
    """``out = data · weightᵀ`` (``graph.dense``): N×K, U×K -> N×U."""
    x = _float32(data, "data", SGEMM)
    w = _float32(weight, "weight", SGEMM)
    with _single_threaded():
        np.matmul(x, w.T, out=np.asarray(out))


def matmul(lhs: NDArray, rhs: NDArray, out: NDArray) -> None:
    """``out = lhs · rhs`` with broadcast batch axes (``graph.matmul``)."""
    a = _float32(lhs, "lhs", MATMUL)
    b = _float32(rhs, "rhs", MATMUL)
    with _single_threaded():
        np.matmul(a, b, out=np.asarray(out))


def _padded(image: np.ndarray, padding: tuple[int, int, int, int]) -> np.ndarray:
    """``image`` (C×H×W) with zeros around it; itself when there is no padding."""
    top, left, bottom, right = padding
    if not any(padding):
        return image
    c, h, w = image.shape
    padded = np.zeros((c, h + top + bottom, w + left + right), dtype=image.dtype)
    padded[:, top : top + h, left : left + w] = image
    return padded


def _columns(
    image: np.ndarray,
    kernel: tuple[int, int],
    out_size: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
) -> np.ndarray:
    """im2col of a padded C×H×W image: ``(C·KH·KW) × (OH·OW)``, row
    ``(c, i, j)`` holding input ``[c, oy·sh + i·dh, ox·sw + j·dw]``."""
    c = image.shape[0]
    kh, kw = kernel
    oh, ow = out_size
    if (kh, kw) == (1, 1) and strides == (1, 1) and image.shape[1:] == (oh, ow):
        return image.reshape(c, oh * ow)  # a 1×1 convolution is a plain GEMM
    sc, sy, sx = image.strides
    windows = np.lib.stride_tricks.as_strided(
        image,
        shape=(c, kh, kw, oh, ow),
        strides=(
            sc,
            sy * dilation[0],
            sx * dilation[1],
            sy * strides[0],
            sx * strides[1],
        ),
        writeable=False,
    )
    # One strided copy into a contiguous matrix, which sgemm then streams.
    return np.ascontiguousarray(windows).reshape(c * kh * kw, oh * ow)


def _check_conv2d_shapes(
    data: tuple[int, ...],
    weight: tuple[int, ...],
    out: tuple[int, ...],
    attrs: list[int],
) -> None:
    """Fail unless ``out`` is what conv2d of ``data`` and ``weight`` with
    ``attrs`` produces: the strided im2col view must stay inside the image."""
    sh, sw, pt, pl, pb, pr, dh, dw = attrs
    if min(sh, sw, dh, dw) < 1 or min(pt, pl, pb, pr) < 0:
        raise RuntimeFailure(
            f"{CONV2D}: strides and dilation must be >= 1 and padding >= 0, got "
            + ", ".join(f"{n}={v}" for n, v in zip(CONV2D_ATTRS, attrs, strict=True))
        )
    n, _, h, w = data
    o, _, kh, kw = weight
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    if tuple(out) != (n, o, oh, ow) or oh < 1 or ow < 1:
        raise RuntimeFailure(
            f"{CONV2D}: data {list(data)} and weight {list(weight)} with these attrs "
            f"give an output of {[n, o, oh, ow]}, but the output buffer is {list(out)}"
        )


def conv2d(data: NDArray, weight: NDArray, attrs: NDArray, out: NDArray) -> None:
    """``graph.conv2d`` (NCHW, OIHW, ``groups = 1``) as im2col + sgemm per image."""
    x = _float32(data, "data", CONV2D)
    w = _float32(weight, "weight", CONV2D)
    y = np.asarray(out)
    values = [int(v) for v in np.asarray(attrs).reshape(-1)]
    if len(values) != len(CONV2D_ATTRS):
        raise RuntimeFailure(
            f"{CONV2D}: attrs must hold {len(CONV2D_ATTRS)} integers "
            f"({', '.join(CONV2D_ATTRS)}), got {values}"
        )
    sh, sw, pt, pl, pb, pr, dh, dw = values
    o, i, kh, kw = w.shape
    if i != x.shape[1]:
        raise RuntimeFailure(
            f"{CONV2D}: weight has {i} input channels but data has {x.shape[1]} "
            "(grouped convolutions are not offloaded)"
        )
    _check_conv2d_shapes(x.shape, w.shape, y.shape, values)
    oh, ow = y.shape[2:]
    filters = w.reshape(o, i * kh * kw)
    with _single_threaded():
        for n in range(x.shape[0]):
            image = _padded(x[n], (pt, pl, pb, pr))
            columns = _columns(image, (kh, kw), (oh, ow), (sh, sw), (dh, dw))
            np.matmul(filters, columns, out=y[n].reshape(o, oh * ow))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    SGEMM: sgemm,
    MATMUL: matmul,
    CONV2D: conv2d,
}
"""Every function this module provides, by registered name."""


def _register() -> None:
    """Register every function whose name is still free (a user's own wins)."""
    taken = set(list_global_func_names())
    for name, function in FUNCTIONS.items():
        if name not in taken:
            register_func(name, function)


_register()
