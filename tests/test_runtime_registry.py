"""The packed-function registry and the destination-passing call convention."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from ember.errors import RuntimeFailure
from ember.runtime import nd
from ember.runtime.ndarray import NDArray
from ember.runtime.registry import (
    UnknownFunctionError,
    call_dps_packed,
    check_registered,
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)

PREFIX = "test_runtime_registry."


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    """Tests register under PREFIX; remove those afterwards so tests stay independent."""
    yield
    for name in list_global_func_names():
        if name.startswith(PREFIX):
            remove_global_func(name)


def test_register_as_decorator_returns_the_function() -> None:
    @register_func(PREFIX + "relu")
    def relu(x: NDArray, out: NDArray) -> None:
        np.maximum(np.from_dlpack(x), 0, out=np.from_dlpack(out))

    assert get_global_func(PREFIX + "relu") is relu
    assert PREFIX + "relu" in list_global_func_names()


def test_register_as_call_and_bare_decorator() -> None:
    def double(x: NDArray, out: NDArray) -> None:
        np.multiply(np.from_dlpack(x), 2, out=np.from_dlpack(out))

    register_func(PREFIX + "double", double)
    assert get_global_func(PREFIX + "double") is double

    @register_func
    def test_runtime_registry_bare() -> None: ...

    assert get_global_func("test_runtime_registry_bare") is test_runtime_registry_bare
    remove_global_func("test_runtime_registry_bare")


def test_duplicate_without_override_names_the_function() -> None:
    register_func(PREFIX + "f", lambda: None)
    with pytest.raises(
        RuntimeFailure,
        match=r"'test_runtime_registry\.f' is already registered.*override=True",
    ):
        register_func(PREFIX + "f", lambda: None)


def test_override_replaces() -> None:
    register_func(PREFIX + "f", lambda: 1)
    register_func(PREFIX + "f", lambda: 2, override=True)
    assert get_global_func(PREFIX + "f")() == 2


def test_unknown_name_suggests_close_matches() -> None:
    register_func(PREFIX + "linear", lambda: None)
    with pytest.raises(
        UnknownFunctionError, match=r"did you mean 'test_runtime_registry\.linear'"
    ):
        get_global_func(PREFIX + "linaer")
    assert get_global_func(PREFIX + "linaer", allow_missing=True) is None


def test_remove_unknown_is_an_error() -> None:
    with pytest.raises(UnknownFunctionError, match="no global function"):
        remove_global_func(PREFIX + "never")


@pytest.mark.parametrize("bad_name", ["", 3])
def test_bad_names_and_values(bad_name: object) -> None:
    with pytest.raises(RuntimeFailure, match="non-empty string"):
        register_func(bad_name, lambda: None)  # type: ignore[call-overload]
    with pytest.raises(RuntimeFailure, match="expected a callable"):
        register_func(PREFIX + "x", 5)  # type: ignore[call-overload]


def test_check_registered_lists_every_missing_name() -> None:
    register_func(PREFIX + "a", lambda: None)
    check_registered([PREFIX + "a"], "here")
    with pytest.raises(UnknownFunctionError) as info:
        check_registered([PREFIX + "a", PREFIX + "b", PREFIX + "c"], "module m")
    message = str(info.value)
    assert "module m" in message and PREFIX + "b" in message and PREFIX + "c" in message


def test_call_dps_packed_passes_ndarrays_and_preallocated_outputs() -> None:
    seen: list[tuple[type, ...]] = []

    @register_func(PREFIX + "linear")
    def linear(x: NDArray, w: NDArray, b: NDArray, out: NDArray) -> None:
        seen.append(tuple(type(a) for a in (x, w, b, out)))
        o = np.from_dlpack(out)
        np.matmul(np.from_dlpack(x), np.from_dlpack(w).T, out=o)
        o += np.from_dlpack(b)

    rng = np.random.default_rng(0)
    x, w, b = (
        rng.standard_normal(s).astype(np.float32) for s in [(2, 4), (3, 4), (3,)]
    )
    (out,) = call_dps_packed(
        PREFIX + "linear", [x, nd.array(w), b], [((2, 3), "float32")]
    )
    assert seen == [(NDArray,) * 4]
    assert out.shape == (2, 3) and out.dtype == "float32"
    np.testing.assert_allclose(out.numpy(), x @ w.T + b, rtol=1e-5)


def test_call_dps_packed_rejects_returned_values() -> None:
    register_func(PREFIX + "returns", lambda x, out: np.from_dlpack(x) + 1)
    with pytest.raises(RuntimeFailure, match="must write into their output arguments"):
        call_dps_packed(
            PREFIX + "returns", [np.zeros(2, np.float32)], [((2,), "float32")]
        )


def test_call_dps_packed_reports_failures_with_the_name() -> None:
    def broken(x: NDArray, out: NDArray) -> None:
        raise ValueError("boom")

    register_func(PREFIX + "broken", broken)
    with pytest.raises(
        RuntimeFailure, match=r"'test_runtime_registry\.broken'.*ValueError: boom"
    ):
        call_dps_packed(
            PREFIX + "broken", [np.zeros(2, np.float32)], [((2,), "float32")]
        )
