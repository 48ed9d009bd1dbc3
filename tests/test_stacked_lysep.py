"""The stacked LySep (lysep_cli/accel/lysep.py): each seed of a stack is the CPU solver's run bit for bit —
histories of J and J_S, the returned network, status and divergence iterate, the bound check, every
diagnostic but the timing — and a seed's run does not depend on the other seeds of its stack."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from lysep_cli.accel import backend as backends
from lysep_cli.solvers.lysep.algorithm import solve_seeds
from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers.lysep import algorithm

CPU = backends.resolve("cpu-stacked")
PAPER = {"step_rule": "backtracking", "tau": 1.0e-8, "weights": "frozen", "w3_b3": "separate"}


def _data(pde: str, d: int, solution: str | None) -> tuple:
    problem = make_problem(pde, d, solution)
    Z, _ = train_test_points(60, 10, d, time=problem.time_dependent, domain=problem.domain)
    return problem, TrainingData.build(problem, Z)


def _same(a, b) -> bool:
    """Two LySep results with the same bits (NaN equal to NaN), the timing aside."""
    timing = ("seconds_per_iteration", "resumed_at_sweeps", "seconds_before_resume", "W3_solve", "trial_batch",
              "padded_stack")
    return (a.status == b.status and a.diverged_at == b.diverged_at
            and all(np.array_equal(a.history[k], b.history[k], equal_nan=True) for k in ("J", "J_S"))
            and all(np.array_equal(x, y, equal_nan=True) for (Wa, ba), (Wb, bb) in zip(a.params, b.params)
                    for x, y in ((Wa, Wb), (ba, bb)))
            and json.dumps(a.bound) == json.dumps(b.bound)
            and json.dumps({k: v for k, v in a.diagnostics.items() if k not in timing})
            == json.dumps({k: v for k, v in b.diagnostics.items() if k not in timing}))


def _orders(problem, data, params0, settings, sweeps: int, seed: int = 3, **kw) -> tuple:
    """(seed ``seed`` alone, the stack of ``params0``, the reversed stack): the runs seed-order tests compare
    (``kw``: solve_stacked's own, e.g. trial_batch)."""
    alone = solve_seeds(CPU, problem, data, [params0[seed]], settings, sweeps, **kw)[0]
    return (alone, solve_seeds(CPU, problem, data, params0, settings, sweeps, **kw),
            solve_seeds(CPU, problem, data, params0[::-1], settings, sweeps, **kw))


def _check(pde, d, solution, L, settings, sweeps, seeds=3, change=None):
    problem, data = _data(pde, d, solution)
    params0 = [network.init_params(problem.n_in, L, 6, seed) for seed in range(seeds)]
    if change:
        change(params0)
    with np.errstate(all="ignore"):
        stacked = solve_seeds(CPU, problem, data, params0, settings, sweeps)
        cpu = [algorithm.solve(problem, data, p0, settings, sweeps) for p0 in params0]
    assert [_same(s, c) for s, c in zip(stacked, cpu)] == [True] * seeds
    return cpu


@pytest.mark.parametrize("pde,d,solution,L", [("elliptic", 2, "exp-sin", 3), ("parabolic", 3, None, 3),
                                              ("hyperbolic", 3, None, 3), ("elliptic", 2, "exp-sin", 2),
                                              ("hyperbolic", 2, None, 4)])
def test_each_seed_is_the_cpu_lysep_run_bit_for_bit(pde, d, solution, L):
    cpu = _check(pde, d, solution, L, PAPER, 10)
    assert all(c.status == "ok" and len(c.history["J"]) == 11 for c in cpu)


@pytest.mark.parametrize("settings", [{**PAPER, "backoff_max": 16}, {**PAPER, "lstsq": "basic"},
                                      {"step_rule": "fixed", "tau": 1e-3}, {"step_rule": "fixed", "tau": 0.0}])
def test_the_other_step_rules_and_solves_are_the_cpus(settings):
    _check("elliptic", 2, "exp-sin", 3, settings, 25 if settings.get("backoff_max") else 6)


def test_divergence_is_decided_per_seed_within_the_sweep():
    """A fixed step that blows one seed up in its first sweep (its weights scaled 30x), a seed diverged at its
    initial network (1e200), two that go on: each the CPU's result, the others untouched."""
    def change(params0):
        params0[1] = [(W * 1e200, b) for W, b in params0[1]]
        params0[2] = [(W * 30.0, b * 30.0) for W, b in params0[2]]

    cpu = _check("hyperbolic", 3, None, 3, {"step_rule": "fixed", "tau": 1e3}, 8, seeds=4, change=change)
    assert [(c.status, c.diverged_at) for c in cpu] == [("ok", None), ("diverged", 0), ("diverged", 1), ("ok", None)]


def test_a_seed_does_not_depend_on_its_stack():
    problem, data = _data("hyperbolic", 3, None)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(10)]
    alone, ten, backwards = _orders(problem, data, params0, PAPER, 6)
    assert _same(alone, ten[3]) and _same(alone, backwards[6]) and not _same(ten[3], ten[4])


