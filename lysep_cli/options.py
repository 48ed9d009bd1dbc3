"""The command line's inputs: the options every command shares, their parsers, and the checks of
paths, experiments and solver selections made before anything is read or written.

A bad value raises :class:`~lysep_cli.specs.BadInput` (or typer's BadParameter while parsing) with one
line naming the option: the command ends with exit code 2 and nothing written (lysep_cli/cli.py).
"""

from __future__ import annotations

import functools
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from lysep_cli import specs
from lysep_cli.specs import BadInput, ExperimentSpec

#: click's base exception class, found through typer (which may vendor click)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class _PlainHelpFlag:
    """``--help`` listed without a type (this typer shows ``<bool>`` for flags)."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class Command(_PlainHelpFlag, TyperCommand):
    pass


class Group(_PlainHelpFlag, TyperGroup):
    pass


class OneLineErrors(Group):
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


#: where every command reads and writes runs unless --results says otherwise: the committed archive
DEFAULT_RESULTS = Path("results/paper")

_WHOLE = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def whole_number(value: Any) -> int:
    """An integer option written the plain way, in the digits 0-9: ``int()`` also takes "1_0", other
    scripts' digits and surrounding blanks, so ``--jobs 1_0`` would silently be 10."""
    if isinstance(value, int):  # a default
        return value
    if not _WHOLE.fullmatch(str(value)):
        raise typer.BadParameter(f"{str(value)!r} is not a whole number written in the digits 0-9")
    return int(value)


def decimal_number(value: Any) -> float:
    """A number option written the plain way (digits 0-9, a point, an exponent; no "nan", "inf" or "1_0")."""
    if isinstance(value, float):  # a default
        return value
    if not DECIMAL.fullmatch(str(value)):
        raise typer.BadParameter(f"{str(value)!r} is not a number written in the digits 0-9")
    return float(value)


def path_value(value: Any) -> Path:
    """The value of a path option: an empty one is bad input (``Path("")`` would silently mean ".")."""
    if isinstance(value, Path):  # a default
        return value
    if str(value) == "":
        raise typer.BadParameter("empty path")
    if "\x00" in str(value):
        raise typer.BadParameter("embedded null byte")
    return Path(value)


# The options shared by several commands (typer reads the Annotated metadata).
Results = Annotated[Path, typer.Option("--results", parser=path_value,
                                       help="results directory (default: the committed archive)")]
Config = Annotated[Optional[Path], typer.Option(
    "--config", parser=path_value, help="experiments file (default: ./experiments.yaml, else the project's own)")]
ShownIterations = Annotated[Optional[int], typer.Option(
    "--iterations", parser=whole_number, help="show runs made with this many iterations (default: the spec's)")]
Out = Annotated[Optional[Path], typer.Option("--out", parser=path_value, help="write here instead of stdout")]
Experiments = Annotated[Optional[list[str]], typer.Argument(help="default: every experiment with records")]
SolverFilter = Annotated[Optional[str], typer.Option("--solver", help="only these solvers, e.g. lysep or pinn,rfls")]
Flag = functools.partial(typer.Option, metavar="")


def parse_taus(taus: str) -> list[float]:
    """``--taus 0,1e-8,1``: finite numbers >= 0 written in the digits 0-9 (no empty item, "nan", "1_0")."""
    items = [t.strip() for t in taus.split(",")]
    if not all(DECIMAL.fullmatch(t) for t in items):
        raise BadInput(f"--taus: expected comma-separated numbers in the digits 0-9, got {taus!r}")
    values = [float(t) for t in items]
    if any(not (t >= 0 and t != float("inf")) for t in values):
        raise BadInput(f"--taus: need one or more finite values >= 0, got {taus!r}")
    return values


def load(config: Optional[Path]) -> dict[str, ExperimentSpec]:
    return specs.load_specs(config if config is not None else specs.default_config())


def choice(value: str, allowed: tuple[str, ...], option: str = "--format") -> str:
    if value not in allowed:
        what = "format" if option == "--format" else "value"
        raise BadInput(f"{option}: unknown {what} {value!r} (choose from {', '.join(allowed)})")
    return value


def positive(value: Optional[int], option: str) -> None:
    if value is not None and value < 1:
        raise BadInput(f"{option} must be >= 1, got {value}")


def positive_finite(value: float, option: str) -> None:
    if not 0 < value < float("inf"):
        raise BadInput(f"{option} must be a finite number > 0, got {value:g}")


def solver_filter(solver: Optional[str], chosen: list[ExperimentSpec]) -> Optional[set[str]]:
    """The solver names of a report's ``--solver a,b`` (None: all); BadInput for a name that none of
    the chosen experiments configures."""
    if solver is None:
        return None
    wanted = {w.strip() for w in solver.split(",")}
    known = {name for spec in chosen for name in spec.solvers}
    unknown = sorted(wanted - known)
    if unknown:
        names = ", ".join(repr(u) for u in unknown)
        raise BadInput(f"--solver: unknown solver {names} (choose from {', '.join(sorted(known))})")
    return wanted


