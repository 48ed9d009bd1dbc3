"""lysep run warns, in one line, when it completes cells whose records were made on another platform."""

from __future__ import annotations

from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.execution import sweep
from lysep_cli.store.fingerprint import fingerprint

from foundation_helpers import write_tiny

cli = CliRunner()
RUN = ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6"]


def invoke(config, results, seeds: str):
    return cli.invoke(app, [*RUN, "--seeds", seeds, "--config", str(config), "--results", str(results)])


def test_completing_a_cell_made_on_another_platform_warns_in_one_line(tmp_path, monkeypatch):
    config, results = write_tiny(tmp_path), tmp_path / "results"
    assert invoke(config, results, "0").exit_code == 0
    # the same platform: no warning
    same = invoke(config, results, "0,1")
    assert same.exit_code == 0 and "another platform" not in same.stderr
    # another BLAS kernel here (as under LYSEP_NATIVE_BLAS=1 on another CPU): one warning line
    other = dict(fingerprint(), blas_core="SomeOtherCore")
    monkeypatch.setattr(sweep, "fingerprint", lambda: other)
    mixed = invoke(config, results, "0,1,2")
    assert mixed.exit_code == 0, mixed.output
    lines = [line for line in mixed.stderr.splitlines() if "another platform" in line]
    assert len(lines) == 1, mixed.stderr
    assert "2 record(s)" in lines[0] and "blas_core" in lines[0] and "SomeOtherCore" in lines[0]
    # nothing left to do in those cells: nothing to warn about
    done = invoke(config, results, "0,1,2")
    assert "another platform" not in done.stderr


def test_records_of_other_cells_do_not_warn(tmp_path, monkeypatch):
    config, results = write_tiny(tmp_path), tmp_path / "results"
    assert invoke(config, results, "0").exit_code == 0
    monkeypatch.setattr(sweep, "fingerprint", lambda: dict(fingerprint(), blas_core="SomeOtherCore"))
    r = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x8", "--seeds", "0",
                         "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0 and "another platform" not in r.stderr, r.output
