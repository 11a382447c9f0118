"""Reading exported artifacts as untrusted data: the one way in.

Module artifacts (``ember.load_module``) and pipeline artifacts
(``ember.pipeline.load_library``) read every file through
:class:`ArtifactDir`, which

* opens only **regular files inside the directory**: plain names (no
  ``/``, no ``..``), ``O_NOFOLLOW`` (a symbolic link, to ``/dev/zero`` or to
  a file elsewhere, is refused), ``O_NONBLOCK`` (opening a FIFO cannot
  block), then ``fstat`` — a FIFO, a device or a directory is refused;
* **bounds every read** by the size the manifest declares (a JSON document
  with no declared size by :data:`MAX_JSON_BYTES`), and checks the file has
  exactly that size;
* checks each payload file's **sha256**, and a JSON document's **seal**: the
  sha256 of its canonical text (keys sorted, no spaces) without the
  ``"sha256"`` field, stored in that field (:func:`seal`).  So an edit of
  any file, the manifest included, is an error naming the file;
* parses JSON without leaking ``RecursionError`` (100 000 nested ``[``),
  and checks it against a **schema** (:func:`check_schema`) whose errors
  name the field (``entry.inputs[0].shape[1]``).

Checksums detect accidents, not forgers: whoever can write the files can
recompute them.  What a forgery can still not do is covered by the loaders'
cross-checks of each manifest field against the payload; see the trust
section of ``docs/runtime.md``.  Every problem is an
:class:`~ember.errors.ArtifactError`.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import mmap
import os
import re
import stat
import struct
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import ArtifactError

MAX_JSON_BYTES = 16 * 1024 * 1024
"""The largest manifest or pipeline config read (they hold no tensors)."""

SEAL_FIELD = "sha256"

_SHA256 = re.compile(r"[0-9a-f]{64}")


# --------------------------------------------------------------------------
# Schemas: what a JSON document must look like, with field paths in errors
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """A leaf of a schema: a description (``"a string"``) and a predicate."""

    description: str
    accepts: Callable[[Any], bool]


@dataclass(frozen=True)
class MapOf:
    """An object with any (string) keys whose values all match ``value``."""

    value: Any


@dataclass(frozen=True)
class OneOf:
    """Any of ``choices`` (objects told apart by their keys)."""

    description: str
    choices: tuple[Any, ...]


def _is_dtype_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError):
        return False
    return dtype.name == value and dtype.kind in "biufc"


STRING = Check("a string", lambda v: isinstance(v, str))
NAME = Check("a non-empty string", lambda v: isinstance(v, str) and bool(v))
NATURAL = Check(
    "a non-negative integer", lambda v: type(v) is int and 0 <= v < 2**63
)
SHA256 = Check(
    "a sha256 digest (64 lowercase hex digits)",
    lambda v: isinstance(v, str) and _SHA256.fullmatch(v) is not None,
)
DTYPE = Check("a numeric dtype name such as 'float32'", _is_dtype_name)
ANY = Check("any JSON value", lambda v: True)

TENSOR = {"name": STRING, "shape": [NATURAL], "dtype": DTYPE}
"""A :class:`~ember.runtime.module.TensorSpec` as JSON."""


def _describe(value: Any) -> str:
    kind = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)) or value is None:
        return kind
    text = json.dumps(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"


def _problem(value: Any, schema: Any, path: str) -> tuple[str, str] | None:
    """(field path, what is wrong) for the first mismatch, or None."""
    if isinstance(schema, Check):
        if schema.accepts(value):
            return None
        return path, f"must be {schema.description}, got {_describe(value)}"
    if isinstance(schema, OneOf):
        if any(_problem(value, choice, path) is None for choice in schema.choices):
            return None
        return path, f"must be {schema.description}, got {_describe(value)}"
    if isinstance(schema, list):
        if not isinstance(value, list):
            return path, f"must be a list, got {_describe(value)}"
        for i, item in enumerate(value):
            found = _problem(item, schema[0], f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(schema, MapOf):
        if not isinstance(value, dict):
            return path, f"must be an object, got {_describe(value)}"
        for key, item in value.items():
            found = _problem(item, schema.value, f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    assert isinstance(schema, dict), schema
    if not isinstance(value, dict):
        return path, f"must be an object, got {_describe(value)}"
    for key, item_schema in schema.items():
        field = f"{path}.{key}" if path else key
        if key not in value:
            return field, "is missing"
        found = _problem(value[key], item_schema, field)
        if found is not None:
            return found
    return None


def check_schema(value: Any, schema: Any, where: str, path: str = "") -> None:
    """Raise :class:`ArtifactError` ``"{where}: field a.b[0] must be …"``
    unless ``value`` matches ``schema``.

    A schema is a :class:`Check`, ``[item_schema]`` (a list), ``{key:
    schema}`` (an object with at least these keys), :class:`MapOf` or
    :class:`OneOf`.  ``path`` is where ``value`` sits in its document.
    """
    found = _problem(value, schema, path)
    if found is not None:
        field, what = found
        raise ArtifactError(f"{where}: field {field or '(the document)'} {what}")


# --------------------------------------------------------------------------
# Seals: a JSON document's checksum, kept inside it
# --------------------------------------------------------------------------


def _canonical_digest(document: Mapping[str, Any]) -> str:
    body = {key: value for key, value in document.items() if key != SEAL_FIELD}
    text = json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )
    return hashlib.sha256(text.encode()).hexdigest()


def check_seal(document: Mapping[str, Any], where: str) -> None:
    """Fail unless ``document``'s ``"sha256"`` field is the digest of the rest."""
    check_schema(document, {SEAL_FIELD: SHA256}, where)
    try:
        digest = _canonical_digest(document)
    except (RecursionError, ValueError) as e:
        raise ArtifactError(f"{where}: cannot be checked: {e}") from None
    if digest != document[SEAL_FIELD]:
        raise ArtifactError(
            f"{where}: its content does not match its own sha256 field "
            "(the file was modified after export)"
        )


