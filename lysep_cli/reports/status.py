"""What a results directory holds against the spec: seeds done and missing per (experiment, solver, size),
the run time they took, and the time the missing runs would take at the same pace.

Read from the run records (nothing is rerun).  A record counts when it matches its experiment's spec
(reporting.select: same iterations, settings, data set); every seed of the spec is expected for every
solver shown.  Times are the records' own: ``seconds`` (wall time of the solve) and, where recorded,
``diagnostics.cpu_seconds`` (its CPU time; on a shared machine wall time is the larger).  The estimate
for a cell's missing seeds is the mean wall time of its finished seeds, less the share of the
iterations their checkpoints hold; a cell with none finished gets no estimate (it is counted, not
guessed).  A missing run shows the sweep its checkpoint holds, and
"running" while a ``lysep run`` computes it, "queued" while one holds it for later
(:func:`lysep_cli.store.locks.held_by_others`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lysep_cli.reports.selection import Selection, display_name, solver_key
from lysep_cli.solvers import seeds_of
from lysep_cli.specs import ExperimentSpec, seed_ranges
from lysep_cli.store.checkpoint import checkpoint_path, saved_sweeps
from lysep_cli.store.fingerprint import UNRECORDED
from lysep_cli.store.locks import held_by_others
from lysep_cli.store.records import cell_dir, file_bytes, record_files
from lysep_cli.store.schema import RunRecord

#: the solvers of the paper's tables: always listed for a paper experiment, records or not
PAPER_SOLVERS = ("pinn", "lysep")


@dataclass
class CellStatus:
    """One (experiment, solver, L, M): the spec's seeds, those with a matching record, their times."""

    experiment: str
    solver: str
    L: int
    M: int
    expected: tuple[int, ...]
    done: list[int] = field(default_factory=list)
    seconds: float = 0.0  # wall seconds of the finished runs, summed (copies not: they were run elsewhere)
    copied: int = 0  # finished runs copied from an identical run of another experiment (runner.copy_runs)
    pace_seconds: float = 0.0  # wall seconds of every finished run, copies included (for the estimate)
    cpu_seconds: float = 0.0  # CPU seconds of the finished runs that recorded them, summed
    n_cpu: int = 0  # finished runs that recorded their CPU time
    machines: Counter = field(default_factory=Counter)  # finished runs per (machine, BLAS kernel)
    numerics: Counter = field(default_factory=Counter)  # finished runs per numerics id, copies included
    in_progress: dict[int, int] = field(default_factory=dict)  # missing seed -> sweeps its checkpoint holds
    iterations: int = 0  # of each run (0: unknown, checkpoints not counted in the estimate)
    running: set[int] = field(default_factory=set)  # missing seeds a lysep run computes now
    queued: set[int] = field(default_factory=set)  # missing seeds a lysep run holds for later
    borrowed: float | None = None  # seconds per run from another archive, scaled (:func:`borrow_pace`)

    @property
    def missing(self) -> list[int]:
        return [s for s in self.expected if s not in self.done]

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def estimate_left(self) -> float:
        """Wall seconds the missing seeds would take at the finished seeds' mean, less what their
        checkpoints hold; NaN with none finished."""
        if not self.missing:
            return 0.0
        if not self.done and self.borrowed is None:
            return float("nan")
        runs_left = sum(1.0 - (min(self.in_progress.get(s, 0) / self.iterations, 1.0) if self.iterations else 0.0)
                        for s in self.missing)  # a checkpoint at sweep k of n leaves 1 - k/n of its run
        return runs_left * (self.pace_seconds / len(self.done) if self.done else self.borrowed)


