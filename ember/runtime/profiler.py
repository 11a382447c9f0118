"""Per-kernel profiles of a compiled network: where an inference's time goes.

``GraphExecutor.profile(repeat)`` (and ``ember-run --profile``) runs the
module's *profile entry* — the native program with a monotonic clock read
before every kernel call and after the last (see
:mod:`ember.lowering.program_to_llvm`) — ``repeat`` times through the
executor's own ``run()`` path, and reports

* one :class:`KernelProfile` per call, in program order: the kernel, the
  graph ops fused into it, its output shape, the median time, its share of
  an inference, GFLOP/s from the static cost model (:mod:`ember.passes.cost`)
  and the percentage of this machine's peak (:mod:`ember.runtime.peak`,
  per-core FMA peak x the kernel thread count);
* ``overhead``: the median per-inference time outside kernels — Python,
  the executor's checks, ctypes, the frame, the final output copies.

Shares are of ``total`` = the kernels' medians + ``overhead``, so they and
``overhead_share`` sum to 1.  A clock read costs ~20 ns, charged to the
kernel it precedes.  :meth:`Profile.as_dict` (and :meth:`Profile.to_json`)
key the kernels by call: the kernel's name, ``name#2``… for its later calls.
:func:`ember.pipeline.op_costs` turns a profile into measured seconds per
graph op, the costs ``split-graph{balance=N costs=FILE}`` balances.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ember.errors import RuntimeFailure

if TYPE_CHECKING:
    from ember.runtime.graph_executor import GraphExecutor

__all__ = ["KernelProfile", "Profile", "profile_executor"]


@dataclass(frozen=True)
class KernelProfile:
    """One kernel call of an inference."""

    name: str
    ops: tuple[str, ...]
    shape: tuple[int, ...]
    median_ms: float
    share: float
    flops: int
    gflops: float | None
    """``None`` where the cost model has no FLOP count (a registered function)."""
    peak_percent: float | None


@dataclass(frozen=True)
class Profile:
    """What :meth:`GraphExecutor.profile` measured (times in milliseconds)."""

    entry: str
    rows: tuple[KernelProfile, ...]
    overhead_ms: float
    repeat: int
    threads: int
    peak_gflops: float
    """The peak the percentages are of: per-core peak x ``threads``."""
    cpu: str
    round_trip_ns: tuple[float, float] | None = None
    """A cache line's round trip between the first two CPUs, just before
    and just after the runs (:func:`ember.runtime.cores.round_trip_ns`): how
    dear it is for the threads to hand each other data.  None on one
    thread, or where it cannot be measured."""

    @property
    def total_ms(self) -> float:
        return sum(row.median_ms for row in self.rows) + self.overhead_ms

    @property
    def overhead(self) -> float:
        """Per-inference time outside kernels, in seconds."""
        return self.overhead_ms / 1e3

    @property
    def overhead_share(self) -> float:
        return self.overhead_ms / self.total_ms if self.total_ms else 0.0

    def as_dict(self) -> dict[str, Any]:
        keys: dict[str, int] = {}
        kernels: dict[str, Any] = {}
        for row in self.rows:
            keys[row.name] = keys.get(row.name, 0) + 1
            key = row.name if keys[row.name] == 1 else f"{row.name}#{keys[row.name]}"
            kernels[key] = {
                field: list(value) if isinstance(value, tuple) else value
                for field, value in asdict(row).items()
            }
        return {
            "entry": self.entry,
            "total_ms": self.total_ms,
            "overhead_ms": self.overhead_ms,
            "repeat": self.repeat,
            "threads": self.threads,
            "peak_gflops": self.peak_gflops,
            "cpu": self.cpu,
            "round_trip_ns": None if self.round_trip_ns is None else list(self.round_trip_ns),
            "kernels": kernels,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        """The inverse of :meth:`as_dict`."""
        try:
            rows = tuple(
                KernelProfile(
                    **{**row, "ops": tuple(row["ops"]), "shape": tuple(row["shape"])}
                )
                for row in data["kernels"].values()
            )
            trip = data.get("round_trip_ns")
            return cls(
                data["entry"], rows, data["overhead_ms"], data["repeat"],
                data["threads"], data["peak_gflops"], data["cpu"],
                None if trip is None else (float(trip[0]), float(trip[1])),
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise RuntimeFailure(f"not a profile: {type(e).__name__}: {e}") from None

    def __str__(self) -> str:
        header = ("#", "kernel", "ops", "shape", "median ms", "share", "GFLOP/s", "% peak")
        lines = [
            (
                str(i),
                row.name,
                "+".join(op.removeprefix("graph.") for op in row.ops) or "-",
                "x".join(map(str, row.shape)) or "scalar",
                f"{row.median_ms:.4f}",
                f"{row.share:.1%}",
                "-" if row.gflops is None else f"{row.gflops:.2f}",
                "-" if row.peak_percent is None else f"{row.peak_percent:.1f}%",
            )
            for i, row in enumerate(self.rows)
        ]
        lines.append(
            ("", "(outside kernels)", "", "", f"{self.overhead_ms:.4f}",
             f"{self.overhead_share:.1%}", "", "")
        )
        widths = [max(len(cells[c]) for cells in (header, *lines)) for c in range(len(header))]
        numeric = {0, 4, 5, 6, 7}

        def render(cells: tuple[str, ...]) -> str:
            return "  ".join(
                cell.rjust(w) if c in numeric else cell.ljust(w)
                for c, (cell, w) in enumerate(zip(cells, widths))
            ).rstrip()

        title = (
            f"Profile of @{self.entry}: {self.total_ms:.4f} ms per inference, "
            f"{self.overhead_ms * 1e3:.2f} us outside kernels (medians of {self.repeat} runs; "
            f"{self.threads} thread(s){self._apart()}, peak {self.peak_gflops:.1f} GFLOP/s, "
            f"{self.cpu})"
        )
        return "\n".join([title, render(header), *map(render, lines)])

    def _apart(self) -> str:
        """`` on cores 83 ns apart`` (the round trip), or ``83 → 351`` where
        the CPUs moved during the runs; empty without a round trip."""
        if self.round_trip_ns is None:
            return ""
        from ember.runtime.cores import moved

        before, after = self.round_trip_ns
        if moved(before, after):
            return f" on cores {before:.0f} → {after:.0f} ns apart"
        return f" on cores {max(before, after):.0f} ns apart"


def profile_executor(executor: GraphExecutor, repeat: int) -> Profile:
    """Profile ``repeat`` runs of ``executor`` (its inputs already set)."""
    from ember.runtime.cores import round_trip_ns
    from ember.runtime.peak import peak
    from ember.runtime.threads import num_threads

    lib = executor.module
    if not hasattr(lib, "bind_timed"):
        raise RuntimeFailure(
            f"profile(): a module built for target {lib.target!r} has no timed entry; "
            "build it with target='llvm' to profile it"
        )
    sites = lib.layout.kernels
    clock = np.zeros((len(sites) + 1, 2), dtype=np.int64)
    slots = executor._slots  # noqa: SLF001 - this thread's buffers, as run() uses
    timed_run = lib.bind_timed(slots.input_list, slots.outputs, clock)
    # Before the warm-up run: the probe's pinned threads and their waits
    # leave the kernels' thread team asleep, which the warm-up wakes again.
    threads = num_threads()
    trip_before = round_trip_ns() if threads > 1 else None
    executor.run()  # warm-up; reports unset inputs before any timing
    samples = np.empty((repeat, len(sites) + 1))
    for r in range(repeat):
        start = time.perf_counter_ns()
        executor._run(timed_run)  # noqa: SLF001 - run()'s own path
        wall = time.perf_counter_ns() - start
        marks = clock[:, 0] * 1_000_000_000 + clock[:, 1]
        samples[r, :-1] = np.diff(marks)
        samples[r, -1] = max(wall - (marks[-1] - marks[0]), 0)
    trip_after = round_trip_ns() if trip_before is not None else None
    medians = np.median(samples, axis=0) / 1e6  # ms
    total = float(medians.sum())
    machine = peak()
    peak_gflops = machine.gflops(threads)
    rows = []
    for site, ms in zip(sites, medians[:-1]):
        gflops = site.flops / (ms * 1e6) if site.flops and ms > 0 else None
        rows.append(
            KernelProfile(
                site.name,
                site.ops,
                site.shape,
                float(ms),
                float(ms) / total if total else 0.0,
                site.flops,
                gflops,
                None if gflops is None else 100 * gflops / peak_gflops,
            )
        )
    trip = None if trip_before is None or trip_after is None else (trip_before, trip_after)
    return Profile(
        lib.entry_name, tuple(rows), float(medians[-1]), repeat, threads, peak_gflops,
        machine.cpu, trip,
    )

