"""Which array library a stacked run computes with (``lysep run --device``), and what its records say.

Devices:

- ``cpu``: the per-run CPU engine of lysep_cli/numerics (the archive's path; not this package).
- ``cpu-stacked``: the stacked engine on NumPy, on the CPU: the same code as ``cuda`` with ``xp = numpy``, so
  the stacking, the per-seed masks and the records' plumbing run (and are tested) on any machine.
- ``cuda``: the stacked engine on CuPy, on one NVIDIA GPU (``pip install lysep[gpu]``).

A backend's :meth:`Backend.fingerprint` is what the records made with it add to the platform fingerprint
(lysep_cli/store/fingerprint.py): the device, the array library and its version, the GPU model and CUDA
version, and a numerics id of its own (the stacked engine's sources with the CPU engine's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np


DEVICES = ("cpu", "cpu-stacked", "cuda")
STACKED_DEVICES = ("cpu-stacked", "cuda")


class DeviceUnavailable(Exception):
    """The device asked for cannot be used here (no CuPy, no GPU): one line saying why."""


@dataclass(frozen=True)
class Backend:
    """An array namespace ``xp`` (numpy or cupy) and the device it runs on."""

    device: str
    xp: ModuleType

    def asarray(self, a: Any) -> Any:
        """A host (NumPy) array on the device (float64 arrays keep their bits)."""
        return self.xp.asarray(a)

    def host(self, a: Any) -> np.ndarray:
        """A device array back on the host as NumPy."""
        return a.get() if hasattr(a, "get") and self.xp is not np else np.asarray(a)

    def fingerprint(self, numerics: str) -> dict[str, str]:
        """The entries a record made on this backend adds to (or replaces in) the platform fingerprint;
        ``numerics``: the stacked engine's numerics id (store/fingerprint.stacked_numerics_id)."""
        out = {"device": self.device, "numerics": numerics,
               "array_library": f"{self.xp.__name__} {self.xp.__version__}"}
        if self.xp is not np:
            rt = self.xp.cuda.runtime
            props = rt.getDeviceProperties(self.xp.cuda.Device().id)
            name = props["name"]
            out["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            v = rt.runtimeGetVersion()
            out["cuda"] = f"{v // 1000}.{v % 1000 // 10}"
        return out


#: NumPy on this machine's CPU: a run alone (``--device cpu``)
CPU = Backend("cpu", np)


def resolve(device: str) -> Backend:
    """The backend of a stacked ``device``; :class:`DeviceUnavailable` (one line) when it cannot run here."""
    if device == "cpu-stacked":
        return Backend(device, np)
    if device != "cuda":
        raise DeviceUnavailable(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        raise DeviceUnavailable("--device cuda needs CuPy: pip install 'lysep[gpu]' (CuPy for CUDA 12), "
                                "or use --device cpu") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, no device
        raise DeviceUnavailable(f"--device cuda: no usable NVIDIA GPU ({' '.join(str(exc).split())})") from None
    if count < 1:
        raise DeviceUnavailable("--device cuda: no NVIDIA GPU found")
    cupy.cuda.Device(gpu_index(count)).use()  # this thread's current device
    return Backend(device, cupy)


def gpu_count() -> int:
    """The NVIDIA GPUs this process sees (CUDA_VISIBLE_DEVICES), 0 without CuPy or a GPU."""
    try:
        import cupy  # type: ignore[import-not-found]

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # ImportError, CUDARuntimeError: no driver, no device
        return 0


def gpu_index(count: int) -> int:
    """The GPU this process computes on: ``$LYSEP_GPU`` (an index among the ``count`` GPUs that
    CUDA_VISIBLE_DEVICES shows; set on a LocalCluster's workers, lysep_cli/execution/local_share.py), else
    0; :class:`DeviceUnavailable` for an index that is no GPU here."""
    text = os.environ.get("LYSEP_GPU", "").strip()
    if not text:
        return 0
    if not (text.isascii() and text.isdecimal()) or int(text) >= count:
        raise DeviceUnavailable(f"--device cuda: LYSEP_GPU={text!r} is not a GPU index here (0 to {count - 1})")
    return int(text)
