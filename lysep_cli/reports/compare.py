"""Side-by-side comparison of our runs with the paper's published tables (``lysep compare``).

For every cell (experiment, (L, M), model, quantity) it puts our mean ± sample std over the seeds (from
the run records that match the spec, aggregated by :func:`lysep_cli.reports.selection.aggregate`; the std
divides by N − 1 as the paper's does) beside the published mean ± std
(``lysep_cli/data/published-tables.yaml``) and their ratio ours/paper with a 95 % interval; per (L, M)
whether LySep beats PINN on J and on the l2 error, in our runs and in the paper; and a one-line summary
per experiment.

The ratio is of the arithmetic means, r = mean(ours) / mean(paper), as the tables print them.  Its
interval is a percentile bootstrap over our seeds (:func:`mean_interval`: RESAMPLES resamples of the N
seeds with replacement, drawn from ``numpy.random.default_rng(BOOTSTRAP_SEED)`` afresh for every cell, so
the output is deterministic), divided by the paper's mean, which is taken as fixed (the paper states a
std but no interval for it).  A bootstrap and not a t-interval in log space because the ratio stated is
of arithmetic means, not geometric ones.  With few seeds the percentile bootstrap is narrow (it
undercovers: with N = 3 a resample takes one of 10 multisets); with one seed there is no interval.

"Within k×" (:func:`judge`) is decided on the interval: "within" when all of it lies in [1/k, k],
"outside" when all of it lies outside, "undecided" when it straddles 1/k or k, or when there is no
interval (one seed).  The per-cell column and the headline use k = 3, the summary line k = 3 and 10.

Our numbers come only from the records; the published ones only from the shipped YAML file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lysep_cli.reports.selection import (PAPER_MODELS, QUANTITIES, STD_NOTE, NothingToShow, Selection, aggregate,
                                         dash, display_name, pm, published, published_frame, solver_key)
from lysep_cli.store.schema import RunRecord

#: a cell is "within 10x" of the paper when the interval of ours/paper lies in [1/WITHIN, WITHIN]
WITHIN = 10.0
#: the tighter factor of the per-cell column, the headline and the summary ("within 3×")
CLOSE = 3.0
#: the interval on ours/paper: its level, the bootstrap resamples and the seed of their generator
LEVEL = 0.95
RESAMPLES = 10_000
BOOTSTRAP_SEED = 0

CELL_COLUMNS = [
    "experiment", "L", "M", "solver", "quantity", "ours_mean", "ours_std", "n_seeds", "n_diverged",
    "paper_mean", "paper_std", "paper_seeds", "ratio", "ratio_lo", "ratio_hi", "within_3x", "within_10x",
]
VERDICT_COLUMNS = ["experiment", "L", "M", "quantity", "ours", "paper", "agree"]


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


# --------------------------------------------------------------------------- the interval and the verdict
def mean_interval(values: np.ndarray, level: float = LEVEL, resamples: int = RESAMPLES,
                  seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """The percentile-bootstrap ``level`` interval (lo, hi) of the arithmetic mean of ``values`` (shape
    (N,), one value per seed).

    ``resamples`` resamples of the N seeds with replacement: an index array of shape (resamples, N) from
    ``numpy.random.default_rng(seed).integers(0, N, ...)``, the mean of each row (shape (resamples,)),
    and its (1 - level)/2 and (1 + level)/2 quantiles (``numpy.quantile``, linear interpolation).
    (NaN, NaN) when N < 2 or a value is not finite.
    """
    x = np.asarray(values, dtype=float)
    if x.size < 2 or not np.isfinite(x).all():
        return math.nan, math.nan
    idx = np.random.default_rng(seed).integers(0, x.size, size=(resamples, x.size))
    lo, hi = np.quantile(x[idx].mean(axis=1), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def judge(lo: float, hi: float, factor: float) -> str:
    """"within" when the interval [lo, hi] of ours/paper lies in [1/factor, factor], "outside" when it
    lies wholly outside, "undecided" when it straddles a bound or is missing (NaN: one seed)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "undecided"
    if 1 / factor <= lo and hi <= factor:
        return "within"
    if hi < 1 / factor or lo > factor:
        return "outside"
    return "undecided"


