"""How close `lysep run`'s estimate comes to the CPU time the archive's runs took: leave one seed out.

    python benchmarks/estimate_check.py [--results results/paper] [--out benchmarks/results/estimate_check.txt]

For every cell (experiment, solver, L, M) of the spec with at least two matching records, each record in
turn is left out and predicted as ``lysep run`` would predict it (lysep_cli/execution/estimate.py): the
median CPU seconds per iteration of the cell's other records, times the iterations a run of the spec
does.  Printed per cell: the recorded CPU time of its runs, the sum of their predictions, the ratio, and
the spread of the per-run ratios (predicted / recorded); then per experiment and for the whole archive.
Reads the records only (seconds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lysep_cli import specs  # noqa: E402
from lysep_cli.execution.estimate import duration, matches, record_rate  # noqa: E402
from lysep_cli.store import records  # noqa: E402


def check(results: Path, config: Path) -> list[str]:
    out = ["| experiment | solver | (L,M) | runs | recorded CPU | predicted (leave one out) | ratio | "
           "per-run ratio min / median / max |", "|---|---|---|---:|---:|---:|---:|---|"]
    totals: dict[str, list[float]] = {}
    for spec in specs.load_specs(config).values():
        found = records.load_records(results, [spec.name]).records
        cells: dict[tuple[str, int, int], list] = {}
        for r in found:
            if matches(r, spec):
                cells.setdefault((r.solver, r.L, r.M), []).append(r)
        for (solver, L, M), recs in sorted(cells.items()):
            if len(recs) < 2:
                continue
            steps = spec.solvers[solver].history_length(spec.iterations) - 1
            rates = [record_rate(r)[0] for r in recs]
            recorded = [rate * max(r.iterations_done, 1) for rate, r in zip(rates, recs)]
            predicted = [statistics.median(rates[:i] + rates[i + 1:]) * steps for i in range(len(recs))]
            ratios = sorted(p / c for p, c in zip(predicted, recorded) if c > 0)
            t = totals.setdefault(spec.name, [0.0, 0.0])
            t[0], t[1] = t[0] + sum(recorded), t[1] + sum(predicted)
            out.append(f"| {spec.name} | {solver} | ({L},{M}) | {len(recs)} | {duration(sum(recorded))} | "
                       f"{duration(sum(predicted))} | {sum(predicted) / sum(recorded):.2f} | "
                       f"{ratios[0]:.2f} / {statistics.median(ratios):.2f} / {ratios[-1]:.2f} |")
    out += ["", "| experiment | recorded CPU | predicted | ratio |", "|---|---:|---:|---:|"]
    for name, (rec, pred) in totals.items():
        out.append(f"| {name} | {duration(rec)} | {duration(pred)} | {pred / rec:.3f} |")
    rec, pred = (sum(t[i] for t in totals.values()) for i in (0, 1))
    out.append(f"| all | {duration(rec)} | {duration(pred)} | {pred / rec:.3f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=ROOT / "results" / "paper")
    ap.add_argument("--config", type=Path, default=ROOT / "experiments.yaml")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    text = "\n".join(check(args.results, args.config)) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
