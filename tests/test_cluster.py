"""lysep run on a dask.distributed cluster (issue 11), on real clusters on loopback, bounded in time.

Addresses and scheduler files; bad ones exit 2 with one line and write nothing.  A LocalCluster of
processes gives records identical to --jobs 1; a worker killed mid-sweep costs a retry, not a record;
a run raising on a worker is reported and the others go on; a scheduler and workers started as
separate processes in another directory leave records only under the client's --results; SIGINT /
SIGTERM cancel the outstanding tasks and exit 130 / 143.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from lysep_cli.execution import cluster
from lysep_cli.store import records
from lysep_cli.execution import runner
from lysep_cli.cli import app
from lysep_cli.solvers import SOLVERS
from lysep_cli.specs import load_specs

from foundation_helpers import untimed, TINY_YAML, default_sigint, files_under, write_tiny

distributed = pytest.importorskip("distributed")

cli = CliRunner()
KEYS = ["--solver", "pinn", "--sizes", "3x6", "--seeds", "0-3"]


def numbers(rec):
    """A record (RunRecord or its JSON) without its timing."""
    d = rec.to_json() if hasattr(rec, "to_json") else rec
    return untimed(d)


def same_records(a: Path, b: Path, part=numbers) -> None:
    """Every run under ``a`` also under ``b`` with the same numbers (JSON, the ``part`` that must repeat)
    and weights (NPZ)."""
    runs = [f for f in files_under(a) if "seed-" in f]
    assert runs and runs == [f for f in files_under(b) if "seed-" in f]
    for f in runs:
        if f.endswith(".json"):
            assert part(json.loads((a / f).read_text())) == part(json.loads((b / f).read_text())), f
        else:
            with np.load(a / f) as za, np.load(b / f) as zb:
                assert za.files == zb.files and all(np.array_equal(za[k], zb[k]) for k in za.files), f


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """Stop a process we started and its children (own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def tiny(tmp_path):
    return write_tiny(tmp_path), tmp_path / "results"


# ---------------------------------------------------------------------------------------------
# Addresses.

@pytest.mark.parametrize("text,expected", [
    ("tcp://127.0.0.1:8786", cluster.Target(address="tcp://127.0.0.1:8786")),
    ("node12:8786", cluster.Target(address="tcp://node12:8786")),
    ("tls://[::1]:9000", cluster.Target(address="tls://[::1]:9000")),
    ("local:3", cluster.Target(local_workers=3)),
    ("local", cluster.Target(local_workers=cluster.default_workers(), local_default=True)),
    ("none", None),
])
def test_parse_address(text, expected):
    assert cluster.parse_address(text) == expected


@pytest.mark.parametrize("text", ["http://h:1", "tcp://h", "tcp://h:0", "tcp://h:99999", "tcp://h:1/x",
                                  "local:0", "local:x", "local:٣", "", "tcp://:80"])
def test_malformed_address(text):
    with pytest.raises(cluster.ClusterError):
        cluster.parse_address(text)


def test_resolve_target(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"type": "Scheduler", "address": "tcp://10.0.0.5:8786"}))
    assert cluster.resolve_target(None, f, {}) == cluster.Target(address="tcp://10.0.0.5:8786")
    assert cluster.resolve_target(None, None, {"LYSEP_SCHEDULER": "local:2"}) == cluster.Target(local_workers=2)
    assert cluster.resolve_target("none", None, {"LYSEP_SCHEDULER": "local:2"}) is None
    assert cluster.resolve_target(None, None, {}) is None
    with pytest.raises(cluster.ClusterError, match="not both"):
        cluster.resolve_target("local", f, {})


def test_without_distributed_one_line(tiny, monkeypatch):
    """--scheduler without the dask extra installed: one line naming the extra, exit 2."""
    monkeypatch.setitem(sys.modules, "distributed", None)  # makes `import distributed` fail
    config, results = tiny
    result = cli.invoke(app, ["run", "elliptic-2d", "--config", str(config), "--results", str(results),
                              "--scheduler", "local:1"] + KEYS)
    assert result.exit_code == 2 and "pip install 'lysep[dask]'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not results.exists()


