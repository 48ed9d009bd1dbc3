"""LySep: Algorithms 1-3 of the paper (one code path for elliptic, parabolic, hyperbolic PDEs).

Each iteration updates, in the paper's order,

    W_1 (gradient), b_1 (`eq:GD_b1`), a_1, d_1j (gradient), W_2 (gradient), b_2 (`eq:GD_b2`),
    a_2, d_2j, q_j (gradient), W_3 (`eq:GD_W3`), b_3 (`eq:GD_b3`)

and then checks the consistency bound of Theorems 2.1 / 3.1 / 3.3, J <= factor * C * J_S, with
the PINN loss J of the current W_l, b_l.  The gradient steps use one step rule per block
(see docs/lysep.md, "Step sizes": a single fixed tau stalls or collapses W_3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..network import Params, pinn_loss
from ..problems import Problem
from .base import Progress, SolveResult, TrainingData
from .lysep_loss import (LySepData, LySepState, Terms, WeightMode, compute_terms, gradient, lysep_loss,
                         update_terms, weights)
from .lysep_line import line_model
from .lysep_updates import solve_b1, solve_b2, solve_b3, solve_W3
from .settings import SolverSettings, setting
from .steps import Backtracking, FixedStep, StepRule

GRADIENT_BLOCKS = ("W1", "a1", "d1", "W2", "a2", "d2", "q")
# Algorithm 1's order; "b1", "b2", "W3", "b3" are the closed-form solves.
ORDER = ("W1", "b1", "a1", "d1", "W2", "b2", "a2", "d2", "q", "W3", "b3")


@dataclass(frozen=True)
class Settings(SolverSettings):
    """LySep (Algorithms 1-3): step rule of the gradient blocks, treatment of the weights, W_3/b_3 solve."""

    step_rule: Literal["backtracking", "fixed"] = setting(
        "backtracking", doc="backtracking (per block) | fixed (the paper's single tau)")
    tau: float = setting(1.0e-8, low=0.0, doc="fixed: the step; backtracking: every block's first trial step")
    grow: float = setting(2.0, low=1.0, doc="backtracking: trial step multiplied by this after an accepted step")
    shrink: float = setting(0.5, low=0.0, high=1.0, low_open=True, high_open=True,
                            doc="backtracking: trial step multiplied by this after a rejected trial")
    armijo: float = setting(1.0e-4, low=0.0, high=1.0, high_open=True,
                            doc="sufficient decrease: J_S(x - t g) <= J_S(x) - armijo t ||g||^2")
    max_tries: int = setting(40, low=1, doc="backtracking: trials before the block is left unchanged")
    weights: Literal["frozen", "through"] = setting(
        "frozen", doc="frozen: omega, D recomputed then held fixed in the gradients | through")
    w3_b3: Literal["separate", "joint"] = setting(
        "separate", doc="separate: W_3 then b_3 as in the paper | joint: one solve for [W_3, b_3]")
    rcond: float | None = setting(None, low=0.0, doc="lstsq cutoff of the W_3 system (null: machine precision)")

    def size_error(self, L: int, M: int) -> str | None:
        return None if L == 3 else f"LySep is defined for L = 3 (two hidden layers), got L = {L}"

    def step_rules(self) -> dict[str, StepRule]:
        """A fresh step rule per gradient block (the rules keep their own step sizes)."""
        if self.step_rule == "fixed":
            return {b: FixedStep(self.tau) for b in GRADIENT_BLOCKS}
        return {b: Backtracking(self.tau, self.grow, self.shrink, self.armijo, self.max_tries)
                for b in GRADIENT_BLOCKS}


# ------------------------------------------------------------------------------------------------
# Theorem 2.1's constant and the bound factors.


def theorem_constant(C_s: float = 1.0, C_s1: float = 1.0, C_s2: float = 1.0, B_s1: float = 1.0,
                     B_s2: float = 1.0) -> float:
    """C = max{1, 2 C_sigma^2, 2 C_sigma^4, 5 C_1^2, 14 C_2^2} of Theorem 2.1 (14 for sigma = sin).

    C_s, C_s1, C_s2: Lipschitz constants of sigma, sigma', sigma''; B_s1, B_s2: bounds of sigma', sigma''.
    """
    C1 = max(B_s1 * max(1.0, B_s1), C_s1 * max(1.0, B_s1, C_s))
    C2 = max(B_s2 * max(1.0, B_s1, C_s1, B_s1**2, B_s1 * C_s1), max(1.0, C_s1) * max(C_s1, B_s1 * C_s2))
    return max(1.0, 2 * C_s**2, 2 * C_s**4, 5 * C1**2, 14 * C2**2)


def bound_factor(pde: str, d: int) -> float:
    """2(d+1) (Thm 2.1), 2d+3 (Thm 3.1), 2(d+2) (Thm 3.3), without C."""
    return {"elliptic": 2.0 * (d + 1), "parabolic": 2.0 * d + 3.0, "hyperbolic": 2.0 * (d + 2)}[pde]


# ------------------------------------------------------------------------------------------------


class LySepIteration:
    """The state of Algorithms 1-3 between iterations: variables, cached terms, step rules."""

    use_lines = True
    """Trials through the blocks' line models (solvers/lysep_line.py); False: every trial recomputes its
    constraint groups from the state (the direct reference the tests compare with)."""

    def __init__(self, params0: Params, data: LySepData, settings: Settings,
                 rules: dict[str, StepRule] | None = None):
        self.data = data
        self.s = settings
        self.mode: WeightMode = settings.weights
        self.rules = settings.step_rules() if rules is None else rules
        self.st = LySepState.from_params(params0, data)
        self.terms: Terms = compute_terms(self.st, data)
        self.J_S = lysep_loss(self.st, data, self.terms).J_S
        self.last_cond = float("nan")
        self.accepted_steps = {b: 0 for b in GRADIENT_BLOCKS}

    def _set(self, block: str, value: Any) -> None:
        self.st = self.st.with_(**{block: value})
        self.terms = update_terms(self.terms, block, self.st, self.data)

    def _gradient_step(self, block: str) -> None:
        st, data, terms = self.st, self.data, self.terms
        if self.rules[block].inactive:
            return  # fixed tau = 0: only the closed-form updates act
        wt = weights(st, data)
        g = gradient(block, st, data, terms, self.mode, wt)
        J0 = self.J_S
        line = line_model(block, st, terms, data, g) if self.use_lines else None
        if line is not None:
            # J_S(x - t g) from the block's line model: no constraint group is recomputed per trial.
            _, t_accepted, _ = self.rules[block].step(line.baseline(), float(np.sum(g * g)),
                                                      lambda t: (line.value(t), t))
            if t_accepted is not None:
                self.st, self.terms = line.accept(t_accepted)
                self.J_S = lysep_loss(self.st, data, self.terms).J_S
                self.accepted_steps[block] += 1
            return
        x = getattr(st, block)

        def trial(t: float):
            st2 = st.with_(**{block: x - t * g})
            t2 = update_terms(terms, block, st2, data)
            return lysep_loss(st2, data, t2).J_S, (st2, t2)

        J, payload, _ = self.rules[block].step(J0, float(np.sum(g * g)), trial)
        if payload is not None:
            self.st, self.terms = payload
            self.J_S = J
            self.accepted_steps[block] += 1

    def sweep(self, with_cond: bool = False) -> None:
        """One iteration k of Algorithm 1 (2, 3); ``with_cond`` also measures the W_3 system's condition."""
        data = self.data
        for block in ORDER:
            if block in GRADIENT_BLOCKS:
                self._gradient_step(block)
            elif block == "b1":
                self._set("b1", solve_b1(self.st, data, weights(self.st, data)))
            elif block == "b2":
                self._set("b2", solve_b2(self.st, data, weights(self.st, data)))
            elif block == "W3":
                sol = solve_W3(self.st, data, self.terms, weights(self.st, data),
                               joint=self.s.w3_b3 == "joint", rcond=self.s.rcond, with_cond=with_cond)
                self.last_cond = sol.cond
                self._set("W3", sol.W3)
                if sol.b3 is not None:
                    self._set("b3", sol.b3)
            elif block == "b3" and self.s.w3_b3 == "separate":
                self._set("b3", solve_b3(self.st, data))
            if block not in GRADIENT_BLOCKS:
                self.J_S = lysep_loss(self.st, data, self.terms).J_S


