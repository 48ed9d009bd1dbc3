"""The lysep CLI: bad input exits 2 with one line and writes nothing; run/skip/table; Ctrl-C exits 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app

from foundation_helpers import TINY_YAML, default_sigint, files_under, write_tiny

cli = CliRunner()


@pytest.fixture
def tiny(tmp_path):
    return write_tiny(tmp_path), tmp_path / "results"


@pytest.mark.parametrize("args,needle", [
    (["run", "nope"], "unknown experiment 'nope'"),
    (["run", "elliptic-2d", "--sizes", "3x0"], "--sizes"),
    (["run", "elliptic-2d", "--seeds", "5-2"], "--seeds"),
    (["run", "elliptic-2d", "--solver", "magic"], "unknown solver"),
    (["run", "elliptic-2d", "--iterations", "0"], "--iterations"),
    (["run", "elliptic-2d", "--jobs", "0"], "--jobs"),
    (["verify", "elliptic-2d", "--jobs", "0"], "--jobs"),
    (["table", "nope"], "unknown experiment"),
    (["table", "--format", "html"], "--format"),
    (["compare", "nope"], "unknown experiment"),
    (["plot", "nope"], "unknown experiment"),
    (["run", "elliptic-2d", "--sizes", ""], "--sizes: empty"),
    (["run", "elliptic-2d", "--seeds", " "], "--seeds: empty"),
    (["run", "elliptic-2d", "--solver", ""], "--solver: empty"),
    (["table", "--iterations", "0"], "--iterations"),
    (["compare", "--format", "csv"], "--format"),
    (["study", "step-size", "elliptic-2d"], "no lysep settings"),
])
def test_bad_input_exit_2_nothing_written(tiny, args, needle):
    config, results = tiny
    out = results.parent / "out.md"
    result = cli.invoke(app, args + ["--config", str(config), "--results", str(results)]
                        + (["--out", str(out)] if args[0] in ("table", "compare") else []))
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not results.exists() and not out.exists()


def test_version_and_help():
    result = cli.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("lysep ")
    for command in (["--help"], ["run", "--help"], ["table", "--help"], ["study", "step-size", "--help"]):
        helptext = cli.invoke(app, command).stdout
        assert "--help" in helptext and "<bool>" not in helptext, command
    assert "--force" in cli.invoke(app, ["run", "--help"]).stdout


def test_broken_yaml(tmp_path):
    config = write_tiny(tmp_path, TINY_YAML.replace("seeds: [0, 1]", "seeds: [0, 1", 1))
    for cmd in (["run", "elliptic-2d"], ["list"], ["table"]):
        extra = ["--results", str(tmp_path / "results")] if cmd[0] != "list" else []
        result = cli.invoke(app, cmd + ["--config", str(config)] + extra)
        assert result.exit_code == 2
        assert "invalid YAML" in result.stderr and str(config) in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_run_skip_table(tiny):
    config, results = tiny
    base = ["--config", str(config), "--results", str(results)]
    result = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0-1"] + base)
    assert result.exit_code == 0, result.output
    assert len([f for f in files_under(results) if f.endswith(".json")]) == 2
    assert len([f for f in files_under(results) if f.endswith(".npz") and "seed-" in f]) == 2
    assert "summary of elliptic-2d" in result.stdout
    again = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0-1"] + base)
    assert again.exit_code == 0 and "0 run(s) to do, 2 skipped" in again.stderr
    tex = cli.invoke(app, ["table", "elliptic-2d", "--format", "latex"] + base)
    assert tex.exit_code == 0 and "\\begin{tabular}" in tex.stdout
    md_path = results.parent / "t" / "table.md"
    md_path.parent.mkdir(exist_ok=True)  # --out creates no directory
    md = cli.invoke(app, ["table", "--format", "markdown", "--out", str(md_path)] + base)
    assert md.exit_code == 0 and "| (3,6)" in md_path.read_text()
    listing = cli.invoke(app, ["list", "--config", str(config)])
    assert listing.exit_code == 0 and "elliptic-2d" in listing.stdout and "seeds 0-1" in listing.stdout


def test_same_numerics_runs_on_its_own_archive_and_refuses_one_made_by_other_numerics(tiny):
    """`lysep run --same-numerics` (make regenerate): an archive kept to one numerics id gets no run of
    another; the refusal is one line, exit 2, before anything runs."""
    import json

    config, results = tiny
    base = ["--config", str(config), "--results", str(results), "--solver", "pinn", "--sizes", "3x6"]
    first = cli.invoke(app, ["run", "elliptic-2d", "--seeds", "0", "--same-numerics"] + base)
    assert first.exit_code == 0, first.output  # an empty directory, then one of this code's records
    second = cli.invoke(app, ["run", "elliptic-2d", "--seeds", "1", "--same-numerics"] + base)
    assert second.exit_code == 0, second.output
    record = results / "elliptic-2d" / "pinn" / "L3-M6" / "seed-0.json"
    doc = json.loads(record.read_text())
    doc["versions"]["numerics"] = "0123456789abcdef"
    record.write_text(json.dumps(doc))
    before = sorted(files_under(results))
    refused = cli.invoke(app, ["run", "elliptic-2d", "--seeds", "0-1", "--same-numerics", "--force"] + base)
    assert refused.exit_code == 2, refused.output
    assert "holds records made by other numerics (1 of numerics id 0123456789abcdef)" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and sorted(files_under(results)) == before


def test_same_numerics_accepts_records_of_an_id_declared_of_the_same_bits(tiny, monkeypatch):
    """A code change that keeps every bit (fingerprint.SAME_BITS_AS: this code's id -> the archive's)
    may add runs to the archive under --same-numerics; without the declaration it may not."""
    import json

    from lysep_cli.store import fingerprint

    config, results = tiny
    base = ["--config", str(config), "--results", str(results), "--solver", "pinn", "--sizes", "3x6"]
    assert cli.invoke(app, ["run", "elliptic-2d", "--seeds", "0"] + base).exit_code == 0
    record = results / "elliptic-2d" / "pinn" / "L3-M6" / "seed-0.json"
    doc = json.loads(record.read_text())
    doc["versions"]["numerics"] = "0123456789abcdef"  # the archive's code, before a bit-preserving edit
    record.write_text(json.dumps(doc))
    refused = cli.invoke(app, ["run", "elliptic-2d", "--seeds", "1", "--same-numerics"] + base)
    assert refused.exit_code == 2, refused.output
    monkeypatch.setattr(fingerprint, "SAME_BITS_AS", {fingerprint.numerics_id(): "0123456789abcdef"})
    accepted = cli.invoke(app, ["run", "elliptic-2d", "--seeds", "1", "--same-numerics"] + base)
    assert accepted.exit_code == 0, accepted.output
    assert (results / "elliptic-2d" / "pinn" / "L3-M6" / "seed-1.json").exists()


@pytest.mark.parametrize("command", [["table"], ["table", "elliptic-2d"], ["compare"], ["compare", "elliptic-2d"],
                                     ["plot", "elliptic-2d"]])
def test_nothing_to_show_exit_1_the_same_everywhere(tiny, command):
    config, results = tiny
    base = ["--config", str(config), "--results", str(results)]
    missing = cli.invoke(app, command + base)  # --results does not exist: a bad path
    assert missing.exit_code == 2 and "no such directory" in missing.stderr
    results.mkdir()
    empty = cli.invoke(app, command + base)
    assert empty.exit_code == 1 and "no run record" in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1 and empty.stdout == ""
    assert files_under(results) == []


def test_ctrl_c_keeps_finished_runs(tiny):
    """SIGINT mid-sweep: exit 130, the finished run kept, no file for the run in flight."""
    config, results = tiny
    cmd = [sys.executable, "-m", "lysep_cli.cli", "run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6",
           "--seeds", "0-3", "--iterations", "3000", "--config", str(config), "--results", str(results)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    first = results / "elliptic-2d/pinn/L3-M6/seed-0.json"
    deadline = time.monotonic() + 60
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert first.exists()
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    done = [f for f in files_under(results) if "seed-" in f]
    assert "pinn/L3-M6/seed-0.json" in " ".join(done)
    assert len(done) % 2 == 0 and len(done) < 8  # whole records only, the interrupted run absent
    assert not [f for f in files_under(results) if f.endswith(".tmp")]
