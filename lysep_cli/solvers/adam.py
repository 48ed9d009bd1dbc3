"""PINN trained by Adam (Kingma & Ba 2015) on J, with an exponentially decaying step size.

Schedule: step k = 0 .. iterations-1 uses lr_k = lr (lr_final / lr)^(k / (iterations - 1)) (the same
decay as PINN-GD, :func:`lysep_cli.solvers.pinn.learning_rate`), and the bias-corrected Adam update

    m <- b1 m + (1 - b1) g,  v <- b2 v + (1 - b2) g^2,
    theta <- theta - lr_k (m / (1 - b1^(k+1))) / (sqrt(v / (1 - b2^(k+1))) + eps),

with g = dJ/dtheta from the hand-derived reverse pass (:func:`lysep_cli.network.pinn_loss_and_grad`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..network import Params, flatten, pinn_loss_and_grad, unflatten
from ..problems import Problem
from .base import Progress, SolveResult, TrainingData, copy_params
from .pinn import learning_rate

DEFAULTS = {"lr": 1.0e-2, "lr_final": 1.0e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1.0e-8}


def solve(problem: Problem, data: TrainingData, params0: Params, settings: dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """Adam on J; settings ``lr``, ``lr_final``, ``beta1``, ``beta2``, ``eps`` (defaults in DEFAULTS).

    history["J"] has iterations + 1 entries: J at params0, then after each Adam step.
    """
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"pinn-adam: unknown settings {unknown} (known: {', '.join(DEFAULTS)})")
    s = {k: float(settings.get(k, v)) for k, v in DEFAULTS.items()}
    like = copy_params(params0)
    theta = flatten(like)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    J, grads = pinn_loss_and_grad(like, data.Z, data.coef, data.Y)
    history = [J]
    extra = {"settings": s, "history_note": "J: initial, then after each Adam step"}
    b1, b2 = s["beta1"], s["beta2"]
    for k in range(iterations):
        g = flatten(grads)
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g * g
        m_hat = m / (1.0 - b1 ** (k + 1))
        v_hat = v / (1.0 - b2 ** (k + 1))
        theta = theta - learning_rate(k, iterations, s["lr"], s["lr_final"]) * m_hat / (np.sqrt(v_hat) + s["eps"])
        params = unflatten(theta, like)
        J, grads = pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
        history.append(J)
        if not np.isfinite(J):
            return SolveResult(params, {"J": history}, "diverged", diverged_at=k + 1, extra=extra)
        if progress is not None:
            progress(k, J)
    return SolveResult(unflatten(theta, like), {"J": history}, extra=extra)
