"""PINN trained by L-BFGS-B (scipy.optimize.minimize) on J with the hand-derived gradient.

f(theta) = J, grad f = dJ/dtheta, both from one call of :func:`lysep_cli.numerics.network.pinn_loss_and_grad`
(``jac=True``).  No bounds.  ``maxiter = iterations`` (the same iteration budget as PINN-GD and LySep);
each L-BFGS iteration costs one or more function evaluations (the line search), counted in
diagnostics["nfev"].  ftol and gtol default to 0 so that the run uses the whole budget unless the line
search fails or ``maxfun`` is reached; such an early stop is followed by a restart (empty memory) while
the budget lasts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.optimize

from lysep_cli.numerics.network import Params, flatten, pinn_loss_and_grad, unflatten
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import Init, Progress, SolveResult, TrainingData, copy_params, diverged, init_setting
from lysep_cli.solvers.settings import SolverSettings, setting


@dataclass(frozen=True)
class Settings(SolverSettings):
    """L-BFGS-B (scipy) with restarts after an early stop."""

    maxcor: int = setting(20, low=1, doc="memory (corrections kept)")
    ftol: float = setting(0.0, low=0.0, doc="relative decrease that stops a start")
    gtol: float = setting(0.0, low=0.0, doc="projected-gradient norm that stops a start")
    maxls: int = setting(20, low=1, doc="line-search steps per iteration")
    maxfun_per_iteration: int = setting(4, low=1, doc="maxfun = this times iterations")
    max_restarts: int = setting(10, low=0, doc="restarts with an empty memory after an early stop")
    init: Init = init_setting()


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """L-BFGS-B on J with :class:`Settings`: ``maxcor`` (memory), ``ftol``, ``gtol``, ``maxls``
    (line-search steps), ``maxfun_per_iteration`` (maxfun = that times ``iterations``), ``max_restarts``.

    Restarts: with ftol = 0, L-BFGS-B stops when an iteration fails to decrease J (or the line search
    fails); while iterations and function evaluations remain, it is restarted from that point with an
    empty memory (first step along -grad), at most ``max_restarts`` times; a start that makes no
    iteration ends the run.

    history["J"]: J at params0, then J at each L-BFGS iterate (recorded by the per-iteration callback,
    i.e. per iteration, not per function evaluation).  If scipy stops before ``iterations``
    (maxfun, restarts exhausted), the parameters no longer change and the list is padded with the last
    value to iterations + 1 entries; diagnostics["nit"] (= iterations_done), ["restarts"] and ["message"]
    (one entry per start) say where and why.
    """
    s = Settings.coerce(settings)
    like = copy_params(params0)
    last: dict[str, Any] = {"x": None, "J": None}
    n_nonfinite = 0

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        nonlocal n_nonfinite
        J, grads = pinn_loss_and_grad(unflatten(theta, like), data.Z, data.coef, data.Y)
        n_nonfinite += not np.isfinite(J)
        last["x"], last["J"] = theta.copy(), J
        return J, flatten(grads)

    def J_at(theta: np.ndarray) -> float:
        if last["x"] is not None and np.array_equal(theta, last["x"]):
            return last["J"]
        return fun(theta)[0]

    theta0 = flatten(like)
    history = [fun(theta0)[0]]
    if not np.isfinite(history[0]):
        return diverged(like, {"J": history}, 0)

    def callback(xk: np.ndarray) -> None:
        J = J_at(xk)
        history.append(J)
        if progress is not None:
            progress(len(history) - 2, J)

    # One L-BFGS-B call per start; a start that stops early (no decrease in an iteration, line-search
    # failure) is restarted from its end point with an empty memory, while iterations remain.
    maxfun = s.maxfun_per_iteration * max(iterations, 1)
    theta, nit, nfev, messages = theta0, 0, 0, []
    for start in range(s.max_restarts + 1):
        res = scipy.optimize.minimize(
            fun, theta, jac=True, method="L-BFGS-B", callback=callback,
            options={"maxiter": iterations - nit, "maxfun": maxfun - nfev, "maxcor": s.maxcor,
                     "ftol": s.ftol, "gtol": s.gtol, "maxls": s.maxls})
        theta, nit, nfev = res.x, nit + int(res.nit), nfev + int(res.nfev)
        messages.append(f"{int(res.nit)} it: {res.message}")
        if nit >= iterations or nfev >= maxfun or res.nit == 0 or not np.isfinite(res.fun):
            break
    params = unflatten(theta, like)
    diagnostics = {"nit": nit, "nfev": nfev, "restarts": len(messages) - 1, "message": messages,
                   "nonfinite_evaluations": n_nonfinite,
                   "history_note": "J: initial, then per L-BFGS iteration (callback), across restarts; padded "
                                   "with the last value after an early stop (see nit)"}
    bad = [k for k, J in enumerate(history) if not np.isfinite(J)]
    J_final = J_at(theta)
    if bad or not np.isfinite(J_final):
        if not bad:
            history.append(J_final)
        return diverged(params, {"J": history}, bad[0] if bad else len(history) - 1, diagnostics=diagnostics)
    stop = "" if nit >= iterations else f"stopped after {nit} of {iterations} iterations: {messages[-1]}"
    history += [history[-1]] * (iterations + 1 - len(history))
    return SolveResult(params, {"J": history}, message=stop, iterations_done=nit, diagnostics=diagnostics)
