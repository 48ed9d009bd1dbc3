"""The backtracking step rule of lysep_cli/solvers/steps.py for S seeds at once, each seed deciding by a mask.

The stacked LySep's step rule (lysep_cli/accel/lysep.py).  ``Backtracking.step`` takes one block's step for one seed with Python floats; here J0, ||g||^2, the
trial step t and the rule's state (tau, last, skip, backoff) are (S,) host arrays, every trial evaluates
the seeds still trying (one host sync per trial for the whole stack), and each seed accepts or rejects
with the scalar rule's test, J_S(x - t g) <= J0 - armijo t ||g||^2 (the same operations in the same
order, so the same decisions bit for bit: tests/test_stacked.py runs both side by side).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

StackedTrial = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, Any]"]
"""trial(t (S,), trying (S,) bool) -> (J_S after the step x - t g (S,; entries of seeds not trying unused),
payload)"""
Accept = Callable[[Any, np.ndarray], None]
"""accept(payload, mask (S,) bool): the seeds of ``mask`` take the trial's state"""


@dataclass
class StackedBacktracking:
    """:class:`lysep_cli.solvers.steps.Backtracking` for S seeds: one rule state per seed."""

    S: int
    tau0: float
    grow: float
    shrink: float
    armijo: float
    max_tries: int
    backoff_max: int = 0
    tau: np.ndarray = field(init=False)
    last: np.ndarray = field(init=False)
    skip: np.ndarray = field(init=False)
    backoff: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.tau = np.full(self.S, float(self.tau0))
        self.last = np.zeros(self.S)
        self.skip = np.zeros(self.S, dtype=np.int64)
        self.backoff = np.ones(self.S, dtype=np.int64)

    def step(self, J0: np.ndarray, g2: np.ndarray | Callable[[], np.ndarray], trial: StackedTrial, accept: Accept,
             active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step for every ``active`` seed (default: all): returns (J, t, accepted), each (S,): the accepted
        loss and step per seed and whether it accepted a trial, or (J0, 0, False) for a seed that accepted none
        in ``max_tries`` (or is not active).  ``g2``: ||g||^2 (S,), or a function giving it, called once after
        the first trial (the stacked LySep brings it to the host with that trial's J_S)."""
        trying = np.ones(self.S, dtype=bool) if active is None else active.copy()
        bm = self.backoff_max
        holding = trying & (bm > 0) & (self.skip > 0) & (self.last > 0.0)
        self.skip = np.where(holding, self.skip - 1, self.skip)
        t = np.where(holding, self.last, self.tau)
        probing = trying & (bm > 0) & ~holding & (self.last > 0.0) & (t > self.last)
        J_out, t_out, took = np.array(J0, dtype=float), np.zeros(self.S), np.zeros(self.S, dtype=bool)
        for i in range(self.max_tries):
            if not trying.any():
                break
            J, payload = trial(t, trying)
            g2 = g2() if callable(g2) else g2
            with np.errstate(invalid="ignore"):
                ok = trying & np.isfinite(J) & (J <= J0 - self.armijo * t * g2)
            if i == 0:  # the grown step: accepted resets the back-off, rejected holds the next steps
                self.backoff = np.where(probing & ok, 1, self.backoff)
                failed = probing & ~ok
                self.skip = np.where(failed, self.backoff, self.skip)
                self.backoff = np.where(failed, np.minimum(2 * self.backoff, max(bm, 1)), self.backoff)
            if ok.any():
                accept(payload, ok)
            payload = None  # release the trial's arrays before the next trial makes its own
            J_out, t_out, took = np.where(ok, J, J_out), np.where(ok, t, t_out), took | ok
            self.last = np.where(ok, t, self.last)
            self.tau = np.where(ok, t * self.grow, self.tau)
            trying &= ~ok
            t = np.where(trying, t * self.shrink, t)
        self.tau = np.where(trying, t, self.tau)  # max_tries rejected: the next step starts at the last trial's
        return J_out, t_out, took
