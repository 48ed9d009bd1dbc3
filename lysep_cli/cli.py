"""The ``lysep`` command line: parse, check, call, print.  Every command reads and writes the committed
archive ``results/paper/`` unless ``--results`` names another directory.

Exit codes, the same for every command, set in one place (:func:`_guarded`):

- 0: done.  A sweep whose runs diverged is done: divergence is a result, recorded like any other.
- 1: done, but not everything asked for: a run failed with an error (no record written for it; the other
  runs finished), a report found no run record matching the spec, a check failed (``verify``,
  ``status --check``), or an OS error (disk full, ...).
- 2: bad input (spec file, experiment name, selectors, settings, paths, scheduler address or file,
  records that would be overwritten without ``--force``, runs another ``lysep run`` is making): one line
  on stderr, nothing written.
- 130 / 143: interrupted by Ctrl-C (SIGINT) / terminated by SIGTERM: finished runs kept, runs in flight
  leave no record (a LySep run first saves its checkpoint at the end of the sweep it is in, to resume
  from; a second Ctrl-C stops at once).
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional, TypeVar

import typer

from lysep_cli import options as opt
from lysep_cli import specs
from lysep_cli.execution import interrupts
from lysep_cli.options import (DEFAULT_RESULTS, Config, Experiments, Flag, Out, Results, ShownIterations,
                               SolverFilter, decimal_number, path_value, whole_number)
from lysep_cli.specs import BadInput
from lysep_cli.store import records

app = typer.Typer(cls=opt.OneLineErrors, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Reproduce the LySep paper: run PINN/LySep experiments, tabulate, compare, plot.")
F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"lysep: error: {message}", err=True)
    raise typer.Exit(code)


def _warn(message: str) -> None:
    typer.echo(f"lysep: warning: {message}", err=True)


def _say(message: str) -> None:
    typer.echo(message, err=True)


def _guarded(what: str) -> Callable[[F], F]:
    """The one place that maps errors to exit codes: bad input (BadInput, ClusterError) -> 2; nothing to
    show -> 1; Ctrl-C / SIGTERM -> 130 / 143; an OS error (disk full, ...) -> 1.  Each is one line."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from lysep_cli.execution.cluster import ClusterError
            from lysep_cli.execution.sweep import Interrupted
            from lysep_cli.reports.selection import NothingToShow

            try:
                return command(*args, **kwargs)
            except (BadInput, ClusterError) as exc:
                _fail(str(exc))
            except NothingToShow as exc:
                _fail(str(exc), code=1)
            except Interrupted as exc:
                typer.echo(f"\nlysep: {exc}", err=True)
                raise typer.Exit(exc.code) from None
            except KeyboardInterrupt as exc:
                typer.echo(f"\nlysep: {interrupts.name(exc)}: {what}", err=True)
                raise typer.Exit(interrupts.exit_code(exc)) from None
            except OSError as exc:
                where = f"{exc.filename}: " if exc.filename else ""
                _fail(f"{where}{exc.strerror or exc}", code=1)

        return wrapper  # type: ignore[return-value]

    return decorate


def _emit(text: str, out: Optional[Path]) -> None:
    if out is None:
        typer.echo(text, nl=not text.endswith("\n"))
    else:
        records.write_text(out, text)
        _say(f"wrote {out}")


def _version(value: bool) -> None:
    if value:
        try:
            version = metadata.version("lysep")
        except metadata.PackageNotFoundError:
            version = "unknown"
        typer.echo(f"lysep {version}")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = Flag(False, "--version", callback=_version, is_eager=True,
                               help="print the version and exit")) -> None:
    """Reproduce the LySep paper: run PINN/LySep experiments, tabulate, compare, plot."""


@app.command("list", cls=opt.Command)
@_guarded("nothing written")
def list_(config: Config = None) -> None:
    """Print the experiments and their settings (an experiment whose problem is refused: why)."""
    for s in opt.load(config).values():
        refused = specs.refusal(s)
        if refused is not None:  # a broken problem of the file: shown, never in the way of the others
            typer.echo(f"{s.name}  (refused: {refused})")
            continue
        where = f"paper Table {s.table}" if s.table is not None else "not in the paper"
        sol = f", solution {s.solution}" if s.solution else ""
        typer.echo(f"{s.name}  ({where})  {s.pde}, d = {s.d}{sol}")
        typer.echo("  sizes (L,M): " + " ".join(f"({L},{M})" for L, M in s.sizes))
        typer.echo(f"  n_train {s.n_train}, n_test {s.n_test}, iterations {s.iterations}, "
                   f"seeds {specs.seed_ranges(s.seeds)}")
        for name, settings in s.solvers.items():
            typer.echo(f"  {name}: {settings.to_dict()}")


