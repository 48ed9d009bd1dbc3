"""Power and false-alarm rate of the cell-level rule of `lysep verify` (lysep_cli/reports/cellstats.py), measured
on the archive's own cells (docs/reproducibility.md).

False alarm: split each 10-seed cell into two halves of 5 seeds in every one of the 126 ways and count
how often the rule says DIFFERS between two halves of the same cell (independent seeds, same method):
the worst case, since a rerun on another platform repeats the same seeds.  Power: the cell against
itself with every seed's final J multiplied by a factor (1.3, 1.5, 2, 3), and against a rerun with the
seed-to-seed noise of a kernel change (each J and l2 times 1 + 1e-4 * N(0, 1)).

    python studies/cellstats_power.py [RESULTS]  > studies/results/cellstats_power.txt

Backs: docs/archive.md (the regeneration's L-BFGS cell): the cell rule's false alarms per cell.
Regenerate: make studies STUDIES=cellstats_power; cheap, part of plain `make studies` ->
    studies/results/cellstats_power.txt (studies/run.py holds the commands).
Cost: ~12 CPU s.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)
import numpy as np

from lysep_cli.store import records
from lysep_cli.reports.cellstats import by_cell, compare_cell


def scaled(runs, factor_J=1.0, noise=None):
    out = []
    for i, r in enumerate(runs):
        J, l2 = r.final.J, r.final.l2
        if noise is not None:
            J = None if J is None else J * (1 + noise[i, 0])
            l2 = None if l2 is None else l2 * (1 + noise[i, 1])
        out.append(replace(r, final=replace(r.final, J=None if J is None else J * factor_J, l2=l2)))
    return out


def main(results: str = "results/paper") -> None:
    loaded = records.load_records(results)
    cells = {c: rs for c, rs in by_cell(loaded.records).items() if len(rs) == 10}
    rng = np.random.default_rng(0)
    print(f"{len(cells)} cells of {results}/ with 10 seeds")
    alarms = total = 0
    worst: list[tuple[float, str]] = []
    for cell, runs in cells.items():
        flagged = 0
        for half in itertools.combinations(range(10), 5):
            if 0 not in half:
                continue  # each split once
            a = [runs[i] for i in half]
            b = [runs[i] for i in range(10) if i not in half]
            flagged += compare_cell(cell, a, b).verdict == "DIFFERS"
        alarms += flagged
        total += 126
        worst.append((flagged / 126, " ".join(map(str, cell))))
    print(f"false alarms, 5 seeds against 5 other seeds of the same cell: {alarms} of {total} splits "
          f"({alarms / total:.1%})")
    for rate, name in sorted(worst, reverse=True)[:8]:
        print(f"  {rate:6.1%}  {name}")
    for factor in (1.3, 1.5, 2.0, 3.0):
        hits = sum(compare_cell(c, rs, scaled(rs, factor)).verdict == "DIFFERS" for c, rs in cells.items())
        print(f"power, every seed's J x {factor:g}: {hits} of {len(cells)} cells differ")
    calm = sum(compare_cell(c, rs, scaled(rs, noise=1e-4 * rng.standard_normal((10, 2)))).verdict == "DIFFERS"
               for c, rs in cells.items())
    print(f"kernel-change noise (J, l2 x 1 + 1e-4 N(0,1) per seed): {calm} of {len(cells)} cells differ")


if __name__ == "__main__":
    main(*sys.argv[1:])