def _bad_file(tmp_path: Path, text: str | None) -> list[str]:
    path = tmp_path / "sched.json"
    if text is not None:
        path.write_text(text)
    return ["--scheduler-file", str(path)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case,needle", [
    ("unreachable", "cannot reach the dask scheduler"),
    ("malformed", "malformed scheduler address"),
    ("local0", "local:N"),
    ("missing-file", "no such file"),
    ("json-file", "invalid JSON"),
    ("no-address-file", "no \"address\""),
    ("both", "not both"),
    ("env", "$LYSEP_SCHEDULER"),
])
def test_bad_scheduler_exit_2_one_line_nothing_written(tiny, tmp_path, case, needle):
    config, results = tiny
    args, env = {
        "unreachable": lambda: (["--scheduler", f"tcp://127.0.0.1:{free_port()}"], {}),
        "malformed": lambda: (["--scheduler", "tcp://127.0.0.1"], {}),
        "local0": lambda: (["--scheduler", "local:0"], {}),
        "missing-file": lambda: (_bad_file(tmp_path, None), {}),
        "json-file": lambda: (_bad_file(tmp_path, "{\"address\": "), {}),
        "no-address-file": lambda: (_bad_file(tmp_path, "{\"type\": \"Scheduler\"}"), {}),
        "both": lambda: (["--scheduler", "local"] + _bad_file(tmp_path, "{}"), {}),
        "env": lambda: ([], {"LYSEP_SCHEDULER": "tcp://h:port"}),
    }[case]()
    start = time.monotonic()
    result = cli.invoke(app, ["run", "elliptic-2d", "--config", str(config), "--results", str(results),
                              "--connect-timeout", "1"] + KEYS + args, env=env)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not results.exists()
    assert time.monotonic() - start < 20


# ---------------------------------------------------------------------------------------------
# LocalCluster of processes through the CLI: the same numbers as --jobs 1.

@pytest.mark.timeout(90)
def test_local_cluster_identical_to_jobs_1(tiny, tmp_path):
    config, _ = tiny
    base = ["run", "elliptic-2d", "--config", str(config), "--iterations", "60"] + KEYS[:2] + ["--seeds", "0-1"]
    ref = cli.invoke(app, base + ["--results", str(tmp_path / "seq"), "--jobs", "1"])
    assert ref.exit_code == 0, ref.output
    on = cli.invoke(app, base + ["--results", str(tmp_path / "dask"), "--scheduler", "local:2"])
    assert on.exit_code == 0, on.output
    assert "scheduler local:2 (2 worker(s)" in on.stderr
    assert "4 run(s) done now, 0 skipped as done earlier, 0 failed" in on.stdout
    same_records(tmp_path / "seq", tmp_path / "dask")
    # Planning is the client's, as with --jobs: a second invocation skips everything, connects nowhere.
    again = cli.invoke(app, base + ["--results", str(tmp_path / "dask"), "--scheduler", "tcp://127.0.0.1:1"])
    assert again.exit_code == 0 and "0 run(s) to do, 4 skipped" in again.stderr


# ---------------------------------------------------------------------------------------------
# In-process clusters driven through the runner.

def runs(task: str, key) -> bool:
    """Whether dask task ``task`` ('lysep-EXP-SOLVER-L3-M6-seed0_1_2-HASH') runs ``key`` (a RunKey)."""
    m = re.search(r"-L(\d+)-M(\d+)-seed([\d_]+)-", task)
    return (m is not None and f"-{key.solver}-L" in task and (int(m[1]), int(m[2])) == (key.L, key.M)
            and str(key.seed) in m[3].split("_"))


class KillOnFirstDone(runner.Reporter):
    """After the first finished run, SIGKILL a worker process that is running a task."""

    def __init__(self, client, pids):
        self.client, self.pids, self.killed = client, pids, None

    def done(self, key, record):
        if self.killed is not None:
            return
        deadline = time.monotonic() + 10
        while self.killed is None and time.monotonic() < deadline:
            # the scheduler may still list the task whose run just finished (a loaded machine): not that one
            busy = [w for w, tasks in self.client.processing().items()
                    if w in self.pids and any(not runs(str(t), key) for t in tasks)]
            if busy:
                self.killed = (busy[0], list(self.client.processing()[busy[0]]))
                os.kill(self.pids[busy[0]], signal.SIGKILL)
            else:
                time.sleep(0.05)


