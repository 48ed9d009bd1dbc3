"""PINN-GD in 2-D from PyTorch's default start: the J curve, and how far the trained phi is from affine.

Usage: .venv/bin/python studies/pinn_torch_curve.py [--size 3x30] [--seeds 0-2] [--results results/paper]
           [--out studies/results/pinn_torch_curve_e2d.md]

Reruns, for the chosen seeds, the elliptic-2d PINN run of studies/pinn_ablations.py part (a) (nn.Linear's
default start, the spec's step 1e-2 -> 1e-3, 2000 iterations; its final J beside that file's CSV, made
with earlier kernels), and prints J every 100 iterations, the first layer's largest pre-activation and the distance of the
trained phi from the best affine phi on the test set (studies/pinn_plateau_phi.py's measure), beside
the archived run of the stated start (same seed).  About 20 CPU s per run at (3,30).

Backs: README headline; studies/explanations.md (a): PINN's J curve from PyTorch's default start.
Regenerate: make studies STUDIES=pinn_torch_curve -> studies/results/pinn_torch_curve_e2d.md
    (studies/run.py holds the commands).
Cost: ~1 CPU-minute.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import csv
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers import solver_def
from lysep_cli.solvers.base import initial_network
from lysep_cli.specs import default_config, load_specs, parse_seeds, parse_sizes
from lysep_cli.store import records
from common import report_parser, write_report
from pinn_plateau_phi import projection_error

EXPERIMENT = "elliptic-2d"
CSV = Path(__file__).parent / "results" / "pinn_ablations.csv"
EVERY = 100


def affine_gap(params: network.Params, Z_test: np.ndarray) -> tuple[float, float]:
    """(||phi - P_1 phi|| / ||phi||, max |W_1 x + b_1|) on the test points."""
    W1, b1 = params[0]
    return (projection_error(network.value(params, Z_test), Z_test, 1),
            float(np.abs(W1 @ Z_test + b1[:, None]).max()))


def ablation_J(L: int, M: int, seed: int, lr: float) -> float | None:
    """The final J of the matching torch-init run in pinn_ablations.csv, None when absent."""
    with CSV.open(newline="") as f:
        for r in csv.DictReader(f):
            if (r["experiment"], int(r["L"]), int(r["M"]), int(r["seed"]), r["init"], float(r["lr"])) == \
                    (EXPERIMENT, L, M, seed, "torch", lr) and r["J"]:
                return float(r["J"])
    return None


def report(results: Path, size: str, seeds_text: str) -> str:
    spec = load_specs(default_config())[EXPERIMENT]
    (L, M), = parse_sizes(size, spec)
    data = experiment_data(spec)
    settings = spec.solvers["pinn"]
    torch = settings.replace(init="torch")  # the spec's PINN with nn.Linear's default start
    out = [f"# PINN-GD from PyTorch's default start, {EXPERIMENT} ({L},{M}) (`studies/pinn_torch_curve.py`)", "",
           f"Step {settings.lr:g} -> {settings.lr_final:g} (the spec's), {spec.iterations} iterations. J every "
           f"{EVERY} iterations; gap to affine: ||phi - P_1 phi|| / ||phi|| on the test set; pre-act.: max "
           "|W_1 x + b_1| there. Stated start: the archived run of the same seed.", ""]
    for seed in parse_seeds(seeds_text, spec):
        params0 = initial_network(torch, data.problem.n_in, L, M, seed)
        with threadpool_limits(limits=1), np.errstate(all="ignore"):
            res = solver_def("pinn").solve(data.problem, data.training, params0, torch, spec.iterations)
        J = np.array([np.nan if x is None else x for x in res.history["J"]], dtype=float)
        final = network.pinn_loss(res.params, data.training.Z, data.training.coef, data.training.Y)
        json_path, npz_path = records.record_paths(results, EXPERIMENT, "pinn", L, M, seed)
        stated = records.read_record(json_path)
        stated_J = np.array([np.nan if x is None else x for x in stated.history["J"]], dtype=float)
        ref = ablation_J(L, M, seed, settings.lr)
        out += [f"## seed {seed}: final J {final:.4g} (pinn_ablations.csv: "
                + (f"{ref:.4g}, relative difference {abs(ref - final) / ref:.1g}" if ref is not None else "no row")
                + f"); stated start: {stated.final.J:.4g}", "",
                "| start | gap to affine at 0 | at the end | pre-act. at 0 | at the end |", "|---|---:|---:|---:|---:|"]
        for name, p0, p1 in (("PyTorch", params0, res.params),
                             ("stated", network.init_params(data.problem.n_in, L, M, seed), records.load_params(npz_path))):
            (g0, a0), (g1, a1) = affine_gap(p0, data.Z_test), affine_gap(p1, data.Z_test)
            out.append(f"| {name} | {g0:.2g} | {g1:.2g} | {a0:.2g} | {a1:.2g} |")
        ks = list(range(0, len(J), EVERY))
        out += ["", "| iteration | " + " | ".join(str(k) for k in ks) + " |", "|---|" + "---:|" * len(ks),
                "| J, PyTorch start | " + " | ".join(f"{J[k]:.3g}" for k in ks) + " |",
                "| J, stated start | " + " | ".join(f"{stated_J[k]:.3g}" for k in ks) + " |", ""]
    return "\n".join(out) + "\n"


def main() -> None:
    p = report_parser(__doc__, "studies/results/pinn_torch_curve_e2d.md")
    p.add_argument("--size", default="3x30")
    p.add_argument("--seeds", default="0-2")
    a = p.parse_args()
    write_report(report(a.results, a.size, a.seeds), a.out)


if __name__ == "__main__":
    main()
