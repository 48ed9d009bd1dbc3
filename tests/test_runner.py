"""Runner and records: atomic files, skip/force/conflicts, determinism, --jobs, divergence, re-evaluation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from lysep_cli.store import atomic
from lysep_cli.numerics import network
from lysep_cli.store import records
from lysep_cli.execution import runner
from lysep_cli.numerics.problems import make_problem
from lysep_cli.reports.selection import summary_lines
from lysep_cli.store.schema import RunRecord
from lysep_cli.solvers import SOLVERS
from lysep_cli.specs import load_specs

from foundation_helpers import untimed, TINY_YAML, files_under, write_tiny


@pytest.fixture
def specs(tmp_path):
    return load_specs(write_tiny(tmp_path))


def keys_of(spec, solver="pinn"):
    return [runner.RunKey(solver, L, M, s) for L, M in spec.sizes for s in spec.seeds]


def numbers(rec):
    """A record without its timing."""
    rec = rec if isinstance(rec, dict) else rec.to_json()
    return untimed(rec)


def test_run_writes_records_and_data(tmp_path, specs):
    spec, out = specs["elliptic-2d"], tmp_path / "res"
    done = runner.run_experiment(spec, keys_of(spec), 5, out).done
    assert len(done) == 4
    assert files_under(out) == sorted(
        ["elliptic-2d/data.npz"]
        + [f"elliptic-2d/pinn/L{L}-M{M}/seed-{s}.{ext}" for L, M in spec.sizes for s in (0, 1)
           for ext in ("json", "npz")])
    rec = records.read_record(out / "elliptic-2d/pinn/L3-M6/seed-1.json")
    raw = json.loads((out / "elliptic-2d/pinn/L3-M6/seed-1.json").read_text())
    assert set(raw) == {f.name for f in dataclasses.fields(RunRecord)} and raw["schema"] == 3
    assert raw["history"] == {"J": "npz", "J_S": None}
    assert rec.status == "ok" and rec.bound is None and rec.final.J_S is None and rec.message == ""
    assert len(rec.history["J"]) == 6 and rec.history["J_S"] is None and rec.iterations_done == 5
    assert rec.final.J == rec.history["J"][-1]
    assert rec.settings == {"lr": 1e-3, "lr_final": 1e-4}  # the typed settings, defaults included
    assert rec == done[[r.cell for r in done].index(rec.cell)]  # what was returned is what was written
    params = records.load_params(out / "elliptic-2d/pinn/L3-M6/seed-1.npz")
    assert [(W.shape, b.shape) for W, b in params] == [((6, 2), (6,)), ((6, 6), (6,)), ((1, 6), (1,))]
    assert rec.weights_sha256 == records.sha256((out / "elliptic-2d/pinn/L3-M6/seed-1.npz").read_bytes())
    with np.load(out / "elliptic-2d/data.npz") as z:
        assert z["train"].shape == (60, 2) and z["test"].shape == (40, 2)
        assert records.data_sha256({"train": z["train"], "test": z["test"]}) == rec.data_sha256
    assert len(records.load_records(out).records) == 4 and records.load_records(out, ["parabolic-5d"]).records == []


def test_skip_force_and_conflicts(tmp_path, specs):
    spec, out = specs["elliptic-2d"], tmp_path / "res"
    sizes, seeds = list(spec.sizes), list(spec.seeds)
    runner.run_experiment(spec, keys_of(spec), 5, out)
    plan = runner.plan_runs(spec, ["pinn"], sizes, seeds, 5, out)
    assert plan.todo == [] and len(plan.skipped) == 4 and not plan.conflicts
    assert len(runner.plan_runs(spec, ["pinn"], sizes, seeds, 5, out, force=True).todo) == 4
    # A record made with other iterations is neither reused nor overwritten without force.
    plan = runner.plan_runs(spec, ["pinn"], sizes, seeds, 7, out)
    assert plan.todo == [] and len(plan.conflicts) == 4 and "iterations 5, not 7" in plan.conflicts[0][2]
    assert len(runner.plan_runs(spec, ["pinn"], sizes, seeds, 7, out, force=True).todo) == 4
    # Other settings, other n_train: the same.
    other = dataclasses.replace(spec, solvers={"pinn": spec.solvers["pinn"].replace(lr=2e-3)})
    plan = runner.plan_runs(other, ["pinn"], sizes, seeds, 5, out)
    assert len(plan.conflicts) == 4 and "lr=0.001" in plan.conflicts[0][2]
    assert len(runner.plan_runs(dataclasses.replace(spec, n_train=61), ["pinn"], sizes, seeds, 5, out).conflicts) == 4
    # A missing NPZ makes the record invalid: the run is redone.
    (out / "elliptic-2d/pinn/L2-M5/seed-0.npz").unlink()
    plan = runner.plan_runs(spec, ["pinn"], sizes, seeds, 5, out)
    assert plan.todo == [runner.RunKey("pinn", 2, 5, 0)] and "missing" in plan.invalid[0][1]


def test_same_seed_bit_identical_and_jobs(tmp_path, specs):
    spec = specs["parabolic-5d"]
    keys = keys_of(spec)
    a = runner.run_experiment(spec, keys, 5, tmp_path / "a").done
    b = runner.run_experiment(spec, keys, 5, tmp_path / "b").done
    c = runner.run_experiment(spec, keys, 5, tmp_path / "c", jobs=2).done
    assert [numbers(r) for r in a] == [numbers(r) for r in b] == [numbers(r) for r in c]
    for key in keys:
        files = [records.record_paths(tmp_path / d, spec.name, *vars(key).values())[1] for d in "abc"]
        ref = np.load(files[0])
        for other in files[1:]:
            z = np.load(other)
            assert all(np.array_equal(ref[k], z[k]) for k in ref.files)
    # And on disk: the NPZ files are byte-identical, the JSON files identical apart from the timing.
    for key in keys:
        npz = [records.record_paths(tmp_path / d, spec.name, *vars(key).values())[1].read_bytes() for d in "abc"]
        assert npz[0] == npz[1] == npz[2]
        recs = [json.loads(records.record_paths(tmp_path / d, spec.name, *vars(key).values())[0].read_text())
                for d in "abc"]
        assert numbers(recs[0]) == numbers(recs[1]) == numbers(recs[2])


def _manual_psi(params, problem, Z):
    """psi = boundary factor * phi, the network evaluated by hand from the saved arrays."""
    h = Z
    for W, b in params[:-1]:
        h = np.sin(W @ h + b[:, None])
    W, b = params[-1]
    phi = (W @ h + b[:, None])[0]
    t, x = (Z[0], Z[1:]) if problem.time_dependent else (None, Z)
    g = np.sum(x * x, axis=0) - 1.0
    return {"elliptic": g, "parabolic": (t * g if t is not None else g), "hyperbolic": None}[problem.pde] * phi


def _fd_residual(params, problem, Z, h=1e-4):
    """PDE residual of psi by central differences: div(c grad psi) [- psi_t] vs the data (eq. (Elliptic/Parabolic))."""
    psi = lambda P: _manual_psi(params, problem, P)  # noqa: E731
    t0 = 1 if problem.time_dependent else 0
    x = Z[t0:]
    c = problem.coefficient.c(x)
    grad_c = problem.coefficient.grad_c(x)
    div = np.zeros(Z.shape[1])
    base = psi(Z)
    for j in range(problem.d):
        e = np.zeros((Z.shape[0], 1))
        e[t0 + j] = h
        plus, minus = psi(Z + e), psi(Z - e)
        div += c * (plus - 2 * base + minus) / h**2 + grad_c[j] * (plus - minus) / (2 * h)
    if problem.pde == "elliptic":
        return div - problem.rhs(Z)
    e = np.zeros((Z.shape[0], 1))
    e[0] = h
    psi_t = (psi(Z + e) - psi(Z - e)) / (2 * h)
    return psi_t - div - problem.rhs(Z)


@pytest.mark.parametrize("experiment", ["elliptic-2d", "parabolic-5d"])
def test_saved_weights_reproduce_record(tmp_path, specs, experiment):
    """Re-evaluate J and l2 from data.npz + the weights only, with independent code."""
    spec, out = specs[experiment], tmp_path / "res"
    runner.run_experiment(spec, keys_of(spec)[:1], 40, out)
    key = keys_of(spec)[0]
    json_path, npz_path = records.record_paths(out, spec.name, "pinn", key.L, key.M, key.seed)
    rec = records.read_record(json_path)
    params = records.load_params(npz_path)
    with np.load(out / spec.name / "data.npz") as z:
        Z_train, Z_test = z["train"].T, z["test"].T
    problem = make_problem(spec.pde, spec.d, spec.solution)
    # l2 from the formula of Section 4 with a hand-written forward pass.
    u = problem.u(Z_test)
    l2 = np.sqrt(np.sum((_manual_psi(params, problem, Z_test) - u) ** 2) / np.sum(u**2))
    assert l2 == pytest.approx(rec.final.l2, rel=1e-12)
    # J from finite differences of psi (no derivative channels involved).
    R = _fd_residual(params, problem, Z_train)
    assert np.mean(R**2) == pytest.approx(rec.final.J, rel=1e-4)
    # And exactly, through the package's own loss.
    J = network.pinn_loss(params, Z_train, problem.coefficients(Z_train), problem.rhs(Z_train))
    assert J == rec.final.J


def test_divergence_is_recorded(tmp_path):
    text = TINY_YAML.replace("pinn: {lr: 1.0e-3}", "pinn: {lr: 1.0e+3}")
    spec = load_specs(write_tiny(tmp_path, text))["parabolic-5d"]
    done = runner.run_experiment(spec, keys_of(spec)[:1], 20, tmp_path / "res").done
    rec = done[0]
    assert rec.status == "diverged" and rec.diverged_at is not None and 1 <= rec.diverged_at <= 20
    assert len(rec.history["J"]) == rec.diverged_at + 1 and rec.history["J"][-1] is None
    assert rec.final.J is None and rec.message  # non-finite numbers are None in memory, null on disk
    raw = json.loads((tmp_path / "res/parabolic-5d/pinn/L3-M5/seed-0.json").read_text())
    assert raw["final"]["J"] is None
    assert any("diverged 1" in line for line in summary_lines(done))


STUBS = {"stub-raise": "raising_solver", "stub-bound": "bounded_solver", "stub-nan": "nonfinite_solver",
         "stub-crash": "crashing_solver", "stub-diverge": "diverging_solver"}


@pytest.fixture
def stub_solvers(monkeypatch):
    for name, func in STUBS.items():
        monkeypatch.setitem(SOLVERS, name, f"foundation_helpers:{func}")


def test_solver_failures_and_bound(tmp_path, stub_solvers):
    text = TINY_YAML.replace("      pinn: {lr: 1.0e-3}\n",
                             "      pinn: {lr: 1.0e-3}\n" + "".join(f"      {n}: {{}}\n" for n in STUBS))
    spec = load_specs(write_tiny(tmp_path, text))["parabolic-5d"]
    out = tmp_path / "res"
    raised, = runner.run_experiment(spec, [runner.RunKey("stub-raise", 3, 5, 0)], 5, out).done
    assert raised.status == "diverged" and raised.diverged_at == 0 and "FloatingPointError" in raised.message
    nan, = runner.run_experiment(spec, [runner.RunKey("stub-nan", 3, 5, 0)], 5, out).done
    assert nan.status == "diverged" and nan.diverged_at == 5
    div, = runner.run_experiment(spec, [runner.RunKey("stub-diverge", 3, 5, 0)], 5, out).done
    assert (div.status, div.diverged_at, div.history["J"]) == ("diverged", 2, [3.0, 2.0, None])
    bound, = runner.run_experiment(spec, [runner.RunKey("stub-bound", 3, 5, 0)], 5, out).done
    assert bound.bound == {"factor": 84.0, "violations": 2}
    assert untimed(bound.to_json())["diagnostics"] == {"cond": 3.0} and bound.final.J_S == 0.5
    assert 0 <= bound.diagnostics["cpu_seconds"] <= bound.seconds + 0.05  # CPU time of one thread
    assert bound.history["J_S"] == [0.5] * 6
    lines = summary_lines([bound])
    assert any("violated in 1 of 1 runs" in line for line in lines)
    # A solver that raises (a bug, not a divergence): reported, no file, the other runs go on.
    sweep = runner.run_experiment(spec, [runner.RunKey("stub-crash", 3, 5, 0), runner.RunKey("pinn", 3, 5, 1)],
                                  5, out)
    assert [k.solver for k, _ in sweep.failed] == ["stub-crash"] and "RuntimeError: a bug" in sweep.failed[0][1]
    assert [r.solver for r in sweep.done] == ["pinn"]
    assert not (out / "parabolic-5d/stub-crash").exists()


class InterruptSecond(runner.Reporter):
    def __init__(self):
        self.begun = 0

    def begin(self, key):
        self.begun += 1

    def loss(self, key, k, value):
        if self.begun == 2 and k == 2:
            raise KeyboardInterrupt


def test_interrupt_keeps_finished_runs_only(tmp_path, specs):
    spec, out = specs["elliptic-2d"], tmp_path / "res"
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(spec, keys_of(spec), 5, out, reporter=InterruptSecond())
    assert files_under(out) == ["elliptic-2d/data.npz", "elliptic-2d/pinn/L3-M6/seed-0.json",
                                "elliptic-2d/pinn/L3-M6/seed-0.npz"]


def test_atomic_writes(tmp_path, specs, monkeypatch):
    path = tmp_path / "x" / "a.json"
    atomic.write_text(path, '{"a": 1}')
    real_fsync = atomic.os.fsync

    def interrupted_fsync(fd):
        raise KeyboardInterrupt

    # A failure while writing leaves the old file intact and no temp file behind.
    monkeypatch.setattr(atomic.os, "fsync", interrupted_fsync)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_text(path, "partial")
    assert files_under(tmp_path / "x") == ["a.json"] and json.loads(path.read_text()) == {"a": 1}
    # Interrupted between the NPZ and the JSON of a record: neither is left behind.
    spec = specs["parabolic-5d"]
    rec, params = runner.execute(spec, runner.RunKey("pinn", 3, 5, 0), 2)
    calls = []

    def second_fsync_interrupted(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", second_fsync_interrupted)
    with pytest.raises(KeyboardInterrupt):
        records.write_record(tmp_path / "r", rec, params)
    assert files_under(tmp_path / "r") == []


def test_a_record_of_a_newer_schema_is_never_overwritten_without_force(tmp_path, specs):
    from typer.testing import CliRunner

    from lysep_cli.cli import app
    from foundation_helpers import write_tiny

    config, out = write_tiny(tmp_path), tmp_path / "res"
    cli = CliRunner()
    args = ["run", "elliptic-2d", "--sizes", "3x6", "--seeds", "0", "--config", str(config), "--results", str(out)]
    assert cli.invoke(app, args).exit_code == 0
    json_path = out / "elliptic-2d/pinn/L3-M6/seed-0.json"
    obj = json.loads(json_path.read_text())
    obj["schema"] = 4
    json_path.write_text(json.dumps(obj))
    before = json_path.read_bytes()
    r = cli.invoke(app, args)
    assert r.exit_code == 2 and "newer than this lysep's 3" in r.output and "nothing was run" in r.output
    assert json_path.read_bytes() == before
    r = cli.invoke(app, args + ["--force"])
    assert r.exit_code == 0 and json.loads(json_path.read_text())["schema"] == 3


def test_each_run_sets_whether_it_uses_numba_from_its_size(specs, monkeypatch):
    """runner.execute asks sincos.numba_for_run once per run, with M × N_train and its solver's bound
    (LySep's; none for PINN, which keeps the kernels at every size)."""
    paper = load_specs(Path(__file__).resolve().parents[1] / "experiments.yaml")
    spec = paper["elliptic-2d"]
    asked = []
    monkeypatch.setattr(runner, "numba_for_run", lambda values, up_to: asked.append((values, up_to)) or True)
    runner.execute(spec, runner.RunKey("pinn", 3, 5, 0), 2)
    runner.execute(spec, runner.RunKey("lysep", 3, 5, 0), 2)
    assert asked == [(5 * spec.n_train, None), (5 * spec.n_train, runner.NUMBA_UP_TO["lysep"])]
    # of the paper's cells only elliptic-10d (3,150) is above LySep's bound
    assert 150 * paper["elliptic-10d"].n_train > runner.NUMBA_UP_TO["lysep"] >= 100 * paper["parabolic-5d"].n_train