def _seed_values(records: list[RunRecord]) -> dict[tuple[int, int, str, str], np.ndarray]:
    """(L, M, solver, quantity) -> the final values of the ok runs (shape (N,), seed order), the values
    :func:`lysep_cli.reports.selection.aggregate` averages."""
    out: dict[tuple[int, int, str, str], list[float]] = {}
    for r in sorted((r for r in records if r.ok), key=lambda r: r.seed):
        for q in QUANTITIES:
            v = getattr(r.final, q)
            out.setdefault((r.L, r.M, r.solver, q), []).append(math.nan if v is None else float(v))
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


# --------------------------------------------------------------------------- the comparison
@dataclass
class Comparison:
    """Everything ``render_comparison`` prints, as data.

    cells : one row per (experiment, L, M, solver, quantity) with columns CELL_COLUMNS; ours_* are NaN and
        n_seeds 0 for missing runs, paper_* NaN for solvers/sizes the paper does not have. n_seeds counts the
        runs aggregated (status "ok"), n_diverged the diverged runs (not in the mean); ours_std is the
        sample std (N − 1). ratio = ours_mean / paper_mean, [ratio_lo, ratio_hi] its 95 % interval
        (:func:`mean_interval` over our seeds / paper_mean; NaN with one seed), within_3x and within_10x
        the verdict of :func:`judge` ("within" | "outside" | "undecided"; None where there is no ratio).
    verdicts : one row per (experiment, L, M, quantity in J, l2): does LySep beat PINN (mean strictly lower)?
        ``ours``/``paper`` are True/False or None when a side is missing; ``agree`` None unless both known.
    summary : experiment -> dict(cells, compared, within, outside, undecided (the 10x verdicts), within_3x,
        outside_3x, undecided_3x, better, worse, missing, verdicts, agree); better / worse compare the
        point ratio with 1.
    info : experiment -> dict(table, paper_iterations, paper_seeds, iterations (ours), diverged (number
        of diverged runs), solvers (ours), left_out (the "Not shown: ..." note of the records that do not
        match the spec, or None)).
    """

    experiments: list[str]
    cells: pd.DataFrame
    verdicts: pd.DataFrame
    summary: dict[str, dict[str, int]]
    info: dict[str, dict[str, Any]]


