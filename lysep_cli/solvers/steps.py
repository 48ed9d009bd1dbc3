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
    (times ``grow``) after each success and shrinks (times ``shrink``) after each rejected trial.

    ``backoff_max`` > 0 (off by default): once a run settles, the grown first trial is rejected at almost
    every step and the step accepted is the previous one, so each step costs two trials.  With back-off,
    a rejected grown trial makes the next ``k`` steps start at the last accepted step (no growth), k = 1,
    2, 4, ... up to ``backoff_max`` while the grown trials keep failing, and k goes back to 1 once a
    grown trial is accepted.  The accepted steps are the same as without it as long as growing would have
    been rejected; a step that could have grown does so up to ``backoff_max`` steps later.

    A rejected trial's payload (LySep: the trial's state and residuals, (n_in, M, N) arrays among them) is
    dropped before the next trial is built, so at most one trial's arrays live beside the current state's.
    """

    tau: float
    grow: float
    shrink: float
    armijo: float
    max_tries: int
    backoff_max: int = 0
    last: float = 0.0  # the last accepted step
    skip: int = 0  # steps left that start at ``last``
    backoff: int = 1  # the next skip length

    @property
    def inactive(self) -> bool:
        return False

    def state(self) -> dict[str, float]:
        """What a checkpoint must keep of the rule between steps."""
        return {"tau": self.tau, "last": self.last, "skip": self.skip, "backoff": self.backoff}

    def set_state(self, state: dict[str, float]) -> None:
        self.tau = float(state["tau"])
        self.last = float(state.get("last", 0.0))
        self.skip, self.backoff = int(state.get("skip", 0)), int(state.get("backoff", 1))

    def step(self, J0: float, g2: float, trial: Trial) -> tuple[float, Any, float]:
        holding = self.backoff_max > 0 and self.skip > 0 and self.last > 0.0
        if holding:
            self.skip -= 1
        t = self.last if holding else self.tau
        probing = self.backoff_max > 0 and not holding and self.last > 0.0 and t > self.last
        for i in range(self.max_tries):
            J, payload = trial(t)
            if np.isfinite(J) and J <= J0 - self.armijo * t * g2:
                if probing and i == 0:
                    self.backoff = 1  # the grown step was accepted
                self.last = t
                self.tau = t * self.grow
                return J, payload, t
            payload = None  # rejected: release its arrays before the next trial makes its own
            if probing and i == 0:  # the grown step failed: hold the next steps at the last accepted one
                self.skip = self.backoff
                self.backoff = min(2 * self.backoff, self.backoff_max)
            t *= self.shrink
        self.tau = t
        return J0, None, 0.0
