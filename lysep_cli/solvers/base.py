"""The contract every solver meets: same inputs, same result, same divergence handling.

A solver is a function::

    solve(problem, data, params0, settings, iterations, progress=None) -> SolveResult

``data`` holds the training set in the paper's layout; ``params0`` the seeded initial network
(shared by every solver for a seed); ``settings`` the solver's block of experiments.yaml;
``progress(k, loss)`` is called after each iteration (it may raise KeyboardInterrupt).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from ..network import Params
from ..problems import OperatorCoefficients, Problem

Progress = Callable[[int, float], None]


@dataclass(frozen=True)
class TrainingData:
    """Z (n_in, N) training points, coefficients of the residual at Z, and data Y (N,)."""

    Z: np.ndarray
    coef: OperatorCoefficients
    Y: np.ndarray

    @classmethod
    def build(cls, problem: Problem, Z: np.ndarray) -> "TrainingData":
        return cls(Z, problem.coefficients(Z), problem.rhs(Z))


@dataclass
class SolveResult:
    """What a solver returns.

    params : trained [(W_l, b_l)] in the paper's shapes.
    history : per-iteration series; "J" always (PINN loss of the current W, b), "J_S" for LySep.
    status : "ok" or "diverged" (a NaN/inf appeared; ``diverged_at`` is that iteration).
    J_S : final LySep loss, None for the PINN-type solvers.
    extra : JSON-able solver-specific fields (bound check, diagnostics, condition numbers ...).
    """

    params: Params
    history: dict[str, list[float]]
    status: str = "ok"
    diverged_at: int | None = None
    J_S: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Solver(Protocol):
    def __call__(self, problem: Problem, data: TrainingData, params0: Params, settings: dict[str, Any],
                 iterations: int, progress: Progress | None = None) -> SolveResult: ...


def copy_params(params: Params) -> Params:
    return [(W.copy(), b.copy()) for W, b in params]


def is_finite(x: float) -> bool:
    return bool(np.isfinite(x))
