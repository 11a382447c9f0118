"""Devices and NDArrays: construction, alignment, DLPack, copies, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember.errors import EmberError, RuntimeFailure
from ember.runtime import nd
from ember.runtime.device import Device, cpu, cuda, device, from_dlpack_device
from ember.runtime.ndarray import ALIGNMENT, NDArray, empty_aligned, is_aligned

# -- devices ----------------------------------------------------------------


def test_device_identity_and_text() -> None:
    assert cpu(0) == cpu() == Device("cpu", 0)
    assert cpu(0) != cuda(0)
    assert len({cpu(0), cpu(0), cuda(0), cuda(1)}) == 3
    assert str(cpu(0)) == "cpu:0" and str(cuda(1)) == "cuda:1"
    assert (cpu(0).device_type, cuda(3).device_id) == (1, 3)


def test_device_parsing() -> None:
    assert device("cuda:1") == cuda(1)
    assert device("cpu") == cpu(0)
    assert device("cuda", 2) == cuda(2)
    assert device(cpu(0)) is not None
    assert from_dlpack_device(2, 0) == cuda(0)


@pytest.mark.parametrize("bad", ["tpu:0", "cuda:x", "cuda:-1", ""])
def test_bad_device_names_are_errors(bad: str) -> None:
    with pytest.raises(RuntimeFailure):
        device(bad)


def test_negative_device_index_is_an_error() -> None:
    with pytest.raises(RuntimeFailure, match="non-negative"):
        cuda(-1)


def test_exist_never_raises() -> None:
    from ember.runtime.threads import available_cores

    assert cpu(0).exist is True
    assert cpu(available_cores() - 1).exist is True  # one cpu:N per usable core
    assert cpu(available_cores()).exist is False
    assert isinstance(cuda(0).exist, bool)  # False without a driver, never an exception


# -- allocation and alignment --------------------------------------------------


@given(
    shape=st.lists(st.integers(0, 7), min_size=0, max_size=4),
    dtype=st.sampled_from(["float32", "float16", "int32", "int64", "float64", "int8"]),
)
def test_empty_aligned_is_aligned_and_contiguous(shape: list[int], dtype: str) -> None:
    array = empty_aligned(shape, dtype)
    assert array.shape == tuple(shape)
    assert array.dtype == np.dtype(dtype)
    assert array.flags.c_contiguous and array.flags.writeable
    assert array.size == 0 or array.ctypes.data % ALIGNMENT == 0


def test_empty_has_shape_dtype_device() -> None:
    arr = nd.empty((2, 3), "int32")
    assert arr.shape == (2, 3)
    assert arr.dtype == "int32" and arr.dtype == np.dtype(np.int32)
    assert arr.device == cpu(0)
    assert arr.data_ptr % ALIGNMENT == 0
    assert nd.empty(4).shape == (4,) and nd.empty(4).dtype == "float32"


def test_array_copies_unaligned_input_into_aligned_storage() -> None:
    raw = np.zeros(4 * 10 + 4, dtype=np.uint8)
    unaligned = raw[4:].view(np.float32)  # data pointer offset by 4 bytes
    unaligned[:] = np.arange(10)
    assert not is_aligned(unaligned)
    arr = nd.array(unaligned)
    assert arr.data_ptr % ALIGNMENT == 0
    np.testing.assert_array_equal(arr.numpy(), np.arange(10, dtype=np.float32))


def test_array_from_non_contiguous_input() -> None:
    source = np.arange(12, dtype=np.float32).reshape(3, 4).T
    arr = nd.array(source)
    assert arr.shape == (4, 3)
    np.testing.assert_array_equal(arr.numpy(), source)


def test_array_from_list_and_with_dtype() -> None:
    assert nd.array([[1.0, 2.0]]).dtype == "float64"
    arr = nd.array([[1, 2], [3, 4]], dtype="float32")
    assert arr.dtype == "float32" and arr.shape == (2, 2)


def test_numpy_returns_a_copy() -> None:
    arr = nd.array(np.ones(3, np.float32))
    copy = arr.numpy()
    copy[0] = 5
    assert arr.numpy()[0] == 1
    np.testing.assert_array_equal(arr.asnumpy(), np.ones(3))


def test_array_does_not_alias_its_source() -> None:
    source = np.zeros(3, np.float32)
    arr = nd.array(source)
    source[0] = 7
    assert arr.numpy()[0] == 0


@pytest.mark.parametrize(
    "bad, match",
    [
        (object(), "expected an NDArray"),
        (np.zeros(2, dtype=np.complex64), "not supported"),
        ([[1, 2], [3]], "cannot convert"),
    ],
)
def test_array_rejects_unusable_sources(bad: object, match: str) -> None:
    with pytest.raises(RuntimeFailure, match=match):
        nd.array(bad)


def test_no_cuda_storage_yet() -> None:
    with pytest.raises(RuntimeFailure, match="cuda:0 are not supported yet"):
        nd.empty((2,), device=cuda(0))


# -- DLPack -----------------------------------------------------------------


class _DLPackOnly:
    """An object that speaks only DLPack (as a torch tensor would)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs: object) -> object:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()


def test_dlpack_round_trip_shares_memory() -> None:
    arr = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert arr.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(arr)
    assert view.shape == (2, 3) and view.dtype == np.float32
    view[0, 0] = 42  # writes through: destination-passing functions rely on it
    assert arr.numpy()[0, 0] == 42
    back = nd.from_dlpack(view)
    assert back.data_ptr == arr.data_ptr


def test_array_accepts_any_dlpack_object() -> None:
    source = np.arange(5, dtype=np.int64)
    arr = nd.array(_DLPackOnly(source))
    assert arr.dtype == "int64"
    np.testing.assert_array_equal(arr.numpy(), source)


def test_from_dlpack_refuses_unaligned_buffers() -> None:
    raw = np.zeros(4 * 8 + 4, dtype=np.uint8)
    unaligned = raw[4:].view(np.float32)
    with pytest.raises(RuntimeFailure, match="64-byte aligned"):
        nd.from_dlpack(unaligned)
    with pytest.raises(RuntimeFailure, match="no __dlpack__"):
        nd.from_dlpack([1, 2])


def test_numpy_interop_through_array_protocol() -> None:
    arr = nd.array(np.ones((2, 2), np.float32))
    assert np.asarray(arr).ctypes.data == arr.data_ptr
    assert float(np.sum(arr)) == 4.0


# -- copyfrom / copyto -------------------------------------------------------


def test_copyfrom_and_copyto() -> None:
    arr = nd.empty((2, 2), "float32")
    assert arr.copyfrom(np.full((2, 2), 3, np.float32)) is arr
    np.testing.assert_array_equal(arr.numpy(), np.full((2, 2), 3))
    arr.copyfrom([[1, 2], [3, 4]])  # lists take the array's dtype
    other = nd.empty((2, 2), "float32")
    arr.copyto(other)
    np.testing.assert_array_equal(other.numpy(), [[1, 2], [3, 4]])
    copied = arr.copyto(cpu(0))
    assert isinstance(copied, NDArray) and copied.data_ptr != arr.data_ptr


def test_copyfrom_checks_shape_and_dtype() -> None:
    arr = nd.empty((2, 2), "float32")
    with pytest.raises(RuntimeFailure, match=r"shape mismatch.*\(3,\)"):
        arr.copyfrom(np.zeros(3, np.float32))
    with pytest.raises(RuntimeFailure, match="dtype mismatch.*float64"):
        arr.copyfrom(np.zeros((2, 2)))


def test_errors_are_ember_errors() -> None:
    with pytest.raises(EmberError):
        nd.empty((-1,))
