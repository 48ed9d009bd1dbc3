"""Seconds per PINN-GD iteration for each experiment at its largest size (not a test).

Usage: .venv/bin/python benchmarks/bench_pinn.py [--iterations 5] [--config experiments.yaml]

Each figure is the median over ``--repeats`` timings of ``--iterations`` gradient-descent steps of the
PINN solver (J and its hand-derived gradient over all training points), with BLAS limited to one
thread as in ``lysep run`` (one run per worker process), plus the projection to the paper's 2000
iterations.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import statistics
import time

from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers import get_solver
from lysep_cli.specs import default_config, load_specs


def largest(spec) -> tuple[int, int]:
    return max(spec.sizes, key=lambda s: (s[0] - 1) * s[1] ** 2 + s[1])


def bench(spec, L: int, M: int, iterations: int, repeats: int) -> float:
    """Median seconds per PINN-GD iteration at (L, M), BLAS on one thread."""
    problem, _, _, data, _ = experiment_data(spec)
    params0 = network.init_params(problem.n_in, L, M, 0)
    solve = get_solver("pinn")
    settings = spec.solvers["pinn"]
    times = []
    with threadpool_limits(limits=1):
        solve(problem, data, params0, settings, 1)  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            solve(problem, data, params0, settings, iterations)
            times.append((time.perf_counter() - start) / iterations)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", default=None)
    parser.add_argument("--all-sizes", action="store_true",
                        help="every size of the spec, and the PINN CPU time of the full sweep")
    args = parser.parse_args()
    specs = load_specs(args.config or default_config())
    print(f"{'experiment':<15} {'(L,M)':>8} {'N':>6} {'s/iter':>9} {'2000 iter':>10}")
    sweep = 0.0
    for spec in specs.values():
        for L, M in (spec.sizes if args.all_sizes else [largest(spec)]):
            sec = bench(spec, L, M, args.iterations, args.repeats)
            sweep += sec * spec.iterations * len(spec.seeds)
            print(f"{spec.name:<15} {f'({L},{M})':>8} {spec.n_train:>6} {sec:>9.4f} {sec * 2000 / 60:>8.1f} min")
    if args.all_sizes:
        print(f"PINN part of the full sweep (spec iterations x seeds, one thread): {sweep / 3600:.1f} CPU-hours")


if __name__ == "__main__":
    main()
