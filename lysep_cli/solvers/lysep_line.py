"""J_S along a search direction: the trials of one block's step without recomputing its constraint groups.

A gradient step on block x tries J_S(x - t g) for one or more t (Armijo backtracking: two trials per
block per sweep in steady state).  For every block but a_1 and W_1, J_S(x - t g) is a polynomial in t
per sample, or needs only (M, N) work, once a few images of g are known:

    W_2:  e_a2, e_d2, e_q are linear in W_2:  e(t) = e - t De, De = the layer map of g (`eq:var_a` ..).
          ||W_2 - t g||^2 is quadratic.  No GEMM per trial.
    d_1:  e_d1(t) = e_d1 + t g,  e_d2(t) = e_d2 - t W_2(sigma'(a_1) g),
          e_q(t) = e_q - 2t W_2(sigma''(a_1) d_1 g) + t^2 W_2(sigma''(a_1) g^2)  (j in S),
          n1(t) = ||d_1 - t g||^2 per sample.
    d_2:  e_d2(t) = e_d2 + t g; with U, V the sums of B (channels.fit_matrix),
          U(t) = U - t sum_j K_j g_j,  V(t) = V - 2t sum_S K-hat_j d_2j g_j + t^2 sum_S K-hat_j g_j^2,
          so r(t) = r - t W_3 B_1 + t^2 W_3 B_2 is a per-sample quadratic.
    q:    e_q(t) = e_q + t g,  U(t) = U - t sum_S K-hat_j g_j,  r(t) = r - t W_3 (sigma'(a_2) dU).
    a_2:  e_a2(t) = e_a2 + t g; B(t) = K sigma(a_2 - t g) + sigma'(.) U + sigma''(.) V: (M, N) work only.

Per-sample squared norms of e(t) are then polynomials with coefficients from a few inner products, and
the weights rho follow from w2, n1, n2, nq at t (lysep_loss.weights_from).  The accepted state gets the
updated residuals (e(t) by the same formulas) and caches.  The value equals the direct evaluation
(lysep_loss.lysep_loss at the trial state) up to round-off; tests check both.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from .. import channels as ch_engine
from ..activation import SIGMA
from ..channels import Fit, Layer
from .lysep_loss import LySepData, LySepState, Terms, penalty_from, weights_from


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample inner products over the width: (..., M, N) x (..., M, N) -> (..., N)."""
    return np.einsum("...mn,...mn->...n", x, y)


def _poly(coefs: list, t: float) -> np.ndarray:
    """c0 + c1 t + c2 t^2 + ... (Horner)."""
    out = coefs[-1]
    for c in coefs[-2::-1]:
        out = out * t + c
    return out


def _axpy(x: np.ndarray, t: float, y: np.ndarray) -> np.ndarray:
    """x + t y with one allocation; ``y`` is overwritten (a buffer the caller no longer needs)."""
    y *= t
    y += x
    return y


