"""Learning-rate scan for PINN-GD (the evidence behind the `pinn:` settings of experiments.yaml).

Usage: .venv/bin/python benchmarks/tune_pinn.py EXPERIMENT --size 3x30 --iterations 2000 \
           --lrs 1e-3,3e-3,1e-2 --ratio 0.1 --seeds 0 [--jobs 2]

For every lr it runs PINN-GD with the exponential schedule lr -> lr * ratio (solvers/pinn.py) from the
seeded initial network and prints the final J, the minimum J along the way, the relative l2 test error
and the status.  Nothing is written to results/.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import dataclasses
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from lysep_cli.execution.runner import RunKey, execute
from lysep_cli.specs import default_config, load_specs, parse_seeds, parse_sizes


def one(args):
    spec, lr, ratio, L, M, seed, iterations = args
    spec = dataclasses.replace(spec, solvers={"pinn": spec.solvers["pinn"].replace(lr=lr, lr_final=lr * ratio)})
    rec, _ = execute(spec, RunKey("pinn", L, M, seed), iterations)
    J = np.asarray(rec.history["J"], dtype=float)
    return lr, seed, rec.status, rec.final.J, np.nanmin(J), rec.final.l2, rec.seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("--size", default=None, help="LxM (default: the smallest of the spec)")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--lrs", default="1e-3,3e-3,1e-2,3e-2")
    p.add_argument("--ratio", type=float, default=0.1, help="lr_final / lr")
    p.add_argument("--seeds", default="0")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--config", default=None)
    a = p.parse_args()
    spec = load_specs(a.config or default_config())[a.experiment]
    (L, M), = parse_sizes(a.size or "smallest", spec)
    jobs = [(spec, float(lr), a.ratio, L, M, s, a.iterations) for lr in a.lrs.split(",")
            for s in parse_seeds(a.seeds, spec)]
    print(f"{spec.name} (L,M)=({L},{M}) iterations {a.iterations}, lr_final = {a.ratio:g} lr")
    print(f"{'lr':>8} {'seed':>4} {'status':>8} {'final J':>10} {'min J':>10} {'l2':>10} {'s':>6}")
    with ProcessPoolExecutor(a.jobs) as pool:
        for lr, seed, status, J, Jmin, l2, sec in pool.map(one, jobs):
            fmt = lambda x: f"{x:10.3e}" if x is not None else f"{'nan':>10}"  # noqa: E731
            print(f"{lr:8.1e} {seed:>4} {status:>8} {fmt(J)} {fmt(Jmin)} {fmt(l2)} {sec:6.1f}", flush=True)


if __name__ == "__main__":
    main()
