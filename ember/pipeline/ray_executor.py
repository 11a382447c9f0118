"""The pipeline executor on a Ray cluster: each stage a Ray actor.

The same caller-facing API as :class:`~ember.pipeline.PipelineExecutor`
(TVM's ``PipelineModule``: ``set_input`` / ``run`` / ``get_output``,
``submit``, ``map``, ``close``), with the stages on the nodes of a Ray
cluster instead of threads of this process::

    from ember.pipeline import RayPipelineExecutor

    placement = {"main_0": {"resources": {"node_a": 1}}, "main_1": {"num_cpus": 2}}
    with RayPipelineExecutor(lib, address="auto", placement=placement) as pipe:
        pipe.set_input("x", array)
        pipe.run()
        outputs = pipe.get_output(timeout=30)

Only this module imports Ray (``pip install "ember[distributed]"``); the
rest of ember never does.

How it runs
-----------
Each stage is one Ray actor placed by its :class:`RayPlacement`:
``num_cpus`` (1), ``num_gpus`` (1 for a stage on a CUDA device, else 0)
and custom ``resources`` (a resource that one node alone offers pins the
stage to that node).  The stage's module is exported in memory and its
files travel through Ray's object store as bytes; the actor writes them to
a private directory and loads them with
:func:`~ember.runtime.module.load_artifact`, which checks every file's
sha256 against the manifest and the manifest against the digest the
driver computed: a module damaged on the way does not load, and the error
names the stage.

For each input the driver submits one task per stage, chained by object
references: a stage's task takes the references of the earlier stages'
outputs, so tensors move from node to node through the object store
(numpy arrays are read there without a copy where Ray allows) and never
through the driver, except the global inputs (put once per input) and the
global outputs.  Ray runs the tasks of one actor in the order they were
submitted, so stage 0 works on input *n + 1* while stage 1 works on *n*.
A collector thread waits for each input's outputs in input order and hands
them to ``get_output`` or to the input's future.  At most
``max_in_flight`` inputs are submitted and not yet read, as in the thread
executor (``run`` raises :class:`PipelineFull`, or waits with ``timeout=``
or ``block=True``).

Faults
------
An exception inside a stage is that input's :class:`StageError` (naming
the stage, its device and the input), raised by ``get_output`` at that
input's turn; the pipeline goes on.  An actor that dies (its process
killed, its node lost) fails the tasks it held with a ``RayActorError``
naming the actor.  The collector then replaces the actor (same placement,
the module from the object store again), at most ``max_restarts`` times
per stage, and re-sends from that stage, to the new actor, every input
whose task there had not finished, with the later stages' tasks for it.
Stages are pure functions of their inputs, so a stage run twice changes
nothing, and the driver reads each input's outputs once and in order:
every input comes out exactly once.  When a stage's restarts are used up,
or its replacement finds no node within ``start_timeout`` seconds, the
pipeline stops: ``get_output``, ``run`` and every pending future raise a
:class:`StageError` naming the stage (results finished before are still
returned first).  Every wait is bounded or polls for that failure:
nothing hangs on a dead actor.

What it assumes: the Ray workers import the same ember as the driver
(a shared checkout, or the same installed package).  Extern functions
(``graph.call_extern``) registered in the driver are not registered in
the actors' processes: pass ``setup=`` a function that registers them;
it runs in every actor, before its module loads.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import ArtifactError, EmberError
from ember.pipeline.build import BuiltStage, PipelineError, PipelineLibrary, Source
from ember.pipeline.build import load_library as load_pipeline
from ember.pipeline.executor import (
    DEFAULT_MAX_IN_FLIGHT,
    PipelineClosedError,
    PipelineEmpty,
    PipelineTimeout,
    StageError,
    _deadline,
    pipeline_full,
    pipeline_timeout,
)
from ember.pipeline.inputs import PipelineInputs
from ember.runtime.artifact import ArtifactDir, is_plain_name
from ember.runtime.device import Device, cpu, device
from ember.runtime.module import MANIFEST_FILE, Module, load_artifact
from ember.runtime.ndarray import NDArray, as_host_array, as_ndarray, empty

try:
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError, RayError, RayTaskError
except ImportError as e:  # pragma: no cover - only without the extra installed
    raise PipelineError(
        f"the Ray pipeline executor needs Ray ({e}); install it with "
        "pip install 'ember[distributed]'"
    ) from None

__all__ = [
    "RayPipelineExecutor",
    "RayPlacement",
    "load_shipped_module",
    "ship_module",
]

DEFAULT_MAX_RESTARTS = 3
"""Times each stage's actor is replaced after dying before the pipeline stops."""

