"""The paper's figures from our run records (``lysep plot EXPERIMENT``), as PNG and PDF.

Four figures per experiment; the iteration figures have one panel per network size (L, M), every seed
drawn as its own curve:

``<experiment>-loss``          J versus iteration for every solver that iterates (PINN, LySep, pinn-adam, ...;
                               paper Fig. ``Fig_example1_loss``); the one-shot solvers (one least-squares
                               solve: rfls, rfm, poly) as horizontal levels of their final J (a line at the
                               median over the seeds, a band over their range) across every panel: rfls in
                               the panel of its own (L, M), the others (poly "k = 19, P = 210", rfm
                               "M = 800") in every panel.
``<experiment>-loss-JS``       J_S and J versus iteration for LySep (paper Fig. ``Fig_example1_loss_ORloss``).
``<experiment>-bound-ratio``   J / J_S versus iteration for LySep, with the theoretical bound factor of
                               the paper's theorems (the record's ``bound.factor``) as a dashed line.
``<experiment>-accuracy-cost`` test ℓ2 and J against CPU seconds per run, every solver
                               (:mod:`lysep_cli.reports.plot_accuracy_cost`).

All y axes are logarithmic. The figures are sized for a printed page (two panels across ~6.5 in); the
legends of the loss figures sit below the panels, off the data. The records drawn are the ones the CLI
selected (matching the spec, :func:`lysep_cli.reports.selection.select`); each figure is written atomically.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from lysep_cli.reports.figures import FORMATS, STYLE, Drawn, is_seed_free, looks, plt, save
from lysep_cli.reports.harder_summary import ONE_SOLVE, TWIN
from lysep_cli.reports.plot_accuracy_cost import plot_accuracy_cost, plot_accuracy_cost_combined
from lysep_cli.reports.accuracy_cost import poly_degree, read_poly_study
from lysep_cli.reports.selection import Selection, bound_violations, display_name, finite_number, solver_key
from lysep_cli.solvers import PAPER_SOLVERS
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.schema import RunRecord

J_COLOUR, JS_COLOUR, BOUND_COLOUR = "tab:blue", "tab:orange", "black"


def _series(x: Any) -> np.ndarray | None:
    """A history list as a float array; JSON nulls / infs / non-positive values become NaN (log axis)."""
    if x is None:
        return None
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or a.size == 0:
        return None
    a = a.copy()
    a[~np.isfinite(a) | (a <= 0)] = np.nan
    return a


def _grid(n: int) -> tuple[int, int]:
    ncols = 1 if n == 1 else 2
    return math.ceil(n / ncols), ncols


def _figure(sizes: list[tuple[int, int]], title: str, key_height: float = 0.0, panel_width: float = 3.25,
            panel_height: float = 2.5):
    """A grid of one panel per (L, M) (log y, iteration x) under ``title``; with ``key_height`` (inches) a
    strip below the panels for the legend, off the data.  (figure, {(L, M): axes}, the strip or None)."""
    nrows, ncols = _grid(len(sizes))
    if ncols == 1:  # one panel: a little wider, and the title on two lines so that it fits
        figsize = (4.2 + panel_width - 3.25, 3.3 + panel_height - 2.5)
        title = title.replace(": ", ":\n", 1)
    else:
        figsize = (panel_width * ncols, panel_height * nrows + 0.35)
        width = round(11 * figsize[0])  # ~11 title characters an inch
        title = "\n".join(w for line in title.split("\n")
                          for w in textwrap.wrap(line, width=width, break_on_hyphens=False))
    key = None
    if key_height:
        fig = plt.figure(figsize=(figsize[0], figsize[1] + key_height), layout="constrained")
        top, key = fig.subfigures(2, 1, height_ratios=[figsize[1], key_height])
        axes = top.subplots(nrows, ncols, squeeze=False)
    else:
        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False, constrained_layout=True)
        top = fig
    for ax in axes.flat[len(sizes):]:
        ax.set_visible(False)
    panels = {}
    for i, (ax, (L, M)) in enumerate(zip(axes.flat, sizes)):
        label = f"({chr(ord('a') + i)}) $L={L}, M={M}$" if len(sizes) > 1 else f"$L={L}, M={M}$"
        ax.set_title(label)
        ax.set_yscale("log")
        ax.set_xlabel("iteration")
        panels[(L, M)] = ax
    top.suptitle(title)
    return fig, panels, key


def _key_height(n_entries: int, ncols: int) -> float:
    return 0.16 * math.ceil(n_entries / ncols) + 0.12


def _seeds_note(recs: list[RunRecord]) -> str:
    """"10 seeds" when every seeded solver has that many; else "10 seeds: PINN, LySep; 3 seeds: pinn-adam";
    a seed-free solver (one run, no spread) apart: "10 seeds; poly: one fit"."""
    solvers = sorted({r.solver for r in recs}, key=solver_key)
    free = [s for s in solvers if is_seed_free(s)]
    counts = {s: len({r.seed for r in recs if r.solver == s}) for s in solvers if s not in free}

    def seeds(n: int) -> str:
        return f"{n} seed" + ("" if n == 1 else "s")

    groups = sorted(set(counts.values()), reverse=True)
    if len(groups) == 1:
        notes = [seeds(groups[0])]
    else:
        notes = [seeds(n) + ": " + ", ".join(display_name(s) for s in counts if counts[s] == n) for n in groups]
    if not counts and not free:
        notes = [seeds(0)]
    return "; ".join(notes + [f"{display_name(s)}: one fit" for s in free])


@dataclass(frozen=True)
class Level:
    """A one-shot solver drawn as a level: its final J over the runs of one (L, M) (a line at the median,
    a band over the range); ``label`` says what it is ("poly k = 19, P = 210", "rfm M = 800")."""

    solver: str
    label: str
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return float(np.median(self.values))


@dataclass(frozen=True)
class LossPanel:
    """What a panel of ``<experiment>-loss`` drew: solver -> curves (one per run), the levels, the J axis'
    range (bottom, top)."""

    curves: dict[str, int] = field(default_factory=dict)
    levels: list[Level] = field(default_factory=list)
    ylim: tuple[float, float] = (0.0, 0.0)


def one_shot(records: list[RunRecord]) -> set[str]:
    """The solvers whose every run is one least-squares solve: a J history of at most 2 entries (before,
    after); drawn as levels, not over an iteration axis."""
    def short(r: RunRecord) -> bool:
        J = r.history.get("J")
        return J is None or len(J) <= 2
    solvers = {r.solver for r in records}
    return {s for s in solvers if all(short(r) for r in records if r.solver == s)}


def _level_label(solver: str, L: int, M: int, recs: list[RunRecord], own_panel: bool) -> str:
    name = display_name(solver)
    if own_panel:
        return f"{name}\n$L={L}, M={M}$"
    if solver == "poly":
        ks = {poly_degree(r) for r in recs}
        k = ks.pop() if len(ks) == 1 else None
        return f"{name}\n$k={k}$, $P={M}$" if k is not None else f"{name}\n$P={M}$"
    if solver == "rfm":
        return f"{name}\n$M={M}$"
    return f"{name}\n$L={L}, M={M}$"


def _levels(records: list[RunRecord], shots: set[str], panel_sizes: set[tuple[int, int]],
            size: tuple[int, int]) -> list[Level]:
    """The one-shot levels of the panel of ``size``: those at this (L, M), and those at a size that has no
    panel (drawn in every panel)."""
    out = []
    for s in sorted(shots, key=solver_key):
        recs = [r for r in records if r.solver == s]
        for L, M in sorted({(r.L, r.M) for r in recs}):
            if (L, M) != size and (L, M) in panel_sizes:
                continue
            cell = [r for r in recs if (r.L, r.M) == (L, M)]
            vals = tuple(float(r.final.J) for r in cell if r.ok and finite_number(r.final.J) and r.final.J > 0)
            if vals:
                out.append(Level(s, _level_label(s, L, M, cell, (L, M) == size), vals))
    return out


def _spread_labels(ax, levels: list[Level], colours: dict[str, str]) -> None:
    """Each level's label in the right margin at its height, moved apart where two would overlap."""
    if not levels:
        return
    lo, hi = (math.log10(v) for v in ax.get_ylim())
    frac = [(math.log10(lv.median) - lo) / (hi - lo) for lv in levels]
    order = sorted(range(len(levels)), key=lambda i: frac[i])
    gap, pos = 0.09, {}
    last = -math.inf
    for i in order:
        pos[i] = max(frac[i], last + gap)
        last = pos[i]
    shift = max(0.0, last - 1.0)
    for i, lv in enumerate(levels):
        y = pos[i] - shift
        moved = abs(y - frac[i]) > 0.01  # a leader from the label to its level
        ax.annotate(lv.label, xy=(1.0, frac[i]), xycoords="axes fraction", xytext=(1.03, y),
                    textcoords="axes fraction", fontsize=6, color=colours[lv.solver], va="center", ha="left",
                    linespacing=0.95, arrowprops=dict(arrowstyle="-", color=colours[lv.solver], linewidth=0.5,
                                                      shrinkA=0, shrinkB=0) if moved else None)


