"""``ember.pipeline.build``: compile every stage of a pipeline; export and load it.

TVM's ``pipeline_executor_build.build(pipe_config)`` and the factory module's
``export_library`` / ``PipelineModule.load_library`` (seed 000), over the
pipeline dialect:

    lib = ember.pipeline.build(cfg_or_module, params=params)
    path = lib.export_library(directory)          # returns .../pipeline.json
    lib = ember.pipeline.load_library(path)       # in any process

What it takes
-------------
A :class:`~ember.pipeline.PipelineConfig`, or a module holding a
``pipeline.graph @entry`` and its stage functions (what ``split-graph`` or
``cfg.to_module()`` produce), or that module's text.  Each
``pipeline.stage`` is built on its own for its target with ``ember.build``
(or with the stage's ``build_func``, called as ``build_func(stage_module,
target, dev)`` and returning an ember ``Module``; params are already bound
into its IR then).  A stage module holds a copy of the stage function,
named ``@main`` so that ``ember.build(stage_module, target)`` finds it, and
the symbols it refers to; arguments whose
names clash (two crossing values both named ``data_n``) are renamed
``data_n.1``, … so that every stage input has a name of its own.

``params`` are as for ``ember.build``: argument name -> array, where the
arguments are the pipeline's global inputs.  A param is bound, as a
constant, into every stage input that global input feeds — under that
stage argument's own name — and the global input stops being an input of
the built pipeline.  Shapes and dtypes are checked here, naming the input.

The artifact
------------
``export_library(directory)`` writes::

    directory/
      pipeline.json     format, version, global inputs and outputs, and per
                        stage: target, device, connections, the sha256 of its
                        artifact's manifest
      main_0/           each stage: an ember module artifact (manifest.json
      main_1/           with checksums, params.npz, payload), the format of
                        ``Module.export_library``, reused as it is

All paths inside are relative, so the directory can be moved or copied.
Loading checks the pipeline config, every stage's manifest checksum, every
stage's own files (``ember.load_module``), and that every connection joins
values of the same shape and dtype: a damaged artifact fails with an
:class:`~ember.runtime.module.ArtifactError` that names what is wrong.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import SymbolTable

from ember.dialects.graph import numpy_dtype
from ember.dialects.pipeline import GraphOp, StageOp, function_input_names
from ember.errors import EmberError, RuntimeFailure
from ember.ir import parse, used_symbols, verify_module
from ember.pipeline.config import PipelineConfig
from ember.runtime.device import Device, device

# The module artifact's "JSON for people" layout (each tensor entry on one
# line), so that pipeline.json reads like the stage manifests next to it.
from ember.runtime.artifact import (
    NAME,
    NATURAL,
    SHA256,
    STRING,
    TENSOR,
    ArtifactDir,
    OneOf,
    check_schema,
    check_seal,
    seal,
)
from ember.runtime.module import (
    MANIFEST_FILE,
    ArtifactError,
    Module,
    TensorSpec,
    check_format_version,
    format_json,
    load_artifact,
)
from ember.runtime.ndarray import as_host_array

__all__ = [
    "CONFIG_FILE",
    "BuiltStage",
    "PipelineError",
    "PipelineLibrary",
    "Source",
    "build",
    "load_library",
]

CONFIG_FILE = "pipeline.json"
FORMAT_NAME = "ember-pipeline"
FORMAT_VERSION = 2

STAGE_ENTRY = "main"
"""The name of the stage function inside a stage module (see :func:`stage_module_of`)."""

# A stage's artifact directory is its name when that is a safe file name.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class PipelineError(RuntimeFailure):
    """A pipeline could not be built, or was used wrongly at run time."""


# --------------------------------------------------------------------------
# What a built pipeline is
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a value comes from: global input ``key`` (``stage`` is None) or
    output ``key`` of stage number ``stage``."""

    stage: int | None
    key: str | int

    def describe(self, stages: Sequence[BuiltStage]) -> str:
        if self.stage is None:
            return f'global input "{self.key}"'
        return f"@{stages[self.stage].name} output {self.key}"

    def to_json(self, stages: Sequence[BuiltStage]) -> dict[str, Any]:
        if self.stage is None:
            return {"input": self.key}
        return {"stage": stages[self.stage].name, "output": self.key}


