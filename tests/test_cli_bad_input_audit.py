"""Bad input found by an audit of every command: one ``lysep: error:`` line and exit 2 (or a damaged run
record named in a warning and not counted), never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.execution.cluster import ClusterError, parse_address

from foundation_helpers import TINY_YAML, files_under, one_error_line, write_tiny

cli = CliRunner()

LYSEP_YAML = TINY_YAML.replace("      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n",
                               "      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n"
                               "      lysep: {step_rule: backtracking, tau: 1.0e-8}\n", 1)


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A tiny results directory: PINN and LySep, (3,6), seed 0, the spec's 5 iterations."""
    root = tmp_path_factory.mktemp("archive")
    config = write_tiny(root, LYSEP_YAML)
    results = root / "results"
    done = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn,lysep", "--sizes", "3x6", "--seeds", "0",
                            "--config", str(config), "--results", str(results)])
    assert done.exit_code == 0, done.output
    return config, results


def _damaged(archive, tmp_path, solver: str, edit) -> list[str]:
    """A copy of the archive whose ``solver`` record was edited by ``edit`` (its JSON text -> new text);
    the options that point a command at it."""
    config, results = archive
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    path = copy / "elliptic-2d" / solver / "L3-M6" / "seed-0.json"
    path.write_text(edit(path.read_text()))
    return ["--config", str(config), "--results", str(copy)]


def _sealed_edit(archive, tmp_path, solver: str, change) -> list[str]:
    """:func:`_damaged` with the edited record sealed again (a record edited by hand and left unsealed is
    left out by every report: the odd values must reach the readers to be tested)."""
    from lysep_cli.store import records

    base = _damaged(archive, tmp_path, solver, _edit_json(change))
    path = tmp_path / "results" / "elliptic-2d" / solver / "L3-M6" / "seed-0.json"
    path.write_text(records.record_text(records.read_record(path)))
    return base


def _edit_json(change):
    def edit(text: str) -> str:
        obj = json.loads(text)
        change(obj)
        return json.dumps(obj)
    return edit


# ---------------------------------------------------------------------------------------------
# Empty path options: Path("") is ".", so `--results ""` used to run into (or read) the current directory.

@pytest.mark.parametrize("args", [
    ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0", "--iterations", "1",
     "--results", ""],
    ["table", "--results", ""],
    ["plot", "elliptic-2d", "--out", ""],
    ["study", "step-size", "elliptic-2d", "--sizes", "3x6", "--seeds", "0", "--taus", "0", "--iterations", "1",
     "--out", ""],
    ["list", "--config", ""],
])
def test_empty_path_option_is_bad_input(tmp_path, monkeypatch, args):
    config = write_tiny(tmp_path, LYSEP_YAML)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    extra = [] if "--config" in args else ["--config", str(config)]
    line = one_error_line(cli.invoke(app, args + extra))
    assert "empty path" in line
    assert files_under(work) == []


# ---------------------------------------------------------------------------------------------
# int() and float() read "1_0" as 10 and other scripts' digits as numbers: --jobs 1_0 meant 10 workers.

@pytest.mark.parametrize("args", [["run", "elliptic-2d", "--jobs", "1_0"], ["run", "elliptic-2d", "--jobs", "\u0663"],
                                  ["run", "elliptic-2d", "--iterations", " 5"], ["verify", "--seed", "1_0"],
                                  ["verify", "--sample", "\uff12"], ["table", "--iterations", "2_000"],
                                  ["run", "elliptic-2d", "--connect-timeout", "1_0"],
                                  ["study", "step-size", "elliptic-2d", "--taus", "1,,2"],
                                  ["study", "step-size", "elliptic-2d", "--taus", "nan"],
                                  ["study", "step-size", "elliptic-2d", "--taus", "0,1e-3,\u0663"]])
def test_numbers_only_in_plain_digits(tmp_path, args):
    config = write_tiny(tmp_path, LYSEP_YAML)
    results = tmp_path / "results"
    line = one_error_line(cli.invoke(app, [*args, "--config", str(config), "--results", str(results)]))
    assert "in the digits 0-9" in line
    assert not results.exists()


def test_infinite_step_size_refused(tmp_path):
    config = write_tiny(tmp_path, LYSEP_YAML)
    line = one_error_line(cli.invoke(app, ["study", "step-size", "elliptic-2d", "--taus", "0,1e999", "--config",
                                            str(config), "--results", str(tmp_path / "results")]))
    assert "--taus: need one or more finite values >= 0" in line


def test_plain_numbers_still_read(tmp_path):
    config = write_tiny(tmp_path)
    results = tmp_path / "results"
    done = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0", "--jobs", "+1",
                            "--iterations", "2", "--config", str(config), "--results", str(results)])
    assert done.exit_code == 0, done.output
    assert (results / "elliptic-2d" / "pinn" / "L3-M6" / "seed-0.json").exists()


# ---------------------------------------------------------------------------------------------
# --connect-timeout nan / inf reached dask, which raised KeyError (a traceback).

@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_connect_timeout(tmp_path, value):
    config = write_tiny(tmp_path)
    results = tmp_path / "results"
    result = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0",
                              "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", value,
                              "--config", str(config), "--results", str(results)])
    assert "--connect-timeout" in one_error_line(result)
    assert not results.exists()


# ---------------------------------------------------------------------------------------------
# --scheduler local:² passed str.isdigit() and then int() raised ValueError (a traceback).

