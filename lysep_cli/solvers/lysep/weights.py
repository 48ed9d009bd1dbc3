"""The self-adaptive weights of J_S for any depth L >= 2, their partial derivatives, and Theorem 2.1's constant.

Derivation: docs/lysep-depth.md.  Per sample n and input channel i, the errors of the exact channels
(hat) against the auxiliary ones, R_l = a-hat_l - a_l, S_li = d-hat_li - d_li, dq_li = q-hat_li - q_li,
T_li = sigma'(a-hat_l) d-hat_li - sigma'(a_l) d_li and dP_li = (sigma'' d^2 + sigma' q)-hat - (..) obey

    R_l  <= C_s ||W_l|| R_{l-1} + |e_al|                     S_li <= ||W_l|| T_{l-1,i} + |e_dli|
    T_li <= B' S_li + C' |d_li| R_l                          dq_li <= ||W_l|| dP_{l-1,i} + |e_qli|
    dP_li <= B''(|d-hat_li| + |d_li|) S_li + (C''|d-hat_li||d_li| + C'|q_li|) R_l + B' dq_li

(R_1 = |e_a1|, S_1i = |e_d1i|, q_1i = 0, |d-hat_li| <= B'^(l-1) ||W_l||..||W_2|| ||W_1(:,i)||), and the
PINN residual differs from the fitting term of J_S by at most

    |K| ||W_L|| C_s R_{L-1} + sum_i |K_i| ||W_L|| T_{L-1,i} + sum_{i in S} |K-hat_i| ||W_L|| dP_{L-1,i}.

Expanded, every right-hand side is a sum of monomials (constant) x (product of norms) x |e_c|.  The
weight rho_c of constraint c (without the common ||W_L||^2) is the sum over the monomials with e_c of
(product of norms)^2, and Theorem 2.1's constant C_L is max over the output terms of
(largest constant)^2 x (number of monomials).  Because rho is linear in the output coefficients
k = |K|^2, k_i = |K_i|^2, h_i = |K-hat_i|^2, it is computed by one backward pass over the layers
(:func:`backward_pass`); at L = 3 it gives the paper's omega D^2 of `eq:Js-elliptic` exactly
(:func:`paper_grouping` sums it in the paper's order).

With squared norms w_l = ||W_l||_F^2 (l = 2..L-1), w1_i = ||W_1(:,i)||^2, n_li = ||d_li[n]||^2,
nq_li = ||q_li[n]||^2, dh_li = w_l .. w_2 w1_i, the pass from l = L-1 down to 1 is

    gS_l = gT_l + gP_l (dh_l + n_l)                              (gP_l = 0 outside S)
    gR_l = gRin_l + sum_i gT_l n_l + sum_{i in S} gP_l (dh_l n_l + nq_l)
    rho_al = gR_l,  rho_dl = gS_l,  rho_ql = gP_l,
    gT_{l-1} = w_l gS_l,  gP_{l-1} = w_l gP_l,  gRin_{l-1} = w_l gR_l,

from gT_{L-1} = k_i, gP_{L-1} = h_i, gRin_{L-1} = k.  Shapes: (N,) for a, (n_in, N) for d, (|S|, N) for q
(the top layer's rho_q = h_i is kept as (|S|, 1)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lysep_cli.numerics.activation import SIGMA


@dataclass
class Weights:
    """Per-sample penalty weights rho (without the ||W_L||^2 factor) of every constraint, by layer, of one
    seed or of a stack (a leading seed axis S)."""

    rho_a: dict[int, np.ndarray]  # l = 1..L-1: ((S,) N)
    rho_d: dict[int, np.ndarray]  # l = 1..L-1: ((S,) n_in, N)
    rho_q: dict[int, np.ndarray]  # l = 2..L-1: ((S,) |S|, N), (|S|, 1) at l = L-1 (shared by a stack's seeds)
    tape: dict[int, tuple] | None = None  # the backward pass's (gT, gP, gS, gR) per layer, for the partials

    @property
    def L(self) -> int:
        return len(self.rho_a) + 1


def per_seed(x, ndim: int):
    """A per-seed scalar shaped to multiply an array of ``ndim`` dimensions seed by seed: (S,) -> (S, 1, ...),
    and a run alone's float itself."""
    return x if np.ndim(x) == 0 else x.reshape((x.shape[0],) + (1,) * (ndim - 1))


