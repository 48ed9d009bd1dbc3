"""The network solvers' setting ``init``: ``paper`` (the default, U(+-M^-1/2)) or ``torch`` (nn.Linear's default).

- the torch start per layer: bounds 1/sqrt(fan_in), a Kolmogorov-Smirnov test against the uniform on a large
  draw, layers 2..L the paper's draw and W_1, b_1 that draw scaled by sqrt(M / n_in);
- the default keeps its bits: the paper start's sha256 pinned from the code before the setting existed, a run
  with the default and one with ``init: paper`` written out are the same record, without ``init`` in it;
- ``init: torch`` is in the record's settings, so it is a different run (a paper record conflicts with it, its
  checkpoint is another's); tiny PINN, LySep and rfls runs start from the torch network;
- a bad value, or ``init`` for a solver without it, is one line and exit 2; the stacked engine honours it.
"""

from __future__ import annotations

import hashlib
import json
import typing

import numpy as np
import pytest
import scipy.stats
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.execution import runner
from lysep_cli.execution.runner import RunKey, execute, plan_runs
from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers import SettingsError, solver_def
from lysep_cli.solvers.base import Init, initial_network
from lysep_cli.specs import load_specs
from lysep_cli.store import records

from foundation_helpers import LYSEP, PINN, experiment_yaml, experiments_yaml, resumable_part, write_tiny

cli = CliRunner()
NETWORK_SOLVERS = ("pinn", "lysep", "rfls", "pinn-adam", "pinn-lbfgs", "pinn-lm")

#: sha256 of network.flatten(init_params(*args)) with the code before the setting existed (commit 71c4bb1)
PAPER_SHA = {
    (2, 3, 5, 0): "bc248e9b09772225f92fd39329071a45a07c94a1f8295041fc81858d58c3e3fb",
    (3, 3, 20, 7): "4951b74607d9a0089d357e41e15abf1666741f0d6c5baa0af5988d1975decd0d",
    (10, 3, 150, 1): "cf1e81f50c6db6d4a140d81ac580e79a09385832bf810e3b1af94673321ebf9e",
    (6, 4, 8, 3): "d03e23d331d366887f0c42e54d9d734f6e7eb1b10661439155c40c6eeec24074",
    (2, 2, 800, 0): "4ea859e5bc215af07553b8a91f316c2ffcf77edbdd29b7f509f56371616f7bdf",
}
#: the same of studies/pinn_ablations.py's torch_default_init (commit 71c4bb1), the start of its part (a)
TORCH_SHA = {
    (2, 3, 30, 0): "f5154c576d2fc4b16609253d3b2f19230facec68586396de5053160997a48d7c",
    (10, 3, 150, 2): "7657bdc2cc172594c702ff3009457dfd067d47d8d61f638f855af8d797f503aa",
    (6, 4, 8, 3): "920ed70c421a6dd48980f4927b4ac077db043c6b00bdf36890a1a649c2a10426",
}


def _sha(params: network.Params) -> str:
    return hashlib.sha256(network.flatten(params).tobytes()).hexdigest()


def _yaml(init: str | None, solvers: tuple[str, ...] = ("pinn", "lysep", "rfls"), iterations: int = 4,
          pde: str = "elliptic", d: int = 2) -> str:
    """Experiment ``tiny`` with ``solvers`` at (3,6), each with ``init`` (None: not written)."""
    base = {"pinn": PINN, "lysep": LYSEP, "rfls": "{}", "pinn-adam": "{}", "pinn-lbfgs": "{}",
            "pinn-lm": "{max_iterations: 3}", "rfm": "{}"}
    blocks = {s: base[s] if init is None else base[s][:-1].rstrip() + (", " if base[s] != "{}" else "")
              + f"init: {init}}}" for s in solvers}
    return experiments_yaml(experiment_yaml("tiny", blocks, iterations=iterations, seeds=[0, 1], pde=pde, d=d,
                                            solution="exp-sin" if d == 2 and pde == "elliptic" else None))


