"""Variable projection in the harder suite's answer (issue 54 item 4; docs/harder.md, "Variable projection in
the answer"), computed from the records like the rest of ``lysep study harder-summary``.

Per problem and init:

- each method's (varpro-lm, varpro-lbfgs, varpro-gd) **chosen size**: its usable cell of the lowest mean
  **held-out** J (:attr:`Cell.J_held`: the PINN loss of the saved weights at the test points), never its
  training J (docs/varpro.md, "Choosing"); its median ℓ2 and mean CPU seconds per run there, and how far its
  hidden layers moved (:attr:`Cell.move`);
- varpro's **best method**: of the three chosen cells, the lowest mean held-out J;
- **the verdict**: does it beat LySep, PINN-GD, pinn-lbfgs, rfm and poly at equal CPU?  The comparison (b)
  uses for LySep against rfm and poly (:func:`harder_summary.equal_cpu`), varpro's best as the challenger:
  its chosen cell's mean CPU seconds set the budget, the opponent's usable cell of the lowest training J
  within it is compared, varpro wins when its mean ℓ2 is the lower.  When no cell of the opponent fits (all
  cost more), the roles swap: the opponent's chosen cell sets the budget and varpro's best within it (its
  chosen cell, the cheaper) is compared; the ratio of CPU seconds is printed either way.

The plain-words answer (:func:`answer_sentence`): separating the output layer "pays" in a (problem, init)
pair when variable projection beats all five there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from lysep_cli.reports.harder_summary import (INITS, VARPRO, Addenda, Cell, _g, _span, _table, chosen,
                                             equal_cpu, init_of, pair_name)
from lysep_cli.reports.selection import display_name, sci
from lysep_cli.solvers import seeds_of
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.schema import RunRecord

#: what variable projection is set against, at equal CPU
OPPONENTS = ("lysep", "pinn", "pinn-lbfgs", "rfm", "poly")
#: their names in the text (display names, PINN's with its method)
NAMES = {"pinn": "PINN-GD"}
#: where the numbers behind the plain-words answer are
SOURCE = "results/harder/summary/answer.md"


def opponent_name(solver: str) -> str:
    return NAMES.get(solver, display_name(solver))


def method_cells(cs: list[Cell], init: str) -> list[Cell]:
    """Each varpro method's chosen cell under ``init`` (lowest mean held-out J), those that have one."""
    return [c for c in (chosen(cs, m, init) for m in VARPRO) if c is not None]


def best(cs: list[Cell], init: str) -> Cell | None:
    """varpro's best method under ``init``: of its methods' chosen cells, the lowest mean held-out J."""
    picks = [c for c in method_cells(cs, init) if math.isfinite(c.key_pick)]
    return min(picks, key=lambda c: (c.key_pick, c.cpu)) if picks else None


@dataclass(frozen=True)
class Versus:
    """varpro's best against one opponent at equal CPU: the two cells compared and whose chosen cell set the
    budget (``"varpro"`` or the opponent's name)."""

    opponent: str
    varpro: Cell
    other: Cell
    budget: str

    @property
    def wins(self) -> bool:
        return self.varpro.key_l2 < self.other.key_l2

    @property
    def ratio(self) -> float:
        """varpro's CPU seconds over the opponent's."""
        return math.nan if self.other.cpu <= 0 else self.varpro.cpu / self.other.cpu


def versus(cs: list[Cell], init: str, opponent: str) -> Versus | None:
    """The equal-CPU comparison of varpro's best with ``opponent`` under ``init`` (module docstring); None
    without a varpro pick or without a usable opponent cell."""
    mine = best(cs, init)
    if mine is None:
        return None
    v = equal_cpu(cs, init, opponent, challenger=mine.solver)
    if v is None:
        return None
    if v.other is not None:
        return Versus(opponent, mine, v.other, "varpro")
    # every opponent cell costs more than varpro's pick: the opponent's chosen cell sets the budget, and
    # varpro's best within it is its pick (the lowest held-out J of all, and cheaper)
    return Versus(opponent, mine, chosen(cs, opponent, init_of(opponent, init)), opponent)


def _move_text(c: Cell) -> str:
    return "—" if not math.isfinite(c.move) else f"{c.move:.2g}"


