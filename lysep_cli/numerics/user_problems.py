"""Problems written as data in the experiments file (``problems:``), with the paper's three operators.

    elliptic    div(c grad u) = f            u = 0 on the boundary
    parabolic   u_t - div(c grad u) = Q      u = 0 on the boundary and at t = 0
    hyperbolic  u_tt - div(c grad u) = Q     u = 0 on the boundary, u = u_t = 0 at t = 0   (t in [0, 1])

on the unit d-ball or the box [0, 1]^d.  From the formulas of c(x) and the exact solution u (parsed by
lysep_cli/numerics/expressions.py), sympy derives grad c, grad u, the Laplacian, u_t, u_tt and the
right-hand side, and compiles each to NumPy once per problem; the boundary factor of the box is
prod_i x_i (1 - x_i) (times t, t^2 as for the ball).

What is accepted (docs/your-pde.md), each refusal a :class:`ProblemError` naming the field and the reason:
every derived expression NumPy can evaluate as a real number (expressions.refusal), and, at the check
points (:func:`check_points`: the centre, :data:`CHECK_HALTON` Halton points, a grid of at most
:data:`GRID_POINTS` points; and, by :func:`check_values` from the data set, the experiment's training and
test points), every derived function finite and real, c > 0 (c >= 0 at the centre and the grid: the
paper's c = |x|^2 of Table 1 is 0 at the centre), u not 0 everywhere; u meets the boundary and initial
conditions on sampled points (:data:`BC_TOLERANCE`).

sympy (a second and tens of MB to import) and the formula parser are imported where a problem is built,
not with this module: a process that runs only the paper's problems, or prints help, never loads them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from dataclasses import field as _field
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
#: over the check points, must stay below this
BC_TOLERANCE = 1e-10
#: Halton points of the domain among the check points (besides the centre and the grid)
CHECK_HALTON = 512
#: the most points of the check grid: k points per axis of (t, x), k the largest odd number with
#: k^(d + time) <= GRID_POINTS (k = 255 for d = 2, 39 for d = 3, 3 for d = 10; none from d = 11 on)
GRID_POINTS = 2**16
#: max |u| and max |f| (Q) over the check points must lie in [1 / SCALE_LIMIT, SCALE_LIMIT] (f may be 0):
#: J, a mean of squared residuals, is of order max|f|^2 and the l2 error divides by the root of a sum of
#: u^2, both in double precision (1e-308 ... 1e308). At u = 1e-160 g the sum of u^2 underflowed and every run
#: "diverged" with l2 = inf; at 1e154 g J overflowed at iteration 0; 1e100 leaves 10^100 either side.
SCALE_LIMIT = 1e100


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
    config: str = _field(default="", compare=False)
    """the file that states the problem (for messages; not part of the problem)"""

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
    """The :class:`Problem` of ``spec``: formulas differentiated by sympy, checked, compiled; checked at
    :func:`check_points`."""
    import sympy

    from lysep_cli.numerics.expressions import compile_expression, derivative_size, variables

    time = spec.time_dependent
    names = variables(spec.d, time)
    xs = [names[f"x{i}"] for i in range(1, spec.d + 1)]
    c = _parse(spec, "c", spec.c, {k: v for k, v in names.items() if k != "t"})
    order = ([names["t"]] if time else []) + xs  # rows of Z: t first, as everywhere
    _bounded("c", "first", sum(derivative_size(c, x, 1) for x in xs))
    grad_c = [sympy.diff(c, x) for x in xs]
    _refuse("c", [("c", c)] + [(f"dc/d{x}", g) for x, g in zip(xs, grad_c)])
    coefficient = SpatialCoefficient(c=compile_expression(c, xs), grad_c=_stacked(grad_c, xs))
    factor = _box_factor(xs) if spec.domain == "box" else None
    if spec.u is None:
        f = _parse(spec, "f", spec.f or "", names)
        _refuse("f", [("f", f)])
        problem = Problem(spec.name, spec.pde, spec.d, coefficient, None, None, None,  # type: ignore[arg-type]
                          factor=factor, source=compile_expression(f, order), domain=spec.domain)
        check_values(spec, problem, check_points(spec))
        return problem
    u = _parse(spec, "u", spec.u, names)
    _bounded("u", "second", sum(derivative_size(u, x) for x in order))
    grad_u = [sympy.diff(u, x) for x in xs]
    _refuse("u", [("u", u)] + [(f"du/d{x}", g) for x, g in zip(xs, grad_u)])
    lap_u = sum(sympy.diff(u, x, 2) for x in xs)
    div = c * lap_u + sum(gc * gu for gc, gu in zip(grad_c, grad_u))
    ut = sympy.diff(u, names["t"]) if time else None
    utt = sympy.diff(u, names["t"], 2) if spec.pde == "hyperbolic" else None
    if spec.pde == "elliptic":
        f = div  # `eq:Elliptic equation`
    else:
        f = (ut if spec.pde == "parabolic" else utt) - div  # Q of the parabolic / hyperbolic equation
    _refuse("u", [("the Laplacian of u", lap_u), ("u_t", ut), ("u_tt", utt), (RHS[spec.pde], f)])

    def fn(expr: sympy.Expr) -> Callable[[np.ndarray], np.ndarray]:
        return compile_expression(expr, order)

    problem = Problem(spec.name, spec.pde, spec.d, coefficient, fn(u), _stacked(grad_u, order), fn(lap_u),
                      ut=fn(ut) if ut is not None else None, utt=fn(utt) if utt is not None else None,
                      factor=factor, source=fn(f), domain=spec.domain)
    scale = check_values(spec, problem, check_points(spec))
    _check_conditions(spec, problem, scale)
    return problem


#: the right-hand side derived from c and u, as messages name it
RHS = {"elliptic": "f = div(c grad u)", "parabolic": "Q = u_t - div(c grad u)",
       "hyperbolic": "Q = u_tt - div(c grad u)"}


def _bounded(field: str, which: str, nodes: int) -> None:
    """ProblemError when the derivatives of a formula would be too large to derive and evaluate."""
    from lysep_cli.numerics.expressions import MAX_DERIVATIVE_NODES

    if nodes > MAX_DERIVATIVE_NODES:
        raise ProblemError(field, f"{field}'s {which} derivatives would hold about {nodes:,} nodes, beyond "
                                  f"{MAX_DERIVATIVE_NODES:,} (sympy would take minutes: a product of n factors "
                                  "has n terms of n factors in its first derivative, n^2/2 in its second)")


def _refuse(field: str, exprs: list[tuple[str, sympy.Expr | None]]) -> None:
    """ProblemError for the first expression NumPy cannot evaluate as a real number."""
    from lysep_cli.numerics.expressions import refusal

    for label, expr in exprs:
        reason = None if expr is None else refusal(expr)
        if reason is not None:
            raise ProblemError(field, f"{label} {reason}")


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


#: a set of points to check at: its name in messages, Z (n_in, N), and whether c > 0 is required there
#: (else c >= 0: c may vanish at the centre and the grid, as the paper's c = |x|^2 does at 0)
PointSet = tuple[str, np.ndarray, bool]


def check_points(spec: ProblemSpec) -> list[PointSet]:
    """The points every problem is checked at: the centre of the domain (at t = 0, 1/2, 1), CHECK_HALTON
    Halton points, the grid (:data:`GRID_POINTS`)."""
    time, n = spec.time_dependent, spec.d + int(spec.time_dependent)
    mid = 0.0 if spec.domain == "ball" else 0.5
    centre = np.full((n, 3 if time else 1), mid)
    if time:
        centre[0] = (0.0, 0.5, 1.0)
    sets = [("the centre", centre, False),
            ("Halton check point", domain_points(CHECK_HALTON, spec.d, time, spec.domain), True)]
    k = int(GRID_POINTS ** (1 / n) + 1e-9)
    k -= 1 - k % 2  # odd: the grid holds the centre
    if k >= 3:
        axes = [np.linspace(0.0, 1.0, k)] * int(time) + [np.linspace(2 * mid - 1, 1.0, k)] * spec.d
        grid = np.stack(np.meshgrid(*axes, indexing="ij")).reshape(n, -1)
        inside = np.sum(grid[int(time):] ** 2, axis=0) <= 1.0 if spec.domain == "ball" else slice(None)
        sets.append(("grid point", grid[:, inside], False))
    return sets


def _functions(spec: ProblemSpec, problem: Problem) -> list[tuple[str, str, Callable[[np.ndarray], np.ndarray]]]:
    """(field, name in messages, function of Z (n_in, N)) of every function derived from the formulas."""
    def spatial(g: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
        return lambda Z: g(problem.split(Z)[1])

    out = [("c", "c", spatial(problem.coefficient.c)), ("c", "grad c", spatial(problem.coefficient.grad_c))]
    if problem.u is None:
        return out + [("f", "f", problem.rhs)]
    out += [("u", "u", problem.u), ("u", "grad u", problem.grad_u), ("u", "the Laplacian of u", problem.lap_u)]
    out += [("u", name, g) for name, g in (("u_t", problem.ut), ("u_tt", problem.utt)) if g is not None]
    return out + [("u", RHS[spec.pde], problem.rhs)]


def _at(kind: str, Z: np.ndarray, j: int, time: bool) -> str:
    """'training point 17 (t = 0.5, x = (0, -0.333))': point j of a set, for messages."""
    x = Z[int(time):, j]
    coords = ", ".join(f"{v:.3g}" for v in x[:4]) + (", ..." if len(x) > 4 else "")
    when = f"t = {Z[0, j]:.3g}, " if time else ""
    return f"{kind}{'' if Z.shape[1] == 1 else f' {j}'} ({when}x = ({coords}))"


def check_values(spec: ProblemSpec, problem: Problem, sets: list[PointSet]) -> float:
    """ProblemError unless, at every point of ``sets``, every derived function is finite and real and c > 0
    (c >= 0 where the set says so); and, with an exact solution, unless u is nonzero at one of them; and
    unless max |u| and max |f| (Q; when not 0) lie within :data:`SCALE_LIMIT` of 1 either way.
    Returns max |u| over the points (0.0 without u)."""
    time, sizes = spec.time_dependent, {}
    with np.errstate(all="ignore"):
        for field, name, g in _functions(spec, problem):
            for kind, Z, strict in sets:
                try:
                    values = g(Z)
                except (ArithmeticError, ValueError, TypeError, NameError) as exc:
                    raise ProblemError(field, f"{name} cannot be evaluated as a real number: {exc}") from None
                bad = ~np.isfinite(values) if values.ndim == 1 else ~np.all(np.isfinite(values), axis=0)
                if bad.any():
                    j = int(np.argmax(bad))
                    raise ProblemError(field, f"{name} is not finite at {_at(kind, Z, j, time)}")
                if name == "c" and np.any(values <= 0 if strict else values < 0):
                    j = int(np.argmin(values))
                    raise ProblemError("c", f"c(x) must be positive on the domain; it is {values[j]:.3g} at "
                                            f"{_at(kind, Z, j, time)} (checked: c > 0 at the training, test "
                                            "and Halton points, c >= 0 at the centre and a grid; docs/your-pde.md)")
                if name in ("u", "f", RHS[spec.pde]):
                    sizes[name] = max(sizes.get(name, 0.0), float(np.max(np.abs(values))))
    scale = sizes.get("u", 0.0)
    if problem.u is not None and scale == 0.0:
        raise ProblemError("u", "u is 0 at every check point: u = 0 solves nothing (its right-hand side is 0 "
                                "and its relative l2 error undefined)")
    for name, size in sizes.items():
        if size != 0.0 and not 1 / SCALE_LIMIT <= size <= SCALE_LIMIT:
            field = "f" if problem.u is None else "u"
            raise ProblemError(field, f"max|{name.split(' =')[0]}| over the check points is {size:.3g}, outside "
                                      f"{1 / SCALE_LIMIT:g} ... {SCALE_LIMIT:g}: the loss (of order max|f|^2) and the "
                                      "l2 error (a sum of u^2) would underflow or overflow in double precision; "
                                      f"divide {field} by {size:.3g} (the same equation, scaled)")
    return scale


def _check_conditions(spec: ProblemSpec, problem: Problem, scale: float) -> None:
    """u = 0 on the boundary and at t = 0 (u_t = 0 there when hyperbolic), relative to ``scale`` = max |u|."""
    where = boundary_points(256, spec.d, spec.time_dependent, spec.domain)
    with np.errstate(all="ignore"):
        checks = [("the boundary", "|u|", problem.u(where))]  # type: ignore[misc]
        if spec.time_dependent:
            initial = domain_points(256, spec.d, True, spec.domain)
            initial[0] = 0.0
            checks.append(("t = 0", "|u|", problem.u(initial)))  # type: ignore[misc]
            if spec.pde == "hyperbolic":
                checks.append(("t = 0", "|u_t|", problem.ut(initial)))  # type: ignore[misc]
    for name, label, values in checks:
        worst = float(np.max(np.abs(values))) / scale
        if not worst <= BC_TOLERANCE:
            what = "its time derivative u_t" if label == "|u_t|" else "the exact solution"
            raise ProblemError("u", f"{what} is not 0 at {name}: {label} / max|u| = {worst:.2g} "
                                    f"(tolerance {BC_TOLERANCE:g})")
