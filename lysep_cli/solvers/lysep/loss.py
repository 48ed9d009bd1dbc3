"""The LySep loss J_S (`eq:Js-elliptic`, `eq:Js-parabolic`, `eq:Js-hyberbolic`) for any depth L >= 2,
and its gradients.

One code path serves the three PDEs and every depth (docs/lysep-depth.md).  With the network inputs z_j
(j = 0..n_in-1; t is z_0 for the time-dependent PDEs) and the residual written as
(problems.OperatorCoefficients)

    R = K phi + sum_j K_j d_j phi + sum_j K-hat_j d_jj phi - Y,

the fitting term of J_S is ``r = W_L B + b_L K - Y`` with B of `eq:GD_W3` at the last hidden layer
(a, d, q) = (a_{L-1}, d_{L-1}, q_{L-1}) (channels.fit_matrix):

    B = sigma(a) diag[K] + sum_j D_j diag[K_j] + sum_{j in S} (Q_j + Q-hat_j) diag[K-hat_j],
    D_j = sigma'(a)*d_j,  Q_j = sigma''(a)*d_j*d_j,  Q-hat_j = sigma'(a)*q_j,

where S is the set of channels with a second derivative (all of them, except t for parabolic PDEs).
Elliptic: K_j = K^e_j, K-hat_j = K-hat^e.  Parabolic: K_0 = K^p_0, K_j = -K^p_j, K-hat_j = -K-hat^p.
Hyperbolic: K_0 = K^h_0, K-hat_0 = K-hat^h_0, K_j = -K^h_j, K-hat_j = -K-hat^h_j.  The signs do not
matter for the weights, which use |.|_inf (max over the N training points).

The constraints are the channel recursion between consecutive layers (`eq:var_a`, `eq:var_d`,
`eq:var_q`): e_a1 = W_1 Z + b_1 1^T - a_1, e_d1j = W_1(:, j) 1^T - d_1j, and for l = 2..L-1
e_al, e_dlj, e_qlj = the engine's layer map of (a, d, q)_{l-1} minus (a, d, q)_l (q_1 = 0).
Summing the omega * D(n,n)^2 of the terms that share a constraint gives one per-sample weight rho per
constraint, and every omega carries ||W_L||_F^2, so

    N * J_S = ||r||^2 + ||W_L||_F^2 * P,   P = sum_n sum_c rho_c[n] E_c[n]

with E_c[n] = ||e_c[:, n]||^2.  P is the lambda of the W_L ridge step (docs/paper-notes.md: the paper's
lambda misses a |K-hat|^2 factor).  rho comes from weights.backward_pass (a backward pass over the
layers; at L = 3 the paper's omega D^2, weights.paper_grouping, see docs/lysep.md).

Shapes: a_l (M, N); d_l stacked as (n_in, M, N); q_l as (|S|, M, N) (a stack of seeds: a leading axis S).
Variable names: W1..WL, b1..bL, a1..a{L-1}, d1..d{L-1}, q2..q{L-1} (at L = 3 the paper's q_i is ``q2``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal

import numpy as np

from lysep_cli.numerics import channels as ch_engine
from lysep_cli.numerics import sigma
from lysep_cli.numerics.activation import SigmaValues
from lysep_cli.numerics.channels import ChannelPlan, Fit, Layer
from lysep_cli.numerics.network import Params, forward
from lysep_cli.numerics.problems import OperatorCoefficients
from lysep_cli.solvers.lysep.weights import (PAPER_SOURCES, WeightPartials, Weights, backward_pass, paper_grouping,
                                             partials, penalty_from, per_seed, sum_per_seed)

WeightMode = Literal["frozen", "through"]


@dataclass(frozen=True)
class LySepData:
    """Training data with the coefficient constants of the weights, on the host or on a stacked engine's
    device (:meth:`on`).

    Z (n_in, N); K (N,); Kd (n_in, N) the K_j; Kh (n_in, N) the K-hat_j; S index array of the
    second-derivative channels; Y (N,); k, kj, hj the squared sup norms |K|^2, |K_j|^2, |K-hat_j|^2, and
    as the weights use them kj1, hj1 (n_in, 1), hS = hj on S (|S|,), hS1 (|S|, 1);
    plan: the channel engine's plan with one group per q_j (LySep's q_j are separate variables);
    host: the host's data (None: this is it).
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
    kj1: np.ndarray
    hj1: np.ndarray
    hS: np.ndarray
    hS1: np.ndarray
    host: "LySepData | None" = None

    @classmethod
    def build(cls, Z: np.ndarray, coef: OperatorCoefficients, Y: np.ndarray) -> "LySepData":
        S = np.flatnonzero(coef.second)
        sup2 = lambda A: np.max(np.abs(A), axis=-1) ** 2  # noqa: E731  |.|_inf^2 over the N points
        hj = np.where(coef.second, sup2(coef.K2), 0.0)
        kj = sup2(coef.K1)
        return cls(Z, coef.K, coef.K1, coef.K2, S, Y, float(sup2(coef.K)), kj, hj,
                   ChannelPlan.build(coef, grouped=False), kj[:, None], hj[:, None], hj[S], hj[S][:, None])

    def on(self, be) -> "LySepData":
        """This data on a backend's device (``be.xp``, ``be.asarray``: accel/backend.py), uploaded once."""
        arrays = {f.name: be.asarray(getattr(self, f.name)) for f in fields(self)
                  if isinstance(getattr(self, f.name), np.ndarray)}
        return replace(self, **arrays, plan=self.plan.to(be.xp), host=self)

    @property
    def N(self) -> int:
        return int(self.Z.shape[1])


