"""The polynomial baseline: phi a polynomial of total degree <= k in the inputs z = (t, x), fitted by one
linear least-squares solve of the PDE residual on the training set.

    psi(z) = B(z) * phi(z),    phi(z) = sum_p c_p m_p(z),    m_p(z) = prod_j z_j^{e_pj},  sum_j e_pj <= k,

with the boundary/initial factor B of every solver.  The residual (`eq:PINN-OR-e/p/h`) is linear in c:
R = A c - Y, A[:, p] = K m_p + sum_j K_j d_j m_p + sum_j K-hat_j d_jj m_p (lysep_cli/numerics/polynomial.py),
so c = argmin ||A c - Y||^2, solved like rfls's output layer: SVD (gelsd) with the relative cutoff
eps * max(N, P), on A with its columns scaled to unit norm (the monomials' scales differ by orders of
magnitude at high degree; the scaling changes the cutoff's reference, not the least-squares problem).

Size: (L, M) = (2, P), P = C(n_in + k, k) the number of coefficients (one layer of P monomial features, one
linear output, as rfm's (2, M)); the experiments file must say so, and P <= n_train / 4 (at least four
training points per coefficient; :meth:`Settings.fit_error`).  The fit does not depend on the seed: the
seeded network ``params0`` is not used, and one run (the first seed asked for) stands for every seed
(``Capabilities.seed_free``).  The saved model is [(E, c)] (E the exponents, (P, n_in); c (P,)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from lysep_cli.numerics import polynomial
from lysep_cli.numerics.network import Params
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import Capabilities, Progress, SolveResult, TrainingData, diverged
from lysep_cli.solvers.settings import SolverSettings, setting

#: one least-squares solve; the seed defines nothing
CAPABILITIES = Capabilities(round_off_stable=True, seed_free=True)

#: at least this many training points per coefficient (the rule of :meth:`Settings.fit_error`)
POINTS_PER_COEFFICIENT = 4


@dataclass(frozen=True)
class Settings(SolverSettings):
    """phi a polynomial of total degree <= ``degree`` in (t, x), by one least-squares solve of the residual."""

    degree: int = setting(2, low=0, doc="total degree k of phi; P = C(n_in + k, k) coefficients")

    def size_error(self, L: int, M: int) -> str | None:
        return None if L == 2 else "poly is one layer of monomials and a linear output (L = 2, M = P)"

    def fit_error(self, n_in: int, n_train: int, L: int, M: int) -> str | None:
        P = polynomial.n_monomials(n_in, self.degree)
        if P * POINTS_PER_COEFFICIENT > n_train:
            return (f"degree {self.degree} in {n_in} inputs has P = {P} coefficients, more than n_train / "
                    f"{POINTS_PER_COEFFICIENT} = {n_train // POINTS_PER_COEFFICIENT} (rule: at least "
                    f"{POINTS_PER_COEFFICIENT} training points per coefficient); lower the degree")
        if M != P:
            return f"degree {self.degree} in {n_in} inputs has P = {P} coefficients: its size is [2, {P}], not [{L}, {M}]"
        return None

    def history_length(self, iterations: int) -> int:
        return 2  # [J of phi = 0, J after the one solve], whatever ``iterations``


def fit(data: TrainingData, degree: int) -> tuple[np.ndarray, np.ndarray, float, dict[str, Any]]:
    """(E, c, J, diagnostics): the least-squares polynomial of total degree <= ``degree`` on ``data`` and
    its J = ||A c - Y||^2 / N."""
    E = polynomial.exponents(data.Z.shape[0], degree)
    A = polynomial.residual_columns(E, data.Z, data.coef)
    norms = np.linalg.norm(A, axis=0)
    scale = np.where(norms > 0, norms, 1.0)
    rcond = float(np.finfo(float).eps * max(A.shape))
    x, _, rank, sv = scipy.linalg.lstsq(A / scale, data.Y, cond=rcond, lapack_driver="gelsd")
    cond = float(sv[0] / sv[-1]) if sv.size and sv[-1] > 0 else float("inf")
    c = x / scale
    R = A @ c - data.Y
    return E.astype(np.float64), c, float(R @ R / R.size), {"degree": degree, "n_columns": int(E.shape[0]), "rank": int(rank),
                                             "cond": cond, "rcond": rcond}


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """The least-squares polynomial of :class:`Settings` ``degree``; ``params0`` and ``iterations`` unused.

    history["J"] = [J of phi = 0 (= ||Y||^2 / N), J after the solve]; diagnostics: degree, n_columns (P),
    rank, cond (of A with unit-norm columns), rcond.
    """
    s = Settings.coerce(settings)
    n_in = data.Z.shape[0]
    zero: Params = [(polynomial.exponents(n_in, 0).astype(np.float64), np.zeros(1))]
    J0 = float(data.Y @ data.Y / data.Y.size)
    history = {"J": [J0]}
    if not np.isfinite(J0):
        return diverged(zero, history, 0)
    with np.errstate(all="ignore"):
        A_ok = np.all(np.isfinite(data.coef.K)) and np.all(np.isfinite(data.coef.K1)) \
            and np.all(np.isfinite(data.coef.K2))
    if not A_ok:
        history["J"].append(float("nan"))
        return diverged(zero, history, 1, "non-finite residual coefficients")
    E, c, J, diagnostics = fit(data, s.degree)
    model: Params = [(E, c)]
    history["J"].append(J)
    diagnostics["history_note"] = "J: [phi = 0, after the one least-squares solve]"
    if progress is not None:
        progress(0, J)
    if not np.isfinite(J):
        return diverged(model, history, 1, diagnostics=diagnostics)
    return SolveResult(model, history, diagnostics=diagnostics)