DEFAULT_START_TIMEOUT = 60.0
"""Seconds an actor may take to be placed and load its module."""

_POLL = 0.2
"""Seconds the collector waits on Ray before it looks at restarts and close()."""

_FETCH_TIMEOUT = 60.0
"""Seconds the driver waits for an actor's answer that is known to be ready."""


# --------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RayPlacement:
    """Where a stage's actor may run: the Ray resources it asks for.

    ``num_gpus=None`` asks for one GPU when the stage's device is CUDA and
    none otherwise; ``resources`` are custom resources (``{"node_a": 1}``).
    """

    num_cpus: float = 1.0
    num_gpus: float | None = None
    resources: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("num_cpus", "num_gpus"):
            value = getattr(self, name)
            if value is not None and not _is_amount(value):
                raise PipelineError(
                    f"RayPlacement: {name} must be a number >= 0, got {value!r}"
                )
        if not isinstance(self.resources, Mapping) or not all(
            isinstance(k, str) and k and _is_amount(v) for k, v in self.resources.items()
        ):
            raise PipelineError(
                "RayPlacement: resources must map resource names to numbers >= 0, "
                f"got {self.resources!r}"
            )

    def actor_options(self, stage: BuiltStage) -> dict[str, Any]:
        """Ray's ``.options()`` for ``stage``'s actor."""
        gpus = self.num_gpus
        if gpus is None:
            gpus = 1 if stage.device.kind == "cuda" else 0
        return {
            "num_cpus": self.num_cpus,
            "num_gpus": gpus,
            "resources": dict(self.resources),
        }


def _is_amount(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and value >= 0  # also rejects NaN
    )


