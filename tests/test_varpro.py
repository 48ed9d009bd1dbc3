"""Variable projection (lysep_cli/solvers/varpro.py): the reduced gradient, Kaufman's Jacobian, the output
solve it shares with rfls, and the three ``hidden`` methods on a tiny problem (docs/varpro.md)."""

from __future__ import annotations

import numpy as np
import pytest

from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.jacobian import output_layer_system
from lysep_cli.numerics.network import flatten, init_params, pinn_loss_and_grad
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import rfls, solver_def
from lysep_cli.solvers.settings import SettingsError
from lysep_cli.solvers.varpro import SETTINGS, VarPro, solve

METHODS = ("varpro-lm", "varpro-lbfgs", "varpro-gd")


@pytest.fixture(scope="module")
def tiny():
    problem = make_problem("elliptic", 2, "exp-sin")
    Z, _ = train_test_points(40, 4, 2, False)
    return problem, TrainingData.build(problem, Z), init_params(2, 3, 5, seed=2)


def _fd(fun, theta: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of ``fun`` (a scalar or a vector) along every coordinate of theta, as columns."""
    cols = [(fun(theta + h * e) - fun(theta - h * e)) / (2 * h) for e in np.eye(theta.size)]
    return np.array(cols).T


def test_reduced_gradient_is_the_pinn_gradient_at_w_star_and_matches_finite_differences(tiny):
    _, data, params0 = tiny
    vp = VarPro(data, params0, "auto")
    theta = flatten(params0[:-1])
    p = vp.project(theta)
    g = vp.gradient(p)
    J, grads = pinn_loss_and_grad(p.params, data.Z, data.coef, data.Y)
    assert J == pytest.approx(p.F, rel=1e-12)
    np.testing.assert_allclose(g, flatten(grads[:-1]), rtol=1e-9, atol=0)
    # at w* the output-layer block of the PINN gradient vanishes: w* minimises J for these hidden layers
    assert np.linalg.norm(flatten(grads[-1:])) < 1e-8 * np.linalg.norm(g)
    fd = _fd(lambda t: vp.project(t).F, theta)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9 * np.abs(g).max())


def test_kaufman_jacobian_is_the_reduced_residuals_jacobian_where_the_residual_vanishes(tiny):
    """Y planted in the range of A(theta_0): r(theta_0) = 0, and Kaufman's dropped term (A^+)^T dA^T r with it."""
    problem, data, params0 = tiny
    A, _ = output_layer_system(params0, data.Z, data.coef)
    planted = TrainingData(data.Z, data.coef, A @ flatten(params0[-1:]))
    vp = VarPro(planted, params0, "auto")
    theta = flatten(params0[:-1])
    p = vp.project(theta)
    assert p.F < 1e-20
    Jk = vp.kaufman_jacobian(p)
    fd = _fd(lambda t: vp.project(t).r, theta)
    np.testing.assert_allclose(Jk, fd, rtol=0, atol=1e-6 * np.abs(fd).max())


def test_kaufman_jacobian_plus_the_golub_pereyra_term_is_the_reduced_residuals_jacobian(tiny):
    """Where r != 0: dr/dtheta = J_K - (A^+)^T (dA/dtheta)^T r, the second term from differences of A alone;
    and J_K^T r = N grad F / 2 (Kaufman's Jacobian gives the exact gradient)."""
    _, data, params0 = tiny
    vp = VarPro(data, params0, "auto")
    theta = flatten(params0[:-1])
    p = vp.project(theta)
    assert p.F > 1e-3
    Jk = vp.kaufman_jacobian(p)
    A_of = lambda t: vp.system(vp.network(t, np.zeros(p.A.shape[1])))[0]  # noqa: E731
    h = 1e-6
    dA = [(A_of(theta + h * e) - A_of(theta - h * e)) / (2 * h) for e in np.eye(theta.size)]
    pinv = np.linalg.pinv(p.A)
    golub_pereyra = np.array([pinv.T @ (dAj.T @ p.r) for dAj in dA]).T
    fd = _fd(lambda t: vp.project(t).r, theta)
    np.testing.assert_allclose(Jk - golub_pereyra, fd, rtol=0, atol=1e-6 * np.abs(fd).max())
    assert np.abs(Jk - fd).max() > 1e-3 * np.abs(fd).max()  # the dropped term is not negligible here
    np.testing.assert_allclose(Jk.T @ p.r, p.r.size * vp.gradient(p) / 2, rtol=1e-6, atol=1e-12)


def test_from_an_rfls_optimum_with_the_hidden_layers_frozen_varpro_is_rfls(tiny):
    problem, data, params0 = tiny
    start = rfls.solve(problem, data, params0, {}, 1).params  # an rfls optimum: its output layer solved
    ref = rfls.solve(problem, data, start, {}, 1)
    for name in METHODS:
        res = solver_def(name).solve(problem, data, start, {"ridge": 0.0}, 0)  # rfls's solve, no hidden step
        assert res.status == "ok" and len(res.history["J"]) == 2
        assert res.history["J"] == res.history["F"] == ref.history["J"]  # [J at the optimum, after the same solve]
        for (W, b), (Wr, br) in zip(res.params, ref.params):
            assert np.array_equal(W, Wr) and np.array_equal(b, br)
        assert all(res.diagnostics[f"move_{v}{l}"] == 0.0 for v in "Wb" for l in (1, 2))


@pytest.mark.parametrize("name", METHODS)
def test_each_method_lowers_the_reduced_loss_below_rfls_and_reports_its_moves(name, tiny):
    problem, data, params0 = tiny
    res = solver_def(name).solve(problem, data, params0, {}, 30)
    J, F = res.history["J"], res.history["F"]
    assert res.status == "ok" and J[1] <= F[1] and all(j <= f for j, f in zip(J[1:], F[1:]))  # F adds mu ||w||^2
    assert J[-1] < 0.2 * rfls.solve(problem, data, params0, {}, 1).history["J"][1]  # below the seeded layers' fit
    if name != "varpro-lbfgs":  # LM and Armijo accept only decreases of F
        assert all(b <= a for a, b in zip(F[1:], F[2:]))
    assert res.diagnostics["hidden"] == name.split("-")[1]
    assert min(res.diagnostics[f"move_W{l}"] for l in (1, 2)) > 1e-3


def test_a_mapping_picks_its_method_by_hidden_and_each_registered_name_keeps_its_own(tiny):
    problem, data, params0 = tiny
    a = solve(problem, data, params0, {"hidden": "gd", "max_iterations": 3}, 10)
    b = solver_def("varpro-gd").solve(problem, data, params0, {"max_iterations": 3}, 10)
    assert a.history == b.history and len(a.history["J"]) == 5
    assert set(SETTINGS) == {"lm", "lbfgs", "gd"}
    with pytest.raises(SettingsError) as info:
        solver_def("varpro-lm").Settings.from_mapping({"hidden": "gd"})
    assert info.value.field == "hidden"


def test_gd_first_trial_step_scales_inversely_with_the_loss(tiny):
    """t_0 = F / ||grad F||^2: Y times c makes F(theta) c^2 times larger at every theta (w* is linear in Y), so
    t_0 is c^2 times smaller and the steps, the hidden layers' path and F / c^2 are the same (no lr to tune)."""
    problem, data, params0 = tiny
    c = 1e2
    scaled = TrainingData(data.Z, data.coef, data.Y * c)
    a = solver_def("varpro-gd").solve(problem, data, params0, {}, 5)
    b = solver_def("varpro-gd").solve(problem, scaled, params0, {}, 5)
    assert b.diagnostics["first_trial_step"] == pytest.approx(a.diagnostics["first_trial_step"] / c**2, rel=1e-9)
    np.testing.assert_allclose(np.array(b.history["J"][1:]) / c**2, a.history["J"][1:], rtol=1e-6)


@pytest.fixture(scope="module")
def ill_conditioned():
    """elliptic-2d's training set at (3, 30), seed 2: cond(A) ~ 7e10 (the sin features of a random layer)."""
    from lysep_cli.numerics.dataset import experiment_data
    from lysep_cli.specs import default_config, load_specs

    data = experiment_data(load_specs(default_config())["elliptic-2d"])
    return data.training, init_params(2, 3, 30, seed=2)


@pytest.mark.parametrize("ridge, agrees", [(0.0, False), (1e-8, True)])
def test_the_reduced_gradient_needs_the_ridge_term_where_a_is_ill_conditioned(ill_conditioned, ridge, agrees):
    """The decision of docs/varpro.md: with cond(A) ~ 1e10 the plain least squares leaves w* wrong along A's
    smallest singular vectors (its error grows like cond^2 eps), and grad F = (dR/dtheta)^T r at that w* is not
    F's slope (off 1000-fold); with the ridge term (cond of the stacked system <= 1 / rho) it is (9e-4)."""
    import scipy.linalg

    data, params0 = ill_conditioned
    A, _ = output_layer_system(params0, data.Z, data.coef)
    vp = VarPro(data, params0, "auto", (ridge * scipy.linalg.svdvals(A)[0]) ** 2)
    theta = flatten(params0[:-1])
    p = vp.project(theta)
    assert p.cond > 1e10 or ridge > 0
    g = vp.gradient(p)
    d = g / np.linalg.norm(g)
    h = 1e-5
    slope = (vp.project(theta + h * d).F - vp.project(theta - h * d).F) / (2 * h)
    assert (abs(slope - np.linalg.norm(g)) < 1e-2 * np.linalg.norm(g)) == agrees  # measured: 9e-4, 1e3


def test_smoke_lysep_run_and_verify_each_method_and_a_bad_setting_is_one_line(tmp_path):
    """End to end in seconds: `lysep run` writes a sealed record per method (hidden layers' moves in its
    diagnostics), `lysep verify` reruns them bit for bit; a wrong ``hidden`` is refused in one line, exit 2."""
    from typer.testing import CliRunner

    from foundation_helpers import experiment_yaml, experiments_yaml
    from lysep_cli.cli import app
    from lysep_cli.store import records

    blocks = {name: "{max_iterations: 3}" for name in METHODS}
    config = tmp_path / "e.yaml"
    config.write_text(experiments_yaml(experiment_yaml("tiny", blocks, sizes=[[3, 5]], seeds=[0])))
    base = ["--config", str(config), "--results", str(tmp_path / "r")]
    cli = CliRunner()
    run = cli.invoke(app, ["run", "tiny", "--solver", ",".join(METHODS)] + base)
    assert run.exit_code == 0, run.output
    for name in METHODS:
        rec = records.read_record(tmp_path / "r" / "tiny" / name / "L3-M5" / "seed-0.json")
        assert rec.ok and rec.iterations_done == 3 and rec.settings["hidden"] == name.split("-")[1]
        assert rec.diagnostics["move_W1"] > 0 and len(rec.history["F"]) == 5
    verify = cli.invoke(app, ["verify", "tiny", "--sample", "3"] + base)
    assert verify.exit_code == 0 and "3 of 3 run(s) reproduce" in verify.stdout, verify.output
    config.write_text(experiments_yaml(experiment_yaml("tiny", {"varpro-lm": "{hidden: gd}"}, sizes=[[3, 5]])))
    bad = cli.invoke(app, ["run", "tiny", "--solver", "varpro-lm"] + base)
    assert bad.exit_code == 2 and "hidden" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
