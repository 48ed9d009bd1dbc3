"""Accuracy against cost, drawn (``lysep plot``): test ℓ2 and J against CPU seconds per run, log-log.

``<experiment>-accuracy-cost``  two panels (ℓ2, J) for one experiment;
``accuracy-cost``               (``lysep plot --combined``) the ℓ2 panel of every experiment given, one
                                figure (``RESULTS/figures/``).

In a panel: every solver of the records a series (:mod:`lysep_cli.reports.accuracy_cost`): a marker at the
median over the seeds of each size / width / degree, bars from the least to the largest run in both
directions, a thin line through the points in their order; the front (the best accuracy reached at each
cost: the non-dominated points, a grey staircase); the paper's mean PINN and LySep accuracy (no times
published) as horizontal levels: a dashed line at the best of its sizes, a band over the range of its
sizes.  Each function returns what it drew (:class:`Drawn`).
"""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from lysep_cli.reports.accuracy_cost import (QUANTITIES, Series, along, drawable, machines_note, medians,
                                             pareto_front, published_levels, solver_series)
from lysep_cli.reports.figures import Drawn, is_seed_free, looks, plt, save
from lysep_cli.reports.selection import display_name, solver_key
from lysep_cli.store.schema import RunRecord

FRONT_COLOUR = "0.35"


@dataclass(frozen=True)
class Panel:
    """What one panel drew: the series (solver -> :class:`Series`), the front as (solver, point label)
    pairs by increasing cost with their (cost, error) medians (shape (n, 2)), and the paper's levels
    (solver -> its means over the sizes)."""

    quantity: str
    series: dict[str, Series]
    front: list[tuple[str, str]]
    front_xy: np.ndarray
    levels: dict[str, list[float]]


def sizes_text(labels: list[str]) -> str:
    """The network sizes of "(L,M)" labels in words: "L = 3, M = 30–100", "L = 2–5, M = 50", or with both
    varying "6 sizes, L = 2–3, M = 10–50"; the labels themselves when they are not sizes."""
    sizes = [tuple(int(v) for v in lab.strip("()").split(",")) for lab in labels
             if lab.startswith("(") and lab.count(",") == 1]
    if len(sizes) != len(labels):
        return ", ".join(labels)

    def span(vals: set[int]) -> str:
        return f"{min(vals)}" if len(vals) == 1 else f"{min(vals)}–{max(vals)}"

    Ls, Ms = {L for L, _ in sizes}, {M for _, M in sizes}
    both = len(Ls) > 1 and len(Ms) > 1
    return (f"{len(sizes)} sizes, " if both else "") + f"L = {span(Ls)}, M = {span(Ms)}"


def _series_label(s: Series) -> str:
    name, pts = display_name(s.solver), s.points
    if not any(drawable(p, "l2") for p in pts):
        return f"{name}: no point (half or more of its runs unfinished at every size)"
    if s.along == "degree":
        ks = [p.label.split(" = ")[1] for p in pts if p.label.startswith("k = ")]
        what = (f"k = {ks[0]}" if len(ks) == 1 else f"degrees k = {ks[0]}–{ks[-1]}") if ks else pts[0].label
    elif s.along == "width":
        what = pts[0].label if len(pts) == 1 else f"widths {pts[0].label}–{pts[-1].label.split('= ')[1]}"
    else:
        what = sizes_text([p.label for p in pts])
    runs = max(p.runs for p in pts)
    seeds = "one fit" if is_seed_free(s.solver) else f"{runs} seed" + ("" if runs == 1 else "s")
    return f"{name} ({what}; {seeds})"


