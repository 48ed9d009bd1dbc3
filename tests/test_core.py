"""Problems, sampling and the network's derivative channels against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from lysep_cli.numerics.network import (flatten, forward, init_params, pinn_loss, pinn_loss_and_grad, residual, unflatten, value)
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import halton_ball, train_test_points

PROBLEMS = [("elliptic", 2), ("elliptic", 10), ("parabolic", 5), ("hyperbolic", 5)]


def fd_operator(P, Z: np.ndarray, u=None, h: float = 1e-4) -> np.ndarray:
    """The PDE operator of P applied to u (default: the exact solution) by central differences."""
    u = P.u if u is None else u
    off = 1 if P.time_dependent else 0
    div = np.zeros(Z.shape[1])
    c = P.coefficient.c
    for i in range(P.d):
        e = np.zeros_like(Z)
        e[off + i] = h / 2
        # d_i (c d_i u) by nested central differences with half steps.
        flux = lambda Zs: c(P.split(Zs)[1]) * (u(Zs + e) - u(Zs - e)) / h  # noqa: E731
        div += (flux(Z + e) - flux(Z - e)) / h
    if P.pde == "elliptic":
        return div
    e = np.zeros_like(Z)
    e[0] = h
    if P.pde == "parabolic":
        return (u(Z + e) - u(Z - e)) / (2 * h) - div
    return (u(Z + e) - 2 * u(Z) + u(Z - e)) / h**2 - div


@pytest.mark.parametrize("pde,d", PROBLEMS)
def test_rhs_matches_finite_differences_of_u(pde, d):
    P = make_problem(pde, d)
    Z, _ = train_test_points(40, 1, d, P.time_dependent)
    Z = Z[:, (Z[0] > 0.05) if P.time_dependent else slice(None)]
    assert np.allclose(P.rhs(Z), fd_operator(P, Z), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pde,d", PROBLEMS)
def test_residual_coefficients_apply_the_operator_to_psi(pde, d):
    """K phi + sum K1 d phi + sum K2 dd phi equals the operator applied to psi = factor * phi (by FD)."""
    P = make_problem(pde, d)
    Z, _ = train_test_points(15, 1, d, P.time_dependent)
    params = init_params(P.n_in, 3, 8, 0)
    coef = P.coefficients(Z)
    ours = residual(forward(params, Z), coef, np.zeros(Z.shape[1]))
    psi = lambda Zs: P.boundary_factor(Zs) * value(params, Zs)  # noqa: E731
    assert np.allclose(ours, fd_operator(P, Z, psi), rtol=1e-5, atol=1e-5)


def test_exact_solutions_vanish_on_the_boundary_and_at_t0():
    for pde, d in PROBLEMS:
        P = make_problem(pde, d)
        x = np.random.default_rng(0).standard_normal((d, 20))
        x /= np.linalg.norm(x, axis=0)
        Z = np.vstack([np.full(20, 0.7), x]) if P.time_dependent else x
        assert np.allclose(P.u(Z), 0, atol=1e-14)
        if P.time_dependent:
            Z0 = np.vstack([np.zeros(20), 0.5 * x])
            assert np.allclose(P.u(Z0), 0, atol=1e-14)


@pytest.mark.parametrize("d,time", [(2, False), (10, False), (5, True)])
def test_halton_points_are_in_the_ball_disjoint_and_deterministic(d, time):
    tr, te = train_test_points(300, 100, d, time)
    n_in = d + int(time)
    assert tr.shape == (n_in, 300) and te.shape == (n_in, 100)
    x = np.concatenate([tr, te], 1)[int(time):]
    assert np.all(np.sum(x * x, 0) <= 1.0)
    if time:
        assert np.all((tr[0] >= 0) & (tr[0] <= 1))
    both = np.concatenate([tr, te], 1).T
    assert len(np.unique(both, axis=0)) == 400
    tr2, _ = train_test_points(300, 100, d, time)
    assert np.array_equal(tr, tr2)
    # The training set is a prefix of a longer sample: more test points never change it.
    assert np.array_equal(halton_ball(300, d, time), tr)


def test_init_is_uniform_in_paper_range_and_seeded():
    p = init_params(3, 4, 25, seed=7)
    assert [W.shape for W, _ in p] == [(25, 3), (25, 25), (25, 25), (1, 25)]
    assert [b.shape for _, b in p] == [(25,), (25,), (25,), (1,)]
    assert max(np.abs(flatten(p))) <= 25**-0.5
    assert np.array_equal(flatten(p), flatten(init_params(3, 4, 25, seed=7)))
    assert not np.array_equal(flatten(p), flatten(init_params(3, 4, 25, seed=8)))
    with pytest.raises(ValueError):
        init_params(3, 1, 25, 0)


@pytest.mark.parametrize("L", [2, 3, 4])
def test_channels_match_finite_differences_of_phi(L):
    rng = np.random.default_rng(0)
    Z = rng.uniform(-0.5, 0.5, (3, 10))
    params = init_params(3, L, 7, 1)
    ch = forward(params, Z)
    assert np.allclose(ch.phi, value(params, Z))
    h = 1e-4
    for j in range(3):
        e = np.zeros_like(Z)
        e[j] = h
        fp, f0, fm = value(params, Z + e), value(params, Z), value(params, Z - e)
        assert np.allclose(ch.phi_d[j], (fp - fm) / (2 * h), atol=1e-8)
        assert np.allclose(ch.phi_dd[j], (fp - 2 * f0 + fm) / h**2, atol=1e-5)


@pytest.mark.parametrize("pde,d", [("elliptic", 2), ("parabolic", 2), ("hyperbolic", 3)])
@pytest.mark.parametrize("L", [2, 3, 4])
def test_pinn_gradient_matches_central_differences(pde, d, L):
    P = make_problem(pde, d)
    Z, _ = train_test_points(25, 1, d, P.time_dependent)
    coef, Y = P.coefficients(Z), P.rhs(Z)
    params = init_params(P.n_in, L, 5, 0)
    _, grads = pinn_loss_and_grad(params, Z, coef, Y)
    theta, G = flatten(params), flatten(grads)
    h = 1e-6
    fd = np.empty_like(theta)
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = h
        fd[k] = (pinn_loss(unflatten(theta + e, params), Z, coef, Y)
                 - pinn_loss(unflatten(theta - e, params), Z, coef, Y)) / (2 * h)
    assert np.max(np.abs(fd - G)) <= 1e-6 * np.max(np.abs(G))


def test_malloc_tuning_is_idempotent_and_changes_no_number():
    from lysep_cli.execution import memory

    P = make_problem("elliptic", 2)
    Z, _ = train_test_points(30, 1, 2, False)
    coef, Y = P.coefficients(Z), P.rhs(Z)
    params = init_params(2, 3, 7, 0)
    before = pinn_loss_and_grad(params, Z, coef, Y)
    first = memory.tune_malloc()
    assert memory.tune_malloc() is True  # second call: already done
    after = pinn_loss_and_grad(params, Z, coef, Y)
    assert before[0] == after[0] and all(np.array_equal(a[0], b[0]) for a, b in zip(before[1], after[1]))
    assert isinstance(first, bool)
