"""Least squares as Matlab's backslash does it on a rectangular system: the *basic* solution.

The paper's authors solve their least-squares systems with Matlab's ``mldivide`` (``x = A \\ b``).  For a
rectangular A that is a QR factorisation with column pivoting (LAPACK geqp3),

    A P = Q R,   |R(1,1)| >= |R(2,2)| >= ...,

with the numerical rank r decided by Matlab's rule

    tol = max(size(A)) * eps * |R(1,1)|,   r = #{k : |R(k,k)| > tol}   (leading diagonal entries),

and the solution

    R(1:r, 1:r) z = (Q^T b)(1:r),   x(P(1:r)) = z,   x(P(r+1:n)) = 0.

x is a *basic* solution: at most r nonzero components, the columns P(r+1:n) left out.  For a full-rank
A it is the least-squares solution (as is every routine's); for a rank-deficient A it has the same
residual as the minimum-norm solution (scipy's gelsd/gelsy, numpy's lstsq, Matlab's ``pinv(A)*b`` or
``lsqminnorm``) up to round-off, but a larger norm and a different x.  Matlab warns "Rank deficient"
there; we return r and let the caller record it.

The ridge systems of LySep's W_L (solvers/lysep/updates.solve_W3) are solved here, one seed at a time, for a
run alone and for every seed of a stack (:func:`solve_all`, :class:`Systems`).  A stack's run on a thread
pool over the seeds (each call single-threaded under the caller's threadpoolctl limit, as the runner sets
it): the same calls on the same arrays as the serial loop, so the same bits.  scipy's f2py wrapper of gelsy holds the GIL for the whole LAPACK call (measured: a thread's
wake-up waited ~9 ms, the call's length, against 0.1 ms beside a matmul), so threads would run the solves
one at a time; :func:`gelsy` calls the same routine of scipy's LAPACK (scipy.linalg.cython_lapack) through
ctypes, which releases the GIL, with scipy.linalg.lstsq's arguments (its workspace query): the same bits.
The basic solve's pivoted QR (scipy.linalg.qr) and triangular solve release it already.  np.linalg.cond
(the first and last sweep only) holds it.
"""

from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import scipy.linalg

#: the two least-squares solutions a solver setting ``lstsq`` chooses between
LSTSQ_CHOICES = ("min-norm", "basic")


def basic_rank(R: np.ndarray, shape: tuple[int, int]) -> tuple[int, float]:
    """Matlab's numerical rank of a column-pivoted R (diagonal non-increasing in modulus) of an A of
    ``shape``: (r, tol), tol = max(shape) * eps * |R(1,1)|, r = the leading |R(k,k)| > tol."""
    diag = np.abs(np.diag(R))
    if diag.size == 0:
        return 0, 0.0
    tol = float(max(shape) * np.finfo(float).eps * diag[0])
    small = np.flatnonzero(~(diag > tol))  # ~(>) also stops at a NaN
    return (int(small[0]) if small.size else int(diag.size)), tol


def basic_lstsq(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """x = A \\ b as Matlab computes it for a rectangular A: the basic least-squares solution.

    A: (N, n); b: (N,) or (N, k) (k right-hand sides, solved together).  Returns (x, r): x of shape
    (n,) or (n, k) with at most r nonzero entries per column, r the numerical rank of the module
    docstring (0 for A = 0, and then x = 0).
    """
    x, r, _ = basic_lstsq_tol(A, b)
    return x, r


def basic_lstsq_tol(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int, float]:
    """:func:`basic_lstsq` and Matlab's tolerance on |R(k,k)|: (x, r, tol), tol = max(N, n) eps |R(1,1)|."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if A.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != A.shape[0]:
        raise ValueError(f"basic_lstsq: A (N, n) and b (N,) or (N, k) expected, got {A.shape} and {b.shape}")
    n = A.shape[1]
    # A P = Q R (geqp3, economic: Q (N, min(N, n)), R (min(N, n), n)); perm: x index of R's column k.
    Q, R, perm = scipy.linalg.qr(A, mode="economic", pivoting=True)
    r, tol = basic_rank(R, A.shape)
    x = np.zeros((n,) + b.shape[1:])
    if r:
        # R(1:r, 1:r) z = (Q^T b)(1:r); x(P(1:r)) = z, the other components stay 0.
        x[perm[:r]] = scipy.linalg.solve_triangular(R[:r, :r], Q[:, :r].T @ b, lower=False)
    return x, r, tol


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

    @classmethod
    def of(cls, B: np.ndarray, y: np.ndarray, lam: np.ndarray, K: np.ndarray | None = None) -> "Systems":
        """The full systems of host arrays B (n, M, N), y (n, N), lambda (n,) (no copy): top = B^T, or
        [B^T | K] with the joint solve's b_L column K (N,)."""
        n, M, N = B.shape
        if K is not None:  # [B^T | K]^T = [B; K^T], (n, M + 1, N)
            B = np.concatenate([B, np.broadcast_to(K, (n, 1, N))], axis=1)
        return cls(np.swapaxes(B, 1, 2), y, lam, N + M, M)


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
