"""What a suite of runs will cost, from the archive's measured rates (``lysep study budget``).

Per run, the estimate is ``iterations x r``, r the CPU seconds per iteration of the same solver in the
archive (a record's ``diagnostics.cpu_seconds``, else its wall ``seconds``, over ``iterations_done``; the
median over a cell's seeds, so a run the machine stalled, 990 s wall for 14 CPU s, does not count) at a
comparable cell:

- inputs n_in = d (+1 with time): r is interpolated linearly in n_in between the archive's nearest
  experiments below and above (2-D: n_in 2; 5-D time-dependent: 6; 10-D: 10; at equal n_in the slower
  of them), the nearest one beyond the range;
- width M at L: linearly between the archive's widths at that L; below its smallest width, the smallest
  width's rate (the rate falls with M, so this over-estimates); above its largest, extrapolated in
  proportion to M;
- training points: in proportion to n_train / the archive's n_train.

A solver the archive has no cell of at some experiment takes PINN's rate there times its median ratio to
PINN over the cells where both were run.  One-solve solvers (rfls, rfm, poly) cost their median
``seconds`` per run at the nearest n_in (rfm, poly scaled by their cell's own (M, n_train) in proportion);
poly runs once (its seed defines nothing).  Runs whose result depends on the initialisation
(:data:`INIT_DEPENDENT`) count ``inits`` times (the paper's U(+-M^-1/2) and nn.Linear's).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from lysep_cli.specs import ExperimentSpec, n_inputs
from lysep_cli.store.schema import RunRecord

#: solvers trained from the seeded network: each also under the second initialisation
INIT_DEPENDENT = ("pinn", "lysep", "pinn-adam", "pinn-lbfgs", "pinn-lm", "rfls")
#: solvers whose cost is one least-squares solve, whatever ``iterations``
ONE_SOLVE = ("rfls", "rfm", "poly")


@dataclass(frozen=True)
class Rates:
    """The archive's measured costs: (solver, n_in, L) -> sorted [(M, seconds per iteration at n_train)],
    with the archive's n_train per n_in; one-solve solvers' seconds per run."""

    per_iteration: dict[tuple[str, int, int], list[tuple[int, float, int]]]
    per_run: dict[tuple[str, int], list[tuple[int, float, int]]]
    ratio: dict[str, float]


def archive_rates(records: Iterable[RunRecord]) -> Rates:
    """:class:`Rates` from run records (the median over each cell's seeds)."""
    cells: dict[tuple[str, int, int, int, int], list[float]] = defaultdict(list)
    for r in records:
        seconds = (r.diagnostics or {}).get("cpu_seconds", r.seconds)
        if r.status != "ok" or seconds is None or not math.isfinite(seconds):
            continue
        n_in = n_inputs(r.pde, r.d)
        its = 1 if r.solver in ONE_SOLVE else max(int(r.iterations_done), 1)
        cells[(r.solver, n_in, r.L, r.M, r.n_train)].append(float(seconds) / its)
    per_iteration: dict[tuple[str, int, int], dict[int, tuple[float, int]]] = defaultdict(dict)
    per_run: dict[tuple[str, int], dict[int, tuple[float, int]]] = defaultdict(dict)
    for (solver, n_in, L, M, n_train), values in cells.items():
        rate = float(np.median(values))
        target = per_run[(solver, n_in)] if solver in ONE_SOLVE else per_iteration[(solver, n_in, L)]
        if M not in target or rate > target[M][0]:  # two experiments at one n_in: the slower
            target[M] = (rate, n_train)
    ratios: dict[str, list[float]] = defaultdict(list)
    for (solver, n_in, L), by_m in per_iteration.items():
        pinn = per_iteration.get(("pinn", n_in, L), {})
        ratios[solver] += [by_m[M][0] / pinn[M][0] for M in by_m if M in pinn]
    return Rates({k: sorted((M, r, n) for M, (r, n) in v.items()) for k, v in per_iteration.items()},
                 {k: sorted((M, r, n) for M, (r, n) in v.items()) for k, v in per_run.items()},
                 {s: float(np.median(v)) for s, v in ratios.items() if v})


def _in_m(points: list[tuple[int, float, int]], M: int, n_train: int) -> float:
    """The rate at width M and n_train from one (solver, n_in, L)'s sorted (M, rate, n_train) points."""
    Ms = [p[0] for p in points]
    scaled = [p[1] * n_train / p[2] for p in points]
    if M <= Ms[0]:
        return scaled[0]
    if M >= Ms[-1]:
        return scaled[-1] * M / Ms[-1]
    return float(np.interp(M, Ms, scaled))


def _in_n_in(values: dict[int, float], n_in: int) -> float:
    """Linear in n_in between the nearest n_in below and above; the nearest one beyond the range."""
    xs = sorted(values)
    if n_in <= xs[0]:
        return values[xs[0]]
    if n_in >= xs[-1]:
        return values[xs[-1]]
    return float(np.interp(n_in, xs, [values[x] for x in xs]))


def per_iteration(rates: Rates, solver: str, n_in: int, L: int, M: int, n_train: int) -> float:
    """Estimated seconds per iteration of ``solver`` (module docstring)."""
    own = {k[1]: _in_m(v, M, n_train) for k, v in rates.per_iteration.items() if k[0] == solver and k[2] == L}
    if own and len(own) == len({k[1] for k in rates.per_iteration if k[0] == "pinn" and k[2] == L}):
        return _in_n_in(own, n_in)
    pinn = {k[1]: _in_m(v, M, n_train) for k, v in rates.per_iteration.items() if k[0] == "pinn" and k[2] == L}
    if not pinn:
        raise ValueError(f"the archive has no PINN run with L = {L}")
    return _in_n_in(pinn, n_in) * rates.ratio.get(solver, 1.0)


def per_run(rates: Rates, solver: str, n_in: int, M: int, n_train: int) -> float:
    """Estimated seconds of one run of a one-solve solver (its cell scaled in proportion to M n_train)."""
    by_n = {k[1]: v for k, v in rates.per_run.items() if k[0] == solver}
    if not by_n:
        return 0.0
    near = min(by_n, key=lambda x: abs(x - n_in))
    Mr, r, nr = by_n[near][-1]
    return r * (M / Mr if solver != "rfls" else 1.0) * n_train / nr


def estimate(spec: ExperimentSpec, rates: Rates, sizes: list[tuple[int, int]] | None = None,
             inits: int = 2, solvers: Iterable[str] | None = None) -> list[dict]:
    """One row per solver of ``spec``: runs and estimated CPU seconds over its sizes (``sizes`` for the
    iterative ones when given), seeds and ``inits``."""
    n_in = n_inputs(spec.pde, spec.d)
    rows = []
    for solver in solvers or spec.solvers:
        cells = spec.sizes_for(solver) if (sizes is None or solver in ("rfm", "poly")) else sizes
        seeds = 1 if solver == "poly" else len(spec.seeds)
        times = inits if solver in INIT_DEPENDENT else 1
        if solver in ONE_SOLVE:
            each = [per_run(rates, solver, n_in, M, spec.n_train) for L, M in cells]
        else:
            each = [spec.iterations * per_iteration(rates, solver, n_in, L, M, spec.n_train) for L, M in cells]
        rows.append({"experiment": spec.name, "solver": solver, "runs": len(cells) * seeds * times,
                     "seconds": float(sum(each)) * seeds * times,
                     "per_size": {f"({L},{M})": e for (L, M), e in zip(cells, each)}})
    return rows


def names_inits(spec: ExperimentSpec) -> bool:
    """``spec`` sets a network solver's ``init`` to something other than the paper's: the experiments file
    lists each initialisation as experiments of its own (``-torch`` twins), so every run counts once."""
    return any(getattr(spec.solvers[s], "init", "paper") != "paper" for s in spec.solvers if s in INIT_DEPENDENT)


def fixed_tau_estimate(spec: ExperimentSpec, rates: Rates, n_taus: int) -> dict:
    """``lysep study step-size`` at the experiment's smallest LySep size over its seeds and iterations: one
    run per fixed tau (``n_taus``) and one of the default rule per seed, each at LySep's rate (a fixed step
    tries no trial steps, so this over-estimates it)."""
    L, M = min(spec.sizes_for("lysep"), key=lambda s: (s[1], s[0]))
    each = spec.iterations * per_iteration(rates, "lysep", n_inputs(spec.pde, spec.d), L, M, spec.n_train)
    runs = (n_taus + 1) * len(spec.seeds)
    return {"experiment": spec.name, "solver": "lysep, fixed tau (study step-size)", "runs": runs,
            "seconds": each * runs, "per_size": {f"({L},{M})": each}}


def markdown(rows: list[dict], budget_hours: float) -> str:
    """The estimate as a Markdown table: per experiment and solver, runs and CPU hours; the total."""
    from tabulate import tabulate

    table = [[r["experiment"], r["solver"], r["runs"], f"{r['seconds'] / 3600:.2f}",
              ", ".join(f"{k} {v:.0f} s" for k, v in r["per_size"].items())] for r in rows]
    total = sum(r["seconds"] for r in rows) / 3600
    runs = sum(r["runs"] for r in rows)
    text = tabulate(table, headers=["experiment", "solver", "runs", "CPU h", "one run per size"],
                    tablefmt="github", disable_numparse=True)
    verdict = "within" if total <= budget_hours else "over"
    return (f"{text}\n\nTotal: {runs} runs, {total:.2f} CPU hours, {verdict} the budget of {budget_hours:g} CPU "
            f"hours ({total / 2:.2f} hours on 2 cores).\n")
