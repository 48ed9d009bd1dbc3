"""Step-size schedules and step rules: small objects a solver is handed, built from its settings.

A *schedule* maps the iteration k to a step size (PINN-GD, Adam).  A *step rule* takes one gradient step
on a block of variables and decides its length (LySep: one rule object per block, each with its own
state).  The solver's loop calls them; it never re-reads the settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

Trial = Callable[[float], "tuple[float, Any]"]


@dataclass(frozen=True)
class ExponentialDecay:
    """lr_k = lr (lr_final / lr)^(k / (iterations - 1)): ``lr`` at k = 0, ``lr_final`` at the last step."""

    lr: float
    lr_final: float
    iterations: int

    def __call__(self, k: int) -> float:
        if self.iterations <= 1:
            return self.lr
        return self.lr * (self.lr_final / self.lr) ** (k / (self.iterations - 1))


class StepRule(Protocol):
    """One block's step rule.

    ``step(J0, g2, trial)``: J0 the loss now, g2 = ||g||^2, ``trial(t)`` the loss after the step
    x - t g and a payload (the new state).  Returns (loss, payload, t) of the accepted step, or
    (J0, None, 0.0) when no step is taken.  ``inactive`` is True for a rule that never moves
    (fixed tau = 0): the solver then skips the block's gradient altogether.
    """

    tau: float

    @property
    def inactive(self) -> bool: ...

    def step(self, J0: float, g2: float, trial: Trial) -> tuple[float, Any, float]: ...


@dataclass
class FixedStep:
    """x <- x - tau * g, always accepted (the paper's rule)."""

    tau: float

    @property
    def inactive(self) -> bool:
        return self.tau == 0.0

    def step(self, J0: float, g2: float, trial: Trial) -> tuple[float, Any, float]:
        J, payload = trial(self.tau)
        return J, payload, self.tau


@dataclass
class Backtracking:
    """Armijo backtracking: accept t when J(x - t g) <= J0 - armijo t ||g||^2; the trial step grows
    (times ``grow``) after each success and shrinks (times ``shrink``) after each rejected trial."""

    tau: float
    grow: float
    shrink: float
    armijo: float
    max_tries: int

    @property
    def inactive(self) -> bool:
        return False

    def step(self, J0: float, g2: float, trial: Trial) -> tuple[float, Any, float]:
        t = self.tau
        for _ in range(self.max_tries):
            J, payload = trial(t)
            if np.isfinite(J) and J <= J0 - self.armijo * t * g2:
                self.tau = t * self.grow
                return J, payload, t
            t *= self.shrink
        self.tau = t
        return J0, None, 0.0
