"""A stop (Ctrl-C, SIGTERM) during a LySep run saves its checkpoint at the end of the sweep in progress,
then acts (lysep_cli/execution/stopping.py): the next run resumes from the sweep of the stop, not from the last
interval checkpoint, and ends with the uninterrupted run's numbers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from lysep_cli.execution import stopping
from lysep_cli.store.checkpoint import checkpoint_path, saved_sweeps
from lysep_cli.execution.interrupts import Terminated
from lysep_cli.store.locks import held_by_others

from foundation_helpers import children, resumable_part, tiny_lysep_run, tiny_lysep_yaml, wait_gone, write_tiny

YAML = tiny_lysep_yaml(iterations=600, seeds="0, 1")
#: no interval checkpoint within a test: a checkpoint on disk can only be the stop's
NO_INTERVAL = {"LYSEP_CHECKPOINT_SECONDS": "3600"}


@pytest.fixture
def ctrl_c_raises():
    """SIGINT handled as in a terminal (the test run may have inherited it ignored), restored after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def saving_checkpoint(tmp_path: Path) -> stopping.SavingCheckpoint:
    return stopping.SavingCheckpoint(tmp_path / "c.npz", {"run": 1}, every=None)


# ---------------------------------------------------------------------------------------------
# In this process: the handler, the checkpoint's due(), check() and the end of the block.

@pytest.mark.parametrize("sig,kind", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_the_first_stop_waits_for_the_checkpoint(tmp_path, ctrl_c_raises, sig, kind):
    ckpt = saving_checkpoint(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(kind):
        with stopping.deferred(True):
            assert not ckpt.due()  # no interval (every=None), no stop: not due
            signal.raise_signal(sig)  # held back: no exception here
            assert isinstance(stopping.pending(), kind) and ckpt.due()
            stopping.check(0, 10)  # the stop came after this sweep's save: it waits for the next one
            assert stopping.pending() is not None
            ckpt.save({"loop": {"k": 2}}, {})
            stopping.check(1, 10)  # after sweep 2 of 10, saved: acts
            pytest.fail("check() did not act on the stop")
    assert stopping.pending() is None and signal.getsignal(signal.SIGTERM) is before


def test_a_second_stop_acts_at_once(ctrl_c_raises):
    with pytest.raises(KeyboardInterrupt):
        with stopping.deferred(True):
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            pytest.fail("the second Ctrl-C was held back too")
    assert stopping.pending() is None


def test_a_stop_in_the_last_sweep_lets_the_run_finish(ctrl_c_raises):
    finished = []
    with pytest.raises(KeyboardInterrupt):
        with stopping.deferred(True):
            signal.raise_signal(signal.SIGINT)
            stopping.check(9, 10)  # the last sweep: no save comes, the record is written first
            finished.append(True)
    assert finished == [True] and stopping.pending() is None


def test_without_a_checkpoint_a_stop_acts_at_once(tmp_path, ctrl_c_raises):
    with pytest.raises(KeyboardInterrupt):
        with stopping.deferred(False):
            signal.raise_signal(signal.SIGINT)
            pytest.fail("a run without a checkpoint held the stop back")
    assert not saving_checkpoint(tmp_path).due()


# ---------------------------------------------------------------------------------------------
# Real processes.

def wait_running(proc: subprocess.Popen, cell: Path, seeds: list[int]) -> None:
    """Until ``lysep run`` marks every one of ``seeds`` as computed (its first progress report)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if sorted(held_by_others(cell, seeds)[1]) == seeds:
            time.sleep(0.3)  # a few sweeps into the runs
            return
        time.sleep(0.02)
    pytest.fail(f"the runs never started (exit {proc.poll()}): {proc.communicate()[1][-2000:]}")


@pytest.mark.parametrize("sig,code,resume", [(signal.SIGINT, 130, True), (signal.SIGTERM, 143, False)])
def test_a_stopped_run_resumes_from_the_sweep_of_the_stop(tmp_path, sig, code, resume):
    config = write_tiny(tmp_path, YAML)
    env = {**os.environ, **NO_INTERVAL}
    stopped, whole = tmp_path / "stopped", tmp_path / "whole"
    cell = stopped / "tiny/lysep/L3-M6"
    proc = tiny_lysep_run(config, stopped, env, "--seeds", "0")
    wait_running(proc, cell, [0])
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "a LySep run saved its checkpoint" in err
    ckpt = checkpoint_path(stopped, "tiny", "lysep", 3, 6, 0)
    k = saved_sweeps(ckpt)
    assert k is not None and 0 < k < 600, "no checkpoint saved at the stop"
    assert not (cell / "seed-0.json").exists()
    if not resume:
        return
    again = tiny_lysep_run(config, stopped, env, "--seeds", "0")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert f"resumed from a checkpoint at sweep {k}" in out + err
    ref = tiny_lysep_run(config, whole, {**env, "LYSEP_CHECKPOINT_SECONDS": "off"}, "--seeds", "0")
    ref.communicate(timeout=120)
    rec = json.loads((cell / "seed-0.json").read_text())
    want = json.loads((whole / "tiny/lysep/L3-M6/seed-0.json").read_text())
    assert rec["diagnostics"]["resumed_at_sweeps"] == [k]
    assert resumable_part(rec) == resumable_part(want)
    assert (cell / "seed-0.npz").read_bytes() == (whole / "tiny/lysep/L3-M6/seed-0.npz").read_bytes()


def test_workers_save_their_runs_when_the_sweep_is_stopped(tmp_path):
    """``--jobs 2``, SIGTERM to the parent: each worker saves its LySep run at the end of its sweep and
    exits; the command exits 143 within the grace period, no worker is left, no record written."""
    config = write_tiny(tmp_path, YAML)
    results = tmp_path / "results"
    cell = results / "tiny/lysep/L3-M6"
    proc = tiny_lysep_run(config, results, {**os.environ, **NO_INTERVAL}, "--seeds", "0-1", "--jobs", "2")
    wait_running(proc, cell, [0, 1])
    kids = children(proc.pid)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=stopping.GRACE_SECONDS + 20)
    assert proc.returncode == 143, err
    assert time.monotonic() - t0 < stopping.GRACE_SECONDS, "the workers were killed, not stopped"
    assert "Traceback" not in err
    for seed in (0, 1):
        k = saved_sweeps(checkpoint_path(results, "tiny", "lysep", 3, 6, seed))
        assert k is not None and 0 < k < 600, f"seed {seed}: no checkpoint saved at the stop"
        assert not (cell / f"seed-{seed}.json").exists()
    assert kids and wait_gone(kids) == [], "a worker outlived the stop"
