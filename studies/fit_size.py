"""The size of the archived fits: ||W_L|| and how far J moves when W_L moves by one ulp, per cell.

Usage: .venv/bin/python studies/fit_size.py [--results results/paper] [--draws 3] [--seeds 0-9]
           [--experiments elliptic-2d,...] [--out studies/results/fit_size.md]

For every archived run of PINN, LySep, rfls (the paper's sizes) and rfm (its default size) of the four
paper experiments: the output layer W_L (1, M) of the saved network, its largest entry max|W_L| and its
2-norm ||W_L||_2, and the one-ulp sensitivity: W_L -> W_L + s * ulp(W_L), s in {-1, +1} drawn at random
(``--draws`` draws, generator seeded by the run's seed), the hidden layers and b_L unchanged; the relative
change |J' - J| / J of J = (1/N) ||W_L B + b_L K - Y||^2 (`eq:J-elliptic` & co., B the fit matrix of
`eq:GD_W3` on the training set) and of the test l2, the largest over the draws; and J and l2 with W_L rounded to float32 (the rest in
double) over J and l2.  J is recomputed from the
weights as the runner computes it (``network.pinn_pass``); "J = record" counts the runs where that gives
the record's final J bit for bit.  Per cell: median and largest over the seeds.  Nothing is retrained:
about a minute on one core for the whole archive.

Backs: README headline; docs/results.md 'The size of the fits': 2-D fits are fragile (one ulp of W_L).
Regenerate: make studies STUDIES=fit_size; cheap, part of plain `make studies` ->
    studies/results/fit_size.md (studies/run.py holds the commands).
Cost: ~35 CPU s.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.dataset import problem_of
from lysep_cli.numerics.network import Params
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.specs import default_config, load_specs, parse_seeds
from lysep_cli.store import records
from common import finished_runs, report_parser, write_report

EXPERIMENTS = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")
SOLVERS = ("pinn", "lysep", "rfls", "rfm")


@dataclass
class RunSize:
    """One run: max|W_L|, ||W_L||_2, J from the weights (== the record's?), largest relative change of J
    and of l2 over the one-ulp draws, J and l2 with W_L rounded to float32 over J and l2."""

    w_max: float
    w_2: float
    J: float
    same_as_record: bool
    dJ: float
    dl2: float
    J32: float
    l232: float


def one_ulp_draws(WL: np.ndarray, draws: int, seed: int) -> list[np.ndarray]:
    """W_L (1, M) moved by one ulp per entry, random signs; ``draws`` arrays of W_L's shape."""
    rng = np.random.default_rng(seed)
    return [WL + rng.choice((-1.0, 1.0), WL.shape) * np.spacing(np.abs(WL)) for _ in range(draws)]


def loss(WL: np.ndarray, bL: np.ndarray, B: np.ndarray, K: np.ndarray, Y: np.ndarray) -> float:
    """J = (1/N) ||R||^2, R = W_L B + b_L K - Y, in the order of ``network.pinn_pass``."""
    R = WL[0] @ B
    R += bL[0] * K
    R -= Y
    return float(R @ R / R.size)


def run_size(params: Params, problem, Z_train: np.ndarray, Z_test: np.ndarray, record_J: float,
             draws: int, seed: int) -> RunSize:
    """The figures of one saved network (see the module docstring)."""
    coef, Y = problem.coefficients(Z_train), problem.rhs(Z_train)
    plan = ChannelPlan.build(coef)
    fit = network.pinn_pass(params, Z_train, plan, Y).fit
    WL, bL = params[-1]
    J = loss(WL, bL, fit.B, plan.K, Y)
    l2 = relative_l2(problem, params, Z_test)
    dJ = dl2 = 0.0
    for moved in one_ulp_draws(WL, draws, seed):
        dJ = max(dJ, abs(loss(moved, bL, fit.B, plan.K, Y) - J) / J)
        dl2 = max(dl2, abs(relative_l2(problem, params[:-1] + [(moved, bL)], Z_test) - l2) / l2)
    single = WL.astype(np.float32).astype(np.float64)
    J32 = loss(single, bL, fit.B, plan.K, Y) / J
    l232 = relative_l2(problem, params[:-1] + [(single, bL)], Z_test) / l2
    return RunSize(float(np.abs(WL).max()), float(np.linalg.norm(WL)), J, J == record_J, dJ, dl2, J32, l232)


def cell_sizes(results: Path, spec, solver: str, L: int, M: int, draws: int, seeds: list[int]) -> list[RunSize]:
    """Every archived, finished run of the cell among ``seeds``."""
    problem = problem_of(spec)
    Z_train, Z_test = records.load_data(results, spec.name)
    out = []
    for seed, rec, npz_path in finished_runs(results, spec, solver, L, M, seeds):
        with threadpool_limits(limits=1), np.errstate(all="ignore"):
            out.append(run_size(records.load_params(npz_path), problem, Z_train, Z_test, rec.final.J, draws, seed))
    return out


def g(x: float) -> str:
    return f"{x:.2g}"


def row(exp: str, solver: str, L: int, M: int, sizes: list[RunSize]) -> str:
    """One markdown row: median [largest] over the seeds."""
    def med_max(values: list[float], fmt=g) -> str:
        return f"{fmt(float(np.median(values)))} [{fmt(max(values))}]"
    ratio = "{:.3g}".format
    return (f"| {exp} | {solver} | ({L},{M}) | {len(sizes)} | {med_max([s.w_max for s in sizes])} | "
            f"{med_max([s.w_2 for s in sizes])} | {med_max([s.dJ for s in sizes])} | "
            f"{med_max([s.dl2 for s in sizes])} | {med_max([s.J32 for s in sizes], ratio)} | {med_max([s.l232 for s in sizes], ratio)} | {sum(s.same_as_record for s in sizes)}/{len(sizes)} |")


def report(results: Path, experiments: tuple[str, ...], draws: int, seeds_text: str | None) -> str:
    specs = load_specs(default_config())
    out = ["# The size of the archived fits (`studies/fit_size.py`)", "",
           f"From `{results}`, nothing rerun. Per cell, median [largest] over the seeds of: max|W_L| and "
           "||W_L||_2 of the saved output layer; ΔJ/J and Δl2/l2, the relative change of J and of the test "
           f"l2 when every entry of W_L moves by one ulp with random signs (the largest of {draws} draws per "
           "run; hidden layers and b_L unchanged); J and l2 with W_L in float32: over J and l2, W_L rounded to single "
           "precision, the rest in double; J = record: runs whose J recomputed from the weights is the "
           "record's bit for bit. rfm: its default size, one wide hidden layer.", "",
           "| experiment | solver | (L,M) | runs | max\\|W_L\\| | ‖W_L‖₂ | ΔJ/J, one ulp | Δl2/l2, one ulp | J, W_L in float32, / J | l2, W_L in float32, / l2 | J = record |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for exp in experiments:
        spec = specs[exp]
        seeds = parse_seeds(seeds_text, spec) if seeds_text else list(spec.seeds)
        for solver in SOLVERS:
            for L, M in (spec.sizes_for("rfm") if solver == "rfm" else spec.sizes):
                sizes = cell_sizes(results, spec, solver, L, M, draws, seeds)
                if sizes:
                    out.append(row(exp, solver, L, M, sizes))
    return "\n".join(out) + "\n"


def main() -> None:
    p = report_parser(__doc__, "studies/results/fit_size.md")
    p.add_argument("--experiments", default=",".join(EXPERIMENTS))
    p.add_argument("--seeds", default=None, help="e.g. 0-2 (default: the spec's)")
    p.add_argument("--draws", type=int, default=3)
    a = p.parse_args()
    write_report(report(a.results, tuple(a.experiments.split(",")), a.draws, a.seeds), a.out)


if __name__ == "__main__":
    main()
