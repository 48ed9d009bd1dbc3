"""Inputs beyond what a run can hold, and paths that would create directories, are refused in one line
before anything is drawn, locked or written (issue 37): the memory model of ``lysep run``'s pre-check
against measured peaks, the bound on L and M, n_train, ``--out``, an unreadable checkpoint."""

from __future__ import annotations

import dataclasses
import time
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli import specs
from lysep_cli.cli import app
from lysep_cli.execution import memory, runner
from lysep_cli.numerics import dataset
from lysep_cli.store.checkpoint import checkpoint_path

from foundation_helpers import one_error_line, write_tiny

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "experiments.yaml"
SPECS = specs.load_specs(CONFIG)
cli = CliRunner()


def _shape(spec: specs.ExperimentSpec) -> tuple[int, int]:
    return spec.d + (spec.pde != "elliptic"), spec.d + (spec.pde == "hyperbolic")


# ------------------------------------------------------------------------------------------------
# The model against a measured peak (tracemalloc: every NumPy / SciPy array the run allocates).

@pytest.mark.parametrize("experiment", ["elliptic-2d", "hyperbolic-5d"])
@pytest.mark.parametrize("solver,L,M,N", [
    ("pinn", 3, 80, 300), ("pinn", 4, 30, 300), ("lysep", 3, 80, 300), ("lysep", 3, 250, 120),
    ("lysep", 4, 30, 300), ("rfls", 3, 80, 300), ("rfm", 2, 600, 300), ("pinn-adam", 3, 80, 300),
    ("pinn-lbfgs", 3, 200, 120), ("pinn-lm", 3, 80, 300), ("pinn-lm", 3, 200, 120), ("varpro-lm", 3, 80, 300),
    ("varpro-lm", 3, 200, 120), ("varpro-lbfgs", 3, 200, 120), ("varpro-gd", 3, 80, 300)])
