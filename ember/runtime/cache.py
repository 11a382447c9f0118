"""The on-disk compilation cache: a build made before is loaded, not compiled.

``ember.build(..., target="llvm")`` looks its inputs up here first.  An entry
is an exported module (``export_library``'s artifact directory) named by the
**key**, the sha256 of everything the compiled code depends on
(:func:`build_key`):

* the IR, printed (:func:`ember.ir.to_text`), and the entry name;
* every bound param: name, dtype, shape and the sha256 of its bytes;
* the full target string (``"llvm -libs=blas"``) and every field of the
  :class:`~ember.compiler.CompileOptions` (fast_math, bounds_check, the
  graph pipeline);
* the host CPU's name and features as LLVM sees them, so an entry made on
  one CPU is never used on another (a shared cache directory stays safe);
* the toolchain: ember's version **and the sha256 of ember's own source
  files** (so editing the compiler during development never serves stale
  code), the xDSL and llvmlite versions and LLVM's.

A hit is read back with :func:`~ember.runtime.module.load_module`, which
checks every file (checksums, schema, the CPU's features), so a damaged
entry is an :class:`~ember.errors.ArtifactError`: the entry is removed and
the module built again — never a crash or a wrong result.

Storage: ``$EMBER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ember``, else
``~/.cache/ember``.  ``EMBER_CACHE=0`` (or ``false``/``off``/``no``) turns
the cache off, as does ``ember.build(..., cache=False)``.
``EMBER_CACHE_MAX_BYTES`` bounds its size (default 2 GiB): after each store
the least recently used entries (a hit refreshes an entry's time) are
removed until the rest fit.

Concurrent builds are safe: an entry is written into a private temporary
directory and renamed into place (atomic); when two processes store the
same key, the first rename wins and the other discards its copy.  Removal
renames an entry away before deleting it, so a reader sees a whole entry
or none; a reader that loses the race gets an ArtifactError and rebuilds.
The cache is an optimisation: a directory that cannot be written costs the
time of a build (with one warning), never the build.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import stat
import time
import uuid
import warnings
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ember.errors import ArtifactError, EmberError
from ember.limits import bytes_setting

if TYPE_CHECKING:
    from ember.runtime.module import Module

DIR_VARIABLE = "EMBER_CACHE_DIR"
SWITCH_VARIABLE = "EMBER_CACHE"
MAX_BYTES_VARIABLE = "EMBER_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 2 << 30

_OFF = ("0", "false", "off", "no")
_ON = ("", "1", "true", "on", "yes")
_STALE_SECONDS = 3600
"""Temporary directories older than this were left by a killed process."""
_KEY = re.compile(r"[0-9a-f]{64}")
_TEMPORARY = (".tmp-", "..tmp-", ".trash-")
"""Names of the cache's own temporary directories (``export_library``'s
staging inside ours starts with ``..tmp-``).  Nothing else in the directory
is ever touched, whatever ``EMBER_CACHE_DIR`` points at."""


def enabled() -> bool:
    """Whether ``ember.build`` uses the cache (``EMBER_CACHE``)."""
    setting = os.environ.get(SWITCH_VARIABLE, "").strip().lower()
    if setting in _OFF:
        return False
    if setting in _ON:
        return True
    raise EmberError(
        f"{SWITCH_VARIABLE}={os.environ[SWITCH_VARIABLE]!r} must be 1 or 0 "
        "(or true/false, on/off, yes/no)"
    )


def directory() -> Path:
    """Where entries live: ``$EMBER_CACHE_DIR`` or the user's cache directory.

    Raises :class:`OSError` when neither is set and there is no home
    directory to put one in.
    """
    chosen = os.environ.get(DIR_VARIABLE, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if base:
        return Path(base) / "ember"
    try:
        return Path.home() / ".cache" / "ember"
    except (RuntimeError, KeyError):  # no $HOME and no passwd entry
        raise OSError(f"there is no home directory; set {DIR_VARIABLE}") from None


def max_bytes() -> int:
    """The size bound of the cache (``EMBER_CACHE_MAX_BYTES``)."""
    return bytes_setting(MAX_BYTES_VARIABLE, DEFAULT_MAX_BYTES)


# --------------------------------------------------------------------------
# The key
# --------------------------------------------------------------------------


@functools.cache
def _toolchain() -> str:
    """ember's version and source digest, and the xDSL, llvmlite, LLVM versions."""
    import llvmlite
    import xdsl

    from ember import __version__
    from ember.runtime.jit import _llvm

    root = Path(__file__).resolve().parent.parent
    sources = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        sources.update(str(path.relative_to(root)).encode() + b"\0")
        sources.update(path.read_bytes() + b"\0")
    llvm_version = ".".join(map(str, _llvm().llvm_version_info))
    return (
        f"ember {__version__} sources {sources.hexdigest()} xdsl {xdsl.__version__} "
        f"llvmlite {llvmlite.__version__} llvm {llvm_version}"
    )


