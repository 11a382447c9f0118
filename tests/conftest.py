"""Shared pytest configuration: hypothesis profiles.

``ci`` (the default) keeps property tests bounded so the whole suite stays
well under 15 minutes on 2 cores; ``thorough`` is for local soak runs:
``HYPOTHESIS_PROFILE=thorough pytest tests``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
