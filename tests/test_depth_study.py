"""`lysep study depth`: the depth table from archived runs (movement per layer from the saved weights)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from lysep_cli.numerics import network
from lysep_cli.store import records
from lysep_cli.cli import app
from lysep_cli.reports.depth import depth_summary, hidden_moves
from lysep_cli.specs import load_specs

from foundation_helpers import LYSEP, experiment_yaml, experiments_yaml, write_tiny

cli = CliRunner()

DEPTH_YAML = experiments_yaml(experiment_yaml(
    "tiny-depth", {"pinn": "{lr: 1.0e-2, lr_final: 1.0e-3}", "lysep": LYSEP, "rfls": "{rcond: auto}"},
    sizes=[[2, 6], [4, 6]], iterations=4))


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("depth")
    config = write_tiny(root, DEPTH_YAML)
    results = root / "results"
    r = cli.invoke(app, ["run", "tiny-depth", "--solver", "pinn,lysep,rfls", "--config", str(config),
                         "--results", str(results)])
    assert r.exit_code == 0, r.output
    return config, results


def test_moves_are_measured_from_the_seeded_start(archive):
    config, results = archive
    spec = load_specs(config)["tiny-depth"]
    recs = records.load_records(results, ["tiny-depth"]).records
    rec = next(r for r in recs if r.solver == "pinn" and r.L == 4 and r.seed == 1)
    moves = hidden_moves(rec, results, n_in=2)
    assert len(moves) == 3
    # independently: the saved weights against a fresh draw of the seeded start
    _, npz = records.record_paths(results, "tiny-depth", "pinn", 4, 6, 1)
    W = records.load_params(npz)
    W0 = network.init_params(2, 4, 6, 1)
    want = [np.linalg.norm(W[l][0] - W0[l][0]) / np.linalg.norm(W0[l][0]) for l in range(3)]
    np.testing.assert_allclose(moves, want, rtol=1e-14)
    assert all(m > 0 for m in moves)  # gradient descent moves every hidden layer
    # rfls solves the output layer only: its hidden layers are the seeded ones
    rfls = next(r for r in recs if r.solver == "rfls" and r.L == 4)
    assert hidden_moves(rfls, results, n_in=2) == [0.0, 0.0, 0.0]
    df = depth_summary(recs, spec, results)
    assert list(zip(df.L, df.solver)) == [(2, "pinn"), (2, "lysep"), (2, "rfls"),
                                          (4, "pinn"), (4, "lysep"), (4, "rfls")]
    assert (df.n_seeds == 2).all()
    lysep = df[df.solver == "lysep"]
    assert lysep.J1_median.notna().all() and (lysep.violations == 0).all()
    assert df[df.solver == "pinn"].J1_median.isna().all()


def test_cli_prints_one_row_per_depth_and_solver(archive):
    config, results = archive
    r = cli.invoke(app, ["study", "depth", "tiny-depth", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    assert r.output.count("| (2,6) |") == 3 and r.output.count("| (4,6) |") == 3
    row = next(line for line in r.output.splitlines() if line.startswith("| (4,6) | LySep"))
    assert row.count("e-") >= 3 + 3  # J, mean ± std, l2, J1 and three per-layer moves


@pytest.mark.parametrize("args, needle", [
    (["study", "depth", "no-such"], "unknown experiment"),
    (["study", "depth", "tiny-depth", "--iterations", "0"], "--iterations"),
])
def test_bad_input_is_one_line_and_exit_2(archive, args, needle):
    config, results = archive
    r = cli.invoke(app, [*args, "--config", str(config), "--results", str(results)])
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_no_matching_records_is_exit_1(archive, tmp_path):
    config, _ = archive
    (tmp_path / "empty").mkdir()
    r = cli.invoke(app, ["study", "depth", "tiny-depth", "--config", str(config), "--results", str(tmp_path / "empty")])
    assert r.exit_code == 1, r.output
    assert "no run record" in r.output
