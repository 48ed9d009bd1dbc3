"""The platform fingerprint every record carries (its ``versions``): what decides a run's last bits.

Keys (all strings; a record made before a key existed lacks it and reads as "unrecorded")::

    machine      CPU model and count (for the timings; the bits do not depend on it)
    numpy_simd   NumPy's dispatch targets in use, e.g. "X86_V3" (lysep_cli/platform_pin.py)
    blas         the BLAS libraries and versions (NumPy's and SciPy's OpenBLAS)
    blas_core    the kernel they run, e.g. "Haswell"
    numpy, scipy, python, lysep    versions
    numerics     the numerics id: sha256 (16 hex digits) of the modules that compute a run and of the
                 versions of the compiler that runs some of them (numba, llvmlite: :data:`COMPILERS`)

Two runs of the same (spec, solver, L, M, seed, iterations) are bit-identical when every key of
:data:`EXACT_KEYS` is recorded and equal on both (docs/reproducibility.md).
"""

from __future__ import annotations

import hashlib
import os
import platform
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Mapping

from lysep_cli.platform_pin import cpu_model

#: the modules a run's numbers come from (the data set has its own hash in each record)
NUMERIC_SOURCES = ("numerics/*.py", "accel/*.py", "solvers/*.py", "solvers/lysep/*.py")

#: packages whose version is hashed into the numerics id: numba compiles σ's sin/cos and the fit sums
#: (lysep_cli/numerics/fused.py, sincos.py; which runs use it: ``sincos.NUMBA_UP_TO``, in those sources)
COMPILERS = ("numba", "llvmlite")

#: the keys that fix a run's bits; the CPU model is not one of them
EXACT_KEYS = ("numerics", "numpy_simd", "blas", "blas_core", "numpy", "scipy", "python")
#: the keys a run of the stacked engine adds (lysep_cli/accel/backend.py; docs/gpu.md): they fix its bits too,
#: and a record without them (the CPU engine's) reads them as absent on both sides
DEVICE_KEYS = ("device", "array_library", "gpu", "cuda")
UNRECORDED = "unrecorded"