def cell_filter(text: str, chosen: list[ExperimentSpec]) -> set[tuple[str, int, int]]:
    """``--cells pinn:3x30,rfls:3x50`` as {(solver, L, M)}; BadInput for a malformed entry."""
    out = set()
    for part in text.split(","):
        name, _, size = part.strip().partition(":")
        L, _, M = size.partition("x")
        if not (name and L.isdigit() and M.isdigit()):
            raise BadInput(f"--cells: expected SOLVER:LxM[,...] (e.g. pinn:3x30), got {part.strip()!r}")
        solver_filter(name, chosen)
        out.add((name, int(L), int(M)))
    return out


def known_cells(cells: set[tuple[str, int, int]], records: list[Any], results: Path,
                warn: Optional[Callable[[str], None]] = None) -> None:
    """BadInput naming each ``--cells`` entry with no record among ``records`` (each with .solver, .L, .M)
    under ``results``, and the cells of that solver (else of every solver) that have records; with ``warn``
    (``--allow-partial``: a missing cell is reported, not failed) that line is a warning instead."""
    have = {(r.solver, r.L, r.M) for r in records}
    unknown = sorted(cells - have)
    if not unknown:
        return
    solvers = {name for name, _, _ in unknown}
    shown = sorted(c for c in have if c[0] in solvers) or sorted(have)
    names = ", ".join(f"{n}:{L}x{M}" for n, L, M in shown[:30]) + (", ..." if len(shown) > 30 else "")
    line = (f"--cells: no record of {', '.join(f'{n}:{L}x{M}' for n, L, M in unknown)} under {results} "
            f"(cells with records: {names or 'none'})")
    if warn is None:
        raise BadInput(line)
    warn(line)


def in_dir(out: Optional[Path], name: str) -> Optional[Path]:
    """``--out DIR`` (``.`` too) for a command that writes one file: the file ``name`` in that directory;
    any other value as given."""
    try:
        return out / name if out is not None and out.is_dir() else out
    except (OSError, ValueError):  # a path the OS refuses to look at: reported by the checks of the path
        return out


def same_numerics(results: Path, experiment: str) -> None:
    """``--same-numerics``: BadInput when a record of ``experiment`` under ``results`` names another
    numerics id than this code's (or none), unless that id is declared of the same bits
    (:data:`~lysep_cli.store.fingerprint.SAME_BITS_AS`): new runs would not give the archive's bits."""
    from lysep_cli.store.fingerprint import bits_of, numerics_id
    from lysep_cli.store.records import numerics_ids

    here = numerics_id()
    other = {i: n for i, n in numerics_ids(results, [experiment]).items() if bits_of(i) != bits_of(here)}
    if other:
        ids = ", ".join(f"{n} of numerics id {i}" for i, n in sorted(other.items()))
        raise BadInput(f"--same-numerics: {results}/{experiment}/ holds records made by other numerics ({ids}); "
                       f"this code is {here}")


def accepted_cells(text: str, chosen: list[ExperimentSpec]) -> set[tuple[str, str, int, int]]:
    """``--accept elliptic-2d-depth:pinn-lbfgs:4x50,...`` as {(experiment, solver, L, M)}; BadInput for a
    malformed entry or an experiment / solver not chosen."""
    names = {s.name: s for s in chosen}
    out = set()
    for part in text.split(","):
        fields = part.strip().split(":")
        L, _, M = fields[-1].partition("x") if len(fields) == 3 else ("", "", "")
        if not (len(fields) == 3 and L.isdigit() and M.isdigit()):
            raise BadInput("--accept: expected EXPERIMENT:SOLVER:LxM[,...] (e.g. elliptic-2d:pinn:3x30), "
                           f"got {part.strip()!r}")
        experiment, solver = fields[0], fields[1]
        if experiment not in names:
            raise BadInput(f"--accept: experiment {experiment!r} is not among those verified "
                           f"({', '.join(names)})")
        solver_filter(solver, [names[experiment]])
        out.add((experiment, solver, int(L), int(M)))
    return out


def report_specs(config: Optional[Path], experiments: Optional[list[str]], results: Path,
                 out: Optional[Path], iterations: Optional[int], out_is_dir: bool = False) -> list[ExperimentSpec]:
    """Checked inputs of a report command: the experiments asked for (all when none named)."""
    chosen = specs.select_experiments(load(config), experiments)
    positive(iterations, "--iterations")
    readable_dir(results, "--results")
    if out is not None:
        out_path(out, out_is_dir)
    return chosen


def _one_line_errors(check: Callable[[Path, str], Path]) -> Callable[[Path, str], Path]:
    """A path the OS refuses to look at (a NUL byte, a name too long, ...) is a BadInput too."""

    @functools.wraps(check)
    def wrapper(path: Path, option: str) -> Path:
        try:
            return check(path, option)
        except (OSError, ValueError) as exc:
            if isinstance(exc, BadInput):
                raise
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise BadInput(f"{option} {str(path)!r}: unusable path ({why})") from None

    return wrapper


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():  # a dangling link or a loop is in the way too
            return candidate
    return Path("/")


