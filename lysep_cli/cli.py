"""The ``lysep`` command line: parse, check, call, print.

Exit codes, the same for every command (README.md, "Exit codes"):

- 0: done.  A sweep whose runs diverged is done: divergence is a result, recorded like any other.
- 1: done, but not everything asked for: a run failed with an error (no record written for it; the other
  runs finished), or ``table`` / ``compare`` / ``plot`` found no run record matching the spec.
- 2: bad input (spec file, experiment name, selectors, settings, paths, scheduler address or file,
  records that would be overwritten without ``--force``, runs another ``lysep run`` is making): one line
  on stderr, nothing written.
- 130 / 143: interrupted by Ctrl-C (SIGINT) / terminated by SIGTERM: finished runs kept, runs in flight
  leave no record (a LySep run first saves its checkpoint at the end of the sweep it is in, to resume
  from; a second Ctrl-C stops at once).
"""

from __future__ import annotations

import functools
import math
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from lysep_cli import options as paths
from lysep_cli import specs
from lysep_cli.execution import interrupts
from lysep_cli.specs import ExperimentSpec, SpecError
from lysep_cli.store import atomic, locks, records

#: click's base exception class, found through typer (which may vendor click)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class _PlainHelpFlag:
    """``--help`` listed without a type (this typer shows ``<bool>`` for flags)."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class _Command(_PlainHelpFlag, TyperCommand):
    pass


class _Group(_PlainHelpFlag, TyperGroup):
    pass


class _OneLineErrors(_Group):
    """Usage errors (unknown option, ``--jobs abc``, missing argument) as one line, exit 2, like every
    other bad input; the rest as typer does it."""

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _CLICK_ERROR as exc:
            if not standalone_mode:
                raise
            message = " ".join(exc.format_message().split())
            if message:  # (empty for "no arguments": the help was printed instead)
                typer.echo(f"lysep: error: {message}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            if not standalone_mode:
                raise
            typer.echo("lysep: aborted", err=True)
            sys.exit(1)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _whole_number(value: Any) -> int:
    """An integer option written the plain way, in the digits 0-9: ``int()`` also takes "1_0", other
    scripts' digits and surrounding blanks, so ``--jobs 1_0`` would silently be 10."""
    if isinstance(value, int):  # a default
        return value
    if not _WHOLE.fullmatch(str(value)):
        raise typer.BadParameter(f"{str(value)!r} is not a whole number written in the digits 0-9")
    return int(value)


def _decimal_number(value: Any) -> float:
    """A number option written the plain way (digits 0-9, a point, an exponent; no "nan", "inf" or "1_0")."""
    if isinstance(value, float):  # a default
        return value
    if not _DECIMAL.fullmatch(str(value)):
        raise typer.BadParameter(f"{str(value)!r} is not a number written in the digits 0-9")
    return float(value)


app = typer.Typer(cls=_OneLineErrors, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Reproduce the LySep paper: run PINN/LySep experiments, tabulate, compare, plot.")

CONFIG_HELP = "experiments file (default: ./experiments.yaml, else the project's own)"
RESULTS_HELP = "results directory"
ITERATIONS_SHOW_HELP = "show runs made with this many iterations (default: the spec's)"

F = TypeVar("F", bound=Callable[..., Any])


def _path(value: Any) -> Path:
    """The value of a path option: an empty one is bad input (``Path("")`` would silently mean ".")."""
    if isinstance(value, Path):  # a default
        return value
    if str(value) == "":
        raise typer.BadParameter("empty path")
    if "\x00" in str(value):
        raise typer.BadParameter("embedded null byte")
    return Path(value)


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"lysep: error: {message}", err=True)
    raise typer.Exit(code)


def _warn(message: str) -> None:
    typer.echo(f"lysep: warning: {message}", err=True)


