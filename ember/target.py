"""What code is compiled for: one :class:`Target`, parsed from a target string.

TVM's ``tvm.target.Target`` in small.  A target string is a kind followed by
options::

    llvm                                    native code for this CPU
    llvm -mcpu=skylake-avx512               for another CPU (cross-compiling)
    llvm -mcpu=znver3 -mattr=-avx512f,+fma  ... with LLVM features on or off
    llvm -libs=blas                         dense/matmul/conv2d through BLAS
    interp                                  the reference interpreter
    cuda -arch=sm_90 -libs=cublas           (planned) NVIDIA GPUs

``-mcpu`` and ``-mattr`` are LLVM's (``llc -mcpu=… -mattr=…``) and are checked
against LLVM's own list of CPUs and features, so a misspelt name is an error
with a suggestion, never a warning LLVM prints and ignores.  ``llvm`` without
``-mcpu`` is *this* CPU: its name and exactly the features it reports.

Host detection lives here and nowhere else (:func:`host_cpu_name`,
:func:`host_features`).  What a target's CPU can do — :attr:`Target.features`,
and from it :attr:`Target.vector_bits` — is asked of LLVM, which knows what
``-mcpu=skylake-avx512 -mattr=-avx2`` implies (see :func:`_llvm_features_of`).
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ember.errors import TargetError

if TYPE_CHECKING:
    from llvmlite import ir
    from llvmlite.binding import TargetMachine

__all__ = [
    "OPT_LEVEL",
    "Target",
    "cuda_arch",
    "host_cpu_name",
    "host_features",
    "with_string_attributes",
]

OPT_LEVEL = 3
"""LLVM's optimisation level for every target machine ember makes."""

_OPTIONS: dict[str, tuple[str, ...]] = {
    "-mcpu": ("llvm",),
    "-mattr": ("llvm",),
    "-arch": ("cuda",),
    "-libs": (),  # every kind
}
"""Option → the kinds that take it (empty: all)."""

DEFAULT_SCHEDULES: dict[str, str] = {
    "llvm": (
        "kernel-pad-input,kernel-tensorize{{vector-bits={vector_bits} winograd-min-channels=32}},"
        "kernel-parallelize,kernel-accumulate-rows,kernel-separate-window,kernel-vectorize"
    )
}
"""Target kind → its default schedule (:attr:`Target.default_schedule`);
``{vector_bits}`` is the target's :attr:`Target.vector_bits`."""

VECTOR_BITS_BY_FEATURE = (("avx512f", 512), ("avx", 256))
"""The widest vector register a CPU feature brings; without any, 128 (SSE)."""


