"""The channel engine of lysep_cli/numerics/channels.py with a leading seed axis S, in any array namespace.

The formulas are channels.py's, operation for operation (the same products and element-wise passes in
the same order, per seed), on stacked arrays:

    a_l (S, M, N),  d_l (S, n_in, M, N),  Q_l (S, n_g, M, N),  W_l (S, out, in),  b_l (S, out),

while the data (Z (n_in, N), the plan's K (N,), K_j (n_in, N), K-hat_g (n_g, N)) is shared by the seeds.
Every product is a batched matmul (one GEMM per seed on NumPy, a strided-batched GEMM on CuPy) and every
other operation is element-wise or reduces within one seed, so a seed's numbers do not depend on the other
seeds in its stack (tests/test_stacked.py: seed 3 alone, in a stack of 10 and in a reversed stack).
Sums over a channel axis keep their order: on NumPy one addition per channel, on a device one kernel
(:func:`ordered_sum`, the same additions in the same order); the work of every channel, or of every
one-input group, is done in one pass where the order of additions allows (fewer kernel launches on a
device: benchmarks/launch_count.py counts them).

The PINN pass (`eq:GD_W3`): R = W_L B + b_L K - Y with B = K sigma(a) + sigma'(a) U + sigma''(a) V at the
last hidden layer, and its hand-derived reverse pass (channels.fit_adjoints, input_adjoints,
first_layers_backward).  Second derivatives are grouped by equal K-hat rows (channels.ChannelPlan).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lysep_cli.accel import sigma
from lysep_cli.numerics.activation import SigmaValues
from lysep_cli.numerics.channels import ChannelPlan

Array = Any  # an array of the namespace xp (numpy.ndarray or cupy.ndarray)
StackedParams = list[tuple[Array, Array]]
"""[(W_1, b_1), ..., (W_L, b_L)] with a leading seed axis: W_l (S, out, in), b_l (S, out)."""


@dataclass(frozen=True)
class StackedPlan:
    """A :class:`ChannelPlan` with its coefficient arrays on the device: K (N,), K1 (n_in, N), K2 (n_g, N);
    ``groups`` and ``group_of`` stay host integers (they index, they are not computed with)."""

    K: Array
    K1: Array
    K2: Array
    groups: tuple[np.ndarray, ...]
    group_of: np.ndarray

    @classmethod
    def of(cls, xp: Any, plan: ChannelPlan) -> "StackedPlan":
        return cls(xp.asarray(plan.K), xp.asarray(plan.K1), xp.asarray(plan.K2), plan.groups, plan.group_of)

    @property
    def n_in(self) -> int:
        return int(self.K1.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    @property
    def singles(self) -> slice | None:
        """When every group is one input and the groups' inputs are consecutive (LySep's plan), their slice on
        the channel axis (group i is input singles.start + i: a term of every group in one pass), else None."""
        if not self.groups or any(len(g) != 1 for g in self.groups):
            return None
        c = channels(np.concatenate(self.groups))
        return c if isinstance(c, slice) else None


@dataclass(frozen=True)
class FirstWeights:
    """What W_2's forward and reverse passes over a structured layer 1 share (computed once a pass):
    A_d (S, n_in M, M), A_Q (S, n_g M, M) and w1sq = sum_{j in g} W_1(:, j)^2 (S, M, n_g)."""

    A_d: Array
    A_Q: Array
    w1sq: Array


@dataclass
class Layer:
    """A hidden layer's channels, stacked: a (S, M, N), sigma^(k)(a), d (S, n_in, M, N) or None (layer 1:
    d_1j = W_1(:, j), kept as ``w1`` (S, M, n_in)), Q (S, n_g, M, N) or None (q = 0); ``first``: layer 2's
    :class:`FirstWeights` when layer 1 is structured."""

    a: Array
    sig: SigmaValues
    d: Array | None = None
    Q: Array | None = None
    w1: Array | None = None
    first: FirstWeights | None = None

    @property
    def structured(self) -> bool:
        return self.d is None


def _T(xp: Any, A: Array) -> Array:
    """The transpose of every matrix of a stack (..., m, n) -> (..., n, m), a view."""
    return xp.swapaxes(A, -1, -2)


def first_layer(xp: Any, W1: Array, b1: Array, Z: Array) -> Layer:
    """a_1 = W_1 Z + b_1 1^T (S, M, N), d_1j = W_1(:, j), q_1j = 0."""
    a = xp.matmul(W1, Z)
    a += b1[:, :, None]
    return Layer(a, sigma.values(xp, a), w1=W1)


def materialise(xp: Any, layer: Layer, plan: StackedPlan) -> Layer:
    """A structured layer 1 with d_1j written out, (S, n_in, M, N) (for L = 2)."""
    if not layer.structured:
        return layer
    S, M, N = layer.a.shape
    d = xp.ascontiguousarray(xp.broadcast_to(_T(xp, layer.w1)[:, :, :, None], (S, plan.n_in, M, N)))
    return Layer(layer.a, layer.sig, d, None)


def channels(group: np.ndarray) -> slice | np.ndarray:
    """The index of a group's inputs on a channel axis: a slice (a view) when they are consecutive."""
    g0 = int(group[0])
    return slice(g0, g0 + len(group)) if np.array_equal(group, np.arange(g0, g0 + len(group))) else group