def _host() -> str:
    """The CPU that code is compiled for: name and features, as LLVM sees them."""
    from ember.runtime.jit import _llvm

    llvm = _llvm()
    return f"{llvm.get_host_cpu_name()} {llvm.get_host_cpu_features().flatten()}"


def build_key(
    ir_text: str,
    target: str,
    options: Any,
    params: Mapping[str, np.ndarray],
) -> str:
    """The cache key (sha256 hex) of one build; see the module docstring.
    ``options``: the build's :class:`~ember.compiler.CompileOptions` (a
    dataclass; the runtime does not import the compiler)."""
    key = hashlib.sha256()

    def field(name: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else value
        key.update(f"{name} {len(data)}\n".encode())
        key.update(data)

    field("toolchain", _toolchain())
    field("host", _host())
    field("target", " ".join(target.split()))
    field("options", repr(sorted(asdict(options).items())))
    field("ir", ir_text)
    for name in sorted(params):
        values = np.ascontiguousarray(params[name])
        digest = hashlib.sha256(values.reshape(-1).view(np.uint8)).hexdigest()
        field("param", f"{name} {values.dtype.str} {list(values.shape)} {digest}")
    return key.hexdigest()


# --------------------------------------------------------------------------
# Entries
# --------------------------------------------------------------------------


def lookup(key: str) -> Module | None:
    """The module stored under ``key``, or None; a damaged entry is removed."""
    from ember.runtime.module import load_module
    from ember.runtime.registry import UnknownFunctionError

    try:
        entry = directory() / key
    except OSError:
        return None  # store() says why, once per build
    if not entry.is_dir():
        return None
    try:
        module = load_module(entry)
    except UnknownFunctionError:
        return None  # sound, but calls a function not registered (yet): build
    except ArtifactError:
        _remove(entry)
        return None
    try:
        os.utime(entry)  # least recently used goes first
    except OSError:
        pass
    return module


def store(key: str, module: Module) -> None:
    """Keep ``module`` under ``key`` (atomically), then bound the cache's size."""
    staging = None
    try:
        root = directory()
        staging = root / f".tmp-{key[:16]}-{uuid.uuid4().hex[:8]}"
        # Entries are native code that is run without recompiling: a new
        # cache directory is the user's alone.
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        module.export_library(staging)
        try:
            staging.rename(root / key)
        except OSError:
            if not (root / key).is_dir():
                raise
            # Another process stored the same key first: theirs stays.
        _evict(root, max_bytes())
    except (OSError, ArtifactError) as e:
        where = "" if staging is None else f" {staging.parent}"
        warnings.warn(
            f"ember's compilation cache{where} cannot be written ({e}); "
            f"builds go on without it (set {SWITCH_VARIABLE}=0 to turn it off)",
            stacklevel=3,
        )
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _remove(entry: Path) -> None:
    """Delete ``entry``; rename it away first so no reader sees half of it."""
    doomed = entry.parent / f".trash-{uuid.uuid4().hex[:8]}"
    try:
        entry.rename(doomed)
    except OSError:
        return  # already gone (another process removed it)
    shutil.rmtree(doomed, ignore_errors=True)


def _size(entry: Path) -> int:
    total = 0
    for child in entry.iterdir():
        try:
            total += child.lstat().st_size
        except OSError:
            pass
    return total


def _evict(root: Path, limit: int) -> None:
    """Remove least recently used entries until the rest fit in ``limit`` bytes,
    and temporary directories that a killed process left behind."""
    entries = []
    now = time.time()
    for child in root.iterdir():
        try:
            info = child.lstat()
            if child.name.startswith(_TEMPORARY):
                if now - info.st_mtime > _STALE_SECONDS:
                    shutil.rmtree(child, ignore_errors=True)
            elif _KEY.fullmatch(child.name) and stat.S_ISDIR(info.st_mode):
                entries.append((info.st_mtime, _size(child), child))
        except OSError:
            continue  # removed meanwhile
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda item: item[0]):
        if total <= limit:
            break
        _remove(entry)
        total -= size
