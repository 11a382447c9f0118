"""``ember.build``: compile a graph module for a target into a runtime Module.

Mirrors ``tvm.relay.build(mod, target, params=...)`` / ``relax.build``: the
result is a :class:`~ember.runtime.module.Module` that a
:class:`~ember.runtime.graph_executor.GraphExecutor` runs and that
``export_library`` writes to disk.

``params`` are bound to the entry function's arguments of the same name: they
stop being inputs of the built module, and are stored with it.  The ``llvm``
backend binds them as constants (Relax ``BindParams``) so the graph passes
fold them (batch_norm into conv weights, weights packed for the kernels);
the ``interp`` backend passes them at run time.  Every param is checked here
— its name must be an argument, its shape and dtype the argument's — so a
mistake fails at build time, naming the argument, rather than as a shape
error deep inside a kernel.

The target (a string or an :class:`ember.target.Target`) picks a backend
(:func:`ember.backends.backend_for`): ``"interp"`` runs the reference
interpreter; ``"llvm"`` is the CPU code generator (:mod:`ember.backends.cpu`);
``"cuda"`` is planned and asking for it is an error — never a silent
fallback to the interpreter.  TVM's options work as there: ``"llvm
-libs=blas"``, ``"llvm -mcpu=skylake-avx512 -mattr=-avx512bw"``.  Code for a
CPU with features this one lacks is built and exports, but running it here
is an error naming the missing features.

``options`` holds build options by name (:data:`BUILD_OPTIONS`); an unknown
name or a value of the wrong type is an error, not ignored.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ember.errors import RuntimeFailure
from ember.ir import as_module, to_text
from ember.target import Target

if TYPE_CHECKING:
    import numpy as np

    from ember.compiler import CompileOptions
    from ember.runtime.module import FunctionSignature, Module, TensorSpec

# The runtime (and numpy) are imported on the first build, not here: ember's
# __init__ imports this module eagerly, and ``import ember`` must stay cheap.

__all__ = ["BUILD_OPTIONS", "build"]

BUILD_OPTIONS: dict[str, tuple[type, str]] = {
    "fast_math": (
        bool,
        "let LLVM assume no NaN, inf or signed zero (the fast flags; results for "
        "such values change); the same as build(..., fast_math=True)",
    ),
    "bounds_check": (
        bool,
        "test every kernel load and store index not proven in bounds at run time "
        "and raise RuntimeFailure naming kernel, buffer and index (llvm; the "
        "interpreter always checks)",
    ),
    "min_parallel_work": (
        int,
        "run a parallel loop on one thread when it executes fewer ops than this "
        "(default 65536: waking the thread pool costs more than such a loop; "
        "0 sends every parallel loop to the pool)",
    ),
    "winograd_min_channels": (
        int,
        "3x3 stride-1 conv2d layers with at least this many input and output "
        "channels run as Winograd F(2x2, 3x3) convolutions, 0: none: sets "
        "winograd-min-channels of the schedule's kernel-tensorize (default: "
        "the schedule's own; the llvm target's default schedule uses 32)",
    ),
    "schedule": (
        str,
        "the schedule passes run on the kernels, a pipeline string such as "
        "'kernel-vectorize,kernel-parallelize' (default: the target's, "
        "Target.default_schedule; '' runs none); docs/passes.md, 'Schedules'",
    ),
}
"""Option name → (type of its value, what it does)."""


def build(
    module: ModuleOp | str,
    target: str | Target = "llvm",
    params: Mapping[str, Any] | None = None,
    *,
    entry: str = "main",
    options: Mapping[str, Any] | None = None,
    fast_math: bool = False,
    remarks: bool = False,
    cache: bool = True,
) -> Module:
    """Compile function ``entry`` of ``module`` for ``target``.

    ``module``: a verified ``ModuleOp`` (or IR text, parsed here).
    ``target``: a target string or :class:`~ember.target.Target`: ``"interp"``
    or ``"llvm"`` (see :func:`~ember.runtime.module.available_targets`),
    with options (docs/runtime.md, "Targets"): ``"llvm -mcpu=znver3
    -mattr=+avx2"`` compiles for that CPU; ``"llvm -libs=blas"`` offloads
    dense, matmul and conv2d to BLAS (``partition-extern``) after the params
    are bound and batch_norm is folded into the weights.
    ``params``: argument name → array (numpy, NDArray, DLPack, list), bound
    as constants; copied, so later changes to the caller's arrays do not
    leak into the module.
    ``options``: build options by name (:data:`BUILD_OPTIONS`), e.g.
    ``{"bounds_check": True}`` for a debug build that checks kernel indices.

    ``fast_math``: let the ``llvm`` target assume that no value is NaN, inf
    or -0.0 (LLVM's ``fast`` flags).  Off by default: compiled code then
    computes what the interpreter computes, NaN and inf included (see
    docs/graph-dialect.md); on, results for such values are unspecified.
    ``remarks``: collect the optimization remarks of every pass the build
    runs into ``lib.remarks`` (:mod:`ember.remarks`; empty otherwise).
    ``cache``: look the build up in (and store it into) the on-disk
    compilation cache (:mod:`ember.runtime.cache`; ``llvm`` target; also
    off with ``EMBER_CACHE=0``).  A build with ``remarks``, or inside
    :func:`ember.driver.print_after`, is never cached.

    For ``llvm`` the backend runs the stages of :mod:`ember.driver`.

    The caller's ``module`` is not modified.
    """
    if remarks:
        from ember.remarks import collect

        with collect() as records:
            lib = build(
                module,
                target,
                params,
                entry=entry,
                options=options,
                fast_math=fast_math,
                cache=False,
            )
        lib.remarks = tuple(records)
        return lib
    from ember.runtime.memory import collection_paused

    # The build's objects live to its end: the collector's automatic
    # passes over them would free nothing (collection_paused says more).
    handed = [params]
    del params
    with collection_paused():
        return _build(module, target, handed.pop(), entry, options, fast_math, cache)


def _build(
    module: ModuleOp | str,
    target: str | Target,
    params: Mapping[str, Any] | None,
    entry: str,
    options: Mapping[str, Any] | None,
    fast_math: bool,
    cache: bool,
) -> Module:
    """:func:`build` without remarks (its arguments, checked here)."""
    from ember.driver import printing
    from ember.runtime import cache as build_cache
    from ember.backends import backend_for
    from ember.runtime.module import signature_of

    ir = as_module(module, "ember.build", RuntimeFailure)
    compile_options = _compile_options(options)
    parsed = Target.parse(target)
    target_name, libs = parsed.kind, parsed.libs
    backend = backend_for(parsed)
    signature = signature_of(ir, entry)
    # A backend that compiles the params into its own constants copies them
    # there; only one that keeps them (interp) needs a private copy first.
    bound = _bind_params(signature, params, copy=backend.keeps_params)
    del params  # what the build reads is ``bound``, handed to the backend below
    sites = _extern_sites(ir)
    if not isinstance(fast_math, bool):
        raise RuntimeFailure(f"fast_math must be True or False, got {fast_math!r}")
    if fast_math:
        compile_options = replace(compile_options, fast_math=True)
    if compile_options.fast_math and target_name != "llvm":
        raise RuntimeFailure(
            f"fast_math=True is an option of the 'llvm' target, not {target_name!r}"
        )
    compile_options = compile_options.for_target(parsed)
    if target_name == "llvm":
        from ember.passes.pipeline import parse_passes

        parse_passes(compile_options.schedule)  # a bad schedule fails before any work
    if not isinstance(cache, bool):
        raise RuntimeFailure(f"cache must be True or False, got {cache!r}")
    key = None
    if cache and target_name == "llvm" and build_cache.enabled() and not printing():
        key = build_cache.build_key(
            to_text(ir), str(parsed), replace(compile_options, entry=entry), bound
        )
        lib = build_cache.lookup(key)
        if lib is not None:
            if sites:
                lib.extern_sites = sites
            return lib
    if libs:
        ir, bound = _offload(ir, entry, bound, libs), {}
        signature = signature_of(ir, entry)
    # The backend gets the only reference to ``bound``: a weight the caller
    # does not hold (a temporary dict, np.load's archive) is freed once the
    # build has folded or packed it, not at the end of the build.
    handed = [bound]
    del bound
    lib = backend.build(ir.clone(), signature, handed.pop(), compile_options)
    if sites:
        lib.extern_sites = sites
    if key is not None:
        build_cache.store(key, lib)
    return lib


def _extern_sites(ir: ModuleOp) -> dict[str, str]:
    """``file:line:col`` of the first ``graph.call_extern`` of each function
    name whose op has a source location (parsed text, ember.script)."""
    from xdsl.dialects.builtin import FileLineColLoc

    sites: dict[str, str] = {}
    for op in ir.walk():
        if op.name == "graph.call_extern" and isinstance(op.location, FileLineColLoc):
            name = op.attributes["function"].data  # type: ignore[union-attr]
            loc = op.location
            sites.setdefault(name, f"{loc.filename.data}:{loc.line.data}:{loc.column.data}")
    return sites


def _compile_options(options: Mapping[str, Any] | None) -> CompileOptions:
    """Checked ``options`` as the compiler's :class:`CompileOptions`."""
    from ember.compiler import CompileOptions

    if options is None:
        return CompileOptions()
    if not isinstance(options, Mapping):
        raise RuntimeFailure(
            "options must be a dict of option name -> value, "
            f"got {type(options).__name__}"
        )
    for name, value in options.items():
        if name not in BUILD_OPTIONS:
            message = f"unknown build option {name!r}"
            close = difflib.get_close_matches(str(name), BUILD_OPTIONS, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
            raise RuntimeFailure(message + f" (options: {', '.join(BUILD_OPTIONS)})")
        kind, _ = BUILD_OPTIONS[name]
        if type(value) is not kind:
            raise RuntimeFailure(
                f"build option {name!r} must be a {kind.__name__}, got {value!r}"
            )
    return CompileOptions(**options)


def parse_target(target: str) -> tuple[str, tuple[str, ...]]:
    """``"llvm -libs=blas,x"`` → ``("llvm", ("blas", "x"))`` (kept for
    callers from before :meth:`Target.parse <ember.target.Target.parse>`)."""
    parsed = Target.parse(target)
    return parsed.kind, parsed.libs


def _offload(
    ir: ModuleOp, entry: str, params: Mapping[str, np.ndarray], libs: tuple[str, ...]
) -> ModuleOp:
    """Bind params, fold batch_norm into weights, then offload to ``libs``."""
    from ember.passes.bind_params import bind_params
    from ember.passes.pipeline import apply_passes

    bound = bind_params(ir, params, entry=entry) if params else ir
    pipeline = f"simplify-inference,fold-constants,partition-extern{{libs={','.join(libs)}}}"
    return apply_passes(bound, pipeline)


def _bind_params(
    signature: FunctionSignature, params: Mapping[str, Any] | None, copy: bool = True
) -> dict[str, np.ndarray]:
    """Checked, read-only copies of ``params`` (read-only views of them
    without ``copy``), by argument name."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise RuntimeFailure(
            f"params must be a dict of argument name -> array, got {type(params).__name__}"
        )
    bound: dict[str, np.ndarray] = {}
    for name, value in params.items():
        spec = signature.input(name) if isinstance(name, str) else None
        if spec is None:
            raise RuntimeFailure(_unknown_param_message(name, signature))
        bound[name] = _param_array(value, spec, signature.name, copy)
    return bound


def _unknown_param_message(name: Any, signature: FunctionSignature) -> str:
    names = [spec.name for spec in signature.inputs]
    message = f"params has {name!r}, but @{signature.name} has no argument of that name"
    close = difflib.get_close_matches(str(name), names, n=1)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message + f" (arguments: {', '.join(names) or 'none'})"


def _param_array(value: Any, spec: TensorSpec, entry: str, copy: bool) -> np.ndarray:
    import numpy as np

    from ember.runtime.ndarray import as_host_array

    what = f"param {spec.name!r} (argument %{spec.name} of @{entry})"
    # Python data has no dtype of its own: it takes the argument's.
    values = as_host_array(value, what, dtype=np.dtype(spec.dtype))
    if values.shape != spec.shape or values.dtype.name != spec.dtype:
        raise RuntimeFailure(
            f"{what} must be {spec.describe()}, got {values.dtype.name}{list(values.shape)}"
        )
    # A private, frozen copy: the caller may go on changing its array.  Or,
    # where the backend copies it itself, a frozen view (not the caller's
    # object, whose flags stay as they are).
    native = values.dtype.newbyteorder("=")
    if copy:
        bound = np.array(values, dtype=native, order="C", copy=True)
    else:
        bound = np.asarray(values, dtype=native, order="C").view()
    bound.flags.writeable = False
    return bound
