"""Checkpoints: an interrupted LySep run resumes where it stopped and ends with the uninterrupted run's
numbers, bit for bit; a checkpoint of another run, other settings or other code is not used."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from typer.testing import CliRunner

from lysep_cli.store.checkpoint import Checkpoint, checkpoint_path, saved_sweeps
from lysep_cli.cli import app
from lysep_cli.numerics.network import init_params
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers.base import TrainingData
from lysep_cli.solvers.lysep.algorithm import solve

from foundation_helpers import RESUME_TIMING, resumable_part, tiny_lysep_run, tiny_lysep_yaml, write_tiny

SETTINGS = {"step_rule": "backtracking", "tau": 1.0e-8, "weights": "frozen", "w3_b3": "separate"}


def tiny(pde: str, L: int):
    P = make_problem(pde, 2)
    Z, _ = train_test_points(40, 4, 2, P.time_dependent)
    return P, TrainingData.build(P, Z), init_params(P.n_in, L, 6, 0)


class Stop(Exception):
    pass


def stop_after(k_stop: int):
    def progress(k: int, value: float) -> None:
        if k + 1 == k_stop:
            raise Stop
    return progress


def same_result(a, b) -> None:
    for (Wa, ba), (Wb, bb) in zip(a.params, b.params):
        assert np.array_equal(Wa, Wb) and np.array_equal(ba, bb)
    assert a.history == b.history and a.bound == b.bound and a.J_S == b.J_S and a.status == b.status
    strip = lambda d: {k: v for k, v in d.items() if k not in RESUME_TIMING}  # noqa: E731
    assert strip(a.diagnostics) == strip(b.diagnostics)


@pytest.mark.parametrize("pde,L", [("elliptic", 3), ("hyperbolic", 3), ("parabolic", 4)])
def test_a_resumed_run_is_the_uninterrupted_run(tmp_path, pde, L):
    P, td, params0 = tiny(pde, L)
    whole = solve(P, td, params0, SETTINGS, 12)
    ckpt = Checkpoint(tmp_path / "c.npz", {"run": pde}, every=0.0)
    with pytest.raises(Stop):
        solve(P, td, params0, SETTINGS, 12, stop_after(5), checkpoint=ckpt)  # dies after sweep 5
    assert ckpt.path.exists()
    resumed = solve(P, td, params0, SETTINGS, 12, checkpoint=Checkpoint(ckpt.path, {"run": pde}, every=0.0))
    assert resumed.diagnostics["resumed_at_sweeps"] == [5]
    same_result(resumed, whole)


def test_a_checkpoint_of_another_run_is_not_used(tmp_path):
    P, td, params0 = tiny("elliptic", 3)
    ckpt = Checkpoint(tmp_path / "c.npz", {"run": "a"}, every=0.0)
    with pytest.raises(Stop):
        solve(P, td, params0, SETTINGS, 12, stop_after(5), checkpoint=ckpt)
    other = Checkpoint(ckpt.path, {"run": "b"}, every=0.0)
    assert other.load() is None
    fresh = solve(P, td, params0, SETTINGS, 12, checkpoint=other)
    assert "resumed_at_sweeps" not in fresh.diagnostics
    same_result(fresh, solve(P, td, params0, SETTINGS, 12))
    whole_file = ckpt.path.read_bytes()
    for damaged in (b"not an npz", whole_file[:200], whole_file[: len(whole_file) // 2]):  # ignored too
        ckpt.path.write_bytes(damaged)
        assert Checkpoint(ckpt.path, {"run": "a"}).load() is None and saved_sweeps(ckpt.path) is None


YAML = tiny_lysep_yaml(iterations=300, seeds="0")


def test_a_killed_lysep_run_resumes_from_its_checkpoint(tmp_path):
    """SIGKILL mid-run (no handler runs): the next `lysep run` goes on from the last checkpoint and
    writes the record an uninterrupted run writes (timings aside); the checkpoint is then removed."""
    config = write_tiny(tmp_path, YAML)
    env = {**os.environ, "LYSEP_CHECKPOINT_SECONDS": "0"}
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    proc = tiny_lysep_run(config, killed, env)
    ckpt = checkpoint_path(killed, "tiny", "lysep", 3, 6, 0)
    deadline = time.monotonic() + 60
    while not ckpt.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)  # kill at the first checkpoint: far from the end of the run
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=20)
    assert ckpt.exists(), "no checkpoint was written before the kill"
    assert not (killed / "tiny/lysep/L3-M6/seed-0.json").exists(), "the run finished before the kill"
    status = CliRunner().invoke(app, ["status", "tiny", "--config", str(config), "--results", str(killed)])
    assert f"| 0 (0 at sweep {saved_sweeps(ckpt)}) |" in status.output and saved_sweeps(ckpt) > 0

    again = tiny_lysep_run(config, killed, env)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert "resumed from a checkpoint at sweep" in out + err
    assert not ckpt.exists()
    ref = tiny_lysep_run(config, whole, {**env, "LYSEP_CHECKPOINT_SECONDS": "off"})
    ref.communicate(timeout=300)
    rec = json.loads((killed / "tiny/lysep/L3-M6/seed-0.json").read_text())
    want = json.loads((whole / "tiny/lysep/L3-M6/seed-0.json").read_text())
    assert rec["diagnostics"]["resumed_at_sweeps"][0] > 0
    assert resumable_part(rec) == resumable_part(want)
    assert rec["seconds"] >= want["seconds"] * 0.3  # the parts before the kill are counted
    assert (killed / "tiny/lysep/L3-M6/seed-0.npz").read_bytes() == (whole / "tiny/lysep/L3-M6/seed-0.npz").read_bytes()


def test_a_resumed_run_with_backoff_keeps_the_step_rules_state(tmp_path):
    """The back-off of the step rule (skip, backoff, last) is part of the checkpoint."""
    P, td, params0 = tiny("elliptic", 3)
    settings = {**SETTINGS, "backoff_max": 8}
    whole = solve(P, td, params0, settings, 30)
    ckpt = Checkpoint(tmp_path / "c.npz", {"run": "b"}, every=0.0)
    with pytest.raises(Stop):
        solve(P, td, params0, settings, 30, stop_after(17), checkpoint=ckpt)
    resumed = solve(P, td, params0, settings, 30, checkpoint=Checkpoint(ckpt.path, {"run": "b"}, every=0.0))
    assert resumed.diagnostics["resumed_at_sweeps"] == [17]
    assert resumed.diagnostics["trials"] == whole.diagnostics["trials"]
    same_result(resumed, whole)
