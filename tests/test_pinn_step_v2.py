"""PINN-GD's second step rule (lysep_cli/reports/pinn_step.py, docs/varpro.md): a grid relative to the loss's
own scale climbed until a step diverges, the lowest training J, and full-length stability (else the next one
down); planted scans and a tiny experiment scaled by 1e4."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lysep_cli.numerics.dataset import ExperimentData, TrainingData
from lysep_cli.reports import pinn_step
from lysep_cli.reports.pinn_step import GridTooNarrow, NoStableStep, choose_v2, grid_lr
from lysep_cli.specs import load_specs

from foundation_helpers import experiment_yaml, experiments_yaml


def planted(eta0: float, J_scale: float = 1.0) -> pd.DataFrame:
    """A scan climbed from k = -2: J falls with the step up to k = 2, k = 3 diverges at the largest size and
    k = 4 at both (as the climb would stop at k = 3, k = 4 only tests that rows past it are harmless)."""
    J = {-2: 0.9, -1: 0.5, 0: 0.3, 1: 0.2, 2: 0.1, 3: 0.05, 4: math.nan}
    rows = []
    for k, j in J.items():
        for M, role in ((10, "smallest"), (50, "largest")):
            bad = k == 4 or (k == 3 and M == 50)
            rows.append({"lr": grid_lr(eta0, k), "L": 3, "M": M, "role": role, "status": "diverged" if bad else "ok",
                         "J": math.nan if bad else j * J_scale, "k": k})
    return pd.DataFrame(rows)


def test_the_best_admissible_step_when_it_is_stable_over_the_full_length():
    c = choose_v2(planted(1e-3), stable=lambda lr: True)
    assert c.lr == grid_lr(1e-3, 2) and c.J == 0.1  # k = 3 has the lower J but diverged at the largest size


def test_a_step_that_diverges_over_the_full_length_gives_way_to_the_next_one_down():
    eta0 = 1e-3
    unstable = {grid_lr(eta0, 2), grid_lr(eta0, 1)}
    asked = []
    c = choose_v2(planted(eta0), stable=lambda lr: asked.append(lr) or lr not in unstable)
    assert c.lr == grid_lr(eta0, 0) and c.J == 0.3
    assert asked == [grid_lr(eta0, 2), grid_lr(eta0, 1), grid_lr(eta0, 0)]  # best first, then down the grid
    assert "diverged over the full length" in c.verdict
    with pytest.raises(NoStableStep, match="full schedule"):
        choose_v2(planted(eta0), stable=lambda lr: False)


def test_a_grid_whose_largest_step_did_not_diverge_is_a_refusal():
    rows = planted(1e-3)
    rows = rows[rows.status == "ok"]
    with pytest.raises(GridTooNarrow, match="not wide enough"):
        choose_v2(rows, stable=lambda lr: True)


@pytest.mark.parametrize("scale", [1e4, 1e-4])
def test_planted_scale_invariance_J_times_c_picks_the_step_over_c(scale):
    """The same scan with J (and so eta_0 = J / ||grad J||^2's inverse) scaled: the step chosen scales by 1/c."""
    a = choose_v2(planted(1e-3), stable=lambda lr: lr < grid_lr(1e-3, 2))
    b = choose_v2(planted(1e-3 / scale, J_scale=scale), stable=lambda lr: lr < grid_lr(1e-3 / scale, 2))
    assert b.lr == pytest.approx(a.lr / scale, rel=1e-11) and b.J == pytest.approx(a.J * scale, rel=1e-12)


def test_a_tiny_experiment_with_its_loss_times_1e4_gets_the_step_divided_by_1e4(monkeypatch, tmp_path):
    """The whole rule on real PINN-GD runs: the residual (coefficients and data) times 100 makes J 1e4 times
    larger, eta_0 and every grid step 1e4 times smaller, PINN-GD's path the same: the same k is chosen."""
    config = tmp_path / "e.yaml"
    config.write_text(experiments_yaml(experiment_yaml("wave", {"pinn": "{lr: 1.0e-3, lr_final: 1.0e-4}"},
                                                       sizes=[[3, 4], [3, 6]], iterations=50)))
    spec = load_specs(config)["wave"]
    monkeypatch.setattr(pinn_step, "SCAN_ITERATIONS", 20)
    real = pinn_step.experiment_data
    c = 100.0

    def scaled(s):
        d = real(s)
        coef = d.training.coef
        coef = type(coef)(coef.K * c, coef.K1 * c, coef.K2 * c, coef.second)
        return ExperimentData(*[TrainingData(d.training.Z, coef, d.training.Y * c) if f == "training" else v
                                for f, v in zip(d._fields, d)])

    a, rows_a = pinn_step.step_v2(spec, "paper")
    monkeypatch.setattr(pinn_step, "experiment_data", scaled)
    b, rows_b = pinn_step.step_v2(spec, "paper")
    assert b.lr == pytest.approx(a.lr / c**2, rel=1e-9) and b.J == pytest.approx(a.J * c**2, rel=1e-6)
    assert list(rows_a.k) == list(rows_b.k) and list(rows_a.status) == list(rows_b.status)
    top = rows_a.k == rows_a.k.max()  # climbed until a step diverged, and no further
    assert (rows_a[top].status != "ok").any() and (rows_a[~top].status == "ok").all()
    assert rows_a.full_length.notna().any() and set(rows_a.columns) == set(pinn_step.COLUMNS_V2)
    assert np.isfinite(rows_a.eta0).all()