@dataclass(frozen=True)
class Target:
    """A parsed target: hashable, so it can key caches and compile options.

    ``kind`` is ``llvm``, ``interp``, ``cuda`` or the name of a backend
    registered with :func:`ember.runtime.module.register_backend` (which
    takes ``-libs`` only).
    ``mcpu`` empty means this CPU; ``mattr`` holds ``+feature``/``-feature``
    in the order given (LLVM applies them in order).
    """

    kind: str = "llvm"
    mcpu: str = ""
    mattr: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    arch: str = ""

    # -- parsing -------------------------------------------------------------

    @classmethod
    def parse(cls, text: str | Target) -> Target:
        """``"llvm -mcpu=znver3 -mattr=+avx2"`` → a checked :class:`Target`."""
        if isinstance(text, Target):
            return text
        if not isinstance(text, str) or not text.split():
            raise TargetError(
                f"target must be a string such as 'llvm' or 'llvm -mcpu=znver3', got {text!r}"
            )
        kind, *words = text.split()
        values: dict[str, str] = {}
        for word in words:
            key, _, value = word.partition("=")
            _check_option(kind, key, word, text)
            if not value:
                raise TargetError(f"target option {key} in {text!r} needs a value: {key}=…")
            if key in values:
                raise TargetError(f"target option {key} is given twice in {text!r}")
            values[key] = value
        mcpu, mattr = values.get("-mcpu", ""), _split(values.get("-mattr", ""))
        _check_cpu_names(mcpu, mattr, text)
        arch = values.get("-arch", "")
        if arch:
            arch = cuda_arch(arch)
        return cls(kind, mcpu, mattr, _split(values.get("-libs", "")), arch)

    @classmethod
    def host(cls) -> Target:
        """Native code for the CPU this process runs on (``"llvm"``)."""
        return cls("llvm")

    def __str__(self) -> str:
        """The canonical target string; ``Target.parse(str(t)) == t``."""
        words = [self.kind]
        for key, value in (
            ("-mcpu", self.mcpu),
            ("-mattr", ",".join(self.mattr)),
            ("-arch", self.arch),
            ("-libs", ",".join(self.libs)),
        ):
            if value:
                words.append(f"{key}={value}")
        return " ".join(words)

    # -- the CPU ---------------------------------------------------------------

    @property
    def is_host(self) -> bool:
        """This CPU exactly: ``llvm`` without -mcpu or -mattr."""
        return self.kind == "llvm" and not self.mcpu and not self.mattr

    @property
    def cpu(self) -> str:
        """LLVM's name of the CPU code is compiled for."""
        self._require_llvm("a CPU")
        return self.mcpu or host_cpu_name()

    @property
    def feature_string(self) -> str:
        """The features given to LLVM's target machine (``"+avx2,-avx512f"``):
        for this CPU all of its features first, then ``-mattr``."""
        self._require_llvm("CPU features")
        prefix = (_host_feature_map().flatten(),) if not self.mcpu else ()
        return ",".join((*prefix, *self.mattr))

    @property
    def features(self) -> frozenset[str]:
        """The CPU features code for this target may use (LLVM's names)."""
        if self.is_host:
            return host_features()
        self._require_llvm("CPU features")
        return _llvm_features_of(self.cpu, self.feature_string)

    @property
    def vector_bits(self) -> int:
        """Width of the widest vector register: 512 with AVX-512, 256 with AVX."""
        if self.is_host:
            features = host_features()
        else:
            # Only the features that widen vectors: a probe of every feature
            # LLVM knows runs its inliner over ~230 functions (~0.1 s, which
            # a warm build, served from the cache, would spend on nothing else).
            self._require_llvm("CPU features")
            candidates = tuple(name for name, _ in VECTOR_BITS_BY_FEATURE)
            features = _llvm_features_of(self.cpu, self.feature_string, candidates)
        return next((bits for name, bits in VECTOR_BITS_BY_FEATURE if name in features), 128)

    @property
    def default_schedule(self) -> str:
        """The schedule passes run on the kernels compiled for this target,
        as a pipeline string (``ember-translate --emit=schedule`` prints it;
        ``ember.build(..., options={"schedule": ...})`` replaces it).

        The CPU's: a padded copy of the input that windows read through
        their padding (``kernel-pad-input``), conv2d, dense and matmul
        contractions as register-tiled
        micro-kernels shaped for :attr:`vector_bits` (``kernel-tensorize``),
        3×3 stride-1 conv2d layers of at least 32 channels as Winograd
        convolutions where its rule takes them
        (:func:`~ember.lowering.winograd.winograd_transform`), then one
        thread team over the outer loops of each loop nest left
        unscheduled, a reduction per element made a row of accumulators
        where its loop walks the input's rows (``kernel-accumulate-rows``),
        a max window's rows first (``kernel-separate-window``), and vectors
        in the loops that hold no loop."""
        schedule = DEFAULT_SCHEDULES.get(self.kind, "")
        return schedule.format(vector_bits=self.vector_bits) if "{vector_bits}" in schedule else schedule

    def vector_lanes(self, dtype: str = "float32") -> int:
        """Elements of ``dtype`` (a numpy name) in one vector register."""
        import numpy as np

        return self.vector_bits // (8 * np.dtype(dtype).itemsize)

    def missing_on_host(self) -> list[str]:
        """Features code for this target may use that this CPU lacks (sorted)."""
        return sorted(self.features - host_features())

    def runs_on_host(self) -> bool:
        """Whether this CPU runs code for this target: :meth:`missing_on_host`
        is empty.  One probe of LLVM's inliner, where naming the missing
        features probes every feature (~0.1 s, which a build for
        ``-mattr=-avx512f`` spent on loading its code)."""
        if self.is_host:
            return True
        self._require_llvm("CPU features")
        return _runs_on_host(self.cpu, self.feature_string)

    def target_machine(self) -> TargetMachine:
        """A new LLVM target machine for this target, at O3.

        New each time because an MCJIT engine takes ownership of (and frees)
        the target machine it is created with.
        """
        llvm = _llvm()
        return llvm.Target.from_default_triple().create_target_machine(
            cpu=self.cpu,
            features=self.feature_string,
            opt=OPT_LEVEL,
            reloc="default",
            codemodel="jitdefault",
        )

    def _require_llvm(self, what: str) -> None:
        if self.kind != "llvm":
            raise TargetError(f"target {str(self)!r} has no {what}: only 'llvm' targets do")


