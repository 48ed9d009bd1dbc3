"""Aggregate run records into the paper's tables (LaTeX with booktabs/multirow, or Markdown).

Layout of the paper's Tables 1-4: rows (L, M) x model, columns "Actual loss", J, relative l2 error,
each cell "mean±std" in %.2e over the seeds.  "Actual loss" is the loss the model minimises: J_S for
LySep, J itself for the PINN-type solvers (the paper merges the two cells of a PINN row).

Additions to the paper's layout (never mixed into our cells):
- a "Seeds" column: seeds aggregated / seeds the spec requests, flagged when fewer (or diverged);
- under every PINN and LySep row, the published numbers of that row ("paper"), read from
  lysep_cli/data/published-tables.yaml;
- solvers other than PINN and LySep as extra rows, marked with a dagger (not in the paper).

Statistics: mean and population standard deviation (ddof = 0) over the runs with status "ok".
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
import yaml
from tabulate import tabulate

from .solvers import PAPER_SOLVERS
from .specs import ExperimentSpec

COLUMNS = ["experiment", "L", "M", "solver", "n_runs", "n_seeds", "n_diverged", "J_S_mean", "J_S_std",
           "J_mean", "J_std", "l2_mean", "l2_std", "seconds_mean", "iterations"]
MODEL_NAMES = {"pinn": "PINN", "lysep": "LySep"}
PAPER_MODELS = {"PINN": "pinn", "LySep": "lysep"}
J_SYMBOL = {"elliptic": "J^{e}", "parabolic": "J^{p}", "hyperbolic": "J^{h}"}


def _float(x: Any) -> float:
    return float("nan") if x is None else float(x)


def aggregate(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (experiment, L, M, solver).

    Columns: n_runs (records), n_seeds (runs with status "ok", the ones aggregated), n_diverged,
    J_S_mean, J_S_std, J_mean, J_std, l2_mean, l2_std (over the ok runs; NaN when none or when the
    solver has no J_S), seconds_mean (all runs), iterations (the common count, -1 when mixed).
    """
    if not records:
        return pd.DataFrame(columns=COLUMNS)
    flat = pd.DataFrame([{
        "experiment": r["experiment"], "L": int(r["L"]), "M": int(r["M"]), "solver": r["solver"],
        "ok": r.get("status") == "ok", "J": _float(r["final"].get("J")), "J_S": _float(r["final"].get("J_S")),
        "l2": _float(r["final"].get("l2")), "seconds": _float(r.get("seconds")),
        "iterations": int(r.get("iterations", -1)),
    } for r in records])
    rows = []
    for (exp, L, M, solver), g in flat.groupby(["experiment", "L", "M", "solver"], sort=True):
        ok = g[g["ok"]]
        row = {"experiment": exp, "L": L, "M": M, "solver": solver, "n_runs": len(g),
               "n_seeds": len(ok), "n_diverged": int((~g["ok"]).sum())}
        for f in ("J_S", "J", "l2"):
            vals = ok[f].to_numpy(dtype=float)
            good = vals[np.isfinite(vals)]
            full = len(good) == len(vals) and len(vals) > 0
            row[f"{f}_mean"] = float(np.mean(good)) if full else float("nan")
            row[f"{f}_std"] = float(np.std(good)) if full else float("nan")
        row["seconds_mean"] = float(g["seconds"].mean())
        its = g["iterations"].unique()
        row["iterations"] = int(its[0]) if len(its) == 1 else -1
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


@lru_cache(maxsize=1)
def published_tables() -> dict[str, Any]:
    """The paper's Tables 1-4 as shipped in lysep_cli/data/published-tables.yaml."""
    text = resources.files("lysep_cli").joinpath("data/published-tables.yaml").read_text()
    return yaml.safe_load(text)


def published_row(experiment: str, L: int, M: int, solver: str) -> dict[str, Any] | None:
    """{"J_S": [mean, std] | absent, "J": [...], "l2": [...]} of the paper, or None."""
    model = MODEL_NAMES.get(solver)
    table = published_tables().get(experiment) or {}
    for row in table.get("rows", []):
        if row.get("L") == L and row.get("M") == M and row.get("model") == model:
            return row
    return None


# ---------------------------------------------------------------------------------------------
# Cells.

def _pm(mean: float, std: float, latex: bool) -> str:
    if not np.isfinite(mean):
        return "—" if not latex else "--"
    sep = "$\\pm$" if latex else "±"
    return f"{mean:.2e}{sep}{std:.2e}"


def _pair(v: Any, latex: bool) -> str:
    return _pm(float(v[0]), float(v[1]), latex) if v is not None else ("--" if latex else "—")


def _order_solvers(solvers: list[str]) -> list[str]:
    paper = [s for s in PAPER_SOLVERS if s in solvers]
    return paper + sorted(s for s in solvers if s not in PAPER_SOLVERS)


