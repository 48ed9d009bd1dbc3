"""Shared tiny configs and stub solvers for the foundation tests (specs, runner, tables, CLI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lysep_cli.solvers.base import SolveResult, copy_params

TINY_YAML = """\
experiments:
  elliptic-2d:
    table: 1
    pde: elliptic
    d: 2
    solution: exp-sin
    sizes: [[3, 6], [2, 5]]
    n_train: 60
    n_test: 40
    iterations: 5
    seeds: [0, 1]
    solvers:
      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}
  parabolic-5d:
    table: 3
    pde: parabolic
    d: 2
    sizes: [[3, 5]]
    n_train: 50
    n_test: 30
    iterations: 5
    seeds: [0, 1]
    solvers:
      pinn: {lr: 1.0e-3}
"""


def write_tiny(tmp_path: Path, text: str = TINY_YAML) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


def files_under(root: Path) -> list[str]:
    """Every file below ``root`` as a sorted list of relative paths (temp files included)."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def raising_solver(problem, data, params0, settings, iterations, progress=None):
    """A solver that hits a floating-point error."""
    raise FloatingPointError("overflow in a stub")


def bounded_solver(problem, data, params0, settings, iterations, progress=None):
    """A LySep-like stub: returns J_S, a bound check and a diagnostic in ``extra``."""
    history = [1.0] * (iterations + 1)
    return SolveResult(copy_params(params0), {"J": history, "J_S": [0.5] * (iterations + 1)}, J_S=0.5,
                       extra={"bound": {"factor": 84.0, "violations": 2}, "cond": np.float64(3.0)})


def nonfinite_solver(problem, data, params0, settings, iterations, progress=None):
    """Claims success but returns a NaN network."""
    params = copy_params(params0)
    params[-1][0][...] = np.nan
    return SolveResult(params, {"J": [1.0] * (iterations + 1)})
