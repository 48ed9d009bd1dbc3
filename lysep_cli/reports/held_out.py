"""The held-out residual of a run: J of its saved weights at its experiment's test points (docs/varpro.md,
"Choosing among varpro's runs").

A network that trains every weight can interpolate its training residual, so training J says little about
which of its runs to pick; the PINN loss at the test points (never trained on) does, and it needs no exact
solution: only the problem's coefficients and right-hand side there.

    J_held = (1/n_test) ||R(Z_test)||^2,      R = the PINN residual of eq:J-elliptic / -parabolic / -hyperbolic

with the weights of ``<results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.npz`` (store/layout.py).

One value costs a forward pass with every derivative channel at the test points (≈ 0.03–0.1 s at the harder
suite's (3,50)), so the values are kept in ``<results>/held-out.csv`` (:data:`CACHE`), one row per run keyed by
the record's ``weights_sha256`` and ``data_sha256`` (a rerun or another data set is computed afresh) and
written with Python's float repr (the same bits read back): a summary over the suite's 840 varpro runs reads
them instead of recomputing them.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from lysep_cli.numerics import metrics
from lysep_cli.numerics.dataset import TrainingData, experiment_data
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.atomic import write_text
from lysep_cli.store.records import load_params, record_paths
from lysep_cli.store.schema import RunRecord

#: the cache of held-out J values under a results directory
CACHE = "held-out.csv"
COLUMNS = ["experiment", "solver", "L", "M", "seed", "weights_sha256", "data_sha256", "J_held"]

Key = tuple[str, str, int, int, int, str, str]


def data_at_test_points(spec: ExperimentSpec) -> TrainingData:
    """The experiment's test points with the residual's coefficients and data there (Z: (n_in, n_test))."""
    data = experiment_data(spec)
    return TrainingData.build(data.problem, data.Z_test)


def _key(r: RunRecord) -> Key:
    return (r.experiment, r.solver, int(r.L), int(r.M), int(r.seed), r.weights_sha256, r.data_sha256)


class HeldOut:
    """record -> J of its saved weights at its experiment's test points (one of ``specs``); NaN when the
    weights cannot be read or give a non-finite J.  Values come from ``cache`` (default RESULTS/held-out.csv)
    where it holds the run's weights; :meth:`save` writes the new ones."""

    def __init__(self, results: Path, specs: list[ExperimentSpec], cache: Path | None = None) -> None:
        self.results = Path(results)
        self.path = self.results / CACHE if cache is None else cache
        self.specs = {s.name: s for s in specs}
        self.values: dict[Key, float] = {}
        self.new = 0
        self._test: dict[str, TrainingData] = {}  # data_sha256 -> the test points' residual data
        if self.path.is_file():
            for row in csv.DictReader(io.StringIO(self.path.read_text())):
                key = (row["experiment"], row["solver"], int(row["L"]), int(row["M"]), int(row["seed"]),
                       row["weights_sha256"], row["data_sha256"])
                self.values[key] = float(row["J_held"])

    def compute(self, r: RunRecord) -> float | None:
        """J at the test points from the record's weights file (no cache): NaN where it is not finite, None
        where the weights cannot be read."""
        try:
            params = load_params(record_paths(self.results, r.experiment, r.solver, r.L, r.M, r.seed)[1])
        except (OSError, KeyError, ValueError):
            return None
        if r.data_sha256 not in self._test:
            self._test[r.data_sha256] = data_at_test_points(self.specs[r.experiment])
        test = self._test[r.data_sha256]
        value = float(metrics.loss(params, test.Z, test.coef, test.Y))
        return value if math.isfinite(value) else math.nan

    def __call__(self, r: RunRecord) -> float:
        key = _key(r)
        if key not in self.values:
            value = self.compute(r)
            if value is None:  # unreadable weights: NaN, not kept
                return math.nan
            self.values[key] = value
            self.new += 1
        return self.values[key]

    def save(self) -> Path | None:
        """Write the cache (atomically, rows sorted) when this instance computed new values; its path, else None."""
        if not self.new:
            return None
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        w.writerows([*k, repr(v)] for k, v in sorted(self.values.items()))
        self.new = 0
        return write_text(self.path, buf.getvalue())


__all__ = ["HeldOut", "data_at_test_points", "CACHE"]
