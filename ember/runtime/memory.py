"""What a compiled module holds in memory: :meth:`Module.memory_report`.

The figures come from the module itself: its constants (the weights,
folded and packed for the kernels) and the memory plan of the
``plan-memory`` pass (:mod:`ember.passes.plan_memory`), which puts every
intermediate tensor in one workspace and reuses a buffer once its value is
dead.  ``peak_activation_bytes`` is the most intermediate bytes live at any
one time, the least any plan needs; ``naive_activation_bytes`` is one buffer
per tensor, what planning saves against.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["MemoryReport"]


@dataclass(frozen=True)
class MemoryReport:
    """Bytes a module holds (all sizes in bytes; ``str()`` reads as a table)."""

    weights_bytes: int
    workspace_bytes: int
    peak_activation_bytes: int
    naive_activation_bytes: int

    @property
    def total_bytes(self) -> int:
        """Weights plus workspace: what the module allocates, inputs and outputs aside."""
        return self.weights_bytes + self.workspace_bytes

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def __str__(self) -> str:
        naive = self.naive_activation_bytes
        saved = f" ({self.workspace_bytes / naive:.0%} of naive)" if naive else ""
        rows = (
            ("weights", self.weights_bytes, ""),
            ("workspace", self.workspace_bytes, saved),
            ("peak activations", self.peak_activation_bytes, " (live at once)"),
            ("naive activations", naive, " (one buffer per tensor)"),
        )
        return "\n".join(
            f"{name:<18} {_mib(value):>10}{note}" for name, value, note in rows
        )


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.2f} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:.1f} KiB"


def release_free_memory() -> None:
    """Collect dead reference cycles (IR: ops point at their parents) and
    hand the allocator's free pages back to the system.

    glibc keeps freed heap memory for reuse, and after a build the heap is
    mostly holes left by IR and temporaries: ``malloc_trim`` returns those
    pages, so RSS after ``ember.build`` reflects what the module holds.
    Elsewhere (other C libraries) only the collection runs.
    """
    import ctypes
    import gc

    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)
