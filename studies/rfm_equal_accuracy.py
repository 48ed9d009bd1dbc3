"""rfm against LySep and PINN at equal accuracy (docs/results.md): per experiment and per archived
(solver, size) of LySep and PINN (results/paper, 2000 iterations, 10 seeds), the cheapest rfm setting of
studies/results/rfm_study.csv (mean over its 3 seeds) whose mean l2 test error is at most that
archived cell's mean l2, with its seconds per run beside the archived cell's.

Seconds of one run, one BLAS thread: the archive's are each record's CPU seconds (its wall seconds where
it holds none; RunRecord.compute_seconds), recorded when its runs were made (on this project's 2-core
machines, with other runs beside them); the study's are wall seconds on this machine.

    python studies/rfm_equal_accuracy.py > studies/results/rfm_equal_accuracy.md

Backs: docs/results.md 'LySep against the one-shot least-squares methods': rfm at equal accuracy.
Regenerate: make studies STUDIES=rfm_equal_accuracy; cheap, part of plain `make studies` ->
    studies/results/rfm_equal_accuracy.md (studies/run.py holds the commands).
Cost: ~1 CPU s.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import csv
import sys
from collections import defaultdict

import numpy as np

from lysep_cli.store import records

EXPERIMENTS = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")


def rfm_settings(path: str = "studies/results/rfm_study.csv") -> dict[str, list[tuple[float, int, float, float]]]:
    """experiment -> [(sigma, M, mean l2, mean seconds)] over the main grid."""
    acc: dict[tuple[str, float, int], list[tuple[float, float]]] = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["set"] != "main" or row["status"] != "ok":
                continue
            acc[(row["experiment"], float(row["sigma"]), int(row["M"]))].append((float(row["l2_test"]),
                                                                                 float(row["seconds"])))
    out: dict[str, list] = defaultdict(list)
    for (exp, sigma, M), vals in acc.items():
        out[exp].append((sigma, M, float(np.mean([v[0] for v in vals])), float(np.mean([v[1] for v in vals]))))
    return out


def main(results: str = "results/paper") -> None:
    grid = rfm_settings()
    print("| experiment | archived cell | its mean ℓ2 | its s / run | cheapest rfm with ℓ2 ≤ it (σ, M) | rfm ℓ2 | "
          "rfm s / run | time ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for exp in EXPERIMENTS:
        recs = [r for r in records.load_records(results, [exp]).records
                if r.solver in ("lysep", "pinn") and r.iterations == 2000 and r.ok]
        cells: dict[tuple[str, int, int], list] = defaultdict(list)
        for r in recs:
            cells[(r.solver, r.L, r.M)].append(r)
        for (solver, L, M), rs in sorted(cells.items()):
            l2 = float(np.mean([r.final.l2 for r in rs]))
            secs = float(np.mean([r.compute_seconds for r in rs]))
            ok = [g for g in grid.get(exp, []) if g[2] <= l2]
            if not ok:
                print(f"| {exp} | {solver} ({L},{M}) | {l2:.2e} | {secs:.3g} | none in the grid | | | |")
                continue
            sigma, m, rl2, rs_ = min(ok, key=lambda g: g[3])
            print(f"| {exp} | {solver} ({L},{M}) | {l2:.2e} | {secs:.3g} | ({sigma:g}, {m}) | {rl2:.2e} | "
                  f"{rs_:.3g} | {secs / rs_:.3g}× |")


if __name__ == "__main__":
    main(*sys.argv[1:])