def _spec(tmp_path, init: str | None, **kw):
    path = tmp_path / f"tiny-{init}.yaml"
    path.write_text(_yaml(init, **kw))
    return load_specs(path)["tiny"]


# ---------------------------------------------------------------------------------------------
# The starts.

@pytest.mark.parametrize("n_in,L,M", [(2, 3, 30), (11, 3, 150), (6, 4, 20), (3, 2, 400)])
def test_torch_start_is_uniform_within_one_over_root_fan_in_per_layer(n_in, L, M):
    torch = network.init_params(n_in, L, M, 4, init="torch")
    paper = network.init_params(n_in, L, M, 4)
    fan_in = [n_in] + [M] * (L - 1)
    assert [W.shape for W, _ in torch] == [W.shape for W, _ in paper]
    for l, ((W, b), n) in enumerate(zip(torch, fan_in)):
        bound = n ** -0.5
        assert np.abs(W).max() <= bound and np.abs(b).max() <= bound, l
        if W.size >= 60:  # the draw fills the interval
            assert np.abs(W).max() > 0.9 * bound, l
    # one generator, one order: W_1, b_1 are the paper's draw scaled; layers 2..L are the paper's bits
    scale = (M / n_in) ** 0.5
    np.testing.assert_allclose(torch[0][0], paper[0][0] * scale, rtol=0, atol=1e-15)
    np.testing.assert_allclose(torch[0][1], paper[0][1] * scale, rtol=0, atol=1e-15)
    for (W, b), (W0, b0) in zip(torch[1:], paper[1:]):
        assert np.array_equal(W, W0) and np.array_equal(b, b0)


def test_kolmogorov_smirnov_against_the_uniform_per_layer():
    """A large draw of each layer against U(+-1/sqrt(fan_in)) (accepted) and against the paper's U(+-M^-1/2)
    (rejected for the first layer, where the two differ)."""
    n_in, M = 3, 300
    (W1, b1), (W2, b2), (W3, b3) = network.init_params(n_in, 3, M, 11, init="torch")
    for values, fan_in in ((W1, n_in), (W2, M), (np.concatenate([W3.ravel(), b2]), M)):
        s = fan_in ** -0.5
        assert values.size >= 600
        assert scipy.stats.kstest(values.ravel(), "uniform", args=(-s, 2 * s)).pvalue > 1e-3
    s_paper = M ** -0.5
    assert scipy.stats.kstest(W1.ravel(), "uniform", args=(-s_paper, 2 * s_paper)).pvalue < 1e-12
    (P1, _), _, _ = network.init_params(n_in, 3, M, 11)
    assert scipy.stats.kstest(P1.ravel(), "uniform", args=(-s_paper, 2 * s_paper)).pvalue > 1e-3


@pytest.mark.parametrize("args", sorted(PAPER_SHA))
def test_the_default_start_keeps_its_bits(args):
    assert _sha(network.init_params(*args)) == PAPER_SHA[args]
    assert _sha(network.init_params(*args, init="paper")) == PAPER_SHA[args]


@pytest.mark.parametrize("args", sorted(TORCH_SHA))
def test_the_torch_start_is_the_pinn_ablation_studys(args):
    assert _sha(network.init_params(*args, init="torch")) == TORCH_SHA[args]


def test_the_setting_takes_the_values_init_params_knows():
    assert typing.get_args(Init) == network.INITS == ("paper", "torch")
    with pytest.raises(ValueError, match="unknown init 'xavier'"):
        network.init_params(2, 3, 5, 0, init="xavier")


# ---------------------------------------------------------------------------------------------
# The setting.

@pytest.mark.parametrize("solver", NETWORK_SOLVERS)
def test_every_network_solver_has_it_and_leaves_the_default_out_of_its_record(solver):
    Settings = solver_def(solver).Settings
    required = {"lr": 1e-3} if solver == "pinn" else {}
    default = Settings.from_mapping(required)
    assert default.init == "paper" and "init" not in default.to_dict()
    assert Settings.from_mapping({**required, "init": "paper"}) == default
    torch = Settings.from_mapping({**required, "init": "torch"})
    assert torch.to_dict() == {**default.to_dict(), "init": "torch"}
    with pytest.raises(SettingsError, match="'init'.*'paper' \\| 'torch'"):
        Settings.from_mapping({**required, "init": "pytorch"})


