#!/usr/bin/env bash
# PINN-GD rerun at the second step rule's choices (issue 54, item 3; docs/varpro.md, "PINN-GD's step, fairly
# chosen"), resumable, after `suites/pinn-step-v2.py` wrote results/harder/study-pinn-step-v2/:
#   nohup suites/run-pinn-step2.sh > results/pinn-step2-run.log 2>&1 &
# Writes results/harder-pinn-step2/experiments.yaml: results/harder/experiments.yaml with each (experiment,
# init)'s pinn at the second rule's lr (pinn_step.with_steps; lr_final = lr / 10), then runs PINN-GD alone,
# every size and seed, into results/harder-pinn-step2/ (the first rule's records under results/harder/<exp>/pinn
# stay as they are).  An (experiment, init) whose rule refused (no stable step) is left out, and named.
# Each experiment's records are committed after it (COMMIT=1).
set -euo pipefail
source "$(dirname "$0")/env.sh"
OUT=results/harder-pinn-step2
CONFIG=$OUT/experiments.yaml
mkdir -p "$OUT"
"$PYTHON" - results/harder/experiments.yaml results/harder/study-pinn-step-v2 "$CONFIG" <<'PY'
import re, sys
from pathlib import Path
import pandas as pd
import yaml
from lysep_cli.reports import pinn_step
from lysep_cli.reports.kappa import dump_yaml

source, study, target = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
scan = pd.read_csv(study / "scan.csv")
steps = {}
for line in (study / "steps.md").read_text().splitlines()[4:]:
    cells = [c.strip() for c in line.strip("|").split("|")]
    name, init, lr = cells[0], cells[1], cells[4]
    if lr == "none":
        print(f"{name}, init {init}: the second rule refused ({cells[6]}): PINN-GD not rerun there")
        continue
    mine = scan[(scan.experiment == name) & (scan.init == init)]
    exact = float(mine.lr.iloc[(mine.lr - float(lr)).abs().argmin()])  # the scan's lr that %g printed
    assert f"{exact:g}" == lr, (name, init, exact, lr)
    steps[(name, init)] = pinn_step.StepChoice(exact, float("nan"), "")
doc = pinn_step.with_steps(yaml.safe_load(open(source)), steps)
for name in list(doc["experiments"]):
    base = name.removesuffix(pinn_step.TWIN_SUFFIX)
    if (base, "torch" if name != base else "paper") not in steps:
        del doc["experiments"][name]
head = (f"# {source} with PINN-GD at the second step rule's lr per (experiment, init) "
        f"({study}/steps.md): suites/run-pinn-step2.sh\n")
Path(target).write_text(head + dump_yaml(doc))
print(f"{target}: {len(doc['experiments'])} experiment(s)")
PY
experiments=$(sed -n '/^experiments:/,$p' "$CONFIG" | grep -E '^  [a-z0-9.-]+:$' | tr -d ' :')
for e in $experiments; do
  echo "== $(date -u +%FT%TZ) $e"
  nice -n 10 "$LYSEP" run "$e" --config "$CONFIG" --solver pinn --results "$OUT" --jobs "$JOBS"
  commit "$OUT: $e, PINN-GD at the second step rule's lr, every size and seed (suites/run-pinn-step2.sh)" "$OUT/$e" "$CONFIG"
done
"$LYSEP" status --config "$CONFIG" --results "$OUT" --check --timing
