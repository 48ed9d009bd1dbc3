"""How much of a LySep sweep is per-call overhead (what batching seeds could remove) and how much scales
with the number of training points N (element-wise passes and GEMMs): the measurement behind the
fast-kernels plan (benchmarks/logs/engine-2026-11.md, "Where a small cell's time goes").

    .venv/bin/python benchmarks/lysep_overhead.py [--cells elliptic-2d:30,hyperbolic-5d:20] [--out FILE]

For each cell (L = 3) the sweep is timed on the first n training points for n = 100, 200 and the full
N (same seeded network, same spec settings; after 20 sweeps, when the backtracking has settled: the
cheapest of three chunks of 8 sweeps; CPU time of this process, one BLAS thread).  The time that does not grow with n (Python, NumPy call and BLAS
dispatch overhead) is extrapolated linearly to n = 0:

    u(n) = t(n) / (T(n) + G)            (time per evaluation: T(n) trials and G = 7 gradients per sweep;
                                         the subsets do not settle at the full set's trial count)
    fixed = u0 (T(N) + G),  u0 the intercept of the least-squares line through (n, u(n)), n = 100, 200, 400

Batching the seeds of a cell (stacked arrays, one call for all seeds) removes at most that part: with
b seeds per batch a sweep would cost at least t(N) - fixed (1 - 1/b).  The GEMM floor is the one of
benchmarks/bench_sweep.py (its unit count, and a stacked (n_in M x M) @ (M x N) product timed here at the
cell's own sizes).  Trials per sweep (backtracking trials over all blocks) are counted, since they set
how many products a sweep does; the subsets need not settle at the same count as the full set.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.activation import SIGMA, Sine
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers.lysep.algorithm import LySepIteration, Settings
from lysep_cli.solvers.lysep.loss import LySepData
from lysep_cli.specs import load_specs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sweep import gemm_units  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMALL = (100, 200, 400)
WARM, CHUNK, CHUNKS = 20, 8, 3
GRADIENTS = 7  # gradient evaluations per sweep at L = 3: W1, a1, d1, W2, a2, d2, q2


def subset(coef, Z: np.ndarray, Y: np.ndarray, n: int):
    """The first n training points: Z (n_in, n), the coefficients' per-point arrays, Y (n,)."""
    N = Z.shape[1]
    cut = {f.name: (v[..., :n] if isinstance(v, np.ndarray) and v.shape[-1] == N else v)
           for f in dataclasses.fields(coef) for v in [getattr(coef, f.name)]}
    return Z[:, :n], type(coef)(**cut), Y[:n]


class SigmaCounter:
    """Counts the sigma evaluations (sin and cos of one (M, N) array, activation.Sine.values) while
    installed.  (Trials are counted by LySep itself: ``LySepIteration.trials``.)"""

    def __init__(self) -> None:
        self.sigma = 0
        self._orig_values = Sine.values

    def __enter__(self):
        counter, orig_values = self, self._orig_values

        def values(sine, a):
            counter.sigma += 1
            return orig_values(sine, a)

        Sine.values = values
        return self

    def __exit__(self, *exc) -> None:
        Sine.values = self._orig_values


def time_sweeps(params0, data: LySepData, settings: Settings) -> tuple[float, float, float]:
    """(CPU seconds per sweep, trials per sweep, sigma evaluations per sweep) after WARM sweeps: CHUNKS chunks of CHUNK sweeps each, the
    chunk with the least CPU time per trial + 1 kept (robust to other load; trials differ a little)."""
    it = LySepIteration(params0, data, settings)
    for _ in range(WARM):
        it.sweep()
    best = None
    for _ in range(CHUNKS):
        trials0 = it.trials
        with SigmaCounter() as tc:
            t = time.process_time()
            for _ in range(CHUNK):
                it.sweep()
            sec = (time.process_time() - t) / CHUNK
        cand = (sec, (it.trials - trials0) / CHUNK, tc.sigma / CHUNK)
        if best is None or cand[0] / (cand[1] + 1) < best[0] / (best[1] + 1):
            best = cand
    return best


def gemm_seconds(n_in: int, M: int, N: int) -> float:
    """Seconds of one 2 M^2 N-flop unit, timed as a stacked (n_in M x M) @ (M x N) product."""
    A, B = np.random.rand(n_in * M, M), np.random.rand(M, N)
    A @ B
    t = time.process_time()
    for _ in range(10):
        A @ B
    return (time.process_time() - t) / 10 / n_in