@pytest.mark.parametrize("solver", ["rfm", "poly"])
def test_the_solvers_without_a_seeded_network_refuse_it(solver):
    with pytest.raises(SettingsError, match="unknown setting"):
        solver_def(solver).Settings.from_mapping({"init": "torch"})


def test_initial_network_follows_the_settings():
    Settings = solver_def("pinn").Settings
    torch = Settings.from_mapping({"lr": 1e-3, "init": "torch"})
    assert _sha(initial_network(torch, 6, 4, 8, 3)) == TORCH_SHA[(6, 4, 8, 3)]
    assert _sha(initial_network(Settings.from_mapping({"lr": 1e-3}), 6, 4, 8, 3)) == PAPER_SHA[(6, 4, 8, 3)]
    assert _sha(initial_network(solver_def("rfm").Settings.from_mapping({}), 6, 4, 8, 3)) == PAPER_SHA[(6, 4, 8, 3)]


# ---------------------------------------------------------------------------------------------
# Runs.

def test_default_and_explicit_paper_runs_are_the_same_record(tmp_path):
    """Every network solver: the spec without ``init`` and with ``init: paper`` give the same record, bit for
    bit (timings aside), and neither names ``init`` (the archive's records match either spec)."""
    solvers = NETWORK_SOLVERS
    plain, paper = _spec(tmp_path, None, solvers=solvers), _spec(tmp_path, "paper", solvers=solvers)
    for solver in solvers:
        key = RunKey(solver, 3, 6, 1)
        a, pa = execute(plain, key, 3)
        b, pb = execute(paper, key, 3)
        assert "init" not in a.settings and a.settings == b.settings
        assert resumable_part(a.to_json()) == resumable_part(b.to_json()), solver
        assert a.history["J"][0] == network.pinn_loss(network.init_params(2, 3, 6, 1), *_train(plain))


def _train(spec):
    train = experiment_data(spec).training
    return train.Z, train.coef, train.Y


@pytest.mark.parametrize("solver", NETWORK_SOLVERS)
def test_a_torch_run_starts_from_the_torch_network_and_says_so(tmp_path, solver):
    paper, torch = _spec(tmp_path, None, solvers=(solver,)), _spec(tmp_path, "torch", solvers=(solver,))
    key = RunKey(solver, 3, 6, 0)
    a, _ = execute(paper, key, 3)
    b, trained = execute(torch, key, 3)
    assert b.settings == {**a.settings, "init": "torch"}
    start = network.init_params(2, 3, 6, 0, init="torch")
    assert b.history["J"][0] == network.pinn_loss(start, *_train(torch)) != a.history["J"][0]
    assert b.weights_sha256 != a.weights_sha256 and b.final.J != a.final.J
    assert b.status == "ok" and np.isfinite(b.final.J) and np.isfinite(b.final.l2)
    if solver == "rfls":  # hidden layers frozen at the torch start
        for (W, bb), (W0, b0) in zip(trained[:-1], start[:-1]):
            assert np.array_equal(W, W0) and np.array_equal(bb, b0)


def test_a_parabolic_torch_start_takes_fan_in_d_plus_one(tmp_path):
    spec = _spec(tmp_path, "torch", solvers=("pinn",), pde="parabolic", d=3)
    n_in = experiment_data(spec).problem.n_in
    assert n_in == 4
    W1 = initial_network(spec.solvers["pinn"], n_in, 3, 6, 0)[0][0]
    assert W1.shape == (6, 4) and 0.9 * 0.5 < np.abs(W1).max() <= 0.5


