"""The four PDE problems of Section 4, with closed-form data and operator coefficients.

Points are stored as the paper's matrices: ``Z`` has shape ``(n_in, N)``, one column per sample.
For the elliptic problems ``Z = X`` (``n_in = d``); for the time-dependent ones ``Z = X_T = [T_0; X]``
(``n_in = d + 1``, row 0 is ``t = x_0``).

Every problem's PINN residual is written in one form (`eq:Phi` and its analogues in Section 3)::

    R = K * phi + sum_j K1[j] * d_j phi + sum_j K2[j] * d_jj phi - Y

where ``j`` runs over the network inputs (``t`` included) and the signs of the time-dependent
operators (`eq:PINN-P`, `eq:PINN-H`) are folded into ``K1`` and ``K2``.  ``K2[j]`` is identically zero
for inputs without a second derivative (``t`` in the parabolic case).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

PDEType = Literal["elliptic", "parabolic", "hyperbolic"]


@dataclass(frozen=True)
class OperatorCoefficients:
    """Coefficients of the residual in terms of the channels of phi.

    Attributes
    ----------
    K : (N,) coefficient of phi.
    K1 : (n_in, N) coefficients of d_j phi.
    K2 : (n_in, N) coefficients of d_jj phi (zero rows for channels without a second derivative).
    second : (n_in,) bool, which channels carry a second derivative (the q_j of LySep).
    """

    K: np.ndarray
    K1: np.ndarray
    K2: np.ndarray
    second: np.ndarray


@dataclass(frozen=True)
class SpatialCoefficient:
    """c(x) with its gradient; x has shape (d, N)."""

    c: Callable[[np.ndarray], np.ndarray]
    grad_c: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class BoundaryFactor:
    """g(x) that vanishes on the boundary of the domain, with its gradient (d, N) and Laplacian (N,); x (d, N).
    The ball's g = |x|^2 - 1 is built in (:class:`Problem` with ``factor=None``)."""

    g: Callable[[np.ndarray], np.ndarray]
    grad_g: Callable[[np.ndarray], np.ndarray]
    lap_g: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Problem:
    """One PDE on the unit d-ball (Section 4) or another domain (times [0, 1] for time-dependent PDEs).

    ``u``, ``grad_u``, ``lap_u`` give the exact solution u(Z) (N,), its spatial gradient (d, N) and
    spatial Laplacian (N,); ``ut`` and ``utt`` its time derivatives (time-dependent problems).
    ``factor``: the domain's g (None: the unit ball, g = |x|^2 - 1); ``source``: the right-hand side when
    given as a formula (problems written in the experiments file), else derived from u and c.
    """

    name: str
    pde: PDEType
    d: int
    coefficient: SpatialCoefficient
    u: Callable[[np.ndarray], np.ndarray] | None
    """None for a problem given by its right-hand side alone (then ``source`` is set, and no l2 error)"""
    grad_u: Callable[[np.ndarray], np.ndarray] | None
    lap_u: Callable[[np.ndarray], np.ndarray] | None
    ut: Callable[[np.ndarray], np.ndarray] | None = None
    utt: Callable[[np.ndarray], np.ndarray] | None = None
    factor: BoundaryFactor | None = None
    source: Callable[[np.ndarray], np.ndarray] | None = None
    domain: str = "ball"

    @property
    def time_dependent(self) -> bool:
        return self.pde != "elliptic"

    @property
    def n_in(self) -> int:
        """Number of network inputs: d, or d + 1 with time."""
        return self.d + 1 if self.time_dependent else self.d

    def split(self, Z: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """Return (t (N,) or None, x (d, N))."""
        if self.time_dependent:
            return Z[0], Z[1:]
        return None, Z

    def div_c_grad_u(self, Z: np.ndarray) -> np.ndarray:
        """div(c grad u) = c * lap u + grad c . grad u, shape (N,)."""
        _, x = self.split(Z)
        return self.coefficient.c(x) * self.lap_u(Z) + np.sum(self.coefficient.grad_c(x) * self.grad_u(Z), axis=0)

    def rhs(self, Z: np.ndarray) -> np.ndarray:
        """Data Y: f of `eq:Elliptic equation`, or Q of `eq:Parabolic equation` / `eq:Hyperbolic equation`."""
        if self.source is not None:
            return self.source(Z)
        if self.pde == "elliptic":
            return self.div_c_grad_u(Z)
        if self.pde == "parabolic":
            return self.ut(Z) - self.div_c_grad_u(Z)
        return self.utt(Z) - self.div_c_grad_u(Z)

    def boundary_factor(self, Z: np.ndarray) -> np.ndarray:
        """The factor that makes psi = factor * phi meet the boundary/initial conditions, shape (N,).

        (|x|^2 - 1) in `eq:FNN-E`, t (|x|^2 - 1) in `eq:FNN-P`, t^2 (|x|^2 - 1) in `eq:FNN-H`
        (docs/paper-notes.md: `eq:J-hyberbolic` writes T_0 where T-hat_0 = t^2 is meant).
        """
        t, x = self.split(Z)
        g = np.sum(x * x, axis=0) - 1.0 if self.factor is None else self.factor.g(x)
        if self.pde == "elliptic":
            return g
        if self.pde == "parabolic":
            return t * g
        return t * t * g

    def coefficients(self, Z: np.ndarray) -> OperatorCoefficients:
        """K, K1, K2 of the residual at the points Z (n_in, N)."""
        t, x = self.split(Z)
        d = self.d
        c = self.coefficient.c(x)
        grad_c = self.coefficient.grad_c(x)
        if self.factor is None:  # the ball: g = |x|^2 - 1, grad g = 2x, lap g = 2d
            X_hat = np.sum(x * x, axis=0)
            g = X_hat - 1.0
            # Elliptic coefficients of `eq:Phi`.
            K_e = 2.0 * (d * c + np.sum(x * grad_c, axis=0))
            K_e_i = 4.0 * x * c + grad_c * g  # (d, N)
        else:  # div(c grad(g phi)) = (c lap g + grad c . grad g) phi + (2c grad g + g grad c) . grad phi + c g lap phi
            g, grad_g = self.factor.g(x), self.factor.grad_g(x)
            K_e = c * self.factor.lap_g(x) + np.sum(grad_c * grad_g, axis=0)
            K_e_i = 2.0 * c * grad_g + g * grad_c
        K_e_hat = c * g
        n = Z.shape[1]
        if self.pde == "elliptic":
            second = np.ones(d, dtype=bool)
            return OperatorCoefficients(K_e, K_e_i, np.tile(K_e_hat, (d, 1)), second)
        K1 = np.empty((d + 1, n))
        K2 = np.zeros((d + 1, n))
        second = np.ones(d + 1, dtype=bool)
        if self.pde == "parabolic":
            # K^p, K^p_0, K^p_i, K-hat^p under `eq:Js-parabolic`; spatial terms enter with a minus sign.
            K = g - t * K_e
            K1[0] = t * g
            K1[1:] = -t * K_e_i
            K2[1:] = -t * K_e_hat
            second[0] = False
        else:
            # K^h, K^h_0, K-hat^h_0, K^h_i, K-hat^h_i under `eq:Js-hyberbolic`.
            T_hat = t * t
            K = 2.0 * g - T_hat * K_e
            K1[0] = 4.0 * t * g
            K2[0] = T_hat * g
            K1[1:] = -T_hat * K_e_i
            K2[1:] = -T_hat * K_e_hat
        return OperatorCoefficients(K, K1, K2, second)


# ----------------------------------------------------------------------------------------------
# The four problems of Section 4.


def _elliptic_2d() -> Problem:
    """u = (exp(|x|^2 - 1) - 1)(sin x1 + sin x2), c = |x|^2 (Section 4.1.1)."""

    def u(x: np.ndarray) -> np.ndarray:
        return (np.exp(np.sum(x * x, 0) - 1.0) - 1.0) * np.sum(np.sin(x), 0)

    def grad_u(x: np.ndarray) -> np.ndarray:
        E = np.exp(np.sum(x * x, 0) - 1.0)
        s = np.sum(np.sin(x), 0)
        return 2.0 * x * E * s + (E - 1.0) * np.cos(x)

    def lap_u(x: np.ndarray) -> np.ndarray:
        E = np.exp(np.sum(x * x, 0) - 1.0)
        s = np.sum(np.sin(x), 0)
        d_ii = E * s * (2.0 + 4.0 * x * x) + 4.0 * x * E * np.cos(x) - (E - 1.0) * np.sin(x)
        return np.sum(d_ii, 0)

    coef = SpatialCoefficient(c=lambda x: np.sum(x * x, 0), grad_c=lambda x: 2.0 * x)
    return Problem("elliptic-2d", "elliptic", 2, coef, u, grad_u, lap_u)


def _elliptic_10d(d: int = 10) -> Problem:
    """u = sin((|x|^2 - 1)/d), c = |x|^2 / d (Section 4.1.2)."""

    def u(x: np.ndarray) -> np.ndarray:
        return np.sin((np.sum(x * x, 0) - 1.0) / d)

    def grad_u(x: np.ndarray) -> np.ndarray:
        return np.cos((np.sum(x * x, 0) - 1.0) / d) * 2.0 * x / d

    def lap_u(x: np.ndarray) -> np.ndarray:
        r2 = np.sum(x * x, 0)
        s = (r2 - 1.0) / d
        return -np.sin(s) * 4.0 * r2 / d**2 + np.cos(s) * 2.0

    coef = SpatialCoefficient(c=lambda x: np.sum(x * x, 0) / d, grad_c=lambda x: 2.0 * x / d)
    return Problem(f"elliptic-{d}d", "elliptic", d, coef, u, grad_u, lap_u)


def _time_dependent(pde: PDEType, d: int = 5) -> Problem:
    """u = T(t) sin((|x|^2-1)/d) sum_i cos(x_i/sqrt d), c = sum_i x_i / d + 2 (Sections 4.2, 4.3).

    T(t) = exp(-t/d) - 1 (parabolic) or exp(-t^2/d) - 1 (hyperbolic).
    """
    rd = np.sqrt(d)

    def T(t: np.ndarray) -> np.ndarray:
        return np.exp(-t / d) - 1.0 if pde == "parabolic" else np.exp(-t * t / d) - 1.0

    def T_t(t: np.ndarray) -> np.ndarray:
        return -np.exp(-t / d) / d if pde == "parabolic" else -2.0 * t / d * np.exp(-t * t / d)

    def T_tt(t: np.ndarray) -> np.ndarray:
        return (-2.0 / d + 4.0 * t * t / d**2) * np.exp(-t * t / d)

    def parts(x: np.ndarray):
        r2 = np.sum(x * x, 0)
        s = (r2 - 1.0) / d
        S, C = np.sin(s), np.sum(np.cos(x / rd), 0)
        grad_S = np.cos(s) * 2.0 * x / d
        grad_C = -np.sin(x / rd) / rd
        lap_S = -np.sin(s) * 4.0 * r2 / d**2 + 2.0 * np.cos(s)
        lap_C = -C / d
        return S, C, grad_S, grad_C, lap_S, lap_C

    def v(x: np.ndarray) -> np.ndarray:
        S, C, *_ = parts(x)
        return S * C

    def u(Z: np.ndarray) -> np.ndarray:
        return T(Z[0]) * v(Z[1:])

    def grad_u(Z: np.ndarray) -> np.ndarray:
        S, C, gS, gC, _, _ = parts(Z[1:])
        return T(Z[0]) * (C * gS + S * gC)

    def lap_u(Z: np.ndarray) -> np.ndarray:
        S, C, gS, gC, lS, lC = parts(Z[1:])
        return T(Z[0]) * (C * lS + 2.0 * np.sum(gS * gC, 0) + S * lC)

    coef = SpatialCoefficient(c=lambda x: np.sum(x, 0) / d + 2.0, grad_c=lambda x: np.full_like(x, 1.0 / d))
    return Problem(
        f"{pde}-{d}d", pde, d, coef, u, grad_u, lap_u,
        ut=lambda Z: T_t(Z[0]) * v(Z[1:]),
        utt=lambda Z: T_tt(Z[0]) * v(Z[1:]),
    )


def make_problem(pde: PDEType, d: int, solution: str | None = None) -> Problem:
    """Build the problem of Section 4 for this PDE type and dimension.

    The elliptic problem has two solutions in the paper: the 2-D one (``solution="exp-sin"``) and the
    high-dimensional one (``solution="sin-radial"``, any d).  The default picks by d as the paper does.
    """
    if pde == "elliptic":
        if solution is None:
            solution = "exp-sin" if d == 2 else "sin-radial"
        if solution == "exp-sin":
            if d != 2:
                raise ValueError("the exp-sin elliptic solution of Section 4.1.1 is defined for d = 2 only")
            return _elliptic_2d()
        if solution == "sin-radial":
            return _elliptic_10d(d)
        raise ValueError(f"unknown elliptic solution {solution!r} (exp-sin | sin-radial)")
    if pde in ("parabolic", "hyperbolic"):
        return _time_dependent(pde, d)
    raise ValueError(f"unknown PDE type {pde!r} (elliptic | parabolic | hyperbolic)")
