"""Cell-level reproduction: do two sets of runs of one cell (experiment, solver, L, M) agree over seeds?

What the paper reports is a cell's mean and spread over its 10 seeds, so that is what a reproduction on
another platform, a user's own rerun or an archive made with new kernels must match.  Per cell and per
quantity q in {final J, final l2}, with a = the reference runs and b = the compared runs:

* the ratio of geometric means  r = exp(mean log q_b - mean log q_a)  (the effect size), and
* the two-sided Mann-Whitney U test of q_a against q_b (:func:`scipy.stats.mannwhitneyu`; exact p for
  these sample sizes).

The cell DIFFERS when, for J or l2, ``p < ALPHA`` or ``r`` is outside ``[1/RATIO_BOUND, RATIO_BOUND]``.

Why these: a reproduction that is off is off in level (all seeds better or worse), so the test is the
rank-sum test, the most powerful rank test for a shift; ranks make it indifferent to the log and let a
diverged run (non-finite J, ranked last) take part.  Anderson-Darling's k-sample p-value is clipped to
[0.001, 0.25] in SciPy and Kolmogorov-Smirnov has little power at n = 10.  A test alone cannot tell "the
same" from "too few seeds to see it": a 3x shift in a cell whose seeds spread over two decades passes
it, so the bound on r is the second half of the rule.  The rule is made for the same seeds on both
sides (a rerun, or another archive of the same seeds), where round-off moves each seed by 1e-4 or less;
between different seeds of one cell the geometric means of 5 seeds can differ by more than 2x.  Its
power and false-alarm rate are measured in docs/reproducibility.md
(studies/cellstats_power.py).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

import numpy as np
from scipy.stats import mannwhitneyu

from lysep_cli.store.schema import RunRecord

ALPHA = 0.01
RATIO_BOUND = 2.0
#: a seed whose final J moved by more than this factor is named in the line (the verdict is the rule's)
SEED_NOTE = 10.0
#: random splits behind the no-change alarm rate printed for a cell that differs (split_alarm_rate)
SPLIT_DRAWS = 4000
QUANTITIES = ("J", "l2")

Cell = tuple[str, str, int, int]


def cell_of(record: RunRecord) -> Cell:
    return record.experiment, record.solver, record.L, record.M


def by_cell(records: Iterable[RunRecord]) -> dict[Cell, list[RunRecord]]:
    """Records grouped by cell, each group in seed order."""
    out: dict[Cell, list[RunRecord]] = defaultdict(list)
    for r in records:
        out[cell_of(r)].append(r)
    return {c: sorted(rs, key=lambda r: r.seed) for c, rs in sorted(out.items())}


@dataclass(frozen=True)
class QuantityTest:
    """One quantity of one cell: geometric means (finite values), their ratio b/a, the U test's p."""

    name: str
    gm_a: float
    gm_b: float
    ratio: float
    p: float

    @property
    def differs(self) -> bool:
        return self.p < ALPHA or not (1 / RATIO_BOUND <= self.ratio <= RATIO_BOUND)


@dataclass(frozen=True)
class CellComparison:
    """Reference runs ``a`` against compared runs ``b`` of one cell."""

    cell: Cell
    n_a: int
    n_b: int
    tests: tuple[QuantityTest, ...]
    same_seeds: bool = True
    moved: tuple[tuple[int, float, float], ...] = ()  # (seed, J a, J b) of seeds whose J moved > SEED_NOTE x
    split_alarms: float | None = None  # of a cell that differs: :func:`split_alarm_rate`

    @property
    def verdict(self) -> str:
        if min(self.n_a, self.n_b) < 2:
            return "too few"
        return "DIFFERS" if any(t.differs for t in self.tests) else "agrees"

    @property
    def ok(self) -> bool:
        return self.verdict != "DIFFERS"

    def line(self) -> str:
        e, s, L, M = self.cell
        parts = [f"{t.name} {t.gm_a:.3g} -> {t.gm_b:.3g} (x{t.ratio:.3g}, p={t.p:.2g})" for t in self.tests]
        text = f"{self.verdict:<9} {e} {s} L{L}-M{M}: n {self.n_a}/{self.n_b}; " + "; ".join(parts)
        if self.moved:
            text += f"; J moved more than {SEED_NOTE:g}x: " + ", ".join(
                f"seed {seed} {ja:.3g} -> {jb:.3g}" for seed, ja, jb in self.moved)
        if self.split_alarms is not None:
            text += (f"; a random split of the two sides' {self.n_a + self.n_b} runs puts the ratio outside "
                     f"the bound in {100 * self.split_alarms:.0f} % of splits")
        if not self.same_seeds:
            text += " [other seeds: the rule is made for the same seeds, see docs/reproducibility.md]"
        return text


def _values(records: Sequence[RunRecord], name: str) -> list[float]:
    """Final values of ``name``; a diverged or non-finite value counts as +inf (the worst rank)."""
    out = []
    for r in records:
        v = getattr(r.final, name)
        out.append(float(v) if v is not None and math.isfinite(v) and v > 0 else math.inf)
    return out


