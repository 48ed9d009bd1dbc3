"""The harder suite (suites/harder.yaml, docs/harder.md): its families load and pass the user-problem
checks; the kappa rule of `lysep study kappa`; the study's output format; the committed study against an
independent least-squares fit; a smoke run of a chosen member through the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.numerics import polynomial
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.jacobian import output_layer_system
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.numerics.network import init_params
from lysep_cli.reports.kappa import COLUMNS, THRESHOLD, choices, choose
from lysep_cli.solvers.rfm import features
from lysep_cli.specs import BadInput, load_families, load_specs, refusal

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "suites" / "harder.yaml"
CHOSEN = ROOT / "results" / "harder" / "experiments.yaml"
STUDY = ROOT / "results" / "harder" / "study-kappa" / "kappa.csv"
cli = CliRunner()

TINY = """\
families:
  wave:
    kappa_grid: [1, 8, 32]
    problem: {pde: elliptic, d: 2, domain: ball, c: "1", u: "(1 - x1**2 - x2**2) * sin(kappa * x1)"}
    experiment: &run
      sizes: [[3, 10]]
      n_train: 200
      n_test: 100
      iterations: 5
      seeds: [0]
      solvers: {pinn: {lr: 1.0e-3, lr_final: 1.0e-4}, rfm: {sigma: 1.0, sizes: [[2, 50]]}, poly: {degree: 8, sizes: [[2, 45]]}}
  easy:
    kappa_grid: [0.5, 1]
    problem: {pde: elliptic, d: 2, domain: box, c: "1", u: "x1*(1 - x1)*x2*(1 - x2) * exp(kappa * x1)"}
    experiment: *run
