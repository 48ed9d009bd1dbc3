"""PINN-GD ablations a referee asks for (issue 25, item 5), against the archived spec runs.

Usage: .venv/bin/python studies/pinn_ablations.py [--parts c,a-2d,a-10d,b,d,a-10d-150]
           [--iterations N] [--seeds 0-9] [--out studies/results/pinn_ablations] [--summary-only]

Parts (run in this order, cheapest first; one CSV row per run, appended as it finishes; a restart skips
the runs already in the CSV, so the script resumes; the summary .md is rewritten after each part):

  c          finer step grid, 5-D M = 20: parabolic-5d and hyperbolic-5d at (3,20), lr = spec lr x
             {1/10, 1/3, 1/2, 1, 1.5, 2, 3, 5, 10}, lr_final / lr = the spec's 0.1, 10 seeds, 2000
             iterations.  The x1 row is the spec itself: its runs must equal the archive's (checked).
  a-2d       PyTorch's default initialisation, elliptic-2d, all four sizes, 10 seeds, spec schedule.
  a-10d      the same, elliptic-10d (3,20), (3,50), (3,100), 10 seeds.
  b          elliptic-2d with 10x the iterations (20,000), the spec's schedule stretched: the schedule is
             lr_k = lr (lr_final / lr)^(k / (iterations - 1)) (lysep_cli/solvers/pinn.py), so passing
             iterations = 20000 runs the same lr -> lr_final (1e-2 -> 1e-3) over the longer run, 10x slower
             decay per step.  (3,30) and (3,100), seeds 0-2.  J at k = 2000, 5000, 10000 also recorded.
  d          the small-step run at 10-D (3,150): lr 10x smaller than the spec's (1e-2 -> 1e-3), seeds 0-2,
             2000 iterations (docs/results.md, disagreement (d), ran it at (3,20), (3,50), (3,100) only).
  a-10d-150  PyTorch's default initialisation at elliptic-10d (3,150), seeds 0-2.
  a-2d-step  PyTorch's default initialisation, elliptic-2d, all four sizes, with smaller steps than the
             spec's 1e-2 -> 1e-3 (at which it diverges at M = 80, 100): lr = 5e-3 and 2e-3 (lr_final =
             lr / 10), seeds 0-2.  Added after part a-2d: does the paper's PINN row come from PyTorch's
             initialisation with a stable step?

PyTorch's nn.Linear(fan_in, fan_out) initialises W with kaiming_uniform_(a=sqrt(5)), i.e. U(+-1/sqrt(fan_in)),
and b with U(+-1/sqrt(fan_in)).  The paper states U(+-M^-1/2) for every W_l, b_l.  Both are the solvers'
setting ``init`` (``paper``, the default, and ``torch``: lysep_cli.numerics.network.init_params; this study's
"spec" and "torch").  Layers 2..L have fan_in = M, so the two coincide there; only W_1, b_1 differ (fan_in =
n_in = d, or d + 1 with time).  The torch start draws from the same numpy generator in the same order, so
layers 2..L are bit-identical to the spec's start and W_1, b_1 are the spec's draw scaled by sqrt(M / n_in):
the ablation changes the first layer only.

Baselines at the spec's own settings are read from results/paper/<experiment>/pinn/L3-M<M>/seed-<s>.json,
not recomputed.  Every cell is mean +- sample std (ddof = 1) over the seeds whose run stayed finite.
Each run: one BLAS thread (threadpoolctl), the runner's J (network.pinn_loss) and relative l2
(metrics.relative_l2 on the experiment's test set).

Backs: README headline; studies/explanations.md (a), (e): PINN-GD ablations (PyTorch's init, steps, iterations).
Regenerate: make studies STUDIES=pinn_ablations (its summary alone: plain `make studies`) ->
    studies/results/pinn_ablations.csv, pinn_ablations.md (studies/run.py holds the commands).
Cost: about 10 CPU-hours (7 parts, cheapest first); resumes after an interruption.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import csv
import dataclasses
import json
import math
import re
import time
from pathlib import Path

import numpy as np
import yaml
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.solvers import solver_def
from lysep_cli.solvers.base import initial_network
from lysep_cli.specs import default_config, load_specs

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "results" / "paper"
PUBLISHED = ROOT / "lysep_cli" / "data" / "published-tables.yaml"
DISAGREEMENTS = ROOT / "studies" / "results" / "pinn_disagreements.txt"

LR_FACTORS = [0.1, 1 / 3, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0]
B_CHECKPOINTS = [2000, 5000, 10000]
PART_ORDER = ["c", "a-2d", "a-10d", "b", "d", "a-10d-150", "a-2d-step"]
A2D_STEP_LRS = [5e-3, 2e-3]
PART_TITLES = {
    "c": "(c) Finer step grid at 5-D (3,20), 10 seeds",
    "a-2d": "(a) PyTorch default initialisation, elliptic-2d",
    "a-10d": "(a) PyTorch default initialisation, elliptic-10d (3,20)-(3,100)",
    "b": "(b) elliptic-2d with 10x the iterations (20,000), schedule stretched",
    "d": "(d) Small step at elliptic-10d (3,150): lr 1e-2 -> 1e-3",
    "a-10d-150": "(a) PyTorch default initialisation, elliptic-10d (3,150)",
    "a-2d-step": "(a) PyTorch default initialisation, elliptic-2d, smaller steps",
}
FIELDS = ["part", "experiment", "L", "M", "seed", "init", "lr", "lr_final", "iterations", "status",
          "diverged_at", "J", "J_min", "l2", "J_2000", "J_5000", "J_10000", "w1_move", "w2_move",
          "seconds", "cpu_seconds"]


# ---------------------------------------------------------------------------------------------
# Initialisation and one run

#: the study's names of the starts (its CSV's ``init`` column) -> the solvers' ``init`` setting
INIT_SETTING = {"spec": "paper", "torch": "torch"}


def rel_move(W: np.ndarray, W0: np.ndarray) -> float:
    return float(np.linalg.norm(W - W0) / np.linalg.norm(W0))


def run_one(spec, L: int, M: int, seed: int, init: str, lr: float, lr_final: float,
            iterations: int) -> dict:
    data = experiment_data(spec)
    problem, train = data.problem, data.training
    settings = spec.solvers["pinn"].replace(lr=lr, lr_final=lr_final, init=INIT_SETTING[init])
    solve = solver_def("pinn").solve
    params0 = initial_network(settings, problem.n_in, L, M, seed)
    t0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        try:
            res = solve(problem, train, params0, settings, iterations)
            params, history, status, div_at = res.params, res.history["J"], res.status, res.diverged_at
        except FloatingPointError:
            params, history, status, div_at = params0, [float("nan")], "diverged", 0
        J = float(network.pinn_loss(params, train.Z, train.coef, train.Y))
        l2 = relative_l2(problem, params, Z_test=data.Z_test)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if status == "ok" and not (np.isfinite(J) and l2 is not None and np.isfinite(l2)):
        status, div_at = "diverged", len(history) - 1
    hist = np.asarray([np.nan if h is None else h for h in history], dtype=float)
    row = dict(experiment=spec.name, L=L, M=M, seed=seed, init=init, lr=lr, lr_final=lr_final,
               iterations=iterations, status=status, diverged_at="" if div_at is None else div_at,
               J=J if status == "ok" else "", J_min=float(np.nanmin(hist)) if np.isfinite(hist).any() else "",
               l2=l2 if status == "ok" else "", seconds=round(seconds, 2), cpu_seconds=round(cpu, 2))
    for k in B_CHECKPOINTS:
        row[f"J_{k}"] = float(hist[k]) if k < iterations and k < len(hist) and np.isfinite(hist[k]) else ""
    if status == "ok":
        row["w1_move"] = rel_move(params[0][0], params0[0][0])
        row["w2_move"] = rel_move(params[1][0], params0[1][0])
    return row


# ---------------------------------------------------------------------------------------------
# The plan

def plan(part: str, specs, iterations: int | None, seeds: list[int] | None):
    """(part, spec, L, M, seed, init, lr, lr_final, iterations) of every run of ``part``."""
    def S(default):
        return seeds if seeds is not None else default

    def it(default):
        return iterations if iterations is not None else default

    jobs = []
    if part == "c":
        for name in ("parabolic-5d", "hyperbolic-5d"):
            spec = specs[name]
            s = spec.solvers["pinn"]
            for f in LR_FACTORS:
                lr = float(f"{s.lr * f:.6g}")
                for seed in S(range(10)):
                    jobs.append((part, spec, 3, 20, seed, "spec", lr, float(f"{lr * s.lr_final / s.lr:.6g}"),
                                 it(2000)))
    elif part in ("a-2d", "a-10d", "a-10d-150"):
        name, sizes, sd = {"a-2d": ("elliptic-2d", [30, 50, 80, 100], range(10)),
                           "a-10d": ("elliptic-10d", [20, 50, 100], range(10)),
                           "a-10d-150": ("elliptic-10d", [150], range(3))}[part]
        spec = specs[name]
        s = spec.solvers["pinn"]
        for M in sizes:
            for seed in S(sd):
                jobs.append((part, spec, 3, M, seed, "torch", s.lr, s.lr_final, it(2000)))
    elif part == "b":
        spec = specs["elliptic-2d"]
        s = spec.solvers["pinn"]
        for M in (30, 100):
            for seed in S(range(3)):
                jobs.append((part, spec, 3, M, seed, "spec", s.lr, s.lr_final, it(20000)))
    elif part == "a-2d-step":
        spec = specs["elliptic-2d"]
        for lr in A2D_STEP_LRS:
            for M in (30, 50, 80, 100):
                for seed in S(range(3)):
                    jobs.append((part, spec, 3, M, seed, "torch", lr, float(f"{lr / 10:.6g}"), it(2000)))
    elif part == "d":
        spec = specs["elliptic-10d"]
        s = spec.solvers["pinn"]
        for seed in S(range(3)):
            jobs.append((part, spec, 3, 150, seed, "spec", s.lr / 10, s.lr_final / 10, it(2000)))
    else:
        raise ValueError(part)
    return jobs


def key_of(row: dict) -> tuple:
    return (row["part"], row["experiment"], int(row["L"]), int(row["M"]), int(row["seed"]), row["init"],
            f"{float(row['lr']):.6g}", int(row["iterations"]))


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def append_row(path: Path, row: dict) -> None:
    new = not path.exists()
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in FIELDS})
        fh.flush()


# ---------------------------------------------------------------------------------------------
# Summary

def fnum(x) -> float:
    return float(x) if x not in ("", None) else math.nan


def ms(values) -> str:
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if v.size == 0:
        return "–"
    if v.size == 1:
        return f"{v[0]:.3g} (n=1)"
    return f"{v.mean():.3g} ± {v.std(ddof=1):.2g}"


def mean(values) -> float:
    v = [x for x in values if np.isfinite(x)]
    return float(np.mean(v)) if v else math.nan


def archive(experiment: str, M: int, seeds) -> dict[int, tuple[float, float]]:
    """seed -> (final J, l2) of the archived spec PINN runs."""
    out = {}
    for s in seeds:
        f = ARCHIVE / experiment / "pinn" / f"L3-M{M}" / f"seed-{s}.json"
        if f.exists():
            d = json.loads(f.read_text())
            if d.get("status") == "ok":
                out[s] = (fnum(d["final"]["J"]), fnum(d["final"]["l2"]))
    return out


def published(experiment: str, M: int) -> str:
    tab = yaml.safe_load(PUBLISHED.read_text())[experiment]["rows"]
    for r in tab:
        if r["M"] == M and r["model"] == "PINN":
            return f"{r['J'][0]:.3g} ± {r['J'][1]:.2g}", f"{r['l2'][0]:.3g} ± {r['l2'][1]:.2g}"
    return "–", "–"


def small_step_doc() -> list[tuple[int, int, float, float]]:
    """(M, seed, J, l2) of the elliptic-10d lr = 1e-2 runs in pinn_disagreements.txt (the claim of (d))."""
    out, M = [], None
    if not DISAGREEMENTS.exists():
        return out
    for line in DISAGREEMENTS.read_text().splitlines():
        m = re.match(r"elliptic-10d \(L,M\)=\(3,(\d+)\)", line)
        if m:
            M = int(m.group(1))
            continue
        if line and not line.startswith(" ") and not line.startswith("#"):
            M = None
        f = line.split()
        if M is not None and len(f) == 7 and f[0] == "1.0e-02" and f[2] == "ok":
            out.append((M, int(f[1]), float(f[3]), float(f[5])))
    return out


def summarise(rows: list[dict], out_md: Path, csv_path: Path) -> None:
    by_part: dict[str, list[dict]] = {}
    for r in rows:
        by_part.setdefault(r["part"], []).append(r)
    L = [f"# PINN-GD ablations (issue 25, item 5)",
         "",
         f"Generated by `studies/pinn_ablations.py` from `{csv_path.name}` beside it (one row per run). "
         "Cells: mean ± sample std (ddof = 1) over the runs that stayed finite; *spec (archive)* = the archived "
         "runs at the spec's settings (results/paper, same seeds unless said); *paper* = the published PINN "
         "row (its std convention is not stated). Ratios are ablation mean / archive mean. One BLAS thread; "
         "seconds are wall time on a shared 2-core machine.",
         ""]
    for part in PART_ORDER:
        pr = by_part.get(part)
        if not pr:
            continue
        L += [f"## {PART_TITLES[part]}", ""]
        if part == "c":
            L += summary_c(pr)
        elif part in ("a-2d", "a-10d", "a-10d-150"):
            L += summary_a(pr)
        elif part == "b":
            L += summary_b(pr)
        elif part == "d":
            L += summary_d(pr)
        elif part == "a-2d-step":
            L += summary_a_step(pr)
        L.append("")
    out_md.write_text("\n".join(L).rstrip() + "\n")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _ok(rs):
    return [r for r in rs if r["status"] == "ok"]


def summary_c(pr):
    L = []
    for exp in ("parabolic-5d", "hyperbolic-5d"):
        rs = [r for r in pr if r["experiment"] == exp]
        if not rs:
            continue
        arch = archive(exp, 20, range(10))
        pj, pl = published(exp, 20)
        its = ", ".join(sorted({r["iterations"] for r in rs}))
        L += [f"### {exp} (3,20), {its} iterations, lr_final = lr / 10; paper PINN J {pj}, ℓ2 {pl}", "",
              "| lr | finite runs | final J | ℓ2 | min J along the run | diverged at (iteration) | s/run |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
        for lr in sorted({float(r["lr"]) for r in rs}):
            c = [r for r in rs if float(r["lr"]) == lr]
            ok = _ok(c)
            div = [int(r["diverged_at"]) for r in c if r["status"] != "ok" and r["diverged_at"] != ""]
            dv = f"{min(div)}–{max(div)}" if div else "–"
            L.append(f"| {lr:.3g} | {len(ok)}/{len(c)} | {ms([fnum(r['J']) for r in ok])} | "
                     f"{ms([fnum(r['l2']) for r in ok])} | {ms([fnum(r['J_min']) for r in ok])} | {dv} | "
                     f"{mean([fnum(r['seconds']) for r in c]):.1f} |")
        L += ["", f"Spec (archive, 10 seeds): J {ms([v[0] for v in arch.values()])}, "
                  f"ℓ2 {ms([v[1] for v in arch.values()])}."]
        spec_lr = {"parabolic-5d": 3e-3, "hyperbolic-5d": 3e-3}[exp]
        same = [r for r in rs if abs(float(r["lr"]) - spec_lr) < 1e-12 and int(r["iterations"]) == 2000]
        if same:
            d = [abs(fnum(r["J"]) / arch[int(r["seed"])][0] - 1) for r in same if int(r["seed"]) in arch]
            L.append(f"Check: the lr = {spec_lr:g} runs reproduce the archive's J to a relative "
                     f"{max(d):.1e} at most ({len(d)} seeds).")
        ok_cells = {}
        for lr in sorted({float(r["lr"]) for r in rs}):
            ok = _ok([r for r in rs if float(r["lr"]) == lr])
            if ok and len(ok) == len([r for r in rs if float(r["lr"]) == lr]):
                ok_cells[lr] = mean([fnum(r["J"]) for r in ok])
        if ok_cells:
            best = min(ok_cells, key=ok_cells.get)
            L.append(f"Lowest mean final J among the lr with every seed finite: lr = {best:.3g}, J "
                     f"{ok_cells[best]:.3g} ({ok_cells[best] / float(pj.split()[0]):.1f}× the paper's).")
        L.append("")
    return L


def summary_a(pr):
    L = ["| experiment | (L,M) | n_in | first-layer bound: torch / spec | seeds | final J, torch init | "
         "final J, spec (archive) | ratio | torch J < spec J | ℓ2, torch init | ℓ2, spec (archive) | "
         "ratio | ‖ΔW1‖/‖W1⁰‖, ‖ΔW2‖/‖W2⁰‖ (torch) | paper J | s/run |",
         "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    n_in = {"elliptic-2d": 2, "elliptic-10d": 10}
    for exp in ("elliptic-2d", "elliptic-10d"):
        for M in sorted({int(r["M"]) for r in pr if r["experiment"] == exp}):
            c = [r for r in pr if r["experiment"] == exp and int(r["M"]) == M]
            ok = _ok(c)
            seeds = [int(r["seed"]) for r in c]
            arch = archive(exp, M, seeds)
            aJ = [arch[s][0] for s in seeds if s in arch]
            al = [arch[s][1] for s in seeds if s in arch]
            tJ = [fnum(r["J"]) for r in ok]
            tl = [fnum(r["l2"]) for r in ok]
            better = sum(1 for r in ok if int(r["seed"]) in arch and fnum(r["J"]) < arch[int(r["seed"])][0])
            pj, _ = published(exp, M)
            b = n_in[exp] ** -0.5
            L.append(f"| {exp} | (3,{M}) | {n_in[exp]} | {b:.3f} / {M ** -0.5:.3f} | {len(ok)}/{len(c)} | "
                     f"{ms(tJ)} | {ms(aJ)} | {mean(tJ) / mean(aJ):.2f} | {better}/{len(ok)} | {ms(tl)} | "
                     f"{ms(al)} | {mean(tl) / mean(al):.2f} | "
                     f"{np.nanmedian([fnum(r['w1_move']) for r in ok]) if ok else math.nan:.2g}, "
                     f"{np.nanmedian([fnum(r['w2_move']) for r in ok]) if ok else math.nan:.2g} (median) | "
                     f"{pj} | {mean([fnum(r['seconds']) for r in c]):.0f} |")
            div = [r for r in c if r["status"] != "ok"]
            if div:
                L.append(f"|  | diverged: seeds {', '.join(r['seed'] for r in div)} at iterations "
                         f"{', '.join(r['diverged_at'] for r in div)} | | | | | | | | | | | | | |")
    L += ["", "Layers 2-3 of the torch start are bit-identical to the spec's (fan_in = M); W_1, b_1 are the "
              "spec's draw × √(M / n_in)."]
    return L


def summary_b(pr):
    L = ["| (L,M) | seeds | J at k = 2000 | J at 5000 | J at 10000 | final J (20,000) | final ℓ2 | "
         "spec 2000 it. J (archive, same seeds) | spec ℓ2 (archive) | final / spec J | paper J | s/run |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for M in sorted({int(r["M"]) for r in pr}):
        c = [r for r in pr if int(r["M"]) == M]
        ok = _ok(c)
        arch = archive("elliptic-2d", M, [int(r["seed"]) for r in c])
        aJ = [v[0] for v in arch.values()]
        tJ = [fnum(r["J"]) for r in ok]
        pj, _ = published("elliptic-2d", M)
        L.append(f"| (3,{M}) | {len(ok)}/{len(c)} | {ms([fnum(r['J_2000']) for r in ok])} | "
                 f"{ms([fnum(r['J_5000']) for r in ok])} | {ms([fnum(r['J_10000']) for r in ok])} | {ms(tJ)} | "
                 f"{ms([fnum(r['l2']) for r in ok])} | {ms(aJ)} | {ms([v[1] for v in arch.values()])} | "
                 f"{mean(tJ) / mean(aJ):.3f} | {pj} | {mean([fnum(r['seconds']) for r in c]):.0f} |")
    L += ["", "Schedule: lr_k = 1e-2 · (1e-3 / 1e-2)^(k / 19999) (the spec's 1e-2 → 1e-3, stretched over "
              "20,000 iterations: solvers/pinn.py takes the iteration count as the schedule's length), so "
              "at k = 2000 the step is still 7.9e-3, not 1e-3."]
    return L


def summary_a_step(pr):
    """Per (M, lr): torch-initialised runs beside the spec-initialised archive and the paper."""
    L = ["| (L,M) | lr → lr_final | finite runs | final J | ℓ2 | diverged at | spec init, spec step (archive) J | "
         "paper J | paper ℓ2 | s/run |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for M in sorted({int(r["M"]) for r in pr}):
        for lr in sorted({float(r["lr"]) for r in pr}, reverse=True):
            c = [r for r in pr if int(r["M"]) == M and float(r["lr"]) == lr]
            if not c:
                continue
            ok = _ok(c)
            div = [r["diverged_at"] for r in c if r["status"] != "ok"]
            arch = archive("elliptic-2d", M, [int(r["seed"]) for r in c])
            pj, pl = published("elliptic-2d", M)
            L.append(f"| (3,{M}) | {lr:g} → {float(c[0]['lr_final']):g} | {len(ok)}/{len(c)} | "
                     f"{ms([fnum(r['J']) for r in ok])} | {ms([fnum(r['l2']) for r in ok])} | "
                     f"{', '.join(div) if div else '–'} | {ms([v[0] for v in arch.values()])} | {pj} | {pl} | "
                     f"{mean([fnum(r['seconds']) for r in c]):.0f} |")
    return L


def summary_d(pr):
    ok = _ok(pr)
    seeds = [int(r["seed"]) for r in pr]
    arch = archive("elliptic-10d", 150, seeds)
    arch10 = archive("elliptic-10d", 150, range(10))
    pj, pl = published("elliptic-10d", 150)
    L = ["| (L,M) | lr → lr_final | seeds | final J | ℓ2 | paper J | paper ℓ2 | s/run |",
         "|---|---|---:|---:|---:|---:|---:|---:|"]
    L.append(f"| (3,150) | 1e-2 → 1e-3 (small step) | {len(ok)}/{len(pr)} | {ms([fnum(r['J']) for r in ok])} | "
             f"{ms([fnum(r['l2']) for r in ok])} | {pj} | {pl} | {mean([fnum(r['seconds']) for r in pr]):.0f} |")
    L.append(f"| (3,150) | 1e-1 → 1e-2 (spec, archive, same seeds) | {len(arch)} | "
             f"{ms([v[0] for v in arch.values()])} | {ms([v[1] for v in arch.values()])} | {pj} | {pl} | |")
    L.append(f"| (3,150) | 1e-1 → 1e-2 (spec, archive, 10 seeds) | {len(arch10)} | "
             f"{ms([v[0] for v in arch10.values()])} | {ms([v[1] for v in arch10.values()])} | {pj} | {pl} | |")
    doc = small_step_doc()
    for M in sorted({m for m, *_ in doc}):
        c = [x for x in doc if x[0] == M]
        pjM, plM = published("elliptic-10d", M)
        L.append(f"| (3,{M}) | 1e-2 → 1e-3 (pinn_disagreements.txt, seeds {','.join(str(x[1]) for x in c)}) | "
                 f"{len(c)} | {ms([x[2] for x in c])} | {ms([x[3] for x in c])} | {pjM} | {plM} | |")
    tJ = mean([fnum(r["J"]) for r in ok])
    if ok:
        p = float(pj.split()[0])
        L += ["", f"Small-step mean J / paper's J = {tJ / p:.2f}; small-step / spec (same seeds) = "
                  f"{tJ / mean([v[0] for v in arch.values()]):.0f}×."]
    return L


# ---------------------------------------------------------------------------------------------

def parse_seeds(text: str | None) -> list[int] | None:
    if text is None:
        return None
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", default=",".join(PART_ORDER))
    p.add_argument("--iterations", type=int, default=None, help="override every part's iterations (a check)")
    p.add_argument("--seeds", default=None, help="override every part's seeds, e.g. 0-1 (a check)")
    p.add_argument("--out", default=str(ROOT / "studies" / "results" / "pinn_ablations"),
                   help="output prefix: <out>.csv, <out>.md")
    p.add_argument("--summary-only", action="store_true")
    a = p.parse_args()
    csv_path, md_path = Path(a.out + ".csv").resolve(), Path(a.out + ".md").resolve()
    specs = load_specs(default_config())
    parts = [x for x in a.parts.split(",") if x]
    if a.summary_only:
        summarise(read_rows(csv_path), md_path, csv_path)
        return
    done = {key_of(r) for r in read_rows(csv_path)}
    for part in parts:
        jobs = plan(part, specs, a.iterations, parse_seeds(a.seeds))
        todo = [j for j in jobs if (j[0], j[1].name, j[2], j[3], j[4], j[5], f"{j[6]:.6g}", j[8]) not in done]
        print(f"== part {part}: {len(jobs)} runs, {len(jobs) - len(todo)} already in {csv_path.name}", flush=True)
        for part_, spec, L, M, seed, init, lr, lr_final, iterations in todo:
            row = {"part": part_, **run_one(spec, L, M, seed, init, lr, lr_final, iterations)}
            append_row(csv_path, row)
            print(f"{part} {spec.name} (3,{M}) seed {seed} {init} lr {lr:.3g}->{lr_final:.3g} it {iterations}: "
                  f"{row['status']} J {row['J']} l2 {row['l2']} ({row['seconds']} s, cpu {row['cpu_seconds']})",
                  flush=True)
        summarise(read_rows(csv_path), md_path, csv_path)
        print(f"== part {part} done; summary in {md_path}", flush=True)


if __name__ == "__main__":
    main()
