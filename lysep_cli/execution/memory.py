"""glibc malloc thresholds for the solvers' temporaries (speed only: allocation changes no number).

The solvers make many temporary arrays of 0.1-30 MB per iteration.  glibc serves allocations above its
mmap threshold (128 KiB at start, raised dynamically as large blocks are freed, unless any threshold is
set) with fresh mmap-ed pages, and unmaps them on free: every such temporary then costs page faults.
Measured (benchmarks/bench_sweep.py child, one thread, CPU seconds per iteration): PINN elliptic-2d
(3,30) 0.0044 s -> 0.0020 s with the thresholds below, LySep parabolic-5d (3,100) 0.187 -> 0.180 s,
PINN elliptic-10d (3,150) unchanged.  dask's nanny sets ``MALLOC_TRIM_THRESHOLD_=65536``, which
switches the dynamic threshold off and made cluster runs about 2x slower (docs/cluster.md).
"""

from __future__ import annotations

import ctypes
import sys

MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic mmap threshold on 64-bit
TRIM_THRESHOLD = 64 << 20

_DONE = False


def tune_malloc() -> bool:
    """Set glibc's mmap and trim thresholds once per process; False where there is no glibc."""
    global _DONE
    if _DONE:
        return True
    _DONE = True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
        ok &= libc.mallopt(-1, TRIM_THRESHOLD)  # M_TRIM_THRESHOLD
        return bool(ok)
    except (OSError, AttributeError):  # musl or another libc: leave its defaults
        return False


def channel_bytes(n_in: int, n_second: int, L: int, M: int, N: int) -> int:
    """Bytes of the channels (a, d_j, the second-derivative channels) of the L-1 hidden layers on N points:
    (1 + n_in + n_second) * M * N doubles per layer.  Every solver holds at least these (PINN for its
    backward pass, LySep as its auxiliary variables), so a run needs at least this much memory."""
    return 8 * (1 + n_in + n_second) * M * N * max(1, L - 1)


def available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """Memory available to new processes (``MemAvailable``), None where unknown."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
