"""The FNN of `eq:FNN` with its derivative channels, and the PINN residual and its gradient.

phi(z) = W_L sigma(... sigma(W_1 z + b_1) ...) + b_L, sigma = sin, W_l of shape (out, in).

The forward pass carries, per hidden layer l, the paper's auxiliary quantities (`eq:var_a`,
`eq:var_d`, `eq:var_q`):

    a_l  = W_l sigma(a_{l-1}) + b_l 1^T                                (M, N)
    d_lj = d_j a_l = W_l (sigma'(a_{l-1}) * d_{l-1,j})                 (n_in, M, N)
    q_lj = d_jj a_l = W_l (sigma''(a_{l-1}) * d_{l-1,j}^2 + sigma'(a_{l-1}) * q_{l-1,j})

with a_1 = W_1 Z + b_1 1^T, d_1j = W_1(:, j) 1^T, q_1j = 0; and then (`eq:pxi_phi`, `eq:pxii_phi`)

    phi      = W_L sigma(a_{L-1}) + b_L
    d_j phi  = W_L (sigma'(a_{L-1}) * d_{L-1,j})
    d_jj phi = W_L (sigma''(a_{L-1}) * d_{L-1,j}^2 + sigma'(a_{L-1}) * q_{L-1,j}).

For L = 3 the paper's q_i is q_{2i} = W_2 (sigma''(a_1) * d_{1i}^2).  The channels are computed by the
engine of :mod:`lysep_cli.numerics.channels` (which PINN, LySep and the baselines share); this module holds the
network's parameters, the full per-input channels (:func:`forward`, for inspection, tests and the
Levenberg-Marquardt residual), and the PINN loss with its hand-derived gradient (the fast pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lysep_cli.numerics import channels as ch_engine
from lysep_cli.numerics.activation import SIGMA
from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.problems import OperatorCoefficients

Array = Any  # an array of the namespace xp (numpy.ndarray or cupy.ndarray)
Params = list[tuple[Array, Array]]
"""[(W_1, b_1), ..., (W_L, b_L)]: W_l (out, in), b_l (out,); stacked: W_l (S, out, in), b_l (S, out)."""


#: the initial networks a run can start from (the ``init`` setting of the network solvers)
INITS = ("paper", "torch")


def init_params(n_in: int, L: int, M: int, seed: int, init: str = "paper") -> Params:
    """The seeded initial network, drawn in order W_1, b_1, ..., W_L, b_L from one generator.

    ``init``: "paper" (the default): W_l, b_l ~ U(-M^{-1/2}, M^{-1/2}) for every layer (Section 4);
    "torch": PyTorch's nn.Linear default, W_l, b_l ~ U(-fan_in^{-1/2}, fan_in^{-1/2}) with fan_in the
    layer's input width (n_in for the first layer, M after).  The draws are the same numbers scaled per
    layer, so layers 2..L of the two are bit-identical and W_1, b_1 differ by the factor sqrt(M / n_in).

    Shapes: W_1 (M, n_in), W_2..W_{L-1} (M, M), W_L (1, M); b_l (M,), b_L (1,).
    """
    if L < 2 or M < 1:
        raise ValueError(f"need L >= 2 and M >= 1, got L={L}, M={M}")
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}; choose from {', '.join(INITS)}")
    rng = np.random.default_rng(seed)
    sizes = [n_in] + [M] * (L - 1) + [1]
    scales = [M ** -0.5] * L if init == "paper" else [fan_in ** -0.5 for fan_in in sizes[:-1]]
    return [
        (rng.uniform(-s, s, (sizes[l + 1], sizes[l])), rng.uniform(-s, s, sizes[l + 1]))
        for l, s in enumerate(scales)
    ]


def flatten(params: Params) -> np.ndarray:
    return np.concatenate([np.concatenate([W.ravel(), b.ravel()]) for W, b in params])


def unflatten(theta: np.ndarray, like: Params) -> Params:
    out, k = [], 0
    for W, b in like:
        nW, nb = W.size, b.size
        out.append((theta[k:k + nW].reshape(W.shape), theta[k + nW:k + nW + nb].copy()))
        k += nW + nb
    return out


@dataclass
class Channels:
    """Forward values of one pass.

    a, d, q : per hidden layer l = 1..L-1: a (M, N), d (n_in, M, N), q (n_in, M, N).
    phi (N,), phi_d (n_in, N), phi_dd (n_in, N).
    """

    a: list[np.ndarray]
    d: list[np.ndarray]
    q: list[np.ndarray]
    phi: np.ndarray
    phi_d: np.ndarray
    phi_dd: np.ndarray


def _all_inputs_plan(n_in: int) -> ChannelPlan:
    """A plan carrying q_j for every input separately (coefficients unused)."""
    z = np.zeros((n_in, 0))
    return ChannelPlan(np.zeros(0), z, tuple(np.array([j]) for j in range(n_in)), z, np.arange(n_in))


def forward(params: Params, Z: np.ndarray) -> Channels:
    """All channels at the points Z (n_in, N), q_j for every input j."""
    n_in, N = Z.shape
    plan = _all_inputs_plan(n_in)
    layers = [ch_engine.first_layer(np, *params[0], Z)]
    for W, b in params[1:-1]:
        layers.append(ch_engine.next_layer(np, W, b, layers[-1], plan))
    full = [ch_engine.materialise(np, layer, plan) for layer in layers]
    A = [layer.a for layer in full]
    D = [layer.d for layer in full]
    Q = [np.zeros_like(full[0].d)] + [layer.Q for layer in full[1:]]
    WL, bL = params[-1]
    h, hd, hdd = ch_engine.layer_inputs(np, ch_engine.Layer(A[-1], full[-1].sig, D[-1], Q[-1]), plan)
    phi = (WL @ h)[0] + bL[0]
    phi_d = np.matmul(WL, hd)[:, 0, :]
    phi_dd = np.matmul(WL, hdd)[:, 0, :]
    return Channels(A, D, Q, phi, phi_d, phi_dd)


def value(params: Params, Z: np.ndarray) -> np.ndarray:
    """phi(Z) only, shape (N,)."""
    h = Z
    for W, b in params[:-1]:
        h = SIGMA(W @ h + b[:, None])
    WL, bL = params[-1]
    return (WL @ h)[0] + bL[0]


def residual(ch: Channels, coef: OperatorCoefficients, Y: np.ndarray) -> np.ndarray:
    """R = K phi + sum_j K1_j d_j phi + sum_j K2_j d_jj phi - Y, shape (N,) (`eq:PINN-OR-e/p/h`)."""
    return coef.K * ch.phi + np.sum(coef.K1 * ch.phi_d, 0) + np.sum(coef.K2 * ch.phi_dd, 0) - Y


@dataclass
class PinnPass:
    """One forward pass of the engine: hidden layers 1..L-1, the fit matrix at the last, R ((S,) N)."""

    layers: list[ch_engine.Layer]
    last: ch_engine.Layer
    fit: ch_engine.Fit
    R: Array


def pinn_pass(params: Params, Z: Array, plan: ChannelPlan, Y: Array, xp: Any = np) -> PinnPass:
    """Channels (second derivatives grouped as the plan says), B of `eq:GD_W3` and R = W_L B + b_L K - Y, for
    one network or a stack of them (a leading seed axis on every W_l, b_l; channels.py)."""
    layers = [ch_engine.first_layer(xp, *params[0], Z)]
    for W, b in params[1:-1]:
        layers.append(ch_engine.next_layer(xp, W, b, layers[-1], plan))
    last = ch_engine.materialise(xp, layers[-1], plan)
    fit = ch_engine.fit_matrix(xp, last, plan)
    WL, bL = params[-1]
    R = xp.matmul(WL, fit.B)[..., 0, :]
    R += bL[..., 0:1] * plan.K
    R -= Y
    return PinnPass(layers, last, fit, R)


def pinn_loss(params: Params, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray,
              plan: ChannelPlan | None = None) -> float:
    """J = (1/N) ||R||^2 (`eq:J-elliptic`, `eq:J-parabolic`, `eq:J-hyberbolic`)."""
    R = pinn_pass(params, Z, plan or ChannelPlan.build(coef), Y).R
    return float(R @ R / R.size)


def backward(params: Params, Z: Array, fp: PinnPass, plan: ChannelPlan, g: Array, xp: Any = np) -> Params:
    """Gradients of sum_n g_n R_n with respect to every (W_l, b_l), g ((S,) N): the reverse pass of the engine."""
    L = len(params)
    grads: Params = [None] * L  # type: ignore[list-item]
    WL, _ = params[-1]
    grads[-1] = (ch_engine._T(xp, xp.matmul(fp.fit.B, g[..., :, None])), ch_engine._dot(xp, g, plan.K)[..., None])
    G = ch_engine._T(xp, WL) * g[..., None, :]  # adjoint of B
    ga, gd, gQ = ch_engine.fit_adjoints(xp, G, fp.last, plan, fp.fit)
    if L == 2:  # layer 1 is the last hidden layer: d_1j = W_1(:, j), q_1j = 0
        grads[0] = (xp.matmul(ga, Z.T) + ch_engine._T(xp, gd.sum(axis=-1)), ga.sum(axis=-1))
        return grads
    for l in range(L - 2, 1, -1):  # W_{l+1} maps hidden layer l to l+1 (0-based list index l)
        W, _ = params[l]
        prev = fp.layers[l - 1]
        grads[l] = (ch_engine.weight_gradient(xp, ga, gd, gQ, prev, plan), ga.sum(axis=-1))
        ga, gd, gQ = ch_engine.input_adjoints(xp, W, ga, gd, gQ, prev, plan)
    grads[1], grads[0] = ch_engine.first_layers_backward(xp, params[1][0], ga, gd, gQ, fp.layers[0], plan, Z,
                                                         fp.layers[1].first)
    return grads


def loss_and_grad(params: Params, Z: Array, plan: ChannelPlan, Y: Array, xp: Any = np) -> tuple[Array, Params]:
    """J = (1/N) ||R||^2 ((S,) or a scalar) and dJ/d(W_l, b_l) for every layer, for one network or a stack."""
    fp = pinn_pass(params, Z, plan, Y, xp)
    N = fp.R.shape[-1]
    J = ch_engine._dot(xp, fp.R, fp.R) / N
    return J, backward(params, Z, fp, plan, (2.0 / N) * fp.R, xp)


def pinn_loss_and_grad(params: Params, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray,
                       plan: ChannelPlan | None = None) -> tuple[float, Params]:
    """J and dJ/d(W_l, b_l) of one network (:func:`loss_and_grad` without a seed axis)."""
    J, grads = loss_and_grad(params, Z, plan or ChannelPlan.build(coef), Y)
    return float(J), grads
