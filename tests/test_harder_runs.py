"""The harder suite's network runs on equal footing (issue 49 item 3, docs/harder.md): PINN's step rule of
`lysep study pinn-step` (training J only, ties, divergence, refusal), the -torch twins of the experiments
file, the committed scan and choice, the budget of the final plan."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.execution.runner import RunKey
from lysep_cli.execution.sweep import check_runs
from lysep_cli.reports import pinn_step
from lysep_cli.reports.pinn_step import (COLUMNS, INITS, LRS, NETWORK_SOLVERS, TWIN_SUFFIX, NoStableStep, choices,
                                         choose, lr_final, with_steps)
from lysep_cli.specs import check_sizes, load_specs

ROOT = Path(__file__).resolve().parents[1]
CHOSEN = ROOT / "results" / "harder" / "experiments.yaml"
SCAN = ROOT / "results" / "harder" / "study-pinn-step" / "scan.csv"
cli = CliRunner()

TINY = """\
problems:
  wave: {pde: elliptic, d: 2, domain: ball, c: "1", u: "(1 - x1**2 - x2**2) * sin(3 * x1)"}
experiments:
  wave:
    problem: wave
    sizes: [[3, 4], [3, 6]]
    n_train: 60
    n_test: 30
    iterations: 50
    seeds: [0, 1]
    solvers:
      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}
      lysep: {}
      rfls: {rcond: auto}
      rfm: {sigma: 1.0, sizes: [[2, 20]]}
      poly: {degree: 3, sizes: [[2, 10]]}
"""


def fake(rows: list[tuple[float, int, str, float, float]]) -> pd.DataFrame:
    """Scan rows (lr, M, status, J, l2): an l2 column is there to prove the rule does not read it."""
    return pd.DataFrame([{"lr": lr, "L": 3, "M": M, "status": s, "J": J, "l2": l2} for lr, M, s, J, l2 in rows])


def test_rule_picks_the_lowest_training_j_never_the_test_error():
    rows = fake([(1e-3, 10, "ok", 0.5, 1e-4), (1e-2, 10, "ok", 0.2, 0.9), (1e-1, 10, "ok", 0.3, 0.5),
                 (1e-3, 50, "ok", 0.4, 1e-4), (1e-2, 50, "ok", 0.1, 0.9), (1e-1, 50, "ok", 0.1, 0.5)])
    assert choose(rows).lr == 1e-2  # the least l2 would pick 1e-3
    assert choose(rows.drop(columns="l2")).lr == 1e-2
    assert "l2" not in " ".join(COLUMNS) and not any("test" in c for c in COLUMNS)


def test_an_lr_that_diverges_at_the_largest_size_is_not_admissible():
    rows = fake([(1e-3, 10, "ok", 0.5, 0), (1e-2, 10, "ok", 0.2, 0), (1e-2, 50, "diverged", math.nan, 0),
                 (1e-3, 50, "ok", 0.4, 0), (1e-1, 10, "diverged", math.nan, 0), (1e-1, 50, "ok", 0.1, 0)])
    c = choose(rows)
    assert c.lr == 1e-3 and c.J == 0.5 and "1 admissible" in c.verdict


def test_ties_go_to_the_smaller_lr():
    rows = fake([(1e-2, 10, "ok", 0.2, 0), (3e-3, 10, "ok", 0.2 * (1 + 5e-7), 0), (1e-1, 10, "ok", 0.2, 0)])
    assert choose(rows).lr == 3e-3
    rows = fake([(1e-2, 10, "ok", 0.2, 0), (3e-3, 10, "ok", 0.2 * (1 + 1e-4), 0)])
    assert choose(rows).lr == 1e-2


def test_every_lr_diverged_is_a_refusal():
    rows = fake([(lr, M, "diverged", math.nan, 0) for lr in (1e-3, 1e-2) for M in (10, 50)])
    with pytest.raises(NoStableStep, match="every lr diverged"):
        choose(rows)


def test_scan_does_not_depend_on_the_test_set(monkeypatch):
    """The scan of a tiny experiment with its test points replaced by NaN gives the same rows, bit for bit."""
    spec = load_specs_text(TINY)["wave"]
    monkeypatch.setattr(pinn_step, "LRS", (1e-3, 1e2))
    monkeypatch.setattr(pinn_step, "SCAN_ITERATIONS", 4)
    a = pinn_step.scan([spec])
    real = pinn_step.experiment_data
    monkeypatch.setattr(pinn_step, "experiment_data",
                        lambda s: real(s)._replace(Z_test=np.full_like(real(s).Z_test, np.nan)))
    b = pinn_step.scan([spec])
    pd.testing.assert_frame_equal(a.drop(columns="cpu_seconds"), b.drop(columns="cpu_seconds"))
    assert list(a.columns) == COLUMNS and len(a) == 2 * 2 * 2  # inits x sizes x lr
    assert set(a[a.lr == 1e2].status) == {"diverged"} and set(a[a.lr == 1e-3].status) == {"ok"}
    assert set(a.role) == {"smallest", "largest"} and set(a[a.role == "smallest"].M) == {4}


def load_specs_text(text: str) -> dict:
    """The experiments of an experiments file's text."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "e.yaml"
        p.write_text(text)
        return load_specs(p)


