"""LySep: Algorithms 1-3 of the paper (one code path for elliptic, parabolic, hyperbolic PDEs).

Each iteration updates, in the paper's order,

    W_1 (gradient), b_1 (`eq:GD_b1`), a_1, d_1j (gradient), W_2 (gradient), b_2 (`eq:GD_b2`),
    a_2, d_2j, q_j (gradient), W_3 (`eq:GD_W3`), b_3 (`eq:GD_b3`)

and then checks the consistency bound of Theorems 2.1 / 3.1 / 3.3, J <= factor * C * J_S, with
the PINN loss J of the current W_l, b_l.  The gradient steps use one step rule per block
(see docs/lysep.md: a single fixed tau stalls or collapses W_3, NOTES.md "Step sizes").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..network import Params, pinn_loss
from ..problems import Problem
from .base import Progress, SolveResult, TrainingData
from .lysep_loss import (LySepData, LySepState, Terms, WeightMode, compute_terms, gradient, lysep_loss,
                         update_terms, weights)
from .lysep_line import line_model
from .lysep_updates import solve_b1, solve_b2, solve_b3, solve_W3

GRADIENT_BLOCKS = ("W1", "a1", "d1", "W2", "a2", "d2", "q")
# Algorithm 1's order; "b1", "b2", "W3", "b3" are the closed-form solves.
ORDER = ("W1", "b1", "a1", "d1", "W2", "b2", "a2", "d2", "q", "W3", "b3")

DEFAULTS: dict[str, Any] = {
    "step_rule": "backtracking",  # "backtracking" (per block) | "fixed" (the paper's single tau)
    "tau": 1.0e-8,  # fixed: the step; backtracking: every block's first trial step (docs/lysep.md)
    "grow": 2.0,  # backtracking: trial step multiplied by this after an accepted step
    "shrink": 0.5,  # backtracking: trial step multiplied by this after a rejected trial
    "armijo": 1.0e-4,  # sufficient decrease: J_S(x - t g) <= J_S(x) - armijo * t * ||g||^2
    "max_tries": 40,  # backtracking: trials before the block is left unchanged this iteration
    "weights": "frozen",  # "frozen": omega, D recomputed then held fixed in gradients | "through"
    "w3_b3": "separate",  # "separate": W_3 then b_3 as in the paper | "joint": one solve for [W_3, b_3]
    "rcond": None,  # cutoff of lstsq for the W_3 system (None: LAPACK's default, machine precision)
}


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
# Step rules: small objects, one per gradient block.


@dataclass
class FixedStep:
    """x <- x - tau * g, always accepted (the paper's rule)."""

    tau: float

    def step(self, J0: float, g2: float, trial: Callable[[float], tuple[float, Any]]):
        J, payload = trial(self.tau)
        return J, payload, self.tau


@dataclass
class Backtracking:
    """Armijo backtracking on J_S; the trial step grows after each success."""

    tau: float
    grow: float
    shrink: float
    armijo: float
    max_tries: int

    def step(self, J0: float, g2: float, trial: Callable[[float], tuple[float, Any]]):
        t = self.tau
        for _ in range(self.max_tries):
            J, payload = trial(t)
            if np.isfinite(J) and J <= J0 - self.armijo * t * g2:
                self.tau = t * self.grow
                return J, payload, t
            t *= self.shrink
        self.tau = t
        return J0, None, 0.0


def make_rules(settings: dict[str, Any]) -> dict[str, FixedStep | Backtracking]:
    if settings["step_rule"] == "fixed":
        return {b: FixedStep(float(settings["tau"])) for b in GRADIENT_BLOCKS}
    if settings["step_rule"] == "backtracking":
        return {b: Backtracking(float(settings["tau"]), float(settings["grow"]), float(settings["shrink"]),
                                float(settings["armijo"]), int(settings["max_tries"])) for b in GRADIENT_BLOCKS}
    raise ValueError(f"lysep: unknown step_rule {settings['step_rule']!r} (backtracking | fixed)")


def check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Defaults filled in; unknown keys and bad choices raise ValueError."""
    unknown = set(settings) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"lysep: unknown setting(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    s = {**DEFAULTS, **settings}
    if s["weights"] not in ("frozen", "through"):
        raise ValueError(f"lysep: weights must be 'frozen' or 'through', got {s['weights']!r}")
    if s["w3_b3"] not in ("separate", "joint"):
        raise ValueError(f"lysep: w3_b3 must be 'separate' or 'joint', got {s['w3_b3']!r}")
    if float(s["tau"]) < 0:
        raise ValueError("lysep: tau must be >= 0")
    return s


# ------------------------------------------------------------------------------------------------


class LySepIteration:
    """The state of Algorithms 1-3 between iterations: variables, cached terms, step rules."""

    use_lines = True
    """Trials through the blocks' line models (solvers/lysep_line.py); False: every trial recomputes its
    constraint groups from the state (the direct reference the tests compare with)."""

    def __init__(self, params0: Params, data: LySepData, settings: dict[str, Any]):
        self.data = data
        self.s = settings
        self.mode: WeightMode = settings["weights"]
        self.rules = make_rules(settings)
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
        if self.s["step_rule"] == "fixed" and float(self.s["tau"]) == 0.0:
            return  # tau = 0: only the closed-form updates act
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
                               joint=self.s["w3_b3"] == "joint", rcond=self.s["rcond"], with_cond=with_cond)
                self.last_cond = sol.cond
                self._set("W3", sol.W3)
                if sol.b3 is not None:
                    self._set("b3", sol.b3)
            elif block == "b3" and self.s["w3_b3"] == "separate":
                self._set("b3", solve_b3(self.st, data))
            if block not in GRADIENT_BLOCKS:
                self.J_S = lysep_loss(self.st, data, self.terms).J_S


def _relative_move(new: np.ndarray, old: np.ndarray) -> float:
    n = float(np.linalg.norm(old))
    return float(np.linalg.norm(new - old) / n) if n > 0 else float("nan")


def solve(problem: Problem, data: TrainingData, params0: Params, settings: dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """Run Algorithm 1 (elliptic), 2 (parabolic) or 3 (hyperbolic) for ``iterations`` sweeps.

    history: "J_S" and "J" (PINN loss of the current W_l, b_l), iterations + 1 entries each
    (the initial values first).  extra["bound"]: the Theorem 2.1/3.1/3.3 check of every iteration.
    """
    s = check_settings(settings)
    ld = LySepData.build(data.Z, data.coef, data.Y)
    C = theorem_constant()
    factor = bound_factor(problem.pde, problem.d) * C
    it = LySepIteration(params0, ld, s)
    J0 = pinn_loss(it.st.params(), data.Z, data.coef, data.Y)
    hist_JS, hist_J = [it.J_S], [J0]
    violations, worst_ratio = 0, J0 / it.J_S if it.J_S > 0 else float("nan")
    first_violation: int | None = None
    J_first_solve: float | None = None
    cond_first = float("nan")
    status, diverged_at = "ok", None
    t0 = time.perf_counter()
    for k in range(iterations):
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
    extra = {
        "bound": {"factor": factor, "C": C, "theorem_factor": bound_factor(problem.pde, problem.d),
                  "violations": violations, "checked": len(hist_J) - 1, "first_violation": first_violation,
                  "max_ratio_J_over_J_S": worst_ratio},
        "diagnostics": {
            "J_after_first_W3_solve": J_first_solve,
            "W3_norm": float(np.linalg.norm(st.W3)),
            "W3_system_cond_first": cond_first,
            "W3_system_cond_last": it.last_cond,
            "move_W1": _relative_move(st.W1, W1), "move_b1": _relative_move(st.b1, b1),
            "move_W2": _relative_move(st.W2, W2), "move_b2": _relative_move(st.b2, b2),
            "accepted_steps": it.accepted_steps,
            "final_step_sizes": {b: r.tau for b, r in it.rules.items()},
            "seconds_per_iteration": seconds / max(1, len(hist_J) - 1),
        },
        "settings_used": dict(s),
    }
    return SolveResult(st.params(), {"J": hist_J, "J_S": hist_JS}, status, diverged_at, J_S=hist_JS[-1],
                       extra=extra)
