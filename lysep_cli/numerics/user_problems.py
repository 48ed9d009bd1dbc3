"""Problems written as data in the experiments file (``problems:``), with the paper's three operators.

    elliptic    div(c grad u) = f            u = 0 on the boundary
    parabolic   u_t - div(c grad u) = Q      u = 0 on the boundary and at t = 0
    hyperbolic  u_tt - div(c grad u) = Q     u = 0 on the boundary, u = u_t = 0 at t = 0   (t in [0, 1])

on the unit d-ball or the box [0, 1]^d.  From the formulas of c(x) and the exact solution u (parsed by
lysep_cli/numerics/expressions.py), sympy derives grad c, grad u, the Laplacian, u_t, u_tt and the
right-hand side, and compiles each to NumPy once per problem; the boundary factor of the box is
prod_i x_i (1 - x_i) (times t, t^2 as for the ball).  :func:`build_problem` also checks, on sampled points,
that c > 0 on the domain and that u meets the boundary and initial conditions (:data:`BC_TOLERANCE`).

sympy (a second and tens of MB to import) and the formula parser are imported where a problem is built,
not with this module: a process that runs only the paper's problems, or prints help, never loads them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

import numpy as np

from lysep_cli.numerics.problems import BoundaryFactor, Problem, SpatialCoefficient
from lysep_cli.numerics.sampling import boundary_points, domain_points

if TYPE_CHECKING:
    import sympy

PDES = ("elliptic", "parabolic", "hyperbolic")
DOMAINS = ("ball", "box")
#: |u| (and |u_t| for the hyperbolic problem) on sampled boundary / initial points, relative to max |u|
#: over points inside the domain, must stay below this
BC_TOLERANCE = 1e-10


@dataclass(frozen=True)
class ProblemSpec:
    """A problem as the experiments file states it (formulas as text)."""

    name: str
    pde: str
    d: int
    c: str
    u: str | None
    domain: str = "ball"
    f: str | None = None
    """the right-hand side, when given instead of u (then no exact solution, no l2 error)"""

    @property
    def time_dependent(self) -> bool:
        return self.pde != "elliptic"

    def identity(self) -> str:
        """The problem's ``solution`` field in run records: its name and a hash of its definition, so a
        record made for other formulas never counts as this problem's."""
        text = json.dumps([self.pde, self.d, self.domain, self.c, self.u] + ([self.f] if self.f else []))
        return f"{self.name}:{hashlib.sha256(text.encode()).hexdigest()[:12]}"


class ProblemError(ValueError):
    """A problem that cannot be built or does not meet its conditions (``field``: which formula)."""

    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field
        self.reason = reason


def _parse(spec: ProblemSpec, field: str, text: str, allowed: dict[str, sympy.Symbol]) -> sympy.Expr:
    from lysep_cli.numerics.expressions import ExpressionError, parse

    try:
        return parse(text, allowed)
    except ExpressionError as exc:
        raise ProblemError(field, str(exc)) from None


@lru_cache(maxsize=16)
def build_problem(spec: ProblemSpec) -> Problem:
    """The :class:`Problem` of ``spec``: formulas differentiated by sympy and compiled; checked."""
    import sympy

    from lysep_cli.numerics.expressions import compile_expression, variables

    time = spec.time_dependent
    names = variables(spec.d, time)
    xs = [names[f"x{i}"] for i in range(1, spec.d + 1)]
    c_spatial = {k: v for k, v in names.items() if k != "t"}
    c = _parse(spec, "c", spec.c, c_spatial)
    order = ([names["t"]] if time else []) + xs  # rows of Z: t first, as everywhere
    grad_c = [sympy.diff(c, x) for x in xs]
    if spec.u is None:
        return _rhs_only(spec, c, grad_c, _parse(spec, "f", spec.f or "", names), xs, order)
    u = _parse(spec, "u", spec.u, names)
    grad_u = [sympy.diff(u, x) for x in xs]
    lap_u = sum(sympy.diff(u, x, 2) for x in xs)
    div = c * lap_u + sum(gc * gu for gc, gu in zip(grad_c, grad_u))
    ut = sympy.diff(u, names["t"]) if time else None
    utt = sympy.diff(u, names["t"], 2) if time else None
    if spec.pde == "elliptic":
        f = div  # `eq:Elliptic equation`
    else:
        f = (ut if spec.pde == "parabolic" else utt) - div  # Q of the parabolic / hyperbolic equation

    def fn(expr: sympy.Expr) -> Callable[[np.ndarray], np.ndarray]:
        return compile_expression(expr, order)

    coefficient = SpatialCoefficient(c=compile_expression(c, xs), grad_c=_stacked(grad_c, xs))
    problem = Problem(spec.name, spec.pde, spec.d, coefficient, fn(u), _stacked(grad_u, order), fn(lap_u),
                      ut=fn(ut) if time else None, utt=fn(utt) if time else None,
                      factor=_box_factor(xs) if spec.domain == "box" else None, source=fn(f), domain=spec.domain)
    _check(spec, problem)
    return problem


