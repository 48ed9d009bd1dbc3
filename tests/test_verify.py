"""`lysep verify`: reruns archived runs; bit-identical passes, an altered archive fails, bad input exits 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lysep_cli.store import records
from lysep_cli.cli import app

from foundation_helpers import write_tiny

cli = CliRunner()


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A tiny archive: PINN, 2 seeds, 5 iterations (the tiny spec's own count)."""
    root = tmp_path_factory.mktemp("archive")
    config = write_tiny(root)
    results = root / "results"
    for solver in ("pinn",):
        r = cli.invoke(app, ["run", "elliptic-2d", "--solver", solver, "--sizes", "3x6", "--seeds", "0-1",
                             "--config", str(config), "--results", str(results)])
        assert r.exit_code == 0, r.output
    return config, results


def _verify(config, results, *args):
    return cli.invoke(app, ["verify", "--config", str(config), "--results", str(results), *args])


def _record(results, seed: int):
    return results / "elliptic-2d" / "pinn" / "L3-M6" / f"seed-{seed}.json"


def _edit_history(path, name: str, k: int, factor: float) -> None:
    """Scale entry k of history series ``name`` (it lives in the NPZ) and re-seal the record."""
    rec = records.read_record(path)
    series = list(rec.history[name])
    series[k] *= factor
    history = {**rec.history, name: series}
    params = records.load_params(path.with_suffix(".npz"))
    new = rec.with_(history=history, weights_sha256=records.sha256(records.run_npz_bytes(params, history)))
    records.write_record(path.parent.parent.parent.parent, new, params)


def _edit(path, change):
    """Change the record's JSON and seal it again (as if made so: the seal itself is tested apart)."""
    obj = json.loads(path.read_text())
    change(obj)
    path.write_text(json.dumps(obj))
    path.write_text(records.record_text(records.read_record(path)))


def test_reruns_are_bit_identical(archive):
    r = _verify(*archive, "--all")
    assert r.exit_code == 0, r.output
    assert r.output.count("exact, bit-identical") == 2
    assert "2 of 2 run(s) reproduce the archive (levels: exact 2)" in r.output
    assert "weights: 2 of 2 saved network(s) give their record's J and l2" in r.output


def test_an_altered_archived_number_fails_and_is_named(archive, tmp_path):
    config, results = archive
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    _edit_history(_record(copy, 1), "J", 3, 1 + 1e-6)
    r = _verify(config, copy, "--all")
    assert r.exit_code == 1, r.output
    assert "MISMATCH  elliptic-2d pinn L3-M6 seed 1: exact level (same platform and numerics)" in r.output
    assert "history J[3]" in r.output and "1.000e-06" in r.output
    assert "1 of 2 run(s) reproduce the archive (levels: exact 2); 1 do not" in r.output


def _other_platform(o: dict) -> None:
    o["versions"] = {**o["versions"], "blas_core": "Sandybridge", "numpy_simd": "X86_V3,X86_V4"}


def test_on_another_platform_a_round_off_difference_passes_at_the_tolerant_level(archive, tmp_path):
    config, results = archive
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    _edit(_record(copy, 0), lambda o: (_other_platform(o),
                                       o["final"].__setitem__("l2", o["final"]["l2"] * (1 + 1e-12))))
    r = _verify(config, copy, "--all")
    assert r.exit_code == 0, r.output
    assert ("ok        elliptic-2d pinn L3-M6 seed 0: tolerant, largest relative difference 1.000e-12 "
            "(final l2) vs tolerance 1.0e-10") in r.output
    assert "(levels: exact 1, tolerant 1)" in r.output


def test_on_another_platform_a_real_change_still_fails_and_names_what_differs(archive, tmp_path):
    config, results = archive
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    _edit(_record(copy, 0), _other_platform)
    _edit_history(_record(copy, 0), "J", 2, 1 + 1e-6)
    r = _verify(config, copy, "--all")
    assert r.exit_code == 1, r.output
    assert "MISMATCH  elliptic-2d pinn L3-M6 seed 0: tolerant, largest relative difference 1.000e-06" in r.output
    assert "platform differs: numpy_simd: X86_V3,X86_V4 -> " in r.output
    assert "blas_core: Sandybridge -> " in r.output


