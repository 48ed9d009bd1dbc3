"""Two ``lysep run`` commands never make the same run at once (lysep_cli/store/locks.py): real processes."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli.store import locks
from lysep_cli.cli import app

from foundation_helpers import default_sigint, write_tiny

pytestmark = pytest.mark.skipif(locks.fcntl is None, reason="POSIX record locks only")

cli = CliRunner()
RUN = ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6"]


def hold_in_subprocess(results: Path, runs: list[tuple[str, int, int, int]]) -> subprocess.Popen:
    """Another process that locks ``runs`` and keeps them until its stdin closes."""
    code = textwrap.dedent(f"""
        import sys
        from lysep_cli.store.locks import RunLocks
        held = RunLocks()
        held.acquire({str(results)!r}, "elliptic-2d", {runs!r})
        print("held", flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_run_held_elsewhere_is_busy_and_others_are_not(tmp_path):
    other = hold_in_subprocess(tmp_path, [("pinn", 3, 6, 1), ("pinn", 3, 6, 2)])
    try:
        with locks.RunLocks() as mine:
            assert mine.acquire(tmp_path, "elliptic-2d", [("pinn", 3, 6, 0), ("lysep", 3, 6, 1)]) == 2
            assert mine.acquire(tmp_path, "elliptic-2d", [("pinn", 3, 6, 0)]) == 0  # held already: nothing new
            with pytest.raises(locks.Busy, match=r"L3-M6: seed\(s\) 1-2 are being run by another lysep run"):
                mine.acquire(tmp_path, "elliptic-2d", [("pinn", 3, 6, s) for s in range(4)])
    finally:
        other.stdin.close()
        other.wait(timeout=10)
    with locks.RunLocks() as mine:  # its end dropped its locks
        assert mine.acquire(tmp_path, "elliptic-2d", [("pinn", 3, 6, 1), ("pinn", 3, 6, 2)]) == 2


def _start_run(config: Path, results: Path, seeds: str, *extra: str) -> subprocess.Popen:
    """A long ``lysep run`` in a subprocess, returned once it computes (its data set is written after
    it has locked its runs)."""
    cmd = [sys.executable, "-m", "lysep_cli.cli", *RUN, "--seeds", seeds, "--iterations", "300000",
           "--config", str(config), "--results", str(results), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    data = results / "elliptic-2d" / "data.npz"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None and not data.exists():
        time.sleep(0.05)
    assert proc.poll() is None and data.exists(), proc.poll()
    return proc


def test_lysep_run_refuses_runs_another_lysep_run_is_making(tmp_path):
    config, results = write_tiny(tmp_path), tmp_path / "results"
    first = _start_run(config, results, "0-1")
    try:
        same = cli.invoke(app, [*RUN, "--seeds", "1-2", "--iterations", "3", "--config", str(config),
                                "--results", str(results)])
        assert same.exit_code == 2, same.output
        lines = same.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lysep: error: ") and "seed(s) 0-1" not in lines[0]
        assert "seed(s) 1 are being run by another lysep run" in lines[0]
        assert not (results / "elliptic-2d" / "pinn" / "L3-M6" / "seed-2.json").exists()  # not even seed 2

        other = cli.invoke(app, [*RUN, "--seeds", "2", "--iterations", "3", "--config", str(config),
                                 "--results", str(results)])
        assert other.exit_code == 0, other.output  # another seed of the same cell goes on beside it
        assert (results / "elliptic-2d" / "pinn" / "L3-M6" / "seed-2.json").exists()
    finally:
        first.send_signal(signal.SIGKILL)  # however it ends, its locks go with it
        first.communicate(timeout=20)
    after = cli.invoke(app, [*RUN, "--seeds", "0-1", "--iterations", "3", "--config", str(config),
                             "--results", str(results)])
    assert after.exit_code == 0, after.output
    assert (results / "elliptic-2d" / "pinn" / "L3-M6" / "seed-1.json").exists()


def test_nothing_to_do_locks_nothing(tmp_path):
    config, results = write_tiny(tmp_path), tmp_path / "results"
    args = [*RUN, "--seeds", "0", "--iterations", "3", "--config", str(config), "--results", str(results)]
    assert cli.invoke(app, args).exit_code == 0
    lock = results / "elliptic-2d" / "pinn" / "L3-M6" / locks.LOCK_NAME
    assert lock.exists()
    lock.unlink()
    assert cli.invoke(app, args).exit_code == 0  # every run skipped: no lock file made
    assert not lock.exists()


def test_status_names_the_runs_held_for_later(tmp_path):
    config, results = write_tiny(tmp_path), tmp_path / "results"
    assert cli.invoke(app, [*RUN, "--seeds", "0", "--config", str(config), "--results", str(results)]).exit_code == 0
    cell = results / "elliptic-2d" / "pinn" / "L3-M6"
    assert locks.held_by_others(cell, [0, 1]) == ([], [])
    other = hold_in_subprocess(results, [("pinn", 3, 6, 1)])  # held, never marked started
    try:
        assert locks.held_by_others(cell, [0, 1]) == ([1], [])
        shown = cli.invoke(app, ["status", "elliptic-2d", "--solver", "pinn", "--config", str(config),
                                 "--results", str(results)])
        assert shown.exit_code == 0, shown.output
        assert "| (3,6) | 1/2 | 1 (1 queued) |" in shown.stdout
    finally:
        other.stdin.close()
        other.wait(timeout=10)
    shown = cli.invoke(app, ["status", "elliptic-2d", "--solver", "pinn", "--config", str(config),
                             "--results", str(results)])
    assert "| (3,6) | 1/2 | 1 |" in shown.stdout


def test_status_tells_the_run_computed_now_from_the_queued_ones(tmp_path):
    config, results = write_tiny(tmp_path), tmp_path / "results"
    first = _start_run(config, results, "0-3")  # one job: seed 0 is computed, seeds 1-3 wait
    cell = results / "elliptic-2d" / "pinn" / "L3-M6"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and locks.held_by_others(cell, range(4))[1] != [0]:
            time.sleep(0.05)
        assert locks.held_by_others(cell, range(4)) == ([1, 2, 3], [0])
        shown = cli.invoke(app, ["status", "elliptic-2d", "--solver", "pinn", "--config", str(config),
                                 "--results", str(results)])  # the spec's seeds: 0-1
        assert shown.exit_code == 0, shown.output
        assert "| (3,6) | 0/2 | 0-1 (0 running; 1 queued) |" in shown.stdout
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=20)
    assert locks.held_by_others(cell, range(4)) == ([], [])


def test_worker_processes_runs_are_marked_running(tmp_path):
    config, results = write_tiny(tmp_path), tmp_path / "results"
    first = _start_run(config, results, "0-2", "--jobs", "2")  # seeds 0 and 1 in two workers, seed 2 waits
    cell = results / "elliptic-2d" / "pinn" / "L3-M6"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and locks.held_by_others(cell, range(3))[1] != [0, 1]:
            time.sleep(0.1)
        assert locks.held_by_others(cell, range(3)) == ([2], [0, 1])
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=20)


