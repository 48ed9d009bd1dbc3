"""Closed-form LySep updates, any depth L: b_l (`eq:GD_b1`, `eq:GD_b2`), W_L (`eq:GD_W3`), b_L (`eq:GD_b3`).

All are least-squares problems; they are solved with stable routines (weighted means, and
gelsy or Matlab's basic solve on the stacked ridge system, numerics/lstsq.py), never with an explicit
inverse or normal equations.
The W_L system is the only one with more than one unknown column: the setting ``lstsq`` chooses its
solution, "min-norm" (gelsy) or "basic" (Matlab's backslash, lysep_cli/numerics/lstsq.py, as the
paper's authors solved it).  b_l (a weighted mean) and b_L (one column K) are one-column problems whose
solution is unique when the column is nonzero: basic and minimum-norm solutions coincide there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from lysep_cli.numerics.lstsq import Systems, solve_all
from lysep_cli.solvers.lysep.loss import LySepData, LySepState, Terms, Weights, penalty_of
from lysep_cli.solvers.lysep.weights import per_seed


def solve_b(l: int, st: LySepState, data: LySepData, wt: Weights) -> np.ndarray:
    """`eq:GD_b1`, `eq:GD_b2` at layer l < L: b_l = sum_n rho_al(n) (a_l - W_l A_l)[:, n] / sum_n rho_al(n),
    shape (M,), with A_1 = Z, A_l = sigma(a_{l-1}).

    rho_al(n) sums omega * D(n,n)^2 over the penalties of a_l's constraint (a weighted least-squares mean).
    One seed, or a stack (a leading seed axis, b_l (S, M)).
    """
    xp, w = st.xp, wt.rho_a[l]
    A = data.Z if l == 1 else st.sig(l - 1).s0
    return xp.matmul(st.v[f"a{l}"] - xp.matmul(st.v[f"W{l}"], A), w[..., :, None])[..., 0] / xp.sum(w, axis=-1)[..., None]


def solve_b1(st: LySepState, data: LySepData, wt: Weights) -> np.ndarray:
    """`eq:GD_b1` (:func:`solve_b` at l = 1)."""
    return solve_b(1, st, data, wt)


def solve_b2(st: LySepState, data: LySepData, wt: Weights) -> np.ndarray:
    """`eq:GD_b2` (:func:`solve_b` at l = 2)."""
    return solve_b(2, st, data, wt)


@dataclass
class W3Solution:
    """W_L's solve of one seed (floats) or of the solved seeds of a stack (n of them, host arrays)."""

    W3: np.ndarray  # ((n,) 1, M): W_L
    b3: float | np.ndarray | None  # b_L, set by the joint solve only
    lam: float | np.ndarray  # lambda = P
    cond: float | np.ndarray  # 2-norm condition number of the stacked system (nan unless with_cond)
    rank: int | None | list = None  # numerical rank of the stacked system (lstsq "basic" only: Matlab's rule)


def solve_W3(st: LySepState, data: LySepData, terms: Terms, joint: bool = False, rcond: float | None = None,
             with_cond: bool = False, lstsq: str = "min-norm", seeds: np.ndarray | None = None,
             to_host: Callable[..., Systems] = Systems.of, workers: int = 1) -> W3Solution:
    """`eq:GD_W3` for W_L: W_L [sqrt(lambda) I, B] = [0, Y - K b_L] in the least-squares sense, for one seed or
    for the seeds ``seeds`` (indices; None: all) of a stack.

    Solved transposed, A x = rhs with A = [B^T; sqrt(lambda) I] (N + M, M), x = W_L^T, rhs = [Y - K b_L; 0],
    per seed on the host (numerics/lstsq.solve_all, on ``workers`` threads).  ``lstsq``: "min-norm" (gelsy,
    relative cutoff ``rcond``) or "basic" (Matlab's ``A \\ rhs``: pivoted QR, Matlab's rank rule; ``rcond``
    unused; the rank is returned in :class:`W3Solution`).  ``to_host(B, y, lam, K)``: the systems of B (n, M, N),
    y (n, N), lambda (n,) on the host (a stack on a device: accel/lstsq.to_host, its transfer and optional
    QR reduction).

    lambda = P = (penalty part of N J_S) / ||W_L||^2 is computed directly from the rho weights, never
    by dividing by ||W_L||^2, so W_L = 0 is not a trap (the system stays well posed and its solution
    is non-zero unless B (Y - K b_L) = 0).  With ``joint`` the unknown is [W_L, b_L] (b_L not
    regularised): one least-squares solve instead of the paper's W_L-then-b_L pair.
    """
    xp, L = st.xp, st.L
    B, lam = st.fit.B, penalty_of(st, data, terms)  # ((S,) M, N), a float or (S,)
    y = data.Y if joint else data.Y - per_seed(st.v[f"b{L}"], 2) * data.K  # Y or Y - K b_L, ((S,) N)
    one = B.ndim == 2
    if one:
        B, y, lam = B[None], y[None], np.array([lam])
    else:
        y = xp.broadcast_to(y, (B.shape[0], data.N))
        if seeds is not None and len(seeds) < B.shape[0]:
            sel = xp.asarray(seeds)
            B, y, lam = B[sel], y[sel], lam[sel]
    M = B.shape[1]
    solved = solve_all(to_host(B, y, lam, data.K if joint else None), lstsq, rcond, with_cond, workers)
    X = np.array([x for x, _, _ in solved]).reshape(len(solved), M + joint)  # [W_L, b_L] per seed
    W3, b3, cond = X[:, None, :M], X[:, M] if joint else None, np.array([c for _, _, c in solved])
    rank = [r for _, r, _ in solved]
    if one:
        return W3Solution(W3[0], None if b3 is None else float(b3[0]), float(lam[0]), float(cond[0]), rank[0])
    return W3Solution(W3, b3, lam, cond, rank)


solve_WL = solve_W3


def solve_b3(st: LySepState, data: LySepData):
    """`eq:GD_b3` for b_L: K * b_L 1^T = Y - W_L B in the least-squares sense; a float, or (S,) for a stack."""
    xp = st.xp
    t = data.Y - xp.matmul(st.v[f"W{st.L}"], st.fit.B)[..., 0, :]
    b = xp.matmul(t[..., None, :], data.K[:, None])[..., 0, 0] / (data.K @ data.K)  # K . t per seed
    return float(b) if np.ndim(b) == 0 else b


solve_bL = solve_b3
