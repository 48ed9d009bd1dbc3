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
