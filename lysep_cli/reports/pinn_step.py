"""PINN's step per problem and initialisation, chosen on training loss alone (``lysep study pinn-step``).

Two rules live here: the first (below, what ``lysep study pinn-step`` runs and results/harder/ holds), and the
second (issue 54, the end of the module: a grid relative to the loss's scale, climbed until a step diverges,
and full-length stability), kept beside it so that the old scan and verdict stay as they were.

The rule (docs/harder.md, stated before it was run), the same for every experiment of a suite and for
each initialisation ``init`` in :data:`INITS`:

  PINN-GD with the experiment's decaying schedule lr -> lr_final = RATIO * lr over its ``iterations``
  (solvers/pinn.py), for every lr of :data:`LRS`, from seed :data:`SEED`'s initial network, run for the
  schedule's first :data:`SCAN_ITERATIONS` steps at the experiment's smallest PINN size and at its
  largest.  An lr is *admissible* when neither run diverged (a non-finite J; the largest width is where
  the stability edge lies, docs/foundation.md).  The chosen lr is the admissible one with the lowest final
  training J at the smallest size; J within a relative :data:`TIE_RTOL` of it counts as a tie, and a tie
  goes to the smaller lr.  When no lr is admissible the rule refuses (:class:`NoStableStep`).

The scan trains on the training points only and never evaluates the test set: its rows
(:data:`COLUMNS`) hold no test error, and :func:`choose` reads J and the status alone.

Output: ``OUT/study-pinn-step/scan.csv`` (one row per (experiment, init, lr, size), resumable: rows
already there for the same data set are kept), ``OUT/study-pinn-step/pinn-step.md`` (the rule, per
(experiment, init) every lr's J and the choice, the scan's CPU seconds) and ``OUT/experiments.yaml``
rewritten (:func:`with_steps`): each experiment's ``pinn`` at its chosen (lr, lr_final), and its
initialisation twin ``<name>-torch`` (:data:`TWIN_SUFFIX`): the same problem, sizes, seeds and
iterations, every network solver (:data:`NETWORK_SOLVERS`) with ``init: torch`` and PINN at the lr
chosen for that init; rfm and poly only in the paper-init experiment.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import yaml
from threadpoolctl import threadpool_limits

from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.network import pinn_loss_and_grad
from lysep_cli.reports.kappa import dump_yaml
from lysep_cli.solvers import pinn
from lysep_cli.solvers.base import initial_network
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.atomic import write_text

#: the learning rates tried (half decades)
LRS = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
#: lr_final = RATIO * lr: the paper-table experiments' schedule (docs/foundation.md)
RATIO = 0.1
#: the scan runs the first SCAN_ITERATIONS steps of the experiment's schedule
SCAN_ITERATIONS = 200
#: the one seed of the scan
SEED = 0
#: final J within this relative distance of the least count as equal (then the smaller lr)
TIE_RTOL = 1e-6
#: the initialisations, each with its own lr
INITS = ("paper", "torch")
#: an experiment's initialisation twin is named <experiment><TWIN_SUFFIX>
TWIN_SUFFIX = "-torch"
#: solvers trained from the seeded network: they take ``init`` (the twin sets it to torch)
NETWORK_SOLVERS = ("pinn", "lysep", "rfls", "pinn-adam", "pinn-lbfgs", "pinn-lm", "varpro-lm", "varpro-lbfgs",
                   "varpro-gd")
#: a scan row's identity (with the data set's hash): rows of an earlier scan.csv with it are kept
RUN_KEY = ["experiment", "init", "lr", "L", "M", "seed", "iterations", "schedule_iterations", "data_sha256"]
COLUMNS = RUN_KEY + ["lr_final", "role", "status", "diverged_at", "J0", "J", "J_min", "cpu_seconds"]


class NoStableStep(ValueError):
    """No lr of the grid is admissible for an (experiment, init): the rule gives no step."""


@dataclass(frozen=True)
class StepChoice:
    """An (experiment, init)'s chosen lr, its final training J at the smallest size, and the words for it."""

    lr: float
    J: float
    verdict: str


