"""Why some LySep runs stop half-way down from the ridge fit (elliptic-2d-depth (5,50), seeds 6 and 8).

Usage: .venv/bin/python studies/depth_stall.py elliptic-2d-depth --size 5x50 --seeds 0,6,8 --sweeps 400 --every 25

In the archive most seeds of every depth leave the ridge fit of the first output solve (J ≈ 4e-5) for
J ≈ 1e-7, but two seeds at L = 5 stop at J ≈ 3e-6 and stay there to sweep 2000 (docs/lysep-depth.md §5.1).
This reruns LySep from the seeded start and prints, every few sweeps: J (the PINN loss of the current
W_l, b_l), J_S, lambda (= P, the ridge weight of the W_L system, `eq:GD_W3`), J_LS (the PINN loss with
W_L, b_L replaced by the unregularised least-squares output layer on the *current* hidden layers: what
the output solve would give at lambda = 0), the largest step size t over the gradient blocks, and
||W_L||.  If J_LS is far below J while the steps have collapsed, the run is held by lambda, i.e. by the
constraint violations its auxiliary variables froze with, not by its features.

Backs: docs/lysep-depth.md (elliptic-2d-depth): two (5,50) seeds stop half-way down from the ridge fit.
Regenerate: make studies STUDIES=depth_stall -> studies/results/depth_stall_e2d_5x50.txt (studies/run.py
    holds the commands).
Cost: ~5 CPU-minutes.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse

import numpy as np
import scipy.linalg
from common import load, sweeps

from lysep_cli.numerics import network
from lysep_cli.solvers.lysep.loss import LySepData, LySepState, penalty, weights
from lysep_cli.specs import parse_seeds, parse_sizes


def least_squares_J(params: list, ld: LySepData, tr) -> float:
    """PINN loss with the output layer (W_L, b_L) the unregularised least-squares fit on the exact
    features of the current hidden layers (joint in W_L and b_L, no cutoff)."""
    exact = LySepState.from_params(params, ld)
    B = exact.fit.B  # (M, N)
    A = np.hstack([B.T, ld.K[:, None]])
    x = scipy.linalg.lstsq(A, ld.Y, lapack_driver="gelsy")[0]
    out = [(W.copy(), b.copy()) for W, b in params]
    out[-1] = (x[:-1][None, :], np.array([x[-1]]))
    return network.pinn_loss(out, tr.Z, tr.coef, tr.Y)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("--size", default="5x50")
    p.add_argument("--seeds", default="0,6,8")
    p.add_argument("--sweeps", type=int, default=400)
    p.add_argument("--every", type=int, default=25)
    a = p.parse_args()
    study = load(a.experiment)
    spec, ld, tr = study.spec, study.ld, study.tr
    (L, M), = parse_sizes(a.size, spec)
    print(f"{spec.name} (L,M)=({L},{M}), LySep as in the spec")
    print(f"{'seed':>4} {'sweep':>5} {'J':>9} {'J_S':>9} {'lambda':>9} {'J_LS':>9} {'max t':>8} {'|W_L|':>8}")
    for seed in parse_seeds(a.seeds, spec):
        for k, it in sweeps(study, L, M, seed, a.sweeps):
            if k % a.every == 0 or k == 1:
                params = it.st.params()
                J = study.loss(params)
                lam = penalty(it.terms, weights(it.st, ld))
                t_max = max(r.step_size for r in it.rules.values())
                print(f"{seed:>4} {k:>5} {J:9.3e} {it.J_S[0]:9.3e} {lam:9.2e} {least_squares_J(params, ld, tr):9.3e} "
                      f"{t_max:8.1e} {np.linalg.norm(params[-1][0]):8.1e}", flush=True)


if __name__ == "__main__":
    main()