@app.command(cls=opt.Command)
@_guarded("finished runs kept, the runs in flight left no record; rerun the same command to resume")
def run(
    experiment: str = typer.Argument(..., help="experiment name (see `lysep list`)"),
    solver: Optional[str] = typer.Option(None, "--solver",
                                         help="pinn | lysep | paper (both; the default) | all | a,b,..."),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="e.g. 3x50,3x80 or 'smallest' (default: spec)"),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="e.g. 0-9 or 0,3,5 (default: spec)"),
    iterations: Optional[int] = typer.Option(None, "--iterations", parser=whole_number, help="default: spec"),
    force: bool = Flag(False, "--force", help="redo runs whose record exists, and replace records made with "
                                              "other iterations or settings"),
    jobs: int = typer.Option(1, "--jobs", parser=whole_number, help="worker processes"),
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="dask scheduler tcp://HOST:PORT, local, local:N or none "
        "(default: $LYSEP_SCHEDULER); one task per run (per stack with --device), see docs/cluster.md"),
    scheduler_file: Optional[Path] = typer.Option(None, "--scheduler-file", parser=path_value,
                                                  help="dask scheduler file (JSON with the address)"),
    connect_timeout: float = typer.Option(10.0, "--connect-timeout", parser=decimal_number,
                                          help="seconds to reach the scheduler"),
    tls_ca_file: Optional[Path] = typer.Option(None, "--tls-ca-file", parser=path_value,
                                               help="tls:// scheduler: the CA certificate (PEM) that signed the "
                                               "cluster's certificates (default: dask's configuration)"),
    tls_cert: Optional[Path] = typer.Option(None, "--tls-cert", parser=path_value,
                                            help="tls:// scheduler: this client's certificate (PEM)"),
    tls_key: Optional[Path] = typer.Option(None, "--tls-key", parser=path_value,
                                           help="tls:// scheduler: this client's private key (PEM)"),
    same_numerics: bool = Flag(False, "--same-numerics", help="refuse when EXPERIMENT's records under --results "
                               "were made by other numerics (an archive kept to one numerics id)"),
    device: str = typer.Option("cpu", "--device", help="cpu (the default), cpu-stacked or cuda: a cell's seeds "
                               "in one stack on NumPy or on an NVIDIA GPU (pip install 'lysep\\[gpu]'), here or on dask "
                               "workers (--scheduler); docs/gpu.md"),
    dry_run: bool = Flag(False, "--dry-run", help="print the runs to do and their estimated CPU time from the "
                         "archive's rates; run, lock and write nothing"),
) -> None:
    """Run every (solver, size, seed) of EXPERIMENT; runs with a record are skipped.  The runs to do and
    their estimated CPU time are said first (--dry-run: only that)."""
    from lysep_cli.execution import cluster
    from lysep_cli.execution.sweep import SweepRequest, sweep
    from lysep_cli.reports.selection import summary_lines

    spec = specs.select_experiments(opt.load(config), [experiment])[0]
    solvers = specs.parse_solvers(solver, spec)
    size_list = {s: specs.parse_sizes(sizes, spec, s) for s in solvers}
    specs.check_sizes(spec, solvers, size_list)
    specs.check_iterations(iterations)
    opt.positive(jobs, "--jobs")
    opt.positive_finite(connect_timeout, "--connect-timeout")
    target = cluster.resolve_target(scheduler, scheduler_file)
    tls = cluster.TLSFiles.of(tls_ca_file, tls_cert, tls_key)
    if tls is not None:
        if target is None:
            raise BadInput("--tls-ca-file, --tls-cert and --tls-key go with a tls:// scheduler (--scheduler)")
        target = target.with_tls(tls)
    req = SweepRequest(spec, solvers, size_list, specs.parse_seeds(seeds, spec),
                       iterations if iterations is not None else spec.iterations, results, force, jobs,
                       target, connect_timeout, opt.device(device, solvers, jobs, target), dry_run)
    if not dry_run:
        opt.writable_dir(results, "--results")
    if same_numerics:
        opt.same_numerics(results, spec.name)
    code = sweep(req, typer.echo, _warn, _say, summary_lines)
    if code:
        raise typer.Exit(code)


def _shown(results: Path, chosen: list[specs.ExperimentSpec], iterations: Optional[int], named: bool) -> Any:
    from lysep_cli.reports.selection import shown

    return shown(results, chosen, iterations, named, _warn)


