"""``lysep run --device``: the stacked engine's plumbing (records, fingerprint), and its refusals (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from lysep_cli.accel import backend
from lysep_cli.store.fingerprint import stacked_numerics_id
from lysep_cli.cli import app

from foundation_helpers import LYSEP, PINN, experiment_yaml, experiments_yaml, write_tiny

cli = CliRunner()
YAML = experiments_yaml(
    experiment_yaml("elliptic-2d", {"pinn": PINN, "rfls": "{}", "lysep": LYSEP, "pinn-adam": "{}"}, table=1,
                    sizes=[[3, 6]], iterations=6, seeds=[0, 1, 2]),
    experiment_yaml("hyperbolic-5d", {"lysep": "{tau: 1.0e-3, weights: through, w3_b3: joint}"}, table=4, pde="hyperbolic", d=3,
                    solution=None, sizes=[[3, 5]], n_train=40, n_test=20, iterations=3, seeds=[0]))


@pytest.fixture
def tiny(tmp_path):
    return write_tiny(tmp_path, YAML), tmp_path / "results"


def _records(results) -> dict[str, dict]:
    return {str(p.relative_to(results)): json.loads(p.read_text()) for p in sorted(results.rglob("*.json"))
            if "seed" in p.name}


def _stacked_and_plain(args: list[str], results, plain) -> tuple[dict, dict]:
    """``lysep run ARGS`` with ``--device cpu-stacked`` into ``results`` and with the default device into
    ``plain``: (the stacked records, the plain ones), by file name; both runs exit 0."""
    stacked = cli.invoke(app, args + ["--results", str(results), "--device", "cpu-stacked"])
    assert stacked.exit_code == 0, stacked.output
    assert "device cpu-stacked" in stacked.stderr
    default = cli.invoke(app, args + ["--results", str(plain)])
    assert default.exit_code == 0, default.output
    return _records(results), _records(plain)


def test_cpu_stacked_writes_the_cpu_engines_records_with_its_own_fingerprint(tiny, tmp_path):
    """PINN and LySep on cpu-stacked: the same trained networks and histories as --device cpu (weights_sha256
    hashes both), the same finals and bound; the fingerprint naming the device, the array library and the
    stacked numerics id; rfls on the host."""
    config, results = tiny
    args = ["run", "elliptic-2d", "--solver", "pinn,lysep,rfls", "--config", str(config)]
    got, want = _stacked_and_plain(args, results, tmp_path / "plain")
    assert sorted(got) == sorted(want) and len(got) == 9
    for name, rec in got.items():
        assert rec["weights_sha256"] == want[name]["weights_sha256"] and rec["final"] == want[name]["final"]
        assert rec["bound"] == want[name]["bound"] and rec["status"] == want[name]["status"] == "ok"
        if rec["solver"] in ("pinn", "lysep"):
            assert rec["versions"]["device"] == "cpu-stacked"
            assert rec["versions"]["array_library"].startswith("numpy ")
            assert rec["versions"]["numerics"] == stacked_numerics_id() != want[name]["versions"]["numerics"]
            assert rec["diagnostics"]["stacked_seeds"] == 3
        else:  # rfls: the CPU engine's record
            assert "device" not in rec["versions"] and rec["versions"] == want[name]["versions"]
    again = cli.invoke(app, args + ["--results", str(results), "--device", "cpu-stacked"])
    assert again.exit_code == 0 and "0 run(s) to do" in again.stderr  # a stacked record is a record


@pytest.mark.parametrize("extra,needle", [
    (["--device", "tpu"], "--device tpu: choose from"),
    (["--device", "cpu-stacked", "--solver", "pinn-adam"], "not pinn-adam"),
    (["--device", "cpu-stacked", "--solver", "pinn", "--jobs", "2"], "drop --jobs"),
])
def test_device_bad_input_exit_2_nothing_written(tiny, extra, needle):
    config, results = tiny
    result = cli.invoke(app, ["run", "elliptic-2d", "--config", str(config), "--results", str(results)] + extra)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not results.exists()


def test_lysep_settings_of_our_own_run_stacked_with_the_cpu_engines_networks(tiny, tmp_path):
    """weights: through and w3_b3: joint (once refused by the stacked devices): the CPU engine's networks."""
    config, results = tiny
    args = ["run", "hyperbolic-5d", "--solver", "lysep", "--config", str(config)]
    got, want = _stacked_and_plain(args, results, tmp_path / "plain")
    assert sorted(got) == sorted(want) and len(got) == 1
    for name, rec in got.items():
        assert rec["weights_sha256"] == want[name]["weights_sha256"] and rec["final"] == want[name]["final"]
        assert rec["versions"]["device"] == "cpu-stacked" and rec["status"] == "ok"


