"""The LySep loss J_S (`eq:Js-elliptic`, `eq:Js-parabolic`, `eq:Js-hyberbolic`) and its gradients.

One code path serves the three PDEs.  With the network inputs z_j (j = 0..n_in-1; t is z_0 for the
time-dependent PDEs) and the residual written as (problems.OperatorCoefficients)

    R = K phi + sum_j K_j d_j phi + sum_j K-hat_j d_jj phi - Y,

the fitting term of J_S is ``r = W_3 B + b_3 K - Y`` with (`eq:GD_W3`)

    B = sigma(a_2) diag[K] + sum_j D_2j diag[K_j] + sum_{j in S} (Q_2j + Q-hat_2j) diag[K-hat_j],
    D_2j = sigma'(a_2)*d_2j,  Q_2j = sigma''(a_2)*d_2j*d_2j,  Q-hat_2j = sigma'(a_2)*q_j,

where S is the set of channels with a second derivative (all of them, except t for parabolic PDEs).
Elliptic: K_j = K^e_j, K-hat_j = K-hat^e.  Parabolic: K_0 = K^p_0, K_j = -K^p_j, K-hat_j = -K-hat^p.
Hyperbolic: K_0 = K^h_0, K-hat_0 = K-hat^h_0, K_j = -K^h_j, K-hat_j = -K-hat^h_j.  The signs do not
matter for the weights, which use |.|_inf (max over the N training points).

Every penalty is a D-weighted squared norm of a constraint residual.  Summing the omega * D(n,n)^2 of
the terms that share a constraint gives one per-sample weight rho per constraint, and every omega
carries ||W_3||_F^2, so

    N * J_S = ||r||^2 + ||W_3||_F^2 * P,
    P = sum_n [rho_a1 E_a1 + rho_a2 E_a2 + sum_j (rho_d1j E_d1j + rho_d2j E_d2j) + sum_{j in S} rho_qj E_qj]

with E_x[n] = ||e_x[:, n]||^2 the squared constraint residual of sample n and rho = omega D^2 / ||W_3||^2.
P is the lambda of the W_3 ridge step (docs/paper-notes.md: the paper's lambda misses a |K-hat|^2 factor).
With the paper's omega and D lists (generic form, h_j = |K-hat_j|_inf^2, k_j = |K_j|_inf^2,
k = |K|_inf^2, w2 = ||W_2||^2, w1j = ||W_1(:,j)||^2, n1j = ||d_1j[n]||^2, n2j, nqj likewise):

    D_a2^1^2 = k + sum_j k_j n2j + sum_S h_j nqj               (A2)
    D_a1^1^2 = A2 + sum_j (k_j n1j + h_j n1j n2j)             (A1)
    rho_a1  = w2 A1 + sum_j w1j h_j (w2 n1j + w2^2 (n1j + n2j))
    rho_a2  = A2 + w2 sum_j w1j h_j n2j
    rho_d1j = h_j w1j (w2 + w2^2) + w2 (k_j + h_j (n1j + n2j))
    rho_d2j = k_j + h_j n2j + h_j w2 w1j
    rho_qj  = h_j

Shapes: a_l (M, N); d_lj stacked as (n_in, M, N); q as (|S|, M, N).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal

import numpy as np

from ..network import Params, forward
from ..problems import OperatorCoefficients

WeightMode = Literal["frozen", "through"]


@dataclass(frozen=True)
class LySepData:
    """Training data with the coefficient constants of the weights.

    Z (n_in, N); K (N,); Kd (n_in, N) the K_j; Kh (n_in, N) the K-hat_j; S index array of the
    second-derivative channels; Y (N,); k, kj, hj the squared sup norms |K|^2, |K_j|^2, |K-hat_j|^2.
    """

    Z: np.ndarray
    K: np.ndarray
    Kd: np.ndarray
    Kh: np.ndarray
    S: np.ndarray
    Y: np.ndarray
    k: float
    kj: np.ndarray
    hj: np.ndarray

    @classmethod
    def build(cls, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray) -> "LySepData":
        S = np.flatnonzero(coef.second)
        sup2 = lambda A: np.max(np.abs(A), axis=-1) ** 2  # noqa: E731  |.|_inf^2 over the N points
        hj = np.where(coef.second, sup2(coef.K2), 0.0)
        return cls(Z, coef.K, coef.K1, coef.K2, S, Y, float(sup2(coef.K)), sup2(coef.K1), hj)

    @property
    def N(self) -> int:
        return self.Z.shape[1]


@dataclass
class LySepState:
    """All variables of the LySep model (L = 3)."""

    W1: np.ndarray  # (M, n_in)
    b1: np.ndarray  # (M,)
    W2: np.ndarray  # (M, M)
    b2: np.ndarray  # (M,)
    W3: np.ndarray  # (1, M)
    b3: float
    a1: np.ndarray  # (M, N)
    a2: np.ndarray  # (M, N)
    d1: np.ndarray  # (n_in, M, N)
    d2: np.ndarray  # (n_in, M, N)
    q: np.ndarray  # (|S|, M, N)

    @classmethod
    def from_params(cls, params: Params, data: LySepData) -> "LySepState":
        """Auxiliary variables at their exact forward values (`eq:var_a`, `eq:var_d`, `eq:var_q`)."""
        if len(params) != 3:
            raise ValueError(f"LySep is formulated for L = 3 (the paper's Algorithms 1-3); got L = {len(params)}")
        ch = forward(params, data.Z)
        (W1, b1), (W2, b2), (W3, b3) = params
        return cls(W1.copy(), b1.copy(), W2.copy(), b2.copy(), W3.copy(), float(b3[0]), ch.a[0].copy(),
                   ch.a[1].copy(), np.ascontiguousarray(ch.d[0]), ch.d[1].copy(), ch.q[1][data.S].copy())

    def params(self) -> Params:
        return [(self.W1.copy(), self.b1.copy()), (self.W2.copy(), self.b2.copy()),
                (self.W3.copy(), np.array([self.b3]))]

    def with_(self, **changes: np.ndarray) -> "LySepState":
        """A new state with some variables replaced; cached sigma(a_l) values of unchanged a_l are kept."""
        new = replace(self, **changes)
        for name, source in _CACHED.items():
            if name in self.__dict__ and source not in changes:
                new.__dict__[name] = self.__dict__[name]
        return new

    # Per-sample squared norms ||d_1j[n]||^2, ||d_2j[n]||^2, ||q_j[n]||^2, shapes (n_in, N), (|S|, N).
    @cached_property
    def n1(self) -> np.ndarray:
        return np.einsum("jmn,jmn->jn", self.d1, self.d1)

    @cached_property
    def n2(self) -> np.ndarray:
        return np.einsum("jmn,jmn->jn", self.d2, self.d2)

    @cached_property
    def nq(self) -> np.ndarray:
        return np.einsum("jmn,jmn->jn", self.q, self.q)

    # sin and cos of a_l, computed once per value of a_l (sigma = sin: sigma' = cos, sigma'' = -sin).
    @cached_property
    def s_a1(self) -> np.ndarray:
        return np.sin(self.a1)

    @cached_property
    def c_a1(self) -> np.ndarray:
        return np.cos(self.a1)

    @cached_property
    def s_a2(self) -> np.ndarray:
        return np.sin(self.a2)

    @cached_property
    def c_a2(self) -> np.ndarray:
        return np.cos(self.a2)


# Cached values of a state and the variable each depends on.
_CACHED = {"s_a1": "a1", "c_a1": "a1", "s_a2": "a2", "c_a2": "a2", "n1": "d1", "n2": "d2", "nq": "q"}


@dataclass
class Terms:
    """Constraint residuals e_x (same shapes as the variables), their per-sample squares E_x, and r (N,)."""

    e_a1: np.ndarray
    e_a2: np.ndarray
    e_d1: np.ndarray
    e_d2: np.ndarray
    e_q: np.ndarray
    r: np.ndarray
    _E: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def E(self, name: str) -> np.ndarray:
        """Per-sample squared norms of e_name, shape (N,) or (n_in, N); computed once per residual."""
        if name not in self._E:
            e = getattr(self, "e_" + name)
            self._E[name] = np.einsum("...mn,...mn->...n", e, e)
        return self._E[name]


# Which groups of terms each variable block touches.
AFFECTS: dict[str, tuple[str, ...]] = {
    "W1": ("a1", "d1"), "a1": ("a1", "a2", "d2", "q"), "d1": ("d1", "d2", "q"),
    "W2": ("a2", "d2", "q"), "a2": ("a2", "fit"), "d2": ("d2", "fit"), "q": ("q", "fit"),
    "W3": ("fit",), "b3": ("fit",), "b1": ("a1",), "b2": ("a2",),
}


def fit_matrix(st: LySepState, data: LySepData) -> np.ndarray:
    """B of `eq:GD_W3`, shape (M, N)."""
    s1 = st.c_a2
    B = st.s_a2 * data.K
    B += np.sum(s1 * st.d2 * data.Kd[:, None, :], axis=0)
    S = data.S
    if S.size:
        d2S = st.d2[S]
        B += np.sum(((-st.s_a2) * d2S * d2S + s1 * st.q) * data.Kh[S][:, None, :], axis=0)
    return B


def compute_group(name: str, st: LySepState, data: LySepData) -> np.ndarray:
    """The constraint residual e_name (or r for "fit") at the state."""
    if name == "a1":
        return st.W1 @ data.Z + st.b1[:, None] - st.a1
    if name == "a2":
        return st.W2 @ st.s_a1 + st.b2[:, None] - st.a2
    if name == "d1":
        return st.W1.T[:, :, None] - st.d1
    if name == "d2":
        return np.matmul(st.W2, st.c_a1 * st.d1) - st.d2
    if name == "q":
        d1S = st.d1[data.S]
        return np.matmul(st.W2, (-st.s_a1) * d1S * d1S) - st.q
    if name == "fit":
        return (st.W3 @ fit_matrix(st, data))[0] + st.b3 * data.K - data.Y
    raise KeyError(name)


def compute_terms(st: LySepState, data: LySepData) -> Terms:
    g = {n: compute_group(n, st, data) for n in ("a1", "a2", "d1", "d2", "q", "fit")}
    return Terms(g["a1"], g["a2"], g["d1"], g["d2"], g["q"], g["fit"])


def update_terms(terms: Terms, block: str, st: LySepState, data: LySepData) -> Terms:
    """Terms after ``block`` changed: only the groups it touches are recomputed."""
    new = replace(terms, _E={k: v for k, v in terms._E.items() if k not in AFFECTS[block]})
    for name in AFFECTS[block]:
        setattr(new, "r" if name == "fit" else "e_" + name, compute_group(name, st, data))
    return new


@dataclass
class Weights:
    """Per-sample penalty weights rho (without the ||W_3||^2 factor) and the quantities they use."""

    rho_a1: np.ndarray  # (N,)
    rho_a2: np.ndarray  # (N,)
    rho_d1: np.ndarray  # (n_in, N)
    rho_d2: np.ndarray  # (n_in, N)
    rho_q: np.ndarray  # (|S|,)
    w2: float
    w1: np.ndarray  # (n_in,)
    n1: np.ndarray  # (n_in, N)
    n2: np.ndarray  # (n_in, N)
    nq: np.ndarray  # (|S|, N)


def weights(st: LySepState, data: LySepData) -> Weights:
    """The self-adaptive omega and D of `eq:Js-elliptic` (and Section 3), combined per constraint."""
    k, kj, hj = data.k, data.kj[:, None], data.hj[:, None]
    w2 = float(np.sum(st.W2 * st.W2))
    w1 = np.sum(st.W1 * st.W1, axis=0)
    w1c = w1[:, None]
    n1, n2, nq = st.n1, st.n2, st.nq
    hS = data.hj[data.S]
    A2 = k + np.sum(kj * n2, 0) + hS @ nq  # D_a2^1(n,n)^2
    A1 = A2 + np.sum(kj * n1 + hj * n1 * n2, 0)  # D_a1^1(n,n)^2
    rho_a1 = w2 * A1 + np.sum(w1c * hj * (w2 * n1 + w2 * w2 * (n1 + n2)), 0)
    rho_a2 = A2 + w2 * np.sum(w1c * hj * n2, 0)
    rho_d1 = hj * w1c * (w2 + w2 * w2) + w2 * (kj + hj * (n1 + n2))
    rho_d2 = kj + hj * n2 + hj * w2 * w1c
    return Weights(rho_a1, rho_a2, rho_d1, rho_d2, hS.copy(), w2, w1, n1, n2, nq)


def penalty(terms: Terms, wt: Weights) -> float:
    """P = (penalty part of N * J_S) / ||W_3||_F^2, the lambda of the W_3 ridge system."""
    P = wt.rho_a1 @ terms.E("a1") + wt.rho_a2 @ terms.E("a2")
    P += np.sum(wt.rho_d1 * terms.E("d1")) + np.sum(wt.rho_d2 * terms.E("d2"))
    P += wt.rho_q @ np.sum(terms.E("q"), axis=-1)
    return float(P)


@dataclass
class LossParts:
    J_S: float
    fit: float  # (1/N) ||r||^2
    penalty: float  # (1/N) ||W_3||^2 P
    P: float


def lysep_loss(st: LySepState, data: LySepData, terms: Terms | None = None) -> LossParts:
    """J_S and its parts.  With exact auxiliary variables J_S = J (Theorem 2.2)."""
    terms = compute_terms(st, data) if terms is None else terms
    P = penalty(terms, weights(st, data))
    w3 = float(np.sum(st.W3 * st.W3))
    N = data.N
    fit = float(terms.r @ terms.r) / N
    pen = w3 * P / N
    return LossParts(fit + pen, fit, pen, P)


# ------------------------------------------------------------------------------------------------
# Gradients.  "frozen": omega and D recomputed from the current variables and held fixed while
# differentiating.  "through": also differentiated through omega and D.


def _weight_partials(st: LySepState, data: LySepData, terms: Terms, wt: Weights):
    """Partial derivatives of P with respect to n1, n2 (n_in, N), nq (|S|, N), w2 and w1 (n_in,)."""
    kj, hj = data.kj[:, None], data.hj[:, None]
    w2, w1c, n1, n2 = wt.w2, wt.w1[:, None], wt.n1, wt.n2
    Ea1, Ea2, Ed1, Ed2 = terms.E("a1"), terms.E("a2"), terms.E("d1"), terms.E("d2")
    A2 = data.k + np.sum(kj * n2, 0) + data.hj[data.S] @ wt.nq
    A1 = A2 + np.sum(kj * n1 + hj * n1 * n2, 0)
    dn1 = Ea1 * (w2 * (kj + hj * n2) + w1c * hj * (w2 + w2 * w2)) + Ed1 * w2 * hj
    dn2 = Ea1 * (w2 * (kj + hj * n1) + w1c * hj * w2 * w2) + Ea2 * (kj + w2 * w1c * hj) + Ed1 * w2 * hj + Ed2 * hj
    hS = data.hj[data.S][:, None]
    dnq = (Ea1 * w2 + Ea2) * hS
    dw2 = (Ea1 @ (A1 + np.sum(w1c * hj * (n1 + 2 * w2 * (n1 + n2)), 0))
           + Ea2 @ np.sum(w1c * hj * n2, 0)
           + np.sum(Ed1 * (hj * w1c * (1 + 2 * w2) + kj + hj * (n1 + n2)))
           + np.sum(Ed2 * hj * w1c))
    dw1 = (np.sum(Ea1 * hj * (w2 * n1 + w2 * w2 * (n1 + n2)), 1) + np.sum(Ea2 * w2 * hj * n2, 1)
           + np.sum(Ed1 * hj * (w2 + w2 * w2), 1) + np.sum(Ed2 * hj * w2, 1))
    return dn1, dn2, dnq, float(dw2), dw1


def gradient(block: str, st: LySepState, data: LySepData, terms: Terms, mode: WeightMode = "frozen",
             wt: Weights | None = None) -> np.ndarray:
    """dJ_S / d(block), same shape as the block's variable.  Blocks: W1, a1, d1, W2, a2, d2, q."""
    wt = weights(st, data) if wt is None else wt
    N = data.N
    c = 2.0 / N
    w3 = float(np.sum(st.W3 * st.W3))
    cw = c * w3
    S = data.S
    if block == "W1":
        g = cw * ((wt.rho_a1 * terms.e_a1) @ data.Z.T + np.sum(wt.rho_d1[:, None, :] * terms.e_d1, axis=2).T)
    elif block == "a1":
        W2T = st.W2.T
        s1, s2, s3 = st.c_a1, (-st.s_a1), (-st.c_a1)
        g = -wt.rho_a1 * terms.e_a1 + s1 * (W2T @ (wt.rho_a2 * terms.e_a2))
        g = g + np.sum(s2 * st.d1 * np.matmul(W2T, wt.rho_d2[:, None, :] * terms.e_d2), axis=0)
        if S.size:
            d1S = st.d1[S]
            g = g + np.sum(s3 * d1S * d1S * np.matmul(W2T, wt.rho_q[:, None, None] * terms.e_q), axis=0)
        g = cw * g
    elif block == "d1":
        W2T = st.W2.T
        s1, s2 = st.c_a1, (-st.s_a1)
        g = -wt.rho_d1[:, None, :] * terms.e_d1 + s1 * np.matmul(W2T, wt.rho_d2[:, None, :] * terms.e_d2)
        if S.size:
            g[S] += 2.0 * s2 * st.d1[S] * np.matmul(W2T, wt.rho_q[:, None, None] * terms.e_q)
        g = cw * g
    elif block == "W2":
        s1, s2 = st.c_a1, (-st.s_a1)
        g = (wt.rho_a2 * terms.e_a2) @ st.s_a1.T
        for j in range(st.d1.shape[0]):  # loop over the input dimensions: one GEMM each
            g += (wt.rho_d2[j] * terms.e_d2[j]) @ (s1 * st.d1[j]).T
        for k, j in enumerate(S):
            g += (wt.rho_q[k] * terms.e_q[k]) @ (s2 * st.d1[j] * st.d1[j]).T
        g = cw * g
    elif block in ("a2", "d2", "q"):
        Wr = st.W3[0][:, None] * terms.r[None, :]  # W_3^T r, (M, N)
        s1, s2 = st.c_a2, (-st.s_a2)
        if block == "a2":
            dB = st.c_a2 * data.K + np.sum(s2 * st.d2 * data.Kd[:, None, :], axis=0)
            if S.size:
                d2S = st.d2[S]
                dB += np.sum(((-st.c_a2) * d2S * d2S + s2 * st.q) * data.Kh[S][:, None, :], axis=0)
            g = c * Wr * dB - cw * wt.rho_a2 * terms.e_a2
        elif block == "d2":
            dB = s1 * data.Kd[:, None, :]
            if S.size:
                dB[S] += 2.0 * s2 * st.d2[S] * data.Kh[S][:, None, :]
            g = c * Wr * dB - cw * wt.rho_d2[:, None, :] * terms.e_d2
        else:
            g = c * Wr * s1 * data.Kh[S][:, None, :] - cw * wt.rho_q[:, None, None] * terms.e_q
    else:
        raise KeyError(block)
    if mode == "through" and block in ("W1", "d1", "W2", "d2", "q"):
        dn1, dn2, dnq, dw2, dw1 = _weight_partials(st, data, terms, wt)
        f = w3 / N
        if block == "W1":
            g = g + f * 2.0 * st.W1 * dw1[None, :]
        elif block == "W2":
            g = g + f * 2.0 * dw2 * st.W2
        elif block == "d1":
            g = g + f * 2.0 * st.d1 * dn1[:, None, :]
        elif block == "d2":
            g = g + f * 2.0 * st.d2 * dn2[:, None, :]
        else:
            g = g + f * 2.0 * st.q * dnq[:, None, :]
    return g
