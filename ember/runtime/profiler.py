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

:meth:`Profile.op_costs` turns the kernels' times into measured seconds per
graph op of the function the library was built from, keyed as
``split-graph{balance=N costs=FILE}`` reads them (``(op name,
occurrence)``); :meth:`Profile.save_costs` writes that file (``ember-run
--profile N --costs-out FILE``).  Which ops a kernel computes comes from
the compiler itself: the function's ops are lowered again to the
``kernel`` stage with a location naming each op's position, and every
kernel call carries the locations of the ops it replaced.  A fused kernel's
time is split over its ops by their share of its estimated cost
(:mod:`ember.passes.cost`).
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
    import os

    from xdsl.dialects.builtin import ModuleOp

    from ember.runtime.graph_executor import GraphExecutor

__all__ = ["KernelProfile", "Profile", "profile_executor"]

_POSITION_FILE = "<ember.profiler: op position>"
"""The file of the locations that name each op's position in :func:`_kernel_ops`."""


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
            return cls(
                data["entry"], rows, data["overhead_ms"], data["repeat"],
                data["threads"], data["peak_gflops"], data["cpu"],
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise RuntimeFailure(f"not a profile: {type(e).__name__}: {e}") from None

    def op_costs(
        self,
        module: ModuleOp,
        *,
        entry: str = "main",
        params: Mapping[str, Any] | None = None,
        target: str = "llvm",
        options: Mapping[str, Any] | None = None,
    ) -> dict[tuple[str, int], float]:
        """Measured seconds per graph op of ``@entry`` of ``module``, keyed
        ``(op name, occurrence)`` as ``split-graph`` counts ops.

        ``module``, ``params``, ``target`` and ``options`` must be what the
        profiled library was built from (``ember.build``'s arguments): the
        function is lowered again to find which ops each kernel call
        computes, and a profile of another build is an error.  A fused
        kernel's time is split over its ops by estimated cost; ops that
        became no kernel (folded, aliased) are left out.
        """
        calls = _kernel_ops(module, entry, params, target, options)
        names = [name for name, _ in calls]
        if names != [row.name for row in self.rows]:
            where = next(
                (i for i, (a, b) in enumerate(zip(names, self.rows)) if a != b.name),
                min(len(names), len(self.rows)),
            )
            raise RuntimeFailure(
                f"op costs: @{entry} of the module given lowers to {len(names)} kernel "
                f"calls but the profile has {len(self.rows)} (call #{where}: "
                f"{names[where] if where < len(names) else 'none'} against "
                f"{self.rows[where].name if where < len(self.rows) else 'none'}); "
                "give the module, params, target and options the profiled library was built with"
            )
        costs: dict[tuple[str, int], float] = {}
        for row, (_, ops) in zip(self.rows, calls):
            weights = [_static_weight(op) for _, op in ops]
            total = sum(weights)
            for (key, _), weight in zip(ops, weights):
                share = weight / total if total else 1 / len(ops)
                costs[key] = costs.get(key, 0.0) + row.median_ms / 1e3 * share
        return costs

    def save_costs(
        self, path: str | os.PathLike[str], module: ModuleOp, **build: Any
    ) -> dict[tuple[str, int], float]:
        """Write :meth:`op_costs` (``build``: its keywords) as the file
        ``split-graph{balance=N costs=FILE}`` reads; return them."""
        from ember.passes.split_graph import save_op_costs

        costs = self.op_costs(module, **build)
        save_op_costs(path, costs)
        return costs

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
            f"{self.threads} thread(s), peak {self.peak_gflops:.1f} GFLOP/s, {self.cpu})"
        )
        return "\n".join([title, render(header), *map(render, lines)])


def profile_executor(executor: GraphExecutor, repeat: int) -> Profile:
    """Profile ``repeat`` runs of ``executor`` (its inputs already set)."""
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
    executor.run()  # warm-up; reports unset inputs before any timing
    samples = np.empty((repeat, len(sites) + 1))
    for r in range(repeat):
        start = time.perf_counter_ns()
        executor._run(timed_run)  # noqa: SLF001 - run()'s own path
        wall = time.perf_counter_ns() - start
        marks = clock[:, 0] * 1_000_000_000 + clock[:, 1]
        samples[r, :-1] = np.diff(marks)
        samples[r, -1] = max(wall - (marks[-1] - marks[0]), 0)
    medians = np.median(samples, axis=0) / 1e6  # ms
    total = float(medians.sum())
    threads = num_threads()
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
    return Profile(
        lib.entry_name, tuple(rows), float(medians[-1]), repeat, threads, peak_gflops, machine.cpu
    )


def _static_weight(op: Any) -> float:
    from ember.passes.cost import op_cost

    cost = op_cost(op)
    return cost.flops + cost.bytes / 1e6  # bytes only weigh ops without FLOPs


def _kernel_ops(
    module: ModuleOp,
    entry: str,
    params: Mapping[str, Any] | None,
    target: str,
    options: Mapping[str, Any] | None,
) -> list[tuple[str, list[tuple[tuple[str, int], Any]]]]:
    """Each kernel call ``ember.build`` makes of ``@entry``, in program order:
    its name and the ops of ``@entry`` it computes, with their keys."""
    from dataclasses import replace

    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
    from xdsl.dialects.func import FuncOp
    from xdsl.traits import SymbolTable

    from ember import driver
    from ember.build import _compile_options
    from ember.dialects.graph import CallExternOp, CallKernelOp
    from ember.passes.split_graph import op_keys
    from ember.remarks import locations_of
    from ember.target import Target

    parsed = Target.parse(target)
    if parsed.kind != "llvm" or parsed.libs:
        raise RuntimeFailure(
            f"op costs: only a profile of target 'llvm' can be mapped to graph ops, not {target!r}"
        )
    function = SymbolTable.lookup_symbol(module, entry)
    if not isinstance(function, FuncOp) or function.is_declaration:
        raise RuntimeFailure(f"op costs: the module has no function @{entry} with a body")
    body = list(function.body.block.ops)[:-1]  # the func.return is no op of a cost
    keys = op_keys(body)
    tagged = module.clone()
    tagged_function = SymbolTable.lookup_symbol(tagged, entry)
    assert isinstance(tagged_function, FuncOp)  # a clone of the function above
    for position, op in enumerate(tagged_function.body.block.ops):
        op.location = FileLineColLoc(StringAttr(_POSITION_FILE), IntAttr(position + 1), IntAttr(1))
    compile_options = _compile_options(options)
    compile_options = replace(
        compile_options, target=parsed, schedule=compile_options.kernel_schedule, entry=entry
    )
    arrays = {name: np.asarray(value) for name, value in (params or {}).items()}
    lowered = driver.lower(tagged, "kernel", arrays, compile_options, annotate=True, copy=False)
    program = SymbolTable.lookup_symbol(lowered, entry)
    assert isinstance(program, FuncOp)  # the kernel stage keeps the entry
    calls = []
    for op in program.body.block.ops:
        if not isinstance(op, CallKernelOp | CallExternOp):
            continue
        name = op.callee if isinstance(op, CallKernelOp) else op.function
        positions = sorted(
            {
                loc.line - 1
                for loc in locations_of(op.location)
                if loc.file == _POSITION_FILE and 0 <= loc.line - 1 < len(body)
            }
        )
        if not positions:
            raise RuntimeFailure(
                f"op costs: kernel call #{len(calls)} ({name}) of @{entry} computes no op "
                "the compiler kept a location for; its time cannot be given to an op"
            )
        calls.append((name, [(keys[p], body[p]) for p in positions]))
    return calls