@dataclass(frozen=True)
class BuiltStage:
    """One compiled stage: its module, placement, and where its inputs come from.

    ``sources[i]`` feeds ``module.input_specs[i]`` (the free inputs; params
    bound at build time are inside the module).
    """

    name: str
    target: str
    device: Device
    module: Module
    sources: tuple[Source, ...]

    def describe(self) -> str:
        return f"stage @{self.name} ({self.target} on {self.device})"


@dataclass(frozen=True)
class PipelineLibrary:
    """A built pipeline (TVM's ``PipelineExecutorFactoryModule``).

    ``inputs``: the global inputs a run takes (params excluded), by name;
    ``params``: names of the global inputs bound at build time;
    ``stages``: in execution order; ``outputs``: what each global output is.
    Run it with ``ember.pipeline.PipelineModule(lib)``.
    """

    name: str
    inputs: tuple[TensorSpec, ...]
    params: tuple[str, ...]
    stages: tuple[BuiltStage, ...]
    outputs: tuple[Source, ...]

    def __post_init__(self) -> None:
        problem = connection_problem(self)
        if problem is not None:
            raise PipelineError(f"pipeline @{self.name}: {problem}")

    @property
    def output_specs(self) -> tuple[TensorSpec, ...]:
        return tuple(
            _source_spec(self, source, f"output{i}")
            for i, source in enumerate(self.outputs)
        )

    def export_library(self, directory: str | os.PathLike[str]) -> str:
        """Write the pipeline into ``directory``; return the config file's path.

        ``directory`` may be new, empty, or hold an earlier pipeline export
        (which is replaced); anything else is refused.
        """
        return str(write_pipeline(self, Path(directory)))

    def __str__(self) -> str:
        lines = [f"pipeline @{self.name}", "Inputs"]
        lines += [f"  |{spec.name}: {spec.describe()}" for spec in self.inputs]
        if self.params:
            lines.append(f"  (bound at build time: {', '.join(self.params)})")
        lines.append("Outputs")
        lines += [
            f"  |output({i}): {source.describe(self.stages)}"
            for i, source in enumerate(self.outputs)
        ]
        lines.append("Stages")
        for stage in self.stages:
            fed = ", ".join(
                f"{spec.name} <- {source.describe(self.stages)}"
                for spec, source in zip(stage.module.input_specs, stage.sources)
            )
            lines.append(
                f"  |{stage.name}: target={stage.target}, dev={stage.device}; {fed}"
            )
        return "\n".join(lines)


def _source_spec(lib: PipelineLibrary, source: Source, name: str) -> TensorSpec:
    if source.stage is None:
        spec = next(s for s in lib.inputs if s.name == source.key)
    else:
        assert isinstance(source.key, int)
        spec = lib.stages[source.stage].module.output_specs[source.key]
    return TensorSpec(name, spec.shape, spec.dtype)


def connection_problem(lib: PipelineLibrary) -> str | None:
    """What is wrong with the connections of ``lib``, or None.

    Every source must exist and come before its consumer, and join values of
    the same shape and dtype.  Checked on every build and every load.
    """
    inputs = {spec.name: spec for spec in lib.inputs}
    for s, stage in enumerate(lib.stages):
        specs = stage.module.input_specs
        if len(specs) != len(stage.sources):
            return (
                f"{stage.describe()} takes {len(specs)} inputs but {len(stage.sources)} "
                "are connected"
            )
        for spec, source in zip(specs, stage.sources):
            problem = _source_problem(lib, inputs, source, before=s)
            if problem is not None:
                return f"{stage.describe()} input {spec.name!r}: {problem}"
            given = _source_spec(lib, source, spec.name)
            if (given.shape, given.dtype) != (spec.shape, spec.dtype):
                return (
                    f"{stage.describe()} input {spec.name!r} is {spec.describe()} but "
                    f"{source.describe(lib.stages)} gives {given.describe()}"
                )
    if not lib.outputs:
        return "the pipeline has no global output"
    for i, source in enumerate(lib.outputs):
        if source.stage is None:
            return (
                f"global output {i} comes from a global input; only stage outputs may"
            )
        problem = _source_problem(lib, inputs, source, before=len(lib.stages))
        if problem is not None:
            return f"global output {i}: {problem}"
    return None


