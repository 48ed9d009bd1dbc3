"""Closed-form LySep updates: b_1 (`eq:GD_b1`), b_2 (`eq:GD_b2`), W_3 (`eq:GD_W3`), b_3 (`eq:GD_b3`).

All are least-squares problems; they are solved with stable routines (weighted means, and
scipy.linalg.lstsq on the stacked ridge system), never with an explicit inverse or normal equations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .lysep_loss import LySepData, LySepState, Terms, Weights, fit_matrix, penalty


def solve_b1(st: LySepState, data: LySepData, wt: Weights) -> np.ndarray:
    """`eq:GD_b1`: b_1 = sum_n rho_a1(n) (a_1 - W_1 Z)[:, n] / sum_n rho_a1(n), shape (M,).

    rho_a1(n) sums omega * D(n,n)^2 over the three a_1 penalties (a weighted least-squares mean).
    """
    w = wt.rho_a1
    return (st.a1 - st.W1 @ data.Z) @ w / np.sum(w)


def solve_b2(st: LySepState, data: LySepData, wt: Weights) -> np.ndarray:
    """`eq:GD_b2`: the rho_a2-weighted mean of a_2 - W_2 sigma(a_1), shape (M,)."""
    w = wt.rho_a2
    return (st.a2 - st.W2 @ st.sig1.s0) @ w / np.sum(w)


@dataclass
class W3Solution:
    W3: np.ndarray  # (1, M)
    b3: float | None  # set by the joint solve only
    lam: float  # lambda = P
    cond: float  # 2-norm condition number of the stacked system (nan unless with_cond)


def solve_W3(st: LySepState, data: LySepData, terms: Terms, wt: Weights, joint: bool = False,
             rcond: float | None = None, with_cond: bool = False) -> W3Solution:
    """`eq:GD_W3`: W_3 [sqrt(lambda) I, B] = [0, Y - K b_3] in the least-squares sense.

    lambda = P = (penalty part of N J_S) / ||W_3||^2 is computed directly from the rho weights, never
    by dividing by ||W_3||^2, so W_3 = 0 is not a trap (the system stays well posed and its solution
    is non-zero unless B (Y - K b_3) = 0).  With ``joint`` the unknown is [W_3, b_3] (b_3 not
    regularised): one least-squares solve instead of the paper's W_3-then-b_3 pair.
    """
    B = fit_matrix(st, data)  # (M, N)
    M = B.shape[0]
    lam = penalty(terms, wt)
    reg = np.sqrt(lam) * np.eye(M)
    if joint:
        A = np.block([[B.T, data.K[:, None]], [reg, np.zeros((M, 1))]])
        rhs = np.concatenate([data.Y, np.zeros(M)])
    else:
        A = np.vstack([B.T, reg])
        rhs = np.concatenate([data.Y - st.b3 * data.K, np.zeros(M)])
    # QR with column pivoting (gelsy); the SVD for the condition number only when asked (it costs more).
    x = scipy.linalg.lstsq(A, rhs, cond=rcond, lapack_driver="gelsy")[0]
    cond = float(np.linalg.cond(A)) if with_cond else float("nan")
    if joint:
        return W3Solution(x[:M][None, :], float(x[M]), lam, cond)
    return W3Solution(x[None, :], None, lam, cond)


def solve_b3(st: LySepState, data: LySepData) -> float:
    """`eq:GD_b3`: K * b_3 1^T = Y - W_3 B in the least-squares sense."""
    t = data.Y - (st.W3 @ fit_matrix(st, data))[0]
    return float(data.K @ t / (data.K @ data.K))
