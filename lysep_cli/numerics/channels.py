"""The derivative-channel engine: forward channels, the fit matrix B and their adjoints, any L >= 2, with an
optional leading seed axis S and any array namespace xp (NumPy or CuPy).

PINN (network.py), LySep (solvers/lysep/loss.py) and the Jacobian baselines (jacobian.py)
all use it.  Hidden layer l carries the paper's auxiliary quantities (`eq:var_a`, `eq:var_d`, `eq:var_q`)

    a_l  = W_l sigma(a_{l-1}) + b_l 1^T                                     (M, N)
    d_lj = W_l (sigma'(a_{l-1}) * d_{l-1,j})                                (n_in, M, N)
    q_lj = W_l (sigma''(a_{l-1}) * d_{l-1,j}^2 + sigma'(a_{l-1}) * q_{l-1,j})

with a_1 = W_1 Z + b_1 1^T, d_1j = W_1(:, j) 1^T and q_1j = 0.

**The seed axis.**  Every array of a network or of its channels may carry a leading seed axis: W_l (S, out,
in), b_l (S, out), a (S, M, N), d (S, n_in, M, N), Q (S, n_g, M, N); the data (Z (n_in, N), the plan's K (N,),
K_j (n_in, N), K-hat_g (n_g, N)) is shared by the seeds.  A run alone passes its arrays without it (the
formulas index channels from the right, ``d[..., j, :, :]``): the same code, the same operations.  Every
product is a (batched) matmul, one GEMM per seed, and every other operation is element-wise or reduces
within one seed, so a seed's numbers do not depend on its stack (tests/test_stacked.py).

**The backend's kernels.**  The formulas are written once; what differs by namespace is how a sum over a
channel axis is executed.  On NumPy (the CPU): one channel at a time into (M, N) buffers (``out=``), and the
fit matrix in numba's fused pass (numerics/fused.py) for large layers: the fewest temporaries.  On a device
(:func:`one_pass`): the channels of a term in one batched operation and the sums in one kernel
(:func:`ordered_sum`: the same additions in the same order), for fewer kernel launches
(benchmarks/launch_count.py).  Both give the same bits (tests/test_launch_count.py).

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
through the same channels (:func:`fit_adjoints`, :func:`input_adjoints`, :func:`first_layers_backward`).
Shapes: M the width, N the samples, n_in the inputs, n_g the groups.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from lysep_cli.numerics import fused as fused_engine
from lysep_cli.numerics import sigma
from lysep_cli.numerics.activation import SigmaValues
from lysep_cli.numerics.problems import OperatorCoefficients
from lysep_cli.numerics.sincos import numba_wanted

Array = Any  # an array of the namespace xp (numpy.ndarray or cupy.ndarray)


def one_pass(xp: Any) -> bool:
    """Whether the channel sums run as one batched operation each (a device) rather than channel by channel
    into buffers (NumPy): the backend's choice of kernels, never of formulas."""
    return xp.__name__ != "numpy"


