"""Cluster workers run under the same platform pins as a local run (issue 38, lysep_cli/platform_pin.py).

A `dask worker` imports NumPy before lysep, so the pins lysep sets when imported come too late there.
Workers started with `--preload lysep_cli.platform_pin` (their nanny imports it and starts the worker
process with the pins) give records bit-identical to a local run, fingerprints included; a worker
started without it is refused up front (exit 2, one line, nothing written), a task on such a worker
refuses to run, and a record made on another platform than the client's is never written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lysep_cli.execution import cluster, runner
from lysep_cli.numerics import sincos
from lysep_cli.platform_pin import PIN_VARIABLES, shell_exports
from lysep_cli.specs import load_specs
from lysep_cli.store import fingerprint as fp

from foundation_helpers import TINY_YAML, files_under, resumable_part, write_tiny
from test_cluster import same_records, start_scheduler, stop

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[1]
#: the brief's tiny run: elliptic-2d of experiments.yaml, PINN and LySep at (3,30), 2 seeds, 30 iterations
RUN = ["elliptic-2d", "--config", str(ROOT / "experiments.yaml"), "--solver", "pinn,lysep", "--sizes", "3x30",
       "--seeds", "0-1", "--iterations", "30"]


def unpinned_env() -> dict[str, str]:
    """This environment without the pins lysep's import put in it: a fresh shell's."""
    return {k: v for k, v in os.environ.items() if k not in PIN_VARIABLES}


def lysep_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lysep_cli.cli", "run", *args], cwd=cwd, env=unpinned_env(),
                          capture_output=True, text=True, timeout=120)


def worker(sfile: Path, wdir: Path, log: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dask", "worker", "--scheduler-file", str(sfile), "--nthreads",
                             "1", "--no-dashboard", "--local-directory", str(wdir / "scratch"), *extra], cwd=wdir,
                            env=unpinned_env(), stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def versions(root: Path) -> list[dict]:
    return [json.loads((root / f).read_text())["versions"] for f in files_under(root) if f.endswith(".json")
            and "seed-" in f]


@pytest.mark.timeout(240)
def test_preloaded_workers_give_the_local_bits_and_unpinned_ones_are_refused(tmp_path):
    sfile, wdir, procs = start_scheduler(tmp_path)
    try:
        procs.append(worker(sfile, wdir, tmp_path / "workers.log", "--nworkers", "2",
                            "--preload", "lysep_cli.platform_pin"))
        local = lysep_run(RUN + ["--results", str(tmp_path / "local")], tmp_path)
        assert local.returncode == 0, local.stderr
        with distributed.Client(scheduler_file=str(sfile), timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            on_cluster = lysep_run(RUN + ["--results", str(tmp_path / "cluster"), "--scheduler-file", str(sfile)],
                                   tmp_path)
            assert on_cluster.returncode == 0, on_cluster.stderr
            # 4 records: final values, histories, weights bit for bit (timings aside); the same fingerprint
            same_records(tmp_path / "local", tmp_path / "cluster", resumable_part)
            local_v, cluster_v = versions(tmp_path / "local"), versions(tmp_path / "cluster")
            assert len(local_v) == 4 and cluster_v == local_v

            if not shell_exports(os.environ):
                pytest.skip("lysep pins nothing on this machine: an unpinned worker is a pinned one")
            procs.append(worker(sfile, wdir, tmp_path / "plain.log"))  # as docs/cluster.md said before
            client.wait_for_workers(3, timeout=60)
            refused = lysep_run(RUN + ["--results", str(tmp_path / "mixed"), "--scheduler-file", str(sfile)],
                                tmp_path)
            assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
            assert "1 of 3 dask worker(s) run without lysep's platform pins" in refused.stderr
            assert "--preload lysep_cli.platform_pin" in refused.stderr
            assert not (tmp_path / "mixed").exists()
    finally:
        for proc in reversed(procs):
            stop(proc)


def test_pins_not_in_force_when_numpy_came_first():
    """NumPy and OpenBLAS loaded before lysep set the pins: named, one line each; loaded after: none."""
    code = "import numpy, scipy.linalg, lysep_cli; from lysep_cli.store import fingerprint as f; " \
           "print(repr(f.pins_not_in_force()))"
    late = subprocess.run([sys.executable, "-c", code], env=unpinned_env(), capture_output=True, text=True,
                          timeout=60, check=True)
    first = subprocess.run([sys.executable, "-c", code.replace("import numpy, scipy.linalg, ", "import ")],
                           env=unpinned_env(), capture_output=True, text=True, timeout=60, check=True)
    assert eval(first.stdout) == []
    if shell_exports(os.environ):
        problems = eval(late.stdout)
        assert problems and all("not" in p for p in problems)
    assert fp.pins_not_in_force() == []  # this test process: conftest imports lysep first


def test_a_task_on_an_unpinned_worker_refuses(monkeypatch, tmp_path):
    spec = load_specs(write_tiny(tmp_path, TINY_YAML))["elliptic-2d"]
    monkeypatch.setattr(cluster, "pins_not_in_force", lambda: ["BLAS kernel SkylakeX, not Haswell"])
    with pytest.raises(RuntimeError, match="without lysep's platform pins .BLAS kernel SkylakeX, not Haswell.*"
                                           "--preload lysep_cli.platform_pin"):
        cluster.run_task(spec, runner.RunKey("pinn", 3, 6, 0), 5)


class _OtherPlatform:
    """A cluster session whose worker made its record under another BLAS kernel."""

    def __init__(self, spec, key):
        record, self.params = runner.execute(spec, key, 5)
        self.other = "Sandybridge" if record.versions.get("blas_core") != "Sandybridge" else "SkylakeX"
        self.record = record.with_(versions={**record.versions, "blas_core": self.other})
        self.key = key

    def results(self, spec, keys, iterations, reporter):
        yield cluster.Outcome(self.key, self.record, self.params)


def test_a_record_of_another_platform_is_not_written(tmp_path):
    spec = load_specs(write_tiny(tmp_path, TINY_YAML))["elliptic-2d"]
    key = runner.RunKey("pinn", 3, 6, 0)
    results = tmp_path / "results"
    other = _OtherPlatform(spec, key)
    sweep = runner.run_experiment(spec, [key], 5, results, cluster=other)
    assert not sweep.done and len(sweep.failed) == 1
    assert "another platform than this machine's (blas_core: " in sweep.failed[0][1]
    assert f"-> {other.other}" in sweep.failed[0][1] and "not written" in sweep.failed[0][1]
    assert not [f for f in files_under(results) if "seed-" in f]


def test_numba_and_its_bound_are_in_the_numerics_id(monkeypatch):
    """Another numba (or llvmlite) changes the id; runner.NUMBA_UP_TO lives in a module the id hashes."""
    before = fp.numerics_id.__wrapped__()
    assert before == fp.numerics_id()
    real = fp.metadata.version
    monkeypatch.setattr(fp.metadata, "version", lambda p: "0.0.1" if p == "numba" else real(p))
    assert "numba 0.0.1" in fp.compiler_versions() and fp.numerics_id.__wrapped__() != before
    assert runner.NUMBA_UP_TO is sincos.NUMBA_UP_TO
    root = ROOT / "lysep_cli"
    hashed = {p for pattern in fp.NUMERIC_SOURCES for p in root.glob(pattern)}
    assert Path(sincos.__file__).resolve() in {p.resolve() for p in hashed}


class _Client:
    """client.run of dask: each worker's answer (here, one worker of another NumPy)."""

    def __init__(self, platform):
        self.platform = platform

    def run(self, fn, *args, on_error="raise"):
        return {"tcp://10.0.0.7:4000": None if fn is exec else self.platform}


def test_a_worker_on_another_platform_is_refused_up_front():
    mine = fp.fingerprint()
    session = cluster.Session(_Client(({**mine, "numpy": "1.26.4"}, [])), cluster.Target(address="tcp://h:1"))
    with pytest.raises(cluster.ClusterError, match=r"1 of 1 dask worker\(s\) run another platform than this machine "
                                                   rf"\(tcp://10.0.0.7:4000: numpy: {mine['numpy']} -> 1.26.4\)"):
        session._check_workers()
    same = cluster.Session(_Client(({**mine, "machine": "elsewhere", "lysep": "9.9"}, [])),
                           cluster.Target(address="tcp://h:1"))
    assert same._check_workers() == [f"workers run lysep 9.9, this machine {mine.get('lysep', '?')}"]
