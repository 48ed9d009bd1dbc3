"""The ``lysep`` command line: parse, call, print.

Bad input (spec file, experiment name, selectors, scheduler address) is reported as one line on stderr
with exit code 2, before anything is written.  Ctrl-C during ``lysep run`` keeps the finished runs and
exits 130 (143 for SIGTERM during a cluster sweep); runs that fail on a cluster make it exit 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn, Optional

import typer

from . import records, runner, specs
from .specs import ExperimentSpec, SpecError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Reproduce the LySep paper: run PINN/LySep experiments, tabulate, compare, plot.")

CONFIG_HELP = "experiments file (default: ./experiments.yaml, else the project's own)"
RESULTS_HELP = "results directory"


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"lysep: error: {message}", err=True)
    raise typer.Exit(code)


def _load(config: Optional[Path]) -> dict[str, ExperimentSpec]:
    return specs.load_specs(config if config is not None else specs.default_config())


def _format(fmt: str, allowed: tuple[str, ...]) -> str:
    if fmt not in allowed:
        raise SpecError(f"--format: unknown format {fmt!r} (choose from {', '.join(allowed)})")
    return fmt


def _emit(text: str, out: Optional[Path]) -> None:
    if out is None:
        typer.echo(text, nl=not text.endswith("\n"))
    else:
        records.write_text(out, text)
        typer.echo(f"wrote {out}", err=True)


def _seed_ranges(seeds: tuple[int, ...]) -> str:
    parts, start = [], None
    for i, s in enumerate(seeds):
        if start is None:
            start = s
        if i + 1 == len(seeds) or seeds[i + 1] != s + 1:
            parts.append(str(start) if start == s else f"{start}-{s}")
            start = None
    return ",".join(parts)


@app.command("list")
def list_(config: Optional[Path] = typer.Option(None, "--config", help=CONFIG_HELP)) -> None:
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
                   f"seeds {_seed_ranges(s.seeds)}")
        for name, settings in s.solvers.items():
            typer.echo(f"  {name}: {settings}")


@app.command()
def run(
    experiment: str = typer.Argument(..., help="experiment name (see `lysep list`)"),
    solver: Optional[str] = typer.Option(None, "--solver",
                                         help="pinn | lysep | paper (both; the default) | all | a,b,..."),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="e.g. 3x50,3x80 or 'smallest' (default: spec)"),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="e.g. 0-9 or 0,3,5 (default: spec)"),
    iterations: Optional[int] = typer.Option(None, "--iterations", help="default: spec"),
    force: bool = typer.Option(False, "--force", help="redo runs whose record exists"),
    jobs: int = typer.Option(1, "--jobs", help="worker processes"),
    results: Path = typer.Option(Path("results"), "--results", help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", help=CONFIG_HELP),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="dask scheduler tcp://HOST:PORT, local, local:N or none "
        "(default: $LYSEP_SCHEDULER); one task per run, see docs/cluster.md"),
    scheduler_file: Optional[Path] = typer.Option(None, "--scheduler-file",
                                                  help="dask scheduler file (JSON with the address)"),
    connect_timeout: float = typer.Option(10.0, "--connect-timeout", help="seconds to reach the scheduler"),
) -> None:
    """Run every (solver, size, seed) of EXPERIMENT; existing records are skipped."""
    from . import cluster
    from .solvers import get_solver

    try:
        spec = specs.select_experiments(_load(config), [experiment])[0]
        solvers = specs.parse_solvers(solver, spec)
        size_list = specs.parse_sizes(sizes, spec)
        seed_list = specs.parse_seeds(seeds, spec)
        if iterations is not None and iterations < 1:
            raise SpecError(f"--iterations must be >= 1, got {iterations}")
        if jobs < 1:
            raise SpecError(f"--jobs must be >= 1, got {jobs}")
        for name in solvers:
            try:
                get_solver(name)
            except (ImportError, AttributeError) as exc:
                raise SpecError(f"solver {name!r} is not available: {exc}") from None
        if connect_timeout <= 0:
            raise SpecError(f"--connect-timeout must be > 0, got {connect_timeout:g}")
        target = cluster.resolve_target(scheduler, scheduler_file)
    except (SpecError, cluster.ClusterError) as exc:
        _fail(str(exc))
    its = iterations if iterations is not None else spec.iterations
    plan = runner.plan_runs(spec, solvers, size_list, seed_list, its, results, force)
    session = None
    if target is not None and plan.todo:
        try:
            session = cluster.Session.open(target, timeout=connect_timeout)
        except cluster.ClusterError as exc:
            _fail(str(exc))
    where = f"scheduler {session.describe()}" if session is not None else f"jobs {jobs}"
    typer.echo(f"{spec.name}: {len(plan.todo)} run(s) to do, {len(plan.skipped)} skipped (record exists)"
               + (f", {len(plan.stale)} redone (record had other settings)" if plan.stale else "")
               + f"; {its} iterations, {where}, results in {results}/{spec.name}/", err=True)
    from .progress import RichReporter

    reporter = RichReporter(spec.name)
    failed: list[tuple[runner.RunKey, str]] = []
    try:
        new = runner.run_experiment(spec, plan.todo, its, results, jobs=jobs, reporter=reporter, cluster=session)
    except runner.RunsFailed as exc:
        new, failed = exc.done, exc.failed
    except KeyboardInterrupt as exc:
        typer.echo(f"\ninterrupted: {reporter.finished} finished run(s) kept, the run(s) in flight "
                   "left no file; rerun the same command to resume", err=True)
        raise typer.Exit(getattr(exc, "exit_code", 130))
    finally:
        if session is not None:
            session.close()
    typer.echo(f"\nsummary of {spec.name} ({len(new)} run(s) done now, {len(plan.skipped)} skipped as done "
               f"earlier, {len(failed)} failed):")
    for line in runner.summary_lines(new + plan.skipped):
        typer.echo("  " + line)
    if failed:
        for key, error in failed:
            typer.echo(f"  failed: {key.label()}: {error}")
        raise typer.Exit(1)


@app.command()
def table(
    experiments: Optional[list[str]] = typer.Argument(None, help="default: every experiment with records"),
    fmt: str = typer.Option("markdown", "--format", help="latex | markdown"),
    out: Optional[Path] = typer.Option(None, "--out", help="write here instead of stdout"),
    standalone: bool = typer.Option(False, "--standalone", help="LaTeX: a complete compilable document"),
    results: Path = typer.Option(Path("results"), "--results", help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", help=CONFIG_HELP),
) -> None:
    """The paper's tables (rows (L,M) x model) from the run records, with the published numbers."""
    from . import tables

    try:
        _format(fmt, ("latex", "markdown"))
        all_specs = _load(config)
        chosen = specs.select_experiments(all_specs, experiments)
    except SpecError as exc:
        _fail(str(exc))
    recs = records.load_records(results, [s.name for s in chosen])
    if not experiments:
        with_runs = {r["experiment"] for r in recs}
        chosen = [s for s in chosen if s.name in with_runs]
        if not chosen:
            _fail(f"no run records under {results}/ (run `lysep run EXPERIMENT` first)", code=1)
    _emit(tables.render_tables(recs, chosen, fmt, standalone=standalone), out)