def test_twins_carry_init_torch_and_their_own_step():
    doc = yaml.safe_load(TINY)
    steps = {("wave", "paper"): pinn_step.StepChoice(3e-3, 0.1, ""),
             ("wave", "torch"): pinn_step.StepChoice(1e-2, 0.1, "")}
    out = with_steps(doc, steps)
    assert list(out["experiments"]) == ["wave", "wave" + TWIN_SUFFIX]
    base, twin = out["experiments"]["wave"], out["experiments"]["wave" + TWIN_SUFFIX]
    assert base["solvers"]["pinn"] == {"lr": 3e-3, "lr_final": 3e-4} and "init" not in str(base)
    assert twin["problem"] == "wave" and set(twin["solvers"]) == {"pinn", "lysep", "rfls"}
    assert all(v["init"] == "torch" for v in twin["solvers"].values())
    assert twin["solvers"]["pinn"]["lr"] == 1e-2 and twin["solvers"]["pinn"]["lr_final"] == 1e-3
    assert {k: v for k, v in twin.items() if k != "solvers"} == {k: v for k, v in base.items() if k != "solvers"}
    assert with_steps(out, steps) == out  # a rerun replaces the twin, it does not add one
    specs = load_specs_text(yaml.safe_dump(out))
    assert specs["wave" + TWIN_SUFFIX].solvers["lysep"].init == "torch"
    assert specs["wave"].solvers["lysep"].init == "paper"


def test_lr_final_has_no_round_off_digits():
    assert [lr_final(v) for v in LRS] == [1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2]