def archive_status(sel: Selection, chosen: list[ExperimentSpec], solvers: set[str] | None = None,
                   results_dir: str | Path | None = None,
                   seeds: dict[str, list[int]] | None = None) -> list[CellStatus]:
    """One :class:`CellStatus` per (experiment, solver, size) of ``chosen``, in table order; with
    ``results_dir``, the checkpoints of missing runs found there (how many sweeps they hold).  Each cell
    expects the seeds of its spec, or ``seeds[experiment]`` when given (``lysep status --seeds``).

    Solvers listed: ``solvers`` when given (those the spec has), else the paper's pair for an experiment
    with a paper table plus every solver with at least one matching record (all of the spec's solvers
    for an experiment with no record yet).
    """
    cells: list[CellStatus] = []
    for spec in chosen:
        recs = sel.of(spec.name)
        if solvers is not None:
            names = [s for s in spec.solvers if s in solvers]
        else:
            present = {r.solver for r in recs} or set(spec.solvers)  # no record yet: all of its solvers
            names = [s for s in spec.solvers if s in present or (spec.table is not None and s in PAPER_SOLVERS)]
        by_cell: dict[tuple[str, int, int], list[RunRecord]] = {}
        for r in recs:
            by_cell.setdefault((r.solver, r.L, r.M), []).append(r)
        for solver in sorted(names, key=solver_key):
            for L, M in spec.sizes_for(solver):
                expected = tuple(sorted(seeds_of(solver, (seeds or {}).get(spec.name, spec.seeds))))
                cell = CellStatus(spec.name, solver, L, M, expected,
                                  iterations=sel.iterations.get(spec.name, spec.iterations))
                for r in by_cell.get((solver, L, M), []):
                    if r.seed not in expected:
                        continue
                    cell.done.append(r.seed)
                    cell.pace_seconds += float(r.seconds)
                    cell.numerics[r.versions.get("numerics", UNRECORDED)] += 1
                    if r.diagnostics.get("copied_from"):
                        cell.copied += 1
                        continue
                    cell.seconds += float(r.seconds)
                    cell.machines[machine_of(r)] += 1
                    cpu = r.diagnostics.get("cpu_seconds")
                    if isinstance(cpu, (int, float)) and math.isfinite(cpu):
                        cell.cpu_seconds += float(cpu)
                        cell.n_cpu += 1
                cell.done.sort()
                if results_dir is not None:
                    for seed in cell.missing:
                        k = saved_sweeps(checkpoint_path(results_dir, spec.name, solver, L, M, seed))
                        if k is not None:
                            cell.in_progress[seed] = k
                    queued, computing = held_by_others(cell_dir(results_dir, spec.name, solver, L, M), cell.missing)
                    cell.queued, cell.running = set(queued), set(computing)
                cells.append(cell)
    return cells


@dataclass(frozen=True)
class BorrowedPace:
    """What ``lysep status --pace-from DIR`` found: the directory, the speed factor (this directory's wall
    seconds per run over DIR's, median over the cells with finished runs in both) and how many cells it
    comes from (0: none in common, factor 1)."""

    source: str
    factor: float
    common: int


def borrow_pace(cells: list[CellStatus], other: list[CellStatus], source: str) -> BorrowedPace:
    """Gives each cell with missing runs and none finished the pace of the same cell in ``other`` (another
    archive's status of the same spec: its mean wall seconds per finished run), times the factor by
    which this directory's runs were slower or faster than ``other``'s on the cells both have finished
    runs of.  Cells ``other`` has no finished run of keep no estimate."""
    theirs = {(c.experiment, c.solver, c.L, c.M): c.pace_seconds / len(c.done) for c in other if c.done}
    ratios = [(c.pace_seconds / len(c.done)) / theirs[key] for c in cells
              if c.done and theirs.get(key := (c.experiment, c.solver, c.L, c.M), 0) > 0]
    factor = statistics.median(ratios) if ratios else 1.0
    for c in cells:
        key = (c.experiment, c.solver, c.L, c.M)
        if c.missing and not c.done and key in theirs:
            c.borrowed = theirs[key] * factor
    return BorrowedPace(source, factor, len(ratios))


def machine_of(r: RunRecord) -> str:
    """"<CPU>, kernel <OpenBLAS kernel>" as the record names them ("unrecorded" in older records)."""
    return (f"{r.versions.get('machine', 'machine unrecorded')}, "
            f"kernel {r.versions.get('blas_core', 'unrecorded')}")


def _missing_text(c: CellStatus) -> str:
    """"3-9" and, for runs with a checkpoint or held by a lysep run, "(3 at sweep 1200 running; 4-6,9 queued)"."""
    text = seed_ranges(c.missing) or "–"
    notes = {s: f"{s} at sweep {k}" for s, k in c.in_progress.items()}
    for s in c.running:
        notes[s] = f"{notes.get(s, s)} running"
    plain_queued = sorted(s for s in c.queued if s not in notes)  # held for later, no checkpoint yet
    for s in c.queued:
        if s in notes:
            notes[s] += " queued"
    parts = [notes[s] for s in sorted(notes)]
    if plain_queued:
        parts.append(f"{seed_ranges(plain_queued)} queued")
    if parts:
        text += " (" + "; ".join(parts) + ")"
    return text


def _hours(seconds: float) -> str:
    return "–" if not math.isfinite(seconds) else f"{seconds / 3600:.2f}"