def derivative_bounds(L: int, w: dict, w1: np.ndarray) -> dict[int, np.ndarray]:
    """dh_l = w_l .. w_2 w1 ((S,) n_in): the squared bound of |d-hat_li| without B'^(l-1)."""
    dh = {1: w1}
    for l in range(2, L):
        dh[l] = per_seed(w[l], 2) * dh[l - 1]
    return dh


#: the variables each summand of the paper's grouping of the weights depends on (L = 3, :func:`paper_grouping`):
#: a trial of one block recomputes only those of its block (the others stay in the trial state's cache)
PAPER_SOURCES = {"A2": ("d2", "q2"), "A1": ("d1", "d2", "q2"), "hw": ("W1",), "n12": ("d1", "d2"), "w22": ("W2",),
                 "X": ("W2", "d1", "d2"), "a1": ("W1", "W2", "d1", "d2", "q2"), "a2": ("W1", "W2", "d2", "q2"),
                 "khn12": ("d1", "d2"), "d1": ("W1", "W2", "d1", "d2"), "khn2": ("d2",), "hww": ("W1", "W2"),
                 "d2": ("W1", "W2", "d2")}


def paper_grouping(st, data) -> Weights:
    """rho at L = 3 summed as omega D^2 of `eq:Js-elliptic` (D_a2^1^2 = A2, D_a1^1^2 = A1), the same polynomials
    as :func:`backward_pass` in the paper's grouping, so that the paper's depth keeps its numbers bit for bit
    (a diverging fixed-step run amplifies a reordered sum to 1e-11 in four sweeps; tests check that both
    orders agree to round-off).  ``st`` a LySepState of one seed or a stack (its norms w(2) a float or (S,),
    w1() ((S,) n_in), nd(l) ((S,) n_in, N), nq(2) ((S,) |S|, N)), each summand cached on it (its sources:
    :data:`PAPER_SOURCES`); ``data`` a LySepData (k, kj1, hj1, hS, hS1)."""
    xp = st.xp
    k, kj, hj, hS = data.k, data.kj1, data.hj1, data.hS
    w_2 = st.w(2)
    w2, w1c, w2d = per_seed(w_2, 2), st.w1()[..., None], per_seed(w_2, 3)
    n1, n2 = st.nd(1), st.nd(2)

    def c(name: str, make):
        return st._cached(("paper", name), make)

    A2 = c("A2", lambda: k + xp.sum(kj * n2, axis=-2) + xp.matmul(hS[None, :], st.nq(2))[..., 0, :])  # D_a2^1^2
    A1 = c("A1", lambda: A2 + xp.sum(kj * n1 + hj * n1 * n2, axis=-2))  # D_a1^1(n,n)^2
    hw = c("hw", lambda: w1c * hj)
    w22 = c("w22", lambda: w2d * w2d)
    n12 = c("n12", lambda: n1 + n2)
    X = c("X", lambda: w2d * n1 + w22 * n12)
    rho_a = {1: c("a1", lambda: w2 * A1 + xp.sum(hw * X, axis=-2)),
             2: c("a2", lambda: A2 + w2 * xp.sum(hw * n2, axis=-2))}
    khn12 = c("khn12", lambda: kj + hj * n12)
    khn2 = c("khn2", lambda: kj + hj * n2)
    hww = c("hww", lambda: hj * w2d * w1c)
    rho_d = {1: c("d1", lambda: hw * (w2d + w22) + w2d * khn12),
             2: c("d2", lambda: khn2 + hww)}
    return Weights(rho_a, rho_d, {2: data.hS1})


