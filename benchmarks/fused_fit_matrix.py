"""What fusing LySep's element-wise passes with numba would buy: measured on the fit matrix B.

    (numba is a dependency of lysep since sigma's sin and cos use it: lysep_cli/numerics/sincos.py)
    python benchmarks/fused_fit_matrix.py [--case elliptic-10d:150 ...] [--repeats 10]

``channels.fit_matrix`` builds B = K sigma(a) + sigma'(a) U + sigma''(a) V with U, V sums over the input
channels: about 7 numpy passes per channel, each over an (M, N) array, with temporaries.  The numba
kernel below does the same IEEE operations in the same order for every element (no fused
multiply-add: numba does not contract without fastmath), in one pass.  The script checks that B, U, V
are bit-identical, times both alternately in one process (one BLAS thread), counts the fit-matrix
calls of a LySep sweep and times whole sweeps, and prints what the fused fit matrix would save of a
sweep.  (It measures; it changes nothing in lysep.)
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import time

import numpy as np
from numba import njit
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import channels
from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers.lysep.algorithm import loss as lysep_loss
from lysep_cli.solvers.lysep.algorithm import LySepIteration
from lysep_cli.solvers.lysep.loss import LySepData
from lysep_cli.specs import load_specs


@njit(cache=True)
def _fit_sums(d, Q, has_Q, K, K1, K2, gflat, gstart, s0, s1, s2):  # pragma: no cover (compiled)
    """B, U, V of channels.fit_matrix, element by element in the numpy code's order."""
    n_in, M, N = d.shape
    U = np.empty((M, N))
    V = np.empty((M, N))
    B = np.empty((M, N))
    for m in range(M):
        for n in range(N):
            u = 0.0
            for j in range(n_in):  # U += K_j d_j
                u += K1[j, n] * d[j, m, n]
            v = 0.0
            for i in range(K2.shape[0]):  # V += K-hat_g sum_{j in g} d_j^2;  U += K-hat_g Q_g
                j0 = gflat[gstart[i]]
                ss = d[j0, m, n] * d[j0, m, n]
                for k in range(gstart[i] + 1, gstart[i + 1]):
                    ss += d[gflat[k], m, n] * d[gflat[k], m, n]
                v += K2[i, n] * ss
                if has_Q:
                    u += K2[i, n] * Q[i, m, n]
            U[m, n] = u
            V[m, n] = v
            b = K[n] * s0[m, n]
            b += s1[m, n] * u
            b += s2[m, n] * v
            B[m, n] = b
    return B, U, V


def fused_fit_matrix(last: channels.Layer, plan: channels.ChannelPlan) -> channels.Fit:
    gflat = np.concatenate(plan.groups).astype(np.int64) if plan.groups else np.zeros(0, np.int64)
    gstart = np.zeros(len(plan.groups) + 1, np.int64)
    gstart[1:] = np.cumsum([len(g) for g in plan.groups])
    Q = last.Q if last.Q is not None else np.zeros((1, 1, 1))
    s = last.sig
    return channels.Fit(*_fit_sums(last.d, Q, last.Q is not None, plan.K, plan.K1, plan.K2, gflat, gstart,
                                   s.s0, s.s1, s.s2))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", default=None, help="experiment:M (L = 3), e.g. elliptic-10d:150")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    cases = args.case or ["elliptic-10d:150", "parabolic-5d:100", "hyperbolic-5d:100", "elliptic-2d:100"]
    specs = load_specs("experiments.yaml")
    print(f"{'cell':22} {'identical':>9} {'numpy ms':>9} {'fused ms':>9} {'ratio':>6} {'calls/sweep':>11} "
          f"{'sweep s':>8} {'share':>6} {'sweep saving':>12}")
    for case in cases:
        name, M = case.split(":")
        spec = specs[name]
        problem, _, _, td, _ = experiment_data(spec)
        data = LySepData.build(td.Z, td.coef, td.Y)
        with threadpool_limits(limits=1):
            it = LySepIteration(network.init_params(problem.n_in, 3, int(M), 0), data, spec.solvers["lysep"])
            for _ in range(3):
                it.sweep()
            layer = it.st.layer(2)
            ref, got = channels.fit_matrix(np, layer, data.plan), fused_fit_matrix(layer, data.plan)
            same = all(np.array_equal(getattr(ref, k), getattr(got, k)) for k in ("B", "U", "V"))
            t_np = t_nb = 0.0
            for _ in range(args.repeats):  # alternating, so that load on the machine hits both alike
                t = time.perf_counter()
                channels.fit_matrix(np, layer, data.plan)
                t_np += time.perf_counter() - t
                t = time.perf_counter()
                fused_fit_matrix(layer, data.plan)
                t_nb += time.perf_counter() - t
            calls = [0]
            original = channels.fit_matrix

            def counted(*a, **k):
                calls[0] += 1
                return original(*a, **k)

            lysep_loss.ch_engine.fit_matrix = counted
            try:
                t = time.perf_counter()
                for _ in range(5):
                    it.sweep()
                sweep = (time.perf_counter() - t) / 5
            finally:
                lysep_loss.ch_engine.fit_matrix = original
        per_call_np, per_call_nb = t_np / args.repeats, t_nb / args.repeats
        per_sweep = calls[0] / 5
        share = per_sweep * per_call_np / sweep
        saving = per_sweep * (per_call_np - per_call_nb) / sweep
        print(f"{spec.name + ' (3,' + M + ')':22} {str(same):>9} {per_call_np * 1e3:9.2f} {per_call_nb * 1e3:9.2f} "
              f"{per_call_np / per_call_nb:6.2f} {per_sweep:11.1f} {sweep:8.3f} {share:6.1%} {saving:12.1%}")


if __name__ == "__main__":
    main()
