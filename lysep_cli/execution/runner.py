"""Plan and execute the runs of an experiment: which (solver, size, seed) to do, and doing them.

spec -> data set + initial network (seed) -> solver -> final J, relative l2 -> :class:`RunRecord`.

:func:`execute` is a pure function of (spec, run key, iterations): it returns the record and the
trained network and touches no file, so any executor can call it (this process, ``--jobs`` workers, a
cluster).  One writer (:func:`lysep_cli.store.records.write_record`, called here in the parent process)
stores the result.  Every run is computed with BLAS limited to one thread, so the numbers of a record
depend only on (spec, solver, L, M, seed, iterations) and are bit-identical across reruns and across
``--jobs`` values.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.execution import stopping, workers
from lysep_cli.execution.memory import tune_malloc
from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.metrics import finite_or_none, first_nonfinite, loss, relative_l2
from lysep_cli.numerics.network import Params
from lysep_cli.numerics.sincos import NUMBA_UP_TO, numba_for_run  # NUMBA_UP_TO: hashed in the numerics id
from lysep_cli.solvers import seeds_of, solver_def, stacked_solver, stacks
from lysep_cli.solvers.base import SolveResult, copy_params, diverged, initial_network
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store import checkpoint as checkpoints
from lysep_cli.store import records
from lysep_cli.store.fingerprint import (DEVICE_KEYS, EXACT_KEYS, differing, fingerprint, same_platform,
                                         stacked_numerics_id)
from lysep_cli.store.schema import (Expected, Final, NewerRecordError, RecordError, RunRecord,
                                    describe_difference, differences, expected, jsonable)


@dataclass(frozen=True)
class RunKey:
    """One run of an experiment."""

    solver: str
    L: int
    M: int
    seed: int

    def label(self) -> str:
        return f"{self.solver} L{self.L}-M{self.M} seed {self.seed}"


# ---------------------------------------------------------------------------------------------
# One run, no file I/O.

def keeps_checkpoint(solver: str) -> bool:
    """Whether a run of ``solver`` saves checkpoints: its solver declares it can (LySep) and they are on."""
    return checkpoints.interval() is not None and solver_def(solver).capabilities.checkpoint


def _checkpoint(spec: ExperimentSpec, key: RunKey, iterations: int, results_dir: Path,
                data_sha: str) -> checkpoints.Checkpoint | None:
    """The run's checkpoint under ``results_dir`` when its solver takes one (LySep) and they are on; it is
    also due when a stop is held back (lysep_cli/execution/stopping.py)."""
    every = checkpoints.interval()
    if not keeps_checkpoint(key.solver):
        return None
    identity = {"run": [spec.name, key.solver, key.L, key.M, key.seed, iterations], "data": data_sha,
                   "settings": jsonable(spec.solvers[key.solver].to_dict()),
                   "platform": {k: v for k, v in fingerprint().items() if k in EXACT_KEYS}}
    path = checkpoints.checkpoint_path(results_dir, spec.name, key.solver, key.L, key.M, key.seed)
    return stopping.SavingCheckpoint(path, identity, every)


def execute(spec: ExperimentSpec, key: RunKey, iterations: int,
            progress: Callable[[int, float], None] | None = None,
            results_dir: Path | None = None) -> tuple[RunRecord, Params]:
    """Train one network and build its record; returns (record, trained params).

    A solver raising FloatingPointError, or returning a network whose J or l2 error is not finite, gives
    a "diverged" record.  KeyboardInterrupt raised by ``progress`` propagates (nothing is returned).
    With ``results_dir``, a solver that takes a checkpoint (LySep) resumes from the run's checkpoint there
    and saves one as it goes (lysep_cli/store/checkpoint.py); the caller removes it once the record is written.
    """
    tune_malloc()
    data = experiment_data(spec)
    problem, train = data.problem, data.training
    settings = spec.solvers[key.solver]
    solve = solver_def(key.solver).solve
    params0 = initial_network(settings, problem.n_in, key.L, key.M, key.seed)
    numba_for_run(key.M * spec.n_train, NUMBA_UP_TO.get(key.solver))  # the same bits either way
    ckpt = None if results_dir is None else _checkpoint(spec, key, iterations, results_dir, data.sha256)
    start, cpu_start = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        try:
            if ckpt is None:
                result = solve(problem, train, params0, settings, iterations, progress)
            else:
                result = solve(problem, train, params0, settings, iterations, progress, checkpoint=ckpt)
        except FloatingPointError as exc:
            J0 = network.pinn_loss(params0, train.Z, train.coef, train.Y)
            result = diverged(copy_params(params0), {"J": [J0]}, 0, f"FloatingPointError: {exc}")
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        wall_before, cpu_before = result.diagnostics.get("seconds_before_resume", (0.0, 0.0))
        seconds, cpu_seconds = seconds + wall_before, cpu_seconds + cpu_before  # a resumed run: all its parts
        return _record(spec, key, iterations, result, seconds, cpu_seconds), result.params


def _record(spec: ExperimentSpec, key: RunKey, iterations: int, result: SolveResult, seconds: float,
            cpu_seconds: float, versions: dict[str, str] | None = None) -> RunRecord:
    """The record of a solved run: its final J and l2 evaluated here (on the host, by the CPU engine), the
    status checked, ``versions`` the platform fingerprint (default: this process's)."""
    data = experiment_data(spec)
    problem, train = data.problem, data.training
    settings = spec.solvers[key.solver]
    with np.errstate(all="ignore"):
        J = loss(result.params, train.Z, train.coef, train.Y)
        l2 = relative_l2(problem, result.params, Z_test=data.Z_test)

    status, message, diverged_at = result.status, result.message, result.diverged_at
    J_S = None if result.J_S is None else float(result.J_S)
    checked = (J,) + (() if l2 is None else (l2,)) + (() if J_S is None else (J_S,))  # l2 None: no exact u
    if status == "ok" and not all(np.isfinite(x) for x in checked):
        bad = first_nonfinite(result.history["J"])
        status = "diverged"
        diverged_at = bad if bad is not None else len(result.history["J"]) - 1
        message = "non-finite J, J_S or l2 error of the returned network"
    history: dict[str, list[float | None] | None] = {"J_S": None}
    history.update({k: None if v is None else [finite_or_none(x) for x in v] for k, v in result.history.items()})
    record = RunRecord(
        experiment=spec.name, solver=key.solver, L=key.L, M=key.M, seed=key.seed, iterations=iterations,
        settings=jsonable(settings.to_dict()), pde=spec.pde, d=spec.d, solution=spec.solution,
        n_train=spec.n_train, n_test=spec.n_test, data_sha256=data.sha256,
        weights_sha256=records.sha256(records.run_npz_bytes(result.params, history)),
        status=status, message=message, iterations_done=int(result.iterations_done or 0),
        diverged_at=diverged_at, seconds=seconds,
        final=Final(finite_or_none(J), finite_or_none(J_S), finite_or_none(l2)),
        bound=jsonable(result.bound), history=history,
        # cpu_seconds: CPU time of the solve (wall time is `seconds`; on a shared machine they differ)
        diagnostics={**jsonable(result.diagnostics), "cpu_seconds": cpu_seconds},
        versions=versions or fingerprint())
    return record


def _stack_checkpoint(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path | None,
                      versions: dict[str, str]) -> checkpoints.Checkpoint | None:
    """A LySep stack's one checkpoint (its state for every seed), where its first seed's would be, when they
    are on; its identity names the stack's seeds, so a run of other seeds ignores and replaces it."""
    key = keys[0]
    if results_dir is None or not keeps_checkpoint(key.solver):
        return None
    identity = {"run": [spec.name, key.solver, key.L, key.M, [k.seed for k in keys], iterations],
                "data": experiment_data(spec).sha256, "settings": jsonable(spec.solvers[key.solver].to_dict()),
                "platform": {k: v for k, v in versions.items() if k in EXACT_KEYS + DEVICE_KEYS}}
    path = checkpoints.checkpoint_path(results_dir, spec.name, key.solver, key.L, key.M, key.seed)
    return stopping.SavingCheckpoint(path, identity, checkpoints.interval())


def execute_stack(spec: ExperimentSpec, keys: list[RunKey], iterations: int, device: str,
                  progress: Callable[[int, Any], None] | None = None,
                  results_dir: Path | None = None) -> list[tuple[RunRecord, Params]]:
    """The runs ``keys`` (one solver that stacks, one size, several seeds) trained in one stack on the stacked
    engine of ``device`` (lysep_cli/accel; docs/gpu.md); (record, trained params) per key, in order.  Each
    record's time is the stack's divided by its seeds; its ``versions`` name the device and array library.
    With ``results_dir``, a LySep stack resumes from its checkpoint there and saves one as it goes."""
    from lysep_cli.accel import backend as backends

    tune_malloc()  # as execute: the malloc thresholds of a dask worker, here too (no number changes)
    be = backends.resolve(device)
    problem, train = experiment_data(spec).problem, experiment_data(spec).training
    solver, settings = keys[0].solver, spec.solvers[keys[0].solver]
    solve_stacked = stacked_solver(solver)
    params0 = [initial_network(settings, train.Z.shape[0], key.L, key.M, key.seed) for key in keys]
    numba_for_run(keys[0].M * spec.n_train, NUMBA_UP_TO.get(solver))  # the same bits either way
    versions = {**fingerprint(), **be.fingerprint(stacked_numerics_id())}
    start, cpu_start = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        resume = ({"checkpoint": _stack_checkpoint(spec, keys, iterations, results_dir, versions)}
                  if solver_def(solver).capabilities.checkpoint else {})
        results = solve_stacked(be, problem, train, params0, settings, iterations, progress, **resume)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        wall_before, cpu_before = results[0].diagnostics.get("seconds_before_resume", (0.0, 0.0))
        seconds, cpu_seconds = seconds + wall_before, cpu_seconds + cpu_before  # a resumed stack: all its parts
        S = len(keys)
        for result in results:
            result.diagnostics.update(stacked_seeds=S, stack_seconds=seconds)
        return [(_record(spec, key, iterations, result, seconds / S, cpu_seconds / S, versions), result.params)
                for key, result in zip(keys, results)]


# ---------------------------------------------------------------------------------------------
# Planning: what to run, what to skip, what would be overwritten.

@dataclass
class Plan:
    """Runs to do and why.

    todo : runs to execute (missing, invalid, or replaced with ``force``).
    skipped : valid records that match the spec (settings, iterations, n_train, n_test, data set).
    invalid : (run, problem) for records that do not parse or validate, or whose weights do not match:
        they are redone.
    conflicts : (run, json path, how it differs) for valid records made with other iterations, settings or
        data: redone with ``force``; without it they stay in ``conflicts`` and out of ``todo``
        (``lysep run`` then refuses to start).
    copies : (run, json path) for runs to do that another experiment of the same results folder has
        already made identically (same problem, data set, solver settings, iterations, L, M and seed; the
        depth studies' (3,50) is the paper's (3,50)): :func:`copy_runs` copies them instead of running
        them again.  Never with ``force``.
    """

    todo: list[RunKey]
    skipped: list[RunRecord] = field(default_factory=list)
    invalid: list[tuple[RunKey, str]] = field(default_factory=list)
    conflicts: list[tuple[RunKey, Path, str]] = field(default_factory=list)
    copies: list[tuple[RunKey, Path]] = field(default_factory=list)


def plan_runs(spec: ExperimentSpec, solvers: list[str],
              sizes: list[tuple[int, int]] | dict[str, list[tuple[int, int]]], seeds: list[int],
              iterations: int, results_dir: str | Path, force: bool = False) -> Plan:
    """The :class:`Plan` of the runs (solvers x sizes x seeds) with ``iterations`` under ``results_dir``;
    ``sizes`` is one list for every solver, or each solver's own."""
    plan = Plan([])
    sha = experiment_data(spec).sha256
    for solver in solvers:
        want = expected(spec, solver, iterations, sha)
        for L, M in (sizes[solver] if isinstance(sizes, dict) else sizes):
            for seed in seeds_of(solver, seeds):
                key = RunKey(solver, L, M, seed)
                json_path, _ = records.record_paths(results_dir, spec.name, solver, L, M, seed)
                if not json_path.exists():
                    plan.todo.append(key)
                    continue
                try:
                    rec = records.read_record(json_path)
                except NewerRecordError as exc:  # valid for a newer lysep: replaced only with force
                    plan.conflicts.append((key, json_path, str(exc)))
                    if force:
                        plan.todo.append(key)
                    continue
                except RecordError as exc:
                    plan.invalid.append((key, f"{json_path}: {exc}"))
                    plan.todo.append(key)
                    continue
                if records.seal_state(rec) == "broken":  # a number edited by hand: redone, as a damaged NPZ
                    plan.invalid.append((key, f"{json_path}: {records.SEAL_BROKEN}"))
                    plan.todo.append(key)
                    continue
                if differences(rec, want):
                    plan.conflicts.append((key, json_path, describe_difference(rec, want)))
                    if force:
                        plan.todo.append(key)
                elif force:
                    plan.todo.append(key)
                else:
                    plan.skipped.append(rec)
    if not force:
        for key in list(plan.todo):
            source = identical_run(results_dir, spec.name, key, expected(spec, key.solver, iterations, sha))
            if source is not None:
                plan.todo.remove(key)
                plan.copies.append((key, source))
    return plan


def identical_run(results_dir: str | Path, experiment: str, key: RunKey, want: Expected) -> Path | None:
    """The record (json path) of a run identical to ``key`` made under another experiment of
    ``results_dir``: it reads, and :func:`differences` finds nothing (problem, data set, settings,
    iterations, sizes); None if there is none.  The first such experiment in name order."""
    root = Path(results_dir)
    if not root.is_dir():
        return None
    for other in sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != experiment):
        json_path, _ = records.record_paths(root, other, key.solver, key.L, key.M, key.seed)
        if not json_path.is_file():
            continue
        try:
            rec = records.read_record(json_path)
        except RecordError:
            continue
        if not differences(rec, want) and records.seal_state(rec) != "broken":
            return json_path
    return None


