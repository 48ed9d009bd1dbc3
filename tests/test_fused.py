"""The fused fit matrix (lysep_cli/numerics/fused.py) gives the NumPy code's B, U, V bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from lysep_cli.numerics import channels, fused
from lysep_cli.numerics.activation import SIGMA
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.numerics.sincos import NUMBA_FROM
from lysep_cli.solvers.base import TrainingData


@pytest.mark.parametrize("pde,d", [("elliptic", 2), ("parabolic", 5), ("hyperbolic", 5)])
@pytest.mark.parametrize("grouped", [True, False])  # PINN's grouped channels, LySep's one per q_j
@pytest.mark.parametrize("with_Q", [True, False])
def test_the_fused_fit_matrix_is_bit_identical(pde, d, grouped, with_Q):
    P = make_problem(pde, d)
    Z, _ = train_test_points(300, 4, d, P.time_dependent)
    coef = TrainingData.build(P, Z).coef
    plan = channels.ChannelPlan.build(coef, grouped=grouped)
    rng = np.random.default_rng(7)
    M, N = 20, Z.shape[1]
    a = rng.normal(size=(M, N))
    layer = channels.Layer(a, SIGMA.values(a), rng.normal(size=(P.n_in, M, N)),
                           rng.normal(size=(plan.n_groups, M, N)) if with_Q else None)
    assert a.size >= NUMBA_FROM and fused.fit_sums_kernel() is not None
    got = channels.fit_matrix(np, layer, plan)
    ref = channels.fit_matrix(np, layer, plan, fused=False)
    for k in ("B", "U", "V"):
        assert np.array_equal(getattr(got, k).view(np.int64), getattr(ref, k).view(np.int64)), k
    # with a seed axis (the layer and its negative stacked): the kernel seed by seed, each seed's bits alone
    a2 = np.stack([a, -a])
    stacked = channels.Layer(a2, SIGMA.values(a2), np.stack([layer.d, -layer.d]),
                             np.stack([layer.Q, -layer.Q]) if with_Q else None)
    both = channels.fit_matrix(np, stacked, plan)
    neg = channels.fit_matrix(np, channels.Layer(-a, SIGMA.values(-a), -layer.d, -layer.Q if with_Q else None), plan,
                              fused=False)
    for k in ("B", "U", "V"):
        assert np.array_equal(getattr(both, k)[0], getattr(got, k)) and np.array_equal(getattr(both, k)[1],
                                                                                       getattr(neg, k)), k


def test_group_index_is_csr():
    flat, start = fused.group_index((np.array([0, 2]), np.array([1])))
    assert flat.tolist() == [0, 2, 1] and start.tolist() == [0, 2, 3]
    flat, start = fused.group_index(())
    assert flat.size == 0 and start.tolist() == [0]
