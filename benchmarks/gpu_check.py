"""The GPU check of issues 40 and 46: the stacked engine on one GPU, measured and checked in one run (<= 320 s).

    bash benchmarks/gpu_check.sh                    # on a machine with CuPy and an NVIDIA GPU
    python benchmarks/gpu_check.py --smoke --out DIR   # anywhere: tiny sizes, xp = numpy (cpu-stacked)
    python benchmarks/gpu_check.py --stand-in 3 --out DIR  # no GPU: benchmarks/stand_in.py's device, 3x slower
    python benchmarks/gpu_check.py --cpu-ratio elliptic-2d:3x30:lysep --seeds 10 --iterations 10   # CPU only

Sections, run in the order of what matters most, each within its own time limit and what is left of
``--budget`` (a section past its limit is stopped with a line saying so, what it wrote stays; one with no
time left says so; each written to OUT.md as it goes, the figures also to OUT.json):

1. the device: GPU model, CUDA, CuPy, NumPy.
2. exactness on the device (60 s): sigma's CUDA kernel against the CPU's bits; a seed alone, in a stack of
   10 and in the reversed stack; a stacked seed against the CPU engine (largest relative difference of J;
   every difference as max |delta|, ulps and the count of differing values, accel/compare.py).
3a. (30 s) the whole cell's stack rate over 5 early sweeps and their trials per sweep.
4. (150 s) one whole cell end to end with ``lysep run --device``: elliptic-10d (3,150) LySep, 10 seeds x 2000
   sweeps, fewer if they would not fit (sized from 3a's rate scaled by the archive's trials per sweep over
   3a's: said so), records into a scratch results directory, then ``lysep verify --against`` the archive.
3. (60 s) s/iteration (PINN) and s/sweep (LySep) for every paper (cell, solver) pair, 10 seeds stacked,
   beside the archive's CPU rate; rfls and rfm run on the host (the CPU engine).
6. the full sweep (every paper cell, 10 seeds, 2000 iterations) from section 3's rates, LySep's also scaled
   by the whole cell's measured full-run/early ratio and by the archive's trials per sweep.
5. (40 s) the PyTorch peer: autograd PINN-GD, float64, the same 10 seeds stacked, s/iteration per cell.
3c. (30 s) LySep's trial batch k = 1 against the device's default: s/sweep, and the bits' difference.
3b. (30 s) a LySep sweep's time split for each W_L solve (accel/lstsq.py): QR, copy, host solves.
7. (20 s) what a launch, a sync and an upload cost; the fused kernels against their unfused operations.
2b. (30 s) LySep settings of our own on the device; 8. (60 s) k stacks side by side; 3d. (30 s) the CPU
   engine here, one seed, beside section 3.

``--smoke`` does all of it on NumPy with a tiny experiments file (the test's: tests/test_stacked.py runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # lysep need not be installed

import lysep_cli  # noqa: E402,F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from lysep_cli.accel import backend as backends  # noqa: E402
from lysep_cli.store.fingerprint import stacked_numerics_id  # noqa: E402
from lysep_cli.accel import compare  # noqa: E402
from lysep_cli.numerics import sigma  # noqa: E402
from lysep_cli.solvers.pinn import solve_seeds as solve_stacked  # noqa: E402
from lysep_cli.numerics import network  # noqa: E402
from lysep_cli.numerics.dataset import experiment_data  # noqa: E402
from lysep_cli.numerics.sincos import sincos  # noqa: E402
from lysep_cli.accel import lstsq  # noqa: E402
from lysep_cli.numerics import lstsq as nlstsq  # noqa: E402
from lysep_cli.accel import trials  # noqa: E402
from lysep_cli.solvers.lysep import algorithm as stacked_lysep  # noqa: E402
from lysep_cli.solvers.lysep.loss import LySepData  # noqa: E402
from lysep_cli.solvers import pinn  # noqa: E402
from lysep_cli.solvers.lysep import algorithm  # noqa: E402
from lysep_cli.specs import ExperimentSpec, load_specs  # noqa: E402
from lysep_cli.store import records  # noqa: E402

#: the subprocesses (lysep run, lysep verify) import this checkout's lysep_cli
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
PAPER = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")
SMOKE_YAML = """experiments:
  elliptic-2d:
    table: 1
    pde: elliptic
    d: 2
    solution: exp-sin
    sizes: [[3, 6], [3, 8]]
    n_train: 60
    n_test: 40
    iterations: 6
    seeds: [0, 1, 2]
    solvers:
      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}
      lysep: {tau: 1.0e-8}
"""


class Report:
    """Markdown lines to OUT.md (rewritten after each section) and figures to OUT.json."""

    def __init__(self, out: Path):
        self.out, self.lines, self.figures = out, [], {}
        out.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def flush(self) -> None:
        self.out.with_suffix(".md").write_text("\n".join(self.lines) + "\n")
        self.out.with_suffix(".json").write_text(json.dumps(self.figures, indent=1, default=str) + "\n")


class SectionTimeout(BaseException):
    """A section's time limit passed (raised by SIGALRM in the main thread; a BaseException, so that no
    ``except Exception`` on the way swallows it)."""


class Budget:
    """The script's time: ``total`` seconds from its start; each section gets its own limit within what is left."""

    def __init__(self, total: float):
        self.total, self.end = total, time.perf_counter() + total

    def left(self) -> float:
        return self.end - time.perf_counter()


def _alarm(signum: int, frame: Any) -> None:
    raise SectionTimeout


def section(out: Report, budget: Budget | None, title: str, limit: float, run: Callable[..., Any], *args: Any,
            needs: float = 5.0) -> bool:
    """Run one section within ``limit`` seconds (and what is left of ``budget``): what it wrote as it went stays
    in the report; past its limit it is stopped with a line saying so, an error is written into the report
    (its traceback's end), a section with less than ``needs`` seconds left is not run (a line says so), and
    the next section still runs, so one failure or slow section does not cost the GPU session the rest.
    Returns False only for an error."""
    allowed = limit if budget is None else min(limit, budget.left())
    if allowed < needs:
        out(f"## {title}: not run ({max(allowed, 0.0):.0f} s of the budget left, it needs ~{needs:.0f} s)\n")
        out.figures.setdefault("not_run", []).append(title)
        out.flush()
        return True
    t = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, allowed)
    try:
        run(*args)
        return True
    except SectionTimeout:
        out(f"\n**{title}: stopped at its time limit of {allowed:.0f} s** (what it wrote above stands; the rest "
            "of it was not measured)\n")
        out.figures.setdefault("stopped_at_limit", []).append(title)
        return True
    except Exception:
        out("**section failed:**\n```\n" + traceback.format_exc()[-3000:] + "```\n")
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        out.figures.setdefault("section_seconds", {})[title] = time.perf_counter() - t
        out.flush()


def synced(be: backends.Backend) -> Callable[[], None]:
    """A function that waits for the device's queued work (nothing to wait for on NumPy)."""
    return (lambda: be.xp.cuda.Device().synchronize()) if hasattr(be.xp, "cuda") else (lambda: None)


def solve_stack(be: backends.Backend, spec: ExperimentSpec, solver: str, params0: list, iterations: int,
                w_solve: str | None = None, w_workers: int | None = None, trial_batch: int | None = None) -> list:
    """One stack of ``params0`` trained by the stacked ``solver`` (pinn or lysep) with the spec's settings
    (LySep: its W_L least squares by ``w_solve`` on ``w_workers`` host threads, its backtracking trials
    ``trial_batch`` at once; the device's defaults where None)."""
    problem, _, _, train, _ = experiment_data(spec)
    if solver == "lysep":
        return stacked_lysep.solve_seeds(be, problem, train, params0, spec.solvers["lysep"], iterations,
                                           sync_every=iterations, w_solve=w_solve, w_workers=w_workers,
                                           trial_batch=trial_batch)
    return solve_stacked(be, problem, train, params0, spec.solvers["pinn"], iterations, sync_every=iterations)


def solve_cpu(spec: ExperimentSpec, solver: str, params0: list, iterations: int):
    problem, _, _, train, _ = experiment_data(spec)
    module = algorithm if solver == "lysep" else pinn
    return module.solve(problem, train, params0, spec.solvers[solver], iterations)


