"""What the studies share: the archive's finished runs of a cell, a report's command line and its writing,
and the LySep set-up of depth_stall, js_breakdown and ridge_escape.

An experiment's training data in LySep's form with its spec's LySep settings, and a seeded LySep run
stepped one sweep at a time under the runner's conditions (one BLAS thread, floating-point warnings off,
the set-up included), so that a script only says what it prints.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers.lysep.algorithm import LySepIteration, Settings
from lysep_cli.solvers.lysep.loss import LySepData
from lysep_cli.specs import ExperimentSpec, default_config, load_specs
from lysep_cli.store import records
from lysep_cli.store.schema import RunRecord


def finished_runs(results: Path, spec: ExperimentSpec, solver: str, L: int, M: int,
                  seeds: Iterable[int]) -> Iterator[tuple[int, RunRecord, Path]]:
    """(seed, record, weights file) of every archived run of the cell among ``seeds`` that finished (status
    ok) with the spec's iterations (any count for the one-solve baselines rfls and rfm)."""
    for seed in seeds:
        json_path, npz_path = records.record_paths(results, spec.name, solver, L, M, seed)
        if not json_path.exists():
            continue
        rec = records.read_record(json_path)
        if rec.status == "ok" and (solver in ("rfls", "rfm") or rec.iterations == spec.iterations):
            yield seed, rec, npz_path


def report_parser(doc: str, out: str) -> argparse.ArgumentParser:
    """A report's command line: ``--results`` (default results/paper) and ``--out`` (default ``out``)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--results", type=Path, default=Path("results/paper"))
    p.add_argument("--out", type=Path, default=Path(out))
    return p


def write_report(text: str, out: Path) -> None:
    """Write a report's text to ``out`` and print it."""
    out.write_text(text, encoding="utf-8")
    print(text, end="")


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
