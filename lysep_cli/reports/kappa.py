"""The difficulty of each family of a suite, fixed from the one-solve baselines alone (``lysep study kappa``).

A family (``families:`` of an experiments file, lysep_cli/specs.py) is one problem with one knob kappa and
a grid of kappa, increasing with the difficulty.  For every kappa of the grid, on the member's training
and test sets:

  poly  at its largest allowed degree (the largest k with P = C(n_in + k, k) <= n_train / 4,
        lysep_cli/solvers/poly.py): J, relative l2 test error, CPU seconds of the solve;
  rfm   at its held-out choice (docs/baselines.md, studies/rfm_study.py): for sigma in RFM_SIGMAS and
        M = share * n_train for share in RFM_WIDTH_SHARES, the fit on the first 80 % of the training points
        and its residual loss J_hold on the other 20 % (seed RFM_SEED); among the (sigma, M) whose J_hold
        is within RFM_TOLERANCE of the least, the smallest M, then the least J_hold.  Then the fit on
        every training point at that (sigma, M): J, l2, CPU seconds.  Never the test error.

The rule (:func:`choose`): the chosen kappa is the smallest of the grid at which poly's test l2 is at or
above THRESHOLD (a NaN l2, a failed solve, counts as above).  A family where poly stays below THRESHOLD
at every kappa ("poly succeeds at every kappa") or is above it at every kappa ("poly fails at every
kappa") is reported as such and gets no kappa.

Output (written atomically): ``OUT/study-kappa/kappa.csv`` (one row per family and kappa,
:data:`COLUMNS`), ``OUT/study-kappa/kappa.md`` (the rule, per family its grid and verdict) and
``OUT/experiments.yaml``: the chosen members as plain problems and experiments (kappa written into the
formulas), rfm at its held-out (sigma, M) and poly at its held-out degree (lysep_cli/reports/poly_degree.py)
at the chosen kappa, for the network runs.
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

from lysep_cli.numerics import polynomial
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.numerics.metrics import relative_l2
from lysep_cli.numerics.network import init_params, pinn_loss
from lysep_cli.reports.poly_degree import COLUMNS as DEGREE_COLUMNS
from lysep_cli.reports.poly_degree import chosen_degree, degree_row, held_out, max_degree
from lysep_cli.reports.selection import sci
from lysep_cli.solvers.poly import fit as poly_fit
from lysep_cli.solvers.rfls import solve_output_layer
from lysep_cli.solvers.rfm import features
from lysep_cli.specs import ExperimentSpec, Family, kappa_text
from lysep_cli.store.atomic import write_text

#: poly fails at a kappa when its relative l2 test error is at or above this (module docstring)
THRESHOLD = 1e-2
#: rfm's frequency scales tried (the paper problems' study tried 1/16 .. 16; harder problems need more)
RFM_SIGMAS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
#: rfm's widths tried, as shares of n_train (below the interpolation threshold of the 80 % fit)
RFM_WIDTH_SHARES = (0.25, 0.5)
#: a (sigma, M) whose held-out residual is within this factor of the least is good enough
RFM_TOLERANCE = 2.0
#: the seed of rfm's features in the study
RFM_SEED = 0
COLUMNS = ["family", "kappa", "experiment", "poly_degree", "poly_P", "poly_J", "poly_l2", "poly_cpu_seconds",
           "rfm_sigma", "rfm_M", "rfm_J_hold", "rfm_J", "rfm_l2", "rfm_cpu_seconds", "poly_fails"]


def _nan(x: Any) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return math.nan
    return x if math.isfinite(x) else math.nan


def poly_at_max_degree(spec: ExperimentSpec) -> dict[str, Any]:
    """poly at the largest degree its rule allows: degree, P, J, l2, CPU seconds (one BLAS thread)."""
    data = experiment_data(spec)
    degree = max_degree(data.problem.n_in, spec.n_train)
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        t0 = time.process_time()
        E, c, J, _ = poly_fit(data.training, degree)
        seconds = time.process_time() - t0
        l2 = relative_l2(data.problem, [(E, c)], data.Z_test)
    return {"poly_degree": degree, "poly_P": int(E.shape[0]), "poly_J": _nan(J), "poly_l2": _nan(l2),
            "poly_cpu_seconds": seconds}


def rfm_widths(n_train: int) -> list[int]:
    """rfm's widths M tried for ``n_train`` training points (:data:`RFM_WIDTH_SHARES`)."""
    return sorted({max(1, int(round(s * n_train))) for s in RFM_WIDTH_SHARES})


