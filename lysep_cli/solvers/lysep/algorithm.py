"""LySep: Algorithms 1-3 of the paper for any depth L >= 2 (one code path for elliptic, parabolic,
hyperbolic PDEs; L = 3 is the paper's case).

Each iteration updates, in the paper's order, layer by layer l = 1..L-1

    W_l (gradient), b_l (`eq:GD_b1`, `eq:GD_b2`), a_l, d_lj, q_lj (l >= 2) (gradient),

then W_L (`eq:GD_W3`) and b_L (`eq:GD_b3`), and checks the consistency bound of Theorems 2.1 / 3.1 / 3.3
for depth L (docs/lysep-depth.md), J <= factor * C_L * J_S, with the PINN loss J of the current W_l, b_l.
The gradient steps use one step rule per block (see docs/lysep.md, "Step sizes": a single fixed tau stalls
or collapses W_3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from lysep_cli.numerics.activation import SIGMA
from lysep_cli.numerics.network import Params, pinn_loss
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import (Capabilities, Checkpoint, Init, Progress, SolveResult, TrainingData,
                                    init_setting)
from lysep_cli.solvers.lysep.loss import (LySepData, LySepState, Terms, WeightMode, compute_terms, gradient,
                                          gradient_blocks, layer_map, lysep_loss, update_terms, weights)
from lysep_cli.solvers.lysep.updates import solve_b, solve_b3, solve_W3
from lysep_cli.solvers.lysep.weights import paper_constant, theorem_constant
from lysep_cli.solvers.settings import SolverSettings, setting
from lysep_cli.solvers.steps import Backtracking, FixedStep, StepRule

#: resumes from a checkpoint; amplifies round-off from sweep to sweep (docs/reproducibility.md)
CAPABILITIES = Capabilities(checkpoint=True, stacks="lysep_cli.accel.lysep:solve_stacked")


def block_order(L: int) -> tuple[str, ...]:
    """Algorithm 1's order at depth L; "b1".."b{L-1}", "W{L}", "b{L}" are the closed-form solves."""
    out: list[str] = []
    for l in range(1, L):
        out += [f"W{l}", f"b{l}", f"a{l}", f"d{l}"] + ([f"q{l}"] if l >= 2 else [])
    return tuple(out + [f"W{L}", f"b{L}"])


GRADIENT_BLOCKS = gradient_blocks(3)


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
    backoff_max: int = setting(0, low=0, omit_default=True,
                               doc="backtracking: 0 (off) | after a rejected grown trial start the next "
                                   "1, 2, 4 .. backoff_max steps at the last accepted step (fewer trials)")
    weights: Literal["frozen", "through"] = setting(
        "frozen", doc="frozen: omega, D recomputed then held fixed in the gradients | through")
    w3_b3: Literal["separate", "joint"] = setting(
        "separate", doc="separate: W_3 then b_3 as in the paper | joint: one solve for [W_3, b_3]")
    rcond: float | None = setting(None, low=0.0, doc="lstsq cutoff of the W_3 system (null: machine precision)")
    lstsq: Literal["min-norm", "basic"] = setting(
        "min-norm", omit_default=True,
        doc="W_3 system: min-norm (gelsy, rcond) | basic (Matlab's backslash, as the paper; rcond unused)")
    init: Init = init_setting()

    def step_rules(self, blocks: tuple[str, ...] = GRADIENT_BLOCKS, seeds: int = 1) -> dict[str, StepRule]:
        """A fresh step rule per gradient block (the rules keep their own step sizes); a backtracking rule
        holds one state per seed of a stack of ``seeds`` (lysep_cli/accel/lysep.py)."""
        if self.step_rule == "fixed":
            return {b: FixedStep(self.tau) for b in blocks}
        return {b: Backtracking(self.tau, self.grow, self.shrink, self.armijo, self.max_tries, self.backoff_max,
                                seeds) for b in blocks}


# ------------------------------------------------------------------------------------------------
# Theorem 2.1's constant and the bound factors.


def bound_factor(pde: str, d: int) -> float:
    """2(d+1) (Thm 2.1), 2d+3 (Thm 3.1), 2(d+2) (Thm 3.3), without C: the number of output terms
    (fit, K, the K_i, the K-hat_i), the same at every depth L (docs/lysep-depth.md)."""
    return {"elliptic": 2.0 * (d + 1), "parabolic": 2.0 * d + 3.0, "hyperbolic": 2.0 * (d + 2)}[pde]


