"""LySep's backtracking with and without back-off (setting ``backoff_max``), full runs side by side:
trials per sweep, CPU time, and whether the final numbers change.

    .venv/bin/python benchmarks/backoff_study.py [--cells elliptic-2d:30,...] [--seeds 0-2]
                                                 [--backoff 16] [--out benchmarks/results/backoff_study]

For each cell and seed both variants run the spec's 2000 sweeps from the same seeded network (one BLAS
thread; CPU time of this process), one after the other.  Rows go to OUT.csv as they finish (a restart
skips the rows there); OUT.md has, per cell, mean ± sample std of final J and l2 for each variant, the
trials per sweep, the CPU time ratio, and the largest per-seed relative change of J and l2.  Back-off
changes the trajectory (a step that could have grown does so later), so the runs are compared as a
cell's spread, not bit for bit.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import argparse
import csv
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.solvers.lysep.algorithm import solve
from lysep_cli.specs import load_specs

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ["cell", "seed", "backoff_max", "J", "l2", "trials", "sweeps", "cpu_seconds", "violations"]


def run(spec, M: int, seed: int, backoff: int) -> dict:
    data = experiment_data(spec)
    problem, tr = data.problem, data.training
    settings = {**spec.solvers["lysep"].to_dict(), "backoff_max": backoff}
    t = time.process_time()
    res = solve(problem, tr, network.init_params(problem.n_in, 3, M, seed), settings, spec.iterations)
    cpu = time.process_time() - t
    return {"cell": f"{spec.name}:{M}", "seed": seed, "backoff_max": backoff, "J": res.history["J"][-1],
            "l2": relative_l2(problem, res.params, Z_test=data.Z_test), "trials": res.diagnostics["trials"],
            "sweeps": len(res.history["J"]) - 1, "cpu_seconds": round(cpu, 2),
            "violations": res.bound["violations"]}


def report(rows: list[dict], backoff: int) -> str:
    out = ["# LySep backtracking with and without back-off (benchmarks/backoff_study.py)", "",
           f"backoff_max = {backoff} against 0 (the default); mean ± sample std over the seeds; CPU seconds of "
           "one process, one BLAS thread, on a machine shared with other runs.", "",
           "| cell | seeds | J, default | J, back-off | l2, default | l2, back-off | trials/sweep, default | "
           "trials/sweep, back-off | CPU back-off / default | largest per-seed change: J, l2 | bound violations |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def ms(v):
        v = np.asarray(v, float)
        return f"{v.mean():.3e}" + (f" ± {v.std(ddof=1):.1e}" if v.size > 1 else "")

    for cell in dict.fromkeys(r["cell"] for r in rows):
        by = {}
        for r in rows:
            if r["cell"] == cell:
                by.setdefault(int(r["seed"]), {})[int(r["backoff_max"])] = r
        pairs = [(v[0], v[backoff]) for v in by.values() if 0 in v and backoff in v]
        if not pairs:
            continue
        f = lambda k, i: [float(p[i][k]) for p in pairs]  # noqa: E731
        dJ = max(abs(float(b["J"]) / float(a["J"]) - 1) for a, b in pairs)
        dl = max(abs(float(b["l2"]) / float(a["l2"]) - 1) for a, b in pairs)
        tps = lambda i: np.mean([float(p[i]["trials"]) / float(p[i]["sweeps"]) for p in pairs])  # noqa: E731
        cpu = sum(f("cpu_seconds", 1)) / sum(f("cpu_seconds", 0))
        viol = sum(int(p[1]["violations"]) for p in pairs)
        out.append(f"| {cell} | {len(pairs)} | {ms(f('J', 0))} | {ms(f('J', 1))} | {ms(f('l2', 0))} | "
                   f"{ms(f('l2', 1))} | {tps(0):.2f} | {tps(1):.2f} | {cpu:.2f} | {dJ:.1e}, {dl:.1e} | {viol} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="elliptic-2d:30,hyperbolic-5d:20,elliptic-10d:20")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--backoff", type=int, default=16)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "backoff_study"))
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    csv_path, md_path = Path(a.out + ".csv"), Path(a.out + ".md")
    rows = list(csv.DictReader(csv_path.open())) if csv_path.exists() else []
    done = {(r["cell"], int(r["seed"]), int(r["backoff_max"])) for r in rows}
    specs = load_specs(str(ROOT / "experiments.yaml"))
    with threadpool_limits(limits=1):
        for cell in a.cells.split(","):
            name, M = cell.split(":")
            for seed in seeds:
                for backoff in (0, a.backoff):
                    if (cell, seed, backoff) in done:
                        continue
                    row = run(specs[name], int(M), seed, backoff)
                    new = not csv_path.exists()
                    with csv_path.open("a", newline="") as fh:
                        w = csv.DictWriter(fh, fieldnames=FIELDS)
                        if new:
                            w.writeheader()
                        w.writerow(row)
                    rows.append({k: str(v) for k, v in row.items()})
                    print(row, flush=True)
                    md_path.write_text(report(rows, a.backoff))
    md_path.write_text(report(rows, a.backoff))
    print(md_path.read_text())


if __name__ == "__main__":
    main()
