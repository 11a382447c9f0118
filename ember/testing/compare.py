"""Comparing results under ember's IEEE 754 semantics.

Compiled code, passes and other frameworks are checked against the reference
interpreter with :func:`assert_same_values`: NaN must be where the reference
has NaN, ±inf where it has ±inf with the same sign, and finite values must be
close (reductions may sum in another order).  ``np.testing.assert_allclose``
treats NaN and inf alike only by default and says little about where they
differ; this helper states the rule once, for every test that compares.

The sign of a zero is not compared: ``-0.0 == 0.0``.  Where it matters, it
shows as the sign of an infinity (``1 / -0.0``), which is compared.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["TOLERANCES", "assert_same_values", "assert_all_same_values"]

TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float64): (1e-7, 1e-9),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float16): (1e-2, 1e-3),
}
"""Default ``(rtol, atol)`` by dtype; other dtypes (integers) must be equal."""


def _positions(mask: np.ndarray, limit: int = 5) -> str:
    where = np.argwhere(mask)
    shown = ", ".join(str(tuple(int(i) for i in p)) for p in where[:limit])
    more = f" and {len(where) - limit} more" if len(where) > limit else ""
    return f"{shown}{more}"


def assert_same_values(
    actual: np.ndarray,
    expected: np.ndarray,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    scale_atol: bool = False,
    what: str = "",
) -> None:
    """Fail unless ``actual`` holds what ``expected`` (the reference) holds.

    Same shape and dtype; for floats, NaN at exactly the same positions, ±inf
    at exactly the same positions with the same signs, and the finite values
    within ``rtol``/``atol`` (defaults from :data:`TOLERANCES`); other dtypes
    exactly equal.  ``scale_atol`` multiplies ``atol`` by the largest finite
    magnitude of ``expected`` (at least 1): where a sum cancels, small
    elements carry the absolute error of large ones.  ``what`` prefixes the
    message (e.g. the program that produced the values).
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    prefix = f"{what}\n" if what else ""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise AssertionError(
            f"{prefix}got {actual.dtype}{list(actual.shape)}, "
            f"expected {expected.dtype}{list(expected.shape)}"
        )
    if expected.dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected, err_msg=prefix)
        return
    default_rtol, default_atol = TOLERANCES.get(expected.dtype, (1e-5, 1e-6))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    nan_differs = np.isnan(actual) != np.isnan(expected)
    if nan_differs.any():
        raise AssertionError(
            f"{prefix}NaN positions differ at {_positions(nan_differs)}: "
            f"got {actual[nan_differs][:5]}, expected {expected[nan_differs][:5]}"
        )
    inf_differs = (np.isinf(actual) | np.isinf(expected)) & (actual != expected)
    if inf_differs.any():
        raise AssertionError(
            f"{prefix}infinities differ at {_positions(inf_differs)}: "
            f"got {actual[inf_differs][:5]}, expected {expected[inf_differs][:5]}"
        )
    finite = np.isfinite(expected)
    wide_actual = actual[finite].astype(np.float64)
    wide_expected = expected[finite].astype(np.float64)
    if scale_atol:
        atol *= max(1.0, float(np.max(np.abs(wide_expected), initial=0.0)))
    np.testing.assert_allclose(
        wide_actual, wide_expected, rtol=rtol, atol=atol, err_msg=prefix
    )


def assert_all_same_values(
    actual: Sequence[np.ndarray],
    expected: Sequence[np.ndarray],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    scale_atol: bool = False,
    what: str = "",
) -> None:
    """:func:`assert_same_values` for each pair of results of a function."""
    if len(actual) != len(expected):
        raise AssertionError(
            f"{what}\ngot {len(actual)} results, expected {len(expected)}"
        )
    for i, (a, e) in enumerate(zip(actual, expected)):
        where = f"result {i} of {what}"
        assert_same_values(
            a, e, rtol=rtol, atol=atol, scale_atol=scale_atol, what=where
        )
