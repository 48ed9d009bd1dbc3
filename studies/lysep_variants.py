"""LySep variants side by side: weight treatment, W_3/b_3 solve, step rule.

    python studies/lysep_variants.py elliptic-10d 50 --seeds 0,1,2 --iterations 200

Prints mean ± sample std (N − 1) over seeds of J, l2, J after the first W_3 solve, ||W_3||, and how far W_1, W_2 moved.

Backs: docs/lysep.md 'Variants': weight treatment, W_3/b_3 solve, step rule side by side.
Regenerate: make studies STUDIES=lysep_variants -> studies/results/lysep_variants.txt (studies/run.py
    holds the commands).
Cost: ~5 CPU-minutes (the file's header lists both commands).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.solvers.lysep.algorithm import solve
from lysep_cli.specs import load_specs

VARIANTS = {
    "default (frozen, separate)": {},
    "joint W3,b3": {"w3_b3": "joint"},
    "weights through": {"weights": "through"},
    "fixed tau=0 (closed form only)": {"step_rule": "fixed", "tau": 0.0},
    "fixed tau=0, joint": {"step_rule": "fixed", "tau": 0.0, "w3_b3": "joint"},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("experiment")
    ap.add_argument("M", type=int)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--variant", action="append", help="subset of variant names")
    args = ap.parse_args()
    spec = load_specs("experiments.yaml")[args.experiment]
    problem, _, Z_test, data, _ = experiment_data(spec)
    seeds = [int(s) for s in args.seeds.split(",")]
    base = spec.solvers["lysep"].to_dict()
    print(f"{args.experiment} (3,{args.M}), seeds {seeds}, {args.iterations} sweeps")
    print("| variant | J | l2 | J after 1st W3 solve | ||W3|| | move W1 | move W2 | s/run |")
    print("|---|---|---|---|---|---|---|---|")
    for name, change in VARIANTS.items():
        if args.variant and name not in args.variant:
            continue
        rows = []
        for seed in seeds:
            t = time.perf_counter()
            res = solve(problem, data, network.init_params(problem.n_in, 3, args.M, seed), {**base, **change},
                        args.iterations)
            dg = res.diagnostics
            rows.append([res.history["J"][-1], relative_l2(problem, res.params, Z_test), res.history["J"][1],
                         dg["W3_norm"], dg["move_W1"], dg["move_W2"], time.perf_counter() - t])
        a = np.array(rows)
        m, s = a.mean(0), (a.std(0, ddof=1) if len(a) > 1 else np.zeros(a.shape[1]))
        print(f"| {name} | {m[0]:.2e}±{s[0]:.1e} | {m[1]:.2e}±{s[1]:.1e} | {m[2]:.2e} | {m[3]:.1e} | "
              f"{m[4]:.1e} | {m[5]:.1e} | {m[6]:.0f} |", flush=True)


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
