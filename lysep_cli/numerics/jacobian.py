"""Jacobian of the PINN residual with respect to every network parameter, hand-derived.

The residual (`eq:PINN-OR-e/p/h`, :func:`lysep_cli.numerics.network.residual`) at sample n is

    R_n = K_n phi_n + sum_j K1_jn d_j phi_n + sum_j K2_jn d_jj phi_n - Y_n.

Its Jacobian is the per-sample version of the reverse pass of :func:`lysep_cli.numerics.network.backward`
(the channel engine, :mod:`lysep_cli.numerics.channels`): seed the output channels with the adjoints (K, K1, K2) of one sample each, run the same adjoint
recursion through the channels (a_l, d_l, q_l), and keep the sample index instead of summing over it
when forming the weight derivatives.  With G_l = [g_a; g_d1..; g_Q1..] the adjoints of layer l and
H_{l-1} = [h; h_1..; hQ_1..] its inputs (h = sigma(a), h_j = sigma'(a) d_j, hQ_g = sigma''(a)
sum_{j in g} d_j^2 + sigma'(a) Q_g, the second-derivative channels in the engine's groups), both
((1 + n_in + n_g), M, N),

    dR_n / dW_l[i, k] = sum_c G_l[c, i, n] H_{l-1}[c, k, n],       dR_n / db_l[i] = g_a[i, n],

and for the first layer (a_1 = W_1 Z + b_1, d_1j = W_1[:, j], q_1j = 0)

    dR_n / dW_1[i, k] = g_a[i, n] Z[k, n] + g_dk[i, n].

R is linear in the output layer (W_L, b_L): R = A [W_L^T; b_L] - Y with A = [B; K]^T and B the fit
matrix of `eq:GD_W3` (:func:`lysep_cli.numerics.channels.fit_matrix`), which is also the output-layer block of
the Jacobian (:func:`output_layer_system`).

Memory: the Jacobian is N x P float64.  At the largest size of the experiments (elliptic-10d,
(L, M) = (3, 150), N = 2000, P = 150*10 + 150 + 150*150 + 150 + 150 + 1 = 24 451) that is 391 MB,
written in place (no (N, M, M) temporary).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from lysep_cli.numerics import channels as ch_engine
from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.network import Params, PinnPass, pinn_pass
from lysep_cli.numerics.problems import OperatorCoefficients


def n_params(params: Params) -> int:
    """P, the length of :func:`lysep_cli.numerics.network.flatten` (params)."""
    return sum(W.size + b.size for W, b in params)


def output_layer_system(params: Params, Z: np.ndarray, coef: OperatorCoefficients,
                        fp: PinnPass | None = None) -> tuple[np.ndarray, PinnPass]:
    """The linear system of the residual in the output layer.

    Parameters
    ----------
    params : [(W_l, b_l)], W_L of shape (1, M).
    Z : (n_in, N) points.
    coef : residual coefficients at Z.
    fp : the engine's forward pass of ``params`` at ``Z`` (computed if None).

    Returns
    -------
    A : (N, M + 1) with R = A @ concat(W_L.ravel(), b_L) - Y for every (W_L, b_L) (hidden layers fixed).
    fp : the forward pass used.
    """
    if fp is None:
        fp = pinn_pass(params, Z, ChannelPlan.build(coef), np.zeros(Z.shape[1]))
    B = fp.fit.B  # (M, N)
    A = np.empty((B.shape[1], B.shape[0] + 1))
    A[:, :-1] = B.T
    A[:, -1] = coef.K
    return A, fp


def _stack(x: np.ndarray, xd: np.ndarray, xQ: np.ndarray) -> np.ndarray:
    """[x; x_1..x_n; xQ_1..xQ_g] as (N, 1 + n_in + n_g, M), sample-major for batched products."""
    return np.ascontiguousarray(np.concatenate([x[None], xd, xQ]).transpose(2, 0, 1))


def _column_offsets(params: Params) -> list[tuple[int, int]]:
    """(first column of W_l, first column of b_l) in flatten order."""
    offs, k = [], 0
    for W, b in params:
        offs.append((k, k + W.size))
        k += W.size + b.size
    return offs


def residual_jacobian(params: Params, Z: np.ndarray, coef: OperatorCoefficients,
                      fp: PinnPass | None = None, out: np.ndarray | None = None,
                      plan: ChannelPlan | None = None) -> np.ndarray:
    """dR/dtheta, shape (N, P), columns in :func:`lysep_cli.numerics.network.flatten` order.

    Parameters
    ----------
    params : [(W_l, b_l)] in the paper's shapes.
    Z : (n_in, N) points; coef : residual coefficients at Z.
    fp : the engine's forward pass at ``params`` made with ``plan`` (computed if None).
    out : optional (N, P) float64 C-contiguous buffer to fill (reused across iterations by pinn-lm,
        which saves re-faulting hundreds of MB per call).
    plan : the channel plan of ``coef`` (built if None).

    Notes
    -----
    Vectorised over samples; loops only over layers.  Cost: one forward pass plus, per hidden layer,
    a batched (M x (1 + n_in + n_g)) @ ((1 + n_in + n_g) x M) product per sample, written straight into
    the Jacobian's columns (no (N, M, M) temporary).
    """
    plan = plan or ChannelPlan.build(coef)
    if fp is None:
        fp = pinn_pass(params, Z, plan, np.zeros(Z.shape[1]))
    L = len(params)
    N = Z.shape[1]
    P = n_params(params)
    if out is None:
        out = np.empty((N, P))
    if out.shape != (N, P) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {(N, P)}")
    offs = _column_offsets(params)
    out[:, offs[-1][0]:] = output_layer_system(params, Z, coef, fp)[0]
    # Per-sample adjoints of the last hidden layer: the fit adjoints seeded with G = W_L^T 1^T.
    G = np.repeat(params[-1][0][0][:, None], N, axis=1)
    ga, gd, gQ = ch_engine.fit_adjoints(np, G, fp.last, plan, fp.fit)
    layers = [ch_engine.materialise(np, layer, plan) for layer in fp.layers]
    for l in range(L - 2, -1, -1):
        W, _ = params[l]
        kW, kb = offs[l]
        out[:, kb:kb + ga.shape[0]] = ga.T  # dR_n/db_l
        # dR_n/dW_l as an (N, M, M_in) view of the Jacobian's columns kW .. kb - 1.
        JW = as_strided(out[:, kW:], shape=(N,) + W.shape, strides=(out.strides[0], W.shape[1] * 8, 8))
        if l == 0:
            # a_1 = W_1 Z + b_1, d_1j = W_1[:, j], q_1j = 0.
            np.multiply(ga.T[:, :, None], Z.T[:, None, :], out=JW)
            JW += gd.transpose(2, 1, 0)
        else:
            prev = layers[l - 1]
            gQ_ = gQ if gQ is not None else np.zeros((0,) + ga.shape)
            np.matmul(_stack(ga, gd, gQ_).transpose(0, 2, 1), _stack(*ch_engine.layer_inputs(np, prev, plan)), out=JW)
            ga, gd, gQ = ch_engine.input_adjoints(np, W, ga, gd, gQ, prev, plan)
    return out
