"""The polynomial baseline (poly): monomials and their derivatives against finite differences, the fit
against a problem whose exact u is B * a polynomial (recovered to round-off), the N/4 rule through the
command line, one seed-free run per cell, and `lysep verify --weights` on its saved coefficients."""

from __future__ import annotations

import json
from math import comb

import numpy as np
import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.numerics import polynomial
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.metrics import loss, relative_l2
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import solver_def
from lysep_cli.solvers.poly import Settings
from lysep_cli.specs import BadInput, load_specs

from foundation_helpers import write_tiny

cli = CliRunner()


def test_exponents_are_every_monomial_of_total_degree_at_most_k():
    for n_in, k in [(1, 4), (2, 3), (3, 2), (6, 3), (11, 2)]:
        E = polynomial.exponents(n_in, k)
        assert E.shape == (comb(n_in + k, k), n_in) == (polynomial.n_monomials(n_in, k), n_in)
        assert E.min() >= 0 and E.sum(axis=1).max() == k
        assert len({tuple(r) for r in E}) == len(E)  # no monomial twice


def test_monomial_derivatives_match_central_differences():
    rng = np.random.default_rng(0)
    E = polynomial.exponents(3, 4)
    Z = rng.uniform(-1, 1, (3, 7))
    Z[1, 2] = 0.0  # a zero coordinate: the products skip the factor, never divide by it
    m, md, mdd = polynomial.derivatives(E, Z)
    direct = np.prod(Z[None, :, :] ** E[:, :, None], axis=1)
    np.testing.assert_allclose(m, direct, rtol=1e-13, atol=1e-15)
    h = 1e-5
    for j in range(3):
        step = np.zeros((3, 1))
        step[j] = h
        up, down = polynomial.derivatives(E, Z + step)[0], polynomial.derivatives(E, Z - step)[0]
        np.testing.assert_allclose(md[:, j], (up - down) / (2 * h), atol=1e-8)
        np.testing.assert_allclose(mdd[:, j], (up - 2 * m + down) / h ** 2, atol=2e-4)


def test_residual_columns_are_the_operator_applied_to_each_monomial():
    """A[:, p] = K m_p + sum_j K1_j d_j m_p + sum_j K2_j d_jj m_p, checked one column at a time."""
    problem = make_problem("parabolic", 2)
    Z, _ = train_test_points(30, 4, 2, True)
    coef = problem.coefficients(Z)
    E = polynomial.exponents(3, 3)
    A = polynomial.residual_columns(E, Z, coef)
    m, md, mdd = polynomial.derivatives(E, Z)
    for p in (0, 5, len(E) - 1):
        want = coef.K * m[p] + (coef.K1 * md[p]).sum(0) + (coef.K2 * mdd[p]).sum(0)
        np.testing.assert_allclose(A[:, p], want, rtol=1e-12, atol=1e-14)


def test_columns_built_in_blocks_of_monomials_are_the_same_bits(monkeypatch):
    problem = make_problem("hyperbolic", 3)
    Z, _ = train_test_points(50, 4, 3, True)
    coef = problem.coefficients(Z)
    E = polynomial.exponents(4, 3)
    whole = polynomial.residual_columns(E, Z, coef)
    monkeypatch.setattr(polynomial, "BLOCK_VALUES", 3 * 4 * 50)  # three monomials a block
    assert np.array_equal(polynomial.residual_columns(E, Z, coef), whole)


def test_poly_of_a_smooth_problem_falls_with_the_degree_and_ignores_the_seed():
    problem = make_problem("elliptic", 2, "exp-sin")
    Z, Z_test = train_test_points(400, 100, 2, False)
    data = TrainingData.build(problem, Z)
    solve = solver_def("poly").solve
    Js = [solve(problem, data, [], {"degree": k}, 1).history["J"][-1] for k in (1, 3, 5)]
    assert Js[0] > 10 * Js[1] > 100 * Js[2]
    res = solve(problem, data, [], {"degree": 5}, 1)
    assert res.history["J"][-1] == pytest.approx(loss(res.params, Z, data.coef, data.Y), rel=1e-12)
    assert res.diagnostics["n_columns"] == 21 and res.diagnostics["rank"] == 21
    assert relative_l2(problem, res.params, Z_test) < 0.01


POLY_YAML = """\
problems:
  cubic-2d:
    pde: elliptic
    d: 2
    c: "2 + x1"
    u: "(x1**2 + x2**2 - 1) * (1 + x1 * x2 - 3 * x2**3 + x1**2 * x2)"
experiments:
  cubic-2d:
    problem: cubic-2d
    sizes: [[3, 6]]
    n_train: 80
    n_test: 40
    iterations: 5
    seeds: [0, 1, 2]
    solvers:
      poly: {degree: DEGREE, sizes: [[2, SIZE]]}
"""


