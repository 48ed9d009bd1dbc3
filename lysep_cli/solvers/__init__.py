"""Solver registry: name -> "module:function", imported on first use."""

from __future__ import annotations

from importlib import import_module

from .base import Solver, SolveResult, TrainingData

SOLVERS: dict[str, str] = {
    "pinn": "lysep_cli.solvers.pinn:solve",
    "lysep": "lysep_cli.solvers.lysep:solve",
    "rfls": "lysep_cli.solvers.rfls:solve",
    "pinn-adam": "lysep_cli.solvers.adam:solve",
    "pinn-lbfgs": "lysep_cli.solvers.lbfgs:solve",
    "pinn-lm": "lysep_cli.solvers.lm:solve",
}
PAPER_SOLVERS = ("pinn", "lysep")


def get_solver(name: str) -> Solver:
    """The solve function registered under ``name`` (ValueError for an unknown name)."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; choose from {', '.join(SOLVERS)}")
    module, func = SOLVERS[name].split(":")
    return getattr(import_module(module), func)


__all__ = ["SOLVERS", "PAPER_SOLVERS", "get_solver", "Solver", "SolveResult", "TrainingData"]