def test_scheduler_local_superscript_digit(tmp_path):
    with pytest.raises(ClusterError):
        parse_address("local:²")
    config = write_tiny(tmp_path)
    results = tmp_path / "results"
    result = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0",
                              "--scheduler", "local:²", "--config", str(config), "--results", str(results)])
    assert "local:N" in one_error_line(result)
    assert not results.exists()


# ---------------------------------------------------------------------------------------------
# --results under a file system that refuses writes although os.access says yes (/proc; as root, any
# directory): the plan was printed, then the first write failed with exit 1. Now a probe refuses it first.

@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_results_where_nothing_can_be_written(tmp_path):
    config = write_tiny(tmp_path)
    result = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0",
                              "--config", str(config), "--results", "/proc/lysep-results"])
    assert "cannot write in /proc" in one_error_line(result)
    assert result.stdout == ""
    assert not os.path.exists("/proc/lysep-results")


@pytest.mark.parametrize("target", ["loop", "loop/sub", "dangling"])
def test_results_through_a_broken_link(tmp_path, target):
    """A symbolic link loop or a link to nothing: the plan was printed, then mkdir failed (exit 1)."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "at-all")
    config = write_tiny(tmp_path)
    result = cli.invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0",
                              "--config", str(config), "--results", str(tmp_path / target)])
    assert "symbolic link to nothing, or a loop" in one_error_line(result)
    assert result.stdout == ""


def test_write_probe_leaves_nothing(tmp_path):
    from lysep_cli import options as paths
    target = tmp_path / "new" / "results"
    assert paths.writable_dir(target, "--results") == target
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# --out naming an existing file that is not a regular one: the atomic write would replace it (as root,
# `--out /dev/stdout` replaced the /dev/stdout link with a file).

def test_out_not_a_regular_file(archive, tmp_path):
    config, results = archive
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = cli.invoke(app, ["table", "--out", str(fifo), "--config", str(config), "--results", str(results)])
    assert "not a regular file" in one_error_line(result)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---------------------------------------------------------------------------------------------
# Damaged run records: named in one warning each and not counted, never a traceback.

DAMAGED = {
    "nested too deeply": lambda text: "[" * 100_000,
    "seconds beyond float": _edit_json(lambda o: o.update(seconds=10 ** 400)),
    "history written out in a schema-3 record": _edit_json(lambda o: o["history"].update(J=[10 ** 400])),
    "final J beyond float": _edit_json(lambda o: o["final"].update(J=10 ** 400)),
    "NUL byte in the experiment": _edit_json(lambda o: o.update(experiment="elliptic\x002d")),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
@pytest.mark.parametrize("command", [["table"], ["compare"], ["study", "depth", "elliptic-2d"]])
def test_damaged_record_is_a_warning(archive, tmp_path, damage, command):
    base = _damaged(archive, tmp_path, "pinn", DAMAGED[damage])
    result = cli.invoke(app, command + base)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "invalid run record" in line]
    assert len(warnings) == 1 and "seed-0.json" in warnings[0]
    assert "LySep" in result.stdout  # the valid record is still shown


# ---------------------------------------------------------------------------------------------
# A record's free-form `bound` / `diagnostics` holding something else than numbers (a hand edit): depth,
# plot and the run summary read them without a traceback.

@pytest.mark.parametrize("bound", [{"violations": "x", "factor": "y"}, {"violations": [1, 2], "factor": [2]},
                                   {"violations": None, "factor": None}, {"violations": 10 ** 400}])
def test_odd_bound_values(archive, tmp_path, bound):
    base = _sealed_edit(archive, tmp_path, "lysep", lambda o: o.update(bound=bound))
    depth = cli.invoke(app, ["study", "depth", "elliptic-2d"] + base)
    assert depth.exit_code == 0 and depth.exception is None, depth.output
    plot = cli.invoke(app, ["plot", "elliptic-2d", "--out", str(tmp_path / "figures")] + base)
    assert plot.exit_code == 0 and plot.exception is None, plot.output
    rerun = cli.invoke(app, ["run", "elliptic-2d", "--solver", "lysep", "--sizes", "3x6", "--seeds", "0"] + base)
    assert rerun.exit_code == 0 and rerun.exception is None, rerun.output
    assert "1 skipped" in rerun.stderr


def test_odd_diagnostics_value_in_depth(archive, tmp_path):
    base = _sealed_edit(archive, tmp_path, "lysep", lambda o: o["diagnostics"].update(J_after_first_W3_solve="x"))
    result = cli.invoke(app, ["study", "depth", "elliptic-2d"] + base)
    assert result.exit_code == 0 and result.exception is None, result.output
    assert "| (3,6) | LySep |" in result.stdout


def test_a_size_beyond_the_machine_s_memory_is_bad_input(tmp_path, monkeypatch):
    """Sizes whose channels alone exceed the available memory: one line, exit 2, nothing written."""
    from lysep_cli.execution import memory

    config = write_tiny(tmp_path)
    results = tmp_path / "results"
    monkeypatch.setattr(memory, "available_bytes", lambda: 10**6)  # 1 MB available
    # tiny elliptic-2d (3,6): ~0.2 MB fits; 3x1000 (its 1000 x 1000 hidden weight alone 8 MB) does not
    ok = CliRunner().invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x6", "--seeds", "0",
                                  "--config", str(config), "--results", str(results)])
    assert ok.exit_code == 0, ok.output
    r = CliRunner().invoke(app, ["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x1000", "--seeds", "0",
                                 "--config", str(config), "--results", str(results)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "size 3x1000 (pinn): the runs need about" in r.output and "has 1.0 MB available" in r.output
    assert not (results / "elliptic-2d" / "pinn" / "L3-M1000").exists()
