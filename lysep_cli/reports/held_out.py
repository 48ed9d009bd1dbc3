"""The held-out residual of a run: J of its saved weights at its experiment's test points (docs/varpro.md,
"Choosing among varpro's runs").

A network that trains every weight can interpolate its training residual, so training J says little about
which of its runs to pick; the PINN loss at the test points (never trained on) does, and it needs no exact
solution: only the problem's coefficients and right-hand side there.

    J_held = (1/n_test) ||R(Z_test)||^2,      R = the PINN residual of eq:J-elliptic / -parabolic / -hyperbolic

with the weights of ``<results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.npz`` (store/layout.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from lysep_cli.numerics import metrics
from lysep_cli.numerics.dataset import TrainingData, experiment_data
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.records import load_params, record_paths
from lysep_cli.store.schema import RunRecord


def data_at_test_points(spec: ExperimentSpec) -> TrainingData:
    """The experiment's test points with the residual's coefficients and data there (Z: (n_in, n_test))."""
    data = experiment_data(spec)
    return TrainingData.build(data.problem, data.Z_test)


def held_out_J(results: Path, specs: list[ExperimentSpec]) -> Callable[[RunRecord], float]:
    """record -> J of its saved weights at its experiment's test points (one of ``specs``); NaN when the
    weights cannot be read or give a non-finite J.  Each experiment's test data is built once."""
    by_name = {s.name: s for s in specs}
    cache: dict[str, TrainingData] = {}

    def J(r: RunRecord) -> float:
        if r.experiment not in cache:
            cache[r.experiment] = data_at_test_points(by_name[r.experiment])
        test = cache[r.experiment]
        try:
            params = load_params(record_paths(results, r.experiment, r.solver, r.L, r.M, r.seed)[1])
        except (OSError, KeyError, ValueError):
            return math.nan
        value = float(metrics.loss(params, test.Z, test.coef, test.Y))
        return value if math.isfinite(value) else math.nan

    return J


__all__ = ["held_out_J", "data_at_test_points"]