def copy_runs(spec: ExperimentSpec, copies: list[tuple[RunKey, Path]],
              results_dir: str | Path) -> tuple[list[RunRecord], list[RunKey]]:
    """Write, for each (run, source record) of :attr:`Plan.copies`, the source's record and weights as
    the run of ``spec`` (``diagnostics["copied_from"]`` names the source experiment; numbers, history,
    timings and versions are the source's, which is what a rerun would give bit for bit: ``lysep verify``
    checks it by rerunning).  Returns the records written and the runs whose source could no longer be
    read (changed since the plan): those are to be run."""
    out, lost = [], []
    for key, source in copies:
        try:
            rec = records.read_record(source)
            params = records.load_params(source.with_suffix(".npz"))
        except (RecordError, OSError, ValueError, KeyError):
            lost.append(key)
            continue
        origin = rec.diagnostics.get("copied_from", rec.experiment)
        copy = rec.with_(experiment=spec.name, diagnostics={**rec.diagnostics, "copied_from": origin},
                         weights_sha256=records.sha256(records.run_npz_bytes(params, rec.history)))
        records.write_record(results_dir, copy, params)
        out.append(copy)
    return out, lost


# ---------------------------------------------------------------------------------------------
# Execution, sequential or in worker processes.

class Reporter:
    """Progress events; the CLI passes a rich-backed one, tests a silent one."""

    def start(self, total: int) -> None: ...

    def begin(self, key: RunKey) -> None: ...

    def loss(self, key: RunKey, k: int, value: float) -> None: ...

    def done(self, key: RunKey, record: RunRecord) -> None: ...

    def failed(self, key: RunKey, error: str) -> None: ...

    def stop(self) -> None: ...


