"""LySep (Algorithms 1-3, any depth L) with a cell's seeds stacked: the sweep of solvers/lysep/ for S seeds at once.

The formulas are solvers/lysep/'s own (loss.LySepState and Terms with a leading seed axis on every variable:
W_l (S, out, in), b_l (S, out), b_L (S,), a_l (S, M, N), d_l (S, n_in, M, N), q_l (S, |S|, M, N), and on
every per-seed scalar: J_S, ||W_L||^2, P; weights.py, updates.py).  What this module adds is the sweep's
per-seed control.  Per seed, the decisions are the CPU solver's:

- each gradient block's backtracking (or fixed) step by lysep_cli/solvers/steps.py ``Backtracking`` (one state per
  seed), every seed accepting or rejecting its own trial by a mask; a trial that leaves a seed's block unchanged
  bit for bit gives that seed J0 (algorithm.same_bits); the block's first ``trial_batch`` trials evaluated at
  once, as one stack of trial_batch S states (lysep_cli/accel/trials.py: 1 on NumPy, 2 on CuPy; every seed's run
  the same);
- the closed-form updates b_l, W_L and b_L (updates.py); W_L's least squares per seed on the host by the CPU's
  routine (numerics/lstsq.py: scipy's gelsy or Matlab's basic solve), on a thread pool over the seeds, either of
  the full system (``w_solve`` "host", NumPy's default: the CPU's bits) or of the system reduced by a QR on the
  device ("reduced", CuPy's default; lysep_cli/accel/lstsq.py);
- a seed whose J_S stops being finite leaves the sweep there (its later blocks are not applied), and a seed
  whose J_S or PINN J is not finite after a sweep is diverged and frozen;
- the consistency bound J <= factor C_L J_S checked per seed.

Supported settings: weights "frozen" or "through" (omega and D differentiated through: solvers/lysep/
weights.partials), w3_b3 "separate" or "joint" (one least-squares solve for [W_L, b_L]
per seed, b_L not regularised, in either ``w_solve``), lstsq "min-norm" or "basic", step_rule
"backtracking" (back-off too) or "fixed".  A stack has one checkpoint (its state for every seed), from
which a stopped stack resumes bit for bit (docs/gpu.md).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from lysep_cli.accel import lstsq, padding, trials
from lysep_cli.accel.backend import Backend
from lysep_cli.numerics.activation import SIGMA
from lysep_cli.numerics.channels import Array, ChannelPlan, _dot
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.network import Params, pinn_pass
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import Checkpoint, SolveResult
from lysep_cli.solvers.lysep.algorithm import Settings, block_order, bound_factor, lysep_result
from lysep_cli.solvers.lysep.loss import (LySepData, LySepState, Terms, _sources, affects, compute_terms, gradient,
                                          gradient_blocks, layer_map, lysep_loss, update_terms, weights)
from lysep_cli.solvers.lysep.updates import solve_b, solve_b3, solve_W3
from lysep_cli.solvers.lysep.weights import Weights, sum_per_seed, theorem_constant


def _merge(xp: Any, mask: Array, new: Array, old: Array) -> Array:
    """new where mask (S,) (per seed, on the device: uploaded once by the caller), else old."""
    return xp.where(mask.reshape((mask.size,) + (1,) * (new.ndim - 1)), new, old)


#: the cached values a trial batch tiles from its base state when it reads them (arrays with a leading seed
#: axis); the others (sigma's values, the fit matrix, the weights at L != 3) it computes anew
_TILED_KINDS = ("w", "w1", "nd", "nq", "paper")


def _tiled(st: LySepState, terms: Terms, block: str, xt: Array, k: int, reads: list) -> tuple[LySepState, Terms]:
    """The state and terms of k trials of ``block`` at once, k S seeds (row i: seeds i S .. (i+1) S - 1): the
    block's variable xt (k S, ...), every other variable, cached value and term of ``st``/``terms`` tiled k
    times when first read (trials.Tiled); r tiled unless the block's terms recompute it.  ``reads``: what the
    block's last batch tiled (:func:`_reads`), tiled here at once (trials.tile_many: one copy for the small)."""
    xp, L = st.xp, st.L
    v = trials.Tiled(st.v, xp, k)
    v[block] = xt
    maps = (v, trials.Tiled(st.cache, xp, k, lambda key: key[0] in _TILED_KINDS and block not in _sources(key, L)),
            trials.Tiled(terms.e, xp, k), trials.Tiled(terms._E, xp, k))
    wanted = [(m, key) for m, key in reads if maps[m]._lazy(key)]
    need_r = "fit" not in affects(block, L)  # else update_terms computes r
    tiles = trials.tile_many(xp, [maps[m].base[key] for m, key in wanted] + ([terms.r] if need_r else []), k)
    for (m, key), a in zip(wanted, tiles):
        maps[m].put_tile(key, a)
    return LySepState(L, v, st.plan, maps[1], xp), Terms(maps[2], tiles[-1] if need_r else None, maps[3], xp=xp)