#: a panel's J axis reaches at most this factor above the largest J of the runs that did not diverge
DIVERGED_HEADROOM = 1e3


def _positive(arrays: list[np.ndarray]) -> np.ndarray:
    """The finite positive values of ``arrays``, flattened."""
    v = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays] + [np.zeros(0)])
    return v[np.isfinite(v) & (v > 0)]


def diverged_range(curves: list[np.ndarray], finished: list[np.ndarray], levels: list[float]) -> tuple[float, float]:
    """The J axis of a panel with a diverged run: from the least value drawn to at most ``DIVERGED_HEADROOM``
    above the largest J of the runs that finished and of the levels (the diverged curves leave the panel at
    the top), with a margin of 5 % of the span at each end, as matplotlib's autoscale has.  From the data,
    never from the autoscale, which collapses (to [1, 10]) when a history reaches 1e304.  ``curves``: every
    history drawn; ``finished``: those of the runs that finished; ``levels``: the one-shot levels' values."""
    drawn, kept = _positive(curves + [np.asarray(levels)]), _positive(finished + [np.asarray(levels)])
    lo = float(drawn.min())
    hi = float(min(drawn.max(), kept.max() * DIVERGED_HEADROOM) if kept.size else drawn.max())
    hi = max(hi, 10 * lo)
    pad = 10 ** (0.05 * math.log10(hi / lo))
    return lo / pad, hi * pad