@dataclass
class Sweep:
    """What :func:`run_experiment` did: new records (in the order of the keys), failed runs (no record
    written; (run, "ExceptionType: message")), the state data.npz was found in (records.check_data), and
    the records copied from identical runs of other experiments (:func:`copy_runs`)."""

    done: list[RunRecord] = field(default_factory=list)
    failed: list[tuple[RunKey, str]] = field(default_factory=list)
    data_state: str = "ok"
    copied: list[RunRecord] = field(default_factory=list)


def _error(exc: BaseException) -> str:
    if os.environ.get("LYSEP_DEBUG"):
        raise exc
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _worker_run(spec: ExperimentSpec, key: RunKey, iterations: int,
                results_dir: Path | None = None) -> tuple[RunRecord, Params]:
    last = [0.0]

    def progress(k: int, value: float) -> None:
        now = time.monotonic()
        if now - last[0] > 0.25:
            last[0] = now
            workers.report((key, k, float(value)))
        stopping.check(k, iterations)

    with stopping.deferred(keeps_checkpoint(key.solver) and results_dir is not None):
        return execute(spec, key, iterations, progress, results_dir)


def _finish(sweep: Sweep, key: RunKey, record: RunRecord, params: Params, results_dir: Path,
            reporter: Reporter) -> None:
    try:
        records.write_record(results_dir, record, params)
    except (ValueError, RecordError) as exc:  # a record that would not read back: a solver bug
        sweep.failed.append((key, _error(exc)))
        reporter.failed(key, sweep.failed[-1][1])
        return
    checkpoints.checkpoint_path(results_dir, record.experiment, key.solver, key.L, key.M, key.seed).unlink(
        missing_ok=True)  # the record holds it all now
    sweep.done.append(record)
    reporter.done(key, record)


