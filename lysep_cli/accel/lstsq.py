"""Where the stacked LySep's W_L least squares (`eq:GD_W3`, updates.solve_W3) are brought to the host.

For each seed s (updates.solve_W3, transposed):

    A x = c,   A = [B^T; sqrt(lambda) I]  ((N + M) x M),   c = [Y - K b_L; 0],   x = W_L^T.

``w_solve`` chooses where:

- ``"host"``: B (S, M, N) and Y - K b_L (S, N) come back to the host and each seed's full system is solved
  there by the CPU solver's routine (scipy's gelsy with ``rcond``, or Matlab's basic solve): on NumPy the
  CPU engine's bits.
- ``"reduced"``: on the array device, one Householder QR of the tall part for all seeds at once,

      R = qr([B^T | Y - K b_L], mode="r"),   (S, N, M + 1) -> (S, k, M + 1),   k = min(N, M + 1),

  so that Q^T [B^T | y] = [R_11 r_12; 0 rho] and ||B^T x - y||^2 = ||R_11 x - r_12||^2 + rho^2 for every x.
  The reduced system [R_11; sqrt(lambda) I] x = [r_12; 0] ((k + M) x M) therefore has the same
  least-squares solutions as the full one (the same minimum-norm solution, residuals differing by the
  constant rho^2, rank-deficient systems included) and the same singular values (so the same condition
  number); only R, (S, k, M + 1) doubles, comes to the host, where each seed's small system is solved by
  the same routine.  Matlab's rank rule keeps the full system's size: tol = max(N + M, M) eps |R(1,1)|.

With ``w3_b3: joint`` (updates.solve_W3, joint) the unknown is x = [W_L, b_L]^T and b_L is not regularised:

    A = [B^T K; sqrt(lambda) I 0]  ((N + M) x (M + 1)),   c = [Y; 0],

the same two modes with [B^T | K] for B^T and Y for y ("reduced": R = qr([B^T | K | Y]), (S, N, M + 2) ->
(S, min(N, M + 2), M + 2)); the regularisation rows cover W_L's M columns only.

The per-seed host solves (numerics/lstsq.solve_all: the CPU's routines, on a thread pool over the seeds)
are those of a run alone; what is done here is the device's: the transfer, and the QR reduction on it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from lysep_cli.accel.backend import Backend
from lysep_cli.numerics.lstsq import Systems

Array = Any
#: where the W_L systems are solved (module docstring)
W_SOLVES = ("host", "reduced")


def default_w_solve(xp: Any) -> str:
    """"host" on NumPy (the CPU engine's bits: ``--device cpu-stacked`` stays bit-identical), "reduced" on
    CuPy (only R comes back, (S, M+1, M+1) instead of B's (S, M, N), and the host solves are (2M x M))."""
    return "host" if xp is np else "reduced"


def default_workers(seeds: int) -> int:
    """Threads for the per-seed host solves: ``$LYSEP_HOST_THREADS`` (a LocalCluster's workers get their
    share of the CPUs: lysep_cli/execution/local_share.py) or the CPUs this process may use, at most one
    per seed."""
    cpus = host_threads() or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                               else (os.cpu_count() or 1))
    return max(1, min(seeds, cpus))


def host_threads() -> int | None:
    """``$LYSEP_HOST_THREADS`` (a whole number >= 1), None where unset; ValueError (one line) otherwise."""
    text = os.environ.get("LYSEP_HOST_THREADS", "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdecimal()) or int(text) < 1:
        raise ValueError(f"LYSEP_HOST_THREADS={text!r}: expected a whole number of threads >= 1")
    return int(text)


def reduce(xp: Any, Bt: Array, y: Array) -> Array:
    """R of [B^T | y] for every seed, Householder (numpy/cupy qr, mode "r"): Bt (n, N, M), y (n, N) ->
    (n, min(N, M + 1), M + 1); its first M columns are R_11 (above r_12's row block), its last r_12."""
    return xp.linalg.qr(xp.concatenate([Bt, y[:, :, None]], axis=2), mode="r")


def to_host(be: Backend, B: Array, y: Array, lam: Array, w_solve: str, K: Array | None = None) -> Systems:
    """The W_L systems of the seeds of B (n, M, N), y (n, N) (Y - K b_L; Y when joint) and lambda (n,) (device
    arrays) on the host, in the form ``w_solve`` solves them (module docstring): one device->host copy of them
    all.  ``K`` (N,) (on the device): the joint solve's b_L column, appended to B^T's columns."""
    xp, n, M, N = be.xp, B.shape[0], B.shape[1], B.shape[2]
    if K is not None:  # [B^T | K]^T = [B; K^T], (n, M + 1, N)
        B = xp.concatenate([B, xp.broadcast_to(K, (n, 1, N))], axis=1)
    C = B.shape[1]
    if w_solve == "host":
        flat = be.host(xp.concatenate([B.reshape(n, C * N), y, lam[:, None]], axis=1))
        return Systems(flat[:, :C * N].reshape(n, C, N).transpose(0, 2, 1), flat[:, C * N:-1], flat[:, -1], N + M, M)
    R = reduce(xp, xp.swapaxes(B, 1, 2), y)
    k = R.shape[1]
    flat = be.host(xp.concatenate([R.reshape(n, k * (C + 1)), lam[:, None]], axis=1))
    R = flat[:, :-1].reshape(n, k, C + 1)
    return Systems(R[:, :, :C], R[:, :, C], flat[:, -1], N + M, M)