def lr_final(lr: float) -> float:
    """The schedule's last step for ``lr`` (RATIO * lr, written without round-off digits)."""
    return float(f"{lr * RATIO:.12g}")


def scan_sizes(spec: ExperimentSpec) -> list[tuple[tuple[int, int], str]]:
    """[(size, role)]: PINN's smallest size ("smallest": the choice) and its largest ("largest": the
    divergence check), by M then L; one entry when the experiment has one size."""
    sizes = sorted(spec.sizes_for("pinn"), key=lambda s: (s[1], s[0]))
    out = [(tuple(sizes[0]), "smallest")]
    if tuple(sizes[-1]) != tuple(sizes[0]):
        out.append((tuple(sizes[-1]), "largest"))
    return out


def scan_run(spec: ExperimentSpec, init: str, lr: float, L: int, M: int) -> dict[str, Any]:
    """One scan run: PINN-GD, the first SCAN_ITERATIONS steps of lr -> lr_final(lr) over spec.iterations,
    from seed SEED's ``init`` network; its training J (J0 at the start, final, least) and CPU seconds."""
    data = experiment_data(spec)
    n = min(SCAN_ITERATIONS, spec.iterations)
    # the first n steps of the spec's schedule: lr (lr_final / lr)^(k / (N - 1)), k < n
    last = lr * (lr_final(lr) / lr) ** ((n - 1) / max(spec.iterations - 1, 1))
    settings = pinn.Settings(lr=lr, lr_final=last, init=init)
    params0 = initial_network(settings, data.problem.n_in, L, M, SEED)
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        t0 = time.process_time()
        res = pinn.solve(data.problem, data.training, params0, settings, n)
        seconds = time.process_time() - t0
    J = np.asarray(res.history["J"], dtype=float)
    ok = res.status == "ok" and bool(np.isfinite(J[-1]))
    return {"experiment": spec.name, "init": init, "lr": float(lr), "L": int(L), "M": int(M), "seed": SEED,
            "iterations": n, "schedule_iterations": spec.iterations, "data_sha256": data.sha256,
            "lr_final": lr_final(lr), "status": "ok" if ok else "diverged",
            "diverged_at": None if ok else (res.diverged_at if res.diverged_at is not None else n),
            "J0": float(J[0]), "J": float(J[-1]) if ok else math.nan,
            "J_min": float(np.nanmin(np.where(np.isfinite(J), J, np.nan))) if np.isfinite(J).any() else math.nan,
            "cpu_seconds": seconds}


def _key(row: dict[str, Any]) -> tuple:
    return (str(row["experiment"]), str(row["init"]), float(row["lr"]), int(row["L"]), int(row["M"]),
            int(row["seed"]), int(row["iterations"]), int(row["schedule_iterations"]), str(row["data_sha256"]))


def scan(chosen: list[ExperimentSpec], done: pd.DataFrame | None = None,
         tick: Callable[[str], None] | None = None,
         on_row: Callable[[pd.DataFrame], None] | None = None) -> pd.DataFrame:
    """Every scan run of the experiments ``chosen`` (per init, lr and scan size) not already in ``done``
    (an earlier scan.csv); ``on_row`` gets the table after each run (to save it).  Columns :data:`COLUMNS`."""
    rows = [] if done is None or not len(done) else done[COLUMNS].to_dict("records")
    have = {_key(r) for r in rows}
    for spec in chosen:
        sha = experiment_data(spec).sha256
        n = min(SCAN_ITERATIONS, spec.iterations)
        for init in INITS:
            for (L, M), role in scan_sizes(spec):
                for lr in LRS:
                    key = (spec.name, init, float(lr), L, M, SEED, n, spec.iterations, sha)
                    if key in have:
                        continue
                    row = {**scan_run(spec, init, lr, L, M), "role": role}
                    rows.append(row)
                    have.add(key)
                    if on_row is not None:
                        on_row(pd.DataFrame(rows, columns=COLUMNS))
                    if tick is not None:
                        tail = f"J = {row['J']:.3e}" if row["status"] == "ok" else \
                            f"diverged at step {row['diverged_at']}"
                        tick(f"{spec.name} init {init} ({L},{M}) lr {lr:g}: {tail} ({row['cpu_seconds']:.1f} s)")
    return pd.DataFrame(rows, columns=COLUMNS)


