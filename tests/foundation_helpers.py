"""Shared tiny configs, stub solvers and synthetic run records for the tests."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from lysep_cli.store import records
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.network import init_params
from lysep_cli.store.schema import Final, RunRecord, jsonable
from lysep_cli.solvers.base import SolveResult, copy_params, diverged
from lysep_cli.solvers.settings import NoSettings

Settings = NoSettings  # the settings of the stub solvers below (the registry reads module.Settings)

PINN = "{lr: 1.0e-3, lr_final: 1.0e-4}"
LYSEP = "{step_rule: backtracking, tau: 1.0e-8, weights: frozen, w3_b3: separate}"


def experiment_yaml(name: str, solvers: dict[str, str], *, table: int | None = None, pde: str = "elliptic",
                    d: int = 2, solution: str | None = "exp-sin", sizes: list = ([3, 6],), n_train: int = 60,
                    n_test: int = 40, iterations: int = 5, seeds: list = (0, 1)) -> str:
    """One experiment of an experiments file (tiny by default: seconds per run); ``solvers`` maps a
    solver to its settings written as a YAML flow mapping.  The one place the tests write experiments."""
    lines = [f"  {name}:"] + ([f"    table: {table}"] if table is not None else [])
    lines += [f"    pde: {pde}", f"    d: {d}"] + ([f"    solution: {solution}"] if solution else [])
    lines += [f"    sizes: {[list(s) for s in sizes]}", f"    n_train: {n_train}", f"    n_test: {n_test}",
              f"    iterations: {iterations}", f"    seeds: {list(seeds)}", "    solvers:"]
    lines += [f"      {solver}: {settings}" for solver, settings in solvers.items()]
    return "\n".join(lines) + "\n"


def experiments_yaml(*experiments: str) -> str:
    """An experiments file of the :func:`experiment_yaml` blocks."""
    return "experiments:\n" + "".join(experiments)


TINY_YAML = experiments_yaml(
    experiment_yaml("elliptic-2d", {"pinn": PINN}, table=1, sizes=[[3, 6], [2, 5]]),
    experiment_yaml("parabolic-5d", {"pinn": "{lr: 1.0e-3}"}, table=3, pde="parabolic", solution=None,
                    sizes=[[3, 5]], n_train=50, n_test=30))


def untimed(record: dict) -> dict:
    """A record's JSON without its timings (``seconds``, ``diagnostics.cpu_seconds``) and its seal (a hash
    over them too): what a rerun repeats."""
    out = {k: v for k, v in record.items() if k not in ("seconds", "seal")}
    if isinstance(out.get("diagnostics"), dict):
        out["diagnostics"] = {k: v for k, v in out["diagnostics"].items() if k != "cpu_seconds"}
    return out


#: diagnostics that time a run: they differ between a resumed run and an uninterrupted one
RESUME_TIMING = ("seconds_per_iteration", "resumed_at_sweeps", "seconds_before_resume")


def resumable_part(record: dict) -> dict:
    """What a resumed run's record must share with the uninterrupted run's: all but the timings."""
    out = untimed(record)
    return {**out, "diagnostics": {k: v for k, v in out["diagnostics"].items() if k not in RESUME_TIMING}}


def tiny_lysep_yaml(iterations: int, seeds: str) -> str:
    """Experiment ``tiny``: LySep on a 2-D elliptic problem at (3,6), seconds per run."""
    return experiments_yaml(experiment_yaml("tiny", {"lysep": LYSEP}, iterations=iterations,
                                            seeds=[int(x) for x in seeds.split(",")]))


def tiny_lysep_run(config: Path, results: Path, env: dict, *extra: str) -> subprocess.Popen:
    """``lysep run tiny --solver lysep`` in a subprocess (SIGINT as in a terminal)."""
    cmd = [sys.executable, "-m", "lysep_cli.cli", "run", "tiny", "--solver", "lysep", "--config", str(config),
           "--results", str(results), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=default_sigint)


def default_sigint() -> None:
    """``preexec_fn`` of the tests' child processes: take SIGINT like a foreground job in a terminal, even
    when the test run itself was started in the background (which makes SIGINT inherited as ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_tiny(tmp_path: Path, text: str = TINY_YAML) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


def files_under(root: Path) -> list[str]:
    """Every file below ``root`` as a sorted list of relative paths (temp files included)."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def snapshot(root: Path) -> dict[str, bytes]:
    """relative path -> content of every file below ``root`` (to check that nothing was written)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------------
# Stub solvers (registered by the tests under names "stub-...": module foundation_helpers, Settings above).

def raising_solver(problem, data, params0, settings, iterations, progress=None):
    """A solver that hits a floating-point error."""
    raise FloatingPointError("overflow in a stub")


def crashing_solver(problem, data, params0, settings, iterations, progress=None):
    """A solver with a bug."""
    raise RuntimeError("a bug in a stub")


def bounded_solver(problem, data, params0, settings, iterations, progress=None):
    """A LySep-like stub: returns J_S, a bound check and a diagnostic."""
    history = [1.0] * (iterations + 1)
    return SolveResult(copy_params(params0), {"J": history, "J_S": [0.5] * (iterations + 1)}, J_S=0.5,
                       bound={"factor": 84.0, "violations": 2}, diagnostics={"cond": np.float64(3.0)})


def nonfinite_solver(problem, data, params0, settings, iterations, progress=None):
    """Claims success but returns a NaN network."""
    params = copy_params(params0)
    params[-1][0][...] = np.nan
    return SolveResult(params, {"J": [1.0] * (iterations + 1)})


def diverging_solver(problem, data, params0, settings, iterations, progress=None):
    """Diverges after two iterations."""
    return diverged(copy_params(params0), {"J": [3.0, 2.0, math.nan]}, 2)


# ---------------------------------------------------------------------------------------------
# Synthetic records.

def synthetic_record(spec, solver: str, L: int, M: int, seed: int, *, J: float | None, l2: float | None,
                     J_S: float | None = None, iterations: int | None = None, status: str = "ok",
                     history: dict[str, Any] | None = None, bound: dict[str, Any] | None = None,
                     seconds: float = 1.0, **changes: Any) -> tuple[RunRecord, list]:
    """A valid record of ``spec`` (its settings, n_train, n_test, data set) with the given numbers, and
    the network whose weights it names (the seeded initial network)."""
    its = spec.iterations if iterations is None else iterations
    params = init_params(experiment_data(spec).problem.n_in, L, M, seed)
    if history is None:
        k = np.arange(its + 1)
        end = J if J is not None else 1.0
        series = list(end * 10.0 ** (3 * (1 - k / its)))
        history = {"J": series, "J_S": None if J_S is None else [x / 2 for x in series[:-1]] + [J_S]}
    history = {k: None if v is None else [None if (x is None or not math.isfinite(x)) else float(x) for x in v]
               for k, v in history.items()}
    rec = RunRecord(
        experiment=spec.name, solver=solver, L=L, M=M, seed=seed, iterations=its,
        settings=jsonable(spec.solvers[solver].to_dict()), pde=spec.pde, d=spec.d, solution=spec.solution,
        n_train=spec.n_train, n_test=spec.n_test, data_sha256=experiment_data(spec).sha256,
        weights_sha256=records.sha256(records.run_npz_bytes(params, history)), status=status, message="",
        iterations_done=len(history["J"]) - 1, diverged_at=None if status == "ok" else len(history["J"]) - 1,
        seconds=seconds, final=Final(J, J_S, l2), bound=bound, history=history)
    if "history" in changes:
        changes["weights_sha256"] = records.sha256(records.run_npz_bytes(params, changes["history"]))
    return (rec.with_(**changes) if changes else rec), params


def store(root: Path, record: RunRecord, params: list) -> RunRecord:
    """Write ``record`` and its weights under ``root`` (the records layout)."""
    records.write_record(root, record, params)
    return record


# Processes (from /proc).

def children(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] not in ("Z", "X"):
                parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        found += kids
        frontier += kids
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def on_archive_platform() -> bool:
    """Whether this machine gives the archive's bits: every key of EXACT_KEYS of its fingerprint equal to
    the archived records' (the numerics id through the declared SAME_BITS_AS chain; docs/reproducibility.md).
    Elsewhere (CI may get another CPU, NumPy or BLAS kernel) only agreement within round-off is promised."""
    from lysep_cli.store.fingerprint import fingerprint, same_platform

    made = records.read_record(Path(__file__).resolve().parents[1] / "results" / "paper" / "elliptic-2d" / "pinn"
                               / "L3-M30" / "seed-0.json")
    return same_platform(made.versions, fingerprint())


def one_error_line(result, code: int = 2) -> str:
    """The one line a refused command prints (a typer CliRunner result): exit ``code``, no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lysep: error:"), result.stderr
    return lines[0]