def test_a_paper_record_is_not_a_torch_run_and_the_reverse(tmp_path):
    """A record of one init conflicts with a spec of the other (redone only with --force), and a LySep
    checkpoint of one is not the other's."""
    paper, torch = _spec(tmp_path, None), _spec(tmp_path, "torch")
    results = tmp_path / "results"
    for spec, other in ((paper, torch), (torch, paper)):
        rec, params = execute(spec, RunKey("pinn", 3, 6, 0), spec.iterations)
        records.write_record(results, rec, params)
        assert plan_runs(spec, ["pinn"], [(3, 6)], [0], spec.iterations, results).skipped
        plan = plan_runs(other, ["pinn"], [(3, 6)], [0], other.iterations, results)
        assert not plan.todo and not plan.skipped and len(plan.conflicts) == 1
        assert "init" in plan.conflicts[0][2]
    sha = experiment_data(paper).sha256
    ckpt = {name: runner._checkpoint(spec, RunKey("lysep", 3, 6, 0), 4, results, sha)
            for name, spec in (("paper", paper), ("torch", torch))}
    assert '"init": "torch"' in ckpt["torch"].fingerprint and '"init"' not in ckpt["paper"].fingerprint
    ckpt["paper"].save({"loop": {"k": 1}}, {"x": np.zeros(2)})
    assert ckpt["paper"].load() is not None and ckpt["torch"].load() is None


# ---------------------------------------------------------------------------------------------
# The command line.

def _run(config, results, *extra):
    return cli.invoke(app, ["run", "tiny", "--config", str(config), "--results", str(results), *extra])


def test_lysep_run_with_init_torch_records_it(tmp_path):
    config = write_tiny(tmp_path, _yaml("torch", iterations=3))
    res = _run(config, tmp_path / "r", "--solver", "pinn,lysep", "--seeds", "0")
    assert res.exit_code == 0, res.output
    recs = [json.loads(p.read_text()) for p in sorted((tmp_path / "r").rglob("seed-*.json"))]
    assert len(recs) == 2 and all(r["settings"]["init"] == "torch" and r["status"] == "ok" for r in recs)


@pytest.mark.parametrize("solver,block,expect", [
    ("pinn", "{lr: 1.0e-3, init: pytorch}", "field 'init': expected 'paper' | 'torch', got str 'pytorch'"),
    ("lysep", "{init: 3}", "field 'init': expected 'paper' | 'torch', got int 3"),
    ("rfm", "{init: torch}", "field 'init': unknown setting"),
])
def test_a_bad_init_is_one_line_and_exit_2(tmp_path, solver, block, expect):
    config = write_tiny(tmp_path, experiments_yaml(experiment_yaml("tiny", {solver: block}, sizes=[[2, 6]]
                                                                   if solver == "rfm" else [[3, 6]])))
    res = _run(config, tmp_path / "r", "--solver", solver)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0] and "Traceback" not in res.output, res.stderr
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").rglob("seed-*.json"))


def test_the_stacked_engine_starts_from_the_torch_network_too(tmp_path):
    """``--device cpu-stacked`` (the stacked engine on NumPy: the CPU engine's bits) with ``init: torch``:
    the records of the CPU engine, weights and histories included."""
    config = write_tiny(tmp_path, _yaml("torch", solvers=("pinn", "lysep"), iterations=3))
    for device, results in (("cpu-stacked", tmp_path / "s"), ("cpu", tmp_path / "c")):
        res = _run(config, results, "--solver", "pinn,lysep", "--device", device)
        assert res.exit_code == 0, res.output
    got = {p.relative_to(tmp_path / "s"): json.loads(p.read_text()) for p in (tmp_path / "s").rglob("seed-*.json")}
    want = {p.relative_to(tmp_path / "c"): json.loads(p.read_text()) for p in (tmp_path / "c").rglob("seed-*.json")}
    assert sorted(got) == sorted(want) and len(got) == 4
    for name, rec in got.items():
        assert rec["versions"]["device"] == "cpu-stacked" and rec["settings"]["init"] == "torch"
        assert rec["weights_sha256"] == want[name]["weights_sha256"] and rec["final"] == want[name]["final"]