# ------------------------------------------------------------------------------------------------


class LySepIteration:
    """The state of Algorithms 1-3 between iterations: variables, cached terms, step rules."""

    def __init__(self, params0: Params, data: LySepData, settings: Settings,
                 rules: dict[str, StepRule] | None = None):
        self.data = data
        self.s = settings
        self.mode: WeightMode = settings.weights
        self.L = len(params0)
        self.blocks = gradient_blocks(self.L)
        self.order = block_order(self.L)
        self.rules = settings.step_rules(self.blocks) if rules is None else rules
        self.st = LySepState.from_params(params0, data)
        self.terms: Terms = compute_terms(self.st, data)
        self.J_S = lysep_loss(self.st, data, self.terms).J_S
        self.last_cond = float("nan")
        self.last_rank: int | None = None  # of the W_3 system, lstsq "basic" only
        self.accepted_steps = {b: 0 for b in self.blocks}
        self.unchanged_trials = 0  # trials whose step left the block's every entry as it was
        self.trials = 0  # every trial evaluation of J_S (gradient steps)

    def snapshot(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The iteration's state between sweeps: (JSON-able values, arrays of the variables)."""
        meta = {"J_S": self.J_S, "last_cond": self.last_cond, "accepted_steps": self.accepted_steps,
                "unchanged_trials": self.unchanged_trials, "trials": self.trials,
                "rules": {b: r.state() for b, r in self.rules.items() if hasattr(r, "state")},
                "scalars": [k for k, v in self.st.v.items() if not isinstance(v, np.ndarray)]}
        if self.last_rank is not None:
            meta["last_rank"] = self.last_rank
        return meta, {f"v_{k}": np.asarray(v) for k, v in self.st.v.items()}

    def restore(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Back to a :meth:`snapshot`.  The residuals, weights and caches are recomputed from the variables:
        each is a function of the variables alone, so they come out as the run had them, bit for bit."""
        v: dict[str, Any] = {}
        for key, a in arrays.items():
            if key.startswith("v_"):
                name = key[2:]
                v[name] = float(a) if name in meta["scalars"] else np.ascontiguousarray(a)
        self.st = LySepState(self.L, v, self.data.plan)
        self.terms = compute_terms(self.st, self.data)
        self.J_S, self.last_cond = float(meta["J_S"]), float(meta["last_cond"])
        self.last_rank = meta.get("last_rank")
        self.accepted_steps = {b: int(n) for b, n in meta["accepted_steps"].items()}
        self.unchanged_trials = int(meta.get("unchanged_trials", 0))
        self.trials = int(meta.get("trials", 0))
        for b, state in meta.get("rules", {}).items():
            self.rules[b].set_state(state)

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
        x = getattr(st, block)
        own: list = []  # a_l, d_l, q_l (l >= 2): their constraint's layer map, computed at the first trial

        def trial(t: float):
            self.trials += 1
            xt = x - t * g
            if same_bits(xt, x):
                # The step changes no entry of the block (late in a 2-D run most trials of W_1, and half of
                # d_1's and W_2's): the state is the one J0 was computed from, so J_S(x - t g) = J0 exactly
                # and the groups need not be recomputed (benchmarks/logs/engine-2026-11.md).
                self.unchanged_trials += 1
                return J0, (st, terms)
            st2 = st.with_(**{block: xt})
            if block[0] in "adq" and int(block[1:]) >= 2 and not own:
                own.append(layer_map(block, st, data))  # unchanged by this block's steps: once per step
            t2 = update_terms(terms, block, st2, data, own[0] if own else None)
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
                sol = solve_W3(self.st, data, self.terms, joint=self.s.w3_b3 == "joint", rcond=self.s.rcond,
                               with_cond=with_cond, lstsq=self.s.lstsq)
                self.last_cond, self.last_rank = sol.cond, sol.rank
                self._set(block, sol.W3)
                if sol.b3 is not None:
                    self._set(f"b{L}", sol.b3)
            elif block == f"b{L}":
                if self.s.w3_b3 == "separate":
                    self._set(block, solve_b3(self.st, data))
            else:  # b_l, l < L
                self._set(block, solve_b(int(block[1:]), self.st, data, weights(self.st, data)))
            if block not in self.blocks:
                self.J_S = lysep_loss(self.st, data, self.terms).J_S
            if not np.isfinite(self.J_S):
                return  # diverged (a large fixed tau): the loop stops on it before a solve meets inf / NaN


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """True when a and b hold the same bits (so -0.0 and 0.0 differ, and equal NaNs agree).  A strided
    sample of 64 entries is compared first: most trials change it, and then the whole arrays are not read."""
    if a.shape != b.shape:
        return False
    fa = np.ascontiguousarray(a).reshape(-1).view(np.int64)
    fb = np.ascontiguousarray(b).reshape(-1).view(np.int64)
    k = max(1, fa.size // 64)
    return bool(np.array_equal(fa[::k], fb[::k]) and np.array_equal(fa, fb))


def _relative_move(new: np.ndarray, old: np.ndarray) -> float:
    n = float(np.linalg.norm(old))
    return float(np.linalg.norm(new - old) / n) if n > 0 else float("nan")


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None, checkpoint: Checkpoint | None = None) -> SolveResult:
    """Run Algorithm 1 (elliptic), 2 (parabolic) or 3 (hyperbolic) for ``iterations`` sweeps.

    history: "J_S" and "J" (PINN loss of the current W_l, b_l), iterations + 1 entries each
    (the initial values first).  bound: the Theorem 2.1/3.1/3.3 check of every iteration.
    checkpoint: resume from it when it holds this run's state, and save to it as it comes due
    (lysep_cli/store/checkpoint.py); the result is the uninterrupted run's, bit for bit.
    """
    s = Settings.coerce(settings)
    ld = LySepData.build(data.Z, data.coef, data.Y)
    L = len(params0)
    C = theorem_constant(L, *SIGMA.constants, second=bool(ld.S.size))
    factor = bound_factor(problem.pde, problem.d) * C
    it = LySepIteration(params0, ld, s, s.step_rules(gradient_blocks(L)))
    J0 = pinn_loss(it.st.params(), data.Z, data.coef, data.Y)
    # Everything the loop carries from one sweep to the next (a checkpoint saves it with the variables).
    loop: dict[str, Any] = {"k": 0, "violations": 0, "worst_ratio": J0 / it.J_S if it.J_S > 0 else float("nan"),
                            "first_violation": None, "J_first_solve": None, "cond_first": float("nan"),
                            "seconds": 0.0, "resumed_at": []}
    hist_JS, hist_J = [it.J_S], [J0]
    status, diverged_at = ("ok", None) if np.isfinite(it.J_S) and np.isfinite(J0) else ("diverged", 0)
    saved = checkpoint.load() if checkpoint is not None and status == "ok" else None
    if saved is not None:
        loop = saved["meta"]["loop"]
        it.restore(saved["meta"]["iteration"], saved["arrays"])
        hist_JS, hist_J = [float(x) for x in saved["arrays"]["hist_J_S"]], [float(x) for x in saved["arrays"]["hist_J"]]
        loop["resumed_at"].append(loop["k"])
    before = (loop["seconds"], loop.get("cpu_seconds", 0.0))  # spent by the runs this one resumes
    t0, cpu0 = time.perf_counter() - before[0], time.process_time() - before[1]
    for k in range(loop["k"], iterations if status == "ok" else 0):
        it.sweep(with_cond=k in (0, iterations - 1))
        J = pinn_loss(it.st.params(), data.Z, data.coef, data.Y)
        hist_JS.append(it.J_S)
        hist_J.append(J)
        if loop["J_first_solve"] is None:
            loop["J_first_solve"], loop["cond_first"] = J, it.last_cond  # the first W_3/b_3 solve ends sweep 1
        if it.last_rank is not None:  # lstsq "basic": the W_3 system's rank, first and smallest
            loop.setdefault("rank_first", it.last_rank)
            loop["rank_min"] = min(loop.get("rank_min", it.last_rank), it.last_rank)
        if not (np.isfinite(it.J_S) and np.isfinite(J)):
            status, diverged_at = "diverged", k + 1
            break
        ratio = J / it.J_S if it.J_S > 0 else float("inf")
        loop["worst_ratio"] = max(loop["worst_ratio"], ratio)
        if J > factor * it.J_S:
            loop["violations"] += 1
            loop["first_violation"] = k + 1 if loop["first_violation"] is None else loop["first_violation"]
        loop["k"] = k + 1
        if checkpoint is not None and loop["k"] < iterations and checkpoint.due():
            loop["seconds"], loop["cpu_seconds"] = time.perf_counter() - t0, time.process_time() - cpu0
            meta, arrays = it.snapshot()
            checkpoint.save({"loop": loop, "iteration": meta},
                            {**arrays, "hist_J_S": np.array(hist_JS), "hist_J": np.array(hist_J)})
        if progress is not None:
            progress(k, J)
    seconds = time.perf_counter() - t0
    counters = {"accepted_steps": it.accepted_steps, "unchanged_trials": it.unchanged_trials, "trials": it.trials,
                "final_step_sizes": {b: r.step_size for b, r in it.rules.items()}}
    return lysep_result(it.st.params(), params0, hist_J, hist_JS, diverged_at, problem, s, factor, C, loop,
                        it.last_cond, it.last_rank, counters, seconds / max(1, len(hist_J) - 1), before)


def lysep_result(params: Params, params0: Params, hist_J: list[float], hist_JS: list[float], diverged_at: int | None,
                 problem: Problem, s: Settings, factor: float, C: float, loop: dict[str, Any], last_cond: float,
                 last_rank: int | None, counters: dict[str, Any], seconds_per_iteration: float,
                 before: tuple[float, float], engine: dict[str, Any] | None = None) -> SolveResult:
    """One seed's SolveResult: its network and histories, the bound check J <= factor J_S, the diagnostics; for
    a run alone (:func:`solve`) and for each seed of a stack (lysep_cli/accel/lysep.py, whose ``engine`` entries,
    W3_solve and trial_batch, follow the W_3 system's condition).  ``loop``: violations, first_violation (None:
    none), worst_ratio, J_first_solve (None: no sweep made), cond_first, resumed_at (the sweeps a checkpoint
    resumed at; ``before``: the (wall, CPU) seconds spent before), with lstsq "basic" rank_first and rank_min;
    ``counters``: accepted_steps, unchanged_trials, trials, final_step_sizes."""
    moves = {}
    for l, (W, b) in enumerate(params0[:-1], start=1):  # hidden-layer movement per layer
        moves[f"move_W{l}"] = _relative_move(params[l - 1][0], W)
        moves[f"move_b{l}"] = _relative_move(params[l - 1][1], b)
    bound = {"factor": factor, "C": C, "theorem_factor": bound_factor(problem.pde, problem.d),
             "violations": int(loop["violations"]), "checked": len(hist_J) - 1,
             "first_violation": loop["first_violation"], "max_ratio_J_over_J_S": float(loop["worst_ratio"])}
    diagnostics = {
        "J_after_first_W3_solve": loop["J_first_solve"],
        "W3_norm": float(np.linalg.norm(params[-1][0])),  # the output layer W_L (named for L = 3)
        "W3_system_cond_first": float(loop["cond_first"]),
        "W3_system_cond_last": float(last_cond),
        **(engine or {}),
        **({"W3_system_rank_first": loop.get("rank_first"), "W3_system_rank_last": last_rank,
            "W3_system_rank_min": loop.get("rank_min"),
            "W3_system_columns": int(params[-1][0].size + (s.w3_b3 == "joint"))} if s.lstsq == "basic" else {}),
        **moves,
        **counters,
        "seconds_per_iteration": seconds_per_iteration,
        **({"resumed_at_sweeps": loop["resumed_at"], "seconds_before_resume": list(before)}
           if loop["resumed_at"] else {}),
    }
    status = "ok" if diverged_at is None else "diverged"
    message = "" if status == "ok" else f"non-finite J or J_S at iteration {diverged_at}"
    return SolveResult(params, {"J": hist_J, "J_S": hist_JS}, status, message, diverged_at=diverged_at,
                       J_S=hist_JS[-1], bound=bound, diagnostics=diagnostics)
