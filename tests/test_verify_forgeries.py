"""A forgery must cost a rerun to hide (issue 56).  Plants consistent with their own weights and resealed, in
small temporary copies (records of results/paper, or a tiny archive run here), against `lysep verify`:
another solver's runs relabelled, settings edited, J_S halved, an unverified record, timings edited, extra
seeds; identical copies raise no alarm.  Also: --since REV, every output path refused when it is not a
regular file, --seeds 0,0."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from foundation_helpers import LYSEP, PINN, experiment_yaml, experiments_yaml, one_error_line, write_tiny
from lysep_cli.cli import app
from lysep_cli.reports import cellstats, verify
from lysep_cli.store import records
from lysep_cli.store.schema import Final

cli = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "results" / "paper"
E2D = "elliptic-2d"


def _paper_copy(tmp_path: Path, runs: list[tuple[str, int, int, int]]) -> Path:
    """A results directory holding elliptic-2d's data.npz and the records (solver, L, M, seed) of the archive."""
    copy = tmp_path / "copy"
    (copy / E2D).mkdir(parents=True)
    shutil.copy2(ARCHIVE / E2D / "data.npz", copy / E2D / "data.npz")
    for solver, L, M, seed in runs:
        for f in records.record_paths(ARCHIVE, E2D, solver, L, M, seed):
            dst = copy / f.relative_to(ARCHIVE)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst)
    return copy


def _reseal(src_root: Path, cell: tuple, into: Path, *, final: Final | None = None, **changes) -> None:
    """The record ``cell`` of ``src_root`` written under ``into`` with ``changes``, re-hashed and sealed by the
    record writer (python -m lysep_cli.store.seal would seal it the same way)."""
    json_path, npz = records.record_paths(src_root, *cell)
    rec, params = records.read_record(json_path), records.load_params(npz)
    rec = rec.with_(**changes) if changes else rec
    rec = rec.with_(final=final) if final is not None else rec
    rec = rec.with_(weights_sha256=records.sha256(records.run_npz_bytes(params, rec.history)))
    for f in records.record_paths(into, E2D, *cell[1:]):
        f.unlink(missing_ok=True)
    for f in records.record_paths(into, *rec.cell):
        f.unlink(missing_ok=True)
    records.write_record(into, rec, params)


def _verify(results: Path, *args: str, config: Path | None = None):
    return cli.invoke(app, ["verify", E2D, "--results", str(results), *args]
                      + ([] if config is None else ["--config", str(config)]))


# ---------------------------------------------------------------------------------------------
# Item 1: the first iterations tie a record to its solver and settings.

def test_identical_copies_of_every_solver_raise_no_alarm(tmp_path):
    """The cheapest archived run of each of the eight solvers, copied: every tie passes (no false alarm)."""
    runs = [("pinn", 3, 30, 0), ("lysep", 3, 30, 0), ("rfls", 3, 30, 0), ("rfm", 2, 800, 0), ("poly", 2, 210, 0),
            ("pinn-adam", 3, 30, 0), ("pinn-lbfgs", 3, 30, 0), ("pinn-lm", 3, 30, 0)]
    copy = _paper_copy(tmp_path, runs)
    r = _verify(copy, "--weights", "--all")
    assert r.exit_code == 0 and "8 of 8 run(s) reproduce the archive" in r.stdout, r.output
    assert "MISMATCH" not in r.stdout and "unverified" not in r.stdout


@pytest.mark.parametrize("other", ["pinn-adam", "pinn-lbfgs"])
def test_another_solver_s_run_relabelled_fails_in_one_line(tmp_path, other):
    """J[0] is the same network for every solver of a seed; J[1], J[2] are not."""
    copy = _paper_copy(tmp_path, [(other, 3, 30, 0), ("pinn", 3, 30, 1)])
    pinn = records.read_record(records.record_paths(ARCHIVE, E2D, "pinn", 3, 30, 1)[0]).settings
    _reseal(copy, (E2D, other, 3, 30, 0), copy, solver="pinn", settings=pinn)
    shutil.rmtree(copy / E2D / other)
    r = _verify(copy, "--weights", "--all")
    assert r.exit_code == 1, r.output
    bad = [line for line in r.stdout.splitlines() if line.startswith("MISMATCH")]
    assert len(bad) == 1 and "elliptic-2d pinn L3-M30 seed 0: history J[1]" in bad[0]
    assert "is not what pinn with its recorded settings makes from seed 0" in bad[0]


