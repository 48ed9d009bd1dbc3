"""Random feature method (rfm, lysep_cli/solvers/rfm.py): accuracy and cost over (sigma, M), and a
default chosen without looking at the test error.

What it measures.  For each of the four paper experiments (elliptic-2d, elliptic-10d, parabolic-5d,
hyperbolic-5d; data and problem from experiments.yaml) and every sigma in SIGMAS (0.0625 .. 16, over
two decades), M in WIDTHS (50 .. 3200 features) and seed in SEEDS (0, 1, 2), the network
``rfm.features(network.init_params(n_in, 2, M, seed), sigma)`` with its output layer from one
least-squares solve (``rfls.solve_output_layer(..., "auto")``) is fitted twice:

  (a) on the full training set: the training residual J (PINN loss after the solve), the relative l2
      test error, cond(A) of the least-squares matrix, and the wall seconds of the fit
      (init_params + features + solve, time.perf_counter, one BLAS thread);
  (b) on the first 80% of the training points (columns of Z_train), with the PINN residual loss
      J_hold = (1/N_hold) ||R||^2 of that fit on the remaining 20% (network.pinn_loss).

Then, at each experiment's chosen sigma, the same rows at the paper's own widths M = 20, 30, 50, 80,
100, 150 (set "equal-width"), so that rfm can be set beside LySep and PINN (results/paper) at equal
width.  A fit at M = 3200 that takes more than MAX_FIT_SECONDS drops M = 3200 for that experiment
(the .md says so).

Selection rule (never the test error).  Per experiment, over the main grid (sigma, M): let
h(sigma, M) be the mean over the 3 seeds of the held-out residual J_hold and h* its minimum.  Among
all (sigma, M) with h(sigma, M) <= 2 h*, take the smallest M (cost), then the smallest h.  The default
is reported with its mean training J, mean l2 test error and mean seconds of the full fit (3 seeds).

Outputs (studies/results/): rfm_study.csv (one row per experiment, set, sigma, M, seed),
rfm_study.md (per experiment: sigma x M tables of mean l2 and mean J_hold, the default, the
equal-width rows beside LySep/PINN from the archive), rfm_study_<experiment>.png (left: l2 vs M per
sigma; right: l2 vs seconds per run, rfm beside LySep and PINN at 2000 iterations from results/paper).

Run (from the repository root, one process; about 20-30 minutes on one core):

    .venv/bin/python studies/rfm_study.py                      # everything
    .venv/bin/python studies/rfm_study.py --experiments elliptic-2d   # some experiments (others
                                                                  # kept from an existing CSV)
    .venv/bin/python studies/rfm_study.py --report-only        # .md and figures from the CSV

Backs: docs/results.md and docs/baselines.md 'rfm': accuracy and cost over (sigma, M), the default.
Regenerate: make studies STUDIES=rfm_study -> studies/results/rfm_study.csv, rfm_study.md,
    rfm_study_elliptic-2d.png, rfm_study_elliptic-10d.png, rfm_study_parabolic-5d.png,
    rfm_study_hyperbolic-5d.png (studies/run.py holds the commands).
Cost: 20-30 CPU-minutes (writes studies/results/ only).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import argparse
import csv
import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lysep_cli.numerics.dataset import TrainingData, experiment_data  # noqa: E402
from lysep_cli.numerics.metrics import relative_l2  # noqa: E402
from lysep_cli.numerics.network import init_params, pinn_loss  # noqa: E402
from lysep_cli.solvers.rfls import solve_output_layer  # noqa: E402
from lysep_cli.solvers.rfm import features  # noqa: E402
from lysep_cli.specs import default_config, load_specs  # noqa: E402
from lysep_cli.store.records import load_records  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "studies" / "results"
ARCHIVE = ROOT / "results" / "paper"
EXPERIMENTS = ["elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d"]
SIGMAS = [0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
WIDTHS = [50, 100, 200, 400, 800, 1600, 3200]
PAPER_WIDTHS = [20, 30, 50, 80, 100, 150]
SEEDS = [0, 1, 2]
FIT_FRACTION = 0.8
TOLERANCE = 2.0          # within 2x of the best mean held-out residual
MAX_FIT_SECONDS = 20.0   # a fit at M = 3200 slower than this drops M = 3200
FIELDS = ["experiment", "set", "sigma", "M", "seed", "n_train", "n_fit", "n_hold", "status",
          "J_train", "l2_test", "cond", "rank", "seconds", "J_fit80", "J_hold", "l2_test_fit80",
          "seconds_fit80"]


def fit(problem, data: TrainingData, M: int, sigma: float, seed: int):
    """One rfm fit: (SolveResult, wall seconds of init_params + features + solve)."""
    t0 = time.perf_counter()
    result = solve_output_layer(data, features(init_params(problem.n_in, 2, M, seed), sigma), "auto")
    return result, time.perf_counter() - t0


def nan_if_bad(x) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return x if math.isfinite(x) else float("nan")


def run_cell(name: str, ed, full: TrainingData, part: TrainingData, Z_hold, hold_coef, hold_Y,
             set_: str, sigma: float, M: int, seed: int) -> dict:
    problem = ed.problem
    r, sec = fit(problem, full, M, sigma, seed)
    ok = r.status == "ok"
    r80, sec80 = fit(problem, part, M, sigma, seed)
    ok80 = r80.status == "ok"
    row = {
        "experiment": name, "set": set_, "sigma": sigma, "M": M, "seed": seed,
        "n_train": full.Z.shape[1], "n_fit": part.Z.shape[1], "n_hold": Z_hold.shape[1],
        "status": "ok" if ok and ok80 else f"full:{r.status};fit80:{r80.status}",
        "J_train": nan_if_bad(r.history["J"][-1]),
        "l2_test": nan_if_bad(relative_l2(problem, r.params, ed.Z_test)) if ok else float("nan"),
        "cond": nan_if_bad(r.diagnostics.get("cond")),
        "rank": r.diagnostics.get("rank", ""),
        "seconds": sec,
        "J_fit80": nan_if_bad(r80.history["J"][-1]),
        "J_hold": nan_if_bad(pinn_loss(r80.params, Z_hold, hold_coef, hold_Y)) if ok80 else float("nan"),
        "l2_test_fit80": nan_if_bad(relative_l2(problem, r80.params, ed.Z_test)) if ok80 else float("nan"),
        "seconds_fit80": sec80,
    }
    return row


def fmt_row(row: dict) -> str:
    return (f"{row['experiment']:14s} {row['set']:11s} sigma={row['sigma']:<5g} M={row['M']:<5d} "
            f"seed={row['seed']}  J={row['J_train']:.3e}  l2={row['l2_test']:.3e}  "
            f"cond={row['cond']:.2e}  J_hold={row['J_hold']:.3e}  {row['seconds']:.2f}s")


def run_experiment(name: str, spec, notes: dict) -> list[dict]:
    ed = experiment_data(spec)
    problem, Z = ed.problem, ed.Z_train
    n_fit = int(round(FIT_FRACTION * Z.shape[1]))
    full = TrainingData.build(problem, Z)
    part = TrainingData.build(problem, Z[:, :n_fit])
    Z_hold = Z[:, n_fit:]
    hold_coef, hold_Y = problem.coefficients(Z_hold), problem.rhs(Z_hold)
    rows: list[dict] = []
    widths = list(WIDTHS)
    for M in WIDTHS:  # ascending, so a slow M = 3200 is met last
        if M not in widths:
            continue
        for sigma in SIGMAS:
            for seed in SEEDS:
                row = run_cell(name, ed, full, part, Z_hold, hold_coef, hold_Y, "main", sigma, M, seed)
                print(fmt_row(row), flush=True)
                rows.append(row)
                if M == max(WIDTHS) and row["seconds"] > MAX_FIT_SECONDS:
                    notes.setdefault(name, []).append(
                        f"M = {M} dropped: one fit took {row['seconds']:.1f} s (> {MAX_FIT_SECONDS:g} s)")
                    widths.remove(M)
                    rows = [r for r in rows if r["M"] != M]
                    break
            if M not in widths:
                break
    sigma0, _ = choose(rows)[:2]
    for M in PAPER_WIDTHS:
        for seed in SEEDS:
            existing = [r for r in rows if r["set"] == "main" and r["sigma"] == sigma0 and r["M"] == M
                        and r["seed"] == seed]
            if existing:  # same network, same fit: the main grid's row serves
                continue
            row = run_cell(name, ed, full, part, Z_hold, hold_coef, hold_Y, "equal-width", sigma0, M, seed)
            print(fmt_row(row), flush=True)
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Selection and summaries.

def cell_means(rows: list[dict], key: str) -> dict[tuple[float, int], float]:
    """mean of ``key`` over seeds per (sigma, M) (NaN if any seed is non-finite)."""
    acc: dict[tuple[float, int], list[float]] = defaultdict(list)
    for r in rows:
        acc[(float(r["sigma"]), int(r["M"]))].append(float(r[key]))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def choose(rows: list[dict]) -> tuple[float, int, float, list[tuple[float, int]]]:
    """(sigma, M, best mean J_hold, candidates within TOLERANCE) by the selection rule, main grid only."""
    main = [r for r in rows if r["set"] == "main"]
    h = {k: v for k, v in cell_means(main, "J_hold").items() if math.isfinite(v)}
    best = min(h.values())
    cand = [k for k, v in h.items() if v <= TOLERANCE * best]
    sigma, M = min(cand, key=lambda k: (k[1], h[k]))
    return sigma, M, best, sorted(cand, key=lambda k: (k[1], k[0]))


def archive_points(name: str) -> dict[tuple[str, int, int], dict]:
    """LySep and PINN at 2000 iterations from results/paper: (solver, L, M) -> mean l2, mean seconds, n."""
    loaded = load_records(ARCHIVE, [name])
    acc: dict[tuple[str, int, int], list] = defaultdict(list)
    for r in loaded.records:
        if r.solver in ("lysep", "pinn") and r.iterations == 2000:
            l2 = r.final.l2
            acc[(r.solver, r.L, r.M)].append((float("nan") if l2 is None else float(l2), float(r.seconds)))
    return {k: {"l2": float(np.mean([a for a, _ in v])), "seconds": float(np.mean([s for _, s in v])),
                "n": len(v)} for k, v in sorted(acc.items())}


def e(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.2e}"


def report(all_rows: list[dict], notes: dict[str, list[str]]) -> None:
    lines = ["# Random feature method (rfm): sigma x M study", "",
             "Generated by `studies/rfm_study.py` (its docstring says what is measured and how to run it).",
             f"rfm: one hidden layer sin(W1 x + b1), W1 ~ U(-sigma, sigma), b1 ~ U(-pi, pi) (the seeded "
             f"network rescaled), output layer by one SVD least-squares solve (rcond auto). Seeds {SEEDS}; "
             f"every number below is a mean over the {len(SEEDS)} seeds. One BLAS thread; seconds are wall "
             f"seconds of one full fit (init_params + features + solve) on this machine (2 cores, shared).",
             "",
             "**Selection rule** (never the test error): per experiment, fit each (sigma, M) on the first "
             f"{FIT_FRACTION:.0%} of the training points (columns of Z_train) and take the PINN residual "
             "loss J_hold = (1/N_hold)||R||^2 on the remaining 20%; h(sigma, M) = mean J_hold over the seeds, "
             f"h* = min h. Among all (sigma, M) with h <= {TOLERANCE:g} h*, take the smallest M (cost), then "
             "the smallest h. The default's figures (J, l2, seconds) are those of the fit on the full "
             "training set.", ""]
    summary = ["## Chosen defaults", "",
               "| experiment | sigma | M | mean J (train) | mean l2 (test) | mean seconds | mean J_hold | h* (best J_hold) | at | largest M kept: s per full fit (min..max over sigma) |",
               "|---|---|---|---|---|---|---|---|---|---|"]
    body: list[str] = []
    for name in EXPERIMENTS:
        rows = [r for r in all_rows if r["experiment"] == name]
        if not rows:
            continue
        main = [r for r in rows if r["set"] == "main"]
        sigma0, M0, best, cand = choose(rows)
        l2 = cell_means(main, "l2_test")
        J = cell_means(main, "J_train")
        h = cell_means(main, "J_hold")
        sec = cell_means(main, "seconds")
        cond = cell_means(main, "cond")
        best_at = min((k for k in h if math.isfinite(h[k])), key=lambda k: h[k])
        summary.append(f"| {name} | {sigma0:g} | {M0} | {e(J[(sigma0, M0)])} | {e(l2[(sigma0, M0)])} | "
                       f"{sec[(sigma0, M0)]:.3f} | {e(h[(sigma0, M0)])} | {e(best)} | "
                       f"sigma={best_at[0]:g}, M={best_at[1]} | {max(k[1] for k in sec)}: "
                       f"{min(v for k, v in sec.items() if k[1] == max(k2[1] for k2 in sec)):.2f}.."
                       f"{max(v for k, v in sec.items() if k[1] == max(k2[1] for k2 in sec)):.2f} |")
        sigmas = sorted({k[0] for k in l2})
        widths = sorted({k[1] for k in l2})
        body += [f"## {name}", ""]
        for note in notes.get(name, []):
            body += [f"- {note}"]
        body += [f"Default: **sigma = {sigma0:g}, M = {M0}** (h = {e(h[(sigma0, M0)])}, h* = {e(best)} at "
                 f"sigma = {best_at[0]:g}, M = {best_at[1]}; {len(cand)} (sigma, M) within {TOLERANCE:g} h*: "
                 + ", ".join(f"({s:g}, {m})" for s, m in cand) + ").", ""]
        best_l2 = min((k for k in l2 if math.isfinite(l2[k])), key=lambda k: l2[k])
        edges = []
        if sigma0 in (min(sigmas), max(sigmas)):
            edges.append(f"sigma = {sigma0:g} is at the edge of the sigma grid")
        if M0 == max(widths):
            edges.append(f"M = {M0} is the largest M of the grid")
        if edges:
            body += ["Grid edge: " + "; ".join(edges) + " (the held-out optimum may lie outside the grid).", ""]
        n_fit, n_train = int(main[0]["n_fit"]), int(main[0]["n_train"])
        body += [f"Points: N_train = {n_train} (full fit), N_fit = {n_fit} / N_hold = {int(main[0]['n_hold'])} "
                 f"(held-out fit). The least-squares matrix is N x (M + 1): it has at least as many columns as rows "
                 f"(M + 1 >= N) from M = {n_train - 1} in the full fit, from M = {n_fit - 1} in the held-out fit.", ""]
        body += [f"Lowest mean l2 on the grid (for reference only, not used to choose): {e(l2[best_l2])} at "
                 f"sigma = {best_l2[0]:g}, M = {best_l2[1]}.", ""]
        for title, table in (("mean l2 test error", l2), ("mean held-out residual J_hold (fit on 80%)", h),
                             ("mean training J (full fit)", J), ("mean cond(A)", cond),
                             ("mean seconds per full fit", sec)):
            body += [f"{title}:", "", "| sigma \\ M | " + " | ".join(str(m) for m in widths) + " |",
                     "|---" * (len(widths) + 1) + "|"]
            for s in sigmas:
                cells = []
                for m in widths:
                    v = table.get((s, m), float("nan"))
                    txt = f"{v:.3f}" if title.startswith("mean seconds") else e(v)
                    cells.append(f"**{txt}**" if (s, m) == (sigma0, M0) else txt)
                body.append(f"| {s:g} | " + " | ".join(cells) + " |")
            body.append("")
        # Equal width: rfm at the chosen sigma against the archive.
        eq_rows = [r for r in rows if float(r["sigma"]) == sigma0 and int(r["M"]) in PAPER_WIDTHS]
        eq_l2, eq_J = cell_means(eq_rows, "l2_test"), cell_means(eq_rows, "J_train")
        eq_sec, eq_h = cell_means(eq_rows, "seconds"), cell_means(eq_rows, "J_hold")
        arch = archive_points(name)
        body += [f"Equal width (rfm at sigma = {sigma0:g}, L = 2, M features; LySep and PINN: results/paper, "
                 "L = 3, 2000 iterations, mean over the archive's seeds, seconds as recorded in the archive):", "",
                 "| M | rfm J | rfm l2 | rfm J_hold | rfm s | LySep l2 | LySep s | PINN l2 | PINN s |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for m in PAPER_WIDTHS:
            k = (sigma0, m)
            ly = [v for (sv, _, mm), v in arch.items() if sv == "lysep" and mm == m]
            pn = [v for (sv, _, mm), v in arch.items() if sv == "pinn" and mm == m]
            ly_txt = f"{e(ly[0]['l2'])} | {ly[0]['seconds']:.1f}" if ly else "- | -"
            pn_txt = f"{e(pn[0]['l2'])} | {pn[0]['seconds']:.1f}" if pn else "- | -"
            body.append(f"| {m} | {e(eq_J.get(k, float('nan')))} | {e(eq_l2.get(k, float('nan')))} | "
                        f"{e(eq_h.get(k, float('nan')))} | {eq_sec.get(k, float('nan')):.3f} | {ly_txt} | {pn_txt} |")
        body.append("")
        plot(name, main, sigma0, M0, arch)
        body += [f"Figure: `rfm_study_{name}.png`.", ""]
    text = "\n".join(lines + summary + [""] + body)
    (OUT / "rfm_study.md").write_text(text)
    print(f"wrote {OUT / 'rfm_study.md'}")


def plot(name: str, main: list[dict], sigma0: float, M0: int, arch: dict) -> None:
    l2, sec = cell_means(main, "l2_test"), cell_means(main, "seconds")
    sigmas = sorted({k[0] for k in l2})
    widths = sorted({k[1] for k in l2})
    cmap = plt.get_cmap("viridis")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.2))
    for i, s in enumerate(sigmas):
        c = cmap(i / max(1, len(sigmas) - 1))
        ax1.plot(widths, [l2[(s, m)] for m in widths], "o-", color=c, label=f"sigma={s:g}")
        ax2.scatter([sec[(s, m)] for m in widths], [l2[(s, m)] for m in widths], color=c, s=22,
                    label=f"rfm sigma={s:g}")
    ax1.plot([M0], [l2[(sigma0, M0)]], "r*", ms=16, label=f"default ({sigma0:g}, {M0})", zorder=5)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("M (features)")
    ax1.set_ylabel("relative l2 test error (mean of 3 seeds)")
    ax1.set_title(f"{name}: rfm, l2 vs M")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.plot([sec[(sigma0, M0)]], [l2[(sigma0, M0)]], "r*", ms=16, label="rfm default", zorder=5)
    markers = {"lysep": ("s", "tab:red"), "pinn": ("^", "tab:blue")}
    for solver, (mk, col) in markers.items():
        pts = [(k, v) for k, v in arch.items() if k[0] == solver]
        if not pts:
            continue
        ax2.plot([v["seconds"] for _, v in pts], [v["l2"] for _, v in pts], mk + "--", color=col,
                 label=f"{solver} (2000 it.)")
        for j, ((_, L, M), v) in enumerate(pts):  # staggered labels: the points can be close
            ax2.annotate(f"{solver} M={M}", (v["seconds"], v["l2"]), fontsize=7,
                         xytext=(4, 10 - 9 * (j % 3)), textcoords="offset points")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("seconds per run (mean)")
    ax2.set_ylabel("relative l2 test error (mean)")
    ax2.set_title(f"{name}: l2 vs cost (rfm: all sigma, M)")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = OUT / f"rfm_study_{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


# ---------------------------------------------------------------------------------------------
# CSV.

def write_csv(rows: list[dict]) -> None:
    with open(OUT / "rfm_study.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {OUT / 'rfm_study.csv'}")


def read_csv() -> list[dict]:
    path = OUT / "rfm_study.csv"
    if not path.exists():
        return []
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for k in FIELDS:
                if k in ("experiment", "set", "status", "rank"):
                    continue
                r[k] = int(r[k]) if k in ("M", "seed", "n_train", "n_fit", "n_hold") else float(r[k])
            rows.append(r)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", nargs="+", choices=EXPERIMENTS, default=EXPERIMENTS)
    ap.add_argument("--report-only", action="store_true", help="only the .md and figures, from the CSV")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    specs = load_specs(default_config())
    notes: dict[str, list[str]] = {}
    rows = read_csv()
    if not args.report_only:
        rows = [r for r in rows if r["experiment"] not in args.experiments]
        t0 = time.perf_counter()
        with threadpool_limits(1), np.errstate(all="ignore"):
            for name in args.experiments:
                rows += run_experiment(name, specs[name], notes)
                rows.sort(key=lambda r: (EXPERIMENTS.index(r["experiment"]), r["set"] != "main",
                                         float(r["sigma"]), int(r["M"]), int(r["seed"])))
                write_csv(rows)
        print(f"total {time.perf_counter() - t0:.0f} s", flush=True)
    for name in EXPERIMENTS:
        widths = {int(r["M"]) for r in rows if r["experiment"] == name and r["set"] == "main"}
        if widths and max(WIDTHS) not in widths and name not in notes:
            notes[name] = [f"M = {max(WIDTHS)} dropped (a fit took over {MAX_FIT_SECONDS:g} s)"]
    with threadpool_limits(1):
        report(rows, notes)


if __name__ == "__main__":
    main()
