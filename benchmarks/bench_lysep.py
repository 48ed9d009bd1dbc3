"""Seconds per LySep iteration, GEMM work per iteration, and peak memory.

    python benchmarks/bench_lysep.py [--iterations 5] [--case elliptic-10d:150 ...]

Counts G = 2 M^2 N flops (one M x M by M x N product) per iteration by design of lysep_loss
(see docs/lysep.md) and compares the measured time with this machine's measured GEMM speed.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import resource
import time

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers.lysep.algorithm import LySepIteration
from lysep_cli.solvers.lysep.loss import LySepData
from lysep_cli.specs import load_specs


def gemm_gflops(M: int, N: int, n: int = 10) -> float:
    A, B = np.random.rand(M, M), np.random.rand(M, N * 10)
    A @ B
    t = time.perf_counter()
    for _ in range(n):
        A @ B
    return 2 * M * M * N * 10 * n / (time.perf_counter() - t) / 1e9


def gemm_units(n_in: int, s: int, trials: float) -> float:
    """GEMM units G per sweep: a1 and W2 steps (1+n+s) G for the gradient and per trial, d1 (n+s) G
    likewise, b2 2 G, the W_3 solve ~1 G, the bound check's forward pass (1+2 n_in) G."""
    c = 1 + n_in + s
    return c + c * trials + (n_in + s) * (1 + trials) + c + c * trials + 2 + 1 + (1 + 2 * n_in)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--case", action="append",
                    default=None, help="experiment:M, e.g. elliptic-10d:150")
    args = ap.parse_args()
    cases = args.case or ["elliptic-10d:150", "parabolic-5d:100", "hyperbolic-5d:100", "elliptic-2d:100"]
    specs = load_specs("experiments.yaml")
    with threadpool_limits(limits=1):  # one BLAS thread, for the sweeps and the GEMM speed alike
        for case in cases:
            run_case(specs, case, args.iterations)


def run_case(specs: dict, case: str, iterations: int) -> None:
    """Time one case (experiment:M, L = 3) and print its line."""
    name, M = case.split(":")
    M = int(M)
    spec = specs[name]
    problem, _, _, td, _ = experiment_data(spec)
    data = LySepData.build(td.Z, td.coef, td.Y)
    it = LySepIteration(network.init_params(problem.n_in, 3, M, 0), data, spec.solvers["lysep"])
    it.sweep()  # first sweep (includes the first W_3 solve) not timed
    n0 = sum(r.__dict__.get("trials", 0) for r in it.rules.values())
    t = time.perf_counter()
    for _ in range(iterations):
        it.sweep()
        network.pinn_loss(it.st.params(), td.Z, td.coef, td.Y)
    dt = (time.perf_counter() - t) / iterations
    N, n_in, s = data.N, data.Z.shape[0], data.S.size
    G = 2.0 * M * M * N
    units = gemm_units(n_in, s, trials=1.0)
    speed = gemm_gflops(M, N)
    aux_mb = (2 + 2 * n_in + s) * M * N * 8 / 1e6
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(f"{name} (3,{M}) N={N}: {dt:.3f} s/iteration; GEMM work ~{units:.0f} G = {units * G / 1e9:.1f} GFLOP "
          f"(1 trial per block); GEMM speed {speed:.1f} GFLOP/s -> floor {units * G / 1e9 / speed:.3f} s; "
          f"ratio {dt / (units * G / 1e9 / speed):.1f}x; auxiliary variables {aux_mb:.0f} MB; "
          f"peak RSS so far {peak:.0f} MB")


if __name__ == "__main__":
    main()