def variable_names(L: int) -> list[str]:
    """Every variable of the depth-L model: W_l, b_l (l = 1..L), a_l, d_l (l = 1..L-1), q_l (l = 2..L-1)."""
    names = [f"{x}{l}" for l in range(1, L + 1) for x in ("W", "b")]
    names += [f"{x}{l}" for l in range(1, L) for x in ("a", "d")]
    return names + [f"q{l}" for l in range(2, L)]


def _sources(key: tuple, L: int) -> tuple[str, ...]:
    """The variables a cached value depends on."""
    kind, l = key
    if kind == "fit":
        return (f"a{L - 1}", f"d{L - 1}", f"q{L - 1}")
    if kind == "paper":
        return PAPER_SOURCES[l]
    if kind == "wt":  # the norms of the weights: W_1..W_{L-1}, d_1..d_{L-1}, q_2..q_{L-1}
        return tuple(f"{x}{k}" for k in range(1, L) for x in ("W", "d")) + tuple(f"q{k}" for k in range(2, L))
    return ({"sig": "a", "nd": "d", "nq": "q", "w": "W", "w1": "W"}[kind] + str(l),)


def squares(xp, x: np.ndarray) -> np.ndarray:
    """Per-sample squared norms sum_m x[..., m, n]^2, ((S,) .., M, N) -> ((S,) .., N), m in order: NumPy's
    einsum (no (M, N) temporary), elsewhere a product and a sum (CuPy's einsum copies both operands to a
    transposed layout and calls matmul); the same bits on NumPy."""
    if xp is np:
        return np.einsum("...mn,...mn->...n", x, x)
    return xp.sum(xp.multiply(x, x), axis=-2)