"""


def test_suite_covers_the_issue():
    fams = load_families(SUITE)
    specs = load_specs(SUITE)
    assert len(fams) >= 5
    probs = [f.problem for f in fams.values()]
    assert {p["pde"] for p in probs} == {"elliptic", "parabolic", "hyperbolic"}
    assert {2, 5, 10} <= {p["d"] for p in probs}
    assert {p.get("domain", "ball") for p in probs} == {"ball", "box"}
    for f in fams.values():
        assert list(f.kappas) == sorted(f.kappas) and len(f.kappas) >= 5
        for k in f.kappas:
            spec = specs[f.member(k)]
            assert spec.problem is not None and "kappa" not in spec.problem.u
            assert spec.problem.identity().startswith(f.member(k) + ":")
            assert len(spec.sizes) == 4 and len(spec.seeds) >= 5 and spec.iterations == 2000


def test_every_family_passes_the_user_problem_checks_at_its_hardest_kappa():
    """Built and checked (check points, training and test points) at the largest kappa, where the values
    are most extreme (`lysep study kappa` checks every member before it fits one: a refused member stops it)."""
    fams, specs = load_families(SUITE), load_specs(SUITE)
    for f in fams.values():
        assert refusal(specs[f.member(f.kappas[-1])]) is None, f.member(f.kappas[-1])


def test_family_faults_are_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    for text, needle in [(TINY.replace("sin(kappa * x1)", "sin(x1)"), "no formula names kappa"),
                         (TINY.replace("[1, 8, 32]", "[8, 1]"), "strictly increasing"),
                         (TINY.replace("kappa_grid: [1, 8, 32]", "kappa_grid: [1, 8, 32]\n    color: red"), "unknown key"),
                         (TINY + "problems:\n  wave-k8: {pde: elliptic, d: 2, c: '1', u: '1 - x1**2 - x2**2'}\n",
                          "also a problem")]:
        bad.write_text(text)
        with pytest.raises(BadInput, match=needle) as err:
            load_specs(bad)
        assert "\n" not in str(err.value)


def test_rule_picks_the_smallest_kappa_over_the_threshold():
    assert choose([1, 2, 4, 8], [1e-5, 2e-3, 3e-2, 1.0]).kappa == 4
    assert choose([1, 2, 4, 8], [1e-5, 5e-2, 1e-3, 1.0]).kappa == 2  # not monotone: still the smallest
    assert choose([1, 2, 4], [1e-5, THRESHOLD, 1e-3]).kappa == 2       # at the threshold counts
    assert choose([1, 2, 4], [1e-5, math.nan, 1e-3]).kappa == 2        # a failed solve counts as failing


def test_rule_reports_a_family_poly_always_solves_or_never_solves():
    ok = choose([1, 2, 4], [1e-9, 1e-6, 9.9e-3])
    assert ok.kappa is None and "succeeds at every kappa" in ok.verdict
    bad = choose([1, 2, 4], [0.5, 1.0, 2.0])
    assert bad.kappa is None and "fails at every kappa" in bad.verdict


def test_study_command_writes_its_files(tmp_path):
    config, out = tmp_path / "tiny.yaml", tmp_path / "out"
    config.write_text(TINY)
    r = cli.invoke(app, ["study", "kappa", "--config", str(config), "--out", str(out)])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "study-kappa" / "kappa.csv")
    assert list(df.columns) == COLUMNS
    assert [(f, k) for f, k in zip(df.family, df.kappa)] == [("wave", 1), ("wave", 8), ("wave", 32),
                                                              ("easy", 0.5), ("easy", 1)]
    assert (df.poly_degree == 8).all() and (df.poly_P == 45).all()  # largest P <= 200 / 4 in 2 inputs
    assert (df.rfm_M.isin([50, 100])).all()
    v = choices(df)
    assert v["easy"].kappa is None and "succeeds at every kappa" in v["easy"].verdict
    wave = df[df.family == "wave"]
    first = wave[wave.poly_l2 >= THRESHOLD].kappa.min()
    assert v["wave"].kappa == first
    md = (out / "study-kappa" / "kappa.md").read_text()
    assert "## wave" in md and "## easy" in md and "poly succeeds at every kappa" in md and "←" in md
    chosen = load_specs(out / "experiments.yaml")
    member = f"wave-k{int(first)}"
    assert list(chosen) == [member]  # the easy family is not given a kappa
    assert chosen[member].problem.identity() == load_specs(config)[member].problem.identity()
    row = wave[wave.kappa == first].iloc[0]
    assert chosen[member].solvers["rfm"].sigma == row.rfm_sigma
    assert chosen[member].sizes_for("rfm") == ((2, int(row.rfm_M)),)


def test_study_command_bad_input_is_one_line(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY)
    r = cli.invoke(app, ["study", "kappa", "nope", "--config", str(config), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "unknown family 'nope'" in r.output and "Traceback" not in r.output
    r = cli.invoke(app, ["study", "kappa", "--config", str(ROOT / "experiments.yaml"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no families" in r.output
    assert not (tmp_path / "o").exists()


def _committed(family: str):
    df = pd.read_csv(STUDY)
    k = choices(df)[family].kappa
    assert k is not None
    row = df[(df.family == family) & (df.kappa == k)].iloc[0]
    spec = load_specs(SUITE)[load_families(SUITE)[family].member(k)]
    return row, spec


def test_committed_poly_and_rfm_match_an_independent_lstsq():
    """osc-ball-2d at its chosen kappa: numpy.linalg.lstsq on the same residual columns gives the l2
    kappa.csv holds for poly (largest degree) and rfm (its held-out sigma, M, seed 0)."""
    row, spec = _committed("osc-ball-2d")
    data = experiment_data(spec)
    tr = data.training
    E = polynomial.exponents(tr.Z.shape[0], int(row.poly_degree))
    A = polynomial.residual_columns(E, tr.Z, tr.coef)
    s = np.linalg.norm(A, axis=0)
    c = np.linalg.lstsq(A / s, tr.Y, rcond=np.finfo(float).eps * max(A.shape))[0] / s
    l2 = relative_l2(data.problem, [(E.astype(float), c)], data.Z_test)
    assert l2 == pytest.approx(row.poly_l2, rel=1e-6)
    params = features(init_params(tr.Z.shape[0], 2, int(row.rfm_M), 0), float(row.rfm_sigma))
    A, _ = output_layer_system(params, tr.Z, tr.coef)
    x = np.linalg.lstsq(A, tr.Y, rcond=np.finfo(float).eps * max(A.shape))[0]
    params[-1] = (x[:-1].reshape(1, -1), x[-1:])
    l2 = relative_l2(data.problem, params, data.Z_test)
    assert l2 == pytest.approx(row.rfm_l2, rel=1e-4)


def test_committed_choice_follows_the_rule_and_the_chosen_file_loads():
    df = pd.read_csv(STUDY)
    fams = load_families(SUITE)
    assert list(dict.fromkeys(df.family)) == list(fams)
    chosen = load_specs(CHOSEN)
    suite = load_specs(SUITE)
    for name, v in choices(df).items():
        part = df[df.family == name]
        assert list(part.kappa) == list(fams[name].kappas)
        if v.kappa is None:
            assert not any(m.startswith(name + "-k") for m in chosen)
            continue
        member = fams[name].member(v.kappa)
        assert chosen[member].problem.identity() == suite[member].problem.identity()
        assert (part[part.kappa < v.kappa].poly_l2 < THRESHOLD).all()
        assert float(part[part.kappa == v.kappa].poly_l2.iloc[0]) >= THRESHOLD


def test_smoke_run_of_a_chosen_member(tmp_path):
    """PINN and LySep on a chosen member, smallest size, one seed, 5 iterations, through the CLI."""
    doc = yaml.safe_load(CHOSEN.read_text())
    name = next(n for n, e in doc["experiments"].items() if doc["problems"][e["problem"]]["d"] == 2)
    r = cli.invoke(app, ["run", name, "--config", str(CHOSEN), "--solver", "pinn,lysep", "--sizes", "smallest",
                         "--seeds", "0", "--iterations", "5", "--results", str(tmp_path)])
    assert r.exit_code == 0, r.output
    recs = sorted((tmp_path / name).glob("*/L*-M*/seed-0.json"))
    assert [p.parts[-3] for p in recs] == ["lysep", "pinn"]


def test_budget_estimate_reproduces_the_archive_it_is_drawn_from():
    """The estimate for the archive's own elliptic-2d and parabolic-5d cells (PINN, LySep, one init) is their
    measured CPU seconds within 25 % (the rates are medians over seeds); the harder suite's chosen members fit in 8 CPU hours."""
    from lysep_cli.reports.budget import archive_rates, estimate
    from lysep_cli.store.records import load_records

    recs = load_records(ROOT / "results" / "paper", ["elliptic-2d", "parabolic-5d", "elliptic-10d"]).records
    rates = archive_rates(recs)
    paper = load_specs(ROOT / "experiments.yaml")
    for name in ("elliptic-2d", "parabolic-5d"):
        for solver in ("pinn", "lysep"):
            measured = sum(r.diagnostics.get("cpu_seconds", r.seconds) for r in recs
                           if r.experiment == name and r.solver == solver)
            est = estimate(paper[name], rates, inits=1, solvers=[solver])[0]
            assert est["seconds"] == pytest.approx(measured, rel=0.25), (name, solver)
    chosen = load_specs(CHOSEN)
    total = sum(r["seconds"] for s in chosen.values() for r in estimate(s, rates, inits=1))  # the -torch twins listed
    assert 0 < total <= 8 * 3600


