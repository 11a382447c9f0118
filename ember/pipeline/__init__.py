"""Pipelines: a network split into stages placed on devices.

The user-facing side of ``ember.dialects.pipeline`` (TVM's
``tvm.contrib.pipeline_executor_build``):

* :class:`PipelineConfig` — build a ``pipeline.graph`` with TVM's
  vocabulary (``cfg[mod].target``, ``cfg["input"]["data"].connect(…)``);
* :func:`split_graph` / :func:`stage_functions` — the ``split-graph`` pass
  as functions: cut ``@main`` into subgraph functions, list them;
* :func:`interpret_pipeline` — run a pipeline stage after stage with the
  reference interpreter, the correctness baseline of any executor;
* :func:`build` — compile every stage for its target (TVM's
  ``pipeline_executor_build.build``); the :class:`PipelineLibrary` it
  returns is exported with ``export_library(dir)`` and read back with
  :func:`load_library` / ``PipelineModule.load_library(path)``;
* :class:`PipelineExecutor` (alias :class:`PipelineModule`) — run it, one
  worker per stage, with ``set_input`` / ``run`` / ``get_output``, or
  ``map(inputs)`` / ``submit(...)`` (a future); :func:`run_pipeline`
  streams inputs through one and reports throughput and latency;
  :func:`run_pipeline_file` is the same from a file (built or loaded by
  :func:`open_pipeline_file`), for ``ember-run``;
* :class:`RayPipelineExecutor` — the same API with each stage a Ray actor
  on a cluster, placed by :class:`RayPlacement` (``pip install
  "ember[distributed]"``).  Both names are looked up lazily: only they
  import Ray, and nothing else in ember does.
"""

from __future__ import annotations

from typing import Any

from ember.pipeline.build import (
    BuiltStage,
    PipelineError,
    PipelineLibrary,
    build,
    load_library,
)
from ember.pipeline.config import (
    Interface,
    PipelineConfig,
    PipelineConfigError,
    StageConfig,
)
from ember.pipeline.executor import (
    PipelineClosedError,
    PipelineEmpty,
    PipelineExecutor,
    PipelineFull,
    PipelineModule,
    PipelineRun,
    PipelineTimeout,
    StageError,
    ThroughputResult,
    open_pipeline_file,
    run_pipeline,
    run_pipeline_file,
)

__all__ = [
    "BuiltStage",
    "Interface",
    "PipelineClosedError",
    "PipelineConfig",
    "PipelineConfigError",
    "PipelineEmpty",
    "PipelineError",
    "PipelineExecutor",
    "PipelineFull",
    "PipelineLibrary",
    "PipelineModule",
    "PipelineRun",
    "PipelineTimeout",
    "StageConfig",
    "StageError",
    "ThroughputResult",
    "build",
    "interpret_pipeline",
    "load_library",
    "load_op_costs",
    "op_costs",
    "open_pipeline_file",
    "run_pipeline",
    "run_pipeline_file",
    "save_op_costs",
    "split_graph",
    "stage_functions",
]


def split_graph(module: Any, ops: Any, indices: Any, **options: Any) -> Any:
    """See :func:`ember.passes.split_graph.split_graph`."""
    from ember.passes.split_graph import split_graph as _split_graph

    return _split_graph(module, ops, indices, **options)


def stage_functions(module: Any, entry: str = "main") -> Any:
    """See :func:`ember.passes.split_graph.stage_functions`."""
    from ember.passes.split_graph import stage_functions as _stage_functions

    return _stage_functions(module, entry)


def interpret_pipeline(module: Any, entry: str = "main", *args: Any) -> Any:
    """See :func:`ember.interp.pipeline_impls.interpret_pipeline`."""
    from ember.interp.pipeline_impls import interpret_pipeline as _interpret_pipeline

    return _interpret_pipeline(module, entry, *args)


def __getattr__(name: str) -> Any:
    if name in ("load_op_costs", "op_costs", "save_op_costs"):
        from ember.pipeline import costs

        return getattr(costs, name)
    # The Ray executor imports Ray, so it is imported only when asked for.
    if name in ("RayPipelineExecutor", "RayPlacement"):
        from ember.pipeline import ray_executor

        return getattr(ray_executor, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