class LySepState:
    """All variables of the depth-L LySep model, by name (``st.W1``, ``st.a2``, ``st.q2``, ``st.b3``), of one
    seed or of a stack of S seeds (every variable with a leading seed axis, b_L (S,)), in the array namespace
    ``xp``:

    W1 ((S,) M, n_in), W_l ((S,) M, M), W_L ((S,) 1, M); b_l ((S,) M,), b_L a float or (S,); a_l ((S,) M, N);
    d_l ((S,) n_in, M, N) the d_li stacked; q_l ((S,) |S|, M, N) for l = 2..L-1 (q_1i = 0).  sigma^(k)(a_l),
    the squared norms, B and the weights (or their summands at L = 3) are cached once per value of the
    variables they depend on.
    """

    def __init__(self, L: int, v: dict, plan: ChannelPlan, cache: dict | None = None, xp=np):
        if L < 2:
            raise ValueError(f"LySep needs L >= 2 (one hidden layer at least); got L = {L}")
        self.L, self.v, self.plan, self.xp = L, v, plan, xp
        self.cache: dict = {} if cache is None else cache

    def __getattr__(self, name: str):
        v = self.__dict__.get("v")
        if v is not None and name in v:
            return v[name]
        raise AttributeError(name)

    @classmethod
    def from_params(cls, params: Params, data: LySepData) -> "LySepState":
        """Auxiliary variables at their exact forward values (`eq:var_a`, `eq:var_d`, `eq:var_q`), one seed."""
        L = len(params)
        if L < 2:
            raise ValueError(f"LySep needs L >= 2; got L = {L}")
        ch = forward(params, data.Z)
        v: dict = {}
        for l, (W, b) in enumerate(params, start=1):
            v[f"W{l}"], v[f"b{l}"] = W.copy(), b.copy()
        v[f"b{L}"] = float(params[-1][1][0])
        for l in range(1, L):
            v[f"a{l}"] = ch.a[l - 1].copy()
            v[f"d{l}"] = np.ascontiguousarray(ch.d[l - 1]) if l == 1 else ch.d[l - 1].copy()
            if l >= 2:
                v[f"q{l}"] = ch.q[l - 1][data.S].copy()
        return cls(L, v, data.plan)

    def params(self) -> Params:
        """The network of one seed's state."""
        L = self.L
        out = [(self.v[f"W{l}"].copy(), self.v[f"b{l}"].copy()) for l in range(1, L)]
        return out + [(self.v[f"W{L}"].copy(), np.array([self.v[f"b{L}"]]))]

    def with_(self, **changes: np.ndarray) -> "LySepState":
        """A new state with some variables replaced; cached values of unchanged variables are kept."""
        unknown = [k for k in changes if k not in self.v]
        if unknown:
            raise KeyError(f"unknown variable(s) {sorted(unknown)}")
        cache = {k: c for k, c in self.cache.items() if not any(s in changes for s in _sources(k, self.L))}
        return LySepState(self.L, {**self.v, **changes}, self.plan, cache, self.xp)

    def _cached(self, key: tuple, make):
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    # sigma^(k)(a_l), computed once per value of a_l (sin and cos only).
    def sig(self, l: int) -> SigmaValues:
        return self._cached(("sig", l), lambda: sigma.values(self.xp, self.v[f"a{l}"]))

    # Per-sample squared norms ||d_li[n]||^2 ((S,) n_in, N) and ||q_li[n]||^2 ((S,) |S|, N).
    def nd(self, l: int) -> np.ndarray:
        return self._cached(("nd", l), lambda: squares(self.xp, self.v[f"d{l}"]))

    def nq(self, l: int) -> np.ndarray:
        return self._cached(("nq", l), lambda: squares(self.xp, self.v[f"q{l}"]))

    def w(self, l: int):
        """||W_l||_F^2: a float, or (S,) per seed."""
        def make():
            W = self.v[f"W{l}"]
            return float(np.sum(W * W)) if W.ndim == 2 else sum_per_seed(self.xp, W * W)
        return self._cached(("w", l), make)

    def w1(self) -> np.ndarray:
        """||W_1(:, i)||^2 per input, ((S,) n_in)."""
        return self._cached(("w1", 1), lambda: self.xp.sum(self.v["W1"] * self.v["W1"], axis=-2))

    def layer(self, l: int) -> Layer:
        """(a_l, d_l, q_l) as an engine layer (q_1 = 0: Q None)."""
        return Layer(self.v[f"a{l}"], self.sig(l), self.v[f"d{l}"], self.v[f"q{l}"] if l >= 2 else None)

    @property
    def fit(self) -> Fit:
        """B of `eq:GD_W3` (and its sums U, V) at (a_{L-1}, d_{L-1}, q_{L-1}); W_L, b_L do not enter."""
        return self._cached(("fit", 0), lambda: ch_engine.fit_matrix(self.xp, self.layer(self.L - 1), self.plan))

    @property
    def w_out(self):
        """||W_L||_F^2, the factor every penalty weight carries: a float, or (S,)."""
        return self.w(self.L)


def constraint_names(L: int) -> tuple[str, ...]:
    """The constraint groups: a_l, d_l (l = 1..L-1), q_l (l = 2..L-1)."""
    return tuple(f"{x}{l}" for l in range(1, L) for x in ("a", "d")) + tuple(f"q{l}" for l in range(2, L))