#: numerics ids of code changed without changing a bit, each mapped to the earlier id whose bits it keeps
#: ({later id: earlier id}). Each claim was measured when the change was made (docs/reproducibility.md,
#: "Same bits, new numerics id"), and every `lysep verify` at the exact level checks it again: it reruns
#: records of the earlier id with today's code and fails on one differing bit.
SAME_BITS_AS: dict[str, str] = {
    # lazy SymPy / scipy.stats imports, Halton draws of at most 2^16, rejected trials released (2026-11-28)
    "d3dec26e99c7113f": "fa2a8cc33a91c967",
    # numba's kernels off in LySep runs with (M, N_train) arrays above 2^18 values: the NumPy paths
    # (2026-11-28)
    "abee53243e14febb": "d3dec26e99c7113f",
    # the poly baseline added (solvers/poly.py, numerics/polynomial.py; metrics.phi/loss dispatch to the
    # network's own functions for a network); no other solver's path changed (2026-11-28)
    "22517c9e1cd5bc9c": "abee53243e14febb",
    # numba's and llvmlite's versions hashed into the id, NUMBA_UP_TO moved into numerics/sincos.py
    # (numba 0.68.1, llvmlite 0.50.0; measured: 10 archived runs of 5 solvers rerun bit-identical, 2026-11-28)
    "cb10ae3207157c4b": "abee53243e14febb",
    # the merge of 2026-11-28's branches: formula checks (numerics/expressions.py, user_problems.py,
    # dataset.py: refusals only), poly (22517c9e1cd5bc9c) and numba in the id (cb10ae3207157c4b); measured:
    # the cheapest archived run of every solver (and poly's four records) rerun bit-identical at --level exact
    "97340a3577347b1a": "abee53243e14febb",
    # the solvers' setting ``init`` (issue 49): paper, the default, draws what init_params drew; torch is new;
    # measured: the cheapest archived run of all eight solvers at elliptic-2d and LySep's at elliptic-10d,
    # parabolic-5d, hyperbolic-5d rerun bit-identical at --level exact (2026-11-29)
    "3b8bf119d766524a": "abee53243e14febb",
    # the merge of 2026-11-29's branches: init (3b8bf119d766524a) and the scale check of problems written as
    # data (numerics/user_problems.py: refusals only); measured: the cheapest archived run of every solver
    # rerun bit-identical at --level exact (the CI's eight reruns, 2026-11-29)
    "0aa7f28fe508f95d": "abee53243e14febb",
    # issue 53 (one engine, first stages): one Backtracking rule with a seed axis (solvers/steps.py), the
    # registry's `stacks` capability, LySep's result assembled once (algorithm.lysep_result); measured: the
    # cheapest archived run of all eight solvers (the CI's eight reruns) and LySep's at elliptic-10d,
    # parabolic-5d, hyperbolic-5d rerun bit-identical at --level exact (2026-12-07)
    "7a6465739c9e03e8": "abee53243e14febb",
    # issue 54: the varpro solvers added (solvers/varpro.py, three registry lines; solver_def reads a solve
    # function's own Settings); no other solver's path changed: the code varpro's records were made with
    "8fab6532cd443779": "abee53243e14febb",
    # the merge of 2026-12-07 (issue 53 first stages + varpro); measured: the CI's eight exact reruns and the
    # cheapest varpro-lm, -lbfgs, -gd runs of elliptic-2d (made at 8fab6532cd443779) bit-identical
    "86fa866c7695e7af": "abee53243e14febb",
    # issue 53's second stage merged (one channel engine and PINN pass with a seed axis and a namespace, LySep's
    # layer map, gradients, weights, partials, penalty and b-updates written once) with the merge fixes
    # (varpro's progress convention); measured: the CI's eight exact reruns, varpro-lm/-lbfgs/-gd's and
    # LySep's at elliptic-10d, parabolic-5d, hyperbolic-5d, bit-identical at --level exact (2026-12-07)
    "7eb3ea282caf64bc": "abee53243e14febb",
    # issue 53's last LySep stages: one state and terms class with a seed axis (LySepState, Terms), the
    # weights at L = 3 in the paper's grouping once (weights.paper_grouping), W_L's least squares once
    # (updates.solve_W3, numerics/lstsq.py); measured: LySep's cheapest archived run of the four paper
    # experiments, pinn's, rfls's (parabolic-5d) and varpro-lm's (elliptic-2d) bit-identical at --level exact
    "6e4669b1d41ab87f": "abee53243e14febb",
    # issue 53's sweep: one LySepIteration and one driver (solve_seeds) for a run alone and a stack, one PINN
    # driver; a run alone keeps no seed axis and takes every trial its seed accepts as it is; accel/*.py joins
    # the numerics sources (a run alone's trials go through accel/trials.py); measured: the CI's 11 exact
    # reruns and LySep's cheapest archived run of elliptic-10d, parabolic-5d, hyperbolic-5d bit-identical at
    # --level exact (2026-12-07); and with each solver's first values in the registry (Capabilities.first_values:
    # rfm's and LySep's, code moved from reports/ties.py)
    "18635f2dfc8f2866": "abee53243e14febb",
}


