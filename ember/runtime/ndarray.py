"""NDArray: ember's tensor handle, a numpy buffer with a device and DLPack.

Mirrors ``tvm.nd`` (``tvm.nd.array``, ``tvm.nd.empty``, ``NDArray.numpy``,
``copyfrom``) and speaks DLPack in both directions, so arrays pass to and from
PyTorch, JAX or CuPy-on-host without a copy where the protocol allows.

The invariant every NDArray keeps: its storage is a C-contiguous numpy array
whose data pointer is 64-byte aligned (:data:`ALIGNMENT`).  Compiled kernels
use aligned vector loads and may assume it; a plain ``np.empty`` is only
16-byte aligned.  Copying constructors (:func:`array`, :meth:`NDArray.copyfrom`)
establish the invariant; :func:`from_dlpack` shares memory and therefore
refuses buffers that do not already satisfy it.

Only host (cpu) storage exists so far; an NDArray on a CUDA device will come
with the CUDA runtime.  Asking for one now is a clear error, never a silent
host allocation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.abi import ALIGNMENT  # every NDArray's data: a cache line, ≥ any AVX-512 vector
from ember.errors import RuntimeFailure
from ember.runtime.device import Device, cpu, from_dlpack_device

_SUPPORTED_DTYPES = (
    "float32",
    "float16",
    "float64",
    "int32",
    "int64",
    "int8",
    "uint8",
    "bool",
)


def empty_aligned(
    shape: Sequence[int],
    dtype: Any = "float32",
    alignment: int = ALIGNMENT,
    *,
    what: str = "a runtime buffer",
    zeroed: bool = False,
) -> np.ndarray:
    """An uninitialised C-contiguous numpy array whose data is ``alignment``-aligned
    (all zeros with ``zeroed``: ``calloc``'s fresh pages, which take memory
    only as they are written, unlike an explicit fill).

    Allocates ``alignment`` spare bytes and slices at the first aligned
    offset; the returned array keeps the raw buffer alive through ``.base``.
    A size over ember's allocation limit is an
    :class:`~ember.errors.AllocationError` naming ``what``.
    """
    from ember.limits import check_allocation, max_alloc_bytes

    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > max_alloc_bytes():  # the message costs more than the allocation
        check_allocation(nbytes, f"{what} ({dtype.name}{list(shape)})")
    if nbytes == 0:
        return np.empty(shape, dtype)  # no data, nothing to align (see is_aligned)
    return _aligned_storage(nbytes, dtype, shape, alignment, zeroed)[0]


def _aligned_storage(
    nbytes: int,
    dtype: np.dtype,
    shape: tuple[int, ...],
    alignment: int = ALIGNMENT,
    zeroed: bool = False,
) -> tuple[np.ndarray, int]:
    """``alignment`` spare bytes allocated, sliced at the first aligned
    offset: the array (keeping the raw buffer alive through ``.base``) and
    its data address."""
    raw = (np.zeros if zeroed else np.empty)(nbytes + alignment, dtype=np.uint8)
    address = _address(raw)
    offset = -address % alignment
    return raw[offset : offset + nbytes].view(dtype).reshape(shape), address + offset


def is_aligned(array: np.ndarray, alignment: int = ALIGNMENT) -> bool:
    """Whether ``array`` is C-contiguous with an ``alignment``-aligned data pointer.

    An empty array counts as aligned: code never loads through its pointer,
    and numpy does not keep a meaningful one for it.
    """
    if not array.flags.c_contiguous:
        return False
    return array.size == 0 or _address(array) % alignment == 0


def _address(array: np.ndarray) -> int:
    return array.ctypes.data  # the cheapest of numpy's ways (~1.5 µs)


_dtype_names: dict[np.dtype, str] = {}
"""``dtype.name`` is computed in Python by numpy (~2.5 µs): by dtype, once."""


def _dtype_name(dtype: np.dtype) -> str:
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = dtype.name
    return name


_checked_dtypes: set[np.dtype] = set()
"""Dtypes already found supported: ``dtype.name`` is slow (microseconds),
and per-input allocations (a pipeline's outputs) check the same few."""


def _check_dtype(dtype: np.dtype, what: str) -> None:
    if dtype in _checked_dtypes:
        return
    if dtype.name not in _SUPPORTED_DTYPES:
        supported = ", ".join(_SUPPORTED_DTYPES)
        raise RuntimeFailure(
            f"{what}: dtype {dtype} is not supported (supported: {supported})"
        )
    _checked_dtypes.add(dtype)


def _check_host(device: Device, what: str) -> None:
    if not isinstance(device, Device):
        raise RuntimeFailure(
            f"{what}: expected an ember Device such as cpu(0), got {device!r}"
        )
    if device.kind != "cpu":
        raise RuntimeFailure(
            f"{what}: NDArrays on {device} are not supported yet; only cpu storage exists "
            "(allocate on cpu(0) and let the module copy to the device)"
        )


class NDArray:
    """A tensor on a device: C-contiguous, 64-byte aligned, with DLPack.

    Create one with :func:`array`, :func:`empty` or :func:`from_dlpack`.
    ``shape`` is a tuple of ints, ``dtype`` a string such as ``"float32"``
    (as in TVM; it compares equal to the numpy dtype too).
    """

    __slots__ = ("_data_ptr", "_device", "_dtype_name", "_storage")

    def __init__(self, storage: np.ndarray, device: Device) -> None:
        # Internal constructor: callers go through array/empty/from_dlpack,
        # which guarantee the invariant checked here.
        if not isinstance(storage, np.ndarray) or not is_aligned(storage):
            raise RuntimeFailure(
                "NDArray storage must be a C-contiguous, 64-byte aligned numpy array"
            )
        self._storage = storage
        self._device = device
        # Read once: numpy's ``.ctypes.data`` builds an object per call
        # (~2 µs), and every run of a compiled module passes each address.
        self._data_ptr: int = _address(storage)
        self._dtype_name: str = _dtype_name(storage.dtype)

    # -- properties -------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._storage.shape

    @property
    def dtype(self) -> str:
        return self._dtype_name

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._storage.ndim

    @property
    def size(self) -> int:
        return int(self._storage.size)

    @property
    def nbytes(self) -> int:
        return int(self._storage.nbytes)

    @property
    def data_ptr(self) -> int:
        """Address of the first element (what compiled code receives)."""
        return self._data_ptr

    # -- conversion -------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A fresh numpy copy of the contents (later writes do not affect it)."""
        return self._storage.copy()

    def asnumpy(self) -> np.ndarray:
        """Old TVM name of :meth:`numpy`, kept for code written against it."""
        return self.numpy()

    def copyfrom(self, source: Any) -> NDArray:
        """Copy ``source`` into this array in place and return ``self``.

        ``source`` may be an NDArray, a numpy array, anything with
        ``__dlpack__``, or a (nested) list.  Shapes must be equal.  Typed
        sources must have this array's dtype — a silent float64 → float32
        narrowing hides bugs — while lists and scalars, which carry no dtype,
        are converted to it.
        """
        values = as_host_array(
            source, f"copyfrom into {self._describe()}", dtype=self._storage.dtype
        )
        if values.shape != self.shape:
            raise RuntimeFailure(
                f"copyfrom: shape mismatch, this array is {self._describe()} "
                f"but the source has shape {values.shape}"
            )
        if values.dtype != self._storage.dtype:
            raise RuntimeFailure(
                f"copyfrom: dtype mismatch, this array is {self._describe()} but the source is "
                f"{values.dtype.name}; convert it first (e.g. arr.astype('{self.dtype}'))"
            )
        np.copyto(self._storage, values)
        return self

    def copyto(self, target: NDArray | Device) -> NDArray:
        """Copy into another NDArray, or into a new one on ``target`` device."""
        if isinstance(target, Device):
            return array(self, device=target)
        if not isinstance(target, NDArray):
            raise RuntimeFailure(
                f"copyto: expected an NDArray or a Device, got {type(target).__name__}"
            )
        target.copyfrom(self)
        return target

    # numpy and DLPack interop: both share memory, so a destination-passing
    # function can write its result through np.from_dlpack(out) or np.asarray(out).

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy:
            return self._storage.astype(dtype or self._storage.dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != self._storage.dtype:
            if copy is False:
                raise ValueError(
                    f"cannot view {self.dtype} NDArray as {np.dtype(dtype)} without a copy"
                )
            return self._storage.astype(dtype)
        return self._storage

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._storage.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device.dlpack_device()

    # -- printing ---------------------------------------------------------

    def _describe(self) -> str:
        return f"{self.dtype} array of shape {self.shape} on {self._device}"

    def __repr__(self) -> str:
        return f"<ember.NDArray shape={self.shape}, dtype={self.dtype}, {self._device}>\n{self._storage!r}"

    def __str__(self) -> str:
        return str(self._storage)


def as_host_array(source: Any, what: str, dtype: np.dtype | None = None) -> np.ndarray:
    """``source`` (NDArray, numpy, DLPack, list, scalar) as a numpy array.

    Shares memory wherever the source allows (NDArrays, numpy arrays, DLPack
    producers); only lists and scalars are converted, taking ``dtype`` if
    given.  ``what`` names the operation for error messages.
    """
    if isinstance(source, NDArray):
        return source._storage
    if isinstance(source, np.ndarray):
        return source
    if hasattr(source, "__dlpack__"):
        try:
            return np.from_dlpack(source)
        except (BufferError, TypeError, RuntimeError, ValueError) as e:
            raise RuntimeFailure(
                f"{what}: cannot read {type(source).__name__} through DLPack on the host ({e}); "
                "move it to the CPU first"
            ) from None
    if isinstance(source, (list, tuple, int, float, bool, np.generic)):
        try:
            return np.asarray(source, dtype=dtype)
        except (ValueError, TypeError) as e:
            raise RuntimeFailure(
                f"{what}: cannot convert {type(source).__name__} to an array: {e}"
            ) from None
    raise RuntimeFailure(
        f"{what}: expected an NDArray, a numpy array, a list or an object with __dlpack__, "
        f"got {type(source).__name__}"
    )


def array(source: Any, device: Device | None = None, dtype: Any = None) -> NDArray:
    """A new NDArray holding a copy of ``source`` (``tvm.nd.array``).

    ``source``: numpy array, NDArray, (nested) list or scalar, or any object
    with ``__dlpack__`` (read with ``np.from_dlpack``).  ``dtype`` converts
    explicitly; without it the source's dtype is kept (lists default to
    numpy's choice, e.g. float64 for Python floats).
    """
    device = cpu(0) if device is None else device
    _check_host(device, "nd.array")
    values = as_host_array(
        source, "nd.array", dtype=None if dtype is None else np.dtype(dtype)
    )
    if dtype is not None:
        values = values.astype(np.dtype(dtype), copy=False)
    _check_dtype(values.dtype, "nd.array")
    storage = empty_aligned(values.shape, values.dtype)
    np.copyto(storage, values)
    return NDArray(storage, device)


_HOST = cpu(0)


def host_rows(
    count: int, shape: tuple[int, ...], dtype: np.dtype
) -> tuple[np.ndarray, list[NDArray]]:
    """``count`` new host NDArrays of ``shape`` in one allocation, each
    starting on its own aligned boundary, and a ``(count, *shape)`` view
    of them all, for the runtime's own arrays (a supported dtype): one
    numpy call fills or reads every row where one call per array would
    cost microseconds each (a pipeline's window of inputs or outputs).
    Each array keeps the whole allocation alive."""
    stride, strides = _row_layout(shape, dtype)
    raw = np.empty(count * stride + ALIGNMENT, np.uint8)
    address = _address(raw)
    offset = -address % ALIGNMENT
    address += offset
    rows = np.ndarray((count, *shape), dtype, raw, offset, strides)
    name = _dtype_name(dtype)
    # Iterating gives each row's view (but a 0-d row as a scalar).
    views = list(rows) if shape else [rows[i, ...] for i in range(count)]
    arrays = []
    for view in views:
        array = NDArray.__new__(NDArray)
        array._storage, array._device = view, _HOST
        array._data_ptr, array._dtype_name = address, name
        address += stride
        arrays.append(array)
    return rows, arrays


@functools.cache
def _row_layout(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, tuple[int, ...]]:
    """:func:`host_rows`' distance between rows (a multiple of the
    alignment) and the strides of its view, by row shape and dtype."""
    nbytes = math.prod(shape) * dtype.itemsize
    stride = -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT
    inner = tuple(dtype.itemsize * math.prod(shape[d + 1 :]) for d in range(len(shape)))
    return stride, (stride, *inner)


def empty(
    shape: Sequence[int] | int, dtype: Any = "float32", device: Device | None = None
) -> NDArray:
    """A new uninitialised NDArray (``tvm.nd.empty``)."""
    device = cpu(0) if device is None else device
    _check_host(device, "nd.empty")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
        raise RuntimeFailure(
            f"nd.empty: shape must be non-negative integers, got {shape}"
        )
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise RuntimeFailure(f"nd.empty: unknown dtype {dtype!r}") from None
    _check_dtype(np_dtype, "nd.empty")
    return NDArray(empty_aligned(shape, np_dtype), device)


def from_dlpack(source: Any) -> NDArray:
    """Wrap ``source`` without copying (``tvm.nd.from_dlpack``).

    The buffer must live on the host, be C-contiguous and 64-byte aligned,
    since the NDArray shares it; use :func:`array` to copy anything else.
    """
    if not hasattr(source, "__dlpack__"):
        raise RuntimeFailure(
            f"nd.from_dlpack: {type(source).__name__} has no __dlpack__ method"
        )
    if hasattr(source, "__dlpack_device__"):
        device = from_dlpack_device(*source.__dlpack_device__())
        _check_host(device, "nd.from_dlpack")
    values = as_host_array(source, "nd.from_dlpack")
    _check_dtype(values.dtype, "nd.from_dlpack")
    if not is_aligned(values):
        raise RuntimeFailure(
            "nd.from_dlpack: the buffer is not C-contiguous and 64-byte aligned, so it cannot be "
            "shared; use ember.nd.array(...) to copy it into aligned storage"
        )
    return NDArray(values, cpu(0))


def as_ndarray(source: Any, what: str) -> NDArray:
    """``source`` as an NDArray: itself if it is one, else a fresh aligned copy."""
    if isinstance(source, NDArray):
        return source
    values = as_host_array(source, what)
    _check_dtype(values.dtype, what)
    if is_aligned(values):
        # Share aligned numpy buffers: the interpreter's results are fresh
        # arrays nobody else writes, so a copy would only cost time.
        return NDArray(values, cpu(0))
    storage = empty_aligned(values.shape, values.dtype)
    np.copyto(storage, values)
    return NDArray(storage, cpu(0))
