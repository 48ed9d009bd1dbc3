"""LySep's 10-D J after sweep 1 is a least-squares W_L on the seeded network with b_L frozen at its seed.

Usage: .venv/bin/python studies/frozen_bias.py [--experiment elliptic-10d] [--sizes 3x50,3x100]
                                                  [--seeds 0-9] [--results results/paper]

For each (L, M) and seed this computes, on the seeded hidden layers, J with the output layer solved by
least squares for W_L with b_L held at its seeded value ("frozen b_L"), and J of the joint least-squares
[W_L, b_L] ("joint"). Where the archive under --results holds that LySep run, it prints the run's J after
sweep 1 and its final J beside them (studies/explanations.md (c)). Each size ends with the means over the seeds.
Cheap: seconds per size, no training.

Backs: README headline; studies/explanations.md (c), docs/lysep-depth.md: 10-D LySep's J is a W_L solve with b_L
    frozen.
Regenerate: make studies STUDIES=frozen_bias; cheap, part of plain `make studies` ->
    studies/results/frozen_bias_e10d.txt, frozen_bias_e10d_depth.txt (studies/run.py holds the commands).
Cost: ~15 CPU s.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
from pathlib import Path

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.store.records import read_record, record_paths
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers.lysep.loss import LySepData, LySepState
from lysep_cli.specs import default_config, load_specs, parse_seeds, parse_sizes


def output_layer_J(params0: list, ld: LySepData, tr, joint: bool) -> float:
    """J with W_L (and with ``joint`` also b_L) the least-squares fit on the seeded hidden layers."""
    B = LySepState.from_params(params0, ld).fit.B  # (M, N), `eq:GD_W3`
    b_seed = float(params0[-1][1][0])
    if joint:
        x = scipy.linalg.lstsq(np.hstack([B.T, ld.K[:, None]]), ld.Y, lapack_driver="gelsy")[0]
        W, b = x[:-1], x[-1]
    else:
        W, b = scipy.linalg.lstsq(B.T, ld.Y - b_seed * ld.K, lapack_driver="gelsy")[0], b_seed
    params = [(w.copy(), c.copy()) for w, c in params0]
    params[-1] = (W[None, :], np.array([b]))
    return network.pinn_loss(params, tr.Z, tr.coef, tr.Y)


def archived(results: Path, experiment: str, L: int, M: int, seed: int) -> tuple[float, float] | None:
    """(J after sweep 1, final J) of the archived LySep run, or None where there is none."""
    json_path, _ = record_paths(results, experiment, "lysep", L, M, seed)
    if not json_path.exists():
        return None
    record = read_record(json_path)
    return record.history["J"][1], record.final.J


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", default="elliptic-10d")
    ap.add_argument("--sizes", default=None, help="LxM list (default: the experiment's sizes)")
    ap.add_argument("--seeds", default=None, help="e.g. 0-9 (default: the experiment's seeds)")
    ap.add_argument("--results", type=Path, default=Path("results/paper"))
    args = ap.parse_args()
    spec = load_specs(default_config())[args.experiment]
    data = experiment_data(spec)
    tr = data.training
    ld = LySepData.build(tr.Z, tr.coef, tr.Y)
    fmt = lambda x: "—" if x is None else f"{x:.3e}"  # noqa: E731
    print(f"{args.experiment}: J on the seeded hidden layers, output layer by least squares")
    with threadpool_limits(limits=1):  # as the runner builds LySep's first state
        for L, M in parse_sizes(args.sizes, spec):
            rows = []
            for seed in parse_seeds(args.seeds, spec):
                p0 = network.init_params(data.problem.n_in, L, M, seed)
                frozen, joint = output_layer_J(p0, ld, tr, False), output_layer_J(p0, ld, tr, True)
                run = archived(args.results, args.experiment, L, M, seed)
                rows.append((frozen, joint, None if run is None else run[1]))
                print(f"({L},{M}) seed {seed}: seeded b_L {float(p0[-1][1][0]):+.3f}; frozen b_L J {frozen:.3e}; "
                      f"joint J {joint:.3e}; archived LySep J sweep 1 {fmt(run and run[0])}, "
                      f"final {fmt(run and run[1])}")
            a = np.array([[np.nan if x is None else x for x in r] for r in rows])
            done = ~np.isnan(a[:, 2])
            print(f"({L},{M}) means over {len(rows)} seeds: frozen b_L J {a[:, 0].mean():.3e}, joint J "
                  f"{a[:, 1].mean():.3e}; over the {int(done.sum())} archived: frozen b_L J "
                  f"{fmt(a[done, 0].mean() if done.any() else None)}, LySep final J "
                  f"{fmt(a[done, 2].mean() if done.any() else None)}")


if __name__ == "__main__":
    main()
