"""The polynomial baseline's degree study, and "how hard is each table" (README's headline block).

Degree study (``lysep study poly-degree EXPERIMENT``): for k = 0, 1, 2, ... the least-squares polynomial
of total degree <= k (lysep_cli/solvers/poly.py) is fitted

  (a) on the whole training set: its J, its relative l2 test error, its CPU seconds (one BLAS thread);
  (b) on the first FIT_FRACTION of the training points (columns of Z_train): J_hold, the residual loss of
      that fit on the remaining points (the held-out rule of rfm, studies/rfm_study.py).

It stops after the last k whose P = C(n_in + k, k) satisfies P <= n_train / 4 (poly's rule), or once
two more degrees lowered J by less than STALL (k with J_k >= (1 - STALL) J_{k-2}: J stopped falling).  The
default degree is chosen on the held-out residual, never on the test error, as rfm's sigma was: the
smallest k with J_hold(k) <= TOLERANCE * min_k J_hold(k) (or below ROUND_OFF * J_hold(0), round-off).  The fit is deterministic: seeds define nothing.

Output: ``RESULTS/<experiment>/study-poly-degree/runs.csv`` (one row per degree) and ``summary.md``.

:func:`hardness` is the headline block (``lysep study poly-summary``): per experiment, the paper's best
LySep J and l2 (over its sizes), the smallest degree at which poly reaches each (or how far it stays),
beside the best cell (by mean J) of PINN, LySep, rfls and rfm in the archive, with parameter counts and
CPU seconds; its caption says how each held-out degree was decided (:func:`held_out_note`: near the
tolerance, or at the P <= N/4 cap) and on which CPUs the records were made (:func:`platform_note`).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import polynomial
from lysep_cli.numerics.dataset import TrainingData, experiment_data
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.reports.selection import Selection, aggregate, display_name, published_row, sci
from lysep_cli.solvers.poly import POINTS_PER_COEFFICIENT, fit
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.atomic import write_text

#: share of the training points the held-out fit uses (the rest is held out), as rfm's study
FIT_FRACTION = 0.8
#: a degree within this factor of the best held-out residual is good enough; the smallest such wins
TOLERANCE = 2.0
#: held-out residuals below this share of degree 0's are round-off (a residual 1e-13 of the data's, some 500
#: ulps): ties, the smallest degree wins them
ROUND_OFF = 1e-26
#: J "stops falling" when two more degrees lower it by less than this share
STALL = 0.01
COLUMNS = ["degree", "P", "J", "l2", "J_hold", "rank", "cond", "cpu_seconds"]
#: the solvers beside poly in the headline block
OTHERS = ("pinn", "lysep", "rfls", "rfm")


def held_out(train: TrainingData) -> tuple[TrainingData, TrainingData]:
    """(the first FIT_FRACTION of the training points, the rest), as rfm's study splits them."""
    n_fit = int(round(FIT_FRACTION * train.Z.shape[1]))

    def part(cols: slice) -> TrainingData:
        c = train.coef
        coef = type(c)(c.K[cols], c.K1[:, cols], c.K2[:, cols], c.second)
        return TrainingData(train.Z[:, cols], coef, train.Y[cols])

    return part(slice(0, n_fit)), part(slice(n_fit, None))


def degree_row(spec: ExperimentSpec, degree: int) -> dict[str, Any]:
    """One degree of the study: the full fit's J, l2, rank, cond and CPU seconds, and J_hold."""
    data = experiment_data(spec)
    train = data.training
    with threadpool_limits(limits=1), np.errstate(all="ignore"):  # one BLAS thread, as the runner
        t0 = time.process_time()
        E, c, J, diag = fit(train, degree)
        seconds = time.process_time() - t0
        part, rest = held_out(train)
        E80, c80, _, _ = fit(part, degree)
        J_hold = polynomial.loss([(E80, c80)], rest.Z, rest.coef, rest.Y)
        l2 = relative_l2(data.problem, [(E, c)], data.Z_test)
    return {"degree": degree, "P": int(E.shape[0]), "J": J, "l2": math.nan if l2 is None else l2,
            "J_hold": J_hold, "rank": diag["rank"], "cond": diag["cond"], "cpu_seconds": seconds}


def max_degree(n_in: int, n_train: int) -> int:
    """The largest k with C(n_in + k, k) <= n_train / 4."""
    k = 0
    while polynomial.n_monomials(n_in, k + 1) * POINTS_PER_COEFFICIENT <= n_train:
        k += 1
    return k