ORDERED_SUM = r"""
extern "C" __global__ void ordered_sum(const double* x, const double* init, bool from_init, long long channels,
                                       long long per, double* out, long long n) {
  /* out[s, p] = ((init[s, p] or 0.0) + x[s, 0, p]) + x[s, 1, p] + ...: the channels added in their order */
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const double* xi = x + (i / per) * channels * per + i % per;
    double acc = from_init ? init[i] : 0.0;
    for (long long k = 0; k < channels; ++k) acc = acc + xi[k * per];
    out[i] = acc;
  }
}
"""


def ordered_sum(xp: Any, x: Array, out: Array | None = None) -> Array:
    """((out + x[:, 0]) + x[:, 1]) + ... for x (S, C, M, N), into ``out`` (S, M, N, C-contiguous) in place, or
    from zeros when out is None: the channels added in order (the sum's bits do not depend on the library).
    NumPy: C additions (and zeros); a device: one kernel (gpu_check.py compares the two bit for bit there)."""
    if xp.__name__ == "numpy":
        out = xp.zeros_like(x[:, 0]) if out is None else out
        for k in range(x.shape[1]):  # loop over the channels: their order is the sum's
            out += x[:, k]
        return out
    x = xp.ascontiguousarray(x)
    res = xp.empty_like(x[:, 0]) if out is None else out
    S, C = x.shape[0], x.shape[1]
    per = res.size // S
    sigma.kernel(xp, lambda: ORDERED_SUM, "ordered_sum")(
        *sigma.grid(res.size), (x, x if out is None else out, xp.bool_(out is not None), xp.int64(C), xp.int64(per), res,
                                xp.int64(res.size)))
    return res


def sum_of_squares(xp: Any, d: Array, group: np.ndarray) -> Array:
    """sum_{j in group} d_j^2, (S, M, N), for d (S, n_in, M, N): d_g0^2 + d_g1^2 + ... added in that order;
    the squares of the group in one pass (then one kernel on a device, len(group) - 1 additions on NumPy)."""
    if len(group) == 1:
        return xp.square(d[:, group[0]])
    sq = xp.square(d[:, channels(group)])
    if xp.__name__ != "numpy":
        return ordered_sum(xp, sq)  # 0 + sq_0 is sq_0: a square is never -0
    out = sq[:, 0] + sq[:, 1]
    for k in range(2, len(group)):  # loop over the input dimensions of the group
        out += sq[:, k]
    return out


def _w1_squares(xp: Any, w1: Array, plan: StackedPlan) -> Array:
    """sum_{j in g} W_1(:, j)^2 per group, (S, M, n_g)."""
    return xp.stack([xp.sum(w1[:, :, g] ** 2, axis=2) for g in plan.groups], axis=2) if plan.n_groups \
        else xp.zeros(w1.shape[:2] + (0,))


