"""PINN-GD with a cell's seeds stacked: lysep_cli/solvers/pinn.py for S networks at once.

Every seed takes the CPU solver's path: the same step schedule lr_k, the same update W - lr_k dW, and its
own divergence decision.  A seed whose J is not finite (at its initial network, or after step k) stops
there, as the CPU solver returns: its parameters are frozen by a mask (the update of the others goes on),
its history ends at that iterate and its result says ``diverged_at``.  The per-seed J's stay on the device
during the run; they come back to the host every ``sync_every`` iterations (progress, and the end of the
run once every seed has diverged) and at the end: no host sync in an iteration.  On a device the masked
update is one kernel (:func:`masked_step`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from lysep_cli.accel import padding
from lysep_cli.accel.backend import Backend
from lysep_cli.numerics import sigma
from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.network import Params, loss_and_grad
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import SolveResult, diverged
from lysep_cli.solvers.pinn import Settings

#: iterations between host syncs of the per-seed J's (progress and the all-diverged check)
SYNC_EVERY = 50

StackProgress = Callable[[int, np.ndarray], None]
"""progress(k, J) after iteration k with J (S,) on the host, every ``sync_every`` iterations."""


def stack(backend: Backend, params: list[Params]) -> Params:
    """S networks [(W_l, b_l)] -> one stacked network, on the device."""
    return [(backend.asarray(np.stack([p[l][0] for p in params])), backend.asarray(np.stack([p[l][1] for p in params])))
            for l in range(len(params[0]))]


def unstack(backend: Backend, params: Params) -> list[Params]:
    """One stacked network -> S networks on the host."""
    host = [(backend.host(W), backend.host(b)) for W, b in params]
    return [[(W[s].copy(), b[s].copy()) for W, b in host] for s in range(host[0][0].shape[0])]


def solve_stacked(backend: Backend, problem: Problem, data: TrainingData, params0: list[Params],
                  settings: Settings | dict[str, Any], iterations: int, progress: StackProgress | None = None,
                  sync_every: int = SYNC_EVERY, stack_to: int | None = None) -> list[SolveResult]:
    """Gradient descent on J for each network of ``params0`` (one per seed), stacked; one
    :class:`SolveResult` per seed, in order, as :func:`lysep_cli.solvers.pinn.solve` returns it (``problem``
    unused, as there: the registry's stacked-solve signature, lysep_cli/solvers/base.Capabilities).
    ``stack_to``: the stack padded to a multiple of it (accel/padding.py; None: the device's default, 1 on
    NumPy, 10 on CuPy), recorded as ``diagnostics.padded_stack`` when it padded.

    history["J"] of a seed: J at its initial network, then after each step (iterations + 1 entries), cut
    after its first non-finite value.
    """
    xp = backend.xp
    n = len(params0)
    params0 = padding.padded(params0, padding.stack_size(xp, stack_to))
    progress = padding.real_seeds(progress, n)
    schedule = Settings.coerce(settings).schedule(iterations)
    plan = ChannelPlan.build(data.coef).to(xp)
    Z, Y = backend.asarray(data.Z), backend.asarray(data.Y)
    params = stack(backend, params0)
    S = len(params0)
    J, grads = loss_and_grad(params, Z, plan, Y, xp)
    Js = [J]  # J after each iteration, stacked once at the end (no copy kernel an iteration)
    active = xp.isfinite(J)
    for k in range(iterations):
        eta = schedule(k)
        params = [(masked_step(xp, active, W, eta, gW), masked_step(xp, active, b, eta, gb))
                  for (W, b), (gW, gb) in zip(params, grads)]
        J, grads = loss_and_grad(params, Z, plan, Y, xp)
        Js.append(J)
        active &= xp.isfinite(J)
        if (k + 1) % sync_every == 0 or k + 1 == iterations:
            if progress is not None:
                progress(k, backend.host(J))
            if not bool(active.any()):
                break
    history = np.full((iterations + 1, S), np.nan)
    history[:len(Js)] = backend.host(xp.stack(Js))
    out = [_result(p, h) for p, h in zip(unstack(backend, params)[:n], history.T[:n])]
    for result in out if S > n else ():
        result.diagnostics["padded_stack"] = S
    return out


MASKED_STEP = r"""
extern "C" __global__ void masked_step(const double* w, const double* g, const bool* keep, double eta,
                                       long long per_seed, double* out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    out[i] = keep[i / per_seed] ? w[i] - eta * g[i] : w[i];  /* eta * g, then the subtraction: no FMA */
  }
}
"""


def masked_step(xp: Any, keep: Any, W: Any, eta: float, G: Any) -> Any:
    """W - eta G for the seeds of ``keep`` (S,) bool, W itself for the others (W, G (S, ...)): on NumPy
    ``where(keep, W - eta G, W)``; on a device one kernel of the same operations (two launches fewer;
    gpu_check.py compares the two bit for bit there)."""
    if xp.__name__ == "numpy":
        return xp.where(keep.reshape((-1,) + (1,) * (W.ndim - 1)), W - eta * G, W)
    W, G = xp.ascontiguousarray(W), xp.ascontiguousarray(G)
    out = xp.empty_like(W)
    step = sigma.kernel(xp, lambda: MASKED_STEP, "masked_step")
    step(*sigma.grid(W.size), (W, G, keep, xp.float64(eta), xp.int64(W.size // W.shape[0]), out, xp.int64(W.size)))
    return out


def _result(params: Params, history: np.ndarray) -> SolveResult:
    """One seed's result from its row of the stacked history (entries after a non-finite one unused)."""
    bad = np.flatnonzero(~np.isfinite(history))
    J = [float(x) for x in history]
    if bad.size:
        return diverged(params, {"J": J}, int(bad[0]))
    return SolveResult(params, {"J": J})
