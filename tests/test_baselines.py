"""Baselines: residual Jacobian vs finite differences, the output-layer system, and the solver
contract for rfls, pinn-adam, pinn-lbfgs, pinn-lm on a tiny problem."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lysep_cli.numerics.jacobian import n_params, output_layer_system, residual_jacobian
from lysep_cli.numerics.network import (flatten, forward, init_params, pinn_loss, pinn_loss_and_grad, residual, unflatten)
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import get_solver
from lysep_cli.solvers.base import SolveResult, TrainingData

BASELINES = ["rfls", "pinn-adam", "pinn-lbfgs", "pinn-lm"]
SETTINGS = {"rfls": {"rcond": "auto"}, "pinn-adam": {"lr": 1e-2, "lr_final": 1e-3},
            "pinn-lbfgs": {}, "pinn-lm": {"max_iterations": 200}}


def _setup(pde: str = "elliptic", d: int = 2, N: int = 60, L: int = 3, M: int = 8, seed: int = 0):
    problem = make_problem(pde, d)
    Z, _ = train_test_points(N, 10, d, problem.time_dependent)
    return problem, TrainingData.build(problem, Z), init_params(problem.n_in, L, M, seed)


def _R(theta, like, data):
    return residual(forward(unflatten(theta, like), data.Z), data.coef, data.Y)


@pytest.mark.parametrize("pde,d,L,M", [("elliptic", 2, 3, 6), ("elliptic", 3, 2, 5),
                                       ("parabolic", 2, 3, 5), ("hyperbolic", 2, 4, 4)])
def test_residual_jacobian_matches_central_differences(pde, d, L, M):
    _, data, params = _setup(pde, d, N=25, L=L, M=M, seed=3)
    Jac = residual_jacobian(params, data.Z, data.coef)
    theta = flatten(params)
    assert Jac.shape == (25, n_params(params)) == (25, theta.size)
    eps = 1e-6
    FD = np.empty_like(Jac)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        FD[:, i] = (_R(theta + e, params, data) - _R(theta - e, params, data)) / (2 * eps)
    assert np.max(np.abs(Jac - FD)) <= 1e-7 * np.max(np.abs(FD))


def test_jacobian_transpose_residual_is_the_gradient():
    _, data, params = _setup(M=7)
    J, grads = pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
    R = _R(flatten(params), params, data)
    Jac = residual_jacobian(params, data.Z, data.coef, out=np.full((60, n_params(params)), np.nan))
    np.testing.assert_allclose(2.0 * Jac.T @ R / R.size, flatten(grads), rtol=1e-10, atol=1e-13)


def test_output_layer_system_reproduces_residual_and_is_linear():
    _, data, params = _setup("parabolic", 2, M=6)
    A, _ = output_layer_system(params, data.Z, data.coef)
    assert A.shape == (60, 7)
    rng = np.random.default_rng(0)
    for _ in range(2):
        WL, bL = rng.normal(size=(1, 6)), rng.normal(size=1)
        p = params[:-1] + [(WL, bL)]
        np.testing.assert_allclose(A @ np.concatenate([WL[0], bL]) - data.Y, _R(flatten(p), p, data),
                                   rtol=1e-12, atol=1e-12)
    Jac = residual_jacobian(params, data.Z, data.coef)
    np.testing.assert_array_equal(Jac[:, -7:], A)


@pytest.mark.parametrize("name", BASELINES)
def test_solver_contract_decrease_and_determinism(name):
    problem, data, params0 = _setup()
    solve = get_solver(name)
    calls = []
    res = solve(problem, data, params0, SETTINGS[name], 30, progress=lambda k, J: calls.append((k, J)))
    again = solve(problem, data, params0, SETTINGS[name], 30)
    assert isinstance(res, SolveResult) and res.status == "ok" and res.diverged_at is None
    assert res.J_S is None
    J = res.history["J"]
    assert len(J) == (2 if name == "rfls" else 31)
    assert J[-1] < (0.5 if name == "pinn-adam" else 0.1) * J[0]  # Adam: 30 small steps
    assert J[-1] == pytest.approx(pinn_loss(res.params, data.Z, data.coef, data.Y), rel=1e-9)
    assert [W.shape for W, _ in res.params] == [W.shape for W, _ in params0]
    np.testing.assert_array_equal(flatten(res.params), flatten(again.params))
    assert J == again.history["J"]
    assert calls and calls[-1][1] == pytest.approx(J[-1])
    json.dumps(res.diagnostics)
    assert "history_note" in res.diagnostics
    # params0 untouched
    np.testing.assert_array_equal(flatten(params0), flatten(_setup()[2]))


def test_rfls_reaches_far_below_initial_and_records_conditioning():
    problem, data, params0 = _setup(M=20)
    res = get_solver("rfls")(problem, data, params0, {}, 2000)
    assert res.history["J"][-1] < 1e-4 * res.history["J"][0]
    assert res.diagnostics["cond"] >= 1.0 and 1 <= res.diagnostics["rank"] <= 21
    for (W, b), (W0, b0) in zip(res.params[:-1], params0[:-1]):
        np.testing.assert_array_equal(W, W0)
        np.testing.assert_array_equal(b, b0)


def test_lm_beats_first_order_methods_on_tiny_problem():
    problem, data, params0 = _setup()
    lm = get_solver("pinn-lm")(problem, data, params0, SETTINGS["pinn-lm"], 30)
    adam = get_solver("pinn-adam")(problem, data, params0, SETTINGS["pinn-adam"], 30)
    assert lm.history["J"][-1] < adam.history["J"][-1]
    assert all(b <= a for a, b in zip(lm.history["J"], lm.history["J"][1:]))  # accepted steps only


@pytest.mark.parametrize("name", ["pinn-adam", "pinn-lbfgs", "pinn-lm"])
def test_non_finite_is_reported_as_diverged(name):
    problem, data, params0 = _setup()
    bad = TrainingData(data.Z, data.coef, data.Y * np.nan)
    res = get_solver(name)(problem, bad, params0, SETTINGS[name], 5)
    assert res.status == "diverged" and res.diverged_at == 0 and len(res.history["J"]) == 1


def test_lm_caps_iterations():
    problem, data, params0 = _setup()
    res = get_solver("pinn-lm")(problem, data, params0, {"max_iterations": 4}, 30)
    assert len(res.history["J"]) == 5 and res.diagnostics["iterations_run"] == 4 and res.iterations_done == 4


@pytest.mark.parametrize("name", BASELINES)
def test_unknown_setting_is_rejected(name):
    problem, data, params0 = _setup()
    with pytest.raises(ValueError, match="unknown setting"):
        get_solver(name)(problem, data, params0, {"learning_rate": 1.0}, 2)


def test_lbfgs_restarts_after_an_early_stop_and_pads_history():
    problem, data, params0 = _setup()
    # ftol = 0.5 stops each start after an iteration that gains < 50 %; restarts continue from there.
    one = get_solver("pinn-lbfgs")(problem, data, params0, {"ftol": 0.5, "max_restarts": 0}, 40)
    more = get_solver("pinn-lbfgs")(problem, data, params0, {"ftol": 0.5, "max_restarts": 3}, 40)
    assert one.diagnostics["restarts"] == 0 and one.diagnostics["nit"] < 40
    assert one.iterations_done == one.diagnostics["nit"] and one.message.startswith("stopped after")
    assert 1 <= more.diagnostics["restarts"] <= 3 and more.diagnostics["nit"] > one.diagnostics["nit"]
    assert len(one.history["J"]) == len(more.history["J"]) == 41
    assert more.history["J"][-1] <= one.history["J"][-1]
    assert one.history["J"][-1] == one.history["J"][one.diagnostics["nit"]]