def stacked_first_weights(xp: Any, W: Array, w1: Array, plan: StackedPlan) -> FirstWeights:
    """A_d = [W diag W_1(:, j)]_j (S, n_in M, M) and A_Q = [W diag sum_{j in g} W_1(:, j)^2]_g (S, n_g M, M)."""
    S, M = W.shape[0], W.shape[2]
    w1sq = _w1_squares(xp, w1, plan)
    A_d = (W[:, None, :, :] * _T(xp, w1)[:, :, None, :]).reshape(S, -1, M)
    A_Q = (W[:, None, :, :] * _T(xp, w1sq)[:, :, None, :]).reshape(S, -1, M)
    return FirstWeights(A_d, A_Q, w1sq)


def group_input(xp: Any, prev: Layer, i: int, group: np.ndarray) -> Array:
    """hQ_g = sigma''(a) sum_{j in g} d_j^2 + sigma'(a) Q_g of a general layer, (S, M, N)."""
    h = sum_of_squares(xp, prev.d, group)
    h *= prev.sig.s2
    if prev.Q is not None:
        h += prev.sig.s1 * prev.Q[:, i]
    return h


def group_inputs(xp: Any, prev: Layer, plan: StackedPlan) -> Array:
    """hQ_g of every group (:func:`group_input`), (S, n_g, M, N), in one pass: every group one input
    (plan.singles)."""
    h = xp.square(prev.d[:, plan.singles])
    h *= prev.sig.s2[:, None]
    if prev.Q is not None:
        h += prev.sig.s1[:, None] * prev.Q
    return h


def next_layer(xp: Any, W: Array, b: Array, prev: Layer, plan: StackedPlan) -> Layer:
    """The channels of layer l from those of layer l-1 (`eq:var_a`, `eq:var_d`, `eq:var_q`)."""
    S, M, N = W.shape[0], W.shape[1], prev.a.shape[2]
    a = propagate_a(xp, W, b, prev)
    first = None
    if prev.structured:
        first = stacked_first_weights(xp, W, prev.w1, plan)
        d = xp.matmul(first.A_d, prev.sig.s1).reshape(S, plan.n_in, M, N)
        Q = xp.matmul(first.A_Q, prev.sig.s2).reshape(S, plan.n_groups, M, N)
    else:
        d, Q = propagate_d(xp, W, prev), propagate_Q(xp, W, prev, plan)
    return Layer(a, sigma.values(xp, a), d, Q, first=first)


def propagate_a(xp: Any, W: Array, b: Array, prev: Layer) -> Array:
    """a_l = W_l sigma(a_{l-1}) + b_l 1^T, (S, M, N)."""
    a = xp.matmul(W, prev.sig.s0)
    a += b[:, :, None]
    return a


def propagate_d(xp: Any, W: Array, prev: Layer) -> Array:
    """d_lj = W_l (sigma'(a_{l-1}) d_{l-1,j}) for every input j of a general layer l-1, (S, n_in, M, N)."""
    return xp.matmul(W[:, None], prev.sig.s1[:, None] * prev.d)


def propagate_Q(xp: Any, W: Array, prev: Layer, plan: StackedPlan) -> Array:
    """Q_lg = W_l (sigma''(a_{l-1}) sum_{j in g} d_{l-1,j}^2 + sigma'(a_{l-1}) Q_{l-1,g}), general layer l-1."""
    if plan.singles is not None:  # every group one input: one batched product
        return xp.matmul(W[:, None], group_inputs(xp, prev, plan))
    S, M, N = W.shape[0], W.shape[1], prev.a.shape[2]
    Q = xp.empty((S, plan.n_groups, M, N))
    for i, g in enumerate(plan.groups):
        Q[:, i] = xp.matmul(W, group_input(xp, prev, i, g))
    return Q


@dataclass
class Fit:
    """B = K sigma(a) + sigma'(a) U + sigma''(a) V and the sums U, V, each (S, M, N)."""

    B: Array
    U: Array
    V: Array


