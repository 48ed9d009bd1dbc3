"""LySep's 10-D J after sweep 1 is a least-squares W_L on the seeded network with b_L frozen at its seed.

Usage: .venv/bin/python benchmarks/frozen_bias.py

For elliptic-10d-depth at (2,50) and (3,50) (the latter is the paper's cell), seeds 0 and 1, this prints
two values of J. Both are computed on the seeded hidden layers: the output layer solved by least squares
for W_L with b_L held at its seeded value, and the joint least-squares [W_L, b_L] (docs/results.md (c)).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.blas_pin)

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from lysep_cli import network
from lysep_cli.dataset import experiment_data
from lysep_cli.solvers.lysep_loss import LySepData, LySepState, fit_matrix
from lysep_cli.specs import default_config, load_specs


def output_layer_J(params0: list, ld: LySepData, tr, joint: bool) -> float:
    """J with W_L (and with ``joint`` also b_L) the least-squares fit on the seeded hidden layers."""
    B = fit_matrix(LySepState.from_params(params0, ld), ld)  # (M, N), `eq:GD_W3`
    b_seed = float(params0[-1][1][0])
    if joint:
        x = scipy.linalg.lstsq(np.hstack([B.T, ld.K[:, None]]), ld.Y, lapack_driver="gelsy")[0]
        W, b = x[:-1], x[-1]
    else:
        W, b = scipy.linalg.lstsq(B.T, ld.Y - b_seed * ld.K, lapack_driver="gelsy")[0], b_seed
    params = [(w.copy(), c.copy()) for w, c in params0]
    params[-1] = (W[None, :], np.array([b]))
    return network.pinn_loss(params, tr.Z, tr.coef, tr.Y)


def main() -> None:
    spec = load_specs(default_config())["elliptic-10d-depth"]
    data = experiment_data(spec)
    tr = data.training
    ld = LySepData.build(tr.Z, tr.coef, tr.Y)
    with threadpool_limits(limits=1):
        for L in (2, 3):
            for seed in (0, 1):
                p0 = network.init_params(data.problem.n_in, L, 50, seed)
                frozen, joint = output_layer_J(p0, ld, tr, False), output_layer_J(p0, ld, tr, True)
                print(f"L={L} seed {seed}: seeded b_L {float(p0[-1][1][0]):+.3f}; LS for W_L with b_L fixed "
                      f"J {frozen:.3e}; joint W_L, b_L J {joint:.3e}")


if __name__ == "__main__":
    main()
