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

For L = 3 the paper's q_i is q_{2i} = W_2 (sigma''(a_1) * d_{1i}^2).  PINN, LySep and the baselines all
use these channels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .problems import OperatorCoefficients

Params = list[tuple[np.ndarray, np.ndarray]]
"""[(W_1, b_1), ..., (W_L, b_L)]: W_l (out, in), b_l (out,)."""


# sigma = sin and its derivatives; Theorem 2.1's constants are all 1 for sin.
def sigma(z: np.ndarray) -> np.ndarray:
    return np.sin(z)


def sigma1(z: np.ndarray) -> np.ndarray:
    return np.cos(z)


def sigma2(z: np.ndarray) -> np.ndarray:
    return -np.sin(z)


def sigma3(z: np.ndarray) -> np.ndarray:
    return -np.cos(z)


def init_params(n_in: int, L: int, M: int, seed: int) -> Params:
    """W_l, b_l ~ U(-M^{-1/2}, M^{-1/2}) (Section 4), drawn in order W_1, b_1, ..., W_L, b_L.

    Shapes: W_1 (M, n_in), W_2..W_{L-1} (M, M), W_L (1, M); b_l (M,), b_L (1,).
    """
    if L < 2 or M < 1:
        raise ValueError(f"need L >= 2 and M >= 1, got L={L}, M={M}")
    rng = np.random.default_rng(seed)
    s = M ** -0.5
    sizes = [n_in] + [M] * (L - 1) + [1]
    return [
        (rng.uniform(-s, s, (sizes[l + 1], sizes[l])), rng.uniform(-s, s, sizes[l + 1]))
        for l in range(L)
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


def _layer_inputs(a: np.ndarray, d: np.ndarray, q: np.ndarray):
    """h = sigma(a), h_j = sigma'(a) d_j, h_jj = sigma''(a) d_j^2 + sigma'(a) q_j."""
    s1, s2 = sigma1(a), sigma2(a)
    return sigma(a), s1 * d, s2 * d * d + s1 * q


def forward(params: Params, Z: np.ndarray) -> Channels:
    """All channels at the points Z (n_in, N)."""
    (W1, b1) = params[0]
    n_in, N = Z.shape
    a = W1 @ Z + b1[:, None]
    d = np.broadcast_to(W1.T[:, :, None], (n_in, W1.shape[0], N))
    q = np.zeros((n_in, W1.shape[0], N))
    A, D, Q = [a], [d], [q]
    for W, b in params[1:-1]:
        h, hd, hdd = _layer_inputs(a, d, q)
        a = W @ h + b[:, None]
        d = np.matmul(W, hd)
        q = np.matmul(W, hdd)
        A.append(a), D.append(d), Q.append(q)
    WL, bL = params[-1]
    h, hd, hdd = _layer_inputs(a, d, q)
    phi = (WL @ h)[0] + bL[0]
    phi_d = np.matmul(WL, hd)[:, 0, :]
    phi_dd = np.matmul(WL, hdd)[:, 0, :]
    return Channels(A, D, Q, phi, phi_d, phi_dd)


def value(params: Params, Z: np.ndarray) -> np.ndarray:
    """phi(Z) only, shape (N,)."""
    h = Z
    for W, b in params[:-1]:
        h = sigma(W @ h + b[:, None])
    WL, bL = params[-1]
    return (WL @ h)[0] + bL[0]


def residual(ch: Channels, coef: OperatorCoefficients, Y: np.ndarray) -> np.ndarray:
    """R = K phi + sum_j K1_j d_j phi + sum_j K2_j d_jj phi - Y, shape (N,) (`eq:PINN-OR-e/p/h`)."""
    return coef.K * ch.phi + np.sum(coef.K1 * ch.phi_d, 0) + np.sum(coef.K2 * ch.phi_dd, 0) - Y


def pinn_loss(params: Params, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray) -> float:
    """J = (1/N) ||R||^2 (`eq:J-elliptic`, `eq:J-parabolic`, `eq:J-hyberbolic`)."""
    R = residual(forward(params, Z), coef, Y)
    return float(R @ R / R.size)


def activation_adjoints(a: np.ndarray, d: np.ndarray, q: np.ndarray, H: np.ndarray, Hd: np.ndarray,
                        Hdd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Adjoints of (a, d_j, q_j) from those of h = sigma(a), h_j = sigma'(a) d_j, h_jj = sigma''(a) d_j^2 + sigma'(a) q_j.

    Shapes: a (M, N); d, q, Hd, Hdd (n_in, M, N) (a trailing sample axis of any length works too);
    H like a.  Returns (ga like a, gd like d, gq like q).
    """
    s1, s2, s3 = sigma1(a), sigma2(a), sigma3(a)
    ga = s1 * H + np.sum(s2 * d * Hd + (s3 * d * d + s2 * q) * Hdd, axis=0)
    return ga, s1 * Hd + 2.0 * s2 * d * Hdd, s1 * Hdd


def _contract(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """sum_j A_j B_j^T for A (n_in, M, N), B (n_in, K, N): shape (M, K)."""
    return np.tensordot(A, B, axes=([0, 2], [0, 2]))


def backward(params: Params, Z: np.ndarray, ch: Channels, g_phi: np.ndarray, g_phi_d: np.ndarray,
             g_phi_dd: np.ndarray) -> Params:
    """Reverse pass: gradients with respect to every (W_l, b_l) of sum_n (g_phi phi + g_phi_d . phi_d + ...).

    g_phi (N,), g_phi_d (n_in, N), g_phi_dd (n_in, N) are the adjoints of the output channels.
    """
    L = len(params)
    grads: Params = [None] * L  # type: ignore[list-item]
    # Output layer.
    WL, _ = params[-1]
    a, d, q = ch.a[-1], ch.d[-1], ch.q[-1]
    h, hd, hdd = _layer_inputs(a, d, q)
    gW = (h @ g_phi + np.tensordot(g_phi_d, hd, axes=([0, 1], [0, 2]))
          + np.tensordot(g_phi_dd, hdd, axes=([0, 1], [0, 2])))[None, :]
    grads[-1] = (gW, np.array([g_phi.sum()]))
    # Adjoints of h, h_j, h_jj.
    w = WL[0][:, None]
    H, Hd, Hdd = w * g_phi[None, :], w[None] * g_phi_d[:, None, :], w[None] * g_phi_dd[:, None, :]
    for l in range(L - 2, -1, -1):
        ga, gd, gq = activation_adjoints(ch.a[l], ch.d[l], ch.q[l], H, Hd, Hdd)
        W, _ = params[l]
        if l == 0:
            # a_1 = W_1 Z + b_1, d_1j = W_1(:, j), q_1j = 0.
            grads[0] = (ga @ Z.T + gd.sum(axis=2).T, ga.sum(axis=1))
            break
        h, hd, hdd = _layer_inputs(ch.a[l - 1], ch.d[l - 1], ch.q[l - 1])
        gW = ga @ h.T + _contract(gd, hd) + _contract(gq, hdd)
        grads[l] = (gW, ga.sum(axis=1))
        H, Hd, Hdd = W.T @ ga, np.matmul(W.T, gd), np.matmul(W.T, gq)
    return grads


def pinn_loss_and_grad(params: Params, Z: np.ndarray, coef: OperatorCoefficients,
                       Y: np.ndarray) -> tuple[float, Params]:
    """J and dJ/d(W_l, b_l) for every layer, hand-derived reverse mode through the channels."""
    ch = forward(params, Z)
    R = residual(ch, coef, Y)
    N = R.size
    g = 2.0 * R / N
    grads = backward(params, Z, ch, g * coef.K, g[None] * coef.K1, g[None] * coef.K2)
    return float(R @ R / N), grads
