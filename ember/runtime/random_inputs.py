"""Seeded random inputs, as ``tvmc run --fill-mode random`` makes them.

One function draws them for every way ember runs something on random data:
``ember-run`` on a function or on a pipeline, and
:func:`ember.pipeline.run_pipeline_file`.  The same seed and the same
signature therefore give the same arrays whichever path runs them, so a
network split into a pipeline can be compared with the unsplit one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.errors import RuntimeFailure

__all__ = ["random_input"]


def random_input(
    shape: Sequence[int], dtype: Any, seed: int, index: int
) -> np.ndarray:
    """A reproducible array for input number ``index`` of a signature.

    Floats are uniform in [0, 1), integers uniform in [0, 8), booleans
    either value.  Non-negative values keep every input meaningful,
    variances and scales included (a negative ``bn_var`` would make
    batch_norm NaN).  Each input draws from its own stream, seeded by
    ``seed`` and ``index``, so one input's values do not depend on which
    others are random.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise RuntimeFailure(f"random inputs need an integer seed >= 0, got {seed!r}")
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    rng = np.random.default_rng([seed, index])
    if dtype.kind == "f":
        return rng.random(shape, dtype=np.float64).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    return rng.integers(0, 8, size=shape, dtype=dtype)
