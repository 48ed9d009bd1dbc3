"""lysep's compiled kernels against the NumPy code they replace, side by side in one process, per LySep
sweep and per PINN iteration.

    .venv/bin/python benchmarks/kernel_cost.py --what sigma|fit [--cells elliptic-2d:30,...] [--rounds 2]
                                               [--out FILE]

sigma: sigma's sin and cos from the C library (np.sin, np.cos) against the one-pass kernel
(lysep_cli/numerics/sincos.py).  fit: the fit matrix B, U, V of channels.fit_matrix in NumPy passes
against the fused kernel (lysep_cli/numerics/fused.py; the same bits), with the sigma kernel on in both.

For each cell and each round, both variants run one after the other from the same seeded network (one
BLAS thread, CPU time): LySep 20 sweeps to settle, then 8 timed; PINN 3 iterations to warm up, then 20
timed.  The minimum over rounds is kept (robust to other load).  Ratio = kernel / NumPy: below 1 the
kernel is faster.  With sigma the two variants' trajectories differ in the last bits (the kernel is
within 2 ulp of glibc), which does not change the cost of a sweep.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import argparse
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import activation, channels, network
from lysep_cli.numerics import sincos as sincos_module
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.sincos import sincos
from lysep_cli.solvers import solver_def
from lysep_cli.solvers.lysep.algorithm import LySepIteration, Settings
from lysep_cli.solvers.lysep.loss import LySepData
from lysep_cli.specs import load_specs

ROOT = Path(__file__).resolve().parents[1]
CELLS = ("elliptic-2d:30,elliptic-2d:100,elliptic-10d:20,elliptic-10d:150,parabolic-5d:20,parabolic-5d:100,"
         "hyperbolic-5d:20,hyperbolic-5d:100")
FIT = channels.fit_matrix


def _numpy_fit(xp, last, plan, fused=True):
    return FIT(xp, last, plan, fused=False)


def _install(what: str, variant: str) -> None:
    """Switch one kernel to its NumPy code ("numpy") or leave it on ("kernel")."""
    activation.sincos = sincos_module.sincos = sincos  # the engine's sigma (numerics/sigma.py) reads the module's
    channels.fit_matrix = FIT
    if variant == "numpy":
        if what == "sigma":
            activation.sincos = sincos_module.sincos = lambda a: (np.sin(a), np.cos(a))
        else:
            channels.fit_matrix = _numpy_fit


def lysep_seconds(spec, M: int) -> float:
    data = experiment_data(spec)
    tr, problem = data.training, data.problem
    it = LySepIteration(network.init_params(problem.n_in, 3, M, 0), LySepData.build(tr.Z, tr.coef, tr.Y),
                        Settings.coerce(spec.solvers["lysep"]))
    for _ in range(20):
        it.sweep()
    t = time.process_time()
    for _ in range(8):
        it.sweep()
    return (time.process_time() - t) / 8


def pinn_seconds(spec, M: int) -> float:
    data = experiment_data(spec)
    tr, problem = data.training, data.problem
    solve = solver_def("pinn").solve
    params = network.init_params(problem.n_in, 3, M, 0)
    params = solve(problem, tr, params, spec.solvers["pinn"], 3).params
    t = time.process_time()
    solve(problem, tr, params, spec.solvers["pinn"], 20)
    return (time.process_time() - t) / 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", choices=("sigma", "fit"), default="sigma")
    ap.add_argument("--cells", default=CELLS)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    specs = load_specs(str(ROOT / "experiments.yaml"))
    sincos(np.zeros(1 << 13))  # compile / load the kernel before timing
    lines = ["| cell | solver | NumPy ms | kernel ms | kernel / NumPy |", "|---|---|---:|---:|---:|"]
    with threadpool_limits(limits=1):
        for cell in args.cells.split(","):
            name, M = cell.split(":")
            spec, M = specs[name], int(M)
            for solver, fn in (("pinn", pinn_seconds), ("lysep", lysep_seconds)):
                best = {v: float("inf") for v in ("numpy", "kernel")}
                for _ in range(args.rounds):
                    for v in best:
                        _install(args.what, v)
                        try:
                            best[v] = min(best[v], fn(spec, M))
                        finally:
                            _install(args.what, "kernel")
                lines.append(f"| {name} (3,{M}) | {solver} | {best['numpy'] * 1e3:.2f} | "
                             f"{best['kernel'] * 1e3:.2f} | {best['kernel'] / best['numpy']:.2f} |")
                print(lines[-1], flush=True)
    title = {"sigma": "sigma: C library against the one-pass sin-and-cos kernel",
             "fit": "the fit matrix: NumPy passes against the fused kernel (sigma kernel on in both)"}[args.what]
    text = (f"# {title} (benchmarks/kernel_cost.py --what {args.what}; CPU ms per LySep sweep / "
            f"PINN iteration, one BLAS thread, best of {args.rounds} alternating rounds, machine shared with "
            "other runs)\n\n" + "\n".join(lines) + "\n")
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
