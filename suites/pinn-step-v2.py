"""PINN-GD's step by the second rule (docs/varpro.md, "PINN-GD's step, fairly chosen"; pinn_step.step_v2), per
experiment and init, beside the first rule's study (which it does not touch):

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python suites/pinn-step-v2.py [EXPERIMENT ...]

Experiments of results/harder/experiments.yaml (default: every base experiment; each under both inits).
Writes results/harder/study-pinn-step-v2/scan.csv (every scan row, full_length where checked) and
steps.md (per experiment and init: eta_0, the first rule's lr, the second rule's lr and its words, CPU s).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from lysep_cli.reports import pinn_step
from lysep_cli.specs import load_specs
from lysep_cli.store.atomic import write_text

CONFIG = Path("results/harder/experiments.yaml")
OUT = Path("results/harder/study-pinn-step-v2")


def main(names: list[str]) -> None:
    specs = load_specs(CONFIG)
    doc = yaml.safe_load(CONFIG.read_text())["experiments"]
    bases = names or list(pinn_step.base_experiments(doc))
    OUT.mkdir(parents=True, exist_ok=True)
    frames, lines = [], ["| experiment | init | eta_0 | first rule's lr | second rule's lr | CPU s | words |",
                         "|---|---|---|---|---|---|---|"]
    for name in bases:
        for init in pinn_step.INITS:
            block = doc[name if init == "paper" else name + pinn_step.TWIN_SUFFIX]["solvers"]["pinn"]
            t0 = time.process_time()
            try:
                choice, rows = pinn_step.step_v2(specs[name], init)
                words, lr = choice.verdict, f"{choice.lr:g}"
            except pinn_step.NoStableStep as e:  # GridTooNarrow included
                rows, words, lr = pd.DataFrame(columns=pinn_step.COLUMNS_V2), str(e), "none"
            seconds = time.process_time() - t0
            frames.append(rows)
            eta0 = f"{rows.eta0.iloc[0]:.3e}" if len(rows) else "—"
            lines.append(f"| {name} | {init} | {eta0} | {block['lr']:g} | {lr} | {seconds:.0f} | {words} |")
            print(lines[-1], flush=True)
            write_text(OUT / "scan.csv", pd.concat(frames).to_csv(index=False))
            write_text(OUT / "steps.md", "# PINN-GD's step by the second rule (suites/pinn-step-v2.py)\n\n"
                       + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