def _guarded(what: str) -> Callable[[F], F]:
    """Ctrl-C / SIGTERM -> one line, exit 130 / 143; an OS error (disk full, ...) -> one line, exit 1."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return command(*args, **kwargs)
            except KeyboardInterrupt as exc:
                typer.echo(f"\nlysep: {interrupts.name(exc)}: {what}", err=True)
                raise typer.Exit(interrupts.exit_code(exc)) from None
            except OSError as exc:
                where = f"{exc.filename}: " if exc.filename else ""
                _fail(f"{where}{exc.strerror or exc}", code=1)

        return wrapper  # type: ignore[return-value]

    return decorate


def _load(config: Optional[Path]) -> dict[str, ExperimentSpec]:
    return specs.load_specs(config if config is not None else specs.default_config())


def _format(fmt: str, allowed: tuple[str, ...], option: str = "--format") -> str:
    if fmt not in allowed:
        what = "format" if option == "--format" else "value"
        raise SpecError(f"{option}: unknown {what} {fmt!r} (choose from {', '.join(allowed)})")
    return fmt


def _positive(value: Optional[int], option: str) -> None:
    if value is not None and value < 1:
        raise SpecError(f"{option} must be >= 1, got {value}")


def _emit(text: str, out: Optional[Path]) -> None:
    if out is None:
        typer.echo(text, nl=not text.endswith("\n"))
    else:
        records.write_text(out, text)
        typer.echo(f"wrote {out}", err=True)


def _version(value: bool) -> None:
    if value:
        try:
            version = metadata.version("lysep")
        except metadata.PackageNotFoundError:
            version = "unknown"
        typer.echo(f"lysep {version}")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, metavar="",
                                       help="print the version and exit")) -> None:
    """Reproduce the LySep paper: run PINN/LySep experiments, tabulate, compare, plot."""


@app.command("list", cls=_Command)
def list_(config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP)) -> None:
    """Print the experiments and their settings."""
    try:
        all_specs = _load(config)
    except SpecError as exc:
        _fail(str(exc))
    for s in all_specs.values():
        where = f"paper Table {s.table}" if s.table is not None else "not in the paper"
        sol = f", solution {s.solution}" if s.solution else ""
        typer.echo(f"{s.name}  ({where})  {s.pde}, d = {s.d}{sol}")
        typer.echo("  sizes (L,M): " + " ".join(f"({L},{M})" for L, M in s.sizes))
        typer.echo(f"  n_train {s.n_train}, n_test {s.n_test}, iterations {s.iterations}, "
                   f"seeds {specs.seed_ranges(s.seeds)}")
        for name, settings in s.solvers.items():
            typer.echo(f"  {name}: {settings.to_dict()}")


# ---------------------------------------------------------------------------------------------
# lysep run


def _locked_plan(held: locks.RunLocks, experiment: str, results: Path, plan: Any,
                 make_plan: Callable[[], Any], check: Callable[[Any], None]) -> Any:
    """The plan of ``lysep run`` once ``held`` has locked all the runs it makes (and copies): lock what
    ``plan`` would make, plan again (another process may have finished some meanwhile) and ``check``
    it, until nothing new is to lock.  :class:`locks.Busy` when another lysep run holds any of them."""
    while True:
        keys = list(plan.todo) + [key for key, _ in plan.copies]
        if not held.acquire(results, experiment, [(k.solver, k.L, k.M, k.seed) for k in keys]):
            return plan
        plan = make_plan()
        check(plan)


def _check_memory(spec: ExperimentSpec, size_list: list[tuple[int, int]], jobs: int) -> None:
    """SpecError when even the channels of one run (times ``jobs``, the runs at a time) exceed the memory
    available: such a run could only fail, or swap the machine, after its data set was built."""
    from lysep_cli.execution.memory import available_bytes, channel_bytes

    free = available_bytes()
    if free is None:
        return
    n_in = spec.d + (spec.pde != "elliptic")
    n_second = spec.d + (spec.pde == "hyperbolic")
    L, M = max(size_list, key=lambda s: channel_bytes(n_in, n_second, s[0], s[1], spec.n_train))
    need = channel_bytes(n_in, n_second, L, M, spec.n_train) * jobs
    if need > free:
        at_once = f" ({jobs} runs at a time)" if jobs > 1 else ""
        size = lambda b: f"{b / 1e9:.1f} GB" if b >= 1e9 else f"{b / 1e6:.1f} MB"  # noqa: E731
        raise SpecError(f"size {L}x{M}: a run needs at least {size(need)}{at_once} (its channels alone: "
                        f"(1 + {n_in} + {n_second}) x {M} x {spec.n_train} doubles per hidden layer), "
                        f"this machine has {size(free)} available")


@app.command(cls=_Command)
@_guarded("finished runs kept, the runs in flight left no record; rerun the same command to resume")
def run(
    experiment: str = typer.Argument(..., help="experiment name (see `lysep list`)"),
    solver: Optional[str] = typer.Option(None, "--solver",
                                         help="pinn | lysep | paper (both; the default) | all | a,b,..."),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="e.g. 3x50,3x80 or 'smallest' (default: spec)"),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="e.g. 0-9 or 0,3,5 (default: spec)"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=_whole_number, help="default: spec"),
    force: bool = typer.Option(False, "--force", metavar="",
                               help="redo runs whose record exists, and replace records made with other "
                                    "iterations or settings"),
    jobs: int = typer.Option(1, "--jobs", parser=_whole_number, help="worker processes"),
    results: Path = typer.Option(Path("results"), "--results", parser=_path, help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="dask scheduler tcp://HOST:PORT, local, local:N or none "
        "(default: $LYSEP_SCHEDULER); one task per run, see docs/cluster.md"),
    scheduler_file: Optional[Path] = typer.Option(None, "--scheduler-file", parser=_path,
                                                  help="dask scheduler file (JSON with the address)"),
    connect_timeout: float = typer.Option(10.0, "--connect-timeout", parser=_decimal_number, help="seconds to reach the scheduler"),
) -> None:
    """Run every (solver, size, seed) of EXPERIMENT; existing records are skipped."""
    from lysep_cli.execution import cluster, runner
    from lysep_cli.reports import selection as reporting

    try:
        spec = specs.select_experiments(_load(config), [experiment])[0]
        solvers = specs.parse_solvers(solver, spec)
        size_list = specs.parse_sizes(sizes, spec)
        seed_list = specs.parse_seeds(seeds, spec)
        specs.check_sizes(spec, solvers, size_list)
        _positive(iterations, "--iterations")
        _positive(jobs, "--jobs")
        if not 0 < connect_timeout < math.inf:
            raise SpecError(f"--connect-timeout must be a finite number > 0, got {connect_timeout:g}")
        target = cluster.resolve_target(scheduler, scheduler_file)
        paths.writable_dir(results, "--results")
    except (SpecError, cluster.ClusterError) as exc:
        _fail(str(exc))
    its = iterations if iterations is not None else spec.iterations
    held = locks.RunLocks()  # dropped at the end of the command (or of the process, however it ends)
    session = None
    try:
        def check(plan: Any) -> None:  # before anything is locked or written
            if target is None and plan.todo:  # (on a cluster, the workers' memory is theirs to judge)
                _check_memory(spec, sorted({(k.L, k.M) for k in plan.todo}), min(jobs, len(plan.todo)))
            if plan.conflicts and not force:
                _, path, why = plan.conflicts[0]
                raise SpecError(f"{len(plan.conflicts)} run(s) already have a record made with other iterations, "
                                f"settings, data or lysep version (e.g. {path}: {why}); nothing was run. Use "
                                "--force to replace them, or another --results directory")

        def make_plan() -> Any:
            return runner.plan_runs(spec, solvers, size_list, seed_list, its, results, force)

        try:  # bad input ends the command before anything is locked or written
            plan = make_plan()
            check(plan)
            if target is not None and plan.todo:
                session = cluster.Session.open(target, timeout=connect_timeout)
            plan = _locked_plan(held, spec.name, results, plan, make_plan, check)
        except (SpecError, cluster.ClusterError) as exc:  # locks.Busy: another lysep run makes some of them
            _fail(str(exc))
        for path in atomic.remove_stale(results / spec.name):
            _warn(f"removed {path} (left by an interrupted lysep)")
        for _, problem in plan.invalid[:5]:
            _warn(f"{problem}; redoing this run")
        if len(plan.invalid) > 5:
            _warn(f"... and {len(plan.invalid) - 5} more invalid run record(s), redone as well")
        replaced = f", {len(plan.conflicts)} replaced (--force)" if plan.conflicts else ""
        where = f"scheduler {session.describe()}" if session is not None else f"jobs {jobs}"
        copied = (f", {len(plan.copies)} copied from identical runs of "
                  f"{', '.join(sorted({path.parts[-4] for _, path in plan.copies}))}") if plan.copies else ""
        typer.echo(f"{spec.name}: {len(plan.todo)} run(s) to do{copied}, {len(plan.skipped)} skipped (record exists)"
                   f"{replaced}; {its} iterations, {where}, results in {results}/{spec.name}/", err=True)
        from lysep_cli.execution.progress import RichReporter

        reporter = RichReporter(spec.name)
        try:  # each run is marked started in its lock while computed (lysep status: running, not queued)
            sweep = runner.run_experiment(spec, plan.todo, its, results, jobs=jobs,
                                          reporter=held.reporting(reporter, results, spec.name),
                                          cluster=session, copies=plan.copies)
        except KeyboardInterrupt as exc:
            saved = (" (a LySep run saved its checkpoint at the sweep it reached)"
                     if any(runner.keeps_checkpoint(key.solver) for key in plan.todo) else "")
            typer.echo(f"\nlysep: {interrupts.name(exc)}: {reporter.finished} finished run(s) kept, the run(s) in "
                       f"flight left no record{saved}; rerun the same command to resume", err=True)
            raise typer.Exit(interrupts.exit_code(exc)) from None
        finally:
            if session is not None:
                session.close()
                session = None
        if sweep.data_state == "corrupt" or (sweep.data_state == "missing" and plan.skipped):
            _warn(f"{records.data_path(results, spec.name)} was {sweep.data_state}: restored")
        copied = f", {len(sweep.copied)} copied" if sweep.copied else ""
        typer.echo(f"\nsummary of {spec.name} ({len(sweep.done)} run(s) done now{copied}, {len(plan.skipped)} "
                   f"skipped as done earlier, {len(sweep.failed)} failed):")
        for line in reporting.summary_lines(sweep.done + sweep.copied + plan.skipped):
            typer.echo("  " + line)
        if sweep.failed:
            for key, error in sweep.failed:
                typer.echo(f"  failed, no record: {key.label()}: {error}")
            raise typer.Exit(1)
    finally:
        if session is not None:  # ended before the runs (another lysep run holds some of them)
            session.close()
        held.release()


# ---------------------------------------------------------------------------------------------
# Reports: table, compare, plot.


def _solver_filter(solver: Optional[str], chosen: list[ExperimentSpec]) -> Optional[set[str]]:
    """The solver names of a report's ``--solver a,b`` (None: all); SpecError for a name that none of
    the chosen experiments configures."""
    if solver is None:
        return None
    wanted = {w.strip() for w in solver.split(",")}
    known = {name for spec in chosen for name in spec.solvers}
    unknown = sorted(wanted - known)
    if unknown:
        names = ", ".join(repr(u) for u in unknown)
        raise SpecError(f"--solver: unknown solver {names} (choose from {', '.join(sorted(known))})")
    return wanted


def _selection(results: Path, chosen: list[ExperimentSpec], iterations: Optional[int]) -> Any:
    """Load and check the records of ``chosen``, warn about unusable files, keep those matching the spec."""
    from lysep_cli.reports import selection as reporting

    loaded = records.load_records(results, [s.name for s in chosen])
    for line in loaded.warnings():
        _warn(line)
    return reporting.select(loaded, chosen, iterations)


def _nothing_to_show(results: Path, chosen: list[ExperimentSpec], sel: Any) -> NoReturn:
    left = sum(sum(c.values()) for c in sel.excluded.values())
    text = f"no run record under {results}/ matches the spec of {', '.join(s.name for s in chosen) or 'any experiment'}"
    if left:
        text += f"; {left} record(s) left out"
        text += next((sel.hint(s.name) for s in chosen if sel.hint(s.name)), "")
    _fail(text, code=1)


def _shown(results: Path, chosen: list[ExperimentSpec], iterations: Optional[int],
           named: bool) -> tuple[Any, list[ExperimentSpec]]:
    """The records selected, and the experiments a report shows: those named, else those with records
    (none at all ends the command: exit 1, one line)."""
    sel = _selection(results, chosen, iterations)
    shown = chosen if named else [s for s in chosen if sel.of(s.name)]
    if not any(sel.of(s.name) for s in shown):
        _nothing_to_show(results, chosen, sel)
    return sel, shown


def _report_specs(config: Optional[Path], experiments: Optional[list[str]], results: Path,
                  out: Optional[Path], iterations: Optional[int], out_is_dir: bool = False) -> list[ExperimentSpec]:
    """Checked inputs of a report command: the experiments asked for (all when none named)."""
    chosen = specs.select_experiments(_load(config), experiments)
    _positive(iterations, "--iterations")
    paths.readable_dir(results, "--results")
    if out is not None:
        (paths.writable_dir if out_is_dir else paths.writable_file)(out, "--out")
    return chosen


@app.command(cls=_Command)
@_guarded("nothing written")
def table(
    experiments: Optional[list[str]] = typer.Argument(None, help="default: every experiment with records"),
    fmt: str = typer.Option("markdown", "--format", help="latex | markdown"),
    out: Optional[Path] = typer.Option(None, "--out", parser=_path, help="write here instead of stdout"),
    standalone: bool = typer.Option(False, "--standalone", metavar="",
                                    help="LaTeX: a complete compilable document"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=_whole_number, help=ITERATIONS_SHOW_HELP),
    results: Path = typer.Option(Path("results"), "--results", parser=_path, help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
) -> None:
    """The paper's tables (rows (L,M) x model) from the run records, with the published numbers."""
    from lysep_cli.reports import tables

    try:
        _format(fmt, ("latex", "markdown"))
        chosen = _report_specs(config, experiments, results, out, iterations)
    except SpecError as exc:
        _fail(str(exc))
    sel, shown = _shown(results, chosen, iterations, named=bool(experiments))
    _emit(tables.render_tables(sel, shown, fmt, standalone=standalone), out)


