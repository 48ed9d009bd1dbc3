"""Figures of merit of a trained model, computed by the runner from the parameters alone.

A model is an FNN [(W_1, b_1), ..., (W_L, b_L)] (L >= 2) or a polynomial [(E, c)] (the ``poly`` baseline,
lysep_cli/numerics/polynomial.py): :func:`phi` and :func:`loss` evaluate either.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lysep_cli.numerics import network, polynomial
from lysep_cli.numerics.network import Params
from lysep_cli.numerics.problems import OperatorCoefficients, Problem


def phi(params: Params, Z: np.ndarray) -> np.ndarray:
    """phi(Z) of the model, (N,), Z (n_in, N)."""
    return polynomial.value(params, Z) if polynomial.is_polynomial(params) else network.value(params, Z)


def loss(params: Params, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray) -> float:
    """J = (1/N) ||R||^2 of the model (`eq:J-elliptic`, `eq:J-parabolic`, `eq:J-hyberbolic`)."""
    if polynomial.is_polynomial(params):
        return polynomial.loss(params, Z, coef, Y)
    return network.pinn_loss(params, Z, coef, Y)


def relative_l2(problem: Problem, params: Params, Z_test: np.ndarray) -> float | None:
    """Relative l2 test error of psi = boundary_factor * phi against u (Section 4), Z_test (n_in, n_test)::

        E = ( sum_n |psi(z_n) - u(z_n)|^2 / sum_n |u(z_n)|^2 )^(1/2)

    None for a problem given by its right-hand side alone (no exact solution to compare with).
    """
    if problem.u is None:
        return None
    psi = problem.boundary_factor(Z_test) * phi(params, Z_test)
    u = problem.u(Z_test)
    return float(np.sqrt(np.sum((psi - u) ** 2) / np.sum(u ** 2)))


def first_nonfinite(values: Sequence[float | None]) -> int | None:
    """Index of the first NaN / inf / None in ``values``, None when all are finite."""
    bad = np.flatnonzero(~np.isfinite(np.asarray(values, dtype=float)))
    return int(bad[0]) if bad.size else None


def finite_or_none(x: float | None) -> float | None:
    """``x`` as a float, None when it is None or not finite (the JSON spelling of a non-finite number)."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None