def _placements(
    lib: PipelineLibrary, placement: Mapping[str, Any] | None
) -> list[RayPlacement]:
    """Each stage's placement, from ``placement`` by stage name (default: one CPU)."""
    given = dict(placement or {})
    names = [stage.name for stage in lib.stages]
    for name in given:
        if name not in names:
            message = f"placement names {name!r}, which is not a stage of pipeline @{lib.name} (stages: {', '.join(names)})"
            close = difflib.get_close_matches(str(name), names, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
            raise PipelineError(message)
    result = []
    for name in names:
        value = given.get(name, RayPlacement())
        if isinstance(value, Mapping):
            allowed = [f.name for f in fields(RayPlacement)]
            unknown = sorted(set(value) - set(allowed))
            if unknown:
                raise PipelineError(
                    f"placement of stage {name!r}: unknown setting(s) {', '.join(map(repr, unknown))}; "
                    f"a placement has {', '.join(allowed)}"
                )
            value = RayPlacement(**value)
        if not isinstance(value, RayPlacement):
            raise PipelineError(
                f"placement of stage {name!r}: expected a RayPlacement or a dict, got "
                f"{type(value).__name__}"
            )
        result.append(value)
    return result


# --------------------------------------------------------------------------
# Shipping a stage's module through the object store
# --------------------------------------------------------------------------


def ship_module(module: Module) -> tuple[dict[str, bytes], str]:
    """``module``'s artifact files (name -> bytes) and the sha256 of its manifest."""
    with tempfile.TemporaryDirectory(prefix="ember-ship-") as scratch:
        directory = Path(scratch) / "stage"
        module.export_library(directory)
        files = {path.name: path.read_bytes() for path in directory.iterdir()}
    digest = hashlib.sha256(files[MANIFEST_FILE]).hexdigest()
    return files, digest


def load_shipped_module(
    files: Mapping[str, bytes], manifest_sha256: str, directory: Path
) -> Module:
    """The module ``ship_module`` sent: its files written into the empty
    ``directory`` and loaded with every check of an artifact on disk, the
    manifest's digest included.  Every problem is an ``ArtifactError``."""
    if not isinstance(files, Mapping) or MANIFEST_FILE not in files:
        raise ArtifactError(
            f"the shipped module has no {MANIFEST_FILE}; it is not an exported ember module"
        )
    for name, data in files.items():
        if not is_plain_name(name) or not isinstance(data, bytes):
            raise ArtifactError(
                f"the shipped module holds {name!r}, which is not a plain file name with bytes"
            )
        (directory / name).write_bytes(data)
    return load_artifact(ArtifactDir(directory), manifest_sha256)


# --------------------------------------------------------------------------
# The actor (runs in a Ray worker process)
# --------------------------------------------------------------------------


class _StageRaised(Exception):
    """A stage's exception on one input, with the stage's name (picklable)."""

    def __init__(self, stage: str, cause: BaseException) -> None:
        super().__init__(stage, cause)
        self.stage = stage
        self.cause = cause


class _StageActor:
    """One stage in its own Ray worker: the shipped module, run on each input."""

    def __init__(
        self,
        stage: str,
        device_name: str,
        files: Mapping[str, bytes],
        manifest_sha256: str,
        setup: Callable[[], Any] | None,
    ) -> None:
        if setup is not None:
            setup()
        self._stage = stage
        dev = device(device_name)
        if dev.kind != "cpu" and ray.get_gpu_ids():
            # Ray leaves visible only the GPUs it gave this actor: ours is the first.
            dev = device(dev.kind, 0)
        self._memory: Device = cpu(0) if dev.kind == "cpu" else dev
        # Kept for the actor's life: a backend may read its files lazily.
        self._directory = tempfile.TemporaryDirectory(prefix="ember-stage-")
        self._module = load_shipped_module(
            files, manifest_sha256, Path(self._directory.name)
        )

    def node(self) -> str:
        """The id of the Ray node this actor runs on."""
        return ray.get_runtime_context().get_node_id()

    def run(self, index: int, *inputs: np.ndarray) -> Any:
        """The stage's outputs on ``inputs`` (one array, or a tuple of them)."""
        what = f"stage @{self._stage} on input #{index}"
        try:
            arrays = [self._on_device(as_ndarray(x, what)) for x in inputs]
            outputs = [
                empty(spec.shape, spec.dtype, self._memory)
                for spec in self._module.output_specs
            ]
            self._module.run(arrays, outputs)
            values = [
                as_host_array(out, what) if self._memory.kind == "cpu" else out.numpy()
                for out in outputs
            ]
        except Exception as e:  # noqa: BLE001 - reaches get_output as a StageError
            raise _StageRaised(self._stage, e) from None
        return values[0] if len(values) == 1 else tuple(values)

    def _on_device(self, value: NDArray) -> NDArray:
        if value.device.kind == self._memory.kind:
            return value
        return value.copyto(self._memory)


_RemoteStage = ray.remote(_StageActor)


# --------------------------------------------------------------------------
# The driver's side: actors, inputs in flight, the collector
# --------------------------------------------------------------------------


@dataclass(eq=False)
class _Slot:
    """A stage's current actor; ``generation`` counts its replacements."""

    stage: BuiltStage
    placement: RayPlacement
    files: Any  # the ObjectRef of the shipped files
    digest: str
    actor: Any = None
    generation: int = -1
    restarts: int = 0
    node: str | None = None
    ready: Any = None
    """The ``node()`` reference of an actor not yet known to be up."""
    deadline: float = 0.0

    def start(self, setup: Callable[[], Any] | None, timeout: float) -> None:
        """Create a new actor for the stage (the first, or a replacement)."""
        options = self.placement.actor_options(self.stage)
        self.actor = _RemoteStage.options(
            **options, max_restarts=0, max_task_retries=0
        ).remote(self.stage.name, str(self.stage.device), self.files, self.digest, setup)
        self.generation += 1
        self.node = None
        self.ready = self.actor.node.remote()
        self.deadline = time.monotonic() + timeout

    @property
    def actor_id(self) -> str:
        # What RayActorError.actor_id reports for this actor.
        return self.actor._actor_id.hex()

    def describe_placement(self) -> str:
        options = self.placement.actor_options(self.stage)
        return ", ".join(f"{k}={v}" for k, v in options.items())


@dataclass(eq=False)
class _Flight:
    """One input on the cluster: the object references of its values."""

    index: int
    inputs: dict[str, Any]
    """Global input name -> ObjectRef."""
    future: Future[list[NDArray]] | None
    outputs: list[list[Any]]
    """Per stage, the ObjectRefs of its outputs for this input."""
    generation: list[int]
    """Per stage, the generation of the actor its task went to."""
    resent: int = 0

    def ref(self, source: Source) -> Any:
        if source.stage is None:
            return self.inputs[str(source.key)]
        return self.outputs[source.stage][int(source.key)]


class _Cluster:
    """What the collector thread shares with the executor (and no reference
    to the executor, so that an executor dropped without close is collected)."""

    def __init__(
        self,
        lib: PipelineLibrary,
        slots: list[_Slot],
        setup: Callable[[], Any] | None,
        max_restarts: int,
        start_timeout: float,
    ) -> None:
        self.lib = lib
        self.slots = slots
        self.setup = setup
        self.max_restarts = max_restarts
        self.start_timeout = start_timeout
        self.cond = threading.Condition()
        # Guarded by cond:
        self.flights: dict[int, _Flight] = {}
        """Inputs submitted and not yet finished, in input order."""
        self.results: dict[int, list[NDArray] | StageError] = {}
        """Finished inputs submitted with run(), until get_output takes them."""
        self.unread = 0
        self.failure: PipelineError | None = None
        """What stopped the pipeline: a StageError naming the stage out of
        restarts, or the collector's own failure."""
        self.closed = False
        self.by_actor: dict[str, tuple[int, int]] = {}
        """Actor id -> (stage, generation), for every actor ever started."""
        self.thread = threading.Thread(
            target=self._collect, name=f"ember-ray-collector-{lib.name}", daemon=True
        )

    # -- submitting (callers hold cond) ----------------------------------------

    def send(self, flight: _Flight, first: int) -> None:
        """Submit ``flight``'s tasks from stage ``first`` on, to the current actors."""
        for s in range(first, len(self.slots)):
            slot = self.slots[s]
            args = [flight.ref(source) for source in slot.stage.sources]
            count = len(slot.stage.module.output_specs)
            refs = slot.actor.run.options(num_returns=count).remote(flight.index, *args)
            flight.outputs[s] = [refs] if count == 1 else list(refs)
            flight.generation[s] = slot.generation

    def start(self, slot: _Slot) -> None:
        slot.start(self.setup, self.start_timeout)
        self.by_actor[slot.actor_id] = (self.slots.index(slot), slot.generation)

    # -- the collector thread -----------------------------------------------

    def _collect(self) -> None:
        try:
            self._collect_in_order()
        except BaseException as e:  # noqa: BLE001 - readers must not wait for a dead thread
            self.fail(
                PipelineError(
                    f"pipeline @{self.lib.name}: the thread collecting outputs from Ray "
                    f"stopped: {type(e).__name__}: {e}"
                )
            )

    def _collect_in_order(self) -> None:
        while True:
            with self.cond:
                self.check_replacements()
                while not self.flights and not self.closed and self.failure is None:
                    self.cond.wait(_POLL)
                    self.check_replacements()
                if self.closed or self.failure is not None:
                    return
                flight = next(iter(self.flights.values()))
                refs = [flight.ref(source) for source in self.lib.outputs]
            try:
                values = ray.get(refs, timeout=_POLL)
            except GetTimeoutError:
                continue
            except RayError as err:
                with self.cond:
                    outcome = self._failed(flight, err)
                if outcome is not None:
                    self._deliver(flight, outcome)
                continue
            what = f"output of input #{flight.index}"
            self._deliver(flight, [as_ndarray(value, what) for value in values])

    def _deliver(self, flight: _Flight, outcome: list[NDArray] | StageError) -> None:
        with self.cond:
            if self.flights.pop(flight.index, None) is None:
                return  # dropped by close() or a failure meanwhile
            if flight.future is None:
                self.results[flight.index] = outcome
            else:
                self.unread -= 1
            self.cond.notify_all()
        if flight.future is None:
            return
        if isinstance(outcome, StageError):
            flight.future.set_exception(outcome)
        else:
            flight.future.set_result(outcome)

    def _failed(self, flight: _Flight, err: RayError) -> StageError | None:
        """What ``flight``'s failed outputs mean: its StageError, or None after
        its re-sending (or the pipeline's stop, which wakes every waiter)."""
        cause = getattr(err, "cause", None)
        if isinstance(err, RayTaskError) and isinstance(cause, _StageRaised):
            stage = next(s for s in self.lib.stages if s.name == cause.stage)
            return StageError(stage, flight.index, cause.cause)
        first = 0
        if isinstance(err, RayActorError) and err.actor_id in self.by_actor:
            first, generation = self.by_actor[err.actor_id]
            self._replace(first, generation, err, flight.index)
            if self.failure is not None:
                return None
        # Anything else (an object lost with its node): the whole input again.
        flight.resent += 1
        if flight.resent > (self.max_restarts + 1) * len(self.slots):
            return StageError(
                self.slots[first].stage,
                flight.index,
                EmberError(f"the input was re-sent {flight.resent - 1} times; {_reason(err)}"),
            )
        self.send(flight, first)
        return None

    def _replace(self, s: int, generation: int, err: RayError, index: int | None) -> None:
        """Stage ``s``'s actor of ``generation`` died: start its replacement
        (once per death) and re-send the inputs it had not finished."""
        slot = self.slots[s]
        if slot.generation != generation:
            return  # replaced already
        if slot.restarts >= self.max_restarts:
            self.fail(
                StageError(
                    slot.stage,
                    index,
                    EmberError(
                        f"its Ray actor died and its {self.max_restarts} restart(s) "
                        f"(max_restarts) are used up; {_reason(err)}"
                    ),
                )
            )
            return
        slot.restarts += 1
        # An actor only unreachable for now still holds its resources: free them.
        _kill(slot.actor)
        self.start(slot)
        stale = [f for f in self.flights.values() if f.generation[s] == generation]
        if not stale:
            return
        # Outputs the dead actor had finished are in the object store: keep them.
        refs = [f.outputs[s][0] for f in stale]
        finished, _ = ray.wait(
            refs, num_returns=len(refs), timeout=0, fetch_local=False
        )
        done = set(finished)
        for f in stale:
            if f.outputs[s][0] not in done:
                f.resent += 1
                self.send(f, s)

    def check_replacements(self) -> None:
        """Whether replaced actors came up: a crash is one more death; no node
        in time stops the pipeline.  Callers hold cond."""
        for s, slot in enumerate(self.slots):
            if slot.ready is None or self.failure is not None:
                continue
            up, _ = ray.wait([slot.ready], timeout=0, fetch_local=False)
            if up:
                try:
                    slot.node = ray.get(slot.ready, timeout=_FETCH_TIMEOUT)
                    slot.ready = None
                except RayError as err:
                    slot.ready = None
                    self._replace(s, slot.generation, err, None)
            elif time.monotonic() > slot.deadline:
                why = _not_placed(slot, self.start_timeout)
                self.fail(StageError(slot.stage, None, EmberError(f"its replacement {why}")))

    # -- stopping -------------------------------------------------------------

    def fail(self, error: PipelineError) -> None:
        """The pipeline stopped: every waiter, now and later, gets ``error``."""
        with self.cond:
            if self.failure is None:
                self.failure = error
            self._drop_all(self.failure)

    def _drop_all(self, error: PipelineError) -> None:
        """Forget every input in flight; their futures get ``error``, readers
        wake up (and raise the failure or closing).  Callers hold cond."""
        futures = [f.future for f in self.flights.values() if f.future is not None]
        self.flights.clear()
        self.unread -= len(futures)
        self.cond.notify_all()
        for future in futures:
            future.set_exception(error)

    def shutdown(self, timeout: float) -> None:
        """Stop the collector and the actors; pending inputs are dropped."""
        with self.cond:
            if self.closed:
                return
            self.closed = True
            self._drop_all(
                PipelineClosedError(
                    f"pipeline @{self.lib.name}: the executor was closed before this input finished"
                )
            )
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout)
        if not ray.is_initialized():
            return  # the cluster is gone, and its actors with it
        for slot in self.slots:
            if slot.actor is not None:
                _kill(slot.actor)


