"""Problems written in the experiments file: the paper's four written this way reproduce the built-in
ones; formulas are parsed, never run as Python; bad problems are one line and exit 2, nothing written."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.store import records
from lysep_cli.execution.runner import RunKey, execute
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.specs import load_specs

from foundation_helpers import write_tiny

cli = CliRunner()


def _sum(fmt: str, d: int, sep: str = " + ") -> str:
    return "(" + sep.join(fmt.format(i=i) for i in range(1, d + 1)) + ")"


R2_2, R2_10, R2_5 = _sum("x{i}**2", 2), _sum("x{i}**2", 10), _sum("x{i}**2", 5)
PAPER = {  # Section 4's problems as formulas
    "elliptic-2d": ("elliptic", 2, "exp-sin", R2_2, f"(exp({R2_2} - 1) - 1) * (sin(x1) + sin(x2))"),
    "elliptic-10d": ("elliptic", 10, "sin-radial", f"{R2_10} / 10", f"sin(({R2_10} - 1) / 10)"),
    "parabolic-5d": ("parabolic", 5, None, f"{_sum('x{i}', 5)} / 5 + 2",
                     f"(exp(-t/5) - 1) * sin(({R2_5} - 1)/5) * {_sum('cos(x{i}/sqrt(5))', 5)}"),
    "hyperbolic-5d": ("hyperbolic", 5, None, f"{_sum('x{i}', 5)} / 5 + 2",
                      f"(exp(-t**2/5) - 1) * sin(({R2_5} - 1)/5) * {_sum('cos(x{i}/sqrt(5))', 5)}"),
}


def _yaml(n_train: int = 300, n_test: int = 100) -> str:
    problems = "".join(f"  {n}-as-data:\n    pde: {pde}\n    d: {d}\n    c: \"{c}\"\n    u: \"{u}\"\n"
                       for n, (pde, d, _, c, u) in PAPER.items())
    block = ("    sizes: [[3, 10]]\n    n_train: {nt}\n    n_test: {ns}\n    iterations: 200\n    seeds: [0]\n"
             "    solvers: {{pinn: {{lr: 1.0e-3, lr_final: 1.0e-4}}, rfls: {{}}}}\n")
    exps = ""
    for n, (pde, d, sol, _, _) in PAPER.items():
        exps += f"  {n}:\n    pde: {pde}\n    d: {d}\n" + (f"    solution: {sol}\n" if sol else "")
        exps += block.format(nt=n_train, ns=n_test)
        exps += f"  {n}-as-data:\n    problem: {n}-as-data\n" + block.format(nt=n_train, ns=n_test)
    return "problems:\n" + problems + "experiments:\n" + exps


@pytest.fixture(scope="module")
def paper_as_data(tmp_path_factory):
    return load_specs(write_tiny(tmp_path_factory.mktemp("paper"), _yaml()))


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("name", list(PAPER))
def test_the_papers_problems_written_as_data_reproduce_the_built_in_data(paper_as_data, name):
    built, data = experiment_data(paper_as_data[name]), experiment_data(paper_as_data[f"{name}-as-data"])
    assert np.array_equal(built.Z_train, data.Z_train)  # the same Halton points in the ball
    Z = built.Z_train
    assert _rel(data.problem.rhs(Z), built.problem.rhs(Z)) <= 1e-13
    assert _rel(data.problem.u(Z), built.problem.u(Z)) <= 1e-13
    for field in ("K", "K1", "K2"):
        assert _rel(getattr(data.training.coef, field), getattr(built.training.coef, field)) <= 1e-13


@pytest.mark.parametrize("name", ["elliptic-2d", "parabolic-5d"])
def test_pinn_on_a_problem_as_data_matches_the_built_in_one_after_200_iterations(paper_as_data, name):
    a, _ = execute(paper_as_data[name], RunKey("pinn", 3, 10, 0), 200)
    b, _ = execute(paper_as_data[f"{name}-as-data"], RunKey("pinn", 3, 10, 0), 200)
    assert abs(b.final.J - a.final.J) <= 1e-10 * abs(a.final.J)
    assert b.solution.startswith(f"{name}-as-data:")  # the record names the problem and its definition


BOX = """\
problems:
  box-2d:
    pde: elliptic
    d: 2
    domain: box
    c: "1 + x1 * x2"
    u: "x1 * (1 - x1) * x2 * (1 - x2) * exp(x1 + x2)"
experiments:
  box-2d:
    problem: box-2d
    sizes: [[3, 40]]
    n_train: 400
    n_test: 100
    iterations: 10
    seeds: [0, 1]
    solvers: {pinn: {lr: 1.0e-3}, lysep: {}, rfls: {}}
