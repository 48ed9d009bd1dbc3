"""Step-size study of Algorithms 1-3: LySep as written (one fixed tau) beside our per-block backtracking.

The paper's Algorithms 1-3 take one fixed learning rate tau and do not state its value.  For each
(L, M), seed and step rule the study runs LySep from the same seeded weights and keeps the final J, J_S,
l2, the hidden layers' relative movement and the sweep of a divergence.  tau = 0 means no gradient step
at all: only the closed-form b_1, b_2, W_3, b_3 updates act on the seeded hidden layers.

Output under ``results/<experiment>/study-step-size/`` (each written atomically): ``runs.csv`` (one row
per run, rewritten after every run, so an interrupted study resumes where it stopped), ``summary.md``
(mean ± sample std over seeds per rule, and the best fixed tau per (L, M) beside our default and the
paper) and ``step-size.png/.pdf``.
"""

from __future__ import annotations

import errno
import io
import math
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.reports.selection import pm, published_row, sci
from lysep_cli.solvers.lysep.algorithm import Settings as LySepSettings
from lysep_cli.solvers.lysep.algorithm import solve as lysep_solve
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.atomic import write_bytes, write_text

DEFAULT_TAUS = (0.0, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0)
#: one run of the study: what identifies it in runs.csv (tau is NaN for backtracking)
RUN_KEY = ["L", "M", "seed", "rule", "tau", "iterations"]
COLUMNS = RUN_KEY + ["status", "diverged_at", "J", "J_S", "l2", "hidden_move", "violations", "J_first",
                     "W3_norm", "largest_final_step", "seconds"]


def planned_runs(sizes: list[tuple[int, int]], seeds: list[int], taus: list[float],
                 iterations: int) -> list[dict[str, Any]]:
    """The study's runs in the order they are made: per (L, M), per seed, each fixed tau then backtracking."""
    runs = []
    for L, M in sizes:
        for seed in seeds:
            for tau in taus:
                runs.append({"L": L, "M": M, "seed": seed, "rule": "fixed", "tau": float(tau),
                             "iterations": iterations})
            runs.append({"L": L, "M": M, "seed": seed, "rule": "backtracking", "tau": math.nan,
                         "iterations": iterations})
    return runs


def run_key(row: dict[str, Any]) -> tuple:
    """A run's identity in runs.csv (:data:`RUN_KEY`; tau None for backtracking)."""
    tau = float(row["tau"])
    return (int(row["L"]), int(row["M"]), int(row["seed"]), str(row["rule"]),
            None if math.isnan(tau) else tau, int(row["iterations"]))


def hidden_move(diagnostics: dict[str, Any], L: int) -> float:
    """The largest relative movement ||W_l - W_l^0|| / ||W_l^0|| over the hidden weights W_l (l < L), the
    variables only the gradient steps move (b_l is a closed-form update), from the solver's diagnostics."""
    moves = [float(diagnostics[f"move_W{l}"]) for l in range(1, L) if f"move_W{l}" in diagnostics]
    return max(moves) if moves else math.nan


def run_one(spec: ExperimentSpec, run: dict[str, Any], base: LySepSettings) -> dict[str, Any]:
    """One LySep run of the study (``run``: a :func:`planned_runs` entry); returns its runs.csv row."""
    data = experiment_data(spec)
    problem = data.problem
    L, M = run["L"], run["M"]
    settings = (base.replace(step_rule="fixed", tau=run["tau"]) if run["rule"] == "fixed"
                else base.replace(step_rule="backtracking"))
    params0 = network.init_params(problem.n_in, L, M, run["seed"], settings.init)
    t0 = time.process_time()
    with threadpool_limits(limits=1), np.errstate(all="ignore"):  # one BLAS thread, as the runner
        res = lysep_solve(problem, data.training, params0, settings, run["iterations"])
    seconds = time.process_time() - t0
    ok = res.status == "ok"
    diag = res.diagnostics or {}
    steps = [float(v) for v in (diag.get("final_step_sizes") or {}).values()]
    return {**run, "status": res.status, "diverged_at": res.diverged_at if not ok else None,
            "J": res.history["J"][-1] if ok else math.nan, "J_S": res.J_S if ok else math.nan,
            "l2": relative_l2(problem, res.params, data.Z_test) if ok else math.nan,
            "hidden_move": hidden_move(diag, L) if ok else math.nan,
            "violations": (res.bound or {}).get("violations", 0),
            "J_first": res.history["J"][1] if len(res.history["J"]) > 1 else math.nan,
            "W3_norm": diag.get("W3_norm", math.nan),
            "largest_final_step": max(steps) if steps else math.nan, "seconds": seconds}


