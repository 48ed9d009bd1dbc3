"""Run every (solver, size, seed) of an experiment and write one record per run.

spec -> problem + data -> initial network (seed) -> solver -> final J, relative l2 -> record.

Every run is computed with BLAS limited to one thread, in this process (``jobs=1``) or in one of
``jobs`` worker processes, so the numbers of a record depend only on (spec, solver, L, M, seed,
iterations) and are bit-identical across reruns and across ``--jobs`` values.
"""

from __future__ import annotations

import multiprocessing as mp
import queue as queue_mod
import signal
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import closing
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import numpy as np
from threadpoolctl import threadpool_limits

from . import network, records
from .network import Params
from .problems import Problem, make_problem
from .sampling import train_test_points
from .solvers import SolveResult, TrainingData, get_solver
from .solvers.base import copy_params
from .specs import ExperimentSpec


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

@lru_cache(maxsize=8)
def _data(pde: str, d: int, solution: str | None, n_train: int, n_test: int):
    problem = make_problem(pde, d, solution)
    Z_train, Z_test = train_test_points(n_train, n_test, d, time=problem.time_dependent)
    return problem, Z_train, Z_test, TrainingData.build(problem, Z_train)


def experiment_data(spec: ExperimentSpec) -> tuple[Problem, np.ndarray, np.ndarray, TrainingData]:
    """(problem, Z_train (n_in, n_train), Z_test (n_in, n_test), training data); seed-independent."""
    return _data(spec.pde, spec.d, spec.solution, spec.n_train, spec.n_test)


def relative_l2(problem: Problem, params: Params, Z_test: np.ndarray) -> float:
    """Relative l2 test error of psi = boundary_factor * phi against u (Section 4)::

        E = ( sum_n |psi(z_n) - u(z_n)|^2 / sum_n |u(z_n)|^2 )^(1/2)
    """
    psi = problem.boundary_factor(Z_test) * network.value(params, Z_test)
    u = problem.u(Z_test)
    return float(np.sqrt(np.sum((psi - u) ** 2) / np.sum(u ** 2)))


def _first_nonfinite(values: list[float]) -> int | None:
    bad = np.flatnonzero(~np.isfinite(np.asarray(values, dtype=float)))
    return int(bad[0]) if bad.size else None


def _versions() -> dict[str, str]:
    out = {"numpy": np.__version__}
    try:
        out["lysep"] = metadata.version("lysep")
    except metadata.PackageNotFoundError:
        pass
    return out


def execute(spec: ExperimentSpec, key: RunKey, iterations: int,
            progress: Callable[[int, float], None] | None = None) -> tuple[dict[str, Any], Params]:
    """Train one network and build its record; returns (record, trained params).

    KeyboardInterrupt raised by ``progress`` propagates (nothing is returned, nothing written).
    """
    problem, _, Z_test, data = experiment_data(spec)
    params0 = network.init_params(problem.n_in, key.L, key.M, key.seed)
    solve = get_solver(key.solver)
    settings = dict(spec.solvers[key.solver])
    start = time.perf_counter()
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        try:
            result = solve(problem, data, params0, settings, iterations, progress)
        except FloatingPointError as exc:
            J0 = network.pinn_loss(params0, data.Z, data.coef, data.Y)
            result = SolveResult(copy_params(params0), {"J": [J0]}, "diverged",
                                 extra={"error": f"FloatingPointError: {exc}"})
        seconds = time.perf_counter() - start
        J = network.pinn_loss(result.params, data.Z, data.coef, data.Y)
        l2 = relative_l2(problem, result.params, Z_test)

    history = {k: [float(v) for v in vals] for k, vals in result.history.items()}
    history.setdefault("J_S", None)
    status, diverged_at = result.status, result.diverged_at
    J_S = None if result.J_S is None else float(result.J_S)
    finite = all(np.isfinite(x) for x in (J, l2) + (() if J_S is None else (J_S,)))
    if status != "diverged" and not finite:
        status = "diverged"
    if status == "diverged" and diverged_at is None:
        diverged_at = _first_nonfinite(history.get("J", []))
    extra = dict(result.extra)
    bound = extra.pop("bound", None)
    record = {
        "experiment": spec.name,
        "solver": key.solver,
        "L": key.L,
        "M": key.M,
        "seed": key.seed,
        "iterations": iterations,
        "settings": settings,
        "pde": spec.pde,
        "d": spec.d,
        "n_train": spec.n_train,
        "n_test": spec.n_test,
        "status": status,
        "diverged_at": diverged_at,
        "seconds": seconds,
        "final": {"J": J, "J_S": J_S, "l2": l2},
        "bound": bound,
        "history": history,
        "extra": extra,
        "versions": _versions(),
    }
    # Exactly what goes to disk: plain JSON types, non-finite numbers as None.
    return records.jsonable(record), result.params