def draw_panel(ax, series: dict[str, Series], quantity: str, levels: dict[str, list[float]],
               styles: dict[str, tuple[str, str, str]], hollow: frozenset[str] | set[str] = frozenset()) -> Panel:
    """One log-log panel of ``quantity`` against CPU seconds (the series named in ``hollow``: open markers,
    dashed); what it drew."""
    for s in series.values():
        pts = [p for p in s.points if drawable(p, quantity)]
        if not pts:
            continue
        colour, marker, _ = styles[s.solver]
        x = np.array([p.cost for p in pts]).T  # (3, n): min, median, max
        y = np.array([p.value(quantity) for p in pts]).T
        ax.errorbar(x[1], y[1], xerr=[x[1] - x[0], x[2] - x[1]], yerr=[y[1] - y[0], y[2] - y[1]],
                    color=colour, marker=marker, markersize=4.5 if marker != "*" else 6, linewidth=0.7,
                    elinewidth=0.6, capsize=0, alpha=0.9, zorder=3,
                    **({"markerfacecolor": "white", "linestyle": "--"} if s.solver in hollow else {}))
        for p in pts:  # a cell where not every run finished says how many did
            if p.left_out:
                ax.annotate(f"{p.runs - p.left_out}/{p.runs}", xy=(p.cost[1], p.value(quantity)[1]),
                            xytext=(3, 3), textcoords="offset points", fontsize=5.5, color=colour, zorder=4)
    costs, errors, who = medians(series, quantity)
    idx = pareto_front(costs, errors) if costs.size else np.array([], dtype=int)
    front_xy = np.column_stack([costs[idx], errors[idx]]) if idx.size else np.zeros((0, 2))
    if idx.size:
        right = float(np.max([p.cost[2] for s in series.values() for p in s.points])) * 1.6
        xs = np.append(front_xy[:, 0], max(right, front_xy[-1, 0]))
        ys = np.append(front_xy[:, 1], front_xy[-1, 1])
        ax.step(xs, ys, where="post", color=FRONT_COLOUR, linewidth=2.2, alpha=0.35, zorder=2,
                solid_joinstyle="miter")
    for solver, means in levels.items():
        colour = styles.get(solver, looks([solver])[solver])[0]
        lo, hi = min(means), max(means)
        if hi > lo:
            ax.axhspan(lo, hi, color=colour, alpha=0.08, linewidth=0, zorder=1)
        ax.axhline(lo, color=colour, linestyle=(0, (4, 2)), linewidth=0.9, alpha=0.9, zorder=1)
        ax.annotate(f"paper\n{display_name(solver)}", xy=(1.0, lo), xycoords=("axes fraction", "data"),
                    xytext=(2, 0), textcoords="offset points", fontsize=6, color=colour, va="center",
                    ha="left", linespacing=0.9)  # in the margin: never over a point
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CPU seconds per run")
    ax.set_ylabel(QUANTITIES[quantity])
    return Panel(quantity, series, [who[i] for i in idx], front_xy, levels)


def unfinished_note(by_prefix: dict[str, dict[str, Series]], quantity: str) -> str:
    """The caption's words on runs that did not finish: the summary's rule, and the cells it leaves without a
    point (half or more of their runs unfinished), each named after its prefix ("" or "osc-ball-2d-k12: ",
    -> its series); "" when every run finished."""
    every = [(prefix, s) for prefix, series in by_prefix.items() for s in series.values()]
    if not any(p.left_out for _, s in every for p in s.points):
        return ""
    gone = [f"{prefix}{display_name(s.solver)} {p.label} ({p.runs - p.left_out}/{p.runs})"
            for prefix, s in every for p in s.points if not drawable(p, quantity)]
    return (" A run that did not finish (diverged) counts as +∞ in the median, as in the harder suite's "
            "summary; \"k/n\": k of the cell's n runs finished"
            + (f"; no point where the median is +∞: {', '.join(gone)}." if gone else "."))


def _caption(series: dict[str, Series], width: int, paper: bool = True, quantity: str = "l2",
             unfinished: str | None = None) -> str:
    text = ("Marker: the median over the seeds of a size (networks, rfls), a width (rfm) or a degree (poly); "
            "bars: least to largest run; front: the points no other beats in both cost and error; "
            + ("paper: the published mean at its best size (dashed) and over all its sizes (band); " if paper else "")
            + "CPU seconds: each record's own (one BLAS thread).")
    text += unfinished_note({"": series}, quantity) if unfinished is None else unfinished
    note = machines_note(series)
    if note:
        text += " " + note + "."
    return "\n".join(textwrap.wrap(text, width=width))