JOINT = {**PAPER, "w3_b3": "joint"}


@pytest.mark.parametrize("pde,d,solution,L,settings", [("elliptic", 2, "exp-sin", 3, JOINT),
                                                       ("hyperbolic", 3, None, 4, JOINT),
                                                       ("parabolic", 3, None, 2, {**JOINT, "lstsq": "basic"}),
                                                       ("elliptic", 2, "exp-sin", 3, {**JOINT, "rcond": 1e-10}),
                                                       ("hyperbolic", 3, None, 3,
                                                        {"step_rule": "fixed", "tau": 1e-3, "w3_b3": "joint"})])
def test_joint_w3_b3_is_the_cpus_per_seed_bit_for_bit(pde, d, solution, L, settings):
    """w3_b3: joint, one least-squares solve for [W_L, b_L] per seed (w_solve "host", NumPy's default)."""
    cpu = _check(pde, d, solution, L, settings, 6)
    assert all(c.status == "ok" for c in cpu)
    if settings.get("lstsq") == "basic":
        assert cpu[0].diagnostics["W3_system_columns"] == 6 + 1


def test_joint_w3_b3_does_not_depend_on_its_stack_and_diverges_per_seed():
    problem, data = _data("hyperbolic", 3, None)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(6)]
    params0[2] = [(W * 1e200, b) for W, b in params0[2]]
    with np.errstate(all="ignore"):
        alone, six, backwards = _orders(problem, data, params0, JOINT, 5)
    assert _same(alone, six[3]) and _same(alone, backwards[2]) and _same(six[2], backwards[3])
    assert (six[2].status, six[2].diverged_at) == ("diverged", 0) and six[3].status == "ok"
    assert not _same(six[3], solve_seeds(CPU, problem, data, [params0[3]], PAPER, 5)[0])  # joint is not separate


@pytest.mark.parametrize("L,lstsq", [(3, "min-norm"), (3, "basic"), (4, "min-norm")])
def test_joint_w3_b3_reduced_agrees_with_host_to_round_off(L, lstsq):
    """The QR of [B^T | K | Y] on the device ("reduced") against the full systems ("host"): the same
    least-squares problems, so every seed's J, J_S histories within 1e-11 relative and its weights within 1e-11
    of their largest entry over 6 sweeps (measured: at most 8.4e-13 and 6.6e-14), the same rank."""
    problem, data = _data("elliptic", 2, "exp-sin")
    params0 = [network.init_params(problem.n_in, L, 6, seed) for seed in range(3)]
    settings = {**JOINT, "lstsq": lstsq}
    host = solve_seeds(CPU, problem, data, params0, settings, 6, w_solve="host")
    red = solve_seeds(CPU, problem, data, params0, settings, 6, w_solve="reduced")
    for h, r in zip(host, red):
        assert r.status == h.status == "ok" and r.diagnostics["W3_solve"] == "reduced"
        for k in ("J", "J_S"):
            np.testing.assert_allclose(r.history[k], h.history[k], rtol=1e-11)
        for (Wh, bh), (Wr, br) in zip(h.params, r.params):
            np.testing.assert_allclose(Wr, Wh, rtol=0, atol=1e-11 * np.abs(Wh).max())
            np.testing.assert_allclose(br, bh, rtol=0, atol=1e-11 * np.abs(bh).max())
        if lstsq == "basic":
            assert r.diagnostics["W3_system_rank_last"] == h.diagnostics["W3_system_rank_last"]


