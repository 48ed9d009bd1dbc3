"""The last hostile inputs of issue 47: each refused in one line on stderr, exit 2, nothing written (no
data set, no lock, no folder), and quickly; ``--out .`` and ``--save-finals .`` meaning "this directory"."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli import specs
from lysep_cli.cli import app
from lysep_cli.numerics import user_problems

from foundation_helpers import files_under, one_error_line

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "experiments.yaml"
ARCHIVE = ROOT / "results" / "paper"
cli = CliRunner()
RUN = ["--solver", "pinn", "--sizes", "3x30", "--iterations", "1"]


def _config(tmp_path: Path, text: str, name: str = "hostile.yaml") -> Path:
    path = tmp_path / "in" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def _refused(tmp_path: Path, monkeypatch, args: list[str], seconds: float = 20.0) -> str:
    """``args`` run in an empty directory with --results under it: one error line, exit 2, within
    ``seconds``, and no file or folder written (the inputs live in tmp_path/in)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    start = time.monotonic()
    result = cli.invoke(app, args)
    elapsed = time.monotonic() - start
    line = one_error_line(result)
    assert len(line) < 400, line
    assert elapsed < seconds, elapsed
    assert list(work.iterdir()) == []  # no results folder, data set, lock
    return line


def _with(key: str, value: str) -> str:
    """The project's experiments file with elliptic-2d's ``key`` set to ``value``."""
    text, n = re.subn(rf"^(    {key}: ).*$", lambda m: m.group(1) + value, CONFIG.read_text(), count=1, flags=re.M)
    assert n == 1
    return text


def _run(config: Path, experiment: str = "elliptic-2d", extra: tuple[str, ...] = ()) -> list[str]:
    return ["run", experiment, *RUN, *extra, "--config", str(config), "--results", "r"]


# ------------------------------------------------------------------------------------------------
# YAML: depth, aliases, size.

def _bomb(levels: int) -> str:
    """A "billion laughs" list of ``levels`` levels, nine aliases each: 9^levels strings once expanded."""
    parts = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    parts += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def test_yaml_nested_500_deep_is_refused_in_one_line(tmp_path, monkeypatch):
    """Was a RecursionError traceback (exit 1)."""
    config = _config(tmp_path, _with("table", "[" * 500 + "]" * 500))
    line = _refused(tmp_path, monkeypatch, _run(config))
    assert f"nested deeper than {specs.MAX_YAML_DEPTH} levels" in line and "line 9" in line


@pytest.mark.parametrize("levels", [7, 9])
def test_an_alias_bomb_in_any_key_is_refused_quickly(tmp_path, monkeypatch, levels):
    """7 levels were a 39 MB error line, 9 a MemoryError after 40 s at 2.6 GB."""
    config = _config(tmp_path, _with("table", _bomb(levels)))
    line = _refused(tmp_path, monkeypatch, _run(config), seconds=10)
    assert f"more than {specs.MAX_YAML_NODES:,} values with its aliases expanded" in line


def test_too_many_aliases_are_refused(tmp_path, monkeypatch):
    aliases = ", ".join(["*a"] * (specs.MAX_YAML_ALIASES + 1))
    config = _config(tmp_path, _with("table", f"[&a 1, {aliases}]"))
    assert f"more than {specs.MAX_YAML_ALIASES:,} aliases" in _refused(tmp_path, monkeypatch, _run(config))


def test_a_small_alias_expansion_is_read_and_a_bad_value_quoted_short(tmp_path, monkeypatch):
    """4 levels (6,561 strings) stay within the bound: the field is refused for what it is, its value cut."""
    config = _config(tmp_path, _with("table", _bomb(4)))
    line = _refused(tmp_path, monkeypatch, _run(config))
    assert "field 'table': expected an integer, got list [" in line and "..." in line


def test_merges_of_the_project_file_still_load():
    """The bounds leave ordinary files alone: the project's file and a merge (<<: *x) load."""
    assert "elliptic-2d" in specs.load_specs(CONFIG)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
def test_an_endless_config_is_refused_after_reading_its_bound(tmp_path, monkeypatch, target):
    """/dev/zero was a MemoryError traceback."""
    line = _refused(tmp_path, monkeypatch, ["list", "--config", target])
    assert f"more than {specs.MAX_CONFIG_BYTES:,} bytes (not a regular file" in line


def test_a_config_over_the_size_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """10^6 seeds (7.9 MB) hung 300 s at 857 MB: now refused by the file's size, at once."""
    config = _config(tmp_path, _with("seeds", "[" + ", ".join(map(str, range(10**6))) + "]"))
    line = _refused(tmp_path, monkeypatch, _run(config), seconds=5)
    assert f"bytes; an experiments file is at most {specs.MAX_CONFIG_BYTES:,} bytes" in line


