"""Each record tied to its seed, size, length and cell; broken seals never used; small cells judged seed by
seed (issue 47).  Plants in copies of a tiny real archive, every planted record sealed again (so a valid
seal cannot give the plant away), against `verify --weights`, `verify --against` and the reports; the
identical copy passes."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from foundation_helpers import LYSEP, PINN, experiment_yaml, experiments_yaml, write_tiny
from lysep_cli.cli import app
from lysep_cli.reports import cellstats, ties
from lysep_cli.specs import load_specs
from lysep_cli.store import records

cli = CliRunner()
SEEDS = list(range(10))


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """elliptic-2d (3,6) and (3,8), seeds 0-9, 5 iterations: PINN and LySep (40 tiny runs, seconds)."""
    root = tmp_path_factory.mktemp("ties")
    config = write_tiny(root, experiments_yaml(experiment_yaml(
        "elliptic-2d", {"pinn": PINN, "lysep": LYSEP}, table=1, seeds=SEEDS, sizes=[[3, 6], [3, 8]])))
    results = root / "results"
    r = cli.invoke(app, ["run", "elliptic-2d", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    return config, results


def _copy(results, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    return copy


def _json(results, solver, seed, M=6):
    return results / "elliptic-2d" / solver / f"L3-M{M}" / f"seed-{seed}.json"


def _replant(results, solver, from_seed, into, *, from_M=6, params=None, history=None, **changes):
    """Write the record of ``from_seed`` (optionally with another history / network and changed fields) as a
    sealed record under ``into`` (records.write_record: re-hashed and sealed as if made so)."""
    path = _json(results, solver, from_seed, from_M)
    rec, p = records.read_record(path), records.load_params(path.with_suffix(".npz"))
    params = p if params is None else params
    history = rec.history if history is None else history
    new = rec.with_(history=history, **changes)
    new = new.with_(weights_sha256=records.sha256(records.run_npz_bytes(params, new.history)))
    for f in records.record_paths(into, *new.cell):
        f.unlink(missing_ok=True)
    records.write_record(into, new, params)


def _verify(config, results, *args):
    return cli.invoke(app, ["verify", "elliptic-2d", "--config", str(config), "--results", str(results), *args])


def test_an_identical_copy_passes_every_tie(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    r = _verify(config, copy, "--weights", "--all")
    assert r.exit_code == 0 and "40 of 40 run(s) reproduce the archive" in r.output, r.output
    assert "MISMATCH" not in r.output
    r = _verify(config, copy, "--against", str(results))
    assert r.exit_code == 0, r.output


def test_first_values_are_the_seeds_bit_for_bit(archive):
    """The recomputed J[0] (and LySep's J_S[0]) equal the recorded ones to the bit, and differ between seeds."""
    config, results = archive
    specs = load_specs(config)
    tie = ties.Ties(specs)
    recs = records.load_records(results).records
    for r in recs:
        first = tie.first_values(r)
        assert first["J"] == r.history["J"][0]
        if r.solver == "lysep":
            assert first["J_S"] == r.history["J_S"][0]
    firsts = [tie.first_values(r, s)["J"] for r in recs[:1] for s in SEEDS]
    assert len(set(firsts)) == len(SEEDS)


@pytest.mark.parametrize("solver", ["lysep", "pinn"])
def test_a_copied_seed_fails_naming_the_seed_it_copies(archive, tmp_path, solver):
    config, results = archive
    copy = _copy(results, tmp_path)
    _replant(results, solver, 3, copy, seed=4)
    r = _verify(config, copy, "--weights", "--all")
    assert r.exit_code == 1, r.output
    assert f"MISMATCH  elliptic-2d {solver} L3-M6 seed 4: history J[0]" in r.output
    assert "it is seed 3's (a copy or a swap)" in r.output
    failing = [l for l in r.output.splitlines() if l.startswith("MISMATCH")]
    assert len(failing) == 1, r.output  # one line a run
    r = _verify(config, copy, "--against", str(results))  # the copy as the reference
    assert r.exit_code == 1 and f"{solver} L3-M6 seed 4: history J[0]" in r.output, r.output
    r = _verify(config, results, "--against", str(copy))  # the copy on the other side
    assert r.exit_code == 1 and f"{solver} L3-M6 seed 4: history J[0]" in r.output, r.output


def test_copies_with_their_seeds_first_values_are_named_as_copies(archive, tmp_path):
    """A copy whose first values were made to fit (impossible without training, but the copy rule does not
    rely on the seed rule): the same weights and history as another seed of the cell."""
    config, results = archive
    recs = [records.read_record(_json(results, "pinn", s)) for s in (3, 4)]
    lines = [f"{r.seed}:{first.seed}:{what}" for r, first, what in ties.copies([recs[0], recs[1].with_(
        weights_sha256=recs[0].weights_sha256)])]
    assert lines == ["4:3:weights"]
    same_history = recs[1].with_(history=recs[0].history)
    assert [w for _, _, w in ties.copies([recs[0], same_history])] == ["history J"]


def test_swapped_seeds_fail(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    _replant(results, "lysep", 3, copy, seed=7)
    _replant(results, "lysep", 7, copy, seed=3)
    r = _verify(config, copy, "--weights", "--all")
    assert r.exit_code == 1
    for a, b in ((3, 7), (7, 3)):
        assert f"lysep L3-M6 seed {a}: history J[0]" in r.output and f"it is seed {b}'s" in r.output


def test_a_moved_cell_fails_on_its_shapes(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    shutil.rmtree(copy / "elliptic-2d" / "lysep")
    for seed in SEEDS:  # the M = 8 runs recorded as M = 6 and the other way round
        for a, b in ((6, 8), (8, 6)):
            _replant(results, "lysep", seed, copy, from_M=a, M=b)
    r = _verify(config, copy, "--weights", "--all")
    assert r.exit_code == 1
    assert "lysep L3-M6 seed 0: the saved network's W1 is 8x2, not 6x2 of L3-M6: a record of another size" in r.output


def test_a_cut_history_fails(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    rec = records.read_record(_json(results, "lysep", 2))
    cut = {k: None if v is None else v[:3] for k, v in rec.history.items()}
    _replant(results, "lysep", 2, copy, history=cut)  # iterations_done left at 5
    pinn_J = records.read_record(_json(results, "pinn", 2)).history["J"]
    _replant(results, "pinn", 2, copy, history={**cut, "J": pinn_J[:3], "J_S": None}, iterations_done=2)
    r = _verify(config, copy, "--weights", "--all")
    assert r.exit_code == 1
    assert "lysep L3-M6 seed 2: history of 3 entries, not the 6 of a run of 5 iterations: cut or padded" in r.output
    assert "pinn L3-M6 seed 2: history of 3 entries, not the 6" in r.output
    r = _verify(config, results, "--against", str(copy))
    assert r.exit_code == 1 and "lysep L3-M6 seed 2: history of 3 entries" in r.output


@pytest.mark.parametrize("change, phrase", [
    ({"iterations": 4}, "iterations 4, not 5"),
    ({"settings": "lr"}, "settings lr=0.002 (wanted lr=0.001)"),
])
def test_a_record_made_otherwise_is_named_not_dropped(archive, tmp_path, change, phrase):
    config, results = archive
    copy = _copy(results, tmp_path)
    rec = records.read_record(_json(results, "pinn", 5))
    if "settings" in change:
        change = {"settings": {**rec.settings, "lr": 2e-3}}
    _replant(results, "pinn", 5, copy, **change)
    r = _verify(config, copy, "--weights", "--all")
    assert r.exit_code == 1, r.output
    assert f"MISMATCH  elliptic-2d pinn L3-M6 seed 5: not made as the spec asks ({phrase}): left out" in r.output
    assert "1 record(s) left out" in r.output
    r = _verify(config, results, "--against", str(copy))
    assert r.exit_code == 1 and "pinn L3-M6 seed 5: not made as the spec asks" in r.output


def test_a_changed_data_file_is_named_once(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    path = copy / "elliptic-2d" / "data.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["train"] = arrays["train"] * (1 + 1e-9)
    path.write_bytes(records.npz_bytes(arrays))
    r = _verify(config, copy, "--weights", "--all")
    assert r.exit_code == 1
    lines = [l for l in r.output.splitlines() if l.startswith("MISMATCH")]
    assert lines == [f"MISMATCH  {copy}/elliptic-2d/data.npz: another data set than the spec's (the records' "
                     "data_sha256 is the spec's); its runs are re-evaluated on the spec's own points"], r.output
    r = _verify(config, results, "--against", str(copy))
    assert r.exit_code == 1 and f"MISMATCH  {copy}/elliptic-2d/data.npz: another data set" in r.output, r.output


def _break_seal(copy, solver="lysep", seed=4, factor=10.0):
    path = _json(copy, solver, seed)
    obj = json.loads(path.read_text())
    obj["final"]["J"] *= factor
    path.write_text(json.dumps(obj, indent=1))
    return path


@pytest.mark.parametrize("command", [["table", "--format", "markdown"], ["compare"], ["status"]])
def test_reports_leave_out_a_record_whose_seal_is_broken(archive, tmp_path, command):
    config, results = archive
    copy = _copy(results, tmp_path)
    path = _break_seal(copy)
    r = cli.invoke(app, [*command, "elliptic-2d", "--config", str(config), "--results", str(copy)])
    assert f"{path}: invalid run record, not counted ({records.SEAL_BROKEN})" in r.output, r.output


def test_table_without_the_broken_record_is_the_table_of_the_others(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    _break_seal(copy)
    without = _copy(results, tmp_path / "w")
    for f in records.record_paths(without, "elliptic-2d", "lysep", 3, 6, 4):
        f.unlink()
    args = ["table", "elliptic-2d", "--format", "markdown", "--config", str(config)]
    a = cli.invoke(app, [*args, "--results", str(copy)])
    b = cli.invoke(app, [*args, "--results", str(without)])
    body = lambda out: [l for l in out.splitlines() if l.startswith("|")]  # noqa: E731
    assert body(a.output) == body(b.output) and body(a.output)


def test_run_redoes_a_record_whose_seal_is_broken(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    path = _break_seal(copy)
    before = records.read_record(_json(results, "lysep", 4))
    r = cli.invoke(app, ["run", "elliptic-2d", "--solver", "lysep", "--sizes", "3x6", "--config", str(config),
                         "--results", str(copy)])
    assert r.exit_code == 0, r.output
    assert f"{path}: {records.SEAL_BROKEN}; redoing this run" in r.output
    after = records.read_record(path)
    assert records.seal_state(after) == "sealed" and after.final == before.final


def test_the_seal_is_the_sha256_of_the_json_as_written(archive):
    """The faster written form (histories replaced before the conversion) gives the seal the file holds."""
    _, results = archive
    for path in records.record_files(results)[:4]:
        obj = json.loads(path.read_text())
        body = json.dumps({k: v for k, v in obj.items() if k != "seal"}, sort_keys=True, separators=(",", ":"))
        assert obj["seal"] == records.sha256(body.encode()) == records.seal_of(records.read_record(path))


# ---------------------------------------------------------------------------------------------
# Small cells: judged seed by seed.

@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_every_J_x2_on_a_small_paired_cell_differs(archive, n):
    config, results = archive
    runs = [r for r in records.load_records(results).records if r.solver == "lysep" and r.M == 6][:n]
    doubled = [r.with_(final=r.final.__class__(r.final.J * 2, r.final.J_S, r.final.l2)) for r in runs]
    c = cellstats.compare_cell(cellstats.cell_of(runs[0]), runs, doubled)
    assert c.verdict == "DIFFERS", c.line()
    assert "seed by seed" in c.line()
    same = cellstats.compare_cell(cellstats.cell_of(runs[0]), runs, runs)
    assert same.verdict == "agrees"  # bit-identical: no test needed


def test_reruns_start_with_the_ties(archive, tmp_path):
    """`lysep verify` (reruns, CI's form) ties every record before rerunning: a swap fails there too."""
    config, results = archive
    copy = _copy(results, tmp_path)
    _replant(results, "pinn", 3, copy, seed=7)
    _replant(results, "pinn", 7, copy, seed=3)
    r = _verify(config, copy, "--sample", "1", "--cheapest")
    assert r.exit_code == 1, r.output
    assert "ties: 2 record(s) not tied to their seed, size, length, solver and settings, or cell" in r.output
    r = _verify(config, results, "--sample", "1", "--cheapest")
    assert r.exit_code == 0 and "ties: every record's first J" in r.output, r.output


def test_save_finals_leaves_out_a_broken_seal(archive, tmp_path):
    config, results = archive
    copy = _copy(results, tmp_path)
    path = _break_seal(copy)
    finals = tmp_path / "finals.csv"
    r = _verify(config, copy, "--save-finals", str(finals))
    assert r.exit_code == 1 and f"{path}: invalid run record, not counted ({records.SEAL_BROKEN})" in r.output
    assert len(finals.read_text().splitlines()) == 1 + 39  # the header and the 39 others
