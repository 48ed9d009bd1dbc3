"""Matlab's backslash (``lstsq: basic``) against scipy's minimum-norm solve (``lstsq: min-norm``, the
default) for rfls and LySep: issue 25, item 2.

What it measures.  For each of the four paper experiments (elliptic-2d, elliptic-10d, parabolic-5d,
hyperbolic-5d; specs, data and iterations from experiments.yaml) and seeds 0-9:

  * rfls at every paper size (one least-squares solve for the output layer on the seeded hidden layers);
  * LySep at the smallest paper size ((3,30) in 2-D, (3,20) otherwise), 2000 sweeps;

each run once with ``lstsq: basic`` (QR with column pivoting and Matlab's rank rule, a basic solution:
lysep_cli/numerics/lstsq.py) and once with ``lstsq: min-norm``.  A run is one call of
``lysep_cli.execution.runner.execute`` (what ``lysep run`` does, one BLAS thread, no file written), so J
(the PINN loss of the trained network on the training points) and l2 (relative test error) are computed
exactly as in a record.  The min-norm figures are read from the archived record
results/paper/<experiment>/<solver>/L<L>-M<M>/seed-<s>.json when it exists and matches the spec
(settings, iterations, data set: lysep_cli.store.schema.differences), else computed.

Outputs (studies/results/ by default, ``--out PREFIX`` elsewhere):
  lstsq_basic.csv  one row per run (appended as it goes; rows already there are skipped, so an
                   interrupted run resumes), columns FIELDS;
  lstsq_basic.md   per experiment, solver and size: mean +- sample std (ddof = 1) over the seeds of l2 and
                   J for basic and min-norm, the ratio of the means basic / min-norm, the seeds where basic
                   has the smaller / larger l2 (by more than REL_SAME), the largest relative l2 gap over the
                   seeds, and the rank (basic: Matlab's rank of the least-squares matrix,
                   LySep: of the stacked W_3 system, its smallest over the sweeps; min-norm rfls: the
                   effective rank after the SVD cutoff).

Run (repository root, one process; about 40-60 minutes of one core, LySep dominates):

    .venv/bin/python studies/lstsq_basic.py                               # everything
    .venv/bin/python studies/lstsq_basic.py --solvers rfls                # rfls only (a minute)
    .venv/bin/python studies/lstsq_basic.py --solvers lysep --iterations 20 --out /tmp/lstsq_check
    .venv/bin/python studies/lstsq_basic.py --report-only                 # the .md from the CSV

Backs: docs/lysep.md and docs/baselines.md 'lstsq: basic': Matlab's backslash against min-norm.
Regenerate: make studies STUDIES=lstsq_basic (its summary alone: plain `make studies`) ->
    studies/results/lstsq_basic.csv, lstsq_basic.md (studies/run.py holds the commands).
Cost: 40-60 CPU-minutes; resumes after an interruption.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import argparse
import csv
import dataclasses
import math
import statistics
import time
from collections import defaultdict
from pathlib import Path

from lysep_cli.execution.runner import RunKey, execute  # noqa: E402
from lysep_cli.numerics.dataset import experiment_data  # noqa: E402
from lysep_cli.specs import default_config, load_specs  # noqa: E402
from lysep_cli.store.records import read_record  # noqa: E402
from lysep_cli.store.schema import RecordError, differences, expected  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "results" / "paper"
DEFAULT_OUT = ROOT / "studies" / "results" / "lstsq_basic"
EXPERIMENTS = ["elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d"]
SOLVERS = ["rfls", "lysep"]
SEEDS = list(range(10))
MODES = ["basic", "min-norm"]
FIELDS = ["experiment", "solver", "L", "M", "seed", "iterations", "lstsq", "source", "status", "J", "l2", "J_S",
          "rank", "rank_min", "columns", "cond", "seconds"]
REL_SAME = 1e-6  # l2 of basic and min-norm closer than this (relative) count as the same
KEY = ("experiment", "solver", "L", "M", "seed", "iterations", "lstsq")


def sizes(spec, solver: str) -> list[tuple[int, int]]:
    """rfls: every paper size; LySep: the smallest."""
    all_sizes = [tuple(s) for s in spec.sizes]
    return all_sizes if solver == "rfls" else all_sizes[:1]


def with_lstsq(spec, solver: str, mode: str):
    """``spec`` with ``lstsq: mode`` in ``solver``'s settings."""
    return dataclasses.replace(spec, solvers={**spec.solvers, solver: spec.solvers[solver].replace(lstsq=mode)})