def test_a_directory_as_config_is_refused(tmp_path, monkeypatch):
    (tmp_path / "in").mkdir()
    assert "Is a directory" in _refused(tmp_path, monkeypatch, ["list", "--config", str(tmp_path / "in")])


# ------------------------------------------------------------------------------------------------
# Seeds, iterations, names: before any file is written.

@pytest.mark.parametrize("seed", ["9223372036854775807", "100000000000000000000", str(specs.MAX_SEED + 1)])
def test_a_seed_beyond_numpy_s_range_in_the_file_is_refused_before_any_file(tmp_path, monkeypatch, seed):
    """Was an OverflowError traceback after data.npz and a lock were written."""
    config = _config(tmp_path, _with("seeds", f"[0, {seed}]"))
    line = _refused(tmp_path, monkeypatch, _run(config))
    assert f"field 'seeds[1]': must be <= {specs.MAX_SEED:,}, got {seed}" in line and "NumPy" in line


@pytest.mark.parametrize("seeds", ["9223372036854775807", "0,4294967296", "4294967290-4294967299"])
def test_a_seed_beyond_numpy_s_range_on_the_command_line_is_refused(tmp_path, monkeypatch, seeds):
    line = _refused(tmp_path, monkeypatch, ["run", "elliptic-2d", *RUN, "--seeds", seeds, "--results", "r"])
    assert f"--seeds: seeds must be <= {specs.MAX_SEED:,}" in line


def test_negative_seeds_are_refused(tmp_path, monkeypatch):
    config = _config(tmp_path, _with("seeds", "[0, -1]"))
    assert "field 'seeds[1]': must be >= 0, got -1" in _refused(tmp_path, monkeypatch, _run(config))


def test_too_many_seeds_in_the_file_are_refused_with_the_reason(tmp_path, monkeypatch):
    n = specs.MAX_SPEC_SEEDS + 1
    config = _config(tmp_path, _with("seeds", "[" + ", ".join(map(str, range(n))) + "]"))
    line = _refused(tmp_path, monkeypatch, _run(config), seconds=10)
    assert f"{n:,} seeds; at most {specs.MAX_SPEC_SEEDS:,} (each seed is one run per solver and size" in line


def test_iterations_of_a_trillion_are_refused_with_the_reason(tmp_path, monkeypatch):
    """Was accepted: a run that never ends, with no estimate."""
    config = _config(tmp_path, _with("iterations", "1000000000000"))
    line = _refused(tmp_path, monkeypatch, _run(config))
    assert "field 'iterations': must be <= 1,000,000, got 1000000000000: a run keeps J at every iteration" in line


@pytest.mark.parametrize("command", [["run", "elliptic-2d", "--solver", "pinn", "--sizes", "3x30", "--seeds", "0"],
                                     ["study", "step-size", "elliptic-2d", "--sizes", "3x30", "--seeds", "0"]])
def test_iterations_beyond_the_bound_on_the_command_line_are_refused(tmp_path, monkeypatch, command):
    line = _refused(tmp_path, monkeypatch, command + ["--iterations", "1000000000000", "--results", "r"])
    assert "--iterations must be <= 1,000,000, got 1000000000000" in line


def test_a_300_character_experiment_name_is_refused_before_any_folder(tmp_path, monkeypatch):
    """Was exit 1 "File name too long" after the folder was created."""
    name = "e" * 300
    config = _config(tmp_path, CONFIG.read_text().replace("  elliptic-2d:\n", f"  {name}:\n", 1))
    line = _refused(tmp_path, monkeypatch, _run(config, name))
    assert f"a name of 300 characters; at most {specs.MAX_NAME}" in line and name not in line


@pytest.mark.parametrize("key,says", [("5", "the name 5 is read by YAML as an integer, not text: quote it ('5':)"),
                                      ("null", "an experiment has no name (YAML reads an empty key, ~ or null as null)"),
                                      ("~", "an experiment has no name"),
                                      ("yes", "read by YAML as a boolean")])
def test_experiment_keys_yaml_reads_as_other_types_are_named_as_such(tmp_path, monkeypatch, key, says):
    config = _config(tmp_path, CONFIG.read_text().replace("  elliptic-2d:\n", f"  {key}:\n", 1))
    line = _refused(tmp_path, monkeypatch, ["list", "--config", str(config)])
    assert says in line and "'None'" not in line


# ------------------------------------------------------------------------------------------------
# --out ., --save-finals ., --cells.

