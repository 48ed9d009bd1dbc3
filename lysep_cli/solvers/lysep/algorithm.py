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
from typing import Any, Callable, Literal

import numpy as np

from lysep_cli.accel import lstsq, padding, trials
from lysep_cli.accel.backend import CPU, Backend
from lysep_cli.numerics.activation import SIGMA
from lysep_cli.numerics.channels import Array, ChannelPlan, _dot
from lysep_cli.numerics.network import Params, pinn_loss, pinn_pass
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import (Capabilities, Checkpoint, Init, Progress, SolveResult, TrainingData,
                                    init_setting)
from lysep_cli.solvers.lysep import stack
from lysep_cli.solvers.lysep.loss import (LySepData, LySepState, Terms, affects, compute_terms, gradient,
                                          gradient_blocks, layer_map, lysep_loss, update_terms, weights)
from lysep_cli.solvers.lysep.updates import solve_b, solve_b3, solve_W3
from lysep_cli.solvers.lysep.weights import paper_constant, sum_per_seed, theorem_constant
from lysep_cli.solvers.settings import SolverSettings, setting
from lysep_cli.solvers.steps import Backtracking, FixedStep, StepRule


#: resumes from a checkpoint; amplifies round-off from sweep to sweep (docs/reproducibility.md)
CAPABILITIES = Capabilities(checkpoint=True, stacks="lysep_cli.solvers.lysep.algorithm:solve_seeds",
                            first_values="lysep_cli.solvers.lysep.algorithm:first_values")


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
        holds one state per seed of a stack of ``seeds``."""
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
    """The state of Algorithms 1-3 between sweeps for S seeds (one network, or a cell's seeds stacked): variables,
    cached terms, one step rule per gradient block (each holding S states), per-seed counters.

    Shapes.  With a seed axis (``stacked``: S > 1, or any S on a device) every variable and cached value has a
    leading axis S: W_l (S, out, in), b_l (S, out), b_L (S,), a_l (S, M, N), d_l (S, n_in, M, N), q_l
    (S, |S|, M, N).  One seed on NumPy keeps none: the same formulas (loss.py, weights.py, updates.py) on one
    network's arrays, with numba's fused kernels and no masks.  Per seed the two are the same numbers, bit for
    bit (tests/test_stacked_lysep.py), and so are a seed's numbers in any stack.

    Per seed, the sweep's decisions:
    - each gradient block's backtracking (or fixed) step (solvers/steps.py), every seed accepting or
      rejecting its own trial by a mask; a trial that leaves a seed's block unchanged bit for bit gives that
      seed J0; on a device the block's first ``trial_batch`` trials are evaluated at once (accel/trials.py);
    - the closed-form updates b_l, W_L, b_L (updates.py); W_L's least squares per seed on the host
      (numerics/lstsq.py), of the full system (``w_solve`` "host": the CPU's bits) or of the system reduced
      by a QR on the device ("reduced", CuPy's default; accel/lstsq.py), on ``workers`` threads;
    - a seed whose J_S stops being finite leaves the sweep at that block.
    """

    def __init__(self, params0: Params | list[Params], data: LySepData, settings: Settings,
                 be: Backend = CPU, w_solve: str | None = None, workers: int | None = None,
                 trial_batch: int | None = None):
        nets = [params0] if isinstance(params0[0], tuple) else list(params0)
        xp = self.xp = be.xp
        self.be, self.s = be, settings
        self.S, self.L = len(nets), len(nets[0])
        self.w_solve = lstsq.default_w_solve(xp) if w_solve is None else w_solve
        if self.w_solve not in lstsq.W_SOLVES:
            raise ValueError(f"w_solve must be one of {', '.join(lstsq.W_SOLVES)}, got {self.w_solve!r}")
        self.workers = lstsq.default_workers(self.S) if workers is None else workers
        self.trial_batch = trials.default_trial_batch(xp) if trial_batch is None else trial_batch
        if not (isinstance(self.trial_batch, int) and self.trial_batch >= 1):
            raise ValueError(f"trial_batch must be an integer >= 1, got {self.trial_batch!r}")
        #: a seed axis, except for one seed on NumPy with the CPU's own W_L solve and no trial batch
        self.stacked = not (self.S == 1 and xp is np and self.w_solve == "host" and self.trial_batch == 1)
        self.data = data.on(be) if self.stacked and data.host is None else data
        self._reads: dict[str, list] = {}  # per block, what its last trial batch tiled (stack.tiled)
        self.blocks = gradient_blocks(self.L)
        self.order = block_order(self.L)
        self.rules = settings.step_rules(self.blocks, seeds=self.S)
        self.st = self._state_of(nets)
        self.terms: Terms = compute_terms(self.st, self.data)
        self.J_S = self._per_seed(lysep_loss(self.st, self.data, self.terms).J_S)
        self.last_cond = np.full(self.S, np.nan)
        self.last_rank: list[int | None] = [None] * self.S  # of the W_L system, lstsq "basic" only
        self.accepted_steps = {b: np.zeros(self.S, dtype=int) for b in self.blocks}
        self.unchanged_trials = np.zeros(self.S, dtype=int)  # trials whose step left the block's every entry
        self.trials = np.zeros(self.S, dtype=int)  # every trial evaluation of J_S (gradient steps)
        #: per block, whether its last trial left every trying seed's bits unchanged (then the next trial tests
        #: that before evaluating J_S, else both in one copy): the same decisions either way
        self.unchanged_last: dict[str, bool] = {}
        self._active: tuple[np.ndarray, Array] | None = None  # the last active mask, on the host and the device

    def _state_of(self, nets: list[Params]) -> LySepState:
        """The variables at their exact forward values (`eq:var_a`, `eq:var_d`, `eq:var_q`), computed per seed
        on the host and stacked (uploaded) when the state has a seed axis."""
        if not self.stacked:
            return LySepState.from_params(nets[0], self.data)
        hosts = [LySepState.from_params(p, self.data.host) for p in nets]
        v = {k: self.xp.asarray(np.stack([np.asarray(h.v[k], dtype=float) for h in hosts])) for k in hosts[0].v}
        return LySepState(self.L, v, self.data.plan, xp=self.xp)

    def _per_seed(self, x: Any) -> np.ndarray:
        """A per-seed value (a float, or (S,) on the device) as (S,) on the host."""
        return self.be.host(x).astype(float) if self.stacked else np.array([x], dtype=float)

    def snapshot(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The state between sweeps: (JSON-able values, arrays with a leading seed axis)."""
        arrays = {f"v_{k}": self._stacked(v) for k, v in self.st.v.items()}
        arrays.update(J_S=self.J_S, unchanged=self.unchanged_trials, trials=self.trials, last_cond=self.last_cond)
        for b in self.blocks:
            arrays[f"accepted_{b}"] = self.accepted_steps[b]
            r = self.rules[b]
            if isinstance(r, Backtracking):
                arrays.update({f"rule_{b}_tau": r.tau, f"rule_{b}_last": r.last, f"rule_{b}_skip": r.skip,
                               f"rule_{b}_backoff": r.backoff})
        return {"last_rank": self.last_rank}, arrays

    def _stacked(self, v: Any) -> np.ndarray:
        return self.be.host(v) if self.stacked else np.asarray(v)[None]

    def restore(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Back to a :meth:`snapshot`.  The residuals, weights and caches are recomputed from the variables:
        each is a function of the variables alone, so they come out as the run had them, bit for bit."""
        v: dict[str, Any] = {}
        for key, a in arrays.items():
            if key.startswith("v_"):
                one = a if self.stacked else a[0]
                v[key[2:]] = float(one) if one.ndim == 0 else self.xp.asarray(np.ascontiguousarray(one))
        self.st = LySepState(self.L, v, self.data.plan, xp=self.xp)
        self.terms = compute_terms(self.st, self.data)
        self.J_S = np.array(arrays["J_S"])
        self.unchanged_trials, self.trials = np.array(arrays["unchanged"]), np.array(arrays["trials"])
        self.last_cond, self.last_rank = np.array(arrays["last_cond"]), list(meta["last_rank"])
        for b in self.blocks:
            self.accepted_steps[b] = np.array(arrays[f"accepted_{b}"])
            r = self.rules[b]
            if isinstance(r, Backtracking):
                r.tau, r.last = np.array(arrays[f"rule_{b}_tau"]), np.array(arrays[f"rule_{b}_last"])
                r.skip, r.backoff = np.array(arrays[f"rule_{b}_skip"]), np.array(arrays[f"rule_{b}_backoff"])

    def step_sizes(self, block: str) -> np.ndarray:
        """The next first trial step of ``block`` per seed, (S,)."""
        r = self.rules[block]
        return r.tau if isinstance(r, Backtracking) else np.full(self.S, r.tau)

    def _set(self, block: str, value: Any, active: np.ndarray) -> None:
        if not active.all():  # only a stack has seeds out of the sweep
            value = stack.merge(self.xp, self._on_device(active), value, self.st.v[block])
        self.st = self.st.with_(**{block: value})
        self.terms = update_terms(self.terms, block, self.st, self.data)

    def _on_device(self, active: np.ndarray) -> Array:
        """``active`` (S,) on the device, uploaded again only when it changed (a seed left the sweep)."""
        if self._active is None or not np.array_equal(self._active[0], active):
            self._active = (active.copy(), self.xp.asarray(active))
        return self._active[1]

    def _gradient_step(self, block: str, active: np.ndarray) -> None:
        xp, st, data, terms, rule = self.xp, self.st, self.data, self.terms, self.rules[block]
        if rule.inactive:
            return  # fixed tau = 0: only the closed-form updates act
        wt = weights(st, data)
        g = gradient(block, st, data, terms, self.s.weights, wt)
        x = st.v[block]
        if not self.stacked:  # the trials see a seed axis of one (views)
            x, g = x[None], g[None]
        J0 = self.J_S.copy()
        own: list = []  # a_l, d_l, q_l (l >= 2): their constraint's layer map, made at the first evaluation
        accepted: dict[str, Any] = {}
        backtracking = isinstance(rule, Backtracking)

        def evaluate(xt: Array, rows: int) -> tuple[Array, Callable[[int], Any]]:
            """J_S (rows S,) of the states with the block's variable xt (rows S, ...), and row i's state."""
            if block[0] in "adq" and int(block[1:]) >= 2 and not own:
                own.append(layer_map(block, st, data))  # unchanged by this block's steps: once per step
            if rows == 1:
                st2, t2 = st.with_(**{block: xt if self.stacked else xt[0]}), terms
            else:
                st2, t2 = stack.tiled(st, terms, block, xt, rows, self._reads.get(block, []))
            t2 = update_terms(t2, block, st2, data, own[0] if own else None)
            J = lysep_loss(st2, data, t2).J_S
            if rows > 1:
                self._reads[block] = stack.reads(st2, t2)
                return J, lambda i: stack.row(st, terms, st2, t2, block, i)
            return (J if self.stacked else xp.asarray([J])), lambda i: (st2, t2)

        trial = trials.BlockTrials(self.be, x, g, J0, evaluate, (st, terms), self.trials, self.unchanged_trials,
                                   self.unchanged_last.get(block, False), getattr(rule, "shrink", None),
                                   getattr(rule, "max_tries", 1), self.trial_batch,
                                   sum_per_seed(xp, g * g) if backtracking else None)  # ||g||^2 (S,)

        def accept(payload: tuple[LySepState, Terms], mask: np.ndarray) -> None:
            st2, t2 = payload
            if st2 is st:  # every trying seed's step changed nothing (all rejected unless g = 0)
                return
            if mask.all() and st2.v.keys() == st.v.keys():  # a whole trial state, every seed's: taken as it is
                accepted["state"] = payload
                return
            base_st, base_terms = accepted.get("state", (st, terms))
            m = None if mask.all() else xp.asarray(mask)  # one upload an accept, none when every seed takes it
            v = stack.merge(xp, m, st2.v[block], base_st.v[block])
            e = {k: (stack.merge(xp, m, t2.e[k], base_terms.e[k]) if k in affects(block, self.L) else base_terms.e[k])
                 for k in base_terms.e}
            r = stack.merge(xp, m, t2.r, base_terms.r)
            new = base_st.with_(**{block: v})
            stack.merge_cache(xp, m, st2.cache, base_st.cache, new.cache)
            accepted["state"] = (new, Terms(e, r, xp=xp))

        if backtracking:
            J, _, moved = rule.step_seeds(J0, trial.g2, trial, accept, active)
        else:  # the paper's fixed step, always accepted
            J, payload = trial(np.full(self.S, rule.tau), active)
            accept(payload, active)
            moved = active.copy()
        self.unchanged_last[block] = trial.unchanged_last
        if "state" in accepted:
            self.st, self.terms = accepted["state"]
        self.J_S = np.where(moved, J, self.J_S)
        self.accepted_steps[block] += moved

    def _solve_W3(self, active: np.ndarray, with_cond: bool) -> tuple[Any, Any]:
        """`eq:GD_W3` for the active seeds (updates.solve_W3), on the host: (W_L, b_L when joint else None);
        a stack's systems come to the host as ``w_solve`` says (accel/lstsq.to_host: one copy) and are solved
        there on threads, its inactive seeds' rows zeros (:meth:`_set` keeps their values)."""
        joint = self.s.w3_b3 == "joint"
        if not self.stacked:
            sol = solve_W3(self.st, self.data, self.terms, joint, self.s.rcond, with_cond, self.s.lstsq)
            self.last_cond[0], self.last_rank[0] = sol.cond, sol.rank
            return sol.W3, sol.b3
        be, idx = self.be, np.flatnonzero(active)
        sol = solve_W3(self.st, self.data, self.terms, joint, self.s.rcond, with_cond, self.s.lstsq, idx,
                       lambda B, y, lam, K: lstsq.to_host(be, B, y, lam, self.w_solve, K), self.workers)
        M = sol.W3.shape[2]
        X = np.zeros((self.S, M + joint))  # [W_L, b_L] per seed
        X[idx, :M] = sol.W3[:, 0]
        if joint:
            X[idx, M] = sol.b3
        self.last_cond[idx] = sol.cond
        for s, rank in zip(idx, sol.rank):
            self.last_rank[s] = rank
        X = be.asarray(X)  # one upload
        return X[:, None, :M], (X[:, M] if joint else None)

    def sweep(self, active: np.ndarray | None = None, with_cond: bool = False) -> None:
        """One iteration k of Algorithm 1 (2, 3) for the ``active`` seeds (default: all; updated in place: a
        seed whose J_S stops being finite leaves the sweep at that block, before a solve meets inf or NaN);
        ``with_cond`` also measures the W_L system's condition."""
        active = np.ones(self.S, dtype=bool) if active is None else active
        L, data = self.L, self.data
        for block in self.order:
            if not active.any():
                return
            if block in self.blocks:
                self._gradient_step(block, active)
            else:
                if block == f"W{L}":
                    value, bL = self._solve_W3(active, with_cond)
                    if bL is not None:  # joint: b_L from the same solve, set after W_L
                        self._set(block, value, active)
                        block, value = f"b{L}", bL
                elif block == f"b{L}" and self.s.w3_b3 == "joint":
                    continue  # set with W_L; J_S unchanged
                elif block == f"b{L}":
                    value = solve_b3(self.st, data)
                else:  # b_l, l < L
                    value = solve_b(int(block[1:]), self.st, data, weights(self.st, data))
                self._set(block, value, active)
                self.J_S = np.where(active, self._per_seed(lysep_loss(self.st, data, self.terms).J_S), self.J_S)
            active &= np.isfinite(self.J_S)

    def network(self) -> Params:
        """The network [(W_l, b_l)] of every seed, on the device, b_L as ((S,) 1): with a seed axis, the
        contiguous arrays themselves (no host copy); without, a copy (LySepState.params)."""
        if not self.stacked:
            return self.st.params()
        xp, v, L = self.xp, self.st.v, self.L
        return [(xp.ascontiguousarray(v[f"W{l}"]), xp.ascontiguousarray(v[f"b{l}"] if l < L else v[f"b{L}"][:, None]))
                for l in range(1, L + 1)]

    def params(self) -> list[Params]:
        """Each seed's network on the host."""
        if not self.stacked:
            return [self.st.params()]
        L = self.L
        host = {k: self.be.host(v) for k, v in self.st.v.items() if k[0] in "Wb"}
        return [[(host[f"W{l}"][s].copy(), host[f"b{l}"][s].copy()) for l in range(1, L)]
                + [(host[f"W{L}"][s].copy(), np.array([host[f"b{L}"][s]]))] for s in range(self.S)]

    def pinn_loss(self, plan: ChannelPlan) -> np.ndarray:
        """The PINN loss J (`eq:J-elliptic`) of each seed's current W_l, b_l, (S,) on the host (``plan``: the
        PINN's channel plan on the device)."""
        data = self.data
        if not self.stacked:
            return np.array([pinn_loss(self.st.params(), data.Z, None, data.Y, plan)])
        fp = pinn_pass(self.network(), data.Z, plan, data.Y, self.xp)
        return self.be.host(_dot(self.xp, fp.R, fp.R) / fp.R.shape[1])


def _relative_move(new: np.ndarray, old: np.ndarray) -> float:
    n = float(np.linalg.norm(old))
    return float(np.linalg.norm(new - old) / n) if n > 0 else float("nan")


#: the per-seed loop values a checkpoint keeps as arrays, beside the histories and the iteration's state
_LOOP_ARRAYS = ("worst", "violations", "first_violation", "J_first", "cond_first", "diverged_at", "running", "J")


def first_values(data: TrainingData, params0: Params, settings: Settings | dict[str, Any]) -> dict[str, float]:
    """{"J": J[0], "J_S": J_S[0]}: the PINN loss and J_S of the first state (the auxiliary variables at their
    forward values), as :func:`solve` starts."""
    it = LySepIteration(params0, LySepData.build(data.Z, data.coef, data.Y), Settings.coerce(settings))
    return {"J": float(it.pinn_loss(ChannelPlan.build(data.coef))[0]), "J_S": float(it.J_S[0])}


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None, checkpoint: Checkpoint | None = None) -> SolveResult:
    """Run Algorithm 1 (elliptic), 2 (parabolic) or 3 (hyperbolic) for ``iterations`` sweeps: one network
    (:func:`solve_seeds` with S = 1 on NumPy).

    history: "J_S" and "J" (PINN loss of the current W_l, b_l), iterations + 1 entries each
    (the initial values first).  bound: the Theorem 2.1/3.1/3.3 check of every iteration.
    checkpoint: resume from it when it holds this run's state, and save to it as it comes due
    (lysep_cli/store/checkpoint.py); the result is the uninterrupted run's, bit for bit.
    """
    each = None if progress is None else (lambda k, J: progress(k, float(J[0])))
    return solve_seeds(CPU, problem, data, [params0], settings, iterations, each, checkpoint=checkpoint,
                       record_engine=False)[0]


def solve_seeds(be: Backend, problem: Problem, data: TrainingData, params0: list[Params],
                settings: Settings | dict[str, Any], iterations: int,
                progress: Callable[[int, np.ndarray], None] | None = None, sync_every: int = 1,
                checkpoint: Checkpoint | None = None, w_solve: str | None = None,
                w_workers: int | None = None, trial_batch: int | None = None,
                stack_to: int | None = None, record_engine: bool = True) -> list[SolveResult]:
    """Algorithms 1-3 for every network of ``params0`` (one per seed) on the backend ``be``: one SolveResult per
    seed, each seed's the run alone's bit for bit with ``w_solve`` "host" (timings are the stack's).

    ``progress(k, J (S,))`` every ``sync_every`` sweeps; ``checkpoint``: the stack's, resumed from when it
    holds this stack's state and saved as it comes due (the results are the uninterrupted run's);
    ``w_solve``: where W_L's least squares are done (accel/lstsq.py; None: "host" on NumPy, "reduced" on
    CuPy); ``w_workers``: threads for the per-seed host solves (None: one per usable CPU, at most one per
    seed); ``trial_batch``: a block's first k backtracking trials evaluated at once (accel/trials.py; None: 1
    on NumPy, 2 on CuPy); ``stack_to``: the stack padded to a multiple of it (accel/padding.py; None: 1 on
    NumPy, 10 on CuPy).  With ``record_engine`` the results record ``diagnostics.W3_solve`` and ``trial_batch``
    (a run alone, :func:`solve`, does not); ``padded_stack`` when the stack was padded."""
    s = Settings.coerce(settings)
    n_real = len(params0)
    params0 = padding.padded(params0, padding.stack_size(be.xp, stack_to))
    progress = padding.real_seeds(progress, n_real)
    ld = LySepData.build(data.Z, data.coef, data.Y)
    S, L = len(params0), len(params0[0])
    C = theorem_constant(L, *SIGMA.constants, second=bool(ld.S.size))
    factor = bound_factor(problem.pde, problem.d) * C
    it = LySepIteration(params0, ld, s, be, w_solve, w_workers, trial_batch)
    pinn_plan = ChannelPlan.build(data.coef).to(be.xp)
    J = it.pinn_loss(pinn_plan)
    with np.errstate(divide="ignore", invalid="ignore"):
        worst = np.where(it.J_S > 0, J / it.J_S, np.nan)
    diverged_at = np.where(np.isfinite(it.J_S) & np.isfinite(J), -1, 0)
    lp: dict[str, Any] = {"worst": worst, "violations": np.zeros(S, dtype=int), "first_violation": np.full(S, -1),
                          "J_first": np.full(S, np.nan), "cond_first": np.full(S, np.nan),
                          "diverged_at": diverged_at, "running": diverged_at < 0, "J": J}
    meta: dict[str, Any] = {"k": 0, "seconds": 0.0, "cpu_seconds": 0.0, "resumed_at": [],
                            "rank_first": [None] * S, "rank_min": [None] * S}
    hist_JS, hist_J = [it.J_S.copy()], [J]
    saved = checkpoint.load() if checkpoint is not None and lp["running"].any() else None
    if saved is not None:
        meta = saved["meta"]["loop"]
        it.restore(saved["meta"]["iteration"], saved["arrays"])
        lp = {k: saved["arrays"][f"loop_{k}"] for k in _LOOP_ARRAYS}
        lp["running"] = lp["running"].astype(bool)
        hist_J, hist_JS = list(saved["arrays"]["hist_J"]), list(saved["arrays"]["hist_J_S"])
        meta["resumed_at"].append(meta["k"])
    before = (meta["seconds"], meta["cpu_seconds"])  # spent by the runs this one resumes
    t0, cpu0 = time.perf_counter() - before[0], time.process_time() - before[1]
    for k in range(meta["k"], iterations):
        running = lp["running"]
        if not running.any():
            break
        active = running.copy()
        it.sweep(active, with_cond=k in (0, iterations - 1))
        J = it.pinn_loss(pinn_plan)
        J = J if running.all() else np.where(running, J, lp["J"])
        hist_JS.append(it.J_S.copy())
        hist_J.append(J.copy())
        if k == 0:  # the first W_L/b_L solve ends sweep 1
            lp["J_first"], lp["cond_first"] = J.copy(), it.last_cond.copy()
        for i in np.flatnonzero(running):  # loop over the seeds: the W_L system's rank (lstsq basic only)
            if it.last_rank[i] is not None:
                first, low = meta["rank_first"][i], meta["rank_min"][i]
                meta["rank_first"][i] = it.last_rank[i] if first is None else first
                meta["rank_min"][i] = min(low if low is not None else it.last_rank[i], it.last_rank[i])
        bad = running & ~(np.isfinite(it.J_S) & np.isfinite(J))
        lp["diverged_at"] = np.where(bad, k + 1, lp["diverged_at"])
        ok = running & ~bad
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(it.J_S > 0, J / it.J_S, np.inf)
        lp["worst"] = np.where(ok & (ratio > lp["worst"]), ratio, lp["worst"])
        violated = ok & (J > factor * it.J_S)  # Theorems 2.1 / 3.1 / 3.3: J <= factor C J_S
        lp["violations"] = lp["violations"] + violated
        lp["first_violation"] = np.where(violated & (lp["first_violation"] < 0), k + 1, lp["first_violation"])
        lp["running"], lp["J"] = ok, J
        meta["k"] = k + 1
        if checkpoint is not None and meta["k"] < iterations and ok.any() and checkpoint.due():
            meta["seconds"], meta["cpu_seconds"] = time.perf_counter() - t0, time.process_time() - cpu0
            state, arrays = it.snapshot()
            checkpoint.save({"loop": meta, "iteration": state},
                            {**arrays, **{f"loop_{name}": np.asarray(v) for name, v in lp.items()},
                             "hist_J": np.array(hist_J), "hist_J_S": np.array(hist_JS)})
        if progress is not None and ((k + 1) % sync_every == 0 or k + 1 == iterations):
            progress(k, J)
    seconds = time.perf_counter() - t0
    params = it.params()
    sweeps = len(hist_J) - 1
    engine = {"W3_solve": it.w_solve, "trial_batch": it.trial_batch} if record_engine else None
    out = []
    for i in range(n_real):  # the padding's copies dropped
        n = sweeps + 1 if lp["diverged_at"][i] < 0 else int(lp["diverged_at"][i]) + 1
        loop = {"violations": lp["violations"][i], "worst_ratio": lp["worst"][i],
                "first_violation": None if lp["first_violation"][i] < 0 else int(lp["first_violation"][i]),
                "J_first_solve": None if n < 2 else float(lp["J_first"][i]), "cond_first": lp["cond_first"][i],
                "rank_first": meta["rank_first"][i], "rank_min": meta["rank_min"][i], "resumed_at": meta["resumed_at"]}
        counters = {"accepted_steps": {b: int(m[i]) for b, m in it.accepted_steps.items()},
                    "unchanged_trials": int(it.unchanged_trials[i]), "trials": int(it.trials[i]),
                    "final_step_sizes": {b: float(it.step_sizes(b)[i]) for b in it.blocks}}
        diverged = None if lp["diverged_at"][i] < 0 else int(lp["diverged_at"][i])
        result = lysep_result(params[i], params0[i], [float(h[i]) for h in hist_J[:n]],
                              [float(h[i]) for h in hist_JS[:n]], diverged, problem, s, factor, C, loop,
                              it.last_cond[i], it.last_rank[i], counters, seconds / max(1, sweeps), before, engine)
        if S > n_real:
            result.diagnostics["padded_stack"] = S
        out.append(result)
    return out


def lysep_result(params: Params, params0: Params, hist_J: list[float], hist_JS: list[float], diverged_at: int | None,
                 problem: Problem, s: Settings, factor: float, C: float, loop: dict[str, Any], last_cond: float,
                 last_rank: int | None, counters: dict[str, Any], seconds_per_iteration: float,
                 before: tuple[float, float], engine: dict[str, Any] | None = None) -> SolveResult:
    """One seed's SolveResult: its network and histories, the bound check J <= factor J_S, the diagnostics; for
    each seed of :func:`solve_seeds` (``engine``: its entries W3_solve and trial_batch, recorded for a stack,
    follow the W_3 system's condition).  ``loop``: violations, first_violation (None:
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
