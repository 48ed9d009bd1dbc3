"""PINN trained by vanilla gradient descent with a decaying learning rate (Section 4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lysep_cli.numerics.network import Params, pinn_loss_and_grad
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import (Capabilities, Init, Progress, SolveResult, TrainingData, copy_params, diverged,
                                    init_setting)
from lysep_cli.solvers.settings import SolverSettings, setting
from lysep_cli.solvers.steps import ExponentialDecay

#: round-off stays at 1e-14 across BLAS kernels and NumPy SIMD paths over 2000 iterations (measured)
CAPABILITIES = Capabilities(round_off_stable=True, stacks="lysep_cli.accel.pinn:solve_stacked")


@dataclass(frozen=True)
class Settings(SolverSettings):
    """PINN-GD: step k is lr_k = lr (lr_final / lr)^(k / (iterations - 1))."""

    lr: float = setting(low=0.0, low_open=True, doc="first step")
    lr_final: float | None = setting(None, low=0.0, low_open=True, doc="last step (null: lr, a constant step)")
    init: Init = init_setting()

    def schedule(self, iterations: int) -> ExponentialDecay:
        return ExponentialDecay(self.lr, self.lr if self.lr_final is None else self.lr_final, iterations)


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """Gradient descent on J with the step schedule of ``settings`` (:class:`Settings`).

    history["J"] has iterations + 1 entries: J at the initial parameters, then after each step.
    """
    schedule = Settings.coerce(settings).schedule(iterations)
    params = copy_params(params0)
    J, grads = pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
    history: list[float] = [J]
    if not np.isfinite(J):
        return diverged(params, {"J": history}, 0)
    for k in range(iterations):
        eta = schedule(k)
        params = [(W - eta * gW, b - eta * gb) for (W, b), (gW, gb) in zip(params, grads)]
        J, grads = pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
        history.append(J)
        if not np.isfinite(J):
            return diverged(params, {"J": history}, k + 1)
        if progress is not None:
            progress(k, J)
    return SolveResult(params, {"J": history})
