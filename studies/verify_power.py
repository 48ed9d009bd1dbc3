"""Power and false-alarm rate of `lysep verify --against`'s cell rule (lysep_cli/reports/cellstats.py), per
cell of the archive, simulated from the archive's own records (no reruns; docs/reproducibility.md).

Same seeds (the rule's per-seed and paired modes, and L-BFGS's unpaired mode on the same seeds): the
compared side is the archive's own cell with every seed moved by a draw of the per-seed noise between
two code versions of this project -- the log ratios (J, l2) of each seed of the archive against the old
archive's finals (results/paper-finals-2026-11.csv), pooled per solver, with random signs, seeds whose J
changed regime (10x) left out -- and every seed's J multiplied by a shift s.  L-BFGS's seeds are new
draws after a kernel change, so its compared side is drawn from the cell's pooled runs of both archives
(with replacement), times s.  Other seeds (any solver, the unpaired mode): both sides drawn with
replacement from the cell's archive runs, the compared side times s.

Per cell and mode: the false-alarm rate (s = 1: the share of draws that DIFFER) and the smallest shift
of the grid that DIFFERS in at least 80 % of draws (power; up and down shifts are both tried, the larger
of the two is given).  One seed's J x100 is tried once per cell (the regime rule; same seeds only).

    python studies/verify_power.py [RESULTS] [FINALS]  > studies/results/verify_power.md

Backs: lysep_cli/reports/cellstats.py, docs/reproducibility.md: power and false alarms of verify
    --against's cell rule.
Regenerate: make studies STUDIES=verify_power -> studies/results/verify_power.md (studies/run.py holds
    the commands).
Cost: a few CPU-minutes (simulated from the records, no reruns).
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)
import numpy as np

from lysep_cli.reports import cellstats as cs
from lysep_cli.store import records
from lysep_cli.store.finals import read_finals

DRAWS = 400
SHIFTS = (1.01, 1.02, 1.03, 1.05, 1.1, 1.2, 1.3, 1.5, 2.0, 3.0, 5.0, 10.0)
POWER = 0.8


def values(runs, q: str) -> np.ndarray:
    return np.array(cs._values(runs, q), dtype=float)


def noise_pools(cells_a: dict, cells_b: dict) -> dict[str, np.ndarray]:
    """solver -> (k, 2) per-seed log ratios (J, l2) between the two archives, regime changes left out."""
    pools: dict[str, list] = defaultdict(list)
    for cell, runs in cells_a.items():
        other = {r.seed: r for r in cells_b.get(cell, [])}
        for r in runs:
            if r.seed not in other:
                continue
            pair = [np.log(values([other[r.seed]], q)[0] / values([r], q)[0]) for q in cs.QUANTITIES]
            pair = [0.0 if math.isnan(x) else x for x in pair]  # no l2 on either side
            if math.isfinite(pair[0]) and abs(pair[0]) < math.log(cs.REGIME) and math.isfinite(pair[1]):
                pools[cell[1]].append(pair)
    return {s: np.array(p) for s, p in pools.items()}


def differs(mode: str, a: dict[str, np.ndarray], b: dict[str, np.ndarray], matched: bool) -> np.ndarray:
    """(B,) whether the rule says DIFFERS for each draw; a[q] (B, n_a), b[q] (B, n_b)."""
    out = np.zeros(len(b["J"]), dtype=bool)
    for q in cs.QUANTITIES:
        if not np.isfinite(a[q]).any():
            continue  # no l2 without an exact solution
        hit = cs.fires(mode, cs.cell_statistics(mode, a[q], b[q]))
        out |= np.logical_or.reduce(list(hit.values()))
    if matched:
        out |= cs.regime_changes(a["J"], b["J"]).any(axis=1)
        if mode == "paired" and cs.too_few(mode, a["J"].shape[-1], b["J"].shape[-1]):  # judged seed by seed
            for q in cs.QUANTITIES:
                if np.isfinite(a[q]).any():
                    A = np.broadcast_to(a[q], b[q].shape)
                    out |= cs.seed_by_seed(A, b[q])[0]
    return out


def simulate(mode: str, a: dict[str, np.ndarray], draw, rng, matched: bool) -> tuple[float, float | None]:
    """(false-alarm rate, smallest shift caught in >= 80 % of draws, None beyond the grid)."""
    A = {q: np.broadcast_to(v, (DRAWS, v.shape[-1])) if v.ndim == 1 else v for q, v in a.items()}

    def rate(s: float) -> float:
        b = draw(rng)
        b = {**b, "J": b["J"] * s}
        return float(np.mean(differs(mode, A if a["J"].ndim == 1 else draw.a(rng), b, matched)))

    alarm = rate(1.0)
    for s in SHIFTS:
        if min(rate(s), rate(1 / s)) >= POWER:
            return alarm, s
    return alarm, None


class Paired:
    """The compared side of a same-seeds draw: the cell moved by resampled per-seed noise."""

    def __init__(self, a: dict[str, np.ndarray], pool: np.ndarray):
        self.base, self.pool = a, pool

    def __call__(self, rng) -> dict[str, np.ndarray]:
        n = len(self.base["J"])
        eps = self.pool[rng.integers(len(self.pool), size=(DRAWS, n))] * rng.choice((-1.0, 1.0), (DRAWS, n, 1))
        return {q: self.base[q] * np.exp(eps[..., k]) for k, q in enumerate(cs.QUANTITIES)}


class Resampled:
    """Both sides drawn with replacement from ``pool`` (the reference ``n_a`` runs, the compared ``n_b``)."""

    def __init__(self, pool: dict[str, np.ndarray], n_a: int, n_b: int):
        self.pool, self.n_a, self.n_b = pool, n_a, n_b

    def _draw(self, rng, n: int) -> dict[str, np.ndarray]:
        idx = rng.integers(len(self.pool["J"]), size=(DRAWS, n))
        return {q: v[idx] for q, v in self.pool.items()}

    def __call__(self, rng) -> dict[str, np.ndarray]:
        return self._draw(rng, self.n_b)

    def a(self, rng) -> dict[str, np.ndarray]:
        return self._draw(rng, self.n_a)


def shift_text(s: float | None) -> str:
    return "> 10" if s is None else f"{s:g}"


def main(results: str = "results/paper", finals: str = "results/paper-finals-2026-11.csv") -> None:
    cells_b = cs.by_cell(read_finals(finals))
    # the solvers the finals file holds (a baseline added since, e.g. poly, has no per-seed noise to draw)
    held = {cell[1] for cell in cells_b}
    cells_a = {c: r for c, r in cs.by_cell(records.load_records(results).records).items() if c[1] in held}
    pools = noise_pools(cells_a, cells_b)
    rng = np.random.default_rng(0)
    print(f"# Power and false alarms of `lysep verify --against` (studies/verify_power.py)\n")
    print(f"{len(cells_a)} cells of {results}/; {DRAWS} draws per cell and shift; per-seed noise between "
          f"{results}/ and {finals} (log ratios, regime changes left out), per solver:\n")
    print("| solver | seeds pooled | median abs(d) J | 90 % abs(d) J | largest abs(d) J |\n|---|---|---|---|---|")
    for s, p in sorted(pools.items()):
        d = np.abs(p[:, 0])
        print(f"| {s} | {len(p)} | {np.median(d):.1e} | {np.quantile(d, 0.9):.1e} | {d.max():.1e} |")
    rows, by_mode = [], defaultdict(list)
    regime_hits = regime_total = 0
    for cell, runs in cells_a.items():
        a = {q: values(runs, q) for q in cs.QUANTITIES}
        n = len(runs)
        mode = cs.mode_of(cell[1], True)
        if mode == "unpaired":  # chaotic: new draws of the cell's runs, both archives pooled
            pooled = {q: np.concatenate([a[q], values(cells_b.get(cell, []), q)]) for q in cs.QUANTITIES}
            draw = Resampled(pooled, n, n)
            same = simulate(mode, {q: np.empty((DRAWS, 0)) for q in a}, draw, rng, matched=False)
        else:
            same = simulate(mode, a, Paired(a, pools[cell[1]]), rng, matched=True)
        other = simulate("unpaired", {q: np.empty((DRAWS, 0)) for q in a}, Resampled(a, n, n), rng, matched=False)
        b = {q: a[q].copy() for q in a}
        b["J"][0] *= 100.0  # one seed x100
        regime_hits += bool(differs(mode, {q: v[None] for q, v in a.items()}, {q: v[None] for q, v in b.items()},
                                    matched=True)[0])
        regime_total += 1
        partial = cs.too_few(mode, n, n)
        rows.append((cell, n, mode, same, other, partial))
        by_mode[mode].append((same, partial))
        by_mode["unpaired (other seeds)"].append((other, cs.too_few("unpaired", n, n)))
    print("\n## Summary per mode\n")
    print("Cells: all, and those the mode can decide (enough seeds; the others are PARTIAL). False alarms: "
          "share of draws with no shift that DIFFER. Power: the smallest shift of the grid "
          f"({', '.join(f'{s:g}' for s in SHIFTS)}) caught in {POWER:.0%} of draws, both ways.\n")
    print("| mode | cells (decidable) | false alarms: mean, largest (decidable cells) | smallest shift caught "
          "80 %: median, largest (decidable cells) | cells with no shift up to 10 caught |\n|---|---|---|---|---|")
    for mode, items in by_mode.items():
        ok = [x for x, partial in items if not partial]
        alarms = [x[0] for x in ok]
        shifts = [x[1] if x[1] is not None else math.inf for x in ok]
        print(f"| {mode} | {len(items)} ({len(ok)}) | "
              + (f"{np.mean(alarms):.2%}, {max(alarms):.1%} | {shift_text(float(np.median(shifts)) if np.isfinite(np.median(shifts)) else None)}, "
                 f"{shift_text(max(shifts) if np.isfinite(max(shifts)) else None)} | {sum(np.isinf(shifts))} |"
                 if ok else "- | - | - |"))
    print(f"\nOne seed's J x100 (same seeds): DIFFERS in {regime_hits} of {regime_total} cells (the regime rule).\n")
    print("## Per cell\n")
    print("| experiment | solver | L | M | seeds | mode (same seeds) | false alarms | smallest shift 80 % "
          "| other seeds: false alarms | other seeds: smallest shift 80 % |\n|---|---|---|---|---|---|---|---|---|---|")
    for (e, s, L, M), n, mode, same, other, partial in rows:
        flag = " (PARTIAL: too few)" if partial else ""
        print(f"| {e} | {s} | {L} | {M} | {n} | {mode}{flag} | {same[0]:.1%} | {shift_text(same[1])} | "
              f"{other[0]:.1%} | {shift_text(other[1])} |")


SIZES = (1, 2, 3, 5, 8, 10)


def by_size(results: str = "results/paper", finals: str = "results/paper-finals-2026-11.csv") -> None:
    """Power and false alarms of the same-seeds rule per cell size: every 10-seed paired cell (LySep, rfm)
    cut to its first n seeds and simulated as :func:`main` does (n < 8: judged seed by seed)."""
    cells_b = cs.by_cell(read_finals(finals))
    held = {cell[1] for cell in cells_b}
    cells_a = {c: r for c, r in cs.by_cell(records.load_records(results).records).items() if c[1] in held}
    pools = noise_pools(cells_a, cells_b)
    rng = np.random.default_rng(0)
    paired = {c: r for c, r in cells_a.items() if cs.mode_of(c[1], True) == "paired" and len(r) >= max(SIZES)}
    print(f"\n## Same seeds, per cell size (paired mode)\n\nThe {len(paired)} paired cells of 10 seeds "
          f"({', '.join(sorted({c[1] for c in paired}))}) cut to their first n seeds; {DRAWS} draws per cell and "
          f"shift. Below {cs.MIN_PAIRED} seeds the signed-rank test cannot reach p < {cs.ALPHA:g}: the cell is "
          f"judged seed by seed (DIFFERS when every seed's J or l2 moved x{cs.SMALL_CELL_FACTOR:g} or more the "
          "same way), besides the mean bounds and the regime rule.\n")
    print("| seeds | false alarms: mean, largest | smallest shift caught 80 %: median, largest | share of cells "
          "catching x2 in 80 % of draws |\n|---|---|---|---|")
    for n in SIZES:
        out = []
        for cell, runs in paired.items():
            a = {q: values(runs[:n], q) for q in cs.QUANTITIES}
            out.append(simulate("paired", a, Paired(a, pools[cell[1]]), rng, matched=True))
        alarms = [x[0] for x in out]
        shifts = np.array([x[1] if x[1] is not None else math.inf for x in out])
        print(f"| {n} | {np.mean(alarms):.2%}, {max(alarms):.1%} | "
              f"{shift_text(float(np.median(shifts)) if np.isfinite(np.median(shifts)) else None)}, "
              f"{shift_text(float(shifts.max()) if np.isfinite(shifts.max()) else None)} | "
              f"{np.mean(shifts <= 2.0):.0%} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sizes"]:
        by_size(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
