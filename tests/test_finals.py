"""An archive's finals file (lysep_cli/store/finals.py): `lysep verify --save-finals FILE` writes the final
values of every run, `lysep verify --against FILE` compares an archive with them cell by cell (what a
regenerated archive is checked against once the old records are gone)."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from foundation_helpers import write_tiny
from lysep_cli.cli import app
from lysep_cli.specs import BadInput
from lysep_cli.store.finals import COLUMNS, read_finals

cli = CliRunner()


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A real archive: PINN, elliptic-2d (3,6), seeds 0-4, 40 iterations."""
    root = tmp_path_factory.mktemp("finals")
    config = write_tiny(root)
    results = root / "results"
    r = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0-4",
                         "--iterations", "40", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    return config, results


def _verify(config, results, *args):
    return cli.invoke(app, ["verify", "elliptic-2d", "--config", str(config), "--results", str(results),
                            "--iterations", "40", *args])


def _tripled(out, tmp_path):
    """The finals file ``out`` with every final J tripled (a planted change), written beside it."""
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["J"] = repr(3 * float(row["J"]))
    shifted = tmp_path / "shifted.csv"
    with shifted.open("w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return shifted


def test_the_finals_file_holds_every_runs_final_values_exactly(archive, tmp_path):
    config, results = archive
    out = tmp_path / "finals.csv"
    r = _verify(config, results, "--save-finals", str(out))
    assert r.exit_code == 0, r.output
    assert "wrote the finals of 5 run(s)" in r.output
    rows = read_finals(out)
    assert [row.seed for row in rows] == [0, 1, 2, 3, 4]
    for row in rows:
        rec = json.loads((results / "elliptic-2d" / "pinn" / "L3-M6" / f"seed-{row.seed}.json").read_text())
        assert (row.experiment, row.solver, row.L, row.M, row.iterations) == ("elliptic-2d", "pinn", 3, 6, 40)
        assert row.final.J == rec["final"]["J"] and row.final.l2 == rec["final"]["l2"]  # bit for bit
        assert row.final.J_S is None  # PINN has no J_S: an empty field
        assert row.numerics == rec["versions"]["numerics"]


def test_an_archive_agrees_with_its_own_finals_and_a_tripled_J_differs(archive, tmp_path):
    config, results = archive
    out = tmp_path / "finals.csv"
    assert _verify(config, results, "--save-finals", str(out)).exit_code == 0
    r = _verify(config, results, "--against", str(out))
    assert r.exit_code == 0, r.output
    assert "agrees    elliptic-2d pinn L3-M6: n 5/5" in r.output and "1 of 1 cell(s) agree" in r.output
    r = _verify(config, results, "--against", str(_tripled(out, tmp_path)))
    assert r.exit_code == 1, r.output
    assert "DIFFERS   elliptic-2d pinn L3-M6: n 5/5; J" in r.output and "0 of 1 cell(s) agree; 1 differ" in r.output


def test_rows_of_other_iterations_are_not_compared(archive, tmp_path):
    config, results = archive
    out = tmp_path / "finals.csv"
    assert _verify(config, results, "--save-finals", str(out)).exit_code == 0
    out.write_text(out.read_text().replace(",40,ok,", ",2000,ok,"))
    r = _verify(config, results, "--against", str(out))
    assert r.exit_code == 1, r.output  # no cell in both
    assert "0 of 0 cell(s) agree; 1 cell(s) only in" in r.output


@pytest.mark.parametrize("text, needle", [
    ("x\n", "not a finals file"),
    (",".join(COLUMNS) + "\nelliptic-2d,pinn,3,6\n", "line 2: 4 fields, expected 11"),
    (",".join(COLUMNS) + "\nelliptic-2d,pinn,3,six,0,40,ok,1,,1,abc\n", "line 2: L, M, seed and iterations"),
    (",".join(COLUMNS) + "\nelliptic-2d,pinn,3,6,0,40,ok,one,,1,abc\n", "line 2: 'one' is not a number"),
])
def test_a_bad_finals_file_is_one_line_and_exit_2(archive, tmp_path, text, needle):
    config, results = archive
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(BadInput, match=needle.replace("(", r"\(")):
        read_finals(bad)
    r = _verify(config, results, "--against", str(bad))
    assert r.exit_code == 2, r.output
    assert needle in r.output and len(r.output.strip().splitlines()) == 1


def test_save_finals_excludes_the_other_passes(archive, tmp_path):
    config, results = archive
    r = _verify(config, results, "--save-finals", str(tmp_path / "f.csv"), "--weights")
    assert r.exit_code == 2 and "exclude each other" in r.output


def test_common_seeds_compares_a_partial_archive_on_the_seeds_it_has(archive, tmp_path):
    """An archive being regenerated (3 of 5 seeds so far) against the finished one's finals."""
    config, results = archive
    out = tmp_path / "finals.csv"
    assert _verify(config, results, "--save-finals", str(out)).exit_code == 0
    lines = out.read_text().splitlines()
    partial = tmp_path / "partial.csv"
    partial.write_text("\n".join(lines[:4]) + "\n")  # the header and seeds 0-2
    r = _verify(config, results, "--against", str(partial))
    assert r.exit_code == 1, r.output  # missing seeds: incomplete, a failure
    assert "PARTIAL   elliptic-2d pinn L3-M6: n 5/3" in r.output
    assert "missing seed(s): 3, 4 only on the reference side" in r.output
    r = _verify(config, results, "--against", str(partial), "--allow-partial")
    assert r.exit_code == 0, r.output
    assert "[allowed: --allow-partial]" in r.output and "incomplete parts allowed by --allow-partial" in r.output
    r = _verify(config, results, "--against", str(partial), "--common-seeds")
    assert r.exit_code == 0, r.output
    assert "agrees    elliptic-2d pinn L3-M6: n 3/3;" in r.output and "missing seed" not in r.output
    r = _verify(config, results, "--common-seeds")
    assert r.exit_code == 2 and "--common-seeds goes with --against" in r.output



def test_accept_lets_a_named_differing_cell_pass_and_fails_a_stale_one(archive, tmp_path):
    """--accept names cells known to differ (an adoption with a documented exception): such a cell is
    reported and passes; a named cell that agrees fails, so an acceptance cannot outlive its reason."""
    config, results = archive
    out = tmp_path / "finals.csv"
    assert _verify(config, results, "--save-finals", str(out)).exit_code == 0
    shifted = _tripled(out, tmp_path)
    r = _verify(config, results, "--against", str(shifted), "--accept", "elliptic-2d:pinn:3x6")
    assert r.exit_code == 0, r.output
    assert "DIFFERS   elliptic-2d pinn L3-M6:" in r.output and "[accepted: --accept]" in r.output
    assert "0 of 1 cell(s) agree; 1 differ (1 accepted with --accept)" in r.output
    r = _verify(config, results, "--against", str(out), "--accept", "elliptic-2d:pinn:3x6")
    assert r.exit_code == 1, r.output
    assert "STALE     elliptic-2d pinn L3-M6: named by --accept but it does not differ" in r.output
    r = _verify(config, results, "--against", str(shifted), "--accept", "elliptic-2d:pinn:3x7")
    assert r.exit_code == 1, r.output  # the differing cell is not the one accepted
    assert "not compared" in r.output and "[accepted" not in r.output


@pytest.mark.parametrize("args, needle", [
    (["--accept", "elliptic-2d:pinn:3x6"], "--accept goes with --against"),
    (["--against", "F", "--accept", "pinn:3x6"], "--accept: expected EXPERIMENT:SOLVER:LxM"),
    (["--against", "F", "--accept", "parabolic-5d:pinn:3x6"], "--accept: experiment 'parabolic-5d' is not among"),
    (["--against", "F", "--accept", "elliptic-2d:nosuch:3x6"], "nosuch"),
])
def test_a_bad_accept_is_one_line_and_exit_2(archive, tmp_path, args, needle):
    config, results = archive
    out = tmp_path / "finals.csv"
    assert _verify(config, results, "--save-finals", str(out)).exit_code == 0
    r = _verify(config, results, *[str(out) if a == "F" else a for a in args])
    assert r.exit_code == 2, r.output
    assert needle in r.output and len(r.output.strip().splitlines()) == 1