def seal(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with field ``"sha256"``: the digest of its canonical text
    (keys sorted, compact, ASCII) without that field."""
    return {**document, SEAL_FIELD: _canonical_digest(document)}


# --------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------


def is_plain_name(name: Any) -> bool:
    """A file or directory name that stays inside its directory."""
    return (
        isinstance(name, str)
        and bool(name)
        and name not in (".", "..")
        and "/" not in name
        and "\0" not in name
        and not name.startswith(".")
    )


class ArtifactDir:
    """An artifact directory whose files are read as untrusted data."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _checked_name(self, name: Any) -> str:
        if not is_plain_name(name):
            raise ArtifactError(
                f"corrupt artifact {self.path}: {name!r} is not a plain file name "
                "(artifacts refer only to files directly inside their directory)"
            )
        return name

    def read(self, name: str, size: int, sha256: str | None = None) -> bytes:
        """The ``size`` bytes of regular file ``name``, checked against ``sha256``."""
        path = self.path / self._checked_name(name)
        data = self._read_regular(path, size, exact=True)
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise ArtifactError(
                f"corrupt artifact {self.path}: {name} does not match its checksum "
                "(the file was truncated or modified after export)"
            )
        return data

    def map(self, name: str, size: int, sha256: str) -> memoryview:
        """Regular file ``name`` of ``size`` bytes mapped read-only (private,
        copy-on-write: the process shares the file's pages and cannot change
        the file), checked against ``sha256`` once, now.

        The checks of :meth:`read` apply.  What they cannot cover: a file
        truncated by another process *after* this check makes reading the
        missing pages fail with SIGBUS, as for any mapped file.
        """
        path = self.path / self._checked_name(name)
        fd = self._open_regular(path, size, exact=True)
        try:
            # mmap cannot map 0 bytes; an empty file still has a checksum.
            mapping: Any = (
                mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
                if size
                else b""
            )
        except OSError as e:
            raise ArtifactError(f"cannot map {path}: {e.strerror}") from None
        finally:
            os.close(fd)
        if hashlib.sha256(mapping).hexdigest() != sha256:
            raise ArtifactError(
                f"corrupt artifact {self.path}: {name} does not match its checksum "
                "(the file was truncated or modified after export)"
            )
        return memoryview(mapping)

    def read_json(self, name: str, what: str) -> tuple[Any, bytes, str]:
        """JSON document ``name`` (at most :data:`MAX_JSON_BYTES`), its bytes,
        and ``"{what} {path}"`` to start messages about it with.

        Callers then check its format and version, its schema
        (:func:`check_schema`) and its seal (:func:`check_seal`), in that
        order, so that a document of another kind or version says so.
        """
        path = self.path / self._checked_name(name)
        raw = self._read_regular(path, MAX_JSON_BYTES, exact=False)
        where = f"{what} {path}"
        try:
            document = json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise ArtifactError(f"{where}: the JSON is nested too deeply") from None
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, huge ints
            raise ArtifactError(f"{where}: not valid JSON: {e}") from None
        return document, raw, where

    def subdirectory(self, name: str) -> ArtifactDir:
        """Directory ``name`` inside this one: a real directory, not a link."""
        path = self.path / self._checked_name(name)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            raise ArtifactError(
                f"incomplete artifact {self.path}: {name} is missing"
            ) from None
        except OSError as e:
            raise ArtifactError(f"cannot read {path}: {e.strerror}") from None
        if not stat.S_ISDIR(info.st_mode):
            raise ArtifactError(
                f"corrupt artifact {self.path}: {name} is {_kind(info.st_mode)}, "
                "not a directory inside the artifact"
            )
        return ArtifactDir(path)

    def _read_regular(self, path: Path, size: int, exact: bool) -> bytes:
        """At most ``size`` bytes (exactly, if ``exact``) of regular file ``path``."""
        fd = self._open_regular(path, size, exact)
        try:
            chunks, left = [], size
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        except OSError as e:
            raise ArtifactError(f"cannot read {path}: {e.strerror}") from None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if exact and len(data) != size:
            raise ArtifactError(
                f"corrupt artifact {self.path}: {path.name} changed while it was read"
            )
        return data

    def _open_regular(self, path: Path, size: int, exact: bool) -> int:
        """A descriptor of regular file ``path`` (not a link, FIFO or device)
        of at most ``size`` bytes (exactly, if ``exact``); the caller closes it."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise ArtifactError(
                f"incomplete artifact {self.path}: {path.name} is missing"
            ) from None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ArtifactError(
                    f"corrupt artifact {self.path}: {path.name} is a symbolic link; "
                    "artifacts hold regular files only"
                ) from None
            raise ArtifactError(f"cannot read {path}: {e.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ArtifactError(
                    f"corrupt artifact {self.path}: {path.name} is {_kind(info.st_mode)}; "
                    "artifacts hold regular files only"
                )
            if exact and info.st_size != size:
                raise ArtifactError(
                    f"corrupt artifact {self.path}: {path.name} does not match its checksum "
                    f"(it has {info.st_size} bytes, the manifest says {size}: the file was "
                    "truncated or modified after export)"
                )
            if info.st_size > size:
                raise ArtifactError(
                    f"corrupt artifact {self.path}: {path.name} has {info.st_size} bytes, "
                    f"more than the {size} such a file may have"
                )
        except OSError as e:
            os.close(fd)
            raise ArtifactError(f"cannot read {path}: {e.strerror}") from None
        except ArtifactError:
            os.close(fd)
            raise
        return fd


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


# --------------------------------------------------------------------------
# .npz archives (params, constants) without trusting their headers
# --------------------------------------------------------------------------


def read_npz(blob: bytes, what: str, kind: str) -> dict[str, np.ndarray]:
    """Named arrays of an uncompressed ``.npz`` (what ``np.savez`` writes).

    Checked before anything is allocated: every member is stored (not
    compressed), is a ``.npy`` of a numeric dtype, and holds exactly the
    bytes its header's shape and dtype need — so a forged header cannot
    make the reader allocate more than the file holds.  Errors read
    ``"{what} is not a valid {kind} archive (.npz): …"``.
    """
    bad = f"{what} is not a valid {kind} archive (.npz)"
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")
                if name == info.filename or not name:
                    raise ArtifactError(
                        f"{bad}: member {info.filename!r} is not a .npy array"
                    )
                if name in arrays:
                    raise ArtifactError(f"{bad}: array {name!r} appears twice")
                if info.compress_type != zipfile.ZIP_STORED:
                    raise ArtifactError(
                        f"{bad}: array {name!r} is compressed; "
                        "ember writes stored arrays only"
                    )
                arrays[name] = _read_npy(archive, info, f"{bad}: array {name!r}")
    except ArtifactError:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        ValueError,
        OSError,
        EOFError,
        struct.error,
        NotImplementedError,
        KeyError,
    ) as e:
        raise ArtifactError(f"{bad}: {e}") from None
    return arrays


def _read_npy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str) -> np.ndarray:
    fmt = np.lib.format
    with archive.open(info) as member:
        version = fmt.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(member)
        else:
            raise ArtifactError(f"{what}: unsupported .npy version {version}")
        if dtype.hasobject or dtype.kind not in "biufc":
            raise ArtifactError(f"{what}: dtype {dtype} is not a numeric dtype")
        nbytes = prod(shape) * dtype.itemsize
        if info.file_size - member.tell() != nbytes:
            raise ArtifactError(
                f"{what}: its header says {dtype}{list(shape)} ({nbytes} bytes) but it "
                f"holds {info.file_size - member.tell()} bytes"
            )
        data = member.read(nbytes)
    order = "F" if fortran else "C"
    values = np.frombuffer(data, dtype=dtype).reshape(shape, order=order)
    return values.copy()  # writable and owning its memory, as np.load's arrays
