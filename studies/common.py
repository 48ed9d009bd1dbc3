"""The set-up the LySep study scripts share (depth_stall, js_breakdown, ridge_escape).

An experiment's training data in LySep's form with its spec's LySep settings, and a seeded LySep run
stepped one sweep at a time under the runner's conditions (one BLAS thread, floating-point warnings off,
the set-up included), so that a script only says what it prints.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers.lysep.algorithm import LySepIteration, Settings
from lysep_cli.solvers.lysep.loss import LySepData
from lysep_cli.specs import ExperimentSpec, default_config, load_specs


@dataclass
class Study:
    """One experiment of the project's spec, ready for LySep.

    ``tr``: its training set (``Z`` (n_in, N), ``coef``, ``Y`` (N,)); ``ld``: the same as
    :class:`LySepData` (K, K_i, K-hat); ``settings``: the spec's LySep settings."""

    spec: ExperimentSpec
    data: Any
    tr: Any
    ld: LySepData
    settings: Settings

    def loss(self, params: list) -> float:
        """J, the PINN loss of ``params`` (a list of (W_l, b_l)) on the training set."""
        return network.pinn_loss(params, self.tr.Z, self.tr.coef, self.tr.Y)


def load(experiment: str) -> Study:
    spec = load_specs(default_config())[experiment]
    data = experiment_data(spec)
    tr = data.training
    return Study(spec, data, tr, LySepData.build(tr.Z, tr.coef, tr.Y), Settings.coerce(spec.solvers["lysep"]))


def sweeps(study: Study, L: int, M: int, seed: int, n: int,
           settings: Optional[Settings] = None) -> Iterator[tuple[int, LySepIteration]]:
    """LySep from the seeded (L, M) network: yields (k, the iteration after sweep k) for k = 1..n.

    The caller's code between two yields runs inside the same one-thread BLAS limit."""
    with threadpool_limits(1), np.errstate(all="ignore"):  # the set-up too: as the runner does it
        it = LySepIteration(network.init_params(study.data.problem.n_in, L, M, seed), study.ld,
                            settings if settings is not None else study.settings)
        for k in range(1, n + 1):
            it.sweep()
            yield k, it
