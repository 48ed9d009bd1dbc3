"""What an archive's runs cost, per cell, from the records alone: CPU seconds per iteration over whole runs.

    python benchmarks/archive_cost.py [--results results/paper] [--out FILE] [EXPERIMENT ...]

Per (experiment, solver, L, M): the finished runs that recorded their CPU time
(``diagnostics.cpu_seconds``), the mean CPU seconds per iteration over whole runs (CPU seconds over the
iterations done), their min-max over seeds, and for LySep the backtracking trials per sweep
(``diagnostics.trials``; 7 blocks per sweep, so 7 is one trial per block) and the share of trials that
changed no bit of the state (``unchanged_trials``); then the machines and numerics ids of those runs.
rfls and rfm are one solve (one iteration done): their row is CPU seconds per run.
`bench_sweep.py` times sweeps 21-40 side by side with another commit; this is the cost of the archive as
it was made, every sweep included (the first ~20 take one trial per block, the rest about two).
Nothing is rerun: seconds.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from lysep_cli.store.records import record_files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiments", nargs="*", default=None)
    ap.add_argument("--results", default="results/paper")
    ap.add_argument("--out", default=None, help="also write the table here")
    args = ap.parse_args()
    cells: dict[tuple, list[dict]] = defaultdict(list)
    ids, machines = Counter(), Counter()
    for path in record_files(args.results, args.experiments or None):
        r = json.loads(path.read_text())
        cpu, done = r.get("diagnostics", {}).get("cpu_seconds"), r.get("iterations_done") or r["iterations"]
        if r.get("status") != "ok" or not isinstance(cpu, (int, float)) or r["diagnostics"].get("copied_from"):
            continue
        cells[r["experiment"], r["solver"], r["L"], r["M"]].append(
            {"s_per_it": cpu / done, "trials": r["diagnostics"].get("trials"), "done": done,
             "unchanged": r["diagnostics"].get("unchanged_trials")})
        ids[r["versions"].get("numerics", "unrecorded")] += 1
        machines[r["versions"].get("machine", "unrecorded")] += 1
    lines = [f"# CPU cost of the runs in {args.results} (whole runs, from the records)", "",
             "| experiment | solver | (L,M) | runs | CPU s/iteration | min-max | trials/sweep | unchanged |",
             "|---|---|---|---|---|---|---|---|"]
    for (e, s, L, M), runs in sorted(cells.items()):
        per_it = [x["s_per_it"] for x in runs]
        trials = [x["trials"] / x["done"] for x in runs if x["trials"]]
        unchanged = [x["unchanged"] / x["trials"] for x in runs if x["trials"] and x["unchanged"] is not None]
        lines.append(f"| {e} | {s} | ({L},{M}) | {len(runs)} | {sum(per_it) / len(per_it):.4f} | "
                     f"{min(per_it):.4f}-{max(per_it):.4f} | "
                     + (f"{sum(trials) / len(trials):.1f}" if trials else "–") + " | "
                     + (f"{100 * sum(unchanged) / len(unchanged):.0f} %" if unchanged else "–") + " |")
    lines += ["", "runs by numerics id: " + ", ".join(f"{k}: {n}" for k, n in ids.most_common()),
              "runs by machine: " + ", ".join(f"{k}: {n}" for k, n in machines.most_common())]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
