"""What the runs of a ``lysep run`` will cost, from the archive's own rates, said before they start.

A cell's rate is the CPU seconds per iteration of its records: each record's ``diagnostics.cpu_seconds``
(its ``seconds``, wall time, where an older record has no CPU time) divided by the iterations it did
(``iterations_done``: a LySep sweep, one least-squares solve for rfls / rfm / poly, LM's iterations up to
its cap), the median over the cell's records.  Records count when they are of the same experiment,
solver, (L, M), n_train, n_test and settings, under the run's ``--results`` first, else in the project's
archive ``results/paper``.  A run to do costs its cell's rate times the iterations it will do
(``history_length(iterations) - 1`` of its solver's settings: ``iterations``, or one solve, or LM's cap).

A run's fixed cost: the first run of each worker process pays :data:`WARM_UP_SECONDS` more than the others
(numba's cached kernels loaded, NumPy's and SciPy's first calls: 0.51 s measured for an rfls and a PINN run of
elliptic-2d, whose later runs took 0.004-0.05 s), which a 2000-iteration rate hides and a short run does
not; the total adds it once per process that runs (``--jobs``, at most one per run).

A cell with no such record has no rate: the estimate says so and leaves its runs out of the total (it
never guesses from other cells).  How close the estimate comes: benchmarks/estimate_check.py (a seed of
each archive cell left out and predicted from the others; docs/running.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from lysep_cli.execution.runner import RunKey
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store import records
from lysep_cli.store.schema import RunRecord, jsonable

#: the project's archive, the second source of rates (after the run's own --results)
ARCHIVE = Path(__file__).resolve().parents[2] / "results" / "paper"

Cell = tuple[str, int, int]
#: CPU seconds the first run of a worker process takes beyond its rate (module docstring; measured)
WARM_UP_SECONDS = 0.5


@dataclass(frozen=True)
class Rate:
    """CPU seconds per iteration of one cell: the median over ``n`` records under ``source``."""

    per_iteration: float
    n: int
    source: Path
    wall: int = 0
    """records among the ``n`` that had no CPU time (their wall time used)"""


@dataclass(frozen=True)
class CellCost:
    """The runs to do of one (solver, L, M), each ``steps`` iterations, at ``rate`` (None: no rate)."""

    solver: str
    L: int
    M: int
    runs: int
    steps: int
    rate: Rate | None

    @property
    def cpu_seconds(self) -> float | None:
        return None if self.rate is None else self.runs * self.steps * self.rate.per_iteration


@dataclass(frozen=True)
class Estimate:
    """The runs to do of one ``lysep run``, cell by cell, with their CPU time where a rate exists."""

    experiment: str
    cells: list[CellCost]
    sources: list[Path]

    @property
    def runs(self) -> int:
        return sum(c.runs for c in self.cells)

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds of the runs that have a rate."""
        return sum(c.cpu_seconds or 0.0 for c in self.cells)

    @property
    def unrated(self) -> list[CellCost]:
        return [c for c in self.cells if c.rate is None]

    def total_cpu_seconds(self, jobs: int | None = 1) -> float:
        """CPU seconds of the rated runs, with the warm-up of each worker process that runs them (``jobs``
        processes at most one per run; None: one, a stack or a cluster's worker counted once)."""
        rated = self.runs - sum(c.runs for c in self.unrated)
        processes = min(jobs or 1, rated)
        return self.cpu_seconds + WARM_UP_SECONDS * processes

    def summary(self, jobs: int | None = 1) -> str:
        """One line: the runs' CPU time, the wall time at ``jobs`` at a time (None: not said, e.g. for a
        cluster's workers or a stack on a device), the runs with no rate."""
        rated = self.runs - sum(c.runs for c in self.unrated)
        if not self.cells:
            return "estimate: nothing to run"
        parts = []
        if rated:
            at_once = None if jobs is None else max(1, min(jobs, rated))
            used = sorted({str(c.rate.source) for c in self.cells if c.rate is not None})
            total = self.total_cpu_seconds(jobs)
            wall = ("" if at_once is None else f", about {duration(total / at_once)} of wall time "
                    f"{at_once} at a time on an idle machine")
            parts.append(f"{duration(total)} of CPU time for {'the ' if rated == self.runs else ''}"
                         f"{rated} run(s){wall} (the CPU time per iteration of their cells' records under "
                         f"{' and '.join(used)}, and {WARM_UP_SECONDS:g} s of warm-up per worker process)")
        if self.unrated:
            cells = ", ".join(f"{c.solver} {c.L}x{c.M}" for c in self.unrated[:4]) + (
                ", ..." if len(self.unrated) > 4 else "")
            parts.append(f"no rate for {sum(c.runs for c in self.unrated)} run(s) ({cells}: no record of "
                         f"{'that cell' if len(self.unrated) == 1 else 'those cells'} with these settings under "
                         f"{_names(self.sources)}), not counted")
        return "estimate: " + "; ".join(parts)

    def lines(self) -> list[str]:
        """One line per cell: runs x iterations at its rate = CPU time, or why it has no rate."""
        out = []
        for c in self.cells:
            head = f"  {c.solver:<10} {c.L}x{c.M:<6} {c.runs:>5} run(s) x {c.steps} iteration(s)"
            if c.rate is None:
                out.append(f"{head}  no rate (no record of this cell under {_names(self.sources)})")
                continue
            wall = f", {c.rate.wall} of them wall time" if c.rate.wall else ""
            out.append(f"{head} at {c.rate.per_iteration * 1e3:.3g} ms = {duration(c.cpu_seconds or 0.0)}  "
                       f"({c.rate.n} record(s) under {c.rate.source}{wall})")
        return out


