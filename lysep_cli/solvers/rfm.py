"""The random feature method (RFM; PIELM): one wide hidden layer of sinusoidal features with a chosen
frequency scale, the output layer by one least-squares solve (rfls's, lysep_cli/solvers/rfls.py).

    psi(x) = l(x) * (W_2 sin(W_1 x + b_1) + b_2),   W_1 ~ U(-sigma, sigma),  b_1 ~ U(-pi, pi),

with the hard-constraint form of every solver here (l vanishes on the boundary, and at t = 0), the
same data sets and the channel engine's exact derivatives.  The difference from rfls is the scale of
the features: the paper's initialisation U(-M^-1/2, M^-1/2) makes a hidden layer nearly linear (its
features nearly dependent: cond 1e10..1e17), where the random feature method picks sigma on purpose
and uses one wide layer (Chen, Chi, E & Yang 2022; Dwivedi & Srinivasan 2020).

The hidden layer is the seeded initial network rescaled: W_1 = sigma * M^{1/2} * W_1^0 and
b_1 = pi * M^{1/2} * b_1^0 (the seed's U(-M^-1/2, M^-1/2) draws become U(-sigma, sigma) and
U(-pi, pi)), so a run is fixed by its seed like every other.  Uniform rather than normal: it is that
same draw rescaled, and its frequencies are bounded by sigma (no tail of frequencies the training
points cannot resolve).  L = 2 only; M is the number of features.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from lysep_cli.numerics.network import Params, pinn_loss
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import Capabilities, Progress, SolveResult, TrainingData
from lysep_cli.solvers.rfls import LSTSQ_DOC, solve_output_layer
from lysep_cli.solvers.settings import SolverSettings, setting

#: one least-squares solve, like rfls
CAPABILITIES = Capabilities(round_off_stable=True, on_host=True, first_values="lysep_cli.solvers.rfm:first_values")


@dataclass(frozen=True)
class Settings(SolverSettings):
    """Random features sin(W_1 x + b_1), W_1 ~ U(-sigma, sigma), b_1 ~ U(-pi, pi); one least-squares solve
    (rfls's: SVD, or with ``lstsq: basic`` Matlab's backslash)."""

    sigma: float = setting(1.0, low=0.0, low_open=True, doc="frequency scale: W_1 ~ U(-sigma, sigma)")
    rcond: float | Literal["auto"] = setting("auto", low=0.0, doc='relative singular-value cutoff, or "auto"')
    lstsq: Literal["min-norm", "basic"] = setting("min-norm", omit_default=True, doc=LSTSQ_DOC)

    def size_error(self, L: int, M: int) -> str | None:
        return None if L == 2 else "the random feature method has one hidden layer (L = 2)"

    def history_length(self, iterations: int) -> int:
        return 2  # [initial J, J after the one solve], whatever ``iterations``


def features(params0: Params, sigma: float) -> Params:
    """The seeded network (L = 2, network.init_params) with its hidden layer rescaled to
    W_1 ~ U(-sigma, sigma), b_1 ~ U(-pi, pi); the output layer as seeded (the solve replaces it)."""
    (W1, b1), (W2, b2) = params0
    root_M = math.sqrt(W1.shape[0])
    return [(W1 * (sigma * root_M), b1 * (math.pi * root_M)), (W2.copy(), b2.copy())]


def first_values(data: TrainingData, params0: Params, settings: Settings | dict[str, Any]) -> dict[str, float]:
    """{"J": J[0]}: the PINN loss of the seeded network with its hidden layers rescaled (:func:`features`),
    the network rfm's history starts from."""
    return {"J": pinn_loss(features(params0, Settings.coerce(settings).sigma), data.Z, data.coef, data.Y)}


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """The output layer of :func:`features` by one least-squares solve; ``iterations`` is ignored."""
    s = Settings.coerce(settings)
    if len(params0) != 2:
        raise ValueError(f"rfm needs L = 2, got L = {len(params0)}")
    result = solve_output_layer(data, features(params0, s.sigma), s.rcond, progress, lstsq=s.lstsq)
    result.diagnostics["sigma"] = s.sigma
    return result
