"""`lysep run` as a whole: plan, lock, check memory, run (here, in ``--jobs`` processes or on a dask
cluster), summarise.  The command line checks the options and calls :func:`sweep`.

Bad input (conflicting records without ``--force``, a run too big for the memory, runs another
``lysep run`` holds) raises :class:`~lysep_cli.specs.BadInput` before anything is locked or written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lysep_cli.execution import cluster, interrupts, memory, runner
from lysep_cli.execution.estimate import estimate
from lysep_cli.execution.runner import Plan, RunKey
from lysep_cli.specs import BadInput, ExperimentSpec
from lysep_cli.store import atomic, locks, records
from lysep_cli.store import checkpoint as checkpoints
from lysep_cli.store.layout import RunPath
from lysep_cli.store.fingerprint import differing, fingerprint, same_platform
from lysep_cli.store.schema import RunRecord

Echo = Callable[[str], None]


@dataclass(frozen=True)
class SweepRequest:
    """What ``lysep run`` was asked: the runs (solvers x sizes x seeds) of ``spec`` with ``iterations``."""

    spec: ExperimentSpec
    solvers: list[str]
    sizes: dict[str, list[tuple[int, int]]]
    """each solver's sizes"""
    seeds: list[int]
    iterations: int
    results: Path
    force: bool = False
    jobs: int = 1
    target: Any = None
    """a dask scheduler target (lysep_cli.execution.cluster.resolve_target) or None: local processes"""
    connect_timeout: float = 10.0
    device: str = "cpu"
    """cpu (one run at a time per process), or a stacked device (cpu-stacked, cuda: lysep_cli/accel)"""
    dry_run: bool = False
    """print the plan and its estimate (lysep_cli/execution/estimate.py), lock, write and run nothing"""