class Terms:
    """Constraint residuals e[name] (same shapes as the variables), their per-sample squares E (cached), r
    ((S,) N), and P, the penalty with the weights of the state the terms belong to (cached by
    :func:`penalty_of`; a float, or (S,))."""

    def __init__(self, e: dict, r: np.ndarray, E: dict | None = None, P=None, xp=np):
        self.e, self.r, self._E, self.P, self.xp = e, r, {} if E is None else E, P, xp

    def __getattr__(self, name: str):
        if name.startswith("e_") and "e" in self.__dict__ and name[2:] in self.__dict__["e"]:
            return self.__dict__["e"][name[2:]]
        raise AttributeError(name)

    def E(self, name: str) -> np.ndarray:
        """Per-sample squared norms of e_name, ((S,) N) or ((S,) n_in, N); computed once per residual."""
        if name not in self._E:
            self._E[name] = squares(self.xp, self.e[name])
        return self._E[name]


def affects(block: str, L: int) -> tuple[str, ...]:
    """The groups of terms a variable block touches ("fit": r)."""
    x, l = block[0], int(block[1:])
    if x == "W" and l == L or x == "b" and l == L:
        return ("fit",)
    if x == "W":
        return ("a1", "d1") if l == 1 else (f"a{l}", f"d{l}", f"q{l}")
    if x == "b":
        return (f"a{l}",)
    nxt = ("fit",) if l == L - 1 else {"a": (f"a{l + 1}", f"d{l + 1}", f"q{l + 1}"),
                                       "d": (f"d{l + 1}", f"q{l + 1}"), "q": (f"q{l + 1}",)}[x]
    return (block,) + nxt


def layer_map(name: str, st: LySepState, data: LySepData) -> np.ndarray:
    """The engine's layer map of constraint ``name`` ("a2", "d2", "q2", ...: l >= 2), a new array: what
    (a, d, q)_l should be given layer l-1's auxiliary variables and W_l, b_l (`eq:var_a`, `eq:var_d`,
    `eq:var_q`).  A state of one seed or a stack of them (a leading seed axis)."""
    x, l = name[0], int(name[1:])
    xp, W, prev = st.xp, st.v[f"W{l}"], st.layer(l - 1)
    if x == "a":
        return ch_engine.propagate_a(xp, W, st.v[f"b{l}"], prev)
    if x == "d":
        return ch_engine.propagate_d(xp, W, prev, data.plan)
    if x == "q":
        return ch_engine.propagate_Q(xp, W, prev, data.plan)
    raise KeyError(name)


def compute_group(name: str, st: LySepState, data: LySepData) -> np.ndarray:
    """The constraint residual e_name (or r for "fit"): the engine's layer map applied to the auxiliary
    variables of layer l-1, minus those of layer l (`eq:var_a`, `eq:var_d`, `eq:var_q`); one seed or a stack."""
    xp, v = st.xp, st.v
    if name == "fit":
        L = st.L
        r = xp.matmul(v[f"W{L}"], st.fit.B)[..., 0, :]
        r += per_seed(v[f"b{L}"], 2) * data.K
        r -= data.Y
        return r
    if name == "a1":
        return xp.matmul(v["W1"], data.Z) + v["b1"][..., None] - v["a1"]
    if name == "d1":
        return ch_engine._T(xp, v["W1"])[..., None] - v["d1"]
    e = layer_map(name, st, data)
    e -= v[name]
    return e


def compute_terms(st: LySepState, data: LySepData) -> Terms:
    return Terms({n: compute_group(n, st, data) for n in constraint_names(st.L)}, compute_group("fit", st, data),
                 xp=st.xp)


def update_terms(terms: Terms, block: str, st: LySepState, data: LySepData,
                 own_map: np.ndarray | None = None) -> Terms:
    """Terms after ``block`` changed: only the groups it touches are recomputed.  ``own_map``: the layer
    map of the block's own constraint (:func:`layer_map`; blocks a_l, d_l, q_l with l >= 2), which the
    block does not change: e_block = own_map - block, the same bits as recomputing it."""
    groups = affects(block, st.L)
    e, r, E = terms.e.copy(), terms.r, terms._E.copy()  # a stacked trial batch's terms: trials.Tiled, copied lazily
    for name in groups:
        E.pop(name, None)
        if name == "fit":
            r = compute_group("fit", st, data)
        elif name == block and own_map is not None:
            e[name] = _own_residual(st.xp, own_map, st.v[name])
        else:
            e[name] = compute_group(name, st, data)
    # W_L and b_L touch r only: the constraints, the weights and so P stay
    return Terms(e, r, E, terms.P if groups == ("fit",) else None, st.xp)