def _relative_move(new: np.ndarray, old: np.ndarray) -> float:
    n = float(np.linalg.norm(old))
    return float(np.linalg.norm(new - old) / n) if n > 0 else float("nan")


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """Run Algorithm 1 (elliptic), 2 (parabolic) or 3 (hyperbolic) for ``iterations`` sweeps.

    history: "J_S" and "J" (PINN loss of the current W_l, b_l), iterations + 1 entries each
    (the initial values first).  bound: the Theorem 2.1/3.1/3.3 check of every iteration.
    """
    s = Settings.coerce(settings)
    ld = LySepData.build(data.Z, data.coef, data.Y)
    C = theorem_constant()
    factor = bound_factor(problem.pde, problem.d) * C
    it = LySepIteration(params0, ld, s, s.step_rules())
    J0 = pinn_loss(it.st.params(), data.Z, data.coef, data.Y)
    hist_JS, hist_J = [it.J_S], [J0]
    violations, worst_ratio = 0, J0 / it.J_S if it.J_S > 0 else float("nan")
    first_violation: int | None = None
    J_first_solve: float | None = None
    cond_first = float("nan")
    status, diverged_at = ("ok", None) if np.isfinite(it.J_S) and np.isfinite(J0) else ("diverged", 0)
    t0 = time.perf_counter()
    for k in range(iterations if status == "ok" else 0):
        it.sweep(with_cond=k in (0, iterations - 1))
        J = pinn_loss(it.st.params(), data.Z, data.coef, data.Y)
        hist_JS.append(it.J_S)
        hist_J.append(J)
        if J_first_solve is None:
            J_first_solve, cond_first = J, it.last_cond  # the first W_3/b_3 solve ends the first sweep
        if not (np.isfinite(it.J_S) and np.isfinite(J)):
            status, diverged_at = "diverged", k + 1
            break
        ratio = J / it.J_S if it.J_S > 0 else float("inf")
        worst_ratio = max(worst_ratio, ratio)
        if J > factor * it.J_S:
            violations += 1
            first_violation = k + 1 if first_violation is None else first_violation
        if progress is not None:
            progress(k, J)
    seconds = time.perf_counter() - t0
    st, (W1, b1), (W2, b2) = it.st, params0[0], params0[1]
    bound = {"factor": factor, "C": C, "theorem_factor": bound_factor(problem.pde, problem.d),
             "violations": violations, "checked": len(hist_J) - 1, "first_violation": first_violation,
             "max_ratio_J_over_J_S": worst_ratio}
    diagnostics = {
        "J_after_first_W3_solve": J_first_solve,
        "W3_norm": float(np.linalg.norm(st.W3)),
        "W3_system_cond_first": cond_first,
        "W3_system_cond_last": it.last_cond,
        "move_W1": _relative_move(st.W1, W1), "move_b1": _relative_move(st.b1, b1),
        "move_W2": _relative_move(st.W2, W2), "move_b2": _relative_move(st.b2, b2),
        "accepted_steps": it.accepted_steps,
        "final_step_sizes": {b: r.tau for b, r in it.rules.items()},
        "seconds_per_iteration": seconds / max(1, len(hist_J) - 1),
    }
    message = "" if status == "ok" else f"non-finite J or J_S at iteration {diverged_at}"
    return SolveResult(st.params(), {"J": hist_J, "J_S": hist_JS}, status, message, diverged_at=diverged_at,
                       J_S=hist_JS[-1], bound=bound, diagnostics=diagnostics)