def degree_study(spec: ExperimentSpec, tick: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The study's rows (:data:`COLUMNS`), k = 0 up to :func:`max_degree` or until J stops falling."""
    top = max_degree(experiment_data(spec).problem.n_in, spec.n_train)
    rows: list[dict[str, Any]] = []
    for k in range(top + 1):
        rows.append(degree_row(spec, k))
        if tick is not None:
            r = rows[-1]
            tick(f"degree {k} (P = {r['P']}): J = {r['J']:.3e}, l2 = {r['l2']:.3e}, "
                 f"J_hold = {r['J_hold']:.3e} ({r['cpu_seconds']:.2f} s)")
        if k >= 2 and rows[k]["J"] >= (1.0 - STALL) * rows[k - 2]["J"]:
            break
    return pd.DataFrame(rows, columns=COLUMNS)


def chosen_degree(df: pd.DataFrame) -> int:
    """The smallest degree whose held-out residual is within TOLERANCE of the best (never the test error);
    residuals below ROUND_OFF times degree 0's are round-off, all equal."""
    floor = ROUND_OFF * float(df.J_hold.iloc[0])
    good = df[df.J_hold <= max(TOLERANCE * df.J_hold.min(), floor)]
    return int(good.degree.min())


def read_runs(path: Path) -> pd.DataFrame | None:
    """A study's runs.csv, None when absent or of another layout."""
    if not path.is_file():
        return None
    df = pd.read_csv(path)
    return df[COLUMNS] if set(COLUMNS) <= set(df.columns) else None


def summary_text(df: pd.DataFrame, spec: ExperimentSpec) -> str:
    """summary.md: the degrees as a table, the stopping reason and the chosen degree."""
    from tabulate import tabulate

    k = chosen_degree(df)
    n_in = experiment_data(spec).problem.n_in
    top = max_degree(n_in, spec.n_train)
    stop = (f"P of degree {top + 1} would pass n_train / 4 = {spec.n_train // POINTS_PER_COEFFICIENT}"
            if int(df.degree.max()) == top else f"J fell by less than {STALL:.0%} over the last two degrees")
    rows = [[int(r.degree), int(r.P), sci(r.J), sci(r.l2), sci(r.J_hold), int(r.rank), f"{r.cond:.1e}",
             f"{r.cpu_seconds:.2f}", "←" if int(r.degree) == k else ""] for r in df.itertuples()]
    table = tabulate(rows, headers=["degree k", "P", "J", "l2 (test)", "J_hold", "rank", "cond", "CPU s",
                                    "chosen"], tablefmt="github", disable_numparse=True)
    return (f"# Polynomial degree study: {spec.name}\n\n"
            f"phi a polynomial of total degree <= k in the {n_in} inputs, psi = B phi, one least-squares solve "
            f"of the residual on the {spec.n_train} training points (`lysep study poly-degree {spec.name}`). "
            f"J, l2, CPU s: the fit on every training point; J_hold: the fit on the first "
            f"{FIT_FRACTION:.0%}, its residual loss on the rest. Stopped: {stop}. Chosen degree: the smallest "
            f"with J_hold <= {TOLERANCE:g} x the least J_hold (never the test error): k = {k}, P = "
            f"{int(df[df.degree == k].P.iloc[0])}. Deterministic: no seed enters.\n\n{table}\n")


def write_study(df: pd.DataFrame, out_dir: Path, spec: ExperimentSpec) -> list[Path]:
    """runs.csv and summary.md under ``out_dir`` (atomically)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_text(out_dir / "runs.csv", df.to_csv(index=False)),
            write_text(out_dir / "summary.md", summary_text(df, spec))]


# ---------------------------------------------------------------------------------------------
# How hard is each table.

def n_weights(n_in: int, L: int, M: int) -> int:
    """Weights and biases of an (L, M) FNN with n_in inputs (the parameters a network stores)."""
    return n_in * M + M + (L - 2) * (M * M + M) + M + 1


def paper_best(spec: ExperimentSpec, quantity: str) -> float:
    """The paper's least mean LySep ``quantity`` ("J" or "l2") over the sizes of its table (NaN: none)."""
    vals = [(published_row(spec.name, L, M, "lysep") or {}).get(quantity) for L, M in spec.sizes]
    means = [float(v[0]) for v in vals if v]
    return min(means) if means else math.nan


def reach(df: pd.DataFrame | None, quantity: str, target: float) -> str:
    """The smallest degree whose ``quantity`` is at or below ``target`` ("k = 2, P = 66, 0.2 s"), or how
    far the best degree stays above it."""
    if df is None or not len(df) or not math.isfinite(target):
        return "—"
    hit = df[df[quantity] <= target]
    if len(hit):
        r = hit.iloc[0]
        return f"k = {int(r.degree)}, P = {int(r.P)}, {r.cpu_seconds:.2g} s"
    best = df.loc[df[quantity].idxmin()]
    return f"not reached: {sci(best[quantity])} at k = {int(best.degree)} (P = {int(best.P)}), " \
           f"{best[quantity] / target:.2g}× above"


def _cell_text(J: float, l2: float, params: int, seconds: float) -> str:
    return f"{sci(J)} / {sci(l2)} ({params:,} p, {seconds:.2g} s)"


def held_out_note(name: str, study: pd.DataFrame, n_in: int, n_train: int) -> str:
    """What the held-out degree is, in words: the chosen k, how close its held-out residual J_hold is to
    TOLERANCE times the least one (and what the degree of that least one has), and whether the study was
    stopped by the P <= n_train / 4 cap while J_hold still fell ("elliptic-10d: k = 0, its J_hold 1.81x the
    least, against the tolerance 2 (the least at k = 2, whose J and l2 are 0.51x and 0.53x k = 0's)")."""
    k = chosen_degree(study)
    top = max_degree(n_in, n_train)
    best = study.loc[study.J_hold.idxmin()]
    row = study[study.degree == k].iloc[0]
    text = f"{name}: k = {k}"
    if int(best.degree) != k:
        text += (f", its J_hold {row.J_hold / best.J_hold:.3g}× the least, against the tolerance {TOLERANCE:g} "
                 f"(the least at k = {int(best.degree)}, whose J and ℓ2 are {best.J / row.J:.2g}× and "
                 f"{best.l2 / row.l2:.2g}× k = {k}'s)")
    if int(study.degree.max()) == top and int(best.degree) == top:
        text += f", where the cap P ≤ N/4 (k ≤ {top}) stops the study with J_hold still falling"
    return text


def _machine(record: Any) -> str:
    """The CPU of a record's fingerprint, without trademark signs ("Intel Xeon Processor, 2 CPUs")."""
    return str(record.versions.get("machine", "machine unrecorded")).replace("(R)", "").replace("(TM)", "")


def platform_note(records: list[Any]) -> str:
    """Where the CPU seconds of the block were measured, from the records' fingerprints: poly's records
    against those of the other solvers (named when they differ)."""
    def machines(solvers: tuple[str, ...]) -> str:
        return " and ".join(sorted({_machine(r) for r in records if r.solver in solvers})) or "no records"

    poly, others = machines(("poly",)), machines(OTHERS)
    if poly == others:
        return f"CPU seconds: every record on {poly}."
    return (f"CPU seconds from two platforms (the records' fingerprints): poly on {poly}; "
            f"{', '.join(display_name(s) for s in OTHERS)} on {others}.")


def hardness(specs: list[ExperimentSpec], sel: Selection, studies: dict[str, pd.DataFrame | None]) -> str:
    """The "how hard is each table" Markdown block (module docstring)."""
    from tabulate import tabulate

    rows, notes = [], []
    df_all = aggregate(sel.records)
    for spec in specs:
        n_in = experiment_data(spec).problem.n_in
        study = studies.get(spec.name)
        tJ, tl2 = paper_best(spec, "J"), paper_best(spec, "l2")
        if study is not None and len(study):
            notes.append(held_out_note(spec.name, study, n_in, spec.n_train))
            k = chosen_degree(study)
            r = study[study.degree == k].iloc[0]
            chosen = _cell_text(r.J, r.l2, int(r.P), r.cpu_seconds) + f", k = {k}"
        else:
            chosen = "—"
        row = [spec.name, f"{sci(tJ)} / {sci(tl2)}", reach(study, "J", tJ), reach(study, "l2", tl2), chosen]
        mine = df_all[df_all.experiment == spec.name]
        for solver in OTHERS:
            part = mine[(mine.solver == solver) & np.isfinite(mine.J_mean)]
            if not len(part):
                row.append("—")
                continue
            b = part.loc[part.J_mean.idxmin()]
            row.append(_cell_text(b.J_mean, b.l2_mean, n_weights(n_in, int(b.L), int(b.M)), b.seconds_mean)
                       + f", ({int(b.L)},{int(b.M)})")
        rows.append(row)
    headers = ["experiment", "paper's best LySep J / ℓ2", "poly reaches that J", "poly reaches that ℓ2",
               "poly, held-out degree: J / ℓ2"] + [f"{display_name(s)}, best cell: J / ℓ2" for s in OTHERS]
    table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    return (table + "\n\nPaper's best: the least published mean LySep J and ℓ2 over the table's sizes (each on its "
            "own). poly: φ a polynomial of total degree ≤ k in (t, x), ψ = B·φ, one least-squares solve on the "
            "same training set (`lysep study poly-degree`, RESULTS/<experiment>/study-poly-degree/); reaches: "
            "the smallest k whose J (ℓ2) is at or below the paper's, with its coefficient count P and CPU "
            "seconds; held-out degree: the smallest k whose residual on a held-out 20 % of the training points "
            f"(J_hold) is within {TOLERANCE:g}× the least, never chosen on the test error"
            + (f": {'; '.join(notes)}" if notes else "") + ". Best cell: the (L,M) of our archive with the least mean J over its seeds; J / ℓ2 means, p: "
            "the network's weights and biases (rfls and rfm fit only the M + 1 of the output layer), s: mean "
            "CPU seconds per run. " + platform_note(sel.records) + "\n")