def _source_problem(
    lib: PipelineLibrary, inputs: Mapping[str, TensorSpec], source: Source, before: int
) -> str | None:
    if source.stage is None:
        return None if source.key in inputs else f"no global input {source.key!r}"
    if not 0 <= source.stage < before:
        return f"stage number {source.stage} is not an earlier stage"
    outputs = lib.stages[source.stage].module.output_specs
    if not isinstance(source.key, int) or not 0 <= source.key < len(outputs):
        return f"@{lib.stages[source.stage].name} has no output {source.key!r}"
    return None


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------

BuildFunc = Callable[[ModuleOp, str, Device], Module]


def build(
    cfg_or_module: PipelineConfig | ModuleOp | str,
    params: Mapping[str, Any] | None = None,
    *,
    entry: str = "main",
) -> PipelineLibrary:
    """Build every stage of a pipeline for its target (see the module docstring).

    ``cfg_or_module``: a ``PipelineConfig``, or a module (or IR text) with
    ``pipeline.graph @entry``.  ``params``: global input name -> array, bound
    as constants.  Raises :class:`PipelineError` naming the stage for a stage
    that cannot be built, and for unknown or ill-typed params; the config's
    own mistakes are ``PipelineConfigError`` s from ``cfg.to_module()``.
    """
    module, build_funcs = _pipeline_module(cfg_or_module, entry)
    graph = _find_graph(module, entry)
    global_names = function_input_names(graph)
    global_specs = [
        _spec(name, t, f'global input "{name}" of @{entry}')
        for name, t in zip(global_names, graph.function_type.inputs.data)
    ]
    bound = _checked_params(params, global_specs, entry)
    sources: dict[SSAValue, Source] = {
        arg: Source(None, name) for arg, name in zip(graph.args, global_names)
    }
    stages: list[BuiltStage] = []
    for index, stage_op in enumerate(graph.stages):
        # A function may be called by two stages; stage names stay unique.
        taken = {stage.name for stage in stages}
        name, k = stage_op.callee_name, 0
        while name in taken:
            k += 1
            name = f"{stage_op.callee_name}.{k}"
        stage = _build_stage(module, stage_op, name, sources, bound, build_funcs)
        stages.append(stage)
        sources.update(
            (value, Source(index, i)) for i, value in enumerate(stage_op.outputs)
        )
    assert graph.yield_op is not None  # verified
    return PipelineLibrary(
        name=entry,
        inputs=tuple(spec for spec in global_specs if spec.name not in bound),
        params=tuple(name for name in global_names if name in bound),
        stages=tuple(stages),
        outputs=tuple(sources[value] for value in graph.yield_op.values),
    )


def _pipeline_module(
    cfg_or_module: PipelineConfig | ModuleOp | str, entry: str
) -> tuple[ModuleOp, dict[str, BuildFunc]]:
    """The pipeline as verified IR, and each stage's build_func by stage name."""
    if isinstance(cfg_or_module, PipelineConfig):
        funcs = {
            stage.name: stage.build_func
            for stage in cfg_or_module.stages
            if stage.build_func is not None
        }
        return cfg_or_module.to_module(entry), funcs
    if isinstance(cfg_or_module, str):
        return parse(cfg_or_module), {}
    if isinstance(cfg_or_module, ModuleOp):
        verify_module(cfg_or_module)
        return cfg_or_module, {}
    raise PipelineError(
        "ember.pipeline.build expects a PipelineConfig, a module with a pipeline.graph, "
        f"or its IR text; got {type(cfg_or_module).__name__}"
    )


