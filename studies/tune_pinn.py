"""Learning-rate scan for PINN-GD (the evidence behind the `pinn:` settings of experiments.yaml).

Usage: .venv/bin/python studies/tune_pinn.py EXPERIMENT --size 3x30 --iterations 2000 \
           --lrs 1e-3,3e-3,1e-2 --ratio 0.1 --seeds 0 [--jobs 2] [--out FILE [--append]] [--archive DIR]

For every lr it runs PINN-GD with the exponential schedule lr -> lr * ratio (solvers/pinn.py) from the
seeded initial network and prints the final J, the minimum J along the way, the relative l2 test error
and the status, then one summary line per lr (final J over the seeds: geometric mean, min, max).
Nothing is written to results/.  ``--out FILE`` also writes the printed table to FILE (its first line
is the exact command); ``--append`` appends to FILE instead.  ``--archive DIR`` (e.g. results/paper)
prints beside it the final J that the archived run of the spec's own settings reached for the same size
and seeds (DIR/EXPERIMENT/pinn/L<L>-M<M>/seed-<s>.json).

Backs: README headline; studies/explanations.md (a), (d), (e): PINN learning-rate scans.
Regenerate: make studies STUDIES=tune_pinn -> studies/results/pinn_schedule_scan_e2d.txt,
    pinn_small_step_e10d.txt, pinn_disagreements.txt (studies/run.py holds the commands).
Cost: ~15 CPU-minutes (pinn_disagreements.txt: its scans, listed in its header, ~1 CPU-hour more).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import dataclasses
import json
import shlex
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from lysep_cli.execution.runner import RunKey, execute
from lysep_cli.specs import default_config, load_specs, parse_seeds, parse_sizes


def one(args):
    spec, lr, ratio, L, M, seed, iterations = args
    spec = dataclasses.replace(spec, solvers={"pinn": spec.solvers["pinn"].replace(lr=lr, lr_final=lr * ratio)})
    rec, _ = execute(spec, RunKey("pinn", L, M, seed), iterations)
    J = np.asarray([np.nan if x is None else x for x in rec.history["J"]], dtype=float)
    ups = int(np.sum(np.diff(J) > 0))  # steps that raised J (an oscillating schedule)
    return lr, seed, rec.status, rec.final.J, np.nanmin(J), rec.final.l2, rec.seconds, ups, rec.diverged_at


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("--size", default=None, help="LxM (default: the smallest of the spec)")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--lrs", default="1e-3,3e-3,1e-2,3e-2")
    p.add_argument("--ratio", type=float, default=0.1, help="lr_final / lr")
    p.add_argument("--seeds", default="0")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--config", default=None)
    p.add_argument("--out", default=None, help="also write the printed table to this file")
    p.add_argument("--append", action="store_true", help="with --out: append instead of overwriting")
    p.add_argument("--archive", default=None,
                   help="results folder (e.g. results/paper): print the archived spec-settings final J beside")
    a = p.parse_args()
    spec = load_specs(a.config or default_config())[a.experiment]
    (L, M), = parse_sizes(a.size or "smallest", spec)
    seeds = parse_seeds(a.seeds, spec)
    jobs = [(spec, float(lr), a.ratio, L, M, s, a.iterations) for lr in a.lrs.split(",") for s in seeds]
    out = None if a.out is None else open(a.out, "a" if a.append else "w")

    def emit(line: str = "") -> None:
        print(line, flush=True)
        if out is not None:
            out.write(line + "\n")
            out.flush()

    fmt = lambda x: f"{x:10.3e}" if x is not None else f"{'nan':>10}"  # noqa: E731

    def stats(values: list[float]) -> str:
        v = np.asarray(values, dtype=float)
        if not v.size:
            return f"{0:>4} " + " ".join([fmt(None)] * 4)
        return f"{v.size:>4} " + " ".join(fmt(float(x)) for x in
                                          (v.mean(), np.exp(np.log(v).mean()), v.min(), v.max()))
    if out is not None:
        emit("# command: " + shlex.join(["nice", "-n", "5", ".venv/bin/python", *sys.argv]))
    emit(f"{spec.name} (L,M)=({L},{M}) iterations {a.iterations}, lr_final = {a.ratio:g} lr, seeds {seeds}")
    emit(f"{'lr':>8} {'seed':>4} {'status':>8} {'final J':>10} {'min J':>10} {'l2':>10} {'s':>6} "
         f"{'J rose':>6} {'div at':>6}   (J rose: steps that raised J; div at: iteration of a non-finite J)")
    finals: dict[float, list[float | None]] = {}
    with ProcessPoolExecutor(a.jobs) as pool:
        for lr, seed, status, J, Jmin, l2, sec, ups, div_at in pool.map(one, jobs):
            finals.setdefault(lr, []).append(J if status == "ok" else None)
            emit(f"{lr:8.1e} {seed:>4} {status:>8} {fmt(J)} {fmt(Jmin)} {fmt(l2)} {sec:6.1f} {ups:>6} "
                 f"{'-' if div_at is None else div_at:>6}")
    emit()
    emit(f"final J over seeds {seeds} (mean, geometric mean, min, max over the runs that did not diverge)")
    emit(f"{'lr':>8} {'lr_final':>9} {'n ok':>4} {'mean':>10} {'geo mean':>10} {'min':>10} {'max':>10}   per seed")
    for lr, Js in finals.items():
        emit(f"{lr:8.1e} {lr * a.ratio:9.1e} " + stats([x for x in Js if x is not None]) + "   "
             + " ".join(fmt(x).strip() for x in Js))
    if a.archive is not None:
        emit()
        arch = []
        for s in seeds:
            f = Path(a.archive) / spec.name / "pinn" / f"L{L}-M{M}" / f"seed-{s}.json"
            if not f.is_file():
                arch.append((s, None, None, "missing"))
                continue
            r = json.loads(f.read_text())
            arch.append((s, r["final"]["J"], r["settings"], r["status"]))
        settings = {str(x[2]) for x in arch if x[2] is not None}
        emit(f"archived runs of the spec's settings ({a.archive}/{spec.name}/pinn/L{L}-M{M}, "
             f"settings {', '.join(sorted(settings)) or '?'}):")
        for s, J, _, status in arch:
            emit(f"{'spec':>8} {s:>4} {status:>8} {fmt(J)}")
        emit(f"{'spec':>8} {'':>9} " + stats([x[1] for x in arch if x[1] is not None and x[3] == "ok"])
             + "   (n ok, mean, geometric mean, min, max)")
    if out is not None:
        emit()
        out.close()


if __name__ == "__main__":
    main()