def archived(spec, solver: str, L: int, M: int, seed: int, iterations: int, data_sha: str):
    """The archived record of this min-norm run when it exists and matches the spec, else None."""
    path = ARCHIVE / spec.name / solver / f"L{L}-M{M}" / f"seed-{seed}.json"
    if not path.exists():
        return None
    try:
        rec = read_record(path)
    except RecordError as exc:
        print(f"  archive: {path}: {exc}; recomputing", flush=True)
        return None
    why = differences(rec, expected(spec, solver, iterations, data_sha))
    if why:
        print(f"  archive: {path} differs ({', '.join(why)}); recomputing", flush=True)
        return None
    return rec


def row_of(rec, source: str, lstsq: str) -> dict:
    d = rec.diagnostics
    if rec.solver == "rfls":
        rank, rank_min, columns, cond = d.get("rank"), d.get("rank"), d.get("n_columns"), d.get("cond")
    else:
        rank, rank_min = d.get("W3_system_rank_last"), d.get("W3_system_rank_min")
        columns, cond = d.get("W3_system_columns", rec.M), d.get("W3_system_cond_first")
    return {"experiment": rec.experiment, "solver": rec.solver, "L": rec.L, "M": rec.M, "seed": rec.seed,
            "iterations": rec.iterations, "lstsq": lstsq, "source": source, "status": rec.status,
            "J": rec.final.J, "l2": rec.final.l2, "J_S": rec.final.J_S,
            "rank": "" if rank is None else rank, "rank_min": "" if rank_min is None else rank_min,
            "columns": "" if columns is None else columns, "cond": "" if cond is None else cond,
            "seconds": rec.seconds}


def read_csv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def key_of(row: dict) -> tuple:
    return tuple(str(row[k]) for k in KEY)


def run_all(args, csv_path: Path) -> None:
    specs = load_specs(default_config())
    done = {key_of(r) for r in read_csv(csv_path)}
    new_file = not csv_path.exists()
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if new_file:
            writer.writeheader()
            f.flush()
        for solver in args.solvers:  # rfls first: fast, and a check of the whole pipeline
            for name in args.experiments:
                spec = specs[name]
                iterations = (args.iterations if solver == "lysep" else None) or spec.iterations
                data_sha = experiment_data(spec).sha256
                for L, M in sizes(spec, solver):
                    for seed in args.seeds:
                        for mode in MODES:
                            key = tuple(str(x) for x in (name, solver, L, M, seed, iterations, mode))
                            if key in done:
                                continue
                            rec = archived(spec, solver, L, M, seed, iterations, data_sha) \
                                if mode == "min-norm" else None
                            source = "archive"
                            if rec is None:
                                t0 = time.perf_counter()
                                rec, _ = execute(with_lstsq(spec, solver, mode), RunKey(solver, L, M, seed), iterations)
                                source = "computed"
                                print(f"  {time.perf_counter() - t0:7.1f} s", end="", flush=True)
                            row = row_of(rec, source, mode)
                            writer.writerow(row)
                            f.flush()
                            done.add(key)
                            print(f"  {name} {solver} ({L},{M}) seed {seed} {mode:8s} [{source}]: "
                                  f"J {row['J']:.3e}  l2 {row['l2']:.3e}  rank {row['rank']}", flush=True)


# ------------------------------------------------------------------------------------------------
# The summary.


