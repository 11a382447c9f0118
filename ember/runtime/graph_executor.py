"""GraphExecutor: set inputs, run a compiled module, read outputs.

Mirrors TVM's ``graph_executor.GraphModule`` (``set_input``, ``run``,
``get_output``, ``get_input``, ``load_params``, ``get_num_outputs``,
``benchmark``) over an ember :class:`~ember.runtime.module.Module`.

Memory is planned once: the executor allocates one aligned NDArray per free
input and per output when it is created (another thread gets its own on its
first call, see Threads below), ``set_input`` copies into the input
slots, and every ``run`` has the module write into the same output slots
(destination passing), so a compiled backend runs without allocating.
``get_output(i)`` returns the output slot itself — the next ``run``
overwrites it; call ``.numpy()`` (a copy) to keep a result, or pass ``out``
(an NDArray or a numpy array) to have it copied there.

Threads: every thread that uses an executor has its own input and output
slots (a :class:`threading.local`, allocated on the thread's first call), so
one thread's ``set_input``/``run``/``get_output`` sequence is never mixed
with another's, and runs are serialised by a lock.  Inputs set in one thread
are therefore not seen by another: each thread sets its own.  A lock cannot
do this alone — between thread A's ``set_input`` and ``run``, thread B could
overwrite A's inputs — and shared slots gave wrong results silently.

Inputs are the entry function's arguments by the names written in the IR
(``%data`` is input ``"data"``), minus params bound by ``ember.build``;
setting a bound param is an error that says so.  Every check — unknown name,
shape, dtype, unset inputs — happens before the module runs, with a message
naming the input and what was expected.
"""

from __future__ import annotations

import difflib
import math
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ember.errors import RuntimeFailure
from ember.runtime.device import Device, cpu
from ember.runtime.module import Module
from ember.runtime.module import load_params as _load_params_blob
from ember.runtime.ndarray import NDArray, as_host_array, empty

if TYPE_CHECKING:
    from ember.runtime.profiler import Profile

__all__ = ["BenchmarkResult", "GraphExecutor", "GraphModule"]


@dataclass(frozen=True)
class BenchmarkResult:
    """Timing statistics over repeats, in seconds (TVM's ``BenchmarkResult``).

    ``results`` holds one figure per repeat: the mean time of one run over
    that repeat's ``number`` runs.  ``*_ms`` give the same in milliseconds.
    """

    results: tuple[float, ...]
    number: int

    @classmethod
    def measure(cls, once: Callable[[], object], repeat: int) -> BenchmarkResult:
        """Time ``repeat`` calls of ``once`` one at a time, after one untimed
        warm-up call: the latency of each call (``number`` is 1)."""
        once()
        return cls(tuple(_time(once, 1) for _ in range(repeat)), 1)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def mean_ms(self) -> float:
        return self.mean * 1e3

    @property
    def median_ms(self) -> float:
        return self.median * 1e3

    @property
    def std_ms(self) -> float:
        return self.std * 1e3

    @property
    def min_ms(self) -> float:
        return self.min * 1e3

    @property
    def max_ms(self) -> float:
        return self.max * 1e3

    def __str__(self) -> str:
        header = ("mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)")
        values = (self.mean_ms, self.median_ms, self.max_ms, self.min_ms, self.std_ms)
        return (
            f"Execution time summary ({len(self.results)} repeats x {self.number} runs):\n"
            + "".join(f"{h:>13}" for h in header)
            + "\n"
            + "".join(f"{v:>13.4f}" for v in values)
        )


class _Slots(threading.local):
    """One thread's input and output slots and what it has done with them.

    A ``threading.local``: each thread that touches an executor gets its own
    instance, built by ``__init__`` with the executor's module and device on
    that thread's first access.
    """

    def __init__(self, lib: Module, device: Device) -> None:
        self.inputs = {
            spec.name: empty(spec.shape, spec.dtype, device)
            for spec in lib.input_specs
        }
        # The slots never change, so run() hands the module one prebuilt list:
        # per-run overhead matters once a compiled module takes microseconds.
        self.input_list = [self.inputs[spec.name] for spec in lib.input_specs]
        self.input_arrays = {name: np.asarray(slot) for name, slot in self.inputs.items()}
        self.unset = set(self.inputs)
        self.outputs = [
            empty(spec.shape, spec.dtype, device) for spec in lib.output_specs
        ]
        self.run = lib.bind(self.input_list, self.outputs)
        self.has_run = False


