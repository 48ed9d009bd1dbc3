"""The derivative-channel engine: forward channels, the fit matrix B and their adjoints, any L >= 2.

PINN (network.py), LySep (solvers/lysep/loss.py) and the Jacobian baselines (jacobian.py) all use it.
Hidden layer l carries the paper's auxiliary quantities (`eq:var_a`, `eq:var_d`, `eq:var_q`)

    a_l  = W_l sigma(a_{l-1}) + b_l 1^T                                     (M, N)
    d_lj = W_l (sigma'(a_{l-1}) * d_{l-1,j})                                (n_in, M, N)
    q_lj = W_l (sigma''(a_{l-1}) * d_{l-1,j}^2 + sigma'(a_{l-1}) * q_{l-1,j})

with a_1 = W_1 Z + b_1 1^T, d_1j = W_1(:, j) 1^T and q_1j = 0.

**Groups of second-derivative channels.**  The residual only needs sum_j K-hat_j d_jj phi.  The inputs
whose K-hat_j rows are equal form a group g, and since q_lj enters its recursion linearly,

    Q_lg = sum_{j in g} q_lj = W_l (sigma''(a_{l-1}) * sum_{j in g} d_{l-1,j}^2 + sigma'(a_{l-1}) * Q_{l-1,g}),

so a PINN pass carries one Q per group: 1 for the elliptic problems (K-hat_j = K-hat for all j), 1 for
the parabolic one (the spatial inputs; t has none), 2 for the hyperbolic one (t; the spatial inputs).
LySep keeps one group per channel (:meth:`ChannelPlan.build` with ``grouped=False``): its q_j are
separate auxiliary variables.

**Layer 1 is structured**: d_1j is the column W_1(:, j) for every sample and q_1j = 0, so layer 2's
channels are one stacked product each (no broadcast arrays, no products with zeros):

    d_2j = (W_2 diag W_1(:, j)) sigma'(a_1),     Q_2g = (W_2 diag sum_{j in g} W_1(:, j)^2) sigma''(a_1).

**Output.**  The residual is linear in (W_L, b_L) (`eq:GD_W3`): R = W_L B + b_L K - Y with

    B = K sigma(a) + sigma'(a) * U + sigma''(a) * V,  U = sum_j K_j d_j + sum_g K-hat_g Q_g,
    V = sum_g K-hat_g sum_{j in g} d_j^2                           (a, d, Q of the last hidden layer).

The reverse pass seeds the adjoint G (M, N) of B (G = W_L^T g for sum_n g_n R_n) and walks back
through the same channels (:func:`fit_adjoints`, :func:`backward_step`, :func:`first_layers_backward`).
Shapes: M the width, N the samples, n_in the inputs, n_g the groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lysep_cli.numerics import fused as fused_engine
from lysep_cli.numerics.activation import SIGMA, SigmaValues
from lysep_cli.numerics.problems import OperatorCoefficients
from lysep_cli.numerics.sincos import numba_wanted


@dataclass(frozen=True)
class ChannelPlan:
    """The residual's coefficients arranged by channel.

    K (N,) coefficient of phi; K1 (n_in, N) the K_j of d_j phi; groups: the inputs of each
    second-derivative group; K2 (n_g, N) the K-hat of each group; group_of (n_in,) each input's
    group (-1: no second derivative, e.g. t for the parabolic problem).
    """

    K: np.ndarray
    K1: np.ndarray
    groups: tuple[np.ndarray, ...]
    K2: np.ndarray
    group_of: np.ndarray

    @classmethod
    def build(cls, coef: OperatorCoefficients, grouped: bool = True) -> "ChannelPlan":
        """Group the second-derivative inputs by equal K-hat rows (``grouped``) or one per input."""
        S = np.flatnonzero(coef.second)
        groups: list[list[int]] = []
        for j in S:  # loop over the input dimensions
            for g in groups if grouped else ():
                if np.array_equal(coef.K2[g[0]], coef.K2[j]):
                    g.append(int(j))
                    break
            else:
                groups.append([int(j)])
        group_of = np.full(coef.K1.shape[0], -1)
        for i, g in enumerate(groups):
            group_of[g] = i
        K2 = np.array([coef.K2[g[0]] for g in groups]).reshape(len(groups), coef.K.size)
        return cls(coef.K, coef.K1, tuple(np.array(g) for g in groups), K2, group_of)

    @property
    def n_in(self) -> int:
        return self.K1.shape[0]

    @property
    def n_groups(self) -> int:
        return len(self.groups)


@dataclass
class Layer:
    """Channels of one hidden layer: a (M, N), sigma^(k)(a), d (n_in, M, N), Q (n_g, M, N).

    ``d is None``: layer 1, whose d_1j = w1[:, j] is constant over the samples (``w1`` = W_1, (M, n_in)).
    ``Q is None``: q = 0 (layer 1, and LySep's first layer of auxiliary variables).
    """

    a: np.ndarray
    sig: SigmaValues
    d: np.ndarray | None = None
    Q: np.ndarray | None = None
    w1: np.ndarray | None = None

    @property
    def structured(self) -> bool:
        return self.d is None


def first_layer(W1: np.ndarray, b1: np.ndarray, Z: np.ndarray) -> Layer:
    """a_1 = W_1 Z + b_1 1^T, d_1j = W_1(:, j), q_1j = 0 (Z (n_in, N))."""
    a = W1 @ Z
    a += b1[:, None]
    return Layer(a, SIGMA.values(a), w1=W1)


def hidden_layer(a: np.ndarray, d: np.ndarray | None, Q: np.ndarray | None) -> Layer:
    """A layer from given channel values (LySep's auxiliary variables)."""
    return Layer(a, SIGMA.values(a), d, Q)


def materialise(layer: Layer, plan: ChannelPlan) -> Layer:
    """A structured layer 1 with d_1j written out as (n_in, M, N) arrays (for L = 2 and Jacobians)."""
    if not layer.structured:
        return layer
    M, N = layer.a.shape
    d = np.ascontiguousarray(np.broadcast_to(layer.w1.T[:, :, None], (plan.n_in, M, N)))
    return Layer(layer.a, layer.sig, d, None)


def sum_of_squares(d: np.ndarray, group: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """sum_{j in group} d_j^2, (M, N), for d (n_in, M, N)."""
    out = np.square(d[group[0]], out=out)
    for j in group[1:]:  # loop over the input dimensions of the group
        out += d[j] * d[j]
    return out


def squared_sums(d: np.ndarray, plan: ChannelPlan) -> np.ndarray:
    """D2_g = sum_{j in g} d_j^2 for every group, (n_g, M, N)."""
    out = np.empty((plan.n_groups,) + d.shape[1:])
    for i, g in enumerate(plan.groups):
        sum_of_squares(d, g, out[i])
    return out


def _w1_squares(w1: np.ndarray, plan: ChannelPlan) -> np.ndarray:
    """sum_{j in g} W_1(:, j)^2 per group, (M, n_g)."""
    out = np.empty((w1.shape[0], plan.n_groups))
    for i, g in enumerate(plan.groups):
        out[:, i] = np.sum(w1[:, g] ** 2, axis=1)
    return out


# ------------------------------------------------------------------------------------------------
# Forward: from the channels of layer l-1 to the pre-activation channels of layer l.


def layer_inputs(prev: Layer, plan: ChannelPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """h = sigma(a), h_j = sigma'(a) d_j, hQ_g = sigma''(a) sum_{j in g} d_j^2 + sigma'(a) Q_g.

    For a general (not structured) layer; shapes (M, N), (n_in, M, N), (n_g, M, N).
    """
    s = prev.sig
    hd = s.s1[None] * prev.d
    hQ = squared_sums(prev.d, plan)
    hQ *= s.s2[None]
    if prev.Q is not None:
        hQ += s.s1[None] * prev.Q
    return s.s0, hd, hQ


def stacked_first_weights(W: np.ndarray, w1: np.ndarray, plan: ChannelPlan) -> tuple[np.ndarray, np.ndarray]:
    """A_d = [W diag W_1(:, j)]_j (n_in*M, M) and A_Q = [W diag sum_{j in g} W_1(:, j)^2]_g (n_g*M, M)."""
    A_d = (W[None, :, :] * w1.T[:, None, :]).reshape(-1, W.shape[1])
    A_Q = (W[None, :, :] * _w1_squares(w1, plan).T[:, None, :]).reshape(-1, W.shape[1])
    return A_d, A_Q


def propagate_a(W: np.ndarray, b: np.ndarray, prev: Layer) -> np.ndarray:
    """a_l = W_l sigma(a_{l-1}) + b_l 1^T, (M, N)."""
    a = W @ prev.sig.s0
    a += b[:, None]
    return a


def propagate_d(W: np.ndarray, prev: Layer, plan: ChannelPlan, A_d: np.ndarray | None = None) -> np.ndarray:
    """d_lj = W_l (sigma'(a_{l-1}) d_{l-1,j}) for every input j, (n_in, M, N)."""
    M, N = W.shape[0], prev.a.shape[1]
    if prev.structured:
        A_d = stacked_first_weights(W, prev.w1, plan)[0] if A_d is None else A_d
        return (A_d @ prev.sig.s1).reshape(plan.n_in, M, N)
    out = np.empty((prev.d.shape[0], M, N))
    h = np.empty_like(prev.a)
    for j in range(prev.d.shape[0]):  # loop over the input dimensions: one GEMM each, (M, N) temporaries
        np.multiply(prev.sig.s1, prev.d[j], out=h)
        np.matmul(W, h, out=out[j])
    return out


def group_input(prev: Layer, i: int, group: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """hQ_g = sigma''(a) sum_{j in g} d_j^2 + sigma'(a) Q_g of a general layer, (M, N)."""
    h = sum_of_squares(prev.d, group, out)
    h *= prev.sig.s2
    if prev.Q is not None:
        h += prev.sig.s1 * prev.Q[i]
    return h


def propagate_Q(W: np.ndarray, prev: Layer, plan: ChannelPlan, A_Q: np.ndarray | None = None) -> np.ndarray:
    """Q_lg = W_l (sigma''(a_{l-1}) sum_{j in g} d_{l-1,j}^2 + sigma'(a_{l-1}) Q_{l-1,g}), (n_g, M, N)."""
    M, N = W.shape[0], prev.a.shape[1]
    if prev.structured:
        A_Q = stacked_first_weights(W, prev.w1, plan)[1] if A_Q is None else A_Q
        return (A_Q @ prev.sig.s2).reshape(plan.n_groups, M, N)
    out = np.empty((plan.n_groups, M, N))
    h = np.empty_like(prev.a)
    for i, g in enumerate(plan.groups):
        np.matmul(W, group_input(prev, i, g, h), out=out[i])
    return out


def next_layer(W: np.ndarray, b: np.ndarray, prev: Layer, plan: ChannelPlan) -> Layer:
    """The channels of layer l from those of layer l-1 (`eq:var_a`, `eq:var_d`, `eq:var_q`)."""
    A_d = A_Q = None
    if prev.structured:
        A_d, A_Q = stacked_first_weights(W, prev.w1, plan)
    return hidden_layer(propagate_a(W, b, prev), propagate_d(W, prev, plan, A_d),
                        propagate_Q(W, prev, plan, A_Q) if plan.n_groups else _no_groups(W, prev))


def _no_groups(W: np.ndarray, prev: Layer) -> np.ndarray:
    return np.zeros((0, W.shape[0], prev.a.shape[1]))


# ------------------------------------------------------------------------------------------------
# Output: the fit matrix B of `eq:GD_W3` and its adjoints.


@dataclass
class Fit:
    """B = K sigma(a) + sigma'(a) U + sigma''(a) V and the sums U, V it is built from, each (M, N)."""

    B: np.ndarray
    U: np.ndarray
    V: np.ndarray


def fit_matrix(last: Layer, plan: ChannelPlan, *, fused: bool = True) -> Fit:
    """B of `eq:GD_W3` at the last hidden layer (a general layer: see :func:`materialise`).  Large layers
    take the fused kernel (lysep_cli/numerics/fused.py): the same bits in one pass."""
    s, d = last.sig, last.d
    kernel = fused_engine.fit_sums_kernel() if fused and numba_wanted(last.a.size) else None
    if kernel is not None:
        B, U, V = np.empty_like(last.a), np.empty_like(last.a), np.empty_like(last.a)
        gflat, gstart = fused_engine.group_index(plan.groups)
        Q = last.Q if last.Q is not None else np.zeros((1, 1, 1))
        kernel(d, Q, last.Q is not None, plan.K, plan.K1, plan.K2, gflat, gstart, s.s0, s.s1, s.s2, B, U, V)
        return Fit(B, U, V)
    U = np.zeros_like(last.a)
    for j in range(plan.n_in):  # loop over the input dimensions: U += K_j d_j
        U += plan.K1[j] * d[j]
    V = np.zeros_like(last.a)
    for i, g in enumerate(plan.groups):
        V += plan.K2[i] * sum_of_squares(d, g)
        if last.Q is not None:
            U += plan.K2[i] * last.Q[i]
    return fit_from_sums(plan, s, U, V)


def fit_from_sums(plan: ChannelPlan, s: SigmaValues, U: np.ndarray, V: np.ndarray) -> Fit:
    """B = K sigma(a) + sigma'(a) U + sigma''(a) V from the sums U, V (M, N)."""
    B = plan.K * s.s0
    B += s.s1 * U
    B += s.s2 * V
    return Fit(B, U, V)


def fit_adjoints(G: np.ndarray, last: Layer, plan: ChannelPlan, fit: Fit,
                 channels: tuple[str, ...] = ("a", "d", "Q")) -> dict[str, np.ndarray]:
    """Adjoints of (a, d, Q) of the last hidden layer from the adjoint G (M, N) of B:

        g_a  = G (K sigma' + sigma'' U + sigma''' V)
        g_dj = G (sigma' K_j + 2 sigma'' K-hat_g(j) d_j)
        g_Qg = G sigma' K-hat_g

    ``channels`` selects which to compute (LySep's a_2, d_2, q blocks need one each).
    """
    s, out = last.sig, {}
    if "a" in channels:
        ga = plan.K * s.s1
        ga += s.s2 * fit.U
        ga += s.s3 * fit.V
        ga *= G
        out["a"] = ga
    if "d" in channels or "Q" in channels:
        Gs1 = G * s.s1
    if "d" in channels:
        gd = Gs1[None] * plan.K1[:, None, :]
        G2s2 = 2.0 * G * s.s2
        for i, g in enumerate(plan.groups):
            for j in g:  # loop over the input dimensions
                gd[j] += (G2s2 * plan.K2[i]) * last.d[j]
        out["d"] = gd
    if "Q" in channels:
        out["Q"] = Gs1[None] * plan.K2[:, None, :]
    return out


# ------------------------------------------------------------------------------------------------
# Reverse steps through a layer map (a, d, Q)_{l-1} -> (a, d, Q)_l.


def weight_gradient(ga: np.ndarray, gd: np.ndarray, gQ: np.ndarray | None, prev: Layer,
                    plan: ChannelPlan) -> np.ndarray:
    """dW_l = g_a h^T + sum_j g_dj h_j^T + sum_g g_Qg hQ_g^T for a general layer l-1, (M, M_prev)."""
    s = prev.sig
    gW = ga @ s.s0.T
    h = np.empty_like(prev.a)
    for j in range(gd.shape[0]):  # loop over the input dimensions: one GEMM each, h_j one at a time
        np.multiply(s.s1, prev.d[j], out=h)
        gW += gd[j] @ h.T
    if gQ is not None:
        for i, g in enumerate(plan.groups):
            gW += gQ[i] @ group_input(prev, i, g, h).T
    return gW


def input_adjoints(W: np.ndarray, ga: np.ndarray, gd: np.ndarray, gQ: np.ndarray | None, prev: Layer,
                   plan: ChannelPlan, outputs: tuple[str, ...] = ("a", "d", "Q")
                   ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Adjoints of a general layer l-1's (a, d, Q) from those of layer l's (a, d, Q):

        H = W^T g_a, H_j = W^T g_dj, HQ_g = W^T g_Qg, and through h, h_j, hQ_g:
        g_a'  = sigma' H + sigma'' sum_j d_j H_j + sigma''' sum_g (sum_{j in g} d_j^2) HQ_g + sigma'' sum_g Q_g HQ_g
        g_dj' = sigma' H_j + 2 sigma'' d_j HQ_g(j)
        g_Qg' = sigma' HQ_g                                       (None when prev.Q is None)

    ``outputs`` selects which of the three to compute (the others are returned as None).
    """
    s, d = prev.sig, prev.d
    WT = W.T
    Hd = np.matmul(WT, gd)
    HQ = np.matmul(WT, gQ) if gQ is not None and plan.n_groups else None
    ga_prev = gd_prev = gQ_prev = None
    if "a" in outputs:
        ga_prev = np.einsum("jmn,jmn->mn", d, Hd)
        ga_prev *= s.s2
        ga_prev += s.s1 * (WT @ ga)
        for i, g in enumerate(plan.groups if HQ is not None else ()):
            ga_prev += s.s3 * sum_of_squares(d, g) * HQ[i]
            if prev.Q is not None:
                ga_prev += s.s2 * prev.Q[i] * HQ[i]
    if "d" in outputs:
        gd_prev = Hd
        gd_prev *= s.s1[None]
        for i, g in enumerate(plan.groups if HQ is not None else ()):
            t = 2.0 * s.s2 * HQ[i]
            for j in g:  # loop over the input dimensions
                gd_prev[j] += t * d[j]
    if "Q" in outputs and HQ is not None and prev.Q is not None:
        gQ_prev = HQ * s.s1[None]
    return ga_prev, gd_prev, gQ_prev


def first_layers_backward(W2: np.ndarray, ga: np.ndarray, gd: np.ndarray, gQ: np.ndarray, layer1: Layer,
                          plan: ChannelPlan, Z: np.ndarray):
    """Gradients of (W_2, b_2) and (W_1, b_1) from the adjoints of layer 2's (a, d, Q), layer 1 structured.

    With P_d[j] = g_dj sigma'(a_1)^T and P_Q[g] = g_Qg sigma''(a_1)^T (one stacked product each):

        dW_2 = g_a sigma(a_1)^T + sum_j P_d[j] diag W_1(:, j) + sum_g P_Q[g] diag sum_{j in g} W_1(:, j)^2
        g_a1 = sigma'(a_1) W_2^T g_a + sigma''(a_1) A_d^T g_d + sigma'''(a_1) A_Q^T g_Q
        dW_1 = g_a1 Z^T + [sum_k W_2[k, :] P_d[j][k, :]]_j + 2 W_1(:, j) sum_k W_2[k, :] P_Q[g(j)][k, :]

    Returns ((dW_2, db_2), (dW_1, db_1)).
    """
    s, w1 = layer1.sig, layer1.w1
    n_in, M, N = gd.shape
    n_g = plan.n_groups
    A_d, A_Q = stacked_first_weights(W2, w1, plan)
    gd2 = gd.reshape(n_in * M, N)
    P_d = (gd2 @ s.s1.T).reshape(n_in, M, -1)
    gW2 = ga @ s.s0.T
    gW2 += np.einsum("jkm,mj->km", P_d, w1)
    ga1 = s.s1 * (W2.T @ ga)
    ga1 += s.s2 * (A_d.T @ gd2)
    gW1_d = np.einsum("km,jkm->mj", W2, P_d)
    if n_g:
        gQ2 = gQ.reshape(n_g * M, N)
        P_Q = (gQ2 @ s.s2.T).reshape(n_g, M, -1)
        gW2 += np.einsum("gkm,mg->km", P_Q, _w1_squares(w1, plan))
        ga1 += s.s3 * (A_Q.T @ gQ2)
        S = plan.group_of >= 0
        gW1_d[:, S] += 2.0 * w1[:, S] * np.einsum("km,gkm->mg", W2, P_Q)[:, plan.group_of[S]]
    gW1 = ga1 @ Z.T + gW1_d
    return (gW2, ga.sum(axis=1)), (gW1, ga1.sum(axis=1))
