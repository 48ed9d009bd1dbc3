"""Summarise studies/platform_spread.sh: each emulated platform's reruns against the archive, per
solver — the largest per-run relative difference of the final J and l2, the per-run verdict of
`lysep verify`'s tolerant level (lysep_cli/reports/verify.py: judge), and the cell-level verdicts (cellstats).

    python studies/platform_spread_summary.py SPREAD_DIR [ARCHIVE] > studies/results/platform_spread.txt

Backs: docs/reproducibility.md 'What other platforms give (measured)': reruns under emulated platforms.
Regenerate: make studies STUDIES=platform_spread_summary -> studies/results/platform_spread.txt
    (studies/run.py holds the commands).
Cost: ~10 CPU-minutes per emulated platform (3); needs an AVX-512 machine to emulate the others.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

from lysep_cli.store import records
from lysep_cli.reports.cellstats import by_cell, compare_cell
from lysep_cli.reports.verify import _rel, judge


def main(spread: str, archive: str = "results/paper") -> None:
    for emu in sorted(p for p in Path(spread).iterdir() if p.is_dir()):
        new = records.load_records(emu).records
        if not new:
            continue
        print(f"== {emu.name}: {len(new)} reruns; platform of the reruns: "
              + ", ".join(f"{k} {v}" for k, v in new[0].versions.items() if k in ("numpy_simd", "blas_core")))
        rows: dict[str, list] = defaultdict(list)
        pairs = []
        for rec in new:
            jp, npz = records.record_paths(archive, rec.experiment, rec.solver, rec.L, rec.M, rec.seed)
            old = records.read_record(jp)
            pairs.append((old, rec))
            new_npz = records.record_paths(emu, rec.experiment, rec.solver, rec.L, rec.M, rec.seed)[1]
            check = judge(old, records.load_params(npz), rec, records.load_params(new_npz), "tolerant")
            rows[rec.solver].append((_rel(rec.final.J, old.final.J), _rel(rec.final.l2, old.final.l2), check))
        print(f"{'solver':<11} {'runs':>4} {'identical':>9} {'max rel J':>9} {'max rel l2':>10}  per-run tolerant "
              "level (pass / ill-conditioned / fail)   largest compared difference / its tolerance")
        for solver, rs in sorted(rows.items()):
            checks = [c for _, _, c in rs]
            passed = sum(c.ok and c.level != "ill-conditioned" for c in checks)
            ill = sum(c.level == "ill-conditioned" for c in checks)
            judged = [c for c in checks if c.level == "tolerant" and not c.identical]
            margin = max((c.max_rel / c.tol for c in judged), default=0.0)
            print(f"{solver:<11} {len(rs):>4} {sum(c.identical for c in checks):>9} {max(r[0] for r in rs):>9.1e} "
                  f"{max(r[1] for r in rs):>10.1e}  {passed} / {ill} / {len(rs) - passed - ill}"
                  f"{'':<28} {margin:.2g}")
        old_cells = by_cell(o for o, _ in pairs)
        new_cells = by_cell(n for _, n in pairs)
        verdicts = [compare_cell(c, old_cells[c], new_cells[c]) for c in old_cells]
        print(f"cells: {sum(v.ok for v in verdicts)} of {len(verdicts)} agree; largest geometric-mean ratio "
              f"{max(max(t.ratio, 1 / t.ratio) for v in verdicts for t in v.tests):.3g}")
        for v in verdicts:
            if v.verdict != "agrees" or any(abs(t.ratio - 1) > 1e-3 for t in v.tests):
                print("  " + v.line())
        print()


if __name__ == "__main__":
    main(*sys.argv[1:])
