"""The allocation limit: one check before ember allocates a tensor's memory.

A few bytes of IR can describe an enormous tensor
(``dense<1.0> : tensor<100000x100000xf32>`` is 40 GB).  ember keeps such
values symbolic for as long as it can (splat constants stay one element
through parsing, printing, verification and passes); where the values
must exist in memory — a constant materialised for the interpreter or the
compiled program, an interpreted op's result, a runtime buffer, a random
input of ``ember-run`` — the size is checked here first, and a value over
the limit is an :class:`~ember.errors.AllocationError` naming the value and
its size instead of a ``MemoryError`` (or the OOM killer) later.

The limit is :data:`DEFAULT_MAX_ALLOC_BYTES` unless the environment
variable ``EMBER_MAX_ALLOC_BYTES`` gives another number of bytes; it is
read by :func:`max_alloc_bytes` alone, at each check, so a test or a user
can change it without restarting.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from ember.errors import AllocationError, EmberError

DEFAULT_MAX_ALLOC_BYTES = 4 << 30
"""4 GiB for one value: larger than any tensor of the networks ember targets."""

ENVIRONMENT_VARIABLE = "EMBER_MAX_ALLOC_BYTES"


def max_alloc_bytes() -> int:
    """The largest number of bytes one value may take (``EMBER_MAX_ALLOC_BYTES``)."""
    return bytes_setting(ENVIRONMENT_VARIABLE, DEFAULT_MAX_ALLOC_BYTES)


def bytes_setting(variable: str, default: int) -> int:
    """The number of bytes environment variable ``variable`` gives (``default``
    when unset or blank); anything but a non-negative integer is an error."""
    setting = os.environ.get(variable)
    if setting is None or not setting.strip():
        return default
    try:
        limit = int(setting)
    except ValueError:
        limit = -1
    if limit < 0:
        raise EmberError(f"{variable}={setting!r} must be a non-negative number of bytes")
    return limit


def describe_bytes(nbytes: int) -> str:
    """``40000000000 bytes (37.3 GiB)``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes} bytes ({nbytes / size:.1f} {unit})"
    return f"{nbytes} bytes"


def within_limit(nbytes: int) -> bool:
    """Whether one value of ``nbytes`` bytes may be allocated (for optional
    work, such as constant folding, that is skipped rather than failed)."""
    return nbytes <= max_alloc_bytes()


def check_allocation(nbytes: int, what: str, detail: str = "") -> None:
    """Raise :class:`AllocationError` if ``what`` (``nbytes`` bytes) is over
    the limit; ``detail`` (e.g. the op) goes on the lines after the message."""
    limit = max_alloc_bytes()
    if nbytes > limit:
        raise AllocationError(
            f"{what} needs {describe_bytes(nbytes)}, more than ember's allocation "
            f"limit of {describe_bytes(limit)} (set {ENVIRONMENT_VARIABLE} to change it)"
            + (f"\n{detail}" if detail else "")
        )


def check_array(
    shape: Sequence[int], dtype: Any, what: str, detail: str = ""
) -> None:
    """:func:`check_allocation` for an array of ``shape`` and numpy ``dtype``."""
    import numpy as np

    nbytes = math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
    check_allocation(nbytes, what, detail)