def fit_matrix(xp: Any, last: Layer, plan: StackedPlan) -> Fit:
    """B of `eq:GD_W3` at the last hidden layer (channels.fit_matrix's NumPy passes, the same bits as its
    fused kernel)."""
    s, d = last.sig, last.d
    U = ordered_sum(xp, plan.K1[:, None, :] * d)  # U = sum_j K_j d_j, the products in one pass
    if plan.singles is not None:  # V = sum_g K-hat_g d_g^2, every group one input
        V = ordered_sum(xp, plan.K2[:, None, :] * xp.square(d[:, plan.singles]))
    else:
        V = xp.zeros_like(last.a)
        for i, g in enumerate(plan.groups):  # V += K-hat_g sum_{j in g} d_j^2, group by group
            V += plan.K2[i] * sum_of_squares(xp, d, g)
    if last.Q is not None and plan.n_groups:
        ordered_sum(xp, plan.K2[:, None, :] * last.Q, out=U)  # U += sum_g K-hat_g Q_g
    B = plan.K * s.s0
    B += s.s1 * U
    B += s.s2 * V
    return Fit(B, U, V)


def fit_adjoints(xp: Any, G: Array, last: Layer, plan: StackedPlan, fit: Fit) -> tuple[Array, Array, Array]:
    """(g_a, g_d, g_Q) of the last hidden layer from the adjoint G (S, M, N) of B (channels.fit_adjoints):
    g_a = G (K sigma' + sigma'' U + sigma''' V), g_dj = G (sigma' K_j + 2 sigma'' K-hat_g(j) d_j),
    g_Qg = G sigma' K-hat_g."""
    s = last.sig
    ga = plan.K * s.s1
    ga += s.s2 * fit.U
    ga += s.s3 * fit.V
    ga *= G
    Gs1 = G * s.s1
    gd = Gs1[:, None] * plan.K1[None, :, None, :]
    G2s2 = 2.0 * G * s.s2
    c = plan.singles
    if c is not None:  # every group one input: g_dj += (G 2 sigma'' K-hat_j) d_j for all of them in one pass
        view = gd[:, c]
        view += (G2s2[:, None] * plan.K2[None, :, None, :]) * last.d[:, c]
    for i, g in enumerate(plan.groups if c is None else ()):
        _add_product(xp, gd, G2s2 * plan.K2[i], last.d, g)
    gQ = Gs1[:, None] * plan.K2[None, :, None, :]
    return ga, gd, gQ


def _add_product(xp: Any, out: Array, t: Array, d: Array, group: np.ndarray) -> None:
    """out[:, j] += t d[:, j] for every j of ``group`` (out, d (S, n_in, M, N), t (S, M, N)), in place: one
    product and one addition for a group of consecutive inputs, and no write-back copy (``out[:, j] += x``
    would launch one on CuPy)."""
    c = channels(group)
    if isinstance(c, slice):
        view = out[:, c]
        view += t[:, None] * d[:, c]
        return
    for j in group:  # loop over the input dimensions (not consecutive)
        view = out[:, j]
        view += t * d[:, j]


def weight_gradient(xp: Any, ga: Array, gd: Array, gQ: Array, prev: Layer, plan: StackedPlan) -> Array:
    """dW_l = g_a h^T + sum_j g_dj h_j^T + sum_g g_Qg hQ_g^T for a general layer l-1, (S, M, M_prev)."""
    s = prev.sig
    gW = xp.matmul(ga, _T(xp, s.s0))
    ordered_sum(xp, xp.matmul(gd, _T(xp, s.s1[:, None] * prev.d)), out=gW)  # the products batched, added in order
    if plan.singles is not None:
        ordered_sum(xp, xp.matmul(gQ, _T(xp, group_inputs(xp, prev, plan))), out=gW)
        return gW
    for i, g in enumerate(plan.groups):
        gW += xp.matmul(gQ[:, i], _T(xp, group_input(xp, prev, i, g)))
    return gW