def duration(seconds: float) -> str:
    """'41 s', '12.5 min', '3.4 h'."""
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def _names(paths: list[Path]) -> str:
    return " or ".join(str(p) for p in paths) or "no archive"


def record_rate(record: RunRecord) -> tuple[float, bool]:
    """(CPU seconds per iteration done, whether its wall time stood in for a missing CPU time)."""
    cpu = record.diagnostics.get("cpu_seconds") if isinstance(record.diagnostics, dict) else None
    seconds, wall = (float(cpu), False) if isinstance(cpu, (int, float)) else (float(record.seconds), True)
    return seconds / max(int(record.iterations_done), 1), wall


def matches(record: RunRecord, spec: ExperimentSpec) -> bool:
    """Whether ``record`` is a run of ``spec``'s experiment with its n_train, n_test and solver settings."""
    return (record.experiment == spec.name and record.n_train == spec.n_train and record.n_test == spec.n_test
            and record.solver in spec.solvers and record.settings == jsonable(spec.solvers[record.solver].to_dict()))


def cell_rates(found: Iterable[RunRecord], spec: ExperimentSpec, source: Path) -> dict[Cell, Rate]:
    """(solver, L, M) -> its :class:`Rate` from the records ``found`` that match ``spec`` (experiment,
    n_train, n_test, the solver's settings)."""
    per: dict[Cell, list[tuple[float, bool]]] = {}
    for r in found:
        if matches(r, spec):
            per.setdefault((r.solver, r.L, r.M), []).append(record_rate(r))
    return {cell: Rate(statistics.median(x for x, _ in rates), len(rates), source, sum(w for _, w in rates))
            for cell, rates in per.items()}


def sources(results: Path) -> list[Path]:
    """Where rates are looked for: ``results``, then the project's archive (when it is another directory)."""
    out = [results]
    try:
        if ARCHIVE.is_dir() and ARCHIVE.resolve() != results.resolve():
            out.append(ARCHIVE)
    except OSError:
        pass
    return out


def estimate(todo: list[RunKey], spec: ExperimentSpec, iterations: int, results: Path) -> Estimate:
    """The :class:`Estimate` of the runs ``todo`` of ``spec`` with ``iterations``, from the rates of the
    records under ``results``, else of the project's archive."""
    where = sources(results)
    cells: dict[Cell, int] = {}
    for key in todo:
        cells[(key.solver, key.L, key.M)] = cells.get((key.solver, key.L, key.M), 0) + 1
    rates: dict[Cell, Rate] = {}
    for source in where:
        missing = [c for c in cells if c not in rates]
        if not missing or not (source / spec.name).is_dir():
            continue
        found = records.load_records(source, [spec.name]).records
        rates.update({c: r for c, r in cell_rates(found, spec, source).items() if c in missing})
    costs = [CellCost(solver, L, M, n, spec.solvers[solver].history_length(iterations) - 1, rates.get((solver, L, M)))
             for (solver, L, M), n in cells.items()]
    return Estimate(spec.name, costs, where)
