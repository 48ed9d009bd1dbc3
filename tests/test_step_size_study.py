"""`lysep study step-size`: LySep as written (fixed tau) beside backtracking; one row per run, resumable."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.reports.study import COLUMNS, best_fixed, hidden_move, summarise
from lysep_cli.solvers.lysep.algorithm import Settings, solve
from lysep_cli.specs import load_specs

from foundation_helpers import LYSEP, experiment_yaml, experiments_yaml, write_tiny

YAML = experiments_yaml(experiment_yaml("tiny", {"lysep": LYSEP}, table=1, sizes=[[3, 6]]))


def study(config, out, *extra: str):
    return CliRunner().invoke(app, ["study", "step-size", "tiny", "--config", str(config), "--out", str(out),
                                    "--sizes", "3x6", "--iterations", "4", *extra])


def test_one_row_per_run_with_the_solver_numbers(tmp_path):
    config = write_tiny(tmp_path, YAML)
    r = study(config, tmp_path / "s", "--seeds", "0", "--taus", "0,1e-3,1e10")
    assert r.exit_code == 0, r.output
    df = pd.read_csv(tmp_path / "s" / "runs.csv")
    assert list(df.columns) == COLUMNS and len(df) == 4  # three fixed taus and backtracking
    assert list(df["rule"]) == ["fixed"] * 3 + ["backtracking"]
    # the tau = 1e-3 row holds what the solver gives from the same seeded weights
    spec = load_specs(config)["tiny"]
    data = experiment_data(spec)
    params0 = network.init_params(data.problem.n_in, 3, 6, 0)
    res = solve(data.problem, data.training, params0,
                Settings.coerce(spec.solvers["lysep"]).replace(step_rule="fixed", tau=1e-3), 4)
    row = df[df.tau == 1e-3].iloc[0]
    assert row.status == res.status == "ok"
    assert row.J == res.history["J"][-1] and row.J_S == res.J_S
    assert row.hidden_move == hidden_move(res.diagnostics, 3) > 0
    zero = df[df.tau == 0.0].iloc[0]
    assert zero.hidden_move == 0.0  # tau = 0: no gradient step moves W_1, W_2
    huge = df[df.tau == 1e10].iloc[0]
    assert huge.status == "diverged" and huge.diverged_at == 1 and math.isnan(huge.l2)
    text = (tmp_path / "s" / "summary.md").read_text()
    assert "Best fixed tau" in text and (tmp_path / "s" / "step-size.png").is_file()


def test_an_interrupted_study_resumes_with_the_runs_it_has(tmp_path):
    config = write_tiny(tmp_path, YAML)
    out = tmp_path / "s"
    assert study(config, out, "--seeds", "0", "--taus", "0,1e-3").exit_code == 0
    first = pd.read_csv(out / "runs.csv")
    first.loc[0, "J"] = 123.0  # marks the row: a rerun would overwrite it
    first.to_csv(out / "runs.csv", index=False)
    r = study(config, out, "--seeds", "0-1", "--taus", "0,1e-3")
    assert r.exit_code == 0, r.output
    assert "3 of 6 runs already in" in r.output
    df = pd.read_csv(out / "runs.csv")
    assert len(df) == 6 and df.loc[0, "J"] == 123.0
    assert sorted(df.seed) == [0, 0, 0, 1, 1, 1]


def test_the_best_fixed_tau_is_chosen_by_J_among_taus_that_never_diverged():
    rows = []
    for seed in (0, 1):
        rows += [{"L": 3, "M": 6, "seed": seed, "rule": "fixed", "tau": 1e-4, "status": "ok", "diverged_at": None,
                  "J": 1e-3, "l2": 1e-1, "J_S": 1e-3, "J_first": 1.0, "hidden_move": 1e-6, "violations": 0},
                 {"L": 3, "M": 6, "seed": seed, "rule": "fixed", "tau": 1e-2, "status": "ok", "diverged_at": None,
                  "J": 1e-5, "l2": 9e-1, "J_S": 1e-5, "J_first": 1.0, "hidden_move": 1e-3, "violations": 0},
                 # smallest J of all in seed 0, but seed 1 diverged: not a candidate
                 {"L": 3, "M": 6, "seed": seed, "rule": "fixed", "tau": 1.0, "status": "ok" if seed == 0 else
                  "diverged", "diverged_at": None if seed == 0 else 7, "J": 1e-9 if seed == 0 else np.nan,
                  "l2": 1e-9 if seed == 0 else np.nan, "J_S": 1e-9, "J_first": 1.0, "hidden_move": 1.0,
                  "violations": 0}]
    best = best_fixed(summarise(pd.DataFrame(rows))).iloc[0]
    assert best.best_tau == 1e-2  # by J, though its l2 is the worse one
    assert best.largest_stable_tau == 1e-2
    assert best.best.J_std == 0.0  # two equal values: sample std 0


def test_bad_taus_are_one_line(tmp_path):
    config = write_tiny(tmp_path, YAML)
    r = study(config, tmp_path / "s", "--taus", "0,-1")
    assert r.exit_code == 2 and "--taus" in r.output and not (tmp_path / "s" / "runs.csv").exists()


def test_the_summary_reads_the_studies_it_finds(tmp_path):
    config = write_tiny(tmp_path, YAML)
    results = tmp_path / "results"
    r = CliRunner().invoke(app, ["study", "step-size-summary", "tiny", "--config", str(config), "--results",
                                 str(results)])
    assert r.exit_code == 0 and "no runs yet" in r.output
    assert study(config, results / "tiny" / "study-step-size", "--seeds", "0", "--taus", "0,1e-3").exit_code == 0
    df = pd.read_csv(results / "tiny" / "study-step-size" / "runs.csv")
    fixed = df[df.rule == "fixed"]
    best = fixed.loc[fixed.J.idxmin()]
    if fixed.J.min() * (1 + 1e-6) >= fixed.J.max():  # a tie: the smaller tau
        best = fixed.loc[fixed.tau.idxmin()]
    r = CliRunner().invoke(app, ["study", "step-size-summary", "tiny", "--config", str(config), "--results",
                                 str(results)])
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if line.startswith("| tiny"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "(3,6)" and cells[2] == "3 (1 seeds)"
    assert cells[3] == f"{best.tau:g} (1 seeds)" and cells[4] == f"{best.l2:.2e}"


def test_a_second_study_of_the_same_directory_is_refused(tmp_path):
    from lysep_cli.reports.study import exclusive

    config = write_tiny(tmp_path, YAML)
    out = tmp_path / "s"
    with exclusive(out):
        r = study(config, out, "--seeds", "0", "--taus", "0")
    assert r.exit_code == 1 and "another `lysep study step-size` is writing" in r.output
    assert not (out / "runs.csv").exists()
    assert study(config, out, "--seeds", "0", "--taus", "0").exit_code == 0  # released


def test_while_a_study_is_incomplete_the_best_tau_has_the_most_seeds():
    base = {"L": 3, "M": 6, "rule": "fixed", "status": "ok", "diverged_at": None, "l2": 1e-1, "J_S": 1e-3,
            "J_first": 1.0, "hidden_move": 0.0, "violations": 0}
    rows = [{**base, "seed": s, "tau": 1e-2, "J": 1e-4} for s in (0, 1, 2)]
    rows.append({**base, "seed": 0, "tau": 1.0, "J": 1e-6})  # lower, but one seed so far
    best = best_fixed(summarise(pd.DataFrame(rows))).iloc[0]
    assert best.best_tau == 1e-2 and best.best.n == 3


def test_a_tie_in_J_goes_to_the_smaller_tau():
    base = {"L": 3, "M": 6, "rule": "fixed", "status": "ok", "diverged_at": None, "l2": 1e-1, "J_S": 1e-3,
            "J_first": 1.0, "hidden_move": 0.0, "violations": 0}
    rows = [{**base, "seed": 0, "tau": 0.0, "J": 1.8000001e-4},  # equal to 7 digits: a tie
            {**base, "seed": 0, "tau": 1e-14, "J": 1.8e-4},
            {**base, "seed": 0, "tau": 1e-2, "J": 3e-4}]
    assert best_fixed(summarise(pd.DataFrame(rows))).iloc[0].best_tau == 0.0
    rows[1]["J"] = 1.7e-4  # 6 % lower: no longer a tie
    assert best_fixed(summarise(pd.DataFrame(rows))).iloc[0].best_tau == 1e-14