def input_adjoints(xp: Any, W: Array, ga: Array, gd: Array, gQ: Array, prev: Layer,
                   plan: StackedPlan) -> tuple[Array, Array, Array | None]:
    """Adjoints of a general layer l-1's (a, d, Q) from layer l's (channels.input_adjoints)."""
    s, d = prev.sig, prev.d
    WT = _T(xp, W)
    Hd = xp.matmul(WT[:, None], gd)
    HQ = xp.matmul(WT[:, None], gQ) if plan.n_groups else None
    ga_prev = xp.sum(xp.multiply(d, Hd), axis=1)  # sum_j d_j Hd_j, in j's order (einsum's bits on NumPy)
    ga_prev *= s.s2
    ga_prev += s.s1 * xp.matmul(WT, ga)
    c = plan.singles if HQ is not None else None
    if c is not None:  # every group one input: each group's terms in one pass, added group by group below
        A = s.s3[:, None] * xp.square(d[:, c]) * HQ
        B = s.s2[:, None] * prev.Q * HQ if prev.Q is not None else None
    for i, g in enumerate(plan.groups if HQ is not None else ()):
        ga_prev += A[:, i] if c is not None else s.s3 * sum_of_squares(xp, d, g) * HQ[:, i]
        if prev.Q is not None:
            ga_prev += B[:, i] if c is not None else s.s2 * prev.Q[:, i] * HQ[:, i]
    gd_prev = Hd
    gd_prev *= s.s1[:, None]
    if c is not None:
        view = gd_prev[:, c]
        view += ((2.0 * s.s2)[:, None] * HQ) * d[:, c]
    for i, g in enumerate(plan.groups if HQ is not None and c is None else ()):
        _add_product(xp, gd_prev, 2.0 * s.s2 * HQ[:, i], d, g)
    gQ_prev = HQ * s.s1[:, None] if HQ is not None and prev.Q is not None else None
    return ga_prev, gd_prev, gQ_prev


def first_layers_backward(xp: Any, W2: Array, ga: Array, gd: Array, gQ: Array, layer1: Layer,
                          plan: StackedPlan, Z: Array,
                          first: FirstWeights | None = None) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
    """((dW_2, db_2), (dW_1, db_1)) from the adjoints of layer 2's (a, d, Q), layer 1 structured
    (channels.first_layers_backward: P_d[j] = g_dj sigma'(a_1)^T, P_Q[g] = g_Qg sigma''(a_1)^T); ``first``:
    the forward pass's products of W_2 and W_1 (made here when not given)."""
    s, w1 = layer1.sig, layer1.w1
    S, n_in, M, N = gd.shape
    n_g = plan.n_groups
    first = stacked_first_weights(xp, W2, w1, plan) if first is None else first
    A_d, A_Q = first.A_d, first.A_Q
    gd2 = gd.reshape(S, n_in * M, N)
    P_d = xp.matmul(gd2, _T(xp, s.s1)).reshape(S, n_in, M, -1)
    gW2 = xp.matmul(ga, _T(xp, s.s0))
    gW2 += xp.sum(xp.multiply(P_d, _T(xp, w1)[:, :, None, :]), axis=1)  # sum_j P_d[j] w1[:, j]
    ga1 = s.s1 * xp.matmul(_T(xp, W2), ga)
    ga1 += s.s2 * xp.matmul(_T(xp, A_d), gd2)
    gW1_d = _T(xp, xp.sum(xp.multiply(W2[:, None], P_d), axis=2))  # sum_k W2[k, m] P_d[j, k, m], (S, M, n_in)
    if n_g:
        gQ2 = gQ.reshape(S, n_g * M, N)
        P_Q = xp.matmul(gQ2, _T(xp, s.s2)).reshape(S, n_g, M, -1)
        gW2 += xp.sum(xp.multiply(P_Q, _T(xp, first.w1sq)[:, :, None, :]), axis=1)
        ga1 += s.s3 * xp.matmul(_T(xp, A_Q), gQ2)
        S_in = np.flatnonzero(plan.group_of >= 0)
        c = channels(S_in)  # a view when the inputs with second derivatives are consecutive: no copies
        view = gW1_d[:, :, c]
        view += 2.0 * w1[:, :, c] * _T(xp, xp.sum(xp.multiply(W2[:, None], P_Q), axis=2))[:, :, plan.group_of[S_in]]
        if not isinstance(c, slice):
            gW1_d[:, :, c] = view
    gW1 = xp.matmul(ga1, Z.T) + gW1_d
    return (gW2, ga.sum(axis=2)), (gW1, ga1.sum(axis=2))