class Interrupted(Exception):
    """A stop (Ctrl-C, SIGTERM) during the runs: ``message`` says what was kept; ``code`` 130 / 143."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def _shape(spec: ExperimentSpec) -> tuple[int, int]:
    """(n_in, n_second): the network's inputs (x, and t for the time-dependent PDEs) and its
    second-derivative channels (the Laplacian's d, and u_tt for the hyperbolic PDE)."""
    return spec.d + (spec.pde != "elliptic"), spec.d + (spec.pde == "hyperbolic")


def _size(b: float) -> str:
    return f"{b / 1e9:.1f} GB" if b >= 1e9 else f"{b / 1e6:.1f} MB"


def check_request(req: SweepRequest) -> None:
    """BadInput, before the data set is drawn or anything is locked or written, for a size beyond
    :data:`memory.MAX_L` / :data:`memory.MAX_M`, or a data set (n_train, n_test) that alone exceeds the
    memory available (this process draws it to plan the runs)."""
    check_runs(req.spec, [RunKey(s, L, M, 0) for s in req.solvers for L, M in req.sizes[s]], jobs=None)


def check_runs(spec: ExperimentSpec, keys: list[RunKey], jobs: int | None = 1) -> None:
    """BadInput for a size beyond :data:`memory.MAX_L` / :data:`memory.MAX_M` among the runs ``keys``, a
    data set bigger than the memory available, and (``jobs`` not None) runs that are: what a command that
    trains networks checks before it draws the data set (``lysep run``, ``lysep study step-size``)."""
    for L, M in sorted({(k.L, k.M) for k in keys}):
        if L > memory.MAX_L or M > memory.MAX_M:
            raise BadInput(f"--sizes: {L}x{M} is beyond the largest network lysep runs, L <= {memory.MAX_L} "
                           f"and M <= {memory.MAX_M} (the depth study and the tests reach L = 5, the widest "
                           "configured network M = 3200; docs/running.md, \"Memory, sizes and paths\")")
    free = memory.available_bytes()
    need = memory.data_bytes(_shape(spec)[0], spec.n_train, spec.n_test)
    if free is not None and need > free:
        raise BadInput(f"{spec.name}: its data set (n_train {spec.n_train}, n_test {spec.n_test}) needs about "
                       f"{_size(need)} to draw, this machine has {_size(free)} available; nothing was run")
    if jobs is not None:
        check_memory(spec, keys, jobs)


def check_memory(spec: ExperimentSpec, keys: list[RunKey], jobs: int) -> None:
    """BadInput when the runs ``keys``, ``jobs`` at a time (each worker process with its own data set), need
    more than the memory available: such a run could only fail, or swap the machine, after its data set
    was built.  The need is :func:`memory.run_parts` of the largest run (docs/running.md, "Memory, sizes
    and paths")."""
    free = memory.available_bytes()
    if free is None or not keys:
        return
    n_in, n_second = _shape(spec)

    def parts(key: RunKey) -> dict[str, int]:
        maxcor = getattr(spec.solvers.get(key.solver), "maxcor", 20)
        return memory.run_parts(key.solver, n_in, n_second, key.L, key.M, spec.n_train, spec.n_test, maxcor)

    worst = max(keys, key=lambda k: sum(parts(k).values()))
    at_once = min(jobs, len(keys))
    data = memory.data_bytes(n_in, spec.n_train, spec.n_test)
    need = data * (1 + (at_once if jobs > 1 else 0)) + at_once * sum(parts(worst).values())
    if need > free:
        top = ", ".join(f"{name} {_size(b)}" for name, b in sorted(parts(worst).items(), key=lambda x: -x[1])[:3])
        runs = f" ({at_once} runs at a time)" if at_once > 1 else ""
        raise BadInput(f"size {worst.L}x{worst.M} ({worst.solver}): the runs need about {_size(need)}{runs} "
                       f"(one run: {top}, ...; n_train {spec.n_train}), this machine has {_size(free)} "
                       "available; nothing was run")


def _locked_plan(held: locks.RunLocks, req: SweepRequest, plan: Plan, make_plan: Callable[[], Plan],
                 check: Callable[[Plan], None]) -> Plan:
    """The plan once ``held`` has locked all the runs it makes (and copies): lock what ``plan`` would
    make, plan again (another process may have finished some meanwhile) and ``check`` it, until nothing
    new is to lock.  :class:`locks.Busy` when another lysep run holds any of them."""
    while True:
        keys = list(plan.todo) + [key for key, _ in plan.copies]
        if not held.acquire(req.results, req.spec.name, [(k.solver, k.L, k.M, k.seed) for k in keys]):
            return plan
        plan = make_plan()
        check(plan)


def sweep(req: SweepRequest, echo: Echo, warn: Echo, say: Echo,
          summarise: Callable[[list[RunRecord]], list[str]]) -> int:
    """Do the runs of ``req`` that have no record; ``say`` (stderr) announces the plan, ``echo``
    (stdout) prints the summary (``summarise``: lines from the records done, copied and skipped).  Returns the exit code: 0, or 1 when a run failed with an error.
    :class:`Interrupted` on a stop; BadInput / ClusterError for bad input (nothing written)."""
    spec, results, jobs = req.spec, req.results, req.jobs
    held = locks.RunLocks()  # dropped at the end (or when the process ends, however it ends)
    session = None

    def check(plan: Plan) -> None:  # before anything is locked or written
        if req.target is None and req.device != "cuda" and plan.todo:  # (a cluster's or GPU's memory: theirs)
            at_once = len(req.seeds) if req.device == "cpu-stacked" else jobs  # a stack holds every seed's arrays
            check_memory(spec, plan.todo, at_once)
        if plan.conflicts and not req.force:
            _, path, why = plan.conflicts[0]
            raise BadInput(f"{len(plan.conflicts)} run(s) already have a record made with other iterations, "
                            f"settings, data or lysep version (e.g. {path}: {why}); nothing was run. Use "
                            "--force to replace them, or another --results directory")

    def make_plan() -> Plan:
        return runner.plan_runs(spec, req.solvers, req.sizes, req.seeds, req.iterations, results, req.force)

    check_request(req)
    try:
        plan = make_plan()
        check(plan)
        if req.dry_run:
            return _dry_run(req, plan, echo)
        if req.target is not None and plan.todo:
            session = cluster.Session.open(req.target, timeout=req.connect_timeout, device=req.device)
        plan = _locked_plan(held, req, plan, make_plan, check)
        for path in atomic.remove_stale(results / spec.name):
            warn(f"removed {path} (left by an interrupted lysep)")
        for _, problem in plan.invalid[:5]:
            warn(f"{problem}; redoing this run")
        if len(plan.invalid) > 5:
            warn(f"... and {len(plan.invalid) - 5} more invalid run record(s), redone as well")
        for key in (k for k in plan.todo if runner.keeps_checkpoint(k.solver)):
            path = checkpoints.checkpoint_path(results, spec.name, key.solver, key.L, key.M, key.seed)
            why = checkpoints.unreadable(path)
            if why is not None:
                warn(f"{path}: checkpoint cannot be read ({why}); {key.label()} starts from scratch")
        mixed = mixed_platforms(plan) if req.device == "cpu" and session is None else None
        if mixed:
            warn(mixed)
        say(_announce(req, plan, session))
        return _run_and_summarise(req, plan, held, session, echo, warn, summarise)
    finally:
        if session is not None:
            session.close()
        held.release()


def mixed_platforms(plan: Plan, here: dict[str, str] | None = None) -> str | None:
    """One line when records already in the cells this run completes were made on another platform or device
    than this process (``here``: its fingerprint): the new runs would sit beside them in the same cells, e.g.
    a run under ``LYSEP_NATIVE_BLAS=1`` completing a pinned one. None when every such record is this
    platform's."""
    cells = {(k.solver, k.L, k.M) for k in plan.todo}
    if not any((r.solver, r.L, r.M) in cells for r in plan.skipped):
        return None
    here = fingerprint() if here is None else here
    other = [r for r in plan.skipped if (r.solver, r.L, r.M) in cells and not same_platform(r.versions, here)]
    if not other:
        return None
    how = "; ".join(differing(other[0].versions, here)[:2])
    return (f"{len(other)} record(s) of the cells this run completes were made on another platform ({how}); "
            "the new runs will sit beside them in the same cells, each judged by lysep verify on its own "
            "platform (another --results directory keeps them apart)")


def _announce(req: SweepRequest, plan: Plan, session: Any) -> str:
    spec = req.spec
    replaced = f", {len(plan.conflicts)} replaced (--force)" if plan.conflicts else ""
    where = f"scheduler {session.describe()}" if session is not None else f"jobs {req.jobs}"
    if req.device != "cpu":
        stack = "one dask task a stack" if session is not None else "in this process"
        where = f"device {req.device} (a cell's seeds in one stack, {stack})"
        if session is not None:
            facts = session.device_facts
            on = ", ".join(facts[k] for k in ("gpu", "array_library", "cuda") if k in facts)
            where += f" on the workers' {on}, scheduler {session.describe()}"
    copied = (f", {len(plan.copies)} copied from identical runs of "
              f"{', '.join(sorted({RunPath.parse(path).experiment for _, path in plan.copies}))}"
              if plan.copies else "")
    text = (f"{spec.name}: {len(plan.todo)} run(s) to do{copied}, {len(plan.skipped)} skipped (record exists)"
            f"{replaced}; {req.iterations} iterations, {where}, results in {req.results}/{spec.name}/")
    if plan.todo:
        text += "\n" + estimate(plan.todo, spec, req.iterations, req.results).summary(
            req.jobs if req.device == "cpu" and req.target is None else None)  # (a cluster's or a stack's: theirs)
    return text


def _dry_run(req: SweepRequest, plan: Plan, echo: Echo) -> int:
    """``--dry-run``: the plan, what each cell's runs will cost and the total; nothing locked or written."""
    echo(_announce(req, plan, None).replace("results in", "results would go to"))
    cost = estimate(plan.todo, req.spec, req.iterations, req.results)
    for line in cost.lines():
        echo(line)
    if plan.conflicts:
        echo(f"  {len(plan.conflicts)} record(s) made with other iterations or settings would be replaced (--force)")
    echo("dry run: nothing was run, locked or written")
    return 0


def _run_and_summarise(req: SweepRequest, plan: Plan, held: locks.RunLocks, session: Any, echo: Echo,
                       warn: Echo, summarise: Callable[[list[RunRecord]], list[str]]) -> int:
    from lysep_cli.execution.progress import RichReporter

    spec, results = req.spec, req.results
    reporter = RichReporter(spec.name)
    try:  # each run is marked started in its lock while computed (lysep status: running, not queued)
        done = runner.run_experiment(spec, plan.todo, req.iterations, results, jobs=req.jobs,
                                     reporter=held.reporting(reporter, results, spec.name),
                                     cluster=session, copies=plan.copies, device=req.device)
    except KeyboardInterrupt as exc:
        saved = (" (a LySep run saved its checkpoint at the sweep it reached)"  # (none on a cluster's workers)
                 if session is None and any(runner.keeps_checkpoint(key.solver) for key in plan.todo) else "")
        raise Interrupted(f"{interrupts.name(exc)}: {reporter.finished} finished run(s) kept, the run(s) in "
                          f"flight left no record{saved}; rerun the same command to resume",
                          interrupts.exit_code(exc)) from None
    if done.data_state == "corrupt" or (done.data_state == "missing" and plan.skipped):
        warn(f"{records.data_path(results, spec.name)} was {done.data_state}: restored")
    copied = f", {len(done.copied)} copied" if done.copied else ""
    echo(f"\nsummary of {spec.name} ({len(done.done)} run(s) done now{copied}, {len(plan.skipped)} "
         f"skipped as done earlier, {len(done.failed)} failed):")
    for line in summarise(done.done + done.copied + plan.skipped):
        echo("  " + line)
    for key, error in done.failed:
        echo(f"  failed, no record: {key.label()}: {error}")
    return 1 if done.failed else 0