#: a first step of 1e-3: at the paper's 1e-8 five sweeps move the weights too little for omega and D's terms to
#: show (measured: through's J_S within 1e-16 of frozen's); here they change the networks by up to 2e-3
THROUGH = {**PAPER, "weights": "through", "tau": 1.0e-3}


@pytest.mark.parametrize("pde,d,solution,L,settings", [("elliptic", 2, "exp-sin", 3, THROUGH),
                                                       ("parabolic", 3, None, 3, THROUGH),
                                                       ("hyperbolic", 3, None, 4, THROUGH),
                                                       ("elliptic", 2, "exp-sin", 2, THROUGH),
                                                       ("hyperbolic", 2, None, 5, {**THROUGH, "w3_b3": "joint"}),
                                                       ("parabolic", 3, None, 3,
                                                        {"step_rule": "fixed", "tau": 1e-3, "weights": "through"})])
def test_weights_through_is_the_cpus_per_seed_bit_for_bit(pde, d, solution, L, settings):
    """weights: through, omega and D differentiated through (weights.partials): each seed the CPU's run."""
    cpu = _check(pde, d, solution, L, settings, 6)
    assert all(c.status == "ok" for c in cpu)


def test_weights_through_does_not_depend_on_its_stack_and_differs_from_frozen():
    problem, data = _data("parabolic", 3, None)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(6)]
    alone, six, backwards = _orders(problem, data, params0, THROUGH, 5)
    assert _same(alone, six[3]) and _same(alone, backwards[2]) and not _same(six[3], six[4])
    frozen = solve_seeds(CPU, problem, data, [params0[3]], {**THROUGH, "weights": "frozen"}, 5)[0]
    assert not np.array_equal(alone.history["J_S"], frozen.history["J_S"])


def test_the_device_branches_run_joint_and_through_with_the_numpy_bits():
    """Through benchmarks/launch_count.py's counting namespace (not named "numpy": the engine takes its CuPy
    branches, its kernels emulated by their NumPy operations), w3_b3 joint and weights through with the W_L
    solve "reduced" (CuPy's default) give the NumPy namespace's run bit for bit."""
    path = Path(__file__).resolve().parents[1] / "benchmarks/launch_count.py"
    lc = sys.modules.get("launch_count")
    if lc is None:
        spec = importlib.util.spec_from_file_location("launch_count", path)
        lc = sys.modules["launch_count"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(lc)
    problem, data = _data("hyperbolic", 3, None)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(3)]
    settings = {**THROUGH, "w3_b3": "joint"}
    with lc.counting() as tally:
        counted = solve_seeds(lc.COUNTING, problem, data, params0, settings, 4, w_solve="reduced")
    plain = solve_seeds(CPU, problem, data, params0, settings, 4, w_solve="reduced")
    assert all(_same(a, b) for a, b in zip(counted, plain)) and tally.totals()["launch"] > 0


