"""The W_L least squares of the stacked LySep (`eq:GD_W3`), per seed, and where each part of it is done.

For each seed s (updates.solve_W3, transposed):

    A x = c,   A = [B^T; sqrt(lambda) I]  ((N + M) x M),   c = [Y - K b_L; 0],   x = W_L^T.

``w_solve`` chooses where:

- ``"host"``: B (S, M, N) and Y - K b_L (S, N) come back to the host and each seed's full system is solved
  there by the CPU solver's routine (scipy's gelsy with ``rcond``, or Matlab's basic solve): on NumPy the
  CPU engine's bits.
- ``"reduced"``: on the array device, one Householder QR of the tall part for all seeds at once,

      R = qr([B^T | Y - K b_L], mode="r"),   (S, N, M + 1) -> (S, k, M + 1),   k = min(N, M + 1),

  so that Q^T [B^T | y] = [R_11 r_12; 0 rho] and ||B^T x - y||^2 = ||R_11 x - r_12||^2 + rho^2 for every x.
  The reduced system [R_11; sqrt(lambda) I] x = [r_12; 0] ((k + M) x M) therefore has the same
  least-squares solutions as the full one (the same minimum-norm solution, residuals differing by the
  constant rho^2, rank-deficient systems included) and the same singular values (so the same condition
  number); only R, (S, k, M + 1) doubles, comes to the host, where each seed's small system is solved by
  the same routine.  Matlab's rank rule keeps the full system's size: tol = max(N + M, M) eps |R(1,1)|.

With ``w3_b3: joint`` (updates.solve_W3, joint) the unknown is x = [W_L, b_L]^T and b_L is not regularised:

    A = [B^T K; sqrt(lambda) I 0]  ((N + M) x (M + 1)),   c = [Y; 0],

the same two modes with [B^T | K] for B^T and Y for y ("reduced": R = qr([B^T | K | Y]), (S, N, M + 2) ->
(S, min(N, M + 2), M + 2)); the regularisation rows cover W_L's M columns only.

The per-seed host solves run on a thread pool over the seeds (each call single-threaded under the caller's
threadpoolctl limit, as the runner sets it): the same calls on the same arrays as the serial loop, so the
same bits.  scipy's f2py wrapper of gelsy holds the GIL for the whole LAPACK call (measured: a thread's
wake-up waited ~9 ms, the call's length, against 0.1 ms beside a matmul), so threads would run the solves
one at a time; :func:`gelsy` calls the same routine of scipy's LAPACK (scipy.linalg.cython_lapack) through
ctypes, which releases the GIL, with scipy.linalg.lstsq's arguments (its workspace query): the same bits.
The basic solve's pivoted QR (scipy.linalg.qr) and triangular solve release it already.  np.linalg.cond
(the first and last sweep only) holds it.
"""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np
import scipy.linalg

from lysep_cli.accel.backend import Backend
from lysep_cli.numerics.lstsq import basic_lstsq, basic_rank

Array = Any
#: where the W_L systems are solved (module docstring)
W_SOLVES = ("host", "reduced")


def default_w_solve(xp: Any) -> str:
    """"host" on NumPy (the CPU engine's bits: ``--device cpu-stacked`` stays bit-identical), "reduced" on
    CuPy (only R comes back, (S, M+1, M+1) instead of B's (S, M, N), and the host solves are (2M x M))."""
    return "host" if xp is np else "reduced"


def default_workers(seeds: int) -> int:
    """Threads for the per-seed host solves: ``$LYSEP_HOST_THREADS`` (a LocalCluster's workers get their
    share of the CPUs: lysep_cli/execution/local_share.py) or the CPUs this process may use, at most one
    per seed."""
    cpus = host_threads() or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                               else (os.cpu_count() or 1))
    return max(1, min(seeds, cpus))


