"""J_S along a search direction: the trials of one block's step without recomputing its constraint groups.

Not used by lysep (a measured negative result, docs/engine.md): once ||W_3|| is large the penalties of
J_S weigh round-off in the residuals, and these incrementally updated residuals drift from the state's
(bound violations and a different trajectory at elliptic-2d (3,80)).  L = 3 only.

A gradient step on block x tries J_S(x - t g) for one or more t (Armijo backtracking: two trials per
block per sweep in steady state).  For every block but a_1, J_S(x - t g) is a polynomial in t per sample,
or needs only (M, N) work, once a few images of g are known (a_1 enters through sigma: its trials
apply W_2 again, written incrementally, see A1Line):

    W_1:  e_a1(t) = e_a1 - t g Z,  e_d1j(t) = e_d1j - t g(:, j),  ||W_1(:, j) - t g(:, j)||^2 quadratic.
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
the weights rho follow from w2, n1, n2, nq at t (lysep_loss.weights_from).  The value equals the
direct evaluation (lysep_loss.lysep_loss at the trial state) up to round-off; tests check both.

Round-off matters here.  Late in a run most blocks' accepted steps are far too small to change J_S
(the hidden layers barely move), and whether such a step is accepted is decided by the last bits of
J_S.  Two rules keep that decision the one a direct evaluation makes: the test compares a trial with
the same formulas at t = 0 (:meth:`Line.baseline`), and a step that leaves x bit-identical gives
exactly that value; an accepted step's residual squares and norms are recomputed from the new arrays,
and B and r afresh (B enters the W_3 least-squares solve, whose condition number amplifies any drift),
so that the next block starts from the values a direct evaluation of the state would give.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

from typing import Callable

import numpy as np

from lysep_cli.numerics import channels as ch_engine
from lysep_cli.numerics.activation import SIGMA
from lysep_cli.numerics.channels import Fit, Layer
from lysep_cli.solvers.lysep.loss import LySepData, LySepState, Terms, compute_group, loss_parts, lysep_loss
from lysep_cli.solvers.lysep.weights import Norms, penalty_from, weights_from


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
        x = getattr(st, self.block)
        self._no_op_bound = np.finfo(float).eps * float(np.max(np.abs(x))) / max(float(np.max(np.abs(g))), 1e-300)

    def unchanged(self, t: float) -> bool:
        """x - t g == x bit for bit (a step below the rounding of every entry)."""
        if t >= self._no_op_bound:  # necessary: |t g_i| < ulp(x_i) / 2 <= eps max|x| / 2
            return False
        x = getattr(self.st, self.block)
        return bool(np.array_equal(x - t * self.g, x))

    # Hooks of the blocks.
    def r(self, t: float) -> np.ndarray:
        return self.terms.r

    def _parts(self, t: float):
        E = {k: _poly(c, t) for k, c in self.E.items()}
        n = {k: _poly(c, t) for k, c in self.norms.items()}
        st = self.st
        w2 = float(n["w2"]) if "w2" in n else float(np.sum(st.W2 * st.W2))
        w1 = n.get("w1", self.w1)
        wt = weights_from(self.data, Norms(3, {2: w2}, w1, {1: n.get("n1", st.nd(1)), 2: n.get("n2", st.nd(2))},
                                           {2: n.get("nq", st.nq(2))}))
        return E, n, wt

    def value(self, t: float) -> float:
        if t != 0.0 and self.unchanged(t):
            return self.baseline()  # the step changes nothing: J_S is what it was, as a direct evaluation says
        E, _, wt = self._parts(t)
        get: Callable[[str], np.ndarray] = lambda k: E[k] if k in E else self.terms.E(k)  # noqa: E731
        return loss_parts(self.r(t), penalty_from(get, wt), self.w3, self.data.N).J_S

    def baseline(self) -> float:
        """J_S at t = 0 by the same formulas as :meth:`value`: the reference of the sufficient-decrease
        test, so that a step too small to change x compares equal (as a direct evaluation would)."""
        if not hasattr(self, "_baseline"):
            self._baseline = self.value(0.0)
        return self._baseline

    def accept(self, t: float) -> tuple[LySepState, Terms]:
        """The state and terms at x - t g.  Residuals follow the block's formulas; their per-sample
        squares and the norms n1, n2, nq are recomputed from the new arrays (not from the polynomials),
        so that every later evaluation starts from values a direct evaluation would give."""
        changes = self.residuals(t)
        st = self.st.with_(**{self.block: _axpy(getattr(self.st, self.block), -t, self.g)})
        cache = {k: v for k, v in self.terms._E.items() if k not in self.E}
        if self.changes_fit:  # B and r afresh (B feeds the ill-conditioned W_3 solve: no drift there)
            changes["r"] = compute_group("fit", st, self.data)
        return st, self.terms.replace(_E=cache, **changes)

    changes_fit = False

    def residuals(self, t: float) -> dict[str, np.ndarray]:
        """The changed constraint residuals at t (may consume the images, not g)."""
        raise NotImplementedError


def _quadratic(e: np.ndarray, De: np.ndarray, E0: np.ndarray, sign: float = -1.0) -> list:
    """Coefficients of ||e + sign t De||^2 per sample."""
    return [E0, 2.0 * sign * _dot(e, De), _dot(De, De)]


class W1Line(Line):
    block = "W1"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        self.Da1 = g @ data.Z  # e_a1(t) = e_a1 - t g Z
        self.E["a1"] = _quadratic(terms.e_a1, self.Da1, terms.E("a1"))
        # e_d1j(t) = e_d1j - t g(:, j) for every sample: <e_d1j[:, n], g(:, j)> and ||g(:, j)||^2.
        gT = g.T  # (n_in, M)
        self.E["d1"] = [terms.E("d1"), -2.0 * np.einsum("jmn,jm->jn", terms.e_d1, gT),
                        np.broadcast_to(np.sum(gT * gT, axis=1)[:, None], terms.E("d1").shape)]
        W1 = st.W1
        self.norms["w1"] = [np.sum(W1 * W1, axis=0), -2.0 * np.sum(W1 * g, axis=0), np.sum(g * g, axis=0)]

    def residuals(self, t):
        return {"e_a1": _axpy(self.terms.e_a1, -t, self.Da1), "e_d1": self.terms.e_d1 - t * self.g.T[:, :, None]}


class W2Line(Line):
    block = "W2"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        L1, plan = st.layer(1), data.plan
        self.D = {"a2": ch_engine.propagate_a(g, np.zeros(g.shape[0]), L1),
                  "d2": ch_engine.propagate_d(g, L1, plan), "q2": ch_engine.propagate_Q(g, L1, plan)}
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
        s, S, W2 = st.sig(1), data.S, st.W2
        self.Dd2 = ch_engine.propagate_d(W2, Layer(st.a1, s, g, None), data.plan)  # W_2 (sigma'(a_1) g_j)
        h = s.s2[None] * g[S]  # sigma''(a_1) g_j, j in S
        self.B = np.matmul(W2, h * g[S])
        h *= st.d1[S]
        self.A = np.matmul(W2, h)
        del h
        gg = _dot(g, g)
        self.E["d1"] = [terms.E("d1"), 2.0 * _dot(terms.e_d1, g), gg]
        self.E["d2"] = _quadratic(terms.e_d2, self.Dd2, terms.E("d2"))
        e, A, B = terms.e_q2, self.A, self.B
        eB, AA = _dot(e, B), _dot(A, A)
        self.E["q2"] = [terms.E("q2"), -4.0 * _dot(e, A), 4.0 * AA + 2.0 * eB, -4.0 * _dot(A, B), _dot(B, B)]
        self.norms["n1"] = [st.nd(1), -2.0 * _dot(st.d1, g), gg]

    def residuals(self, t):
        tm = self.terms
        e_q = _axpy(tm.e_q2, -2.0 * t, self.A)
        e_q += _axpy(0.0, t * t, self.B)
        return {"e_d1": tm.e_d1 + t * self.g, "e_d2": _axpy(tm.e_d2, -t, self.Dd2), "e_q2": e_q}


class D2Line(Line):
    block = "d2"
    changes_fit = True

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        plan, S, s = data.plan, data.S, st.sig(2)
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
        self.norms["n2"] = [st.nd(2), -2.0 * _dot(st.d2, g), gg]

    def r(self, t):
        return self.terms.r - t * self.r1 + (t * t) * self.r2

    def residuals(self, t):
        return {"e_d2": self.terms.e_d2 + t * self.g}


class QLine(Line):
    block = "q2"
    changes_fit = True

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        self.dU = np.einsum("jn,jmn->mn", data.plan.K2, g)
        self.B1 = st.sig(2).s1 * self.dU
        self.r1 = st.W3[0] @ self.B1
        gg = _dot(g, g)
        self.E["q2"] = [terms.E("q2"), 2.0 * _dot(terms.e_q2, g), gg]
        self.norms["nq"] = [st.nq(2), -2.0 * _dot(st.q2, g), gg]

    def r(self, t):
        return self.terms.r - t * self.r1

    def residuals(self, t):
        return {"e_q2": self.terms.e_q2 + t * self.g}


class A2Line(Line):
    block = "a2"
    changes_fit = True

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
        return {"e_a2": self.terms.e_a2 + t * self.g}


class A1Line(Line):
    """a_1 enters the constraints through sigma, so a trial needs the layer map again (1 + n_in + |S|
    GEMMs); it is written incrementally, e(t) = e + W_2 (sigma^(k)(a_1 - t g) - sigma^(k)(a_1)) ...,
    so that a step too small to change a_1 leaves every residual bit-identical."""

    block = "a1"

    def __init__(self, st, terms, data, g):
        super().__init__(st, terms, data, g)
        self._at: tuple[float, object, dict] | None = None

    def _trial(self, t: float):
        if self._at is None or self._at[0] != t:
            st, tm, S = self.st, self.terms, self.data.S
            a1 = st.a1 - t * self.g
            sig = SIGMA.values(a1)
            da1 = st.a1 - a1  # the step as rounded: zero where a_1 did not change
            s1 = st.sig(1)
            ds0, ds1, ds2 = sig.s0 - s1.s0, sig.s1 - s1.s1, sig.s2 - s1.s2
            e_a2 = st.W2 @ ds0
            e_a2 += tm.e_a2
            e_d2 = np.matmul(st.W2, ds1[None] * st.d1)
            e_d2 += tm.e_d2
            e_q = np.matmul(st.W2, ds2[None] * st.d1[S] * st.d1[S])
            e_q += tm.e_q2
            res = {"e_a1": tm.e_a1 + da1, "e_a2": e_a2, "e_d2": e_d2, "e_q2": e_q}
            self._at = (t, sig, a1, res)
        return self._at

    def baseline(self) -> float:
        return lysep_loss(self.st, self.data, self.terms).J_S

    def value(self, t: float) -> float:
        _, _, _, res = self._trial(t)
        terms = self.terms.replace(_E={k: v for k, v in self.terms._E.items() if k == "d1"}, **res)
        return loss_parts(self.terms.r, penalty_from(terms.E, self.wt0), self.w3, self.data.N).J_S

    @property
    def wt0(self):
        if not hasattr(self, "_wt0"):
            st = self.st
            self._wt0 = weights_from(self.data, st.norms())
        return self._wt0

    def accept(self, t: float) -> tuple[LySepState, Terms]:
        _, sig, a1, res = self._trial(t)
        st = self.st.with_(a1=a1)
        st._cache[("sig", 1)] = sig
        cache = {k: v for k, v in self.terms._E.items() if k == "d1"}
        return st, self.terms.replace(_E=cache, **res)


LINES: dict[str, type[Line]] = {"a1": A1Line, "W1": W1Line, "W2": W2Line, "d1": D1Line, "d2": D2Line, "q2": QLine,
                                 "a2": A2Line}
"""The line model of every gradient block (a_1's is incremental rather than polynomial)."""


def line_model(block: str, st: LySepState, terms: Terms, data: LySepData, g: np.ndarray) -> Line | None:
    """The line model of ``block`` at the state, or None where trials recompute the groups directly."""
    cls = LINES.get(block) if st.L == 3 else None
    return None if cls is None else cls(st, terms, data, g)
