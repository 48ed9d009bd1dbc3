"""`lysep status`: seeds done and missing per cell, their time, the time left (from records only)."""

from __future__ import annotations

from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.specs import load_specs

from foundation_helpers import LYSEP, PINN, experiment_yaml, experiments_yaml, store, synthetic_record, write_tiny

cli = CliRunner()

STATUS_YAML = experiments_yaml(experiment_yaml("elliptic-2d", {"pinn": PINN, "lysep": LYSEP, "rfls": "{rcond: auto}"},
                                              table=1, sizes=[[3, 6], [2, 5]], seeds=[0, 1, 2]))


def _archive(tmp_path):
    config = write_tiny(tmp_path, STATUS_YAML)
    spec = load_specs(config)["elliptic-2d"]
    results = tmp_path / "results"
    for seed, seconds in [(0, 3600.0), (1, 7200.0), (2, 1800.0)]:  # PINN (3,6): complete
        store(results, *synthetic_record(spec, "pinn", 3, 6, seed, J=1e-3, l2=1e-2, seconds=seconds))
    rec, params = synthetic_record(spec, "pinn", 2, 5, 0, J=1e-3, l2=1e-2, seconds=900.0)
    store(results, rec.with_(diagnostics={"cpu_seconds": 720.0}), params)  # PINN (2,5): seed 0 only
    store(results, *synthetic_record(spec, "pinn", 2, 5, 2, J=1e-3, l2=1e-2, seconds=5.0, iterations=3))
    return config, results