@dataclass(frozen=True)
class ChannelPlan:
    """The residual's coefficients arranged by channel.

    K (N,) coefficient of phi; K1 (n_in, N) the K_j of d_j phi; groups: the inputs of each
    second-derivative group; K2 (n_g, N) the K-hat of each group; group_of (n_in,) each input's
    group (-1: no second derivative, e.g. t for the parabolic problem).  K, K1, K2 are arrays of the
    engine's namespace (:meth:`to`); groups and group_of stay host integers (they index).
    """

    K: Array
    K1: Array
    groups: tuple[np.ndarray, ...]
    K2: Array
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

    def to(self, xp: Any) -> "ChannelPlan":
        """The plan with its coefficient arrays in the namespace xp."""
        return replace(self, K=xp.asarray(self.K), K1=xp.asarray(self.K1), K2=xp.asarray(self.K2))

    @property
    def n_in(self) -> int:
        return int(self.K1.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    @cached_property
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
    A_d ((S,) n_in M, M), A_Q ((S,) n_g M, M) and w1sq = sum_{j in g} W_1(:, j)^2 ((S,) M, n_g)."""

    A_d: Array
    A_Q: Array
    w1sq: Array


@dataclass
class Layer:
    """Channels of one hidden layer: a ((S,) M, N), sigma^(k)(a), d ((S,) n_in, M, N), Q ((S,) n_g, M, N).

    ``d is None``: layer 1, whose d_1j = w1[..., :, j] is constant over the samples (``w1`` = W_1, ((S,) M,
    n_in)).  ``Q is None``: q = 0 (layer 1, and LySep's first layer of auxiliary variables).  ``first``:
    layer 2's :class:`FirstWeights` when layer 1 is structured.
    """

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


def _dot(xp: Any, x: Array, y: Array) -> Array:
    """x . y over the last axis, per seed ((S,) or a scalar), for x ((S,) N) and y ((S or 1,) N): a
    (1, N) @ (N, 1) product, which NumPy computes as a dot (an einsum would sum in another order)."""
    return xp.matmul(x[..., None, :], y[..., :, None])[..., 0, 0]


def channels(group: np.ndarray) -> slice | np.ndarray:
    """The index of a group's inputs on a channel axis: a slice (a view) when they are consecutive."""
    g0 = int(group[0])
    return slice(g0, g0 + len(group)) if np.array_equal(group, np.arange(g0, g0 + len(group))) else group


def first_layer(xp: Any, W1: Array, b1: Array, Z: Array) -> Layer:
    """a_1 = W_1 Z + b_1 1^T, d_1j = W_1(:, j), q_1j = 0 (Z (n_in, N))."""
    a = xp.matmul(W1, Z)
    a += b1[..., None]
    return Layer(a, sigma.values(xp, a), w1=W1)


def hidden_layer(xp: Any, a: Array, d: Array | None, Q: Array | None) -> Layer:
    """A layer from given channel values (LySep's auxiliary variables)."""
    return Layer(a, sigma.values(xp, a), d, Q)


def materialise(xp: Any, layer: Layer, plan: ChannelPlan) -> Layer:
    """A structured layer 1 with d_1j written out as ((S,) n_in, M, N) arrays (for L = 2 and Jacobians)."""
    if not layer.structured:
        return layer
    lead, (M, N) = layer.a.shape[:-2], layer.a.shape[-2:]
    d = xp.ascontiguousarray(xp.broadcast_to(_T(xp, layer.w1)[..., None], lead + (plan.n_in, M, N)))
    return Layer(layer.a, layer.sig, d, None)


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
        *sigma.grid(res.size), (x, x if out is None else out, xp.bool_(out is not None), xp.int64(C), xp.int64(per),
                                res, xp.int64(res.size)))
    return res


def sum_of_squares(xp: Any, d: Array, group: np.ndarray, out: Array | None = None) -> Array:
    """sum_{j in group} d_j^2, ((S,) M, N), for d ((S,) n_in, M, N): d_g0^2 + d_g1^2 + ... added in that order
    (on a device the group's squares in one pass and one kernel)."""
    if not one_pass(xp) or len(group) == 1:
        out = xp.square(d[..., group[0], :, :], out=out)
        for j in group[1:]:  # loop over the input dimensions of the group
            out += d[..., j, :, :] * d[..., j, :, :]
        return out
    res = ordered_sum(xp, xp.square(d[:, channels(group)]))  # 0 + sq_0 is sq_0: a square is never -0
    if out is not None:
        out[...] = res
    return res


def squared_sums(xp: Any, d: Array, plan: ChannelPlan) -> Array:
    """D2_g = sum_{j in g} d_j^2 for every group, ((S,) n_g, M, N)."""
    out = xp.empty(d.shape[:-3] + (plan.n_groups,) + d.shape[-2:])
    for i, g in enumerate(plan.groups):
        sum_of_squares(xp, d, g, out[..., i, :, :])
    return out


def _w1_squares(xp: Any, w1: Array, plan: ChannelPlan) -> Array:
    """sum_{j in g} W_1(:, j)^2 per group, ((S,) M, n_g)."""
    if not plan.n_groups:
        return xp.zeros(w1.shape[:-1] + (0,))
    return xp.stack([xp.sum(w1[..., g] ** 2, axis=-1) for g in plan.groups], axis=-1)


# ------------------------------------------------------------------------------------------------
# Forward: from the channels of layer l-1 to the pre-activation channels of layer l.


def layer_inputs(xp: Any, prev: Layer, plan: ChannelPlan) -> tuple[Array, Array, Array]:
    """h = sigma(a), h_j = sigma'(a) d_j, hQ_g = sigma''(a) sum_{j in g} d_j^2 + sigma'(a) Q_g.

    For a general (not structured) layer; shapes ((S,) M, N), ((S,) n_in, M, N), ((S,) n_g, M, N).
    """
    s = prev.sig
    hd = s.s1[..., None, :, :] * prev.d
    hQ = squared_sums(xp, prev.d, plan)
    hQ *= s.s2[..., None, :, :]
    if prev.Q is not None:
        hQ += s.s1[..., None, :, :] * prev.Q
    return s.s0, hd, hQ


def stacked_first_weights(xp: Any, W: Array, w1: Array, plan: ChannelPlan) -> FirstWeights:
    """A_d = [W diag W_1(:, j)]_j ((S,) n_in M, M) and A_Q = [W diag sum_{j in g} W_1(:, j)^2]_g ((S,) n_g M, M)."""
    lead, M = W.shape[:-2], W.shape[-1]
    w1sq = _w1_squares(xp, w1, plan)
    A_d = (W[..., None, :, :] * _T(xp, w1)[..., :, None, :]).reshape(lead + (-1, M))
    A_Q = (W[..., None, :, :] * _T(xp, w1sq)[..., :, None, :]).reshape(lead + (-1, M))
    return FirstWeights(A_d, A_Q, w1sq)


def propagate_a(xp: Any, W: Array, b: Array, prev: Layer) -> Array:
    """a_l = W_l sigma(a_{l-1}) + b_l 1^T, ((S,) M, N)."""
    a = xp.matmul(W, prev.sig.s0)
    a += b[..., None]
    return a


def propagate_d(xp: Any, W: Array, prev: Layer, plan: ChannelPlan, first: FirstWeights | None = None) -> Array:
    """d_lj = W_l (sigma'(a_{l-1}) d_{l-1,j}) for every input j, ((S,) n_in, M, N)."""
    lead, M, N = W.shape[:-2], W.shape[-2], prev.a.shape[-1]
    if prev.structured:
        first = stacked_first_weights(xp, W, prev.w1, plan) if first is None else first
        return xp.matmul(first.A_d, prev.sig.s1).reshape(lead + (plan.n_in, M, N))
    if one_pass(xp):
        return xp.matmul(W[..., None, :, :], prev.sig.s1[..., None, :, :] * prev.d)
    out = xp.empty(lead + (prev.d.shape[-3], M, N))
    h = xp.empty_like(prev.a)
    for j in range(prev.d.shape[-3]):  # loop over the input dimensions: one GEMM each, (M, N) temporaries
        xp.multiply(prev.sig.s1, prev.d[..., j, :, :], out=h)
        xp.matmul(W, h, out=out[..., j, :, :])
    return out


def group_input(xp: Any, prev: Layer, i: int, group: np.ndarray, out: Array | None = None) -> Array:
    """hQ_g = sigma''(a) sum_{j in g} d_j^2 + sigma'(a) Q_g of a general layer, ((S,) M, N)."""
    h = sum_of_squares(xp, prev.d, group, out)
    h *= prev.sig.s2
    if prev.Q is not None:
        h += prev.sig.s1 * prev.Q[..., i, :, :]
    return h


def group_inputs(xp: Any, prev: Layer, plan: ChannelPlan) -> Array:
    """hQ_g of every group (:func:`group_input`), ((S,) n_g, M, N), in one pass: every group one input
    (plan.singles)."""
    h = xp.square(prev.d[..., plan.singles, :, :])
    h *= prev.sig.s2[..., None, :, :]
    if prev.Q is not None:
        h += prev.sig.s1[..., None, :, :] * prev.Q
    return h


def propagate_Q(xp: Any, W: Array, prev: Layer, plan: ChannelPlan, first: FirstWeights | None = None) -> Array:
    """Q_lg = W_l (sigma''(a_{l-1}) sum_{j in g} d_{l-1,j}^2 + sigma'(a_{l-1}) Q_{l-1,g}), ((S,) n_g, M, N)."""
    lead, M, N = W.shape[:-2], W.shape[-2], prev.a.shape[-1]
    if prev.structured:
        first = stacked_first_weights(xp, W, prev.w1, plan) if first is None else first
        return xp.matmul(first.A_Q, prev.sig.s2).reshape(lead + (plan.n_groups, M, N))
    if one_pass(xp) and plan.singles is not None:  # every group one input: one batched product
        return xp.matmul(W[..., None, :, :], group_inputs(xp, prev, plan))
    out = xp.empty(lead + (plan.n_groups, M, N))
    h = None if one_pass(xp) else xp.empty_like(prev.a)
    for i, g in enumerate(plan.groups):  # loop over the groups: one GEMM each
        if h is None:
            out[..., i, :, :] = xp.matmul(W, group_input(xp, prev, i, g))
        else:
            xp.matmul(W, group_input(xp, prev, i, g, h), out=out[..., i, :, :])
    return out


def next_layer(xp: Any, W: Array, b: Array, prev: Layer, plan: ChannelPlan) -> Layer:
    """The channels of layer l from those of layer l-1 (`eq:var_a`, `eq:var_d`, `eq:var_q`)."""
    first = stacked_first_weights(xp, W, prev.w1, plan) if prev.structured else None
    a = propagate_a(xp, W, b, prev)
    d, Q = propagate_d(xp, W, prev, plan, first), propagate_Q(xp, W, prev, plan, first)
    return Layer(a, sigma.values(xp, a), d, Q, first=first)


# ------------------------------------------------------------------------------------------------
# Output: the fit matrix B of `eq:GD_W3` and its adjoints.


@dataclass
class Fit:
    """B = K sigma(a) + sigma'(a) U + sigma''(a) V and the sums U, V it is built from, each ((S,) M, N)."""

    B: Array
    U: Array
    V: Array


def fit_matrix(xp: Any, last: Layer, plan: ChannelPlan, *, fused: bool = True) -> Fit:
    """B of `eq:GD_W3` at the last hidden layer (a general layer: see :func:`materialise`).  On NumPy large
    layers take the fused kernel (lysep_cli/numerics/fused.py, one seed at a time): the same bits in one pass."""
    s, d = last.sig, last.d
    if one_pass(xp):
        return _fit_one_pass(xp, last, plan)
    kernel = fused_engine.fit_sums_kernel() if fused and numba_wanted(last.a.shape[-2] * last.a.shape[-1]) else None
    if kernel is not None:
        B, U, V = np.empty_like(last.a), np.empty_like(last.a), np.empty_like(last.a)
        gflat, gstart = fused_engine.group_index(plan.groups)
        no_Q = np.zeros((1, 1, 1))
        for s_ in np.ndindex(last.a.shape[:-2]):  # loop over the seeds (none for a run alone)
            kernel(d[s_], last.Q[s_] if last.Q is not None else no_Q, last.Q is not None, plan.K, plan.K1, plan.K2,
                   gflat, gstart, s.s0[s_], s.s1[s_], s.s2[s_], B[s_], U[s_], V[s_])
        return Fit(B, U, V)
    U = xp.zeros_like(last.a)
    for j in range(plan.n_in):  # loop over the input dimensions: U += K_j d_j
        U += plan.K1[j] * d[..., j, :, :]
    V = xp.zeros_like(last.a)
    for i, g in enumerate(plan.groups):
        V += plan.K2[i] * sum_of_squares(xp, d, g)
        if last.Q is not None:
            U += plan.K2[i] * last.Q[..., i, :, :]
    return fit_from_sums(plan, s, U, V)


def _fit_one_pass(xp: Any, last: Layer, plan: ChannelPlan) -> Fit:
    """fit_matrix on a device (S, ...): each sum's products in one pass, added in the channels' order."""
    d = last.d
    U = ordered_sum(xp, plan.K1[:, None, :] * d)  # U = sum_j K_j d_j
    if plan.singles is not None:  # V = sum_g K-hat_g d_g^2, every group one input
        V = ordered_sum(xp, plan.K2[:, None, :] * xp.square(d[:, plan.singles]))
    else:
        V = xp.zeros_like(last.a)
        for i, g in enumerate(plan.groups):  # V += K-hat_g sum_{j in g} d_j^2, group by group
            V += plan.K2[i] * sum_of_squares(xp, d, g)
    if last.Q is not None and plan.n_groups:
        ordered_sum(xp, plan.K2[:, None, :] * last.Q, out=U)  # U += sum_g K-hat_g Q_g
    return fit_from_sums(plan, last.sig, U, V)


def fit_from_sums(plan: ChannelPlan, s: SigmaValues, U: Array, V: Array) -> Fit:
    """B = K sigma(a) + sigma'(a) U + sigma''(a) V from the sums U, V ((S,) M, N)."""
    B = plan.K * s.s0
    B += s.s1 * U
    B += s.s2 * V
    return Fit(B, U, V)


def _add_product(xp: Any, out: Array, t: Array, d: Array, group: np.ndarray) -> None:
    """out[..., j] += t d[..., j] for every j of ``group`` (out, d ((S,) n_in, M, N), t ((S,) M, N)), in place:
    on a device one product and one addition for a group of consecutive inputs, and no write-back copy
    (``out[:, j] += x`` would launch one on CuPy)."""
    c = channels(group)
    if one_pass(xp) and isinstance(c, slice):
        view = out[..., c, :, :]
        view += t[..., None, :, :] * d[..., c, :, :]
        return
    for j in group:  # loop over the input dimensions
        view = out[..., j, :, :]
        view += t * d[..., j, :, :]


def fit_adjoints(xp: Any, G: Array, last: Layer, plan: ChannelPlan, fit: Fit,
                 outputs: tuple[str, ...] = ("a", "d", "Q")) -> tuple[Array | None, Array | None, Array | None]:
    """(g_a, g_d, g_Q) of the last hidden layer from the adjoint G ((S,) M, N) of B:

        g_a  = G (K sigma' + sigma'' U + sigma''' V)
        g_dj = G (sigma' K_j + 2 sigma'' K-hat_g(j) d_j)
        g_Qg = G sigma' K-hat_g

    ``outputs`` selects which to compute (LySep's a, d, q blocks need one each; the others are None).
    """
    s = last.sig
    ga = gd = gQ = None
    if "a" in outputs:
        ga = plan.K * s.s1
        ga += s.s2 * fit.U
        ga += s.s3 * fit.V
        ga *= G
    if "d" in outputs or "Q" in outputs:
        Gs1 = G * s.s1
    if "d" in outputs:
        gd = Gs1[..., None, :, :] * plan.K1[:, None, :]
        G2s2 = 2.0 * G * s.s2
        c = plan.singles if one_pass(xp) else None
        if c is not None:  # every group one input: g_dj += (G 2 sigma'' K-hat_j) d_j for all of them in one pass
            view = gd[:, c]
            view += (G2s2[:, None] * plan.K2[None, :, None, :]) * last.d[:, c]
        for i, g in enumerate(plan.groups if c is None else ()):
            _add_product(xp, gd, G2s2 * plan.K2[i], last.d, g)
    if "Q" in outputs:
        gQ = Gs1[..., None, :, :] * plan.K2[:, None, :]
    return ga, gd, gQ


# ------------------------------------------------------------------------------------------------
# Reverse steps through a layer map (a, d, Q)_{l-1} -> (a, d, Q)_l.


def weight_gradient(xp: Any, ga: Array, gd: Array, gQ: Array | None, prev: Layer, plan: ChannelPlan) -> Array:
    """dW_l = g_a h^T + sum_j g_dj h_j^T + sum_g g_Qg hQ_g^T for a general layer l-1, ((S,) M, M_prev)."""
    s = prev.sig
    gW = xp.matmul(ga, _T(xp, s.s0))
    if one_pass(xp):  # the products batched, added in order
        ordered_sum(xp, xp.matmul(gd, _T(xp, s.s1[:, None] * prev.d)), out=gW)
        if plan.singles is not None:
            ordered_sum(xp, xp.matmul(gQ, _T(xp, group_inputs(xp, prev, plan))), out=gW)
            return gW
        for i, g in enumerate(plan.groups if gQ is not None else ()):
            gW += xp.matmul(gQ[:, i], _T(xp, group_input(xp, prev, i, g)))
        return gW
    h = xp.empty_like(prev.a)
    for j in range(gd.shape[-3]):  # loop over the input dimensions: one GEMM each, h_j one at a time
        xp.multiply(s.s1, prev.d[..., j, :, :], out=h)
        gW += xp.matmul(gd[..., j, :, :], _T(xp, h))
    for i, g in enumerate(plan.groups if gQ is not None else ()):
        gW += xp.matmul(gQ[..., i, :, :], _T(xp, group_input(xp, prev, i, g, h)))
    return gW


def input_adjoints(xp: Any, W: Array, ga: Array, gd: Array, gQ: Array | None, prev: Layer, plan: ChannelPlan,
                   outputs: tuple[str, ...] = ("a", "d", "Q")) -> tuple[Array | None, Array | None, Array | None]:
    """Adjoints of a general layer l-1's (a, d, Q) from those of layer l's (a, d, Q):

        H = W^T g_a, H_j = W^T g_dj, HQ_g = W^T g_Qg, and through h, h_j, hQ_g:
        g_a'  = sigma' H + sigma'' sum_j d_j H_j + sigma''' sum_g (sum_{j in g} d_j^2) HQ_g + sigma'' sum_g Q_g HQ_g
        g_dj' = sigma' H_j + 2 sigma'' d_j HQ_g(j)
        g_Qg' = sigma' HQ_g                                       (None when prev.Q is None)

    ``outputs`` selects which of the three to compute (the others are returned as None).
    """
    s, d = prev.sig, prev.d
    WT = _T(xp, W)
    Hd = xp.matmul(WT[..., None, :, :], gd)
    HQ = xp.matmul(WT[..., None, :, :], gQ) if gQ is not None and plan.n_groups else None
    c = plan.singles if HQ is not None and one_pass(xp) else None
    ga_prev = gd_prev = gQ_prev = None
    if "a" in outputs:
        if one_pass(xp):
            ga_prev = xp.sum(xp.multiply(d, Hd), axis=-3)  # sum_j d_j Hd_j, in j's order (einsum's bits)
        else:
            ga_prev = xp.einsum("...jmn,...jmn->...mn", d, Hd)
        ga_prev *= s.s2
        ga_prev += s.s1 * xp.matmul(WT, ga)
        if c is not None:  # every group one input: each group's terms in one pass, added group by group below
            A = s.s3[:, None] * xp.square(d[:, c]) * HQ
            B = s.s2[:, None] * prev.Q * HQ if prev.Q is not None else None
        for i, g in enumerate(plan.groups if HQ is not None else ()):
            ga_prev += A[:, i] if c is not None else s.s3 * sum_of_squares(xp, d, g) * HQ[..., i, :, :]
            if prev.Q is not None:
                ga_prev += B[:, i] if c is not None else s.s2 * prev.Q[..., i, :, :] * HQ[..., i, :, :]
    if "d" in outputs:
        gd_prev = Hd
        gd_prev *= s.s1[..., None, :, :]
        if c is not None:
            view = gd_prev[:, c]
            view += ((2.0 * s.s2)[:, None] * HQ) * d[:, c]
        for i, g in enumerate(plan.groups if HQ is not None and c is None else ()):
            _add_product(xp, gd_prev, 2.0 * s.s2 * HQ[..., i, :, :], d, g)
    if "Q" in outputs and HQ is not None and prev.Q is not None:
        gQ_prev = HQ * s.s1[..., None, :, :]
    return ga_prev, gd_prev, gQ_prev


def first_layers_backward(xp: Any, W2: Array, ga: Array, gd: Array, gQ: Array, layer1: Layer, plan: ChannelPlan,
                          Z: Array, first: FirstWeights | None = None) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
    """Gradients of (W_2, b_2) and (W_1, b_1) from the adjoints of layer 2's (a, d, Q), layer 1 structured.

    With P_d[j] = g_dj sigma'(a_1)^T and P_Q[g] = g_Qg sigma''(a_1)^T (one stacked product each):

        dW_2 = g_a sigma(a_1)^T + sum_j P_d[j] diag W_1(:, j) + sum_g P_Q[g] diag sum_{j in g} W_1(:, j)^2
        g_a1 = sigma'(a_1) W_2^T g_a + sigma''(a_1) A_d^T g_d + sigma'''(a_1) A_Q^T g_Q
        dW_1 = g_a1 Z^T + [sum_k W_2[k, :] P_d[j][k, :]]_j + 2 W_1(:, j) sum_k W_2[k, :] P_Q[g(j)][k, :]

    ``first``: the forward pass's products of W_2 and W_1 (made here when not given).
    Returns ((dW_2, db_2), (dW_1, db_1)).
    """
    s, w1 = layer1.sig, layer1.w1
    lead, (n_in, M, N) = gd.shape[:-3], gd.shape[-3:]
    n_g = plan.n_groups
    first = stacked_first_weights(xp, W2, w1, plan) if first is None else first
    gd2 = gd.reshape(lead + (n_in * M, N))
    P_d = xp.matmul(gd2, _T(xp, s.s1)).reshape(lead + (n_in, M, -1))
    gW2 = xp.matmul(ga, _T(xp, s.s0))
    ga1 = s.s1 * xp.matmul(_T(xp, W2), ga)
    ga1 += s.s2 * xp.matmul(_T(xp, first.A_d), gd2)
    if one_pass(xp):
        gW2 += xp.sum(xp.multiply(P_d, _T(xp, w1)[:, :, None, :]), axis=1)  # sum_j P_d[j] w1[:, j]
        gW1_d = _T(xp, xp.sum(xp.multiply(W2[:, None], P_d), axis=2))  # sum_k W2[k, m] P_d[j, k, m], (S, M, n_in)
    else:
        gW2 += xp.einsum("...jkm,...mj->...km", P_d, w1)
        gW1_d = xp.einsum("...km,...jkm->...mj", W2, P_d)
    if n_g:
        gQ2 = gQ.reshape(lead + (n_g * M, N))
        P_Q = xp.matmul(gQ2, _T(xp, s.s2)).reshape(lead + (n_g, M, -1))
        if one_pass(xp):
            gW2 += xp.sum(xp.multiply(P_Q, _T(xp, first.w1sq)[:, :, None, :]), axis=1)
            WP_Q = _T(xp, xp.sum(xp.multiply(W2[:, None], P_Q), axis=2))
        else:
            gW2 += xp.einsum("...gkm,...mg->...km", P_Q, first.w1sq)
            WP_Q = xp.einsum("...km,...gkm->...mg", W2, P_Q)
        ga1 += s.s3 * xp.matmul(_T(xp, first.A_Q), gQ2)
        S_in = np.flatnonzero(plan.group_of >= 0)
        c = channels(S_in)  # a view when the inputs with second derivatives are consecutive: no copies
        view = gW1_d[..., c]
        view += 2.0 * w1[..., c] * WP_Q[..., plan.group_of[S_in]]
        if not isinstance(c, slice):
            gW1_d[..., c] = view
    gW1 = xp.matmul(ga1, Z.T) + gW1_d
    return (gW2, ga.sum(axis=-1)), (gW1, ga1.sum(axis=-1))