def _cap_diverged(ax, recs: list[RunRecord], levels: list[Level]) -> None:
    """Where a run of the panel diverged, the J axis of :func:`diverged_range`; nothing changes in a panel
    without a diverged run."""
    if all(r.ok for r in recs):
        return
    curves = [(J, r.ok) for r in recs if (J := _series(r.history.get("J"))) is not None]
    values = [v for lv in levels for v in lv.values]
    if _positive([J for J, _ in curves] + [np.asarray(values)]).size:
        ax.set_ylim(*diverged_range([J for J, _ in curves], [J for J, ok in curves if ok], values))


def plot_loss(records: list[RunRecord], experiment: str, out_dir: Path) -> Drawn:
    """Figure (a): J versus iteration for every solver that iterates, all seeds, one panel per (L, M); the
    one-shot solvers as levels of their final J (:func:`one_shot`).  What it drew: {(L, M): LossPanel}."""
    shots = one_shot(records)
    iterating = [r for r in records if r.solver not in shots] or records
    paper = {(r.L, r.M) for r in iterating if r.solver in PAPER_SOLVERS}
    sizes = sorted({(r.L, r.M) for r in iterating}, key=lambda s: (s not in paper, s))  # the paper's first
    solvers = sorted({r.solver for r in records}, key=solver_key)
    styles = looks(solvers)
    lines = [s for s in solvers if s not in shots]
    entries = len(lines) + len(shots)
    ncols = 3 if len(sizes) > 1 else 1
    width = 3.6 * 2 if len(sizes) > 1 else 4.2 + 3.6 - 3.25  # as _figure makes it, inches
    note = textwrap.wrap("A solver of one least-squares solve has no iterations: a level at its final $J$ (the "
                         "median over the seeds, a band over their range), labelled in the margin.",
                         width=int(23 * width)) if shots else []
    key_height = _key_height(entries, ncols) + 0.12 * len(note)
    title = f"{experiment}: loss $J$ versus iteration\n({_seeds_note(records)})"
    fig, axes, key = _figure(sizes, title, key_height, panel_width=3.6, panel_height=2.9)
    # the others first, wide and pale (dashed, dotted), PINN and LySep over them thin and solid: where curves
    # coincide (PINN and pinn-adam on their plateau) the thin line shows inside the wide one
    order = sorted(lines, key=lambda s: (s in PAPER_SOLVERS, solver_key(s)))
    drawn: dict[tuple[int, int], LossPanel] = {}
    for (L, M), ax in axes.items():
        panel = LossPanel()
        for s in order:
            colour, _, style = styles[s]
            paper_solver = s in PAPER_SOLVERS
            for r in (r for r in records if (r.L, r.M, r.solver) == (L, M, s)):
                J = _series(r.history.get("J"))
                if J is None:
                    continue
                ax.plot(np.arange(J.size), J, color=colour, linestyle=style, alpha=0.8 if paper_solver else 0.45,
                        linewidth=0.7 if paper_solver else 2.2, zorder=3 if paper_solver else 2)
                panel.curves[s] = panel.curves.get(s, 0) + 1
        for lv in _levels(records, shots, set(sizes), (L, M)):
            colour, _, style = styles[lv.solver]
            if max(lv.values) > min(lv.values):
                ax.axhspan(min(lv.values), max(lv.values), color=colour, alpha=0.18, linewidth=0, zorder=1)
            ax.axhline(lv.median, color=colour, linestyle=style, linewidth=1.0, zorder=4)  # over the curves
            panel.levels.append(lv)
        _cap_diverged(ax, [r for r in records if (r.L, r.M) == (L, M) and r.solver not in shots], panel.levels)
        ax.set_ylabel("$J$")
        panel = LossPanel(panel.curves, panel.levels, tuple(float(v) for v in ax.get_ylim()))
        drawn[(L, M)] = panel
    for (L, M), ax in axes.items():
        _spread_labels(ax, drawn[(L, M)].levels, {s: styles[s][0] for s in shots})
    handles, labels = [], []
    for s in lines:
        colour, _, style = styles[s]
        paper_solver = s in PAPER_SOLVERS
        handles.append(Line2D([], [], color=colour, linestyle=style, linewidth=0.7 if paper_solver else 2.2,
                              alpha=0.8 if paper_solver else 0.45))
        labels.append(display_name(s))
    for s in sorted(shots, key=solver_key):
        colour, _, style = styles[s]
        handles.append((Patch(color=colour, alpha=0.18, linewidth=0), Line2D([], [], color=colour, linestyle=style)))
        runs = max(len({r.seed for r in records if r.solver == s and (r.L, r.M) == c})
                   for c in {(r.L, r.M) for r in records if r.solver == s})
        what = ("one fit, no seed" if is_seed_free(s) else "1 seed") if runs == 1 else f"{runs} seeds"
        labels.append(f"{display_name(s)}: one least-squares solve ({what})")
    key.legend(handles, labels, loc="upper center", ncols=ncols, frameon=False)
    if note:
        key.text(0.5, 0.02, "\n".join(note), fontsize=6, ha="center", va="bottom")
    return Drawn(save(fig, out_dir, f"{experiment}-loss"), drawn)


