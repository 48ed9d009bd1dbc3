"""lysep_cli/accel/compare.py (issue 46): differences between two runs as measured numbers (max |delta|, ulps)."""

from __future__ import annotations

import numpy as np

from lysep_cli.accel import compare
from lysep_cli.solvers.base import SolveResult


def test_ulps_count_adjacent_floats_across_zero_and_nan():
    x = np.array([1.0, -0.0, np.nan, -2.0, 5e-324, 1.0, 1e300])
    y = np.array([np.nextafter(1.0, 2.0), 0.0, np.nan, np.nextafter(np.nextafter(-2.0, -3.0), -3.0), -5e-324, np.nan,
                  -1e300])
    u = compare.ulps(x, y)
    assert u[:5].tolist() == [1.0, 0.0, 0.0, 2.0, 2.0] and np.isinf(u[5]) and u[6] > 9e18


def test_results_report_max_abs_ulps_and_count():
    a = SolveResult([(np.array([[1.0, 2.0]]), np.array([0.5]))], {"J": [3.0, 2.0, 1.0]})
    b = SolveResult([(np.array([[1.0, np.nextafter(2.0, 3.0)]]), np.array([0.5]))], {"J": [3.0, 2.0, 1.0]})
    d = compare.results(a, b)
    assert d == {"max_abs": float(np.nextafter(2.0, 3.0) - 2.0), "max_ulps": 1.0, "differing": 1, "compared": 6}
    assert compare.line(compare.results(a, a)) == "identical (6 values)" and "1 ulps, 1 of 6" in compare.line(d)
    cut = SolveResult(a.params, {"J": [3.0, 2.0]})
    assert compare.many([a], [cut])["differing"] == -1 and "different lengths" in compare.line(compare.many([a], [cut]))
