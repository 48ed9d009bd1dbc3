"""Cell-level reproduction: do two sets of runs of one cell (experiment, solver, L, M) agree over seeds?

What the paper reports is a cell's mean and spread over its seeds, so that is what a reproduction on
another platform, a user's own rerun or an archive made with new kernels must match.  Per cell, with
a = the reference runs and b = the compared runs, and per quantity q in {final J, final l2} (and final J_S,
the loss LySep minimises and the tables' "Actual loss", where both sides record one: :func:`quantities`), one
of three modes (docs/reproducibility.md, "the cell rule"):

per-seed bound (``SEED_BOUND_SOLVERS``, both sides the same seeds)
    Solvers whose runs stay within round-off (PINN, rfls: 1.3e-4 at most between two code versions and
    two platforms, measured): every seed's q_b / q_a - 1 within ``SEED_BOUND``.
paired (the other solvers, both sides the same seeds)
    The per-seed log ratios d_i = log q_b,i - log q_a,i; the two-sided Wilcoxon signed-rank test of
    d (:func:`scipy.stats.wilcoxon`, exact null distribution) fires when ``p < ALPHA`` *and* the paired
    geometric-mean ratio exp(mean d) moved by more than ``FLOOR`` (the effect floor: round-off moves
    every seed of some cells the same way by 1e-4, which the test alone would call significant).
unpaired (different seeds on the two sides, or a chaotic solver: ``CHAOTIC_SOLVERS``)
    The two-sided Mann-Whitney U test of q_a against q_b (:func:`scipy.stats.mannwhitneyu`), with the
    same floor on the ratio of geometric means gm_b / gm_a.  L-BFGS's line search takes other branches
    when round-off moves, so its seeds are new draws after a kernel change, and pairing means nothing.

In every mode the cell DIFFERS too when the ratio of geometric means (paired: exp(mean d)) or the ratio
of the arithmetic means (what the tables show) leaves ``[1/RATIO_BOUND, RATIO_BOUND]``, and when a
seed that both sides hold **changed regime**: its final J moved by a factor of ``REGIME`` or more either
way (|log10(J_b / J_a)| >= 1), or is finite on one side only (a diverged run).

A comparison that cannot decide is PARTIAL (a failure of ``lysep verify --against`` unless
``--allow-partial``): the seed sets differ, or the values are not bit-identical on both sides and there
are fewer seeds than the mode's test needs to reach p < ALPHA at all: ``MIN_PAIRED`` pairs (the exact signed-rank p is at least 2 / 2^n: 0.0078 at 8) or
``MIN_UNPAIRED`` runs a side (the U test's p is at least 2 / C(2n, n): 0.0079 at 5 + 5).  The bounds
and the regime rule still apply to it, so a PARTIAL cell can also DIFFER.

Diverged or non-finite values count as +inf: the worst rank; they take no part in the means.  The
statistics are vectorised over a leading batch axis (:func:`cell_statistics`), which the power study
(studies/verify_power.py) uses to simulate thousands of cells.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

import numpy as np
from scipy.stats import mannwhitneyu, wilcoxon

from lysep_cli.store.schema import RunRecord

ALPHA = 0.01
RATIO_BOUND = 2.0
#: the effect floor: a test fires only when the (paired) geometric-mean ratio moved by more than this
FLOOR = 0.01
#: a seed whose final J moved by this factor or more, either way, changed regime
REGIME = 10.0
SEED_NOTE = REGIME  # the name of earlier versions
#: per-seed relative bound of the solvers that stay within round-off (6x the largest move measured)
SEED_BOUND = 1e-3
#: pairs the signed-rank test needs to reach p < ALPHA (two-sided exact p >= 2 / 2^n)
MIN_PAIRED = 8
#: runs per side the U test needs to reach p < ALPHA (two-sided exact p >= 2 / C(2n, n))
MIN_UNPAIRED = 5
#: a paired cell with fewer seeds than the signed-rank test needs is judged seed by seed (its solvers are
#: deterministic per seed): it DIFFERS when every seed's J, or every seed's l2, moved this factor or more the
#: same way (measured: studies/results/verify_power.md, power per cell size)
SMALL_CELL_FACTOR = 1.5
#: solvers judged seed by seed when the seeds match (their final values move by round-off only:
#: 1.3e-13 (PINN) and 1.2e-4 (rfls, 2-D l2) between the archive and the finals of the code before it)
SEED_BOUND_SOLVERS = frozenset({"pinn", "rfls"})
#: solvers whose seeds are new draws after any change of round-off (L-BFGS: single runs moved by up to
#: 77 % across platforms, and 16x between two code versions): always compared unpaired
CHAOTIC_SOLVERS = frozenset({"pinn-lbfgs"})
#: random splits behind the no-change alarm rate printed for a cell that differs (split_alarm_rate)
SPLIT_DRAWS = 4000
QUANTITIES = ("J", "l2")
MODES = ("per-seed", "paired", "unpaired")

Cell = tuple[str, str, int, int]


def cell_of(record: RunRecord) -> Cell:
    return record.experiment, record.solver, record.L, record.M


def by_cell(records: Iterable[RunRecord]) -> dict[Cell, list[RunRecord]]:
    """Records grouped by cell, each group in seed order."""
    out: dict[Cell, list[RunRecord]] = defaultdict(list)
    for r in records:
        out[cell_of(r)].append(r)
    return {c: sorted(rs, key=lambda r: r.seed) for c, rs in sorted(out.items())}


def mode_of(solver: str, same_seeds: bool) -> str:
    """How a cell of ``solver`` is compared (module docstring)."""
    if not same_seeds or solver in CHAOTIC_SOLVERS:
        return "unpaired"
    return "per-seed" if solver in SEED_BOUND_SOLVERS else "paired"


def too_few(mode: str, n_a: int, n_b: int) -> bool:
    """Whether the mode's test cannot reach p < ALPHA with these sizes (the per-seed bound needs one)."""
    need = {"per-seed": 1, "paired": MIN_PAIRED, "unpaired": MIN_UNPAIRED}[mode]
    return min(n_a, n_b) < need


