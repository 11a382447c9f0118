"""A process-wide setting held at a value while blocks run, on any thread.

A build changes two of the interpreter's settings while it runs (the
garbage collector off, :func:`ember.runtime.memory.collection_paused`; a
short GIL switch interval while its LLVM threads compile,
:func:`ember.backends.cpu.quick_handover`).  Builds nest and may overlap on
threads, so a setting is changed when the first block begins and restored
to what it was then when the last one ends; blocks that begin while
another holds it keep the first block's value."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class HeldSetting:
    """A setting read by ``read()`` and written by ``write(value)``."""

    def __init__(self, read: Callable[[], Any], write: Callable[[Any], object]) -> None:
        self._read = read
        self._write = write
        self._lock = threading.Lock()
        self._holders = 0
        self._before: Any = None

    @contextmanager
    def held(self, value: Any) -> Iterator[None]:
        """``value`` while the block runs (unless another block holds the
        setting already), and what it was before once the last block ends."""
        with self._lock:
            if self._holders == 0:
                self._before = self._read()
                self._write(value)
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._write(self._before)
