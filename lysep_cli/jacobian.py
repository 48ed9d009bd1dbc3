"""Jacobian of the PINN residual with respect to every network parameter, hand-derived.

The residual (`eq:PINN-OR-e/p/h`, :func:`lysep_cli.network.residual`) at sample n is

    R_n = K_n phi_n + sum_j K1_jn d_j phi_n + sum_j K2_jn d_jj phi_n - Y_n.

Its Jacobian is the per-sample version of the reverse pass of :func:`lysep_cli.network.backward`:
seed the output channels with the adjoints (K, K1, K2) of one sample each, run the same adjoint
recursion through the channels (a_l, d_l, q_l), and keep the sample index instead of summing over it
when forming the weight derivatives.  With G_l = [g_a; g_d1..; g_q1..] the adjoints of layer l and
H_{l-1} = [h; h_1..; h_11..] its inputs (h = sigma(a), h_j = sigma'(a) d_j, h_jj = sigma''(a) d_j^2 +
sigma'(a) q_j), both ((1 + 2 n_in), M, N),

    dR_n / dW_l[i, k] = sum_c G_l[c, i, n] H_{l-1}[c, k, n],       dR_n / db_l[i] = g_a[i, n],

and for the first layer (a_1 = W_1 Z + b_1, d_1j = W_1[:, j], q_1j = 0)

    dR_n / dW_1[i, k] = g_a[i, n] Z[k, n] + g_dk[i, n].

R is linear in the output layer (W_L, b_L): R = A [W_L^T; b_L] - Y with
A = [K h + sum_j K1_j h_j + sum_j K2_j h_jj ; K]^T, which is also the output-layer block of the
Jacobian (:func:`output_layer_system`).

Memory: the Jacobian is N x P float64.  At the largest size of the experiments (elliptic-10d,
(L, M) = (3, 150), N = 2000, P = 150*10 + 150 + 150*150 + 150 + 150 + 1 = 24 451) that is 391 MB,
written in place (no (N, M, M) temporary).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .network import Channels, Params, _layer_inputs, activation_adjoints, forward
from .problems import OperatorCoefficients


def n_params(params: Params) -> int:
    """P, the length of :func:`lysep_cli.network.flatten` (params)."""
    return sum(W.size + b.size for W, b in params)


def output_layer_system(params: Params, Z: np.ndarray, coef: OperatorCoefficients,
                        ch: Channels | None = None) -> tuple[np.ndarray, Channels]:
    """The linear system of the residual in the output layer.

    Parameters
    ----------
    params : [(W_l, b_l)], W_L of shape (1, M).
    Z : (n_in, N) points.
    coef : residual coefficients at Z.
    ch : forward channels of ``params`` at ``Z`` (computed if None).

    Returns
    -------
    A : (N, M + 1) with R = A @ concat(W_L.ravel(), b_L) - Y for every (W_L, b_L) (hidden layers fixed).
    ch : the forward channels used.
    """
    if ch is None:
        ch = forward(params, Z)
    h, hd, hdd = _layer_inputs(ch.a[-1], ch.d[-1], ch.q[-1])
    # Output-layer block of `eq:pxi_phi`, `eq:pxii_phi` contracted with the operator coefficients.
    B = coef.K * h + np.sum(coef.K1[:, None, :] * hd, 0) + np.sum(coef.K2[:, None, :] * hdd, 0)  # (M, N)
    A = np.empty((B.shape[1], B.shape[0] + 1))
    A[:, :-1] = B.T
    A[:, -1] = coef.K
    return A, ch


def _stack(x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> np.ndarray:
    """[x; x_1..x_n; x_11..x_nn] as (N, 1 + 2 n_in, M), sample-major for batched products."""
    return np.ascontiguousarray(np.concatenate([x[None], xd, xdd]).transpose(2, 0, 1))


def _column_offsets(params: Params) -> list[tuple[int, int]]:
    """(first column of W_l, first column of b_l) in flatten order."""
    offs, k = [], 0
    for W, b in params:
        offs.append((k, k + W.size))
        k += W.size + b.size
    return offs


def residual_jacobian(params: Params, Z: np.ndarray, coef: OperatorCoefficients,
                      ch: Channels | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """dR/dtheta, shape (N, P), columns in :func:`lysep_cli.network.flatten` order.

    Parameters
    ----------
    params : [(W_l, b_l)] in the paper's shapes.
    Z : (n_in, N) points; coef : residual coefficients at Z; ch : forward channels (computed if None).
    out : optional (N, P) float64 C-contiguous buffer to fill (reused across iterations by pinn-lm,
        which saves re-faulting hundreds of MB per call).

    Notes
    -----
    Vectorised over samples; loops only over layers.  Cost: one forward pass plus, per hidden layer,
    a batched (M x (1 + 2 n_in)) @ ((1 + 2 n_in) x M) product per sample, written straight into the
    Jacobian's columns (no (N, M, M) temporary).
    """
    if ch is None:
        ch = forward(params, Z)
    L = len(params)
    N = Z.shape[1]
    P = n_params(params)
    if out is None:
        out = np.empty((N, P))
    if out.shape != (N, P) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {(N, P)}")
    offs = _column_offsets(params)
    A, _ = output_layer_system(params, Z, coef, ch)
    out[:, offs[-1][0]:] = A
    # Per-sample adjoints of h, h_j, h_jj of the last hidden layer: W_L^T times (K, K1, K2).
    w = params[-1][0][0][:, None]
    H, Hd, Hdd = w * coef.K[None, :], w[None] * coef.K1[:, None, :], w[None] * coef.K2[:, None, :]
    for l in range(L - 2, -1, -1):
        # Through the activation (the step of network.backward; here every sample's own adjoints).
        ga, gd, gq = activation_adjoints(ch.a[l], ch.d[l], ch.q[l], H, Hd, Hdd)
        W, _ = params[l]
        kW, kb = offs[l]
        # dR_n/dW_l as an (N, M, M_in) view of the Jacobian's columns kW .. kb - 1.
        JW = as_strided(out[:, kW:], shape=(N,) + W.shape, strides=(out.strides[0], W.shape[1] * 8, 8))
        if l == 0:
            np.multiply(ga.T[:, :, None], Z.T[:, None, :], out=JW)
            JW += gd.transpose(2, 1, 0)
        else:
            G = _stack(ga, gd, gq)  # (N, 1 + 2 n_in, M)
            Hin = _stack(*_layer_inputs(ch.a[l - 1], ch.d[l - 1], ch.q[l - 1]))
            np.matmul(G.transpose(0, 2, 1), Hin, out=JW)
            H, Hd, Hdd = W.T @ ga, np.matmul(W.T, gd), np.matmul(W.T, gq)
        out[:, kb:kb + ga.shape[0]] = ga.T
    return out
