"""sin and cos of one float64 array together, in one vectorised pass, with the same bits on every machine.

Why: sigma = sin needs sin and cos of every pre-activation array, several times per LySep sweep and per
PINN iteration.  np.sin / np.cos of float64 run glibc's scalar code wherever NumPy's AVX-512 paths are off
(lysep pins them off for reproducibility, lysep_cli/platform_pin.py): 8-9 ns per value each, 1-2x the
whole GEMM floor of a sweep at M = 20-30 (benchmarks/results/lysep_overhead.md).

How: fdlibm's algorithm, written with IEEE-754 additions and multiplications only (no fused multiply-add,
no library call), so the result is a function of the input bits alone, on any CPU and vector width:

    n = rint(x 2/pi),   r = ((x - n P1) - n P2) - n P3        (Cody-Waite; P1, P2 have 33 significant bits,
                                                             so n P1 and n P2 are exact for |n| < 2^20)
    sin r = r + r^3 (S1 + r^2 (S2 + ... + r^2 S6)),  |r| <= pi/4           (fdlibm __kernel_sin, y = 0)
    cos r = w + (((1 - w) - r^2/2) + r^4 (C1 + ... + r^2 C6)),  w = 1 - r^2/2   (__kernel_cos, y = 0)

and the quadrant n mod 4 swaps and signs the pair.  Measured error against glibc (tests/test_sincos.py):
at most 2 ulp from glibc's sin and cos (0.5 ulp of 1 in absolute terms) for |x| <= LIMIT; entries beyond LIMIT (and inf, NaN) are
computed by np.sin / np.cos.  ``sincos`` runs a numba kernel when numba is installed and the same
operations in NumPy otherwise (slower, same bits: tested).
"""

from __future__ import annotations

import numpy as np

INV_PIO2 = 6.36619772367581382433e-01  # 2/pi
P1 = 1.57079632673412561417e+00  # first 33 bits of pi/2
P2 = 6.07710050630396597660e-11  # next 33 bits
P3 = 2.02226624871116645580e-21  # pi/2 - P1 - P2, rounded
S1, S2, S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
S4, S5, S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
C1, C2, C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
C4, C5, C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
#: |x| up to which the reduction above is used (|n| < 2^17, far inside the exactness of n P1, n P2)
LIMIT = 1.0e5
#: arrays smaller than this take the NumPy path (same bits): a process that only ever evaluates small
#: networks (the tests' tiny ones, a CLI report) never pays numba's import and cache load (~0.8 s)
NUMBA_FROM = 4096
#: per solver, the size of a run's (M, N_train) arrays above which it skips numba's kernels for the NumPy paths of σ
#: and the fit matrix (the same bits; benchmarks/logs/engine-2026-11.md). LySep at elliptic-10d (3,150): 0.99-1.04x
#: the time per sweep without them, ~100 MB less peak memory; PINN there is 1.12x slower without them, so it (and
#: every solver not named) keeps them at every size.  Here, among the modules the numerics id hashes
#: (lysep_cli/store/fingerprint.py), so a change to it changes the id; the runner applies it.
NUMBA_UP_TO: dict[str, int] = {"lysep": 2**18}
_RUN_USES_NUMBA = [True]


def numba_for_run(values: int, up_to: int | None = None) -> bool:
    """Sets whether this process's run uses the numba kernels: always when ``up_to`` is None, else when its
    (M, N_train) arrays hold ``values <= up_to`` values.  The runner calls it once per run with the
    solver's bound (lysep_cli/execution/runner.py); the bits do not depend on it."""
    _RUN_USES_NUMBA[0] = up_to is None or values <= up_to
    return _RUN_USES_NUMBA[0]


def numba_wanted(size: int) -> bool:
    """Whether an array of ``size`` values takes a numba kernel: NUMBA_FROM or more, in a run that uses
    numba (:func:`numba_for_run`)."""
    return size >= NUMBA_FROM and _RUN_USES_NUMBA[0]


def _reduced(x):
    """sin r, cos r of the reduced argument r = x - n pi/2, and the quadrant q = n mod 4 (a float): the
    formulas above, for a NumPy array or (compiled by numba) one float, the same operations either way."""
    n = np.rint(x * INV_PIO2)
    r = ((x - n * P1) - n * P2) - n * P3
    z = r * r
    s = r + (z * r) * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + z * (z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))))))
    return s, c, n - 4.0 * np.floor(n * 0.25)  # n mod 4, exactly


def _sincos_numpy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The reference: the kernel's operations, in the same order, as NumPy passes."""
    s, c, q = _reduced(x)
    swap = (q == 1.0) | (q == 3.0)
    sin = np.where(swap, c, s) * np.where(q >= 2.0, -1.0, 1.0)
    cos = np.where(swap, s, c) * np.where((q == 1.0) | (q == 2.0), -1.0, 1.0)
    return sin, cos


_KERNEL: list = []  # the compiled kernel once built (numba is imported on first use: the CLI starts fast)


def _kernel():
    """The numba kernel, compiled on first use (cached on disk by numba), or None without numba."""
    if not _KERNEL:
        try:
            import numba
        except ImportError:  # pragma: no cover
            _KERNEL.append(None)
            return None

        reduced = numba.njit(cache=True, nogil=True)(_reduced)

        @numba.njit(cache=True, nogil=True)
        def kernel(x, sin, cos):  # pragma: no cover  (compiled; tested against _sincos_numpy)
            for i in range(x.size):
                s, c, q = reduced(x[i])
                swap = (q == 1.0) | (q == 3.0)
                ss = -1.0 if q >= 2.0 else 1.0
                sc = -1.0 if (q == 1.0) | (q == 2.0) else 1.0
                sin[i] = (c if swap else s) * ss
                cos[i] = (s if swap else c) * sc

        _KERNEL.append(kernel)
    return _KERNEL[0]


def sincos(x: np.ndarray, *, use_numba: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(sin x, cos x), each of x's shape, float64.  The same bits with or without numba (arrays of
    NUMBA_FROM values or more run the compiled kernel when ``use_numba``, unless the run is too large for
    numba to pay: :func:`numba_for_run`)."""
    x = np.asarray(x, dtype=np.float64)
    kernel = _kernel() if use_numba and numba_wanted(x.size) else None
    if kernel is not None:
        flat = np.ascontiguousarray(x).reshape(-1)
        sin, cos = np.empty_like(flat), np.empty_like(flat)
        kernel(flat, sin, cos)
        sin, cos = sin.reshape(x.shape), cos.reshape(x.shape)
    else:
        sin, cos = _sincos_numpy(x)
    far = ~(np.abs(x) <= LIMIT)  # beyond the reduction's range, inf and NaN: the library's functions
    if far.any():
        with np.errstate(invalid="ignore"):
            sin[far], cos[far] = np.sin(x[far]), np.cos(x[far])
    return sin, cos
