"""ember's exception types: every user mistake becomes one of these.

Tools catch :class:`EmberError` and print its message with exit code 1; a
Python traceback from a tool is always a bug in ember, never a user mistake.
"""

from __future__ import annotations


class EmberError(Exception):
    """Base class of all errors ember reports to users."""


class IRError(EmberError, ValueError):
    """Malformed or ill-typed IR text; the message carries the diagnostic."""

    def __init__(self, diagnostic: str) -> None:
        super().__init__(diagnostic)
        self.diagnostic = diagnostic


class PassError(EmberError):
    """A pass could not run on valid input (unsupported op, bad option)."""


class RuntimeFailure(EmberError, RuntimeError):
    """A compiled module or executor was used wrongly or failed to run."""


class TargetError(EmberError, ValueError):
    """A target string that does not parse: an unknown option, CPU or CPU
    feature (named, with the closest known names), or an option of another
    kind of target."""


class ArtifactError(RuntimeFailure):
    """An exported module or pipeline on disk is missing, damaged, forged, or
    of another format version; the message names the file and the field."""


class OnnxImportError(EmberError, ValueError):
    """An ONNX model that ember cannot import faithfully: an unsupported
    operator, attribute or data type (named with the node and the opset), a
    dynamic shape left unfixed, or a damaged file."""


class AllocationError(EmberError, MemoryError):
    """A value would need more memory than ember's allocation limit allows
    (:func:`ember.limits.max_alloc_bytes`); the message names the value and
    its size."""