def method_row(name: str, c: Cell) -> list[str]:
    """problem, init, method, chosen size, held-out J, training J, median ℓ2, CPU s, hidden move."""
    return [name, c.init, display_name(c.solver), f"({c.L},{c.M})", f"{c.finished}/{c.runs}", sci(c.J_held),
            sci(c.J[0]), sci(c.l2_median), f"{c.cpu:.3g}", _move_text(c)]


METHOD_HEADER = ["problem", "init", "method", "chosen (L,M): lowest held-out J", "finished", "held-out J (mean)",
                 "training J (mean)", "median ℓ2", "mean CPU s / run", "hidden layers moved (median, largest W_l)"]
VERDICT_HEADER = ["problem", "init", "varpro's best (lowest held-out J): mean ℓ2, mean CPU s / run",
                  *[f"beats {opponent_name(o)} at equal CPU? (mean ℓ2s)" for o in OPPONENTS]]


def versus_text(v: Versus | None) -> str:
    """"yes: 1.00e-04 vs 2.00e-01 (varpro 0.5× its CPU)"; "—" without a comparison."""
    if v is None:
        return "—"
    return (f"{'yes' if v.wins else 'no'}: {sci(v.varpro.key_l2)} vs {sci(v.other.key_l2)} "
            f"(varpro {_g(v.ratio)}× its CPU)")


def _versus_cell(cs: list[Cell], init: str, opponent: str) -> str:
    """:func:`versus_text`, or why there is no comparison: the opponent has no cell under this init, or none
    with more than half of its runs finished (its runs diverged)."""
    v = versus(cs, init, opponent)
    if v is not None or best(cs, init) is None:
        return versus_text(v)
    return "— (no usable cell: its runs diverged)" if _ran(cs, init, opponent) else "— (not run)"


def verdict_row(name: str, cs: list[Cell], init: str) -> list[str]:
    """One line of varpro's verdict: its best method and each opponent's comparison."""
    b = best(cs, init)
    head = "—" if b is None else f"{b.name}: {sci(b.key_l2)}, {b.cpu:.3g} s"
    return [name, init, head, *[_versus_cell(cs, init, o) for o in OPPONENTS]]


def _pairs(by_problem: dict[str, list[Cell]]) -> list[tuple[str, list[Cell], str]]:
    """(problem, cells, init) for every pair where varpro has a pick."""
    return [(n, cs, i) for n, cs in by_problem.items() for i in INITS if best(cs, i) is not None]


def _ran(cs: list[Cell], init: str, opponent: str) -> bool:
    """The opponent has cells under ``init`` (usable or not)."""
    return any(c.solver == opponent and c.init == init_of(opponent, init) for c in cs)


def beaten(cs: list[Cell], init: str, opponent: str) -> bool:
    """varpro's best beats ``opponent`` at equal CPU under ``init``; an opponent that ran but has no usable cell
    (its runs diverged) counts as beaten, as in verdict (a); one that did not run does not."""
    v = versus(cs, init, opponent)
    return v.wins if v is not None else best(cs, init) is not None and _ran(cs, init, opponent)


def beats_all(cs: list[Cell], init: str, group: tuple[str, ...] = OPPONENTS) -> bool:
    return all(beaten(cs, init, o) for o in group)