def test_a_weight_altered_by_1e_6_and_resealed_fails_without_training(archive, tmp_path):
    config, results = archive
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    path = _record(copy, 1)
    rec = records.read_record(path)
    params = records.load_params(path.with_suffix(".npz"))
    W1 = params[0][0].copy()
    W1[0, 0] += 1e-6
    params = [(W1, params[0][1])] + params[1:]
    records.write_record(copy, rec.with_(weights_sha256=records.sha256(records.run_npz_bytes(params, rec.history))),
                         params)
    for args in (["--weights", "--all"], ["--sample", "1", "--cheapest"]):
        r = _verify(config, copy, *args)
        assert r.exit_code == 1, r.output
        assert "MISMATCH  elliptic-2d pinn L3-M6 seed 1: weights" in r.output


def test_cheapest_is_chosen_by_the_cell_not_the_recorded_seconds(archive, tmp_path):
    """Issue 56: a record's seconds (which an edit can move) do not change which run --cheapest reruns."""
    config, results = archive
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    picked = _verify(config, results, "--sample", "1", "--cheapest")
    _edit(_record(copy, 0), lambda o: o.__setitem__("seconds", 1e6))
    r = _verify(config, copy, "--sample", "1", "--cheapest")
    assert r.exit_code == 0, r.output
    rerun = [line for line in r.output.splitlines() if line.startswith("ok ") and "bit-identical" in line]
    assert rerun == [line for line in picked.output.splitlines() if line.startswith("ok ") and "bit-identical" in line]
    assert len(rerun) == 1


def test_random_sample_is_fixed_by_the_seed(archive):
    outs = {_verify(*archive, "--sample", "1", "--seed", "5").output for _ in range(2)}
    assert len(outs) == 1


@pytest.mark.parametrize("args,needle", [
    (["--sample", "0"], "--sample"),
    (["--sample", "1", "--all"], "exclude each other"),
    (["--seed", "-1"], "--seed"),
    (["nope"], "unknown experiment"),
    (["--solver", "magic"], "--solver"),
    (["--solver", ""], "--solver"),
])
def test_bad_input_is_one_line_and_exit_2(archive, args, needle):
    r = _verify(*archive, *args)
    assert r.exit_code == 2
    assert needle in r.output and len(r.output.strip().splitlines()) == 1


def test_missing_archive_is_exit_2_and_empty_archive_exit_1(archive, tmp_path):
    config, _ = archive
    assert _verify(config, tmp_path / "nowhere").exit_code == 2
    (tmp_path / "empty").mkdir()
    r = _verify(config, tmp_path / "empty")
    assert r.exit_code == 1 and "no run record" in r.output


def test_solver_filter(archive):
    r = _verify(*archive, "--all", "--solver", "pinn")
    assert r.exit_code == 0 and "2 of 2" in r.output


def test_an_archive_with_an_altered_npz_fails_even_when_the_sample_passes(archive, tmp_path):
    config, results = archive
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    rec = records.read_record(_record(copy, 1))
    history = {**rec.history, "J": [rec.history["J"][0] * 2] + rec.history["J"][1:]}
    npz = _record(copy, 1).with_suffix(".npz")  # one history value altered, the record's sha256 left as it was
    npz.write_bytes(records.run_npz_bytes(records.load_params(npz), history))
    r = _verify(config, copy, "--all")
    assert r.exit_code == 1, r.output
    assert "1 of 1 run(s) reproduce the archive" in r.output
    assert "does not match the record's sha256" in r.output
    assert "1 archived record(s) do not read" in r.output and "the archive does not verify" in r.output


def test_weights_mode_reevaluates_without_training_and_catches_an_altered_network(archive, tmp_path):
    config, results = archive
    r = _verify(config, results, "--all", "--weights")
    assert r.exit_code == 0, r.output
    assert r.output.count("J and l2 of the saved weights bit-identical to the record") == 2
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    path = _record(copy, 0)  # the network altered and the record re-sealed: only a re-evaluation sees it
    rec = records.read_record(path)
    params = records.load_params(path.with_suffix(".npz"))
    params[-1] = (params[-1][0] * (1 + 1e-6), params[-1][1])
    records.write_record(copy, rec.with_(weights_sha256=records.sha256(records.run_npz_bytes(params, rec.history))),
                         params)
    r = _verify(config, copy, "--all", "--weights")
    assert r.exit_code == 1, r.output
    assert "MISMATCH  elliptic-2d pinn L3-M6 seed 0: weights, exact (the platform that made the record" in r.output
    assert "1 of 2 run(s) reproduce the archive; 1 do not" in r.output
