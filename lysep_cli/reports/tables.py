"""Aggregate run records into the paper's tables (LaTeX with booktabs/multirow, or Markdown).

Layout of the paper's Tables 1-4: rows (L, M) x model, columns "Actual loss", J, relative l2 error,
each cell "mean±std" in %.2e over the seeds.  "Actual loss" is the loss the model minimises: J_S for
LySep, J itself for the PINN-type solvers (the paper merges the two cells of a PINN row).

Additions to the paper's layout (never mixed into our cells):
- a "Seeds" column: seeds aggregated / seeds the spec requests, flagged when fewer (or diverged);
- under every PINN and LySep row, the published numbers of that row ("paper"), read from
  lysep_cli/data/published-tables.yaml;
- solvers other than PINN and LySep as extra rows, marked with a dagger (not in the paper).

Statistics: mean and sample standard deviation (ddof = 1, dividing by N − 1, as the paper's Matlab ``std``
and ``torch.std`` do; :func:`lysep_cli.reports.selection.sample_std`) over the runs with status "ok"; a
cell of one seed shows the mean alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from tabulate import tabulate

from lysep_cli.reports.selection import (Selection, aggregate, dash, display_name, order_solvers, pm,
                                         published, published_row)
from lysep_cli.solvers import PAPER_SOLVERS, seeds_of
from lysep_cli.specs import ExperimentSpec

J_SYMBOL = {"elliptic": "J^{e}", "parabolic": "J^{p}", "hyperbolic": "J^{h}"}


# ---------------------------------------------------------------------------------------------
# Cells.

def _pair(v: list[float] | None, latex: bool) -> str:
    return pm(float(v[0]), float(v[1]), latex) if v is not None else dash(latex)


def _table_rows(df: pd.DataFrame, spec: ExperimentSpec, latex: bool, iterations: int,
                left_out: str | None) -> tuple[list[list], list[str]]:
    """Rows [size, model, actual, J, l2, seeds, merged, is_paper] for one experiment, and notes.

    ``left_out``: the "Not shown: ..." note of the records that do not match the spec (None if none).
    """
    have_sizes = {(int(L), int(M)) for L, M in zip(df["L"], df["M"])}
    sizes = [s for s in spec.sizes if s in have_sizes] + sorted(have_sizes - set(spec.sizes))
    notes: list[str] = []
    rows: list[list] = []
    short = False
    flag = "$^{\\ddagger}$" if latex else " ‡"
    for L, M in sizes:
        sub = df[(df["L"] == L) & (df["M"] == M)]
        for solver in order_solvers(set(sub["solver"]) | set(PAPER_SOLVERS)):
            requested = len(seeds_of(solver, spec.seeds))
            found = sub[sub["solver"] == solver]
            paper = published_row(spec.name, L, M, solver) if solver in PAPER_SOLVERS else None
            if found.empty and paper is None:
                continue
            model = display_name(solver)
            if solver not in PAPER_SOLVERS:
                model = (model.replace("_", "\\_") + "$^{\\dagger}$") if latex else model + " †"
            if found.empty:
                rows.append([(L, M), model, None, dash(latex), dash(latex), f"0/{requested}{flag}", True, False])
                short = True
            else:
                r = found.iloc[0]
                has_js = np.isfinite(r["J_S_mean"])
                actual = pm(r["J_S_mean"], r["J_S_std"], latex) if has_js else None
                seeds = f"{int(r['n_seeds'])}/{requested}"
                if r["n_diverged"]:
                    seeds += f" ({int(r['n_diverged'])} div.)"
                if r["n_seeds"] < requested:
                    seeds += flag
                    short = True
                rows.append([(L, M), model, actual, pm(r["J_mean"], r["J_std"], latex),
                             pm(r["l2_mean"], r["l2_std"], latex), seeds, not has_js, False])
            if paper is not None:
                has_js = paper.get("J_S") is not None
                rows.append([(L, M), "paper", _pair(paper.get("J_S"), latex) if has_js else None,
                             _pair(paper.get("J"), latex), _pair(paper.get("l2"), latex),
                             str(published()[spec.name].get("seeds", "")), not has_js, True])
    sign, js = ("$\\pm$", "$J_S$") if latex else ("±", "J_S")
    quote = ("``", "''") if latex else ('"', '"')
    if any(s not in PAPER_SOLVERS for s in set(df["solver"])):
        notes.append(("$^{\\dagger}$" if latex else "†") + " not in the paper (extra baseline of this project).")
    if "poly" in set(df["solver"]):
        degree = f" {spec.solvers['poly'].degree}" if "poly" in spec.solvers else " k"  # type: ignore[attr-defined]
        notes.append(f"poly: the least-squares polynomial of total degree{degree} (docs/baselines.md), M = its P "
                     "coefficients; it does not depend on the seed: one run (the first seed) stands for all.")
    notes.append("Seeds: runs aggregated / seeds requested by the spec"
                 + ("; " + flag.strip() + " fewer than requested" if short else "")
                 + "; diverged runs are counted apart and excluded from the statistics.")
    n1 = "$N-1$" if latex else "N − 1"
    notes.append(f"Cells: mean{sign}std, the sample std over the seeds (divides by {n1}, as the paper's "
                 f"std; one seed: the mean alone); Actual loss is {js} for LySep and "
                 "J itself for the PINN-type models (merged cell).")
    if any(row[7] for row in rows):
        notes.append(f"Rows {quote[0]}paper{quote[1]}: the published numbers of paper Table {spec.table} "
                     "(its Seeds column: the paper's seed count), not ours.")
    if iterations != spec.iterations:
        notes.append(f"Iterations: {iterations} (the spec asks for {spec.iterations}).")
    missing = [s for s in spec.sizes if s not in have_sizes]
    if missing:
        notes.append("No runs yet for (L,M) = " + ", ".join(f"({L},{M})" for L, M in missing) + ".")
    if left_out:
        notes.append(left_out)
    return rows, notes


def _title(spec: ExperimentSpec) -> str:
    where = f"paper Table {spec.table}" if spec.table is not None else "not in the paper"
    return f"{spec.name} ({where}): {spec.pde}, d = {spec.d}, n_train = {spec.n_train}, n_test = {spec.n_test}"


# ---------------------------------------------------------------------------------------------
# Renderers.

def render_markdown(df: pd.DataFrame, spec: ExperimentSpec, iterations: int | None = None,
                    left_out: str | None = None) -> str:
    iterations = spec.iterations if iterations is None else iterations
    if df.empty:
        return f"### {_title(spec)}\n\n_No runs matching the spec ({iterations} iterations)._" \
               + (f" {left_out}" if left_out else "") + "\n"
    rows, notes = _table_rows(df, spec, False, iterations, left_out)
    body, last = [], None
    for size, model, actual, J, l2, seeds, merged, is_paper in rows:
        label = f"({size[0]},{size[1]})" if size != last else ""
        last = size
        if is_paper:
            model = "↳ paper"
        if merged:
            actual = "= J" if J != "—" else "—"
        body.append([label, model, actual if actual is not None else "—", J or "—", l2 or "—", seeds])
    headers = ["(L,M)", "Model", "Actual loss", "J", "ℓ2 error", "Seeds"]
    table = tabulate(body, headers=headers, tablefmt="pipe", disable_numparse=True)
    return f"### {_title(spec)}\n\n{table}\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def render_latex(df: pd.DataFrame, spec: ExperimentSpec, iterations: int | None = None,
                 left_out: str | None = None) -> str:
    label = f"tab:lysep-{spec.name}"
    iterations = spec.iterations if iterations is None else iterations
    if df.empty:
        return f"% {spec.name}: no runs matching the spec ({iterations} iterations)." \
               + (f" {left_out}" if left_out else "") + "\n"
    rows, notes = _table_rows(df, spec, True, iterations, left_out)
    J = J_SYMBOL.get(spec.pde, "J")
    out = ["\\begin{table}[!ht]", "\\centering", "\\fontsize{9}{10.5}\\selectfont",
           "\\setlength{\\tabcolsep}{5pt}", "\\begin{tabular}{clcccc}", "\\toprule",
           f"$(L,M)$ & Models & Actual loss & ${J}$ & $\\hat{{\\mathcal{{E}}}}_{{\\ell^2}}$ & Seeds \\\\",
           "\\midrule"]
    groups: dict[tuple[int, int], list] = {}
    for row in rows:
        groups.setdefault(row[0], []).append(row)
    for gi, (size, group) in enumerate(groups.items()):
        if gi:
            out.append("\\midrule")
        out.append(f"\\multirow{{{len(group)}}}{{*}}{{$({size[0]},{size[1]})$}}")
        for _, model, actual, Jc, l2, seeds, merged, is_paper in group:
            it = (lambda s: f"\\textit{{{s}}}") if is_paper else (lambda s: s)
            name = "\\quad\\textit{paper}" if is_paper else model
            if merged:
                loss = f"\\multicolumn{{2}}{{c}}{{{it(Jc)}}}"
            else:
                loss = f"{it(actual)} & {it(Jc)}"
            seeds_cell = it(seeds) if seeds else ""
            out.append(f"& {name} & {loss} & {it(l2)} & {seeds_cell} \\\\")
    out += ["\\bottomrule", "\\end{tabular}",
            "\\par\\smallskip", "\\parbox{0.95\\linewidth}{\\footnotesize " + " ".join(notes) + "}",
            f"\\caption{{\\em {_latex_escape(_title(spec))}: final actual loss, ${J}$ and relative "
            "$\\ell^2$ test error (mean$\\pm$sample std over the seeds, $N-1$).}",
            f"\\label{{{label}}}", "\\end{table}"]
    return "\n".join(out) + "\n"


def _latex_escape(text: str) -> str:
    return text.replace("_", "\\_").replace("&", "\\&").replace("%", "\\%")


LATEX_PREAMBLE = ("\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n"
                  "\\usepackage{booktabs,multirow}\n\\begin{document}\n")


def render_tables(selection: Selection, specs: list[ExperimentSpec], fmt: str, standalone: bool = False) -> str:
    """The table of every experiment in ``specs`` from the selected records ("latex" or "markdown").

    Only ``selection.records`` (records matching the spec) are aggregated; the records left out are
    counted in a note under each table.  ``standalone`` wraps LaTeX output in a compilable document.
    """
    if fmt not in ("latex", "markdown"):
        raise ValueError(f"unknown format {fmt!r} (latex | markdown)")
    df = aggregate(selection.records)
    parts = []
    for spec in specs:
        sub = df[df["experiment"] == spec.name]
        its, note = selection.iterations.get(spec.name, spec.iterations), selection.note(spec.name)
        if fmt == "latex":
            parts.append(render_latex(sub, spec, its, note and _latex_escape(note)))
        else:
            parts.append(render_markdown(sub, spec, its, note))
    text = "\n".join(parts)
    if fmt == "latex" and standalone:
        text = LATEX_PREAMBLE + text + "\\end{document}\n"
    return text