@pytest.mark.gpu
def test_gpu_lysep_stack_is_seed_order_independent_and_near_the_cpu():
    try:
        gpu = backends.resolve("cuda")
    except backends.DeviceUnavailable as exc:
        pytest.skip(str(exc))
    problem, data = _data("hyperbolic", 3, None)
    params0 = [network.init_params(problem.n_in, 3, 8, seed) for seed in range(10)]
    ten = solve_seeds(gpu, problem, data, params0, PAPER, 5)
    alone = solve_seeds(gpu, problem, data, [params0[3]], PAPER, 5)[0]
    k1 = solve_seeds(gpu, problem, data, params0, PAPER, 5, trial_batch=1)
    from lysep_cli.accel import compare

    # differences reported as measured numbers (max |delta|, ulps), every comparison made before asserting
    diffs = {"alone vs stack of 10": compare.results(alone, ten[3]), "k = 1 vs k = 2": compare.many(k1, ten)}
    assert all(d["differing"] == 0 for d in diffs.values()), {k: compare.line(d) for k, d in diffs.items()}
    cpu = algorithm.solve(problem, data, params0[3], PAPER, 5)
    assert np.max(np.abs(np.subtract(ten[3].history["J"], cpu.history["J"])) / np.array(cpu.history["J"])) < 1e-6


class _MemoryCheckpoint:
    """A checkpoint kept in memory (the file's round trip: JSON meta, arrays copied), due after every sweep."""

    def __init__(self):
        self.saved = None
        self.saves = 0

    def load(self):
        if self.saved is None:
            return None
        return {"meta": json.loads(json.dumps(self.saved[0])), "arrays": {k: v.copy() for k, v in self.saved[1].items()}}

    def due(self):
        return True

    def save(self, meta, arrays):
        self.saved = (meta, {k: np.array(v) for k, v in arrays.items()})
        self.saves += 1


@pytest.mark.parametrize("settings,k", [(PAPER, 1), ({**PAPER, "backoff_max": 4}, 1), ({**THROUGH, "w3_b3": "joint"}, 1),
                                        (PAPER, 2), ({**PAPER, "backoff_max": 4, "tau": 1e-3}, 3)])
def test_a_stopped_stack_resumes_from_its_checkpoint_bit_for_bit(settings, k):
    """Stopped after sweep 4 (KeyboardInterrupt from progress, as a Ctrl-C), resumed twice over: every seed's
    result is the uninterrupted stack's, a seed diverged before the stop included; with a trial batch k, resumed
    with the same k."""
    problem, data = _data("hyperbolic", 3, None)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(3)]
    params0[1] = [(W * 1e200, b) for W, b in params0[1]]
    np_state = np.seterr(all="ignore")
    whole = solve_seeds(CPU, problem, data, params0, settings, 9, trial_batch=k)
    ckpt = _MemoryCheckpoint()

    def stop_at(n):
        def progress(k, J):
            if k + 1 == n:
                raise KeyboardInterrupt
        return progress

    for n in (4, 7):
        with pytest.raises(KeyboardInterrupt):
            solve_seeds(CPU, problem, data, params0, settings, 9, progress=stop_at(n), checkpoint=ckpt,
                          trial_batch=k)
    resumed = solve_seeds(CPU, problem, data, params0, settings, 9, checkpoint=ckpt, trial_batch=k)
    np.seterr(**np_state)
    assert all(_same(r, w) for r, w in zip(resumed, whole))
    assert resumed[0].diagnostics["resumed_at_sweeps"] == [4, 7] and ckpt.saves == 4 + 3 + 1


def _trial_evaluations(monkeypatch) -> list:
    """A list that counts the trial evaluations (accel/trials.py: a batch of k trials, or one) of the runs after."""
    from lysep_cli.accel import trials

    calls: list = []
    evaluate = trials.BlockTrials.evaluate_rows

    def counted(self, i, steps, dev, trying):
        calls.append(len(steps))
        return evaluate(self, i, steps, dev, trying)

    monkeypatch.setattr(trials.BlockTrials, "evaluate_rows", counted)
    return calls


def _scaled(scales):
    def change(params0):
        for i, c in scales.items():
            params0[i] = [(W * c, b * c) for W, b in params0[i]]
    return change


