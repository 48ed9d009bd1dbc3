"""Pin the platform's numerics before NumPy loads, so that a run gives the same bits on every x86-64
machine with AVX2 and FMA (docs/reproducibility.md).

Two libraries pick their code by CPU, and both change the last bits of a run:

* OpenBLAS picks its GEMM kernel (Haswell, SkylakeX, Zen, ...), and the kernels sum in different
  orders.  PINN hardly cares, but LySep amplifies round-off (its W_L solve is ill-conditioned).  lysep
  asks for the Haswell kernel (AVX2 + FMA), which every such machine runs; on an AVX-512 machine it costs
  about 10 % per iteration (docs/reproduce.md).
* NumPy dispatches its element-wise functions by CPU: on an AVX-512 machine ``np.exp``, ``np.log``,
  ``np.power`` and ``np.arctan`` (float64) run other code than on an AVX2 one, and the last bit of
  some results differs (``np.sin``, ``np.cos``, sums and products do not).  The problems' right-hand
  sides use ``exp`` (Section 4's solutions), so the data a run fits moved by an ulp, and an AVX-512 and
  an AVX2 machine disagreed at 1e-8 (rfls) to 1e-5 (LySep) relative.  lysep switches NumPy's AVX-512
  paths off (``NPY_DISABLE_CPU_FEATURES``); they serve only the one-off evaluation of the problem's
  data here, so the cost is nil (measured in docs/reproducibility.md).

A ``dask worker`` imports NumPy before it runs a task, so lysep's import there comes too late: started
with ``--preload lysep_cli.platform_pin``, its nanny imports this module, and the worker process it starts
inherits the pins (docs/cluster.md; lysep_cli/execution/cluster.py refuses workers without them).

This module must run before NumPy is imported (both libraries read the environment when they load):
``lysep_cli/__init__.py`` calls :func:`pin_platform` first.  Each pin is left alone where the user has
set its variable (their choice wins), where they opted out (``LYSEP_NATIVE_BLAS=1``,
``LYSEP_NATIVE_SIMD=1``), or where the CPU cannot run the pinned code.  Each record stores what actually
ran (``versions``, lysep_cli/store/fingerprint.py), so a run made without a pin is never mistaken for one made
with it.

No NumPy here.
"""

from __future__ import annotations

import os
import platform

PINNED_CORE = "Haswell"

#: NumPy's AVX-512 dispatch targets: NumPy 2.4 groups them as X86_V4 (+ ICL, SPR); earlier releases name
#: each.  Switching them off leaves AVX2 + FMA3, which every machine the BLAS pin serves has.  Naming a
#: target the installed NumPy does not dispatch to makes it warn (ImportWarning), so the list follows its
#: version, read without importing it.
AVX512_TARGETS = {(2, 4): ("X86_V4", "AVX512_ICL", "AVX512_SPR"),
                  (0, 0): ("AVX512F", "AVX512CD", "AVX512_KNL", "AVX512_KNM", "AVX512_SKX", "AVX512_CLX",
                           "AVX512_CNL", "AVX512_ICL", "AVX512_SPR")}


def _numpy_version() -> tuple[int, int]:
    from importlib import metadata

    try:
        major, minor = metadata.version("numpy").split(".")[:2]
        return int(major), int(minor)
    except (metadata.PackageNotFoundError, ValueError):
        return (0, 0)


def avx512_targets(numpy_version: tuple[int, int] | None = None) -> tuple[str, ...]:
    """NumPy's names of its AVX-512 dispatch targets for ``numpy_version`` (default: the installed one)."""
    version = _numpy_version() if numpy_version is None else numpy_version
    return next(names for since, names in sorted(AVX512_TARGETS.items(), reverse=True) if version >= since)


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


def _opted_out(env: dict[str, str] | os._Environ, name: str) -> bool:
    return env.get(name, "") not in ("", "0")


def _x86_with_avx2(machine: str | None, flags: set[str] | None) -> bool:
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return False
    have = _cpu_flags() if flags is None else flags
    return {"avx2", "fma"} <= have


def pin_openblas_core(environ: dict[str, str] | None = None, machine: str | None = None,
                      flags: set[str] | None = None) -> str | None:
    """Set ``OPENBLAS_CORETYPE=Haswell`` in ``environ`` (default ``os.environ``) where that is safe and
    wanted; returns the value set, or None when nothing was set."""
    env = os.environ if environ is None else environ
    if "OPENBLAS_CORETYPE" in env or _opted_out(env, "LYSEP_NATIVE_BLAS"):
        return None
    if not _x86_with_avx2(machine, flags):
        return None
    env["OPENBLAS_CORETYPE"] = PINNED_CORE
    return PINNED_CORE


def pin_numpy_simd(environ: dict[str, str] | None = None, machine: str | None = None,
                   flags: set[str] | None = None) -> str | None:
    """Set ``NPY_DISABLE_CPU_FEATURES`` to NumPy's AVX-512 targets in ``environ`` where that is wanted
    (an x86-64 machine with AVX2 + FMA; the user has set neither that variable nor
    ``NPY_ENABLE_CPU_FEATURES``, nor ``LYSEP_NATIVE_SIMD=1``); returns the value set, or None."""
    env = os.environ if environ is None else environ
    if ("NPY_DISABLE_CPU_FEATURES" in env or "NPY_ENABLE_CPU_FEATURES" in env
            or _opted_out(env, "LYSEP_NATIVE_SIMD")):
        return None
    if not _x86_with_avx2(machine, flags):
        return None
    have = _cpu_flags() if flags is None else flags
    if not any(f.startswith("avx512") for f in have):
        return None  # nothing to switch off: NumPy already runs its AVX2 paths
    value = " ".join(avx512_targets())
    env["NPY_DISABLE_CPU_FEATURES"] = value
    return value


def pin_platform() -> None:
    """Both pins, in ``os.environ``; call before NumPy is imported."""
    pin_openblas_core()
    pin_numpy_simd()


#: the variables the pins set
PIN_VARIABLES = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")


def shell_exports(environ: dict[str, str] | None = None) -> str:
    """``export VAR='value'`` lines for the pins in ``environ`` (default ``os.environ``, pinned when lysep
    was imported): what a process started elsewhere needs in its environment before it loads NumPy, e.g. a
    ``dask worker --no-nanny`` (docs/cluster.md).  Empty where nothing is pinned."""
    env = os.environ if environ is None else environ
    return "".join(f"export {name}='{env[name]}'\n" for name in PIN_VARIABLES if name in env)
