"""Property-based tests (hypothesis): random mutations of experiments.yaml and of the command line.

Whatever the input: the exit code is 0 or 2 (1 only for ``table`` / ``compare`` with nothing to show),
never a traceback; an exit 2 is one line on stderr and leaves every file as it was; an exit 0 of
``lysep run`` leaves only complete, valid records.  Example counts are small and the search is
derandomized, so the suite stays fast and reproducible.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("hypothesis")  # skipped where it is not installed: `pytest -m gpu tests` must collect

from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from typer.testing import CliRunner

from lysep_cli.store import records
from lysep_cli.cli import app

from foundation_helpers import TINY_YAML, snapshot

cli = CliRunner()
BASE = yaml.safe_load(TINY_YAML)
PROPERTY = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Per field, values small enough that a valid spec trains in milliseconds; many invalid somewhere.
BAD = ["abc", "", None, True, [], {}, 2.5, float("nan"), -1]
FIELDS: dict[str, list[Any]] = {
    "table": [1, 3, 0, "one"], "pde": ["elliptic", "parabolic", "hyperbolic", "laplace", 3],
    "d": [1, 2, 3, 0, 13, "two"], "solution": ["exp-sin", "sin-radial", "nope", None],
    "sizes": [[[3, 6]], [[2, 5], [3, 6]], [[3, 6, 1]], "3x6", [[1, 5]], [[3, 0]], [[3, 6], [3, 6]]],
    "n_train": [1, 5, 60, 0], "n_test": [1, 7, 40, 0], "iterations": [1, 3, 0, "x"],
    "seeds": [[0], [0, 1], [-1], [0, 0], "0", [3]], "colour": ["red"],
}
SETTINGS_VALUES: dict[str, list[Any]] = {
    "lr": [1e-3, 1e3, "1e-3", 0, -1e-3, "abc", True], "lr_final": [1e-4, None, 0.0, "x"],
    "lr_fnal": [1e-4], "beta1": [0.5, 1.0], "tau": [1e-8, 0.0, -1.0, "auto"],
    "step_rule": ["fixed", "backtracking", "bogus"], "rcond": ["auto", 1e-10, "never", -1],
}
SOLVER_NAMES = ["pinn", "lysep", "rfls", "pinn-adam", "pinn-lbfgs", "pinn-lm", "magic"]
#: (solver, setting) pairs: mostly ones the solver has, a few it has not
PAIRS = [("pinn", "lr"), ("pinn", "lr_final"), ("lysep", "tau"), ("lysep", "step_rule"), ("rfls", "rcond"),
         ("pinn-adam", "beta1"), ("pinn-adam", "lr"), ("pinn", "lr_fnal"), ("magic", "lr"), ("pinn", "tau")]


@st.composite
def mutation(draw: Any) -> tuple[tuple[Any, ...], Any]:
    """(path into the YAML document, new value or the marker "<delete>")."""
    exp = draw(st.sampled_from(["elliptic-2d"] * 4 + ["parabolic-5d", "new-one"]))
    where = draw(st.sampled_from(["field"] * 4 + ["setting"] * 4 + ["solver", "top"]))
    if where == "field":
        key = draw(st.sampled_from(sorted(FIELDS)))
        pool = FIELDS[key] + ([] if draw(st.integers(0, 3)) else BAD)
        return ("experiments", exp, key), draw(st.sampled_from(pool + ["<delete>"]))
    if where == "setting":
        solver, key = draw(st.sampled_from(PAIRS))
        return ("experiments", exp, "solvers", solver, key), draw(st.sampled_from(SETTINGS_VALUES[key]))
    if where == "solver":
        value = draw(st.sampled_from([{}, None, {"lr": 1e-3}, [1], "x", "<delete>"]))
        return ("experiments", exp, "solvers", draw(st.sampled_from(SOLVER_NAMES))), value
    return (draw(st.sampled_from(["experiments", "other"])),), draw(st.sampled_from([{}, [], None, "<delete>"]))


def apply(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``doc`` with the mutation applied where the path exists (or can be created)."""
    node = doc
    for key in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(key, {})
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return doc
    last = path[-1]
    if isinstance(node, dict):
        if value == "<delete>":
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        if value == "<delete>":
            del node[last]
        else:
            node[last] = value
    return doc


