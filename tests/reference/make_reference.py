"""Write tests/reference/solvers.npz: 1 and 4 iterations of every solver on tiny problems.

Run once with the implementation the fixture should pin (it was made with the pre-engine kernels,
commit 4ea83a6):  python tests/reference/make_reference.py
tests/test_reference.py reruns the same cases with today's code and compares (benchmarks/logs/engine-2026-11.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lysep_cli.numerics.network import init_params
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers import get_solver
from lysep_cli.solvers.base import TrainingData

OUT = Path(__file__).with_name("solvers.npz")

# (pde, d, solution) problems; every solver runs on every one.
PROBLEMS = {"e2": ("elliptic", 2, "exp-sin"), "e3": ("elliptic", 3, "sin-radial"),
            "p2": ("parabolic", 2, None), "h2": ("hyperbolic", 2, None)}
SETTINGS = {
    "pinn": {"lr": 1.0e-3, "lr_final": 1.0e-4},
    "lysep": {"step_rule": "backtracking", "tau": 1.0e-8, "weights": "frozen", "w3_b3": "separate"},
    "lysep-through": {"step_rule": "backtracking", "tau": 1.0e-8, "weights": "through", "w3_b3": "joint"},
    "lysep-fixed": {"step_rule": "fixed", "tau": 1.0e-4},
    "rfls": {"rcond": "auto"},
    "pinn-adam": {"lr": 1.0e-2, "lr_final": 1.0e-3},
    "pinn-lbfgs": {"maxcor": 5, "maxfun_per_iteration": 4},
    "pinn-lm": {"max_iterations": 3},
}
ITERATIONS = (1, 4)
N_TRAIN, M = 40, 7


def cases():
    """(name, solver, settings, problem key, L, iterations) for every fixture entry."""
    for pkey in PROBLEMS:
        for label, settings in SETTINGS.items():
            solver = label.split("-")[0] if label.startswith("lysep") else label
            depths = (3,) if solver == "lysep" else (2, 3, 4)
            for L in depths:
                for n in ITERATIONS:
                    yield f"{pkey}/{label}/L{L}/it{n}", solver, settings, pkey, L, n


def run_case(solver: str, settings: dict, pkey: str, L: int, iterations: int):
    pde, d, solution = PROBLEMS[pkey]
    problem = make_problem(pde, d, solution)
    Z, _ = train_test_points(N_TRAIN, 4, d, problem.time_dependent)
    data = TrainingData.build(problem, Z)
    params0 = init_params(problem.n_in, L, M, seed=3)
    with np.errstate(all="ignore"):
        return get_solver(solver)(problem, data, params0, dict(settings), iterations)


def flatten_result(name: str, result) -> dict[str, np.ndarray]:
    out = {f"{name}/J": np.asarray(result.history["J"], float)}
    if "J_S" in result.history:
        out[f"{name}/J_S"] = np.asarray(result.history["J_S"], float)
    for l, (W, b) in enumerate(result.params):
        out[f"{name}/W{l + 1}"], out[f"{name}/b{l + 1}"] = W, b
    return out


def main() -> None:
    import lysep_cli

    print(f"lysep_cli from {lysep_cli.__file__}")
    arrays: dict[str, np.ndarray] = {}
    for name, solver, settings, pkey, L, n in cases():
        arrays.update(flatten_result(name, run_case(solver, settings, pkey, L, n)))
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({len(arrays)} arrays)")


if __name__ == "__main__":
    main()
