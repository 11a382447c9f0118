"""Testing helpers, as ``relay.testing`` had them.

* :func:`create_workload` — seeded random parameters for a network;
* :mod:`ember.testing.workloads` — the benchmark networks (mlp, resnet18, …);
* :mod:`ember.testing.strategies` — hypothesis strategies that generate
  well-typed graph programs, to property-test passes.
"""

from __future__ import annotations

from ember.testing.init import create_workload

__all__ = ["create_workload"]