def _table_rows(df: pd.DataFrame, spec: ExperimentSpec, latex: bool) -> tuple[list[list], list[str]]:
    """Rows [size, model, actual, J, l2, seeds, merged, is_paper] for one experiment, and notes."""
    requested = len(spec.seeds)
    have_sizes = {(int(L), int(M)) for L, M in zip(df["L"], df["M"])}
    sizes = [s for s in spec.sizes if s in have_sizes] + sorted(have_sizes - set(spec.sizes))
    notes: list[str] = []
    rows: list[list] = []
    short = False
    for L, M in sizes:
        sub = df[(df["L"] == L) & (df["M"] == M)]
        solvers = _order_solvers(sorted(set(sub["solver"]) | set(PAPER_SOLVERS)))
        for solver in solvers:
            found = sub[sub["solver"] == solver]
            paper = published_row(spec.name, L, M, solver) if solver in PAPER_SOLVERS else None
            if found.empty and paper is None:
                continue
            model = MODEL_NAMES.get(solver, solver)
            if solver not in PAPER_SOLVERS:
                model = (model.replace("_", "\\_") + "$^{\\dagger}$") if latex else model + " †"
            if found.empty:
                dash = "--" if latex else "—"
                rows.append([(L, M), model, None, dash, dash, f"0/{requested}" + ("$^{\\ddagger}$" if latex else " ‡"),
                             True, False])
                short = True
            else:
                r = found.iloc[0]
                has_js = np.isfinite(r["J_S_mean"])
                actual = _pm(r["J_S_mean"], r["J_S_std"], latex) if has_js else None
                seeds = f"{int(r['n_seeds'])}/{requested}"
                if r["n_diverged"]:
                    seeds += f" ({int(r['n_diverged'])} div.)"
                if r["n_seeds"] < requested:
                    seeds += "$^{\\ddagger}$" if latex else " ‡"
                    short = True
                rows.append([(L, M), model, actual, _pm(r["J_mean"], r["J_std"], latex),
                             _pm(r["l2_mean"], r["l2_std"], latex), seeds, not has_js, False])
            if paper is not None:
                has_js = paper.get("J_S") is not None
                rows.append([(L, M), "paper", _pair(paper.get("J_S"), latex) if has_js else None,
                             _pair(paper.get("J"), latex), _pair(paper.get("l2"), latex),
                             str(published_tables()[spec.name].get("seeds", "")), not has_js, True])
    pm, js = ("$\\pm$", "$J_S$") if latex else ("±", "J_S")
    quote = ("``", "''") if latex else ('"', '"')
    if any(s not in PAPER_SOLVERS for s in set(df["solver"])):
        notes.append(("$^{\\dagger}$" if latex else "†") + " not in the paper (extra baseline of this project).")
    notes.append("Seeds: runs aggregated / seeds requested by the spec"
                 + ("; " + ("$^{\\ddagger}$" if latex else "‡") + " fewer than requested" if short else "")
                 + "; diverged runs are counted apart and excluded from the statistics.")
    notes.append(f"Cells: mean{pm}std (population std) over the seeds; Actual loss is {js} for LySep and "
                 "J itself for the PINN-type models (merged cell).")
    if any(row[7] for row in rows):
        notes.append(f"Rows {quote[0]}paper{quote[1]}: the published numbers of paper Table {spec.table} "
                     "(its Seeds column: the paper's seed count), not ours.")
    its = sorted(set(int(x) for x in df["iterations"]))
    if its != [spec.iterations]:
        shown = ", ".join("mixed" if i == -1 else str(i) for i in its)
        notes.append(f"Iterations: {shown} (the spec asks for {spec.iterations}).")
    missing = [s for s in spec.sizes if s not in have_sizes]
    if missing:
        notes.append("No runs yet for (L,M) = " + ", ".join(f"({L},{M})" for L, M in missing) + ".")
    return rows, notes


def _title(spec: ExperimentSpec) -> str:
    where = f"paper Table {spec.table}" if spec.table is not None else "not in the paper"
    return f"{spec.name} ({where}): {spec.pde}, d = {spec.d}, n_train = {spec.n_train}, n_test = {spec.n_test}"


# ---------------------------------------------------------------------------------------------
# Renderers.

def render_markdown(df: pd.DataFrame, spec: ExperimentSpec) -> str:
    if df.empty:
        return f"### {_title(spec)}\n\n_No runs recorded yet._\n"
    rows, notes = _table_rows(df, spec, latex=False)
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


def render_latex(df: pd.DataFrame, spec: ExperimentSpec) -> str:
    label = f"tab:lysep-{spec.name}"
    if df.empty:
        return f"% {spec.name}: no runs recorded yet\n"
    rows, notes = _table_rows(df, spec, latex=True)
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
            "$\\ell^2$ test error (mean$\\pm$std over the seeds).}",
            f"\\label{{{label}}}", "\\end{table}"]
    return "\n".join(out) + "\n"


def _latex_escape(text: str) -> str:
    return text.replace("_", "\\_").replace("&", "\\&").replace("%", "\\%")


LATEX_PREAMBLE = ("\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n"
                  "\\usepackage{booktabs,multirow}\n\\begin{document}\n")


def render_tables(records: list[dict[str, Any]], specs: list[ExperimentSpec], fmt: str,
                  standalone: bool = False) -> str:
    """The table of every experiment in ``specs`` from ``records`` ("latex" or "markdown").

    ``standalone`` wraps LaTeX output in a compilable document.
    """
    if fmt not in ("latex", "markdown"):
        raise ValueError(f"unknown format {fmt!r} (latex | markdown)")
    df = aggregate(records)
    parts = []
    for spec in specs:
        sub = df[df["experiment"] == spec.name]
        parts.append(render_latex(sub, spec) if fmt == "latex" else render_markdown(sub, spec))
    text = "\n".join(parts)
    if fmt == "latex" and standalone:
        text = LATEX_PREAMBLE + text + "\\end{document}\n"
    return text