def _geometric_mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in finite) / len(finite)) if finite else math.inf


def compare_quantity(a: Sequence[float], b: Sequence[float], name: str) -> QuantityTest:
    """The effect size and the U test of one quantity (values > 0; +inf allowed)."""
    if not any(math.isfinite(v) for v in list(a) + list(b)):
        return QuantityTest(name, math.nan, math.nan, 1.0, 1.0)  # nothing to compare (no l2 without an exact u)
    gm_a, gm_b = _geometric_mean(a), _geometric_mean(b)
    ratio = gm_b / gm_a if math.isfinite(gm_a) and math.isfinite(gm_b) else math.inf
    if list(a) == list(b) or len(set(a) | set(b)) == 1:
        p = 1.0  # identical samples (U is undefined when every value ties)
    else:
        p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return QuantityTest(name, gm_a, gm_b, ratio, p)


def _moved_seeds(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> tuple[tuple[int, float, float], ...]:
    """Seeds on both sides whose final J differs by more than SEED_NOTE x (or is finite on one side only):
    a regime change of one seed (e.g. a LySep run that stays on the ridge plateau), which the rule's
    geometric means can absorb, but a table's mean cannot."""
    jb = dict(zip((r.seed for r in b), _values(b, "J")))
    out = []
    for seed, ja in zip((r.seed for r in a), _values(a, "J")):
        if seed in jb and not (ja == jb[seed] or (math.isfinite(ja) and math.isfinite(jb[seed])
                                                  and 1 / SEED_NOTE <= jb[seed] / ja <= SEED_NOTE)):
            out.append((seed, ja, jb[seed]))
    return tuple(sorted(out))


def split_alarm_rate(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], draws: int = SPLIT_DRAWS,
                     seed: int = 0) -> float:
    """How often the ratio half of the rule fires with no change at all, for these values: the share of
    random splits of the pooled runs (``a[k]`` and ``b[k]``: the values of quantity k on each side, one
    entry per run) into groups of the two sides' sizes whose geometric-mean ratio is outside
    [1/RATIO_BOUND, RATIO_BOUND] for some quantity.  Near 0 for a cell whose seeds agree closely (a
    shift there is real); large for a cell whose seeds spread over decades (e.g. L-BFGS, whose runs land in
    other basins when round-off moves: a difference there may be a new draw, docs/archive.md)."""
    n_a = len(a[0])
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((draws, n_a + len(b[0]))), axis=1)  # one permutation per draw
    fires = np.zeros(draws, dtype=bool)
    for qa, qb in zip(a, b):
        logs = np.log(np.asarray(list(qa) + list(qb), dtype=float))  # +inf (diverged) stays +inf
        logs[~np.isfinite(logs)] = np.nan  # the geometric means use the finite values
        split = logs[order]
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a group with no finite value: NaN, no alarm
            r = np.nanmean(split[:, n_a:], axis=1) - np.nanmean(split[:, :n_a], axis=1)
        fires |= np.abs(np.nan_to_num(r, nan=0.0)) > math.log(RATIO_BOUND)
    return float(np.mean(fires))


def compare_cell(cell: Cell, a: Sequence[RunRecord], b: Sequence[RunRecord]) -> CellComparison:
    tests = tuple(compare_quantity(_values(a, q), _values(b, q), q) for q in QUANTITIES)
    comparison = CellComparison(cell, len(a), len(b), tests, [r.seed for r in a] == [r.seed for r in b],
                                _moved_seeds(a, b))
    if comparison.verdict == "DIFFERS":
        live = [q for q, t in zip(QUANTITIES, tests) if not math.isnan(t.gm_a)]  # quantities with values
        comparison = replace(comparison, split_alarms=split_alarm_rate([_values(a, q) for q in live],
                                                                      [_values(b, q) for q in live]))
    return comparison


def compare_archives(reference: Iterable[RunRecord], compared: Iterable[RunRecord], common_seeds: bool = False
                     ) -> tuple[list[CellComparison], list[Cell], list[Cell]]:
    """Every cell present in both: (comparisons, cells only in the reference, cells only in the other).
    ``common_seeds``: each cell compared on the seeds both sides have (an archive being regenerated,
    against the finished one)."""
    ra, rb = by_cell(reference), by_cell(compared)
    if common_seeds:
        for c in set(ra) & set(rb):
            seeds = {r.seed for r in ra[c]} & {r.seed for r in rb[c]}
            ra[c], rb[c] = [r for r in ra[c] if r.seed in seeds], [r for r in rb[c] if r.seed in seeds]
        ra, rb = {c: v for c, v in ra.items() if v}, {c: v for c, v in rb.items() if v}
    both = sorted(set(ra) & set(rb))
    return ([compare_cell(c, ra[c], rb[c]) for c in both], sorted(set(ra) - set(rb)), sorted(set(rb) - set(ra)))
