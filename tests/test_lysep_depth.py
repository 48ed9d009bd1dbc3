"""LySep at any depth L >= 2: Theorem 2.2 (J_S = J at exact auxiliaries), Theorem 2.1 (the bound with
C_L), gradients of every block against central differences, closed forms, and the solver at L != 3."""

from __future__ import annotations

import numpy as np
import pytest

from lysep_cli.numerics.network import init_params, pinn_loss
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers.base import TrainingData
from lysep_cli.solvers.lysep.algorithm import block_order, bound_factor, solve
from lysep_cli.solvers.lysep.loss import (LySepData, LySepState, compute_terms, gradient, gradient_blocks, lysep_loss,
                                          pass_weights, penalty, weights)
from lysep_cli.solvers.lysep.updates import solve_b, solve_b3, solve_W3
from lysep_cli.solvers.lysep.weights import theorem_constant

PDES = [("elliptic", 2), ("elliptic", 3), ("parabolic", 2), ("hyperbolic", 2)]


def setup(pde: str, d: int, L: int, N: int = 24, M: int = 5, seed: int = 0):
    P = make_problem(pde, d)
    Z, _ = train_test_points(N, 4, d, P.time_dependent)
    td = TrainingData.build(P, Z)
    data = LySepData.build(Z, td.coef, td.Y)
    return P, td, data, init_params(P.n_in, L, M, seed)


def perturbed(data, params, scale=0.05, seed=1) -> LySepState:
    rng = np.random.default_rng(seed)
    st = LySepState.from_params(params, data)
    for name in [b for b in gradient_blocks(st.L) if b[0] != "W"]:
        v = st.v[name]
        st = st.with_(**{name: v + scale * rng.standard_normal(v.shape)})
    return st


@pytest.mark.parametrize("L", [2, 3, 4, 5])
@pytest.mark.parametrize("pde,d", PDES)
def test_exact_auxiliaries_give_J_S_equal_J(pde, d, L):
    """Theorem 2.2 at depth L: with the forward values every penalty vanishes and J_S = J."""
    _, td, data, params = setup(pde, d, L)
    parts = lysep_loss(LySepState.from_params(params, data), data)
    assert parts.penalty == pytest.approx(0.0, abs=1e-20)
    assert parts.J_S == pytest.approx(pinn_loss(params, td.Z, td.coef, td.Y), rel=1e-12)


@pytest.mark.parametrize("L", [2, 3, 4, 5])
@pytest.mark.parametrize("pde,d", PDES)
def test_bound_holds_at_random_auxiliaries(pde, d, L):
    """Theorem 2.1 at depth L: J <= factor * C_L * J_S for arbitrary auxiliary variables (and W, b)."""
    _, td, data, params = setup(pde, d, L)
    factor = bound_factor(pde, d) * theorem_constant(L)
    worst = 0.0
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        p = [(W * rng.uniform(0.5, 3.0), b) for W, b in params]  # also larger weights
        st = perturbed(data, p, scale=[0.01, 0.3, 1.0][seed % 3], seed=seed)
        J = pinn_loss(st.params(), td.Z, td.coef, td.Y)
        J_S = lysep_loss(st, data).J_S
        assert J <= factor * J_S
        worst = max(worst, J / J_S)
    assert worst > 0


def test_theorem_constant_for_sin():
    assert [theorem_constant(L) for L in (2, 3, 4, 5)] == [3.0, 14.0, 33.0, 62.0]
    for L in range(2, 9):
        assert theorem_constant(L) == (L - 1) * L * (L + 4) / 3 + L - 3


@pytest.mark.parametrize("pde,d", PDES)
def test_backward_pass_equals_the_papers_weights_at_L3(pde, d):
    """At L = 3 the weights are summed in the paper's grouping; the general pass gives the same values."""
    _, _, data, params = setup(pde, d, 3)
    st = perturbed(data, params, scale=0.3)
    paper, general = weights(st, data), pass_weights(st, data)
    for l in (1, 2):
        np.testing.assert_allclose(general.rho_a[l], paper.rho_a[l], rtol=1e-13)
        np.testing.assert_allclose(general.rho_d[l], paper.rho_d[l], rtol=1e-13, atol=0)
    np.testing.assert_array_equal(general.rho_q[2], paper.rho_q[2])