def _kill(actor: Any) -> None:
    try:
        ray.kill(actor, no_restart=True)
    except (RayError, ValueError):
        pass  # dead already


def _reason(err: BaseException) -> str:
    """The first line of a Ray error, which says what happened."""
    text = str(err).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    for line in lines:
        if "Error" in line and not line.lstrip().startswith("ray::"):
            return line.strip()
    return lines[0].strip() if lines else type(err).__name__


def _not_placed(slot: _Slot, timeout: float) -> str:
    """Why ``slot``'s actor did not start in time: no node of the cluster
    offers its resources at all, or none has them free."""
    where = f"actor did not start within {timeout} s"
    if not _offered(slot):
        nodes = "; ".join(_describe(node["Resources"]) for node in _alive_nodes())
        return (
            f"{where}: no node of the cluster offers {slot.describe_placement()} "
            f"(nodes offer: {nodes or 'nothing'})"
        )
    return (
        f"{where}: no node has {slot.describe_placement()} free (free now: "
        f"{_describe(ray.available_resources())})"
    )


def _alive_nodes() -> list[dict[str, Any]]:
    return [node for node in ray.nodes() if node.get("Alive")]


def _offered(slot: _Slot) -> bool:
    """Whether some node of the cluster has (in total) what ``slot`` asks for."""
    options = slot.placement.actor_options(slot.stage)
    wanted = {"CPU": options["num_cpus"], "GPU": options["num_gpus"], **options["resources"]}
    return any(
        all(node["Resources"].get(name, 0) >= amount for name, amount in wanted.items() if amount)
        for node in _alive_nodes()
    )