def _own_residual(xp, own_map: np.ndarray, v: np.ndarray) -> np.ndarray:
    """own_map - v: own_map ((S,) ...) the block's layer map, v the block's variable, of the same shape or a
    stacked trial batch's (r S, ...) (accel/trials.py)."""
    if own_map.shape[0] == v.shape[0]:
        return xp.subtract(own_map, v)
    return xp.subtract(own_map[None], v.reshape((-1,) + own_map.shape)).reshape(v.shape)


def weights(st: LySepState, data: LySepData) -> Weights:
    """The self-adaptive omega and D of `eq:Js-elliptic` (and Section 3), combined per constraint, any L, one
    seed or a stack: at L = 3 in the paper's grouping (weights.paper_grouping, each summand cached on the
    state), else by the backward pass (:func:`pass_weights`).  Recomputed only when W_l, d_l or q_l change."""
    if st.L == 3:
        return paper_grouping(st, data)
    return pass_weights(st, data)


def pass_weights(st: LySepState, data: LySepData) -> Weights:
    """The weights by weights.backward_pass, with its tape (the partials need it), cached on the state."""
    L = st.L
    return st._cached(("wt", 0), lambda: Weights(*backward_pass(
        L, {l: st.w(l) for l in range(2, L)}, st.w1(), {l: st.nd(l) for l in range(1, L)},
        {l: st.nq(l) for l in range(2, L)}, data.S, data.kj1, data.hS1, data.k, st.xp)))


def penalty(terms: Terms, wt: Weights):
    """P = (penalty part of N * J_S) / ||W_L||_F^2, the lambda of the W_L ridge system (a float, or (S,))."""
    return penalty_from(terms.E, wt, terms.xp)


def penalty_of(st: LySepState, data: LySepData, terms: Terms):
    """P of the state ``st`` whose terms are ``terms`` (its own weights), computed once for them."""
    if terms.P is None:
        terms.P = penalty(terms, weights(st, data))
    return terms.P


@dataclass
class LossParts:
    """J_S and its parts: floats for one seed, (S,) for a stack."""

    J_S: float
    fit: float  # (1/N) ||r||^2
    penalty: float  # (1/N) ||W_L||^2 P
    P: float


def lysep_loss(st: LySepState, data: LySepData, terms: Terms | None = None) -> LossParts:
    """J_S and its parts.  With exact auxiliary variables J_S = J (Theorem 2.2)."""
    terms = compute_terms(st, data) if terms is None else terms
    return loss_parts(terms.r, penalty_of(st, data, terms), st.w_out, data.N, st.xp)


def loss_parts(r: np.ndarray, P, w3, N: int, xp=np) -> LossParts:
    """J_S = (1/N) ||r||^2 + (1/N) ||W_L||^2 P, the one formula every evaluation uses (so that equal
    inputs give bit-equal J_S, whichever path computed them); r ((S,) N)."""
    fit = ch_engine._dot(xp, r, r) / N
    if np.ndim(fit) == 0:
        fit = float(fit)
    pen = w3 * P / N
    return LossParts(fit + pen, fit, pen, P)


# ------------------------------------------------------------------------------------------------
# Gradients.  "frozen": omega and D recomputed from the current variables and held fixed while
# differentiating.  "through": also differentiated through omega and D (:func:`weight_partials`).


def gradient_blocks(L: int) -> tuple[str, ...]:
    """The gradient blocks in Algorithm 1's order: W_l, a_l, d_l (and q_l, l >= 2) per hidden layer."""
    out: list[str] = []
    for l in range(1, L):
        out += [f"W{l}", f"a{l}", f"d{l}"] + ([f"q{l}"] if l >= 2 else [])
    return tuple(out)


def _rho(wt: Weights, x: str, l: int) -> np.ndarray:
    """rho of constraint x_l shaped to multiply its residual ((S,) M, N) or ((S,) n, M, N): rho_a ((S,) N),
    rho_d ((S,) n_in, N), rho_q ((S,) |S|, 1) (shared by a stack's seeds at l = L-1)."""
    return (wt.rho_a if x == "a" else wt.rho_d if x == "d" else wt.rho_q)[l][..., None, :]