def host_threads() -> int | None:
    """``$LYSEP_HOST_THREADS`` (a whole number >= 1), None where unset; ValueError (one line) otherwise."""
    text = os.environ.get("LYSEP_HOST_THREADS", "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdecimal()) or int(text) < 1:
        raise ValueError(f"LYSEP_HOST_THREADS={text!r}: expected a whole number of threads >= 1")
    return int(text)


@dataclass(frozen=True)
class Systems:
    """The host's part of the W_L systems of n seeds: top (n, k, C) (B^T, [B^T | K] when joint, or R_11), y
    (n, k) (Y - K b_L, Y when joint, or r_12), lam (n,) (lambda), ``rows``, the full system's row count
    N + M (Matlab's rank rule), and ``reg``, the M leading columns (W_L's) that sqrt(lambda) I regularises
    (C = M, or M + 1 when joint: b_L's column is not regularised)."""

    top: np.ndarray
    y: np.ndarray
    lam: np.ndarray
    rows: int
    reg: int


def reduce(xp: Any, Bt: Array, y: Array) -> Array:
    """R of [B^T | y] for every seed, Householder (numpy/cupy qr, mode "r"): Bt (n, N, M), y (n, N) ->
    (n, min(N, M + 1), M + 1); its first M columns are R_11 (above r_12's row block), its last r_12."""
    return xp.linalg.qr(xp.concatenate([Bt, y[:, :, None]], axis=2), mode="r")


def to_host(be: Backend, B: Array, y: Array, lam: Array, w_solve: str, K: Array | None = None) -> Systems:
    """The W_L systems of the seeds of B (n, M, N), y (n, N) (Y - K b_L; Y when joint) and lambda (n,) (device
    arrays) on the host, in the form ``w_solve`` solves them (module docstring): one device->host copy of them
    all.  ``K`` (N,) (on the device): the joint solve's b_L column, appended to B^T's columns."""
    xp, n, M, N = be.xp, B.shape[0], B.shape[1], B.shape[2]
    if K is not None:  # [B^T | K]^T = [B; K^T], (n, M + 1, N)
        B = xp.concatenate([B, xp.broadcast_to(K, (n, 1, N))], axis=1)
    C = B.shape[1]
    if w_solve == "host":
        flat = be.host(xp.concatenate([B.reshape(n, C * N), y, lam[:, None]], axis=1))
        return Systems(flat[:, :C * N].reshape(n, C, N).transpose(0, 2, 1), flat[:, C * N:-1], flat[:, -1], N + M, M)
    R = reduce(xp, xp.swapaxes(B, 1, 2), y)
    k = R.shape[1]
    flat = be.host(xp.concatenate([R.reshape(n, k * (C + 1)), lam[:, None]], axis=1))
    R = flat[:, :-1].reshape(n, k, C + 1)
    return Systems(R[:, :, :C], R[:, :, C], flat[:, -1], N + M, M)


@lru_cache(maxsize=1)
def _dgelsy() -> Callable[..., None]:
    """LAPACK's dgelsy from scipy's own LAPACK, the routine scipy.linalg.lstsq calls, as a ctypes function
    (every argument a pointer, Fortran's convention; ctypes releases the GIL for the call)."""
    from numba.extending import get_cython_function_address

    address = get_cython_function_address("scipy.linalg.cython_lapack", "dgelsy")
    return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 13))(address)


