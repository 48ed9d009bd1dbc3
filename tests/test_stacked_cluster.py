"""A stacked device on a dask cluster (issue 40, item 6): each (cell, solver) stack is one dask task.

On a real scheduler and two pinned worker processes on loopback: ``--device cpu-stacked --scheduler-file``
writes the records a local ``--device cpu-stacked`` run writes (weights and histories bit for bit, the
fingerprint with its device entries), rfls runs on the workers by the CPU engine, a second invocation
skips everything; ``--device cuda`` on workers without CuPy or a GPU is refused up front (one line, exit 2,
nothing written); a worker killed mid-stack costs a retry of that stack, never a record.  Without a
cluster: workers running the device otherwise are refused, and a stack's record made with other device
facts is not written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli.accel import backend
from lysep_cli.store.fingerprint import stacked_numerics_id
from lysep_cli.cli import app
from lysep_cli.execution import cluster, runner
from lysep_cli.specs import load_specs
from lysep_cli.store import records

from foundation_helpers import (LYSEP, PINN, experiment_yaml, experiments_yaml, files_under, one_error_line,
                                resumable_part, write_tiny)
from test_cluster import KillOnFirstDone, start_scheduler, stop
from test_cluster_pins import worker

distributed = pytest.importorskip("distributed")

cli = CliRunner()
YAML = experiments_yaml(experiment_yaml("elliptic-2d", {"pinn": PINN, "lysep": LYSEP, "rfls": "{}"}, table=1,
                                        sizes=[[3, 6], [2, 5]], iterations=8, seeds=[0, 1, 2]))


@pytest.fixture(scope="module")
def gpu_like_cluster(tmp_path_factory):
    """`dask scheduler` on loopback and `dask worker --nworkers 2 --nthreads 1 --preload
    lysep_cli.platform_pin` (docs/gpu.md's launch, one device per worker; here the CPU's NumPy)."""
    tmp = tmp_path_factory.mktemp("stacked-cluster")
    sfile, wdir, procs = start_scheduler(tmp)
    try:
        procs.append(worker(sfile, wdir, tmp / "workers.log", "--nworkers", "2", "--preload",
                            "lysep_cli.platform_pin"))
        with distributed.Client(scheduler_file=str(sfile), timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            yield sfile, client
    finally:
        for proc in reversed(procs):
            stop(proc)


def _run(config: Path, results: Path, *extra: str):
    return cli.invoke(app, ["run", "elliptic-2d", "--config", str(config), "--results", str(results), *extra])


def _records(results: Path) -> dict[str, dict]:
    return {f: json.loads((results / f).read_text()) for f in files_under(results) if f.endswith(".json")
            and "seed-" in f}


def _repeated(record: dict) -> dict:
    """What a rerun of a stacked record repeats: all but the timings (the stack's time among them)."""
    out = resumable_part(record)
    out["diagnostics"] = {k: v for k, v in out["diagnostics"].items() if k != "stack_seconds"}
    return out


@pytest.mark.timeout(240)
def test_stacks_on_workers_are_the_local_stacks_records(tmp_path, gpu_like_cluster):
    sfile, _ = gpu_like_cluster
    config = write_tiny(tmp_path, YAML)
    every = ("--solver", "pinn,lysep,rfls", "--device", "cpu-stacked")
    local = _run(config, tmp_path / "local", *every)
    assert local.exit_code == 0, local.output
    on = _run(config, tmp_path / "dask", *every, "--scheduler-file", str(sfile))
    assert on.exit_code == 0, on.output
    assert ("device cpu-stacked (a cell's seeds in one stack, one dask task a stack) on the workers' numpy "
            in on.stderr)
    assert "(2 worker(s)" in on.stderr.splitlines()[0], on.stderr
    assert "18 run(s) done now, 0 skipped as done earlier, 0 failed" in on.stdout
    got, want = _records(tmp_path / "dask"), _records(tmp_path / "local")
    assert sorted(got) == sorted(want) and len(got) == 18
    for name, rec in got.items():
        assert _repeated(rec) == _repeated(want[name]), name  # weights_sha256, history, finals, versions
        if rec["solver"] == "rfls":  # on a worker, by the CPU engine, as a local stacked sweep does
            assert "device" not in rec["versions"]
        else:
            assert rec["versions"]["device"] == "cpu-stacked" and rec["diagnostics"]["stacked_seeds"] == 3
            assert rec["versions"]["numerics"] == stacked_numerics_id()
    for name in got:
        npz = name[:-len(".json")] + ".npz"
        assert (tmp_path / "dask" / npz).read_bytes() == (tmp_path / "local" / npz).read_bytes()
    assert not [f for f in files_under(tmp_path / "dask") if ".ckpt" in f or f.endswith(".tmp")]
    again = _run(config, tmp_path / "dask", *every, "--scheduler-file", str(sfile))
    assert again.exit_code == 0 and "0 run(s) to do, 18 skipped" in again.stderr


@pytest.mark.timeout(120)
def test_cuda_on_workers_without_cupy_or_gpu_is_one_line(tmp_path, gpu_like_cluster):
    sfile, client = gpu_like_cluster
    if all(isinstance(f, dict) for f in client.run(cluster.worker_device, "cuda").values()):
        pytest.skip("these workers run CuPy on a GPU")
    config = write_tiny(tmp_path, YAML)
    results = tmp_path / "results"
    line = one_error_line(_run(config, results, "--solver", "pinn", "--device", "cuda", "--scheduler-file",
                               str(sfile)))
    assert "2 of 2 dask worker(s) cannot run --device cuda (tcp://127.0.0.1:" in line
    assert "--device cuda needs CuPy" in line or "no usable NVIDIA GPU" in line
    assert not results.exists()


def test_cpu_stacked_with_jobs_is_refused(tmp_path):
    config = write_tiny(tmp_path, YAML)
    results = tmp_path / "results"
    line = one_error_line(_run(config, results, "--device", "cpu-stacked", "--jobs", "2"))
    assert "drop --jobs" in line and "--scheduler" in line
    assert not results.exists()


@pytest.mark.timeout(180)
def test_a_worker_killed_mid_stack_costs_a_retry_not_a_record(tmp_path, gpu_like_cluster, monkeypatch):
    """The short stack finishes, the long one's worker is killed: dask reruns the stack on a worker, and each
    record is written once, the uninterrupted stack's."""
    sfile, client = gpu_like_cluster
    client.wait_for_workers(2, timeout=60)
    spec = load_specs(write_tiny(tmp_path, YAML))["elliptic-2d"]
    short, long_ = [runner.RunKey("pinn", 2, 5, 0)], [runner.RunKey("pinn", 3, 6, s) for s in range(4)]
    writes = Counter()
    write = records.write_record

    def counting(results_dir, record, params):
        writes[(record.L, record.seed)] += 1
        return write(results_dir, record, params)

    monkeypatch.setattr(records, "write_record", counting)
    session = cluster.Session.open(cluster.read_scheduler_file(sfile), device="cpu-stacked")
    try:
        reporter = KillOnFirstDone(session.client, session.client.run(os.getpid))
        sweep = runner.run_experiment(spec, short + long_, 3000, tmp_path / "res", reporter=reporter,
                                      cluster=session, device="cpu-stacked")
    finally:
        session.close()
    assert reporter.killed is not None and reporter.killed[1], "no worker was busy when one was killed"
    assert "seed0_1_2_3" in str(reporter.killed[1][0])
    assert not sweep.failed and len(sweep.done) == 5 and sorted(writes.values()) == [1] * 5
    want = runner.execute_stack(spec, long_, 3000, "cpu-stacked")
    for (record, _), key in zip(want, long_):
        got = records.read_record(records.record_paths(tmp_path / "res", spec.name, "pinn", 3, 6, key.seed)[0])
        assert _repeated(got.to_json()) == _repeated(record.to_json())


# ---------------------------------------------------------------------------------------------
# Without a cluster: the device check of the workers, and the check of a stack's record.

class _Workers:
    """client.run of dask answering ``worker_device`` per worker; a worker has joined."""

    def __init__(self, answers: dict[str, object]):
        self.answers = answers

    def wait_for_workers(self, n, timeout=None):
        pass

    def run(self, fn, *args, on_error="raise"):
        assert fn is cluster.worker_device
        return self.answers


def _session(answers):
    return cluster.Session(_Workers(answers), cluster.Target(address="tcp://h:1"), device="cuda")


def test_workers_that_run_the_device_otherwise_are_refused_up_front():
    gpu = {"device": "cuda", "numerics": stacked_numerics_id(), "array_library": "cupy 13.6.0",
           "gpu": "NVIDIA H200", "cuda": "12.8"}
    assert _session({"tcp://a:1": gpu, "tcp://b:1": dict(gpu)})._check_device(1) == gpu
    with pytest.raises(cluster.ClusterError, match=r"1 of 2 dask worker\(s\) run --device cuda unlike tcp://a:1 "
                                                   r".*\(tcp://b:1: gpu: NVIDIA H200 -> NVIDIA A100\)"):
        _session({"tcp://a:1": gpu, "tcp://b:1": {**gpu, "gpu": "NVIDIA A100"}})._check_device(1)
    with pytest.raises(cluster.ClusterError, match=r"2 of 2 .*\(tcp://a:1: numerics: stacked-.* -> stacked-0\)"):
        _session({"tcp://a:1": {**gpu, "numerics": "stacked-0"}, "tcp://b:1": {**gpu, "numerics": "stacked-0"}}
                 )._check_device(1)
    with pytest.raises(cluster.ClusterError, match=r"1 of 2 dask worker\(s\) cannot run --device cuda "
                                                   r"\(tcp://b:1: no GPU here\)"):
        _session({"tcp://a:1": gpu, "tcp://b:1": "no GPU here"})._check_device(1)


class _LaterWorker:
    """A cluster session for cpu-stacked whose stack was made on a worker with another NumPy build's name."""

    device_facts = backend.resolve("cpu-stacked").fingerprint(stacked_numerics_id())

    def __init__(self, spec, keys):
        self.made = runner.execute_stack(spec, keys, 4, "cpu-stacked")
        self.keys = keys

    def results(self, spec, keys, iterations, reporter):
        for key, (record, params) in zip(self.keys, self.made):
            versions = {**record.versions, "array_library": "cupy 13.6.0"}
            yield cluster.Outcome(key, record.with_(versions=versions), params)


def test_a_stack_made_with_other_device_facts_is_not_written(tmp_path):
    spec = load_specs(write_tiny(tmp_path, YAML))["elliptic-2d"]
    keys = [runner.RunKey("pinn", 2, 5, s) for s in (0, 1)]
    sweep = runner.run_experiment(spec, keys, 4, tmp_path / "res", cluster=_LaterWorker(spec, keys),
                                  device="cpu-stacked")
    assert not sweep.done and len(sweep.failed) == 2
    assert "array_library: numpy " in sweep.failed[0][1] and "-> cupy 13.6.0): not written" in sweep.failed[0][1]
    assert not [f for f in files_under(tmp_path / "res") if "seed-" in f]


def test_stack_tasks_group_a_cells_seeds_and_leave_host_solvers_one_run_each():
    keys = [runner.RunKey(s, 3, 6, seed) for s in ("pinn", "rfls", "lysep") for seed in (0, 1)]
    stacked = cluster.Session(None, cluster.Target(address="tcp://h:1"), device="cpu-stacked").tasks(keys)
    assert stacked == [keys[0:2], [keys[2]], [keys[3]], keys[4:6]]
    assert cluster.Session(None, cluster.Target(address="tcp://h:1")).tasks(keys) == [[k] for k in keys]


@pytest.mark.timeout(180)
def test_the_gpu_machines_cluster_check_runs_here_on_cpu_stacked(tmp_path):
    """benchmarks/gpu_cluster_check.py (run by gpu_check.sh on the GPU machine), on NumPy at tiny sizes: the
    worker it starts as docs/gpu.md says, and a LocalCluster of 2, write the records this process writes."""
    config, out = write_tiny(tmp_path, YAML), tmp_path / "check"
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "gpu_cluster_check.py"), "--device", "cpu-stacked",
                           "--config", str(config), "--sizes", "3x6", "--seeds", "2", "--iterations", "4", "--repeats", "1", "--out",
                           str(out)], capture_output=True, text=True, timeout=170,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.with_suffix(".json").read_text())
    assert result["identical"] and result["records"] == 4 and result["stacks"] == 2
    assert result["record_device_keys"]["device"] == "cpu-stacked" == result["worker_device_facts"]["device"]
    assert "records identical (weights, histories, finals, fingerprint): True" in out.with_suffix(".txt").read_text()
    assert result["local_workers"] == 2 and result["local_identical"]  # --scheduler local:2, the shares set
    assert "--scheduler local:2 (a LocalCluster" in out.with_suffix(".txt").read_text()