def stack_timing(be: backends.Backend, spec: ExperimentSpec, solver: str, L: int, M: int, seeds: list[int],
                 iterations: int, w_solve: str | None = None, w_workers: int | None = None) -> tuple[float, float | None]:
    """(seconds per iteration of one stack of ``seeds`` after one warm-up run of 2 iterations, LySep's largest
    trials per sweep over its seeds in the timed run (None for PINN))."""
    params0 = [network.init_params(experiment_data(spec).problem.n_in, L, M, s) for s in seeds]
    wait = synced(be)
    solve_stack(be, spec, solver, params0, 2, w_solve, w_workers)
    wait()
    t = time.perf_counter()
    res = solve_stack(be, spec, solver, params0, iterations, w_solve, w_workers)
    wait()
    trials = max((r.diagnostics["trials"] / max(1, len(r.history["J"]) - 1) for r in res
                  if r.diagnostics and "trials" in r.diagnostics), default=None)
    return (time.perf_counter() - t) / iterations, trials


def stack_rate(be: backends.Backend, spec: ExperimentSpec, solver: str, L: int, M: int, seeds: list[int],
               iterations: int, w_solve: str | None = None, w_workers: int | None = None) -> float:
    """Seconds per iteration of one stack of ``seeds`` (after one warm-up run of 2 iterations)."""
    return stack_timing(be, spec, solver, L, M, seeds, iterations, w_solve, w_workers)[0]


def cpu_rate(spec: ExperimentSpec, solver: str, L: int, M: int, seeds: list[int], iterations: int) -> float:
    """Seconds per iteration of the CPU engine, the seeds one after the other (summed), one BLAS thread."""
    total = 0.0
    for s in seeds:
        params0 = network.init_params(experiment_data(spec).problem.n_in, L, M, s)
        t = time.perf_counter()
        solve_cpu(spec, solver, params0, iterations)
        total += time.perf_counter() - t
    return total / iterations


#: the archive's digest for a machine that gets the repository without results/paper (a lent GPU machine
#: takes a working tree of at most 64 MiB; the archive alone is 68 MB): its finals, as `lysep verify
#: --save-finals` writes them (for `--against`), and its CPU seconds per iteration per (cell, solver)
DIGEST_FINALS = ROOT / "benchmarks/results/gpu_check_paper_finals.csv"
DIGEST_RATES = ROOT / "benchmarks/results/gpu_check_paper_rates.json"
#: and its LySep trials per sweep per cell (the largest over a cell's seeds: a stack tries while any seed does)
DIGEST_TRIALS = ROOT / "benchmarks/results/gpu_check_paper_trials.json"


def write_digest(results: Path) -> None:
    """``--digest``: the two digest files from the archive ``results`` (run where the archive is)."""
    subprocess.run([sys.executable, "-m", "lysep_cli.cli", "verify", *PAPER, "--results", str(results),
                    "--save-finals", str(DIGEST_FINALS)], check=True, cwd=ROOT, env=ENV)
    rates = archive_rates(results, list(PAPER))
    DIGEST_RATES.write_text(json.dumps({"|".join(map(str, k)): v for k, v in sorted(rates.items())}, indent=1) + "\n")
    write_trials_digest(results)
    print(f"wrote {DIGEST_FINALS}, {DIGEST_RATES} ({len(rates)} (cell, solver) pairs) and {DIGEST_TRIALS}")


def write_trials_digest(results: Path) -> None:
    """``--digest`` (also alone: ``--digest-trials``): the archive's LySep trials per sweep per cell."""
    trials = archive_trials(results, list(PAPER))
    DIGEST_TRIALS.write_text(json.dumps({"|".join(map(str, k)): v for k, v in sorted(trials.items())}, indent=1) + "\n")


def archive_trials(results: Path, names: list[str]) -> dict[tuple[str, int, int], float]:
    """(experiment, L, M) -> the largest over the cell's seeds of a LySep record's backtracking trials per sweep
    (diagnostics.trials / iterations done) in the archive ``results``; from the digest when it is not here."""
    if not results.is_dir():
        if results == ROOT / "results/paper" and DIGEST_TRIALS.is_file():
            return {(e, int(L), int(M)): v for key, v in json.loads(DIGEST_TRIALS.read_text()).items()
                    for e, L, M in [key.split("|")]}
        return {}
    out: dict[tuple[str, int, int], float] = {}
    for r in records.load_records(results, names).records:
        if r.solver == "lysep" and r.diagnostics and "trials" in r.diagnostics:
            per = r.diagnostics["trials"] / max(1, r.iterations_done or r.iterations)
            out[(r.experiment, r.L, r.M)] = max(out.get((r.experiment, r.L, r.M), 0.0), per)
    return out


def archive_rates(results: Path, names: list[str]) -> dict[tuple[str, str, int, int], float]:
    """(experiment, solver, L, M) -> the archive's mean seconds per iteration of one run (its machine's CPU);
    from the digest when ``results`` is not here."""
    if not results.is_dir():
        if results == ROOT / "results/paper" and DIGEST_RATES.is_file():
            return {(e, so, int(L), int(M)): v for key, v in json.loads(DIGEST_RATES.read_text()).items()
                    for e, so, L, M in [key.split("|")]}
        return {}
    out: dict[tuple[str, str, int, int], list[float]] = {}
    for r in records.load_records(results, names).records:
        if r.status == "ok" and r.iterations:
            out.setdefault((r.experiment, r.solver, r.L, r.M), []).append(r.seconds / r.iterations)
    return {k: float(np.mean(v)) for k, v in out.items()}


def same(a, b) -> bool:
    return (all(np.array_equal(a.history[k], b.history[k], equal_nan=True) for k in a.history)
            and all(np.array_equal(x, y) for (Wa, ba), (Wb, bb) in zip(a.params, b.params) for x, y in ((Wa, Wb), (ba, bb))))