def backward_pass(L: int, w: dict, w1, nd: dict, nq: dict, S, kj, hS, k: float, xp=np) -> tuple[dict, dict, dict, dict]:
    """rho_a, rho_d, rho_q and the tape (gT, gP, gS, gR) per layer by the backward pass (module docstring), for
    one seed or a stack of them (a leading seed axis): w {l: ||W_l||^2, a float or (S,)},
    w1 ((S,) n_in), nd {l: ((S,) n_in, N)}, nq {l: ((S,) |S|, N)}; S the second-derivative inputs, kj (n_in, 1)
    and hS (|S|, 1) their |K_j|^2 and |K-hat_j|^2, k = |K|^2."""
    dh = derivative_bounds(L, w, w1)
    gT, gP, gR = kj, hS, k
    rho_a, rho_d, rho_q, tape = {}, {}, {}, {}
    for l in range(L - 1, 0, -1):  # loop over the layers, output side first
        n = nd[l]
        dhS = dh[l][..., S][..., None]
        gS = gT + xp.zeros_like(n)
        gS[..., S, :] += gP * (dhS + n[..., S, :])
        second = dhS * n[..., S, :]
        if l >= 2:
            second = second + nq[l]
        gRl = gR + xp.sum(gT * n, axis=-2) + xp.sum(gP * second, axis=-2)
        tape[l] = (gT, gP, gS, gRl)
        rho_a[l], rho_d[l] = gRl, gS
        if l >= 2:
            rho_q[l] = gP
            wl3 = per_seed(w[l], 3)
            gT, gP, gR = wl3 * gS, wl3 * gP, per_seed(w[l], 2) * gRl
    return rho_a, rho_d, rho_q, tape


def penalty_from(E, wt: Weights, xp=np):
    """P = sum_n sum_c rho_c E_c from the per-sample squared residuals E(name) ("a1", "d1", "q2", ..): a float
    for one seed, (S,) for a stack."""
    L = wt.L
    stacked = wt.rho_a[1].ndim == 2

    def dot(x, y):  # x . y over the last axis, per seed: a dot (NumPy's for 1-D @ 1-D)
        return xp.matmul(x[..., None, :], y[..., :, None])[..., 0, 0]

    total = (lambda x: sum_per_seed(xp, x)) if stacked else np.sum  # noqa: E731
    Pa = dot(wt.rho_a[1], E("a1"))
    for l in range(2, L):
        Pa = Pa + dot(wt.rho_a[l], E(f"a{l}"))
    Pd = total(wt.rho_d[1] * E("d1"))
    for l in range(2, L):
        Pd = Pd + total(wt.rho_d[l] * E(f"d{l}"))
    P = Pa
    P += Pd
    for l in range(2, L):  # rho_q ((S,) |S|, 1): one weight per channel
        P += dot(xp.sum(E(f"q{l}"), axis=-1), wt.rho_q[l][..., 0])
    return P if stacked else float(P)


@dataclass
class WeightPartials:
    """dP/d(norms) of P = sum_c <rho_c, E_c>: dw {l: float} (l = 2..L-1), dw1 (n_in,), dn {l: (n_in, N)},
    dnq {l: (|S|, N)}; each with a leading seed axis for a stack."""

    dw: dict[int, float]
    dw1: np.ndarray
    dn: dict[int, np.ndarray]
    dnq: dict[int, np.ndarray]


def sum_per_seed(xp, x):
    """sum(x) of each seed's array of a stack, (S,): x (S, ...)."""
    return xp.ascontiguousarray(x).reshape(x.shape[0], -1).sum(axis=1)


def partials(L: int, tape: dict[int, tuple], w: dict, w1, nd: dict, nq: dict, S, E, xp=np) -> WeightPartials:
    """The adjoint of the backward pass (:func:`backward_pass`, its ``tape``) seeded with the squared residuals
    E(name), for one seed or a stack (w1 (S, n_in) and every array with a leading seed axis): layers
    1 .. L-1, then dh_l = w_l dh_{l-1}."""
    stacked = w1.ndim == 2
    total = (lambda x: sum_per_seed(xp, x)) if stacked else np.sum  # noqa: E731
    dh = derivative_bounds(L, w, w1)
    n_in = w1.shape[-1]
    lamT = lamP = lamR = None
    dw, dn, dnq, ddh = {}, {}, {}, {}
    for l in range(1, L):  # the reverse of the weights' pass: input side first
        gT, gP, gS, gRl = tape[l]
        n = nd[l]
        nS = n[..., S, :]
        lS = xp.array(E(f"d{l}"), dtype=float)
        lR = xp.array(E(f"a{l}"), dtype=float)
        lP = xp.zeros_like(gP * nS)
        if l >= 2:
            wl3 = per_seed(w[l], 3)
            lS += wl3 * lamT
            lR += per_seed(w[l], 2) * lamR
            lP += E(f"q{l}") + wl3 * lamP
            dw[l] = total(gS * lamT) + total(gP * lamP) + total(gRl * lamR)
        dhS = dh[l][..., S][..., None]
        gP_full = xp.zeros(n.shape)
        gP_full[..., S, :] = gP
        second = dhS * nS + (nq[l] if l >= 2 else 0.0)
        lR1 = lR[..., None, :]
        lamT = lS + lR1 * n
        lamP = lP + lS[..., S, :] * (dhS + nS) + lR1 * second
        lamR = lR
        dn[l] = lR1 * (gT + gP_full * dh[l][..., None]) + lS * gP_full
        if l >= 2:
            dnq[l] = lR1 * gP
        d = xp.zeros(n.shape[:-2] + (n_in,))
        d[..., S] = xp.sum(lS[..., S, :] * gP + lR1 * gP * nS, axis=-1)
        ddh[l] = d
    for l in range(L - 1, 1, -1):  # dh_l = w_l dh_{l-1}
        dw[l] += xp.matmul(ddh[l][..., None, :], dh[l - 1][..., :, None])[..., 0, 0]  # a dot per seed
        ddh[l - 1] = ddh[l - 1] + per_seed(w[l], 2) * ddh[l]
    return WeightPartials(dw, ddh[1], dn, dnq)