DEFAULT_CUDA_ARCH = "sm_90"


def cuda_arch(arch: str | None) -> str:
    """``sm_90`` (also ``90`` or ``compute_90``) checked; None: the default."""
    if arch is None:
        return DEFAULT_CUDA_ARCH
    text = str(arch).strip()
    for prefix in ("sm_", "compute_"):
        text = text.removeprefix(prefix)
    if not text.rstrip("a").isdigit():
        raise TargetError(f"unknown CUDA architecture {arch!r}: expected sm_XY such as sm_90")
    return f"sm_{text}"


def _split(value: str) -> tuple[str, ...]:
    return tuple(item for item in value.split(",") if item)


def _check_cpu_names(mcpu: str, mattr: tuple[str, ...], text: str) -> None:
    """The CPU and the features are ones LLVM knows."""
    if mcpu:
        _check_name(mcpu, _llvm_catalogue()[0], "CPU", "-mcpu", text)
    for item in mattr:
        if item[:1] not in ("+", "-"):
            raise TargetError(
                f"-mattr item {item!r} in {text!r} must be +FEATURE or -FEATURE "
                "(e.g. -mattr=+avx2,-avx512f)"
            )
        _check_name(item[1:], _llvm_catalogue()[1], "CPU feature", "-mattr", text)


def _check_option(kind: str, key: str, word: str, text: str) -> None:
    if key not in _OPTIONS:
        message = f"unknown target option {word!r} in {text!r}"
        close = difflib.get_close_matches(key, _OPTIONS, n=1)
        if close:
            message += f"; did you mean {close[0]}?"
        raise TargetError(message + f" (options: {', '.join(_OPTIONS)})")
    kinds = _OPTIONS[key]
    if kinds and kind not in kinds:
        raise TargetError(
            f"target option {key} in {text!r} applies to {' and '.join(kinds)} "
            f"targets, not {kind!r}"
        )


def _check_name(name: str, known: frozenset[str], what: str, option: str, text: str) -> None:
    if name in known:
        return
    message = f"unknown {what} {name!r} in {option} of {text!r}"
    close = difflib.get_close_matches(name, known, n=3)
    if close:
        message += f"; did you mean {', '.join(repr(c) for c in close)}?"
    raise TargetError(message + f" (LLVM knows {len(known)}; llc -m{option[2:]}=help lists them)")


# --------------------------------------------------------------------------
# Host detection and LLVM's knowledge of CPUs
# --------------------------------------------------------------------------


@cache
def _llvm():  # type: ignore[no-untyped-def]
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    return llvm


@cache
def host_cpu_name() -> str:
    """LLVM's name of this CPU (``"znver3"``)."""
    return str(_llvm().get_host_cpu_name())


@cache
def _host_feature_map():  # type: ignore[no-untyped-def]
    return _llvm().get_host_cpu_features()


@cache
def host_features() -> frozenset[str]:
    """The features this CPU reports (LLVM's names: ``avx2``, ``fma``, …)."""
    return frozenset(name for name, on in _host_feature_map().items() if on)


_CATALOGUE_LINE = re.compile(r"^\s+(\S+)\s+- ")


@cache
def _llvm_catalogue() -> tuple[frozenset[str], frozenset[str]]:
    """The CPU and feature names LLVM's backend for this machine knows.

    LLVM prints them (``-mcpu=help``) to the process's stderr when a target
    machine is asked for CPU "help"; that output is read from a temporary
    file standing in for file descriptor 2.  Once per process: anything
    another thread writes to stderr in that moment lands in the file too.
    """
    import os
    import tempfile

    llvm = _llvm()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as listing:
        try:
            os.dup2(listing.fileno(), 2)
            llvm.Target.from_default_triple().create_target_machine(cpu="help")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        listing.seek(0)
        text = listing.read().decode(errors="replace")
    cpus_text, _, features_text = text.partition("Available features")
    names = [
        {m.group(1) for line in part.splitlines() if (m := _CATALOGUE_LINE.match(line))}
        for part in (cpus_text, features_text)
    ]
    return frozenset(names[0]), frozenset(names[1])