def _run_sequential(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path,
                    reporter: Reporter, sweep: Sweep) -> None:
    for key in keys:
        reporter.begin(key)

        def progress(k: int, value: float, key: RunKey = key) -> None:
            reporter.loss(key, k, value)
            stopping.check(k, iterations)

        with stopping.deferred(keeps_checkpoint(key.solver)):  # a stop waits for the checkpoint's save
            try:
                record, params = execute(spec, key, iterations, progress, results_dir)
            except Exception as exc:
                sweep.failed.append((key, _error(exc)))
                reporter.failed(key, sweep.failed[-1][1])
                continue
            _finish(sweep, key, record, params, results_dir, reporter)


def _run_parallel(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path,
                  reporter: Reporter, jobs: int, sweep: Sweep) -> None:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=workers.init_worker,
                               initargs=(q, os.getpid()))
    futures: dict[Future, RunKey] = {}
    order = {key: i for i, key in enumerate(keys)}
    try:
        for key in keys:
            futures[pool.submit(_worker_run, spec, key, iterations, results_dir)] = key
        pending = set(futures)
        started: set[RunKey] = set()
        while pending:
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            while True:
                try:
                    key, k, value = q.get_nowait()
                except queue_mod.Empty:
                    break
                if key not in started:
                    started.add(key)
                    reporter.begin(key)
                reporter.loss(key, k, value)
            for fut in sorted(finished, key=lambda f: order[futures[f]]):
                key = futures[fut]
                try:
                    record, params = fut.result()
                except Exception as exc:  # the run raised, or its worker died (BrokenProcessPool)
                    sweep.failed.append((key, _error(exc)))
                    reporter.failed(key, sweep.failed[-1][1])
                    continue
                _finish(sweep, key, record, params, results_dir, reporter)
    except BaseException:
        # The runs in flight are abandoned: stop our own workers now (a LySep run saves its checkpoint
        # first, lysep_cli/execution/stopping.py) rather than wait for their runs.  The futures are not cancelled
        # from this thread: the pool's manager thread marks them failed when it sees the dead workers, and
        # a future cancelled here meanwhile makes it raise InvalidStateError (a traceback on stderr;
        # CPython 3.11).  shutdown(cancel_futures=True) cancels in that thread.
        stopping.stop_workers(list(getattr(pool, "_processes", {}).values()))
        pool.shutdown(wait=True, cancel_futures=True)
        q.close()
        raise
    pool.shutdown(wait=True)
    q.close()


