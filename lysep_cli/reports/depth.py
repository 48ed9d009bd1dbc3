"""What depth does: per (L, M) and solver, the final J and l2 over seeds, J after LySep's first output
solve, how far each hidden layer moved from its seeded start, the cost per iteration and the bound check.

Read from archived run records and their weights (nothing is rerun).  Hidden-layer movement is
``||W_l - W_l^0|| / ||W_l^0||`` for l = 1..L-1, where W_l^0 is the seeded start (``network.init_params``
with the record's seed) and W_l the saved trained weights; every solver gets it the same way.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import problem_of
from lysep_cli.reports.selection import (bound_violations, display_name, finite_number, pm, sample_std, sci,
                                         solver_key)
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store import records
from lysep_cli.store.schema import RunRecord


def hidden_moves(rec: RunRecord, results_dir: str | Path, n_in: int) -> list[float]:
    """``||W_l - W_l^0|| / ||W_l^0||`` for l = 1..L-1 of one archived run (L-1 numbers)."""
    _, npz = records.record_paths(results_dir, rec.experiment, rec.solver, rec.L, rec.M, rec.seed)
    trained = records.load_params(npz)
    start = network.init_params(n_in, rec.L, rec.M, rec.seed, rec.settings.get("init", "paper"))
    return [float(np.linalg.norm(W - W0) / np.linalg.norm(W0))
            for (W, _), (W0, _) in zip(trained[:-1], start[:-1])]


def _median(values: list[Any]) -> float:
    good = [x for x in map(finite_number, values) if x is not None]
    return float(np.median(good)) if good else float("nan")


def depth_summary(recs: list[RunRecord], spec: ExperimentSpec, results_dir: str | Path) -> pd.DataFrame:
    """One row per (L, M, solver) of ``recs`` (records of ``spec``'s experiment; diverged runs counted
    apart).

    Columns: L, M, solver, n_seeds, n_diverged, J_median, J_mean, J_std (sample std, N − 1; NaN for one
    seed), l2_median, J1_median (LySep: J after the first W_L/b_L solve, else NaN), moves (list of L-1
    medians, layer 1 first), seconds_per_iteration (median), violations (LySep bound violations summed
    over runs, else None).
    """
    n_in = problem_of(spec).n_in
    groups: dict[tuple[int, int, str], list[RunRecord]] = {}
    for r in recs:
        groups.setdefault((r.L, r.M, r.solver), []).append(r)
    rows = []
    for (L, M, solver), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], solver_key(kv[0][2]))):
        ok = [r for r in rs if r.ok]
        J = np.array([r.final.J for r in ok], dtype=float)
        moves = np.array([hidden_moves(r, results_dir, n_in) for r in ok]).reshape(len(ok), L - 1)
        rows.append({
            "L": L, "M": M, "solver": solver, "n_seeds": len(ok), "n_diverged": len(rs) - len(ok),
            "J_median": _median(list(J)), "J_mean": float(J.mean()) if len(J) else float("nan"),
            "J_std": sample_std(J),
            "l2_median": _median([r.final.l2 for r in ok]),
            "J1_median": _median([r.diagnostics.get("J_after_first_W3_solve", float("nan")) for r in ok]),
            "moves": [float(np.median(moves[:, l])) for l in range(L - 1)] if len(ok) else [],
            "seconds_per_iteration": _median([r.compute_seconds / max(1, r.iterations_done) for r in ok]),
            "violations": (sum(bound_violations(r.bound) for r in rs)
                           if any(r.bound for r in rs) else None),
        })
    return pd.DataFrame(rows)


def _moves(values: list[float]) -> str:
    return ", ".join(f"{v:.0e}" for v in values) if values else "—"


def _count(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else str(int(value))


def render_depth_markdown(df: pd.DataFrame, spec: ExperimentSpec, iterations: int) -> str:
    """The depth table of ``depth_summary`` as Markdown, with a heading and the column legend."""
    lines = [f"### {spec.name}: {spec.pde}, d = {spec.d}, {iterations} iterations (medians over seeds)", "",
             "| (L,M) | Model | Seeds | J median | J mean ± std | ℓ2 median | J1 (first solve) "
             "| move W_1 … W_{L−1} | s / iteration | bound violations |",
             "|---|---|:---:|---:|---:|---:|---:|---:|---:|:---:|"]
    for row in df.itertuples(index=False):
        seeds = f"{row.n_seeds}" + (f" (+{row.n_diverged} diverged)" if row.n_diverged else "")
        lines.append(
            f"| ({row.L},{row.M}) | {display_name(row.solver)} | {seeds} | {sci(row.J_median)} "
            f"| {pm(row.J_mean, row.J_std, spaced=True)} | {sci(row.l2_median)} "
            f"| {sci(row.J1_median) if math.isfinite(row.J1_median) else '—'} | {_moves(row.moves)} "
            f"| {row.seconds_per_iteration:.3g} | {_count(row.violations)} |")
    lines += ["", "- J mean ± std: the sample std over the seeds (divides by N − 1; one seed: the mean alone).",
              "- move: median over seeds of ‖W_l − W_l⁰‖/‖W_l⁰‖ (W_l⁰ the seeded start), l = 1 … L−1.",
              "- J1: LySep's J after the first output solve (end of sweep 1); s / iteration: recorded CPU "
              "time (wall time where a record holds none) over iterations done (one BLAS thread; rfls does one "
              "solve: its time per run)."]
    return "\n".join(lines) + "\n"
