"""The paper's figures from our run records (``lysep plot EXPERIMENT``), as PNG and PDF.

Three figures per experiment, one panel per network size (L, M), every seed drawn as its own curve:

``<experiment>-loss``        J versus iteration for PINN and LySep (paper Fig. ``Fig_example1_loss``);
                             other solvers found in the records (rfls, pinn-adam, ...) in other colours.
``<experiment>-loss-JS``     J_S and J versus iteration for LySep (paper Fig. ``Fig_example1_loss_ORloss``).
``<experiment>-bound-ratio`` J / J_S versus iteration for LySep, with the theoretical bound factor of
                             the paper's theorems (the record's ``bound.factor``) as a dashed line.

All y axes are logarithmic. The figures are sized for a printed page (two panels across ~6.5 in).
The records drawn are the ones the CLI selected (matching the spec, :func:`lysep_cli.reports.selection.select`);
each figure is written atomically.
"""

from __future__ import annotations

import io
import math
import textwrap
from pathlib import Path
from typing import Any, Iterable

import matplotlib

matplotlib.use("Agg")  # no display; must come before pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from lysep_cli.reports.selection import bound_violations, display_name, finite_number, solver_key
from lysep_cli.solvers import PAPER_SOLVERS, SOLVERS, solver_def
from lysep_cli.store.atomic import write_bytes
from lysep_cli.store.schema import RunRecord

#: colours per solver; solvers not listed take the next free colour of EXTRA_COLOURS
COLOURS = {"pinn": "tab:red", "lysep": "tab:blue"}
EXTRA_COLOURS = ["tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan",
                 "tab:gray"]
J_COLOUR, JS_COLOUR, BOUND_COLOUR = "tab:blue", "tab:orange", "black"
FORMATS = ("png", "pdf")
STYLE = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "figure.titlesize": 9, "lines.linewidth": 0.8,
    "savefig.dpi": 200, "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5,
}


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


def _colours(solvers: Iterable[str]) -> dict[str, str]:
    out, extra = {}, iter(EXTRA_COLOURS * 4)
    for s in solvers:
        out[s] = COLOURS.get(s) or next(extra)
    return out


def _grid(n: int) -> tuple[int, int]:
    ncols = 1 if n == 1 else 2
    return math.ceil(n / ncols), ncols


def _figure(sizes: list[tuple[int, int]], title: str):
    nrows, ncols = _grid(len(sizes))
    if ncols == 1:  # one panel: a little wider, and the title on two lines so that it fits
        figsize = (4.2, 3.3)
        title = title.replace(": ", ":\n", 1)
    else:
        figsize = (3.25 * ncols, 2.5 * nrows + 0.35)
        width = round(11 * figsize[0])  # ~11 title characters an inch
        title = "\n".join(textwrap.wrap(title, width=width, break_on_hyphens=False))
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False, constrained_layout=True)
    for ax in axes.flat[len(sizes):]:
        ax.set_visible(False)
    panels = {}
    for i, (ax, (L, M)) in enumerate(zip(axes.flat, sizes)):
        label = f"({chr(ord('a') + i)}) $L={L}, M={M}$" if len(sizes) > 1 else f"$L={L}, M={M}$"
        ax.set_title(label)
        ax.set_yscale("log")
        ax.set_xlabel("iteration")
        panels[(L, M)] = ax
    fig.suptitle(title)
    return fig, panels


def _save(fig, out_dir: Path, stem: str) -> list[Path]:
    paths = []
    try:
        for ext in FORMATS:
            buf = io.BytesIO()
            # no creation date in a PDF: the same records give the same bytes (no churn in the archive)
            fig.savefig(buf, format=ext, **({"metadata": {"CreationDate": None}} if ext == "pdf" else {}))
            paths.append(write_bytes(out_dir / f"{stem}.{ext}", buf.getvalue()))
    finally:
        plt.close(fig)
    return paths


def _seeds_note(recs: list[RunRecord]) -> str:
    """"10 seeds", or "10 seeds; poly: one fit" where a seed-free solver (one run, no spread) is drawn too."""
    free = sorted({r.solver for r in recs if r.solver in SOLVERS and solver_def(r.solver).capabilities.seed_free},
                  key=solver_key)
    n = len({r.seed for r in recs if r.solver not in free})
    notes = [f"{n} seed" + ("" if n == 1 else "s")] if n or not free else []
    return "; ".join(notes + [f"{display_name(s)}: one fit" for s in free])