def _find_graph(module: ModuleOp, entry: str) -> GraphOp:
    graphs = {op.graph_name: op for op in module.ops if isinstance(op, GraphOp)}
    if entry not in graphs:
        known = ", ".join(f"@{name}" for name in graphs) or "none"
        raise PipelineError(
            f"no pipeline.graph @{entry} in the module (pipelines: {known}); split a "
            "function with ember.pipeline.split_graph or build one with PipelineConfig"
        )
    return graphs[entry]


def _spec(name: str, t: Attribute, what: str) -> TensorSpec:
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        raise PipelineError(f"{what} has type {t}; pipelines take static tensors")
    try:
        dtype = numpy_dtype(t.element_type)
    except ValueError as e:
        raise PipelineError(f"{what}: {e}") from None
    return TensorSpec(name, tuple(t.get_shape()), dtype.name)


def _checked_params(
    params: Mapping[str, Any] | None, specs: Sequence[TensorSpec], entry: str
) -> dict[str, np.ndarray]:
    """Read-only copies of ``params``, each checked against its global input."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise PipelineError(
            f"params must be a dict of global input name -> array, got {type(params).__name__}"
        )
    by_name = {spec.name: spec for spec in specs}
    bound: dict[str, np.ndarray] = {}
    for name, value in params.items():
        spec = by_name.get(name) if isinstance(name, str) else None
        if spec is None:
            names = list(by_name)
            close = difflib.get_close_matches(str(name), names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise PipelineError(
                f"params has {name!r}, but pipeline @{entry} has no global input of that "
                f"name{hint} (global inputs: {', '.join(names) or 'none'})"
            )
        what = f'param {name!r} (global input "{name}" of pipeline @{entry})'
        values = as_host_array(value, what, dtype=np.dtype(spec.dtype))
        if values.shape != spec.shape or values.dtype.name != spec.dtype:
            raise PipelineError(
                f"{what} must be {spec.describe()}, got {values.dtype.name}{list(values.shape)}"
            )
        bound[name] = np.array(values, order="C", copy=True)
    return bound


def _build_stage(
    module: ModuleOp,
    stage_op: StageOp,
    stage_name: str,
    sources: Mapping[SSAValue, Source],
    bound: Mapping[str, np.ndarray],
    build_funcs: Mapping[str, BuildFunc],
) -> BuiltStage:
    name, target = stage_op.callee_name, stage_op.target.data
    where = f"stage @{stage_name} ({target} on {stage_op.device.data})"
    try:
        dev = device(stage_op.device.data)
    except RuntimeFailure as e:
        raise PipelineError(f"{where}: {e}") from None
    stage_module, entry, arg_names = stage_module_of(module, name)
    stage_params: dict[str, np.ndarray] = {}
    free: list[Source] = []
    for arg_name, value in zip(arg_names, stage_op.inputs):
        source = sources[value]
        if source.stage is None and source.key in bound:
            stage_params[arg_name] = bound[str(source.key)]
        else:
            free.append(source)
    compiled = _compile(
        stage_module, entry, target, dev, stage_params, build_funcs.get(name), where
    )
    if dev.kind not in compiled.device_kinds:
        raise PipelineError(
            f"{where}: a module built for target {compiled.target!r} runs on "
            f"{', '.join(compiled.device_kinds)} devices, not on {dev}"
        )
    _check_built_signature(compiled, stage_op, len(free), where)
    return BuiltStage(stage_name, target, dev, compiled, tuple(free))


def _compile(
    stage_module: ModuleOp,
    entry: str,
    target: str,
    dev: Device,
    params: dict[str, np.ndarray],
    build_func: BuildFunc | None,
    where: str,
) -> Module:
    from ember.build import build as ember_build

    try:
        if build_func is None:
            return ember_build(stage_module, target, params=params, entry=entry)
        if params:
            from ember.passes.bind_params import bind_params_in_place

            bind_params_in_place(stage_module, params, entry)
        compiled = build_func(stage_module, target, dev)
    except EmberError as e:
        raise PipelineError(f"{where}: {e}") from e
    if not isinstance(compiled, Module):
        raise PipelineError(
            f"{where}: build_func returned {type(compiled).__name__}; it must return an "
            "ember Module (what ember.build returns)"
        )
    return compiled


def _check_built_signature(
    compiled: Module, stage_op: StageOp, n_free: int, where: str
) -> None:
    """A custom build_func must keep the stage's interface."""
    if len(compiled.input_specs) != n_free:
        raise PipelineError(
            f"{where}: the built module takes {len(compiled.input_specs)} inputs, but "
            f"{n_free} are connected (params excluded)"
        )
    declared = [
        _spec(f"output{i}", r.type, where) for i, r in enumerate(stage_op.outputs)
    ]
    got = [(s.shape, s.dtype) for s in compiled.output_specs]
    if got != [(s.shape, s.dtype) for s in declared]:
        raise PipelineError(
            f"{where}: the built module returns "
            f"({', '.join(s.describe() for s in compiled.output_specs)}) but the stage "
            f"declares ({', '.join(s.describe() for s in declared)})"
        )


