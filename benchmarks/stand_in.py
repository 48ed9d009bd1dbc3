"""A stand-in for the GPU, for a dry run of the GPU call on a machine without one (issue 46, item 3).

The stand-in device is benchmarks/launch_count.py's counting namespace (NumPy behind a namespace not named
"numpy", so the stacked engine takes every CuPy branch, its CUDA kernels emulated) with every counted event —
a kernel launch, an upload, a host sync — sleeping ``FACTOR`` times the cost launch_count calibrated from the
design check (42.6 µs; benchmarks/results/launch_count.json): a launch-bound device ``FACTOR`` times slower
than the predictions assume, on top of this CPU's own arithmetic (far slower than a GPU's at the large cells,
so a dry run here is a harsher test of the call's time limits than a slow GPU would be).

    python benchmarks/stand_in.py FACTOR run elliptic-2d --device cuda ...   # `lysep` with the stand-in as cuda

``install(FACTOR)`` makes ``--device cuda`` resolve to the stand-in in this process (benchmarks/gpu_check.py
``--stand-in FACTOR`` calls it; its subprocesses run through this script).  Nothing here is used by lysep.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import lysep_cli  # noqa: E402,F401  first: the BLAS pin

import json  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from lysep_cli.accel import backend as backends  # noqa: E402

#: the calibrated cost of one event (launch, upload, sync) the predictions assume, seconds
CALIBRATED_S = json.loads((ROOT / "benchmarks/results/launch_count.json").read_text())["calibration"]["launch_s"]


@dataclass(frozen=True)
class StandIn(backends.Backend):
    """The counting namespace as the device ``cuda``; its records say what it is."""

    factor: float = 1.0

    def fingerprint(self, numerics: str) -> dict[str, str]:
        return {"device": self.device, "numerics": numerics,
                "array_library": f"stand-in (counting numpy {self.xp.__version__})",
                "gpu": f"stand-in: {self.factor:g} x {CALIBRATED_S * 1e6:.1f} us per launch, upload and sync",
                "cuda": "none"}


def install(factor: float) -> StandIn:
    """``--device cuda`` in this process is the stand-in, each event sleeping ``factor`` x the calibrated cost."""
    import launch_count

    launch_count.DELAY_S = factor * CALIBRATED_S
    be = StandIn("cuda", launch_count.CountingNamespace(), factor)
    real = backends.resolve

    def resolve(device: str) -> backends.Backend:
        return be if device == "cuda" else real(device)

    backends.resolve = resolve
    backends.gpu_count = lambda: 1
    return be


if __name__ == "__main__":
    install(float(sys.argv[1]))
    from lysep_cli.cli import main

    sys.argv = ["lysep", *sys.argv[2:]]
    main()