def rfm_held_out(spec: ExperimentSpec, sigmas: tuple[float, ...] = RFM_SIGMAS) -> dict[str, Any]:
    """rfm's held-out choice of (sigma, M) (module docstring; ``sigmas``: the scales tried) and its full fit:
    sigma, M, J_hold, J, l2, CPU seconds of the full fit."""
    data = experiment_data(spec)
    n_in = data.problem.n_in
    part, rest = held_out(data.training)
    cells = []
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        for M in rfm_widths(spec.n_train):
            for sigma in sigmas:
                r = solve_output_layer(part, features(init_params(n_in, 2, M, RFM_SEED), sigma), "auto")
                h = _nan(pinn_loss(r.params, rest.Z, rest.coef, rest.Y)) if r.status == "ok" else math.nan
                cells.append((M, sigma, h))
        finite = [h for _, _, h in cells if math.isfinite(h)]
        best = min(finite) if finite else math.nan
        good = [c for c in cells if math.isfinite(c[2]) and c[2] <= RFM_TOLERANCE * best] or cells[:1]
        M, sigma, h = min(good, key=lambda c: (c[0], c[2]))
        t0 = time.process_time()
        r = solve_output_layer(data.training, features(init_params(n_in, 2, M, RFM_SEED), sigma), "auto")
        seconds = time.process_time() - t0
        ok = r.status == "ok"
        l2 = relative_l2(data.problem, r.params, data.Z_test) if ok else math.nan
    return {"rfm_sigma": sigma, "rfm_M": M, "rfm_J_hold": h, "rfm_J": _nan(r.history["J"][-1]) if ok else math.nan,
            "rfm_l2": _nan(l2), "rfm_cpu_seconds": seconds}


def fails(l2: float) -> bool:
    """poly fails at a kappa: l2 at or above THRESHOLD, or not a number (a failed solve)."""
    return not (l2 < THRESHOLD)


@dataclass(frozen=True)
class Choice:
    """A family's verdict: the chosen kappa (None when the rule gives none) and the words for it."""

    kappa: float | None
    verdict: str


def choose(kappas: list[float], poly_l2: list[float]) -> Choice:
    """The rule: the smallest kappa (``kappas`` increasing) whose poly l2 is at or above THRESHOLD; none when
    poly succeeds at every kappa or fails at every kappa (each said so)."""
    over = [fails(v) for v in poly_l2]
    if not any(over):
        return Choice(None, f"poly succeeds at every kappa (l2 < {THRESHOLD:g} up to kappa = "
                            f"{kappa_text(kappas[-1])}): no kappa chosen; the grid is too easy")
    if all(over):
        return Choice(None, f"poly fails at every kappa (l2 >= {THRESHOLD:g} from kappa = "
                            f"{kappa_text(kappas[0])} on): no kappa chosen; the grid starts too hard")
    k = kappas[over.index(True)]
    return Choice(k, f"kappa = {kappa_text(k)}: the smallest with poly's l2 >= {THRESHOLD:g}")