def stage_module_of(module: ModuleOp, name: str) -> tuple[ModuleOp, str, list[str]]:
    """A new module with function ``@name`` — renamed ``@main``, the default
    entry of ``ember.build``, unless a symbol it uses has that name — and
    every symbol it refers to.

    Returns the module, the stage function's name in it, and its argument
    names: each gets a name of its own (the printer's ``%x``, ``%x_1`` become
    ``x``, ``x.1``: a hint cannot end in ``_<digits>``).
    """
    func = SymbolTable.lookup_symbol(module, name)
    if not isinstance(func, FuncOp):
        raise PipelineError(f"stage @{name}: no func.func @{name} in the module")
    copies: dict[str, Operation] = {name: func.clone()}
    for symbol, found in used_symbols(func, module):
        copies.setdefault(symbol, found.clone())
    stage_func = copies[name]
    assert isinstance(stage_func, FuncOp)
    if STAGE_ENTRY not in copies:
        stage_func.sym_name = StringAttr(STAGE_ENTRY)
    names = _unique_names(stage_func)
    for arg, arg_name in zip(stage_func.args, names):
        arg.name_hint = arg_name
    return ModuleOp(list(copies.values())), stage_func.sym_name.data, names


def _unique_names(func: FuncOp) -> list[str]:
    names: list[str] = []
    for i, arg in enumerate(func.args):
        base = arg.name_hint or f"arg{i}"
        candidate, k = base, 0
        while candidate in names:
            k += 1
            candidate = f"{base}.{k}"
        names.append(candidate)
    return names


# --------------------------------------------------------------------------
# The artifact: writing
# --------------------------------------------------------------------------


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _artifact_names(stages: Sequence[BuiltStage]) -> list[str]:
    names: list[str] = []
    for i, stage in enumerate(stages):
        name = stage.name if _SAFE_NAME.fullmatch(stage.name) else f"stage{i}"
        if name in names or name == CONFIG_FILE:
            name = f"stage{i}"
        names.append(name)
    return names


def config_json(
    lib: PipelineLibrary, artifacts: Sequence[str], checksums: Sequence[str]
) -> dict[str, Any]:
    """The contents of ``pipeline.json``."""
    from ember import __version__

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "ember_version": __version__,
        "name": lib.name,
        "inputs": [spec.to_json() for spec in lib.inputs],
        "params": list(lib.params),
        "outputs": [source.to_json(lib.stages) for source in lib.outputs],
        "stages": [
            {
                "name": stage.name,
                "target": stage.target,
                "device": str(stage.device),
                "artifact": artifact,
                "manifest_sha256": checksum,
                "inputs": [
                    {"name": spec.name, "from": source.to_json(lib.stages)}
                    for spec, source in zip(stage.module.input_specs, stage.sources)
                ],
            }
            for stage, artifact, checksum in zip(lib.stages, artifacts, checksums)
        ],
    }