def plot_loss_js(records: list[RunRecord], experiment: str, out_dir: Path, solver: str = "lysep") -> Drawn:
    """Figure (b): J_S and J versus iteration for LySep, all seeds, one panel per (L, M).  What it drew:
    {(L, M): runs drawn}."""
    recs = [r for r in records if r.solver == solver]
    sizes = sorted({(r.L, r.M) for r in recs})
    name = display_name(solver)
    fig, panels, key = _figure(sizes, f"{experiment}: $J_S$ and $J$ versus iterations, {name} "
                                      f"({_seeds_note(recs)})", _key_height(2, 2))
    drawn = {}
    for (L, M), ax in panels.items():
        drawn[(L, M)] = 0
        for r in (r for r in recs if (r.L, r.M) == (L, M)):
            h = r.history
            J, JS = _series(h.get("J")), _series(h.get("J_S"))
            if JS is not None:
                ax.plot(np.arange(JS.size), JS, color=JS_COLOUR, alpha=0.75)
            if J is not None:
                ax.plot(np.arange(J.size), J, color=J_COLOUR, alpha=0.75, linestyle="--")
            drawn[(L, M)] += 1
        ax.set_ylabel("loss")
    key.legend([Line2D([], [], color=JS_COLOUR), Line2D([], [], color=J_COLOUR, linestyle="--")],
               ["$J_S$ (LySep loss)", "$J$ (PINN loss of $W_l, b_l$)"], loc="center", ncols=2, frameon=False)
    return Drawn(save(fig, out_dir, f"{experiment}-loss-JS"), drawn)