def _config(tmp_path, degree: int, size: int):
    return write_tiny(tmp_path, POLY_YAML.replace("DEGREE", str(degree)).replace("SIZE", str(size)))


def test_exact_polynomial_recovered_to_round_off_one_run_and_its_coefficients_re_evaluated(tmp_path):
    """u = B * (a cubic): poly of degree 3 (P = 10) finds it; J and l2 at round-off, one run for three seeds."""
    config, results = _config(tmp_path, 3, 10), tmp_path / "results"
    r = cli.invoke(app, ["run", "cubic-2d", "--solver", "poly", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    runs = sorted(p.name for p in (results / "cubic-2d/poly/L2-M10").glob("*.json"))
    assert runs == ["seed-0.json"]  # seed-free: the first seed stands for all
    rec = json.loads((results / "cubic-2d/poly/L2-M10/seed-0.json").read_text())
    assert rec["final"]["J"] < 1e-24 and rec["final"]["l2"] < 1e-12
    assert rec["settings"] == {"degree": 3} and rec["diagnostics"]["n_columns"] == 10
    with np.load(results / "cubic-2d/poly/L2-M10/seed-0.npz") as z:  # [(E, c)]: c is the cubic's
        E, c = z["W1"], z["b1"]
    got = {tuple(int(v) for v in e): x for e, x in zip(E, c) if abs(x) > 1e-10}
    assert got.keys() == {(0, 0), (1, 1), (0, 3), (2, 1)}
    assert got[(0, 3)] == pytest.approx(-3.0, abs=1e-10) and got[(1, 1)] == pytest.approx(1.0, abs=1e-10)
    v = cli.invoke(app, ["verify", "--weights", "--all", "--config", str(config), "--results", str(results)])
    assert v.exit_code == 0 and "1 of 1 run(s) reproduce the archive" in v.output, v.output
    s = cli.invoke(app, ["status", "cubic-2d", "--solver", "poly", "--config", str(config), "--results", str(results)])
    assert s.exit_code == 0 and "(2,10) | 1/1" in s.output, s.output
    t = cli.invoke(app, ["table", "cubic-2d", "--format", "markdown", "--config", str(config), "--results", str(results)])
    assert t.exit_code == 0 and "| poly † " in t.output and "| 1/1 " in t.output, t.output
    low = cli.invoke(app, ["run", "cubic-2d", "--solver", "poly", "--config", str(_config(tmp_path, 2, 6)),
                           "--results", str(tmp_path / "low")])
    rec2 = json.loads((tmp_path / "low/cubic-2d/poly/L2-M6/seed-0.json").read_text())
    assert low.exit_code == 0 and rec2["final"]["J"] > 1e-6  # one degree short: no exact fit


def test_too_many_monomials_is_one_line_exit_2_and_nothing_written(tmp_path):
    config, results = _config(tmp_path, 5, 21), tmp_path / "results"  # P = 21 > 80 / 4
    r = cli.invoke(app, ["run", "cubic-2d", "--solver", "poly", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 2 and not results.exists()
    line = r.stderr.strip() if hasattr(r, "stderr") else r.output.strip()
    assert "\n" not in line and "P = 21 coefficients, more than n_train / 4 = 20" in line, line
    assert "Traceback" not in r.output
    s = cli.invoke(app, ["run", "cubic-2d", "--solver", "poly", "--sizes", "2x11", "--config",
                         str(_config(tmp_path, 3, 10)), "--results", str(results)])
    assert s.exit_code == 2 and "its size is [2, 10], not [2, 11]" in s.output and not results.exists()


def test_the_size_must_be_two_by_the_coefficient_count(tmp_path):
    with pytest.raises(BadInput, match=r"degree 3 in 2 inputs has P = 10 coefficients: its size is \[2, 10\]"):
        load_specs(_config(tmp_path, 3, 9))
    assert Settings(degree=1).size_error(3, 3) is not None and Settings(degree=1).size_error(2, 3) is None


def test_degree_study_stops_at_the_n_over_4_rule_and_chooses_on_the_held_out_residual(tmp_path):
    import pandas as pd

    from lysep_cli.reports.poly_degree import chosen_degree, max_degree

    assert max_degree(2, 80) == 4 and max_degree(10, 2000) == 3 and max_degree(6, 2000) == 5  # P <= N/4
    config, results = _config(tmp_path, 3, 10), tmp_path / "results"
    r = cli.invoke(app, ["study", "poly-degree", "cubic-2d", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(results / "cubic-2d/study-poly-degree/runs.csv")
    # J falls to round-off at k = 3 (u = B * a cubic) and stays there: stopped at k = 4 = the N/4 limit
    assert list(df.degree) == [0, 1, 2, 3, 4] and list(df.P) == [1, 3, 6, 10, 15]
    assert df.J[3] < 1e-24 < df.J[2] and df.J_hold[3] < 1e-20
    assert chosen_degree(df) == 3 and "k = 3, P = 10" in (results / "cubic-2d/study-poly-degree/summary.md").read_text()
    # the choice: the smallest degree within 2x of the least held-out residual, whatever the test error
    fake = pd.DataFrame({"degree": [0, 1, 2], "J_hold": [3.0, 1.9, 1.0], "l2": [0.0, 9.0, 9.0]})  # l2 unused
    assert chosen_degree(fake) == 1


def test_the_10d_fixed_tau_endpoint_is_poly_degree_0():
    """Every collapsed run (||W_3|| < 1e-5) of the archived 10-D step-size study ends at poly degree 0's J and
    l2; degree 0 checked against its closed form c_0 = K.Y / K.K (phi constant: no derivative enters)."""
    from pathlib import Path

    import pandas as pd

    from lysep_cli.numerics.dataset import experiment_data
    from lysep_cli.solvers.poly import fit
    from lysep_cli.specs import default_config

    spec = load_specs(default_config())["elliptic-10d"]
    data = experiment_data(spec)
    tr = data.training
    E, c, J, _ = fit(tr, 0)
    c0 = (tr.coef.K @ tr.Y) / (tr.coef.K @ tr.coef.K)
    assert c[0] == pytest.approx(c0, rel=1e-13)
    assert J == pytest.approx(np.sum((tr.Y - c0 * tr.coef.K) ** 2) / tr.Y.size, rel=1e-10)
    l2 = relative_l2(data.problem, [(E, c)], data.Z_test)
    runs = pd.read_csv(Path(__file__).resolve().parents[1] / "results/paper/elliptic-10d/study-step-size/runs.csv")
    big = runs[(runs.rule == "fixed") & (runs.tau >= 1e2)]
    collapsed = big[big.W3_norm < 1e-5]
    assert len(big) == 18 and len(collapsed) == 15 and (big[big.tau >= 1e3].W3_norm < 1e-5).all()
    assert np.allclose(collapsed.J / J, 1.0, atol=3e-3) and np.allclose(collapsed.l2 / l2, 1.0, atol=5e-3)
    assert J == pytest.approx(1.0686e-9, rel=1e-4) and l2 == pytest.approx(3.839e-4, rel=1e-3)


def test_poly_matches_an_independent_legendre_fit_on_the_2d_experiment():
    """The same space (total degree <= 9 in x1, x2) in another basis, products of Legendre polynomials with
    numpy's own derivatives, solved by numpy.linalg.lstsq: the same J and l2."""
    from numpy.polynomial import legendre

    from lysep_cli.numerics.dataset import experiment_data
    from lysep_cli.specs import default_config

    data = experiment_data(load_specs(default_config())["elliptic-2d"])
    tr, k = data.training, 9

    def leg(a: int, order: int, z: np.ndarray) -> np.ndarray:
        return legendre.legval(z, legendre.legder(np.eye(a + 1)[a], order) if order else np.eye(a + 1)[a])

    pairs = [(a, b) for a in range(k + 1) for b in range(k + 1 - a)]
    x, y = tr.Z
    A = np.array([tr.coef.K * leg(a, 0, x) * leg(b, 0, y)
                  + tr.coef.K1[0] * leg(a, 1, x) * leg(b, 0, y) + tr.coef.K1[1] * leg(a, 0, x) * leg(b, 1, y)
                  + tr.coef.K2[0] * leg(a, 2, x) * leg(b, 0, y) + tr.coef.K2[1] * leg(a, 0, x) * leg(b, 2, y)
                  for a, b in pairs]).T
    c = np.linalg.lstsq(A, tr.Y, rcond=None)[0]
    J_ref = float(np.sum((A @ c - tr.Y) ** 2) / tr.Y.size)
    xt, yt = data.Z_test
    psi = data.problem.boundary_factor(data.Z_test) * sum(ci * leg(a, 0, xt) * leg(b, 0, yt) for ci, (a, b) in zip(c, pairs))
    u = data.problem.u(data.Z_test)
    l2_ref = float(np.linalg.norm(psi - u) / np.linalg.norm(u))
    res = solver_def("poly").solve(data.problem, tr, [], {"degree": k}, 1)
    assert res.history["J"][-1] == pytest.approx(J_ref, rel=1e-6) and J_ref < 1e-9
    assert relative_l2(data.problem, res.params, data.Z_test) == pytest.approx(l2_ref, rel=1e-6)
