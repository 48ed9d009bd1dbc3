"""The measurement behind varpro's iteration counts (docs/varpro.md, "Iterations: the equal-CPU rule").

Per paper experiment, at its largest size, seed 0: CPU seconds per iteration of PINN-GD and of each varpro
method (one BLAS thread, a few iterations after one warm-up run), and the rule's count: the largest n of
COUNTS with n * c_method <= 2000 * c_PINN, the least over the experiments.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python suites/varpro-cost.py
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.network import init_params
from lysep_cli.solvers import solver_def
from lysep_cli.specs import default_config, load_specs

EXPERIMENTS = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")
METHODS = {"pinn": 20, "varpro-gd": 20, "varpro-lbfgs": 20, "varpro-lm": 3}  # iterations timed
COUNTS = (2000, 1000, 500, 200, 100, 50, 20, 10)


def per_iteration(name: str, spec, data, L: int, M: int, n: int) -> float:
    settings = spec.solvers[name].replace(max_iterations=n) if name != "pinn" else spec.solvers[name]
    params0 = init_params(data.problem.n_in, L, M, 0)
    solve = solver_def(name).solve
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        solve(data.problem, data.training, params0, settings, 1)  # warm-up (first calls, caches)
        t0 = time.process_time()
        res = solve(data.problem, data.training, params0, settings, n)
        seconds = time.process_time() - t0
    return seconds / max(res.iterations_done, 1)


def main() -> None:
    specs = load_specs(default_config())
    counts: dict[str, int] = {}
    for exp in EXPERIMENTS:
        spec = specs[exp]
        data = experiment_data(spec)
        L, M = max(spec.sizes_for("pinn"), key=lambda s: (s[1], s[0]))
        cost = {name: per_iteration(name, spec, data, L, M, n) for name, n in METHODS.items()}
        for name in METHODS:
            if name == "pinn":
                continue
            n = next((c for c in COUNTS if c * cost[name] <= 2000 * cost["pinn"]), COUNTS[-1])
            counts[name] = min(counts.get(name, COUNTS[0]), n)
            print(f"{exp} ({L},{M}) {name}: {cost[name]:.4f} s/iteration, PINN-GD {cost['pinn']:.4f}: "
                  f"ratio {cost[name] / cost['pinn']:.1f}, count {n}", flush=True)
    print("max_iterations by the rule:", counts)


if __name__ == "__main__":
    main()
