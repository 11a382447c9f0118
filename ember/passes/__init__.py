"""ember's passes, one per file, registered in one lazy table.

``PASSES`` maps the command-line name (kebab-case) to a function that imports
the pass class, as xDSL's own registry does, so listing passes is cheap.
Add a pass with one line: ``"my-pass": _lazy("my_pass", "MyPass"),``.

Every pass class of that table is also this package's attribute, imported
on first use: ``from ember.passes import FuseOpsPass``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    """A function importing ``ember.passes.<module>.<cls>`` on first use."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"ember.passes.{module}"), cls)

    load.pass_class = cls  # type: ignore[attr-defined]  # the export name
    return load


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "lower-kernel-to-llvm": _lazy("lower_kernel_to_llvm", "LowerKernelToLLVMPass"),
    "lower-graph-to-kernel": _lazy("lower_graph_to_kernel", "LowerGraphToKernelPass"),
    "simplify-inference": _lazy("simplify_inference", "SimplifyInferencePass"),
    "fold-constants": _lazy("fold_constants", "FoldConstantsPass"),
    "bind-params": _lazy("bind_params", "BindParamsPass"),
    "split-graph": _lazy("split_graph", "SplitGraphPass"),
    "fuse-ops": _lazy("fuse_ops", "FuseOpsPass"),
    "partition-extern": _lazy("partition_extern", "PartitionExternPass"),
    "kernel-bind-gpu": _lazy("kernel_bind_gpu", "KernelBindGpuPass"),
    "plan-memory": _lazy("plan_memory", "PlanMemoryPass"),
    "kernel-tile": _lazy("kernel_tile", "KernelTilePass"),
    "kernel-pad-input": _lazy("kernel_pad_input", "KernelPadInputPass"),
    "kernel-tensorize": _lazy("kernel_tensorize", "KernelTensorizePass"),
    "kernel-accumulate-rows": _lazy("kernel_accumulate_rows", "KernelAccumulateRowsPass"),
    "kernel-separate-window": _lazy("kernel_separate_window", "KernelSeparateWindowPass"),
    "kernel-parallelize": _lazy("kernel_parallelize", "KernelParallelizePass"),
    "kernel-vectorize": _lazy("kernel_vectorize", "KernelVectorizePass"),
    "kernel-unroll": _lazy("kernel_unroll", "KernelUnrollPass"),
    "kernel-pack-layout": _lazy("kernel_pack_layout", "KernelPackLayoutPass"),
}


__all__ = ["PASSES", *sorted(load.pass_class for load in PASSES.values())]  # type: ignore[attr-defined]


def __getattr__(name: str) -> type[ModulePass]:
    for load in PASSES.values():
        if load.pass_class == name:  # type: ignore[attr-defined]
            return load()
    raise AttributeError(f"module 'ember.passes' has no attribute {name!r}")
