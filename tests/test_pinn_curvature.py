"""studies/pinn_curvature.py: the replay equals pinn.solve and the difference Hessian is J's (tiny net)."""

import lysep_cli  # noqa: F401

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers import pinn
from lysep_cli.specs import default_config, load_specs

SCRIPT = Path(__file__).resolve().parents[1] / "studies" / "pinn_curvature.py"


@pytest.fixture(scope="module")
def pc():
    spec = importlib.util.spec_from_file_location("pinn_curvature", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def setup():
    spec = load_specs(default_config())["elliptic-2d"]
    data = experiment_data(spec)
    return spec, data, network.init_params(data.problem.n_in, 3, 3, seed=1)


def test_replay_is_the_solver(pc, setup):
    spec, data, params0 = setup
    settings = pinn.Settings.coerce(spec.solvers["pinn"])
    kept, history = pc.replay(params0, data.training, settings, 20, [0, 7, 20])
    res = pinn.solve(data.problem, data.training, params0, settings, 20)
    assert history == res.history["J"]
    assert sorted(kept) == [0, 7, 20]
    np.testing.assert_array_equal(network.flatten(kept[20]), network.flatten(res.params))
    np.testing.assert_array_equal(network.flatten(kept[0]), network.flatten(params0))


def test_hessian_matches_second_differences_of_J(pc, setup):
    _, data, params0 = setup
    train = data.training
    theta = network.flatten(params0)
    H, asym = pc.hessian(theta, params0, train)
    assert H.shape == (theta.size, theta.size) and np.array_equal(H, H.T)
    assert asym < 1e-6
    rng = np.random.default_rng(0)
    for _ in range(3):
        v = rng.standard_normal(theta.size)
        v /= np.linalg.norm(v)
        sd = pc.second_difference(theta, v, params0, train, 1e-3)
        assert abs(v @ H @ v - sd) <= 1e-5 * abs(sd)
