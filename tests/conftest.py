"""Shared pytest configuration: hypothesis profiles, the compilation cache.

``ci`` (the default) keeps property tests bounded so the whole suite stays
well under 15 minutes on 2 cores; ``thorough`` is for local soak runs:
``HYPOTHESIS_PROFILE=thorough pytest tests``.

The on-disk compilation cache is off for the suite (``EMBER_CACHE=0``, which
the tools run as subprocesses inherit): a test compiles what it builds and
writes nothing to the user's home.  tests/test_cache.py turns it on, in a
temporary directory, per test.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

os.environ["EMBER_CACHE"] = "0"

settings.register_profile(
    "ci",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