def build_comparison(selection: Selection, experiments: list[str]) -> Comparison:
    """Our aggregated runs (the selected records) and the published cells of ``experiments``."""
    pub_tables = published()
    pub = published_frame()
    agg = aggregate(selection.records)
    # An experiment not in the paper's tables (a study such as elliptic-10d-depth, a problem of your own)
    # has no published cells: its rows are ours alone.
    experiments = list(dict.fromkeys(experiments))

    cells: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    summary: dict[str, dict[str, int]] = {}
    info: dict[str, dict[str, Any]] = {}

    for exp in experiments:
        block = pub_tables.get(exp, {})
        p = pub[pub.experiment == exp]
        a = agg[agg.experiment == exp] if len(agg) else agg
        recs = selection.of(exp)
        values = _seed_values(recs)
        info[exp] = {
            "table": block.get("table"),
            "paper_iterations": block.get("iterations"),
            "paper_seeds": block.get("seeds"),
            "iterations": selection.iterations.get(exp),
            "diverged": sum(1 for r in recs if not r.ok),
            "solvers": sorted({r.solver for r in recs}, key=solver_key),
            "left_out": selection.note(exp),
        }

        sizes = {(int(L), int(M)) for L, M in zip(p.L, p.M)}
        if len(a):
            sizes |= {(int(L), int(M)) for L, M in zip(a.L, a.M)}
        solvers = set(p.solver) | (set(a.solver) if len(a) else set())

        exp_cells: list[dict[str, Any]] = []
        for L, M in sorted(sizes):
            for solver in sorted(solvers, key=solver_key):
                ours = a[(a.L == L) & (a.M == M) & (a.solver == solver)] if len(a) else a
                o = ours.iloc[0] if len(ours) else None
                for q in QUANTITIES:
                    pc = p[(p.L == L) & (p.M == M) & (p.solver == solver) & (p.quantity == q)]
                    o_mean = _num(o[f"{q}_mean"]) if o is not None and f"{q}_mean" in o else math.nan
                    o_std = _num(o[f"{q}_std"]) if o is not None and f"{q}_std" in o else math.nan
                    if not len(pc) and (o is None or math.isnan(o_mean)):
                        continue  # neither side has this quantity (J_S of a PINN-type solver)
                    p_mean = float(pc["mean"].iloc[0]) if len(pc) else math.nan
                    p_std = float(pc["std"].iloc[0]) if len(pc) else math.nan
                    ratio = o_mean / p_mean if len(pc) and p_mean != 0 and not math.isnan(o_mean) else math.nan
                    lo = hi = math.nan
                    if math.isfinite(ratio):
                        m_lo, m_hi = mean_interval(values.get((L, M, solver, q), np.empty(0)))
                        lo, hi = m_lo / p_mean, m_hi / p_mean
                    judged = {k: judge(lo, hi, k) if math.isfinite(ratio) else None for k in (CLOSE, WITHIN)}
                    exp_cells.append({
                        "experiment": exp, "L": L, "M": M, "solver": solver, "quantity": q,
                        "ours_mean": o_mean, "ours_std": o_std,
                        "n_seeds": int(o["n_seeds"]) if o is not None else 0,
                        "n_diverged": int(_num(o.get("n_diverged", 0)) or 0) if o is not None else 0,
                        "paper_mean": p_mean, "paper_std": p_std,
                        "paper_seeds": block.get("seeds") if len(pc) else None, "ratio": ratio,
                        "ratio_lo": lo, "ratio_hi": hi,
                        "within_3x": judged[CLOSE], "within_10x": judged[WITHIN],
                    })
        cells.extend(exp_cells)

        # LySep vs PINN per size
        exp_verdicts = []
        for L, M in sorted(sizes):
            for q in ("J", "l2"):
                def beats(side: str) -> bool | None:
                    vals = {}
                    for s in ("lysep", "pinn"):
                        c = [c for c in exp_cells if (c["L"], c["M"], c["solver"], c["quantity"]) == (L, M, s, q)]
                        v = c[0][f"{side}_mean"] if c else math.nan
                        if math.isnan(v):
                            return None
                        vals[s] = v
                    return bool(vals["lysep"] < vals["pinn"])
                o, pp = beats("ours"), beats("paper")
                exp_verdicts.append({"experiment": exp, "L": L, "M": M, "quantity": q, "ours": o, "paper": pp,
                                     "agree": None if o is None or pp is None else o == pp})
        verdicts.extend(exp_verdicts)

        paper_cells = [c for c in exp_cells if not math.isnan(c["paper_mean"])]
        compared = [c for c in paper_cells if not math.isnan(c["ratio"])]
        summary[exp] = {
            "cells": len(paper_cells),
            "compared": len(compared),
            **{f"{v}{tag}": sum(1 for c in compared if c[key] == v)
               for key, tag in (("within_10x", ""), ("within_3x", "_3x"))
               for v in ("within", "outside", "undecided")},
            "better": sum(1 for c in compared if c["ratio"] < 1),
            "worse": sum(1 for c in compared if c["ratio"] > 1),
            "missing": len(paper_cells) - len(compared),
            "verdicts": sum(1 for v in exp_verdicts if v["agree"] is not None),
            "agree": sum(1 for v in exp_verdicts if v["agree"]),
        }

    return Comparison(experiments, pd.DataFrame(cells, columns=CELL_COLUMNS),
                      pd.DataFrame(verdicts, columns=VERDICT_COLUMNS), summary, info)


# --------------------------------------------------------------------------- formatting
def _ratio(x: float, lo: float = math.nan, hi: float = math.nan) -> str:
    """"r [lo, hi]" (3 significant digits); "r" alone without an interval; "" without a ratio."""
    if math.isnan(x):
        return ""
    return f"{x:#.3g} [{lo:#.3g}, {hi:#.3g}]" if math.isfinite(lo) and math.isfinite(hi) else f"{x:#.3g}"


def _verdict(v: Any) -> str:
    return v if isinstance(v, str) else ""