@pytest.mark.timeout(120)
def test_worker_killed_mid_sweep(tmp_path, monkeypatch):
    spec = load_specs(write_tiny(tmp_path))["elliptic-2d"]
    keys = [runner.RunKey("pinn", 3, 6, s) for s in range(6)]
    writes = Counter()
    write = records.write_record

    def counting(results_dir, record, params):
        writes[record.cell] += 1
        return write(results_dir, record, params)

    monkeypatch.setattr(records, "write_record", counting)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as lc:
        session = cluster.Session.open(cluster.Target(address=lc.scheduler_address), timeout=10)
        try:
            pids = session.client.run(os.getpid)
            reporter = KillOnFirstDone(session.client, pids)
            sweep = runner.run_experiment(spec, keys, 4000, tmp_path / "res", reporter=reporter, cluster=session)
        finally:
            session.close()
    assert reporter.killed is not None and reporter.killed[1], "no worker was busy when one was killed"
    assert len(sweep.done) == len(keys) and not sweep.failed and sorted(writes.values()) == [1] * len(keys)
    loaded = records.load_records(tmp_path / "res")
    assert not loaded.problems
    loaded = loaded.records
    assert [(r.seed, r.status) for r in loaded] == [(s, "ok") for s in range(6)]
    for r in loaded:
        records.load_params(records.record_paths(tmp_path / "res", spec.name, "pinn", 3, 6, r.seed)[1])
    assert not [f for f in files_under(tmp_path / "res") if f.endswith(".tmp")]
    # The run that was retried has the numbers of an uninterrupted one.
    retried = next(k for k in keys if f"seed{k.seed}-" in str(reporter.killed[1][0]))
    ref, _ = runner.execute(spec, retried, 4000)
    assert numbers(ref) == numbers(next(r for r in loaded if r.seed == retried.seed))


from lysep_cli.solvers.settings import NoSettings as Settings


def broken_solver(problem, data, params0, settings, iterations, progress=None):
    raise RuntimeError("boom in the solver")


@pytest.mark.timeout(60)
def test_run_raising_on_a_worker(tiny, tmp_path, monkeypatch):
    """Threads in this process (so the stub solver is visible); the CLI connects over TCP."""
    monkeypatch.setitem(SOLVERS, "stub-broken", f"{__name__}:broken_solver")
    text = TINY_YAML.replace("      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n",
                             "      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n      stub-broken: {}\n")
    config, results = write_tiny(tmp_path, text), tmp_path / "results"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as lc:
        result = cli.invoke(app, ["run", "elliptic-2d", "--config", str(config), "--results", str(results),
                                  "--solver", "pinn,stub-broken", "--sizes", "3x6", "--seeds", "0-1",
                                  "--scheduler", lc.scheduler_address])
    assert result.exit_code == 1, result.output
    assert "2 run(s) done now, 0 skipped as done earlier, 2 failed" in result.stdout
    assert "failed, no record: stub-broken L3-M6 seed 0: RuntimeError: boom in the solver" in result.stdout
    assert "FAILED: RuntimeError: boom in the solver" in result.stderr
    assert [f for f in files_under(results) if f.endswith(".json")] == [
        "elliptic-2d/pinn/L3-M6/seed-0.json", "elliptic-2d/pinn/L3-M6/seed-1.json"]


# ---------------------------------------------------------------------------------------------
# A scheduler and workers as separate processes, in another directory.

