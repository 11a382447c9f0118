"""Testing helpers, as ``relay.testing`` had them.

* :func:`create_workload` — seeded random parameters for a network;
* :mod:`ember.testing.workloads` — the benchmark networks (mlp, resnet18, …);
* :mod:`ember.testing.strategies` — hypothesis strategies that generate
  well-typed graph programs, to property-test passes;
* :func:`assert_same_values` — results compared under ember's IEEE rules
  (NaN positions and inf signs exactly, finite values within a tolerance).
"""

from __future__ import annotations

from ember.testing.compare import assert_all_same_values, assert_same_values
from ember.testing.init import create_workload

__all__ = ["assert_all_same_values", "assert_same_values", "create_workload"]
