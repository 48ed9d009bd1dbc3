"""The random feature method (rfm): its features from the seeded network, its own sizes in the
experiments file, a run end to end with its saved network re-evaluated by `lysep verify --weights`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.network import init_params
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import solver_def
from lysep_cli.solvers.rfm import Settings, features
from lysep_cli.specs import BadInput, load_specs

from foundation_helpers import PINN, experiment_yaml, experiments_yaml, write_tiny

cli = CliRunner()


def test_features_are_the_seeded_draw_rescaled_to_sigma_and_pi():
    params0 = init_params(3, 2, 400, seed=5)
    (W1, b1), (W2, b2) = features(params0, sigma=2.5)
    assert np.array_equal(W1, params0[0][0] * (2.5 * math.sqrt(400)))  # a pure rescale: the seed fixes it
    assert np.abs(W1).max() <= 2.5 and np.abs(W1).max() > 2.4           # fills U(-sigma, sigma)
    assert np.abs(b1).max() <= math.pi and np.abs(b1).max() > 3.0        # fills U(-pi, pi)
    assert np.array_equal(W2, params0[1][0]) and np.array_equal(b2, params0[1][1])


def test_one_hidden_layer_only_and_sigma_positive():
    assert Settings().size_error(3, 50) is not None and Settings().size_error(2, 50) is None
    with pytest.raises(ValueError):
        Settings.from_mapping({"sigma": 0})


def test_wide_sin_features_fit_the_2d_problem_far_below_the_papers_initialisation():
    """At the same width, sigma = 4 reaches a far smaller residual than rfls on the paper's init."""
    problem = make_problem("elliptic", 2, "exp-sin")
    Z, _ = train_test_points(300, 10, 2, False)
    data = TrainingData.build(problem, Z)
    params0 = init_params(problem.n_in, 2, 150, seed=0)
    rfm = solver_def("rfm").solve(problem, data, params0, {"sigma": 4.0}, 1)
    rfls = solver_def("rfls").solve(problem, data, params0, {}, 1)
    assert rfm.history["J"][-1] < 1e-3 * rfls.history["J"][-1]
    assert rfm.diagnostics["sigma"] == 4.0 and len(rfm.history["J"]) == 2


YAML = experiments_yaml(experiment_yaml("elliptic-2d", {"pinn": PINN, "rfm": "{sigma: 3.0, sizes: [[2, 40]]}"},
                                        table=1, seeds=[0, 1, 2]))


def test_a_solver_block_may_give_its_own_sizes(tmp_path):
    spec = load_specs(write_tiny(tmp_path, YAML))["elliptic-2d"]
    assert spec.sizes_for("rfm") == ((2, 40),) and spec.sizes_for("pinn") == ((3, 6),)
    assert "sizes" not in spec.solvers["rfm"].to_dict()
    bad = YAML.replace("sizes: [[2, 40]]", "sizes: [[3, 40]]")
    with pytest.raises(BadInput, match=r"solvers\.rfm\.sizes\[0\].*one hidden layer"):
        load_specs(write_tiny(tmp_path, bad))


def test_rfm_runs_at_its_own_size_and_its_saved_network_gives_its_record(tmp_path):
    config, results = write_tiny(tmp_path, YAML), tmp_path / "results"
    r = cli.invoke(app, ["run", "elliptic-2d", "--solver", "rfm", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    rec = json.loads((results / "elliptic-2d/rfm/L2-M40/seed-2.json").read_text())
    assert rec["settings"] == {"sigma": 3.0, "rcond": "auto"} and rec["final"]["l2"] < 0.1
    v = cli.invoke(app, ["verify", "--weights", "--all", "--config", str(config), "--results", str(results)])
    assert v.exit_code == 0 and "3 of 3 run(s) reproduce the archive" in v.output, v.output
    s = cli.invoke(app, ["status", "elliptic-2d", "--solver", "rfm", "--config", str(config), "--results", str(results)])
    assert s.exit_code == 0 and "(2,40) | 3/3" in s.output, s.output
