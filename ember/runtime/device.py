"""Devices: where an NDArray lives and where a compiled module runs.

A :class:`Device` is a plain value — a kind (``"cpu"`` or ``"cuda"``) and an
index — mirroring TVM's ``tvm.cpu(0)`` / ``tvm.cuda(0)`` and DLPack's
``DLDevice`` (whose type codes it carries, so ``__dlpack_device__`` can be
answered without a lookup).  Constructing a device never touches a driver:
``cuda(0)`` works on a machine without a GPU, and only :attr:`Device.exist`
asks the CUDA driver, lazily, and answers ``False`` instead of raising.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ember.errors import RuntimeFailure

# DLPack's DLDeviceType codes (dlpack.h): the numbers other frameworks expect.
DLPACK_DEVICE_CODES: dict[str, int] = {"cpu": 1, "cuda": 2}
_KINDS_BY_CODE: dict[int, str] = {
    code: kind for kind, code in DLPACK_DEVICE_CODES.items()
}


@dataclass(frozen=True)
class Device:
    """A device: ``Device("cpu", 0)`` prints as ``cpu:0``.

    Equal devices hash equal, so devices can key dictionaries (a pipeline
    places stages by device).  Use :func:`cpu`, :func:`cuda` or
    :func:`device` rather than the constructor; they validate their input.
    """

    kind: str
    index: int = 0

    def __post_init__(self) -> None:
        if self.kind not in DLPACK_DEVICE_CODES:
            known = ", ".join(DLPACK_DEVICE_CODES)
            raise RuntimeFailure(
                f"unknown device kind {self.kind!r}: expected one of {known}"
            )
        if (
            not isinstance(self.index, int)
            or isinstance(self.index, bool)
            or self.index < 0
        ):
            raise RuntimeFailure(
                f"device index must be a non-negative integer, got {self.index!r} for {self.kind}"
            )

    def __str__(self) -> str:
        return f"{self.kind}:{self.index}"

    def __repr__(self) -> str:
        return f"{self.kind}({self.index})"

    # TVM spells these device_type / device_id; keep its names for users.
    @property
    def device_type(self) -> int:
        """The DLPack device type code (1 for cpu, 2 for cuda)."""
        return DLPACK_DEVICE_CODES[self.kind]

    @property
    def device_id(self) -> int:
        return self.index

    @property
    def exist(self) -> bool:
        """Whether this device is present on this machine.

        ``cpu:N`` exists for each core this process may run on (a pipeline
        stage placed on ``cpu:1`` runs on the second core).  For CUDA the
        driver is asked on first use (and the answer cached); a missing driver
        or library answers ``False``.
        """
        if self.kind == "cpu":
            from ember.runtime.threads import available_cores

            return self.index < available_cores()
        return self.index < _cuda_device_count()

    def dlpack_device(self) -> tuple[int, int]:
        """``(device_type, device_id)`` as ``__dlpack_device__`` returns it."""
        return (self.device_type, self.index)


def cpu(index: int = 0) -> Device:
    """The host CPU (``cpu(0)``; the whole host is one device, as in TVM)."""
    return Device("cpu", index)


def cuda(index: int = 0) -> Device:
    """CUDA GPU ``index``; constructing it needs no driver (see ``.exist``)."""
    return Device("cuda", index)


def device(kind: str | Device, index: int | None = None) -> Device:
    """A device from ``("cuda", 0)``, ``"cuda:0"``, ``"cuda"`` or a Device.

    Mirrors ``tvm.device(...)``; the ``"kind:index"`` form is the one the
    pipeline dialect writes in ``device = "cpu:0"``.
    """
    if isinstance(kind, Device):
        if index is not None and index != kind.index:
            raise RuntimeFailure(f"device {kind} given with a different index {index}")
        return kind
    if not isinstance(kind, str):
        raise RuntimeFailure(f"expected a device name such as 'cpu:0', got {kind!r}")
    name, sep, written_index = kind.strip().partition(":")
    if sep:
        if index is not None:
            raise RuntimeFailure(
                f"device {kind!r} already names an index; do not also pass {index}"
            )
        if not written_index.isdigit():
            raise RuntimeFailure(
                f"malformed device {kind!r}: expected 'kind:index', e.g. 'cuda:0'"
            )
        index = int(written_index)
    # TVM accepts "gpu" and "llvm" as device names; ember keeps only the two kinds.
    return Device(name, 0 if index is None else index)


def from_dlpack_device(device_type: int, device_id: int) -> Device:
    """The Device for a ``__dlpack_device__()`` pair; unknown kinds are errors."""
    kind = _KINDS_BY_CODE.get(int(device_type))
    if kind is None:
        raise RuntimeFailure(
            f"DLPack device type {device_type} is not supported: ember knows cpu (1) and cuda (2)"
        )
    return Device(kind, int(device_id))


@functools.cache
def _cuda_device_count() -> int:
    """Number of CUDA devices, 0 where there is no driver or no GPU."""
    try:
        from cuda.bindings import driver
    except Exception:  # noqa: BLE001 - no cuda-python at all means no device
        return 0
    try:
        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return 0
        status, count = driver.cuDeviceGetCount()
        if status != driver.CUresult.CUDA_SUCCESS:
            return 0
        return int(count)
    except Exception:  # noqa: BLE001 - a missing libcuda raises a RuntimeError subclass
        return 0