def _rows(text: str) -> dict[tuple[str, str], list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| elliptic-2d"):
            rows[cells[1], cells[2]] = cells
    return rows


def test_counts_missing_seeds_times_and_the_estimate_left(tmp_path):
    config, results = _archive(tmp_path)
    r = cli.invoke(app, ["status", "elliptic-2d", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    rows = _rows(r.output)
    # PINN (3,6): 3 of 3, 3.5 run-hours, nothing left
    assert rows["PINN", "(3,6)"][3:] == ["3/3", "–", "3.50", "–", "–"]
    # PINN (2,5): the 3-iteration record does not match the spec, so seeds 1 and 2 are missing; each
    # would take seed 0's 900 s: 0.50 h; CPU time as recorded
    assert rows["PINN", "(2,5)"][3:] == ["1/3", "1-2", "0.25", "0.20", "0.50"]
    # LySep is one of the paper's pair: listed with no records, no estimate; rfls (no record) is not
    assert rows["LySep", "(3,6)"][3:] == ["0/3", "0-2", "–", "–", "–"]
    assert not [k for k in rows if k[0] == "rfls"]
    assert "paper's (cell, solver) pairs complete: 1 of 4" in r.output
    assert "missing runs: 8; about 0.50 run-hours" in r.output and "6 run(s) in 2 cell(s)" in r.output


def test_check_fails_only_when_something_is_missing(tmp_path):
    config, results = _archive(tmp_path)
    base = ["status", "elliptic-2d", "--config", str(config), "--results", str(results), "--check"]
    assert cli.invoke(app, base).exit_code == 1
    r = cli.invoke(app, base + ["--solver", "pinn", "--iterations", "3"])  # PINN (2,5) seed 2 only: missing
    assert r.exit_code == 1 and "1/3" in r.output
    spec = load_specs(config)["elliptic-2d"]
    for seed in (1, 2):
        store(results, *synthetic_record(spec, "pinn", 2, 5, seed, J=1e-3, l2=1e-2, seconds=1.0))
    r = cli.invoke(app, base + ["--solver", "pinn"])
    assert r.exit_code == 0, r.output


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    config, results = _archive(tmp_path)
    for args in (["--solver", "nope"], ["--iterations", "0"], ["no-such-experiment"], ["--seeds", "2-1"],
                 ["--seeds", "0,,1"]):
        r = cli.invoke(app, ["status", *args, "--config", str(config), "--results", str(results)])
        assert r.exit_code == 2, (args, r.output)
        assert r.output.count("\n") == 1 and r.output.startswith("lysep: error:"), r.output


def test_seeds_sets_the_seeds_each_cell_expects(tmp_path):
    """``--seeds 0``: as ``make extras`` runs the other baselines at fewer seeds than the spec's."""
    config, results = _archive(tmp_path)
    base = ["status", "elliptic-2d", "--config", str(config), "--results", str(results)]
    r = cli.invoke(app, [*base, "--seeds", "0"])
    rows = _rows(r.output)
    assert rows["PINN", "(2,5)"][3:5] == ["1/1", "–"] and rows["LySep", "(3,6)"][3:5] == ["0/1", "0"]
    assert "finished runs: 2," in r.output  # seeds 1 and 2 of PINN (3,6) are not asked for
    assert cli.invoke(app, [*base, "--seeds", "0", "--solver", "pinn", "--check"]).exit_code == 0
    assert cli.invoke(app, [*base, "--seeds", "0-1", "--solver", "pinn", "--check"]).exit_code == 1


def test_the_missing_runs_of_the_papers_pairs_are_told_apart(tmp_path):
    config, results = _archive(tmp_path)
    spec = load_specs(config)["elliptic-2d"]
    store(results, *synthetic_record(spec, "rfls", 3, 6, 0, J=1e-3, l2=1e-2, seconds=1.0))
    r = cli.invoke(app, ["status", "elliptic-2d", "--config", str(config), "--results", str(results), "--summary"])
    # PINN 2 and LySep 6 missing (the paper's pairs); rfls (3,6) seeds 1-2 and (2,5) seeds 0-2
    assert "missing runs: 13 (8 in the paper's pairs, 5 in the other cells)" in r.output, r.output
    r = cli.invoke(app, ["status", "elliptic-2d", "--config", str(config), "--results", str(results), "--summary",
                         "--solver", "rfls"])
    assert "missing runs: 5; about" in r.output and "paper's" not in r.output, r.output


def test_an_experiment_named_twice_is_counted_once(tmp_path):
    config, results = _archive(tmp_path)
    args = ["--config", str(config), "--results", str(results), "--solver", "pinn"]
    once = cli.invoke(app, ["status", "elliptic-2d", *args])
    twice = cli.invoke(app, ["status", "elliptic-2d", "elliptic-2d", *args])
    assert twice.exit_code == 0 and twice.output == once.output
    assert "finished runs: 4," in twice.output


def test_summary_is_the_totals_alone(tmp_path):
    config, results = _archive(tmp_path)
    args = ["status", "elliptic-2d", "--config", str(config), "--results", str(results)]
    full, summary = cli.invoke(app, args).output, cli.invoke(app, [*args, "--summary"]).output
    assert summary.startswith("- paper's (cell, solver) pairs complete: 1 of 4")
    assert "|" not in summary and full.endswith(summary)


def test_the_files_line_weighs_the_records_of_the_experiments_shown(tmp_path):
    config, results = _archive(tmp_path)
    files = sorted((results / "elliptic-2d").glob("*/L*-M*/seed-*.*"))
    expected = sum(p.stat().st_size for p in files) / 1e6
    out = cli.invoke(app, ["status", "elliptic-2d", "--summary", "--config", str(config),
                           "--results", str(results)]).output
    assert f"- files: 5 run record(s), {expected:.1f} MB (JSON " in out
    (results / "elliptic-2d" / "data.npz").write_bytes(b"x" * 300_000)  # the data set counts too
    out = cli.invoke(app, ["status", "elliptic-2d", "--summary", "--config", str(config),
                           "--results", str(results)]).output
    assert f"- files: 5 run record(s), {expected + 0.3:.1f} MB (JSON " in out
    out = cli.invoke(app, ["status", "elliptic-2d", "--summary", "--solver", "lysep", "--config", str(config),
                           "--results", str(results)]).output
    assert "- files: 0 run record(s), 0.3 MB (JSON " in out  # --solver: only its records (none), the data set


def test_missing_seeds_name_checkpoints_runs_computed_now_and_runs_queued():
    from lysep_cli.reports.status import CellStatus, _missing_text

    cell = CellStatus("elliptic-10d", "lysep", 3, 150, tuple(range(10)), done=[0, 1],
                      in_progress={2: 1377, 4: 20}, running={2}, queued={3, 4, 5, 6, 8})
    assert _missing_text(cell) == "2-9 (2 at sweep 1377 running; 4 at sweep 20 queued; 3,5-6,8 queued)"
    assert _missing_text(CellStatus("e", "pinn", 3, 6, (0, 1), done=[0])) == "1"


def test_the_estimate_counts_what_checkpoints_hold():
    from lysep_cli.reports.status import CellStatus

    cell = CellStatus("e", "lysep", 3, 6, (0, 1, 2, 3), done=[0, 1], pace_seconds=200.0, iterations=2000,
                      in_progress={2: 500})
    assert cell.estimate_left == 100.0 * (0.75 + 1.0)  # seed 2 a quarter done, seed 3 not started
    cell.in_progress = {2: 5000}  # a checkpoint past the end (other iterations) counts as done, no less
    assert cell.estimate_left == 100.0
    assert CellStatus("e", "lysep", 3, 6, (0, 1), done=[0], pace_seconds=50.0, in_progress={1: 10}).estimate_left == 50.0


def test_timing_sums_the_recorded_cpu_time_per_experiment_and_solver(tmp_path):
    config, results = _archive(tmp_path)
    spec = load_specs(config)["elliptic-2d"]
    rec, params = synthetic_record(spec, "lysep", 3, 6, 1, J=1e-3, l2=1e-2, seconds=99.0)
    store(results, rec.with_(diagnostics={"cpu_seconds": 1800.0}), params)
    r = cli.invoke(app, ["status", "elliptic-2d", "--config", str(config), "--results", str(results), "--timing"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "| experiment | PINN | LySep | all |"
    # PINN: only seed 0 of (2,5) recorded its CPU time (720 s); LySep: 1800 s; wall seconds are not summed
    assert lines[2] == "| elliptic-2d | 0.20 | 0.50 | 0.70 |"
    assert lines[3] == "| all | 0.20 | 0.50 | 0.70 |"
    assert "CPU-hours of 2 finished run(s)" in r.output
    assert "3 finished run(s) recorded no CPU time" in r.output  # PINN (3,6) seeds 0-2


def test_pace_from_scales_another_archives_times_to_this_directory():
    """A cell with no finished run takes the other archive's wall time per run of the same cell, times
    the median ratio of this directory's pace to the other's on the cells both have finished runs of."""
    from lysep_cli.reports.status import CellStatus, borrow_pace

    here = [CellStatus("e", "pinn", 3, 6, (0, 1), done=[0, 1], pace_seconds=200.0),  # 100 s a run
            CellStatus("e", "pinn", 3, 8, (0, 1), done=[0], pace_seconds=300.0),  # 300 s a run
            CellStatus("e", "lysep", 3, 6, (0, 1, 2), iterations=2000, in_progress={1: 1000}),
            CellStatus("e", "lysep", 3, 8, (0, 1))]  # not in the other archive either
    there = [CellStatus("e", "pinn", 3, 6, (0, 1), done=[0, 1], pace_seconds=100.0),  # 50 s: here 2x slower
             CellStatus("e", "pinn", 3, 8, (0, 1), done=[0, 1], pace_seconds=100.0),  # 50 s: here 6x slower
             CellStatus("e", "pinn", 5, 5, (0,), done=[0], pace_seconds=1.0),  # not here: no ratio
             CellStatus("e", "lysep", 3, 6, (0, 1, 2), done=[0, 1, 2], pace_seconds=3 * 250.0)]
    pace = borrow_pace(here, there, "results/paper")
    assert (pace.factor, pace.common) == (4.0, 2)  # the median of 2 and 6
    assert here[2].borrowed == 1000.0 and here[2].estimate_left == 1000.0 * (1 + 0.5 + 1)  # seed 1 half done
    assert here[3].borrowed is None and here[3].estimate_left != here[3].estimate_left  # NaN: no estimate
    assert here[1].borrowed is None and here[1].estimate_left == 300.0  # its own pace wins
    assert borrow_pace([CellStatus("e", "lysep", 3, 6, (0,))], there, "x").factor == 1.0  # nothing in common


def test_pace_from_in_the_table_and_the_totals(tmp_path):
    config, results = _archive(tmp_path)
    spec = load_specs(config)["elliptic-2d"]
    other = tmp_path / "other"
    for seed in range(3):  # the other archive: PINN (3,6) twice as fast, LySep (3,6) at 1000 s a run
        store(other, *synthetic_record(spec, "pinn", 3, 6, seed, J=1e-3, l2=1e-2, seconds=[1800.0, 3600.0, 900.0][seed]))
        store(other, *synthetic_record(spec, "lysep", 3, 6, seed, J=1e-3, l2=1e-2, seconds=1000.0))
    base = ["status", "elliptic-2d", "--config", str(config), "--results", str(results)]
    r = cli.invoke(app, base + ["--pace-from", str(other)])
    assert r.exit_code == 0, r.output
    rows = _rows(r.output)
    assert rows["LySep", "(3,6)"][3:] == ["0/3", "0-2", "–", "–", "~1.67"]  # 3 runs x 1000 s x 2
    assert "plus about 1.67 run-hours for 3 run(s) in 1 cell(s) with no seed finished, at the pace of" in r.output
    assert "x 2.00, this directory against it on the 1 cell(s)" in r.output
    assert "3 run(s) in 1 cell(s) with no seed finished (no estimate)" in r.output  # LySep (2,5): not there
    bad = cli.invoke(app, base + ["--pace-from", str(tmp_path / "nope")])
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1 and "--pace-from" in bad.output


def test_one_numerics_fails_on_an_archive_made_by_two_codes(tmp_path):
    """``--one-numerics`` (make adopt-regen): the finished runs listed must name one numerics id."""
    config = write_tiny(tmp_path, STATUS_YAML)
    spec = load_specs(config)["elliptic-2d"]
    results = tmp_path / "results"
    for seed in (0, 1, 2):
        rec, params = synthetic_record(spec, "pinn", 3, 6, seed, J=1e-3, l2=1e-2)
        store(results, rec.with_(versions={"numerics": "aaaa"}), params)
    base = ["status", "elliptic-2d", "--config", str(config), "--results", str(results), "--summary"]
    r = cli.invoke(app, base + ["--one-numerics"])
    assert r.exit_code == 0, r.output
    assert "finished runs by numerics id (the code that computed them): aaaa: 3" in r.output
    rec, params = synthetic_record(spec, "pinn", 2, 5, 0, J=1e-3, l2=1e-2)
    store(results, rec.with_(versions={"numerics": "bbbb"}), params)
    assert cli.invoke(app, base).exit_code == 0  # reported, not checked, without the flag
    r = cli.invoke(app, base + ["--one-numerics"])
    assert r.exit_code == 1
    assert "2 numerics ids (3 by aaaa, 1 by bbbb): not an archive of one numerics id" in r.output
    r = cli.invoke(app, base + ["--one-numerics", "--solver", "lysep"])  # no finished run listed: nothing mixed
    assert r.exit_code == 0, r.output
    rec, params = synthetic_record(spec, "lysep", 3, 6, 0, J=1e-3, l2=1e-2)
    store(results, rec, params)  # a record older than the id
    r = cli.invoke(app, base + ["--one-numerics", "--solver", "lysep"])
    assert r.exit_code == 1 and "1 finished run(s) record no numerics id" in r.output