def legend() -> str:
    """What the comparison's columns mean (printed above the Markdown and the LaTeX comparison)."""
    return (f"Ours: mean {STD_NOTE}; n: our seeds / the paper's. Paper: the published mean ± std. "
            f"Ours/paper: the ratio of the means (below 1: ours lower, i.e. better) and, in brackets, its "
            f"{LEVEL:.0%} interval: a percentile bootstrap of our mean over our seeds ({RESAMPLES:,} resamples, "
            f"numpy default_rng({BOOTSTRAP_SEED})) divided by the paper's mean, taken as fixed; none for one "
            f"seed. {CLOSE:g}×: within when the whole interval lies in [1/{CLOSE:g}, {CLOSE:g}], outside when "
            f"it lies wholly outside, else undecided (also for one seed); the summary's {WITHIN:g}x is judged "
            f"the same way. — : no run record (or no published value).")


def _counted(s: dict[str, int], tag: str) -> str:
    """", k undecided" (only when k > 0) for the verdicts ``tag`` ("" for 10x, "_3x") of a summary."""
    return f" ({s['undecided' + tag]} undecided)" if s["undecided" + tag] else ""


def _yes(v: bool | None, dash: str = "—") -> str:
    return dash if v is None else ("yes" if v else "no")


def summary_line(exp: str, s: dict[str, int]) -> str:
    """The one-line summary of an experiment (plain text)."""
    if not s["cells"]:
        return f"{exp}: no published cells to compare with"
    line = (f"{exp}: {s['within']}/{s['cells']} cells within {WITHIN:g}x of the paper{_counted(s, '')}, "
            f"{s['within_3x']}/{s['cells']} within {CLOSE:g}x{_counted(s, '_3x')}, judged on the {LEVEL:.0%} "
            f"interval of ours/paper; {s['better']} better (ours < paper), {s['worse']} worse (ours > paper)")
    if s["missing"]:
        line += f"; {s['missing']} missing"
    if s["verdicts"]:
        line += f"; LySep-vs-PINN verdict agrees with the paper in {s['agree']}/{s['verdicts']}"
    return line


