"""The harder suite's answer (issue 49 item 4, ``lysep study harder-summary``), computed from the records.

Per problem X of the suite's experiments file (an experiment whose name does not end in ``-torch``; its
twin ``X-torch`` holds the same problem's network solvers under nn.Linear's initialisation) and per
(solver, init, size) a :class:`Cell`: its runs, those that did not finish (diverged, counted apart), the
mean ± sample std of the final J and the test ℓ2 over the finished runs, and the mean CPU seconds per run
over every run (:attr:`RunRecord.compute_seconds`: ``diagnostics.cpu_seconds``, else the wall seconds).

The rule of the answer (docs/harder.md, "The answer's rule"), per problem and per init:

- a cell is *usable* when more than half of its runs finished; an unusable cell's mean counts as +inf;
- a solver's **chosen size** is its usable cell of the lowest mean training J (never the test error);
  poly and rfm (one cell each in the suite) are chosen the same way; variable projection's (``varpro-*``,
  issue 54, docs/varpro.md) by its lowest mean **held-out** J (the PINN loss of its saved weights at the test
  points: :attr:`Cell.J_held`; lysep_cli/reports/held_out.py), never its training J;
- (a) LySep against PINN, same init, size by size: at how many of the sizes both ran LySep's mean ℓ2 is
  the lower, and its mean J;
- (b) LySep against rfm and poly at equal CPU: LySep's chosen size sets a budget c (its mean CPU seconds);
  among each baseline's usable cells with mean CPU ≤ c the one of lowest mean J; LySep beats it when its
  mean ℓ2 is lower; the ratio c / the baseline's seconds is given (the one-solve baselines cost less);
- (c) the best solver overall: of every (solver, init)'s chosen size, the lowest median ℓ2 over its runs (a
  run that did not finish counts as +inf), with its mean CPU seconds;
- whether the torch init changes (a), (b) or (c).

Only the comparison of the chosen cells reads the test error, never the choice of a cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from lysep_cli.reports.selection import display_name, pm, sample_std, sci, solver_key
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.schema import RunRecord

TWIN = "-torch"
INITS = ("paper", "torch")
ONE_SOLVE = ("rfm", "poly")
#: variable projection's three methods (docs/varpro.md): chosen by the held-out residual, not training J
VARPRO = ("varpro-lm", "varpro-lbfgs", "varpro-gd")
NOT_RUN = "not run yet"


@dataclass(frozen=True)
class Cell:
    """One (solver, init, L, M) of a problem: ``runs`` records, ``finished`` of them with a finite J and ℓ2;
    J, l2: (mean, sample std) over the finished runs (NaN when none); ``l2_median`` over every run, a run that
    did not finish counted as +inf; ``cpu``: mean CPU seconds per run over every run; ``J_start``: mean initial J
    (the first of each finished run's J history; NaN without histories); ``J_held``: mean held-out J over the
    finished runs (varpro's cells; NaN for the others); ``move``: the median over the runs of the largest
    relative move ||W_l - W_l^0|| / ||W_l^0|| of a hidden layer (NaN where the records do not hold it)."""

    solver: str
    init: str
    L: int
    M: int
    runs: int
    finished: int
    J: tuple[float, float]
    l2: tuple[float, float]
    l2_median: float
    cpu: float
    J_start: float = math.nan
    J_held: float = math.nan
    move: float = math.nan

    @property
    def stayed(self) -> bool:
        """Its mean final J within 1 % of its mean initial J (``J_start``, the histories' first J): the
        training left the network where it started."""
        return self.usable and self.J[0] >= 0.99 * self.J_start

    @property
    def usable(self) -> bool:
        """More than half of its runs finished."""
        return 2 * self.finished > self.runs

    @property
    def key_J(self) -> float:
        """Mean J where usable, else +inf: what the choice of a size compares."""
        return self.J[0] if self.usable else math.inf

    @property
    def key_pick(self) -> float:
        """What the choice of a cell compares: varpro's mean held-out J, every other solver's mean training J;
        +inf where unusable (or, for varpro, where no held-out J could be computed)."""
        key = self.J_held if self.solver in VARPRO else self.J[0]
        return key if self.usable and math.isfinite(key) else math.inf

    @property
    def key_l2(self) -> float:
        """Mean ℓ2 where usable, else +inf: what verdicts (a) and (b) compare."""
        return self.l2[0] if self.usable else math.inf

    @property
    def name(self) -> str:
        """"LySep (3,10)", "LySep (torch init) (3,10)"."""
        return f"{series_name(self.solver, self.init)} ({self.L},{self.M})"


def series_name(solver: str, init: str) -> str:
    """A solver's display name, with " (torch init)" under nn.Linear's initialisation."""
    return display_name(solver) + (" (torch init)" if init == "torch" else "")


def _finished(r: RunRecord) -> bool:
    J, l2 = r.final.J, r.final.l2
    return bool(r.ok) and J is not None and l2 is not None and math.isfinite(J) and math.isfinite(l2)


def hidden_move(r: RunRecord) -> float:
    """The largest relative move of a hidden layer's weights in a run (``diagnostics.move_W<l>``, LySep's and
    varpro's keys); NaN when the record holds none."""
    moves = [float(v) for k, v in (r.diagnostics or {}).items() if k.startswith("move_W") and v is not None]
    return max(moves) if moves else math.nan


def cell_of(records: list[RunRecord], solver: str, init: str,
            held: Callable[[RunRecord], float] | None = None) -> Cell:
    """The :class:`Cell` of ``records`` (one solver, init and size; at least one record); ``held``: a run's
    held-out J, read for varpro's cells only."""
    done = [r for r in records if _finished(r)]
    J = np.array([r.final.J for r in done], dtype=float)
    l2 = np.array([r.final.l2 for r in done], dtype=float)
    every = np.array([r.final.l2 if _finished(r) else math.inf for r in records], dtype=float)
    cpu = np.array([r.compute_seconds for r in records], dtype=float)
    start = np.array([(r.history.get("J") or [math.nan])[0] for r in done], dtype=float)
    nan = float("nan")
    held_J = np.array([held(r) for r in done], dtype=float) if held is not None and solver in VARPRO else None
    moves = np.array([hidden_move(r) for r in records], dtype=float)
    return Cell(solver, init, records[0].L, records[0].M, len(records), len(done),
                (float(J.mean()) if J.size else nan, sample_std(J)),
                (float(l2.mean()) if l2.size else nan, sample_std(l2)),
                float(np.median(every)), float(cpu.mean()), float(start.mean()) if start.size else nan,
                float(held_J.mean()) if held_J is not None and held_J.size else nan,
                float(np.median(moves)) if np.isfinite(moves).all() else nan)


def cells(paper: list[RunRecord], torch: list[RunRecord],
          held: Callable[[RunRecord], float] | None = None) -> list[Cell]:
    """Every (solver, init, size) cell of a problem's records (``paper``: experiment X's, ``torch``: X-torch's),
    ordered by solver (the paper's first), init, size; ``held``: a run's held-out J (varpro's cells)."""
    out = []
    for init, recs in (("paper", paper), ("torch", torch)):
        groups: dict[tuple[str, int, int], list[RunRecord]] = {}
        for r in recs:
            groups.setdefault((r.solver, r.L, r.M), []).append(r)
        out += [cell_of(g, s, init, held) for (s, _, _), g in groups.items()]
    return sorted(out, key=lambda c: (solver_key(c.solver), INITS.index(c.init), c.L, c.M))


def chosen(cs: Iterable[Cell], solver: str, init: str) -> Cell | None:
    """The usable cell of ``solver`` under ``init`` of the lowest :attr:`Cell.key_pick` (mean training J;
    varpro's: mean held-out J; ties: the smaller size); None when it has none.  Never reads the test error."""
    mine = [c for c in cs if c.solver == solver and c.init == init and c.usable]
    return min(mine, key=lambda c: (c.key_pick, c.L, c.M)) if mine else None


@dataclass(frozen=True)
class PinnVerdict:
    """(a): sizes where both LySep and PINN ran, and at how many LySep's mean ℓ2 (J) is the lower."""

    sizes: int
    l2_wins: int
    J_wins: int


def lysep_vs_pinn(cs: list[Cell], init: str) -> PinnVerdict:
    """Verdict (a) under ``init``: size by size, mean ℓ2 and mean J (an unusable cell counts as +inf; a size
    where both are unusable is a win for neither)."""
    by = {(c.solver, c.L, c.M): c for c in cs if c.init == init}
    sizes = sorted({(L, M) for s, L, M in by if s == "lysep"} & {(L, M) for s, L, M in by if s == "pinn"})
    l2 = sum(by[("lysep", *z)].key_l2 < by[("pinn", *z)].key_l2 for z in sizes)
    J = sum(by[("lysep", *z)].key_J < by[("pinn", *z)].key_J for z in sizes)
    return PinnVerdict(len(sizes), int(l2), int(J))


@dataclass(frozen=True)
class CostVerdict:
    """(b) for one baseline: the challenger's chosen cell (LySep's in (b)), the baseline's cell within its CPU
    (None: none fits)."""

    baseline: str
    challenger: Cell
    other: Cell | None

    @property
    def wins(self) -> bool | None:
        """The challenger's mean ℓ2 is below the baseline's (None: no baseline cell within its CPU)."""
        return None if self.other is None else self.challenger.key_l2 < self.other.key_l2

    @property
    def ratio(self) -> float:
        """The challenger's CPU seconds over the baseline's."""
        return math.nan if self.other is None or self.other.cpu <= 0 else self.challenger.cpu / self.other.cpu


def init_of(solver: str, init: str) -> str:
    """The init a solver's cells of a (problem, init) are under: rfm and poly take none (the paper init's runs)."""
    return "paper" if solver in ONE_SOLVE else init


def equal_cpu(cs: list[Cell], init: str, baseline: str, challenger: str = "lysep") -> CostVerdict | None:
    """Verdict (b) under ``init``: the challenger's chosen cell (LySep's) sets the budget, its mean CPU
    seconds; among the baseline's usable cells within it the one of the lowest :attr:`Cell.key_pick` (training
    J; varpro's held-out J).  None without a chosen challenger cell or without any usable baseline cell."""
    mine = chosen(cs, challenger, init_of(challenger, init))
    pool = [c for c in cs if c.solver == baseline and c.init == init_of(baseline, init) and c.usable]
    if mine is None or not pool:
        return None
    fits = [c for c in pool if c.cpu <= mine.cpu]
    return CostVerdict(baseline, mine, min(fits, key=lambda c: (c.key_pick, c.cpu)) if fits else None)


def best_overall(cs: list[Cell], init: str = "paper") -> Cell | None:
    """Verdict (c) under ``init``: of every network solver's chosen cell under ``init`` and rfm's and poly's
    (paper init: they take none), the lowest median ℓ2 over its runs; None when there is none."""
    picks = [chosen(cs, s, "paper" if s in ONE_SOLVE else init) for s in sorted({c.solver for c in cs})]
    picks = [p for p in picks if p is not None]
    return min(picks, key=lambda c: (c.l2_median, c.cpu)) if picks else None


# ---------------------------------------------------------------------------------------------
# Text.

def problems(specs: list[ExperimentSpec]) -> list[tuple[ExperimentSpec, ExperimentSpec | None]]:
    """(X, its twin X-torch or None) for every experiment X of the file that is not itself a twin."""
    by = {s.name: s for s in specs}
    return [(s, by.get(s.name + TWIN)) for s in specs if not s.name.endswith(TWIN)]


def _pinn_text(v: PinnVerdict) -> str:
    if not v.sizes:
        return "no size with both"
    return f"{v.l2_wins} of {v.sizes} sizes (ℓ2), {v.J_wins} of {v.sizes} (J)"


def _cost_text(v: CostVerdict | None) -> str:
    if v is None:
        return "—"
    if v.other is None:
        return f"no cell within {display_name(v.challenger.solver)}'s {v.challenger.cpu:.3g} s"
    word = "yes" if v.wins else "no"
    return (f"{word}: {sci(v.challenger.key_l2)} vs {sci(v.other.key_l2)} "
            f"({display_name(v.challenger.solver)} costs {_g(v.ratio)}× its CPU)")


def _best_text(c: Cell | None) -> str:
    return "—" if c is None else f"{c.name}: median ℓ2 {sci(c.l2_median)}, {c.cpu:.3g} CPU s"


def verdict_row(name: str, cs: list[Cell], init: str) -> list[str]:
    """One line of the answer: problem, init, (a), (b) rfm, (b) poly, (c)."""
    return [name, init, _pinn_text(lysep_vs_pinn(cs, init)), _cost_text(equal_cpu(cs, init, "rfm")),
            _cost_text(equal_cpu(cs, init, "poly")), _best_text(best_overall(cs, init))]


def _verdict_parts(cs: list[Cell], init: str) -> dict[str, object]:
    """What must agree between the inits for the torch init not to change the verdict."""
    a = lysep_vs_pinn(cs, init)
    parts: dict[str, object] = {"(a) LySep beats PINN at most sizes": bool(a.sizes and 2 * a.l2_wins > a.sizes)}
    for s in ONE_SOLVE:
        v = equal_cpu(cs, init, s)
        parts[f"(b) LySep beats {s}"] = None if v is None else v.wins
    best = best_overall(cs, init)
    parts["(c) best solver"] = None if best is None else display_name(best.solver)
    return parts


def changes(cs: list[Cell]) -> str:
    """Whether the torch init changes the verdict: (a) a majority of sizes, (b) each baseline, (c) the best
    solver; "yes (...)" names what changed, paper init → torch init."""
    if not any(c.init == "torch" for c in cs):
        return "torch twin not run yet"
    p, t = _verdict_parts(cs, "paper"), _verdict_parts(cs, "torch")
    moved = [f"{k}: {_word(p[k])} → {_word(t[k])}" for k in p if p[k] != t[k]]
    return f"yes ({'; '.join(moved)})" if moved else "no"


def _word(x: object) -> str:
    return {True: "yes", False: "no", None: "—"}.get(x, str(x)) if isinstance(x, (bool, type(None))) else str(x)


HEADER = ["problem", "init", "(a) LySep's mean beats PINN's at", "(b) beats rfm at equal CPU?",
          "(b) beats poly at equal CPU?", "(c) best (chosen size by J, varpro's by held-out J; lowest median ℓ2)"]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


@dataclass(frozen=True)
class Addenda:
    """What the answer gains from outside this module: variable projection's part
    (lysep_cli/reports/harder_varpro.py) and PINN-GD under the second step rule (:func:`pinn_step2_addenda`).
    ``after_tally``: lines after the tally (answer and brief); ``answer``: text after answer.md's block;
    ``problems``: problem -> text after its PROBLEM.md; ``column``: (header, problem -> cell) a column of the
    brief; ``brief``: text after the brief's note (README)."""

    after_tally: tuple[str, ...] = ()
    answer: str = ""
    problems: dict[str, str] = field(default_factory=dict)
    column: tuple[str, dict[str, str]] | None = None
    brief: str = ""

    def __add__(self, other: "Addenda") -> "Addenda":
        """Both addenda: texts concatenated (self's first), the column of whichever has one (self's first)."""
        return Addenda(self.after_tally + other.after_tally, self.answer + other.answer,
                       {n: self.problems.get(n, "") + other.problems.get(n, "")
                        for n in {**self.problems, **other.problems}},
                       self.column if self.column is not None else other.column, self.brief + other.brief)


# ---------------------------------------------------------------------------------------------
# PINN-GD under the second step rule (docs/varpro.md, "PINN-GD's step, fairly chosen"): its reruns live in a
# results directory of their own; verdict (a) recomputed with them, beside the first rule's (never replacing it).

STEP2 = "PINN-GD under the second step rule (docs/varpro.md)"


def with_pinn(by_problem: dict[str, list[Cell]], pinn: dict[str, list[Cell]]) -> dict[str, list[Cell]]:
    """Each problem's cells with PINN-GD's replaced by ``pinn[problem]`` (the second step rule's cells)."""
    return {n: [c for c in cs if c.solver != "pinn"] + pinn.get(n, []) for n, cs in by_problem.items()}


def step2_pinn_cells(specs: list[ExperimentSpec], records_of: Callable[[str], list[RunRecord]],
                     specs2: list[ExperimentSpec],
                     records2_of: Callable[[str], list[RunRecord]]) -> dict[str, list[Cell]]:
    """Problem -> PINN-GD's cells under the second step rule (both inits): the records of ``records2_of`` (its
    results directory, experiments ``specs2``); an experiment whose PINN settings the rule left as they were in
    ``specs`` keeps the first rule's records (``records_of``: the same runs); one missing from ``specs2`` (the rule
    refused) has none."""
    two = {s.name: s for s in specs2}

    def pinn_of(spec: ExperimentSpec | None) -> list[RunRecord]:
        if spec is None or spec.name not in two:
            return []
        mine = [r for r in records2_of(spec.name) if r.solver == "pinn"]
        if mine or two[spec.name].solvers.get("pinn") != spec.solvers.get("pinn"):
            return mine
        return [r for r in records_of(spec.name) if r.solver == "pinn"]

    return {x.name: cells(pinn_of(x), pinn_of(t)) for x, t in problems(specs)}


def pair_name(name: str, init: str) -> str:
    return name + (" (torch init)" if init == "torch" else "")


def pinn_step2_addenda(by_problem: dict[str, list[Cell]], pinn: dict[str, list[Cell]] | None,
                       where: str) -> Addenda:
    """Verdict (a) with PINN-GD's second-rule cells ``pinn`` (problem -> its PINN cells, both inits; None: none
    given): a line after the tally (LySep beats PINN-GD in k of n, beside the first rule's count over the same
    pairs, and the pairs without second-rule records) and a table of (a) under both rules."""
    if not pinn or not any(pinn.values()):
        return Addenda(after_tally=(f"{STEP2}: no records ({where}); verdict (a) and the count above are the first "
                                    "rule's.",))
    new = with_pinn(by_problem, pinn)
    have = [(n, i) for n, cs in pinn.items() for i in INITS if any(c.init == i for c in cs)]
    pairs = [(n, i) for n, cs in by_problem.items() for i in INITS if chosen(cs, "lysep", i) is not None]
    both = [p for p in pairs if p in have]
    lacking = [pair_name(n, i) for n, i in pairs if (n, i) not in have]
    line = (f"{STEP2}, its records in {where}: over the {len(both)} (problem, init) pairs with them, "
            f"{pinn_tally([(new[n], i) for n, i in both])}; with the first rule's PINN-GD over the same pairs "
            f"{sum(2 * v.l2_wins > v.sizes for n, i in both if (v := lysep_vs_pinn(by_problem[n], i)).sizes)}"
            + (f"; no second-rule records for {', '.join(lacking)}" if lacking else "") + ".")
    rows = [[n, i, _pinn_text(lysep_vs_pinn(by_problem[n], i)), _pinn_text(lysep_vs_pinn(new[n], i))] for n, i in both]
    table = _table(["problem", "init", "(a) LySep beats PINN-GD at: first step rule", "second step rule"], rows)
    text = "\n".join(["", f"## {STEP2}: verdict (a) under both rules ({where})", "", *table]) + "\n"
    return Addenda(after_tally=(line,), answer=text)


def answer(by_problem: dict[str, list[Cell]], taus: dict[str, list[FixedTau]] | None = None,
           add: Addenda = Addenda()) -> str:
    """The answer block (Markdown): per problem and init the verdicts, "not run yet" for a problem without
    records; then whether the torch init changes the verdict, the tally (and ``add.after_tally``), and
    (``taus``: problem -> its fixed-τ study) LySep as written, one fixed τ, beside the default rule; then
    ``add.answer``."""
    rows = []
    for name, cs in by_problem.items():
        if not cs:
            rows.append([name, "—", NOT_RUN, NOT_RUN, NOT_RUN, NOT_RUN])
            continue
        for init in INITS:
            if any(c.init == init for c in cs):
                rows.append(verdict_row(name, cs, init))
            else:
                rows.append([name, init, NOT_RUN, NOT_RUN, NOT_RUN, NOT_RUN])
    run = [n for n, cs in by_problem.items() if cs]
    lines = _table(HEADER, rows) + [""]
    lines.append("Torch init changes the verdict: " + ("; ".join(f"{n}: {changes(by_problem[n])}" for n in run)
                                                       if run else "no problem run yet") + ".")
    lines.append(tally(by_problem) + identical_note(by_problem))
    lines += add.after_tally
    if taus is not None:
        lines.append("LySep as written (one fixed τ, the best by training J; `lysep study step-size`, paper init): "
                     + "; ".join(f"{n}: {fixed_tau_text(taus.get(n, []))}" for n in by_problem) + ".")
    missing = [n for n, cs in by_problem.items() if not cs]
    lines.append(f"Records of {len(run)} of {len(by_problem)} problems"
                 + (f"; not run yet: {', '.join(missing)}." if missing else "."))
    return "\n".join(lines) + "\n" + add.answer


# ---------------------------------------------------------------------------------------------
# LySep as written: one fixed tau (``lysep study step-size``, RESULTS/X/study-step-size/runs.csv).

@dataclass(frozen=True)
class FixedTau:
    """One size of a problem's fixed-τ study: the best fixed τ as the study itself picks it
    (:func:`lysep_cli.reports.study.best_fixed`: the least mean final training J among the τ none of whose
    runs diverged, ties to the smaller τ), its runs and means, and the default rule's (the study reruns it at
    each seed) beside it; ``seconds``: mean wall seconds per run (fixed, default)."""

    L: int
    M: int
    tau: float
    finished: int
    runs: int
    J: float
    l2: float
    default_J: float
    default_l2: float
    seconds: tuple[float, float]


def fixed_tau(path: Path) -> list[FixedTau]:
    """The study's best fixed τ per size from its runs.csv; [] when there is no such file or no usable τ."""
    from lysep_cli.reports.study import best_fixed, read_runs, summarise as study_summary

    df = read_runs(path)
    if df is None or not len(df):
        return []
    out = []
    for r in best_fixed(study_summary(df)).itertuples():
        if r.best is None or r.backtracking is None:
            continue
        size = df[(df.L == r.L) & (df.M == r.M)]
        wall = (size[(size.rule == "fixed") & (size.tau == r.best_tau)].seconds.mean(),
                size[size.rule != "fixed"].seconds.mean())
        b, d = r.best, r.backtracking
        out.append(FixedTau(int(r.L), int(r.M), float(r.best_tau), int(b.n - b.diverged), int(b.n),
                            float(b.J_mean), float(b.l2_mean), float(d.J_mean), float(d.l2_mean),
                            (float(wall[0]), float(wall[1]))))
    return sorted(out, key=lambda f: (f.L, f.M))


def fixed_tau_text(rows: list[FixedTau]) -> str:
    """"τ = 0 at (3,10): ℓ2 1.21e+00 (default rule 1.21e+00)" per size, "; "-joined; "not run" when none."""
    if not rows:
        return "not run"
    return "; ".join(f"τ = {r.tau:g} at ({r.L},{r.M}): ℓ2 {sci(r.l2)} (default rule {sci(r.default_l2)})"
                     for r in rows)


def _g(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, thousands separated: 4810.2 -> "4,810", 0.7512 -> "0.751"."""
    v = float(f"{x:.{digits}g}")
    return f"{round(v):,}" if abs(v) >= 100 else f"{v:g}"


def _span(xs: list[float], digits: int = 3) -> str:
    """"lo–hi" of the finite values of ``xs`` ("—" when none; one value alone when they are equal)."""
    xs = sorted(x for x in xs if math.isfinite(x))
    if not xs:
        return "—"
    lo, hi = _g(xs[0], digits), _g(xs[-1], digits)
    return lo if lo == hi else f"{lo}–{hi}"


def lysep_pairs(by_problem: dict[str, list[Cell]]) -> list[tuple[list[Cell], str]]:
    """(a problem's cells, init) for every (problem, init) pair with a chosen LySep cell."""
    return [(cs, i) for cs in by_problem.values() for i in INITS if chosen(cs, "lysep", i) is not None]


def pinn_tally(pairs: list[tuple[list[Cell], str]]) -> str:
    """"LySep's mean ℓ2 beats PINN's at most sizes in k (in s of them PINN-GD's mean J ends within 1 % of its
    start at every size, in g it diverges at every size)" over ``pairs``."""
    wins = [(cs, i) for cs, i in pairs if (v := lysep_vs_pinn(cs, i)).sizes and 2 * v.l2_wins > v.sizes]
    pinn = [[c for c in cs if c.solver == "pinn" and c.init == i] for cs, i in wins]
    stayed = sum(1 for p in pinn if any(c.usable for c in p) and all(c.stayed for c in p if c.usable))
    gone = sum(1 for p in pinn if p and not any(c.usable for c in p))
    return (f"LySep's mean ℓ2 beats PINN's at most sizes in {len(wins)} (in {stayed} of them PINN-GD's mean J ends "
            f"within 1 % of its start at every size, in {gone} it diverges at every size)")


def tally(by_problem: dict[str, list[Cell]]) -> str:
    """The answer summed over every (problem, init) pair with LySep records: at how many LySep's mean ℓ2 beats
    PINN's at most sizes; beats rfm and poly at equal CPU (and the span of LySep's CPU over theirs); the span
    of LySep's mean ℓ2 over rfls's at LySep's chosen size (rfls: the closed-form output fit on the same seeded
    hidden layers, same init); and the best solver's count."""
    pairs = lysep_pairs(by_problem)
    if not pairs:
        return "No problem has LySep records yet."
    parts = [f"Over the {len(pairs)} (problem, init) pairs run, {pinn_tally(pairs)}"]
    for s in ONE_SOLVE:
        vs = [v for cs, i in pairs if (v := equal_cpu(cs, i, s)) is not None and v.other is not None]
        parts.append(f"beats {s} at equal CPU in {sum(bool(v.wins) for v in vs)} of {len(vs)} "
                     f"(LySep spends {_span([v.ratio for v in vs])}× its CPU)")
    ratios, every = [], []
    for cs, i in pairs:
        ly = chosen(cs, "lysep", i)
        rfls = {(c.L, c.M): c for c in cs if c.solver == "rfls" and c.init == i and c.usable and c.l2[0] > 0}
        every += [c.key_l2 / rfls[(c.L, c.M)].l2[0] for c in cs
                  if c.solver == "lysep" and c.init == i and c.usable and (c.L, c.M) in rfls]
        if (ly.L, ly.M) in rfls:
            ratios.append(ly.key_l2 / rfls[(ly.L, ly.M)].l2[0])
    parts.append(f"its ℓ2 is {_span(ratios, 2)}× rfls's (the one closed-form output fit on its own seeded "
                 f"layers, same size) in {len(ratios)} at its chosen size ({_span(every, 2)}× over every size)")
    counts: dict[str, int] = {}
    vs_rfm: dict[str, list[float]] = {}
    for cs, i in pairs:
        b = best_overall(cs, i)
        if b is not None:
            name = display_name(b.solver)
            counts[name] = counts.get(name, 0) + 1
            rfm = chosen(cs, "rfm", "paper")
            if b.solver != "rfm" and rfm is not None and rfm.l2_median > 0:
                vs_rfm.setdefault(name, []).append(b.l2_median / rfm.l2_median)
    best = ", ".join(f"{k} in {n}" + (f" (its median ℓ2 {_span(vs_rfm[k], 2)}× rfm's)" if k in vs_rfm else "")
                     for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return "; ".join(parts) + f". Best solver: {best}."


def identical_sizes(cs: list[Cell]) -> list[tuple[int, int]]:
    """The sizes at which the two inits gave the same runs (every solver run under both: the same mean J and
    ℓ2 to the bit): there the two inits draw the same network (M = d: U(±M^-1/2) is nn.Linear's
    U(±fan_in^-1/2)), so the two pairs of that size are one, not two independent trials."""
    by = {(c.solver, c.init, c.L, c.M): c for c in cs}
    sizes: dict[tuple[int, int], bool] = {}
    for (s, i, L, M), c in by.items():
        t = by.get((s, "torch", L, M))
        if i == "paper" and t is not None:
            sizes[(L, M)] = sizes.get((L, M), True) and (c.J, c.l2) == (t.J, t.l2)
    return sorted(z for z, same in sizes.items() if same)


def identical_note(by_problem: dict[str, list[Cell]]) -> str:
    """"Both inits drew the same networks at ..." naming each (problem, size) of :func:`identical_sizes`;
    "" when none."""
    same = [f"{n} ({L},{M})" for n, cs in by_problem.items() for L, M in identical_sizes(cs)]
    return (f" Both inits gave the same runs (the same networks: M = d) at {', '.join(same)}: not independent "
            "there." if same else "")


def _both(texts: list[str]) -> str:
    """One cell for both inits: "no" when they agree, "no / yes" (paper / torch) when not."""
    return texts[0] if len(set(texts)) == 1 else " / ".join(texts)


def brief(by_problem: dict[str, list[Cell]], add: Addenda = Addenda()) -> str:
    """The README block: one line per problem, both inits in one cell ("paper / torch" where they differ).
    LySep's chosen size under the paper's init with its mean ℓ2 and CPU; (a) at how many sizes its mean ℓ2 beats PINN's;
    (b) against rfm and poly at equal CPU, with the baseline's ℓ2; (c) the best of both inits' picks; then
    ``add.column``; the tally, ``add.after_tally`` and ``add.brief`` below."""
    rows = []
    extra = [] if add.column is None else [add.column[0]]
    for name, cs in by_problem.items():
        more = [] if add.column is None else [add.column[1].get(name, "—")]
        if not cs:
            rows.append([name, NOT_RUN, "", "", "", "", *more])
            continue
        inits = [i for i in INITS if any(c.init == i and c.solver == "lysep" for c in cs)]
        ly = chosen(cs, "lysep", "paper")
        ly_text = f"{sci(ly.key_l2)} ({ly.L},{ly.M}), {_g(ly.cpu)} s" if ly else "—"
        a = [lysep_vs_pinn(cs, i) for i in inits]
        a_text = _both([f"{'yes' if 2 * v.l2_wins > v.sizes else 'no'}, {v.l2_wins} of {v.sizes}" if v.sizes
                        else "—" for v in a])
        cost = []
        for s in ONE_SOLVE:
            vs = [equal_cpu(cs, i, s) for i in inits]
            words = _both(["—" if v is None or v.other is None else ("yes" if v.wins else "no") for v in vs])
            other = next((v.other for v in vs if v is not None and v.other is not None), None)
            cost.append(words + (f" ({sci(other.key_l2)}, {other.cpu:.2g} s)" if other is not None else ""))
        bests = [b for b in (best_overall(cs, i) for i in inits) if b is not None]
        best = min(bests, key=lambda c: (c.l2_median, c.cpu)) if bests else None
        best_text = "—" if best is None else f"{best.name}: {sci(best.l2_median)}, {best.cpu:.2g} s"
        rows.append([name, ly_text, a_text, *cost, best_text, *more])
    header = ["problem", "LySep (paper init): mean ℓ2, chosen (L,M), mean CPU s / run",
              "beats PINN (mean ℓ2, sizes)", "beats rfm at equal CPU (rfm: mean ℓ2, s)",
              "beats poly at equal CPU (poly: ℓ2, s)", "best solver: median ℓ2, mean CPU s / run", *extra]
    run = sum(1 for cs in by_problem.values() if cs)
    note = (f"Records of {run} of {len(by_problem)} problems; 5 seeds a cell (poly: one fit); means over the "
            "finished runs (a cell with half or more unfinished counts as +∞), the best solver by its median "
            "(an unfinished run +∞); both inits in one cell, \"paper / torch\" where they differ; chosen sizes by "
            "training J (varpro's by held-out J), never the test error (the rule and every cell: docs/harder.md)."
            + identical_note(by_problem))
    lines = _table(header, rows) + ["", tally(by_problem) + " " + note, *add.after_tally]
    return "\n".join(lines) + "\n" + add.brief


def problem_table(name: str, cs: list[Cell], taus: list[FixedTau] | None = None, extra: str = "") -> str:
    """PROBLEM.md: every (solver, init, size) cell, the chosen sizes and the verdicts; then (``taus``) the
    fixed-τ study's best τ per size beside the default rule; then ``extra``."""
    lines = [f"# {name}: every solver, init and size (lysep study harder-summary)", ""]
    if not cs:
        return "\n".join(lines + [f"{NOT_RUN}: no record of {name}."]) + "\n"
    picks = {(c.solver, c.init) for c in (chosen(cs, s, i) for s in {c.solver for c in cs} for i in INITS) if c}
    rows = []
    for c in cs:
        mark = " ◀" if (c.solver, c.init) in picks and chosen(cs, c.solver, c.init) == c else ""
        rows.append([series_name(c.solver, c.init), f"({c.L},{c.M}){mark}", f"{c.finished}/{c.runs}",
                     str(c.runs - c.finished), pm(*c.J, spaced=True), pm(*c.l2, spaced=True),
                     "—" if not math.isfinite(c.l2_median) else sci(c.l2_median), f"{c.cpu:.3g}"])
    lines += _table(["solver", "(L, M)", "finished", "diverged", "J (finished runs)", "ℓ2 (finished runs)",
                     "median ℓ2 (diverged = ∞)", "mean CPU s / run"], rows)
    lines += ["", "◀: the solver's chosen size (lowest mean training J, varpro's lowest mean held-out J, among its "
              "cells with more than half of its runs finished; never the test error). Means ± sample std over the "
              "finished runs.", ""]
    lines += ["## Verdict", ""] + _table(HEADER, [verdict_row(name, cs, i) for i in INITS
                                                 if any(c.init == i for c in cs)])
    lines += ["", f"Torch init changes the verdict: {changes(cs)}."]
    if taus:
        lines += ["", "## LySep as written: one fixed τ (lysep study step-size, paper init)", ""]
        lines += _table(["(L, M)", "best fixed τ (by training J)", "finished", "J", "ℓ2", "default rule: J",
                         "default rule: ℓ2", "wall s / run (fixed, default)"],
                        [[f"({r.L},{r.M})", f"{r.tau:g}", f"{r.finished}/{r.runs}", sci(r.J), sci(r.l2),
                          sci(r.default_J), sci(r.default_l2), f"{r.seconds[0]:.3g}, {r.seconds[1]:.3g}"]
                         for r in taus])
        lines += ["", "Means over the finished runs; the τ grid and every τ's runs: "
                  f"results/harder/{name}/study-step-size/summary.md."]
    return "\n".join(lines) + "\n" + extra


def summarise(by_problem: dict[str, list[Cell]], out: Path,
              taus: dict[str, list[FixedTau]] | None = None, add: Addenda = Addenda()) -> list[Path]:
    """Write OUT/PROBLEM.md per problem and OUT/answer.md; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, cs in by_problem.items():
        p = out / f"{name}.md"
        p.write_text(problem_table(name, cs, (taus or {}).get(name), add.problems.get(name, "")))
        paths.append(p)
    p = out / "answer.md"
    p.write_text("# The harder suite's answer (lysep study harder-summary; the rule: docs/harder.md)\n\n"
                 + answer(by_problem, taus, add))
    return paths + [p]


def gather(specs: list[ExperimentSpec], records_of,
           held: Callable[[RunRecord], float] | None = None) -> dict[str, list[Cell]]:
    """Problem -> its cells, from ``records_of(experiment name) -> list[RunRecord]``; ``held``: a run's
    held-out J (varpro's cells; lysep_cli/reports/held_out.py)."""
    return {x.name: cells(records_of(x.name), records_of(t.name) if t is not None else [], held)
            for x, t in problems(specs)}


__all__ = ["Cell", "cells", "identical_sizes", "chosen", "lysep_vs_pinn", "equal_cpu", "best_overall", "answer", "brief", "tally", "problem_table",
           "summarise", "gather", "FixedTau", "fixed_tau", "fixed_tau_text", "problems", "changes", "series_name", "NOT_RUN"]
