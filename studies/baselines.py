"""Benchmark the baseline solvers (rfls, pinn-adam, pinn-lbfgs, pinn-lm) on an experiment of
experiments.yaml, building the data as the runner does:

    problem = make_problem(pde, d, solution); Z_train, Z_test = train_test_points(n_train, n_test, d, time)
    data = TrainingData.build(problem, Z_train); params0 = init_params(n_in, L, M, seed)
    l2 = ||psi - u|| / ||u|| on Z_test, psi = boundary_factor * value.

Each run appends one JSON line (experiment, solver, L, M, seed, iterations, status, J, l2, seconds,
extra) to --out; --table prints mean +- std per (experiment, size, solver) from that file.

    python studies/baselines.py --experiment elliptic-2d --solver rfls --sizes 3,50 --seeds 0-9
    python studies/baselines.py --table --out studies/results/baselines.jsonl

Backs: docs/baselines.md 'Measured results': the baselines before the archive (10-D pinn-lm among them).
Regenerate: make studies STUDIES=baselines -> studies/results/baselines.jsonl, baselines10.jsonl,
    baselines_table.md (studies/run.py holds the commands).
Cost: hours for every row (docs/baselines.md 'Reproducing' lists the commands).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import json
import time
from pathlib import Path

import numpy as np
import yaml

from lysep_cli.numerics.network import init_params, value
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import get_solver
from lysep_cli.numerics.dataset import TrainingData

ROOT = Path(__file__).resolve().parents[1]


def _ints(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def run(experiment: str, solver: str, sizes: list[tuple[int, int]] | None, seeds: list[int],
        iterations: int | None, out: Path) -> None:
    spec = yaml.safe_load((ROOT / "experiments.yaml").read_text())["experiments"][experiment]
    problem = make_problem(spec["pde"], spec["d"], spec.get("solution"))
    Z_train, Z_test = train_test_points(spec["n_train"], spec["n_test"], spec["d"], problem.time_dependent)
    data = TrainingData.build(problem, Z_train)
    u = problem.u(Z_test)
    factor = problem.boundary_factor(Z_test)
    settings = spec["solvers"][solver]
    iters = spec["iterations"] if iterations is None else iterations
    solve = get_solver(solver)
    for L, M in sizes or [tuple(s) for s in spec["sizes"]]:
        for seed in seeds:
            params0 = init_params(problem.n_in, L, M, seed)
            t0 = time.perf_counter()
            res = solve(problem, data, params0, settings, iters)
            seconds = time.perf_counter() - t0
            psi = factor * value(res.params, Z_test)
            l2 = float(np.linalg.norm(psi - u) / np.linalg.norm(u))
            row = {"experiment": experiment, "solver": solver, "L": L, "M": M, "seed": seed,
                   "iterations": iters, "status": res.status, "J": res.history["J"][-1], "l2": l2,
                   "seconds": seconds, "n_history": len(res.history["J"]), "extra": res.diagnostics}
            print(f"{experiment} {solver} ({L},{M}) seed {seed}: J={row['J']:.3e} l2={l2:.3e} "
                  f"{seconds:.1f}s {res.status}", flush=True)
            with out.open("a") as f:
                f.write(json.dumps(row, default=float) + "\n")


def _std(x: np.ndarray) -> str:
    """Sample std (N - 1), as the paper's Matlab / PyTorch std; "–" for one value."""
    return f"{x.std(ddof=1):.2e}" if x.size > 1 else "–"


def table(out: Path) -> str:
    """Markdown table: mean +- sample std (ddof = 1) of J and l2, mean seconds, per (experiment, L, M,
    solver, iterations)."""
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["experiment"], r["L"], r["M"], r["solver"], r["iterations"]), []).append(r)
    lines = ["| experiment | (L,M) | solver | iterations | seeds | J | l2 | s/run |",
             "|---|---|---|---|---|---|---|---|"]
    order = {"rfls": 0, "pinn-adam": 1, "pinn-lbfgs": 2, "pinn-lm": 3}
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], order.get(k[3], 9), k[4])):
        g = groups[key]
        J = np.array([r["J"] for r in g])
        l2 = np.array([r["l2"] for r in g])
        it = g[0]["extra"].get("iterations_run", key[4]) if key[3] == "pinn-lm" else key[4]
        it = 1 if key[3] == "rfls" else it
        bad = sum(r["status"] != "ok" for r in g)
        lines.append(f"| {key[0]} | ({key[1]},{key[2]}) | {key[3]} | {it} | {len(g)}{f' ({bad} diverged)' if bad else ''} "
                     f"| {J.mean():.2e} ± {_std(J)} | {l2.mean():.2e} ± {_std(l2)} "
                     f"| {np.mean([r['seconds'] for r in g]):.1f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiment", default="elliptic-2d")
    p.add_argument("--solver", action="append", help="repeatable; default: all four baselines")
    p.add_argument("--sizes", help="L,M[;L,M...] (default: the experiment's sizes)")
    p.add_argument("--seeds", default="0-2", help="e.g. 0-9 or 0,3,5")
    p.add_argument("--iterations", type=int, help="override the experiment's iteration budget")
    p.add_argument("--out", type=Path, default=ROOT / "studies" / "results" / "baselines.jsonl")
    p.add_argument("--table", action="store_true", help="only print the table of --out")
    a = p.parse_args()
    if a.table:
        print(table(a.out))
        return
    sizes = [tuple(int(x) for x in s.split(",")) for s in a.sizes.split(";")] if a.sizes else None
    for solver in a.solver or ["rfls", "pinn-adam", "pinn-lbfgs", "pinn-lm"]:
        run(a.experiment, solver, sizes, _ints(a.seeds), a.iterations, a.out)


if __name__ == "__main__":
    main()
