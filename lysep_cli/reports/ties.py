"""Each run record tied to its seed, its size, its length and its cell (``lysep verify``; docs/archive.md).

A seal proves that a record's JSON was not edited after it was written; it cannot prove that the record
is the run it names, for a record can be copied, swapped or cut and sealed again.  What ties a record to
its run, in milliseconds and without training:

seed
    Every network run starts from the seeded network (``network.init_params(n_in, L, M, seed)``), so its
    first recorded values are a function of the seed: the history's J[0] (the PINN loss of the starting
    network) and, for LySep, J_S[0].  They are recomputed with the solvers' own code (the registry's
    ``first_values``: the PINN loss of the seeded network; rfm rescales its hidden layer first, LySep builds
    its first state) and must agree within
    :data:`SEED_TOLERANCE` (bit-identical on the archive: measured, docs/archive.md).  A record whose
    first values are another seed's is named with that seed (a copy or a swap).  Seed-free solvers
    (poly) have nothing to tie.
solver and settings
    The first :data:`TIE_ITERATIONS` iterations of the run are recomputed from the seed and the record's
    own settings and iterations, by the solver's own ``solve`` (the registry, :func:`lysep_cli.solvers.solver_def`;
    it is stopped through its ``progress`` callback: a handful of steps), and must give the history's
    J[1..TIE_ITERATIONS] within :data:`SEED_TOLERANCE` (on another platform: within the run's round-off,
    ``max(SEED_TOLERANCE, kappa * eps)``).  J[0] is the same for every solver of a seed; J[1] is not: another
    solver's run relabelled, settings edited (a learning rate x2), another experiment's or another seed's run
    fail here.  One-shot solvers (rfls, rfm, poly: a closed form, the whole run a solve) are recomputed whole,
    their history (and LySep's J_S, when a short run ends) compared entry by entry.
size
    The saved network's shapes are those of (L, M, n_in): W_1 (M, n_in), W_l (M, M), W_L (1, M).
length
    A finished run's history holds ``Settings.history_length(iterations)`` entries, a diverged one
    ``diverged_at + 1``; ``iterations_done`` is at most the history's last index and the iterations asked.
bound (LySep)
    The consistency bound of Theorems 2.1 / 3.1 / 3.3, J <= factor * C * J_S: the record's factor must be the
    theorem's for its PDE, dimension and depth, its final J_S the last of its history, its violations and
    largest J / J_S those of its history, and its final J within the bound unless that iterate is counted a
    violation.  A J_S edited alone fails here; one halved consistently in the history, the finals and the
    bound's figures passes, and only the cell rule (which compares J_S) or a rerun can catch it.
cell
    Two records of one cell with the same weights file or the same history J are copies.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import TrainingData, experiment_data, problem_of
from lysep_cli.numerics.network import Params
from lysep_cli.solvers import first_values, solver_def
from lysep_cli.solvers.base import initial_network
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store import records
from lysep_cli.store.schema import RunRecord

#: relative bound on a first recorded value against its recomputation: 0 on the archive for every solver
#: but rfls (4e-16: its J[0] is summed through the least-squares matrix); two seeds' J[0] of one cell differ
#: by 1.8e-4 at least (the closest pair of the archive's 956 records: elliptic-2d LySep (3,30) seeds 2 and 3)
SEED_TOLERANCE = 1e-9
#: iterations recomputed per run to tie it to its solver and settings (J[1], J[2]; one-shot solvers: the whole run)
TIE_ITERATIONS = 2
#: guessed tie seconds (:func:`tie_cost`) below which ``jobs`` > 1 still ties in this process: a spawned worker
#: costs about 2 s of imports before its first record
POOL_SECONDS = 5.0


class _Enough(KeyboardInterrupt):
    """Raised by the progress callback once the tie's iterations are made: the solver contract lets a
    KeyboardInterrupt from ``progress`` through (lysep_cli/solvers/base.py), and nothing is written."""


def seeded_network(record: RunRecord, n_in: int, seed: int) -> Params:
    """The seeded initial network of a run of ``record``'s solver, size and settings from ``seed``, as the
    runner draws it (:func:`lysep_cli.solvers.base.initial_network`, the settings' ``init``)."""
    return initial_network(solver_def(record.solver).Settings.coerce(record.settings), n_in, record.L, record.M,
                           seed)


def _rel(new: float, old: float | None) -> float:
    if old is None or not math.isfinite(new):
        return 0.0 if old is None and not math.isfinite(new) else math.inf
    if new == old:
        return 0.0
    return abs(new - old) / abs(old) if old != 0 else math.inf


@dataclass
class Ties:
    """The tie checks of the records of one results directory."""

    specs: dict[str, ExperimentSpec]

    def training(self, experiment: str) -> tuple[TrainingData, int]:
        """The spec's training data (what the runner trains on) and the network's number of inputs."""
        data = experiment_data(self.specs[experiment])
        return data.training, data.problem.n_in

    def first_values(self, record: RunRecord, seed: int | None = None) -> dict[str, float]:
        """{"J": J[0], "J_S": J_S[0] (LySep)} of the run of ``record``'s solver, size and settings started
        from ``seed`` (default the record's): what its history must begin with."""
        train, n_in = self.training(record.experiment)
        params0 = seeded_network(record, n_in, record.seed if seed is None else seed)
        with threadpool_limits(limits=1), np.errstate(all="ignore"):
            return first_values(record.solver, train, params0, record.settings)

    def seed_problem(self, record: RunRecord, seeds: Sequence[int] = ()) -> str | None:
        """Why the record's first values are not its seed's (None when they are); ``seeds``: those of the
        other records of its cell, tried to name the one the values belong to."""
        if solver_def(record.solver).capabilities.seed_free:
            return None
        want = self.first_values(record)
        for name, value in want.items():
            series = record.history.get(name)
            first = series[0] if series else None
            if _rel(value, first) > SEED_TOLERANCE:
                text = (f"history {name}[0] {first!r} is not seed {record.seed}'s starting point ({value!r}): not the "
                        f"run it names")
                owner = self._owner(record, name, first, seeds)
                if owner is not None:
                    text += f"; it is seed {owner}'s (a copy or a swap)"
                return text
        return None

    def first_iterations(self, record: RunRecord) -> dict[str, list[float | None]]:
        """The history series of the first :data:`TIE_ITERATIONS` iterations of the run ``record`` names (its
        solver, settings, iterations, size and seed), by the solver's own code: {"J": [J_1, ..]} from its
        progress callback, or every series of the whole run when it ends first (one-shot solvers, a run that
        stalls, diverges or stops); a run that raises FloatingPointError at its start (diverged at 0): {}."""
        sdef = solver_def(record.solver)
        settings = sdef.Settings.coerce(record.settings)
        train, n_in = self.training(record.experiment)
        params0 = initial_network(settings, n_in, record.L, record.M, record.seed)
        seen: list[float] = []

        def progress(k: int, J: float) -> None:
            seen.append(float(J))
            if len(seen) >= TIE_ITERATIONS:
                raise _Enough

        with threadpool_limits(limits=1), np.errstate(all="ignore"):
            try:
                result = sdef.solve(problem_of(self.specs[record.experiment]), train, params0, settings,
                                    record.iterations, progress)
            except _Enough:
                return {"J": [None, *seen]}  # J[0]: the seed's, checked by seed_problem
            except FloatingPointError:
                return {}
        return {k: [x if x is None or math.isfinite(x) else None for x in v]
                for k, v in result.history.items() if v is not None}

    def iteration_problem(self, record: RunRecord, tol: float, entries: int | None = None) -> str | None:
        """Why the record's history does not begin as its solver, with its settings, makes it from its seed
        (None when it does, within relative ``tol``, on its first ``entries`` entries, all made when None):
        another solver's run, other settings, another run."""
        if record.status != "ok" and record.diverged_at == 0:
            return None  # nothing after the starting point
        made = self.first_iterations(record)
        if not made:
            return (f"its solver with its settings diverges at its start from seed {record.seed}, its history "
                    "does not")
        for name, series in sorted(made.items()):
            have = record.history.get(name) or []
            for k, value in enumerate(series[:entries]):
                if value is None and k == 0 and name == "J":
                    continue
                if k >= len(have):
                    break  # a shorter history: length_problem names it
                if (value is None) != (have[k] is None) or (value is not None and _rel(value, have[k]) > tol):
                    return (f"history {name}[{k}] {have[k]!r} is not what {record.solver} with its recorded "
                            f"settings makes from seed {record.seed} ({value!r}): another solver's run, other "
                            "settings or another run")
        return None

    def _owner(self, record: RunRecord, name: str, first: float | None, seeds: Sequence[int]) -> int | None:
        """The seed among the cell's other records' ``seeds`` whose first value ``name`` is ``first``."""
        for seed in sorted({s for s in seeds if s != record.seed}):
            if _rel(self.first_values(record, seed)[name], first) <= SEED_TOLERANCE:
                return seed
        return None


def shape_problem(record: RunRecord, params: Params, n_in: int) -> str | None:
    """Why the saved network is not of the record's (L, M) on ``n_in`` inputs (None when it is)."""
    if solver_def(record.solver).capabilities.seed_free:
        return None  # its saved model has the layout of its own method (poly)
    want = [(W.shape, b.shape) for W, b in network.init_params(n_in, record.L, record.M, 0)]
    have = [(np.shape(W), np.shape(b)) for W, b in params]
    if have == want:
        return None
    if len(have) != len(want):
        return f"the saved network has {len(have)} layers, not L = {record.L}: a record of another size"
    l, (shape, _) = next((l, h) for l, (h, w) in enumerate(zip(have, want), start=1) if h != w)
    return (f"the saved network's W{l} is {shape[0]}x{shape[1]}, not {want[l - 1][0][0]}x{want[l - 1][0][1]} of "
            f"L{record.L}-M{record.M}: a record of another size")


def length_problem(record: RunRecord) -> str | None:
    """Why the record's history does not have the length its iterations, status and ``iterations_done``
    give (None when it has)."""
    n = len(record.history["J"])
    try:
        full = solver_def(record.solver).Settings.coerce(record.settings).history_length(record.iterations)
    except (ValueError, TypeError):
        full = record.iterations + 1
    want = full if record.ok else (record.diverged_at or 0) + 1
    if n != want:
        why = f"{record.iterations} iterations" if record.ok else f"diverged at {record.diverged_at}"
        return f"history of {n} entries, not the {want} of a run of {why}: cut or padded"
    if record.iterations_done > min(n - 1, record.iterations):
        return (f"iterations_done {record.iterations_done} beyond its history's {n - 1} iterations "
                f"(of {record.iterations} asked)")
    return None


def bound_problem(record: RunRecord) -> str | None:
    """Why the record's bound figures (LySep: ``record.bound``) do not follow from its PDE, size and history
    (None when they do, or when the record has no bound)."""
    from lysep_cli.numerics.activation import SIGMA
    from lysep_cli.solvers.lysep.algorithm import bound_factor
    from lysep_cli.solvers.lysep.weights import theorem_constant

    b, J, J_S = record.bound, record.history.get("J") or [], record.history.get("J_S") or []
    if not b or not J_S or len(J) != len(J_S):
        return None
    theorem = bound_factor(record.pde, record.d)
    constants = {theorem_constant(record.L, *SIGMA.constants, second=second) for second in (True, False)}
    if b.get("theorem_factor") != theorem or b.get("C") not in constants or b.get("factor") != theorem * b["C"]:
        return (f"bound factor {b.get('factor')!r} (C {b.get('C')!r}) is not Theorem's {theorem:g} x C_L for "
                f"{record.pde} d={record.d}, L={record.L}")
    if record.ok and record.final.J_S != J_S[-1]:
        return f"final J_S {record.final.J_S!r} is not its history's last J_S {J_S[-1]!r}"
    pairs = [(j, s) for j, s in zip(J[1:], J_S[1:]) if j is not None and s is not None]
    violations = sum(j > b["factor"] * s for j, s in pairs)
    if record.ok and b.get("violations") != violations:
        return f"bound violations {b.get('violations')!r}, its history has {violations} (J > factor x J_S)"
    ratios = [j / s if s > 0 else math.inf for j, s in [(J[0], J_S[0]), *pairs] if j is not None and s is not None]
    if record.ok and ratios and b.get("max_ratio_J_over_J_S") != max(ratios):
        return (f"bound's largest J / J_S {b.get('max_ratio_J_over_J_S')!r} is not its history's "
                f"{max(ratios)!r}")
    Jf, Sf = record.final.J, record.final.J_S
    if record.ok and Jf is not None and Sf is not None and Jf > b["factor"] * Sf and not (
            pairs and pairs[-1][0] > b["factor"] * pairs[-1][1]):
        return f"final J {Jf!r} > factor x J_S = {b['factor'] * Sf!r}, and its last iterate is no violation"
    return None


def copies(pool: list[RunRecord]) -> list[tuple[RunRecord, RunRecord, str]]:
    """(record, the earlier seed it copies, what is the same) for the records of one cell with the same
    weights file or the same history J as another seed's."""
    out = []
    seen: dict[tuple, dict[Any, RunRecord]] = defaultdict(dict)
    for r in sorted(pool, key=lambda r: r.cell):
        cell = r.cell[:4]
        keys = [("weights", ("w", r.weights_sha256))]
        if any(x is not None for x in r.history["J"]):  # runs diverged at their start share an empty history
            keys.append(("history J", ("h", tuple(r.history["J"]))))
        for what, key in keys:
            first = seen[cell].get(key)
            if first is not None:
                out.append((r, first, what))
                break
        for _, key in keys:
            seen[cell].setdefault(key, r)
    return out


def label(record: RunRecord) -> str:
    return f"{record.experiment} {record.solver} L{record.L}-M{record.M} seed {record.seed}"


def tie_failures(specs: dict[str, ExperimentSpec], pool: list[RunRecord], results: Path,
                 tolerance: Callable[[RunRecord], tuple[float, int | None] | None] = lambda r: (SEED_TOLERANCE, None),
                 jobs: int = 1) -> tuple[list[str], list[RunRecord]]:
    """One MISMATCH line per record of ``pool`` (under ``results``) not tied to its seed, size, length,
    solver and settings, or a copy of another seed of its cell (:mod:`module docstring
    <lysep_cli.reports.ties>`); and the records whose first iterations differ from their recomputation while
    no tolerance can judge them here (``tolerance``: (relative tolerance, history entries compared: None for
    all made), or None: an ill-conditioned run made on another platform, which passes only when its first
    iterations agree within :data:`SEED_TOLERANCE` and is unverified otherwise).  ``jobs`` > 1: the records
    are checked in that many worker processes (the lines the same, in the same order)."""
    cells: dict[tuple, list[int]] = defaultdict(list)
    for r in pool:
        cells[r.cell[:4]].append(r.seed)
    todo = [r for r in sorted(pool, key=lambda r: r.cell) if r.experiment in specs]
    checks = [(r, results, tolerance(r), cells[r.cell[:4]]) for r in todo]
    lines, named, untied = [], set(), []
    for r, (why, loose) in zip(todo, _checked(specs, checks, jobs)):
        untied += [r] if loose else []
        if why is not None:
            lines.append(f"{'MISMATCH':<9} {label(r)}: {why}")
            named.add(r.cell)
    for r, first, what in copies(pool):  # one line a run: a copy named above already is not named again
        if r.cell not in named:
            lines.append(f"{'MISMATCH':<9} {label(r)}: the same {what} as seed {first.seed} of its cell (a copy)")
    return lines, untied


TieCheck = tuple[RunRecord, Path, "tuple[float, int | None] | None", list[int]]
"""One record's tie check: (record, its results directory, its tolerance rule, the seeds of its cell)."""

_WORKER_TIES: Ties | None = None  # a worker process's Ties


def record_problem(ties: Ties, record: RunRecord, results: Path, rule: tuple[float, int | None] | None,
                   seeds: Sequence[int]) -> tuple[str | None, bool]:
    """(why ``record`` is not tied to its seed, size, length, bound, solver and settings, or None; whether its
    first iterations differ beyond :data:`SEED_TOLERANCE` where ``rule`` is None: no tolerance can judge)."""
    _, npz = records.record_paths(results, *record.cell)
    why = length_problem(record) or shape_problem(record, records.load_params(npz), ties.training(record.experiment)[1])
    if why is None:
        why = bound_problem(record) or ties.seed_problem(record, seeds)
    if why is None:
        if rule is not None:
            return ties.iteration_problem(record, *rule), False
        return None, ties.iteration_problem(record, SEED_TOLERANCE) is not None
    return why, False


def _init_worker(specs: dict[str, ExperimentSpec], parent_pid: int) -> None:
    from lysep_cli.execution import workers

    global _WORKER_TIES
    workers.init_worker(None, parent_pid)  # SIGINT to the parent only, one BLAS thread, gone with its parent
    _WORKER_TIES = Ties(specs)


def _worker_check(check: TieCheck) -> tuple[str | None, bool]:
    assert _WORKER_TIES is not None
    return record_problem(_WORKER_TIES, *check)


def tie_cost(record: RunRecord) -> float:
    """A guess at a tie's CPU seconds: the share of the run it recomputes (its first iterations, or all of a
    run that ends first) times the run's recorded seconds; used to hand the dearest records out first."""
    done = max(record.iterations_done, 0) + 1
    return record.seconds * min(1.0, (TIE_ITERATIONS + 1) / done)


def _checked(specs: dict[str, ExperimentSpec], checks: list[TieCheck], jobs: int) -> list[tuple[str | None, bool]]:
    """:func:`record_problem` of each check, in order: here, or in ``jobs`` spawned processes (dearest first)
    when the checks are worth the workers' start (:data:`POOL_SECONDS`)."""
    if jobs <= 1 or len(checks) < 2 * jobs or sum(tie_cost(c[0]) for c in checks) < POOL_SECONDS:
        ties = Ties(specs)
        return [record_problem(ties, *check) for check in checks]
    order = sorted(range(len(checks)), key=lambda i: -tie_cost(checks[i][0]))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"), initializer=_init_worker,
                             initargs=(specs, os.getpid())) as pool:
        done = list(pool.map(_worker_check, [checks[i] for i in order]))
    out: list[tuple[str | None, bool]] = [(None, False)] * len(checks)
    for i, result in zip(order, done):
        out[i] = result
    return out