@app.command()
def compare(
    experiments: Optional[list[str]] = typer.Argument(None, help="default: all"),
    fmt: str = typer.Option("markdown", "--format", help="markdown | latex"),
    out: Optional[Path] = typer.Option(None, "--out", help="write here instead of stdout"),
    results: Path = typer.Option(Path("results"), "--results", help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", help=CONFIG_HELP),
) -> None:
    """Our numbers beside the published ones, cell by cell, with ratios and a summary."""
    try:
        _format(fmt, ("markdown", "latex"))
        specs.select_experiments(_load(config), experiments)
    except SpecError as exc:
        _fail(str(exc))
    from .compare import render_comparison

    _emit(render_comparison(results, list(experiments) if experiments else None, fmt), out)


@app.command()
def plot(
    experiment: str = typer.Argument(..., help="experiment name"),
    out: Optional[Path] = typer.Option(None, "--out", help="output directory (default: under results)"),
    results: Path = typer.Option(Path("results"), "--results", help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", help=CONFIG_HELP),
) -> None:
    """The paper's figures for EXPERIMENT (PNG and PDF)."""
    try:
        specs.select_experiments(_load(config), [experiment])
    except SpecError as exc:
        _fail(str(exc))
    from .plots import plot_experiment

    try:
        paths = plot_experiment(results, experiment, out)
    except FileNotFoundError as exc:
        _fail(str(exc), code=1)
    for path in paths:
        typer.echo(str(path))


study_app = typer.Typer(no_args_is_help=True, help="Studies beyond the paper's tables.")
app.add_typer(study_app, name="study")


@study_app.command("step-size")
def study_step_size(
    experiment: str = typer.Argument(..., help="experiment name"),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="e.g. 3x50 (default: spec)"),
    seeds: Optional[str] = typer.Option("0-4", "--seeds", help="e.g. 0-4"),
    taus: str = typer.Option("0,1e-10,1e-8,1e-6,1e-4,1e-2,1", "--taus", help="fixed step sizes, comma-separated"),
    iterations: int = typer.Option(200, "--iterations", help="sweeps per run"),
    out: Optional[Path] = typer.Option(None, "--out", help="default: results/<experiment>/study-step-size"),
    results: Path = typer.Option(Path("results"), "--results", help=RESULTS_HELP),
    config: Optional[Path] = typer.Option(None, "--config", help=CONFIG_HELP),
) -> None:
    """LySep's final J and l2 against a fixed tau (tau = 0: closed-form updates only) and per-block backtracking."""
    try:
        spec = specs.select_experiments(_load(config), [experiment])[0]
        size_list = specs.parse_sizes(sizes, spec)
        seed_list = specs.parse_seeds(seeds, spec)
        try:
            tau_list = [float(t) for t in taus.split(",") if t.strip()]
        except ValueError:
            raise SpecError(f"--taus: expected comma-separated numbers, got {taus!r}") from None
        if not tau_list or any(t < 0 for t in tau_list):
            raise SpecError(f"--taus: need one or more values >= 0, got {taus!r}")
        if iterations < 1:
            raise SpecError(f"--iterations must be >= 1, got {iterations}")
        if "lysep" not in spec.solvers:
            raise SpecError(f"{spec.name}: no lysep settings in the experiments file")
    except SpecError as exc:
        _fail(str(exc))
    from .study import step_size_study, write_study

    total = len(size_list) * len(seed_list) * (len(tau_list) + 1)
    count = [0]

    def tick(message: str) -> None:
        count[0] += 1
        typer.echo(f"[{count[0]}/{total}] {message}", err=True)

    df = step_size_study(spec, size_list, seed_list, tau_list, iterations, spec.solvers["lysep"], tick)
    for path in write_study(df, out or results / spec.name / "study-step-size"):
        typer.echo(str(path))


def main() -> None:  # pragma: no cover - python -m lysep_cli.cli
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