# ---------------------------------------------------------------------------------------------
# Planning: which runs to do, which to skip.

def _same_settings(record: dict[str, Any], spec: ExperimentSpec, key: RunKey, iterations: int) -> bool:
    return (record.get("iterations") == iterations
            and record.get("settings") == records.jsonable(spec.solvers[key.solver])
            and record.get("n_train") == spec.n_train and record.get("n_test") == spec.n_test)


@dataclass
class Plan:
    """Runs to do, and records of runs skipped because they already exist with the same settings.

    stale : runs whose existing record used other iterations/settings/data sizes (they are redone).
    """

    todo: list[RunKey]
    skipped: list[dict[str, Any]] = field(default_factory=list)
    stale: list[RunKey] = field(default_factory=list)


def plan_runs(spec: ExperimentSpec, solvers: list[str], sizes: list[tuple[int, int]], seeds: list[int],
              iterations: int, results_dir: Path, force: bool = False) -> Plan:
    plan = Plan([])
    for solver in solvers:
        for L, M in sizes:
            for seed in seeds:
                key = RunKey(solver, L, M, seed)
                if not force and records.record_exists(results_dir, spec.name, solver, L, M, seed):
                    json_path, _ = records.record_paths(results_dir, spec.name, solver, L, M, seed)
                    try:
                        rec = records.read_record(json_path)
                    except (OSError, ValueError):
                        rec = None
                    if rec is not None and _same_settings(rec, spec, key, iterations):
                        plan.skipped.append(rec)
                        continue
                    plan.stale.append(key)
                plan.todo.append(key)
    return plan


# ---------------------------------------------------------------------------------------------
# Execution, sequential or in worker processes.

class Reporter:
    """Progress events; the CLI passes a rich-backed one, tests a silent one."""

    def start(self, total: int) -> None: ...

    def begin(self, key: RunKey) -> None: ...

    def loss(self, key: RunKey, k: int, value: float) -> None: ...

    def done(self, key: RunKey, record: dict[str, Any]) -> None: ...

    def failed(self, key: RunKey, error: str) -> None: ...

    def stop(self) -> None: ...


_QUEUE: Any = None  # progress queue of a worker process
_LIMITS: Any = None


def _worker_init(q: Any) -> None:
    """Worker set-up: Ctrl-C is handled by the parent, BLAS runs on one thread."""
    global _QUEUE, _LIMITS
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _QUEUE = q
    _LIMITS = threadpool_limits(limits=1)


def _worker_run(spec: ExperimentSpec, key: RunKey, iterations: int) -> tuple[dict[str, Any], Params]:
    last = [0.0]

    def progress(k: int, value: float) -> None:
        now = time.monotonic()
        if now - last[0] > 0.25:
            last[0] = now
            try:
                _QUEUE.put_nowait((key, k, float(value)))
            except Exception:  # a full or closed queue only costs a progress update
                pass

    return execute(spec, key, iterations, progress)


def _run_sequential(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path,
                    reporter: Reporter) -> list[dict[str, Any]]:
    done = []
    for key in keys:
        reporter.begin(key)
        record, params = execute(spec, key, iterations, lambda k, v, key=key: reporter.loss(key, k, v))
        records.write_record(results_dir, record, params)
        reporter.done(key, record)
        done.append(record)
    return done


def _run_parallel(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path,
                  reporter: Reporter, jobs: int) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(q,))
    futures: dict[Future, RunKey] = {}
    done: list[dict[str, Any]] = []
    try:
        for key in keys:
            futures[pool.submit(_worker_run, spec, key, iterations)] = key
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
            for fut in sorted(finished, key=lambda f: keys.index(futures[f])):
                record, params = fut.result()
                records.write_record(results_dir, record, params)
                reporter.done(futures[fut], record)
                done.append(record)
    except BaseException:
        for fut in futures:
            fut.cancel()
        # The runs in flight are abandoned: stop our own workers now rather than wait for them.
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        q.close()
        raise
    pool.shutdown(wait=True)
    q.close()
    order = {key: i for i, key in enumerate(keys)}
    return sorted(done, key=lambda r: order[RunKey(r["solver"], r["L"], r["M"], r["seed"])])