def _reads(st2: LySepState, t2: Terms) -> list:
    """What a trial batch (:func:`_tiled`) tiled: (mapping, key) pairs."""
    return [(m, key) for m, mp in enumerate((st2.v, st2.cache, t2.e, t2._E)) for key in mp.tiled]


def _row(st: LySepState, terms: Terms, st2: LySepState, t2: Terms, block: str, i: int) -> tuple[LySepState, Terms]:
    """Row i of a trial batch (:func:`_tiled`) as a trial state of S seeds for the step's accept: the block's
    variable, its terms and r, and the cached values the batch computed (views)."""
    S = st.v[block].shape[0]
    rows = slice(i * S, (i + 1) * S)
    cache = {key: c[rows] for key, c in dict.items(st2.cache) if key[0] in _TILED_KINDS and key not in st2.cache.tiled}
    e = {name: t2.e[name][rows] for name in affects(block, st.L) if name != "fit"}
    return (LySepState(st.L, {block: st2.v[block][rows]}, st.plan, cache, st.xp),
            Terms(e, terms.r if "fit" not in affects(block, st.L) else t2.r[rows], xp=st.xp))


def _merge_cache(xp: Any, mask: Array, new: dict, old: dict, into: dict) -> None:
    """The cached values ``into`` lacks that a trial state's (``new``) and its base state's (``old``) caches
    both hold, merged seed by seed (new where mask): the weights and their summands, the norms (arrays with
    a leading seed axis), in place.  Per seed they are the values the merged state would compute."""
    def pick(a: Array, b: Array) -> Array:
        return a if a is b else _merge(xp, mask, a, b)

    for key in (new.keys() & old.keys()) - into.keys():
        a, b = new[key], old[key]
        if isinstance(a, Weights):
            tape = None if a.tape is None or b.tape is None else \
                {l: tuple(pick(x, y) for x, y in zip(a.tape[l], b.tape[l])) for l in a.tape}
            into[key] = Weights(*({l: pick(x[l], y[l]) for l in x} for x, y in
                                  ((a.rho_a, b.rho_a), (a.rho_d, b.rho_d), (a.rho_q, b.rho_q))), tape)
        elif key[0] in ("w", "w1", "nd", "nq", "paper"):
            into[key] = pick(a, b)