@pytest.mark.parametrize("L", [2, 4])
@pytest.mark.parametrize("pde,d", PDES)
@pytest.mark.parametrize("mode", ["frozen", "through"])
def test_gradients_of_every_block_match_central_differences(pde, d, L, mode):
    _, _, data, params = setup(pde, d, L, N=16, M=4)
    st = perturbed(data, params)
    rng = np.random.default_rng(3)
    wt0 = weights(st, data)
    for block in gradient_blocks(L):
        terms = compute_terms(st, data)
        g = gradient(block, st, data, terms, mode, weights(st, data))
        x = st.v[block]

        def f(v):
            s2 = st.with_(**{block: v.reshape(x.shape)})
            t = compute_terms(s2, data)
            if mode == "frozen":  # omega and D held at their values before the step
                return (t.r @ t.r + s2.w_out * penalty(t, wt0)) / data.N
            return lysep_loss(s2, data, t).J_S

        x0 = x.ravel().copy()
        h = 1e-6
        noise = 1e-15 * abs(f(x0)) / h
        for k in rng.choice(x0.size, min(12, x0.size), replace=False):
            e = np.zeros_like(x0)
            e[k] = h
            fd = (f(x0 + e) - f(x0 - e)) / (2 * h)
            assert fd == pytest.approx(g.ravel()[k], rel=1e-5, abs=1e-8 * np.abs(g).max() + 10 * noise), (block, k)


@pytest.mark.parametrize("L", [2, 4, 5])
@pytest.mark.parametrize("pde,d", PDES)
def test_closed_forms_minimise_their_block(pde, d, L):
    _, _, data, params = setup(pde, d, L)
    st = perturbed(data, params)
    wt = weights(st, data)
    for l in range(1, L):  # b_l: the gradient of J_S in b_l vanishes at the rho_al-weighted mean
        s2 = st.with_(**{f"b{l}": solve_b(l, st, data, wt)})
        e = compute_terms(s2, data).e[f"a{l}"]
        rho = wt.rho_a[l]
        assert np.abs(e @ rho).max() < 1e-9 * np.abs(e).max() * rho.sum()
    sol = solve_W3(st, data, compute_terms(st, data))  # W_L: ridge with lambda = P
    s3 = st.with_(**{f"W{L}": sol.W3})
    J3 = lysep_loss(s3, data).J_S
    rng = np.random.default_rng(0)
    for _ in range(5):
        dW = 1e-4 * rng.standard_normal(sol.W3.shape)
        assert lysep_loss(s3.with_(**{f"W{L}": sol.W3 + dW}), data).J_S >= J3
    s4 = s3.with_(**{f"b{L}": solve_b3(s3, data)})  # b_L
    J4 = lysep_loss(s4, data).J_S
    assert J4 <= J3 + 1e-15
    for db in (1e-4, -1e-4):
        assert lysep_loss(s4.with_(**{f"b{L}": s4.v[f"b{L}"] + db}), data).J_S >= J4


def test_block_order_generalises_algorithm_1():
    assert block_order(3) == ("W1", "b1", "a1", "d1", "W2", "b2", "a2", "d2", "q2", "W3", "b3")
    assert block_order(2) == ("W1", "b1", "a1", "d1", "W2", "b2")
    assert block_order(4)[-7:] == ("W3", "b3", "a3", "d3", "q3", "W4", "b4")


@pytest.mark.parametrize("L", [2, 4])
@pytest.mark.parametrize("pde,d", PDES)
def test_algorithm_at_depth_L(pde, d, L):
    P, td, _, params = setup(pde, d, L, N=30, M=5)
    res = solve(P, td, params, {"tau": 1e-6}, iterations=4)
    H = res.history
    assert len(H["J"]) == 5 and res.status == "ok"
    assert H["J_S"][-1] < H["J_S"][0]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(H["J_S"][1:], H["J_S"][2:]))
    bound = res.bound
    assert bound["violations"] == 0 and bound["C"] == theorem_constant(L)
    assert bound["factor"] == bound_factor(pde, d) * theorem_constant(L)
    diag = res.diagnostics
    assert {f"move_W{l}" for l in range(1, L)} <= set(diag)
    assert set(diag["accepted_steps"]) == set(gradient_blocks(L))
    assert res.params[-1][0].shape == (1, 5) and len(res.params) == L