@cache
def _llvm_features_of(
    cpu: str, feature_string: str, candidates: tuple[str, ...] | None = None
) -> frozenset[str]:
    """The features LLVM enables for ``cpu`` with ``feature_string``, of
    ``candidates`` (default: every feature host detection knows of).

    LLVM's inliner inlines a callee into a caller only when the callee's
    features are a subset of the caller's (``areInlineCompatible``).  So for
    each candidate feature F, a caller compiled for the target calls a callee
    for the target plus ``+F``: F belongs to the target exactly when the call
    is inlined.
    """
    if candidates is None:
        candidates = tuple(sorted(_host_feature_map()))
    target = (cpu, feature_string)
    plus = [",".join(f for f in (feature_string, f"+{feature}") if f) for feature in candidates]
    inlined = _inlined([(target, (cpu, features)) for features in plus])
    return frozenset(feature for feature, yes in zip(candidates, inlined) if yes)


CodeFor = tuple[str, str]
"""A function's ``(target-cpu, target-features)``."""


def _inlined(calls: Sequence[tuple[CodeFor, CodeFor]]) -> list[bool]:
    """For each (caller, callee), whether LLVM's inliner inlines a callee
    compiled for the second into a caller compiled for the first: whether
    the callee's features are a subset of the caller's."""
    from llvmlite import ir

    if not calls:
        return []

    llvm = _llvm()
    module = ir.Module(name="ember_feature_probe")
    module.triple = llvm.get_process_triple()
    void = ir.FunctionType(ir.VoidType(), [])
    sink = ir.Function(module, void, name="sink")  # an effect that keeps callees
    for n, ((caller_cpu, caller_features), (callee_cpu, callee_features)) in enumerate(calls):
        callee = ir.Function(module, void, name=f"needs_{n}")
        callee.linkage = "internal"
        builder = ir.IRBuilder(callee.append_basic_block())
        builder.call(sink, [])
        builder.ret_void()
        with_string_attributes(
            callee, {"target-cpu": callee_cpu, "target-features": callee_features}
        )
        caller = ir.Function(module, void, name=f"has_{n}")
        builder = ir.IRBuilder(caller.append_basic_block())
        builder.call(callee, [])
        builder.ret_void()
        with_string_attributes(
            caller, {"target-cpu": caller_cpu, "target-features": caller_features}
        )
    parsed = llvm.parse_assembly(str(module))
    cpu, features = calls[0][0]
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=OPT_LEVEL
    )
    tuning = llvm.create_pipeline_tuning_options(speed_level=1)
    passes = llvm.create_pass_builder(machine, tuning)
    passes.getModulePassManager().run(parsed, passes)
    return [
        not any(
            instruction.opcode == "call" and f"@needs_{n}(" in str(instruction)
            for block in parsed.get_function(f"has_{n}").blocks
            for instruction in block.instructions
        )
        for n in range(len(calls))
    ]


@cache
def _runs_on_host(cpu: str, feature_string: str) -> bool:
    """Whether this CPU has every feature LLVM enables for ``cpu`` with
    ``feature_string``: code for them inlines into code for this CPU."""
    host = (host_cpu_name(), _host_feature_map().flatten())
    return _inlined([(host, (cpu, feature_string))])[0]


@cache
def _attributes_with_strings() -> type:
    """llvmlite's function attribute set, plus ``strings``: LLVM string
    attributes, which llvmlite's set refuses (it knows only enum ones)."""
    from llvmlite.ir.values import FunctionAttributes

    class AttributesWithStrings(FunctionAttributes):
        strings: dict[str, str | None]

        def __bool__(self) -> bool:
            return True  # printed even when only string attributes are set

        def _to_list(self, ret_type: ir.Type) -> list[str]:
            pairs = self.strings.items()
            return [
                *super()._to_list(ret_type),
                *(f'"{k}"' + ("" if v is None else f'="{v}"') for k, v in pairs),
            ]

    return AttributesWithStrings


def with_string_attributes(function: ir.Function, attributes: dict[str, str | None]) -> None:
    """Give an llvmlite function LLVM string attributes (``"key"="value"``,
    or ``"key"`` for None)."""
    known = function.attributes
    replacement = _attributes_with_strings()(known)
    replacement.alignstack, replacement.personality = known.alignstack, known.personality
    replacement.strings = {**getattr(known, "strings", {}), **attributes}
    function.attributes = replacement
