"""PINN trained by vanilla gradient descent with a decaying learning rate (Section 4)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..network import Params, pinn_loss_and_grad
from ..problems import Problem
from .base import Progress, SolveResult, TrainingData, copy_params


def learning_rate(k: int, iterations: int, lr: float, lr_final: float) -> float:
    """Exponential decay from ``lr`` at k = 0 to ``lr_final`` at the last iteration."""
    if iterations <= 1:
        return lr
    return lr * (lr_final / lr) ** (k / (iterations - 1))


def solve(problem: Problem, data: TrainingData, params0: Params, settings: dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """Gradient descent on J; settings: ``lr`` (first step), ``lr_final`` (last step).

    history["J"] has iterations + 1 entries: J at the initial parameters, then after each step.
    """
    lr0, lr1 = float(settings["lr"]), float(settings.get("lr_final", settings["lr"]))
    params = copy_params(params0)
    J, grads = pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
    history: list[float] = [J]
    for k in range(iterations):
        eta = learning_rate(k, iterations, lr0, lr1)
        params = [(W - eta * gW, b - eta * gb) for (W, b), (gW, gb) in zip(params, grads)]
        J, grads = pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
        history.append(J)
        if not np.isfinite(J):
            return SolveResult(params, {"J": history}, "diverged", diverged_at=k + 1)
        if progress is not None:
            progress(k, J)
    return SolveResult(params, {"J": history})