def current(df: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """The rows of ``df`` that belong to ``spec`` as it is now (its data set, iterations, grid, sizes)."""
    sha = experiment_data(spec).sha256
    sizes = {s for s, _ in scan_sizes(spec)}
    part = df[(df.experiment == spec.name) & (df.data_sha256 == sha) & (df.seed == SEED)
              & (df.iterations == min(SCAN_ITERATIONS, spec.iterations))
              & (df.schedule_iterations == spec.iterations) & df.lr.isin(LRS)]
    return part[[(int(L), int(M)) in sizes for L, M in zip(part.L, part.M)]]


def choose(rows: pd.DataFrame) -> StepChoice:
    """The rule on one (experiment, init)'s scan rows (columns lr, M, L, status, J; any other column, a
    test error included, is not read): among the lr whose runs at every scanned size did not diverge, the
    lowest final J at the smallest size (the least M, then L); ties (relative TIE_RTOL) to the smaller lr.
    :class:`NoStableStep` when no lr is admissible."""
    M0 = int(rows.M.min())
    L0 = int(rows[rows.M == M0].L.min())
    small = rows[(rows.M == M0) & (rows.L == L0)]
    bad = set(rows[(rows.status != "ok") | ~np.isfinite(rows.J.astype(float))].lr.astype(float))
    good = sorted((float(r.lr), float(r.J)) for r in small.itertuples()
                  if float(r.lr) not in bad and r.status == "ok" and math.isfinite(float(r.J)))
    if not good:
        tried = ", ".join(f"{v:g}" for v in sorted(set(rows.lr.astype(float))))
        raise NoStableStep(f"every lr diverged (tried {tried})")
    least = min(J for _, J in good)
    lr, J = next((lr, J) for lr, J in good if J <= least + TIE_RTOL * abs(least))
    return StepChoice(lr, J, f"lr = {lr:g} (lr_final {lr_final(lr):g}): the lowest training J, {J:.4e}, "
                             f"of {len(good)} admissible lr")


def choices(df: pd.DataFrame, chosen: list[ExperimentSpec]) -> dict[tuple[str, str], StepChoice]:
    """(experiment, init) -> its :class:`StepChoice`; :class:`NoStableStep` naming the first one without
    an admissible lr, or an (experiment, init) whose scan is incomplete."""
    out = {}
    for spec in chosen:
        rows = current(df, spec)
        for init in INITS:
            part = rows[rows.init == init]
            want = len(LRS) * len(scan_sizes(spec))
            if len(part) != want:
                raise NoStableStep(f"{spec.name}, init {init}: {len(part)} of {want} scan runs in the table")
            try:
                out[(spec.name, init)] = choose(part)
            except NoStableStep as e:
                raise NoStableStep(f"{spec.name}, init {init}: {e}; the rule gives no PINN step "
                                   "(nothing written to the experiments file)") from None
    return out


def is_twin(name: str, experiments: dict[str, Any]) -> bool:
    """``name`` is the initialisation twin of an experiment of ``experiments``."""
    return name.endswith(TWIN_SUFFIX) and name[:-len(TWIN_SUFFIX)] in experiments


def base_experiments(experiments: dict[str, Any]) -> dict[str, Any]:
    """The experiments of a file without their twins (the kappa study's experiments)."""
    return {k: v for k, v in experiments.items() if not is_twin(k, experiments)}


def with_steps(doc: dict[str, Any], steps: dict[tuple[str, str], StepChoice]) -> dict[str, Any]:
    """The experiments file ``doc`` (problems:, experiments:) with each base experiment's pinn at its
    paper-init step and, after it, its twin <name>-torch: its network solvers at ``init: torch`` (PINN at
    the torch step), no rfm or poly.  An earlier twin is replaced."""
    experiments: dict[str, Any] = {}
    for name, block in base_experiments(doc.get("experiments") or {}).items():
        solvers = {k: dict(v or {}) for k, v in (block.get("solvers") or {}).items()}
        if "pinn" in solvers and (name, "paper") in steps:
            lr = steps[(name, "paper")].lr
            solvers["pinn"].update(lr=lr, lr_final=lr_final(lr))
        experiments[name] = {**block, "solvers": solvers}
        if (name, "torch") not in steps:
            continue
        twin = {k: {**v, "init": "torch"} for k, v in solvers.items() if k in NETWORK_SOLVERS}
        if "pinn" in twin:
            lr = steps[(name, "torch")].lr
            twin["pinn"].update(lr=lr, lr_final=lr_final(lr))
        experiments[name + TWIN_SUFFIX] = {**{k: v for k, v in block.items() if k != "solvers"}, "solvers": twin}
    return {**doc, "experiments": experiments}


def header(text: str, command: str) -> str:
    """The experiments file's leading comment: the kappa study's lines (an earlier pinn-step line dropped)
    and one naming ``command``."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if "lysep study pinn-step" not in line and not line.startswith("#   "):
            lines.append(line)
    lines.append(f"# PINN's lr per (experiment, init) and the {TWIN_SUFFIX} twins (init: torch): `{command}`")
    lines.append("#   (lysep_cli/reports/pinn_step.py, docs/harder.md); after a rerun of the kappa study, rerun it.")
    return "\n".join(lines) + "\n"


def markdown(df: pd.DataFrame, chosen: list[ExperimentSpec], steps: dict[tuple[str, str], StepChoice]) -> str:
    """pinn-step.md: the rule; per (experiment, init) every lr's final training J at each scanned size and
    the choice; the scan's CPU seconds."""
    from tabulate import tabulate

    parts = ["# PINN's step per problem and initialisation (`lysep study pinn-step`)\n",
             f"Rule, fixed before it was run (docs/harder.md): PINN-GD with the experiment's schedule lr -> "
             f"lr_final = {RATIO:g} lr over its iterations, lr in {', '.join(f'{v:g}' for v in LRS)}; seed {SEED}; "
             f"the schedule's first {SCAN_ITERATIONS} steps at PINN's smallest size and at its largest. An lr is "
             "admissible when neither run diverged (a non-finite J); the chosen lr is the admissible one with "
             f"the lowest final training J at the smallest size (J within a relative {TIE_RTOL:g} is a tie: the "
             "smaller lr). Training loss only: the scan never evaluates the test set. J0: J of the initial "
             "network; 'div. k': a non-finite J at step k.\n"]
    total = 0.0
    for spec in chosen:
        rows = current(df, spec)
        total += float(rows.cpu_seconds.sum())
        for init in INITS:
            part = rows[rows.init == init]
            sizes = scan_sizes(spec)
            table = []
            for lr in LRS:
                cells = []
                for (L, M), _ in sizes:
                    r = part[(part.lr == lr) & (part.L == L) & (part.M == M)]
                    if not len(r):
                        cells.append("")
                        continue
                    r = r.iloc[0]
                    cells.append(f"{r.J:.4e}" if r.status == "ok" else f"div. {int(r.diverged_at)}")
                step = steps.get((spec.name, init))
                table.append([f"{lr:g}", f"{lr_final(lr):g}", *cells,
                              "←" if step is not None and step.lr == lr else ""])
            J0 = ", ".join(f"({L},{M}) {part[(part.L == L) & (part.M == M)].J0.iloc[0]:.4e}"
                           for (L, M), _ in sizes if len(part[(part.L == L) & (part.M == M)]))
            heads = ["lr", "lr_final", *[f"J ({L},{M}), {role}" for (L, M), role in sizes], "chosen"]
            step = steps.get((spec.name, init))
            name = spec.name if init == "paper" else spec.name + TWIN_SUFFIX
            parts.append(f"## {name} (init {init})\n\nJ0: {J0}; CPU seconds of these runs: "
                         f"{part.cpu_seconds.sum():.1f}.\n\n"
                         + tabulate(table, headers=heads, tablefmt="github", disable_numparse=True)
                         + f"\n\n**{step.verdict if step is not None else 'no step chosen'}.**\n")
    parts.append(f"Total CPU seconds of the scan: {total:.0f} ({total / 60:.1f} CPU minutes; one BLAS thread).\n")
    return "\n".join(parts)


def read_scan(out: Path) -> pd.DataFrame | None:
    """OUT/study-pinn-step/scan.csv of an earlier scan, None when absent."""
    path = out / "study-pinn-step" / "scan.csv"
    return pd.read_csv(path) if path.is_file() else None


def write_scan(df: pd.DataFrame, out: Path) -> Path:
    """OUT/study-pinn-step/scan.csv (atomically)."""
    (out / "study-pinn-step").mkdir(parents=True, exist_ok=True)
    return write_text(out / "study-pinn-step" / "scan.csv", df[COLUMNS].to_csv(index=False))


def write_study(df: pd.DataFrame, chosen: list[ExperimentSpec], out: Path, command: str) -> list[Path]:
    """The choices from the scan ``df`` (:class:`NoStableStep` before anything is written when one is
    missing), then OUT/study-pinn-step/scan.csv, pinn-step.md and OUT/experiments.yaml rewritten with the
    steps and the twins (each atomically)."""
    steps = choices(df, chosen)
    path = out / "experiments.yaml"
    text = path.read_text()
    doc = with_steps(yaml.safe_load(text) or {}, steps)
    return [write_scan(df, out),
            write_text(out / "study-pinn-step" / "pinn-step.md", markdown(df, chosen, steps)),
            write_text(path, header(text, command) + dump_yaml(doc))]


# ---------------------------------------------------------------------------------------------------------
# The second rule (issue 54; docs/varpro.md, "PINN-GD's step, fairly chosen"), stated before any rerun.  The
# rule above stays as it was, with its scan and verdict; this one is kept beside it.
#
#   1. The reference step eta_0 = J(theta_0) / ||grad J(theta_0)||^2 of seed SEED's initial network at PINN's
#      smallest size: the step that would zero J on its linear model.  Scaling the residual by c scales J and
#      grad J by c^2, eta_0 by 1 / c^2 (and PINN-GD's whole path is the same at lr / c^2): the rule is
#      invariant to the loss's scale.
#   2. The grid lr = eta_0 * 10^(k/2), k = K_FIRST, K_FIRST + 1, ..., climbed until a step diverges within the
#      schedule's first SCAN_ITERATIONS steps at the smallest or the largest size: the grid's largest step
#      diverges (GridTooNarrow when none has by K_LAST).
#   3. Admissible: neither scan run diverged.  Best: the admissible lr with the lowest final training J at
#      the smallest size (relative TIE_RTOL ties to the smaller lr), as the first rule.
#   4. Full-length stability: the best lr runs the experiment's whole schedule (its ``iterations``) on the
#      scan's seed at the smallest and the largest size; if either diverges, the next admissible lr down is
#      checked the same way, and so on (NoStableStep when none is left).
# ---------------------------------------------------------------------------------------------------------

#: the grid's exponents: lr = eta_0 10^(k/2), k from K_FIRST up to at most K_LAST
K_FIRST, K_LAST = -8, 16
#: the columns of the second rule's scan rows (the first rule's COLUMNS plus the grid's reference and index)
COLUMNS_V2 = COLUMNS + ["eta0", "k", "full_length"]


class GridTooNarrow(NoStableStep):
    """The grid's largest step did not diverge: the second rule gives no step (its grid is not wide enough)."""


def reference_step(spec: ExperimentSpec, init: str) -> float:
    """eta_0 = J / ||grad J||^2 of seed SEED's ``init`` network at PINN's smallest size (step 1)."""
    data = experiment_data(spec)
    (L, M), _ = scan_sizes(spec)[0]
    params0 = initial_network(pinn.Settings(lr=1.0, init=init), data.problem.n_in, L, M, SEED)
    J, grads = pinn_loss_and_grad(params0, data.training.Z, data.training.coef, data.training.Y)
    g2 = sum(float(np.sum(gW * gW) + np.sum(gb * gb)) for gW, gb in grads)
    return J / g2


def grid_lr(eta0: float, k: int) -> float:
    """The k-th step of the second rule's grid, eta_0 10^(k/2) (12 significant digits)."""
    return float(f"{eta0 * 10 ** (k / 2):.12g}")


def full_run(spec: ExperimentSpec, init: str, lr: float, L: int, M: int) -> bool:
    """Step 4: PINN-GD over the experiment's whole schedule lr -> lr_final(lr), seed SEED; True when it did
    not diverge."""
    data = experiment_data(spec)
    settings = pinn.Settings(lr=lr, lr_final=lr_final(lr), init=init)
    params0 = initial_network(settings, data.problem.n_in, L, M, SEED)
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        res = pinn.solve(data.problem, data.training, params0, settings, spec.iterations)
    return res.status == "ok" and bool(np.isfinite(res.history["J"][-1]))


def scan_v2(spec: ExperimentSpec, init: str) -> pd.DataFrame:
    """Steps 1-2: the grid climbed from K_FIRST until a scan run diverges; rows COLUMNS_V2 (full_length empty).
    :class:`GridTooNarrow` when no step up to K_LAST diverged."""
    eta0 = reference_step(spec, init)
    rows = []
    for k in range(K_FIRST, K_LAST + 1):
        lr = grid_lr(eta0, k)
        runs = [{**scan_run(spec, init, lr, L, M), "role": role, "eta0": eta0, "k": k, "full_length": None}
                for (L, M), role in scan_sizes(spec)]
        rows += runs
        if any(r["status"] != "ok" for r in runs):
            return pd.DataFrame(rows, columns=COLUMNS_V2)
    raise GridTooNarrow(f"{spec.name}, init {init}: no step up to {grid_lr(eta0, K_LAST):g} (eta_0 10^{K_LAST / 2:g}) "
                        "diverged: the grid is not wide enough")


def choose_v2(rows: pd.DataFrame, stable: Callable[[float], bool]) -> StepChoice:
    """Steps 3-4 on one (experiment, init)'s scan rows (columns lr, M, L, status, J; nothing else is read):
    the first rule's best admissible lr, then, while ``stable(lr)`` (the full-length runs) is False, the next
    admissible lr down.  :class:`GridTooNarrow` when the grid's largest step did not diverge,
    :class:`NoStableStep` when no admissible lr is stable over the full length."""
    if not (rows.status != "ok").any():
        raise GridTooNarrow("the grid's largest step did not diverge: the grid is not wide enough")
    best = choose(rows)
    M0 = int(rows.M.min())
    small = rows[(rows.M == M0) & (rows.L == int(rows[rows.M == M0].L.min()))]
    bad = set(rows[rows.status != "ok"].lr.astype(float))
    down = sorted((float(lr) for lr in small.lr if float(lr) not in bad and float(lr) <= best.lr), reverse=True)
    unstable = []
    for lr in down:
        if stable(lr):
            J = float(small[small.lr == lr].J.iloc[0])
            note = f"; {', '.join(f'{v:g}' for v in unstable)} diverged over the full length" if unstable else ""
            return StepChoice(lr, J, f"lr = {lr:g} (lr_final {lr_final(lr):g}): the lowest training J of the "
                                     f"admissible steps that stay finite over the full schedule{note}")
        unstable.append(lr)
    raise NoStableStep(f"every admissible lr up to {best.lr:g} diverged over the full schedule")


def step_v2(spec: ExperimentSpec, init: str) -> tuple[StepChoice, pd.DataFrame]:
    """The second rule end to end for one (experiment, init): its choice and its scan rows (full_length filled
    for the lr checked over the full schedule)."""
    rows = scan_v2(spec, init)
    sizes = scan_sizes(spec)
    checked: dict[float, bool] = {}

    def stable(lr: float) -> bool:
        checked[lr] = all(full_run(spec, init, lr, L, M) for (L, M), _ in sizes)
        return checked[lr]

    choice = choose_v2(rows, stable)
    rows["full_length"] = [("ok" if checked[float(lr)] else "diverged") if float(lr) in checked else None
                           for lr in rows.lr]
    return choice, rows
