"""Polynomials of total degree <= k in the network's inputs z = (t, x): monomials, their derivatives, the
residual's least-squares columns, and the model phi(z) = sum_p c_p m_p(z) of the ``poly`` baseline.

A monomial is m_p(z) = prod_j z_j^{e_pj} with exponents E = (e_pj), shape (P, n_in), sum_j e_pj <= k.
With psi = B * phi (the boundary/initial factor of every solver), the residual of `eq:PINN-OR-e/p/h` is
linear in phi, so in the coefficients c:

    R = K phi + sum_j K_j d_j phi + sum_j K-hat_j d_jj phi - Y = A c - Y,
    A[:, p] = K m_p + sum_j K1_j d_j m_p + sum_j K2_j d_jj m_p          (N, P)

with K, K1 = (K_j), K2 = (K-hat_j) the coefficients the engine builds (problems.OperatorCoefficients).

Saved form (a run's weights NPZ): ``[(E, c)]``, one pair, E (P, n_in) float64 (whole numbers), c (P,).  An
FNN has L >= 2 pairs, so one pair is a polynomial (:func:`is_polynomial`).
"""

from __future__ import annotations

from itertools import combinations_with_replacement
from math import comb

import numpy as np

from lysep_cli.numerics.problems import OperatorCoefficients

Poly = list[tuple[np.ndarray, np.ndarray]]
"""[(E, c)]: exponents (P, n_in) and coefficients (P,)."""


def n_monomials(n_in: int, degree: int) -> int:
    """P = C(n_in + k, k), the number of monomials of total degree <= k in n_in variables."""
    return comb(n_in + degree, degree)


def exponents(n_in: int, degree: int) -> np.ndarray:
    """E (P, n_in) int: every exponent vector of total degree <= k, by degree then lexicographically."""
    rows = [np.zeros(n_in, dtype=np.int64)]
    for k in range(1, degree + 1):
        for combo in combinations_with_replacement(range(n_in), k):
            rows.append(np.bincount(combo, minlength=n_in))
    return np.array(rows, dtype=np.int64).reshape(-1, n_in)


def _powers(Z: np.ndarray, top: int) -> np.ndarray:
    """pw[j, e + 2, n] = z_jn^e for e = -2 .. top, the negative powers 0 (what e * z^(e-1) needs at e = 0).

    Z (n_in, N) -> (n_in, top + 3, N)."""
    n_in, N = Z.shape
    pw = np.zeros((n_in, top + 3, N))
    pw[:, 2] = 1.0
    for e in range(1, top + 1):  # a loop over the degree, not the samples
        pw[:, e + 2] = pw[:, e + 1] * Z
    return pw


def factors(E: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per monomial and input, z_j^e, e z_j^(e-1), e (e-1) z_j^(e-2): three arrays (P, n_in, N)."""
    E = np.rint(E).astype(np.int64)
    pw = _powers(Z, int(E.max(initial=0)))
    j = np.arange(Z.shape[0])[None, :]
    F0 = pw[j, E + 2]
    F1 = E[:, :, None] * pw[j, E + 1]
    F2 = (E * (E - 1))[:, :, None] * pw[j, E]
    return F0, F1, F2


def _others(F0: np.ndarray) -> np.ndarray:
    """prod_{i != j} F0[:, i] for every j, (P, n_in, N), by prefix and suffix products (no division by a
    zero coordinate)."""
    P, n_in, N = F0.shape
    before = np.ones_like(F0)
    after = np.ones_like(F0)
    if n_in > 1:
        before[:, 1:] = np.cumprod(F0[:, :-1], axis=1)
        after[:, :-1] = np.cumprod(F0[:, :0:-1], axis=1)[:, ::-1]
    return before * after


def derivatives(E: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """m (P, N), d_j m (P, n_in, N), d_jj m (P, n_in, N) of the monomials E at the points Z (n_in, N)."""
    F0, F1, F2 = factors(E, Z)
    rest = _others(F0)
    return np.prod(F0, axis=1), F1 * rest, F2 * rest


#: monomials per block of :func:`residual_columns`: its (block, n_in, N) temporaries stay near 2^22 values
BLOCK_VALUES = 2 ** 22


def residual_columns(E: np.ndarray, Z: np.ndarray, coef: OperatorCoefficients) -> np.ndarray:
    """A (N, P) with R = A c - Y for phi = sum_p c_p m_p (module docstring), built a block of monomials at
    a time (memory bounded whatever P and N)."""
    n_in, N = Z.shape
    step = max(1, BLOCK_VALUES // (n_in * N))
    A = np.empty((N, len(E)))
    for start in range(0, len(E), step):  # blocks of monomials, not samples
        m, md, mdd = derivatives(E[start:start + step], Z)
        A[:, start:start + step] = (coef.K * m + (coef.K1 * md).sum(axis=1) + (coef.K2 * mdd).sum(axis=1)).T
    return A


def is_polynomial(model: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether ``model`` is a saved polynomial [(E, c)] (an FNN has L >= 2 layers)."""
    return len(model) == 1


def value(model: Poly, Z: np.ndarray) -> np.ndarray:
    """phi(Z) = sum_p c_p m_p(Z), shape (N,)."""
    (E, c), = model
    F0, _, _ = factors(E, Z)
    return c @ np.prod(F0, axis=1)


def loss(model: Poly, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray) -> float:
    """J = (1/N) ||A c - Y||^2 (`eq:J-elliptic` & co.) of the polynomial phi."""
    (E, c), = model
    R = residual_columns(E, Z, coef) @ c - Y
    return float(R @ R / R.size)