def frozen_gradient(block: str, st: LySepState, data: LySepData, terms: Terms, wt: Weights) -> np.ndarray:
    """dJ_S / d(block) with omega and D held fixed, the block's shape; one seed, or a stack (algorithm.py:
    every variable, rho and the per-seed scalars with a leading seed axis)."""
    xp, L, N = st.xp, st.L, data.N
    c = 2.0 / N
    w3 = st.w_out
    cw = c * w3
    x, l = block[0], int(block[1:])
    if block == "W1":
        inner = xp.matmul(_rho(wt, "a", 1) * terms.e["a1"], data.Z.T)
        inner = inner + ch_engine._T(xp, xp.sum(_rho(wt, "d", 1) * terms.e["d1"], axis=-1))
        return per_seed(cw, 3) * inner
    if x == "W" and l < L:
        # Reverse step through the layer map (a, d, q)_{l-1} -> (a, d, q)_l seeded with the weighted residuals.
        ga, gd, gq = (_rho(wt, "a", l) * terms.e[f"a{l}"], _rho(wt, "d", l) * terms.e[f"d{l}"],
                      _rho(wt, "q", l) * terms.e[f"q{l}"])
        g = ch_engine.weight_gradient(xp, ga, gd, gq, st.layer(l - 1), data.plan)
        g *= per_seed(cw, 3)
        return g
    channel = {"a": "a", "d": "d", "q": "Q"}.get(x)
    if channel and l < L - 1:
        # Through layer l+1's constraints: the engine's input adjoints seeded with the weighted residuals.
        m = l + 1
        ga, gd, gq = (_rho(wt, "a", m) * terms.e[f"a{m}"], _rho(wt, "d", m) * terms.e[f"d{m}"],
                      _rho(wt, "q", m) * terms.e[f"q{m}"])
        g = ch_engine.input_adjoints(xp, st.v[f"W{m}"], ga, gd, gq, st.layer(l), data.plan,
                                     outputs=(channel,))["adQ".index(channel)]
        del ga, gd, gq
        g -= _rho(wt, x, l) * terms.e[block]
        g *= per_seed(cw, g.ndim)
        return g
    if channel and l == L - 1:
        # Through the fit term: the engine's adjoints of B seeded with G = W_L^T r.
        G = ch_engine._T(xp, st.v[f"W{L}"]) * terms.r[..., None, :]
        g = ch_engine.fit_adjoints(xp, G, st.layer(l), data.plan, st.fit, outputs=(channel,))["adQ".index(channel)]
        g *= c
        e = terms.e[block]
        g -= (per_seed(cw, e.ndim) * _rho(wt, x, l)) * e
        return g
    raise KeyError(block)


def gradient(block: str, st: LySepState, data: LySepData, terms: Terms, mode: WeightMode = "frozen",
             wt: Weights | None = None) -> np.ndarray:
    """dJ_S / d(block), same shape as the block's variable.  Blocks: :func:`gradient_blocks`.  ``mode``
    "through" adds, for the W, d and q blocks, the terms through omega and D."""
    wt = weights(st, data) if wt is None else wt
    g = frozen_gradient(block, st, data, terms, wt)
    if mode == "through" and block[0] in "Wdq":
        g = through_weights(g, block, st, data, weight_partials(st, data, wt, terms))
    return g


def weight_partials(st: LySepState, data: LySepData, wt: Weights, terms: Terms) -> WeightPartials:
    """dP/d(norms) at the state's weights ``wt`` (weights.partials: the adjoint of the backward pass, whose
    tape at L = 3 comes from :func:`pass_weights`), seeded with the terms' squared residuals."""
    L = st.L
    tape = wt.tape if wt.tape is not None else pass_weights(st, data).tape
    return partials(L, tape, {k: st.w(k) for k in range(2, L)}, st.w1(), {k: st.nd(k) for k in range(1, L)},
                    {k: st.nq(k) for k in range(2, L)}, data.S, terms.E, st.xp)


def through_weights(g: np.ndarray, block: str, st: LySepState, data: LySepData, wp: WeightPartials) -> np.ndarray:
    """g plus the terms through omega and D of a W, d or q block, (||W_L||^2 / N) dP/d(norm) d(norm)/d(block),
    from the weights' partials ``wp``; one seed or a stack."""
    x, l = block[0], int(block[1:])
    f2 = st.w_out / data.N * 2.0  # f * 2.0, f = ||W_L||^2 / N
    v = st.v[block]
    if block == "W1":
        return g + per_seed(f2, 3) * v * wp.dw1[..., None, :]
    if x == "W":
        return g + per_seed(f2 * wp.dw[l], 3) * v
    return g + per_seed(f2, v.ndim) * v * (wp.dn[l] if x == "d" else wp.dnq[l])[..., None, :]