class RunsFailed(RuntimeError):
    """Some runs raised (on a cluster worker); ``done`` holds the records written, ``failed`` the
    (key, error text) of the others."""

    def __init__(self, done: list[dict[str, Any]], failed: list[tuple[RunKey, str]]):
        super().__init__(f"{len(failed)} run(s) failed")
        self.done, self.failed = done, failed


def _run_on_cluster(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: Path,
                    reporter: Reporter, cluster: Any) -> list[dict[str, Any]]:
    """One task per run on a dask cluster (``cluster`` is a :class:`lysep_cli.cluster.Session`);
    the records are written here, by the client, as the tasks finish."""
    done: list[dict[str, Any]] = []
    failed: list[tuple[RunKey, str]] = []
    with closing(cluster.results(spec, keys, iterations, reporter)) as outcomes:  # closed: cancels the rest
        for out in outcomes:
            if out.error is not None:
                failed.append((out.key, out.error))
                reporter.failed(out.key, out.error)
                continue
            records.write_record(results_dir, out.record, out.params)
            reporter.done(out.key, out.record)
            done.append(out.record)
    order = {key: i for i, key in enumerate(keys)}
    done.sort(key=lambda r: order[RunKey(r["solver"], r["L"], r["M"], r["seed"])])
    if failed:
        raise RunsFailed(done, sorted(failed, key=lambda f: order[f[0]]))
    return done


def run_experiment(spec: ExperimentSpec, keys: list[RunKey], iterations: int, results_dir: str | Path,
                   jobs: int = 1, reporter: Reporter | None = None, cluster: Any = None) -> list[dict[str, Any]]:
    """Run ``keys`` and write their records (and the experiment's data.npz); returns the new records
    in the order of ``keys``.

    Records are written as runs finish, so an interruption (KeyboardInterrupt) keeps every finished
    run and leaves no file for the runs in flight.  With ``cluster`` (a connected
    :class:`lysep_cli.cluster.Session`) the runs are tasks on a dask cluster and ``jobs`` is ignored;
    runs that raise there are reported and the rest go on (:class:`RunsFailed` at the end).
    """
    results_dir = Path(results_dir)
    reporter = reporter or Reporter()
    if not keys:
        return []
    _, Z_train, Z_test, _ = experiment_data(spec)
    records.save_data(results_dir, spec.name, Z_train, Z_test)
    reporter.start(len(keys))
    try:
        if cluster is not None:
            return _run_on_cluster(spec, keys, iterations, results_dir, reporter, cluster)
        if jobs <= 1 or len(keys) == 1:
            return _run_sequential(spec, keys, iterations, results_dir, reporter)
        return _run_parallel(spec, keys, iterations, results_dir, reporter, min(jobs, len(keys)))
    finally:
        reporter.stop()


# ---------------------------------------------------------------------------------------------
# Summary of a sweep.

def _violations(bound: Any) -> int:
    v = bound.get("violations") if isinstance(bound, dict) else None
    if isinstance(v, list):
        return len(v)
    return int(v) if isinstance(v, (int, float)) else 0


def summary_lines(recs: list[dict[str, Any]]) -> list[str]:
    """Per (solver, L, M): runs, diverged, mean final J / J_S / l2; then the LySep bound check."""
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for r in recs:
        groups.setdefault((r["solver"], r["L"], r["M"]), []).append(r)
    lines = []
    for (solver, L, M), rs in sorted(groups.items()):
        ok = [r for r in rs if r["status"] == "ok"]
        text = f"{solver:<10} L{L}-M{M:<4} runs {len(rs):>2}  diverged {len(rs) - len(ok)}"
        if ok:
            mean = lambda f: np.mean([r["final"][f] for r in ok])  # noqa: E731
            text += f"  mean J {mean('J'):.2e}  l2 {mean('l2'):.2e}"
            if all(r["final"].get("J_S") is not None for r in ok):
                text += f"  J_S {mean('J_S'):.2e}"
        lines.append(text)
    bounded = [r for r in recs if r.get("bound")]
    if bounded:
        bad = [r for r in bounded if _violations(r["bound"]) > 0]
        total = sum(_violations(r["bound"]) for r in bounded)
        factors = sorted({r["bound"].get("factor") for r in bounded if r["bound"].get("factor") is not None})
        lines.append(f"bound J <= factor * J_S (factor {', '.join(f'{f:g}' for f in factors) or '?'}): "
                     f"violated in {len(bad)} of {len(bounded)} runs ({total} violations in total)")
        for r in bad:
            lines.append(f"  violation: {r['solver']} L{r['L']}-M{r['M']} seed {r['seed']}: "
                         f"{_violations(r['bound'])}")
    return lines
