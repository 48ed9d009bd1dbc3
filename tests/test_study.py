"""The step-size study on a tiny experiment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from lysep_cli.specs import load_specs
from lysep_cli.reports.study import step_size_study, summarise, write_study


def tiny_spec(tmp_path: Path):
    cfg = {"experiments": {"tiny": {
        "table": 1, "pde": "elliptic", "d": 2, "solution": "exp-sin", "sizes": [[3, 6]], "n_train": 40,
        "n_test": 10, "iterations": 3, "seeds": [0, 1],
        "solvers": {"lysep": {"step_rule": "backtracking", "tau": 1.0e-8}}}}}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return load_specs(path)["tiny"]


def test_step_size_study_runs_every_rule_and_writes_outputs(tmp_path):
    spec = tiny_spec(tmp_path)
    df = step_size_study(spec, [(3, 6)], [0, 1], [0.0, 1e-3], iterations=2, base_settings=spec.solvers["lysep"])
    assert len(df) == 2 * 3
    assert set(df.rule) == {"fixed", "backtracking"}
    tau0 = df[(df.rule == "fixed") & (df.tau == 0.0)]
    # tau = 0: only the closed-form updates act; alternating W_3 / b_3 solves can only lower J (= J_S).
    assert np.all(tau0.J.to_numpy() <= tau0.J_first.to_numpy() * (1 + 1e-9))
    assert np.allclose(tau0.J, tau0.J_S)
    s = summarise(df)
    assert list(s.n) == [2, 2, 2]
    paths = write_study(df, tmp_path / "study", "tiny")
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert "per block" in (tmp_path / "study" / "summary.md").read_text()