@pytest.mark.parametrize("grid", ["[1, 1e999]", "[1, 1" + "0" * 400 + "]", "[1, true]", "[1]", "1", "[1, .nan]"])
def test_a_bad_kappa_grid_is_one_line(tmp_path, grid):
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY.replace("[1, 8, 32]", grid))
    r = cli.invoke(app, ["list", "--config", str(bad)])
    assert r.exit_code == 2 and "kappa_grid" in r.output and "Traceback" not in r.output


def test_budget_command_bad_input(tmp_path):
    r = cli.invoke(app, ["study", "budget", "nope", "--config", str(CHOSEN)])
    assert r.exit_code == 2 and "unknown experiment 'nope'" in r.output
    r = cli.invoke(app, ["study", "budget", "--inits", "0", "--config", str(CHOSEN)])
    assert r.exit_code == 2 and "--inits" in r.output


def test_a_study_of_some_families_keeps_the_others_rows(tmp_path):
    config, out = tmp_path / "tiny.yaml", tmp_path / "out"
    config.write_text(TINY)
    assert cli.invoke(app, ["study", "kappa", "easy", "--config", str(config), "--out", str(out)]).exit_code == 0
    assert list(pd.read_csv(out / "study-kappa" / "kappa.csv").family.unique()) == ["easy"]
    assert cli.invoke(app, ["study", "kappa", "wave", "--config", str(config), "--out", str(out)]).exit_code == 0
    df = pd.read_csv(out / "study-kappa" / "kappa.csv")
    assert list(df.family) == ["wave"] * 3 + ["easy"] * 2  # the file's order, easy's rows kept
    assert list(load_specs(out / "experiments.yaml")) == ["wave-k8"]


