"""A process's footprint (benchmarks/logs/engine-2026-11.md, "Peak memory"): what start-up imports, how the
ball's Halton candidates are drawn, and what a rejected backtracking trial leaves behind.  None of it changes a
bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lysep_cli.numerics import sampling
from lysep_cli.numerics.sampling import halton_ball, train_test_points
from lysep_cli.solvers.steps import Backtracking

ROOT = Path(__file__).resolve().parents[1]

#: the modules start-up must not load: SymPy (user problems) and scipy.stats (Halton points)
HEAVY = ("sympy", "scipy.stats")


def _loaded_after(code: str) -> dict[str, bool]:
    """Which of :data:`HEAVY` a fresh interpreter has loaded after running ``code`` (this checkout's
    package first on the path, so sys.modules starts clean and the code under test is this one)."""
    probe = f"import sys, json\n{code}\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_start_up_imports_neither_sympy_nor_scipy_stats():
    """The CLI and the run path (runner -> solvers -> data set -> user problems) import them lazily."""
    loaded = _loaded_after("import lysep_cli.cli, lysep_cli.execution.runner, lysep_cli.solvers.lysep.algorithm")
    assert loaded == {m: False for m in HEAVY}


def test_building_a_data_set_imports_scipy_stats_and_not_sympy():
    """The probe sees an import when there is one: the paper's problems need Halton points, not SymPy."""
    loaded = _loaded_after("from lysep_cli.numerics.sampling import halton_ball\nhalton_ball(5, 2, False)")
    assert loaded == {"sympy": False, "scipy.stats": True}


# ------------------------------------------------------------------------------------------------
# The ball's Halton candidates in bounded draws.


def _one_draw(n: int, d: int, time: bool, candidates: int) -> np.ndarray:
    """The first ``n`` ball points from one draw of ``candidates`` Halton elements (the construction
    before the draws were bounded); (n_in, n)."""
    from scipy.stats import qmc

    engine = qmc.Halton(d=d + int(time), scramble=False)
    engine.fast_forward(1)
    u = engine.random(candidates)
    x = 2.0 * u[:, int(time):] - 1.0
    keep = np.sum(x * x, axis=1) <= 1.0
    pts = np.concatenate([u[keep, :1], x[keep]], axis=1) if time else x[keep]
    assert len(pts) >= n, "too few candidates for the reference"
    return pts[:n].T.copy()


@pytest.mark.parametrize("n,d,time,max_draw", [(300, 2, False, 7), (200, 5, True, 100), (40, 10, False, 1000),
                                               (40, 10, False, 1)])
def test_bounded_draws_give_one_draws_points_bit_for_bit(monkeypatch, n, d, time, max_draw):
    reference = _one_draw(n, d, time, candidates=int(n / sampling.ball_rate(d) * 2) + 64)
    monkeypatch.setattr(sampling, "MAX_DRAW", max_draw)
    draws: list[int] = []
    make = sampling.halton_engine

    def counting_engine(dim: int, skip: int = 1) -> Any:
        engine = make(dim, skip)
        inner = engine.random
        engine.random = lambda k, **kw: (draws.append(k), inner(k, **kw))[1]  # type: ignore[method-assign]
        return engine

    monkeypatch.setattr(sampling, "halton_engine", counting_engine)
    got = halton_ball(n, d, time)
    assert len(draws) > 1 and max(draws) <= max_draw  # the bound acted
    assert got.shape == reference.shape and got.dtype == reference.dtype
    assert got.tobytes() == reference.tobytes()


def test_the_training_and_test_sets_do_not_depend_on_the_bound(monkeypatch):
    """Parabolic-5d's layout (t first) at a reduced size, drawn 2^16 and 61 candidates at a time."""
    default = train_test_points(120, 60, 5, True)
    monkeypatch.setattr(sampling, "MAX_DRAW", 61)
    small = train_test_points(120, 60, 5, True)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(default, small))


# ------------------------------------------------------------------------------------------------
# A rejected backtracking trial's arrays are released before the next trial is built.


class Payload:
    """Stands for a trial's (state, terms): something a weak reference can follow."""

    def __init__(self, t: float):
        self.t = t


def test_backtracking_drops_a_rejected_payload_before_the_next_trial():
    rule = Backtracking(tau0=1.0, grow=2.0, shrink=0.5, armijo=1e-4, max_tries=10)
    rejected: list[weakref.ref] = []
    alive_at_trial: list[int] = []

    def trial(t: float) -> tuple[float, Any]:
        alive_at_trial.append(sum(r() is not None for r in rejected))
        payload = Payload(t)
        if t > 0.2:  # rejected: a loss above J0
            rejected.append(weakref.ref(payload))
            return 2.0, payload
        return 0.5, payload

    J, payload, t = rule.step(1.0, 1.0, trial)
    assert (J, t) == (0.5, 0.125) and payload.t == 0.125
    assert len(rejected) == 3 and alive_at_trial == [0, 0, 0, 0]


def test_lysep_keeps_no_rejected_trial_alive(monkeypatch):
    """A short LySep run (elliptic-2d, M = 6, N = 40; first trial step 1, so the backtracking rejects
    trials from the start): when a trial starts, no earlier rejected trial's state or terms is still alive
    (no reference left, and no cycle waiting for the garbage collector)."""
    from lysep_cli.numerics.problems import make_problem
    from lysep_cli.numerics.network import init_params
    from lysep_cli.solvers.base import TrainingData
    from lysep_cli.accel import trials
    from lysep_cli.solvers.lysep.algorithm import LySepIteration, Settings
    from lysep_cli.solvers.lysep.loss import LySepData

    P = make_problem("elliptic", 2)
    Z, _ = train_test_points(40, 4, 2, False)
    td = TrainingData.build(P, Z)
    it = LySepIteration(init_params(P.n_in, 3, 6, 0), LySepData.build(Z, td.coef, td.Y), Settings(tau=1.0))
    watched: list[tuple[weakref.ref, weakref.ref]] = []
    leaks: list[int] = []  # per evaluated trial: the earlier rejected trials of its step still alive when it starts
    steps = [0]
    step, evaluate_rows = Backtracking.step_seeds, trials.BlockTrials.evaluate_rows

    def watching_step(self: Backtracking, J0: Any, g2: Any, trial: Any, accept: Any, active: Any = None) -> Any:
        watched.clear()
        steps[0] += 1

        def watched_trial(t: Any, trying: Any) -> tuple[Any, Any]:
            J, payload = trial(t, trying)
            st2, terms2 = payload
            if st2 is not it.st:  # not a step that changed no bit (that payload is the current state)
                watched.append((weakref.ref(st2), weakref.ref(terms2)))
            return J, payload

        return step(self, J0, g2, watched_trial, accept, active)

    def watching_evaluate(self: Any, *args: Any) -> Any:  # where a trial's state is made
        leaks.append(sum(s() is not None or e() is not None for s, e in watched))
        return evaluate_rows(self, *args)

    monkeypatch.setattr(Backtracking, "step_seeds", watching_step)
    monkeypatch.setattr(trials.BlockTrials, "evaluate_rows", watching_evaluate)
    for _ in range(3):
        it.sweep()
    assert len(leaks) > steps[0], "no step needed a second trial: nothing was checked"
    assert max(leaks) == 0
