"""Step-size study of Algorithms 1-3: final J and l2 against a fixed tau, and with per-block backtracking.

The paper does not state tau.  tau = 0 means no gradient step at all: only the closed-form b_1, b_2,
W_3, b_3 updates act on the seeded hidden layers.  Output: a CSV, a Markdown table and a figure under
``results/<experiment>/study-step-size/``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.reports.selection import pm, sci
from lysep_cli.solvers.lysep.algorithm import Settings as LySepSettings
from lysep_cli.solvers.lysep.algorithm import solve as lysep_solve
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.atomic import write_bytes, write_text

DEFAULT_TAUS = (0.0, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0)


def step_size_study(spec: ExperimentSpec, sizes: list[tuple[int, int]], seeds: list[int], taus: list[float],
                    iterations: int, base_settings: LySepSettings | dict[str, Any] | None = None,
                    tick: Callable[[str], None] | None = None) -> pd.DataFrame:
    """One LySep run per (size, seed, rule): fixed tau for each value in ``taus``, then backtracking.

    Returns one row per run: L, M, seed, rule, tau, status, J, J_S, l2, violations, J_first (J after the
    first W_3/b_3 solve), W3_norm.
    """
    data = experiment_data(spec)
    problem, Z_test = data.problem, data.Z_test
    base = LySepSettings.coerce(base_settings)
    rules = [("fixed", base.replace(step_rule="fixed", tau=t)) for t in taus]
    rules.append(("backtracking", base.replace(step_rule="backtracking")))
    rows = []
    for L, M in sizes:
        for seed in seeds:
            params0 = network.init_params(problem.n_in, L, M, seed)
            for rule, settings in rules:
                with np.errstate(all="ignore"):
                    res = lysep_solve(problem, data.training, params0, settings, iterations)
                ok = res.status == "ok"
                J = res.history["J"][-1]
                rows.append({
                    "L": L, "M": M, "seed": seed, "rule": rule, "tau": settings.tau,
                    "status": res.status, "J": J if ok else np.nan, "J_S": res.J_S if ok else np.nan,
                    "l2": relative_l2(problem, res.params, Z_test) if ok else np.nan,
                    "violations": (res.bound or {}).get("violations", 0),
                    "J_first": res.history["J"][1] if len(res.history["J"]) > 1 else np.nan,
                    "W3_norm": res.diagnostics.get("W3_norm", np.nan),
                })
                if tick is not None:
                    tick(f"{rule} tau={settings.tau} L{L}-M{M} seed {seed}: J={J:.2e}")
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of J, l2, J_S per (L, M, rule, tau); diverged runs counted apart."""
    keys = ["L", "M", "rule", "tau"]
    g = df.assign(tau=df["tau"].fillna(-1.0)).groupby(keys, sort=False)
    out = g.agg(n=("seed", "size"), diverged=("status", lambda s: int((s != "ok").sum())),
                J_mean=("J", "mean"), J_std=("J", "std"), l2_mean=("l2", "mean"), l2_std=("l2", "std"),
                J_S_mean=("J_S", "mean"), J_first_mean=("J_first", "mean"),
                violations=("violations", "sum")).reset_index()
    out["tau"] = out["tau"].where(out["tau"] >= 0, None)
    return out


def markdown_table(summary: pd.DataFrame) -> str:
    """The summary as a Markdown table (mean±std over the seeds; one seed: the mean alone)."""
    from tabulate import tabulate

    rows = [[f"({r.L},{r.M})", r.rule, f"{r.tau:g}" if r.rule == "fixed" else f"per block, first {r.tau:g}",
             f"{r.n - r.diverged}/{r.n}", pm(r.J_mean, r.J_std), pm(r.l2_mean, r.l2_std), sci(r.J_first_mean),
             str(int(r.violations))]
            for r in summary.itertuples()]
    return tabulate(rows, headers=["(L,M)", "rule", "tau", "ok/runs", "J", "l2", "J after 1st W3 solve",
                                   "bound violations"], tablefmt="github")


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
        ax.set_xlabel("tau (leftmost point: tau = 0)")
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


def write_study(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """runs.csv, summary.md and the figure under ``out_dir`` (each written atomically)."""
    summary = summarise(df)
    return [write_text(out_dir / "runs.csv", df.to_csv(index=False)),
            write_text(out_dir / "summary.md", markdown_table(summary) + "\n"),
            *plot_study(summary, out_dir / "step-size")]