def step_size_study(spec: ExperimentSpec, sizes: list[tuple[int, int]], seeds: list[int], taus: list[float],
                    iterations: int, base_settings: LySepSettings | dict[str, Any] | None = None,
                    tick: Callable[[str], None] | None = None, done: pd.DataFrame | None = None,
                    on_row: Callable[[pd.DataFrame], None] | None = None) -> pd.DataFrame:
    """The runs of :func:`planned_runs` not already in ``done`` (rows of an earlier runs.csv), one after
    the other; ``on_row`` gets the whole table after each run (to save it).  Returns that table: the rows
    of ``done`` and the new ones, columns :data:`COLUMNS`."""
    base = LySepSettings.coerce(base_settings)
    table = done[COLUMNS].copy() if done is not None and len(done) else pd.DataFrame(columns=COLUMNS)
    have = {run_key(r) for r in table.to_dict("records")}
    for run in planned_runs(sizes, seeds, taus, iterations):
        if run_key(run) in have:
            continue
        row = run_one(spec, run, base)
        table = pd.concat([table, pd.DataFrame([row], columns=COLUMNS)], ignore_index=True) if len(table) \
            else pd.DataFrame([row], columns=COLUMNS)
        if on_row is not None:
            on_row(table)
        if tick is not None:
            what = f"fixed tau={run['tau']:g}" if run["rule"] == "fixed" else "backtracking"
            tail = f"J={row['J']:.2e}" if row["status"] == "ok" else f"diverged at sweep {row['diverged_at']}"
            tick(f"{what} L{run['L']}-M{run['M']} seed {run['seed']}: {tail} ({row['seconds']:.0f} s)")
    return table


