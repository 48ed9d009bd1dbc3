"""Accuracy against cost, as data: what ``lysep plot``'s accuracy-cost figures draw (no drawing here).

For one experiment's selected records (:func:`lysep_cli.reports.selection.select`):

- :func:`solver_series`: one :class:`Series` per solver, its points ordered along what the solver grows:
  the network size (L, M) for the networks (pinn, lysep, pinn-adam, pinn-lbfgs, pinn-lm, rfls), the width
  M for rfm, the degree k for poly.  A point is the median over the seeds of the run's CPU seconds
  (:attr:`RunRecord.compute_seconds`), its final J and its test ℓ2, with the min and max (the spread);
  a run that did not finish (status not "ok", or a non-finite J or ℓ2) counts as +inf in the medians, as
  in the harder suite's summary, and is counted.  poly's
  degrees come from its records and, where the experiment has one, from its degree study
  (``RESULTS/<experiment>/study-poly-degree/runs.csv``, :mod:`lysep_cli.reports.poly_degree`): a degree with
  a record is the record's point, the others the study's rows (one deterministic fit each).
- :func:`pareto_front`: the points no other point beats in both cost and error (the best accuracy per cost).
- :func:`published_levels`: the paper's mean PINN and LySep J / ℓ2 over its table's sizes (the paper gives
  no times: reference levels, not points).
- :func:`machines_note`: which CPUs the seconds were measured on, when they differ.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from lysep_cli.reports.poly_degree import read_runs
from lysep_cli.reports.selection import PAPER_MODELS, display_name, published, solver_key
from lysep_cli.store.schema import RunRecord

#: the accuracy measures drawn (a record's ``final`` field -> axis label)
QUANTITIES = {"l2": "test relative $\\ell_2$ error", "J": "loss $J$"}
#: the solvers the paper publishes
PAPER = ("pinn", "lysep")
#: where a study's degrees come from when no record holds them (its CSV records no CPU)
STUDY = "degree study"
POLY_STUDY = Path("study-poly-degree") / "runs.csv"


@dataclass(frozen=True)
class Point:
    """One point of a series: medians over its runs, with their min and max.

    label : what the point is ("(3,30)", "M = 800", "k = 19").
    cost, l2, J : (min, median, max) over the runs; CPU seconds, test ℓ2, final J.
    runs : the runs behind it; left_out : its runs that did not finish (+inf in the medians of J and ℓ2).
    source : "records", or :data:`STUDY` (poly's degree study: one fit, on a CPU it does not record).
    """

    label: str
    cost: tuple[float, float, float]
    l2: tuple[float, float, float]
    J: tuple[float, float, float]
    runs: int
    left_out: int = 0
    source: str = "records"

    def value(self, quantity: str) -> tuple[float, float, float]:
        """(min, median, max) of ``quantity`` ("l2" or "J")."""
        return self.l2 if quantity == "l2" else self.J


@dataclass(frozen=True)
class Series:
    """A solver's points along what it grows (``along``: "size", "width" or "degree"), and the CPUs its
    records were timed on (machine -> runs)."""

    solver: str
    along: str
    points: list[Point]
    machines: Counter = field(default_factory=Counter)


def _triple(values: np.ndarray) -> tuple[float, float, float]:
    return float(np.min(values)), float(np.median(values)), float(np.max(values))


def _finished(r: RunRecord) -> bool:
    J, l2 = r.final.J, r.final.l2
    return r.ok and J is not None and l2 is not None and math.isfinite(J) and math.isfinite(l2) \
        and J > 0 and l2 > 0


def _point(label: str, recs: list[RunRecord]) -> Point:
    """The median point of ``recs`` (one cell, at least one run).  The rule of the harder suite's summary
    (:mod:`lysep_cli.reports.harder_summary`): a run that did not finish counts as +inf in the median of J
    and ℓ2 (when half or more did not finish, the median is +inf: the point is not drawn), its CPU seconds
    count; the spread (min, max) is over the finished runs (+inf when none finished)."""
    done = [r for r in recs if _finished(r)]
    triples = {}
    for q in ("J", "l2"):
        every = np.array([getattr(r.final, q) if _finished(r) else math.inf for r in recs], dtype=float)
        finite = every[np.isfinite(every)]
        spread = (float(finite.min()), float(finite.max())) if finite.size else (math.inf, math.inf)
        triples[q] = (spread[0], float(np.median(every)), spread[1])
    cost = np.array([r.compute_seconds for r in recs], dtype=float)
    return Point(label, _triple(cost), triples["l2"], triples["J"], len(recs), len(recs) - len(done))


def poly_degree(r: RunRecord) -> int | None:
    """The degree k of a poly record (its diagnostics, else its settings); None when neither holds a
    whole number (a hand-edited record)."""
    for k in (r.diagnostics.get("degree"), r.settings.get("degree")):
        if isinstance(k, int) and not isinstance(k, bool) and k >= 0:
            return k
    return None


def _poly_points(recs: list[RunRecord], study: pd.DataFrame | None) -> list[Point]:
    """poly's points by degree: a record's where it has one, else the degree study's row."""
    by_key: dict[tuple[int, int], list[RunRecord]] = {}
    for r in recs:  # a record without a degree is placed by its P (after the degrees)
        k = poly_degree(r)
        by_key.setdefault((0, k) if k is not None else (1, r.M), []).append(r)
    points: dict[tuple[int, int], Point] = {}
    if study is not None and len(study):
        num = study[["degree", "J", "l2", "cpu_seconds"]].apply(pd.to_numeric, errors="coerce")
        for k, J, l2, s in num.itertuples(index=False):
            if all(math.isfinite(v) and v > 0 for v in (J, l2, s)) and math.isfinite(k) and (0, int(k)) not in by_key:
                points[(0, int(k))] = Point(f"k = {int(k)}", (s, s, s), (l2, l2, l2), (J, J, J), 1, source=STUDY)
    for key, rs in by_key.items():
        points[key] = _point(f"k = {key[1]}" if key[0] == 0 else f"P = {key[1]}", rs)
    return [points[k] for k in sorted(points)]


def along(solver: str) -> str:
    """What a solver's series runs over: "degree" (poly), "width" (rfm), else "size" (a network)."""
    return {"poly": "degree", "rfm": "width"}.get(solver, "size")


def solver_series(records: list[RunRecord], poly_study: pd.DataFrame | None = None) -> dict[str, Series]:
    """Solver -> its :class:`Series` (the solvers in :func:`solver_key` order), a point per cell run, drawn
    or not (:func:`drawable`), so that a figure can say which it leaves out."""
    out: dict[str, Series] = {}
    for solver in sorted({r.solver for r in records}, key=solver_key):
        recs = [r for r in records if r.solver == solver]
        machines = Counter(str(r.versions.get("machine") or "a CPU not recorded") for r in recs)
        kind = along(solver)
        if kind == "degree":
            points = _poly_points(recs, poly_study)
        else:
            cells = sorted({(r.L, r.M) for r in recs})
            points = [_point(f"M = {M}" if kind == "width" else f"({L},{M})",
                             [r for r in recs if (r.L, r.M) == (L, M)]) for L, M in cells]
        out[solver] = Series(solver, kind, points, machines)
    return out


def read_poly_study(results: Path, experiment: str) -> pd.DataFrame | None:
    """poly's degree study of ``experiment`` under ``results`` (None when it has none)."""
    return read_runs(Path(results) / experiment / POLY_STUDY)


def pareto_front(costs: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated points, by increasing cost: no other point has a cost and an error
    both at most its own, one of them smaller.  ``costs``, ``errors``: shape (n,), positive."""
    costs, errors = np.asarray(costs, dtype=float), np.asarray(errors, dtype=float)
    order = np.lexsort((errors, costs))  # by cost, ties by error
    front, best = [], math.inf
    for i in order:
        if errors[i] < best:
            front.append(int(i))
            best = errors[i]
    return np.array(front, dtype=int)


def drawable(p: Point, quantity: str) -> bool:
    """Whether ``p`` has a finite median of ``quantity`` (not when half or more of its runs did not finish)."""
    return math.isfinite(p.value(quantity)[1])


def medians(series: dict[str, Series], quantity: str) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
    """Every drawable point's (median cost, median ``quantity``) over all series, shape (n,) each, with the
    (solver, point label) of each."""
    pts = [(s.solver, p) for s in series.values() for p in s.points if drawable(p, quantity)]
    costs = np.array([p.cost[1] for _, p in pts], dtype=float)
    errors = np.array([p.value(quantity)[1] for _, p in pts], dtype=float)
    return costs, errors, [(s, p.label) for s, p in pts]


def published_levels(experiment: str, quantity: str) -> dict[str, list[float]]:
    """Solver ("pinn", "lysep") -> the paper's mean ``quantity`` at each size of its table for
    ``experiment`` (none: an experiment the paper does not have)."""
    out: dict[str, list[float]] = {}
    rows = (published().get(experiment) or {}).get("rows", [])
    for solver in PAPER:
        means = [float(r[quantity][0]) for r in rows
                 if PAPER_MODELS.get(r.get("model")) == solver and r.get(quantity)]
        if means:
            out[solver] = means
    return out


def _short(machine: str) -> str:
    return machine.replace("(R)", "").replace("  ", " ")


def machines_note(series: dict[str, Series]) -> str | None:
    """Which CPUs timed which solvers' runs, when not all one CPU (None when they are); and that poly's
    degree-study points record none."""
    machines = sorted({m for s in series.values() for m in s.machines})
    study = [s for s in series.values() if any(p.source == STUDY for p in s.points)]
    parts = []
    if len(machines) > 1:
        for m in machines:
            names = []
            for s in series.values():
                n, total = s.machines.get(m, 0), sum(s.machines.values())
                if n:
                    names.append(display_name(s.solver) + ("" if n == total else f" {n} of {total} runs"))
            parts.append(f"{_short(m)}: {', '.join(names)}")
        text = "CPU seconds measured on different CPUs (each record's fingerprint) — " + "; ".join(parts)
    else:
        text = ""
    if study:
        names = ", ".join(display_name(s.solver) for s in study)
        text += ("; " if text else "") + f"{names}: degrees without a record from its degree study (its " \
                                         "runs.csv records no CPU)"
    return text or None


__all__ = ["Point", "Series", "QUANTITIES", "solver_series", "pareto_front", "medians", "drawable", "published_levels",
           "machines_note", "read_poly_study", "poly_degree", "along"]
