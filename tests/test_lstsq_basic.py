"""Matlab's backslash for the least-squares solves (issue 25 item 2): the basic solution of
lysep_cli/numerics/lstsq.py, and the setting ``lstsq: basic | min-norm`` of LySep, rfls and rfm.

The default (min-norm) must leave every run and every record as it was; basic is another spec.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.lstsq import basic_lstsq, basic_lstsq_tol, basic_rank
from lysep_cli.numerics.network import flatten, init_params
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import solver_def
from lysep_cli.solvers.settings import SettingsError

from foundation_helpers import LYSEP, experiment_yaml, experiments_yaml, write_tiny

cli = CliRunner()
LYSEP_BASIC = LYSEP.replace("}", ", lstsq: basic}")


def rank_deficient(rng: np.random.Generator, N: int = 60, n: int = 9, r: int = 5) -> np.ndarray:
    """An (N, n) matrix of rank r, well conditioned on its range."""
    return rng.standard_normal((N, r)) @ rng.standard_normal((r, n))


# ------------------------------------------------------------------------------------------------
# The basic solution itself.


def test_full_rank_tall_system_gives_the_least_squares_solution():
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((80, 12)), rng.standard_normal(80)
    x, r = basic_lstsq(A, b)
    assert r == 12 and x.shape == (12,)
    np.testing.assert_allclose(x, np.linalg.lstsq(A, b, rcond=None)[0], rtol=0, atol=1e-12)


def test_rank_deficient_system_basic_solution():
    """rank r nonzeros, the minimum-norm residual, a norm no smaller than the minimum norm."""
    rng = np.random.default_rng(1)
    A, b = rank_deficient(rng), rng.standard_normal(60)
    x, r = basic_lstsq(A, b)
    x_mn = np.linalg.lstsq(A, b, rcond=None)[0]
    assert r == 5 and np.count_nonzero(x) == 5
    assert np.linalg.norm(A @ x - b) == pytest.approx(np.linalg.norm(A @ x_mn - b), rel=1e-10)
    assert np.linalg.norm(x) >= np.linalg.norm(x_mn) * (1 - 1e-12)
    assert np.linalg.norm(x - x_mn) > 1e-3  # a different solution, not the minimum-norm one
    # the nonzeros are the first r pivot columns, solved from R(1:r, 1:r)
    _, R, perm = scipy.linalg.qr(A, mode="economic", pivoting=True)
    assert set(np.flatnonzero(x)) == set(perm[:5])


def test_several_right_hand_sides_are_solved_column_by_column():
    rng = np.random.default_rng(2)
    for A in (rng.standard_normal((40, 7)), rank_deficient(rng, 40, 7, 4)):
        B = rng.standard_normal((40, 3))
        X, r = basic_lstsq(A, B)
        assert X.shape == (7, 3)
        for k in range(3):
            xk, rk = basic_lstsq(A, B[:, k])
            assert rk == r
            np.testing.assert_allclose(X[:, k], xk, rtol=0, atol=1e-13)
            assert np.count_nonzero(X[:, k]) == r


def test_matlabs_rank_rule_and_degenerate_input():
    # tol = max(size(A)) * eps * |R(1,1)|: a column 1e-20 times another is below it, 1e-10 is not
    rng = np.random.default_rng(3)
    a = rng.standard_normal(30)
    for scale, want in ((1e-20, 1), (1e-10, 2)):
        A = np.column_stack([a, scale * rng.standard_normal(30)])
        x, r, tol = basic_lstsq_tol(A, rng.standard_normal(30))
        assert r == want and tol == pytest.approx(30 * np.finfo(float).eps * np.linalg.norm(a))
    R = np.diag([2.0, 1e-3, 0.0])
    assert basic_rank(R, (10, 3)) == (2, 10 * np.finfo(float).eps * 2.0)
    x, r = basic_lstsq(np.zeros((5, 3)), np.ones(5))
    assert r == 0 and np.array_equal(x, np.zeros(3))
    with pytest.raises(ValueError):
        basic_lstsq(np.ones((5, 3)), np.ones(4))


# ------------------------------------------------------------------------------------------------
# The setting: validated, left out of the records while at its default.


@pytest.mark.parametrize("solver", ["lysep", "rfls", "rfm"])
def test_setting_validated_and_left_out_of_the_record_at_its_default(solver):
    S = solver_def(solver).Settings
    assert "lstsq" not in S().to_dict() and "lstsq" not in S.from_mapping({"lstsq": "min-norm"}).to_dict()
    assert S.from_mapping({"lstsq": "min-norm"}) == S()
    basic = S.from_mapping({"lstsq": "basic"})
    assert basic.to_dict()["lstsq"] == "basic" and S.from_mapping(basic.to_dict()) == basic
    assert S().replace(lstsq="basic") == basic and basic.replace(lstsq="min-norm").to_dict() == S().to_dict()
    with pytest.raises(SettingsError) as info:
        S.from_mapping({"lstsq": "foo"})
    assert info.value.field == "lstsq" and "'min-norm' | 'basic'" in str(info.value)
    assert "\n" not in str(info.value)


def test_default_settings_match_the_archived_records_settings():
    """A record made before the setting existed holds exactly the default's settings."""
    assert solver_def("rfls").Settings().to_dict() == {"rcond": "auto"}
    assert set(solver_def("lysep").Settings().to_dict()) == {
        "step_rule", "tau", "grow", "shrink", "armijo", "max_tries", "weights", "w3_b3", "rcond"}