def plot_bound_ratio(records: list[RunRecord], experiment: str, out_dir: Path, solver: str = "lysep") -> Drawn:
    """Figure (c): J / J_S versus iteration for LySep with the theoretical bound factor as a line.  What it
    drew: {(L, M): the bound factors drawn}."""
    recs = [r for r in records if r.solver == solver]
    sizes = sorted({(r.L, r.M) for r in recs})
    name = display_name(solver)
    fig, panels, _ = _figure(sizes, f"{experiment}: ratio $J / J_S$ versus iterations, {name} "
                                    f"({_seeds_note(recs)})")
    drawn = {}
    for (L, M), ax in panels.items():
        factors, violated, checked = set(), 0, 0
        for r in (r for r in recs if (r.L, r.M) == (L, M)):
            if (r.bound or {}).get("violations") is not None:
                checked += 1
                violated += int(bound_violations(r.bound) > 0)
            h = r.history
            J, JS = _series(h.get("J")), _series(h.get("J_S"))
            if J is not None and JS is not None:
                n = min(J.size, JS.size)
                ax.plot(np.arange(n), J[:n] / JS[:n], color=J_COLOUR, alpha=0.75)
            f = finite_number((r.bound or {}).get("factor"))
            if f is not None and f > 0:
                factors.add(f)
        handles = [Line2D([], [], color=J_COLOUR)]
        labels = ["$J / J_S$ (each seed)"]
        for f in sorted(factors):
            ax.axhline(f, color=BOUND_COLOUR, linestyle="--", linewidth=1.0)
            handles.append(Line2D([], [], color=BOUND_COLOUR, linestyle="--", linewidth=1.0))
            labels.append(f"bound factor {f:g}" + (f" (exceeded in {violated}/{checked} runs)" if checked else ""))
        ax.set_ylabel("$J / J_S$")
        ax.legend(handles, labels, loc="best")
        drawn[(L, M)] = sorted(factors)
    return Drawn(save(fig, out_dir, f"{experiment}-bound-ratio"), drawn)


def plot_experiment(records: list[RunRecord], experiment: str, out_dir: Path,
                    poly_study: pd.DataFrame | None = None, twin: list[RunRecord] | None = None,
                    shared: list[RunRecord] | None = None) -> list[Path]:
    """Write the figures of ``experiment`` from ``records`` (PNG and PDF) under ``out_dir``; their paths.

    Figures (b) and (c) need LySep runs and are skipped without them; ``poly_study``: poly's degree study
    (:func:`lysep_cli.reports.accuracy_cost.read_poly_study`), its degrees in the accuracy-cost figure.
    ``twin``: the records of its twin ``<experiment>-torch`` (the same problem under nn.Linear's
    initialisation, docs/harder.md), drawn as their own series in the accuracy-cost figure; ``shared``: for a
    twin, its problem's rfm and poly records (:func:`shared_of`), in its accuracy-cost figure.
    ValueError when ``records`` holds no run of the experiment.
    """
    records = [r for r in records if r.experiment == experiment]
    if not records:
        raise ValueError(f"no run records of experiment {experiment!r}")
    out_dir = Path(out_dir)
    paths: list[Path] = []
    with matplotlib.rc_context(STYLE):
        paths += plot_loss(records, experiment, out_dir).paths
        if any(r.solver == "lysep" for r in records):
            paths += plot_loss_js(records, experiment, out_dir).paths
            paths += plot_bound_ratio(records, experiment, out_dir).paths
        paths += plot_accuracy_cost(records + list(shared or []), experiment, out_dir, poly_study, twin).paths
    return paths


