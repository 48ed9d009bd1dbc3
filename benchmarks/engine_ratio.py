"""Per-iteration CPU time of this tree against another (the base commit), cell by cell, side by side.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/engine_ratio.py --base /tmp/base \
        [--solvers pinn,lysep] [--cells elliptic-2d:3:30 ...] [--reps 3] [--seconds 1.5] [--device cpu]

One worker process per tree (each imports its own ``lysep_cli``), both kept warm; for every cell and
repetition the two are asked in turn (base, new, alternating which goes first) for the records' CPU
seconds (``execute``, diagnostics.cpu_seconds) of a run of ``a`` and of ``b`` iterations, and a cell's
per-iteration time is (cpu(b) - cpu(a)) / (b - a): the set-up and the first iteration's compilation drop
out.  The new tree runs on ``--device`` (cpu: the run alone; cpu-stacked: a stack of ``--seeds`` S seeds, 1 by
default, its CPU per seed; ``--base .`` then measures what stacking a cell's seeds saves on this tree).
Output: per cell the median over repetitions of each tree's ms per iteration and of their ratio new/base,
and the ratio over the cells weighted by each cell's share of the archive's CPU-hours for that solver
(results/paper's records, the sixteen paper cells by default).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")

WORKER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import lysep_cli  # noqa: F401  (pins the BLAS kernel first)
from lysep_cli.execution import runner
from lysep_cli.specs import load_specs
specs = load_specs(sys.argv[1] + "/experiments.yaml")
for line in sys.stdin:
    q = json.loads(line)
    keys = [runner.RunKey(q["solver"], q["L"], q["M"], seed) for seed in range(q["seeds"])]
    if q["device"] == "cpu":
        rec, _ = runner.execute(specs[q["exp"]], keys[0], q["iterations"])
    else:  # a stack's record holds its CPU seconds divided by its seeds: the CPU per seed
        (rec, _), *_ = runner.execute_stack(specs[q["exp"]], keys, q["iterations"], q["device"])
    print(json.dumps(rec.diagnostics["cpu_seconds"]), flush=True)
"""


class Worker:
    """A warm process of one tree answering run requests with CPU seconds."""

    def __init__(self, tree: Path):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, str(tree)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=tree)

    def cpu(self, exp: str, solver: str, L: int, M: int, iterations: int, device: str, seeds: int = 1) -> float:
        q = dict(exp=exp, solver=solver, L=L, M=M, iterations=iterations, device=device, seeds=seeds)
        self.proc.stdin.write(json.dumps(q) + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def per_iteration(self, exp: str, solver: str, L: int, M: int, a: int, b: int, device: str,
                      seeds: int = 1) -> float:
        return (self.cpu(exp, solver, L, M, b, device, seeds) - self.cpu(exp, solver, L, M, a, device, seeds)) / (b - a)


def archive_cells(solver: str) -> dict[tuple[str, int, int], tuple[float, float]]:
    """(experiment, L, M) -> (CPU-hours of the archive's records of ``solver`` there, seconds per iteration)."""
    out: dict[tuple[str, int, int], tuple[float, float]] = {}
    for exp in PAPER:
        for path in glob.glob(str(ROOT / f"results/paper/{exp}/{solver}/L*-M*/seed-*.json")):
            rec = json.loads(Path(path).read_text())
            cpu = rec["diagnostics"].get("cpu_seconds") or rec["seconds"]
            key = (exp, rec["L"], rec["M"])
            hours, _ = out.get(key, (0.0, 0.0))
            out[key] = (hours + cpu / 3600, cpu / rec["iterations"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the other tree (a worktree of the base commit)")
    ap.add_argument("--solvers", default="pinn,lysep")
    ap.add_argument("--cells", nargs="*", help="experiment:L:M (default: the archive's paper cells)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.5, help="CPU seconds per measured (b - a) span")
    ap.add_argument("--device", default="cpu", help="the new tree's device: cpu | cpu-stacked (a stack of --seeds)")
    ap.add_argument("--seeds", type=int, default=1, help="cpu-stacked: the stack's seeds S (its CPU per seed is "
                                                          "compared with one run alone)")
    args = ap.parse_args()
    base, new = Worker(args.base.resolve()), Worker(ROOT)
    for solver in args.solvers.split(","):
        cells = archive_cells(solver)
        if args.cells:
            picked = [(e, int(L), int(M)) for e, L, M in (c.split(":") for c in args.cells)]
            cells = {c: cells.get(c, (0.0, 0.05)) for c in picked}
        rows, weighted, hours = [], 0.0, 0.0
        for (exp, L, M), (h, per_it) in sorted(cells.items()):
            span = max(2, round(args.seconds / per_it))
            a, b = 1, 1 + span
            for w in (base, new):  # warm: imports, numba's compilation at this size
                w.per_iteration(exp, solver, L, M, 1, 2, "cpu" if w is base else args.device,
                                1 if w is base else args.seeds)
            tb, tn = [], []
            for rep in range(args.reps):
                order = (base, new) if rep % 2 == 0 else (new, base)
                for w in order:
                    t = w.per_iteration(exp, solver, L, M, a, b, "cpu" if w is base else args.device,
                                        1 if w is base else args.seeds)
                    (tb if w is base else tn).append(t)
            ratio = statistics.median(n / o for n, o in zip(tn, tb))
            rows.append((exp, L, M, h, statistics.median(tb), statistics.median(tn), ratio))
            weighted, hours = weighted + h * ratio, hours + h
            print(f"{solver:6s} {exp:14s} ({L},{M:3d})  share {h:6.3f} h  base {1e3 * rows[-1][4]:8.2f} ms/it  "
                  f"new {1e3 * rows[-1][5]:8.2f} ms/it  ratio {ratio:.3f}", flush=True)
        if hours > 0:
            print(f"{solver}: ratio weighted by the archive's CPU-hours {weighted / hours:.3f}, "
                  f"largest {max(r[6] for r in rows):.3f}", flush=True)


if __name__ == "__main__":
    main()
