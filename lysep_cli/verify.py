"""`lysep verify`: rerun archived runs and check that they give the archived numbers.

A run's numbers depend only on (spec, solver, L, M, seed, iterations): the runner trains with one BLAS
thread from a seeded network on the deterministic Halton data set.  On the platform that made the
archive a rerun is bit-identical, and lysep pins OpenBLAS's kernel (blas_pin.py) so that every x86-64
machine with AVX2 is that platform; elsewhere (another BLAS kernel or NumPy) round-off may differ, so a
run passes when the largest relative difference over its final values, its whole history and its
weights is at most ``TOLERANCE``.

    relative difference = |new - archived| / |archived|  per final value and history entry,
                          ||new - archived|| / ||archived||  per weight array.

``lysep verify --weights`` does not train: :func:`reevaluate` computes J and the l2 error of each run's
saved network from the archive's own files (the weights NPZ and the experiment's ``data.npz``) and
compares them with the record's final values, under the same rule.  Seconds for the whole archive.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from threadpoolctl import threadpool_limits

from . import network, records
from .metrics import finite_or_none, relative_l2
from .network import Params
from .problems import make_problem
from .runner import RunKey, execute
from .runrecord import RunRecord
from .specs import ExperimentSpec

TOLERANCE = 1e-9


@dataclass(frozen=True)
class Check:
    """The outcome of one rerun: ``max_rel`` over every compared number, ``where`` the worst one."""

    record: RunRecord
    max_rel: float
    where: str
    identical: bool
    kernels: tuple[str | None, str | None] = (None, None)
    """BLAS kernel of the archived run and of the rerun (``versions.blas_core``; None where unrecorded)."""

    what: str = "rerun"
    """"rerun" (trained again) or "weights" (the saved network re-evaluated)."""

    @property
    def ok(self) -> bool:
        return self.identical or self.max_rel <= TOLERANCE

    def line(self) -> str:
        r = self.record
        cell = f"{r.experiment} {r.solver} L{r.L}-M{r.M} seed {r.seed}"
        if self.identical:
            return f"ok        {cell}: " + ("bit-identical" if self.what == "rerun" else
                                           "J and l2 of the saved weights bit-identical to the record")
        verdict = "ok" if self.ok else "MISMATCH"
        text = f"{verdict:<9} {cell}: largest relative difference {self.max_rel:.3e} ({self.where})"
        old, new = self.kernels
        if old and new and old != new:
            text += f"; archived with BLAS kernel {old}, rerun with {new} (OPENBLAS_CORETYPE={old} reruns it)"
        return text


def choose(candidates: list[RunRecord], sample: int | None, seed: int, cheapest: bool) -> list[RunRecord]:
    """``sample`` runs (all when None): the cheapest by recorded seconds, or a random sample drawn with
    ``seed``; returned in cell order."""
    if sample is None or sample >= len(candidates):
        return list(candidates)
    if cheapest:
        picked = sorted(candidates, key=lambda r: (r.seconds, r.cell))[:sample]
    else:
        idx = np.random.default_rng(seed).choice(len(candidates), size=sample, replace=False)
        picked = [candidates[i] for i in idx]
    return sorted(picked, key=lambda r: r.cell)


def _rel(new: float | None, old: float | None) -> float:
    if new is None or old is None:  # non-finite values are stored as None: they must agree
        return 0.0 if new is None and old is None else float("inf")
    if new == old:
        return 0.0
    return abs(new - old) / abs(old) if old != 0 else float("inf")


def differences(archived: RunRecord, archived_params: Params, rerun: RunRecord,
                rerun_params: Params) -> tuple[float, str, bool]:
    """(largest relative difference, where, bit-identical) between an archived run and its rerun."""
    seen: list[tuple[float, str, bool]] = []  # (relative difference, label, bit-equal)
    for key in ("J", "J_S", "l2"):
        new, old = getattr(rerun.final, key), getattr(archived.final, key)
        seen.append((_rel(new, old), f"final {key}", new == old))
    for name in sorted(set(archived.history) | set(rerun.history)):
        old, new = archived.history.get(name), rerun.history.get(name)
        if old is None or new is None or len(old) != len(new):
            same = old is None and new is None
            seen.append((0.0 if same else float("inf"), f"history {name} (length)", same))
            continue
        rels = [_rel(x, y) for x, y in zip(new, old)]
        k = int(np.argmax(rels))
        seen.append((rels[k], f"history {name}[{k}]", new == old))
    if len(archived_params) != len(rerun_params):
        seen.append((float("inf"), "number of layers", False))
    for l, ((Wa, ba), (Wn, bn)) in enumerate(zip(archived_params, rerun_params), start=1):
        for label, new, old in ((f"W{l}", Wn, Wa), (f"b{l}", bn, ba)):
            if new.shape != old.shape:
                seen.append((float("inf"), f"weights {label} (shape)", False))
                continue
            norm, diff = float(np.linalg.norm(old)), float(np.linalg.norm(new - old))
            rel = diff / norm if norm > 0 else (0.0 if diff == 0 else float("inf"))
            seen.append((rel, f"weights {label}", bool(np.array_equal(new, old))))
    worst = max(seen, key=lambda s: s[0])
    return worst[0], worst[1], all(s[2] for s in seen)


def verify(spec: ExperimentSpec, record: RunRecord, results_dir: str | Path) -> Check:
    """Rerun one archived run (same spec, key and iterations) and compare."""
    json_path, npz_path = records.record_paths(results_dir, record.experiment, record.solver, record.L,
                                               record.M, record.seed)
    archived_params = records.load_params(npz_path)
    rerun, params = execute(spec, RunKey(record.solver, record.L, record.M, record.seed), record.iterations)
    worst, where, identical = differences(record, archived_params, rerun, params)
    return Check(record, worst, where, identical,
                 (record.versions.get("blas_core"), rerun.versions.get("blas_core")))


def reevaluate(spec: ExperimentSpec, record: RunRecord, results_dir: str | Path) -> Check:
    """J (`eq:J-elliptic` & co.) and the relative l2 error of the saved network, from the archive's
    files alone (the record's weights NPZ, the experiment's data.npz), against the record's final J, l2."""
    _, npz_path = records.record_paths(results_dir, record.experiment, record.solver, record.L, record.M,
                                       record.seed)
    params = records.load_params(npz_path)
    Z_train, Z_test = records.load_data(results_dir, record.experiment)
    problem = make_problem(spec.pde, spec.d, spec.solution)
    with threadpool_limits(limits=1), np.errstate(all="ignore"):  # as the runner computed them
        J = network.pinn_loss(params, Z_train, problem.coefficients(Z_train), problem.rhs(Z_train))
        l2 = relative_l2(problem, params, Z_test)
    seen = [(_rel(finite_or_none(J), record.final.J), "final J", finite_or_none(J) == record.final.J),
            (_rel(finite_or_none(l2), record.final.l2), "final l2", finite_or_none(l2) == record.final.l2)]
    worst = max(seen, key=lambda x: x[0])
    return Check(record, worst[0], worst[1], all(x[2] for x in seen), what="weights")


def candidates(loaded_records: Iterable[RunRecord]) -> list[RunRecord]:
    """Runs that can be verified: every record the selection kept (status ok or diverged)."""
    return sorted(loaded_records, key=lambda r: r.cell)
