"""PINN trained by vanilla gradient descent with a decaying learning rate (Section 4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from lysep_cli.accel import padding
from lysep_cli.accel import pinn as accel_pinn
from lysep_cli.accel.backend import CPU, Backend
from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.network import Params, loss_and_grad
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import (Capabilities, Init, Progress, SolveResult, TrainingData, copy_params, diverged,
                                    init_setting)
from lysep_cli.solvers.settings import SolverSettings, setting
from lysep_cli.solvers.steps import ExponentialDecay

#: iterations between host syncs of a stack's per-seed J's (progress and the all-diverged check)
SYNC_EVERY = 50

#: round-off stays at 1e-14 across BLAS kernels and NumPy SIMD paths over 2000 iterations (measured)
CAPABILITIES = Capabilities(round_off_stable=True, stacks="lysep_cli.solvers.pinn:solve_seeds")


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
    """Gradient descent on J with the step schedule of ``settings`` (:class:`Settings`): one network
    (:func:`solve_seeds` with S = 1 on NumPy).

    history["J"] has iterations + 1 entries: J at the initial parameters, then after each step.
    """
    each = None if progress is None else (lambda k, J: progress(k, float(J[0])))
    return solve_seeds(CPU, problem, data, [params0], settings, iterations, each, sync_every=1)[0]


def solve_seeds(backend: Backend, problem: Problem, data: TrainingData, params0: list[Params],
                settings: Settings | dict[str, Any], iterations: int,
                progress: Callable[[int, np.ndarray], None] | None = None, sync_every: int = SYNC_EVERY,
                stack_to: int | None = None) -> list[SolveResult]:
    """Gradient descent on J for each network of ``params0`` (one per seed) on ``backend``: one SolveResult
    per seed, in order, each the run alone's bit for bit (``problem`` unused: the registry's signature).

    Every seed takes the same step schedule lr_k and update W - lr_k dW, and decides its own divergence: a
    seed whose J is not finite (at its initial network, or after step k) stops there, its parameters frozen
    by a mask (accel/pinn.masked_step) while the others go on; its history ends at that iterate and its
    result says ``diverged_at``.  With a seed axis (S > 1, or a device) the J's stay on the device and come
    to the host every ``sync_every`` iterations (``progress(k, J (S,))`` and the all-diverged check) and at
    the end; one seed on NumPy has no seed axis and no mask.  ``stack_to``: the stack padded to a multiple
    of it (accel/padding.py; None: 1 on NumPy, 10 on CuPy), recorded as ``diagnostics.padded_stack``.
    """
    xp = backend.xp
    n = len(params0)
    params0 = padding.padded(params0, padding.stack_size(xp, stack_to))
    progress = padding.real_seeds(progress, n)
    schedule = Settings.coerce(settings).schedule(iterations)
    S = len(params0)
    stacked = S > 1 or xp is not np
    plan = ChannelPlan.build(data.coef).to(xp)
    Z, Y = backend.asarray(data.Z), backend.asarray(data.Y)
    params = accel_pinn.stack(backend, params0) if stacked else copy_params(params0[0])
    J, grads = loss_and_grad(params, Z, plan, Y, xp)
    Js = [J]  # J after each iteration, stacked once at the end (no copy kernel an iteration)
    active = xp.isfinite(J)
    for k in range(iterations if stacked or active else 0):  # (a stack learns at its first sync)
        eta = schedule(k)
        if stacked:
            params = [(accel_pinn.masked_step(xp, active, W, eta, gW), accel_pinn.masked_step(xp, active, b, eta, gb))
                      for (W, b), (gW, gb) in zip(params, grads)]
        else:
            params = [(W - eta * gW, b - eta * gb) for (W, b), (gW, gb) in zip(params, grads)]
        J, grads = loss_and_grad(params, Z, plan, Y, xp)
        Js.append(J)
        active &= xp.isfinite(J)
        if not (stacked or active):
            break  # one seed: it diverged at this step
        if (k + 1) % sync_every == 0 or k + 1 == iterations:
            if progress is not None:
                progress(k, backend.host(J).reshape(-1))
            if not bool(active.any()):
                break
    history = np.full((iterations + 1, S), np.nan)
    history[:len(Js)] = backend.host(xp.stack(Js)).reshape(len(Js), S)
    nets = accel_pinn.unstack(backend, params) if stacked else [params]
    out = [_result(p, h) for p, h in zip(nets[:n], history.T[:n])]
    for result in out if S > n else ():
        result.diagnostics["padded_stack"] = S
    return out


def _result(params: Params, history: np.ndarray) -> SolveResult:
    """One seed's result from its row of the history (entries after a non-finite one unused)."""
    bad = np.flatnonzero(~np.isfinite(history))
    J = [float(x) for x in history]
    if bad.size:
        return diverged(params, {"J": J}, int(bad[0]))
    return SolveResult(params, {"J": J})
