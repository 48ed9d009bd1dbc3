"""A cluster only its owner can use (issue 56): a TLS scheduler serves a client with the CA's certificate and
refuses a plain-TCP one; TLS options go with a tls:// scheduler only; a ``local`` cluster binds loopback.

Real clusters on loopback (threads in this process), certificates from ``distributed.Security.temporary()``
written to files as a user's would be, every wait bounded.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.execution import cluster

from foundation_helpers import files_under, write_tiny

distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")

cli = CliRunner()


def _pem_files(security, tmp_path: Path) -> list[str]:
    """The temporary CA and client certificate and key written to PEM files; the options naming them."""
    files = []
    for option, text in (("--tls-ca-file", security.tls_ca_file), ("--tls-cert", security.tls_client_cert),
                         ("--tls-key", security.tls_client_key)):
        path = tmp_path / f"{option.strip('-')}.pem"
        path.write_text(text)
        files += [option, str(path)]
    return files


@pytest.fixture
def tls_cluster():
    security = distributed.Security.temporary()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls",
                                  host="127.0.0.1", dashboard_address=None, security=security,
                                  silence_logs=logging.CRITICAL) as lc:
        yield lc, security


@pytest.mark.timeout(90)
def test_tls_cluster_serves_its_owner_and_refuses_plain_tcp(tls_cluster, tmp_path):
    lc, security = tls_cluster
    address = lc.scheduler_address
    assert address.startswith("tls://127.0.0.1:")
    config, results = write_tiny(tmp_path), tmp_path / "results"
    run = ["run", "elliptic-2d", "--config", str(config), "--solver", "pinn", "--sizes", "3x6", "--seeds", "0-1",
           "--connect-timeout", "5"]

    served = cli.invoke(app, run + ["--results", str(results), "--scheduler", address] + _pem_files(security, tmp_path))
    assert served.exit_code == 0, served.output
    assert sorted(f for f in files_under(results) if f.endswith(".json")) == [
        "elliptic-2d/pinn/L3-M6/seed-0.json", "elliptic-2d/pinn/L3-M6/seed-1.json"]

    # a client speaking plain TCP to the same port is refused, in bounded time, and runs nothing
    plain = "tcp://" + address.split("://", 1)[1]
    start = time.monotonic()
    with pytest.raises((OSError, TimeoutError)):
        distributed.Client(plain, timeout=3, set_as_default=False)
    assert time.monotonic() - start < 30
    refused = cli.invoke(app, run + ["--results", str(tmp_path / "other"), "--scheduler", plain])
    assert refused.exit_code == 2 and "cannot reach the dask scheduler" in refused.stderr
    assert not (tmp_path / "other").exists()

    # and a tls:// client without the certificates (no dask TLS configuration) cannot connect either
    bare = cli.invoke(app, run + ["--results", str(tmp_path / "bare"), "--scheduler", address])
    assert bare.exit_code == 2 and "needs this client's certificates" in bare.stderr


@pytest.mark.parametrize("args, needle", [
    (["--scheduler", "tcp://127.0.0.1:1", "--tls-ca-file", "X", "--tls-cert", "X"], "go with a tls:// scheduler"),
    (["--scheduler", "local", "--tls-ca-file", "X", "--tls-cert", "X"], "go with a tls:// scheduler"),
    (["--tls-ca-file", "X", "--tls-cert", "X"], "go with a tls:// scheduler"),
    (["--scheduler", "tls://127.0.0.1:1", "--tls-cert", "X"], "needs --tls-ca-file and --tls-cert"),
    (["--scheduler", "tls://127.0.0.1:1", "--tls-ca-file", "nowhere.pem", "--tls-cert", "X"], "not a readable file"),
])
def test_tls_options_checked_in_one_line(tmp_path, args, needle):
    (tmp_path / "X").write_text("not read")
    config = write_tiny(tmp_path)
    args = [str(tmp_path / a) if a == "X" else a for a in args]
    result = cli.invoke(app, ["run", "elliptic-2d", "--config", str(config), "--results", str(tmp_path / "r"),
                              "--solver", "pinn", "--sizes", "3x6", "--seeds", "0"] + args)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_local_cluster_listens_on_loopback_only(monkeypatch):
    """`--scheduler local`: the scheduler, its workers and the dashboard bind 127.0.0.1, not every interface."""
    seen = {}

    class Stop(Exception):
        pass

    def fake_local_cluster(**kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(distributed, "LocalCluster", fake_local_cluster)
    with pytest.raises(Stop):
        cluster.Session.open(cluster.Target(local_workers=1))
    assert seen["host"] == "127.0.0.1" and seen["dashboard_address"].startswith("127.0.0.1:")