"""


def test_a_box_problem_runs_and_rfls_fits_it(tmp_path):
    config, results = write_tiny(tmp_path, BOX), tmp_path / "results"
    r = cli.invoke(app, ["run", "box-2d", "--solver", "pinn,lysep,rfls", "--config", str(config),
                         "--results", str(results)])
    assert r.exit_code == 0, r.output
    Z = np.load(results / "box-2d" / "data.npz")["train"]
    assert Z.min() >= 0.0 and Z.max() <= 1.0 and Z.shape == (400, 2)  # points of the box
    sel = load_specs(config)["box-2d"]
    problem = experiment_data(sel).problem
    assert np.allclose(problem.boundary_factor(np.array([[0.0, 1.0, 0.5], [0.3, 0.7, 1.0]])), 0.0)
    t = cli.invoke(app, ["table", "box-2d", "--config", str(config), "--results", str(results)])
    assert t.exit_code == 0 and "rfls" in t.output
    v = cli.invoke(app, ["verify", "--weights", "--all", "--config", str(config), "--results", str(results)])
    assert v.exit_code == 0, v.output


@pytest.mark.parametrize("field, text, needle", [
    ("u", "__import__('os').system('touch pwned')", "call of 'Attribute' not allowed"),
    ("u", "__import__('os')", "call of '__import__' not allowed"),
    ("u", "x1.__class__", "Attribute not allowed"),
    ("u", "(lambda: 0)()", "not allowed"),
    ("u", "x1 ** 100000", "exponent 100000 beyond"),
    ("u", "open('x')", "call of 'open' not allowed"),
    ("u", "x1 * (1 - x1) * x2 * (1 - x2) * y", "unknown name 'y'"),
    ("u", "x1 * (1 - x1) * x2 * (1 - x2) * x3", "unknown name 'x3'"),       # d = 2: no x3
    ("u", "x1 * (1 - x1) * x2 * (1 - x2) * t", "unknown name 't'"),          # elliptic: no time
    ("u", "x1 * x2 + 1", "not 0 at the boundary"),
    ("c", "x1 - 0.5", "c(x) must be positive"),
    ("u", "x1 * (", "cannot parse"),
])
def test_bad_formulas_are_one_line_exit_2_and_nothing_written(tmp_path, field, text, needle):
    good = {"c": "1 + x1 * x2", "u": "x1 * (1 - x1) * x2 * (1 - x2) * exp(x1 + x2)"}
    yaml_text = BOX.replace(f'{field}: "{good[field]}"', f"{field}: {text!r}".replace("'", '"', 2)
                            if "'" not in text else f"{field}: \"{text}\"")
    config, results = write_tiny(tmp_path, yaml_text), tmp_path / "results"
    r = cli.invoke(app, ["run", "box-2d", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 2, r.output
    assert needle in r.output and f"problems.box-2d.{field}" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not results.exists() and not (tmp_path / "pwned").exists()


def test_a_right_hand_side_alone_runs_without_an_l2_error(tmp_path):
    text = BOX.replace('    u: "x1 * (1 - x1) * x2 * (1 - x2) * exp(x1 + x2)"\n', '    f: "-2 * pi**2 * sin(pi * x1)"\n')
    config, results = write_tiny(tmp_path, text), tmp_path / "results"
    base = ["--config", str(config), "--results", str(results)]
    r = cli.invoke(app, ["run", "box-2d", "--solver", "pinn,lysep,rfls", *base])
    assert r.exit_code == 0 and "diverged 0" in r.output, r.output
    rec = records.read_record(results / "box-2d" / "rfls" / "L3-M40" / "seed-0.json")
    assert rec.status == "ok" and rec.final.l2 is None and rec.final.J < 1e-3
    for cmd in (["table", "box-2d"], ["compare", "box-2d"], ["verify", "--weights", "--all"],
                ["verify", "box-2d", "--cells", "rfls:3x40"]):
        out = cli.invoke(app, [*cmd, *base])
        assert out.exit_code == 0, (cmd, out.output)
    both = BOX.replace('    u: "', '    f: "1"\n    u: "')
    both_config = str(write_tiny(tmp_path, both))
    r = cli.invoke(app, ["run", "box-2d", "--config", both_config, "--results", str(tmp_path / "other")])
    assert r.exit_code == 2 and "not both" in r.output and not (tmp_path / "other").exists()
    listed = cli.invoke(app, ["list", "--config", both_config])  # list shows why, and lists the others
    assert listed.exit_code == 0 and "box-2d  (refused:" in listed.output and "not both" in listed.output


HEAT = """\
problems:
  heat-2d:
    pde: hyperbolic
    d: 2
    c: "2 + cos(x1 + x2)"
    u: "t**2 * (1 - x1**2 - x2**2) * cos(x1 - x2)"
experiments:
  heat-2d:
    problem: heat-2d
    sizes: [[3, 6], [4, 6]]
    n_train: 80
    n_test: 30
    iterations: 3
    seeds: [0]
    solvers:
      pinn: {lr: 1.0e-4}
      lysep: {step_rule: backtracking, tau: 1.0e-8, weights: frozen, w3_b3: separate}
      rfls: {}
      rfm: {sigma: 1.0, sizes: [[2, 30]]}
      pinn-adam: {lr: 1.0e-3}
      pinn-lbfgs: {}
      pinn-lm: {}
"""


def test_every_solver_and_report_runs_on_a_time_dependent_problem_as_data(tmp_path):
    config, results = write_tiny(tmp_path, HEAT), tmp_path / "results"
    base = ["--config", str(config), "--results", str(results)]
    r = cli.invoke(app, ["run", "heat-2d", "--solver", "all", *base])
    assert r.exit_code == 0, r.output
    assert "(0 run(s)" not in r.output and "failed, no record" not in r.output
    for cmd in (["table", "heat-2d"], ["compare", "heat-2d"], ["status", "heat-2d"], ["plot", "heat-2d"],
                ["verify", "--weights", "--all"]):
        out = cli.invoke(app, [*cmd, *base])
        assert out.exit_code == 0, (cmd, out.output)
    assert "LySep" in cli.invoke(app, ["table", "heat-2d", *base]).output