class Line:
    """J_S(x - t g) of one block: ``value(t)`` for a trial, ``accept(t)`` for the new state and terms.

    ``accept`` is called at most once and reuses the line's buffers (g and the images) for the new
    arrays, so that a block's step holds no more than one extra copy of its residuals.
    """

    block: str

    def __init__(self, st: LySepState, terms: Terms, data: LySepData, g: np.ndarray):
        self.st, self.terms, self.data, self.g = st, terms, data, g
        self.E: dict[str, list] = {}  # per-sample polynomial coefficients of E_x(t)
        self.norms: dict[str, list] = {}  # polynomial coefficients of n1, n2, nq or w2 at t
        self.w3 = float(np.sum(st.W3 * st.W3))
        self.w1 = np.sum(st.W1 * st.W1, axis=0)

    # Hooks of the blocks.
    def r(self, t: float) -> np.ndarray:
        return self.terms.r

    def _parts(self, t: float):
        E = {k: _poly(c, t) for k, c in self.E.items()}
        n = {k: _poly(c, t) for k, c in self.norms.items()}
        st = self.st
        w2 = float(n["w2"]) if "w2" in n else float(np.sum(st.W2 * st.W2))
        wt = weights_from(self.data, w2, self.w1, n.get("n1", st.n1), n.get("n2", st.n2), n.get("nq", st.nq))
        return E, n, wt

    def value(self, t: float) -> float:
        E, _, wt = self._parts(t)
        get: Callable[[str], np.ndarray] = lambda k: E[k] if k in E else self.terms.E(k)  # noqa: E731
        r = self.r(t)
        return float(r @ r + self.w3 * penalty_from(get, wt)) / self.data.N

    def accept(self, t: float) -> tuple[LySepState, Terms]:
        E, n, _ = self._parts(t)
        changes = self.residuals(t)
        st = self.st.with_(**{self.block: _axpy(getattr(self.st, self.block), -t, self.g)})
        for k in ("n1", "n2", "nq"):
            if k in n:
                st.__dict__[k] = n[k]
        cache = {k: v for k, v in self.terms._E.items() if k not in E}
        cache.update(E)
        terms = replace(self.terms, **changes, _E=cache)
        self.finish(st, t)
        return st, terms

    def residuals(self, t: float) -> dict[str, np.ndarray]:
        """The changed residuals at t (may consume the images, not g)."""
        raise NotImplementedError

    def finish(self, st: LySepState, t: float) -> None:
        """Set the caches of the accepted state that the block's formulas give (B, sigma(a_2))."""


def _quadratic(e: np.ndarray, De: np.ndarray, E0: np.ndarray, sign: float = -1.0) -> list:
    """Coefficients of ||e + sign t De||^2 per sample."""
    return [E0, 2.0 * sign * _dot(e, De), _dot(De, De)]


class W2Line(Line):
    block = "W2"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        L1, plan = st.layer1, data.plan
        self.D = {"a2": ch_engine.propagate_a(g, np.zeros(g.shape[0]), L1),
                  "d2": ch_engine.propagate_d(g, L1, plan), "q": ch_engine.propagate_Q(g, L1, plan)}
        for k, D in self.D.items():
            self.E[k] = _quadratic(getattr(terms, "e_" + k), D, terms.E(k))
        W2 = st.W2
        self.norms["w2"] = [float(np.sum(W2 * W2)), -2.0 * float(np.sum(W2 * g)), float(np.sum(g * g))]

    def residuals(self, t):
        return {"e_" + k: _axpy(getattr(self.terms, "e_" + k), -t, D) for k, D in self.D.items()}


class D1Line(Line):
    block = "d1"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        s, S, W2 = st.sig1, data.S, st.W2
        self.Dd2 = ch_engine.propagate_d(W2, Layer(st.a1, s, g, None), data.plan)  # W_2 (sigma'(a_1) g_j)
        h = s.s2[None] * g[S]  # sigma''(a_1) g_j, j in S
        self.B = np.matmul(W2, h * g[S])
        h *= st.d1[S]
        self.A = np.matmul(W2, h)
        del h
        gg = _dot(g, g)
        self.E["d1"] = [terms.E("d1"), 2.0 * _dot(terms.e_d1, g), gg]
        self.E["d2"] = _quadratic(terms.e_d2, self.Dd2, terms.E("d2"))
        e, A, B = terms.e_q, self.A, self.B
        eB, AA = _dot(e, B), _dot(A, A)
        self.E["q"] = [terms.E("q"), -4.0 * _dot(e, A), 4.0 * AA + 2.0 * eB, -4.0 * _dot(A, B), _dot(B, B)]
        self.norms["n1"] = [st.n1, -2.0 * _dot(st.d1, g), gg]

    def residuals(self, t):
        tm = self.terms
        e_q = _axpy(tm.e_q, -2.0 * t, self.A)
        e_q += _axpy(0.0, t * t, self.B)
        return {"e_d1": tm.e_d1 + t * self.g, "e_d2": _axpy(tm.e_d2, -t, self.Dd2), "e_q": e_q}