def _box_factor(xs: list[sympy.Symbol]) -> BoundaryFactor:
    import sympy

    from lysep_cli.numerics.expressions import compile_expression

    g = sympy.Mul(*[x * (1 - x) for x in xs])
    return BoundaryFactor(compile_expression(g, xs),
                          _stacked([sympy.diff(g, x) for x in xs], xs),
                          compile_expression(sum(sympy.diff(g, x, 2) for x in xs), xs))


def _stacked(exprs: list[sympy.Expr], symbols: list[sympy.Symbol]):
    from lysep_cli.numerics.expressions import compile_expression

    parts = [compile_expression(e, symbols) for e in exprs]
    return lambda Z: np.stack([p(Z) for p in parts])


def _rhs_only(spec: ProblemSpec, c: sympy.Expr, grad_c: list[sympy.Expr], f: sympy.Expr,
              xs: list[sympy.Symbol], order: list[sympy.Symbol]) -> Problem:
    """A problem given by c and its right-hand side: no exact solution (no l2 error); c > 0 checked."""
    from lysep_cli.numerics.expressions import compile_expression

    coefficient = SpatialCoefficient(c=compile_expression(c, xs), grad_c=_stacked(grad_c, xs))
    problem = Problem(spec.name, spec.pde, spec.d, coefficient, None, None, None,  # type: ignore[arg-type]
                      factor=_box_factor(xs) if spec.domain == "box" else None,
                      source=compile_expression(f, order), domain=spec.domain)
    inside = domain_points(512, spec.d, spec.time_dependent, spec.domain)
    with np.errstate(all="ignore"):
        cv, fv = coefficient.c(problem.split(inside)[1]), problem.rhs(inside)
    if not np.all(np.isfinite(cv)) or not np.all(np.isfinite(fv)):
        raise ProblemError("f", "c or f is not finite at some points of the domain")
    if np.any(cv <= 0):
        raise ProblemError("c", f"c(x) must be positive on the domain; it is {float(np.min(cv)):.3g} at some point")
    return problem


def _check(spec: ProblemSpec, problem: Problem) -> None:
    """c > 0 inside the domain; u = 0 on the boundary (and at t = 0; u_t = 0 there when hyperbolic)."""
    inside = domain_points(512, spec.d, spec.time_dependent, spec.domain)
    with np.errstate(all="ignore"):
        c = problem.coefficient.c(problem.split(inside)[1])
        u_in = problem.u(inside)
        if not np.all(np.isfinite(c)) or not np.all(np.isfinite(u_in)):
            raise ProblemError("u", "c or u is not finite at some points of the domain")
        if np.any(c <= 0):
            raise ProblemError("c", f"c(x) must be positive on the domain; it is {float(np.min(c)):.3g} at some point")
        scale = max(float(np.max(np.abs(u_in))), 1e-300)
        where = boundary_points(256, spec.d, spec.time_dependent, spec.domain)
        checks = [("the boundary", problem.u(where))]
        if spec.time_dependent:
            initial = domain_points(256, spec.d, True, spec.domain)
            initial[0] = 0.0
            checks.append(("t = 0", problem.u(initial)))
            if spec.pde == "hyperbolic":
                checks.append(("t = 0 (u_t)", problem.ut(initial)))  # type: ignore[misc]
    for name, values in checks:
        worst = float(np.max(np.abs(values))) / scale
        if not worst <= BC_TOLERANCE:
            raise ProblemError("u", f"the exact solution is not 0 at {name}: |u| / max|u| = {worst:.2g} "
                                    f"(tolerance {BC_TOLERANCE:g})")
