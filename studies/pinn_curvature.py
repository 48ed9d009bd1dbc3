"""The curvature of the PINN loss J along PINN-GD's own path: the full Hessian at a few iterations.

Usage: nice -n 5 .venv/bin/python studies/pinn_curvature.py [EXPERIMENT] [--size 3x30] [--seed 0]
           [--at 0,100,500,2000] [--h 1e-6] [--out studies/results/pinn_curvature_e2d.txt]
           [--png studies/results/pinn_curvature_e2d.png] [--lr 2e-2 --lr-final 2e-3]

It replays PINN-GD with the spec's settings (experiments.yaml, the `pinn:` block: the exponential step
schedule lr -> lr_final over the spec's iterations, lysep_cli/solvers/pinn.py) from the seeded start, and
checks that the replay's J history equals the solver's own, bit for bit.  At each iteration of ``--at``
it builds the Hessian of J (lysep_cli.numerics.network.pinn_loss_and_grad, the function the solver uses)
with respect to all parameters by central differences of the analytic gradient, column i from
g(theta +- h_i e_i), h_i = h max(1, |theta_i|), symmetrised; once more with 10 h as an accuracy check;
and compares v^T H v with the directional second difference of J on 3 random unit directions and on the
top eigenvector.  Then it prints the spectrum's figures: the top eigenvalues, how many lie above
lambda_max/1e2 and /1e4, the smallest |eigenvalues| and the negative ones, GD's stable step 2/lambda_max
beside the schedule's step there, the stable step once the top k directions are set aside (2/lambda_{k+1}),
the share of ||g||^2 in the top-10 eigenvectors, and -- in the local quadratic model -- which directions
the rest of the schedule can resolve (lambda * sum of the remaining steps >= 1), and per band of the
spectrum the decrease of J a Newton step holds there beside what GD with the rest of the schedule, and with
10 x its steps, gets of it (after the last iteration: a further ITERATIONS steps at the last step).
The output layer alone is exactly quadratic (R is linear in W_L, b_L): for it the script gives the exact
eigenvalues of its Hessian block, the least-squares minimum of J over it with the hidden layers as they are,
and per band of its eigenvalues the decrease held there beside what GD's steps (1x, 10x, 100x) take of it.
``--lr``/``--lr-final`` replace the spec's schedule (e.g. the larger steps of studies/tune_pinn.py's scan).

One BLAS thread.  About 2 x 2 x (number of parameters) gradient evaluations per iteration of ``--at``.

Backs: studies/explanations.md (a): the curvature of J along PINN-GD's path sets the stable step.
Regenerate: make studies STUDIES=pinn_curvature -> studies/results/pinn_curvature_e2d.txt,
    pinn_curvature_e2d.png, pinn_curvature_e2d_lr2e-2.txt, pinn_curvature_e2d.md (studies/run.py holds
    the commands).
Cost: ~15 CPU-minutes (pinn_curvature_e2d.md is the written summary of the two).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import shlex
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers import pinn
from lysep_cli.solvers.base import copy_params
from lysep_cli.specs import default_config, load_specs, parse_sizes


def loss_grad(theta: np.ndarray, like: network.Params, train) -> tuple[float, np.ndarray]:
    """J and dJ/dtheta at the flat parameter vector theta (the solver's own loss and gradient)."""
    J, g = network.pinn_loss_and_grad(network.unflatten(theta, like), train.Z, train.coef, train.Y)
    return J, network.flatten(g)


def loss(theta: np.ndarray, like: network.Params, train) -> float:
    return network.pinn_loss(network.unflatten(theta, like), train.Z, train.coef, train.Y)


def hessian(theta: np.ndarray, like: network.Params, train, h: float = 1e-6) -> tuple[np.ndarray, float]:
    """Central differences of the analytic gradient, h_i = h max(1, |theta_i|); returns (the symmetrised
    H, ||H - H^T||_F / ||H||_F of the raw difference matrix)."""
    n = theta.size
    H = np.empty((n, n))
    for i in range(n):
        hi = h * max(1.0, abs(theta[i]))
        tp, tm = theta.copy(), theta.copy()
        tp[i] += hi
        tm[i] -= hi
        H[:, i] = (loss_grad(tp, like, train)[1] - loss_grad(tm, like, train)[1]) / (tp[i] - tm[i])
    asym = float(np.linalg.norm(H - H.T) / np.linalg.norm(H))
    return 0.5 * (H + H.T), asym


def second_difference(theta: np.ndarray, v: np.ndarray, like: network.Params, train, eps: float) -> float:
    """(J(theta + eps v) - 2 J(theta) + J(theta - eps v)) / eps^2."""
    return (loss(theta + eps * v, like, train) - 2 * loss(theta, like, train)
            + loss(theta - eps * v, like, train)) / eps ** 2


def quadratic_decrease(lam: np.ndarray, c: np.ndarray, etas: np.ndarray) -> np.ndarray:
    """Per eigendirection, the decrease of the local quadratic model J + g.x + x^T H x / 2 that GD with the
    steps ``etas`` reaches from x = 0: c_i^2 / (2 lambda_i) (1 - r_i^2), r_i = prod_j (1 - eta_j lambda_i),
    c_i = v_i . g.  (For lambda_i < 0 or |r_i| > 1 the model grows without bound.)"""
    s = 2 * np.log(np.abs(1 - np.outer(lam, etas))).sum(axis=1)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return c ** 2 / (2 * lam) * -np.expm1(s)


def band_table(lam: np.ndarray, c: np.ndarray, etas: np.ndarray, noise: float, J: float) -> list[str]:
    """Bands of the spectrum: count, share of ||g||^2, the decrease a full Newton step holds there
    (sum c^2 / 2 lambda, lambda > 0) and what GD with ``etas``, and with 10 x ``etas``, gets of it."""
    lmax, zero = lam[0], 1e3 * noise
    bands = [(f"lambda >= lmax/1e2", lam >= lmax / 1e2),
             (f"lmax/1e4 <= lambda < lmax/1e2", (lam >= lmax / 1e4) & (lam < lmax / 1e2)),
             (f"{zero:.0e} <= lambda < lmax/1e4", (lam >= zero) & (lam < lmax / 1e4)),
             (f"|lambda| < {zero:.0e} (1e3 x noise)", np.abs(lam) < zero),
             (f"lambda <= -{zero:.0e}", lam <= -zero)]
    g2 = float(c @ c)
    gd, gd10 = quadratic_decrease(lam, c, etas), quadratic_decrease(lam, c, 10 * etas)
    lines = [f"    {'band':<34} {'count':>5} {'g^2 share':>9} {'Newton dJ':>10} {'GD dJ':>10} {'10x GD dJ':>10}"
             f"   (quadratic model; J = {J:.4g})"]
    for name, m in bands:
        pos = m & (lam > 0)
        newton = (f"{float(np.sum(c[pos] ** 2 / (2 * lam[pos]))):10.3e}" if name.startswith(("lambda >", "lmax"))
                  or name[0].isdigit() else f"{'-':>10}")

        def fmt(x: np.ndarray) -> str:
            if name.startswith("lambda <=") or name[0] == "|":
                return f"{'-':>10}"
            return f"{'unstable':>10}" if not np.all(np.isfinite(x)) or np.any(x < 0) else f"{x.sum():10.3e}"
        lines.append(f"    {name:<34} {int(m.sum()):>5} {float(np.sum(c[m] ** 2)) / g2:9.4f} "
                     f"{newton} {fmt(gd[m])} {fmt(gd10[m])}")
    return lines


def output_layer_table(params: network.Params, train, etas: np.ndarray, lmax: float) -> list[str]:
    """The output layer alone, hidden layers fixed: J is exactly quadratic in (W_L, b_L), R = W_L B + b_L K - Y.

    With A = [B; K] = U S V^T, its Hessian block is (2/N) A A^T (eigenvalues 2 s_i^2 / N), and the decrease of
    J held along direction i is (v_i . R)^2 / N (a least-squares solve takes all of it).  Per band of
    those eigenvalues: the decrease held, and what GD with ``etas`` (and 10x, 100x those steps) takes of it --
    exact for this sub-problem, no quadratic model."""
    plan = ChannelPlan.build(train.coef)
    fp = network.pinn_pass(params, train.Z, plan, train.Y)
    A = np.vstack([fp.fit.B, plan.K[None, :]])
    N = train.Y.size
    _, sv, Vt = np.linalg.svd(A, full_matrices=False)
    lam = 2 * sv ** 2 / N
    held = (Vt @ fp.R) ** 2 / N
    J = float(fp.R @ fp.R / N)
    coef, *_ = np.linalg.lstsq(A.T, -fp.R, rcond=None)
    J_ls = float(np.sum((fp.R + A.T @ coef) ** 2) / N)

    def taken(scale: float) -> np.ndarray:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return held * -np.expm1(2 * np.log(np.abs(1 - np.outer(lam, scale * etas))).sum(axis=1))

    gd = {x: taken(x) for x in (1, 10, 100)}
    lines = [f"  output layer alone ({A.shape[0]} parameters, exactly quadratic): eigenvalues of its Hessian block "
             f"{lam[0]:.4g} ... {lam[-1]:.3g} (condition {lam[0] / lam[-1]:.2e}); J = {J:.6g}, least-squares "
             f"minimum over (W_L, b_L) with the hidden layers as they are: J_ls = {J_ls:.3e}",
             f"    {'band (output-layer eigenvalue)':<34} {'count':>5} {'dJ held':>10} {'GD takes':>10} "
             f"{'10x steps':>10} {'100x steps':>10}"]
    edges = [np.inf, lmax / 1e2, lmax / 1e4, lmax / 1e6, lmax / 1e8, 0.0]
    names = ["lambda >= lmax/1e2", "lmax/1e4 <= lambda < lmax/1e2", "lmax/1e6 <= lambda < lmax/1e4",
             "lmax/1e8 <= lambda < lmax/1e6", "lambda < lmax/1e8"]
    for name, hi, lo in zip(names, edges[:-1], edges[1:]):
        m = (lam < hi) & (lam >= lo)

        def fmt(x: np.ndarray) -> str:
            return (f"{'unstable':>10}" if not np.all(np.isfinite(x[m])) or np.any(x[m] < 0)
                    else f"{x[m].sum():10.3e}")
        lines.append(f"    {name:<34} {int(m.sum()):>5} {held[m].sum():10.3e} {fmt(gd[1])} {fmt(gd[10])} {fmt(gd[100])}")
    return lines


def replay(params0: network.Params, train, settings: pinn.Settings, iterations: int,
           at: list[int]) -> tuple[dict[int, network.Params], list[float]]:
    """pinn.solve's loop, keeping the parameters after k steps for every k in ``at``."""
    schedule = settings.schedule(iterations)
    params = copy_params(params0)
    J, grads = network.pinn_loss_and_grad(params, train.Z, train.coef, train.Y)
    history, kept = [J], {}
    if 0 in at:
        kept[0] = copy_params(params)
    for k in range(max(at)):
        eta = schedule(k)
        params = [(W - eta * gW, b - eta * gb) for (W, b), (gW, gb) in zip(params, grads)]
        J, grads = network.pinn_loss_and_grad(params, train.Z, train.coef, train.Y)
        history.append(J)
        if k + 1 in at:
            kept[k + 1] = copy_params(params)
    return kept, history


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment", nargs="?", default="elliptic-2d")
    p.add_argument("--size", default="3x30")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--at", default="0,100,500,2000", help="iterations (steps taken) at which to build H")
    p.add_argument("--h", type=float, default=1e-6, help="relative difference step of the Hessian")
    p.add_argument("--directions", type=int, default=3, help="random directions of the second-difference check")
    p.add_argument("--lr", type=float, default=None, help="replace the spec's first step")
    p.add_argument("--lr-final", type=float, default=None, help="replace the spec's last step")
    p.add_argument("--config", default=None)
    p.add_argument("--out", default=None, help="also write the report to this file")
    p.add_argument("--png", default=None, help="plot the spectra to this file")
    a = p.parse_args()

    spec = load_specs(a.config or default_config())[a.experiment]
    (L, M), = parse_sizes(a.size, spec)
    settings = pinn.Settings.coerce(spec.solvers["pinn"])
    if a.lr is not None or a.lr_final is not None:
        settings = settings.replace(**{k: v for k, v in (("lr", a.lr), ("lr_final", a.lr_final)) if v is not None})
    iterations = spec.iterations
    at = sorted({int(x) for x in a.at.split(",")})
    if max(at) > iterations:
        raise SystemExit(f"--at: at most the spec's {iterations} iterations")
    schedule = settings.schedule(iterations)
    etas = np.array([schedule(k) for k in range(iterations)])
    out = None if a.out is None else open(a.out, "w")

    def emit(line: str = "") -> None:
        print(line, flush=True)
        if out is not None:
            out.write(line + "\n")
            out.flush()

    if out is not None:
        emit("# command: " + shlex.join(["nice", "-n", "5", ".venv/bin/python", *sys.argv]))
    data = experiment_data(spec)
    train = data.training
    params0 = network.init_params(data.problem.n_in, L, M, a.seed)
    n = network.flatten(params0).size
    emit(f"{spec.name} PINN-GD (L,M)=({L},{M}) seed {a.seed}: {n} parameters, N = {train.Y.size} training "
         f"points; {'spec' if a.lr is None and a.lr_final is None else 'REPLACED'} schedule lr {settings.lr:g} -> {settings.lr_final:g} over {iterations} iterations")
    emit(f"Hessian of J: central differences of the analytic gradient (pinn_loss_and_grad), "
         f"h_i = {a.h:g} max(1,|theta_i|), symmetrised; one BLAS thread")

    spectra: dict[int, np.ndarray] = {}
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        t0 = time.perf_counter()
        kept, history = replay(params0, train, settings, iterations, at)
        ref = pinn.solve(data.problem, train, params0, settings, iterations).history["J"]
        same = all(history[k] == ref[k] for k in range(len(history)))
        emit(f"replay of pinn.solve: J history identical to the solver's at all {len(history)} entries: {same} "
             f"({time.perf_counter() - t0:.1f} s)")
        emit(f"J along the path: " + ", ".join(f"J_{k} = {history[k]:.6g}" for k in at))
        emit()
        rng = np.random.default_rng(12345)
        dirs = rng.standard_normal((a.directions, n))
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        for k in at:
            t0 = time.perf_counter()
            like = kept[k]
            theta = network.flatten(like)
            J, g = loss_grad(theta, like, train)
            H, asym = hessian(theta, like, train, a.h)
            H10, _ = hessian(theta, like, train, 10 * a.h)
            lam, V = np.linalg.eigh(H)
            lam, V = lam[::-1], V[:, ::-1]  # descending
            spectra[k] = lam
            lmax = lam[0]
            eta = etas[min(k, iterations - 1)]
            emit(f"=== iteration {k}: J = {J:.6g}, ||g|| = {np.linalg.norm(g):.3e}, step there lr_k = {eta:.3e} "
                 f"({time.perf_counter() - t0:.0f} s)")
            emit(f"  H accuracy: ||H - H^T||_F/||H||_F = {asym:.1e} (raw); ||H(h) - H(10h)||_F/||H||_F = "
                 f"{np.linalg.norm(H - H10) / np.linalg.norm(H):.1e}; ||H||_F = {np.linalg.norm(H):.3e}")
            noise = float(np.linalg.norm(H - H10, 2))
            emit(f"  noise floor (spectral norm of H(h) - H(10h)): {noise:.1e}")
            checks = [(f"random {i + 1}", v) for i, v in enumerate(dirs)] + [("top eigvec", V[:, 0])]
            for name, v in checks:
                q = float(v @ H @ v)
                sd = {eps: second_difference(theta, v, like, train, eps) for eps in (1e-3, 1e-4)}
                emit(f"  check {name:>10}: v^T H v = {q: .6e}; second difference of J, eps 1e-3: {sd[1e-3]: .6e} "
                     f"(rel diff {abs(sd[1e-3] - q) / abs(q):.1e}), eps 1e-4: {sd[1e-4]: .6e} "
                     f"(rel diff {abs(sd[1e-4] - q) / abs(q):.1e})")
            emit(f"  top 5 eigenvalues: " + ", ".join(f"{x:.4g}" for x in lam[:5]))
            emit(f"  ratios lambda_1/lambda_k, k = 2, 5, 10, 20, 50, 100: "
                 + ", ".join(f"{lmax / lam[i - 1]:.3g}" for i in (2, 5, 10, 20, 50, 100) if i <= n))
            emit(f"  eigenvalues above lambda_max/1e2: {int(np.sum(lam > lmax / 1e2))}, above lambda_max/1e4: "
                 f"{int(np.sum(lam > lmax / 1e4))}, above lambda_max/1e6: {int(np.sum(lam > lmax / 1e6))} (of {n})")
            neg = lam[lam < 0]
            emit(f"  negative eigenvalues: {neg.size} ({int(np.sum(neg < -noise))} below -noise floor); "
                 f"most negative {lam[-1]:.3e} (= {lam[-1] / lmax:.1e} lambda_max)")
            small = np.sort(np.abs(lam))[:5]
            emit(f"  smallest |eigenvalues|: " + ", ".join(f"{x:.2e}" for x in small)
                 + f"; |lambda| below the noise floor: {int(np.sum(np.abs(lam) < noise))}; median |lambda| "
                 f"{np.median(np.abs(lam)):.2e}")
            emit(f"  GD stable step 2/lambda_max = {2 / lmax:.3e}; lr_k = {eta:.3e}; lr_k lambda_max = "
                 f"{eta * lmax:.3f} (2 = edge of stability)")
            emit(f"  stable step with the top j directions set aside, 2/lambda_(j+1), j = 1, 5, 10, 50: "
                 + ", ".join(f"{2 / lam[j]:.3e}" for j in (1, 5, 10, 50) if j < n))
            c2 = (V.T @ g) ** 2
            g2 = float(g @ g)
            emit(f"  ||g||^2 share: top-10 eigenvectors {c2[:10].sum() / g2:.4f}, the other {n - 10} "
                 f"{c2[10:].sum() / g2:.4f}; top-1 {c2[0] / g2:.4f}; in lambda < lambda_max/1e4: "
                 f"{c2[lam < lmax / 1e4].sum() / g2:.4f}; in lambda < 0: {c2[lam < 0].sum() / g2:.4f}")
            after = etas[k:] if k < iterations else np.full(iterations, etas[-1])
            rem = float(after.sum())
            label = ("rest of the schedule" if k < iterations
                     else f"{iterations} further steps at the last step {etas[-1]:g} (none left)")
            resolved = lam * rem >= 1
            emit(f"  local quadratic model, {label}: sum of steps T = {rem:.3g}; directions with lambda T >= 1 "
                 f"(GD resolves them): {int(resolved.sum())}, with 0 < lambda T < 1: "
                 f"{int(np.sum((lam > 0) & ~resolved))}, lambda < 0: {int(np.sum(lam < 0))}; ||g||^2 share in the "
                 f"unresolved (lambda T < 1): {c2[~resolved].sum() / g2:.4f}")
            emit(f"  bands of the spectrum, local quadratic model with the steps of: {label} "
                 f"(Newton dJ: the decrease a full Newton step holds there; GD dJ: what those steps get of it):")
            for line in band_table(lam, V.T @ g, after, noise, J):
                emit(line)
            n_out = like[-1][0].size + like[-1][1].size
            emit(f"  top-3 eigenvectors' weight in the output layer (its last {n_out} parameters): "
                 + ", ".join(f"{float(np.sum(V[-n_out:, i] ** 2)):.3f}" for i in range(3)))
            out_lines = output_layer_table(like, train, after, lmax)
            emit(out_lines[0])
            exact = 2 * np.linalg.svd(np.vstack([network.pinn_pass(like, train.Z, ChannelPlan.build(train.coef),
                                                                   train.Y).fit.B,
                                                 ChannelPlan.build(train.coef).K[None, :]]), compute_uv=False) ** 2
            exact /= train.Y.size
            fd = np.linalg.eigvalsh(H[-n_out:, -n_out:])[::-1]
            emit(f"    check: the difference Hessian's output-layer block against the exact (2/N) A A^T: top-5 "
                 f"eigenvalues agree to {np.max(np.abs(fd[:5] - exact[:5]) / exact[:5]):.1e} (relative)")
            for line in out_lines[1:]:
                emit(line)
            for rank in sorted({r for r in (4, 10, 50, 100, 200) if 1 <= r <= n}):
                need = 1.0 / (lam[rank - 1] * iterations) if lam[rank - 1] > 0 else float("inf")
                emit(f"    eigenvalue #{rank}: {lam[rank - 1]:.3e}; step that resolves it in {iterations} constant "
                     f"steps, 1/(lambda {iterations}) = {need:.3e} = {need * lmax / 2:.3g} x the stable step")
            emit()
    if a.png and spectra:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (ax, axn) = plt.subplots(1, 2, figsize=(10, 4.5), sharey=True)
        for k, lam in spectra.items():
            pos, neg = lam[lam > 0], -lam[lam < 0][::-1]
            line, = ax.loglog(np.arange(1, pos.size + 1), pos, label=f"iteration {k}")
            axn.loglog(np.arange(1, neg.size + 1), neg, color=line.get_color(), label=f"iteration {k}")
        for eta, style in ((settings.lr, "--"), (settings.lr_final, ":")):
            ax.axhline(2 / eta, color="k", ls=style, lw=0.8, label=f"2/lr = {2 / eta:g} (lr = {eta:g})")
        ax.axhline(1 / etas.sum(), color="grey", ls="-.", lw=0.8,
                   label=f"1/(sum of all steps) = {1 / etas.sum():.2g}")
        ax.set_xlabel("rank of the positive eigenvalue (descending)")
        ax.set_ylabel("eigenvalue of the Hessian of J")
        axn.set_xlabel("rank of the negative eigenvalue (descending |lambda|)")
        axn.set_ylabel("|negative eigenvalue|")
        axn.yaxis.set_tick_params(labelleft=True)
        fig.suptitle(f"{spec.name} PINN-GD (L,M)=({L},{M}) seed {a.seed}: Hessian spectrum of J along the path "
                     f"(schedule {settings.lr:g} -> {settings.lr_final:g})", fontsize=9)
        ax.legend(fontsize=7)
        axn.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(a.png, dpi=120)
        emit(f"spectrum plot: {a.png}")
    if out is not None:
        out.close()


if __name__ == "__main__":
    main()