def _describe(resources: Mapping[str, float]) -> str:
    """CPUs, GPUs and custom resources (not memory or Ray's node markers)."""
    shown = [
        f"{name}={amount:g}"
        for name, amount in sorted(resources.items())
        if not name.startswith(("node:", "memory", "object_store_memory"))
    ]
    return ", ".join(shown) or "nothing"


# --------------------------------------------------------------------------
# The executor
# --------------------------------------------------------------------------


class RayPipelineExecutor(PipelineInputs):
    """Runs a built pipeline with each stage a Ray actor (see the module docstring).

    ``library``: what ``ember.pipeline.build`` or ``load_library`` returns.
    ``address``: the Ray cluster to join (``"auto"``, ``"ray://host:port"``,
    ``"127.0.0.1:6379"``) when this process is not connected yet; None
    starts a local Ray.  ``placement``: stage name -> :class:`RayPlacement`
    (or a dict of its fields).  ``max_restarts``: replacements per stage
    after its actor dies.  ``setup``: a picklable function run in every
    actor before its module loads (register extern functions there).
    ``start_timeout``: seconds an actor may take to be placed and load.
    """

    def __init__(
        self,
        library: PipelineLibrary,
        *,
        address: str | None = None,
        placement: Mapping[str, RayPlacement | Mapping[str, Any]] | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        setup: Callable[[], Any] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
    ) -> None:
        if not isinstance(library, PipelineLibrary):
            raise PipelineError(
                "RayPipelineExecutor expects what ember.pipeline.build or load_library "
                f"returns, got {type(library).__name__}"
            )
        for name, value, least in (
            ("max_in_flight", max_in_flight, 1),
            ("max_restarts", max_restarts, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise PipelineError(
                    f"{name} must be an integer >= {least}, got {value!r}"
                )
        if setup is not None and not callable(setup):
            raise PipelineError(f"setup must be callable, got {setup!r}")
        _deadline(start_timeout, "RayPipelineExecutor(start_timeout=...)")
        placements = _placements(library, placement)
        self._lib = library
        self._input_specs = {spec.name: spec for spec in library.inputs}
        self._staged: dict[str, NDArray] = {}
        self._max_in_flight = max_in_flight
        self._next_in = 0
        self._reads: deque[int] = deque()
        self._peak_in_flight = 0
        _connect(address)
        slots = []
        for stage, where in zip(library.stages, placements):
            files, digest = ship_module(stage.module)
            slots.append(_Slot(stage, where, ray.put(files), digest))
        self._cluster = _Cluster(library, slots, setup, max_restarts, start_timeout)
        self._finalizer = weakref.finalize(self, _shutdown_quietly, self._cluster)
        try:
            _start_all(self._cluster)
        except BaseException:
            self.close()
            raise
        self._cluster.thread.start()

    @classmethod
    def load_library(
        cls, path: str | os.PathLike[str], **options: Any
    ) -> RayPipelineExecutor:
        """Load a pipeline exported with ``export_library`` and run it on Ray."""
        return cls(load_pipeline(path), **options)

    # -- introspection -------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Inputs submitted and not yet returned by ``get_output`` (or their future)."""
        return self._cluster.unread

    @property
    def stage_nodes(self) -> dict[str, str | None]:
        """The Ray node id each stage's current actor runs on (None while it starts)."""
        with self._cluster.cond:
            self._cluster.check_replacements()
            return {slot.stage.name: slot.node for slot in self._cluster.slots}

    @property
    def restarts(self) -> dict[str, int]:
        """How many times each stage's actor was replaced after dying."""
        with self._cluster.cond:
            return {slot.stage.name: slot.restarts for slot in self._cluster.slots}

    def stage_actor(self, name: str) -> Any:
        """The Ray actor handle now running stage ``name`` (to inspect or kill it)."""
        with self._cluster.cond:
            for slot in self._cluster.slots:
                if slot.stage.name == name:
                    return slot.actor
        raise PipelineError(
            f"pipeline @{self._lib.name} has no stage {name!r} "
            f"(stages: {', '.join(s.name for s in self._lib.stages)})"
        )

    @property
    def closed(self) -> bool:
        return self._cluster.closed

    # -- running -------------------------------------------------------------

    def run(
        self, sync: bool = False, timeout: float | None = None, *, block: bool = False
    ) -> int:
        """Submit the inputs set so far; return this input's index.

        As ``PipelineExecutor.run``: when ``max_in_flight`` inputs are
        unread, raise :class:`PipelineFull` (no ``timeout``), wait ``timeout``
        seconds for another thread's ``get_output`` (then
        :class:`PipelineTimeout`), or wait as long as it takes
        (``block=True``).  ``sync=True`` returns once this input's outputs
        are ready; ``get_output`` returns them, in input order.
        """
        self._check_open("run()")
        missing = [name for name in self._input_specs if name not in self._staged]
        if missing:
            raise PipelineError(
                f"run(): input(s) not set: {', '.join(missing)}; call set_input(name, array) first"
            )
        index = self._enqueue(dict(self._staged), "run()", timeout, block=block)
        if sync:
            cluster = self._cluster
            with cluster.cond:
                while index not in cluster.results and index in cluster.flights:
                    cluster.cond.wait(_POLL)
        return index

    def submit(
        self,
        inputs: Any = None,
        /,
        *,
        timeout: float | None = None,
        block: bool = False,
        **named: Any,
    ) -> Future[list[NDArray]]:
        """Submit one input; return a :class:`~concurrent.futures.Future` of its
        outputs (as ``PipelineExecutor.submit``; ``get_output`` does not return it)."""
        self._check_open("submit()")
        staged = self._with_inputs(inputs, named, "submit()")
        future: Future[list[NDArray]] = Future()
        future.set_running_or_notify_cancel()
        self._enqueue(staged, "submit()", timeout, block=block, future=future)
        return future

    def map(
        self, inputs: Iterable[Any], *, window: int | None = None
    ) -> Iterator[list[NDArray]]:
        """Stream ``inputs`` through; yield each one's outputs, in order, with at
        most ``window`` in flight (default: eight per stage, at most
        ``max_in_flight``).  Elements are what ``submit`` takes.  ``map`` needs
        the executor to itself: no ``run()`` input pending."""
        default = 8 * len(self._lib.stages)
        return self._stream(iter(inputs), self._map_window(window, default))

    def _stream(self, inputs: Iterator[Any], window: int) -> Iterator[list[NDArray]]:
        pending = 0
        try:
            for one in inputs:
                self._enqueue(self._with_inputs(one, {}, "map()"), "map()", None)
                pending += 1
                if pending == window:
                    pending -= 1
                    yield self.get_output(block=True)
            while pending:
                pending -= 1
                yield self.get_output(block=True)
        finally:
            # Left early: read what is still in flight, so that the next
            # get_output does not return it.
            while pending and not self.closed and self._cluster.failure is None:
                pending -= 1
                try:
                    self.get_output(block=True)
                except StageError:
                    pass

    def _enqueue(
        self,
        staged: Mapping[str, NDArray],
        what: str,
        timeout: float | None,
        *,
        block: bool = False,
        future: Future[list[NDArray]] | None = None,
    ) -> int:
        """Take room, put the global inputs in the object store, submit the tasks."""
        deadline = _deadline(timeout, what)
        inputs = {name: ray.put(as_host_array(value, what)) for name, value in staged.items()}
        cluster = self._cluster
        with cluster.cond:
            while cluster.unread >= self._max_in_flight:
                self._check_open(what)
                waiting_futures = any(f.future is not None for f in cluster.flights.values())
                if deadline is None and not block and not waiting_futures:
                    raise pipeline_full(what, cluster.unread, self._max_in_flight)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise pipeline_timeout(what, cluster.unread, self._max_in_flight, timeout)
                cluster.cond.wait(_POLL if remaining is None else min(remaining, _POLL))
            self._check_open(what)
            stages = len(cluster.slots)
            flight = _Flight(
                self._next_in, inputs, future, [[] for _ in range(stages)], [0] * stages
            )
            cluster.send(flight, 0)
            cluster.flights[flight.index] = flight
            if future is None:
                self._reads.append(flight.index)
            cluster.unread += 1
            self._next_in += 1
            self._peak_in_flight = max(self._peak_in_flight, cluster.unread)
            cluster.cond.notify_all()
        return flight.index

    def get_output(
        self, timeout: float | None = None, *, block: bool = False
    ) -> list[NDArray]:
        """The outputs of the next input, in input order; blocks until it is done.

        As ``PipelineExecutor.get_output``: :class:`StageError` if a stage
        failed on that input or the pipeline stopped (a stage out of
        restarts), :class:`PipelineTimeout` after ``timeout`` seconds,
        :class:`PipelineEmpty` at once with nothing pending and no
        ``timeout`` or ``block``.  Outputs are read-only where Ray shares
        them from its object store.
        """
        what = "get_output()"
        deadline = _deadline(timeout, what)
        cluster = self._cluster
        with cluster.cond:
            if cluster.closed:
                self._check_open(what)
            if not self._reads and deadline is None and not block:
                raise PipelineEmpty(
                    f"{what}: no input is pending; call set_input() and run() first "
                    "(or pass timeout= or block=True when another thread submits)"
                )
            while not (self._reads and self._reads[0] in cluster.results):
                self._check_open(what)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    index = self._reads[0] if self._reads else self._next_in
                    raise PipelineTimeout(
                        f"{what}: no result for input #{index} within {timeout} s; it "
                        f"is still in the pipeline on the Ray cluster"
                    )
                cluster.cond.wait(_POLL if remaining is None else min(remaining, _POLL))
            outcome = cluster.results.pop(self._reads.popleft())
            cluster.unread -= 1
            cluster.cond.notify_all()
        if isinstance(outcome, StageError):
            raise outcome
        return outcome

    # -- shutting down -------------------------------------------------------

    def close(self, timeout: float = 5.0) -> None:
        """Stop the collector and kill the stage actors; pending inputs are
        dropped (their futures get :class:`PipelineClosedError`).  The Ray
        connection stays open.  Closing twice is harmless."""
        self._finalizer.detach()
        self._cluster.shutdown(timeout)

    def _check_open(self, what: str) -> None:
        if self._cluster.failure is not None:
            raise self._cluster.failure
        if self._cluster.closed:
            raise PipelineClosedError(
                f"pipeline @{self._lib.name}: the executor is closed; create a new one"
            )

    def __repr__(self) -> str:
        stages = ", ".join(f"{s.name}@{s.device}" for s in self._lib.stages)
        state = "closed" if self.closed else f"{self.in_flight} in flight"
        return f"<ember.RayPipelineExecutor @{self._lib.name} [{stages}] {state}>"


def _connect(address: str | None) -> None:
    if ray.is_initialized():
        return
    try:
        ray.init(address=address)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = "a new local Ray" if address is None else f"the Ray cluster at {address}"
        raise PipelineError(f"cannot connect to {where}: {e}") from None


def _start_all(cluster: _Cluster) -> None:
    """Start every stage's actor and wait until each has loaded its module."""
    with cluster.cond:
        for slot in cluster.slots:
            cluster.start(slot)
    pending = {slot.ready: slot for slot in cluster.slots}
    deadline = time.monotonic() + cluster.start_timeout
    while pending:
        remaining = deadline - time.monotonic()
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=max(remaining, 0))
        if not ready:
            # Name a stage no node can ever take before one that waits its turn.
            slot = min(pending.values(), key=_offered)
            raise PipelineError(
                f"{slot.stage.describe()}: its Ray {_not_placed(slot, cluster.start_timeout)}"
            )
        slot = pending.pop(ready[0])
        try:
            slot.node = ray.get(ready[0], timeout=_FETCH_TIMEOUT)
        except RayError as err:
            raise PipelineError(
                f"{slot.stage.describe()}: its Ray actor failed to start: {_reason(err)}"
            ) from None
        slot.ready = None


def _shutdown_quietly(cluster: _Cluster) -> None:
    """The finalizer of an executor dropped without ``close()``."""
    try:
        cluster.shutdown(1.0)
    except Exception:  # noqa: BLE001 - at exit Ray may be half gone
        pass