def files_size(results_dir: str | Path, experiments: list[str],
               solvers: set[str] | None = None) -> tuple[int, int, int]:
    """(record files, bytes of the JSON records, bytes of their NPZ files and the data sets) of
    ``experiments`` under ``results_dir`` (only the records of ``solvers`` when given): what an archive
    of them weighs (figures and tables aside)."""
    n = json_bytes = npz_bytes = 0
    for path in record_files(results_dir, experiments):
        if solvers is not None and path.parts[-3] not in solvers:  # <experiment>/<solver>/L<L>-M<M>/seed-<s>.json
            continue
        n += 1
        json_bytes += file_bytes(path)
        npz_bytes += file_bytes(path.with_suffix(".npz"))
    for name in experiments:
        npz_bytes += file_bytes(Path(results_dir) / name / "data.npz")
    return n, json_bytes, npz_bytes



def render_status(cells: list[CellStatus], iterations: dict[str, int], results: str, paper: set[str],
                  summary: bool = False, size: tuple[int, int, int] | None = None,
                  borrowed: BorrowedPace | None = None) -> str:
    """Markdown: one row per cell, then the totals (runs, hours, what is left) and the machines; the
    totals alone with ``summary``.

    ``paper``: the experiments with a paper table (their PINN/LySep cells are the paper's pairs).
    ``borrowed``: estimates of cells with no finished run taken from another archive (:func:`borrow_pace`),
    marked "~" in the table.
    """
    counts = sorted({iterations[c.experiment] for c in cells})
    one = len(counts) == 1
    lines = [f"# Archive status: {results}" + (f" ({counts[0]} iterations)" if one else ""), "",
             "| experiment | " + ("" if one else "iterations | ")
             + "solver | (L,M) | seeds done | missing | run h | CPU h | left h (est.) |",
             "|---|---|---|---|---|---|---|---|" + ("" if one else "---|")]
    for c in cells:
        cpu = "–"
        if c.n_cpu:
            ran = len(c.done) - c.copied
            cpu = _hours(c.cpu_seconds) + ("" if c.n_cpu == ran else f" ({c.n_cpu} of {ran} runs)")
        hours = "–" if not c.done else _hours(c.seconds) + (f" ({c.copied} copied)" if c.copied else "")
        lines.append(f"| {c.experiment} | " + ("" if one else f"{iterations[c.experiment]} | ")
                     + f"{display_name(c.solver)} | ({c.L},{c.M}) | {len(c.done)}/{len(c.expected)} "
                     f"| {_missing_text(c)} | {hours} | {cpu} "
                     f"| {('~' if c.missing and not c.done and c.borrowed is not None else '') + _hours(c.estimate_left) if c.missing else '–'} |")
    pairs = [c for c in cells if c.experiment in paper and c.solver in PAPER_SOLVERS]
    done_runs = sum(len(c.done) for c in cells)
    missing = sum(len(c.missing) for c in cells)
    lent = [c for c in cells if c.missing and not c.done and c.borrowed is not None]
    guessed = [c for c in cells if c.missing and not c.done and c.borrowed is None]
    left = sum(c.estimate_left for c in cells if c.missing and c.done)
    lines = [] if summary else lines + [""]
    if pairs:
        lines.append(f"- paper's (cell, solver) pairs complete: {sum(c.complete for c in pairs)} of {len(pairs)}")
    n_cpu = sum(c.n_cpu for c in cells)
    copied = sum(c.copied for c in cells)
    copies = f" ({copied} copied from identical runs of another experiment, not counted in the hours)" if copied else ""
    lines.append(f"- finished runs: {done_runs}{copies}, {_hours(sum(c.seconds for c in cells))} run-hours (wall time of "
                 "each solve, summed); " + (f"CPU time recorded for {n_cpu} of them: "
                                            f"{_hours(sum(c.cpu_seconds for c in cells))} CPU-hours"
                                            if n_cpu else "none recorded its CPU time"))
    text = f"- missing runs: {missing}"
    pairs_missing = sum(len(c.missing) for c in pairs)
    if pairs and missing > pairs_missing:  # which of them the paper's tables wait for
        text += f" ({pairs_missing} in the paper's pairs, {missing - pairs_missing} in the other cells)"
    if missing:
        parts = []
        if any(c.missing and c.done for c in cells):  # some cell with missing runs has a pace of its own
            parts.append(f"about {_hours(left)} run-hours at the pace of each cell's finished seeds")
        if lent and borrowed is not None:
            scale = (f"its wall time per run x {borrowed.factor:.2f}, this directory against it on the "
                     f"{borrowed.common} cell(s) both have finished runs of" if borrowed.common else
                     "its wall time per run, unscaled (no cell has finished runs in both)")
            parts.append(f"about {_hours(sum(c.estimate_left for c in lent))} run-hours for "
                         f"{sum(len(c.missing) for c in lent)} run(s) in {len(lent)} cell(s) with no seed finished, "
                         f"at the pace of {borrowed.source} (~ in the table: {scale})")
        if guessed:
            parts.append(f"{sum(len(c.missing) for c in guessed)} run(s) in {len(guessed)} cell(s) with no seed "
                         "finished (no estimate)")
        text += "; " + ", plus ".join(parts)
    lines.append(text)
    if size is not None:
        n, js, nz = size
        lines.append(f"- files: {n} run record(s), {(js + nz) / 1e6:.1f} MB (JSON {js / 1e6:.1f} MB, weights, "
                     f"histories and data sets {nz / 1e6:.1f} MB)")
    machines = sum((c.machines for c in cells), Counter())
    if machines:
        lines.append("- finished runs by machine and BLAS kernel: "
                     + "; ".join(f"{k}: {n}" for k, n in sorted(machines.items())))
    numerics = runs_by_numerics(cells)
    if numerics:
        lines.append("- finished runs by numerics id (the code that computed them): "
                     + "; ".join(f"{k}: {n}" for k, n in sorted(numerics.items())))
    return "\n".join(lines) + "\n"


