"""``lysep run`` says what its runs will cost before they start (issue 47): the runs to do and their CPU
time from the archive's own rates; ``--dry-run`` prints that and does nothing else."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli import specs
from lysep_cli.cli import app
from lysep_cli.execution import estimate as est
from lysep_cli.execution.runner import RunKey
from lysep_cli.store import records

from foundation_helpers import files_under, snapshot, write_tiny

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "experiments.yaml"
ARCHIVE = ROOT / "results" / "paper"
SPECS = specs.load_specs(CONFIG)
cli = CliRunner()


def _rate(experiment: str, solver: str, L: int, M: int) -> float:
    """The median CPU seconds per iteration of the cell's archive records, computed here from the JSON."""
    found = records.load_records(ARCHIVE, [experiment]).records
    return statistics.median(r.diagnostics["cpu_seconds"] / r.iterations_done for r in found
                             if (r.solver, r.L, r.M) == (solver, L, M))


def test_a_cell_s_estimate_is_its_records_rate_times_the_iterations_asked(tmp_path):
    spec = SPECS["elliptic-2d"]
    todo = [RunKey("lysep", 3, 30, s) for s in range(3)] + [RunKey("pinn", 3, 100, 0)]
    cost = est.estimate(todo, spec, 500, tmp_path / "empty")
    by = {(c.solver, c.L, c.M): c for c in cost.cells}
    assert by["lysep", 3, 30].runs == 3 and by["lysep", 3, 30].steps == 500
    assert by["lysep", 3, 30].cpu_seconds == pytest.approx(3 * 500 * _rate("elliptic-2d", "lysep", 3, 30), rel=1e-12)
    assert by["pinn", 3, 100].cpu_seconds == pytest.approx(500 * _rate("elliptic-2d", "pinn", 3, 100), rel=1e-12)
    assert by["lysep", 3, 30].rate.source == est.ARCHIVE and by["lysep", 3, 30].rate.n == 10


def test_one_solve_solvers_and_lm_s_cap_are_not_scaled_by_the_iterations():
    """rfls does one solve whatever the iterations; LM stops at max_iterations (200 in the spec)."""
    spec = SPECS["elliptic-2d"]
    short, long = (est.estimate([RunKey("rfls", 3, 30, 0), RunKey("pinn-lm", 3, 30, 0)], spec, n, ARCHIVE)
                   for n in (100, 100_000))
    steps = {c.solver: (c.steps, d.steps) for c, d in zip(short.cells, long.cells)}
    assert steps == {"rfls": (1, 1), "pinn-lm": (100, 200)}


def test_a_cell_with_no_record_is_named_and_not_counted(tmp_path):
    spec = SPECS["elliptic-2d"]
    cost = est.estimate([RunKey("pinn", 3, 31, 0), RunKey("pinn", 3, 30, 0)], spec, 2000, tmp_path / "empty")
    assert [c.solver for c in cost.unrated] == ["pinn"] and cost.unrated[0].M == 31
    line = cost.summary()
    assert "no rate for 1 run(s) (pinn 3x31: no record of that cell" in line and "for 1 run(s)" in line
    assert cost.cpu_seconds == pytest.approx(2000 * _rate("elliptic-2d", "pinn", 3, 30))


def test_records_of_other_settings_give_no_rate(tmp_path):
    """A spec whose n_train differs from the archive's: its runs cost otherwise, so no rate is borrowed."""
    import dataclasses

    spec = dataclasses.replace(SPECS["elliptic-2d"], n_train=500)
    assert est.estimate([RunKey("pinn", 3, 30, 0)], spec, 2000, tmp_path / "empty").unrated


def _dry(args: list[str], results: Path, config: Path = CONFIG):
    return cli.invoke(app, ["run", *args, "--dry-run", "--config", str(config), "--results", str(results)])