def family_rows(family: Family, specs: dict[str, ExperimentSpec],
                tick: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """The study's rows of one family, one per kappa of its grid (:data:`COLUMNS`)."""
    rows = []
    for kappa in family.kappas:
        spec = specs[family.member(kappa)]
        row = {"family": family.name, "kappa": kappa, "experiment": spec.name,
               **poly_at_max_degree(spec), **rfm_held_out(spec)}
        row["poly_fails"] = fails(row["poly_l2"])
        rows.append(row)
        if tick is not None:
            tick(f"{spec.name}: poly (k = {row['poly_degree']}, P = {row['poly_P']}) l2 = {row['poly_l2']:.3e}; "
                 f"rfm (sigma = {row['rfm_sigma']:g}, M = {row['rfm_M']}) l2 = {row['rfm_l2']:.3e}")
    return rows


def kappa_study(families: dict[str, Family], specs: dict[str, ExperimentSpec],
                tick: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Every family's rows, in file order (:data:`COLUMNS`)."""
    rows = [r for f in families.values() for r in family_rows(f, specs, tick)]
    return pd.DataFrame(rows, columns=COLUMNS)


def merged(done: pd.DataFrame | None, new: pd.DataFrame, families: dict[str, Family]) -> pd.DataFrame:
    """The rows of ``new``, and those of an earlier kappa.csv (``done``) for the other families of the file
    (at their grid of now), in the file's family order: a study of some families keeps the others."""
    keep = []
    if done is not None and len(done) and set(COLUMNS) <= set(done.columns):
        for name, family in families.items():
            old = done[(done.family == name) & done.kappa.isin(family.kappas)]
            if name not in set(new.family) and len(old) == len(family.kappas):
                keep.append(old[COLUMNS])
    order = {name: i for i, name in enumerate(families)}
    df = pd.concat(keep + [new[COLUMNS]], ignore_index=True) if keep else new[COLUMNS].copy()
    return df.sort_values(["family", "kappa"], key=lambda c: c.map(order) if c.name == "family" else c,
                          kind="stable").reset_index(drop=True)


def read_rows(out: Path) -> pd.DataFrame | None:
    """OUT/study-kappa/kappa.csv of an earlier study, None when absent."""
    path = out / "study-kappa" / "kappa.csv"
    return pd.read_csv(path) if path.is_file() else None


def choices(df: pd.DataFrame) -> dict[str, Choice]:
    """family -> its :class:`Choice`, from the study's rows."""
    out = {}
    for name, part in df.groupby("family", sort=False):
        part = part.sort_values("kappa")
        out[str(name)] = choose([float(k) for k in part.kappa], [float(v) for v in part.poly_l2])
    return out


def held_out_degree(spec: ExperimentSpec) -> int:
    """poly's held-out degree (poly_degree.chosen_degree) over every degree 0 .. the largest allowed: the
    degree study's early stop (J falling by less than 1 % over two degrees) is not used, since a hard
    problem's J may stall at low degrees and fall later."""
    top = max_degree(experiment_data(spec).problem.n_in, spec.n_train)
    rows = [degree_row(spec, k) for k in range(top + 1)]
    return chosen_degree(pd.DataFrame(rows, columns=DEGREE_COLUMNS))


def chosen_blocks(families: dict[str, Family], df: pd.DataFrame, specs: dict[str, ExperimentSpec],
                  also: dict[str, list[float]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(problems, experiments) of the chosen members, as the experiments file writes them: rfm at its
    held-out (sigma, M) from the study's row, poly at its held-out degree (poly_degree.chosen_degree).
    ``also``: family -> further kappas of its grid written the same way (members named by hand, ``--also``:
    other problems of the same families, never a change of the rule's choice)."""
    problems: dict[str, Any] = {}
    experiments: dict[str, Any] = {}
    wanted = [(name, choice.kappa) for name, choice in choices(df).items() if choice.kappa is not None]
    wanted += [(name, k) for name, ks in (also or {}).items() for k in ks if (name, k) not in wanted]
    for name, kappa in wanted:
        family = families[name]
        member = family.member(kappa)
        row = df[(df.family == name) & (df.kappa == kappa)].iloc[0]
        spec = specs[member]
        degree = held_out_degree(spec)
        P = polynomial.n_monomials(experiment_data(spec).problem.n_in, degree)
        block = family.experiment_block(kappa)
        solvers = {k: dict(v or {}) for k, v in block["solvers"].items()}
        if "rfm" in solvers:
            solvers["rfm"].update(sigma=float(row.rfm_sigma), sizes=[[2, int(row.rfm_M)]])
        if "poly" in solvers:
            solvers["poly"].update(degree=degree, sizes=[[2, P]])
        problems[member] = family.problem_block(kappa)
        experiments[member] = {"problem": member, **{k: v for k, v in block.items() if k != "problem"},
                               "solvers": solvers}
    return problems, experiments


def also_members(names: list[str], families: dict[str, Family], df: pd.DataFrame) -> dict[str, list[float]]:
    """``--also`` member names (``F-k<kappa>``, kappa on F's grid and in the study's rows) as family -> kappas;
    ValueError with one line naming the first that is not."""
    by_member = {f.member(k): (f.name, k) for f in families.values() for k in f.kappas}
    studied = {(str(r.family), float(r.kappa)) for r in df.itertuples()}
    out: dict[str, list[float]] = {}
    for n in names:
        if n not in by_member:
            raise ValueError(f"--also {n!r}: not a member of a family's grid (e.g. "
                             f"{next(iter(by_member), 'osc-ball-2d-k16')})")
        name, k = by_member[n]
        if (name, float(k)) not in studied:
            raise ValueError(f"--also {n!r}: family {name} has no study rows at kappa {kappa_text(k)} here "
                             f"(name the family to study it)")
        out.setdefault(name, []).append(k)
    return out


def chosen_yaml(problems: dict[str, Any], experiments: dict[str, Any], command: str) -> str:
    """The chosen members as an experiments file (a header naming the command that wrote it)."""
    head = (f"# Written by `{command}` (lysep_cli/reports/kappa.py); do not edit: rerun it.\n"
            f"# The families' members at the kappa the rule chose (poly's l2 >= {THRESHOLD:g}),\n"
            "# rfm at its held-out (sigma, M), poly at its held-out degree (docs/harder.md).\n")
    if "--also" in command:
        head += "# Members after the chosen ones were named by hand (--also), not chosen by the rule.\n"
    if not experiments:
        return head + "# No family was given a kappa.\n"
    return head + dump_yaml({"problems": problems, "experiments": experiments})


def dump_yaml(doc: dict[str, Any]) -> str:
    """An experiments file's body as this study writes it (flow style for short lists, no aliases)."""
    return yaml.dump(doc, Dumper=_PlainDumper, sort_keys=False, default_flow_style=None, width=200)


class _PlainDumper(yaml.SafeDumper):
    """YAML's safe dumper writing a value shared by two experiments twice (no &anchor / *alias)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def markdown(df: pd.DataFrame, families: dict[str, Family]) -> str:
    """kappa.md: the rule, then per family its formulas, grid, rows and verdict."""
    from tabulate import tabulate

    verdicts = choices(df)
    parts = ["# The difficulty of each family (`lysep study kappa`)\n",
             f"Rule, fixed before any network runs: the chosen kappa of a family is the smallest of its grid at "
             f"which poly at its largest allowed degree (P <= n_train / 4) has relative l2 test error >= "
             f"{THRESHOLD:g} (a failed solve counts as >=). A family where poly stays below it at every kappa, or "
             "is above it at every kappa, gets no kappa and is said so. rfm: its held-out rule (sigma in "
             f"{', '.join(f'{s:g}' for s in RFM_SIGMAS)}; M = {', '.join(f'{s:g}' for s in RFM_WIDTH_SHARES)} x "
             f"n_train; fit on 80 % of the training points, the least residual on the other 20 % within "
             f"{RFM_TOLERANCE:g}x, then the smallest M; seed {RFM_SEED}). CPU s: the one solve on every training "
             "point, one BLAS thread. Never the test error, except in the rule's poly l2.\n"]
    for name, family in families.items():
        part = df[df.family == name].sort_values("kappa")
        if not len(part):
            continue
        p = family.problem
        v = verdicts[name]
        rows = [[kappa_text(r.kappa), int(r.poly_degree), int(r.poly_P), sci(r.poly_J), sci(r.poly_l2),
                 f"{r.poly_cpu_seconds:.2f}", f"{r.rfm_sigma:g}", int(r.rfm_M), sci(r.rfm_J), sci(r.rfm_l2),
                 f"{r.rfm_cpu_seconds:.2f}", "←" if v.kappa is not None and r.kappa == v.kappa else ""]
                for r in part.itertuples()]
        table = tabulate(rows, headers=["kappa", "poly k", "P", "poly J", "poly l2", "poly CPU s", "rfm sigma",
                                        "rfm M", "rfm J", "rfm l2", "rfm CPU s", "chosen"],
                         tablefmt="github", disable_numparse=True)
        formulas = ", ".join(f"{k} = `{p[k]}`" for k in ("c", "u", "f") if k in p)
        parts.append(f"## {name}\n\n{p.get('pde')}, d = {p.get('d')}, {p.get('domain', 'ball')}; {formulas}; "
                     f"kappa grid {', '.join(kappa_text(k) for k in family.kappas)}.\n\n{table}\n\n"
                     f"**{v.verdict}.**\n")
    return "\n".join(parts)


def write_study(df: pd.DataFrame, families: dict[str, Family], specs: dict[str, ExperimentSpec], out: Path,
                command: str, also: dict[str, list[float]] | None = None) -> list[Path]:
    """OUT/study-kappa/kappa.csv, kappa.md and OUT/experiments.yaml (each atomically; ``families``: those
    of the file, the rows of ``df`` name some or all of them; ``also``: chosen_blocks')."""
    study = out / "study-kappa"
    study.mkdir(parents=True, exist_ok=True)
    problems, experiments = chosen_blocks(families, df, specs, also)
    return [write_text(study / "kappa.csv", df.to_csv(index=False)),
            write_text(study / "kappa.md", markdown(df, families)),
            write_text(out / "experiments.yaml", chosen_yaml(problems, experiments, command))]