def test_the_estimate_is_within_the_stated_factor_of_a_measured_peak(experiment, solver, L, M, N, monkeypatch):
    """Each solver at a size where the channels dominate, and one where the M x M weights (LySep's W_L
    system, L-BFGS's corrections, LM's Jacobian) do: measured / MODEL_FACTOR <= estimate <= MODEL_FACTOR x
    measured.  A warm-up run first, so that one-off imports and numba's compilation are not counted."""
    monkeypatch.setenv("LYSEP_CHECKPOINT_SECONDS", "off")
    spec = dataclasses.replace(SPECS[experiment], n_train=N, n_test=100)
    dataset.experiment_data(spec)
    key = runner.RunKey(solver, L, M, 0)
    runner.execute(spec, key, 2)
    tracemalloc.start()
    try:
        runner.execute(spec, key, 2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    n_in, n_second = _shape(spec)
    estimate = sum(memory.run_parts(solver, n_in, n_second, L, M, N, 100).values())
    assert peak / memory.MODEL_FACTOR <= estimate <= memory.MODEL_FACTOR * peak, (estimate, peak)


@pytest.mark.parametrize("experiment", ["elliptic-2d", "elliptic-10d", "parabolic-5d"])
def test_the_data_set_estimate_is_within_the_factor_of_its_measured_peak(experiment):
    spec = dataclasses.replace(SPECS[experiment], n_train=7001, n_test=3001)  # a size no other test caches
    dataset._build.cache_clear()
    tracemalloc.start()
    try:
        dataset.experiment_data(spec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = memory.data_bytes(_shape(spec)[0], spec.n_train, spec.n_test)
    assert peak / memory.MODEL_FACTOR <= estimate <= memory.MODEL_FACTOR * peak, (estimate, peak)


def test_the_model_counts_the_m_by_m_hidden_weights_and_lm_s_jacobian():
    """3x100000 (the issue's probe): the M x M weight alone is 80 GB, counted (the old check saw 4 GB)."""
    parts = memory.run_parts("lysep", 2, 2, 3, 100_000, 1000, 350)
    assert parts["weights"] >= 8 * 100_000**2 and parts["W_L system"] >= 8 * 100_000**2
    lm = memory.run_parts("pinn-lm", 2, 2, 3, 3000, 1000, 350)
    assert lm["Jacobian"] == 8 * 1000 * memory.n_params(2, 3, 3000)


# ------------------------------------------------------------------------------------------------
# The command line: one line, exit 2, nothing written.

def _run(args: list[str], results: Path, config: Path = CONFIG):
    return cli.invoke(app, ["run", *args, "--config", str(config), "--results", str(results)])


@pytest.mark.parametrize("size", ["100x30", "3x100000", "11x5", "2x10001"])
def test_sizes_beyond_the_bound_on_l_and_m_are_refused(tmp_path, size):
    results = tmp_path / "r"
    line = one_error_line(_run(["elliptic-2d", "--sizes", size, "--seeds", "0"], results))
    assert f"{size} is beyond the largest network" in line and f"L <= {memory.MAX_L}" in line
    assert not results.exists()


@pytest.mark.parametrize("solver,size", [("pinn", "3x9000"), ("lysep", "3x9000"), ("rfls", "3x9000"),
                                         ("rfm", "2x10000"), ("pinn-adam", "3x9000"), ("pinn-lbfgs", "3x9000"),
                                         ("pinn-lm", "3x3000")])
def test_a_run_beyond_the_available_memory_is_refused_for_every_solver(tmp_path, monkeypatch, solver, size):
    """Every solver at a size within the bound whose arrays exceed 2 GB available: refused before the
    data set is written or a lock taken, naming the solver and its largest parts."""
    monkeypatch.setattr(memory, "available_bytes", lambda: 2 * 10**9)
    results = tmp_path / "r"
    line = one_error_line(_run(["elliptic-2d", "--solver", solver, "--sizes", size, "--seeds", "0"], results))
    assert f"size {size} ({solver}): the runs need about" in line and "has 2.0 GB available" in line
    assert not results.exists()


def test_jobs_multiply_the_need(tmp_path, monkeypatch):
    """Two runs at a time need twice one run (plus a data set per worker): one fits, two do not."""
    config = write_tiny(tmp_path)  # elliptic-2d, n_train 60, n_test 40
    one = sum(memory.run_parts("pinn", 2, 2, 3, 300, 60, 40).values())
    monkeypatch.setattr(memory, "available_bytes", lambda: int(1.5 * one))
    results = tmp_path / "r"
    line = one_error_line(_run(["elliptic-2d", "--solver", "pinn", "--sizes", "3x300", "--seeds", "0-1",
                                 "--jobs", "2"], results, config))
    assert "(2 runs at a time)" in line and not results.exists()
    ok = _run(["elliptic-2d", "--solver", "pinn", "--sizes", "3x300", "--seeds", "0"], results, config)
    assert ok.exit_code == 0, ok.output


def test_n_train_of_a_billion_is_refused_before_any_data_is_drawn(tmp_path, monkeypatch):
    """The issue's probe (killed at 23.4 GB after 224 s): now one line in well under a second of work."""
    config = tmp_path / "big.yaml"
    config.write_text(CONFIG.read_text().replace("n_train: 1000\n", "n_train: 1000000000\n", 1))
    drawn: list[int] = []
    monkeypatch.setattr(dataset, "train_test_points", lambda *a, **k: drawn.append(1))  # must not be reached
    results = tmp_path / "r"
    start = time.monotonic()
    line = one_error_line(_run(["elliptic-2d"], results, config))
    assert time.monotonic() - start < 30 and not drawn
    assert "elliptic-2d: its data set (n_train 1000000000, n_test 350) needs about 192.0 GB" in line
    assert not results.exists()


# ------------------------------------------------------------------------------------------------
# Paths.

@pytest.mark.parametrize("command", [["table"], ["compare"], ["status"]])
def test_out_in_a_missing_directory_creates_nothing(tmp_path, command):
    out = tmp_path / "missing" / "deeper" / "x.md"
    line = one_error_line(cli.invoke(app, command + ["elliptic-2d", "--out", str(out)]))
    assert "does not exist (create it first)" in line
    assert not (tmp_path / "missing").exists()


def test_plot_out_directory_needs_an_existing_parent(tmp_path):
    line = one_error_line(cli.invoke(app, ["plot", "elliptic-2d", "--out", str(tmp_path / "a" / "figures")]))
    assert "does not exist" in line and not (tmp_path / "a").exists()


def test_an_unreadable_checkpoint_is_one_warning_line_and_the_run_starts_from_scratch(tmp_path, monkeypatch):
    monkeypatch.setenv("LYSEP_CHECKPOINT_SECONDS", "3600")
    config = _lysep_tiny(tmp_path)
    results = tmp_path / "r"
    path = checkpoint_path(results, "elliptic-2d", "lysep", 3, 6, 0)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a checkpoint at all")
    r = _run(["elliptic-2d", "--solver", "lysep", "--sizes", "3x6", "--seeds", "0"], results, config)
    assert r.exit_code == 0, r.output
    warnings = [line for line in r.stderr.splitlines() if line.startswith("lysep: warning:")]
    assert len(warnings) == 1 and "checkpoint cannot be read" in warnings[0] and "starts from scratch" in warnings[0]
    assert (path.parent / "seed-0.json").exists() and not path.exists()


def _lysep_tiny(tmp_path: Path) -> Path:
    from foundation_helpers import TINY_YAML

    return write_tiny(tmp_path, TINY_YAML.replace(
        "      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n",
        "      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n      lysep: {step_rule: backtracking, tau: 1.0e-8}\n", 1))


def test_the_step_size_study_checks_the_same_bounds_and_memory(tmp_path, monkeypatch):
    results = tmp_path / "r"
    args = ["study", "step-size", "elliptic-2d", "--config", str(CONFIG), "--results", str(results), "--seeds", "0"]
    assert "3x20000 is beyond the largest network" in one_error_line(cli.invoke(app, args + ["--sizes", "3x20000"]))
    monkeypatch.setattr(memory, "available_bytes", lambda: 10**9)
    line = one_error_line(cli.invoke(app, args + ["--sizes", "3x5000"]))
    assert "size 3x5000 (lysep): the runs need about" in line and not results.exists()