def plot_loss(records: list[RunRecord], experiment: str, out_dir: Path) -> list[Path]:
    """Figure (a): J versus iteration for every solver, all seeds, one panel per (L, M)."""
    paper = {(r.L, r.M) for r in records if r.solver in PAPER_SOLVERS}
    sizes = sorted({(r.L, r.M) for r in records}, key=lambda s: (s not in paper, s))  # the paper's first
    solvers = sorted({r.solver for r in records}, key=solver_key)
    colours = _colours(solvers)
    names = ", ".join(display_name(s) for s in solvers)
    fig, panels = _figure(sizes, f"{experiment}: loss $J$ versus iterations, {names} ({_seeds_note(records)})")
    for (L, M), ax in panels.items():
        drawn = []
        for s in solvers:
            for r in (r for r in records if (r.L, r.M, r.solver) == (L, M, s)):
                J = _series(r.history.get("J"))
                if J is None:
                    continue
                ax.plot(np.arange(J.size), J, color=colours[s], alpha=0.75)
                if s not in drawn:
                    drawn.append(s)
        ax.set_ylabel("$J$")
        if drawn:
            ax.legend([Line2D([], [], color=colours[s]) for s in drawn], [display_name(s) for s in drawn],
                      loc="best")
    return _save(fig, out_dir, f"{experiment}-loss")


def plot_loss_js(records: list[RunRecord], experiment: str, out_dir: Path, solver: str = "lysep") -> list[Path]:
    """Figure (b): J_S and J versus iteration for LySep, all seeds, one panel per (L, M)."""
    recs = [r for r in records if r.solver == solver]
    sizes = sorted({(r.L, r.M) for r in recs})
    name = display_name(solver)
    fig, panels = _figure(sizes, f"{experiment}: $J_S$ and $J$ versus iterations, {name} ({_seeds_note(recs)})")
    for (L, M), ax in panels.items():
        for r in (r for r in recs if (r.L, r.M) == (L, M)):
            h = r.history
            J, JS = _series(h.get("J")), _series(h.get("J_S"))
            if JS is not None:
                ax.plot(np.arange(JS.size), JS, color=JS_COLOUR, alpha=0.75)
            if J is not None:
                ax.plot(np.arange(J.size), J, color=J_COLOUR, alpha=0.75, linestyle="--")
        ax.set_ylabel("loss")
        ax.legend([Line2D([], [], color=JS_COLOUR), Line2D([], [], color=J_COLOUR, linestyle="--")],
                  ["$J_S$ (LySep loss)", "$J$ (PINN loss of $W_l, b_l$)"], loc="best")
    return _save(fig, out_dir, f"{experiment}-loss-JS")


def plot_bound_ratio(records: list[RunRecord], experiment: str, out_dir: Path, solver: str = "lysep") -> list[Path]:
    """Figure (c): J / J_S versus iteration for LySep with the theoretical bound factor as a line."""
    recs = [r for r in records if r.solver == solver]
    sizes = sorted({(r.L, r.M) for r in recs})
    name = display_name(solver)
    fig, panels = _figure(sizes, f"{experiment}: ratio $J / J_S$ versus iterations, {name} "
                                 f"({_seeds_note(recs)})")
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
    return _save(fig, out_dir, f"{experiment}-bound-ratio")


def plot_experiment(records: list[RunRecord], experiment: str, out_dir: Path) -> list[Path]:
    """Write the figures of ``experiment`` from ``records`` (PNG and PDF) under ``out_dir``; their paths.

    Figures (b) and (c) need LySep runs and are skipped without them.  ValueError when ``records`` holds
    no run of the experiment.
    """
    records = [r for r in records if r.experiment == experiment]
    if not records:
        raise ValueError(f"no run records of experiment {experiment!r}")
    out_dir = Path(out_dir)
    paths: list[Path] = []
    with matplotlib.rc_context(STYLE):
        paths += plot_loss(records, experiment, out_dir)
        if any(r.solver == "lysep" for r in records):
            paths += plot_loss_js(records, experiment, out_dir)
            paths += plot_bound_ratio(records, experiment, out_dir)
    return paths


__all__ = ["plot_experiment", "plot_loss", "plot_loss_js", "plot_bound_ratio", "FORMATS"]
