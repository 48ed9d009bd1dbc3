"""Pin OpenBLAS's kernel so that runs give the same bits on every x86-64 machine with AVX2.

OpenBLAS picks its GEMM kernel by CPU (Haswell, SkylakeX, Zen, ...), and the kernels sum in different
orders.  PINN does not care, but LySep amplifies round-off (its W_L solve is ill-conditioned): the same
run on an AVX2 and an AVX-512 machine ends 1e-4 to 1e-3 apart (relative, W_L) after 2000 sweeps, which
``lysep verify`` could not tell from a wrong number.  So lysep asks OpenBLAS for its Haswell kernel (AVX2
+ FMA, which every such machine runs), the kernel the archive under ``results/paper/`` was made with;
on an AVX-512 machine it costs about 10 % per iteration (docs/reproduce.md).

This module must run before NumPy is imported (OpenBLAS reads ``OPENBLAS_CORETYPE`` when it loads):
``lysep_cli/__init__.py`` calls :func:`pin_openblas_core` first.  It does nothing when the user has set
``OPENBLAS_CORETYPE`` (their choice wins), when ``LYSEP_NATIVE_BLAS=1`` (the machine's own kernel), or
when the CPU cannot run the Haswell kernel.  Each record stores the kernel it actually ran with
(``versions.blas_core``), so a run made without the pin is never mistaken for one made with it.

No NumPy here.
"""

from __future__ import annotations

import os
import platform

PINNED_CORE = "Haswell"


def _cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str]:
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows; for the records."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def pin_openblas_core(environ: dict[str, str] | None = None, machine: str | None = None,
                      flags: set[str] | None = None) -> str | None:
    """Set ``OPENBLAS_CORETYPE=Haswell`` in ``environ`` (default ``os.environ``) where that is safe and
    wanted; returns the value set, or None when nothing was set."""
    env = os.environ if environ is None else environ
    if "OPENBLAS_CORETYPE" in env or env.get("LYSEP_NATIVE_BLAS", "") not in ("", "0"):
        return None
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return None
    have = _cpu_flags() if flags is None else flags
    if not {"avx2", "fma"} <= have:
        return None
    env["OPENBLAS_CORETYPE"] = PINNED_CORE
    return PINNED_CORE
