"""Fault injection: signals, killed processes, damaged files, mixed settings, bad paths.

Every test is bounded (a few seconds) and checks the same promises: the right exit code, one line on
stderr for bad input, no traceback, no process left behind, no record lost, corrupted or mixed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli.store import records
from lysep_cli.cli import app
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.specs import load_specs

from foundation_helpers import (untimed, TINY_YAML, children, default_sigint, files_under, snapshot,
                                wait_gone, write_tiny)

cli = CliRunner()
RUN = ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6"]


@pytest.fixture
def tiny(tmp_path):
    return write_tiny(tmp_path), tmp_path / "results"


def invoke(args, config, results, *extra):
    return cli.invoke(app, [*args, "--config", str(config), "--results", str(results), *extra])


def one_error_line(result, code=2):
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lysep: error: "), result.stderr
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)


def without_timing(files: dict[str, bytes]) -> dict[str, object]:
    """A snapshot with each run record's wall time removed (the only field that differs on a rerun)."""
    out: dict[str, object] = {}
    for name, data in files.items():
        if name.endswith(".json"):
            out[name] = untimed(json.loads(data))
        else:
            out[name] = data
    return out


def complete_records(results: Path) -> list[str]:
    """Relative paths of the JSON records; every one must have its NPZ and read back valid."""
    out = []
    for path in sorted(results.rglob("seed-*.json")):
        records.read_record(path)  # raises on a corrupted record
        out.append(str(path.relative_to(results)))
    npz = sorted(str(p.relative_to(results)) for p in results.rglob("seed-*.npz"))
    assert [p[:-5] for p in out] == [p[:-4] for p in npz], "a record without its weights, or the reverse"
    return out


# ---------------------------------------------------------------------------------------------
# Processes.

