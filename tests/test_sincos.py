"""sigma's sin and cos (lysep_cli/numerics/sincos.py): accuracy against the C library, the same bits from
the numba kernel and the NumPy reference, the library's functions beyond the reduction's range."""

from __future__ import annotations

import numpy as np
import pytest

from lysep_cli.numerics import sincos as sc
from lysep_cli.numerics.activation import SIGMA


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.abs(got - ref) / np.spacing(np.abs(ref))


@pytest.mark.parametrize("half_width", [1e-3, 4.0, 60.0, sc.LIMIT])
def test_within_two_ulp_of_the_c_library_and_half_an_ulp_of_one_in_absolute_terms(half_width):
    x = np.random.default_rng(0).uniform(-half_width, half_width, 200_000)
    s, c = sc.sincos(x)
    for got, ref in ((s, np.sin(x)), (c, np.cos(x))):
        assert ulp_error(got, ref).max() <= 2.0
        assert np.abs(got - ref).max() <= 0.5 * np.finfo(float).eps


def test_exact_values_and_quadrants():
    x = np.array([0.0, -0.0, np.pi / 2, np.pi, 1.5 * np.pi, 2 * np.pi, -np.pi / 2, 1e-300])
    s, c = sc.sincos(x)
    assert s[0] == 0.0 and c[0] == 1.0 and c[1] == 1.0 and s[7] == 1e-300
    assert np.allclose(s[2:7], np.sin(x[2:7]), rtol=0, atol=1e-15)
    assert np.allclose(c[2:7], np.cos(x[2:7]), rtol=0, atol=1e-15)


def test_the_kernel_and_the_numpy_reference_give_the_same_bits():
    x = np.random.default_rng(1).normal(0.0, 20.0, (64, 300))  # 19,200 values: the kernel's path
    assert x.size >= sc.NUMBA_FROM
    s1, c1 = sc.sincos(x)
    s2, c2 = sc.sincos(x, use_numba=False)
    assert s1.shape == x.shape and c1.shape == x.shape
    assert np.array_equal(s1.view(np.int64), s2.view(np.int64))
    assert np.array_equal(c1.view(np.int64), c2.view(np.int64))
    assert sc._kernel() is not None  # numba is a dependency: the compiled path did run


def test_beyond_the_range_inf_and_nan_take_the_library_functions():
    x = np.array([2e5, -1e9, 1e300, np.inf, -np.inf, np.nan, 3.0] * 1000)
    s, c = sc.sincos(x)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(s[:6], np.sin(x[:6]), equal_nan=True)
        assert np.array_equal(c[:6], np.cos(x[:6]), equal_nan=True)
    assert np.isnan(s[3]) and np.isnan(c[5])


def test_sigma_and_its_derivatives_come_from_the_same_evaluation():
    a = np.random.default_rng(2).uniform(-5, 5, (7, 50))
    v = SIGMA.values(a)
    s, c = sc.sincos(a)
    assert np.array_equal(SIGMA(a), s) and np.array_equal(v.s0, s) and np.array_equal(v.s1, c)
    assert np.array_equal(v.s2, -s) and np.array_equal(v.s3, -c)
    for k, want in enumerate((s, c, -s, -c)):
        assert np.array_equal(SIGMA.derivative(a, k), want)


def test_a_run_too_large_for_numba_takes_the_numpy_paths_with_the_same_bits(monkeypatch):
    """numba_for_run: a run above its solver's bound never calls a numba kernel (σ here; the fit matrix
    asks the same numba_wanted), and σ keeps its bits; without a bound every run uses the kernels."""
    x = np.random.default_rng(2).normal(0.0, 20.0, (64, 300))
    s_kernel, c_kernel = sc.sincos(x)
    try:
        assert sc.numba_for_run(10**9) and sc.numba_wanted(x.size)  # no bound
        assert sc.numba_for_run(1000, 1000) and sc.numba_wanted(x.size)
        assert not sc.numba_for_run(1001, 1000) and not sc.numba_wanted(x.size)

        def no_kernel():
            raise AssertionError("a numba kernel was asked for in a run too large for numba")

        monkeypatch.setattr(sc, "_kernel", no_kernel)
        s, c = sc.sincos(x)
        assert np.array_equal(s.view(np.int64), s_kernel.view(np.int64))
        assert np.array_equal(c.view(np.int64), c_kernel.view(np.int64))
    finally:
        sc.numba_for_run(0)
    assert sc.numba_wanted(x.size)
