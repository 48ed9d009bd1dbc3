"""The fast-kernels issue's closing table, from files: per paper (cell, solver) pair, the side-by-side speed
against 42e5322, the regenerated archive's own cost over whole runs, and its verdict against the old one.

    python benchmarks/regen_report.py [--bench benchmarks/results/sweep_vs_42e5322_nobackoff.json]
        [--results results/regen] [--config results/regen/experiments.yaml]
        [--finals results/paper-finals-2026-11.csv] [--out FILE]

Columns: CPU seconds per iteration of ours and of 42e5322 at the same iterations (bench_sweep.py --peer:
PINN iterations 5 -> 45, LySep sweeps 20 -> 40), their ratio, ours against the GEMM floor measured in the
same child; then the regenerated archive's CPU seconds per iteration over whole runs (each record's
``diagnostics.cpu_seconds`` over the iterations it did, mean over its seeds) and its runs; then the cell
against the old archive's finals (lysep verify --against: agrees or DIFFERS, the geometric-mean ratio of
final J, new over old, and any seed whose J moved more than 10x).  Then the totals: the full sweep
estimated from the benchmark, and what the regenerated runs took, per experiment, with their machines.
Nothing is rerun: seconds.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from lysep_cli.reports import verify as verifier
from lysep_cli.reports.cellstats import compare_archives
from lysep_cli.reports.selection import load_selection
from lysep_cli.specs import load_specs

PAPER = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")
NAMES = {"pinn": "PINN", "lysep": "LySep"}


def _quiet(_msg: str) -> None:
    pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="benchmarks/results/sweep_vs_42e5322_nobackoff.json")
    ap.add_argument("--results", default="results/regen")
    ap.add_argument("--config", default="results/regen/experiments.yaml")
    ap.add_argument("--finals", default="results/paper-finals-2026-11.csv")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    specs = load_specs(args.config)
    chosen = [specs[e] for e in PAPER]
    bench = json.loads(Path(args.bench).read_text())
    rows = {(r["experiment"], r["solver"], r["L"], r["M"]): r for r in bench["rows"]}

    records = load_selection(Path(args.results), chosen, None, _quiet).records
    cost: dict[tuple, list[float]] = defaultdict(list)
    machines: Counter = Counter()
    hours: Counter = Counter()
    for r in records:
        cpu = r.diagnostics.get("cpu_seconds")
        if r.status != "ok" or r.diagnostics.get("copied_from") or not isinstance(cpu, (int, float)):
            continue
        cost[r.experiment, r.solver, r.L, r.M].append(cpu / max(1, r.iterations_done or r.iterations))
        hours[r.experiment, r.solver] += cpu / 3600
        machines[r.versions.get("machine", "unrecorded")] += 1
    old = verifier.other_archive(Path(args.finals), chosen, None, {"pinn", "lysep"}, _quiet)
    compared, _, _ = compare_archives(old, [r for r in records if r.solver in NAMES], common_seeds=True)  # new / old
    verdicts = {c.cell: c for c in compared}

    lines = [f"# Fast kernels: before/after and the regenerated archive ({args.bench}; {args.results} "
             f"against {args.finals})", "",
             "| cell | solver | ours s/it | 42e5322 s/it | speed-up | ours / floor | archive s/it, whole runs (runs) "
             "| against the old archive |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for spec in chosen:
        for solver in NAMES:
            for L, M in spec.sizes_for(solver):
                key = (spec.name, solver, L, M)
                b = rows.get(key)
                bench_cols = (["–"] * 4 if b is None else
                              [f"{b['ours']['s_per_it']:.4f}", f"{b['peer']['s_per_it']:.4f}",
                               f"{b['peer']['s_per_it'] / b['ours']['s_per_it']:.2f}×",
                               f"{b['ours']['s_per_it'] / b['floor_s_per_it']:.2f}"])
                runs = cost.get(key, [])
                arch = f"{sum(runs) / len(runs):.4f} ({len(runs)})" if runs else "– (0)"
                c = verdicts.get(key)
                if c is None:
                    verdict = "not yet"
                else:
                    verdict = f"{c.verdict}, J ×{c.tests[0].ratio:.3g} (n {c.n_b})"
                    if c.moved:
                        verdict += "; moved >10×: " + ", ".join(f"seed {s}" for s, *_ in c.moved)
                lines.append(f"| {spec.name} ({L},{M}) | {NAMES[solver]} | " + " | ".join(bench_cols)
                             + f" | {arch} | {verdict} |")
    ch, by = bench["cpu_hours"], bench["cpu_hours_by_solver"]
    lines += ["", f"Full sweep from the benchmark (16 cells × 10 seeds × 2000 iterations): ours {ch['ours']:.2f}, "
              f"42e5322 {ch['peer']:.2f} CPU-hours ({ch['ours'] / ch['peer']:.2f}×); PINN {by['ours/pinn']:.2f} vs "
              f"{by['peer/pinn']:.2f}, LySep {by['ours/lysep']:.2f} vs {by['peer/lysep']:.2f}.", "",
              "The regenerated paper pairs' recorded CPU-hours: "
              + "; ".join(f"{e} {NAMES[s]} {h:.2f}" for (e, s), h in sorted(hours.items()) if s in NAMES)
              + f" (total {sum(h for (e, s), h in hours.items() if s in NAMES):.2f}); runs by machine: "
              + "; ".join(f"{m}: {n}" for m, n in sorted(machines.items())) + "."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