def write_pipeline(lib: PipelineLibrary, root: Path) -> Path:
    """Write ``lib`` into directory ``root``; return the config file's path."""
    config_path = root / CONFIG_FILE
    if root.exists() and not root.is_dir():
        raise ArtifactError(f"cannot export the pipeline to {root}: it is a file")
    if root.is_dir() and not config_path.is_file() and any(root.iterdir()):
        raise ArtifactError(
            f"cannot export the pipeline to {root}: the directory is not empty and holds "
            "no earlier pipeline export; choose a new or empty directory"
        )
    old_artifacts = _previous_artifacts(config_path)
    artifacts = _artifact_names(lib.stages)
    checksums: list[str] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        for stage, artifact in zip(lib.stages, artifacts):
            stage.module.export_library(root / artifact)
            checksums.append(_sha256_file(root / artifact / MANIFEST_FILE))
        text = format_json(seal(config_json(lib, artifacts, checksums))) + "\n"
        staging = root / f".{CONFIG_FILE}.tmp-{uuid.uuid4().hex[:8]}"
        staging.write_text(text)
        os.replace(staging, config_path)  # atomic: readers see old or new
    except OSError as e:
        raise ArtifactError(f"cannot export the pipeline to {root}: {e}") from None
    for stale in old_artifacts - set(artifacts):
        if (root / stale / MANIFEST_FILE).is_file():
            shutil.rmtree(root / stale, ignore_errors=True)
    return config_path


def _previous_artifacts(config_path: Path) -> set[str]:
    """Stage directories of an earlier export at the same place (best effort:
    read like any artifact file, so a link, a FIFO or garbage there is none)."""
    if not os.path.lexists(config_path):
        return set()
    try:
        config, _, where = ArtifactDir(config_path.parent).read_json(
            config_path.name, "earlier pipeline config"
        )
        check_schema(config, {"stages": [{"artifact": STRING}]}, where)
    except ArtifactError:
        return set()
    return {
        stage["artifact"]
        for stage in config["stages"]
        if _SAFE_NAME.fullmatch(stage["artifact"])
    }


# --------------------------------------------------------------------------
# The artifact: reading
# --------------------------------------------------------------------------


_SOURCE = OneOf(
    'a connection, {"input": name} or {"stage": name, "output": index}',
    ({"input": STRING}, {"stage": STRING, "output": NATURAL}),
)
CONFIG_SCHEMA = {
    "name": STRING,
    "inputs": [TENSOR],
    "params": [STRING],
    "outputs": [_SOURCE],
    "stages": [
        {
            "name": NAME,
            "target": STRING,
            "device": STRING,
            "artifact": STRING,
            "manifest_sha256": SHA256,
            "inputs": [{"name": STRING, "from": _SOURCE}],
        }
    ],
}
"""What ``pipeline.json`` must hold (besides format, version and its seal)."""


def load_library(path: str | os.PathLike[str]) -> PipelineLibrary:
    """Load a pipeline written by ``export_library`` (its directory or config file).

    Every problem is an :class:`ArtifactError` naming the file or stage.
    """
    config_path = _config_path(Path(path))
    root = ArtifactDir(config_path.parent)
    config = _read_config(root, config_path.name)
    try:
        return _library_from_config(config, root)
    except PipelineError as e:
        raise ArtifactError(f"corrupt pipeline artifact {root.path}: {e}") from None


def _config_path(path: Path) -> Path:
    if not os.path.lexists(path):
        raise ArtifactError(f"cannot load pipeline: {path} does not exist")
    if path.is_dir():
        path = path / CONFIG_FILE
        if not os.path.lexists(path):
            raise ArtifactError(
                f"cannot load pipeline: {path.parent} has no {CONFIG_FILE}; it is not an "
                "exported ember pipeline"
            )
    return path


