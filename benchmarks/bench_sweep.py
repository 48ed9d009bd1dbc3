"""CPU time of the full sweep: every cell of the spec, PINN and LySep, through `lysep run`'s code path.

    python benchmarks/bench_sweep.py [--cells elliptic-10d:150,...] [--solvers pinn,lysep]
                                     [--repeats 2] [--peer DIR] [--json FILE]

For each (cell, solver) one child process (BLAS on one thread, as in `lysep run`) calls
``runner.execute`` for a short and a long run (``--repeats`` times each, the minimum kept); seconds
per iteration is the difference divided by the difference of the counts, and the rest of the short
run is the per-run overhead (data, initial pass, the two W_3 condition numbers of LySep).  PINN's
iterations all cost the same (2 and 6 iterations: ``--short``, ``--long``).  A LySep sweep costs more
once its backtracking settles (the first ~20 sweeps take one trial per block, later ones about two),
so LySep is timed over sweeps 21-40 (``--lysep-short``, ``--lysep-long``).  The same child measures the
machine's one-thread GEMM speed at the cell's shapes and gives the GEMM floor of one iteration, the
definitions of the fast-kernels issue:

    PINN:  3 (1 + n_in + |S|) products of 2 M^2 N flops (forward channels, adjoints, weight gradients;
           the engine needs 3 (1 + n_in + n_g), fewer: benchmarks/logs/engine-2026-11.md)
    LySep: gradient + one trial per block, closed forms and the bound's forward pass (about 148
           products at elliptic-10d; at two trials per block the engine does about 169)

The extra baselines (``--solvers pinn-adam,pinn-lbfgs,pinn-lm``, ``make extras``) are timed the same
way: Adam and LM over iterations 2-6, L-BFGS over 10-30 (``--lbfgs-short``, ``--lbfgs-long``: its
iterations vary with the line search); their full-sweep figure counts ``--extra-seeds`` seeds per cell
(3, as ``make extras``) and LM's run ``min(iterations, max_iterations)`` iterations.  Only PINN, Adam
(the same products) and LySep have a GEMM floor.

``--peer DIR`` runs the same cells with the lysep_cli package of another checkout (e.g. the commit
before a change) in alternation with ours, so before/after are measured side by side in one run.
The full-sweep figure is sum over cells of seeds x (overhead + iterations x s/iteration).

Times are CPU seconds of the child process (time.process_time; one BLAS thread, so this is the
run's own compute): on a shared machine other processes inflate wall time but hardly the CPU time.
The last columns are each child's peak resident memory (ru_maxrss: data set, network, the run's
arrays and the imported libraries; the warm-up and every timed run included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(impl: str, experiment: str, L: int, M: int, solver: str, counts: list[int], repeats: int,
          config: str = "") -> dict:
    """Runs inside the child process: time runner.execute at each iteration count."""
    if impl:
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
        sys.path.insert(0, impl)
    import lysep_cli  # noqa: F401  first: it pins OpenBLAS's kernel before NumPy loads (lysep_cli.platform_pin)
    import numpy as np
    from threadpoolctl import threadpool_limits

    try:
        from lysep_cli.execution import runner
    except ImportError:  # a peer from before the package's layers (e.g. 42e5322): lysep_cli/runner.py
        from lysep_cli import runner
    from lysep_cli.specs import load_specs

    # each side reads its own experiments file (an older peer does not know the solvers added since)
    spec = load_specs(config or str((Path(impl) if impl else ROOT) / "experiments.yaml"))[experiment]
    key = runner.RunKey(solver, L, M, 0)
    runner.execute(spec, key, 1)  # warm-up: data set, imports
    seconds = [float("inf")] * len(counts)
    for _ in range(repeats):  # the minimum over repeats: robust to other load on a shared machine
        for i, n in enumerate(counts):
            t = time.process_time()
            runner.execute(spec, key, n)
            seconds[i] = min(seconds[i], time.process_time() - t)
    n_in = spec.d + (spec.pde != "elliptic")
    with threadpool_limits(limits=1):
        A, B = np.random.rand(n_in * M, M), np.random.rand(M, spec.n_train)
        A @ B
        t = time.process_time()
        for _ in range(10):
            A @ B
        gflops = 2.0 * n_in * M * M * spec.n_train * 10 / (time.process_time() - t) / 1e9

    import resource

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux: the child's peak RSS
    return {"seconds": seconds, "gflops": gflops, "package": str(Path(lysep_cli.__file__).parent), "peak_mb": peak_mb}


def gemm_units(solver: str, n_in: int, s: int, L: int = 3) -> float:
    """GEMM products of 2 M^2 N flops per iteration (see the module docstring), depth L.

    LySep, per layer map l = 2..L-1 (gradient + one trial per block): a_{l-1} 2c, d_{l-1} 2 (n_in + s),
    q_{l-1} 2 s (l-1 >= 2), W_l 2c, b_l 2; then W_L 1 and the bound check's PINN pass (L-2)(1 + 2 n_in),
    with c = 1 + n_in + s.  At L = 3 this is the count of benchmarks/bench_lysep.py.
    """
    if solver in ("pinn", "pinn-adam"):
        return 3.0 * (1 + n_in + s) * (L - 2)
    if solver != "lysep":
        return 0.0  # L-BFGS, LM: no floor defined
    c = 1 + n_in + s
    units = 1 + (L - 2) * (1 + 2 * n_in)  # W_L, bound check
    for l in range(2, L):
        units += 2 * c + 2 * (n_in + s) + (2 * s if l - 1 >= 2 else 0) + 2 * c + 2
    return units


def measure(impl: str, experiment: str, L: int, M: int, solver: str, counts: list[int], repeats: int,
            config: str = "") -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps([impl, experiment, L, M, solver, counts, repeats, config])]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", type=int, default=2, help="PINN: iterations of the short run")
    ap.add_argument("--long", type=int, default=6, help="PINN: iterations of the long run")
    ap.add_argument("--lysep-short", type=int, default=20, help="LySep: sweeps of the short run")
    ap.add_argument("--lysep-long", type=int, default=40, help="LySep: sweeps of the long run")
    ap.add_argument("--lbfgs-short", type=int, default=10, help="L-BFGS: iterations of the short run")
    ap.add_argument("--lbfgs-long", type=int, default=30, help="L-BFGS: iterations of the long run")
    ap.add_argument("--extra-seeds", type=int, default=3, help="seeds per cell of an extra baseline")
    ap.add_argument("--repeats", type=int, default=2, help="each count timed this often; the minimum is kept")
    ap.add_argument("--cells", default=None, help="experiment:M or experiment:LxM,... (default: every cell)")
    ap.add_argument("--solvers", default="pinn,lysep")
    ap.add_argument("--peer", default=None, help="another checkout whose lysep_cli runs beside ours")
    ap.add_argument("--json", default=None, help="write the measurements here")
    ap.add_argument("--config", default="", help="our experiments file (default: ./experiments.yaml; the peer "
                    "always reads its own), e.g. one with LySep's backoff_max: 16")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return

    sys.path.insert(0, str(ROOT))
    from lysep_cli.specs import load_specs

    specs = load_specs(str(ROOT / "experiments.yaml"))
    wanted = None if args.cells is None else {tuple(c.split(":")) for c in args.cells.split(",")}
    impls = {"ours": ""} | ({"peer": str(Path(args.peer).resolve())} if args.peer else {})
    counts_of = {"pinn": [args.short, args.long], "lysep": [args.lysep_short, args.lysep_long],
                 "pinn-adam": [args.short, args.long], "pinn-lbfgs": [args.lbfgs_short, args.lbfgs_long],
                 "pinn-lm": [args.short, args.long]}
    rows, totals = [], {k: 0.0 for k in impls}
    totals_by_solver = {(k, s): 0.0 for k in impls for s in args.solvers.split(",")}
    head = f"{'cell':<20} {'solver':<10} " + " ".join(f"{k + ' s/it':>11}" for k in impls)
    head += f" {'floor s/it':>10} {'ours/floor':>10} {'run s':>8}" + (f" {'peer/ours':>9}" if args.peer else "")
    head += " " + " ".join(f"{k + ' MB':>9}" for k in impls)
    print(head, flush=True)
    for spec in specs.values():
        if wanted is None and spec.table is None:
            continue  # studies (e.g. the depth study) only when named in --cells
        n_in = spec.d + (spec.pde != "elliptic")
        s = spec.d  # second-derivative channels: the spatial ones (and t for hyperbolic PDEs)
        s += spec.pde == "hyperbolic"
        for L, M in spec.sizes:
            if wanted is not None and not {(spec.name, str(M)), (spec.name, f"{L}x{M}")} & wanted:
                continue
            for solver in args.solvers.split(","):
                row = {"experiment": spec.name, "L": L, "M": M, "solver": solver}
                counts = counts_of[solver]
                for name, impl in impls.items():
                    m = measure(impl, spec.name, L, M, solver, counts, args.repeats,
                                "" if impl else str(Path(args.config).resolve()) if args.config else "")
                    t1, t2 = m["seconds"]
                    per_it = (t2 - t1) / (counts[1] - counts[0])
                    overhead = max(0.0, t1 - counts[0] * per_it)
                    iterations = spec.iterations
                    if solver == "pinn-lm":
                        iterations = min(iterations, spec.solvers[solver].max_iterations)
                    run_s = overhead + iterations * per_it
                    seeds = len(spec.seeds) if solver in ("pinn", "lysep", "rfls") else args.extra_seeds
                    row[name] = {"s_per_it": per_it, "overhead_s": overhead, "run_s": run_s,
                                 "iterations": iterations, "seeds": seeds,
                                 "gflops": m["gflops"], "package": m["package"], "peak_mb": m.get("peak_mb")}
                    totals[name] += run_s * seeds
                    totals_by_solver[name, solver] += run_s * seeds
                floor = gemm_units(solver, n_in, s, L) * 2.0 * M * M * spec.n_train / 1e9 / row["ours"]["gflops"]
                row["floor_s_per_it"] = floor
                rows.append(row)
                line = f"{spec.name + f' ({L},{M})':<20} {solver:<10} "
                line += " ".join(f"{row[k]['s_per_it']:>11.4f}" for k in impls)
                line += f" {floor:>10.4f} {row['ours']['s_per_it'] / floor:>10.2f}" if floor > 0 else f" {'-':>10} {'-':>10}"
                line += f" {row['ours']['run_s']:>8.1f}"
                if args.peer:
                    line += f" {row['peer']['s_per_it'] / row['ours']['s_per_it']:>9.2f}"
                line += " " + " ".join(f"{row[k]['peak_mb']:>9.0f}" for k in impls)
                print(line, flush=True)
    for name in impls:
        parts = ", ".join(f"{s} {totals_by_solver[name, s] / 3600:.2f}" for s in args.solvers.split(","))
        print(f"full sweep, {name}: {totals[name] / 3600:.2f} CPU-hours ({parts}; iterations x seeds per cell, "
              f"one thread)")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts_of, "rows": rows, "cpu_hours": {
            k: v / 3600 for k, v in totals.items()}, "cpu_hours_by_solver": {
            f"{k}/{s}": v / 3600 for (k, s), v in totals_by_solver.items()}, "load": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
