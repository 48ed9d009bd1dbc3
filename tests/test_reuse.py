"""A run that another experiment of the same results folder already made identically is copied, not run
again (the depth studies' (3,50) is the paper's (3,50)); anything that differs is run."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from lysep_cli.store import records
from lysep_cli.cli import app

from foundation_helpers import LYSEP, PINN, experiment_yaml, experiments_yaml, write_tiny

cli = CliRunner()

TWIN_YAML = experiments_yaml(
    experiment_yaml("elliptic-2d", {"pinn": PINN, "lysep": LYSEP}, table=1),
    experiment_yaml("elliptic-2d-depth", {"pinn": PINN, "lysep": LYSEP}, sizes=[[2, 6], [3, 6]]),
    experiment_yaml("elliptic-2d-other-lr", {"pinn": "{lr: 2.0e-3, lr_final: 1.0e-4}"}))


def _run(config, results, experiment, *args):
    return cli.invoke(app, ["run", experiment, "--config", str(config), "--results", str(results), *args])


def test_identical_runs_are_copied_and_verify_by_rerunning(tmp_path):
    config, results = write_tiny(tmp_path, TWIN_YAML), tmp_path / "results"
    assert _run(config, results, "elliptic-2d").exit_code == 0
    r = _run(config, results, "elliptic-2d-depth")
    assert r.exit_code == 0, r.output
    assert "elliptic-2d-depth: 4 run(s) to do, 4 copied from identical runs of elliptic-2d, 0 skipped" in r.output
    assert "(4 run(s) done now, 4 copied, 0 skipped" in r.output
    for solver in ("pinn", "lysep"):
        for seed in (0, 1):
            src, _ = records.record_paths(results, "elliptic-2d", solver, 3, 6, seed)
            dst, _ = records.record_paths(results, "elliptic-2d-depth", solver, 3, 6, seed)
            a, b = records.read_record(src), records.read_record(dst)
            assert b.diagnostics["copied_from"] == "elliptic-2d" and b.experiment == "elliptic-2d-depth"
            assert b.with_(experiment=a.experiment, diagnostics=a.diagnostics) == a
            assert dst.with_suffix(".npz").read_bytes() == src.with_suffix(".npz").read_bytes()
    v = cli.invoke(app, ["verify", "elliptic-2d-depth", "--all", "--config", str(config), "--results", str(results)])
    assert v.exit_code == 0 and v.output.count("bit-identical") == 8, v.output
    s = cli.invoke(app, ["status", "elliptic-2d-depth", "--config", str(config), "--results", str(results)])
    assert "| elliptic-2d-depth | PINN | (3,6) | 2/2 | – | 0.00 (2 copied) |" in s.output, s.output
    assert "8 copied from identical runs of another experiment, not counted in the hours" not in s.output
    assert "4 copied from identical runs of another experiment, not counted in the hours" in s.output


def test_a_run_that_differs_is_run_and_force_never_copies(tmp_path):
    config, results = write_tiny(tmp_path, TWIN_YAML), tmp_path / "results"
    assert _run(config, results, "elliptic-2d", "--solver", "pinn").exit_code == 0
    r = _run(config, results, "elliptic-2d-other-lr")
    assert r.exit_code == 0 and "2 run(s) to do, 0 skipped" in r.output and "copied" not in r.output
    dst, _ = records.record_paths(results, "elliptic-2d-other-lr", "pinn", 3, 6, 0)
    assert "copied_from" not in json.loads(dst.read_text())["diagnostics"]
    r = _run(config, results, "elliptic-2d-depth", "--solver", "pinn", "--sizes", "3x6", "--force")
    assert r.exit_code == 0 and "2 run(s) to do, 0 skipped" in r.output and "copied" not in r.output
    dst, _ = records.record_paths(results, "elliptic-2d-depth", "pinn", 3, 6, 1)
    assert "copied_from" not in records.read_record(dst).diagnostics


def test_a_source_gone_between_plan_and_copy_is_run_instead(tmp_path):
    from lysep_cli.execution import runner
    from lysep_cli.specs import load_specs

    config, results = write_tiny(tmp_path, TWIN_YAML), tmp_path / "results"
    assert _run(config, results, "elliptic-2d", "--solver", "pinn", "--seeds", "0").exit_code == 0
    spec = load_specs(config)["elliptic-2d-depth"]
    plan = runner.plan_runs(spec, ["pinn"], [(3, 6)], [0], 5, results)
    assert plan.todo == [] and len(plan.copies) == 1
    plan.copies[0][1].with_suffix(".npz").unlink()  # the source is damaged after planning
    sweep = runner.run_experiment(spec, plan.todo, 5, results, copies=plan.copies)
    assert sweep.copied == [] and len(sweep.done) == 1
    assert "copied_from" not in sweep.done[0].diagnostics