class GraphExecutor:
    """Runs a compiled :class:`Module` on a device (TVM ``GraphModule``).

    ``GraphExecutor(lib, ember.cpu(0))``; ``lib["default"](dev)`` is the same,
    and ``GraphModule(lib["default"](dev))`` (TVM's spelling) is a new
    executor over that executor's module and device.  Creating the executor
    resolves the module's external functions, so an unregistered
    ``graph.call_extern`` name fails here.  Safe to share between threads;
    each thread has its own inputs and outputs (see the module docstring).
    """

    def __init__(
        self,
        lib: Module | GraphExecutor,
        device: Device | Sequence[Device] | None = None,
    ) -> None:
        if isinstance(lib, GraphExecutor):
            device = lib.device if device is None else device
            lib = lib.module
        if not isinstance(lib, Module):
            raise RuntimeFailure(
                f"GraphExecutor expects a module from ember.build or ember.load_module, got {type(lib).__name__}"
            )
        self._lib = lib
        self._device = self._pick_device(lib, device)
        lib.resolve_externs()
        self._input_specs = {spec.name: spec for spec in lib.input_specs}
        self._input_dtypes = {spec.name: np.dtype(spec.dtype) for spec in lib.input_specs}
        self._input_order = [spec.name for spec in lib.input_specs]
        self._creator = threading.get_ident()
        self._slots = _Slots(lib, self._device)  # this thread's, allocated now
        # Module.run promises nothing about concurrent calls unless it says so.
        self._run_lock = None if lib.run_is_locked else threading.Lock()

    @staticmethod
    def _pick_device(lib: Module, device: Device | Sequence[Device] | None) -> Device:
        if device is None:
            device = cpu(0)
        if isinstance(device, Sequence) and not isinstance(device, str):
            # TVM accepts a list of devices for heterogeneous execution; one
            # module runs on one device here.
            if len(device) != 1:
                raise RuntimeFailure(
                    f"GraphExecutor runs a module on one device, got {len(device)}"
                )
            device = device[0]
        if not isinstance(device, Device):
            raise RuntimeFailure(
                f"expected an ember device such as ember.cpu(0), got {device!r}"
            )
        if device.kind not in lib.device_kinds:
            kinds = ", ".join(lib.device_kinds)
            raise RuntimeFailure(
                f"a module built for target {lib.target!r} runs on {kinds}, not on {device}; "
                f"build it for a {device.kind} target or use ember.cpu(0)"
            )
        if not device.exist:
            raise RuntimeFailure(f"device {device} does not exist on this machine")
        return device

    # -- introspection ---------------------------------------------------

    @property
    def module(self) -> Module:
        return self._lib

    @property
    def device(self) -> Device:
        return self._device

    @property
    def input_names(self) -> list[str]:
        return list(self._input_order)

    @property
    def num_inputs(self) -> int:
        return len(self._input_order)

    @property
    def num_outputs(self) -> int:
        return len(self._lib.output_specs)

    def get_num_inputs(self) -> int:
        return self.num_inputs

    def get_num_outputs(self) -> int:
        return self.num_outputs

    def get_input_info(self) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
        """``(shapes, dtypes)`` by input name, as TVM returns them."""
        shapes = {name: spec.shape for name, spec in self._input_specs.items()}
        dtypes = {name: spec.dtype for name, spec in self._input_specs.items()}
        return shapes, dtypes

    # -- inputs ----------------------------------------------------------

    def _input_name(self, key: str | int) -> str:
        """Resolve a name or index to an input name, or explain what is valid."""
        if not isinstance(key, (str, int, np.integer)):
            raise RuntimeFailure(
                f"inputs are named by a string or an index, got {type(key).__name__}"
            )
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(self._input_order):
                raise RuntimeFailure(
                    f"input index {key} out of range: the module has {len(self._input_order)} inputs "
                    f"({self._valid_inputs()})"
                )
            return self._input_order[key]
        if key in self._input_specs:
            return key  # type: ignore[return-value]
        if key in self._lib.param_names:
            raise RuntimeFailure(
                f"{key!r} was bound as a constant by ember.build(..., params=...) and is no longer an "
                f"input; inputs: {self._valid_inputs()} (build without it in params to set it at run time)"
            )
        message = f"unknown input {key!r}; inputs of @{self._lib.entry_name}: {self._valid_inputs()}"
        close = difflib.get_close_matches(str(key), self._input_order, n=1)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        raise RuntimeFailure(message)

    def _valid_inputs(self) -> str:
        return (
            ", ".join(
                f"{spec.name}: {spec.describe()}" for spec in self._input_specs.values()
            )
            or "none"
        )

    def set_input(
        self, key: str | int | None = None, value: Any = None, **params: Any
    ) -> None:
        """Copy ``value`` into input ``key`` (a name or an index), and/or each of ``params``.

        Values: NDArrays, numpy arrays, DLPack objects, or lists (which take
        the input's dtype).  The shape and dtype must be the input's exactly.
        All names are checked before anything is copied.
        """
        updates: list[tuple[str, Any]] = []
        if key is not None:
            if value is None:
                raise RuntimeFailure(f"set_input({key!r}): no value given")
            updates.append((self._input_name(key), value))
        elif value is not None:
            raise RuntimeFailure("set_input: a value was given without an input name")
        updates.extend((self._input_name(name), params[name]) for name in params)
        staged = [(name, self._checked_value(name, value)) for name, value in updates]
        slots = self._slots
        for name, values in staged:
            np.copyto(slots.input_arrays[name], values)
            slots.unset.discard(name)

    def _checked_value(self, name: str, value: Any) -> np.ndarray:
        spec = self._input_specs[name]
        dtype = self._input_dtypes[name]
        # Lists and scalars take the input's dtype; typed sources must match it.
        values = (
            value
            if type(value) is np.ndarray  # the common case, checked below
            else as_host_array(value, f"set_input({name!r})", dtype=dtype)
        )
        if values.dtype != dtype or values.shape != spec.shape:
            raise RuntimeFailure(
                f"set_input({name!r}): expected {spec.describe()}, got "
                f"{values.dtype.name}{list(values.shape)}"
                + (
                    f"; convert it with .astype('{spec.dtype}')"
                    if values.dtype.name != spec.dtype
                    else ""
                )
            )
        return values

    def get_input(
        self, key: str | int, out: NDArray | np.ndarray | None = None
    ) -> NDArray | np.ndarray:
        """This thread's input slot ``key``, or ``out`` with a copy of it."""
        name = self._input_name(key)
        slot = self._slots.inputs[name]
        if out is None:
            return slot
        return _copy_into(out, slot, f"get_input({key!r}, out)", f"input {name!r}")

    def load_params(
        self, params: bytes | bytearray | memoryview | Mapping[str, Any]
    ) -> None:
        """Set inputs from a dict, or from bytes written by ``ember.runtime.save_params``."""
        if isinstance(params, (bytes, bytearray, memoryview)):
            params = _load_params_blob(params)
        if not isinstance(params, Mapping):
            raise RuntimeFailure(
                f"load_params expects bytes or a dict of name -> array, got {type(params).__name__}"
            )
        self.set_input(**params)

    # -- running ---------------------------------------------------------

    def run(self, **inputs: Any) -> None:
        """Run the module once; ``inputs`` are set first (as ``set_input(**inputs)``)."""
        if inputs:
            self.set_input(**inputs)
        self._run(None)

    def _run(self, bound: Callable[[], None] | None) -> None:
        """Run this thread's slots through ``bound`` (a ``Module.bind`` of
        them; ``None``: the plain one): the path whose cost is the
        per-inference overhead, so keep it short."""
        slots = self._slots
        if slots.unset:
            missing = [name for name in self._input_order if name in slots.unset]
            raise RuntimeFailure(
                f"run(): input(s) not set: {', '.join(missing)}; call set_input(name, array) first"
                + self._per_thread_hint()
            )
        if self._run_lock is None:
            (bound or slots.run)()
        else:
            with self._run_lock:
                (bound or slots.run)()
        slots.has_run = True

    def _per_thread_hint(self) -> str:
        if threading.get_ident() == self._creator:
            return ""
        return (
            f" (in this thread, {threading.current_thread().name}: each thread has "
            "its own inputs and outputs)"
        )

    def get_output(
        self, index: int, out: NDArray | np.ndarray | None = None
    ) -> NDArray | np.ndarray:
        """Output ``index`` of this thread's last run: the executor's output
        slot, or ``out`` (an NDArray or a numpy array of the output's shape
        and dtype) with a copy of it."""
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise RuntimeFailure(
                f"get_output: the index must be an integer, got {index!r}"
            )
        slots = self._slots
        if not 0 <= index < len(slots.outputs):
            raise RuntimeFailure(
                f"get_output({index}): index out of range, the module has {len(slots.outputs)} output(s)"
            )
        if not slots.has_run:
            raise RuntimeFailure(
                f"get_output({index}) before run(): set the inputs and call run() first"
                + self._per_thread_hint()
            )
        if out is None:
            return slots.outputs[index]
        return _copy_into(
            out, slots.outputs[index], f"get_output({index}, out)", f"output {index}"
        )

    def benchmark(
        self,
        device: Device | None = None,
        func_name: str = "run",
        *,
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: float | None = None,
        end_to_end: bool = False,
        **inputs: Any,
    ) -> BenchmarkResult:
        """Time ``run()``: ``repeat`` measurements, each the mean of ``number`` runs.

        TVM's signature: ``device`` (if given) must be the executor's device;
        ``min_repeat_ms`` raises ``number`` until one repeat lasts at least that
        long; ``end_to_end`` also times copying ``inputs`` in and every output
        out to numpy.  ``inputs`` are set before timing.  One untimed run
        warms up first.
        """
        if device is not None and device != self._device:
            raise RuntimeFailure(
                f"benchmark: this executor runs on {self._device}, not {device}"
            )
        if func_name != "run":
            raise RuntimeFailure(
                f"benchmark: only func_name='run' can be timed, got {func_name!r}"
            )
        repeat = _positive_int("repeat", repeat)
        number = _positive_int("number", number)
        if min_repeat_ms is not None and (
            isinstance(min_repeat_ms, bool)
            or not isinstance(min_repeat_ms, (int, float, np.integer, np.floating))
            or not 0 <= min_repeat_ms < math.inf
        ):
            raise RuntimeFailure(
                f"benchmark: min_repeat_ms must be a finite number of milliseconds >= 0 "
                f"or None, got {min_repeat_ms!r}"
            )
        if not isinstance(end_to_end, (bool, np.bool_)):
            raise RuntimeFailure(
                f"benchmark: end_to_end must be True or False, got {end_to_end!r}"
            )
        if end_to_end and not inputs:
            raise RuntimeFailure(
                "benchmark(end_to_end=True) needs the inputs to copy in, as keyword arguments"
            )
        if inputs:
            self.set_input(**inputs)

        def once() -> None:
            if end_to_end:
                self.set_input(**inputs)
            self.run()
            if end_to_end:
                for output in self._slots.outputs:
                    output.numpy()

        once()  # warm-up; also reports unset inputs before any timing
        if min_repeat_ms:
            number = self._calibrate(once, number, min_repeat_ms / 1e3)
        results = tuple(_time(once, number) for _ in range(repeat))
        return BenchmarkResult(results, number)

    @staticmethod
    def _calibrate(once: Any, number: int, min_seconds: float) -> int:
        """Grow ``number`` until ``number`` runs last at least ``min_seconds``.

        TVM's rule: jump to the estimate when one is available, but at least
        by the golden ratio, so a run that is slow at first cannot stall it.
        """
        while True:
            per_run = _time(once, number)
            if per_run * number >= min_seconds:
                return number
            estimate = math.ceil(min_seconds / per_run) if per_run > 0 else number * 10
            number = max(estimate, math.ceil(number * 1.618))

    def profile(self, repeat: int = 20, **inputs: Any) -> Profile:
        """Time every kernel of ``repeat`` runs (after one untimed warm-up):
        a :class:`~ember.runtime.profiler.Profile` with one row per kernel
        call (median time, share, GFLOP/s, % of this machine's peak) and the
        per-inference overhead outside kernels.

        The runs go through ``run()``'s own path into a copy of the native
        entry with a clock read before each kernel call (see
        :mod:`ember.lowering.program_to_llvm`); ``inputs`` are set first.
        Modules built for ``target="llvm"`` only.
        """
        from ember.runtime.profiler import profile_executor

        if inputs:
            self.set_input(**inputs)
        return profile_executor(self, _positive_int("repeat", repeat, "profile"))

    def __repr__(self) -> str:
        return f"<ember.GraphExecutor {self._lib!r} on {self._device}>"


