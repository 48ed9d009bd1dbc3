"""Where LySep's J_S sits below J: the fitting term and each constraint group's share of the penalty.

Usage: .venv/bin/python studies/js_breakdown.py parabolic-5d --size 3x20 --seeds 0 --sweeps 2000 --every 500

Our archived J_S is 0.4-0.5 of J (median per cell) where the paper's is 0.55-1.0 (docs/results.md).
This reruns LySep from the seeded start (the archive keeps W_l, b_l but not the auxiliary variables)
and prints, at the given sweeps, J (the PINN loss of the current W_l, b_l), J_S = fit + penalty, the
fit (1/N)||r||^2, the penalty (1/N)||W_L||^2 sum_c <rho_c, E_c> split by constraint group (a1, d1, a2, d2,
q2 at L = 3), and "J_S lambda-read": J_S with the d_1 weights of the W_3 system's lambda as the paper
prints it (without the |K-hat|_inf^2 factor on the (omega_2 + omega_3)||W_1(:, i) 1^T - d_1i||^2 term;
docs/paper-notes.md), in case the paper's J_S was computed from that lambda.

Backs: studies/explanations.md (g): where LySep's J_S sits below J.
Regenerate: make studies STUDIES=js_breakdown -> studies/results/js_breakdown.txt, js_breakdown_e10d.txt
    (studies/run.py holds the commands).
Cost: ~10 CPU-minutes (the files' headers list every command they hold).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse

import numpy as np
from common import load, sweeps

from lysep_cli.solvers.lysep.algorithm import LySepIteration
from lysep_cli.solvers.lysep.loss import LySepData, weights
from lysep_cli.specs import parse_seeds, parse_sizes


def group_penalties(it: LySepIteration, ld: LySepData) -> dict[str, float]:
    """(1/N) ||W_L||^2 <rho_c, E_c> per constraint group c (L = 3)."""
    wt, E, f = weights(it.st, ld), it.terms.E, it.st.w_out / ld.N
    out = {"a1": float(wt.rho_a[1] @ E("a1")), "a2": float(wt.rho_a[2] @ E("a2")),
           "d1": float(np.sum(wt.rho_d[1] * E("d1"))), "d2": float(np.sum(wt.rho_d[2] * E("d2")))}
    rho, Eq = wt.rho_q[2], E("q2")
    out["q2"] = float(rho[:, 0] @ np.sum(Eq, axis=-1) if rho.shape[1] == 1 else np.sum(rho * Eq))
    # lambda as printed: the |K-hat|^2 factor missing on the (omega_2 + omega_3) ||W_1(:,i) - d_1i||^2 term
    hj, w1c, w2 = ld.hj1, it.st.w1()[:, None], it.st.w(2)
    missing = (1.0 - hj) * w1c * (w2 + w2 * w2)  # rho_d1(lambda-read) - rho_d1(ours), (n_in, 1)
    out["d1_lambda_read"] = out["d1"] + float(np.sum(missing * E("d1")))
    return {k: v * f for k, v in out.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("--size", default="3x20")
    p.add_argument("--seeds", default="0")
    p.add_argument("--sweeps", type=int, default=2000)
    p.add_argument("--every", type=int, default=500)
    a = p.parse_args()
    study = load(a.experiment)
    spec, ld = study.spec, study.ld
    (L, M), = parse_sizes(a.size, spec)
    print(f"{spec.name} (L,M)=({L},{M}); |K-hat_i|_inf^2 = {np.array2string(ld.hj, precision=3)}")
    print(f"{'seed':>4} {'sweep':>5} {'J':>9} {'J_S':>9} {'J_S/J':>6} {'fit':>9} {'pen a1':>9} {'pen d1':>9} "
          f"{'pen a2':>9} {'pen d2':>9} {'pen q2':>9} {'J_S lam':>9} {'/J':>5}")
    for seed in parse_seeds(a.seeds, spec):
        for k, it in sweeps(study, L, M, seed, a.sweeps):
            if k % a.every == 0 or k == 1:
                J = study.loss(it.st.params())
                g = group_penalties(it, ld)
                fit = float(it.terms.r @ it.terms.r) / ld.N
                js_lam = fit + sum(v for c, v in g.items() if c not in ("d1",))
                print(f"{seed:>4} {k:>5} {J:9.3e} {it.J_S[0]:9.3e} {it.J_S[0] / J:6.3f} {fit:9.3e} {g['a1']:9.2e} "
                      f"{g['d1']:9.2e} {g['a2']:9.2e} {g['d2']:9.2e} {g['q2']:9.2e} {js_lam:9.3e} "
                      f"{js_lam / J:5.2f}", flush=True)


if __name__ == "__main__":
    main()