class D2Line(Line):
    block = "d2"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        plan, S, s = data.plan, data.S, st.sig2
        dU = np.einsum("jn,jmn->mn", plan.K1, g)
        dV1 = np.einsum("jn,jmn->mn", plan.K2, st.d2[S] * g[S])
        dV2 = np.einsum("jn,jmn->mn", plan.K2, g[S] * g[S])
        self.dU, self.dV1, self.dV2 = dU, dV1, dV2
        self.B1 = s.s1 * dU + 2.0 * s.s2 * dV1
        self.B2 = s.s2 * dV2
        w3 = st.W3[0]
        self.r1, self.r2 = w3 @ self.B1, w3 @ self.B2
        gg = _dot(g, g)
        self.E["d2"] = [terms.E("d2"), 2.0 * _dot(terms.e_d2, g), gg]
        self.norms["n2"] = [st.n2, -2.0 * _dot(st.d2, g), gg]

    def r(self, t):
        return self.terms.r - t * self.r1 + (t * t) * self.r2

    def residuals(self, t):
        return {"e_d2": self.terms.e_d2 + t * self.g, "r": self.r(t)}

    def finish(self, st, t):
        f = self.st.fit
        st.__dict__["fit"] = Fit(f.B - t * self.B1 + (t * t) * self.B2, f.U - t * self.dU,
                                 f.V - (2.0 * t) * self.dV1 + (t * t) * self.dV2)


class QLine(Line):
    block = "q"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        self.dU = np.einsum("jn,jmn->mn", data.plan.K2, g)
        self.B1 = st.sig2.s1 * self.dU
        self.r1 = st.W3[0] @ self.B1
        gg = _dot(g, g)
        self.E["q"] = [terms.E("q"), 2.0 * _dot(terms.e_q, g), gg]
        self.norms["nq"] = [st.nq, -2.0 * _dot(st.q, g), gg]

    def r(self, t):
        return self.terms.r - t * self.r1

    def residuals(self, t):
        return {"e_q": self.terms.e_q + t * self.g, "r": self.r(t)}

    def finish(self, st, t):
        f = self.st.fit
        st.__dict__["fit"] = Fit(f.B - t * self.B1, f.U - t * self.dU, f.V)


class A2Line(Line):
    block = "a2"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        self.E["a2"] = [terms.E("a2"), 2.0 * _dot(terms.e_a2, g), _dot(g, g)]
        self._at: tuple[float, object, Fit, np.ndarray] | None = None

    def _fit_at(self, t: float):
        if self._at is None or self._at[0] != t:
            st, data = self.st, self.data
            sig = SIGMA.values(st.a2 - t * self.g)
            fit = ch_engine.fit_from_sums(data.plan, sig, st.fit.U, st.fit.V)
            r = st.W3[0] @ fit.B
            r += st.b3 * data.K
            r -= data.Y
            self._at = (t, sig, fit, r)
        return self._at

    def r(self, t):
        return self._fit_at(t)[3]

    def residuals(self, t):
        return {"e_a2": self.terms.e_a2 + t * self.g, "r": self.r(t)}

    def finish(self, st, t):
        _, sig, fit, _ = self._fit_at(t)
        st.__dict__["sig2"], st.__dict__["fit"] = sig, fit


LINES: dict[str, type[Line]] = {"W2": W2Line, "d1": D1Line, "d2": D2Line, "q": QLine, "a2": A2Line}
"""Blocks with a line model; a_1 and W_1 are evaluated directly (a_1 enters through sigma; W_1 is cheap)."""


def line_model(block: str, st: LySepState, terms: Terms, data: LySepData, g: np.ndarray) -> Line | None:
    """The line model of ``block`` at the state, or None where trials recompute the groups directly."""
    cls = LINES.get(block)
    return None if cls is None else cls(st, terms, data, g)
