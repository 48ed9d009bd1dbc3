"""The solver contract, checked for every registered solver (like scikit-learn's ``check_estimator``).

A new solver in ``lysep_cli.solvers.SOLVERS`` is picked up here: typed settings that reject bad input,
a :class:`SolveResult` with the promised shapes and history length, determinism, progress reports,
the same meaning of ``diverged_at`` everywhere.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing

import numpy as np
import pytest

from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.metrics import loss
from lysep_cli.numerics.network import flatten, init_params
from lysep_cli.numerics.polynomial import is_polynomial
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import SOLVERS, solver_def
from lysep_cli.solvers.base import SolveResult
from lysep_cli.solvers.settings import SettingsError, SolverSettings
from lysep_cli.specs import default_config, load_specs

NAMES = list(SOLVERS)
PROJECT = load_specs(default_config())["elliptic-2d"]  # every registered solver is configured there
ITERATIONS = 4
#: settings that make a solver diverge after a few iterations (where one setting can)
DIVERGING = {"pinn": {"lr": 1.0e3}}


@pytest.fixture(scope="module")
def problem_data():
    problem = make_problem("elliptic", 2, "exp-sin")
    Z, _ = train_test_points(40, 4, 2, False)
    return problem, TrainingData.build(problem, Z)


def settings_of(name: str) -> SolverSettings:
    return PROJECT.solvers[name]


def depth(name: str) -> int:
    """A depth the solver supports (LySep: 3 only)."""
    s = settings_of(name)
    return next(L for L in (2, 3, 4) if s.size_error(L, 5) is None)


def solve(name, problem_data, settings=None, iterations=ITERATIONS, progress=None, data=None, L=None):
    problem, train = problem_data
    params0 = init_params(problem.n_in, L or depth(name), 5, seed=2)
    with np.errstate(all="ignore"):
        res = solver_def(name).solve(problem, data or train, params0,
                                     settings_of(name) if settings is None else settings, iterations, progress)
    return params0, res


def check_history(res: SolveResult) -> None:
    n = len(res.history["J"])
    for key, series in res.history.items():
        assert series is None or len(series) == n, key
    assert 0 <= res.iterations_done <= n - 1
    if res.status == "diverged":
        # One meaning everywhere: the iterate at which a non-finite value was first met is the last entry.
        assert res.diverged_at == n - 1 == res.iterations_done and res.message
        assert all(np.isfinite(res.history["J"][:-1]))
    else:
        assert res.status == "ok" and res.diverged_at is None


def test_every_registered_solver_is_configured_in_the_project():
    assert set(NAMES) <= set(PROJECT.solvers)


@pytest.mark.parametrize("name", NAMES)
def test_settings_are_a_frozen_validated_dataclass(name):
    S = solver_def(name).Settings
    s = settings_of(name)
    assert issubclass(S, SolverSettings) and dataclasses.is_dataclass(S) and isinstance(s, S)
    for f in dataclasses.fields(S):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(s, f.name, None)
    assert S.from_mapping(s.to_dict()) == s and S.coerce(s) is s
    json.dumps(s.to_dict())


@pytest.mark.parametrize("name", NAMES)
def test_settings_reject_bad_input_naming_the_field(name):
    S = solver_def(name).Settings
    base = settings_of(name).to_dict()
    with pytest.raises(SettingsError) as info:
        S.from_mapping({**base, "no_such_setting": 1})
    assert info.value.field == "no_such_setting"
    hints = typing.get_type_hints(S)
    for f in dataclasses.fields(S):
        arms = typing.get_args(hints[f.name]) or (hints[f.name],)
        numeric = any(a in (int, float) for a in arms)
        bad = ["abc", [1], True] if numeric else [12345, "not-a-choice"]
        low = f.metadata.get("low")
        if low is not None:
            bad.append(low - 1 if not f.metadata.get("low_open") else low)
        for value in bad:
            with pytest.raises(SettingsError) as info:
                S.from_mapping({**base, f.name: value})
            assert info.value.field == f.name and "\n" not in str(info.value), (f.name, value)


@pytest.mark.parametrize("name", NAMES)
def test_result_shapes_history_and_progress(name, problem_data):
    calls = []
    params0, res = solve(name, problem_data, progress=lambda k, J: calls.append((k, J)))
    assert isinstance(res, SolveResult) and res.status == "ok"
    check_history(res)
    assert len(res.history["J"]) == settings_of(name).history_length(ITERATIONS)
    if not is_polynomial(res.params):  # poly returns its polynomial [(E, c)], not a network
        assert [(W.shape, b.shape) for W, b in res.params] == [(W.shape, b.shape) for W, b in params0]
    np.testing.assert_array_equal(flatten(params0), flatten(init_params(2, depth(name), 5, seed=2)))  # untouched
    problem, train = problem_data
    assert res.history["J"][-1] == pytest.approx(loss(res.params, train.Z, train.coef, train.Y), rel=1e-9)
    assert (res.J_S is None) == (res.history.get("J_S") is None)
    if res.J_S is not None:
        assert res.J_S == res.history["J_S"][-1]
    ks = [k for k, _ in calls]
    assert ks and ks == sorted(set(ks)) and ks[0] == 0 and ks[-1] < len(res.history["J"]) - 1
    # call k reports history J[k + 1]: what `lysep verify`'s ties recompute a run's first iterations by
    assert all(J == res.history["J"][k + 1] for k, J in calls)
    json.dumps({"bound": res.bound, "diagnostics": res.diagnostics}, default=float)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_and_mapping_settings_equal_typed(name, problem_data):
    _, a = solve(name, problem_data)
    _, b = solve(name, problem_data, settings=settings_of(name).to_dict())
    assert a.history == b.history and a.status == b.status
    np.testing.assert_array_equal(flatten(a.params), flatten(b.params))


@pytest.mark.parametrize("name", NAMES)
def test_settings_checked_when_solving_too(name, problem_data):
    with pytest.raises(SettingsError):
        solve(name, problem_data, settings={**settings_of(name).to_dict(), "bogus": 1})


@pytest.mark.parametrize("name", NAMES)
def test_non_finite_data_diverges_at_the_start(name, problem_data):
    problem, train = problem_data
    bad = TrainingData(train.Z, train.coef, train.Y * np.nan)
    _, res = solve(name, problem_data, data=bad)
    assert res.status == "diverged" and res.diverged_at == 0 and len(res.history["J"]) == 1
    assert math.isnan(res.history["J"][0])
    check_history(res)


@pytest.mark.parametrize("name", sorted(DIVERGING))
def test_divergence_during_the_run(name, problem_data):
    _, res = solve(name, problem_data, settings=settings_of(name).replace(**DIVERGING[name]), iterations=40)
    assert res.status == "diverged" and 1 <= res.diverged_at <= 40
    assert not np.isfinite(res.history["J"][-1])
    check_history(res)


@pytest.mark.parametrize("name", NAMES)
def test_unsupported_sizes_are_declared(name):
    s = settings_of(name)
    reasons = {L: s.size_error(L, 5) for L in (2, 3, 4)}
    assert any(r is None for r in reasons.values())
    assert all(r is None or isinstance(r, str) and "\n" not in r for r in reasons.values())


class _MemoryCheckpoint:
    """A checkpoint kept in memory (the Checkpoint protocol of lysep_cli/solvers/base.py), due at every
    iteration; ``stop_after`` saves makes the run stop there, as a kill would."""

    def __init__(self, stop_after: int | None = None):
        self.saved: tuple | None = None
        self.saves = 0
        self.stop_after = stop_after

    def load(self):
        if self.saved is None:
            return None
        meta, arrays = self.saved
        return {"meta": json.loads(json.dumps(meta)), "arrays": {k: np.array(v) for k, v in arrays.items()}}

    def due(self) -> bool:
        return True

    def save(self, meta, arrays) -> None:
        self.saved = (json.loads(json.dumps(meta)), {k: np.array(v) for k, v in arrays.items()})
        self.saves += 1
        if self.stop_after is not None and self.saves >= self.stop_after:
            raise KeyboardInterrupt


@pytest.mark.parametrize("name", NAMES)
def test_declared_capabilities_match_the_solve_function(name):
    import inspect

    d = solver_def(name)
    takes = "checkpoint" in inspect.signature(d.solve).parameters
    assert d.capabilities.checkpoint == takes, name


@pytest.mark.parametrize("name", [n for n in NAMES if solver_def(n).capabilities.checkpoint])
def test_a_solver_that_declares_checkpoints_resumes_to_the_uninterrupted_run(name, problem_data):
    problem, train = problem_data
    params0 = init_params(problem.n_in, depth(name), 5, seed=2)
    run = lambda ckpt: solver_def(name).solve(problem, train, params0, settings_of(name), 6, None,  # noqa: E731
                                              checkpoint=ckpt)
    whole = run(None)
    ckpt = _MemoryCheckpoint(stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        run(ckpt)
    ckpt.stop_after = None
    resumed = run(ckpt)
    assert resumed.history == whole.history
    for (Wa, ba), (Wb, bb) in zip(whole.params, resumed.params):
        assert np.array_equal(Wa, Wb) and np.array_equal(ba, bb)


STACKING = [n for n in NAMES if solver_def(n).capabilities.stacks]


@pytest.mark.parametrize("name", NAMES)
def test_declared_stacking_matches_the_stacked_solve(name):
    """``stacks`` names a solve of the registry's stacked signature (``checkpoint=`` exactly where the solver
    declares checkpoints); a solver that stacks is not also one left to the host."""
    import inspect

    from lysep_cli.solvers import stacked_solver, stacks

    caps = solver_def(name).capabilities
    if not stacks(name):
        with pytest.raises(ValueError, match="does not stack"):
            stacked_solver(name)
        return
    assert not caps.on_host
    params = list(inspect.signature(stacked_solver(name)).parameters)
    assert params[1:7] == ["problem", "data", "params0", "settings", "iterations", "progress"]  # [0]: the backend
    assert ("checkpoint" in params) == caps.checkpoint


@pytest.mark.parametrize("name", STACKING)
def test_each_seed_of_a_stack_of_10_and_of_1_is_its_run_alone(name, problem_data):
    """A solver that stacks, on the stacked engine's NumPy backend: every seed of a stack of S = 10, and a
    stack of S = 1, give the solver's run of that seed alone, bit for bit (history and network)."""
    from lysep_cli.accel.backend import resolve
    from lysep_cli.solvers import stacked_solver

    problem, train = problem_data
    params0 = [init_params(problem.n_in, depth(name), 5, seed=s) for s in range(10)]
    with np.errstate(all="ignore"):
        ten = stacked_solver(name)(resolve("cpu-stacked"), problem, train, params0, settings_of(name), ITERATIONS)
        one = stacked_solver(name)(resolve("cpu-stacked"), problem, train, params0[7:8], settings_of(name), ITERATIONS)
        alone = [solver_def(name).solve(problem, train, p, settings_of(name), ITERATIONS) for p in params0]
    for run, want in zip(ten + one, alone + alone[7:8]):
        assert run.history.keys() == want.history.keys() and run.status == want.status
        assert all(np.array_equal(run.history[k], want.history[k], equal_nan=True) for k in want.history)
        for (Wa, ba), (Wb, bb) in zip(run.params, want.params):
            assert np.array_equal(Wa, Wb) and np.array_equal(ba, bb)


@pytest.mark.parametrize("name", [n for n in NAMES if not solver_def(n).capabilities.seed_free])
def test_first_values_are_the_runs_first_history_entries(name, problem_data):
    """The registry's ``first_values`` (what ``lysep verify`` ties a record to its seed by) is each solver's
    J[0] (and LySep's J_S[0]) from the same seeded network, bit for bit; another seed's differ.  (A seed-free
    solver, poly, has nothing to tie.)"""
    from lysep_cli.solvers import first_values

    problem, train = problem_data
    with np.errstate(all="ignore"):
        params0, res = solve(name, problem_data)
        first = first_values(name, train, params0, settings_of(name))
        other = first_values(name, train, init_params(problem.n_in, depth(name), 5, seed=3), settings_of(name))
    assert set(first) == {"J"} | ({"J_S"} if res.history.get("J_S") else set())
    assert all(first[k] == res.history[k][0] for k in first)
    assert other["J"] != first["J"]
