"""When does LySep leave the ridge-fit plateau?  Escape sweep of one cell under tiny perturbations.

Usage: .venv/bin/python studies/escape_study.py elliptic-2d --size 3x100 --seeds 3,5 \
           --eps 0,1e-15,1e-13,1e-11 --draws 3 [--first-draw 0] --max-sweeps 2000 [--threshold 1e-6]

For every (seed, eps, draw) it runs LySep (the experiment's settings) from the seeded network with every
weight multiplied by (1 + eps * u), u ~ U(-1, 1) from a generator seeded by the draw (eps = 0: the
archived start, one draw), and prints the first sweep at which J < threshold ("escape"), or "> max" when
J stays above it.  A perturbation of 1e-15 is round-off: if it moves the escape sweep by hundreds of
sweeps, whether a 2000-sweep run escapes is decided by the order of floating-point sums.

Backs: studies/explanations.md (b): round-off decides the escape only rarely.
Regenerate: make studies STUDIES=escape_study -> studies/results/escape_e2d_100.txt,
    escape_e2d_100_draw1.txt, escape_e2d_100_more.txt (studies/run.py holds the commands).
Cost: ~30 CPU-minutes per command (the other two files: more draws, their rows say which).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import time

import numpy as np

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.execution.memory import tune_malloc
from lysep_cli.solvers.lysep.algorithm import solve
from lysep_cli.specs import default_config, load_specs, parse_seeds, parse_sizes


class Escaped(Exception):
    pass


def escape_sweep(spec, L: int, M: int, seed: int, eps: float, draw: int, max_sweeps: int,
                 threshold: float) -> tuple[int | None, float]:
    """(first sweep with J < threshold or None, J at the end of the run)."""
    data = experiment_data(spec)
    params0 = network.init_params(data.problem.n_in, L, M, seed)
    if eps > 0:
        rng = np.random.default_rng(1000 + draw)
        params0 = [(W * (1 + eps * rng.uniform(-1, 1, W.shape)), b * (1 + eps * rng.uniform(-1, 1, b.shape)))
                   for W, b in params0]
    last = [float("nan")]

    def progress(k: int, J: float) -> None:
        last[0] = J
        if J < threshold:
            raise Escaped(k + 1)

    try:
        with np.errstate(all="ignore"):
            solve(data.problem, data.training, params0, spec.solvers["lysep"], max_sweeps, progress)
    except Escaped as e:
        return int(e.args[0]), last[0]
    return None, last[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("--size", default="3x100")
    p.add_argument("--seeds", default="3,5")
    p.add_argument("--eps", default="0,1e-15,1e-13")
    p.add_argument("--draws", type=int, default=3)
    p.add_argument("--first-draw", type=int, default=0, help="number of the first draw (to add draws to a study)")
    p.add_argument("--max-sweeps", type=int, default=2000)
    p.add_argument("--threshold", type=float, default=1e-6)
    a = p.parse_args()
    tune_malloc()
    from threadpoolctl import threadpool_limits

    spec = load_specs(default_config())[a.experiment]
    (L, M), = parse_sizes(a.size, spec)
    print(f"{spec.name} (L,M)=({L},{M}): first sweep with J < {a.threshold:g} (max {a.max_sweeps})")
    print(f"{'seed':>4} {'eps':>8} {'draw':>4} {'escape':>7} {'J last':>10} {'s':>6}")
    with threadpool_limits(1):
        for seed in parse_seeds(a.seeds, spec):
            for eps in (float(e) for e in a.eps.split(",")):
                for draw in ([0] if eps == 0 else range(a.first_draw, a.first_draw + a.draws)):
                    t = time.process_time()
                    k, J = escape_sweep(spec, L, M, seed, eps, draw, a.max_sweeps, a.threshold)
                    esc = f"{k:>7}" if k is not None else f"{'>' + str(a.max_sweeps):>7}"
                    print(f"{seed:>4} {eps:8.0e} {draw:>4} {esc} {J:10.3e} {time.process_time() - t:6.1f}",
                          flush=True)


if __name__ == "__main__":
    main()
