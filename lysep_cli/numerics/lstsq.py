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
"""

from __future__ import annotations

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