def _read_config(root: ArtifactDir, name: str) -> dict[str, Any]:
    config, _, where = root.read_json(name, "corrupt pipeline config")
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
        raise ArtifactError(
            f"{root.path / name} is not an ember pipeline config (no format "
            f"{FORMAT_NAME!r}); load a single module with ember.load_module"
        )
    check_format_version(
        config.get("format_version"), FORMAT_VERSION, f"{root.path / name} has pipeline"
    )
    check_schema(config, CONFIG_SCHEMA, where)
    check_seal(config, where)
    if not config["stages"]:
        raise ArtifactError(f"{where}: field stages is empty; a pipeline has stages")
    return config


def _library_from_config(
    config: Mapping[str, Any], root: ArtifactDir
) -> PipelineLibrary:
    inputs = tuple(TensorSpec.from_json(item) for item in config["inputs"])
    stage_entries = config["stages"]
    index_of = {entry["name"]: i for i, entry in enumerate(stage_entries)}
    if len(index_of) != len(stage_entries):
        raise ArtifactError(
            f"corrupt pipeline config in {root.path}: two stages have the same name"
        )
    bound_inputs = sorted(set(config["params"]) & {spec.name for spec in inputs})
    if bound_inputs:
        raise ArtifactError(
            f"corrupt pipeline config in {root.path}: {', '.join(bound_inputs)} "
            "listed both as params (bound at build time) and as inputs"
        )
    stages = tuple(_load_stage(entry, root, index_of) for entry in stage_entries)
    return PipelineLibrary(
        name=config["name"],
        inputs=inputs,
        params=tuple(config["params"]),
        stages=stages,
        outputs=tuple(_source_from_json(item, index_of) for item in config["outputs"]),
    )


def _load_stage(
    entry: Mapping[str, Any], root: ArtifactDir, index_of: Mapping[str, int]
) -> BuiltStage:
    name, target, artifact_name = entry["name"], entry["target"], entry["artifact"]
    if not _SAFE_NAME.fullmatch(artifact_name):
        raise ArtifactError(
            f"corrupt pipeline config in {root.path}: stage {name!r} has artifact "
            f"{artifact_name!r}, which is not a plain directory name"
        )
    if not os.path.lexists(root.path / artifact_name / MANIFEST_FILE):
        raise ArtifactError(
            f"incomplete pipeline artifact {root.path}: stage @{name} has no "
            f"{artifact_name}/{MANIFEST_FILE}"
        )
    try:
        stage_dir = root.subdirectory(artifact_name)
        module = load_artifact(stage_dir, entry["manifest_sha256"])
    except ArtifactError as e:
        raise ArtifactError(f"stage @{name} of pipeline {root.path}: {e}") from None
    if module.target != target:
        raise ArtifactError(
            f"corrupt pipeline artifact {root.path}: stage @{name} is declared {target!r} but "
            f"its module was built for {module.target!r}"
        )
    try:
        dev = device(entry["device"])
    except RuntimeFailure as e:
        raise ArtifactError(
            f"corrupt pipeline config in {root.path}: stage @{name}: {e}"
        ) from None
    listed = [item["name"] for item in entry["inputs"]]
    takes = [spec.name for spec in module.input_specs]
    if listed != takes:
        raise ArtifactError(
            f"corrupt pipeline config in {root.path}: stage @{name} lists inputs "
            f"{listed}, but its module takes {takes}"
        )
    sources = tuple(
        _source_from_json(item["from"], index_of) for item in entry["inputs"]
    )
    return BuiltStage(name, target, dev, module, sources)


def _source_from_json(item: Mapping[str, Any], index_of: Mapping[str, int]) -> Source:
    """A connection, already checked against ``CONFIG_SCHEMA``."""
    if "input" in item:
        return Source(None, item["input"])
    stage = item["stage"]
    if stage not in index_of:
        raise PipelineError(f"a connection comes from unknown stage {stage!r}")
    return Source(index_of[stage], item["output"])