def test_dry_run_prints_the_plan_and_the_estimate_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "new"
    r = _dry(["elliptic-2d", "--jobs", "2"], results)
    assert r.exit_code == 0, r.output
    assert "elliptic-2d: 80 run(s) to do, 0 skipped" in r.stdout and "results would go to" in r.stdout
    total = sum(10 * 2000 * _rate("elliptic-2d", s, 3, M) for s in ("pinn", "lysep") for M in (30, 50, 80, 100))
    minutes = float(re.search(r"estimate: ([0-9.]+) min of CPU time for the 80 run\(s\)", r.stdout).group(1))
    assert minutes == pytest.approx(total / 60, rel=5e-3)
    assert re.search(r"about ([0-9.]+) min of wall time 2 at a time", r.stdout)
    assert len(re.findall(r"^  (pinn|lysep) +3x\d+ +10 run\(s\) x 2000 iteration\(s\) at", r.stdout, re.M)) == 8
    assert "dry run: nothing was run, locked or written" in r.stdout
    assert not results.exists() and files_under(tmp_path) == []


def test_dry_run_in_an_archive_counts_what_is_left_and_changes_nothing(tmp_path):
    """In a results directory that holds some of the runs: they are skipped, the others estimated from the
    directory's own records; not a byte changes (no lock, no data set rewritten)."""
    config = write_tiny(tmp_path)
    results = tmp_path / "r"
    done = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0",
                            "--config", str(config), "--results", str(results)])
    assert done.exit_code == 0, done.output
    before = snapshot(results)
    r = _dry(["elliptic-2d", "--solver", "pinn", "--sizes", "3x6,2x5", "--seeds", "0-2"], results, config)
    assert r.exit_code == 0, r.output
    assert "5 run(s) to do, 1 skipped" in r.stdout
    assert "for 2 run(s)" in r.stdout and "no rate for 3 run(s) (pinn 2x5: no record of that cell" in r.stdout
    assert f"1 record(s) under {results}" in r.stdout
    assert snapshot(results) == before


def test_the_estimate_is_said_before_the_runs_start(tmp_path):
    config = write_tiny(tmp_path)
    results = tmp_path / "r"
    args = ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--config", str(config), "--results",
            str(results)]
    first = cli.invoke(app, args + ["--seeds", "0"])
    assert first.exit_code == 0 and "estimate: no rate for 1 run(s)" in first.stderr
    second = cli.invoke(app, args + ["--seeds", "1"])
    assert second.exit_code == 0, second.output
    assert re.search(r"estimate: [0-9.e-]+ s of CPU time for the 1 run\(s\)", second.stderr)


def test_dry_run_still_refuses_bad_input(tmp_path):
    r = _dry(["elliptic-2d", "--iterations", "1000000000000"], tmp_path / "r")
    assert r.exit_code == 2 and "--iterations must be <= 1,000,000" in r.stderr


def test_no_wall_time_is_said_for_a_cluster_or_a_stack():
    cost = est.estimate([RunKey("pinn", 3, 30, 0), RunKey("pinn", 3, 30, 1)], SPECS["elliptic-2d"], 2000, ARCHIVE)
    assert "of wall time 2 at a time" in cost.summary(4) and "wall time" not in cost.summary(None)


def test_each_worker_process_adds_its_warm_up_once(tmp_path):
    """A run's fixed cost (issue 56): the first run of each process pays WARM_UP_SECONDS beyond its rate, so a
    short run is not estimated at its iterations' share of a 2000-iteration rate alone."""
    spec = SPECS["elliptic-2d"]
    todo = [RunKey("rfls", 3, 30, s) for s in range(4)] + [RunKey("pinn", 3, 31, 0)]  # pinn 3x31: no rate
    cost = est.estimate(todo, spec, 20, tmp_path / "empty")
    assert cost.total_cpu_seconds(1) == pytest.approx(cost.cpu_seconds + est.WARM_UP_SECONDS)
    assert cost.total_cpu_seconds(2) == pytest.approx(cost.cpu_seconds + 2 * est.WARM_UP_SECONDS)
    assert cost.total_cpu_seconds(16) == pytest.approx(cost.cpu_seconds + 4 * est.WARM_UP_SECONDS)  # 4 rated runs
    assert f"{est.duration(cost.total_cpu_seconds(1))} of CPU time for 4 run(s)" in cost.summary(1)