@_one_line_errors
def writable_dir(path: Path, option: str) -> Path:
    """``path`` is a directory this process can create files in, or one it can create."""
    if str(path) == "":
        raise BadInput(f"{option}: empty path")
    base = _nearest_existing(path)
    dangling = " (a symbolic link to nothing, or a loop)" if base.is_symlink() and not base.exists() else ""
    if base == path.absolute() and not base.is_dir():
        raise BadInput(f"{option} {path}: exists and is not a directory{dangling}")
    if not base.is_dir():
        raise BadInput(f"{option} {path}: cannot be created, {base} is not a directory{dangling}")
    if not os.access(base, os.W_OK | os.X_OK):
        raise BadInput(f"{option} {path}: no permission to write in {base}")
    _probe_write(base, path, option)
    return path


def _probe_write(base: Path, path: Path, option: str) -> None:
    """Create and remove an empty directory in ``base``: ``os.access`` says yes to root everywhere, and
    to anyone on a read-only or virtual file system (``/proc``), where the real write then fails."""
    try:
        probe = tempfile.mkdtemp(prefix=".lysep-probe-", dir=base)
    except OSError as exc:
        raise BadInput(f"{option} {path}: cannot write in {base} ({exc.strerror or exc})") from None
    os.rmdir(probe)


def not_a_regular_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (a symbolic link, whatever it points to, a
    directory, a FIFO, a device, a socket), else None: the atomic write renames its file over the path, so
    it would replace the link, the FIFO or the device node itself (as root, ``/dev/null`` too)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return None if stat.S_ISREG(mode) else next((what for test, what in kinds if test(mode)), "not a regular file")


@_one_line_errors
def writable_file(path: Path, option: str) -> Path:
    """``path`` can be written as a file: it is a regular file or nothing yet (:func:`not_a_regular_file`),
    and its directory exists or can be created.  Every option that names an output file is checked here
    (``--out`` of table, compare, status and study depth, ``--save-finals``)."""
    if str(path) in ("", "."):
        raise BadInput(f"{option}: empty path")
    what = not_a_regular_file(path)
    if what is not None:
        raise BadInput(f"{option} {path}: exists and is not a regular file ({what}): nothing written")
    writable_dir(path.parent, option)
    if path.exists() and not os.access(path, os.W_OK):
        raise BadInput(f"{option} {path}: no permission to write")
    return path


@_one_line_errors
def readable_dir(path: Path, option: str) -> Path:
    """``path`` is an existing directory this process can list."""
    if not path.exists():
        raise BadInput(f"{option} {path}: no such directory")
    if not path.is_dir():
        raise BadInput(f"{option} {path}: not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise BadInput(f"{option} {path}: no permission to read")
    return path


def out_path(out: Path, is_dir: bool = False, option: str = "--out") -> Path:
    """``--out`` (or ``option``): a file (or, ``is_dir``, a directory) that can be written in a directory that
    exists: lysep creates no directory above what it names (``--out /nonexistent/x.md`` is bad input)."""
    _existing_parent(out, option)
    return (writable_dir if is_dir else writable_file)(out, option)


@_one_line_errors
def _existing_parent(path: Path, option: str) -> Path:
    parent = path.absolute().parent
    if not parent.is_dir():
        raise BadInput(f"{option} {path}: directory {parent} does not exist (create it first)")
    return parent


def device(name: str, solvers: list[str], jobs: int, target: Any) -> str:
    """``--device``: cpu, or a stacked device (cpu-stacked, cuda; docs/gpu.md) for solvers it runs (stacked, or
    on the host; LySep with any of its settings), in this process (not with --jobs) or on dask workers
    (``target``).  It must run here, but for a scheduler's workers, which are checked when lysep connects
    (lysep_cli/execution/cluster.py); a LocalCluster's workers run here (``cuda``: one GPU each, round-robin:
    lysep_cli/execution/local_share.py)."""
    from lysep_cli.accel import backend

    if name == "cpu":
        return name
    if name not in backend.DEVICES:
        raise BadInput(f"--device {name}: choose from {', '.join(backend.DEVICES)}")
    from lysep_cli.solvers import SOLVERS, solver_def, stacks

    on_host = [s for s in SOLVERS if solver_def(s).capabilities.on_host]
    other = [s for s in solvers if not (stacks(s) or s in on_host)]
    if other:
        raise BadInput(f"--device {name} runs {', '.join(s for s in SOLVERS if stacks(s))} (stacked) and "
                       f"{', '.join(on_host)} (on the host), not {', '.join(other)}: choose "
                       "--solver among those, or --device cpu")
    if jobs > 1 and target is None:
        raise BadInput(f"--device {name} runs a cell's seeds in one stack in this process: drop --jobs (cells on "
                       "several workers: --scheduler, docs/gpu.md)")
    from lysep_cli.accel import lstsq

    try:
        lstsq.host_threads()
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if target is not None and target.address is not None:
        return name  # the workers' device is checked when lysep connects to them
    try:
        backend.resolve(name)
    except backend.DeviceUnavailable as exc:
        raise BadInput(str(exc)) from None
    return name
