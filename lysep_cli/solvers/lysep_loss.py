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

from .. import channels as ch_engine
from ..activation import SIGMA, SigmaValues
from ..channels import ChannelPlan, Fit, Layer
from ..network import Params, forward
from ..problems import OperatorCoefficients

WeightMode = Literal["frozen", "through"]


@dataclass(frozen=True)
class LySepData:
    """Training data with the coefficient constants of the weights.

    Z (n_in, N); K (N,); Kd (n_in, N) the K_j; Kh (n_in, N) the K-hat_j; S index array of the
    second-derivative channels; Y (N,); k, kj, hj the squared sup norms |K|^2, |K_j|^2, |K-hat_j|^2;
    plan: the channel engine's plan with one group per q_j (LySep's q_j are separate variables).
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
    plan: ChannelPlan

    @classmethod
    def build(cls, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray) -> "LySepData":
        S = np.flatnonzero(coef.second)
        sup2 = lambda A: np.max(np.abs(A), axis=-1) ** 2  # noqa: E731  |.|_inf^2 over the N points
        hj = np.where(coef.second, sup2(coef.K2), 0.0)
        return cls(Z, coef.K, coef.K1, coef.K2, S, Y, float(sup2(coef.K)), sup2(coef.K1), hj,
                   ChannelPlan.build(coef, grouped=False))

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
    _plan: ChannelPlan = field(repr=False, compare=False)

    @classmethod
    def from_params(cls, params: Params, data: LySepData) -> "LySepState":
        """Auxiliary variables at their exact forward values (`eq:var_a`, `eq:var_d`, `eq:var_q`)."""
        if len(params) != 3:
            raise ValueError(f"LySep is formulated for L = 3 (the paper's Algorithms 1-3); got L = {len(params)}")
        ch = forward(params, data.Z)
        (W1, b1), (W2, b2), (W3, b3) = params
        return cls(W1.copy(), b1.copy(), W2.copy(), b2.copy(), W3.copy(), float(b3[0]), ch.a[0].copy(),
                   ch.a[1].copy(), np.ascontiguousarray(ch.d[0]), ch.d[1].copy(), ch.q[1][data.S].copy(),
                   data.plan)

    def params(self) -> Params:
        return [(self.W1.copy(), self.b1.copy()), (self.W2.copy(), self.b2.copy()),
                (self.W3.copy(), np.array([self.b3]))]

    def with_(self, **changes: np.ndarray) -> "LySepState":
        """A new state with some variables replaced; cached sigma(a_l) values of unchanged a_l are kept."""
        new = replace(self, **changes)
        for name, sources in _CACHED.items():
            if name in self.__dict__ and not any(v in changes for v in sources):
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

    # sigma^(k)(a_l), computed once per value of a_l (sin and cos only).
    @cached_property
    def sig1(self) -> SigmaValues:
        return SIGMA.values(self.a1)

    @cached_property
    def sig2(self) -> SigmaValues:
        return SIGMA.values(self.a2)

    @cached_property
    def fit(self) -> Fit:
        """B of `eq:GD_W3` (and its sums U, V) at (a_2, d_2, q); W_3, b_3 do not enter."""
        return ch_engine.fit_matrix(self.layer2, self._plan)

    @property
    def layer1(self) -> Layer:
        """(a_1, d_1, q_1 = 0) as an engine layer."""
        return Layer(self.a1, self.sig1, self.d1, None)

    @property
    def layer2(self) -> Layer:
        """(a_2, d_2, q) as an engine layer."""
        return Layer(self.a2, self.sig2, self.d2, self.q)


# Cached values of a state and the variables each depends on.
_CACHED = {"sig1": ("a1",), "sig2": ("a2",), "n1": ("d1",), "n2": ("d2",), "nq": ("q",),
           "fit": ("a2", "d2", "q")}


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
    """B of `eq:GD_W3`, shape (M, N) (the channel engine's fit matrix at (a_2, d_2, q))."""
    return st.fit.B


def compute_group(name: str, st: LySepState, data: LySepData) -> np.ndarray:
    """The constraint residual e_name (or r for "fit") at the state: the engine's layer map applied to
    the auxiliary variables of layer 1, minus those of layer 2 (`eq:var_a`, `eq:var_d`, `eq:var_q`)."""
    if name == "a1":
        return st.W1 @ data.Z + st.b1[:, None] - st.a1
    if name == "a2":
        e = ch_engine.propagate_a(st.W2, st.b2, st.layer1)
        e -= st.a2
        return e
    if name == "d1":
        return st.W1.T[:, :, None] - st.d1
    if name == "d2":
        e = ch_engine.propagate_d(st.W2, st.layer1, data.plan)
        e -= st.d2
        return e
    if name == "q":
        e = ch_engine.propagate_Q(st.W2, st.layer1, data.plan)
        e -= st.q
        return e
    if name == "fit":
        r = st.W3[0] @ st.fit.B
        r += st.b3 * data.K
        r -= data.Y
        return r
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
    return weights_from(data, float(np.sum(st.W2 * st.W2)), np.sum(st.W1 * st.W1, axis=0), st.n1, st.n2, st.nq)


def weights_from(data: LySepData, w2: float, w1: np.ndarray, n1: np.ndarray, n2: np.ndarray,
                 nq: np.ndarray) -> Weights:
    """The rho of every constraint from w2 = ||W_2||^2, w1 = ||W_1(:, j)||^2 (n_in,) and the per-sample
    norms n1, n2 (n_in, N), nq (|S|, N)."""
    k, kj, hj = data.k, data.kj[:, None], data.hj[:, None]
    w1c = w1[:, None]
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
    return penalty_from(terms.E, wt)


def penalty_from(E, wt: Weights) -> float:
    """P from the per-sample squared constraint residuals E(name) (a callable or a mapping's get)."""
    P = wt.rho_a1 @ E("a1") + wt.rho_a2 @ E("a2")
    P += np.sum(wt.rho_d1 * E("d1")) + np.sum(wt.rho_d2 * E("d2"))
    P += wt.rho_q @ np.sum(E("q"), axis=-1)
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
    return loss_parts(terms.r, P, float(np.sum(st.W3 * st.W3)), data.N)


def loss_parts(r: np.ndarray, P: float, w3: float, N: int) -> LossParts:
    """J_S = (1/N) ||r||^2 + (1/N) ||W_3||^2 P, the one formula every evaluation uses (so that equal
    inputs give bit-equal J_S, whichever path computed them)."""
    fit = float(r @ r) / N
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
    elif block in ("a1", "d1", "W2"):
        # Reverse step through the layer map (a_1, d_1) -> (a_2, d_2, q) seeded with the weighted residuals.
        ga, gd, gq = (wt.rho_a2 * terms.e_a2, wt.rho_d2[:, None, :] * terms.e_d2,
                      wt.rho_q[:, None, None] * terms.e_q)
        if block == "W2":
            g = ch_engine.weight_gradient(ga, gd, gq, st.layer1, data.plan)
        else:
            adj_a, adj_d, _ = ch_engine.input_adjoints(st.W2, ga, gd, gq, st.layer1, data.plan,
                                                       outputs=(block[0],))
            del ga, gd, gq
            if block == "a1":
                g = adj_a
                g -= wt.rho_a1 * terms.e_a1
            else:
                g = adj_d
                g -= wt.rho_d1[:, None, :] * terms.e_d1
        g *= cw
    elif block in ("a2", "d2", "q"):
        # Through the fit term: the engine's adjoints of B seeded with G = W_3^T r.
        G = st.W3[0][:, None] * terms.r[None, :]
        channel = {"a2": "a", "d2": "d", "q": "Q"}[block]
        adj = ch_engine.fit_adjoints(G, st.layer2, data.plan, st.fit, channels=(channel,))[channel]
        rho = {"a2": wt.rho_a2, "d2": wt.rho_d2[:, None, :], "q": wt.rho_q[:, None, None]}[block]
        g = adj
        g *= c
        g -= (cw * rho) * getattr(terms, "e_" + block)
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