# ------------------------------------------------------------------------------------------------
# Theorem 2.1 for any L: the constant C_L.


@dataclass(frozen=True)
class _Bound:
    """A bound expanded into monomials: how many, and the largest constant among them."""

    count: int
    c: float

    def times(self, *factors: float) -> "_Bound":
        """Multiplied by a sum of monomials with the given constants."""
        return _Bound(self.count * len(factors), self.c * max(factors))

    def __add__(self, other: "_Bound") -> "_Bound":
        return _Bound(self.count + other.count, max(self.c, other.c))


def monomial_counts(L: int, constants: tuple[float, ...] | None = None) -> dict[str, _Bound]:
    """The expanded bounds of the three output terms: "R" (C_s R_{L-1}), "T" (T_{L-1,i}), "P" (dP_{L-1,i})."""
    Cs, C1, C2, B1, B2 = SIGMA.constants if constants is None else constants
    e = _Bound(1, 1.0)  # one constraint residual |e_c|
    R, S = e, e
    T = S.times(B1) + R.times(C1)
    P = S.times(B2, B2) + R.times(C2)  # q_1 = 0: no sigma' q term, no dq term
    for l in range(2, L):  # loop over the layers
        R = R.times(Cs) + e
        S = T + e
        T = S.times(B1) + R.times(C1)
        dq = P + e
        dhc = B1 ** (l - 1)
        P = S.times(B2 * dhc, B2) + R.times(C2 * dhc, C1) + dq.times(B1)
    return {"R": R.times(Cs), "T": T, "P": P}


def theorem_constant(L: int = 3, C_s: float = 1.0, C_s1: float = 1.0, C_s2: float = 1.0, B_s1: float = 1.0,
                     B_s2: float = 1.0, second: bool = True) -> float:
    """C_L = max{1, c_X^2 #X over the output terms X} (docs/lysep-depth.md); sigma = sin: 3, 14, 33, 62 at
    L = 2, 3, 4, 5, i.e. (L-1) L (L+4) / 3 + L - 3.  ``second``: the problem has second derivatives."""
    b = monomial_counts(L, (C_s, C_s1, C_s2, B_s1, B_s2))
    return max([1.0] + [x.c**2 * x.count for k, x in b.items() if second or k != "P"])


def paper_constant(C_s: float = 1.0, C_s1: float = 1.0, C_s2: float = 1.0, B_s1: float = 1.0,
                   B_s2: float = 1.0) -> float:
    """The paper's C = max{1, 2 C_sigma^2, 2 C_sigma^4, 5 C_1^2, 14 C_2^2} of Theorem 2.1 (L = 3; 14 for sin).

    Its C_2 omits the C_sigma that the R_2 term of dP_2 carries (docs/lysep-depth.md); equal for sin.
    """
    C1 = max(B_s1 * max(1.0, B_s1), C_s1 * max(1.0, B_s1, C_s))
    C2 = max(B_s2 * max(1.0, B_s1, C_s1, B_s1**2, B_s1 * C_s1), max(1.0, C_s1) * max(C_s1, B_s1 * C_s2))
    return max(1.0, 2 * C_s**2, 2 * C_s**4, 5 * C1**2, 14 * C2**2)
