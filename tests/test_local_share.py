"""A LocalCluster of stacked-device workers shares this machine (lysep_cli/execution/local_share.py).

``--device cuda --scheduler local:N``: worker i computes on GPU i mod G (``LYSEP_GPU``, selected by
lysep_cli/accel/backend.py in the thread that computes), and each worker's host solves get CPUs / N threads
(``LYSEP_HOST_THREADS``).  Tested here without a GPU: the assignment on real worker processes (a worker its
nanny restarts after a SIGKILL gets its share again), the GPU selection against a stand-in CuPy module, a
bare ``local`` meaning one worker per GPU, and the refusals (one line, exit 2).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import types

import pytest
from typer.testing import CliRunner

from lysep_cli.accel import backend, lstsq
from lysep_cli.cli import app
from lysep_cli.execution import cluster

from foundation_helpers import PINN, experiment_yaml, experiments_yaml, one_error_line, write_tiny

distributed = pytest.importorskip("distributed")
local_share = pytest.importorskip("lysep_cli.execution.local_share")

cli = CliRunner()
YAML = experiments_yaml(experiment_yaml("elliptic-2d", {"pinn": PINN}, table=1, sizes=[[2, 5]], iterations=4,
                                        seeds=[0, 1]))


def _env(client, name: str) -> dict[str, str | None]:
    return client.run(os.getenv, name)  # (os.environ.get would pickle this process's environ)


def test_workers_spread_round_robin_over_the_gpus_and_divide_the_cpus():
    share = local_share.share
    assert [share(i, 4, 2, 16)[local_share.GPU_ENV] for i in range(4)] == ["0", "1", "0", "1"]
    assert {share(i, 4, 2, 16)[local_share.THREADS_ENV] for i in range(4)} == {"4"}
    assert share(0, 3, 1, 2) == {local_share.THREADS_ENV: "1", local_share.GPU_ENV: "0"}  # never 0 threads
    assert share(5, 2, 0, 8) == {local_share.THREADS_ENV: "4"}  # no GPU device: no LYSEP_GPU


@pytest.mark.timeout(120)
def test_each_worker_process_gets_its_share_also_when_its_nanny_restarts_it():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        client.register_plugin(local_share.LocalShare(2, 2, 6))
        gpus = _env(client, "LYSEP_GPU")
        assert sorted(gpus.values()) == ["0", "1"]
        assert set(_env(client, "LYSEP_HOST_THREADS").values()) == {"3"}
        names = {w: info["name"] for w, info in client.scheduler_info()["workers"].items()}
        victim = sorted(gpus)[0]
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the nanny starts a new process with the same name
            workers = client.scheduler_info()["workers"]
            if len(workers) == 2 and victim not in workers:
                break
            time.sleep(0.2)
        again = _env(client, "LYSEP_GPU")
        assert victim not in again and sorted(again.values()) == ["0", "1"]
        renamed = {info["name"]: w for w, info in client.scheduler_info()["workers"].items()}
        assert again[renamed[names[victim]]] == gpus[victim]  # the restarted worker: the same GPU as before


@pytest.mark.timeout(120)
def test_a_local_cluster_of_a_stacked_device_shares_the_cpus():
    with cluster.Session.open(cluster.Target(local_workers=2), device="cpu-stacked") as session:
        assert set(_env(session.client, "LYSEP_HOST_THREADS").values()) == {str(max(1, cluster.default_workers() // 2))}
        assert set(_env(session.client, "LYSEP_GPU").values()) == {None}  # no GPU device


class _FakeCupy(types.ModuleType):
    """What resolve("cuda") calls of CuPy: the device count and Device(i).use(), recorded per thread."""

    def __init__(self, count: int):
        super().__init__("cupy")
        self.used: list[tuple[int, str]] = []
        fake = self

        class Device:
            def __init__(self, i: int = 0):
                self.id = i

            def use(self) -> None:
                fake.used.append((self.id, threading.current_thread().name))

        self.cuda = types.SimpleNamespace(Device=Device,
                                          runtime=types.SimpleNamespace(getDeviceCount=lambda: count))


def test_the_computing_thread_selects_the_gpu_of_LYSEP_GPU(monkeypatch):
    fake = _FakeCupy(count=2)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.delenv("LYSEP_GPU", raising=False)
    backend.resolve("cuda")
    monkeypatch.setenv("LYSEP_GPU", "1")
    worker = threading.Thread(target=backend.resolve, args=("cuda",), name="stack")
    worker.start()
    worker.join()
    assert fake.used == [(0, threading.current_thread().name), (1, "stack")]
    assert backend.gpu_count() == 2
    for bad in ("2", "-1", "one", "٣"):
        monkeypatch.setenv("LYSEP_GPU", bad)
        with pytest.raises(backend.DeviceUnavailable, match="LYSEP_GPU=.* is not a GPU index here"):
            backend.resolve("cuda")


def test_a_bare_local_means_one_worker_per_gpu_with_cuda(monkeypatch):
    monkeypatch.setattr(backend, "gpu_count", lambda: 3)
    bare, sized = cluster.parse_address("local"), cluster.parse_address("local:5")
    assert bare.for_device("cuda").local_workers == 3
    assert bare.for_device("cpu-stacked").local_workers == cluster.default_workers()
    assert sized.for_device("cuda").local_workers == 5


def test_host_threads_from_the_environment(monkeypatch):
    monkeypatch.setenv("LYSEP_HOST_THREADS", "1")
    assert lstsq.default_workers(10) == 1
    monkeypatch.setenv("LYSEP_HOST_THREADS", "64")
    assert lstsq.default_workers(10) == 10  # at most one a seed
    monkeypatch.delenv("LYSEP_HOST_THREADS")
    assert lstsq.default_workers(1) == 1


@pytest.mark.parametrize("value", ["0", "two", " -3"])
def test_a_bad_LYSEP_HOST_THREADS_is_one_line(tmp_path, monkeypatch, value):
    monkeypatch.setenv("LYSEP_HOST_THREADS", value)
    results = tmp_path / "results"
    line = one_error_line(cli.invoke(app, ["run", "elliptic-2d", "--config", str(write_tiny(tmp_path, YAML)),
                                           "--results", str(results), "--device", "cpu-stacked"]))
    assert "LYSEP_HOST_THREADS=" in line and "expected a whole number of threads >= 1" in line
    assert not results.exists()


def test_cuda_on_a_local_cluster_without_cupy_is_the_cupy_line(tmp_path, no_cupy):
    results = tmp_path / "results"
    line = one_error_line(cli.invoke(app, ["run", "elliptic-2d", "--config", str(write_tiny(tmp_path, YAML)),
                                           "--results", str(results), "--device", "cuda", "--scheduler", "local:2"]))
    assert "--device cuda needs CuPy" in line
    assert not results.exists()