def test_ties_in_two_worker_processes_say_what_one_process_says(tmp_path, monkeypatch):
    """`--jobs 2` (spawned processes, dearest record first) names the same forgery in the same lines as one
    process, and passes the same honest records."""
    from lysep_cli.reports import ties

    pools = []

    class Counted(ties.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            pools.append(kwargs["max_workers"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(ties, "ProcessPoolExecutor", Counted)
    monkeypatch.setattr(ties, "POOL_SECONDS", 0.0)  # these few records alone would not be worth two workers
    runs = [("pinn", 3, 30, 1), ("lysep", 3, 30, 0), ("rfls", 3, 30, 0), ("rfm", 2, 800, 0), ("pinn-lm", 3, 30, 0),
            ("pinn-adam", 3, 30, 0)]
    copy = _paper_copy(tmp_path, runs)
    pinn = records.read_record(records.record_paths(ARCHIVE, E2D, "pinn", 3, 30, 1)[0]).settings
    _reseal(copy, (E2D, "pinn-adam", 3, 30, 0), copy, solver="pinn", settings=pinn)
    one, two = _verify(copy, "--weights", "--all"), _verify(copy, "--weights", "--all", "--jobs", "2")
    assert one.exit_code == two.exit_code == 1, two.output
    assert one.stdout == two.stdout and pools == [2]
    bad = [line for line in two.stdout.splitlines() if line.startswith("MISMATCH")]
    assert len(bad) == 1 and "elliptic-2d pinn L3-M30 seed 0: history J[1]" in bad[0], two.stdout


def test_reruns_only_skips_the_weights_pass_and_says_so(tmp_path):
    """`--reruns-only` (CI, after the whole archive's weights pass): a relabelled record that is not rerun is
    not named, the rerun still judged, and stderr says what was skipped; without it the same call fails."""
    copy = _paper_copy(tmp_path, [("pinn-adam", 3, 30, 0), ("rfls", 3, 30, 0)])
    pinn = records.read_record(records.record_paths(ARCHIVE, E2D, "pinn", 3, 30, 1)[0]).settings
    _reseal(copy, (E2D, "pinn-adam", 3, 30, 0), copy, solver="pinn", settings=pinn)
    full = _verify(copy, "--sample", "1", "--cheapest")
    assert full.exit_code == 1 and "MISMATCH  elliptic-2d pinn L3-M30 seed 0" in full.stdout, full.output
    only = _verify(copy, "--sample", "1", "--cheapest", "--reruns-only")
    assert only.exit_code == 0 and "MISMATCH" not in only.stdout, only.output
    assert "ok        elliptic-2d rfls L3-M30 seed 0" in only.stdout
    assert "weights pass skipped (--reruns-only)" in only.stderr


@pytest.mark.parametrize("other", ["--weights", "--save-finals=x.csv", "--against=."])
def test_reruns_only_with_an_option_that_reruns_nothing_is_refused(tmp_path, other):
    r = _verify(ARCHIVE, "--reruns-only", other)
    assert r.exit_code == 2 and "--reruns-only goes with neither" in one_error_line(r)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """elliptic-2d (3,6), (3,7), (3,8), seeds 0-9, 5 iterations, PINN and LySep (seconds), and its config."""
    root = tmp_path_factory.mktemp("forgeries")
    config = write_tiny(root, experiments_yaml(experiment_yaml(
        E2D, {"pinn": PINN, "lysep": LYSEP}, table=1, seeds=list(range(10)), sizes=[[3, 6], [3, 7], [3, 8]])))
    results = root / "results"
    r = cli.invoke(app, ["run", E2D, "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    return config, results


def _copy(results: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    return copy


def test_a_run_made_with_other_settings_under_the_spec_s_fails(tiny, tmp_path):
    """A PINN seed rerun with lr x2 and its record's settings set back to the spec's."""
    config, results = tiny
    faster = write_tiny(tmp_path, experiments_yaml(experiment_yaml(
        E2D, {"pinn": "{lr: 2.0e-3, lr_final: 1.0e-4}"}, table=1, seeds=list(range(10)), sizes=[[3, 6]])))
    other = tmp_path / "faster"
    r = cli.invoke(app, ["run", E2D, "--config", str(faster), "--results", str(other), "--seeds", "4"])
    assert r.exit_code == 0, r.output
    copy = _copy(results, tmp_path)
    spec_settings = records.read_record(records.record_paths(results, E2D, "pinn", 3, 6, 4)[0]).settings
    _reseal(other, (E2D, "pinn", 3, 6, 4), copy, settings=spec_settings)
    r = _verify(copy, "--weights", "--all", config=config)
    assert r.exit_code == 1
    bad = [line for line in r.stdout.splitlines() if line.startswith("MISMATCH")]
    assert len(bad) == 1 and "pinn L3-M6 seed 4: history J[1]" in bad[0], r.stdout


# ---------------------------------------------------------------------------------------------
# Item 2: J_S wherever J is.

def _halve_js(results: Path, copy: Path, everywhere: bool) -> None:
    for s in range(10):
        cell = (E2D, "lysep", 3, 6, s)
        rec = records.read_record(records.record_paths(results, *cell)[0])
        final = Final(rec.final.J, rec.final.J_S * 0.5, rec.final.l2)
        if everywhere:
            js = rec.history["J_S"][:1] + [0.5 * x for x in rec.history["J_S"][1:]]  # J_S[0]: the seed's
            history = {**rec.history, "J_S": js}
            bound = {**rec.bound, "max_ratio_J_over_J_S": max(j / s for j, s in zip(rec.history["J"], js))}
            _reseal(results, cell, copy, final=final, history=history, bound=bound)
        else:
            _reseal(results, cell, copy, final=final)


def test_a_final_j_s_edited_alone_fails_the_bound_check(tiny, tmp_path):
    config, results = tiny
    copy = _copy(results, tmp_path)
    _halve_js(results, copy, everywhere=False)
    r = _verify(copy, "--weights", "--all", "--solver", "lysep", config=config)
    assert r.exit_code == 1
    bad = [line for line in r.stdout.splitlines() if line.startswith("MISMATCH")]
    assert len(bad) == 10 and all("is not its history's last J_S" in line for line in bad), r.stdout


def test_j_s_halved_consistently_passes_the_weights_and_fails_the_cell_rule(tiny, tmp_path):
    """What --weights cannot see (a final state consistent with itself), the cell rule does: it compares J_S."""
    config, results = tiny
    copy = _copy(results, tmp_path)
    _halve_js(results, copy, everywhere=True)
    assert _verify(copy, "--weights", "--all", "--solver", "lysep", config=config).exit_code == 0
    r = _verify(results, "--solver", "lysep", "--against", str(copy), config=config)
    assert r.exit_code == 1
    line = next(l for l in r.stdout.splitlines() if "L3-M6" in l)
    assert line.startswith("DIFFERS") and "J_S" in line.split("differs:")[1], line


def test_the_cell_rule_judges_j_s_where_both_sides_record_it():
    from types import SimpleNamespace as NS

    def runs(js):
        return [NS(seed=s, final=Final(1e-6 * (1 + s / 10), None if js is None else js * (1 + s / 10), 1e-3))
                for s in range(10)]

    cell = (E2D, "lysep", 3, 6)
    assert cellstats.compare_cell(cell, runs(1e-7), runs(1e-7)).verdict == "agrees"
    halved = cellstats.compare_cell(cell, runs(1e-7), runs(0.5e-7))
    assert halved.verdict == "DIFFERS" and any(r.startswith("J_S") for r in halved.reasons())
    assert [t.name for t in cellstats.compare_cell((E2D, "pinn", 3, 6), runs(None), runs(None)).tests] == ["J", "l2"]


# ---------------------------------------------------------------------------------------------
# Item 3: no silent pass; runs chosen by their nominal cost; timings flagged.

def test_an_unverified_run_fails_unless_allowed(tiny, tmp_path, monkeypatch):
    config, results = tiny
    real = verify.reevaluate

    def unverifiable(spec, record, results_dir, exact, data=None):
        check = real(spec, record, results_dir, exact, data)
        if record.cell == (E2D, "pinn", 3, 6, 2):  # what a record no platform here can judge gives
            return verify.Check(record, 0.05, "final l2", False, "round-off", 0.01, what="weights")
        return check

    monkeypatch.setattr(verify, "reevaluate", unverifiable)
    r = _verify(results, "--weights", "--all", "--solver", "pinn", config=config)
    assert r.exit_code == 1 and "1 run(s) unverified" in r.stdout and "--allow-unverified lets them" in r.stdout
    r = _verify(results, "--weights", "--all", "--solver", "pinn", "--allow-unverified", config=config)
    assert r.exit_code == 0 and "(allowed: --allow-unverified)" in r.stdout, r.output


def test_cheapest_is_chosen_by_size_and_iterations_not_recorded_seconds(tiny):
    _, results = tiny
    pool = [r for r in records.load_records(results).records if r.solver == "pinn" and r.seed == 0]
    small, _, big = sorted(pool, key=lambda r: r.M)
    assert verify.nominal_cost(small) < verify.nominal_cost(big)
    lied = [small.with_(seconds=1e6, diagnostics={**small.diagnostics, "cpu_seconds": 1e6}), big]
    assert [r.M for r in verify.choose(lied, 1, 0, cheapest=True)] == [6]


def test_cpu_seconds_edited_in_a_cell_are_flagged(tiny, tmp_path):
    config, results = tiny
    copy = _copy(results, tmp_path)
    for s in range(10):
        cell = (E2D, "pinn", 3, 8, s)
        rec = records.read_record(records.record_paths(results, *cell)[0])
        _reseal(results, cell, copy, diagnostics={**rec.diagnostics, "cpu_seconds": 1e4 * rec.diagnostics["cpu_seconds"]})
    r = _verify(copy, "--weights", "--all", "--solver", "pinn", config=config)
    flagged = [l for l in r.stdout.splitlines() if l.startswith("flagged")]
    assert len(flagged) == 10 and all("pinn L3-M8" in l for l in flagged), r.stdout
    assert not [l for l in _verify(results, "--weights", "--all", config=config).stdout.splitlines()
                if l.startswith("flagged")]


# ---------------------------------------------------------------------------------------------
# Item 4: the spec's seeds.

def test_extra_seeds_are_named_and_left_out_and_missing_ones_marked(tiny, tmp_path):
    config, results = tiny
    five = write_tiny(tmp_path, experiments_yaml(experiment_yaml(
        E2D, {"pinn": PINN, "lysep": LYSEP}, table=1, seeds=list(range(5)), sizes=[[3, 6], [3, 7], [3, 8]])))
    copy = _copy(results, tmp_path)
    for f in records.record_paths(copy, E2D, "pinn", 3, 6, 0):
        f.unlink()  # seed 0 missing, seeds 5-9 extra: ten runs in all, as ten genuine seeds would be
    table = cli.invoke(app, ["table", E2D, "--config", str(five), "--results", str(copy)])
    assert table.exit_code == 0, table.output
    assert "| 4/5 ‡" in table.stdout and "| 5/5" in table.stdout
    assert "pinn L3-M6 seed(s) 5, 6, 7, 8, 9" in table.stdout and "seeds the spec does not ask for" in table.stdout
    compare = cli.invoke(app, ["compare", E2D, "--config", str(five), "--results", str(copy)])
    assert compare.exit_code == 0 and "| 4 ‡ |" in compare.stdout, compare.stdout


# ---------------------------------------------------------------------------------------------
# Item 5: --since REV.

def test_since_checks_only_what_changed(tiny, tmp_path):
    config, results = tiny
    repo = tmp_path / "repo"
    shutil.copytree(results, repo / "results")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "archive"], check=True)
    r = _verify(repo / "results", "--since", "HEAD", "--weights", config=config)
    assert r.exit_code == 0 and "nothing to verify" in r.stdout
    _reseal(results, (E2D, "pinn", 3, 6, 3), repo / "results", final=Final(1.0, None, 1.0))  # a forged final
    r = _verify(repo / "results", "--since", "HEAD", "--weights", config=config)
    assert r.exit_code == 1 and "1 run(s) under" in r.stderr and "1 of 1" not in r.stdout, r.output
    assert "pinn L3-M6 seed 3" in r.stdout
    bad = _verify(repo / "results", "--since", "no-such-rev", config=config)
    assert "--since no-such-rev: not a revision" in one_error_line(bad)


# ---------------------------------------------------------------------------------------------
# Item 6: every output path; --seeds duplicates.

def _node(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        target = path.parent / "target.txt"
        target.write_text("kept\n")
        path.symlink_to(target)
    elif kind == "dangling symlink":
        path.symlink_to(path.parent / "nowhere")
    elif kind == "directory":
        (path / "tables.md").mkdir(parents=True)  # a directory named as the default file written in it
        (path / "comparison.md").mkdir()
        (path / "status.md").mkdir()
        (path / "finals.csv").mkdir()
        (path / f"{E2D}-study.md").mkdir()
    elif kind == "character device":
        null = os.stat("/dev/null")
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, null.st_rdev)
        except PermissionError:
            pytest.skip("creating a device node needs root")


OUTPUTS = [["table", E2D, "--out"], ["compare", E2D, "--out"], ["status", E2D, "--out"],
           ["study", "depth", E2D, "--out"], ["verify", E2D, "--solver", "poly", "--save-finals"]]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "dangling symlink", "character device", "directory"])
@pytest.mark.parametrize("command", OUTPUTS, ids=lambda c: " ".join(c[:-1] + [c[-1]]))
def test_every_output_option_refuses_what_is_not_a_regular_file(tmp_path, command, kind):
    path = tmp_path / "out"
    _node(kind, path)
    before = os.lstat(path)
    result = cli.invoke(app, command + [str(path), "--results", str(ARCHIVE)])
    line = one_error_line(result)
    assert "exists and is not a regular file" in line and "nothing written" in line
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    if kind == "symlink":
        assert (tmp_path / "target.txt").read_text() == "kept\n"


def test_seeds_given_twice_are_refused_like_the_experiments_file(tmp_path):
    for seeds in ("0,0", "0-3,2"):
        result = cli.invoke(app, ["run", E2D, "--solver", "pinn", "--seeds", seeds, "--dry-run",
                                  "--results", str(tmp_path / "r")])
        assert "given twice" in one_error_line(result)