@lru_cache(maxsize=1)
def numerics_id() -> str:
    """sha256 over the modules that compute a run (:data:`NUMERIC_SOURCES`) and the versions of
    :data:`COMPILERS`, 16 hex digits: a change to the command line or the reports leaves it alone, another
    numba changes it."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]  # lysep_cli/
    for path in sorted({p for pattern in NUMERIC_SOURCES for p in root.glob(pattern)}):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    h.update(compiler_versions().encode())
    return h.hexdigest()[:16]


@lru_cache(maxsize=1)
def stacked_numerics_id() -> str:
    """The numerics id of a record made with a seed axis (``--device cpu-stacked`` or ``cuda``): "stacked-" and
    16 hex digits of sha256 over :func:`numerics_id` and lysep_cli/accel's sources, so such a record never
    shares a numerics id with a run alone's (on a device their bits differ in the last places)."""
    h = hashlib.sha256(numerics_id().encode())
    for path in sorted((Path(__file__).resolve().parents[1] / "accel").glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return "stacked-" + h.hexdigest()[:16]


def compiler_versions() -> str:
    """E.g. ``numba 0.68.1, llvmlite 0.50.0`` (``none`` for one not installed), read without importing them."""
    out = []
    for package in COMPILERS:
        try:
            out.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            out.append(f"{package} none")
    return ", ".join(out)


def bits_of(numerics: str, same_bits_as: Mapping[str, str] | None = None) -> str:
    """The numerics id whose bits code of id ``numerics`` gives: the last id of its chain through
    ``same_bits_as`` (default :data:`SAME_BITS_AS`), or ``numerics`` itself."""
    chain = SAME_BITS_AS if same_bits_as is None else same_bits_as
    seen = {numerics}
    while numerics in chain and chain[numerics] not in seen:
        numerics = chain[numerics]
        seen.add(numerics)
    return numerics


def numpy_simd() -> str:
    """NumPy's dispatch targets that run on this machine now (after NPY_DISABLE_CPU_FEATURES), e.g.
    "X86_V3" or "X86_V3,X86_V4,AVX512_ICL"; "baseline" when none does."""
    try:
        from numpy._core import _multiarray_umath as umath  # NumPy 2
    except ImportError:  # pragma: no cover - NumPy 1.x
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    features = getattr(umath, "__cpu_features__", {})
    used = [t for t in getattr(umath, "__cpu_dispatch__", []) if features.get(t)]
    return ",".join(used) or "baseline"


def _blas() -> list[dict]:
    from threadpoolctl import threadpool_info

    return [i for i in threadpool_info() if i.get("user_api") == "blas"]


def _blas_cores(blas: list[dict]) -> list[str]:
    return sorted({str(i.get("architecture", "?")) for i in blas})


def pins_not_in_force(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The platform pins this process's environment asks for (OPENBLAS_CORETYPE, NPY_DISABLE_CPU_FEATURES:
    importing lysep sets them, lysep_cli/platform_pin.py) that the loaded OpenBLAS and NumPy do not run,
    one line each: they were loaded before the pins were set, as in a ``dask worker`` process, which imports
    NumPy before lysep.  Empty when every pin asked for is in force (or none is asked for)."""
    out = []
    core = environ.get("OPENBLAS_CORETYPE", "")
    ran = _blas_cores(_blas()) if core else []
    if any(c.lower() != core.lower() for c in ran):
        out.append(f"BLAS kernel {','.join(ran)}, not {core}")
    off = set(environ.get("NPY_DISABLE_CPU_FEATURES", "").replace(",", " ").split())
    active = numpy_simd().split(",")
    if off & set(active):
        out.append(f"NumPy SIMD {','.join(active)} ({' '.join(sorted(off & set(active)))} not switched off)")
    return out


def fingerprint() -> dict[str, str]:
    """This process's fingerprint (the keys of the module docstring)."""
    import numpy as np
    import scipy
    import scipy.linalg  # noqa: F401  loads SciPy's OpenBLAS, as every run does: the same "blas" anywhere

    out = {"machine": f"{cpu_model()}, {os.cpu_count()} CPUs", "numpy": np.__version__,
           "scipy": scipy.__version__, "python": platform.python_version(), "numpy_simd": numpy_simd(),
           "numerics": numerics_id()}
    blas = _blas()
    if blas:  # NumPy's and SciPy's own OpenBLAS: both should say the pinned kernel
        out["blas"] = ", ".join(sorted({f"{i.get('internal_api', '?')} {i.get('version', '?')}" for i in blas}))
        out["blas_core"] = ",".join(_blas_cores(blas))
    try:
        out["lysep"] = metadata.version("lysep")
    except metadata.PackageNotFoundError:
        pass
    return out


def differing(old: Mapping[str, str], new: Mapping[str, str],
              keys: tuple[str, ...] = EXACT_KEYS + DEVICE_KEYS + ("machine",)) -> list[str]:
    """``key: old -> new`` for each key whose values differ or are unrecorded on one side."""
    out = []
    for key in keys:
        a, b = old.get(key, UNRECORDED), new.get(key, UNRECORDED)
        if a != b:
            out.append(f"{key}: {a} -> {b}")
    return out


def same_platform(old: Mapping[str, str], new: Mapping[str, str]) -> bool:
    """Whether every key of :data:`EXACT_KEYS` is recorded on both and equal (numerics ids: equal or of
    the same bits, :func:`bits_of`): bits must then agree."""
    def same(key: str) -> bool:
        if key == "numerics":
            return bits_of(old[key]) == bits_of(new[key])
        return old[key] == new[key]

    return (all(key in old and key in new and same(key) for key in EXACT_KEYS)
            and all(old.get(key) == new.get(key) for key in DEVICE_KEYS))