class _Fmt:
    """Markdown or LaTeX spelling of the pieces of the report."""

    def __init__(self, fmt: str):
        if fmt not in ("markdown", "latex"):
            raise ValueError(f"unknown format {fmt!r}; choose markdown or latex")
        self.latex = fmt == "latex"

    def quantity(self, q: str) -> str:
        if self.latex:
            return {"J_S": r"$J_S$", "J": r"$J$", "l2": r"$\ell_2$"}[q]
        return {"J_S": "J_S", "J": "J", "l2": "l2"}[q]

    def pm(self, mean: float, std: float) -> str:
        return pm(mean, std, self.latex, spaced=True)

    def dash(self) -> str:
        return dash(self.latex)

    def text(self, s: str) -> str:
        if not self.latex:
            return s
        for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                     ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("—", "--"), ("±", r"$\pm$"), ("†", r"$^\dagger$"), ("ℓ2", r"$\ell_2$"), ("<", "$<$"),
                     (">", "$>$"), ("−", "$-$"), ("×", r"$\times$")):
            s = s.replace(a, b)
        return s

    def table(self, header: list[str], rows: list[list[str]], align: str) -> list[str]:
        if self.latex:
            out = [r"\begin{tabular}{" + align + "}", r"\toprule", " & ".join(header) + r" \\", r"\midrule"]
            out += [" & ".join(r) + r" \\" for r in rows]
            out += [r"\bottomrule", r"\end{tabular}"]
            return out
        out = ["| " + " | ".join(header) + " |",
               "|" + "|".join("---:" if a == "r" else ":---:" if a == "c" else "---" for a in align) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return out


def render_comparison(selection: Selection, experiments: list[str], fmt: str) -> str:
    """The comparison of the selected records of ``experiments`` with the published tables, as Markdown
    or LaTeX.  The LaTeX output is a fragment (needs ``booktabs``); input it into a document.
    """
    f = _Fmt(fmt)
    comp = build_comparison(selection, experiments)
    out: list[str] = []
    if f.latex:
        out += ["% lysep compare: our runs vs the published tables (requires \\usepackage{booktabs})", "",
                f.text(legend()), ""]
    else:
        title = ("Our runs vs the published tables" if any(e in published() for e in comp.experiments) else
                 "Our runs (none of these experiments is in the paper's tables: no published column)")
        out += [f"# {title}", "", legend(), ""]

    for exp in comp.experiments:
        inf, s = comp.info[exp], comp.summary[exp]
        cells = comp.cells[comp.cells.experiment == exp]
        title = f"{exp} (paper Table {inf['table']})" if inf["table"] is not None else f"{exp} (not in the paper)"
        note = f"Our runs: iterations {inf['iterations']}"
        if inf["paper_iterations"] is not None:
            note += f" (paper: {inf['paper_iterations']})"
        if inf["diverged"]:
            note += f"; {inf['diverged']} diverged run(s)"
        note += "."
        if inf["left_out"]:
            note += " " + inf["left_out"]
        if f.latex:
            out += [r"\subsection*{" + f.text(title) + "}", f.text(note), ""]
        else:
            out += [f"## {title}", "", note, ""]

        in_paper = exp in published()
        rows = []
        short = False
        for c in cells.itertuples(index=False):
            has_paper = c.paper_seeds is not None and not pd.isna(c.paper_seeds)
            n = f"{c.n_seeds}/{int(c.paper_seeds)}" if has_paper else f"{c.n_seeds}"
            if c.n_diverged:
                n += f" (+{c.n_diverged} diverged)"
            if selection.missing_seeds(exp, c.solver, int(c.n_seeds) + int(c.n_diverged)):
                n += "$^{\\ddagger}$" if f.latex else " ‡"  # whatever the paper's count: the spec asked for them
                short = True
            ours = f.pm(c.ours_mean, c.ours_std) if c.n_seeds else f"{f.dash()} (0 seeds)"
            paper = [f.pm(c.paper_mean, c.paper_std), _ratio(c.ratio, c.ratio_lo, c.ratio_hi),
                     _verdict(c.within_3x)] if in_paper else []
            rows.append([f"({c.L},{c.M})", f.text(display_name(c.solver)), f.quantity(c.quantity), ours, n]
                        + paper)
        interval = f"Ours/paper [{LEVEL:.0%}]"
        header = ["(L,M)", "Model", "Quantity", "Ours", "n"] + (["Paper", interval, f"{CLOSE:g}×"] if in_paper else [])
        if f.latex:
            header = [r"$(L,M)$", "Model", "Quantity", "Ours", "$n$"] + (
                ["Paper", f.text(interval), f"${CLOSE:g}\\times$"] if in_paper else [])
        out += f.table(header, rows, "llcrcrrc"[:len(header)]) if rows else [f.text("(no cells)")]
        out.append("")
        if short:
            out += [("$^{\\ddagger}$" if f.latex else "‡") + f.text(" fewer runs than the seeds the spec asks for "
                                                                     "(lysep status names the missing seeds)."), ""]

        v = comp.verdicts[comp.verdicts.experiment == exp]
        if len(v):
            vrows = []
            for (L, M), g in v.groupby(["L", "M"], sort=True):
                row = [f"({L},{M})"]
                for q in ("J", "l2"):
                    gq = g[g.quantity == q].iloc[0]
                    row += [_yes(gq.ours, f.dash())] + ([_yes(gq.paper, f.dash())] if in_paper else [])
                vrows.append(row)
            if f.latex:
                vh = [r"$(L,M)$", r"$J$: ours", r"$J$: paper", r"$\ell_2$: ours", r"$\ell_2$: paper"]
            else:
                vh = ["(L,M)", "J: ours", "J: paper", "l2: ours", "l2: paper"]
            vh = vh if in_paper else [h for h in vh if "paper" not in h]
            out += ["LySep beats PINN (lower mean):", ""]
            out += f.table(vh, vrows, "lcccc"[:len(vh)])
            out.append("")

        out += _every_solver(selection, exp, f)
        line = summary_line(exp, s)
        out += [(r"\noindent\textbf{Summary.} " + f.text(line)) if f.latex else f"**Summary** {line}", ""]

    return "\n".join(out).rstrip() + "\n"


def _every_solver(selection: Selection, experiment: str, f: "_Fmt") -> list[str]:
    """Every solver of the experiment at every size it ran, beyond the paper's cells too (rfls, rfm and
    the other baselines): mean J, l2 and seconds per run, best l2 first."""
    df = aggregate(selection.of(experiment))
    if df.empty or set(df["solver"]) <= set(PAPER_MODELS.values()):
        return []
    df = df.sort_values(["l2_mean", "seconds_mean"], na_position="last")
    rows = [[f"({r.L},{r.M})", f.text(display_name(r.solver) + ("" if r.solver in PAPER_MODELS.values() else " †")),
             f.pm(r.J_mean, r.J_std), f.pm(r.l2_mean, r.l2_std), str(r.n_seeds), f"{r.seconds_mean:.3g}"]
            for r in df.itertuples(index=False)]
    header = ["(L,M)", "Model", "J", "ℓ2 error" if not f.latex else r"$\ell_2$ error", "n", "s / run"]
    intro = ("Every model run, the paper's and beyond († not in the paper), best mean ℓ2 first; s / run: mean "
             "CPU seconds of one run (one BLAS thread; wall seconds for records that hold no CPU time):")
    return [f.text(intro), ""] + f.table(header, rows, "llrrrr") + [""]


def _span(ratios: list[float]) -> str:
    """"lo-hi× (k/n)" over the sizes of a (model, quantity); "—" when none has runs."""
    got = [r for r in ratios if not math.isnan(r)]
    if not got:
        return "—"
    lo, hi = min(got), max(got)
    text = f"{lo:.2g}×" if len(got) == 1 or f"{lo:.2g}" == f"{hi:.2g}" else f"{lo:.2g}-{hi:.2g}×"
    return f"{text} ({len(got)}/{len(ratios)})"


def render_headline(selection: Selection, experiments: list[str]) -> str:
    """One Markdown row per paper table: ours/paper mean ratios (range over the sizes that have runs, and
    how many of the table's sizes that is) for PINN and LySep J and l2, the cells within 3x (judged on
    the 95 % interval of each ratio, :func:`judge`) and how many are undecided, and the LySep-beats-PINN
    verdict agreement."""
    in_paper = [e for e in experiments if e in published()]
    if not in_paper:
        raise NothingToShow(f"--headline: none of {', '.join(experiments)} is in the paper's tables, so there is "
                            "no published number to set ours beside (lysep compare without --headline shows ours)")
    comp = build_comparison(selection, in_paper)
    rows = []
    for exp in comp.experiments:
        c = comp.cells[comp.cells.experiment == exp]
        c = c[c.paper_mean.notna()]
        spans = []
        for solver in ("pinn", "lysep"):
            for q in ("J", "l2"):
                spans.append(_span(list(c[(c.solver == solver) & (c.quantity == q)].ratio)))
        compared = c[c.ratio.notna()]
        s = comp.summary[exp]
        close = f"{s['within_3x']}/{len(compared)} ({len(c)})"
        if s["undecided_3x"]:
            close += f", {s['undecided_3x']} undecided"
        verdict = f"{s['agree']}/{s['verdicts']}" if s["verdicts"] else "—"
        rows.append([f"{comp.info[exp]['table']}: {exp}", *spans, close, verdict])
    header = ["Paper table", "PINN J", "PINN ℓ2", "LySep J", "LySep ℓ2", f"within {CLOSE:g}× (cells run, of)",
              "LySep beats PINN: agrees"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "Ours / paper: ratio of the means (ours over the seeds run), range over the table's sizes that have runs "
              "(how many of them); below 1 ours is lower (better). Cells: (size, model, quantity) with a "
              f"published value; LySep's J_S counts as a cell. Within {CLOSE:g}×: the whole {LEVEL:.0%} interval "
              f"of the cell's ratio (percentile bootstrap of our mean over the seeds, the paper's mean taken as "
              f"fixed) lies in [1/{CLOSE:g}, {CLOSE:g}]; undecided: it straddles a bound, or one seed. Verdict: does LySep have the lower mean J "
              "(ℓ2) than PINN, per size, in our runs as in the paper."]
    return "\n".join(lines) + "\n"


__all__ = ["render_comparison", "render_headline", "build_comparison", "Comparison", "summary_line", "QUANTITIES", "PAPER_MODELS",
           "WITHIN", "CLOSE", "LEVEL", "RESAMPLES", "BOOTSTRAP_SEED", "mean_interval", "judge", "legend"]