def _run_on_cluster(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path,
                    reporter: Reporter, cluster: Any, sweep: Sweep, device: str = "cpu") -> None:
    """One task per run, or per stack on a stacked ``device``, on a dask cluster (``cluster`` is a
    :class:`lysep_cli.execution.cluster.Session` opened for ``device``); the records are written here, by the
    client, as the tasks finish: those made on this machine's platform (:func:`same_platform`; a stack's,
    with the device the workers were checked to run, ``cluster.device_facts``); another's is a failed run,
    never mixed in silently."""
    here = fingerprint()
    stacked = {**here, **cluster.device_facts} if device != "cpu" else here
    with closing(cluster.results(spec, keys, iterations, reporter)) as outcomes:  # closed: cancels the rest
        for out in outcomes:
            want = stacked if stacks(out.key.solver) else here
            if out.error is None and not same_platform(want, out.record.versions):
                out.error = (f"made on another platform than this machine's ("
                             f"{'; '.join(differing(want, out.record.versions, EXACT_KEYS + DEVICE_KEYS))}): "
                             "not written, one results directory holds one platform's bits (docs/cluster.md)")
            if out.error is not None:
                sweep.failed.append((out.key, out.error))
                reporter.failed(out.key, out.error)
                continue
            _finish(sweep, out.key, out.record, out.params, results_dir, reporter)


