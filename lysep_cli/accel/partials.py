"""dP / d(norms) for S seeds stacked: solvers/lysep/weights.weight_partials with a leading seed axis.

The adjoint of the weights' backward pass (weights._backward_pass, its tape (gT, gP, gS, gR) per layer) seeded
with the squared residuals E_c, for LySep's ``weights: through`` (omega and D differentiated through).  The
operations and their order are weight_partials's, so each seed's partials are the CPU's bit for bit: per seed,
every full sum a pairwise sum of the seed's entries in memory order, every axis sum the CPU's axis, each dot
product a batched (1, n) @ (n, 1).

Shapes (S seeds, n inputs, N samples, |S| second-derivative channels): w {l: (S,)} (||W_l||^2, l = 2..L-1),
w1 (S, n) (||W_1(:, i)||^2), nd {l: (S, n, N)}, nq {l: (S, |S|, N)}; the tape's gT (n, 1) at l = L-1 (shared by
the seeds) or (S, n, N), gP (|S|, 1) or (S, |S|, 1), gS (S, n, N), gR (S, N); E(name) (S, N) for a_l,
(S, n, N) for d_l, (S, |S|, N) for q_l.  Out: dw {l: (S,)}, dw1 (S, n), dn {l: (S, n, N)}, dnq {l: (S, |S|, N)}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from lysep_cli.numerics.channels import Array, _dot


@dataclass
class StackedPartials:
    """weights.WeightPartials per seed: dw {l: (S,)}, dw1 (S, n), dn {l: (S, n, N)}, dnq {l: (S, |S|, N)}."""

    dw: dict[int, Array]
    dw1: Array
    dn: dict[int, Array]
    dnq: dict[int, Array]


def _sumall(xp: Any, x: Array) -> Array:
    """np.sum(x[s]) per seed, (S,)."""
    return xp.ascontiguousarray(x).reshape(x.shape[0], -1).sum(axis=1)


def weight_partials(xp: Any, L: int, tape: dict[int, tuple], w: dict[int, Array], w1: Array, nd: dict[int, Array],
                    nq: dict[int, Array], Sx: Array, E: Callable[[str], Array]) -> StackedPartials:
    """weights.weight_partials for every seed (module docstring): layers 1 .. L-1, then dh_l = w_l dh_{l-1}."""
    dh = {1: w1}  # weights.derivative_bounds
    for l in range(2, L):
        dh[l] = w[l][:, None] * dh[l - 1]
    n_in = w1.shape[1]
    lamT = lamP = lamR = None
    dw, dn, dnq, ddh = {}, {}, {}, {}
    for l in range(1, L):  # the reverse of the weights' pass: input side first
        gT, gP, gS, gRl = tape[l]
        n = nd[l]
        nS = n[:, Sx]
        lS = xp.array(E(f"d{l}"), dtype=float)
        lR = xp.array(E(f"a{l}"), dtype=float)
        lP = xp.zeros_like(gP * nS)
        if l >= 2:
            wl = w[l]
            lS += wl[:, None, None] * lamT
            lR += wl[:, None] * lamR
            lP += E(f"q{l}") + wl[:, None, None] * lamP
            dw[l] = _sumall(xp, gS * lamT) + _sumall(xp, gP * lamP) + _sumall(xp, gRl * lamR)
        dhS = dh[l][:, Sx][:, :, None]
        gP_full = xp.zeros(n.shape)
        gP_full[:, Sx] = gP
        second = dhS * nS + (nq[l] if l >= 2 else 0.0)
        lR1 = lR[:, None, :]
        lamT = lS + lR1 * n
        lamP = lP + lS[:, Sx] * (dhS + nS) + lR1 * second
        lamR = lR
        dn[l] = lR1 * (gT + gP_full * dh[l][:, :, None]) + lS * gP_full
        if l >= 2:
            dnq[l] = lR1 * gP
        d = xp.zeros((n.shape[0], n_in))
        d[:, Sx] = xp.sum(lS[:, Sx] * gP + lR1 * gP * nS, axis=2)
        ddh[l] = d
    for l in range(L - 1, 1, -1):  # dh_l = w_l dh_{l-1}
        dw[l] += _dot(xp, ddh[l], dh[l - 1])
        ddh[l - 1] = ddh[l - 1] + w[l][:, None] * ddh[l]
    return StackedPartials(dw, ddh[1], dn, dnq)
