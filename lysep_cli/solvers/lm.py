"""PINN trained by Levenberg-Marquardt on the residual vector R(theta) (N,), with the hand-derived
residual Jacobian (:func:`lysep_cli.numerics.jacobian.residual_jacobian`).

Method (Madsen, Nielsen & Tingleff, "Methods for non-linear least squares problems", 2004, Alg. 3.16):
minimise F = ||R||^2 / 2 (= N J / 2).  Each iteration forms the Jacobian Jac (N, P) once and solves the
damped Gauss-Newton system

    (Jac^T Jac + mu I) delta = -Jac^T R

by Cholesky.  The networks here are wide (P = 1 051 .. 24 451 parameters, N = 1 000 or 2 000 samples),
so when P > N the step is taken in the dual form (push-through identity)

    (Jac Jac^T + mu I) y = -R,    delta = Jac^T y,

an N x N system instead of P x P (Jac^T Jac at P = 24 451 would be 4.8 GB).  The gain ratio
rho = (F(theta) - F(theta + delta)) / (delta^T (mu delta - Jac^T R) / 2) decides: rho > 0 accepts the
step and sets mu <- mu max(1/3, 1 - (2 rho - 1)^3), nu <- 2; otherwise (or on a non-finite residual,
or a failed Cholesky) mu <- mu nu, nu <- 2 nu and the step is re-solved with the same Jacobian.
mu_0 = tau max_i (Jac^T Jac)_ii.

Cost per iteration at the largest size (elliptic-10d, (3, 150)): Jacobian 2000 x 24 451 float64 =
391 MB (reused buffer), Gram 2000 x 2000 = 32 MB; time dominated by forming Jac Jac^T (N^2 P flops).
Because each iteration costs about as much as several hundred gradient evaluations there, the
iteration count is capped by the setting ``max_iterations`` (docs/baselines.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.jacobian import residual_jacobian
from lysep_cli.numerics.network import Params, flatten, pinn_pass, unflatten
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import Init, Progress, SolveResult, TrainingData, copy_params, diverged, init_setting
from lysep_cli.solvers.settings import SolverSettings, setting


@dataclass(frozen=True)
class Settings(SolverSettings):
    """Levenberg-Marquardt with a cap on the iterations."""

    max_iterations: int = setting(200, low=1, doc="cap on the iterations (each forms the Jacobian)")
    tau: float = setting(1.0e-3, low=0.0, low_open=True, doc="mu_0 = tau max_i (Jac^T Jac)_ii")
    max_tries: int = setting(30, low=1, doc="damping increases per iteration before the run stalls")
    init: Init = init_setting()

    def history_length(self, iterations: int) -> int:
        return min(iterations, self.max_iterations) + 1


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """Levenberg-Marquardt on R with :class:`Settings`: ``max_iterations`` (cap on iterations), ``tau``
    (mu_0 scale), ``max_tries`` (damping increases per iteration before the run is declared stalled).

    One iteration = one Jacobian + one accepted step.  history["J"]: J at params0, then after each
    iteration; min(iterations, max_iterations) + 1 entries, padded with the last value if the run
    stalls earlier (diagnostics["stalled_at"], iterations_done).
    """
    s = Settings.coerce(settings)
    n_iter = min(iterations, s.max_iterations)
    tau, max_tries = s.tau, s.max_tries
    params = copy_params(params0)
    like = params
    theta = flatten(params)
    Z, coef, Y = data.Z, data.coef, data.Y
    N, P = Z.shape[1], theta.size
    dual = P > N
    plan = ChannelPlan.build(coef)
    fp = pinn_pass(params, Z, plan, Y)
    R = fp.R
    F = 0.5 * float(R @ R)
    history = [2.0 * F / N]
    diagnostics: dict[str, Any] = {
        "iterations_run": n_iter, "gram": "Jac Jac^T (N x N)" if dual else "Jac^T Jac (P x P)",
        "jacobian_MB": N * P * 8 / 1e6,
        "history_note": "J: initial, then after each LM iteration (one Jacobian, one accepted step); "
                        "min(iterations, max_iterations) + 1 entries"}
    if not np.isfinite(F):
        return diverged(params, {"J": history}, 0, diagnostics=diagnostics)
    Jac = np.empty((N, P))
    mu, nu, n_rejected = None, 2.0, 0
    for k in range(n_iter):
        residual_jacobian(params, Z, coef, fp, out=Jac, plan=plan)
        if not np.all(np.isfinite(Jac)):
            return diverged(params, {"J": history}, k, f"non-finite Jacobian at iteration {k}",
                            diagnostics=diagnostics)
        g = Jac.T @ R
        gram = Jac @ Jac.T if dual else Jac.T @ Jac
        if mu is None:
            mu = tau * float(np.max(np.einsum("np,np->p", Jac, Jac)))
        for _ in range(max_tries):
            try:
                c = scipy.linalg.cho_factor(gram + mu * np.eye(gram.shape[0]), check_finite=False)
                delta = Jac.T @ scipy.linalg.cho_solve(c, -R) if dual else scipy.linalg.cho_solve(c, -g)
                new = unflatten(theta + delta, like)
                fp_new = pinn_pass(new, Z, plan, Y)
                R_new = fp_new.R
                F_new = 0.5 * float(R_new @ R_new)
                rho = (F - F_new) / (0.5 * float(delta @ (mu * delta - g)))
            except np.linalg.LinAlgError:
                rho = -1.0
            if np.isfinite(rho) and rho > 0:
                theta, params, fp, R, F = theta + delta, new, fp_new, R_new, F_new
                mu *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
                nu = 2.0
                break
            n_rejected += 1
            mu *= nu
            nu *= 2.0
        else:
            diagnostics["stalled_at"] = k
            break
        history.append(2.0 * F / N)
        if progress is not None:
            progress(k, history[-1])
    diagnostics.update(mu_final=mu, rejected_steps=n_rejected)
    done = len(history) - 1
    message = f"stalled at iteration {done}: no acceptable step in {max_tries} tries" if done < n_iter else ""
    history += [history[-1]] * (n_iter + 1 - len(history))
    return SolveResult(params, {"J": history}, message=message, iterations_done=done, diagnostics=diagnostics)