class StackedIteration:
    """algorithm.LySepIteration for S seeds: variables, terms, step rules, per-seed counters."""

    def __init__(self, be: Backend, params0: list[Params], data: LySepData, settings: Settings,
                 w_solve: str | None = None, workers: int | None = None, trial_batch: int | None = None):
        xp = self.xp = be.xp
        self.be, self.data, self.s = be, data, settings
        self.w_solve = lstsq.default_w_solve(xp) if w_solve is None else w_solve
        if self.w_solve not in lstsq.W_SOLVES:
            raise ValueError(f"w_solve must be one of {', '.join(lstsq.W_SOLVES)}, got {self.w_solve!r}")
        self.workers = lstsq.default_workers(len(params0)) if workers is None else workers
        self.trial_batch = trials.default_trial_batch(xp) if trial_batch is None else trial_batch
        if not (isinstance(self.trial_batch, int) and self.trial_batch >= 1):
            raise ValueError(f"trial_batch must be an integer >= 1, got {self.trial_batch!r}")
        self._reads: dict[str, list] = {}  # per block, what its last trial batch tiled (_tiled)
        self.L = len(params0[0])
        self.S = len(params0)
        self.blocks = gradient_blocks(self.L)
        self.order = block_order(self.L)
        hosts = [LySepState.from_params(p, data.host) for p in params0]  # the CPU's forward values, exact
        v = {k: xp.asarray(np.stack([np.asarray(h.v[k], dtype=float) for h in hosts])) for k in hosts[0].v}
        self.st = LySepState(self.L, v, data.plan, xp=xp)
        self.terms = compute_terms(self.st, data)
        self.J_S = be.host(lysep_loss(self.st, data, self.terms).J_S)
        if settings.step_rule == "backtracking":
            self.rules = settings.step_rules(self.blocks, seeds=self.S)
        self.last_cond = np.full(self.S, np.nan)
        self.last_rank: list[int | None] = [None] * self.S
        self.accepted_steps = {b: np.zeros(self.S, dtype=int) for b in self.blocks}
        self.unchanged_trials = np.zeros(self.S, dtype=int)
        self.trials = np.zeros(self.S, dtype=int)
        #: per block, whether its last trial left every trying seed's bits unchanged (then the next trial syncs
        #: that test before evaluating J_S, else both in one copy): the same decisions either way
        self.unchanged_last: dict[str, bool] = {}
        self._active: tuple[np.ndarray, Array] | None = None  # the last active mask, on the host and the device

    def snapshot(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The state between sweeps: (JSON-able values, arrays), as algorithm.LySepIteration.snapshot."""
        arrays = {f"v_{k}": self.be.host(v) for k, v in self.st.v.items()}
        arrays.update(J_S=self.J_S, unchanged=self.unchanged_trials, trials=self.trials, last_cond=self.last_cond)
        for b in self.blocks:
            arrays[f"accepted_{b}"] = self.accepted_steps[b]
            if self.s.step_rule == "backtracking":
                r = self.rules[b]
                arrays.update({f"rule_{b}_tau": r.tau, f"rule_{b}_last": r.last, f"rule_{b}_skip": r.skip,
                               f"rule_{b}_backoff": r.backoff})
        return {"last_rank": self.last_rank}, arrays

    def restore(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Back to a :meth:`snapshot`: the terms, weights and caches recomputed from the variables (functions
        of them alone, so the same bits as the run had)."""
        v = {k[2:]: self.xp.asarray(np.ascontiguousarray(a)) for k, a in arrays.items() if k.startswith("v_")}
        self.st = LySepState(self.L, v, self.data.plan, xp=self.xp)
        self.terms = compute_terms(self.st, self.data)
        self.J_S = np.array(arrays["J_S"])
        self.unchanged_trials, self.trials = np.array(arrays["unchanged"]), np.array(arrays["trials"])
        self.last_cond, self.last_rank = np.array(arrays["last_cond"]), list(meta["last_rank"])
        for b in self.blocks:
            self.accepted_steps[b] = np.array(arrays[f"accepted_{b}"])
            if self.s.step_rule == "backtracking":
                r = self.rules[b]
                r.tau, r.last = np.array(arrays[f"rule_{b}_tau"]), np.array(arrays[f"rule_{b}_last"])
                r.skip, r.backoff = np.array(arrays[f"rule_{b}_skip"]), np.array(arrays[f"rule_{b}_backoff"])

    def step_sizes(self, block: str) -> np.ndarray:
        return self.rules[block].tau if self.s.step_rule == "backtracking" else np.full(self.S, self.s.tau)

    def _set(self, block: str, value: Array, active: np.ndarray) -> None:
        value = _merge(self.xp, self._on_device(active), value, self.st.v[block])
        self.st = self.st.with_(**{block: value})
        self.terms = update_terms(self.terms, block, self.st, self.data)

    def _on_device(self, active: np.ndarray) -> Array:
        """``active`` (S,) on the device, uploaded again only when it changed (a seed left the sweep)."""
        if self._active is None or not np.array_equal(self._active[0], active):
            self._active = (active.copy(), self.xp.asarray(active))
        return self._active[1]

    def _gradient_step(self, block: str, active: np.ndarray) -> None:
        xp, be, st, data, terms = self.xp, self.be, self.st, self.data, self.terms
        if self.s.step_rule == "fixed" and self.s.tau == 0.0:
            return  # FixedStep.inactive: only the closed-form updates act
        wt = weights(st, data)
        g = gradient(block, st, data, terms, self.s.weights, wt)
        J0 = self.J_S.copy()
        own: list = []  # the block's own layer map (a, d, q blocks of layers >= 2), made at the first evaluation
        accepted: dict[str, Any] = {}
        backtracking = self.s.step_rule == "backtracking"
        rule = self.rules[block] if backtracking else None

        def evaluate(xt: Array, rows: int) -> tuple[Array, Callable[[int], Any]]:
            """J_S (rows S,) of the states with the block's variable xt (rows S, ...), and row i's state."""
            if block[0] in "adq" and int(block[1:]) >= 2 and not own:
                own.append(layer_map(block, st, data))
            if rows == 1:
                st2, t2 = st.with_(**{block: xt}), terms
            else:
                st2, t2 = _tiled(st, terms, block, xt, rows, self._reads.get(block, []))
            t2 = update_terms(t2, block, st2, data, own[0] if own else None)
            J = lysep_loss(st2, data, t2).J_S
            if rows > 1:
                self._reads[block] = _reads(st2, t2)
            return J, (lambda i: (st2, t2)) if rows == 1 else (lambda i: _row(st, terms, st2, t2, block, i))

        trial = trials.BlockTrials(be, st.v[block], g, J0, evaluate, (st, terms), self.trials, self.unchanged_trials,
                                   self.unchanged_last.get(block, False), rule.shrink if rule else None,
                                   rule.max_tries if rule else 1, self.trial_batch,
                                   sum_per_seed(xp, g * g) if backtracking else None)  # ||g||^2 (S,)

        def accept(payload, mask: np.ndarray) -> None:
            st2, t2 = payload
            if st2 is st:  # every trying seed's step changed nothing (all rejected unless g = 0)
                return
            base_st, base_terms = accepted.get("state", (st, terms))
            m = xp.asarray(mask)  # one upload an accept
            v = _merge(xp, m, st2.v[block], base_st.v[block])
            e = {k: (_merge(xp, m, t2.e[k], base_terms.e[k]) if k in affects(block, self.L) else base_terms.e[k])
                 for k in base_terms.e}
            r = _merge(xp, m, t2.r, base_terms.r)
            new = base_st.with_(**{block: v})
            _merge_cache(xp, m, st2.cache, base_st.cache, new.cache)
            accepted["state"] = (new, Terms(e, r, xp=xp))

        if rule is not None:
            J, _, moved = rule.step_seeds(J0, trial.g2, trial, accept, active)
        else:  # the paper's fixed step, always accepted
            J, payload = trial(np.full(self.S, self.s.tau), active)
            accept(payload, active)
            moved = active.copy()
        self.unchanged_last[block] = trial.unchanged_last
        if "state" in accepted:
            self.st, self.terms = accepted["state"]
        self.J_S = np.where(moved, J, self.J_S)
        self.accepted_steps[block] += moved

    def _solve_W3(self, active: np.ndarray, with_cond: bool) -> tuple[Array, Array | None]:
        """updates.solve_W3 for the active seeds, their systems brought to the host as ``w_solve`` says
        (accel/lstsq.to_host: one host sync) and solved there on threads: (W_L (S, 1, M), b_L (S,) when joint,
        else None); the inactive seeds' rows are zeros (:meth:`_set` keeps their values)."""
        be, joint, idx = self.be, self.s.w3_b3 == "joint", np.flatnonzero(active)
        sol = solve_W3(self.st, self.data, self.terms, joint, self.s.rcond, with_cond, self.s.lstsq, idx,
                       lambda B, y, lam, K: lstsq.to_host(be, B, y, lam, self.w_solve, K), self.workers)
        M = sol.W3.shape[2]
        X = np.zeros((self.S, M + joint))  # [W_L, b_L] per seed; the inactive seeds' rows: _set keeps their values
        X[idx, :M] = sol.W3[:, 0]
        if joint:
            X[idx, M] = sol.b3
        self.last_cond[idx] = sol.cond
        for s, rank in zip(idx, sol.rank):
            self.last_rank[s] = rank
        X = be.asarray(X)  # one upload
        return X[:, None, :M], (X[:, M] if joint else None)

    def _solve_b(self, l: int) -> Array:
        return solve_b(l, self.st, self.data, weights(self.st, self.data))

    def _solve_bL(self) -> Array:
        return solve_b3(self.st, self.data)

    def sweep(self, active: np.ndarray, with_cond: bool) -> None:
        """One iteration of Algorithm 1 (2, 3) for the ``active`` seeds; a seed whose J_S stops being finite
        leaves the sweep at that block (``active`` is updated in place)."""
        L, data = self.L, self.data
        for block in self.order:
            if not active.any():
                return
            if block in self.blocks:
                self._gradient_step(block, active)
            else:
                if block == f"W{L}":
                    value, bL = self._solve_W3(active, with_cond)
                    if bL is not None:  # joint: b_L from the same solve, set after W_L (algorithm.py's order)
                        self._set(block, value, active)
                        block, value = f"b{L}", bL
                elif block == f"b{L}" and self.s.w3_b3 == "joint":
                    continue  # set with W_L; J_S unchanged
                elif block == f"b{L}":
                    value = self._solve_bL()
                else:
                    value = self._solve_b(int(block[1:]))
                self._set(block, value, active)
                J = self.be.host(lysep_loss(self.st, data, self.terms).J_S)
                self.J_S = np.where(active, J, self.J_S)
            active &= np.isfinite(self.J_S)

    def network(self) -> Params:
        """The stacked network [(W_l (S, out, in), b_l (S, out))] on the device, b_L as (S, 1): the arrays of
        :meth:`params` (contiguous, as accel/pinn.stack uploads them) without a host copy."""
        xp, v, L = self.xp, self.st.v, self.L
        return [(xp.ascontiguousarray(v[f"W{l}"]), xp.ascontiguousarray(v[f"b{l}"] if l < L else v[f"b{L}"][:, None]))
                for l in range(1, L + 1)]

    def params(self) -> list[Params]:
        L = self.L
        host = {k: self.be.host(v) for k, v in self.st.v.items() if k[0] in "Wb"}
        return [[(host[f"W{l}"][s].copy(), host[f"b{l}"][s].copy()) for l in range(1, L)]
                + [(host[f"W{L}"][s].copy(), np.array([host[f"b{L}"][s]]))] for s in range(self.S)]


def pinn_J(be: Backend, params: Params, data: LySepData, plan: ChannelPlan) -> np.ndarray:
    """The PINN loss J of each seed's network, (S,) on the host (network.pinn_loss, stacked), from the
    stacked network on the device (:meth:`StackedIteration.network`) and the training data there."""
    fp = pinn_pass(params, data.Z, plan, data.Y, be.xp)
    return be.host(_dot(be.xp, fp.R, fp.R) / fp.R.shape[1])


#: the per-seed loop values a checkpoint keeps as arrays, beside the histories and the iteration's state
_LOOP_ARRAYS = ("worst", "violations", "first_violation", "J_first", "cond_first", "diverged_at", "running", "J")


def solve_stacked(be: Backend, problem: Problem, data: TrainingData, params0: list[Params],
                  settings: Settings | dict[str, Any], iterations: int,
                  progress: Callable[[int, np.ndarray], None] | None = None, sync_every: int = 1,
                  checkpoint: Checkpoint | None = None, w_solve: str | None = None,
                  w_workers: int | None = None, trial_batch: int | None = None,
                  stack_to: int | None = None) -> list[SolveResult]:
    """algorithm.solve for every network of ``params0`` (one per seed), stacked: one SolveResult per seed,
    the CPU solver's bit for bit with ``w_solve`` "host" (timings are the stack's).  ``checkpoint``: the
    stack's, resumed from when it holds this stack's state and saved as it comes due; the results are the
    uninterrupted run's.  ``w_solve``: where W_L's least squares are done (accel/lstsq.py; None: the
    device's default, "host" on NumPy, "reduced" on CuPy), recorded as ``diagnostics.W3_solve``;
    ``w_workers``: threads for the per-seed host solves (None: one per usable CPU, at most one per seed);
    ``trial_batch``: a block's first k backtracking trials evaluated at once (accel/trials.py; None: the
    device's default, 1 on NumPy, 2 on CuPy; every seed's result is the k = 1 run's), recorded as
    ``diagnostics.trial_batch``; ``stack_to``: the stack padded to a multiple of it (accel/padding.py; None:
    the device's default, 1 on NumPy, 10 on CuPy), recorded as ``diagnostics.padded_stack`` when it padded."""
    s = Settings.coerce(settings)
    xp = be.xp
    n_real = len(params0)
    params0 = padding.padded(params0, padding.stack_size(xp, stack_to))
    progress = padding.real_seeds(progress, n_real)
    ld = LySepData.build(data.Z, data.coef, data.Y).on(be)
    host = ld.host
    pinn_plan = ChannelPlan.build(data.coef).to(xp)
    S, L = len(params0), len(params0[0])
    C = theorem_constant(L, *SIGMA.constants, second=bool(host.S.size))
    factor = bound_factor(problem.pde, problem.d) * C
    it = StackedIteration(be, params0, ld, s, w_solve, w_workers, trial_batch)
    J = pinn_J(be, it.network(), ld, pinn_plan)
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
    before = (meta["seconds"], meta["cpu_seconds"])
    t0, cpu0 = time.perf_counter() - before[0], time.process_time() - before[1]
    for k in range(meta["k"], iterations):
        running = lp["running"]
        if not running.any():
            break
        active = running.copy()
        it.sweep(active, with_cond=k in (0, iterations - 1))
        J = np.where(running, pinn_J(be, it.network(), ld, pinn_plan), lp["J"])
        hist_JS.append(it.J_S.copy())
        hist_J.append(J.copy())
        if k == 0:
            lp["J_first"], lp["cond_first"] = J.copy(), it.last_cond.copy()
        for i in np.flatnonzero(running):  # loop over the seeds: the W_3 system's rank (lstsq basic only)
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
        violated = ok & (J > factor * it.J_S)
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
    out = []
    for i in range(n_real):  # the padding's copies dropped
        n = sweeps + 1 if lp["diverged_at"][i] < 0 else int(lp["diverged_at"][i]) + 1
        HJ, HJS = [float(h[i]) for h in hist_J[:n]], [float(h[i]) for h in hist_JS[:n]]
        result = _result(i, params[i], params0[i], HJ, HJS, int(lp["diverged_at"][i]), it, s, factor, C, problem, lp,
                         meta, seconds / max(1, sweeps), before)
        if S > n_real:
            result.diagnostics["padded_stack"] = S
        out.append(result)
    return out


def _result(i: int, params: Params, params0: Params, hist_J: list[float], hist_JS: list[float], diverged_at: int,
            it: StackedIteration, s: Settings, factor: float, C: float, problem: Problem, lp: dict[str, Any],
            meta: dict[str, Any], seconds_per_iteration: float, before: tuple[float, float]) -> SolveResult:
    """Seed i's SolveResult, by algorithm.lysep_result from the stack's per-seed loop values."""
    loop = {"violations": lp["violations"][i], "worst_ratio": lp["worst"][i],
            "first_violation": None if lp["first_violation"][i] < 0 else int(lp["first_violation"][i]),
            "J_first_solve": None if len(hist_J) < 2 else float(lp["J_first"][i]), "cond_first": lp["cond_first"][i],
            "rank_first": meta["rank_first"][i], "rank_min": meta["rank_min"][i], "resumed_at": meta["resumed_at"]}
    counters = {"accepted_steps": {b: int(n[i]) for b, n in it.accepted_steps.items()},
                "unchanged_trials": int(it.unchanged_trials[i]), "trials": int(it.trials[i]),
                "final_step_sizes": {b: float(it.step_sizes(b)[i]) for b in it.blocks}}
    return lysep_result(params, params0, hist_J, hist_JS, None if diverged_at < 0 else diverged_at, problem, s,
                        factor, C, loop, it.last_cond[i], it.last_rank[i], counters, seconds_per_iteration, before,
                        engine={"W3_solve": it.w_solve, "trial_batch": it.trial_batch})