def start_sweep(config: Path, results: Path, jobs: int = 2) -> tuple[subprocess.Popen, list[int]]:
    """A long ``--jobs`` sweep in a subprocess; returns it once its workers run (and their pids)."""
    cmd = [sys.executable, "-m", "lysep_cli.cli", *RUN, "--seeds", "0-5", "--iterations", "300000",
           "--jobs", str(jobs), "--config", str(config), "--results", str(results)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    data = results / "elliptic-2d" / "data.npz"  # written just before the runs start
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if data.exists() and (jobs == 1 or len(children(proc.pid)) >= jobs):
            break
        time.sleep(0.1)
    time.sleep(1.5)  # let the runs start computing
    kids = children(proc.pid)
    assert proc.poll() is None and len(kids) >= (jobs if jobs > 1 else 0), (kids, proc.poll())
    return proc, kids


@pytest.mark.parametrize("jobs", [2, 1])
def test_sigterm_is_handled_like_ctrl_c(tiny, jobs):
    config, results = tiny
    proc, kids = start_sweep(config, results, jobs)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "Traceback" not in err
    assert "checkpoint" not in err  # PINN keeps none: the line does not promise one
    assert wait_gone(kids) == []
    assert not [f for f in files_under(results) if f.endswith(".tmp")]
    complete_records(results)


def test_sigkill_of_the_parent_leaves_no_worker(tiny):
    config, results = tiny
    proc, kids = start_sweep(config, results, 2)
    proc.kill()
    proc.wait(timeout=10)
    assert wait_gone(kids) == [], "workers outlived their SIGKILLed parent"
    complete_records(results)


def test_a_killed_worker_fails_its_runs_not_the_program(tiny):
    """A worker lost (OOM killer, kill -9): its runs are reported failed (exit 1), no traceback, and the
    same command afterwards finishes the sweep."""
    config, results = tiny
    proc, kids = start_sweep(config, results, 2)
    workers = [k for k in kids if "resource_tracker" not in Path(f"/proc/{k}/cmdline").read_text()]
    os.kill(workers[0], signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "failed, no record" in out and "Traceback" not in err + out
    assert wait_gone(kids) == []
    complete_records(results)


# ---------------------------------------------------------------------------------------------
# Damaged files.

def test_stale_temp_files_are_removed_at_the_next_run(tiny):
    config, results = tiny
    assert invoke(RUN + ["--seeds", "0"], config, results).exit_code == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    cell = results / "elliptic-2d/pinn/L3-M6"
    stale = [cell / f".seed-0.json.{dead.pid}.0badc0de.tmp", cell / ".seed-1.npz.abc123.tmp",
             results / "elliptic-2d" / f".data.npz.{dead.pid}.1234abcd.tmp"]
    live = cell / f".seed-2.json.{os.getpid()}.feedbeef.tmp"  # another lysep still writing: kept
    for p in stale + [live]:
        p.write_bytes(b"partial")
    result = invoke(RUN + ["--seeds", "0"], config, results)
    assert result.exit_code == 0 and result.stderr.count("left by an interrupted lysep") == 3
    assert not any(p.exists() for p in stale) and live.exists()


@pytest.mark.parametrize("damage", ["truncate", "delete", "garbage"])
def test_data_set_restored_even_when_every_run_is_skipped(tiny, damage):
    config, results = tiny
    assert invoke(RUN + ["--seeds", "0-1"], config, results).exit_code == 0
    data = results / "elliptic-2d/data.npz"
    good = data.read_bytes()
    if damage == "truncate":
        os.truncate(data, 300)
    elif damage == "delete":
        data.unlink()
    else:
        data.write_bytes(b"\x00" * 5000)
    result = invoke(RUN + ["--seeds", "0-1"], config, results)
    assert result.exit_code == 0 and "0 run(s) to do, 2 skipped" in result.stderr
    assert "restored" in result.stderr and data.read_bytes() == good
    spec = load_specs(config)["elliptic-2d"]
    assert records.check_data(results, "elliptic-2d", experiment_data(spec).sha256) == "ok"
    os.truncate(data, len(good) // 2)  # the reproduction: damaged data.npz, then a run with work
    assert invoke(RUN + ["--seeds", "2"], config, results).exit_code == 0 and data.read_bytes() == good


@pytest.mark.parametrize("damage", ["json-truncated", "json-empty-object", "json-list", "json-wrong-types",
                                    "json-old-schema", "json-moved", "npz-truncated", "npz-missing",
                                    "npz-replaced", "json-binary"])
def test_damaged_record_is_named_not_counted_and_redone(tiny, damage):
    config, results = tiny
    assert invoke(RUN + ["--seeds", "0-1"], config, results).exit_code == 0
    good = snapshot(results)
    js = results / "elliptic-2d/pinn/L3-M6/seed-0.json"
    npz = js.with_suffix(".npz")
    rec = json.loads(js.read_text())
    if damage == "json-truncated":
        js.write_text(js.read_text()[:200])
    elif damage == "json-empty-object":
        js.write_text("{}")
    elif damage == "json-list":
        js.write_text("[1, 2]")
    elif damage == "json-wrong-types":
        js.write_text(json.dumps({**rec, "L": "3", "final": {"J": "small"}}))
    elif damage == "json-old-schema":
        js.write_text(json.dumps({k: v for k, v in rec.items() if k != "schema"}))
    elif damage == "json-moved":
        js.write_text(json.dumps({**rec, "seed": 1}))
    elif damage == "npz-truncated":
        os.truncate(npz, 500)
    elif damage == "npz-missing":
        npz.unlink()
    elif damage == "npz-replaced":
        npz.write_bytes((js.parent / "seed-1.npz").read_bytes())
    else:
        js.write_bytes(b"\xff\xfe\x00garbage")
    table = invoke(["table", "elliptic-2d"], config, results)
    assert table.exit_code == 0, table.output
    warning = [l for l in table.stderr.splitlines() if "warning" in l]
    assert len(warning) == 1 and str(js) in warning[0] and "not counted" in warning[0]
    assert "| (3,6)   | PINN    | = J" in table.stdout and "1/2 ‡" in table.stdout  # the good seed only
    assert "1 invalid record file(s)" in table.stdout
    run = invoke(RUN + ["--seeds", "0-1"], config, results)
    assert run.exit_code == 0 and "1 run(s) to do, 1 skipped" in run.stderr and "redoing this run" in run.stderr
    assert without_timing(snapshot(results)) == without_timing(good)  # redone bit for bit
    complete_records(results)


# ---------------------------------------------------------------------------------------------
# Mixed settings.

def test_other_iterations_are_never_overwritten_without_force(tiny):
    config, results = tiny
    assert invoke(RUN + ["--seeds", "0-1", "--iterations", "30"], config, results).exit_code == 0
    before = snapshot(results)
    quick = invoke(RUN + ["--seeds", "0-1", "--iterations", "3"], config, results)
    one_error_line(quick)
    assert "2 run(s) already have a record made with other iterations" in quick.stderr
    assert "iterations 30, not 3" in quick.stderr and "--force" in quick.stderr
    assert snapshot(results) == before
    forced = invoke(RUN + ["--seeds", "0-1", "--iterations", "3", "--force"], config, results)
    assert forced.exit_code == 0 and "2 replaced (--force)" in forced.stderr
    assert {json.loads(p.read_text())["iterations"] for p in results.rglob("seed-*.json")} == {3}


@pytest.mark.parametrize("change", [("lr: 1.0e-3, lr_final: 1.0e-4", "lr: 2.0e-3, lr_final: 1.0e-4"),
                                    ("n_train: 60", "n_train: 50"), ("n_test: 40", "n_test: 41"),
                                    ("solution: exp-sin", "solution: sin-radial")])
def test_changed_spec_is_not_mixed_into_tables(tiny, tmp_path, change):
    config, results = tiny
    assert invoke(RUN + ["--seeds", "0-1"], config, results).exit_code == 0
    before = snapshot(results)
    (tmp_path / "b").mkdir()
    # the changed spec asks for seed 2 too: a seed it does not ask for would be left out (issue 56)
    changed = write_tiny(tmp_path / "b", TINY_YAML.replace(*change).replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    refused = invoke(RUN + ["--seeds", "0-1"], changed, results)
    one_error_line(refused)
    assert snapshot(results) == before
    # A new seed under the changed spec: now one record matches it, two do not.
    assert invoke(RUN + ["--seeds", "2"], changed, results).exit_code == 0
    table = invoke(["table", "elliptic-2d"], changed, results)
    assert table.exit_code == 0 and "1/3 ‡" in table.stdout
    assert "Not shown: 2 run record(s) that do not match the spec" in table.stdout
    old = invoke(["table", "elliptic-2d"], config, results)  # the old spec still sees its own two
    assert old.exit_code == 0 and "2/2" in old.stdout and "Not shown: 1 run record(s)" in old.stdout
    compare = invoke(["compare", "elliptic-2d"], changed, results)
    assert compare.exit_code == 0 and "Not shown: 2 run record(s)" in compare.stdout
    for command in (["table", "elliptic-2d"], ["table"], ["compare"], ["plot", "elliptic-2d"]):
        nothing = invoke(command + ["--iterations", "7"], changed, results)
        one_error_line(nothing, code=1)
        assert "3 record(s) left out" in nothing.stderr
    hint = invoke(["table", "--iterations", "7"], config, results)
    one_error_line(hint, code=1)
    assert "add --iterations 5" in hint.stderr  # the old spec's records differ only in their iterations


# ---------------------------------------------------------------------------------------------
# Bad paths, failed writes, permissions.

COMMANDS = {"run": RUN, "table": ["table"], "compare": ["compare"], "plot": ["plot", "elliptic-2d"],
            "study": ["study", "step-size", "elliptic-2d"], "list": ["list"]}
PATH_FAULTS = {"results-file": "run table compare plot study", "results-under-file": "run table compare plot study",
               "results-nul": "run table compare plot study",  # (--out DIR: DIR/tables.md, test_hostile_inputs.py)
               "out-under-file": "table compare plot study", "config-dir": "run table compare plot study list",
               "config-missing": "run table compare plot study list",
               "config-binary": "run table compare plot study list"}


@pytest.mark.parametrize("command,where", [(COMMANDS[c], w) for w, cs in PATH_FAULTS.items() for c in cs.split()])
def test_bad_paths_one_line_exit_2_nothing_written(tmp_path, command, where):
    with_lysep = TINY_YAML.replace("[[3, 6], [2, 5]]", "[[3, 6]]").replace(
        "      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n", "      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n      lysep: {}\n")
    config = write_tiny(tmp_path, with_lysep)
    results = tmp_path / "results"
    (results / "elliptic-2d").mkdir(parents=True)
    afile = tmp_path / "afile"
    afile.write_text("x")
    args = list(command) + ["--config", str(config)]
    takes_results = command[0] != "list"
    if where == "results-file":
        args += ["--results", str(afile)]
    elif where == "results-under-file":
        args += ["--results", str(afile / "sub")]
    elif where == "results-nul":
        args += ["--results", str(tmp_path / "a\x00b")]
    elif where == "out-dir":
        args += ["--results", str(results), "--out", str(tmp_path)]
    elif where == "out-under-file":
        args += ["--results", str(results), "--out", str(afile / "x")]
    elif where == "config-dir":
        args[args.index("--config") + 1] = str(tmp_path)
        args += ["--results", str(results)] if takes_results else []
    elif where == "config-missing":
        args[args.index("--config") + 1] = str(tmp_path / "nope.yaml")
        args += ["--results", str(results)] if takes_results else []
    else:
        (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00\x01")
        args[args.index("--config") + 1] = str(tmp_path / "bin.yaml")
        args += ["--results", str(results)] if takes_results else []
    before = snapshot(tmp_path)
    result = cli.invoke(app, args)
    one_error_line(result)
    named = {"results": "--results", "out": "--out", "config": "yaml"}[where.split("-")[0]]
    assert named in result.stderr or (named == "yaml" and str(tmp_path) in result.stderr), result.stderr
    assert snapshot(tmp_path) == before


def test_a_failed_write_is_one_line_exit_1(tiny):
    config, results = tiny
    (results / "elliptic-2d").mkdir(parents=True)
    (results / "elliptic-2d" / "pinn").write_text("a file where a directory should be")
    result = invoke(RUN + ["--seeds", "0"], config, results)
    assert result.exit_code == 1 and "Traceback" not in result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lysep: error: ") and "Not a directory" in last


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_files_are_created_with_the_process_umask(tiny, umask, mode):
    config, results = tiny
    old = os.umask(umask)
    try:
        assert invoke(RUN + ["--seeds", "0"], config, results).exit_code == 0
        out = results / "t.md"  # (--out creates no directory: its own must exist)
        assert invoke(["table", "--out", str(out)], config, results).exit_code == 0
    finally:
        os.umask(old)
    files = [p for p in results.rglob("*") if p.is_file()]
    assert sorted(p.name for p in files) == [".runs.lock", "data.npz", "seed-0.json", "seed-0.npz", "t.md"]
    assert {p.stat().st_mode & 0o777 for p in files} == {mode}
