"""What every pipeline executor does the same way: take and check global inputs.

The thread executor (:mod:`ember.pipeline.executor`) and the Ray executor
(:mod:`ember.pipeline.ray_executor`) run stages differently but face the
caller alike (TVM's ``PipelineModule``): ``set_input`` by name or index,
copied and checked against the pipeline's input specs; a ``submit`` or
``map`` element given as a dict, a tuple or one array; introspection of
the inputs and outputs; a ``with`` block that closes the executor.

A subclass sets ``_lib`` (the :class:`~ember.pipeline.build.PipelineLibrary`),
``_input_specs`` (global input name -> spec, in order) and ``_staged`` (the
inputs set so far) in its ``__init__``, and provides ``_check_open(what)``
and ``close()``.
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sized
from functools import cache
from typing import Any, Self

import numpy as np

from ember.pipeline.build import PipelineError, PipelineLibrary
from ember.runtime.module import TensorSpec
from ember.runtime.ndarray import NDArray, as_host_array
from ember.runtime.ndarray import array as nd_array

__all__ = ["PipelineInputs"]


@cache
def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(name)  # ~0.2 µs a call: too much once per input


class PipelineInputs(ABC):
    """The input side and introspection shared by pipeline executors."""

    _lib: PipelineLibrary
    _input_specs: dict[str, TensorSpec]
    _staged: dict[str, NDArray]
    _max_in_flight: int
    _peak_in_flight: int
    _reads: Sized
    """Indices of the inputs ``run()`` submitted and ``get_output`` has not read."""

    @abstractmethod
    def _check_open(self, what: str) -> None:
        """Raise unless the executor can take inputs (not closed, not failed)."""

    @abstractmethod
    def close(self) -> None:
        """Stop the executor; pending inputs are dropped."""

    # -- introspection ---------------------------------------------------

    @property
    def library(self) -> PipelineLibrary:
        return self._lib

    @property
    def input_names(self) -> list[str]:
        return list(self._input_specs)

    @property
    def num_inputs(self) -> int:
        return len(self._input_specs)

    @property
    def num_outputs(self) -> int:
        return len(self._lib.outputs)

    @property
    def peak_in_flight(self) -> int:
        """The most inputs that were ever in flight at once (never above ``max_in_flight``)."""
        return self._peak_in_flight

    def get_input_info(self) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
        """``(shapes, dtypes)`` by global input name."""
        return (
            {n: s.shape for n, s in self._input_specs.items()},
            {n: s.dtype for n, s in self._input_specs.items()},
        )

    # -- inputs ------------------------------------------------------------

    def set_input(
        self, key: str | int | None = None, value: Any = None, **inputs: Any
    ) -> None:
        """Set global input ``key`` (name or index) and/or each of ``inputs``.

        The value is copied: changing the caller's array later does not
        change an input already queued.  Shape and dtype must be the input's.
        """
        self._check_open("set_input()")
        updates: list[tuple[str, Any]] = []
        if key is not None:
            if value is None:
                raise PipelineError(f"set_input({key!r}): no value given")
            updates.append((self._input_name(key), value))
        elif value is not None:
            raise PipelineError("set_input: a value was given without an input name")
        updates += [(self._input_name(name), v) for name, v in inputs.items()]
        checked = [(name, self._checked(name, v)) for name, v in updates]
        for name, values in checked:
            self._staged[name] = nd_array(values)

    def _input_name(self, key: Any) -> str:
        if key in self._input_specs:  # the common case first: map and submit check every input
            return key
        names = list(self._input_specs)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(names):
                raise PipelineError(
                    f"input index {key} out of range: the pipeline has {len(names)} inputs "
                    f"({self._describe_inputs()})"
                )
            return names[key]
        if key in self._lib.params:
            raise PipelineError(
                f"{key!r} was bound at build time (ember.pipeline.build(..., params=...)) and is "
                f"no longer an input; inputs: {self._describe_inputs()}"
            )
        message = f"unknown input {key!r}; inputs of pipeline @{self._lib.name}: {self._describe_inputs()}"
        close = difflib.get_close_matches(str(key), names, n=1)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        raise PipelineError(message)

    def _describe_inputs(self) -> str:
        return (
            ", ".join(f"{s.name}: {s.describe()}" for s in self._input_specs.values())
            or "none"
        )

    def _checked(self, name: str, value: Any) -> np.ndarray:
        spec = self._input_specs[name]
        dtype = _numpy_dtype(spec.dtype)
        # Checked for every input of map/submit: no message is formatted,
        # and no dtype name read (slow in numpy), unless something is wrong.
        values = (
            value
            if isinstance(value, np.ndarray)
            else as_host_array(value, f"set_input({name!r})", dtype=dtype)
        )
        if values.shape != spec.shape or values.dtype != dtype:
            hint = (
                f"; convert it with .astype('{spec.dtype}')"
                if values.dtype.name != spec.dtype
                else ""
            )
            raise PipelineError(
                f"set_input({name!r}): expected {spec.describe()}, got "
                f"{values.dtype.name}{list(values.shape)}{hint}"
            )
        return values

    def _with_inputs(
        self, inputs: Any, named: Mapping[str, Any], what: str
    ) -> dict[str, NDArray | np.ndarray]:
        """The staged inputs with ``inputs`` and ``named`` (checked; the
        executor copies them when it queues them) on top."""
        staged: dict[str, NDArray | np.ndarray] = dict(self._staged)
        if isinstance(inputs, np.ndarray) and not named:
            # One array for the one input, the common case (map, submit):
            # nothing more to look up, nothing can be missing.
            name = self._only_input(what)
            staged[name] = self._checked(name, inputs)
            return staged
        given: list[tuple[str | int, Any]] = []
        if isinstance(inputs, Mapping):
            given += inputs.items()
        elif isinstance(inputs, tuple):
            if len(inputs) != self.num_inputs:
                raise PipelineError(
                    f"{what}: a tuple gives the inputs by position: expected "
                    f"{self.num_inputs} ({self._describe_inputs()}), got {len(inputs)}"
                )
            given += enumerate(inputs)
        elif inputs is not None:
            given.append((self._only_input(what), inputs))
        given += named.items()
        for key, value in given:
            name = self._input_name(key)
            staged[name] = self._checked(name, value)
        if len(staged) < len(self._input_specs):  # staged holds input names only
            missing = [name for name in self._input_specs if name not in staged]
            raise PipelineError(
                f"{what}: input(s) not given: {', '.join(missing)}; give them or call "
                "set_input(name, array) first"
            )
        return staged

    def _only_input(self, what: str) -> str:
        """The name of the one global input that an array alone gives."""
        if len(self._input_specs) == 1:
            (name,) = self._input_specs
            return name
        raise PipelineError(
            f"{what}: pipeline @{self._lib.name} has {self.num_inputs} inputs "
            f"({self._describe_inputs()}); give a dict by name or a tuple by position"
        )

    def _map_window(self, window: Any, default: int) -> int:
        """``map``'s checked ``window`` (``default`` when None, at most
        ``max_in_flight``); ``map`` needs no ``run()`` input pending."""
        self._check_open("map()")
        window = min(default, self._max_in_flight) if window is None else window
        if (
            isinstance(window, bool)
            or not isinstance(window, int)
            or not 1 <= window <= self._max_in_flight
        ):
            raise PipelineError(
                f"map(): window must be an integer from 1 to max_in_flight "
                f"({self._max_in_flight}), got {window!r}"
            )
        if self._reads:
            raise PipelineError(
                f"map(): {len(self._reads)} input(s) submitted with run() are unread; "
                "read them with get_output() first"
            )
        return window

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