def test_bad_value_is_a_one_line_error_exit_2(tmp_path):
    config = write_tiny(tmp_path, experiments_yaml(experiment_yaml("elliptic-2d", {"rfls": "{lstsq: foo}"})))
    result = cli.invoke(app, ["run", "elliptic-2d", "--solver", "rfls", "--config", str(config),
                              "--results", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and "solver 'rfls'" in err and "field 'lstsq'" in err and "'foo'" in err
    assert not (tmp_path / "results").exists()


# ------------------------------------------------------------------------------------------------
# The solvers.


@pytest.fixture(scope="module")
def problem_data():
    problem = make_problem("elliptic", 2, "exp-sin")
    Z, _ = train_test_points(120, 4, 2, False)
    return problem, TrainingData.build(problem, Z)


def test_rfls_default_is_the_svd_solve_unchanged(problem_data):
    problem, data = problem_data
    params0 = init_params(problem.n_in, 3, 40, seed=1)
    default = solver_def("rfls").solve(problem, data, params0, {}, 1)
    explicit = solver_def("rfls").solve(problem, data, params0, {"lstsq": "min-norm"}, 1)
    assert default.history == explicit.history and default.diagnostics == explicit.diagnostics
    np.testing.assert_array_equal(flatten(default.params), flatten(explicit.params))
    assert "lstsq" not in default.diagnostics and default.diagnostics["rcond"] > 0


def test_rfls_basic_is_matlabs_backslash_on_the_output_layer_system(problem_data):
    from lysep_cli.numerics.jacobian import output_layer_system

    problem, data = problem_data
    params0 = init_params(problem.n_in, 3, 40, seed=1)
    res = solver_def("rfls").solve(problem, data, params0, {"lstsq": "basic"}, 1)
    mn = solver_def("rfls").solve(problem, data, params0, {}, 1)
    A, _ = output_layer_system(params0, data.Z, data.coef)
    x, r = basic_lstsq(A, data.Y)
    WL, bL = res.params[-1]
    np.testing.assert_array_equal(np.concatenate([WL.ravel(), bL]), x)
    d = res.diagnostics
    assert d["lstsq"] == "basic" and d["rank"] == r and d["rcond"] is None and d["lstsq_tol"] > 0
    assert np.count_nonzero(x) == r and d["s_max"] == pytest.approx(mn.diagnostics["s_max"], rel=1e-10)
    assert d["cond"] == pytest.approx(mn.diagnostics["cond"], rel=0.5)  # s_min: round-off level, two SVDs
    assert res.status == "ok" and res.history["J"][-1] < 1e-2 * res.history["J"][0]


def test_rfm_passes_the_setting_on(problem_data):
    problem, data = problem_data
    params0 = init_params(problem.n_in, 2, 30, seed=0)
    res = solver_def("rfm").solve(problem, data, params0, {"sigma": 2.0, "lstsq": "basic"}, 1)
    assert res.diagnostics["lstsq"] == "basic" and res.diagnostics["sigma"] == 2.0


def test_lysep_default_unchanged_and_basic_records_the_rank(problem_data):
    problem, data = problem_data
    params0 = init_params(problem.n_in, 3, 8, seed=0)
    lysep = solver_def("lysep")
    default = lysep.solve(problem, data, params0, {}, 6)
    explicit = lysep.solve(problem, data, params0, {"lstsq": "min-norm"}, 6)
    assert default.history == explicit.history
    assert not any(k.startswith("W3_system_rank") for k in default.diagnostics)
    for joint in ("separate", "joint"):
        basic = lysep.solve(problem, data, params0, {"lstsq": "basic", "w3_b3": joint}, 6)
        d = basic.diagnostics
        assert basic.status == "ok" and len(basic.history["J"]) == 7
        assert d["W3_system_columns"] == 8 + (joint == "joint")
        assert 1 <= d["W3_system_rank_min"] <= d["W3_system_rank_last"] <= d["W3_system_columns"]
        assert d["W3_system_rank_first"] >= d["W3_system_rank_min"]
        assert basic.history["J"][-1] < basic.history["J"][0]


def test_lysep_basic_solve_is_backslash_of_the_stacked_system(problem_data):
    """With a full-rank stacked system basic and min-norm agree to round-off, sweep for sweep."""
    problem, data = problem_data
    params0 = init_params(problem.n_in, 3, 6, seed=4)
    lysep = solver_def("lysep")
    basic = lysep.solve(problem, data, params0, {"lstsq": "basic"}, 3)
    mn = lysep.solve(problem, data, params0, {}, 3)
    if basic.diagnostics["W3_system_rank_min"] == 6:
        np.testing.assert_allclose(basic.history["J"], mn.history["J"], rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# End to end: records carry the setting and are another spec than min-norm's.


def test_lysep_and_rfls_basic_run_end_to_end_as_another_spec(tmp_path):
    results = tmp_path / "results"
    basic = write_tiny(tmp_path, experiments_yaml(experiment_yaml(
        "elliptic-2d", {"lysep": LYSEP_BASIC, "rfls": "{rcond: auto, lstsq: basic}"}, seeds=[0])))
    r = cli.invoke(app, ["run", "elliptic-2d", "--solver", "lysep,rfls", "--config", str(basic),
                         "--results", str(results)])
    assert r.exit_code == 0, r.output
    lys = json.loads((results / "elliptic-2d/lysep/L3-M6/seed-0.json").read_text())
    rf = json.loads((results / "elliptic-2d/rfls/L3-M6/seed-0.json").read_text())
    assert lys["settings"]["lstsq"] == "basic" and rf["settings"] == {"rcond": "auto", "lstsq": "basic"}
    assert lys["status"] == rf["status"] == "ok" and lys["diagnostics"]["W3_system_rank_last"] >= 1
    assert rf["diagnostics"]["rank"] >= 1 and rf["final"]["l2"] is not None
    v = cli.invoke(app, ["verify", "--all", "--config", str(basic), "--results", str(results)])
    assert v.exit_code == 0 and "2 of 2 run(s) reproduce the archive" in v.output, v.output
    # the same runs asked for with the default: records of another spec, nothing run without --force
    (tmp_path / "default").mkdir()
    default = write_tiny(tmp_path / "default", experiments_yaml(
        experiment_yaml("elliptic-2d", {"lysep": LYSEP, "rfls": "{rcond: auto}"}, seeds=[0])))
    r = cli.invoke(app, ["run", "elliptic-2d", "--solver", "rfls", "--config", str(default),
                         "--results", str(results)])
    assert r.exit_code == 2 and "lstsq='basic'" in r.stderr, r.output
