"""What the 2-D PINN plateau networks compute: how close their phi is to a low-degree polynomial.

Usage: .venv/bin/python studies/pinn_plateau_phi.py [--results results/paper] [--seeds 0-9]
           [--out studies/results/pinn_plateau_phi.md]

With the hard constraint psi = B phi (B = |x|^2 - 1, `eq:FNN-E`), the network's output is phi itself.
For every archived PINN run of elliptic-2d (the four sizes, 2000 iterations) this loads the saved weights
and evaluates phi on the test set (350 points), then, for k = 0..4:

- ``rel(phi, P_k)``: ||phi - P_k phi|| / ||phi||, P_k the least-squares projection onto the monomials
  x1^a x2^b, a + b <= k, on the test points; the same for the exact phi* = u / B (of all four paper
  experiments, monomials in t and x, as far as a quarter of the test points allows) and for the network at
  its seeded start (the stated init U(+-M^-1/2), and PyTorch's nn.Linear default, whose first layer is
  the stated draw times sqrt(M / n_in), studies/pinn_ablations.py);
- ``J_k``: the lowest J any phi of degree <= k reaches (one least-squares solve of the residual
  R = K phi + sum_j K_j d_j phi + K-hat sum_j d_jj phi - f on the training set, `eq:J-elliptic`), and its
  test l2; against the plateau's J.

It also gives the first layer's pre-activations max |W_1 x + b_1| over the test points (sin is within
1 % of linear below 0.24).  Nothing is retrained: seconds.

Backs: README headline; studies/explanations.md (a): the 2-D PINN stalls at the best affine phi.
Regenerate: make studies STUDIES=pinn_plateau_phi; cheap, part of plain `make studies` ->
    studies/results/pinn_plateau_phi.md (studies/run.py holds the commands).
Cost: ~2 CPU s.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

from itertools import combinations_with_replacement
from pathlib import Path

import numpy as np

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import problem_of
from lysep_cli.specs import default_config, load_specs, parse_seeds
from lysep_cli.store import records
from common import finished_runs, report_parser, write_report

EXPERIMENT = "elliptic-2d"
EXPERIMENTS = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")
DEGREES = (0, 1, 2, 3, 4)


def exponents(n: int, k: int) -> np.ndarray:
    """(P, n) exponents of the monomials of total degree <= k in n variables."""
    rows = [np.bincount(c, minlength=n) for t in range(k + 1) for c in combinations_with_replacement(range(n), t)]
    return np.array(rows, dtype=int).reshape(-1, n)


def monomials(X: np.ndarray, k: int) -> np.ndarray:
    """(N, P) values of the degree-<=k monomials at X (n, N)."""
    E = exponents(X.shape[0], k)
    return np.prod(X.T[:, None, :] ** E[None, :, :], axis=2)


def monomial_derivatives(X: np.ndarray, k: int, j: int, order: int) -> np.ndarray:
    """(N, P) d^order/dx_j^order of every degree-<=k monomial at X (n, N)."""
    E = exponents(X.shape[0], k)
    e = E[:, j]
    factor = e.astype(float) if order == 1 else (e * (e - 1)).astype(float)
    lowered = E.copy()
    lowered[:, j] = np.maximum(e - order, 0)
    return factor[None, :] * np.prod(X.T[:, None, :] ** lowered[None, :, :], axis=2)


def projection_error(values: np.ndarray, X: np.ndarray, k: int) -> float:
    """||v - P_k v|| / ||v||, P_k the least-squares projection onto degree-<=k monomials at X."""
    A = monomials(X, k)
    c, *_ = np.linalg.lstsq(A, values, rcond=None)
    return float(np.linalg.norm(values - A @ c) / np.linalg.norm(values))


def best_polynomial(problem, Z_train: np.ndarray, Z_test: np.ndarray, k: int) -> tuple[float, float]:
    """(J, l2) of the degree-<=k phi that minimises J (one least-squares solve on the training set)."""
    coef, f = problem.coefficients(Z_train), problem.rhs(Z_train)
    A = coef.K[:, None] * monomials(Z_train, k)
    for j in range(Z_train.shape[0]):
        A += coef.K1[j][:, None] * monomial_derivatives(Z_train, k, j, 1)
        A += coef.K2[j][:, None] * monomial_derivatives(Z_train, k, j, 2)
    c, *_ = np.linalg.lstsq(A, f, rcond=None)
    R = A @ c - f
    psi = problem.boundary_factor(Z_test) * (monomials(Z_test, k) @ c)
    u = problem.u(Z_test)
    return float(R @ R / R.size), float(np.linalg.norm(psi - u) / np.linalg.norm(u))


def torch_start(params: list, n_in: int, M: int) -> list:
    """PyTorch's nn.Linear default start: the stated draw with the first layer times sqrt(M / n_in)."""
    s = np.sqrt(M / n_in)
    return [(params[0][0] * s, params[0][1] * s)] + params[1:]