def num(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v


def mean_std(xs: list[float]) -> str:
    xs = [x for x in xs if math.isfinite(x)]
    if not xs:
        return "–"
    sd = statistics.stdev(xs) if len(xs) > 1 else float("nan")
    return f"{statistics.fmean(xs):.3e} ± {sd:.2e}"


def ratio(a: list[float], b: list[float]) -> str:
    a, b = [x for x in a if math.isfinite(x)], [x for x in b if math.isfinite(x)]
    if not a or not b or statistics.fmean(b) == 0:
        return "–"
    r = statistics.fmean(a) / statistics.fmean(b)
    return f"{r:.3f}" if 0.01 <= r < 100 else f"{r:.3g}"


def rank_range(rows: list[dict], field: str) -> str:
    vals = sorted({int(num(r[field])) for r in rows if math.isfinite(num(r[field]))})
    if not vals:
        return "–"
    return str(vals[0]) if len(vals) == 1 else f"{vals[0]}–{vals[-1]}"


def report(csv_path: Path, md_path: Path) -> None:
    rows = read_csv(csv_path)
    cells: dict[tuple, dict[str, dict[int, dict]]] = defaultdict(lambda: {m: {} for m in MODES})
    for r in rows:
        cells[(r["experiment"], r["solver"], int(r["L"]), int(r["M"]), int(r["iterations"]))][r["lstsq"]][
            int(r["seed"])] = r
    order = {n: i for i, n in enumerate(EXPERIMENTS)}
    lines = [
        "# `lstsq: basic` (Matlab's backslash) against `lstsq: min-norm` (scipy, the default)",
        "",
        "Generated by `studies/lstsq_basic.py` from `studies/results/lstsq_basic.csv` (one row per run).",
        "basic: QR with column pivoting (LAPACK geqp3) and Matlab's rank rule tol = max(size(A))·eps·|R(1,1)|,",
        "a basic solution with at most rank(A) nonzero entries (`lysep_cli/numerics/lstsq.py`). min-norm: rfls",
        "SVD (gelsd, rcond auto), LySep gelsy (machine-precision cutoff); figures from the archived records in",
        "`results/paper/` where they match the spec (column `source` of the CSV), else computed.",
        "Each cell: mean ± sample std (ddof = 1) over the seeds; ratio = mean basic / mean min-norm;",
        f"l2 better / worse = seeds where basic's l2 is smaller / larger by more than {REL_SAME:g} (relative). rank: basic, Matlab's rank of the least-squares",
        "matrix (rfls: A, M + 1 columns; LySep: the stacked W_3 system [Bᵀ; √λ I], M columns, its smallest",
        "over the sweeps); min-norm, rfls: the effective rank after the SVD cutoff (LySep: not recorded).",
        "largest l2 gap: the largest |l2 basic − l2 min-norm| / l2 min-norm over the seeds.",
        "",
    ]
    for solver in SOLVERS:
        keys = sorted((k for k in cells if k[1] == solver), key=lambda k: (order.get(k[0], 99), k[2], k[3], k[4]))
        if not keys:
            continue
        lines += [f"## {solver}", "",
                  "| experiment | (L,M) | iterations | seeds | l2 basic | l2 min-norm | l2 ratio | l2 better / worse | largest l2 gap | "
                  "J basic | J min-norm | J ratio | rank basic | rank min-norm | columns |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for k in keys:
            b, m = cells[k]["basic"], cells[k]["min-norm"]
            seeds = sorted(set(b) & set(m))
            if not seeds:
                continue
            bl2 = [num(b[s]["l2"]) for s in seeds]
            ml2 = [num(m[s]["l2"]) for s in seeds]
            bJ = [num(b[s]["J"]) for s in seeds]
            mJ = [num(m[s]["J"]) for s in seeds]
            gap = max((abs(x - y) / y for x, y in zip(bl2, ml2) if math.isfinite(x) and math.isfinite(y) and y > 0),
                      default=float("nan"))
            better = sum(1 for x, y in zip(bl2, ml2) if x < y * (1 - REL_SAME))
            worse = sum(1 for x, y in zip(bl2, ml2) if x > y * (1 + REL_SAME))
            brows, mrows = [b[s] for s in seeds], [m[s] for s in seeds]
            rank_b = rank_range(brows, "rank_min")
            rank_m = rank_range(mrows, "rank") if solver == "rfls" else "–"
            cols = rank_range(brows, "columns")
            lines.append(f"| {k[0]} | ({k[2]},{k[3]}) | {k[4]} | {len(seeds)} | {mean_std(bl2)} | {mean_std(ml2)} | "
                         f"{ratio(bl2, ml2)} | {better} / {worse} | {gap:.1e} | {mean_std(bJ)} | {mean_std(mJ)} | "
                         f"{ratio(bJ, mJ)} | {rank_b} | {rank_m} | {cols} |")
        lines.append("")
    statuses = sorted({(r["solver"], r["lstsq"], r["status"]) for r in rows if r["status"] != "ok"})
    if statuses:
        lines += ["Runs not ok: " + ", ".join(f"{s} {m}: {st}" for s, m, st in statuses), ""]
    md_path.write_text("\n".join(lines))
    print(f"wrote {md_path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", default=",".join(EXPERIMENTS))
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--seeds", default="0-9", help="a-b or a,b,c")
    ap.add_argument("--iterations", type=int, default=None, help="LySep sweeps (default: the spec's, 2000)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output prefix: PREFIX.csv, PREFIX.md")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    args.experiments = args.experiments.split(",")
    args.solvers = [s for s in SOLVERS if s in args.solvers.split(",")]
    a, _, b = args.seeds.partition("-")
    args.seeds = list(range(int(a), int(b) + 1)) if b else [int(x) for x in args.seeds.split(",")]
    csv_path, md_path = Path(args.out + ".csv"), Path(args.out + ".md")
    if not args.report_only:
        run_all(args, csv_path)
    report(csv_path, md_path)


if __name__ == "__main__":
    main()