def sigma_seconds(M: int, N: int) -> float:
    """Seconds of one sigma evaluation (np.sin and np.cos of an (M, N) array)."""
    a = np.random.default_rng(0).uniform(-3.0, 3.0, (M, N))
    SIGMA.values(a)
    t = time.process_time()
    for _ in range(10):
        SIGMA.values(a)
    return (time.process_time() - t) / 10


def measure(spec, M: int) -> dict:
    data = experiment_data(spec)
    tr, problem = data.training, data.problem
    settings = Settings.coerce(spec.solvers["lysep"])
    params0 = network.init_params(problem.n_in, 3, M, 0)
    N = tr.Z.shape[1]
    out = {"cell": f"{spec.name} (3,{M})", "N": N}
    for n in SMALL + (N,):
        Z, coef, Y = subset(tr.coef, tr.Z, tr.Y, n)
        out[n] = time_sweeps(params0, LySepData.build(Z, coef, Y), settings)
    s = int(np.count_nonzero(tr.coef.second))
    out["floor"] = gemm_units("lysep", problem.n_in, s) * gemm_seconds(problem.n_in, M, N)
    out["sigma_s"] = sigma_seconds(M, N)
    return out


def report(rows: list[dict]) -> str:
    head = ("| cell | N | ms/sweep (N) | trials/sweep | GEMM floor ms | / floor | ms (trials) at n = "
            + ", ".join(map(str, SMALL)) + " | fixed ms (to n = 0) | fixed share | best batching of 10 seeds can give "
            "| sigma evaluations/sweep | sigma ms/sweep | sigma / floor |")
    lines = [head, "|---|" + "---:|" * 12]
    for r in rows:
        tN, trials = r[r["N"]][:2]
        us = np.array([r[n][0] / (r[n][1] + GRADIENTS) for n in SMALL])
        fixed = max(0.0, float(np.polyfit(np.array(SMALL, float), us, 1)[1])) * (trials + GRADIENTS)
        best = tN / (tN - 0.9 * fixed)
        small = ", ".join(f"{r[n][0] * 1e3:.1f} ({r[n][1]:.0f})" for n in SMALL)
        lines.append(f"| {r['cell']} | {r['N']} | {tN * 1e3:.1f} | {trials:.1f} | {r['floor'] * 1e3:.2f} | "
                     f"{tN / r['floor']:.1f} | {small} | {fixed * 1e3:.1f} | {fixed / tN:.0%} | {best:.2f}× | "
                     + (f"{r[r['N']][2]:.1f} | {r[r['N']][2] * r['sigma_s'] * 1e3:.1f} | "
                        f"{r[r['N']][2] * r['sigma_s'] / r['floor']:.2f} |" if "sigma_s" in r else "– | – | – |"))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default=None, help="experiment:M,... (default: every paper cell)")
    ap.add_argument("--out", type=Path, default=None, help="write the table here (and print it), the raw "
                    "measurements beside it (.json)")
    ap.add_argument("--report-only", action="store_true", help="the table from --out's .json, nothing timed")
    args = ap.parse_args()
    if args.report_only:
        rows = [{(int(k) if k.isdigit() else k): v for k, v in r.items()}
                for r in json.loads(args.out.with_suffix(".json").read_text())]
        write(rows, args.out)
        return
    specs = load_specs(str(ROOT / "experiments.yaml"))
    if args.cells:
        cells = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cells.split(",")]
    else:
        cells = [(e, M) for e in ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")
                 for (_, M) in specs[e].sizes]
    rows = []
    with threadpool_limits(limits=1):
        for name, M in cells:
            rows.append(measure(specs[name], M))
            print(rows[-1]["cell"], {k: v for k, v in rows[-1].items() if k != "cell"}, flush=True)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    write(rows, args.out)


def write(rows: list[dict], out: Path | None) -> None:
    text = (f"# LySep: per-sweep time, its N-independent part and the GEMM floor "
            f"(benchmarks/lysep_overhead.py; after {WARM} sweeps, best of {CHUNKS} x {CHUNK}, seed 0, CPU time, one BLAS "
            f"thread; machine shared with other runs)\n\n" + report(rows) + "\n")
    print(text)
    if out:
        out.write_text(text)


if __name__ == "__main__":
    main()