def _figure(nrows: int, ncols: int, panel: tuple[float, float], n_labels: int, legend_cols: int,
            caption: str):
    """A figure of nrows x ncols panels over a key (the legend, then the caption), each in its own part so
    that nothing overlaps the data; (figure, axes (nrows, ncols), key subfigure)."""
    rows = math.ceil(n_labels / legend_cols)
    key_h = 0.15 * rows + 0.1 * (caption.count("\n") + 1) + 0.2
    top_h = panel[1] * nrows + 0.35
    fig = plt.figure(figsize=(panel[0] * ncols + 0.2, top_h + key_h), layout="constrained")
    top, key = fig.subfigures(2, 1, height_ratios=[top_h, key_h])
    axes = top.subplots(nrows, ncols, squeeze=False)
    key.text(0.01, 0.02, caption, fontsize=6, ha="left", va="bottom")
    return fig, top, axes, key


def _key_handles(solvers: dict[str, str], styles, paper: list[str], hollow: frozenset[str] | set[str] = frozenset()):
    """Legend entries: each solver (its label given), the front, the paper's levels."""
    handles, labels = [], []
    for s, label in solvers.items():
        colour, marker, _ = styles[s]
        handles.append(Line2D([], [], color=colour, marker=marker, linewidth=0.7,
                              markersize=4.5 if marker != "*" else 6,
                              **({"markerfacecolor": "white", "linestyle": "--"} if s in hollow else {})))
        labels.append(label)
    handles.append(Line2D([], [], color=FRONT_COLOUR, linewidth=2.2, alpha=0.35))
    labels.append("front: best accuracy at each cost")
    for s in paper:
        colour = styles.get(s, looks([s])[s])[0]
        handles.append((Patch(color=colour, alpha=0.08, linewidth=0),
                        Line2D([], [], color=colour, linestyle=(0, (4, 2)), linewidth=0.9)))
        labels.append(f"paper's {display_name(s)} (no times): best size, band: all sizes")
    return handles, labels


TWIN_NOTE = " (torch init)"


def twin_looks(series: dict[str, Series]) -> tuple[dict[str, tuple[str, str, str]], set[str]]:
    """Styles of ``series`` (:func:`looks`), a twin's series ("LySep (torch init)") in its solver's colour and
    marker, drawn hollow; and the names of the hollow ones."""
    base = {f"{display_name(s)}{TWIN_NOTE}": s for s in series}
    styles = looks([s for s in series if s not in base])
    hollow = {s for s in series if s in base}
    for s in hollow:
        styles[s] = styles[base[s]]
    return styles, hollow


def with_twin(series: dict[str, Series], twin: dict[str, Series]) -> dict[str, Series]:
    """``series`` with each of ``twin``'s (the ``-torch`` twin's solvers) after its solver, as its own series
    named "<solver> (torch init)"."""
    out = {}
    for s, v in series.items():
        out[s] = v
        if s in twin:
            name = f"{display_name(s)}{TWIN_NOTE}"
            out[name] = Series(name, twin[s].along, twin[s].points, twin[s].machines)
    for s, v in twin.items():
        if s not in series:
            name = f"{display_name(s)}{TWIN_NOTE}"
            out[name] = Series(name, v.along, v.points, v.machines)
    return out