# ---------------------------------------------------------------------------------------------
# The statistics, vectorised over a batch of simulated cells (B, n).

def _logs(values: np.ndarray) -> np.ndarray:
    """log of values > 0; +inf for a non-finite or non-positive value (a diverged run)."""
    v = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(v)
    out[~(np.isfinite(v) & (v > 0))] = np.inf
    return out


def _finite_mean(x: np.ndarray) -> np.ndarray:
    """Mean over the last axis of the finite entries (NaN where there is none)."""
    ok = np.isfinite(x)
    count = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.where(ok, x, 0.0).sum(axis=-1) / count, np.nan)


def _method(n: int) -> str:
    """The signed-rank test's null distribution: exact up to 50 pairs (tied |d| take midranks; SciPy's
    "auto" would turn to a permutation test, 0.2 s a cell), the normal approximation beyond."""
    return "exact" if n <= 50 else "approx"


def signed_rank_p(d: np.ndarray) -> np.ndarray:
    """Two-sided Wilcoxon signed-rank p of each row of ``d`` (B, n) (:func:`scipy.stats.wilcoxon`): zero
    differences dropped (Wilcoxon's rule), +-inf ranked beyond every finite one; 1 for a row with no
    nonzero entry.  Rows without zeros in one vectorised call, the others one by one."""
    d = np.asarray(d, dtype=float)
    finite = np.where(np.isfinite(d), d, 0.0)
    big = np.abs(finite).max(axis=-1, keepdims=True) + 1.0
    d = np.where(np.isinf(d), np.sign(d) * big, np.nan_to_num(d))  # both sides diverged: NaN -> 0
    p = np.ones(d.shape[0])
    clean = (d != 0).all(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if clean.any() and d.shape[1] > 0:
            p[clean] = wilcoxon(d[clean], axis=1, method=_method(d.shape[1])).pvalue
        for i in np.flatnonzero(~clean):
            row = d[i][d[i] != 0]
            if row.size:
                p[i] = wilcoxon(row, method=_method(row.size)).pvalue
    return np.nan_to_num(p, nan=1.0)


def rank_sum_p(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two-sided Mann-Whitney U p of each row pair of ``a`` (B, n_a) and ``b`` (B, n_b); 1 where every
    value ties (U is undefined)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    allv = np.concatenate([a, b], axis=1)
    ties = (allv == allv[:, :1]).all(axis=1)
    p = np.ones(a.shape[0])
    if (~ties).any():
        p[~ties] = mannwhitneyu(a[~ties], b[~ties], axis=1, alternative="two-sided").pvalue
    return p


@dataclass(frozen=True)
class Statistics:
    """One quantity of a batch of B cells, each entry (B,): ``ratio`` the effect size (paired:
    exp(mean d); unpaired: gm_b / gm_a), ``p`` the mode's test (NaN in per-seed mode), ``mean_ratio``
    the ratio of the arithmetic means, ``worst`` / ``worst_at`` the largest |q_b/q_a - 1| over the seeds
    and its index (per-seed mode; 0 elsewhere), ``gm_a`` / ``gm_b`` the geometric means."""

    gm_a: np.ndarray
    gm_b: np.ndarray
    ratio: np.ndarray
    p: np.ndarray
    mean_ratio: np.ndarray
    worst: np.ndarray
    worst_at: np.ndarray


def cell_statistics(mode: str, a: np.ndarray, b: np.ndarray) -> Statistics:
    """The statistics of one quantity: ``a`` (B, n_a) reference values, ``b`` (B, n_b) compared values
    (per-seed and paired modes: the same seeds in the same order, n_a = n_b)."""
    la, lb = _logs(a), _logs(b)
    gm_a, gm_b = np.exp(_finite_mean(la)), np.exp(_finite_mean(lb))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_ratio = _finite_mean(np.where(np.isfinite(lb), np.exp(lb), np.nan)) / \
            _finite_mean(np.where(np.isfinite(la), np.exp(la), np.nan))
        if mode == "unpaired":
            ratio = gm_b / gm_a
            p = rank_sum_p(np.where(np.isfinite(la), la, np.inf), np.where(np.isfinite(lb), lb, np.inf))
            worst = np.zeros(len(ratio))
            worst_at = np.zeros(len(ratio), dtype=int)
        else:
            d = lb - la  # +-inf: finite on one side only; NaN: diverged on both (the same)
            ratio = np.exp(_finite_mean(np.where(np.isnan(d), 0.0, d)))
            p = signed_rank_p(d) if mode == "paired" else np.full(len(ratio), np.nan)
            moved = np.abs(np.expm1(np.where(np.isnan(d), 0.0, d)))
            worst_at = np.argmax(moved, axis=1) if d.shape[1] else np.zeros(len(ratio), dtype=int)
            worst = moved[np.arange(len(ratio)), worst_at] if d.shape[1] else np.zeros(len(ratio))
    none = ~np.isfinite(gm_a) & ~np.isfinite(gm_b)  # nothing to compare (no l2 without an exact u)
    ratio = np.where(none, 1.0, ratio)
    mean_ratio = np.where(np.isnan(mean_ratio) & none, 1.0, mean_ratio)
    return Statistics(gm_a, gm_b, ratio, np.where(none & (mode != "per-seed"), 1.0, p), mean_ratio, worst,
                      worst_at)


def _outside(r: np.ndarray) -> np.ndarray:
    """Whether a ratio leaves [1/RATIO_BOUND, RATIO_BOUND] (NaN and inf count as outside)."""
    with np.errstate(invalid="ignore"):
        return ~((r >= 1 / RATIO_BOUND) & (r <= RATIO_BOUND))


def fires(mode: str, s: Statistics) -> dict[str, np.ndarray]:
    """Which criteria of the rule fire, per cell of the batch: "seed" (per-seed bound), "test" (the
    mode's test beyond the floor), "ratio" (geometric means), "mean" (arithmetic means)."""
    with np.errstate(invalid="ignore"):
        beyond_floor = np.abs(np.log(s.ratio)) > math.log1p(FLOOR)
    return {"seed": (s.worst > SEED_BOUND) if mode == "per-seed" else np.zeros(len(s.ratio), dtype=bool),
            "test": (np.nan_to_num(s.p, nan=1.0) < ALPHA) & np.nan_to_num(beyond_floor, nan=True),
            "ratio": _outside(s.ratio), "mean": _outside(s.mean_ratio)}


def regime_changes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(B, n) whether each matched seed's J changed regime: moved by REGIME x or more either way, or
    finite on one side only; ``a``, ``b`` (B, n) the J of the same seeds."""
    a, b = (np.where(np.isfinite(v) & (v > 0), v, np.inf) for v in (np.asarray(x, dtype=float) for x in (a, b)))
    both_inf = np.isinf(a) & np.isinf(b)
    with np.errstate(invalid="ignore", over="ignore"):
        return ~both_inf & ((b / a >= REGIME) | (a / b >= REGIME) | np.isinf(a) | np.isinf(b))


def seed_by_seed(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The small-cell rule of one quantity, per cell of a batch: ``a``, ``b`` (B, n) the values of the same
    seeds; returns ((B,) whether every seed moved :data:`SMALL_CELL_FACTOR` or more the same way, (B, n) the
    per-seed ratios b / a).  A non-finite value takes no part (the regime rule judges it)."""
    la, lb = _logs(a), _logs(b)
    with np.errstate(invalid="ignore"):
        d = np.where(np.isfinite(la) & np.isfinite(lb), lb - la, np.nan)
        bound = math.log(SMALL_CELL_FACTOR) * (1 - 1e-12)  # x1.5 itself counts
        up = np.where(np.isnan(d), False, d >= bound).all(axis=1)
        down = np.where(np.isnan(d), False, d <= -bound).all(axis=1)
    has = np.isfinite(d).any(axis=1)
    return (up | down) & has, np.exp(d)


# ---------------------------------------------------------------------------------------------
# One cell.

@dataclass(frozen=True)
class QuantityTest:
    """One quantity of one cell: geometric means (finite values), the effect size ``ratio`` (paired:
    exp(mean d)), the test's ``p`` (NaN: none in per-seed mode), the arithmetic means' ratio, and the
    largest per-seed move (per-seed mode) with its seed."""

    name: str
    gm_a: float
    gm_b: float
    ratio: float
    p: float
    mode: str = "unpaired"
    mean_ratio: float = 1.0
    worst: float = 0.0
    worst_seed: int | None = None

    def reasons(self) -> list[str]:
        """Why this quantity makes the cell differ ([] when it does not)."""
        s = Statistics(*(np.array([x]) for x in (self.gm_a, self.gm_b, self.ratio, self.p, self.mean_ratio,
                                                 self.worst, 0)))
        hit = {k: bool(v[0]) for k, v in fires(self.mode, s).items()}
        test = "signed-rank" if self.mode == "paired" else "rank-sum"
        out = []
        if hit["seed"]:
            out.append(f"{self.name} of seed {self.worst_seed} moved {self.worst:.1e} > {SEED_BOUND:g}")
        if hit["test"]:
            out.append(f"{self.name} {test} p={self.p:.2g} < {ALPHA:g}, x{self.ratio:.4g}")
        if hit["ratio"]:
            out.append(f"{self.name} geometric mean x{self.ratio:.3g} outside [1/{RATIO_BOUND:g}, {RATIO_BOUND:g}]")
        if hit["mean"]:
            out.append(f"{self.name} mean x{self.mean_ratio:.3g} outside [1/{RATIO_BOUND:g}, {RATIO_BOUND:g}]")
        return out

    @property
    def differs(self) -> bool:
        return bool(self.reasons())

    def text(self) -> str:
        head = f"{self.name} {self.gm_a:.3g} -> {self.gm_b:.3g} (x{self.ratio:.3g}"
        if self.mode == "per-seed":
            head += f", largest seed move {self.worst:.1e}"
        else:
            head += f", p={self.p:.2g}"
        return head + f", mean x{self.mean_ratio:.3g})"


@dataclass(frozen=True)
class CellComparison:
    """Reference runs ``a`` against compared runs ``b`` of one cell."""

    cell: Cell
    n_a: int
    n_b: int
    tests: tuple[QuantityTest, ...]
    same_seeds: bool = True
    moved: tuple[tuple[int, float, float], ...] = ()  # (seed, J a, J b) of the seeds that changed regime
    split_alarms: float | None = None  # of a cell that differs: :func:`split_alarm_rate`
    mode: str = "unpaired"
    partial: tuple[str, ...] = ()  # why the comparison cannot decide (missing seeds, too few)
    small: tuple[str, ...] = ()  # of a small paired cell judged seed by seed: the quantities that moved

    def reasons(self) -> list[str]:
        out = [f"seed {s} changed regime (J x{jb / ja:.3g})" if math.isfinite(ja) and math.isfinite(jb)
               else f"seed {s} finite on one side only" for s, ja, jb in self.moved]
        return out + list(self.small) + [r for t in self.tests for r in t.reasons()]

    @property
    def verdict(self) -> str:
        if self.reasons():
            return "DIFFERS"
        return "PARTIAL" if self.partial else "agrees"

    @property
    def ok(self) -> bool:
        return self.verdict == "agrees"

    def line(self) -> str:
        e, s, L, M = self.cell
        text = (f"{self.verdict:<9} {e} {s} L{L}-M{M}: n {self.n_a}/{self.n_b}; "
                + "; ".join(t.text() for t in self.tests) + f"; {self.mode}")
        if self.moved:
            text += f"; J moved {REGIME:g}x or more: " + ", ".join(
                f"seed {seed} {ja:.3g} -> {jb:.3g}" for seed, ja, jb in self.moved)
        if self.reasons():
            text += "; differs: " + ", ".join(self.reasons())
        if self.partial:
            text += "; partial: " + ", ".join(self.partial)
        if self.split_alarms is not None:
            text += (f"; a random split of the two sides' {self.n_a + self.n_b} runs puts the ratio outside "
                     f"the bound in {100 * self.split_alarms:.0f} % of splits")
        return text


def _values(records: Sequence[RunRecord], name: str) -> list[float]:
    """Final values of ``name``; a diverged or non-finite value counts as +inf (the worst rank)."""
    out = []
    for r in records:
        v = getattr(r.final, name)
        out.append(float(v) if v is not None and math.isfinite(v) and v > 0 else math.inf)
    return out


def compare_quantity(a: Sequence[float], b: Sequence[float], name: str, mode: str = "unpaired",
                     seeds: Sequence[int] = ()) -> QuantityTest:
    """The statistics of one quantity of one cell (values > 0; +inf allowed)."""
    s = cell_statistics(mode, np.array([a], dtype=float), np.array([b], dtype=float))
    first = {k: float(getattr(s, k)[0]) for k in ("gm_a", "gm_b", "ratio", "p", "mean_ratio", "worst")}
    at = int(s.worst_at[0])
    return QuantityTest(name, first["gm_a"], first["gm_b"], first["ratio"], first["p"], mode,
                        first["mean_ratio"], first["worst"], seeds[at] if mode == "per-seed" and seeds else None)


def _moved_seeds(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> tuple[tuple[int, float, float], ...]:
    """Seeds on both sides whose final J changed regime (:func:`regime_changes`)."""
    jb = dict(zip((r.seed for r in b), _values(b, "J")))
    pairs = [(r.seed, ja, jb[r.seed]) for r, ja in zip(a, _values(a, "J")) if r.seed in jb]
    if not pairs:
        return ()
    hit = regime_changes(np.array([[p[1] for p in pairs]]), np.array([[p[2] for p in pairs]]))[0]
    return tuple(sorted(p for p, h in zip(pairs, hit) if h))


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
    fired = np.zeros(draws, dtype=bool)
    for qa, qb in zip(a, b):
        logs = np.log(np.asarray(list(qa) + list(qb), dtype=float))  # +inf (diverged) stays +inf
        logs[~np.isfinite(logs)] = np.nan  # the geometric means use the finite values
        split = logs[order]
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a group with no finite value: NaN, no alarm
            r = np.nanmean(split[:, n_a:], axis=1) - np.nanmean(split[:, :n_a], axis=1)
        fired |= np.abs(np.nan_to_num(r, nan=0.0)) > math.log(RATIO_BOUND)
    return float(np.mean(fired))


def quantities(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> tuple[str, ...]:
    """The quantities a cell is judged on: J and l2, and J_S when a run on either side records one (LySep):
    a J_S halved in every seed moves the table's "Actual loss" and must fail the cell as J would."""
    has_js = any(r.final.J_S is not None for r in (*a, *b))
    return QUANTITIES + (("J_S",) if has_js else ())


def compare_cell(cell: Cell, a: Sequence[RunRecord], b: Sequence[RunRecord]) -> CellComparison:
    """The rule on one cell (module docstring); ``a``, ``b`` in seed order (:func:`by_cell`)."""
    qs = quantities(a, b)
    seeds_a, seeds_b = [r.seed for r in a], [r.seed for r in b]
    same = seeds_a == seeds_b
    mode = mode_of(cell[1], same)
    partial = []
    if not same:
        only_a, only_b = sorted(set(seeds_a) - set(seeds_b)), sorted(set(seeds_b) - set(seeds_a))
        partial.append("missing seed(s): " + "; ".join(
            f"{', '.join(map(str, s))} only on the {side} side" for s, side in ((only_a, "reference"),
                                                                                 (only_b, "other")) if s))
    identical = same and all(_values(a, q) == _values(b, q) for q in qs)
    small: list[str] = []
    if too_few(mode, len(a), len(b)) and not identical:  # bit-identical seeds need no test
        need = MIN_PAIRED if mode == "paired" else MIN_UNPAIRED
        text = f"too few: {min(len(a), len(b))} seed(s), the {mode} test needs {need} to reach p < {ALPHA:g}"
        if mode == "paired":  # deterministic per seed: each seed judged on its own
            text += (f"; judged seed by seed instead (differs when every seed's J or l2 moves "
                     f"x{SMALL_CELL_FACTOR:g} or more the same way)")
            for q in qs:
                hit, ratios = seed_by_seed(np.array([_values(a, q)]), np.array([_values(b, q)]))
                if hit[0]:
                    small.append(f"seed by seed ({len(a)} seed(s), too few for the signed-rank test): every "
                                 f"seed's {q} moved the same way, " + ", ".join(
                                     f"seed {s} x{x:.3g}" for s, x in zip(seeds_a, ratios[0])))
        partial.append(text)
    tests = tuple(compare_quantity(_values(a, q), _values(b, q), q, mode, seeds_a) for q in qs)
    comparison = CellComparison(cell, len(a), len(b), tests, same, _moved_seeds(a, b), mode=mode,
                                partial=tuple(partial), small=tuple(small))
    if comparison.verdict == "DIFFERS":
        live = [q for q, t in zip(qs, tests) if math.isfinite(t.gm_a)]  # quantities with values
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
