"""What PINN-GD's stack of seeds needs from the device (solvers/pinn.solve_seeds): the networks stacked on it
and back, and the masked update W - lr_k dW of the seeds still running as one kernel on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lysep_cli.accel.backend import Backend
from lysep_cli.numerics import sigma
from lysep_cli.numerics.network import Params


def stack(backend: Backend, params: list[Params]) -> Params:
    """S networks [(W_l, b_l)] -> one stacked network, on the device."""
    return [(backend.asarray(np.stack([p[l][0] for p in params])), backend.asarray(np.stack([p[l][1] for p in params])))
            for l in range(len(params[0]))]


def unstack(backend: Backend, params: Params) -> list[Params]:
    """One stacked network -> S networks on the host."""
    host = [(backend.host(W), backend.host(b)) for W, b in params]
    return [[(W[s].copy(), b[s].copy()) for W, b in host] for s in range(host[0][0].shape[0])]


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
