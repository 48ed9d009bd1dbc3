"""PINN trained by Adam (Kingma & Ba 2015) on J, with an exponentially decaying step size.

Schedule: step k = 0 .. iterations-1 uses lr_k = lr (lr_final / lr)^(k / (iterations - 1)) (the same
decay as PINN-GD, :class:`lysep_cli.solvers.steps.ExponentialDecay`), and the bias-corrected Adam update

    m <- b1 m + (1 - b1) g,  v <- b2 v + (1 - b2) g^2,
    theta <- theta - lr_k (m / (1 - b1^(k+1))) / (sqrt(v / (1 - b2^(k+1))) + eps),

with g = dJ/dtheta from the hand-derived reverse pass (:func:`lysep_cli.numerics.network.pinn_loss_and_grad`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lysep_cli.numerics.network import Params, flatten, pinn_loss_and_grad, unflatten
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import Init, Progress, SolveResult, TrainingData, copy_params, diverged, init_setting
from lysep_cli.solvers.settings import SolverSettings, setting
from lysep_cli.solvers.steps import ExponentialDecay


@dataclass(frozen=True)
class Settings(SolverSettings):
    """Adam with the exponentially decaying step of PINN-GD."""

    lr: float = setting(1.0e-2, low=0.0, low_open=True, doc="first step")
    lr_final: float = setting(1.0e-3, low=0.0, low_open=True, doc="last step")
    beta1: float = setting(0.9, low=0.0, high=1.0, high_open=True, doc="first-moment decay")
    beta2: float = setting(0.999, low=0.0, high=1.0, high_open=True, doc="second-moment decay")
    eps: float = setting(1.0e-8, low=0.0, low_open=True, doc="added to sqrt(v_hat)")
    init: Init = init_setting()

    def schedule(self, iterations: int) -> ExponentialDecay:
        return ExponentialDecay(self.lr, self.lr_final, iterations)


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """Adam on J with :class:`Settings`.

    history["J"] has iterations + 1 entries: J at params0, then after each Adam step.
    """
    s = Settings.coerce(settings)
    schedule = s.schedule(iterations)
    like = copy_params(params0)
    theta = flatten(like)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    J, grads = pinn_loss_and_grad(like, data.Z, data.coef, data.Y)
    history = [J]
    diagnostics = {"history_note": "J: initial, then after each Adam step"}
    if not np.isfinite(J):
        return diverged(like, {"J": history}, 0, diagnostics=diagnostics)
    b1, b2 = s.beta1, s.beta2
    for k in range(iterations):
        g = flatten(grads)
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g * g
        m_hat = m / (1.0 - b1 ** (k + 1))
        v_hat = v / (1.0 - b2 ** (k + 1))
        theta = theta - schedule(k) * m_hat / (np.sqrt(v_hat) + s.eps)
        params = unflatten(theta, like)
        J, grads = pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
        history.append(J)
        if not np.isfinite(J):
            return diverged(params, {"J": history}, k + 1, diagnostics=diagnostics)
        if progress is not None:
            progress(k, J)
    return SolveResult(unflatten(theta, like), {"J": history}, diagnostics=diagnostics)