GraphModule = GraphExecutor
"""TVM's name for the executor (``graph_executor.GraphModule``)."""


def _time(once: Callable[[], object], number: int) -> float:
    """Mean seconds per call over ``number`` back-to-back calls of ``once``."""
    start = time.perf_counter()
    for _ in range(number):
        once()
    return (time.perf_counter() - start) / number


def _positive_int(name: str, value: Any, where: str = "benchmark") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RuntimeFailure(
            f"{where}: {name} must be an integer >= 1, got {value!r}"
        )
    return int(value)


def _copy_into(
    out: Any, slot: NDArray, what: str, source: str
) -> NDArray | np.ndarray:
    """Copy ``slot`` into ``out`` (an NDArray or a writable numpy array of
    its shape and dtype) and return ``out``."""
    if not isinstance(out, (NDArray, np.ndarray)):
        raise RuntimeFailure(
            f"{what}: out must be an ember NDArray or a numpy array, got {type(out).__name__}"
        )
    values, target = np.asarray(slot), np.asarray(out)
    if target.shape != values.shape or target.dtype != values.dtype:
        raise RuntimeFailure(
            f"{what}: out is {target.dtype.name}{list(target.shape)} but {source} is "
            f"{values.dtype.name}{list(values.shape)}; pass an array of that shape and dtype"
        )
    if not target.flags.writeable:
        raise RuntimeFailure(f"{what}: out is a read-only numpy array")
    np.copyto(target, values)
    return out