@pytest.mark.parametrize("fmt,name", [("markdown", "tables.md"), ("latex", "tables.tex")])
def test_table_out_dot_writes_the_default_file_in_this_directory(tmp_path, monkeypatch, fmt, name):
    """Was "--out: empty path"."""
    monkeypatch.chdir(tmp_path)
    args = ["table", "elliptic-2d", "--format", fmt, "--results", str(ARCHIVE), "--config", str(CONFIG)]
    shown = cli.invoke(app, args)
    written = cli.invoke(app, args + ["--out", "."])
    assert shown.exit_code == 0 and written.exit_code == 0, written.output
    assert files_under(tmp_path) == [name]
    assert (tmp_path / name).read_text().rstrip("\n") == shown.stdout.rstrip("\n")


def test_verify_save_finals_dot_writes_finals_csv_here(tmp_path, monkeypatch):
    """Was "Device or resource busy"."""
    monkeypatch.chdir(tmp_path)
    result = cli.invoke(app, ["verify", "elliptic-2d", "--solver", "rfls", "--results", str(ARCHIVE),
                              "--config", str(CONFIG), "--save-finals", "."])
    assert result.exit_code == 0, result.output
    assert files_under(tmp_path) == ["finals.csv"]
    rows = (tmp_path / "finals.csv").read_text().splitlines()
    assert len(rows) > 10 and all(",rfls," in row for row in rows[1:])


def test_verify_cells_names_an_unknown_cell_and_the_cells_that_exist(tmp_path, monkeypatch):
    """Was "0 of 0 cell(s) reproduce", exit 1, naming nothing."""
    line = _refused(tmp_path, monkeypatch, ["verify", "elliptic-2d", "--cells", "pinn:3x31,pinn:3x30",
                                            "--results", str(ARCHIVE), "--config", str(CONFIG)])
    assert "--cells: no record of pinn:3x31 under" in line
    assert "(cells with records: pinn:3x30, pinn:3x50, pinn:3x80, pinn:3x100)" in line


# ------------------------------------------------------------------------------------------------
# A problem whose scale under- or overflows the loss.

def _scaled_problem(scale: str) -> str:
    return f"""problems:
  tiny-scale:
    pde: elliptic
    d: 2
    c: "1"
    u: "{scale}*(1 - x1**2 - x2**2)*exp(x1)"
experiments:
  tiny-scale:
    problem: tiny-scale
    sizes: [[3, 6]]
    n_train: 60
    n_test: 40
    iterations: 5
    seeds: [0]
    solvers: {{pinn: {{lr: 1.0e-3}}, lysep: {{}}}}
"""


@pytest.mark.parametrize("scale,what", [("1e-160", "max|u|"), ("1e160", "max|u|"), ("1e-101", "max|u|"),
                                        ("1e99", "max|f|")])
def test_a_problem_whose_scale_under_or_overflows_the_loss_is_refused_with_its_scale(tmp_path, monkeypatch, scale,
                                                                                      what):
    """u = 1e-160 g ran, "diverged at iteration 5", exit 0 (its l2 error's sum of u^2 underflowed)."""
    config = _config(tmp_path, _scaled_problem(scale))
    line = _refused(tmp_path, monkeypatch, ["run", "tiny-scale", "--config", str(config), "--results", "r"],
                    seconds=60)
    assert f"field 'problems.tiny-scale.u': {what} over the check points is" in line
    assert "outside 1e-100 ... 1e+100" in line and "underflow or overflow" in line


def test_a_problem_within_the_scale_bounds_runs(tmp_path):
    """1e-99 g: its f is 1e-99 too, inside the bound (J and l2 are finite: ok, not diverged)."""
    config = _config(tmp_path, _scaled_problem("1e-99"))
    result = cli.invoke(app, ["run", "tiny-scale", "--config", str(config), "--results", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("runs  1  diverged 0") == 2 and user_problems.SCALE_LIMIT == 1e100


def test_a_million_seeds_on_the_command_line_are_refused_with_the_reason(tmp_path, monkeypatch):
    line = _refused(tmp_path, monkeypatch, ["run", "elliptic-2d", *RUN, "--seeds", "0-999999", "--results", "r"])
    assert f"--seeds: more than {specs.MAX_SEEDS:,} seeds (each seed is one run per solver and size)" in line


def test_with_allow_partial_an_unknown_cell_is_a_warning_naming_it(tmp_path, monkeypatch):
    """--allow-partial reports missing cells rather than failing on them: the same line, as a warning."""
    import lysep_cli.reports.verify as verifier

    monkeypatch.setattr(verifier, "run_verify", lambda req, echo, say: 0)  # the rerun itself is not under test
    r = cli.invoke(app, ["verify", "elliptic-2d", "--cells", "pinn:3x31", "--allow-partial", "--results",
                         str(ARCHIVE), "--config", str(CONFIG)])
    assert r.exit_code == 0, r.output
    assert "lysep: warning: --cells: no record of pinn:3x31 under" in r.stderr
