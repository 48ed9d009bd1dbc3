"""PINN-GD per iteration: lysep's hand-derived channel engine beside plain PyTorch autograd.

    pip install torch        # optional (the `bench` extra); never a runtime dependency
    python benchmarks/bench_torch.py [--cells elliptic-10d:150,parabolic-5d:100] [--iterations 5]

Both sides run the same gradient-descent iteration of `eq:J-elliptic` / `eq:J-parabolic` /
`eq:J-hyberbolic`: the same network (the seeded initial W_l, b_l), training points, operator
coefficients K, K_j, K-hat_j and data Y, one thread each (torch.set_num_threads(1), BLAS limited by
threadpoolctl).  PyTorch forms d_j phi and d_jj phi by autograd (create_graph, one extra backward per
input for the second derivatives, the way PINN codes do), then J and its gradient by backward().
Before timing, the two gradients are compared (they must agree to round-off).  Timings alternate
between the two sides; the median of ``--repeats`` blocks of ``--iterations`` iterations is reported.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.specs import default_config, load_specs


def torch_step(torch, params, Z, K, K1, K2, Y, lr: float) -> float:
    """One autograd PINN-GD step in place; returns J before the step."""
    z = Z.clone().requires_grad_(True)  # (N, n_in)
    h = z
    for W, b in params[:-1]:
        h = torch.sin(h @ W.T + b)
    WL, bL = params[-1]
    phi = (h @ WL.T + bL)[:, 0]
    (grad,) = torch.autograd.grad(phi.sum(), z, create_graph=True)  # (N, n_in): d_j phi
    R = K * phi + (K1 * grad).sum(1)
    for j in range(z.shape[1]):
        if torch.any(K2[:, j] != 0):
            (gj,) = torch.autograd.grad(grad[:, j].sum(), z, create_graph=True)
            R = R + K2[:, j] * gj[:, j]
    R = R - Y
    J = (R * R).mean()
    flat = [p for pair in params for p in pair]
    grads = torch.autograd.grad(J, flat)
    with torch.no_grad():
        for p, g in zip(flat, grads):
            p -= lr * g
    return float(J.detach())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="elliptic-10d:150,parabolic-5d:100")
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        raise SystemExit("bench_torch: PyTorch is not installed (pip install torch, or the `bench` extra)")
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    specs = load_specs(default_config())
    print(f"{'cell':<22} {'lysep s/it':>10} {'torch s/it':>10} {'lysep/torch':>11} {'grad rel diff':>13}")
    for cell in args.cells.split(","):
        name, M = cell.split(":")
        spec, M = specs[name], int(M)
        problem, _, _, data, _ = experiment_data(spec)
        params0 = network.init_params(problem.n_in, 3, M, 0)
        lr = float(spec.solvers["pinn"].lr)
        T = lambda a: torch.tensor(np.ascontiguousarray(a))  # noqa: E731
        Zt, K, K1, K2, Y = T(data.Z.T), T(data.coef.K), T(data.coef.K1.T), T(data.coef.K2.T), T(data.Y)
        with threadpool_limits(limits=1):
            # Same J and gradient on both sides.
            tp = [(T(W).requires_grad_(True), T(b).requires_grad_(True)) for W, b in params0]
            ours_J, ours_g = network.pinn_loss_and_grad(params0, data.Z, data.coef, data.Y)
            flat = [p for pair in tp for p in pair]
            saved = [p.detach().clone() for p in flat]
            J_t = torch_step(torch, tp, Zt, K, K1, K2, Y, lr=1.0)  # lr = 1: the step is the gradient
            g_t = np.concatenate([(s - p.detach()).numpy().ravel() for s, p in zip(saved, flat)])
            diff = np.linalg.norm(g_t - network.flatten(ours_g)) / np.linalg.norm(network.flatten(ours_g))
            assert abs(J_t - ours_J) <= 1e-10 * ours_J, (J_t, ours_J)
            # Timing, alternating.
            ours_t, torch_t = [], []
            params = [(W.copy(), b.copy()) for W, b in params0]
            tp = [(T(W).requires_grad_(True), T(b).requires_grad_(True)) for W, b in params0]
            for _ in range(args.repeats):
                t = time.perf_counter()
                for _ in range(args.iterations):
                    J, g = network.pinn_loss_and_grad(params, data.Z, data.coef, data.Y)
                    params = [(W - lr * gW, b - lr * gb) for (W, b), (gW, gb) in zip(params, g)]
                ours_t.append((time.perf_counter() - t) / args.iterations)
                t = time.perf_counter()
                for _ in range(args.iterations):
                    torch_step(torch, tp, Zt, K, K1, K2, Y, lr)
                torch_t.append((time.perf_counter() - t) / args.iterations)
        o, p = statistics.median(ours_t), statistics.median(torch_t)
        print(f"{f'{name} (3,{M})':<22} {o:>10.4f} {p:>10.4f} {o / p:>11.2f} {diff:>13.1e}", flush=True)


if __name__ == "__main__":
    main()
