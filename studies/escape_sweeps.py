"""LySep elliptic-2d, two archives side by side: per seed, the first sweep with J < 1e-6 (the end of the
ridge phase, studies/explanations.md (b); -1: never within the run) and the final J and l2.

    .venv/bin/python studies/escape_sweeps.py A_DIR B_DIR [--sizes 50,80,100]

Used for the back-off (docs/engine.md): A = the archive (results/paper), B = the same runs made with
`backoff_max: 16` (`lysep run elliptic-2d --solver lysep --config FILE --results B_DIR`, FILE =
experiments.yaml with `backoff_max: 16` in LySep's settings).

Backs: studies/explanations.md (b), docs/engine.md, docs/archive.md: escape sweeps of two archives side by side.
Regenerate: not run by make studies: its inputs are a second archive (results/regen, or one made with
    backoff_max: 16) not committed -> studies/results/regen_escape_e2d.txt, backoff_escape_e2d.txt
    (studies/run.py holds the commands).
Cost: seconds.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import argparse
import json
from pathlib import Path

import numpy as np


def escape(npz: Path) -> int:
    h = np.load(npz)["history_J"]
    below = np.flatnonzero(h < 1e-6)
    return int(below[0]) if below.size else -1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--sizes", default="50,80,100")
    args = ap.parse_args()
    print(f"# elliptic-2d LySep: A = {args.a}, B = {args.b}; escape = first sweep with J < 1e-6 (-1: none)")
    print(f"{'(L,M)':<8} {'seed':>4} {'escape A':>9} {'escape B':>9} {'J A':>10} {'J B':>10} {'l2 A':>10} {'l2 B':>10}")
    for M in (int(m) for m in args.sizes.split(",")):
        for seed in range(10):
            row = []
            for root in (args.a, args.b):
                base = Path(root) / "elliptic-2d" / "lysep" / f"L3-M{M}" / f"seed-{seed}"
                rec = json.loads(base.with_suffix(".json").read_text())
                row.append((escape(base.with_suffix(".npz")), rec["final"]["J"], rec["final"]["l2"]))
            (ea, Ja, la), (eb, Jb, lb) = row
            print(f"(3,{M}){'':<3} {seed:>4} {ea:>9} {eb:>9} {Ja:>10.3e} {Jb:>10.3e} {la:>10.3e} {lb:>10.3e}")


if __name__ == "__main__":
    main()