def cells(keys: list[RunKey]) -> list[list[RunKey]]:
    """``keys`` grouped by (solver, L, M), in the order they first come: the runs a stacked device trains in
    one stack (a cell's seeds)."""
    out: dict[tuple[str, int, int], list[RunKey]] = {}
    for key in keys:
        out.setdefault((key.solver, key.L, key.M), []).append(key)
    return list(out.values())


def _run_stacked(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path,
                 reporter: Reporter, device: str, sweep: Sweep) -> None:
    """The seeds of each (solver, L, M) in one stack (:func:`execute_stack`) for a solver that stacks; the others
    (``Capabilities.on_host``: rfls, rfm) one run at a time on the host's CPU engine."""
    for cell in cells(keys):
        solver = cell[0].solver
        if not stacks(solver):
            _run_sequential(spec, cell, iterations, results_dir, reporter, sweep)
            continue
        for key in cell:
            reporter.begin(key)

        def progress(k: int, J: Any, cell: list[RunKey] = cell) -> None:
            for key, value in zip(cell, J):
                reporter.loss(key, k, float(value))
            stopping.check(k, iterations)

        with stopping.deferred(keeps_checkpoint(solver)):  # a stop waits for the stack's checkpoint
            try:
                done = execute_stack(spec, cell, iterations, device, progress, results_dir)
            except Exception as exc:
                for key in cell:
                    sweep.failed.append((key, _error(exc)))
                    reporter.failed(key, sweep.failed[-1][1])
                continue
            for key, (record, params) in zip(cell, done):
                _finish(sweep, key, record, params, results_dir, reporter)


def run_experiment(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: str | Path,
                   jobs: int = 1, reporter: Reporter | None = None, cluster: Any = None,
                   copies: list[tuple[RunKey, Path]] | None = None, device: str = "cpu") -> Sweep:
    """Make sure ``data.npz`` holds the spec's data set (restored when missing or corrupt, even with no
    runs to do), write the ``copies`` (:attr:`Plan.copies`), then run ``keys`` and write each record as
    its run finishes.  With a stacked ``device`` (cpu-stacked, cuda) a cell's seeds run in one stack
    (:func:`execute_stack`), in this process or, with ``cluster`` (a connected
    :class:`lysep_cli.execution.cluster.Session` opened for ``device``), as one dask task; on ``cpu`` with
    ``cluster`` each run is a task.  With ``cluster``, ``jobs`` is ignored.

    A run that raises (other than by diverging) is reported in ``Sweep.failed`` and leaves no file; the
    others go on.  An interruption (KeyboardInterrupt, or SIGTERM turned into one by the CLI) keeps every
    finished run and leaves no file for the runs in flight.
    """
    results_dir = Path(results_dir)
    reporter = reporter or Reporter()
    sweep = Sweep(data_state=records.ensure_data(results_dir, spec.name, experiment_data(spec)))
    sweep.copied, lost = copy_runs(spec, copies or [], results_dir)
    keys = list(keys) + lost
    if not keys:
        return sweep
    reporter.start(len(keys))
    try:
        if cluster is not None:
            _run_on_cluster(spec, keys, iterations, results_dir, reporter, cluster, sweep, device)
        elif device != "cpu":
            _run_stacked(spec, keys, iterations, results_dir, reporter, device, sweep)
        elif jobs <= 1 or len(keys) == 1:
            _run_sequential(spec, keys, iterations, results_dir, reporter, sweep)
        else:
            _run_parallel(spec, keys, iterations, results_dir, reporter, min(jobs, len(keys)), sweep)
    finally:
        reporter.stop()
    order = {key: i for i, key in enumerate(keys)}
    sweep.done.sort(key=lambda r: order[RunKey(r.solver, r.L, r.M, r.seed)])
    return sweep


__all__ = ["RunKey", "execute", "execute_stack", "cells", "Plan", "plan_runs", "identical_run", "copy_runs", "Reporter", "Sweep",
           "run_experiment"]