def tally(by_problem: dict[str, list[Cell]]) -> str:
    """varpro's verdict summed over the (problem, init) pairs with its records: the pairs where it beats each
    opponent (of those with a comparison) and all five at equal CPU, its best methods, and how far its hidden
    layers moved beside LySep's."""
    pairs = _pairs(by_problem)
    if not pairs:
        return "Variable projection: no (problem, init) pair has varpro records yet."
    parts = []
    for o in OPPONENTS:
        vs = [v for _, cs, i in pairs if (v := versus(cs, i, o)) is not None]
        parts.append(f"{opponent_name(o)} in {sum(v.wins for v in vs)} of {len(vs)}")
    every = sum(beats_all(cs, i) for _, cs, i in pairs)
    counts: dict[str, int] = {}
    for _, cs, i in pairs:
        s = display_name(best(cs, i).solver)
        counts[s] = counts.get(s, 0) + 1
    methods = ", ".join(f"{k} in {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    moved = _span([best(cs, i).move for _, cs, i in pairs], 2)
    ly = [c.move for _, cs, i in pairs if (c := chosen(cs, "lysep", i)) is not None]
    return (f"Variable projection (its best method per pair by held-out J) over the {len(pairs)} (problem, init) "
            f"pairs with its records beats at equal CPU: {'; '.join(parts)}; all five in {every} of {len(pairs)} "
            f"(an opponent whose runs diverged counted as beaten). Its best method: {methods}; its hidden layers "
            f"moved {moved} (relative, the median run's largest hidden W_l at its pick; LySep's at its chosen size: "
            f"{_span(ly, 2)}).")


#: the networks trained without variable projection, and the one-solve fits
NETWORKS, FITS = ("lysep", "pinn", "pinn-lbfgs"), ("rfm", "poly")


def _where(pairs: list[tuple[str, str]]) -> str:
    """"a-k1, b-k2 under both inits; c-k3 (torch init)": the problems whose both pairs are in ``pairs`` first."""
    names = list(dict.fromkeys(n for n, _ in pairs))
    both = [n for n in names if sum(m == n for m, _ in pairs) == len(INITS)]
    one = [pair_name(n, i) for n, i in pairs if n not in both]
    return "; ".join(([f"{', '.join(both)} under both inits"] if both else []) + ([", ".join(one)] if one else []))


def answer_sentence(by_problem: dict[str, list[Cell]]) -> str:
    """The plain-words answer: whether separating the output layer pays when the hidden layers are trained on
    the reduced loss, i.e. in how many (problem, init) pairs variable projection beats all five opponents at
    equal CPU; then how many of them it beats the three networks in (LySep, PINN-GD, pinn-lbfgs) and the
    one-solve fits in (rfm, poly); the file behind it."""
    pairs = _pairs(by_problem)
    if not pairs:
        return ("Whether separating the output layer pays when the hidden layers are trained on the reduced loss "
                "(variable projection) is not known yet: no varpro records.")
    won = [(n, i) for n, cs, i in pairs if beats_all(cs, i)]
    nets = sum(beats_all(cs, i, NETWORKS) for _, cs, i in pairs)
    fits = sum(beats_all(cs, i, FITS) for _, cs, i in pairs)
    n = len(pairs)
    if len(won) == n:
        head = ("**Separating the output layer pays when the hidden layers are trained on the reduced loss**: in "
                f"all {n} (problem, init) pairs with its records variable projection beats LySep, PINN-GD, "
                "pinn-lbfgs, rfm and poly at equal CPU")
    else:
        where = _where(won)
        head = ("**Separating the output layer does not pay even when the hidden layers are trained on the reduced "
                f"loss**: in none of the {n} (problem, init) pairs with its records" if not won else
                f"**Separating the output layer pays in {len(won)} of {n} (problem, init) pairs when the hidden "
                f"layers are trained on the reduced loss** ({where})")
        head += (" does variable projection beat all of LySep, PINN-GD, pinn-lbfgs, rfm and poly at equal CPU"
                 if not won else ": there variable projection beats LySep, PINN-GD, pinn-lbfgs, rfm and poly at "
                 "equal CPU")
    return (head + f"; it beats all three networks trained without it (LySep, PINN-GD, pinn-lbfgs) in {nets} of {n}"
            f" and both one-solve fits (rfm, poly) in {fits} of {n} (`{SOURCE}`, variable projection's tables).")


def coverage(specs: list[ExperimentSpec], records_of: Callable[[str], list[RunRecord]]) -> str:
    """One line naming the experiments whose varpro records are missing or incomplete (against the runs the
    experiments file asks for: each method's sizes × seeds); "" when every one is complete."""
    asked = [(s, m) for s in specs for m in VARPRO if m in s.solvers]
    if not asked:
        return ("Variable projection: the experiments file names no varpro solver, so no varpro record is read "
                "(suites/run-varpro.sh writes results/harder/experiments-varpro.yaml, which does).")
    none, part = [], []
    for s, m in asked:
        have = sum(1 for r in records_of(s.name) if r.solver == m)
        want = len(s.sizes_for(m)) * len(seeds_of(m, s.seeds))
        if have == 0:
            none.append(f"{s.name} {m}")
        elif have < want:
            part.append(f"{s.name} {m} ({have} of {want} runs)")
    if not none and not part:
        return ""
    text = f"Variable projection's records missing in {len(none) + len(part)} of {len(asked)} (experiment, method)"
    text += (f"; none: {', '.join(_grouped(none))}" if none else "")
    return text + (f"; incomplete: {', '.join(part)}" if part else "") + "."


def _grouped(items: list[str]) -> list[str]:
    """"X varpro-lm", "X varpro-gd", ... -> "X (varpro-lm, varpro-gd)"; an experiment with all three: "X"."""
    by: dict[str, list[str]] = {}
    for item in items:
        name, method = item.rsplit(" ", 1)
        by.setdefault(name, []).append(method)
    return [n if len(ms) == len(VARPRO) else f"{n} ({', '.join(ms)})" for n, ms in by.items()]


def section(by_problem: dict[str, list[Cell]], missing: str) -> str:
    """answer.md's variable-projection part: each method's pick, the verdict, the tally, what is missing and
    the plain-words answer."""
    rows, verdicts = [], []
    for name, cs in by_problem.items():
        for i in INITS:
            rows += [method_row(name, c) for c in method_cells(cs, i)]
            if best(cs, i) is not None:
                verdicts.append(verdict_row(name, cs, i))
    lines = ["", "## Variable projection (issue 54; each method's size by held-out J, never training J)", ""]
    if rows:
        lines += _table(METHOD_HEADER, rows) + [""] + _table(VERDICT_HEADER, verdicts) + [""]
    lines += [tally(by_problem)] + ([missing] if missing else []) + ["", answer_sentence(by_problem)]
    return "\n".join(lines) + "\n"


def problem_section(name: str, cs: list[Cell]) -> str:
    """PROBLEM.md's variable-projection part: every varpro cell with its held-out J (◀: each method's pick) and
    the verdict under each init ("" when the problem has no varpro records)."""
    mine = [c for c in cs if c.solver in VARPRO]
    if not mine:
        return ""
    picks = {(c.solver, c.init, c.L, c.M) for i in INITS for c in method_cells(cs, i)}
    rows = [[*method_row(name, c)[1:3], f"({c.L},{c.M})" + (" ◀" if (c.solver, c.init, c.L, c.M) in picks else ""),
             *method_row(name, c)[4:]] for c in sorted(mine, key=lambda c: (VARPRO.index(c.solver), c.init, c.M))]
    lines = ["", "## Variable projection: every cell's held-out J, each method's pick (◀, the lowest held-out J) "
             "and the verdict at equal CPU", ""]
    lines += _table(["init", "method", "(L,M)", *METHOD_HEADER[4:]], rows) + [""]
    lines += _table(VERDICT_HEADER, [verdict_row(name, cs, i) for i in INITS if best(cs, i) is not None])
    return "\n".join(lines) + "\n"


def addenda(by_problem: dict[str, list[Cell]], missing: str) -> Addenda:
    """Variable projection's part of the answer: answer.md's section, each PROBLEM.md's, the README brief's
    column and its plain-words sentence (``missing``: :func:`coverage`'s line)."""
    column = {n: brief_cell(cs, [i for i in INITS if any(c.init == i for c in cs)]) for n, cs in by_problem.items()}
    tail = ([missing] if missing else []) + [answer_sentence(by_problem)]
    return Addenda(answer=section(by_problem, missing),
                   problems={n: problem_section(n, cs) for n, cs in by_problem.items()},
                   column=("varpro's best by held-out J: median ℓ2, CPU s; of LySep, PINN-GD, pinn-lbfgs, rfm, poly "
                           "it beats at equal CPU", column),
                   brief="\n".join(["", tally(by_problem), *tail]) + "\n")


def brief_cell(cs: list[Cell], inits: list[str]) -> str:
    """README's varpro cell for one problem: per init its best method, median ℓ2, CPU s and how many of the
    five it beats at equal CPU ("paper / torch" where they differ)."""
    texts = []
    for i in inits:
        b = best(cs, i)
        if b is None:
            texts.append("—")
            continue
        won = sum(beaten(cs, i, o) for o in OPPONENTS)
        texts.append(f"{display_name(b.solver)} ({b.L},{b.M}): {sci(b.l2_median)}, {b.cpu:.2g} s; "
                     f"beats {won} of {len(OPPONENTS)}")
    return texts[0] if len(set(texts)) == 1 else " / ".join(texts)


__all__ = ["OPPONENTS", "Versus", "versus", "best", "method_cells", "tally", "answer_sentence", "coverage",
           "section", "problem_section", "brief_cell", "verdict_row", "addenda"]
