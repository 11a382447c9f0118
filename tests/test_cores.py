"""ember.runtime.cores: a cache line's round trip between two CPUs."""

from __future__ import annotations

import ctypes
import os

import pytest

from ember.runtime import cores

needs_two_cpus = pytest.mark.skipif(
    cores.cpu_pair() is None, reason="this process may run on one CPU only"
)


@needs_two_cpus
def test_a_round_trip_is_measured_and_the_affinity_restored() -> None:
    before = os.sched_getaffinity(0)
    trip = cores.round_trip_ns(rounds=200, batches=3)
    assert trip is not None and 0 < trip < 1e6  # ns: far below a millisecond
    assert os.sched_getaffinity(0) == before


@needs_two_cpus
def test_a_partner_that_cannot_run_gives_none_not_a_hang() -> None:
    before = os.sched_getaffinity(0)
    first = min(before)
    assert cores.round_trip_ns(cpus=(first, 1 << 20), rounds=10, batches=2) is None
    assert os.sched_getaffinity(0) == before


def test_one_cpu_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert cores.cpu_pair() is None
    assert cores.round_trip_ns() is None


def test_the_ping_pong_gives_up_without_a_partner() -> None:
    """Role 0 alone: no answer comes, so after ``limit`` polls it returns -1
    and leaves -1 in the line (what tells a partner to stop)."""
    cell = ctypes.c_int64(0)
    assert cores.ping_pong()(ctypes.addressof(cell), 0, 5, 0, 1000) == -1
    assert cell.value == -1


def test_the_ping_pong_alone_answers_when_the_line_already_holds_the_reply() -> None:
    """Role 1 finding each expected value in place (no partner needed for one
    round: it waits for 1, answers 2, then sees 2 = 2 * end and returns)."""
    cell = ctypes.c_int64(1)
    assert cores.ping_pong()(ctypes.addressof(cell), 0, 1, 1, 1000) == 1
    assert cell.value == 2


def test_bad_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        cores.round_trip_ns(rounds=0)