def _spawn(args: list[str], cwd: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *args], cwd=cwd, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def start_scheduler(tmp_path: Path) -> tuple[Path, Path, list[subprocess.Popen]]:
    """`dask scheduler` on loopback, its scheduler file written: (scheduler file, the workers' directory,
    [the scheduler's process])."""
    wdir = tmp_path / "workers"
    wdir.mkdir()
    sfile = tmp_path / "scheduler.json"
    procs = [_spawn(["dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sfile)], wdir, tmp_path / "scheduler.log")]
    deadline = time.monotonic() + 30
    while not sfile.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not sfile.exists():
        stop(procs[0])
        raise AssertionError((tmp_path / "scheduler.log").read_text())
    return sfile, wdir, procs


@pytest.fixture
def external_cluster(tmp_path):
    """`dask scheduler` on loopback + `dask worker --nthreads 1` (x2) in their own directory."""
    sfile, wdir, procs = start_scheduler(tmp_path)
    try:
        procs.append(_spawn(["dask", "worker", "--scheduler-file", str(sfile), "--nworkers", "2",
                             "--nthreads", "1", "--no-dashboard", "--local-directory", str(wdir / "scratch")],
                            wdir, tmp_path / "workers.log"))
        with distributed.Client(scheduler_file=str(sfile), timeout=30) as client:
            client.wait_for_workers(2, timeout=30)
            yield sfile, wdir, client
    finally:
        for proc in reversed(procs):
            stop(proc)


def _lysep(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lysep_cli.cli", "run", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)


@pytest.mark.timeout(150)
def test_external_scheduler_and_workers(tmp_path, external_cluster):
    sfile, wdir, client = external_cluster
    cdir = tmp_path / "client"
    cdir.mkdir()
    config = write_tiny(cdir)
    base = ["elliptic-2d", "--config", str(config), "--results", "res", "--scheduler-file", str(sfile)]
    proc = _lysep(base + KEYS + ["--iterations", "50"], cdir)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "4 run(s) done now" in out
    assert len([f for f in files_under(cdir / "res") if f.endswith(".json")]) == 4
    assert not [f for f in files_under(wdir) if f.endswith((".json", ".npz"))]
    assert not [f for f in files_under(tmp_path) if "seed-" in f and not f.startswith("client/res/")]

    # SIGINT, then SIGTERM, mid-sweep: finished records kept, outstanding tasks cancelled, 130 / 143.
    for sig, code, lo in ((signal.SIGINT, 130, 10), (signal.SIGTERM, 143, 20)):
        proc = _lysep(base + ["--solver", "pinn", "--sizes", "3x6", "--seeds", f"{lo}-{lo + 7}",
                              "--iterations", "6000"], cdir)
        runs = [f"elliptic-2d/pinn/L3-M6/seed-{s}.{ext}" for s in range(lo, lo + 8) for ext in ("json", "npz")]
        deadline = time.monotonic() + 60
        while not any((cdir / "res" / f).exists() for f in runs[::2]) \
                and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        assert ("interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)") in err
        done = set(runs) & set(files_under(cdir / "res"))
        assert done and len(done) % 2 == 0 and len(done) < len(runs), done
        assert not [f for f in files_under(cdir / "res") if f.endswith(".tmp")]
        # The scheduler forgets the cancelled tasks (a task already running finishes on its worker, unused).
        # (A lambda: pickled by value, run on the scheduler, which cannot import this module.)
        lysep_tasks = lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks  # noqa: E731
                                              if str(k).startswith("lysep-")]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and client.run_on_scheduler(lysep_tasks):
            time.sleep(0.2)
        assert not client.run_on_scheduler(lysep_tasks)

    # A worker that cannot import lysep would die on its first task: refused up front, nothing written.
    fake = tmp_path / "fake" / "lysep_cli"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no lysep on this worker')\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    bad = subprocess.Popen([sys.executable, "-m", "dask", "worker", "--scheduler-file", str(sfile), "--nthreads", "1",
                            "--no-dashboard"], cwd=wdir, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        client.wait_for_workers(3, timeout=30)
        proc = _lysep(base + KEYS + ["--iterations", "50", "--results", "res2"], cdir)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and len(err.strip().splitlines()) == 1, err
        assert "1 of 3 dask worker(s) cannot import lysep" in err and "no lysep on this worker" in err
        assert not (cdir / "res2").exists()
    finally:
        stop(bad)