def test_a_run_marked_started_and_ended(tmp_path):
    with locks.RunLocks() as mine:
        mine.acquire(tmp_path, "elliptic-2d", [("pinn", 3, 6, 0), ("pinn", 3, 6, 1)])
        mine.mark_started(tmp_path, "elliptic-2d", ("pinn", 3, 6, 1))
        mine.mark_started(tmp_path, "elliptic-2d", ("pinn", 3, 6, 5))  # not held: left alone
        cell = tmp_path / "elliptic-2d" / "pinn" / "L3-M6"
        code = f"from lysep_cli.store import locks; print(locks.held_by_others({str(cell)!r}, range(6)))"
        ask = [sys.executable, "-c", code]  # another process asks (this one's own locks never block it)
        assert subprocess.run(ask, capture_output=True, text=True, check=True).stdout.strip() == "([0], [1])"
        mine.mark_started(tmp_path, "elliptic-2d", ("pinn", 3, 6, 1), started=False)
        assert subprocess.run(ask, capture_output=True, text=True, check=True).stdout.strip() == "([0, 1], [])"


def test_compact_leaves_a_run_being_made_alone(tmp_path):
    from lysep_cli.store.compact import compact_folder

    config, results = write_tiny(tmp_path), tmp_path / "results"
    args = [*RUN, "--seeds", "0-1", "--config", str(config), "--results", str(results)]
    assert cli.invoke(app, args).exit_code == 0
    other = hold_in_subprocess(results, [("pinn", 3, 6, 1)])
    try:
        rewritten, kept, problems, _ = compact_folder(results)
    finally:
        other.stdin.close()
        other.wait(timeout=10)
    assert (rewritten, kept) == (0, 1)
    assert len(problems) == 1 and "seed-1.json: not compacted" in problems[0] and "another lysep run" in problems[0]
    assert compact_folder(results)[:3] == (0, 2, [])
