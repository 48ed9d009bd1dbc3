"""What the tables, the comparison, the plots and the run summary share.

- the published tables (``lysep_cli/data/published-tables.yaml``), loaded once;
- display names and the order of the solvers (PINN, LySep, then the others by name);
- the number format (``%.2e``, mean ± std, a dash for a missing value);
- :func:`sample_std`: the std every report shows, the sample std over the seeds (divides by N − 1, as
  Matlab's ``std`` and ``torch.std`` that the paper used; NaN for one seed, shown as the mean alone);
- :func:`select`: which records a report may use.  Only records that match the spec they are shown
  under (solver settings, iterations, n_train, n_test, data set; :func:`lysep_cli.store.schema.differences`)
  are used; the others are counted per reason and named in a note, never averaged in;
- :func:`aggregate`: mean and sample std over the seeds per (experiment, L, M, solver);
- :func:`summary_lines`: the summary ``lysep run`` prints after a sweep;
- :func:`shown`: the records and experiments a report command shows, or :class:`NothingToShow`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
import yaml

from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers import PAPER_SOLVERS, seeds_of
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.layout import RunPath
from lysep_cli.store.records import Loaded, load_records
from lysep_cli.store.schema import RunRecord, describe_difference, differences, expected

#: published model name -> our solver name
PAPER_MODELS = {"PINN": "pinn", "LySep": "lysep"}
#: our solver name -> display name (other solvers are shown under their own name)
DISPLAY_NAMES = {"pinn": "PINN", "lysep": "LySep"}
QUANTITIES = ("J_S", "J", "l2")


# ---------------------------------------------------------------------------------------------
# Published tables, names, order, numbers.

@lru_cache(maxsize=1)
def published() -> dict[str, Any]:
    """The paper's Tables 1-4 as shipped (experiment name -> table block with ``rows``)."""
    text = resources.files("lysep_cli").joinpath("data", "published-tables.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def published_row(experiment: str, L: int, M: int, solver: str) -> dict[str, Any] | None:
    """{"J_S": [mean, std] | absent, "J": [...], "l2": [...]} of the paper, or None."""
    model = DISPLAY_NAMES.get(solver)
    for row in (published().get(experiment) or {}).get("rows", []):
        if row.get("L") == L and row.get("M") == M and row.get("model") == model:
            return row
    return None


def published_frame() -> pd.DataFrame:
    """One row per published cell: experiment, table, L, M, solver, quantity, mean, std, seeds, iterations."""
    rows = []
    for exp, block in published().items():
        for row in block["rows"]:
            for q in QUANTITIES:
                if row.get(q) is None:
                    continue
                mean, std = row[q]
                rows.append({"experiment": exp, "table": block.get("table"), "L": int(row["L"]),
                             "M": int(row["M"]), "solver": PAPER_MODELS[row["model"]], "quantity": q,
                             "mean": float(mean), "std": float(std), "seeds": block.get("seeds"),
                             "iterations": block.get("iterations")})
    return pd.DataFrame(rows, columns=["experiment", "table", "L", "M", "solver", "quantity", "mean", "std",
                                       "seeds", "iterations"])


def display_name(solver: str) -> str:
    return DISPLAY_NAMES.get(solver, solver)


def solver_key(solver: str) -> tuple[int, str]:
    """Sort key: the paper's solvers first (PINN, LySep), then the others by name."""
    return (PAPER_SOLVERS.index(solver), "") if solver in PAPER_SOLVERS else (len(PAPER_SOLVERS), solver)


def order_solvers(solvers: Iterable[str]) -> list[str]:
    return sorted(set(solvers), key=solver_key)


def dash(latex: bool = False) -> str:
    return "--" if latex else "—"


def sci(x: float) -> str:
    """``%.2e``; "nan" for a missing value."""
    return "nan" if not math.isfinite(x) else f"{x:.2e}"


def pm(mean: float, std: float, latex: bool = False, spaced: bool = False) -> str:
    """"mean±std" in %.2e (``spaced``: "mean ± std"); the mean alone when std is missing (one seed: the
    sample std is undefined); a dash when the mean is missing."""
    if not math.isfinite(mean):
        return dash(latex)
    if not math.isfinite(std):
        return sci(mean)
    sign = "$\\pm$" if latex else "±"
    return f"{mean:.2e} {sign} {std:.2e}" if spaced else f"{mean:.2e}{sign}{std:.2e}"


# ---------------------------------------------------------------------------------------------
# Which records a report may use.

REASONS = {"solver": "a solver the spec does not configure", "problem": "another PDE or solution",
           "iterations": "other iterations",
           "settings": "other solver settings", "n_train": "another n_train", "n_test": "another n_test",
           "data set": "another data set"}


@dataclass
class Selection:
    """The records a report uses, and what it leaves out.

    records : records that match their experiment's spec (sorted by cell).
    iterations : experiment -> the iteration count shown.
    excluded : experiment -> reason (a key of REASONS) -> number of valid records left out.
    excluded_iterations : experiment -> iteration count -> records left out for their iterations alone.
    invalid : experiment -> number of record files that did not parse or validate.
    left_out : (record, how it differs from the spec) of every valid record left out (``lysep verify``
        names each).
    extra_seeds : records made as the spec asks but of a seed it does not ask for (``seeds_of(solver,
        spec.seeds)``): left out of every table and comparison, and named in its note, so that a cell is
        never the best ten of more seeds; ``lysep verify`` checks them with the others.
    """

    records: list[RunRecord] = field(default_factory=list)
    iterations: dict[str, int] = field(default_factory=dict)
    excluded: dict[str, Counter] = field(default_factory=dict)
    excluded_iterations: dict[str, Counter] = field(default_factory=dict)
    invalid: dict[str, int] = field(default_factory=dict)
    left_out: list[tuple[RunRecord, str]] = field(default_factory=list)
    extra_seeds: list[RunRecord] = field(default_factory=list)
    requested: dict[tuple[str, str], int] = field(default_factory=dict)
    """(experiment, solver) -> how many seeds its spec asks for (``seeds_of``)"""

    def missing_seeds(self, experiment: str, solver: str, n_runs: int) -> int:
        """How many of the spec's seeds a cell of ``n_runs`` runs (diverged ones included) lacks."""
        return max(self.requested.get((experiment, solver), n_runs) - n_runs, 0)

    def of(self, experiment: str) -> list[RunRecord]:
        return [r for r in self.records if r.experiment == experiment]

    def note(self, experiment: str) -> str | None:
        """"Not shown: ..." — the records of ``experiment`` left out and why; None when none were."""
        parts = [f"{n} with {REASONS[why]}" for why, n in sorted(self.excluded.get(experiment, Counter()).items())]
        total = sum(self.excluded.get(experiment, Counter()).values())
        text = f"{total} run record(s) that do not match the spec ({', '.join(parts)})" if total else ""
        extra = [r for r in self.extra_seeds if r.experiment == experiment]
        if extra:
            cells: dict[tuple[str, int, int], list[int]] = {}
            for r in extra:
                cells.setdefault((r.solver, r.L, r.M), []).append(r.seed)
            named = "; ".join(f"{s} L{L}-M{M} seed(s) {', '.join(map(str, sorted(seeds)))}"
                              for (s, L, M), seeds in sorted(cells.items()))
            text += ("; " if text else "") + f"{len(extra)} run(s) of seeds the spec does not ask for ({named})"
        bad = self.invalid.get(experiment, 0)
        if bad:
            text += ("; " if text else "") + f"{bad} invalid record file(s) (see the warnings)"
        return f"Not shown: {text}." if text else None

    def hint(self, experiment: str) -> str:
        """A suggestion when records were left out for their iteration count alone."""
        its = self.excluded_iterations.get(experiment, Counter())
        if not its:
            return ""
        most = its.most_common(1)[0][0]
        return f" ({sum(its.values())} differ only in their iterations, {', '.join(map(str, sorted(its)))}: " \
               f"add --iterations {most})"


def select(loaded: Loaded, specs: list[ExperimentSpec], iterations: int | None = None) -> Selection:
    """The records of ``loaded`` that match ``specs`` (run with ``iterations``, default each spec's own)."""
    by_name = {s.name: s for s in specs}
    sel = Selection()
    wanted = {}
    for spec in specs:
        sel.iterations[spec.name] = spec.iterations if iterations is None else iterations
        sel.excluded[spec.name] = Counter()
        sel.excluded_iterations[spec.name] = Counter()
        sel.requested.update({(spec.name, name): len(seeds_of(name, spec.seeds)) for name in spec.solvers})
        sha = experiment_data(spec).sha256
        wanted[spec.name] = {name: expected(spec, name, sel.iterations[spec.name], sha) for name in spec.solvers}
    for rec in loaded.records:
        if rec.experiment not in by_name:
            continue
        want = wanted[rec.experiment].get(rec.solver)
        why = ["solver"] if want is None else differences(rec, want)
        if why:
            sel.excluded[rec.experiment][why[0]] += 1
            sel.left_out.append((rec, REASONS["solver"] if want is None else describe_difference(rec, want)))
            if why == ["iterations"]:
                sel.excluded_iterations[rec.experiment][rec.iterations] += 1
        elif rec.seed not in seeds_of(rec.solver, by_name[rec.experiment].seeds):
            sel.extra_seeds.append(rec)
        else:
            sel.records.append(rec)
    for path, _ in loaded.problems:
        name = _experiment_of(path, by_name)
        if name is not None:
            sel.invalid[name] = sel.invalid.get(name, 0) + 1
    return sel


def _experiment_of(path: Path, names: Iterable[str]) -> str | None:
    """The experiment directory a record file lies in (lysep_cli/store/layout.py)."""
    try:
        name = RunPath.parse(path).experiment
    except ValueError:
        return None
    return name if name in names else None


# ---------------------------------------------------------------------------------------------
# Statistics.

COLUMNS = ["experiment", "L", "M", "solver", "n_runs", "n_seeds", "n_diverged", "J_S_mean", "J_S_std",
           "J_mean", "J_std", "l2_mean", "l2_std", "seconds_mean", "iterations"]


#: what every mean ± std of the reports is, for their captions and legends
STD_NOTE = "± sample std over the seeds (divides by N − 1; one seed: the mean alone)"


def _float(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def sample_std(values: np.ndarray) -> float:
    """The sample standard deviation (ddof = 1, dividing by N − 1) of ``values`` (shape (N,)); NaN when
    N < 2, where it is undefined (the reports then print the mean alone)."""
    x = np.asarray(values, dtype=float)
    return float(np.std(x, ddof=1)) if x.size >= 2 else float("nan")


def aggregate(records: list[RunRecord]) -> pd.DataFrame:
    """One row per (experiment, L, M, solver).

    Columns: n_runs (records), n_seeds (runs with status "ok", the ones aggregated), n_diverged,
    J_S_mean, J_S_std, J_mean, J_std, l2_mean, l2_std (mean and sample std, :func:`sample_std`, over
    the ok runs; NaN when none, or when the solver has no J_S; the std is NaN for one ok run), seconds_mean (all
    runs: each run's :attr:`RunRecord.compute_seconds`, CPU seconds where recorded), iterations (the common count,
    -1 when mixed).
    """
    if not records:
        return pd.DataFrame(columns=COLUMNS)
    flat = pd.DataFrame([{
        "experiment": r.experiment, "L": r.L, "M": r.M, "solver": r.solver, "ok": r.ok,
        "J": _float(r.final.J), "J_S": _float(r.final.J_S), "l2": _float(r.final.l2),
        "seconds": r.compute_seconds, "iterations": r.iterations,
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
            row[f"{f}_std"] = sample_std(good) if full else float("nan")
        row["seconds_mean"] = float(g["seconds"].mean())
        its = g["iterations"].unique()
        row["iterations"] = int(its[0]) if len(its) == 1 else -1
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


# ---------------------------------------------------------------------------------------------
# The summary of a sweep.

def finite_number(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None (a record's free-form ``bound`` and
    ``diagnostics`` may hold anything)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = float(value)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def bound_violations(bound: Any) -> int:
    """Violations of LySep's bound check that a record's ``bound`` counts (0 where it holds no count)."""
    v = bound.get("violations") if isinstance(bound, dict) else None
    if isinstance(v, list):
        return len(v)
    x = finite_number(v)
    return int(x) if x is not None else 0


def summary_lines(recs: list[RunRecord]) -> list[str]:
    """Per (solver, L, M): runs, diverged, mean final J / J_S / l2; then the LySep bound check."""
    groups: dict[tuple[str, int, int], list[RunRecord]] = {}
    for r in recs:
        groups.setdefault((r.solver, r.L, r.M), []).append(r)
    lines = []
    for (solver, L, M), rs in sorted(groups.items()):
        ok = [r for r in rs if r.ok]
        text = f"{solver:<10} L{L}-M{M:<4} runs {len(rs):>2}  diverged {len(rs) - len(ok)}"
        if ok:
            def mean(q: str) -> float:
                return float(np.mean([_float(getattr(r.final, q)) for r in ok]))

            l2 = mean('l2')
            text += f"  mean J {mean('J'):.2e}  l2 " + (f"{l2:.2e}" if np.isfinite(l2) else "— (no exact solution)")
            if all(r.final.J_S is not None for r in ok):
                text += f"  J_S {mean('J_S'):.2e}"
        lines.append(text)
    bounded = [r for r in recs if r.bound]
    if bounded:
        bad = [r for r in bounded if bound_violations(r.bound) > 0]
        total = sum(bound_violations(r.bound) for r in bounded)
        factors = sorted({f for f in (finite_number(r.bound.get("factor")) for r in bounded) if f is not None})
        lines.append(f"bound J <= factor * J_S (factor {', '.join(f'{f:g}' for f in factors) or '?'}): "
                     f"violated in {len(bad)} of {len(bounded)} runs ({total} violations in total)")
        for r in bad:
            lines.append(f"  violation: {r.solver} L{r.L}-M{r.M} seed {r.seed}: {bound_violations(r.bound)}")
    return lines


# ---------------------------------------------------------------------------------------------
# What a report command shows.

class NothingToShow(Exception):
    """No record matches what a report asks for (the command ends with exit code 1, one line)."""


def load_selection(results: Path, chosen: list[ExperimentSpec], iterations: int | None,
                   warn: Callable[[str], None], seals: bool = True) -> Selection:
    """Load and check the records of ``chosen`` under ``results``, ``warn`` about unusable files (a damaged
    NPZ, and with ``seals`` a broken seal: :func:`lysep_cli.store.records.load_records`), keep those
    matching the spec."""
    loaded = load_records(results, [s.name for s in chosen], seals)
    for line in loaded.warnings():
        warn(line)
    return select(loaded, chosen, iterations)


def nothing_to_show(results: Path, chosen: list[ExperimentSpec], sel: Selection) -> NothingToShow:
    """The error naming what was asked, what was left out and how to show it (``--iterations N``)."""
    left = sum(sum(c.values()) for c in sel.excluded.values())
    text = (f"no run record under {results}/ matches the spec of "
            f"{', '.join(s.name for s in chosen) or 'any experiment'}")
    if left:
        text += f"; {left} record(s) left out"
        text += next((sel.hint(s.name) for s in chosen if sel.hint(s.name)), "")
    return NothingToShow(text)


def shown(results: Path, chosen: list[ExperimentSpec], iterations: int | None, named: bool,
          warn: Callable[[str], None]) -> tuple[Selection, list[ExperimentSpec]]:
    """The records selected, and the experiments a report shows: those named, else those with records
    (:class:`NothingToShow` when there are none)."""
    sel = load_selection(results, chosen, iterations, warn)
    experiments = chosen if named else [s for s in chosen if sel.of(s.name)]
    if not any(sel.of(s.name) for s in experiments):
        raise nothing_to_show(results, chosen, sel)
    return sel, experiments
