"""Random-feature least squares (ablation): hidden layers frozen, output layer by one linear solve.

The hidden layers W_1, b_1, ..., W_{L-1}, b_{L-1} stay at their seeded initial values (the same
initial network PINN and LySep start from: the paper's U(-M^-1/2, M^-1/2), or with ``init: torch``
nn.Linear's U(-fan_in^-1/2, fan_in^-1/2)).  The PINN residual is linear in the output layer, so

    (W_L, b_L) = argmin ||A [W_L^T; b_L] - Y||^2,    A = (N, M + 1)   (jacobian.output_layer_system)

is one linear least-squares problem: the same kind of closed-form solve LySep uses for W_3, here on
its own.  A is badly conditioned (the sin features of a random layer are nearly dependent; cond(A)
grows like 1e7 .. 1e17 with M), so it is solved by the SVD (``scipy.linalg.lstsq``, LAPACK gelsd)
with a relative cutoff: singular values below ``rcond * s_max`` are dropped (minimum-norm solution in
the remaining subspace).  The default, ``rcond: auto``, is eps * max(N, M + 1) (numpy.linalg.lstsq's
default: singular values below the round-off level of A's entries carry no information).
docs/baselines.md shows how J and l2 depend on the cutoff.

``lstsq: basic`` solves it instead as the paper's Matlab ``A \\ Y`` would: QR with column pivoting and
Matlab's rank rule (lysep_cli/numerics/lstsq.py), a basic solution with at most rank(A) nonzero entries
in (W_L, b_L); ``rcond`` is then not used.  The default, ``min-norm``, is the SVD solve above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.linalg

from lysep_cli.numerics.jacobian import output_layer_system
from lysep_cli.numerics.lstsq import basic_lstsq_tol
from lysep_cli.numerics.network import Params
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import (Capabilities, Init, Progress, SolveResult, TrainingData, copy_params, diverged,
                                    init_setting)
from lysep_cli.solvers.settings import SolverSettings, setting

#: one least-squares solve: nothing to amplify round-off (measured: docs/reproducibility.md)
CAPABILITIES = Capabilities(round_off_stable=True, on_host=True)


#: the ``lstsq`` setting of rfls and rfm
LSTSQ_DOC = ("min-norm: SVD (gelsd) with the rcond cutoff | basic: Matlab's A\\Y, pivoted QR, "
             "at most rank(A) nonzeros (rcond unused)")


@dataclass(frozen=True)
class Settings(SolverSettings):
    """Random-feature least squares: one least-squares solve (SVD, or Matlab's basic) for the output layer."""

    rcond: float | Literal["auto"] = setting("auto", low=0.0, doc='relative singular-value cutoff, or "auto"')
    lstsq: Literal["min-norm", "basic"] = setting("min-norm", omit_default=True, doc=LSTSQ_DOC)
    init: Init = init_setting()

    def history_length(self, iterations: int) -> int:
        return 2  # [initial J, J after the one solve], whatever ``iterations``


def cutoff(setting: Any, shape: tuple[int, int]) -> float:
    """The relative singular-value cutoff: a number, or eps * max(shape) for "auto"/None."""
    if setting is None or setting == "auto":
        return float(np.finfo(float).eps * max(shape))
    return float(setting)


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """One least-squares solve for (W_L, b_L) with the ``lstsq`` and cutoff of :class:`Settings`.

    ``iterations`` is ignored (the method is one closed-form step).  history["J"] = [J at params0,
    J after the solve]; diagnostics record cond(A) = s_max / s_min, the effective rank and the cutoff.
    """
    s = Settings.coerce(settings)
    return solve_output_layer(data, copy_params(params0), s.rcond, progress, lstsq=s.lstsq)


def solve_output_layer(data: TrainingData, params: Params, rcond_setting: Any,
                       progress: Progress | None = None, lstsq: str = "min-norm") -> SolveResult:
    """(W_L, b_L) of ``params`` (modified in place) by one least-squares solve on its hidden layers;
    the result of :func:`solve` (rfls) and of the random-feature method (rfm).

    ``lstsq``: "min-norm" (SVD, gelsd, relative cutoff from ``rcond_setting``) or "basic" (Matlab's
    backslash, :func:`lysep_cli.numerics.lstsq.basic_lstsq`).  diagnostics: cond, s_max, s_min (A's
    singular values), rank (min-norm: singular values above the cutoff; basic: Matlab's rank of the
    pivoted R); basic adds ``lstsq`` and ``lstsq_tol`` (the absolute tolerance on |R(k,k)|).
    """
    A, _ = output_layer_system(params, data.Z, data.coef)
    rcond = cutoff(rcond_setting, A.shape)
    N = A.shape[0]
    WL, bL = params[-1]
    R0 = A @ np.concatenate([WL.ravel(), bL]) - data.Y
    J0 = float(R0 @ R0 / N)
    history = {"J": [J0]}
    diagnostics: dict[str, Any] = {"rcond": rcond, "n_columns": int(A.shape[1]),
                                   "history_note": "J: [initial, after the one least-squares solve]"}
    if not np.isfinite(J0):
        return diverged(params, history, 0, diagnostics=diagnostics)
    if not np.all(np.isfinite(A)):
        history["J"].append(float("nan"))
        return diverged(params, history, 1, "non-finite least-squares matrix", diagnostics=diagnostics)
    if lstsq == "basic":
        # (W_L, b_L) = A \\ Y (Matlab): pivoted QR, basic solution; A's singular values for the diagnostics.
        x, rank, tol = basic_lstsq_tol(A, data.Y)
        sv = scipy.linalg.svdvals(A)
        diagnostics.update(lstsq="basic", rcond=None, lstsq_tol=tol)  # tol = max(N, M + 1) eps |R(1,1)|
    else:
        x, _, rank, sv = scipy.linalg.lstsq(A, data.Y, cond=rcond, lapack_driver="gelsd")
    params[-1] = (x[:-1][None, :], x[-1:].copy())
    R = A @ x - data.Y
    J = float(R @ R / N)
    history["J"].append(J)
    diagnostics.update(cond=float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf"), rank=int(rank),
                       s_max=float(sv[0]), s_min=float(sv[-1]))
    if progress is not None:
        progress(0, J)
    if not np.isfinite(J):
        return diverged(params, history, 1, diagnostics=diagnostics)
    return SolveResult(params, history, diagnostics=diagnostics)