@st.composite
def spec_text(draw: Any) -> str:
    """The tiny spec with 0-2 mutations, sometimes with its text damaged as well."""
    doc = yaml.safe_load(TINY_YAML)
    for path, value in draw(st.lists(mutation(), min_size=0, max_size=2)):
        doc = apply(doc, path, value)
    text = yaml.safe_dump(doc, sort_keys=False)
    if draw(st.integers(0, 5)) == 0:  # one in six: damage the text as well
        i = draw(st.integers(0, max(0, len(text) - 1)))
        text = text[:i] + draw(st.sampled_from(["", ":", "[", "{", "- ", "\t", "'", "#", "\n  x"])) + text[i + 1:]
    return text


def check(result: Any, command: str, before: dict[str, bytes], root: Path) -> int:
    """The properties every command keeps, whatever its input."""
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    allowed = {0, 1, 2} if command in ("table", "compare") else {0, 2}
    assert result.exit_code in allowed, (result.exit_code, result.output)
    event(f"{command}: exit {result.exit_code}")
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lysep: error: "), result.stderr
        assert snapshot(root) == before, "an error exit wrote or changed a file"
    if result.exit_code == 1:
        assert "no run record" in result.stderr and snapshot(root) == before
    if command == "run" and result.exit_code == 0:
        for path in (root / "results").rglob("seed-*.json"):
            records.read_record(path)  # every record written reads back valid
    return result.exit_code


@PROPERTY
@given(text=spec_text(), command=st.sampled_from(["run", "list", "table"]))
def test_mutated_spec_exit_0_or_2_never_a_traceback(text, command):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "exp.yaml").write_text(text)
        (root / "results").mkdir()
        args = {"run": ["run", "elliptic-2d", "--seeds", "0", "--sizes", "smallest", "--iterations", "2"],
                "list": ["list"], "table": ["table"]}[command]
        args += ["--config", str(root / "exp.yaml")]
        if command != "list":
            args += ["--results", str(root / "results")]
        before = snapshot(root)
        check(cli.invoke(app, args), command, before, root)


OPTION_VALUES = {
    "--solver": ["pinn", "magic", "", "all", "paper", "pinn,pinn", "pinn, lysep", ","],
    "--sizes": ["3x6", "", "smallest", "3x0", "ax5", "2x5,3x6", " ", "3x6x1", "1x4", "4x4"],
    "--seeds": ["0", "0-1", "5-2", "", "-1", "a", "1,1,0", "0-", "99999999999-100000000000"],
    "--iterations": ["-1", "0", "1", "2", "x", "1e3", ""],
    "--jobs": ["0", "1", "x", "-3"],
    "--format": ["markdown", "latex", "html", ""],
}
FLAGS = ["--force", "--standalone", "--nope"]


@st.composite
def command_line(draw: Any) -> tuple[str, list[str], str, str, str | None]:
    command = draw(st.sampled_from(["run", "run", "table", "compare", "list"]))
    args = [command]
    if command != "list":
        args += draw(st.lists(st.sampled_from(["elliptic-2d", "parabolic-5d", "nope", ""]), min_size=int(command == "run"),
                              max_size=1 if command == "run" else 2))
    for option, values in OPTION_VALUES.items():
        if draw(st.booleans()):
            args += [option, draw(st.sampled_from(values))]
    if draw(st.booleans()):
        args.append(draw(st.sampled_from(FLAGS)))
    results = draw(st.sampled_from(["good", "good", "file", "under-file", "missing"]))
    config = draw(st.sampled_from(["good", "good", "good", "dir", "missing"]))
    out = draw(st.sampled_from([None, None, "file", "dir", "under-file"])) if command in ("table", "compare") else None
    return command, args, results, config, out


@PROPERTY
@given(line=command_line())
def test_random_command_lines_exit_0_or_2_never_a_traceback(line):
    command, args, results_kind, config_kind, out_kind = line
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "exp.yaml").write_text(TINY_YAML)
        (root / "afile").write_text("x")
        good = root / "results"
        if command in ("table", "compare"):  # something to show
            assert cli.invoke(app, ["run", "elliptic-2d", "--seeds", "0", "--sizes", "3x6", "--config",
                                    str(root / "exp.yaml"), "--results", str(good)]).exit_code == 0
        results = {"good": good, "file": root / "afile", "under-file": root / "afile" / "r",
                   "missing": root / "missing"}[results_kind]
        config = {"good": root / "exp.yaml", "dir": root, "missing": root / "nope.yaml"}[config_kind]
        args = args + ["--config", str(config)]
        if command != "list":
            args += ["--results", str(results)]
        if out_kind is not None:
            args += ["--out", str({"file": root / "out" / "t.md", "dir": root, "under-file": root / "afile" / "t"}[out_kind])]
        before = snapshot(root)
        check(cli.invoke(app, args), command, before, root)