@contextmanager
def exclusive(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir/.study.lock`` for the block: a second study writing the same runs.csv would drop the
    first one's rows (each rewrites the whole table).  OSError EBUSY (exit 1, one line) when held."""
    import fcntl

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ".study.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise OSError(errno.EBUSY, "another `lysep study step-size` is writing this study", str(out_dir)) from None
        yield
    finally:
        os.close(fd)


def read_runs(path: Path) -> pd.DataFrame | None:
    """An earlier study's runs.csv (None when absent); rows of an older layout without the new columns
    are dropped (they are rerun)."""
    if not path.is_file():
        return None
    df = pd.read_csv(path)
    if not set(COLUMNS) <= set(df.columns):
        return None
    return df[COLUMNS]


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per (L, M, rule, tau): runs, diverged runs and the median divergence sweep, mean and sample std
    (N - 1) over the runs that did not diverge of J, l2, J_S; median hidden-layer movement."""
    keys = ["L", "M", "rule", "tau"]
    g = df.assign(tau=df["tau"].fillna(-1.0)).groupby(keys, sort=False)
    out = g.agg(n=("seed", "size"), diverged=("status", lambda s: int((s != "ok").sum())),
                diverged_at=("diverged_at", "median"),
                J_mean=("J", "mean"), J_std=("J", "std"), l2_mean=("l2", "mean"), l2_std=("l2", "std"),
                J_S_mean=("J_S", "mean"), J_first_mean=("J_first", "mean"),
                move=("hidden_move", "median"), violations=("violations", "sum")).reset_index()
    out["tau"] = out["tau"].where(out["tau"] >= 0, None)
    return out


#: mean final J's closer than this (relative) are a tie; the smaller tau wins it
TIE_RTOL = 1e-6


def best_fixed(summary: pd.DataFrame) -> pd.DataFrame:
    """Per (L, M): the fixed tau with the smallest mean final J among those no run of which diverged and
    with the most seeds run (chosen on the training residual J, never on the test error), beside tau = 0
    and backtracking.  A tie (mean J within :data:`TIE_RTOL` of the smallest, as 1e-14 and 0 at 5-D,
    equal to 6+ digits) goes to the smallest tau: a step that changes nothing is not a finding."""
    rows = []
    for (L, M), part in summary.groupby(["L", "M"], sort=False):
        fixed = part[(part.rule == "fixed") & (part.diverged == 0)]
        fixed = fixed[fixed.n == fixed.n.max()] if len(fixed) else fixed  # a study in progress: like with like
        best = None
        if len(fixed):
            tied = fixed[fixed.J_mean <= fixed.J_mean.min() * (1.0 + TIE_RTOL)]
            best = tied.loc[tied.tau.idxmin()]
        zero = part[(part.rule == "fixed") & (part.tau == 0.0)]
        bt = part[part.rule == "backtracking"]
        rows.append({"L": L, "M": M, "best_tau": None if best is None else float(best.tau),
                     "best": best, "zero": zero.iloc[0] if len(zero) else None,
                     "backtracking": bt.iloc[0] if len(bt) else None,
                     "largest_stable_tau": float(fixed.tau.max()) if len(fixed) else None})
    return pd.DataFrame(rows)


def _tau_text(r: Any) -> str:
    return f"{r.tau:g}" if r.rule == "fixed" else "per block"


def markdown_table(summary: pd.DataFrame) -> str:
    """The summary as a Markdown table (mean ± sample std over the seeds that did not diverge)."""
    from tabulate import tabulate

    rows = [[f"({r.L},{r.M})", r.rule, _tau_text(r), f"{r.n - r.diverged}/{r.n}",
             "—" if not r.diverged else f"{r.diverged_at:.0f}", pm(r.J_mean, r.J_std),
             pm(r.l2_mean, r.l2_std), sci(r.J_S_mean), sci(r.move), str(int(r.violations))]
            for r in summary.itertuples()]
    return tabulate(rows, headers=["(L,M)", "rule", "tau", "ok/runs", "diverged at sweep (median)", "J", "l2",
                                   "J_S", "hidden move (median)", "bound violations"], tablefmt="github", disable_numparse=True)


def best_table(summary: pd.DataFrame, experiment: str) -> str:
    """Per (L, M): the best fixed tau (by final J) and its l2, tau = 0, our default rule and the paper."""
    from tabulate import tabulate

    rows = []
    for r in best_fixed(summary).itertuples():
        paper = published_row(experiment, int(r.L), int(r.M), "lysep") or {}
        paper_l2 = paper.get("l2") or [math.nan, math.nan]

        def cell(s: Any, q: str) -> str:
            return "—" if s is None else pm(s[f"{q}_mean"], s[f"{q}_std"])

        rows.append([f"({r.L},{r.M})", "none" if r.best_tau is None else f"{r.best_tau:g}",
                     "—" if r.largest_stable_tau is None else f"{r.largest_stable_tau:g}",
                     cell(r.best, "J"), cell(r.best, "l2"), cell(r.zero, "l2"), cell(r.backtracking, "J"),
                     cell(r.backtracking, "l2"), pm(*paper_l2)])
    return tabulate(rows, headers=["(L,M)", "best fixed tau (by J)", "largest tau, no divergence",
                                   "J, best fixed tau", "l2, best fixed tau", "l2, tau = 0",
                                   "J, our default", "l2, our default", "l2, paper"], tablefmt="github", disable_numparse=True)


def plot_study(summary: pd.DataFrame, out: Path) -> list[Path]:
    """Final J and l2 against tau (log-log), backtracking as a horizontal line; PNG and PDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for (L, M), part in summary.groupby(["L", "M"], sort=False):
        fixed = part[part.rule == "fixed"]
        tiny = 1e-12  # tau = 0 drawn at this abscissa on the log axis
        x = np.array([t if t > 0 else tiny for t in fixed.tau], dtype=float)
        bt = part[part.rule == "backtracking"]
        for ax, col in zip(axes, ("J", "l2")):
            line, = ax.loglog(x, fixed[f"{col}_mean"], "o-", label=f"fixed tau, ({L},{M})")
            if len(bt):
                ax.axhline(float(bt[f"{col}_mean"].iloc[0]), ls="--", color=line.get_color(),
                           label=f"per-block backtracking, ({L},{M})")
    for ax, name in zip(axes, ("final J", "relative l2 error")):
        ax.set_xlabel("tau (leftmost point: tau = 0; missing: diverged)")
        ax.set_ylabel(name)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    paths = []
    try:
        for ext in ("png", "pdf"):
            buf = io.BytesIO()
            fig.savefig(buf, format=ext, dpi=150)
            paths.append(write_bytes(out.with_suffix(f".{ext}"), buf.getvalue()))
    finally:
        plt.close(fig)
    return paths


def write_runs(df: pd.DataFrame, out_dir: Path) -> Path:
    """runs.csv under ``out_dir`` (atomically)."""
    return write_text(out_dir / "runs.csv", df.to_csv(index=False))


def write_study(df: pd.DataFrame, out_dir: Path, experiment: str) -> list[Path]:
    """runs.csv, summary.md and the figure under ``out_dir`` (each written atomically)."""
    summary = summarise(df)
    text = (f"# Step-size study: {experiment}\n\nMean ± sample std (N - 1) over the seeds that did not "
            "diverge. Hidden move: the largest relative movement of a hidden weight matrix W_l (l < L).\n\n"
            + markdown_table(summary) + "\n\n## Best fixed tau per size (chosen by final J)\n\n"
            + best_table(summary, experiment) + "\n")
    return [write_runs(df, out_dir), write_text(out_dir / "summary.md", text),
            *plot_study(summary, out_dir / "step-size")]



def headline(runs: dict[str, pd.DataFrame | None], planned: int | None = None) -> str:
    """One Markdown table over experiments (``runs``: experiment -> its runs.csv table, None when absent):
    per (L, M) the best fixed tau by final J, its l2 and J, tau = 0's l2, our default's l2 and the paper's."""
    from tabulate import tabulate

    rows = []
    for experiment, df in runs.items():
        if df is None or not len(df):
            rows.append([experiment, "—", "no runs yet"] + ["—"] * 6)
            continue
        summary = summarise(df)
        for r in best_fixed(summary).itertuples():
            paper = (published_row(experiment, int(r.L), int(r.M), "lysep") or {}).get("l2") or [math.nan] * 2
            part = df[(df.L == r.L) & (df.M == r.M)]
            seeds = part.seed.nunique()
            rules = len(part)

            def cell(s: Any, q: str) -> str:
                return "—" if s is None else pm(s[f"{q}_mean"], s[f"{q}_std"])

            best = "none" if r.best_tau is None else f"{r.best_tau:g} ({int(r.best.n)} seeds)"
            rows.append([experiment, f"({r.L},{r.M})", f"{rules} ({seeds} seeds)", best, cell(r.best, "l2"),
                         cell(r.best, "J"), cell(r.zero, "l2"), cell(r.backtracking, "l2"), pm(*paper)])
    table = tabulate(rows, headers=["experiment", "(L,M)", "runs", "best fixed tau (by J)",
                                    "l2, LySep as written (best tau)", "J, best tau", "l2, tau = 0",
                                    "l2, our default rule", "l2, paper"], tablefmt="github", disable_numparse=True)
    return (table + "\n\nLySep as written: one fixed tau for every gradient block (Algorithms 1-3), the tau "
            "with the lowest mean final J among those with no diverged run (chosen on J, never on the test "
            "error); tau = 0: the closed-form updates alone; our default: per-block backtracking "
            "(docs/lysep.md). Mean ± sample std (N − 1) over the seeds run; `lysep study step-size`.\n")