@dataclass
class PinnPass:
    """One stacked forward pass: hidden layers 1..L-1, the fit matrix at the last, R (S, N)."""

    layers: list[Layer]
    last: Layer
    fit: Fit
    R: Array


def pinn_pass(xp: Any, params: StackedParams, Z: Array, plan: StackedPlan, Y: Array) -> PinnPass:
    """Channels, B and R = W_L B + b_L K - Y (S, N) for every seed of the stack."""
    layers = [first_layer(xp, *params[0], Z)]
    for W, b in params[1:-1]:
        layers.append(next_layer(xp, W, b, layers[-1], plan))
    last = materialise(xp, layers[-1], plan)
    fit = fit_matrix(xp, last, plan)
    WL, bL = params[-1]
    R = xp.matmul(WL, fit.B)[:, 0, :]
    R += bL[:, 0:1] * plan.K
    R -= Y
    return PinnPass(layers, last, fit, R)


def backward(xp: Any, params: StackedParams, Z: Array, fp: PinnPass, plan: StackedPlan, g: Array) -> StackedParams:
    """Gradients of sum_n g_n R_n (g (S, N)) with respect to every (W_l, b_l), stacked (network.backward)."""
    L = len(params)
    grads: StackedParams = [None] * L  # type: ignore[list-item]
    WL, _ = params[-1]
    grads[-1] = (_T(xp, xp.matmul(fp.fit.B, g[:, :, None])), _dot(xp, g, plan.K[None, :])[:, None])
    G = _T(xp, WL) * g[:, None, :]  # adjoint of B
    ga, gd, gQ = fit_adjoints(xp, G, fp.last, plan, fp.fit)
    if L == 2:  # layer 1 is the last hidden layer: d_1j = W_1(:, j), q_1j = 0
        grads[0] = (xp.matmul(ga, Z.T) + _T(xp, gd.sum(axis=3)), ga.sum(axis=2))
        return grads
    for l in range(L - 2, 1, -1):  # W_{l+1} maps hidden layer l to l+1 (0-based list index l)
        W, _ = params[l]
        prev = fp.layers[l - 1]
        grads[l] = (weight_gradient(xp, ga, gd, gQ, prev, plan), ga.sum(axis=2))
        ga, gd, gQ = input_adjoints(xp, W, ga, gd, gQ, prev, plan)
    grads[1], grads[0] = first_layers_backward(xp, params[1][0], ga, gd, gQ, fp.layers[0], plan, Z,
                                               fp.layers[1].first)
    return grads


def _dot(xp: Any, x: Array, y: Array) -> Array:
    """x_s . y_s per seed, (S,), for x (S, N) and y (S or 1, N): a batched (1, N) @ (N, 1) product, which
    NumPy computes as the CPU engine's dot (the same bits; an einsum sums in another order)."""
    return xp.matmul(x[:, None, :], y[:, :, None])[:, 0, 0]


def loss_and_grad(xp: Any, params: StackedParams, Z: Array, plan: StackedPlan, Y: Array) -> tuple[Array, StackedParams]:
    """J (S,) = (1/N) ||R||^2 per seed and its gradient, stacked (network.pinn_loss_and_grad)."""
    fp = pinn_pass(xp, params, Z, plan, Y)
    N = fp.R.shape[1]
    J = _dot(xp, fp.R, fp.R) / N
    return J, backward(xp, params, Z, fp, plan, (2.0 / N) * fp.R)
