"""LySep's ridge plateau and its escape, sweep by sweep: J, the ridge lambda of the W_L solve, ||W_L||.

Usage: .venv/bin/python studies/ridge_escape.py elliptic-2d --sizes 3x30,3x100 --seed 3 --sweeps 600 --every 25

lambda = P (penalty part of N J_S over ||W_L||^2, solvers/lysep/updates.py) is evaluated after each sweep
from the state, as the next W_L solve will see it; sqrt(lambda) is the ridge on W_L's coefficients.

Backs: studies/explanations.md (b): the ridge plateau and its escape, sweep by sweep.
Regenerate: make studies STUDIES=ridge_escape -> studies/results/ridge_escape_e2d.txt (studies/run.py
    holds the commands).
Cost: ~4 CPU-minutes.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse

import numpy as np
from common import load, sweeps

from lysep_cli.solvers.lysep.loss import penalty, weights
from lysep_cli.specs import parse_sizes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("--sizes", default="3x30,3x100")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--sweeps", type=int, default=600)
    p.add_argument("--every", type=int, default=25)
    a = p.parse_args()
    study = load(a.experiment)
    for L, M in parse_sizes(a.sizes, study.spec):
        print(f"{study.spec.name} (L,M)=({L},{M}) seed {a.seed}")
        print(f"{'sweep':>5} {'J':>10} {'J_S':>10} {'lambda':>10} {'||W_L||':>10}")
        for k, it in sweeps(study, L, M, a.seed, a.sweeps):
            if k % a.every == 0 or k <= 2:
                J = study.loss(it.st.params())
                lam = penalty(it.terms, weights(it.st, study.ld))
                WL = float(np.linalg.norm(it.st.v[f"W{L}"]))
                print(f"{k:>5} {J:10.3e} {it.J_S[0]:10.3e} {lam:10.3e} {WL:10.3e}", flush=True)


if __name__ == "__main__":
    main()