def errors(phi: np.ndarray, X: np.ndarray) -> list[float]:
    return [projection_error(phi, X, k) for k in DEGREES]


def fmt(values, digits: int = 2) -> str:
    return " | ".join(f"{v:.{digits}g}" for v in values)


def median_max(rows: list[list[float]]) -> str:
    a = np.array(rows)
    return " | ".join(f"{m:.2g} [{x:.2g}]" for m, x in zip(np.median(a, 0), a.max(0)))


def exact_row(results: Path, spec) -> str:
    """rel(phi*, P_k), k in DEGREES, of one experiment's exact phi* = u / B on its test set."""
    problem = problem_of(spec)
    _, Z_test = records.load_data(results, spec.name)
    phi_star = problem.u(Z_test) / problem.boundary_factor(Z_test)
    cells = [f"{projection_error(phi_star, Z_test, k):.2g}"
             if len(exponents(Z_test.shape[0], k)) <= Z_test.shape[1] // 4 else "—" for k in DEGREES]
    return f"| {spec.name} | " + " | ".join(cells) + " |"


def report(results: Path, seeds_text: str | None) -> str:
    specs = load_specs(default_config())
    spec = specs[EXPERIMENT]
    problem = problem_of(spec)
    Z_train, Z_test = records.load_data(results, EXPERIMENT)
    seeds = parse_seeds(seeds_text, spec) if seeds_text else list(spec.seeds)
    head = " | ".join(f"k = {k}" for k in DEGREES)
    out = [f"# What the 2-D PINN plateau networks compute (`studies/pinn_plateau_phi.py`, {results})", "",
           "phi: the network's output (psi = (|x|^2 - 1) phi); rel(phi, P_k) = ||phi - P_k phi|| / ||phi|| on the "
           f"{Z_test.shape[1]} test points, P_k the least-squares projection onto monomials of total degree <= k. "
           "Per size: median [largest] over the seeds.", "",
           "## The exact phi* = u / B of each experiment", "",
           "rel(phi*, P_k) on the experiment's test set, monomials in the network's inputs (t and x); "
           "— where the monomials outnumber a quarter of the test points.", "",
           f"| experiment | {head} |", "|---|" + "---:|" * len(DEGREES)]
    out += [exact_row(results, specs[name]) for name in EXPERIMENTS]
    out += ["",
           "## The best polynomial phi of degree <= k (one least-squares solve of the residual on the training set)",
           "", f"| | {head} |", "|---|" + "---:|" * len(DEGREES)]
    best = [best_polynomial(problem, Z_train, Z_test, k) for k in DEGREES]
    out += [f"| J | {fmt((b[0] for b in best), 3)} |", f"| test l2 | {fmt((b[1] for b in best), 3)} |", ""]
    out += ["## The archived PINN runs (2000 iterations, stated init) and their seeded starts", "",
            f"| (L,M) | runs | network | J (record) | max \\|W_1 x + b_1\\| | {head} |",
            "|---|---:|---|---:|---:|" + "---:|" * len(DEGREES)]
    for L, M in spec.sizes:
        rows: dict[str, list[list[float]]] = {"trained": [], "start, stated init": [], "start, PyTorch init": []}
        pre: dict[str, list[float]] = {k: [] for k in rows}
        Js = []
        for seed, rec, npz_path in finished_runs(results, spec, "pinn", L, M, seeds):
            Js.append(rec.final.J)
            start = network.init_params(problem.n_in, L, M, seed)
            nets = {"trained": records.load_params(npz_path), "start, stated init": start,
                    "start, PyTorch init": torch_start(start, problem.n_in, M)}
            for name, params in nets.items():
                rows[name].append(errors(network.value(params, Z_test), Z_test))
                W1, b1 = params[0]
                pre[name].append(float(np.abs(W1 @ Z_test + b1[:, None]).max()))
        if not Js:
            continue
        for name, r in rows.items():
            J = f"{np.median(Js):.3g} [{max(Js):.3g}]" if name == "trained" else ""
            out.append(f"| ({L},{M}) | {len(Js)} | {name} | {J} | {np.median(pre[name]):.2g} [{max(pre[name]):.2g}] | "
                       f"{median_max(r)} |")
    return "\n".join(out) + "\n"


def main() -> None:
    p = report_parser(__doc__, "studies/results/pinn_plateau_phi.md")
    p.add_argument("--seeds", default=None, help="e.g. 0-2 (default: the spec's)")
    a = p.parse_args()
    write_report(report(a.results, a.seeds), a.out)


if __name__ == "__main__":
    main()