def gelsy(A: np.ndarray, c: np.ndarray, rcond: float | None) -> np.ndarray:
    """scipy.linalg.lstsq(A, c, cond=rcond, lapack_driver="gelsy")[0] for A (m, n), m >= n, c (m,), bit for
    bit, without holding the GIL: the same routine with the same arguments (A and c copied in Fortran order,
    the pivots free, rcond None as machine precision, the workspace LAPACK's query returns)."""
    m, n = A.shape
    if m < n:
        raise ValueError(f"gelsy: a tall or square A expected, got {A.shape}")
    a = np.array(A, dtype=np.float64, order="F")
    b = np.array(c, dtype=np.float64).reshape(m, 1, order="F")
    jpvt, rank, info = np.zeros(n, dtype=np.int32), np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int32)
    rc = np.array([np.finfo(np.float64).eps if rcond is None else rcond])
    dims = np.array([m, n, 1, m, m, -1], dtype=np.int32)  # m, n, nrhs, lda, ldb, lwork (-1: the query)
    work = np.zeros(1)

    def call() -> None:
        p = [x.ctypes.data for x in (dims[0:1], dims[1:2], dims[2:3], a, dims[3:4], b, dims[4:5], jpvt, rc, rank,
                                     work, dims[5:6], info)]
        _dgelsy()(*p)
        if info[0] != 0:
            raise ValueError(f"gelsy: LAPACK info {info[0]}")

    call()  # workspace query: the optimal lwork in work[0]
    dims[5] = int(work[0])
    work = np.zeros(dims[5])
    call()
    return b[:n, 0].copy()


def basic_solve(A: np.ndarray, c: np.ndarray, rows: int) -> tuple[np.ndarray, int]:
    """Matlab's basic solution of A x = c (A (m, n), c (m,)) with the rank rule of a system of ``rows`` rows:
    numerics.lstsq.basic_lstsq itself when rows = m, else its steps with tol = max(rows, n) eps |R(1,1)|."""
    if rows == A.shape[0]:
        return basic_lstsq(A, c)
    Q, R, perm = scipy.linalg.qr(A, mode="economic", pivoting=True)  # A P = Q R (geqp3)
    r, _ = basic_rank(R, (rows, A.shape[1]))
    x = np.zeros(A.shape[1])
    if r:  # R(1:r, 1:r) z = (Q^T c)(1:r); x(P(1:r)) = z, the other components stay 0
        x[perm[:r]] = scipy.linalg.solve_triangular(R[:r, :r], Q[:, :r].T @ c, lower=False)
    return x, r


def solve_one(top: np.ndarray, y: np.ndarray, lam: float, rows: int, lstsq: str, rcond: float | None,
              with_cond: bool, reg: int | None = None) -> tuple[np.ndarray, int | None, float]:
    """One seed's [top; sqrt(lambda) I 0] x = [y; 0] (top (k, C), y (k,); I (reg, reg), the zero block
    (reg, C - reg); reg None: C) as updates.solve_W3 solves it (joint: np.block's A, the same entries):
    (x (C,), rank (lstsq "basic" only, else None), the system's 2-norm condition number or nan)."""
    C = top.shape[1]
    M = C if reg is None else reg
    A = np.vstack([top, np.hstack([np.sqrt(lam) * np.eye(M), np.zeros((M, C - M))])])
    c = np.concatenate([y, np.zeros(M)])
    rank = None
    if lstsq == "basic":
        x, rank = basic_solve(A, c, rows)
    else:
        x = gelsy(A, c, rcond)  # scipy.linalg.lstsq(A, c, cond=rcond, lapack_driver="gelsy")[0], GIL released
    return x, rank, float(np.linalg.cond(A)) if with_cond else float("nan")


def solve_all(sys: Systems, lstsq: str, rcond: float | None, with_cond: bool,
              workers: int = 1) -> list[tuple[np.ndarray, int | None, float]]:
    """:func:`solve_one` for every seed of ``sys``, in order, on ``workers`` threads (1: the serial loop)."""
    def one(i: int) -> tuple[np.ndarray, int | None, float]:
        return solve_one(sys.top[i], sys.y[i], sys.lam[i], sys.rows, lstsq, rcond, with_cond, sys.reg)

    n = sys.top.shape[0]
    if workers <= 1 or n <= 1:
        return [one(i) for i in range(n)]  # loop over the seeds: one LAPACK solve each
    with ThreadPoolExecutor(max_workers=min(workers, n)) as pool:
        return list(pool.map(one, range(n)))
