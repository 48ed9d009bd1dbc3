"""LySep: Algorithms 1-3 of the paper for any depth L >= 2 (one code path for elliptic, parabolic,
hyperbolic PDEs; L = 3 is the paper's case).

Each iteration updates, in the paper's order, layer by layer l = 1..L-1

    W_l (gradient), b_l (`eq:GD_b1`, `eq:GD_b2`), a_l, d_lj, q_lj (l >= 2) (gradient),

then W_L (`eq:GD_W3`) and b_L (`eq:GD_b3`), and checks the consistency bound of Theorems 2.1 / 3.1 / 3.3
for depth L (docs/lysep-depth.md), J <= factor * C_L * J_S, with the PINN loss J of the current W_l, b_l.  The gradient steps use one step rule per block
(see docs/lysep.md: a single fixed tau stalls or collapses W_3, NOTES.md "Step sizes").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..activation import SIGMA
from ..network import Params, pinn_loss
from ..problems import Problem
from .base import Progress, SolveResult, TrainingData
from .lysep_loss import (LySepData, LySepState, Terms, WeightMode, compute_terms, gradient, gradient_blocks,
                         lysep_loss, update_terms, weights)
from .lysep_line import line_model
from .lysep_updates import solve_b, solve_b3, solve_W3
from .lysep_weights import paper_constant, theorem_constant  # noqa: F401  (re-exported)


def block_order(L: int) -> tuple[str, ...]:
    """Algorithm 1's order at depth L; "b1".."b{L-1}", "W{L}", "b{L}" are the closed-form solves."""
    out: list[str] = []
    for l in range(1, L):
        out += [f"W{l}", f"b{l}", f"a{l}", f"d{l}"] + ([f"q{l}"] if l >= 2 else [])
    return tuple(out + [f"W{L}", f"b{L}"])


GRADIENT_BLOCKS = gradient_blocks(3)
ORDER = block_order(3)

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


def bound_factor(pde: str, d: int) -> float:
    """2(d+1) (Thm 2.1), 2d+3 (Thm 3.1), 2(d+2) (Thm 3.3), without C: the number of output terms
    (fit, K, the K_i, the K-hat_i), the same at every depth L (docs/lysep-depth.md)."""
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


def make_rules(settings: dict[str, Any], blocks: tuple[str, ...] = GRADIENT_BLOCKS
               ) -> dict[str, FixedStep | Backtracking]:
    if settings["step_rule"] == "fixed":
        return {b: FixedStep(float(settings["tau"])) for b in blocks}
    if settings["step_rule"] == "backtracking":
        return {b: Backtracking(float(settings["tau"]), float(settings["grow"]), float(settings["shrink"]),
                                float(settings["armijo"]), int(settings["max_tries"])) for b in blocks}
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
    """Trials through the blocks' line models (solvers/lysep_line.py, L = 3 only); False, or L != 3: every
    trial recomputes its constraint groups from the state (the direct reference the tests compare with)."""

    def __init__(self, params0: Params, data: LySepData, settings: dict[str, Any]):
        self.data = data
        self.s = settings
        self.mode: WeightMode = settings["weights"]
        self.L = len(params0)
        self.blocks = gradient_blocks(self.L)
        self.order = block_order(self.L)
        self.rules = make_rules(settings, self.blocks)
        self.st = LySepState.from_params(params0, data)
        self.terms: Terms = compute_terms(self.st, data)
        self.J_S = lysep_loss(self.st, data, self.terms).J_S
        self.last_cond = float("nan")
        self.accepted_steps = {b: 0 for b in self.blocks}

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
        line = line_model(block, st, terms, data, g) if self.use_lines and self.L == 3 else None
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
        data, L = self.data, self.L
        for block in self.order:
            if block in self.blocks:
                self._gradient_step(block)
            elif block == f"W{L}":
                sol = solve_W3(self.st, data, self.terms, weights(self.st, data),
                               joint=self.s["w3_b3"] == "joint", rcond=self.s["rcond"], with_cond=with_cond)
                self.last_cond = sol.cond
                self._set(block, sol.W3)
                if sol.b3 is not None:
                    self._set(f"b{L}", sol.b3)
            elif block == f"b{L}":
                if self.s["w3_b3"] == "separate":
                    self._set(block, solve_b3(self.st, data))
            else:  # b_l, l < L
                self._set(block, solve_b(int(block[1:]), self.st, data, weights(self.st, data)))
            if block not in self.blocks:
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
    L = len(params0)
    C = theorem_constant(L, *SIGMA.constants, second=bool(ld.S.size))
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
    st = it.st
    moves = {}
    for l, (W, b) in enumerate(params0[:-1], start=1):  # hidden-layer movement per layer
        moves[f"move_W{l}"] = _relative_move(st.v[f"W{l}"], W)
        moves[f"move_b{l}"] = _relative_move(st.v[f"b{l}"], b)
    extra = {
        "bound": {"factor": factor, "C": C, "theorem_factor": bound_factor(problem.pde, problem.d),
                  "violations": violations, "checked": len(hist_J) - 1, "first_violation": first_violation,
                  "max_ratio_J_over_J_S": worst_ratio},
        "diagnostics": {
            "J_after_first_W3_solve": J_first_solve,
            "W3_norm": float(np.linalg.norm(st.v[f"W{L}"])),  # the output layer W_L (named for L = 3)
            "W3_system_cond_first": cond_first,
            "W3_system_cond_last": it.last_cond,
            **moves,
            "accepted_steps": it.accepted_steps,
            "final_step_sizes": {b: r.tau for b, r in it.rules.items()},
            "seconds_per_iteration": seconds / max(1, len(hist_J) - 1),
        },
        "settings_used": dict(s),
    }
    return SolveResult(st.params(), {"J": hist_J, "J_S": hist_JS}, status, diverged_at, J_S=hist_JS[-1],
                       extra=extra)