@app.command(cls=_Command)
@_guarded("nothing written")
def compare(
    experiments: Optional[list[str]] = typer.Argument(None, help="default: every experiment with records"),
    fmt: str = typer.Option("markdown", "--format", help="markdown | latex"),
    out: Optional[Path] = typer.Option(None, "--out", parser=_path, help="write here instead of stdout"),
    headline: bool = typer.Option(False, "--headline", metavar="",
                                  help="one Markdown row per paper table (ratio ranges, verdicts) instead"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=_whole_number, help=ITERATIONS_SHOW_HELP),
    results: Path = typer.Option(Path("results"), "--results", parser=_path, help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
) -> None:
    """Our numbers beside the published ones, cell by cell, with ratios and a summary."""
    from lysep_cli.reports.compare import render_comparison, render_headline

    try:
        _format(fmt, ("markdown", "latex"))
        if headline and fmt != "markdown":
            raise SpecError("--headline is Markdown only (drop --format latex)")
        chosen = _report_specs(config, experiments, results, out, iterations)
    except SpecError as exc:
        _fail(str(exc))
    sel, shown = _shown(results, chosen, iterations, named=bool(experiments))
    names = [s.name for s in shown]
    _emit(render_headline(sel, names) if headline else render_comparison(sel, names, fmt), out)


@app.command(cls=_Command)
@_guarded("nothing written; the runs checked so far are listed above")
def verify(
    experiments: Optional[list[str]] = typer.Argument(None, help="default: every experiment with records"),
    sample: Optional[int] = typer.Option(None, "--sample", parser=_whole_number, help="rerun K archived runs (default 3)"),
    all_runs: bool = typer.Option(False, "--all", metavar="", help="rerun every archived run"),
    seed: int = typer.Option(0, "--seed", parser=_whole_number, help="seed of the random sample"),
    cheapest: bool = typer.Option(False, "--cheapest", metavar="",
                                  help="the K runs with the smallest recorded time instead of a random sample"),
    solver: Optional[str] = typer.Option(None, "--solver", help="only these solvers, e.g. lysep or pinn,rfls"),
    level: str = typer.Option("auto", "--level",
                              help="auto | exact | tolerant | statistical (docs/reproducibility.md)"),
    cells: Optional[str] = typer.Option(None, "--cells",
                                        help="rerun every seed of these cells, e.g. pinn:3x30,rfls:3x50 "
                                             "(statistical level)"),
    against: Optional[Path] = typer.Option(None, "--against", parser=_path,
                                           help="compare with another archive cell by cell; no reruns"),
    weights: bool = typer.Option(False, "--weights", metavar="",
                                 help="only re-evaluate J and l2 of the saved weights from data.npz; no training "
                                      "(seconds for the whole archive with --all)"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=_whole_number, help=ITERATIONS_SHOW_HELP),
    results: Path = typer.Option(Path("results/paper"), "--results", parser=_path, help="archive to check"),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
) -> None:
    """Check the archive: its saved networks, then reruns at the level this platform allows (exact,
    tolerant, statistical), or another archive against it (--against)."""
    from lysep_cli.reports import cellstats
    from lysep_cli.reports import verify as verifier

    try:
        if all_runs and sample is not None:
            raise SpecError("--sample and --all exclude each other")
        _positive(sample, "--sample")
        if seed < 0:
            raise SpecError(f"--seed must be >= 0, got {seed}")
        _format(level, verifier.LEVELS, "--level")
        if sum(bool(x) for x in (weights, against is not None, cells)) > 1:
            raise SpecError("--weights, --against and --cells exclude each other")
        if against is not None and not against.is_dir():
            raise SpecError(f"--against: no directory {against}")
        chosen = _report_specs(config, experiments, results, None, iterations)
        wanted = _solver_filter(solver, chosen)
        cell_filter = None if cells is None else _cell_filter(cells, chosen)
    except SpecError as exc:
        _fail(str(exc))
    sel = _selection(results, chosen, iterations)
    pool = [r for r in verifier.candidates(sel.records) if wanted is None or r.solver in wanted]
    if not pool:
        _nothing_to_show(results, chosen, sel)
    by_name = {s.name: s for s in chosen}
    echo = typer.echo
    damaged = sum(sel.invalid.values())
    if against is not None:
        other = [r for r in _selection(against, chosen, iterations).records if wanted is None or r.solver in wanted]
        compared, only_here, only_there = cellstats.compare_archives(pool, other)
        echo(f"cell by cell: {results}/ (reference) against {against}/; per cell n, geometric means of final "
             f"J and l2, their ratio, Mann-Whitney p; differs when p < {cellstats.ALPHA:g} or the ratio is "
             f"outside [1/{cellstats.RATIO_BOUND:g}, {cellstats.RATIO_BOUND:g}]", err=True)
        for c in compared:
            echo(c.line())
        bad = sum(not c.ok for c in compared)
        missing = len(only_here) + len(only_there)
        echo(f"{len(compared) - bad} of {len(compared)} cell(s) agree" + (f"; {bad} differ" if bad else "")
             + (f"; {len(only_here)} cell(s) only in {results}/, {len(only_there)} only in {against}/"
                if missing else ""))
        if not compared:
            raise typer.Exit(1)
    elif weights:
        picked = verifier.choose(pool, None if all_runs else (sample or 3), seed, cheapest)
        echo(f"re-evaluating the saved weights of {len(picked)} of {len(pool)} archived run(s) under {results}/",
             err=True)
        bad = verifier.weights_pass(by_name, picked, results, echo, quiet=False)
        echo(f"{len(picked) - bad} of {len(picked)} run(s) reproduce the archive"
             + (f"; {bad} do not (tolerance {verifier.WEIGHTS_TOLERANCE:g} relative)" if bad else ""))
    else:
        echo(verifier.header(pool), err=True)
        bad = verifier.weights_pass(by_name, pool, results, echo, quiet=True)
        if cell_filter is not None or level == "statistical":
            if cell_filter is not None:
                chosen_cells = sorted({cellstats.cell_of(r) for r in pool if (r.solver, r.L, r.M) in cell_filter})
            else:
                picked = verifier.choose(pool, None if all_runs else (sample or 3), seed, cheapest)
                chosen_cells = sorted({cellstats.cell_of(r) for r in picked})
            runs = [r for r in pool if cellstats.cell_of(r) in chosen_cells]
            if not runs:
                _fail(f"--cells {cells}: no archived run of these cells under {results}/", code=1)
            echo(f"statistical level: {len(chosen_cells)} cell(s), {len(runs)} run(s) rerun (about "
                 f"{sum(r.seconds for r in runs):.0f} s of recorded run time)", err=True)
            failed = verifier.cells_pass(by_name, chosen_cells, pool, echo)
            bad += failed
            echo(f"{len(chosen_cells) - failed} of {len(chosen_cells)} cell(s) reproduce the archive "
                 "(level statistical)")
        else:
            picked = verifier.choose(pool, None if all_runs else (sample or 3), seed, cheapest)
            echo(f"rerunning {len(picked)} of {len(pool)} archived run(s) under {results}/ (about "
                 f"{sum(r.seconds for r in picked):.0f} s of recorded run time)", err=True)
            failed, levels = verifier.runs_pass(by_name, picked, pool, results, level, echo)
            bad += failed
            used = ", ".join(f"{k} {n}" for k, n in sorted(levels.items()))
            echo(f"{len(picked) - failed} of {len(picked)} run(s) reproduce the archive (levels: {used})"
                 + (f"; {failed} do not" if failed else ""))
    if damaged:  # an altered weights/history file, a broken JSON: the archive is not what it was
        echo(f"{damaged} archived record(s) do not read (damaged or altered since written; named in the "
             "warnings above): the archive does not verify")
    if bad or damaged:
        raise typer.Exit(1)


def _cell_filter(text: str, chosen: list[ExperimentSpec]) -> set[tuple[str, int, int]]:
    """``--cells pinn:3x30,rfls:3x50`` as {(solver, L, M)}; SpecError for a malformed entry."""
    out = set()
    for part in text.split(","):
        name, _, size = part.strip().partition(":")
        L, _, M = size.partition("x")
        if not (name and L.isdigit() and M.isdigit()):
            raise SpecError(f"--cells: expected SOLVER:LxM[,...] (e.g. pinn:3x30), got {part.strip()!r}")
        _solver_filter(name, chosen)
        out.add((name, int(L), int(M)))
    return out


@app.command(cls=_Command)
@_guarded("nothing written")
def status(
    experiments: Optional[list[str]] = typer.Argument(
        None, help="default: the paper's experiments and every other one with records"),
    solver: Optional[str] = typer.Option(None, "--solver", help="only these solvers, e.g. lysep or pinn,rfls"),
    seeds: Optional[str] = typer.Option(None, "--seeds",
                                        help="expect these seeds, e.g. 0-2 for make extras (default: spec)"),
    check: bool = typer.Option(False, "--check", metavar="", help="exit 1 when a listed run is missing"),
    summary: bool = typer.Option(False, "--summary", metavar="", help="the totals only, not the table"),
    out: Optional[Path] = typer.Option(None, "--out", parser=_path, help="write here instead of stdout"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=_whole_number, help=ITERATIONS_SHOW_HELP),
    results: Path = typer.Option(Path("results"), "--results", parser=_path, help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
) -> None:
    """Seeds done and missing per (experiment, solver, size), their run time, and the time left."""
    from lysep_cli.reports.status import archive_status, files_size, render_status

    try:
        chosen = _report_specs(config, experiments, results, out, iterations)
        wanted = _solver_filter(solver, chosen)
        expected = None if seeds is None else {s.name: specs.parse_seeds(seeds, s) for s in chosen}
    except SpecError as exc:
        _fail(str(exc))
    sel = _selection(results, chosen, iterations)
    if not experiments:
        chosen = [s for s in chosen if s.table is not None or sel.of(s.name)]
    cells = archive_status(sel, chosen, wanted, results, expected)
    if not cells:
        _nothing_to_show(results, chosen, sel)
    paper = {s.name for s in chosen if s.table is not None}
    size = files_size(results, sorted({c.experiment for c in cells}), wanted)
    _emit(render_status(cells, sel.iterations, str(results), paper, summary, size), out)
    if check and any(c.missing for c in cells):
        raise typer.Exit(1)


@app.command(cls=_Command)
@_guarded("figures written so far are complete, the one in progress left no file")
def plot(
    experiment: str = typer.Argument(..., help="experiment name"),
    out: Optional[Path] = typer.Option(None, "--out", parser=_path,
                                       help="output directory (default: under results)"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=_whole_number, help=ITERATIONS_SHOW_HELP),
    results: Path = typer.Option(Path("results"), "--results", parser=_path, help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
) -> None:
    """The paper's figures for EXPERIMENT (PNG and PDF)."""
    try:
        chosen = _report_specs(config, [experiment], results, out, iterations, out_is_dir=True)
        out_dir = out if out is not None else results / experiment / "figures"
        paths.writable_dir(out_dir, "--out")
    except SpecError as exc:
        _fail(str(exc))
    sel, _ = _shown(results, chosen, iterations, named=True)
    from lysep_cli.reports.plots import plot_experiment

    for path in plot_experiment(sel.of(experiment), experiment, out_dir):
        typer.echo(str(path))


# ---------------------------------------------------------------------------------------------
# lysep study


study_app = typer.Typer(cls=_Group, no_args_is_help=True, help="Studies beyond the paper's tables.")
app.add_typer(study_app, name="study")


@study_app.command("step-size", cls=_Command)
@_guarded("nothing written")
def study_step_size(
    experiment: str = typer.Argument(..., help="experiment name"),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="e.g. 3x50 (default: spec)"),
    seeds: Optional[str] = typer.Option("0-4", "--seeds", help="e.g. 0-4"),
    taus: str = typer.Option("0,1e-10,1e-8,1e-6,1e-4,1e-2,1", "--taus", help="fixed step sizes, comma-separated"),
    iterations: int = typer.Option(200, "--iterations", parser=_whole_number, help="sweeps per run"),
    out: Optional[Path] = typer.Option(None, "--out", parser=_path,
                                       help="default: results/<experiment>/study-step-size"),
    results: Path = typer.Option(Path("results"), "--results", parser=_path, help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
) -> None:
    """LySep's final J and l2 against a fixed tau (tau = 0: closed-form updates only) and per-block backtracking."""
    try:
        spec = specs.select_experiments(_load(config), [experiment])[0]
        if "lysep" not in spec.solvers:
            raise SpecError(f"{spec.name}: no lysep settings in the experiments file")
        size_list = specs.parse_sizes(sizes, spec)
        seed_list = specs.parse_seeds(seeds, spec)
        specs.check_sizes(spec, ["lysep"], size_list)
        items = [t.strip() for t in taus.split(",")]
        if not all(_DECIMAL.fullmatch(t) for t in items):  # no empty item, "nan", "1_0" or other digits
            raise SpecError(f"--taus: expected comma-separated numbers in the digits 0-9, got {taus!r}")
        tau_list = [float(t) for t in items]
        if any(not (t >= 0 and t != float("inf")) for t in tau_list):
            raise SpecError(f"--taus: need one or more finite values >= 0, got {taus!r}")
        _positive(iterations, "--iterations")
        out_dir = out if out is not None else results / spec.name / "study-step-size"
        paths.writable_dir(out_dir, "--out" if out is not None else "--results")
    except SpecError as exc:
        _fail(str(exc))
    from lysep_cli.reports.study import step_size_study, write_study

    total = len(size_list) * len(seed_list) * (len(tau_list) + 1)
    count = [0]

    def tick(message: str) -> None:
        count[0] += 1
        typer.echo(f"[{count[0]}/{total}] {message}", err=True)

    df = step_size_study(spec, size_list, seed_list, tau_list, iterations, spec.solvers["lysep"], tick)
    for path in write_study(df, out_dir):
        typer.echo(str(path))


@study_app.command("depth", cls=_Command)
@_guarded("nothing written")
def study_depth(
    experiment: str = typer.Argument(..., help="experiment name, e.g. elliptic-10d-depth"),
    out: Optional[Path] = typer.Option(None, "--out", parser=_path, help="write here instead of stdout"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=_whole_number, help=ITERATIONS_SHOW_HELP),
    results: Path = typer.Option(Path("results"), "--results", parser=_path, help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", parser=_path, help=CONFIG_HELP),
) -> None:
    """What depth does, from the archived runs: J, l2, J after the first output solve, hidden-layer movement
    per layer, seconds per iteration, bound violations (nothing is rerun)."""
    from lysep_cli.reports.depth import depth_summary, render_depth_markdown

    try:
        chosen = _report_specs(config, [experiment], results, out, iterations)
    except SpecError as exc:
        _fail(str(exc))
    sel, _ = _shown(results, chosen, iterations, named=True)
    df = depth_summary(sel.of(experiment), chosen[0], results)
    _emit(render_depth_markdown(df, chosen[0], sel.iterations[experiment]), out)


def main() -> None:
    """The ``lysep`` program: SIGTERM handled like Ctrl-C, then the command line."""
    interrupts.install()
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