def plot_combined(by_experiment: dict[str, list[RunRecord]], out_dir: Path,
                  poly_studies: dict[str, pd.DataFrame | None] | None = None,
                  twins: dict[str, list[RunRecord]] | None = None) -> list[Path]:
    """``accuracy-cost.{png,pdf}`` under ``out_dir``: the ℓ2-against-cost panel of every experiment of
    ``by_experiment`` (name -> its records) in one figure, with its twin's records (``twins``: name -> the
    records of name-torch) as series of their own in its panel; its paths."""
    by_experiment = {e: [r for r in recs if r.experiment == e] for e, recs in by_experiment.items()}
    empty = [e for e, recs in by_experiment.items() if not recs]
    if empty or not by_experiment:
        raise ValueError(f"no run records of experiment(s) {', '.join(empty) or '(none given)'}")
    with matplotlib.rc_context(STYLE):
        return plot_accuracy_cost_combined(by_experiment, Path(out_dir), poly_studies, twins=twins).paths


def figure_dirs(results: Path, experiments: list[str], out: Path | None) -> dict[str | None, Path]:
    """Where ``lysep plot`` writes: experiment -> RESULTS/<experiment>/figures, None (the combined figure)
    -> RESULTS/figures; everything into ``out`` when given."""
    dirs: dict[str | None, Path] = {e: out if out is not None else Path(results) / e / "figures"
                                    for e in experiments}
    dirs[None] = out if out is not None else Path(results) / "figures"
    return dirs


def twins_of(every: list[ExperimentSpec], chosen: list[ExperimentSpec]) -> list[ExperimentSpec]:
    """The partners of ``chosen`` that are not chosen themselves: the twin ``X-torch`` of a chosen ``X`` (its
    series in X's accuracy-cost figure), the ``X`` of a chosen ``X-torch`` (its rfm and poly, which take no
    initialisation, in X-torch's front)."""
    names = {s.name for s in chosen}
    return [s for s in every if s.name not in names
            and ((s.name.endswith(TWIN) and s.name[:-len(TWIN)] in names) or s.name + TWIN in names)]


def shared_of(sel: Selection, experiment: str) -> list[RunRecord]:
    """For a twin ``X-torch``: X's records of the solvers that take no initialisation (rfm, poly: the same
    fits under either init); [] for any other experiment."""
    if not experiment.endswith(TWIN):
        return []
    return [r for r in sel.of(experiment[:-len(TWIN)]) if r.solver in ONE_SOLVE]


def plot_all(sel: Selection, dirs: dict[str | None, Path], results: Path, combined: bool) -> Iterator[Path]:
    """The figures of every experiment of ``dirs`` (:func:`figure_dirs`) from ``sel``, then (``combined``)
    their accuracy against cost in one figure, a twin ``X-torch`` in X's panel when both are drawn; each path
    as it is written.  poly's degree studies are read from ``results``."""
    names = [e for e in dirs if e is not None]
    studies = {e: read_poly_study(results, e) for e in names}
    for e in names:
        twin = [] if e + TWIN in names else sel.of(e + TWIN)
        shared = shared_of(sel, e)
        study = read_poly_study(results, e[:-len(TWIN)]) if shared else studies[e]
        yield from plot_experiment(sel.of(e), e, dirs[e], study, twin, shared)
    if combined:
        panels = [e for e in names if not (e.endswith(TWIN) and e[:-len(TWIN)] in names)]
        twins = {e: sel.of(e + TWIN) for e in panels if e + TWIN in names}
        yield from plot_combined({e: sel.of(e) for e in panels}, dirs[None], studies, twins)


__all__ = ["plot_experiment", "plot_combined", "plot_all", "figure_dirs", "plot_loss", "plot_loss_js", "plot_bound_ratio", "one_shot", "shared_of",
           "Level", "LossPanel", "FORMATS"]