def test_also_writes_another_member_by_hand_and_refuses_a_stray_one(tmp_path):
    config, out = tmp_path / "tiny.yaml", tmp_path / "out"
    config.write_text(TINY)
    r = cli.invoke(app, ["study", "kappa", "--config", str(config), "--out", str(out), "--also", "easy-k1",
                         "--also", "wave-k32"])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "study-kappa" / "kappa.csv")
    first = int(df[(df.family == "wave") & (df.poly_l2 >= THRESHOLD)].kappa.min())
    chosen = load_specs(out / "experiments.yaml")
    # the rule's choice first, then the named members (a family with no kappa may still be named)
    expected = [f"wave-k{first}", "easy-k1"] + (["wave-k32"] if first != 32 else [])
    assert list(chosen) == expected
    row = df[(df.family == "easy") & (df.kappa == 1)].iloc[0]
    assert chosen["easy-k1"].solvers["rfm"].sigma == row.rfm_sigma  # its own held-out (sigma, M)
    assert chosen["easy-k1"].problem.identity() == load_specs(config)["easy-k1"].problem.identity()
    text = (out / "experiments.yaml").read_text()
    assert "--also easy-k1 --also wave-k32" in text and "named by hand (--also), not chosen by the rule" in text
    assert choices(df)["easy"].kappa is None  # naming a member never changes the rule's verdict
    for bad in ("wave-k2", "nope-k1"):
        r = cli.invoke(app, ["study", "kappa", "--config", str(config), "--out", str(tmp_path / "o"), "--also", bad])
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "not a member" in r.output, r.output
        assert not (tmp_path / "o").exists()


def test_rfm_scales_above_the_grid_do_not_change_contrast_kinks_choice():
    """docs/harder.md (issue 55): contrast-kink-box-2d's rfm σ = 32 is its grid's top; with σ = 64 and 128
    offered too, the held-out rule (never the test error) still picks σ = 32, M = 250: the grid's edge does
    not bind there."""
    from lysep_cli.reports.kappa import RFM_SIGMAS, rfm_held_out

    spec = load_specs(CHOSEN)["contrast-kink-box-2d-k100"]
    study = pd.read_csv(ROOT / "results" / "harder" / "study-kappa" / "kappa.csv")
    row = study[study.experiment == spec.name].iloc[0]
    wider = rfm_held_out(spec, RFM_SIGMAS + (64.0, 128.0))
    assert max(RFM_SIGMAS) == 32.0 and (row.rfm_sigma, row.rfm_M) == (32.0, 250)
    assert (wider["rfm_sigma"], wider["rfm_M"]) == (32.0, 250)
    assert wider["rfm_J_hold"] == pytest.approx(row.rfm_J_hold, rel=1e-9)