def runs_by_numerics(cells: list[CellStatus]) -> Counter:
    """Finished runs per numerics id over ``cells`` ("unrecorded" for records older than the id); the
    listed runs only, where :func:`lysep_cli.store.records.numerics_ids` counts every record file."""
    return sum((c.numerics for c in cells), Counter())


def mixed_numerics(cells: list[CellStatus]) -> str | None:
    """Why the finished runs of ``cells`` are not of one numerics id (more than one, or a record that
    names none), or None when they are (or there are none): ``lysep status --one-numerics``."""
    ids = runs_by_numerics(cells)
    if UNRECORDED in ids:
        return f"{ids[UNRECORDED]} finished run(s) record no numerics id"
    if len(ids) > 1:
        return ("the finished runs were made by " + str(len(ids)) + " numerics ids ("
                + ", ".join(f"{n} by {k}" for k, n in sorted(ids.items())) + ")")
    return None


def render_timing(cells: list[CellStatus]) -> str:
    """Markdown: the CPU-hours of the finished runs per experiment (rows) and solver (columns), from each
    record's ``diagnostics.cpu_seconds`` (one BLAS thread per run), with a total row and column; then how
    many runs the sums cover and on which machines.  A finished run that did not record its CPU time is
    counted in the last line, not in the sums (copies of another experiment's runs are neither)."""
    experiments = list(dict.fromkeys(c.experiment for c in cells))
    solvers = sorted({c.solver for c in cells}, key=solver_key)
    cpu, runs = Counter(), Counter()
    for c in cells:
        cpu[c.experiment, c.solver] += c.cpu_seconds
        runs[c.experiment, c.solver] += c.n_cpu
    shown = [s for s in solvers if any(runs[e, s] for e in experiments)]
    lines = ["| experiment | " + " | ".join(display_name(s) for s in shown) + " | all |",
             "|---|" + "---|" * (len(shown) + 1)]
    for e in experiments:
        row = [_hours(cpu[e, s]) if runs[e, s] else "–" for s in shown]
        lines.append(f"| {e} | " + " | ".join(row) + f" | {_hours(sum(cpu[e, s] for s in shown))} |")
    total = [_hours(sum(cpu[e, s] for e in experiments)) for s in shown]
    lines.append("| all | " + " | ".join(total) + f" | {_hours(sum(cpu.values()))} |")
    timed = sum(c.n_cpu for c in cells)
    untimed = sum(len(c.done) - c.copied - c.n_cpu for c in cells)
    machines = sum((c.machines for c in cells), Counter())
    lines += ["", f"CPU-hours of {timed} finished run(s), summed (each record's `diagnostics.cpu_seconds`, one BLAS "
              "thread per run)" + (f"; {untimed} finished run(s) recorded no CPU time and are not in the sums"
                                   if untimed else "")
              + ("; finished runs by machine and BLAS kernel: " + "; ".join(f"{k}: {n}" for k, n in sorted(machines.items())) if machines else "")
              + "."]
    return "\n".join(lines) + "\n"