def test_cuda_without_cupy_is_one_line_exit_2(tiny, no_cupy):
    config, results = tiny
    result = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--device", "cuda", "--config", str(config),
                              "--results", str(results)])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "lysep[gpu]" in result.stderr and not results.exists()


def test_cuda_refused_by_the_real_command_where_there_is_no_gpu(tiny):
    try:
        backend.resolve("cuda")
        pytest.skip("CuPy and a GPU are here")
    except backend.DeviceUnavailable:
        pass
    config, results = tiny
    proc = subprocess.run([sys.executable, "-m", "lysep_cli.cli", "run", "elliptic-2d", "--solver", "pinn",
                           "--device", "cuda", "--config", str(config), "--results", str(results)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("lysep: error: --device cuda")
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not results.exists()


def test_verify_reruns_a_stacked_record_on_its_device_at_the_exact_level(tiny, monkeypatch):
    """cpu-stacked records verify exactly (rerun on cpu-stacked: the same device keys and numerics id); the
    same records with their device unknown here fall back to the CPU engine's rerun (another numerics id:
    not the exact level, yet the bits agree, since the NumPy stack is the CPU engine's run)."""
    config, results = tiny
    made = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn,lysep", "--device", "cpu-stacked", "--config",
                            str(config), "--results", str(results)])
    assert made.exit_code == 0, made.output
    checked = cli.invoke(app, ["verify", "elliptic-2d", "--all", "--config", str(config), "--results", str(results)])
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.count("exact, bit-identical") == 6 and "levels: exact 6" in checked.stdout

    from lysep_cli.reports import verify
    from lysep_cli.specs import load_specs
    from lysep_cli.store import records

    spec = load_specs(config)["elliptic-2d"]
    record = next(r for r in records.load_records(results, ["elliptic-2d"]).records if r.solver == "lysep")
    assert verify.rerun(spec, record)[0].versions["device"] == "cpu-stacked"

    def unavailable(device):
        raise backend.DeviceUnavailable("not here")

    monkeypatch.setattr(backend, "resolve", unavailable)
    again, _ = verify.rerun(spec, record)
    assert "device" not in again.versions and again.weights_sha256 == record.weights_sha256


def test_a_killed_stacked_lysep_run_resumes_from_its_stacks_checkpoint(tmp_path):
    """SIGKILL mid-stack: the next `lysep run --device cpu-stacked` goes on from the stack's checkpoint and
    writes the records an uninterrupted stack writes (timings aside), whose networks and histories are the
    CPU engine's, byte for byte; the checkpoint is then removed."""
    import os
    import signal
    import time

    from foundation_helpers import resumable_part, tiny_lysep_run, tiny_lysep_yaml
    from lysep_cli.store.checkpoint import checkpoint_path

    config = write_tiny(tmp_path, tiny_lysep_yaml(iterations=120, seeds="0,1"))
    env = {**os.environ, "LYSEP_CHECKPOINT_SECONDS": "0"}
    killed, whole, cpu = tmp_path / "killed", tmp_path / "whole", tmp_path / "cpu"
    proc = tiny_lysep_run(config, killed, env, "--device", "cpu-stacked")
    ckpt = checkpoint_path(killed, "tiny", "lysep", 3, 6, 0)
    deadline = time.monotonic() + 60
    while not ckpt.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=20)
    assert ckpt.exists() and not (killed / "tiny/lysep/L3-M6/seed-0.json").exists()
    again = tiny_lysep_run(config, killed, env, "--device", "cpu-stacked")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert not ckpt.exists()
    for target, extra in ((whole, ("--device", "cpu-stacked")), (cpu, ())):
        tiny_lysep_run(config, target, {**env, "LYSEP_CHECKPOINT_SECONDS": "off"}, *extra).communicate(timeout=300)
    for seed in (0, 1):
        name = f"tiny/lysep/L3-M6/seed-{seed}"
        rec, want = (json.loads((d / f"{name}.json").read_text()) for d in (killed, whole))
        assert rec["diagnostics"]["resumed_at_sweeps"][0] > 0
        for r in (rec, want):
            r["diagnostics"].pop("stack_seconds")  # (a timing, like those resumable_part leaves out)
        assert resumable_part(rec) == resumable_part(want)
        assert (killed / f"{name}.npz").read_bytes() == (cpu / f"{name}.npz").read_bytes()