def test_study_command_writes_its_files_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(pinn_step, "LRS", (1e-3, 1e-2))
    monkeypatch.setattr(pinn_step, "SCAN_ITERATIONS", 3)
    (tmp_path / "experiments.yaml").write_text("# Written by `lysep study kappa` (test)\n" + TINY)
    r = cli.invoke(app, ["study", "pinn-step", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(tmp_path / "study-pinn-step" / "scan.csv")
    assert list(df.columns) == COLUMNS and len(df) == 8
    specs = load_specs(tmp_path / "experiments.yaml")
    assert list(specs) == ["wave", "wave-torch"]
    steps = choices(df, [specs["wave"]])
    assert specs["wave"].solvers["pinn"].lr == steps[("wave", "paper")].lr
    assert specs["wave-torch"].solvers["pinn"].lr == steps[("wave", "torch")].lr
    text = (tmp_path / "experiments.yaml").read_text()
    assert text.startswith("# Written by `lysep study kappa` (test)\n# PINN's lr per")
    md = (tmp_path / "study-pinn-step" / "pinn-step.md").read_text()
    assert "## wave (init paper)" in md and "## wave-torch (init torch)" in md and md.count("←") == 2
    monkeypatch.setattr(pinn_step, "scan_run", lambda *a: pytest.fail("a kept run was made again"))
    r = cli.invoke(app, ["study", "pinn-step", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "experiments.yaml").read_text() == text


def test_study_command_refuses_when_every_lr_diverges(tmp_path, monkeypatch):
    monkeypatch.setattr(pinn_step, "LRS", (1e3,))
    monkeypatch.setattr(pinn_step, "SCAN_ITERATIONS", 5)
    before = "# kappa\n" + TINY
    (tmp_path / "experiments.yaml").write_text(before)
    r = cli.invoke(app, ["study", "pinn-step", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "every lr diverged" in r.output and "Traceback" not in r.output
    errors = [line for line in r.output.splitlines() if line.startswith("lysep: error")]
    assert len(errors) == 1 and errors[0] == r.output.strip().splitlines()[-1]  # after the scan's progress
    assert (tmp_path / "experiments.yaml").read_text() == before  # nothing written into it
    r = cli.invoke(app, ["study", "pinn-step", "--out", str(tmp_path / "none")])
    assert r.exit_code == 2 and "no such file" in r.output


def test_committed_file_follows_the_committed_scan():
    """results/harder: every chosen experiment has its twin; each (experiment, init)'s PINN lr is what the rule
    gives on the committed scan.csv; the twins set init: torch on every network solver and hold no rfm, poly."""
    specs = load_specs(CHOSEN)
    df = pd.read_csv(SCAN)
    bases = [s for n, s in specs.items() if not n.endswith(TWIN_SUFFIX)]
    assert len(bases) == 7 and len(specs) == 14
    steps = choices(df, bases)
    for spec in bases:
        twin = specs[spec.name + TWIN_SUFFIX]
        assert twin.problem.identity() == spec.problem.identity()
        assert (twin.sizes, twin.seeds, twin.iterations, twin.n_train) == \
            (spec.sizes, spec.seeds, spec.iterations, spec.n_train)
        assert set(twin.solvers) == {s for s in spec.solvers if s in NETWORK_SOLVERS}
        assert all(v.init == "torch" for v in twin.solvers.values())
        assert all(getattr(spec.solvers[s], "init", "paper") == "paper" for s in spec.solvers)
        for init, s in zip(INITS, (spec, twin)):
            lr = steps[(spec.name, init)].lr
            assert (s.solvers["pinn"].lr, s.solvers["pinn"].lr_final) == (lr, lr_final(lr))
        assert len(spec.seeds) >= 5 and len(spec.sizes) == 4 and spec.iterations == 2000


def test_every_member_passes_the_spec_checks():
    """What `lysep run` checks before it draws anything, for every experiment and solver of the file."""
    r = cli.invoke(app, ["list", "--config", str(CHOSEN)])
    assert r.exit_code == 0, r.output
    for spec in load_specs(CHOSEN).values():
        for solver in spec.solvers:
            check_sizes(spec, [solver], list(spec.sizes_for(solver)))
            check_runs(spec, [RunKey(solver, L, M, s) for L, M in spec.sizes_for(solver) for s in spec.seeds],
                       None)


def test_smoke_run_of_a_twin_records_init_torch(tmp_path):
    specs = load_specs(CHOSEN)
    name = next(n for n in specs if n.endswith(TWIN_SUFFIX) and specs[n].d == 2)
    r = cli.invoke(app, ["run", name, "--config", str(CHOSEN), "--solver", "pinn", "--sizes", "smallest",
                         "--seeds", "0", "--iterations", "3", "--results", str(tmp_path)])
    assert r.exit_code == 0, r.output
    rec = yaml.safe_load(next((tmp_path / name / "pinn").glob("L3-M10/seed-0.json")).read_text())
    assert rec["settings"]["init"] == "torch" and rec["settings"]["lr"] == specs[name].solvers["pinn"].lr


def test_budget_counts_each_run_once_with_twins_and_adds_the_fixed_tau_study():
    r = cli.invoke(app, ["study", "budget", "--config", str(CHOSEN)])
    assert r.exit_code == 2 and "--inits 1" in r.output and len(r.output.strip().splitlines()) == 1
    r = cli.invoke(app, ["study", "budget", "--config", str(CHOSEN), "--inits", "1", "--fixed-taus", "5"])
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if "fixed tau" in line]
    assert len(rows) == 7 and all("| 30 " in line for line in rows)  # (5 tau + default) x 5 seeds
    assert not any("-torch" in line for line in rows)
    total = float(r.output.split("runs, ")[1].split(" CPU hours")[0])
    assert 0 < total <= 8


def test_run_script_runs_every_experiment_then_the_fixed_tau_study():
    """suites/run-harder.sh as a dry run (LYSEP=echo): each experiment and its twin, then the step-size study of
    each paper-init experiment at the smallest size, then the checks."""
    import os
    import subprocess

    env = {**os.environ, "LYSEP": "echo", "COMMIT": "0"}
    out = subprocess.run(["bash", str(ROOT / "suites" / "run-harder.sh")], env=env, capture_output=True, text=True,
                         check=True, timeout=60).stdout.splitlines()
    runs = [line.split()[1] for line in out if line.startswith("run ")]
    assert runs == list(load_specs(CHOSEN))
    studies = [line for line in out if line.startswith("study step-size ")]
    assert [s.split()[2] for s in studies] == [n for n in runs if not n.endswith(TWIN_SUFFIX)]
    assert all("--sizes smallest --seeds 0-4 --iterations 2000" in s for s in studies)
    assert out[-2].startswith("status ") and out[-1].startswith("verify ") and "--all" not in out[-1]


def test_fixed_tau_studies_rerun_the_suites_own_lysep_bit_for_bit():
    """Each committed fixed-tau study reruns the default rule at each seed: its final J and ℓ2 are the suite's
    own LySep records of that size, bit for bit (results/harder/notes.md, "LySep as written on the suite")."""
    import json

    studies = sorted((ROOT / "results" / "harder").glob("*/study-step-size/runs.csv"))
    if not studies:
        pytest.skip("no fixed-tau study committed yet")
    for path in studies:
        df = pd.read_csv(path)
        default = df[df.rule != "fixed"]
        assert len(default) and set(default.status) == {"ok"}, path
        for r in default.itertuples():
            rec = json.loads((path.parents[1] / "lysep" / f"L{r.L}-M{r.M}" / f"seed-{r.seed}.json").read_text())
            assert (float(r.J), float(r.l2)) == (rec["final"]["J"], rec["final"]["l2"]), (path, r.seed)