def check_exactness(be: backends.Backend, spec: ExperimentSpec, M: int, out: Report, smoke: bool) -> None:
    out("## 2. Exactness on the device\n")
    rng = np.random.default_rng(0)
    n = 10_000 if smoke else 2_000_000
    x = np.concatenate([rng.uniform(-1e5, 1e5, n // 2), rng.normal(0.0, 3.0, n // 2)])
    s, c = sigma.sincos(be.xp, be.asarray(x))
    ref_s, ref_c = sincos(x)
    bad = int(np.count_nonzero(be.host(s) != ref_s) + np.count_nonzero(be.host(c) != ref_c))
    out(f"- sigma: {x.size} arguments, sin and cos values differing from the CPU's bits: **{bad}**")
    out.figures["exact"] = {"sigma_differing": bad}
    params0 = [network.init_params(experiment_data(spec).problem.n_in, 3, M, s) for s in range(10)]
    for solver, it in (("pinn", 5 if smoke else 50), ("lysep", 3 if smoke else 10)):
        ten = solve_stack(be, spec, solver, params0, it)
        alone = solve_stack(be, spec, solver, [params0[3]], it)[0]
        rev = solve_stack(be, spec, solver, params0[::-1], it)
        d_alone, d_rev = compare.results(alone, ten[3]), compare.results(rev[6], ten[3])
        order = d_alone["differing"] == 0 and d_rev["differing"] == 0
        with threadpool_limits(limits=1):
            cpu = [solve_cpu(spec, solver, params0[s], it) for s in (0, 3)]
        rel = max(float(np.max(np.abs(np.subtract(ten[s].history["J"], c.history["J"])) / np.abs(c.history["J"])))
                  for s, c in zip((0, 3), cpu))
        d_cpu = compare.many([ten[0], ten[3]], cpu)
        identical = d_cpu["differing"] == 0
        out(f"- {spec.name} (3,{M}) {solver}, {it} iterations: seed 3 alone == in a stack of 10 == in the "
            f"reversed stack, bit for bit: **{order}** (alone against the stack: {compare.line(d_alone)}; "
            f"reversed: {compare.line(d_rev)}); seeds 0 and 3 against the CPU engine: largest relative "
            f"difference of J over the history **{rel:.2e}**, bit-identical: **{identical}** ({compare.line(d_cpu)})")
        out.figures["exact"][solver] = {"seed_order_independent": order, "max_rel_J_vs_cpu": rel,
                                        "bit_identical_to_cpu": identical, "alone_vs_stack": d_alone,
                                        "reversed_vs_stack": d_rev, "vs_cpu": d_cpu}
        out.flush()
    out("")


#: LySep settings of our own (docs/lysep.md), checked and timed on the device beside the paper's (section 2b)
OWN_SETTINGS = {"w3_b3: joint": {"w3_b3": "joint"}, "weights: through": {"weights": "through"},
                "both": {"w3_b3": "joint", "weights": "through"}}


def own_settings(be: backends.Backend, spec: ExperimentSpec, M: int, out: Report, smoke: bool) -> None:
    """Section 2b: w3_b3 joint and weights through on the device (their CPU tests: tests/test_stacked_lysep.py):
    seed 3 alone against a stack of 10, bit for bit; seed 3 against the CPU engine (largest relative J
    difference); s/sweep of the stack of 10 against the paper's settings, the same cell."""
    out(f"## 2b. LySep settings of our own on the device, {spec.name} (3,{M}), 10 seeds stacked\n")
    out("| settings | alone == in the stack | max rel J vs CPU, seed 3 | s/sweep | / paper's settings |")
    out("|---|---|---:|---:|---:|")
    sweeps = 2 if smoke else 5
    params0 = [network.init_params(experiment_data(spec).problem.n_in, 3, M, s) for s in range(10)]
    base = stack_rate(be, spec, "lysep", 3, M, list(range(10)), sweeps)
    for name, change in OWN_SETTINGS.items():
        own = dataclasses.replace(spec, solvers={**spec.solvers, "lysep": dataclasses.replace(
            algorithm.Settings.coerce(spec.solvers["lysep"]), **change)})
        ten = solve_stack(be, own, "lysep", params0, sweeps)
        alone = solve_stack(be, own, "lysep", [params0[3]], sweeps)[0]
        with threadpool_limits(limits=1):
            cpu = solve_cpu(own, "lysep", params0[3], sweeps)
        rel = float(np.max(np.abs(np.subtract(ten[3].history["J"], cpu.history["J"])) / np.abs(cpu.history["J"])))
        rate = stack_rate(be, own, "lysep", 3, M, list(range(10)), sweeps)
        d_alone = compare.results(alone, ten[3])
        out(f"| {name} | **{d_alone['differing'] == 0}** ({compare.line(d_alone)}) | {rel:.2e} | {rate:.3e} | "
            f"{rate / base:.2f} |")
        out.flush()
        out.figures.setdefault("own_settings", {})[name] = {"seed_order_independent": d_alone["differing"] == 0,
                                                            "alone_vs_stack": d_alone,
                                                            "max_rel_J_vs_cpu": rel, "s_per_sweep": rate,
                                                            "over_paper_settings": rate / base}
    out("")


def per_cell(be: backends.Backend, specs: dict[str, ExperimentSpec], out: Report, its: dict[str, int],
             archive: dict, rates: dict, trials: dict) -> None:
    """Section 3: the device's s/iteration of every paper (cell, solver), 10 seeds stacked, into ``rates`` (and
    LySep's trials per sweep of those early sweeps into ``trials``) as each is measured, a row each."""
    out("## 3. s/iteration per (cell, solver), 10 seeds stacked\n")
    out("| cell | solver | device, stack of 10 (s/it) | per seed | trials/sweep (these sweeps) | archive CPU, 1 seed |")
    out("|---|---|---:|---:|---:|---:|")
    seeds = list(range(10))
    for spec in specs.values():
        for L, M in spec.sizes:
            for solver in ("pinn", "lysep"):
                t, tr = stack_timing(be, spec, solver, L, M, seeds, its[solver])
                rates[(spec.name, solver, L, M)] = t
                if tr is not None:
                    trials[(spec.name, L, M)] = tr
                a = archive.get((spec.name, solver, L, M))
                out(f"| {spec.name} ({L},{M}) | {solver} | {t:.3e} | {t / 10:.3e} | "
                    + (f"{tr:.1f}" if tr is not None else "-") + " | " + (f"{a:.3e} |" if a else "- |"))
                out.figures["stack_s_per_it"] = {f"{k[0]} ({k[2]},{k[3]}) {k[1]}": v for k, v in rates.items()}
                out.flush()
    out("\nrfls and rfm run on the host's CPU engine under any --device (one least-squares solve per run).\n")


def cpu_here(specs: dict[str, ExperimentSpec], out: Report, cpu_its: dict[str, int], rates: dict) -> None:
    """Section 3d: the CPU engine on this machine, one seed, one BLAS thread, beside section 3's device rates."""
    out("## 3d. The CPU engine here, 1 seed, 1 BLAS thread, beside the device's stack of 10\n")
    out("| cell | solver | CPU here (s/it) | device per seed (section 3) | CPU / device per seed |")
    out("|---|---|---:|---:|---:|")
    figures = out.figures.setdefault("cpu_here_s_per_it", {})
    for spec in specs.values():
        for L, M in spec.sizes:
            for solver in ("pinn", "lysep"):
                with threadpool_limits(limits=1):
                    c = cpu_rate(spec, solver, L, M, [0], cpu_its[solver])
                t = rates.get((spec.name, solver, L, M))
                figures[f"{spec.name} ({L},{M}) {solver}"] = c
                out(f"| {spec.name} ({L},{M}) | {solver} | {c:.3e} | " + (f"{t / 10:.3e} | {c / (t / 10):.1f}x |"
                                                                         if t else "- | - |"))
                out.flush()
    out("")


#: the W_L solves lysep_split times: (w_solve, host threads; None: the default, one per CPU up to the seeds)
W_SOLVE_MODES = (("host", 1), ("host", None), ("reduced", None))


def lysep_split(be: backends.Backend, cells: list[tuple[ExperimentSpec, int, int]], sweeps: int, out: Report,
                rounds: int = 1) -> None:
    """Where a stacked LySep sweep's time goes, for each W_L solve of W_SOLVE_MODES (accel/lstsq.py): a sweep
    of Algorithm 1 (LySepIteration.sweep, without the condition numbers; the PINN J of each sweep left
    out), the QR on the device ("reduced" only), the copy to the host (B (S, M, N), or R (S, M+1, M+1)) and
    the per-seed host solves, each timed apart (the device synchronised around each part); 10 seeds stacked
    from their initial networks, one sweep of warm-up, then ``sweeps`` sweeps per mode in each of ``rounds``
    alternating rounds (the stack's state goes on from sweep to sweep); the best round per figure.
    ``sweeps`` 0: the W_L solve alone, once per mode and round, on the state after the warm-up sweep, whose
    time is then the s/sweep column (for a CPU, where a sweep of the largest cell takes seconds)."""
    spent: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            synced(be)()
            t = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
                synced(be)()
                return result
            finally:
                spent.setdefault(name, []).append(time.perf_counter() - t)
        return wrapper

    from lysep_cli.solvers.lysep import updates  # solve_W3 calls numerics.lstsq.solve_all through its own name

    homes = {"to_host": lstsq, "reduce": lstsq, "solve_all": updates}
    originals = {name: getattr(home, name) for name, home in homes.items()}
    figures: dict[str, dict[str, float]] = {}
    out("## 3b. Where a LySep sweep's time goes: the W_L least squares, 10 seeds stacked, "
        + (f"{sweeps} sweep(s) per mode" if sweeps else "the W_L solve alone (s/sweep: the warm-up sweep)")
        + f", best of {rounds} round(s)\n")
    out("| cell | w_solve | host threads | s/sweep | QR on the device | copy to host | host solves | W_L share |")
    out("|---|---|---:|---:|---:|---:|---:|---:|")
    for spec, L, M in cells:
        problem, _, _, train, _ = experiment_data(spec)
        params0 = [network.init_params(problem.n_in, L, M, s) for s in range(10)]
        it = stacked_lysep.LySepIteration(params0, LySepData.build(train.Z, train.coef, train.Y).on(be),
                                          algorithm.Settings.coerce(spec.solvers["lysep"]), be)
        synced(be)()
        t = time.perf_counter()
        it.sweep(np.ones(10, dtype=bool), with_cond=False)  # warm-up (kernels, caches)
        synced(be)()
        reference = time.perf_counter() - t
        best: dict[tuple[str, int | None], dict[str, float]] = {}
        for _ in range(rounds):
            for mode, workers in W_SOLVE_MODES:
                it.w_solve, it.workers = mode, workers or lstsq.default_workers(10)
                spent.clear()
                for name, fn in originals.items():
                    setattr(homes[name], name, timed(name, fn))
                try:
                    synced(be)()
                    t = time.perf_counter()
                    for _ in range(sweeps):
                        it.sweep(np.ones(10, dtype=bool), with_cond=False)
                    if not sweeps:
                        it._solve_W3(np.ones(10, dtype=bool), with_cond=False)
                    synced(be)()
                    total = (time.perf_counter() - t) / sweeps if sweeps else reference
                finally:
                    for name, fn in originals.items():
                        setattr(homes[name], name, fn)
                per = {k: sum(v) / max(sweeps, 1) for k, v in spent.items()}  # one W_L solve a sweep
                got = {"sweep": total, "qr": per.get("reduce", 0.0),
                       "copy": per["to_host"] - per.get("reduce", 0.0), "solves": per["solve_all"]}
                old = best.setdefault((mode, workers), got)
                best[(mode, workers)] = {k: min(old[k], got[k]) for k in got}
        for (mode, workers), f in best.items():
            threads = workers or lstsq.default_workers(10)
            share = (f["qr"] + f["copy"] + f["solves"]) / f["sweep"]
            out(f"| {spec.name} ({L},{M}) | {mode} | {threads} | {f['sweep']:.3e} | "
                + (f"{f['qr']:.3e}" if mode == "reduced" else "-") + f" | {f['copy']:.3e} | {f['solves']:.3e} | "
                f"{100 * share:.0f} % |")
            figures[f"{spec.name} ({L},{M}) {mode} threads={threads}"] = {**f, "w_share": share}
        out.flush()
    out(f"\nThe per-cell and whole-cell sections use {be.device}'s default: w_solve "
        f"{lstsq.default_w_solve(be.xp)!r}.\n")
    out.figures["lysep_split"] = figures


def trial_batches(be: backends.Backend, cells: list[tuple[ExperimentSpec, int, int]], sweeps: int, rounds: int,
                  out: Report) -> None:
    """LySep's s/sweep with its backtracking trials one at a time (k = 1) against the device's default trial
    batch (accel/trials.py), 10 seeds stacked, ``sweeps`` sweeps from the initial networks after a warm-up
    run of 2, the two alternating in each of ``rounds`` rounds, the best round each; and whether the two
    give every seed the same bits (on NumPy they do, tests/test_stacked_lysep.py; on a device a batched
    product of k S matrices might take another kernel than one of S)."""
    default = trials.default_trial_batch(be.xp)
    k = default if default > 1 else 2  # NumPy's default is 1: there (--smoke) k = 2 against it
    out(f"## 3c. LySep's backtracking trials: k = 1 against k = {k} ({be.device}'s default: {default}), 10 seeds "
        f"stacked, {sweeps} sweeps, best of {rounds} rounds\n")
    out("| cell | s/sweep, k = 1 | s/sweep, k = " + str(k) + " | ratio | trials (seed 0) | histories and networks "
        "the same bits | largest relative difference of J, J_S |")
    out("|---|---:|---:|---:|---:|---|---:|")
    figures = {}
    wait = synced(be)
    for spec, L, M in cells:
        params0 = [network.init_params(experiment_data(spec).problem.n_in, L, M, s) for s in range(10)]
        best: dict[int, float] = {}
        res: dict[int, list] = {}
        for batch in (1, k):
            solve_stack(be, spec, "lysep", params0, 2, trial_batch=batch)  # warm-up (kernels, caches)
        for _ in range(rounds):
            for batch in (1, k):
                wait()
                t = time.perf_counter()
                res[batch] = solve_stack(be, spec, "lysep", params0, sweeps, trial_batch=batch)
                wait()
                best[batch] = min(best.get(batch, np.inf), (time.perf_counter() - t) / sweeps)
        diff = compare.many(res[1], res[k])
        bits = diff["differing"] == 0
        rel = max(float(np.max(np.abs(np.subtract(a.history[h], b.history[h])) / np.abs(a.history[h])))
                  for a, b in zip(res[1], res[k]) for h in ("J", "J_S"))
        out(f"| {spec.name} ({L},{M}) | {best[1]:.3e} | {best[k]:.3e} | {best[k] / best[1]:.2f} | "
            f"{res[1][0].diagnostics['trials']} | {'yes' if bits else 'NO'}: {compare.line(diff)} | {rel:.1e} |")
        figures[f"{spec.name} ({L},{M})"] = {"k": k, "s_per_sweep_k1": best[1], "s_per_sweep_default": best[k],
                                             "same_bits": bits, "max_rel_diff": rel, "difference": diff}
        out.flush()
    out("\nThe trial batch's choice: benchmarks/results/launch_count_trial_batch.md (counted launches, "
        "predicted); here, measured. Sweeps 1-" + str(sweeps) + " backtrack less than the archive's ~2 trials a "
        "block of later sweeps (the trials column, over all sweeps), so they understate the batch's gain.\n")
    out.figures["trial_batch"] = figures


def thread_capacity(n: int = 2) -> float:
    """This machine's parallel capacity for BLAS work on ``n`` threads: the serial time of n equal matmul
    loops over their time on n threads (n where n cores are free, 1 where the threads share one)."""
    a = np.random.default_rng(0).normal(size=(300, 300))

    def work() -> None:
        for _ in range(40):
            a @ a

    t = time.perf_counter()
    for _ in range(n):
        work()
    serial = time.perf_counter() - t
    with ThreadPoolExecutor(n) as pool:
        t = time.perf_counter()
        list(pool.map(lambda _: work(), range(n)))
        threaded = time.perf_counter() - t
    return serial / threaded


def gil_delay(fn: Callable[[], Any], seconds: float = 0.5) -> float:
    """The main thread's median wake-up delay after sleep(1 ms) while another thread calls ``fn`` in a loop:
    ~0.1 ms when ``fn`` releases the GIL, of the order of its call when it holds it."""
    done = threading.Event()

    def loop() -> None:
        t = time.perf_counter()
        while time.perf_counter() - t < seconds:
            fn()
        done.set()

    worker = threading.Thread(target=loop)
    worker.start()
    delays = []
    while not done.is_set():
        t = time.perf_counter()
        time.sleep(0.001)
        delays.append(time.perf_counter() - t - 0.001)
    worker.join()
    return float(np.median(delays))


def gelsy_gil(m: int, n: int, out: Report) -> None:
    """scipy.linalg.lstsq's gelsy against numerics.lstsq.gelsy on one random m x n system: time a call (best of
    5, alternating) and whether it holds the GIL (:func:`gil_delay`)."""
    rng = np.random.default_rng(0)
    A, c = rng.normal(size=(m, n)), rng.normal(size=m)
    ways = {"scipy.linalg.lstsq (f2py)": lambda: scipy.linalg.lstsq(A, c, lapack_driver="gelsy"),
            "numerics.lstsq.gelsy (ctypes)": lambda: nlstsq.gelsy(A, c, None)}
    best = {k: float("inf") for k in ways}
    for _ in range(5):
        for k, fn in ways.items():
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    for k, fn in ways.items():
        out(f"- gelsy of a {m} x {n} system by {k}: {best[k] * 1e3:.2f} ms a call; the main thread's median "
            f"wake-up delay beside it {gil_delay(fn) * 1e3:.2f} ms")


def w_solve_cpu(cell: str, sweeps: int, rounds: int, config: Path) -> None:
    """``--w-solve-cpu EXPERIMENT:LxM``: lysep_split on NumPy (cpu-stacked), one BLAS thread, printed."""
    name, size = cell.split(":")
    L, M = (int(v) for v in size.split("x"))
    be = backends.resolve("cpu-stacked")
    out = Report(Path(tempfile.mkdtemp()) / "w_solve_cpu")
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        capacity = thread_capacity()
        spec = load_specs(config)[name]
        gelsy_gil(spec.n_train + M, M, out)
        lysep_split(be, [(spec, L, M)], sweeps, out, rounds)
        out(f"thread capacity of this machine (2 threads of matmul, serial time / threaded time), before and after: "
            f"{capacity:.2f}x, {thread_capacity():.2f}x; load average {os.getloadavg()[0]:.1f}")


#: seconds the script plans to end within (gpu_check.sh kills it at 400): the whole cell shrinks to fit
#: gpu_check.py's own time (gpu_check.sh gives it 330 s): its sections in the order of what matters most
BUDGET_S = 300.0
#: seconds of a whole-cell section that are not the stack's sweeps: lysep's start (CuPy, kernel compiles), the
#: data set, the final evaluations, and verify
WHOLE_CELL_OVERHEAD_S = 35.0
#: trials a sweep of a run's first sweeps at elliptic-10d (3,150) (counted: one a block, L = 3's 7 blocks)
EARLY_TRIALS = 7.0


def cell_rate(be: backends.Backend, spec: ExperimentSpec, L: int, M: int, sweeps: int, out: Report,
              into: dict) -> None:
    """Section 3a: the whole cell's stack rate over its early sweeps and their trials per sweep, to size
    section 4 (``into``: rate, trials)."""
    out(f"## 3a. The whole cell's rate: {spec.name} ({L},{M}) LySep, 10 seeds stacked, {sweeps} sweeps\n")
    rate, trials = stack_timing(be, spec, "lysep", L, M, list(range(10)), sweeps)
    into.update(rate=rate, trials=trials)
    out(f"- {rate:.3e} s/sweep, {trials:.1f} trials a sweep (the largest over the seeds)\n")
    out.figures["whole_cell_rate"] = dict(into)


def whole_cell_sweeps(iterations: int, rate: float | None, trials: float | None, archive_trials: float | None,
                      allowed: float, out: Report, rate_lower: float | None = None) -> int:
    """The whole cell's sweeps: all of them unless they would not fit in ``allowed`` seconds (less
    :data:`WHOLE_CELL_OVERHEAD_S`) at the full run's predicted rate: the early sweeps' ``rate`` scaled by the
    archive's trials per sweep over the early sweeps' (a full run backtracks about twice as often as its first
    sweeps; scaling the whole sweep by it over-estimates, on the safe side), with a 15 % margin.  Then as many
    as fit, rounded down (said in the report: not the whole cell then).  ``rate_lower``: when 3a stopped at its
    limit, its time over its 7 sweeps, a lower bound of the rate, used instead."""
    if rate is None and rate_lower is None:
        out("- no measured rate (section 3a did not run): the whole cell's sweeps are not sized\n")
        return iterations
    if trials is None:  # 3a stopped before its sweeps' trials were known: a full run's ~14 over early sweeps' ~7
        trials = EARLY_TRIALS
    scale = max(1.0, archive_trials / trials) if archive_trials else 1.0
    if rate is None:
        rate = rate_lower
        out(f"- section 3a stopped at its limit: its 7 sweeps (2 of warm-up, 5 timed) took longer than its "
            f"{rate * 7:.0f} s, so a sweep takes at least {rate:.3e} s; trials a sweep taken as {trials:.0f}")
    predicted = rate * scale * 1.15
    out(f"- sized from section 3a: {rate:.3e} s/sweep x {scale:.2f} (the archive's {archive_trials or 0:.1f} trials "
        f"a sweep over these {trials:.1f}) x 1.15 = {predicted:.3e} s a sweep predicted for the full run; "
        f"{allowed:.0f} s allowed, {WHOLE_CELL_OVERHEAD_S:.0f} of them for the process, data and verify")
    fit = (allowed - WHOLE_CELL_OVERHEAD_S) / predicted
    if fit >= iterations:
        return iterations
    n = int(fit) // 100 * 100 if fit >= 100 else max(1, int(fit) // 10 * 10 if fit >= 10 else int(fit))
    out(f"- **the whole cell does not fit in its time limit** ({iterations} sweeps): {n} sweeps instead, so "
        "section 4 is not the whole cell.\n")
    return n


def whole_cell(lysep: list[str], device: str, config: Path, experiment: str, solver: str, size: str, iterations: int,
               scratch: Path, archive: Path, out: Report, allowed: float, sweeps: Callable[[float], int]) -> None:
    """Section 4: ``lysep run`` of one whole cell (``lysep``: the command; ``sweeps(allowed)``: how many of the
    cell's ``iterations`` fit in ``allowed`` seconds, writing why), then ``lysep verify --against`` the archive;
    the run stopped 25 s before ``allowed`` ends, so that a run that outlasts its prediction leaves a line."""
    ends = time.perf_counter() + allowed
    out(f"## 4. One whole cell: {experiment} ({size.replace('x', ',')}) {solver}, the cell's seeds x {iterations} "
        "iterations\n")
    n = sweeps(allowed)
    if n < iterations:
        out(f"(the run below: {n} iterations)\n")
    run = lysep + ["run", experiment, "--solver", solver, "--sizes", size, "--iterations", str(n),
                   "--device", device, "--config", str(config), "--results", str(scratch)]
    t = time.perf_counter()
    try:
        p = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=ENV,
                           timeout=max(1.0, ends - 25.0 - time.perf_counter()))
    except subprocess.TimeoutExpired:
        out(f"- `lysep run ... --device {device}` ({n} iterations) **stopped after {time.perf_counter() - t:.0f} s**, "
            "its time limit: no record (a stack's records are written when it finishes), no verdict\n")
        out.figures["whole_cell"] = {"iterations": n, "stopped_s": time.perf_counter() - t}
        return
    wall = time.perf_counter() - t
    out(f"- `lysep run ... --device {device}`: exit {p.returncode}, {wall:.1f} s wall (the process, data set "
        "and final evaluations included)")
    if p.returncode:
        out("```\n" + p.stderr[-2000:] + "\n```")
        raise RuntimeError(f"lysep run --device {device} failed (exit {p.returncode})")
    recs = [r for r in records.load_records(scratch, [experiment]).records if r.solver == solver]
    if recs:
        out(f"- {len(recs)} records; versions: {json.dumps({k: recs[0].versions.get(k) for k in ('device', 'gpu', 'cuda', 'array_library', 'numerics')})}")
        out(f"- stack seconds: {recs[0].diagnostics.get('stack_seconds'):.1f}; final J per seed: "
            + ", ".join(f"{r.final.J:.3e}" for r in sorted(recs, key=lambda r: r.seed)))
    stack_s = recs[0].diagnostics.get("stack_seconds") if recs else None
    out.figures["whole_cell"] = {"iterations": n, "wall_s": wall, "run_exit": p.returncode, "stack_seconds": stack_s,
                                 "s_per_sweep": stack_s / n if stack_s else None}
    out.flush()
    v = subprocess.run(lysep + ["verify", experiment, "--solver", solver, "--iterations", str(n), "--config",
                                str(config), "--results", str(scratch), "--against", str(archive)],
                       capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=max(1.0, ends - time.perf_counter()))
    out(f"- `lysep verify {experiment} --solver {solver} --results SCRATCH --against {archive.name}`: exit "
        f"{v.returncode}\n```\n{(v.stdout + v.stderr)[-3000:]}\n```\n")
    out.figures["whole_cell"]["verify_exit"] = v.returncode


def torch_peer(specs: dict[str, ExperimentSpec], out: Report, its: int, device: str) -> None:
    """Autograd PINN-GD in PyTorch, float64, 10 seeds on a leading axis, s/iteration per cell."""
    out(f"## 5. The PyTorch peer: autograd PINN-GD, float64, 10 seeds stacked, on {device}\n")
    try:
        import torch
    except ImportError:
        out("PyTorch is not installed here: skipped.\n")
        return
    torch.set_default_dtype(torch.float64)
    if device == "cuda" and not torch.cuda.is_available():
        out("PyTorch sees no CUDA device here: skipped.\n")
        return
    dev = torch.device("cuda" if device == "cuda" else "cpu")
    wait = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    out("| cell | torch s/it (stack of 10) |")
    out("|---|---:|")
    peer = {}
    for spec in specs.values():
        problem, _, _, data, _ = experiment_data(spec)
        lr = float(spec.solvers["pinn"].lr)
        T = lambda a: torch.tensor(np.ascontiguousarray(a), device=dev)  # noqa: E731
        K, K1, K2, Y = T(data.coef.K), T(data.coef.K1.T), T(data.coef.K2.T), T(data.Y)
        second = [j for j in range(K2.shape[1]) if bool(torch.any(K2[:, j] != 0))]
        for L, M in spec.sizes:
            ps = [network.init_params(problem.n_in, L, M, s) for s in range(10)]
            params = [(T(np.stack([p[l][0] for p in ps])).requires_grad_(True),
                       T(np.stack([p[l][1] for p in ps])).requires_grad_(True)) for l in range(L)]
            z0 = T(data.Z.T).expand(10, -1, -1).contiguous()

            def step() -> None:
                z = z0.clone().requires_grad_(True)  # (S, N, n_in)
                h = z
                for W, b in params[:-1]:
                    h = torch.sin(h @ W.transpose(1, 2) + b[:, None, :])
                WL, bL = params[-1]
                phi = (h @ WL.transpose(1, 2) + bL[:, None, :])[..., 0]
                (g,) = torch.autograd.grad(phi.sum(), z, create_graph=True)
                R = K * phi + (K1 * g).sum(2)
                for j in second:
                    (gj,) = torch.autograd.grad(g[..., j].sum(), z, create_graph=True)
                    R = R + K2[:, j] * gj[..., j]
                J = ((R - Y) ** 2).mean(1)
                flat = [p for pair in params for p in pair]
                grads = torch.autograd.grad(J.sum(), flat)
                with torch.no_grad():
                    for p, gp in zip(flat, grads):
                        p -= lr * gp

            step()
            wait()
            t = time.perf_counter()
            for _ in range(its):
                step()
            wait()
            peer[f"{spec.name} ({L},{M})"] = (time.perf_counter() - t) / its
            out(f"| {spec.name} ({L},{M}) | {peer[f'{spec.name} ({L},{M})']:.3e} |")
            out.flush()
    out.figures["torch_stack_s_per_it"] = peer
    out("")


def full_sweep(rates: dict, specs: dict[str, ExperimentSpec], out: Report, trials: dict, archive_t: dict) -> None:
    """Section 6: the full sweep's minutes from section 3's rates (those measured: a missing pair is said), LySep's
    early-sweep rates as measured (a lower bound: a full run backtracks more) and scaled to the full run, by the
    whole cell's measured full-run s/sweep over its early sweeps' (section 4 against 3a) where there is one, and
    by the archive's trials per sweep over the early sweeps' (an upper estimate)."""
    out("## 6. The full sweep from the measured rates\n")
    pairs = [(s.name, solver, L, M) for s in specs.values() for L, M in s.sizes for solver in ("pinn", "lysep")]
    missing = [p for p in pairs if p not in rates]
    its = {s.name: s.iterations for s in specs.values()}
    minutes = {solver: sum(rates[p] * its[p[0]] for p in pairs if p[1] == solver and p in rates) / 60
               for solver in ("pinn", "lysep")}
    upper = sum(rates[p] * its[p[0]] * max(1.0, archive_t.get((p[0], p[2], p[3]), 0.0) / trials[(p[0], p[2], p[3])])
                for p in pairs if p[1] == "lysep" and p in rates and trials.get((p[0], p[2], p[3]))) / 60
    out(f"- {'the (cell, solver) pairs measured' if missing else 'every paper cell'}, 10 seeds stacked, {next(iter(specs.values())).iterations} "
        f"iterations, on the device (section 3's rates times the iterations; LySep's of its early sweeps): PINN "
        f"**{minutes['pinn']:.2f}** + LySep **{minutes['lysep']:.2f}** = **{sum(minutes.values()):.2f} minutes**")
    figures = {**minutes, "lysep_scaled_by_archive_trials": upper, "missing": [" ".join(map(str, p)) for p in missing]}
    out(f"- LySep scaled by the archive's trials per sweep over the measured sweeps' (an upper estimate): "
        f"**{upper:.2f}** minutes, the full sweep **{minutes['pinn'] + upper:.2f} minutes**")
    whole, early = out.figures.get("whole_cell", {}), out.figures.get("whole_cell_rate", {})
    if whole.get("s_per_sweep") and early.get("rate"):
        ratio = whole["s_per_sweep"] / early["rate"]
        figures["whole_cell_ratio"] = ratio
        out(f"- LySep scaled by the whole cell's measured ratio, its {whole['iterations']} sweeps' s/sweep over its "
            f"early sweeps' (section 4 / 3a): x{ratio:.2f}: LySep **{minutes['lysep'] * ratio:.2f}**, the full sweep "
            f"**{minutes['pinn'] + minutes['lysep'] * ratio:.2f} minutes**")
    else:
        out("- (no whole-cell run to scale LySep's early-sweep rates by: section 4 gave no s/sweep)")
    if missing:
        out(f"- **{len(missing)} of {len(pairs)} (cell, solver) pairs not measured** (section 3 stopped at its "
            "limit): the sums above leave them out, so they are lower bounds: " + ", ".join(
                f"{e} ({L},{M}) {so}" for e, so, L, M in missing))
    out("")
    out.figures["sweep_minutes"] = figures


def launch_costs(be: backends.Backend, out: Report, smoke: bool, rates: dict) -> None:
    """Section 7: what one kernel launch, one tiny device->host copy (a host sync) and one tiny upload cost on
    the device, to check benchmarks/results/launch_count.md's prediction (counts x costs, its costs calibrated
    from the design check's trial): its counts times these costs beside section 3's measured ``rates``; and the
    engine's fused kernels against their unfused operations bit for bit (sigma.values: sin, cos, -sin, -cos in one
    launch) against sincos and two negations, bit for bit."""
    xp, wait, n = be.xp, synced(be), 20 if smoke else 400
    out(f"## 7. Launch and sync costs on the device ({n} of each, best of 3)\n")
    x, y = xp.zeros(8), xp.zeros(8)
    big = xp.zeros((10, 30, 1000))
    host = np.ones(8)

    def best(body: Callable[[], Any]) -> float:
        times = []
        for _ in range(3):
            body()
            wait()
            t = time.perf_counter()
            for _ in range(n):
                body()
            wait()
            times.append((time.perf_counter() - t) / n)
        return min(times)

    costs = {"launch_8": best(lambda: xp.add(x, 1.0, out=y)),
             "launch_10x30x1000": best(lambda: xp.multiply(big, 1.0, out=big)),
             "launch_then_sync": best(lambda: be.host(xp.add(x, 1.0, out=y))),
             "sync_alone": best(lambda: be.host(y)),
             "upload_8": best(lambda: be.asarray(host))}
    costs["sync_after_launch"] = costs["launch_then_sync"] - costs["launch_8"]
    for k, v in costs.items():
        out(f"- {k.replace('_', ' ')}: **{v * 1e6:.1f} µs**")
    a = be.asarray(np.random.default_rng(4).normal(0.0, 3.0, (10, 30, 1000)))
    fused = sigma.values(xp, a)
    s, c = sigma.sincos(xp, a)
    differing = sum(int(np.count_nonzero(be.host(f).view(np.int64) != be.host(u).view(np.int64)))
                    for f, u in zip((fused.s0, fused.s1, fused.s2, fused.s3), (s, c, xp.negative(s), xp.negative(c))))
    costs["sigma_values_fused"] = best(lambda: sigma.values(xp, a))
    costs["sigma_sincos_and_two_negations"] = best(lambda: (lambda p: (xp.negative(p[0]), xp.negative(p[1])))(
        sigma.sincos(xp, a)))
    out(f"- sigma.values (one kernel on a device) against sincos + two negations, (10, 30, 1000): entries "
        f"differing **{differing}**; {costs['sigma_values_fused'] * 1e6:.1f} against "
        f"{costs['sigma_sincos_and_two_negations'] * 1e6:.1f} µs")
    from lysep_cli.accel.pinn import masked_step

    rng = np.random.default_rng(5)
    W, G = be.asarray(rng.normal(size=(10, 30, 30))), be.asarray(rng.normal(size=(10, 30, 30)))
    keep = be.asarray(np.arange(10) % 3 > 0)
    eta = 1.2345e-3
    unfused = xp.where(keep.reshape(-1, 1, 1), W - eta * G, W)
    step_differing = int(np.count_nonzero(be.host(masked_step(xp, keep, W, eta, G)).view(np.int64)
                                          != be.host(unfused).view(np.int64)))
    out(f"- pinn.masked_step (one kernel on a device) against where(keep, W - eta G, W), (10, 30, 30): entries "
        f"differing **{step_differing}**")
    costs["masked_step_differing"] = step_differing
    from lysep_cli.numerics.channels import ordered_sum

    x, init = be.asarray(rng.normal(size=(10, 10, 30, 100))), be.asarray(rng.normal(size=(10, 30, 100)))
    want = init.copy()
    for k in range(10):  # loop over the channels: the unfused order
        want += x[:, k]
    sum_differing = int(np.count_nonzero(be.host(ordered_sum(xp, x, init.copy())).view(np.int64)
                                         != be.host(want).view(np.int64)))
    out(f"- engine.ordered_sum (one kernel on a device) against 10 additions, (10, 10, 30, 100): entries differing "
        f"**{sum_differing}**")
    costs["ordered_sum_differing"] = sum_differing
    out("- to compare with the costs benchmarks/results/launch_count.md calibrated from the design check's trial "
        "(its 'Calibration'), which its predicted full sweep assumes\n")
    out.figures["launch_costs_s"] = {**costs, "sigma_fused_differing": differing}
    counted = ROOT / "benchmarks/results/launch_count.json"
    counts = json.loads(counted.read_text()) if counted.is_file() else {"cells": {}}
    cells = counts["cells"]
    sync = max(costs["sync_after_launch"], 0.0)
    rows = [(k, t, cells[f"{k[0]} ({k[2]},{k[3]})"]) for k, t in sorted(rates.items())
            if f"{k[0]} ({k[2]},{k[3]})" in cells]
    if rows:
        out("| cell | solver | measured s/it (section 3) | counted launches + uploads, syncs per it | counts x the "
            "costs above | counts x launch_count's calibration |")
        out("|---|---|---:|---:|---:|---:|")
    for (name, solver, L, M), t, c in rows:
        n = c["pinn_iteration"] if solver == "pinn" else c["lysep_sweep"]
        here = (n["launch"] + n["upload"]) * costs["launch_8"] + n["sync"] * sync
        calibrated = (n["launch"] + n["upload"] + n["sync"]) * counts["calibration"]["launch_s"]
        out(f"| {name} ({L},{M}) | {solver} | {t:.3e} | {n['launch'] + n['upload']:.0f}, {n['sync']:.0f} | {here:.3e} | "
            f"{calibrated:.3e} |")
        out.figures.setdefault("launch_model_s_per_it", {})[f"{name} ({L},{M}) {solver}"] = \
            {"measured": t, "counts_x_measured_costs": here, "counts_x_calibration": calibrated}
    out("")


def cpu_ratio(cells: str, seeds: int, iterations: int, config: Path) -> None:
    """The stacked engine on NumPy against the CPU engine's loop over seeds, side by side, one BLAS thread,
    alternating, the best of 3 rounds each; checks that every seed is the same bits.  ``cells``:
    EXPERIMENT:LxM[:SOLVER],... (SOLVER pinn, the default, or lysep)."""
    specs = load_specs(config)
    be = backends.resolve("cpu-stacked")
    for cell in cells.split(","):
        name, size, *rest = cell.split(":")
        solver = rest[0] if rest else "pinn"
        L, M = (int(v) for v in size.split("x"))
        spec = specs[name]
        loop, stack = [], []
        with threadpool_limits(limits=1), np.errstate(all="ignore"):
            for _ in range(3):
                loop.append(cpu_rate(spec, solver, L, M, list(range(seeds)), iterations))
                stack.append(stack_rate(be, spec, solver, L, M, list(range(seeds)), iterations))
            p0 = [network.init_params(experiment_data(spec).problem.n_in, L, M, s) for s in range(seeds)]
            st = solve_stack(be, spec, solver, p0, iterations)
            ident = all(same(st[s], solve_cpu(spec, solver, p0[s], iterations)) for s in range(seeds))
        print(f"{name} ({L},{M}) {solver}, {seeds} seeds x {iterations} iterations, one BLAS thread: loop "
              f"{min(loop):.4f} s/it, stack {min(stack):.4f} s/it, stack/loop {min(stack) / min(loop):.2f}; "
              f"every seed bit-identical to the CPU engine: {ident}", flush=True)


def concurrent_worker(cell: str, device: str, iterations: int, start_at: float, config: Path) -> None:
    """``--concurrent-worker``: section 8's one process: a stacked LySep of ``cell`` (NAME:LxM, 10 seeds) warmed
    up, then ``iterations`` sweeps from the wall-clock time ``start_at`` on; prints its start and end (JSON)."""
    name, size = cell.split(":")
    L, M = (int(v) for v in size.split("x"))
    spec = load_specs(config)[name]
    be = backends.resolve(device)
    params0 = [network.init_params(experiment_data(spec).problem.n_in, L, M, s) for s in range(10)]
    wait = synced(be)
    with np.errstate(all="ignore"):
        solve_stack(be, spec, "lysep", params0, 2)
        wait()
        time.sleep(max(0.0, start_at - time.time()))
        began = time.time()
        solve_stack(be, spec, "lysep", params0, iterations)
        wait()
    print(json.dumps({"began": began, "ended": time.time(), "late": began - start_at}))


def concurrent_stacks(device: str, config: Path, cell: str, iterations: int, counts: tuple[int, ...],
                      out: Report, startup: float, extra: tuple[str, ...] = ()) -> None:
    """Section 8: k processes, each one stack of ``cell``, at once on the device. A launch-bound stack leaves
    the GPU idle between its kernels (section 7, benchmarks/results/launch_count.md), so independent cells
    run side by side may fill it: sweeps per second of all k together against one process's."""
    out(f"## 8. Several stacks at once: k processes, each a stacked LySep of {cell} (10 seeds), "
        f"{iterations} sweeps each\n")
    out("| processes | sweeps/s, all together | x one process | slowest process (s) | latest start after the signal (s) |")
    out("|---:|---:|---:|---:|---:|")
    one = None
    for k in counts:
        start_at = time.time() + startup
        cmd = [sys.executable, str(Path(__file__).resolve()), "--concurrent-worker", cell, "--device", device,
               "--iterations", str(iterations), "--start-at", repr(start_at), "--config", str(config), *extra]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
                 for _ in range(k)]
        runs = []
        try:
            for proc in procs:
                stdout, stderr = proc.communicate(timeout=startup + 120)
                if proc.returncode:
                    raise RuntimeError(f"a worker failed: {stderr[-2000:]}")
                runs.append(json.loads(stdout.strip().splitlines()[-1]))
        finally:  # a section stopped at its limit leaves no worker behind
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        wall = max(r["ended"] for r in runs) - min(r["began"] for r in runs)
        rate = k * iterations / wall
        one = rate if one is None else one
        out(f"| {k} | {rate:.2f} | {rate / one:.2f} | {max(r['ended'] - r['began'] for r in runs):.2f} | "
            f"{max(r['late'] for r in runs):.2f} |")
        out.figures.setdefault("concurrent_sweeps_per_s", {})[k] = rate
        out.flush()
    out("\n(a worker that starts after the signal, its warm-up not done, makes the figure pessimistic: the last "
        "column says by how much)\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on NumPy (cpu-stacked): the script's own test")
    ap.add_argument("--device", default="cuda", choices=backends.STACKED_DEVICES)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/gpu_check")
    ap.add_argument("--cpu-ratio", help="only the CPU side by side, e.g. elliptic-2d:3x30")
    ap.add_argument("--w-solve-cpu", help="only section 3b on NumPy, one BLAS thread, e.g. elliptic-10d:3x150 "
                                          "(--iterations sweeps, --rounds)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--digest", action="store_true", help="write the archive's digest (finals, rates) and stop")
    ap.add_argument("--concurrent-worker", help="section 8's worker process: NAME:LxM (internal)")
    ap.add_argument("--start-at", type=float, help="section 8's worker: when to start timing (time.time())")
    ap.add_argument("--config", type=Path, default=ROOT / "experiments.yaml", help="section 8's worker: experiments file")
    ap.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for all the sections (each has its own limit)")
    ap.add_argument("--stand-in", type=float, default=0.0, metavar="FACTOR",
                    help="a dry run without a GPU: --device cuda is benchmarks/stand_in.py's device, FACTOR x slower")
    ap.add_argument("--digest-trials", action="store_true", help="write the archive's trials-per-sweep digest and stop")
    args = ap.parse_args()
    if args.stand_in and args.concurrent_worker:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import stand_in

        stand_in.install(args.stand_in)
    if args.digest_trials:
        return write_trials_digest(ROOT / "results/paper")
    if args.concurrent_worker:
        return concurrent_worker(args.concurrent_worker, args.device, args.iterations, args.start_at, args.config)
    if args.digest:
        return write_digest(ROOT / "results/paper")
    if args.cpu_ratio:
        return cpu_ratio(args.cpu_ratio, args.seeds, args.iterations, ROOT / "experiments.yaml")
    if args.w_solve_cpu:
        return w_solve_cpu(args.w_solve_cpu, args.iterations, args.rounds, ROOT / "experiments.yaml")
    device = "cpu-stacked" if args.smoke else args.device
    lysep = [sys.executable, "-m", "lysep_cli.cli"]
    extra: tuple[str, ...] = ()
    if args.stand_in:  # a dry run: the stand-in device as cuda, here and in the subprocesses
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import stand_in

        stand_in.install(args.stand_in)
        lysep = [sys.executable, str(ROOT / "benchmarks/stand_in.py"), repr(args.stand_in)]
        extra = ("--stand-in", repr(args.stand_in))
    be = backends.resolve(device)
    out = Report(args.out)
    budget = None if args.smoke else Budget(args.budget)
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            config = Path(tmp) / "smoke.yaml"
            config.write_text(SMOKE_YAML)
            archive = Path(tmp) / "archive"  # a CPU run of the same cell stands in for the archive
            subprocess.run([sys.executable, "-m", "lysep_cli.cli", "run", "elliptic-2d", "--solver", "lysep",
                            "--sizes", "3x6", "--iterations", "20", "--config", str(config),
                            "--results", str(archive)], check=True, capture_output=True, cwd=ROOT, env=ENV)
        else:
            config, archive = ROOT / "experiments.yaml", ROOT / "results/paper"
            if not archive.is_dir():  # a working tree without the archive: its digest (finals and rates)
                archive = DIGEST_FINALS
        all_specs = load_specs(config)
        specs = {n: all_specs[n] for n in PAPER if n in all_specs}
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        kind = " — SMOKE RUN: tiny sizes on NumPy, not a measurement" if args.smoke else (
            f" — DRY RUN: the stand-in device ({args.stand_in:g} x the calibrated launch cost, on this CPU), not a GPU"
            if args.stand_in else "")
        out(f"# GPU check (issues 40, 46), {stamp}{kind}\n")
        if budget is not None:
            out(f"Sections in the order of what matters most, each with its own time limit within {budget.total:.0f} s: "
                "2 (bits, agreement with the CPU engine), 3a and 4 (the whole cell and its verdict against the "
                "archive), 3 and 6 (every cell's rate, the full sweep), 5 (the PyTorch peer), then 3c, 3b, 7, 2b, 8, "
                "3d. A section stopped at its limit keeps what it wrote; one not run says why.\n")
        if archive == DIGEST_FINALS:
            out(f"(results/paper is not here: the archive's digest, {DIGEST_FINALS.name}, {DIGEST_RATES.name} and "
                f"{DIGEST_TRIALS.name}, stands in for it)\n")
        out("## 1. The device\n")
        out("```\n" + json.dumps(be.fingerprint(stacked_numerics_id()), indent=1) + "\n```\n")
        out.figures["device"] = be.fingerprint(stacked_numerics_id())
        out.flush()
        paper_dir = ROOT / "results/paper" if archive == DIGEST_FINALS else archive
        smoke = args.smoke
        with np.errstate(all="ignore"):
            first = next(iter(specs.values()))
            archive_r = archive_rates(paper_dir, list(specs))
            archive_t = archive_trials(paper_dir, list(specs))
            rates: dict = {}
            trials: dict = {}
            early: dict = {}
            its = {"pinn": 3, "lysep": 2} if smoke else {"pinn": 20, "lysep": 5}
            cpu_its = {"pinn": 1, "lysep": 1} if smoke else {"pinn": 3, "lysep": 2}
            split = [("elliptic-2d", 3, 6)] if smoke else [("elliptic-10d", 3, 150), ("elliptic-2d", 3, 30)]
            cell = ("elliptic-2d", "lysep", 3, 6, 20) if smoke else ("elliptic-10d", "lysep", 3, 150, 2000)
            cell_spec = specs[cell[0]]
            limit_4 = 150.0

            title_3a = "3a. The whole cell's rate"

            def sized(allowed: float) -> int:
                spent = out.figures.get("section_seconds", {}).get(title_3a)
                lower = spent / 7 if spent and title_3a in out.figures.get("stopped_at_limit", []) else None
                return whole_cell_sweeps(cell[4], early.get("rate"), early.get("trials"),
                                         archive_t.get((cell[0], cell[2], cell[3])), allowed, out, lower)

            plan: list[tuple[str, float, Callable[..., Any], tuple]] = [
                ("2. Exactness on the device", 60.0, check_exactness, (be, first, first.sizes[0][1], out, smoke)),
                (title_3a, 30.0, cell_rate, (be, cell_spec, cell[2], cell[3], 2 if smoke else 5, out,
                                                              early)),
                ("4. One whole cell", limit_4, lambda: whole_cell(
                    lysep, device, config, cell[0], cell[1], f"{cell[2]}x{cell[3]}", cell[4], Path(tmp) / "scratch",
                    archive, out, limit_4 if budget is None else min(limit_4, budget.left()), sized), ()),
                ("3. s/iteration per (cell, solver)", 60.0, per_cell, (be, specs, out, its, archive_r, rates, trials)),
                ("6. The full sweep", 10.0, full_sweep, (rates, specs, out, trials, archive_t)),
                ("5. The PyTorch peer", 40.0, torch_peer, (specs, out, 2 if smoke else 10, "cpu" if smoke else "cuda")),
                ("3c. Backtracking trials, k = 1 against the device's default", 30.0, trial_batches,
                 (be, [(specs[n], L, M) for n, L, M in split], 2 if smoke else 10, 2, out)),
                ("3b. Where a LySep sweep's time goes", 30.0, lysep_split,
                 (be, [(specs[n], L, M) for n, L, M in split], 2 if smoke else 5, out)),
                ("7. Launch and sync costs", 20.0, launch_costs, (be, out, smoke, rates)),
                ("2b. LySep settings of our own", 30.0, own_settings, (be, first, first.sizes[0][1], out, smoke)),
                ("8. Several stacks at once", 60.0, concurrent_stacks,
                 (device, config, "elliptic-2d:3x6" if smoke else "elliptic-2d:3x30", 2 if smoke else 20,
                  (1, 2) if smoke else (1, 4, 8), out, 5.0 if smoke else 20.0, extra)),
                ("3d. The CPU engine here", 30.0, cpu_here, (specs, out, cpu_its, rates)),
            ]
            # section 6 is arithmetic on what 3 and 4 measured: it runs even when the budget is spent
            failed = [not section(out, None if title.startswith("6.") else budget, title, limit, run, *run_args,
                                  needs=20.0 if title[:2] in ("4.", "8.") else 5.0)
                      for title, limit, run, run_args in plan]
    out.flush()
    if any(failed):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
