"""Solver registry: name -> module (with ``Settings`` and ``solve``), imported on first use.

An entry is "package.module" (the function ``solve``) or "package.module:function"; the settings class
is the function's ``Settings`` attribute if it has one (varpro: one module, a settings class per ``hidden``
method), else the module's ``Settings``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable

from lysep_cli.numerics.network import Params, pinn_loss
from lysep_cli.solvers.base import Capabilities, Solver, SolverDef, SolveResult, TrainingData
from lysep_cli.solvers.settings import SettingsError, SolverSettings

SOLVERS: dict[str, str] = {
    "pinn": "lysep_cli.solvers.pinn",
    "lysep": "lysep_cli.solvers.lysep.algorithm",
    "rfls": "lysep_cli.solvers.rfls",
    "rfm": "lysep_cli.solvers.rfm",
    "poly": "lysep_cli.solvers.poly",
    "pinn-adam": "lysep_cli.solvers.adam",
    "pinn-lbfgs": "lysep_cli.solvers.lbfgs",
    "pinn-lm": "lysep_cli.solvers.lm",
    "varpro-lm": "lysep_cli.solvers.varpro:solve_lm",
    "varpro-lbfgs": "lysep_cli.solvers.varpro:solve_lbfgs",
    "varpro-gd": "lysep_cli.solvers.varpro:solve_gd",
}
PAPER_SOLVERS = ("pinn", "lysep")


def solver_def(name: str) -> SolverDef:
    """The solver registered under ``name`` (ValueError for an unknown name)."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; choose from {', '.join(SOLVERS)}")
    module_name, _, func = SOLVERS[name].partition(":")
    module = import_module(module_name)
    solve = getattr(module, func or "solve")
    return SolverDef(name, getattr(solve, "Settings", module.Settings), solve,
                     getattr(module, "CAPABILITIES", Capabilities()))


def seeds_of(name: str, seeds: list[int] | tuple[int, ...]) -> list[int]:
    """The seeds solver ``name`` is run with: ``seeds``, or the first of them for a solver whose run does not
    depend on the seed (``Capabilities.seed_free``: poly)."""
    return list(seeds[:1]) if solver_def(name).capabilities.seed_free else list(seeds)


def stacks(name: str) -> bool:
    """Whether solver ``name`` trains a cell's seeds in one stack on a stacked device (``Capabilities.stacks``)."""
    return bool(solver_def(name).capabilities.stacks)


def stacked_solver(name: str) -> Callable[..., list[SolveResult]]:
    """The solve of solver ``name`` that trains S seeds in one stack (``Capabilities.stacks``, imported on first
    use); ValueError for a solver that does not stack."""
    entry = solver_def(name).capabilities.stacks
    if not entry:
        raise ValueError(f"solver {name!r} does not stack seeds")
    module_name, _, func = entry.partition(":")
    return getattr(import_module(module_name), func)


def first_values(name: str, data: TrainingData, params0: Params, settings: Any) -> dict[str, float]:
    """The values a run of solver ``name`` from the seeded network ``params0`` begins its histories with
    (``Capabilities.first_values``; by default {"J": the PINN loss of params0}); ``settings`` a mapping or
    the solver's Settings."""
    entry = solver_def(name).capabilities.first_values
    if not entry:
        return {"J": pinn_loss(params0, data.Z, data.coef, data.Y)}
    module_name, _, func = entry.partition(":")
    return getattr(import_module(module_name), func)(data, params0, settings)


def get_solver(name: str) -> Solver:
    """The solve function registered under ``name`` (ValueError for an unknown name)."""
    return solver_def(name).solve


__all__ = ["SOLVERS", "PAPER_SOLVERS", "first_values", "get_solver", "seeds_of", "solver_def", "stacked_solver", "stacks", "Solver",
           "SolverDef", "SolveResult",
           "SettingsError", "SolverSettings", "TrainingData"]