def plot_accuracy_cost(records: list[RunRecord], experiment: str, out_dir: Path,
                       poly_study: pd.DataFrame | None = None, twin: list[RunRecord] | None = None) -> Drawn:
    """``<experiment>-accuracy-cost``: ℓ2 and J against CPU seconds (two panels); what it drew.  ``twin``:
    the records of ``<experiment>-torch``, each solver a series of its own ("LySep (torch init)")."""
    series = solver_series(records, poly_study)
    if twin:
        series = with_twin(series, solver_series(twin))
    styles, hollow = twin_looks(series)
    levels = {q: published_levels(experiment, q) for q in QUANTITIES}
    handles, labels = _key_handles({s: _series_label(v) for s, v in series.items()}, styles, list(levels["l2"]),
                                   hollow)
    fig, top, axes, key = _figure(1, 2, (3.5, 3.3), len(labels), 2, _caption(series, 150, bool(levels["l2"])))
    panels = {}
    for i, (ax, q) in enumerate(zip(axes.flat, QUANTITIES)):
        panels[q] = draw_panel(ax, series, q, levels[q], styles, hollow)
        ax.set_title(f"({'ab'[i]}) {QUANTITIES[q]}")
    key.legend(handles, labels, loc="upper center", ncols=2, frameon=False)
    top.suptitle(f"{experiment}: accuracy against cost, every solver of the records")
    return Drawn(save(fig, out_dir, f"{experiment}-accuracy-cost"), panels)


def plot_accuracy_cost_combined(by_experiment: dict[str, list[RunRecord]], out_dir: Path,
                                poly_studies: dict[str, pd.DataFrame | None] | None = None,
                                quantity: str = "l2", twins: dict[str, list[RunRecord]] | None = None) -> Drawn:
    """``accuracy-cost``: the ``quantity`` panel of every experiment in one figure; what it drew.  ``twins``:
    experiment -> the records of its ``-torch`` twin, each solver a hollow series of its own in that panel."""
    names = list(by_experiment)
    if not names:
        raise ValueError("no experiment to draw")
    every = {}
    for exp, recs in by_experiment.items():
        ser = solver_series(recs, (poly_studies or {}).get(exp))
        every[exp] = with_twin(ser, solver_series(twins[exp])) if (twins or {}).get(exp) else ser
    levels = {exp: published_levels(exp, quantity) for exp in names}
    merged: dict[str, Series] = {}
    for ser in every.values():  # one Series per solver over every experiment: the caption's CPUs
        for s, v in ser.items():
            m = merged.setdefault(s, Series(s, v.along, [], Counter()))
            m.points.extend(v.points)
            m.machines.update(v.machines)
    base = sorted((s for s in merged if not s.endswith(TWIN_NOTE)), key=solver_key)
    solvers = [n for s in base for n in (s, f"{display_name(s)}{TWIN_NOTE}") if n in merged]
    solvers += [s for s in merged if s not in solvers]
    styles, hollow = twin_looks(merged)
    paper = [s for s in ("pinn", "lysep") if any(s in lv for lv in levels.values())]
    handles, labels = _key_handles({s: display_name(s) + {"degree": " (over its degree k)", "width": " (over "
                                    "its width M)"}.get(along(s), " (over its sizes)") for s in solvers},
                                   styles, paper, hollow)
    ncols = 1 if len(names) == 1 else 2
    nrows = math.ceil(len(names) / ncols)
    width = 3.6 * ncols + 0.2  # inches, as _figure makes it: ~20 caption characters an inch, ~11 title ones
    key_cols = 3 if ncols > 1 else 1
    unfinished = unfinished_note({f"{e}: ": every[e] for e in names}, quantity)
    fig, top, axes, key = _figure(nrows, ncols, (3.6, 2.9), len(labels), key_cols,
                                  _caption(merged, int(20.3 * width), bool(paper), quantity, unfinished))
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    panels = {}
    for i, (ax, exp) in enumerate(zip(axes.flat, names)):
        panels[exp] = draw_panel(ax, every[exp], quantity, levels[exp], styles, hollow)
        ax.set_title(f"({chr(ord('a') + i)}) {exp}")
    key.legend(handles, labels, loc="upper center", ncols=key_cols, frameon=False)
    title = f"Accuracy against cost: {QUANTITIES[quantity]} against CPU seconds per run"
    top.suptitle("\n".join(textwrap.wrap(title, width=int(11 * width), break_on_hyphens=False)))
    return Drawn(save(fig, out_dir, "accuracy-cost"), panels)


__all__ = ["Drawn", "Panel", "draw_panel", "plot_accuracy_cost", "plot_accuracy_cost_combined"]