@app.command(cls=opt.Command)
@_guarded("nothing written")
def table(
    experiments: Experiments = None,
    fmt: str = typer.Option("markdown", "--format", help="latex | markdown"),
    out: Out = None,
    standalone: bool = Flag(False, "--standalone", help="LaTeX: a complete compilable document"),
    iterations: ShownIterations = None,
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """The paper's tables (rows (L,M) x model) from the run records, with the published numbers."""
    from lysep_cli.reports import tables

    opt.choice(fmt, ("latex", "markdown"))
    out = opt.in_dir(out, "tables.tex" if fmt == "latex" else "tables.md")
    chosen = opt.report_specs(config, experiments, results, out, iterations)
    sel, shown = _shown(results, chosen, iterations, named=bool(experiments))
    _emit(tables.render_tables(sel, shown, fmt, standalone=standalone), out)


@app.command(cls=opt.Command)
@_guarded("nothing written")
def compare(
    experiments: Experiments = None,
    fmt: str = typer.Option("markdown", "--format", help="markdown | latex"),
    out: Out = None,
    headline: bool = Flag(False, "--headline", help="one Markdown row per paper table (ratio ranges, verdicts) instead"),
    iterations: ShownIterations = None,
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """Our numbers beside the published ones, cell by cell, with ratios and a summary."""
    from lysep_cli.reports.compare import render_comparison, render_headline

    opt.choice(fmt, ("markdown", "latex"))
    if headline and fmt != "markdown":
        raise BadInput("--headline is Markdown only (drop --format latex)")
    out = opt.in_dir(out, "comparison.tex" if fmt == "latex" else "comparison.md")
    chosen = opt.report_specs(config, experiments, results, out, iterations)
    sel, shown = _shown(results, chosen, iterations, named=bool(experiments))
    names = [s.name for s in shown]
    _emit(render_headline(sel, names) if headline else render_comparison(sel, names, fmt), out)


@app.command(cls=opt.Command)
@_guarded("nothing written; the runs checked so far are listed above")
def verify(
    experiments: Experiments = None,
    sample: Optional[int] = typer.Option(None, "--sample", parser=whole_number, help="rerun K archived runs (default 3)"),
    all_runs: bool = Flag(False, "--all", help="rerun every archived run"),
    since: Optional[str] = typer.Option(None, "--since", help="only the runs added or changed since this git "
                                        "revision (all of them, or --sample K), at the level this platform allows"),
    seed: int = typer.Option(0, "--seed", parser=whole_number, help="seed of the random sample"),
    cheapest: bool = Flag(False, "--cheapest", help="the K runs with the smallest recorded time instead of a random sample"),
    solver: SolverFilter = None,
    level: str = typer.Option("auto", "--level", help="auto | exact | tolerant | statistical (docs/reproducibility.md)"),
    cells: Optional[str] = typer.Option(None, "--cells", help="rerun every seed of these cells, e.g. "
                                        "pinn:3x30,rfls:3x50 (statistical level)"),
    against: Optional[Path] = typer.Option(None, "--against", parser=path_value,
                                           help="compare with another archive (a results directory, or a "
                                           "finals file from --save-finals) cell by cell; no reruns"),
    common_seeds: bool = Flag(False, "--common-seeds", help="with --against: compare each cell on the seeds "
                               "both sides have (an archive still being made)"),
    accept: Optional[str] = typer.Option(None, "--accept", help="with --against: cells known to differ, e.g. "
                                         "elliptic-2d:pinn-lbfgs:3x30 (each must differ; docs/archive.md)"),
    allow_partial: bool = Flag(False, "--allow-partial", help="with --against or --cells: missing seeds or cells, "
                               "unreadable records and too few seeds are reported, not failed"),
    save_finals: Optional[Path] = typer.Option(None, "--save-finals", parser=path_value,
                                               help="write the final J, J_S, l2 of every selected run to FILE "
                                               "(CSV) for a later --against FILE; no reruns"),
    weights: bool = Flag(False, "--weights", help="only re-evaluate J and l2 of the saved weights from data.npz and "
                                                  "recompute each run's first iterations; no training"),
    allow_unverified: bool = Flag(False, "--allow-unverified", help="runs no check can verify at the level asked "
                                  "(ill-conditioned on another platform, beyond the cap within round-off, a PARTIAL "
                                  "cell) are reported, not failed"),
    jobs: int = typer.Option(1, "--jobs", parser=whole_number, help="worker processes for the saved networks' "
                             "ties (each run's first iterations recomputed)"),
    reruns_only: bool = Flag(False, "--reruns-only", help="skip the weights pass (each saved network re-evaluated "
                             "and tied to its run): only the reruns, e.g. after a `--weights --all` of the same archive"),
    iterations: ShownIterations = None,
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """Check the archive: its saved networks, then reruns at the level this platform allows (exact, tolerant, statistical), or another archive against it (--against)."""
    from lysep_cli.reports import verify as verifier
    from lysep_cli.reports.selection import load_selection, nothing_to_show

    if all_runs and sample is not None:
        raise BadInput("--sample and --all exclude each other")
    opt.positive(sample, "--sample")
    opt.positive(jobs, "--jobs")
    if seed < 0:
        raise BadInput(f"--seed must be >= 0, got {seed}")
    opt.choice(level, verifier.LEVELS, "--level")
    if sum(bool(x) for x in (weights, against is not None, cells, save_finals is not None)) > 1:
        raise BadInput("--weights, --against, --cells and --save-finals exclude each other")
    if reruns_only and (weights or against is not None or save_finals is not None):
        raise BadInput("--reruns-only goes with neither --weights, --against nor --save-finals (it skips the weights "
                       "pass: what is left is the reruns)")
    if since is not None and (against is not None or save_finals is not None or cells or all_runs):
        raise BadInput("--since goes with neither --against, --save-finals, --cells nor --all (all its runs are "
                       "checked unless --sample K)")
    if common_seeds and against is None:
        raise BadInput("--common-seeds goes with --against")
    if accept is not None and against is None:
        raise BadInput("--accept goes with --against")
    if allow_partial and against is None and cells is None:
        raise BadInput("--allow-partial goes with --against or --cells")
    verifier.check_level(level, weights=weights, against=against is not None or save_finals is not None)
    save_finals = opt.in_dir(save_finals, "finals.csv")
    if save_finals is not None:
        opt.writable_file(save_finals, "--save-finals")
    if against is not None and not against.is_file():
        opt.readable_dir(against, "--against")
    chosen = opt.report_specs(config, experiments, results, None, iterations)
    wanted = opt.solver_filter(solver, chosen)
    cell_set = None if cells is None else opt.cell_filter(cells, chosen)
    accepted = set() if accept is None else opt.accepted_cells(accept, chosen)
    # the weights pass names every broken seal itself; --against and --save-finals leave them out, warned
    sel = load_selection(results, chosen, iterations, _warn, seals=against is not None or save_finals is not None)
    pool = [r for r in verifier.candidates(sel.records + sel.extra_seeds) if wanted is None or r.solver in wanted]
    if not pool:
        raise nothing_to_show(results, chosen, sel)
    if since is not None:
        from lysep_cli.store.since import changed_since

        changed = changed_since(results, since)
        pool = [r for r in pool if changed.covers(r.cell)]
        _say(f"--since {since}: {len(pool)} run(s) under {results}/ added or changed"
             + (f"; {len(changed.removed)} record(s) removed (not checked): {', '.join(changed.removed[:5])}"
                + (" ..." if len(changed.removed) > 5 else "") if changed.removed else ""))
        if not pool:
            typer.echo(f"nothing to verify: no run of the experiments asked was added or changed since {since}")
            return
        all_runs = sample is None
    if cell_set is not None:
        opt.known_cells(cell_set, pool, results, _warn if allow_partial else None)
    req = verifier.VerifyRequest({s.name: s for s in chosen}, pool, results, None if all_runs else (sample or 3),
                                 seed, cheapest, level, cell_set, allow_partial, tuple(sel.left_out), allow_unverified,
                                 jobs, not reruns_only)
    if save_finals is not None:
        from lysep_cli.store.finals import write_finals

        try:
            n = write_finals(pool, save_finals)
        except OSError as exc:
            raise BadInput(f"--save-finals {save_finals}: {exc.strerror or exc}") from None
        typer.echo(f"wrote the finals of {n} run(s) under {results}/ to {save_finals}")
        bad = 0
    elif against is not None:
        other, unreadable = verifier.other_archive(against, chosen, iterations, wanted, _warn)
        side = verifier.Against(other, against, (sum(sel.invalid.values()), unreadable), common_seeds,
                                frozenset(accepted), allow_partial, req.specs, allow_unverified, jobs)
        bad = verifier.against(pool, side, results, typer.echo, _say)
    elif weights:
        bad = verifier.weights_only(req, typer.echo, _say)
    else:
        bad = verifier.run_verify(req, typer.echo, _say)
    if against is not None:  # a record made otherwise than the spec asks: named, never dropped silently
        for line in verifier.left_out_lines(sel.left_out):
            typer.echo(line)
        bad += len(sel.left_out)
    damaged = 0 if against is not None else sum(sel.invalid.values())  # --against counts them itself
    if damaged:  # an altered weights/history file, a broken JSON: the archive is not what it was
        typer.echo(f"{damaged} archived record(s) do not read (damaged or altered since written; named in the "
                   "warnings above): the archive does not verify")
    if bad or damaged:
        raise typer.Exit(1)


@app.command(cls=opt.Command)
@_guarded("nothing written")
def status(
    experiments: Optional[list[str]] = typer.Argument(
        None, help="default: the paper's experiments and every other one with records"),
    solver: SolverFilter = None,
    seeds: Optional[str] = typer.Option(None, "--seeds", help="expect these seeds, e.g. 0-2 for make extras "
                                        "(default: spec)"),
    check: bool = Flag(False, "--check", help="exit 1 when a listed run is missing"),
    one_numerics: bool = Flag(False, "--one-numerics", help="exit 1 unless the finished runs listed were all "
                              "made by one numerics id (make adopt-regen)"),
    summary: bool = Flag(False, "--summary", help="the totals only, not the table"),
    timing: bool = Flag(False, "--timing", help="the CPU-hours of the finished runs per experiment and solver"),
    pace_from: Optional[Path] = typer.Option(None, "--pace-from", parser=path_value,
                                             help="estimate cells with no finished run from this archive's "
                                             "times, scaled to this directory's pace (e.g. results/paper)"),
    out: Out = None,
    iterations: ShownIterations = None,
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """Seeds done and missing per (experiment, solver, size), their run time, and the time left."""
    from lysep_cli.reports.selection import load_selection, nothing_to_show
    from lysep_cli.reports.status import (archive_status, borrow_pace, files_size, mixed_numerics, render_status,
                                          render_timing)

    out = opt.in_dir(out, "timing.md" if timing else "status.md")
    chosen = opt.report_specs(config, experiments, results, out, iterations)
    wanted = opt.solver_filter(solver, chosen)
    expected = None if seeds is None else {s.name: specs.parse_seeds(seeds, s) for s in chosen}
    sel = load_selection(results, chosen, iterations, _warn)
    if not experiments:
        chosen = [s for s in chosen if s.table is not None or sel.of(s.name)]
    cells = archive_status(sel, chosen, wanted, results, expected)
    if not cells:
        raise nothing_to_show(results, chosen, sel)
    if timing:
        _emit(render_timing(cells), out)
        return
    borrowed = None
    if pace_from is not None:
        opt.readable_dir(pace_from, "--pace-from")
        other = archive_status(load_selection(pace_from, chosen, iterations, _warn), chosen, wanted, None, expected)
        borrowed = borrow_pace(cells, other, str(pace_from))
    paper = {s.name for s in chosen if s.table is not None}
    size = files_size(results, sorted({c.experiment for c in cells}), wanted)
    _emit(render_status(cells, sel.iterations, str(results), paper, summary, size, borrowed), out)
    mixed = mixed_numerics(cells) if one_numerics else None
    if mixed:
        _warn(f"--one-numerics: {mixed}: not an archive of one numerics id")
    if check and any(c.missing for c in cells) or mixed:
        raise typer.Exit(1)


@app.command(cls=opt.Command)
@_guarded("figures written so far are complete, the one in progress left no file")
def plot(
    experiments: list[str] = typer.Argument(..., help="experiment name(s)"),
    combined: bool = Flag(False, "--combined", help="also the experiments' accuracy against cost in one figure, "
                          "RESULTS/figures/accuracy-cost.{png,pdf}"),
    out: Optional[Path] = typer.Option(None, "--out", parser=path_value,
                                       help="output directory (default: RESULTS/EXPERIMENT/figures)"),
    iterations: ShownIterations = None,
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """The paper's figures for each EXPERIMENT (PNG and PDF), with accuracy against cost."""
    from lysep_cli.reports.plots import figure_dirs, plot_all, twins_of
    from lysep_cli.reports.selection import nothing_to_show

    chosen = opt.report_specs(config, experiments, results, out, iterations, out_is_dir=True)
    dirs = figure_dirs(results, [s.name for s in chosen], out)
    for d in dict.fromkeys(d for e, d in dirs.items() if e is not None or combined):
        opt.out_path(d, is_dir=True) if out is not None else opt.writable_dir(d, "--out")
    twins = twins_of(list(opt.load(config).values()), chosen)  # X-torch: series of their own in X's figure
    sel, _ = _shown(results, chosen + twins, iterations, named=True)
    if any(not sel.of(s.name) for s in chosen):  # before any figure is written
        raise nothing_to_show(results, [s for s in chosen if not sel.of(s.name)], sel)
    for path in plot_all(sel, dirs, results, combined):
        typer.echo(str(path))


study_app = typer.Typer(cls=opt.Group, no_args_is_help=True, help="Studies beyond the paper's tables.")
app.add_typer(study_app, name="study")


@study_app.command("step-size", cls=opt.Command)
@_guarded("the runs finished so far are in runs.csv")
def study_step_size(
    experiment: str = typer.Argument(..., help="experiment name"),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="e.g. 3x30,3x50 (default: spec)"),
    seeds: Optional[str] = typer.Option("0-4", "--seeds", help="e.g. 0-4"),
    taus: str = typer.Option("0,1e-10,1e-8,1e-6,1e-4,1e-2,1", "--taus", help="fixed step sizes, comma-separated"),
    iterations: int = typer.Option(200, "--iterations", parser=whole_number, help="sweeps per run"),
    out: Optional[Path] = typer.Option(None, "--out", parser=path_value,
                                       help="default: RESULTS/<experiment>/study-step-size"),
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """LySep as written (one fixed tau; tau = 0: closed-form updates only) beside per-block backtracking:
    final J, J_S, l2, hidden-layer movement, divergence.  Resumes: runs already in OUT/runs.csv are kept."""
    from lysep_cli.execution.runner import RunKey
    from lysep_cli.execution.sweep import check_runs
    from lysep_cli.reports.study import exclusive

    spec = specs.select_experiments(opt.load(config), [experiment])[0]
    if "lysep" not in spec.solvers:
        raise BadInput(f"{spec.name}: no lysep settings in the experiments file")
    size_list = specs.parse_sizes(sizes, spec, "lysep")
    seed_list = specs.parse_seeds(seeds, spec)
    specs.check_sizes(spec, ["lysep"], size_list)
    check_runs(spec, [RunKey("lysep", L, M, 0) for L, M in size_list])
    tau_list = opt.parse_taus(taus)
    specs.check_iterations(iterations)
    out_dir = out if out is not None else results / spec.name / "study-step-size"
    opt.writable_dir(out_dir, "--out" if out is not None else "--results")
    with exclusive(out_dir):
        _step_size_runs(spec, size_list, seed_list, tau_list, iterations, out_dir)


def _step_size_runs(spec: specs.ExperimentSpec, size_list: list[tuple[int, int]], seed_list: list[int],
                    tau_list: list[float], iterations: int, out_dir: Path) -> None:
    from lysep_cli.reports.study import (planned_runs, read_runs, run_key, step_size_study, write_runs,
                                         write_study)

    done = read_runs(out_dir / "runs.csv")
    total = len(planned_runs(size_list, seed_list, tau_list, iterations))
    count = [0]

    def tick(message: str) -> None:
        count[0] += 1
        _say(f"[{count[0]}/{total - skipped}] {message}")

    planned = {run_key(r) for r in planned_runs(size_list, seed_list, tau_list, iterations)}
    skipped = 0 if done is None else sum(run_key(r) in planned for r in done.to_dict("records"))
    if skipped:
        _say(f"{skipped} of {total} runs already in {out_dir / 'runs.csv'}: kept")
    df = step_size_study(spec, size_list, seed_list, tau_list, iterations, spec.solvers["lysep"], tick,
                         done=done, on_row=lambda table: write_runs(table, out_dir))
    for path in write_study(df, out_dir, spec.name):
        typer.echo(str(path))


@study_app.command("step-size-summary", cls=opt.Command)
@_guarded("nothing written")
def study_step_size_summary(
    experiments: list[str] = typer.Argument(..., help="experiment names"),
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """Per experiment and size, from RESULTS/<experiment>/study-step-size/runs.csv: the best fixed tau
    (LySep as written) beside tau = 0, our default rule and the paper (a Markdown table; runs nothing)."""
    from lysep_cli.reports.study import headline, read_runs

    chosen = specs.select_experiments(opt.load(config), experiments)
    typer.echo(headline({s.name: read_runs(results / s.name / "study-step-size" / "runs.csv") for s in chosen}),
               nl=False)


@study_app.command("poly-degree", cls=opt.Command)
@_guarded("nothing written")
def study_poly_degree(
    experiment: str = typer.Argument(..., help="experiment name"),
    out: Optional[Path] = typer.Option(None, "--out", parser=path_value,
                                       help="default: RESULTS/<experiment>/study-poly-degree"),
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """poly at degree k = 0, 1, ... until J stops falling or P passes n_train / 4: J, l2, held-out J, CPU
    seconds; the degree the held-out rule chooses (runs.csv, summary.md; seconds)."""
    from lysep_cli.reports.poly_degree import degree_study, write_study

    spec = specs.select_experiments(opt.load(config), [experiment])[0]
    out_dir = out if out is not None else results / spec.name / "study-poly-degree"
    opt.writable_dir(out_dir, "--out" if out is not None else "--results")
    for path in write_study(degree_study(spec, _say), out_dir, spec):
        typer.echo(str(path))


@study_app.command("poly-summary", cls=opt.Command)
@_guarded("nothing written")
def study_poly_summary(
    experiments: list[str] = typer.Argument(..., help="experiment names"),
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """How hard is each table: the paper's best LySep J and l2 beside the least polynomial degree that reaches
    them (RESULTS/<experiment>/study-poly-degree/runs.csv) and our PINN, LySep, rfls, rfm (runs nothing)."""
    from lysep_cli.reports.poly_degree import hardness, read_runs

    chosen = opt.report_specs(config, experiments, results, None, None)
    sel, shown = _shown(results, chosen, None, named=True)
    studies = {s.name: read_runs(results / s.name / "study-poly-degree" / "runs.csv") for s in shown}
    typer.echo(hardness(shown, sel, studies), nl=False)


@study_app.command("harder-summary", cls=opt.Command)
@_guarded("nothing written")
def study_harder_summary(
    out: Optional[Path] = typer.Option(None, "--out", parser=path_value,
                                       help="also write OUT/PROBLEM.md per problem and OUT/answer.md"),
    results: Path = typer.Option(Path("results/harder"), "--results", parser=path_value, help="the suite's records"),
    brief_: bool = typer.Option(False, "--brief", help="print one line per problem, both inits in one cell (README)"),
    pinn_step2: Optional[Path] = typer.Option(None, "--pinn-step2", parser=path_value,
                                              help="PINN-GD's reruns under the second step rule (records and their "
                                                   "experiments.yaml, e.g. results/harder-pinn-step2): verdict (a) "
                                                   "recomputed beside the first rule's"),
    config: Config = None,
) -> None:
    """The harder suite's answer from its records (docs/harder.md): per problem and init, does LySep beat PINN,
    rfm and poly at equal CPU, which solver is best; variable projection's picks (by held-out J) and whether it
    beats LySep, PINN-GD, pinn-lbfgs, rfm and poly at equal CPU; "not run yet" where a problem has no records."""
    from lysep_cli.reports import harder_varpro
    from lysep_cli.reports.harder_summary import (answer, brief, fixed_tau, gather, pinn_step2_addenda,
                                                  step2_pinn_cells, summarise)
    from lysep_cli.reports.held_out import HeldOut
    from lysep_cli.reports.selection import load_selection

    chosen = opt.report_specs(config or Path("results/harder/experiments.yaml"), None, results, None, None)
    step2 = None if pinn_step2 is None else opt.report_specs(pinn_step2 / "experiments.yaml", None, pinn_step2,
                                                             None, None)
    sel = load_selection(results, chosen, None, _warn)
    held = HeldOut(results, chosen)
    by_problem = gather(chosen, sel.of, held)
    try:
        saved = held.save()
    except OSError as e:
        _warn(f"{held.path}: not written ({e.strerror or e}); its held-out J values are recomputed next time")
    else:
        if saved is not None:
            _say(f"{saved} (held-out J of {len(held.values)} runs)")
    add = harder_varpro.addenda(by_problem, harder_varpro.coverage(chosen, sel.of))
    if step2 is None:
        add = add + pinn_step2_addenda(by_problem, None, "--pinn-step2 not given")
    else:
        pinn = step2_pinn_cells(chosen, sel.of, step2, load_selection(pinn_step2, step2, None, _warn).of)
        add = add + pinn_step2_addenda(by_problem, pinn, str(pinn_step2))
    taus = {n: fixed_tau(results / n / "study-step-size" / "runs.csv") for n in by_problem}
    if out is not None:
        opt.out_path(out, True)
        for path in summarise(by_problem, out, taus, add):
            _say(str(path))
    typer.echo(brief(by_problem, add) if brief_ else answer(by_problem, taus, add), nl=False)


@study_app.command("kappa", cls=opt.Command)
@_guarded("nothing written")
def study_kappa(
    families: Optional[list[str]] = typer.Argument(None, help="family names (default: every family of the file)"),
    out: Path = typer.Option(Path("results/harder"), "--out", parser=path_value,
                             help="writes OUT/study-kappa/kappa.csv, kappa.md and OUT/experiments.yaml"),
    also: Optional[list[str]] = typer.Option(None, "--also", help="also write this member (e.g. osc-ball-2d-k16) "
                                             "into OUT/experiments.yaml: another problem of the family, by hand"),
    config: Config = None,
) -> None:
    """Each family's kappa from the one-solve baselines alone: poly (largest degree) and rfm (held-out rule)
    at every kappa of its grid; the smallest kappa with poly's l2 >= 1e-2 (docs/harder.md).  Naming some
    families keeps the other families' rows of an earlier OUT/study-kappa/kappa.csv."""
    from lysep_cli.reports.kappa import also_members, kappa_study, merged, read_rows, write_study

    path = config if config is not None else specs.default_config()
    found, loaded = specs.load_families(path), opt.load(path)
    if not found:
        raise BadInput(f"{path}: no families: section (e.g. --config suites/harder.yaml)")
    unknown = [f for f in families or [] if f not in found]
    if unknown:
        raise BadInput(f"unknown family {unknown[0]!r} (choose from {', '.join(found)})")
    chosen = {k: v for k, v in found.items() if not families or k in families}
    specs.select_experiments(loaded, [f.member(k) for f in chosen.values() for k in f.kappas])
    opt.writable_dir(out, "--out")
    grid = {f.member(k) for f in found.values() for k in f.kappas}
    stray = [n for n in also or [] if n not in grid]
    if stray:  # before minutes of study
        raise BadInput(f"--also {stray[0]!r}: not a member of a family's grid (e.g. {next(iter(grid))})")
    df = merged(read_rows(out), kappa_study(chosen, loaded, _say), found)
    try:
        extra = also_members(also or [], found, df)
    except ValueError as e:
        raise BadInput(str(e)) from None
    command = f"lysep study kappa --config {path} --out {out}" + "".join(f" --also {n}" for n in also or [])
    for written in write_study(df, found, loaded, out, command, extra):
        typer.echo(str(written))


@study_app.command("pinn-step", cls=opt.Command)
@_guarded("the scan runs finished so far are in OUT/study-pinn-step/scan.csv")
def study_pinn_step(
    out: Path = typer.Option(Path("results/harder"), "--out", parser=path_value,
                             help="reads and rewrites OUT/experiments.yaml; writes OUT/study-pinn-step/"),
) -> None:
    """PINN's lr per experiment of OUT/experiments.yaml and per init (paper, torch), from training loss alone:
    a short scan of the decaying schedule; the lowest final J among the lr that did not diverge (docs/harder.md).
    Writes the scan, the choice and the experiments file with each experiment's -torch twin.  Resumes."""
    from lysep_cli.reports.pinn_step import NoStableStep, base_experiments, read_scan, scan, write_scan, write_study

    path = out / "experiments.yaml"
    if not path.is_file():
        raise BadInput(f"{path}: no such file (write it first: lysep study kappa --out {out})")
    loaded = opt.load(path)
    chosen = specs.select_experiments(loaded, [n for n in base_experiments(loaded) if "pinn" in loaded[n].solvers])
    opt.writable_dir(out, "--out")
    df = scan(chosen, read_scan(out), _say, on_row=lambda table: write_scan(table, out))
    try:
        written = write_study(df, chosen, out, f"lysep study pinn-step --out {out}")
    except NoStableStep as e:
        raise BadInput(str(e)) from None
    for p in written:
        typer.echo(str(p))


@study_app.command("budget", cls=opt.Command)
@_guarded("nothing written")
def study_budget(
    experiments: Experiments = None,
    sizes: Optional[str] = typer.Option(None, "--sizes", help="e.g. 3x30,3x50 instead of the spec's (iterative solvers)"),
    inits: int = typer.Option(2, "--inits", parser=whole_number, help="initialisations per seeded run"),
    budget: float = typer.Option(8.0, "--budget", parser=decimal_number, help="CPU hours"),
    fixed_taus: int = typer.Option(0, "--fixed-taus", parser=whole_number,
                                   help="add lysep study step-size with this many fixed tau at the smallest size "
                                   "(experiments at the paper's init)"),
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """What running EXPERIMENTS will cost, from the per-iteration rates of the records in --results (the
    archive): runs and CPU hours per solver (a Markdown table; runs nothing)."""
    from lysep_cli.reports.budget import archive_rates, estimate, fixed_tau_estimate, markdown, names_inits

    opt.positive(inits, "--inits")
    chosen = specs.select_experiments(opt.load(config), experiments)
    twins = [s.name for s in chosen if names_inits(s)]
    if inits > 1 and twins:
        raise BadInput(f"--inits {inits}: {twins[0]} sets its network solvers' init: the file lists each "
                       "initialisation as experiments of its own, so count every run once (--inits 1)")
    rates = archive_rates(records.load_records(results).records)
    rows = [r for s in chosen for r in estimate(s, rates, specs.parse_sizes(sizes, s) if sizes else None, inits)]
    rows += [fixed_tau_estimate(s, rates, fixed_taus) for s in chosen
             if fixed_taus and "lysep" in s.solvers and not names_inits(s)]
    typer.echo(markdown(rows, budget), nl=False)


@study_app.command("depth", cls=opt.Command)
@_guarded("nothing written")
def study_depth(
    experiment: str = typer.Argument(..., help="experiment name, e.g. elliptic-10d-depth"),
    out: Out = None,
    iterations: ShownIterations = None,
    results: Results = DEFAULT_RESULTS,
    config: Config = None,
) -> None:
    """What depth does, from the archived runs: J, l2, J after the first output solve, hidden-layer movement
    per layer, seconds per iteration, bound violations (nothing is rerun)."""
    from lysep_cli.reports.depth import depth_summary, render_depth_markdown

    out = opt.in_dir(out, f"{experiment}-study.md")
    chosen = opt.report_specs(config, [experiment], results, out, iterations)
    sel, _ = _shown(results, chosen, iterations, named=True)
    df = depth_summary(sel.of(experiment), chosen[0], results)
    _emit(render_depth_markdown(df, chosen[0], sel.iterations[experiment]), out)


def main() -> None:
    """The ``lysep`` program: SIGTERM handled like Ctrl-C, then the command line."""
    interrupts.install()
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