#: L = 2..5; back-off; w3_b3 joint and weights through; seeds that backtrack far (weights 1e6x: ~100 trials a
#: sweep), that leave their first sweep (1e30x: J_S not finite after a closed-form block) and that diverged at
#: their initial network (1e200x)
BATCHED = [("elliptic", 2, "exp-sin", 2, PAPER, {1: 1e6}), ("elliptic", 2, "exp-sin", 3, PAPER, {}),
           ("hyperbolic", 3, None, 3, {**PAPER, "tau": 1e-3}, {1: 1e6, 2: 1e30, 3: 1e200}),
           ("parabolic", 3, None, 4, {**PAPER, "backoff_max": 4, "tau": 1e-3}, {1: 1e6}),
           ("hyperbolic", 2, None, 5, {**THROUGH, "w3_b3": "joint"}, {2: 1e200}),
           ("elliptic", 2, "exp-sin", 3, {**JOINT, "backoff_max": 16, "tau": 1e-3}, {0: 1e6})]


@pytest.mark.parametrize("pde,d,solution,L,settings,scales", BATCHED)
def test_batched_trials_give_each_seed_the_unbatched_run_bit_for_bit(pde, d, solution, L, settings, scales,
                                                                     monkeypatch):
    """trial_batch k = 2, 3 (a block's first k backtracking trials evaluated at once) against k = 1: every seed's
    histories, network, status and diagnostics (trials, unchanged_trials, accepted steps, step sizes) the same
    bits, with fewer evaluations; k = 1 is the CPU engine's run (test_each_seed_is_the_cpu_lysep_run_bit_for_bit)."""
    problem, data = _data(pde, d, solution)
    params0 = [network.init_params(problem.n_in, L, 6, seed) for seed in range(4)]
    _scaled(scales)(params0)
    calls = _trial_evaluations(monkeypatch)
    runs = {}
    with np.errstate(all="ignore"):
        for k in (1, 2, 3):
            calls.clear()
            runs[k] = (solve_seeds(CPU, problem, data, params0, settings, 6, trial_batch=k), len(calls), max(calls))
    for k in (2, 3):
        assert all(_same(a, b) for a, b in zip(runs[1][0], runs[k][0]))
        assert runs[k][0][0].diagnostics["trial_batch"] == k and runs[k][2] == k
    assert runs[1][0][0].diagnostics["trial_batch"] == 1 and runs[1][2] == 1
    assert runs[3][1] <= runs[2][1] < runs[1][1]  # fewer evaluations: some block made 2 or more trials
    statuses = [(r.status, r.diverged_at) for r in runs[1][0]]
    if 2 in scales and scales[2] == 1e30:
        assert statuses[2] == ("diverged", 1) and statuses[3] == ("diverged", 0) and statuses[0] == ("ok", None)
        assert runs[1][0][1].diagnostics["trials"] > 200  # the seed that backtracks far


def test_batched_trials_do_not_make_a_seed_depend_on_its_stack():
    problem, data = _data("hyperbolic", 3, None)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(6)]
    _scaled({1: 1e6, 4: 1e30})(params0)
    with np.errstate(all="ignore"):
        alone, six, backwards = _orders(problem, data, params0, {**PAPER, "tau": 1e-3}, 5, trial_batch=2)
        unbatched = solve_seeds(CPU, problem, data, params0, {**PAPER, "tau": 1e-3}, 5)
    assert _same(alone, six[3]) and _same(alone, backwards[2]) and _same(six[1], backwards[4])
    assert all(_same(a, b) for a, b in zip(six, unbatched))


def test_a_bad_trial_batch_is_refused():
    problem, data = _data("elliptic", 2, "exp-sin")
    params0 = [network.init_params(problem.n_in, 3, 5, 0)]
    for k in (0, 1.5):
        with pytest.raises(ValueError, match="trial_batch"):
            solve_seeds(CPU, problem, data, params0, PAPER, 1, trial_batch=k)
