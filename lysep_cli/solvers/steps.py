"""Step-size schedules and step rules: small objects a solver is handed, built from its settings.

A *schedule* maps the iteration k to a step size (PINN-GD, Adam).  A *step rule* takes one gradient step
on a block of variables and decides its length (LySep: one rule object per block, each with its own
state).  The solver's loop calls them; it never re-reads the settings.

:class:`Backtracking` has a seed axis: its state is one entry per seed of a stack (S seeds, S = 1 for a run
alone), :meth:`Backtracking.step_seeds` takes one step for every seed at once (LySep's sweep,
solvers/lysep/algorithm.py, at any S) and :meth:`Backtracking.step` is the same rule for a caller with one
scalar loss (varpro).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

Trial = Callable[[float], "tuple[float, Any]"]
"""trial(t) -> (J after the step x - t g, payload): one seed's trial"""
StackedTrial = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, Any]"]
"""trial(t (S,), trying (S,) bool) -> (J after the step x - t g (S,; entries of seeds not trying unused),
payload)"""
Accept = Callable[[Any, np.ndarray], None]
"""accept(payload, mask (S,) bool): the seeds of ``mask`` take the trial's state"""


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
    """One block's step rule for a run alone.

    ``step(J0, g2, trial)``: J0 the loss now, g2 = ||g||^2, ``trial(t)`` the loss after the step
    x - t g and a payload (the new state).  Returns (loss, payload, t) of the accepted step, or
    (J0, None, 0.0) when no step is taken.  ``inactive`` is True for a rule that never moves
    (fixed tau = 0): the solver then skips the block's gradient altogether.  ``step_size`` is the next
    step's first trial.
    """

    @property
    def inactive(self) -> bool: ...

    @property
    def step_size(self) -> float: ...

    def step(self, J0: float, g2: float, trial: Trial) -> tuple[float, Any, float]: ...


@dataclass
class FixedStep:
    """x <- x - tau * g, always accepted (the paper's rule)."""

    tau: float

    @property
    def inactive(self) -> bool:
        return self.tau == 0.0

    @property
    def step_size(self) -> float:
        return self.tau

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

    One rule state per seed (``seeds`` = S): ``tau`` (the next first trial), ``last`` (the last accepted
    step), ``skip`` (steps left that start at ``last``) and ``backoff`` (the next skip length), each (S,).
    Each seed decides with its own mask, by the same operations in the same order whatever S, so a seed's
    decisions in a stack are its decisions alone, bit for bit (tests/test_stacked.py).

    A rejected trial's payload (LySep: the trial's state and residuals, (n_in, M, N) arrays among them) is
    dropped before the next trial is built, so at most one trial's arrays live beside the current state's.
    """

    tau0: float
    grow: float
    shrink: float
    armijo: float
    max_tries: int
    backoff_max: int = 0
    seeds: int = 1
    tau: np.ndarray = field(init=False)
    last: np.ndarray = field(init=False)
    skip: np.ndarray = field(init=False)
    backoff: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.tau = np.full(self.seeds, float(self.tau0))
        self.last = np.zeros(self.seeds)
        self.skip = np.zeros(self.seeds, dtype=np.int64)
        self.backoff = np.ones(self.seeds, dtype=np.int64)

    @property
    def inactive(self) -> bool:
        return False

    @property
    def step_size(self) -> float:
        """The next first trial of a rule for one seed."""
        return float(self.tau[0])

    def state(self) -> dict[str, float]:
        """What a checkpoint of a run alone (S = 1) must keep of the rule between steps."""
        return {"tau": float(self.tau[0]), "last": float(self.last[0]), "skip": int(self.skip[0]),
                "backoff": int(self.backoff[0])}

    def set_state(self, state: dict[str, float]) -> None:
        self.tau = np.full(self.seeds, float(state["tau"]))
        self.last = np.full(self.seeds, float(state.get("last", 0.0)))
        self.skip = np.full(self.seeds, int(state.get("skip", 0)), dtype=np.int64)
        self.backoff = np.full(self.seeds, int(state.get("backoff", 1)), dtype=np.int64)

    def step(self, J0: float, g2: float, trial: Trial) -> tuple[float, Any, float]:
        """One step of a rule for one seed (S = 1), ``trial(t)`` with a Python float: (J, payload, t) of the
        accepted trial, or (J0, None, 0.0) when ``max_tries`` trials were rejected."""
        taken: list[Any] = []

        def trial_one(t: np.ndarray, trying: np.ndarray) -> tuple[np.ndarray, Any]:
            J, payload = trial(float(t[0]))
            return np.array([J], dtype=float), payload

        J, t, took = self.step_seeds(np.array([J0], dtype=float), np.array([g2], dtype=float), trial_one,
                                     lambda payload, mask: taken.append(payload))
        return (float(J[0]), taken[0], float(t[0])) if took[0] else (J0, None, 0.0)

    def step_seeds(self, J0: np.ndarray, g2: np.ndarray | Callable[[], np.ndarray], trial: StackedTrial,
                   accept: Accept, active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step for every ``active`` seed (default: all): returns (J, t, accepted), each (S,): the accepted
        loss and step per seed and whether it accepted a trial, or (J0, 0, False) for a seed that accepted none
        in ``max_tries`` (or is not active).  ``g2``: ||g||^2 (S,), or a function giving it, called once after
        the first trial (the stacked LySep brings it to the host with that trial's J_S).  Every trial
        evaluates the seeds still trying; ``accept`` hands the trial's payload to the seeds that accept it."""
        J_out, t_out, took = np.array(J0, dtype=float), np.zeros(self.seeds), np.zeros(self.seeds, dtype=bool)
        if active is not None and not active.any():
            return J_out, t_out, took
        trying = np.ones(self.seeds, dtype=bool) if active is None else active.copy()
        bm = self.backoff_max
        t = self.tau
        if bm > 0:
            holding = trying & (self.skip > 0) & (self.last > 0.0)
            self.skip = np.where(holding, self.skip - 1, self.skip)
            t = np.where(holding, self.last, self.tau)
            probing = trying & ~holding & (self.last > 0.0) & (t > self.last)
        for i in range(self.max_tries):
            J, payload = trial(t, trying)
            g2 = g2() if callable(g2) else g2
            ok = trying & np.isfinite(J) & (J <= J0 - self.armijo * t * g2)  # NaN: rejected, no warning
            if i == 0 and bm > 0:  # the grown step: accepted resets the back-off, rejected holds the next steps
                self.backoff = np.where(probing & ok, 1, self.backoff)
                failed = probing & ~ok
                self.skip = np.where(failed, self.backoff, self.skip)
                self.backoff = np.where(failed, np.minimum(2 * self.backoff, bm), self.backoff)
            if ok.any():
                accept(payload, ok)
                J_out, t_out, took = np.where(ok, J, J_out), np.where(ok, t, t_out), took | ok
                self.last = np.where(ok, t, self.last)
                self.tau = np.where(ok, t * self.grow, self.tau)
                trying = trying & ~ok
                if not trying.any():
                    return J_out, t_out, took
            payload = None  # rejected (or accepted): release the trial's arrays before the next trial makes its own
            t = np.where(trying, t * self.shrink, t)
        self.tau = np.where(trying, t, self.tau)  # max_tries rejected: the next step starts at the last trial's
        return J_out, t_out, took
