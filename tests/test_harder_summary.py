"""`lysep study harder-summary` (lysep_cli/reports/harder_summary.py): the verdicts on planted cells, the choice
of a size by training J only, "not run yet", the output format, the docs block regenerating with no diff, and
the accuracy-cost figure's twin series (docs/harder.md, "The answer's rule")."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.reports import harder_summary as hs
from lysep_cli.reports.harder_summary import Cell

ROOT = Path(__file__).resolve().parents[1]
CHOSEN = ROOT / "results" / "harder" / "experiments.yaml"
RESULTS = ROOT / "results" / "harder"
DOC = ROOT / "docs" / "harder.md"
cli = CliRunner()


def cell(solver: str, L: int, M: int, J: float, l2: float, cpu: float, init: str = "paper", runs: int = 5,
         finished: int = 5) -> Cell:
    return Cell(solver, init, L, M, runs, finished, (J, 0.1 * J), (l2, 0.1 * l2), l2, cpu)


def rec(solver: str, L: int, M: int, J: float | None, l2: float | None, cpu: float, ok: bool = True,
        J0: float = 100.0):
    """A stand-in run record: what harder_summary reads of one (its J history: J0 ... J)."""
    return SimpleNamespace(solver=solver, L=L, M=M, ok=ok, final=SimpleNamespace(J=J, l2=l2), compute_seconds=cpu,
                           history={"J": [J0, J]}, diagnostics={})


def test_lysep_against_pinn_counts_sizes_per_init():
    cs = [cell("pinn", 3, 10, 5.0, 0.5, 1), cell("lysep", 3, 10, 4.0, 0.4, 9),     # LySep lower in both
          cell("pinn", 3, 20, 5.0, 0.3, 1), cell("lysep", 3, 20, 4.0, 0.4, 9),     # J lower, l2 higher
          cell("pinn", 3, 30, 3.0, 0.3, 1), cell("lysep", 3, 30, 4.0, 0.4, 9),     # both higher
          cell("pinn", 3, 50, 9.0, 0.9, 1, finished=2), cell("lysep", 3, 50, 10.0, 1.0, 9),  # PINN unusable
          cell("lysep", 3, 80, 1.0, 0.1, 9),                                      # no PINN there: not counted
          cell("pinn", 3, 10, 1.0, 0.1, 1, init="torch"), cell("lysep", 3, 10, 2.0, 0.2, 9, init="torch")]
    v = hs.lysep_vs_pinn(cs, "paper")
    assert (v.sizes, v.l2_wins, v.J_wins) == (4, 2, 3)
    assert hs.lysep_vs_pinn(cs, "torch") == hs.PinnVerdict(1, 0, 0)


def test_equal_cpu_picks_the_baseline_cell_within_lyseps_seconds_by_training_J():
    cs = [cell("lysep", 3, 10, 2.0, 0.5, 10.0), cell("lysep", 3, 20, 1.0, 0.3, 20.0),  # chosen: (3,20), 20 s
          cell("rfm", 2, 100, 5.0, 0.4, 1.0),          # fits, J 5
          cell("rfm", 2, 200, 3.0, 0.2, 4.0),          # fits, J 3: the one compared
          cell("rfm", 2, 800, 0.1, 1e-3, 50.0),        # lowest J but over LySep's 20 s: never compared
          cell("poly", 2, 66, 1.0, 0.01, 30.0)]        # none of poly's within 20 s
    v = hs.equal_cpu(cs, "paper", "rfm")
    assert (v.challenger.L, v.challenger.M) == (3, 20) and (v.other.L, v.other.M) == (2, 200)
    assert v.wins is False and v.ratio == pytest.approx(5.0)
    p = hs.equal_cpu(cs, "paper", "poly")
    assert p.other is None and p.wins is None and "no cell within" in hs._cost_text(p)
    assert hs.equal_cpu(cs, "torch", "rfm") is None  # no LySep under that init
    won = hs.equal_cpu([cell("lysep", 3, 10, 1.0, 0.01, 10.0), cell("poly", 2, 66, 1.0, 0.5, 0.1)], "paper", "poly")
    assert won.wins is True and hs._cost_text(won).startswith("yes: 1.00e-02 vs 5.00e-01 (LySep costs 100×")


def test_the_choice_of_a_size_never_reads_the_test_error():
    # planted: by test l2 (3,50) would win; by training J (3,10) does; and (3,20) has the lowest J of all
    # but only 2 of 5 runs finished (unusable)
    cs = [cell("lysep", 3, 10, 1.0, 0.9, 5), cell("lysep", 3, 20, 0.1, 0.01, 5, finished=2),
          cell("lysep", 3, 50, 2.0, 1e-4, 5)]
    pick = hs.chosen(cs, "lysep", "paper")
    assert (pick.L, pick.M) == (3, 10)
    best = hs.best_overall(cs + [cell("rfm", 2, 500, 1e-9, 0.5, 0.1)], "paper")
    assert best.solver == "rfm"  # (c) compares the chosen cells' l2: 0.5 < LySep's chosen 0.9
    # the chosen cell is the same with the test errors scrambled
    scrambled = [Cell(c.solver, c.init, c.L, c.M, c.runs, c.finished, c.J, (7.0 - i, 0.0), 7.0 - i, c.cpu)
                 for i, c in enumerate(cs)]
    assert (hs.chosen(scrambled, "lysep", "paper").L, hs.chosen(scrambled, "lysep", "paper").M) == (3, 10)


def test_cells_count_diverged_runs_apart_and_mean_over_finished():
    paper = [rec("pinn", 3, 10, 2.0, 0.2, 1.0), rec("pinn", 3, 10, 4.0, 0.4, 3.0),
             rec("pinn", 3, 10, None, None, 0.5, ok=False), rec("rfm", 2, 500, 1e-9, 1e-8, 0.1)]
    torch = [rec("pinn", 3, 10, math.inf, 1.0, 0.2, ok=False), rec("pinn", 3, 10, 1.0, 0.1, 0.4)]
    cs = hs.cells(paper, torch)
    assert [(c.solver, c.init) for c in cs] == [("pinn", "paper"), ("pinn", "torch"), ("rfm", "paper")]
    p = cs[0]
    assert (p.runs, p.finished, p.usable) == (3, 2, True)
    assert p.J[0] == pytest.approx(3.0) and p.l2[0] == pytest.approx(0.3) and p.cpu == pytest.approx(1.5)
    assert p.l2_median == pytest.approx(0.4)  # 0.2, 0.4, inf
    t = cs[1]
    assert (t.finished, t.usable, t.key_l2) == (1, False, math.inf)  # half finished: not usable


def test_answer_says_not_run_yet_and_its_format():
    cs = [cell("pinn", 3, 10, 5.0, 0.5, 1), cell("lysep", 3, 10, 4.0, 0.4, 9),
          cell("rfm", 2, 500, 1e-9, 1e-8, 0.1), cell("poly", 2, 66, 1.0, 0.05, 0.02)]
    text = hs.answer({"a-k1": cs, "b-k2": []})
    lines = text.splitlines()
    assert lines[0] == "| " + " | ".join(hs.HEADER) + " |" and lines[1] == "|" + "---|" * len(hs.HEADER)
    rows = [ln for ln in lines[2:] if ln.startswith("| ")]
    assert rows[0].startswith("| a-k1 | paper | 1 of 1 sizes (ℓ2), 1 of 1 (J) | no: 4.00e-01 vs 1.00e-08 ")
    assert rows[1] == "| a-k1 | torch | not run yet | not run yet | not run yet | not run yet |"
    assert rows[2] == "| b-k2 | — | not run yet | not run yet | not run yet | not run yet |"
    assert all(r.count("|") == len(hs.HEADER) + 1 for r in rows)
    assert "a-k1: torch twin not run yet" in text and "Records of 1 of 2 problems; not run yet: b-k2." in text
    assert hs.problem_table("b-k2", []).endswith("not run yet: no record of b-k2.\n")


def test_torch_init_changes_names_what_moved():
    base = [cell("rfm", 2, 500, 1e-9, 1e-8, 0.1)]
    same = base + [cell(s, 3, 10, J, l2, 1, init=i) for i in hs.INITS for s, J, l2 in
                   (("pinn", 5.0, 0.5), ("lysep", 4.0, 0.4))]
    assert hs.changes(same) == "no"
    moved = base + [cell("pinn", 3, 10, 5.0, 0.5, 1), cell("lysep", 3, 10, 6.0, 0.6, 9),
                    cell("pinn", 3, 10, 5.0, 0.5, 1, init="torch"), cell("lysep", 3, 10, 4.0, 0.4, 9, init="torch")]
    assert hs.changes(moved) == "yes ((a) LySep beats PINN at most sizes: no → yes)"


def marker_args(text: str) -> list[str]:
    """The words of the first harder-summary marker of ``text`` (README's drops its --brief)."""
    m = re.search(r"<!-- BEGIN lysep (study harder-summary [^>]*) -->", text)
    assert m
    return [w for w in m.group(1).split() if w != "--brief"]


def test_readme_and_docs_blocks_name_the_same_records():
    """The lead changes the markers once (docs/harder.md, "Regenerate"): README's and docs/harder.md's agree."""
    assert marker_args((ROOT / "README.md").read_text()) == marker_args(DOC.read_text())


def test_command_on_the_committed_records(tmp_path, monkeypatch):
    out = tmp_path / "summary"
    monkeypatch.chdir(ROOT)  # the marker's paths are the repository's
    args = marker_args(DOC.read_text())  # the command results/harder/summary is written with
    r = cli.invoke(app, [*args, "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "| osc-ball-2d-k12 | paper | 1 of 4 sizes (ℓ2), 4 of 4 (J) |" in r.output
    names = sorted(p.name for p in out.iterdir())
    assert "answer.md" in names and "osc-ball-2d-k12.md" in names and len(names) == 8
    table = (out / "osc-ball-2d-k12.md").read_text()
    assert "| PINN | (3,10) | 1/5 | 4 |" in table and "| LySep (torch init) | (3,50) ◀ |" in table
    committed = RESULTS / "summary"
    for p in out.iterdir():  # the committed summary is what the command writes from the committed records
        assert (committed / p.name).read_text() == p.read_text(), p.name


def test_bad_input_is_one_line_exit_2(tmp_path):
    r = cli.invoke(app, ["study", "harder-summary", "--config", str(tmp_path / "none.yaml"), "--results", str(RESULTS)])
    assert r.exit_code == 2 and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    r = cli.invoke(app, ["study", "harder-summary", "--config", str(CHOSEN), "--results", str(RESULTS),
                         "--out", str(tmp_path / "no" / "such")])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1


def test_docs_block_regenerates_with_no_diff():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import refresh
    finally:
        sys.path.remove(str(ROOT / "docs"))
    text = DOC.read_text()
    assert re.search(r"<!-- BEGIN lysep study harder-summary [^>]*--results results/harder -->", text)
    assert refresh.refresh(text, refresh.lysep_runner("results/paper")) == text


def test_accuracy_cost_figure_draws_the_twin_as_its_own_series(tmp_path):
    from lysep_cli.reports.plot_accuracy_cost import plot_accuracy_cost
    from lysep_cli.reports.plots import _cap_diverged, twins_of
    from lysep_cli.reports.figures import plt
    from lysep_cli.reports.selection import load_selection
    from lysep_cli.specs import load_specs

    every = list(load_specs(CHOSEN).values())
    x = [s for s in every if s.name == "osc-ball-2d-k12"]
    twins = twins_of(every, x)
    assert [t.name for t in twins] == ["osc-ball-2d-k12-torch"]
    sel = load_selection(RESULTS, x + twins, None, lambda m: None)
    drawn = plot_accuracy_cost(sel.of("osc-ball-2d-k12"), "osc-ball-2d-k12", tmp_path, None,
                               sel.of("osc-ball-2d-k12-torch"))
    series = drawn.panels["l2"].series
    assert {"LySep (torch init)", "PINN (torch init)", "rfls (torch init)"} <= set(series)
    assert "rfm (torch init)" not in series and "poly (torch init)" not in series
    assert drawn.panels["l2"].levels == {}  # the paper has no levels for these problems
    assert (tmp_path / "osc-ball-2d-k12-accuracy-cost.png").stat().st_size > 0
    # a diverged run at 1e290 no longer breaks the log axis of the loss figure
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ax.plot([0, 1, 2], [1e3, 1e100, 1e290])
    ax.plot([0, 1, 2], [1e3, 5e2, 1e2])
    _cap_diverged(ax, [SimpleNamespace(ok=False, history={"J": [1e3, 1e100, 1e290]}),
                       SimpleNamespace(ok=True, history={"J": [1e3, 5e2, 1e2]})], [])
    assert ax.get_ylim() == pytest.approx((1e2 / 10 ** 0.2, 1e6 * 10 ** 0.2))  # 1e3 x the finished; 5 % margins
    plt.close(fig)


def test_the_twins_front_holds_rfm_and_poly_of_its_problem(tmp_path):
    """Issue 55: X-torch's accuracy-cost figure has X's rfm and poly (no init: the same fits), so its front
    is the problem's front; X's figure does not draw them twice."""
    from lysep_cli.reports.plot_accuracy_cost import plot_accuracy_cost
    from lysep_cli.reports.plots import shared_of, twins_of
    from lysep_cli.reports.selection import load_selection
    from lysep_cli.specs import load_specs

    every = list(load_specs(CHOSEN).values())
    t = [s for s in every if s.name == "osc-ball-2d-k12-torch"]
    assert [s.name for s in twins_of(every, t)] == ["osc-ball-2d-k12"]
    sel = load_selection(RESULTS, t + twins_of(every, t), None, lambda m: None)
    shared = shared_of(sel, "osc-ball-2d-k12-torch")
    assert {r.solver for r in shared} == set(hs.ONE_SOLVE) and shared_of(sel, "osc-ball-2d-k12") == []
    drawn = plot_accuracy_cost(sel.of("osc-ball-2d-k12-torch") + shared, "osc-ball-2d-k12-torch", tmp_path)
    front = drawn.panels["l2"].front
    assert "rfm" in drawn.panels["l2"].series and any(s == "rfm" for s, _ in front)


def test_brief_is_one_line_a_problem_with_both_inits_in_one_cell():
    rfm, poly = cell("rfm", 2, 500, 1e-9, 1e-8, 0.1), cell("poly", 2, 66, 1.0, 0.05, 0.02)
    agree = [rfm, poly] + [cell(s, 3, 10, J, l2, cpu, init=i) for i in hs.INITS
                           for s, J, l2, cpu in (("pinn", 5.0, 0.5, 1), ("lysep", 4.0, 0.4, 9))]
    differ = [rfm, poly, cell("pinn", 3, 10, 5.0, 0.5, 1), cell("lysep", 3, 10, 6.0, 0.6, 9),
              cell("pinn", 3, 10, 5.0, 0.5, 1, init="torch"), cell("lysep", 3, 10, 4.0, 0.4, 9, init="torch"),
              cell("pinn-lbfgs", 3, 10, 1e-12, 1e-9, 2, init="torch")]
    lines = hs.brief({"a-k1": agree, "b-k2": differ, "c-k3": []}).splitlines()
    rows = [ln for ln in lines[2:] if ln.startswith("| ")]
    assert len(rows) == 3 and all(r.count("|") == 7 for r in rows)
    # agreeing inits: one word; LySep's cell is the paper init's; rfm is within LySep's 9 s and below it
    assert rows[0] == ("| a-k1 | 4.00e-01 (3,10), 9 s | yes, 1 of 1 | no (1.00e-08, 0.1 s) | no (5.00e-02, 0.02 s) "
                       "| rfm (2,500): 1.00e-08, 0.1 s |")
    # differing inits: "paper / torch"; the best is taken over both inits' picks
    assert "| no, 0 of 1 / yes, 1 of 1 |" in rows[1]
    assert rows[1].endswith("| pinn-lbfgs (torch init) (3,10): 1.00e-09, 2 s |")
    assert rows[2].startswith("| c-k3 | not run yet |")
    assert lines[-1].startswith("Over the 4 (problem, init) pairs run,") and "Records of 2 of 3 problems;" in lines[-1]


def test_readme_block_regenerates_with_no_diff():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import refresh
    finally:
        sys.path.remove(str(ROOT / "docs"))
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- BEGIN lysep (study harder-summary --brief [^>]*--results results/harder) -->", text)
    assert m
    block = refresh.BLOCK.search(text, m.start())
    assert block.group("body") == refresh.lysep_runner("results/paper")(m.group(1).split())


def test_tally_sums_the_verdicts_over_problem_init_pairs():
    rfm, poly = cell("rfm", 2, 500, 1e-9, 1e-8, 0.1), cell("poly", 2, 66, 1.0, 0.05, 0.02)
    one = [rfm, poly, cell("pinn", 3, 10, 5.0, 0.5, 1), cell("lysep", 3, 10, 4.0, 0.4, 9),
           cell("rfls", 3, 10, 4.0, 0.5, 0.01)]
    # the second problem: LySep loses to PINN, beats poly within its CPU (poly's only cell fits), ℓ2 2× rfls's
    two = [cell("rfm", 2, 500, 1.0, 0.9, 100.0), cell("poly", 2, 66, 1.0, 0.9, 0.5),
           cell("pinn", 3, 10, 5.0, 0.1, 1), cell("lysep", 3, 10, 4.0, 0.4, 20),
           cell("rfls", 3, 10, 4.0, 0.2, 0.01), cell("pinn-lbfgs", 3, 10, 1e-9, 1e-5, 2)]
    text = hs.tally({"a": one, "b": two, "c": []})
    assert text.startswith("Over the 2 (problem, init) pairs run, LySep's mean ℓ2 beats PINN's at most sizes in 1 "
                           "(in 0 of them PINN-GD's mean J ends within 1 % of its start at every size, in 0 it "
                           "diverges at every size);")
    assert "beats rfm at equal CPU in 0 of 1 (LySep spends 90× its CPU)" in text  # b's rfm costs more than LySep
    assert "beats poly at equal CPU in 1 of 2 (LySep spends 40–450× its CPU)" in text
    assert "its ℓ2 is 0.8–2× rfls's" in text and "in 2 at its chosen size (0.8–2× over every size)." in text
    assert text.endswith("Best solver: pinn-lbfgs in 1 (its median ℓ2 1.1e-05× rfm's), rfm in 1.")
    assert hs.tally({"c": []}) == "No problem has LySep records yet."
    assert hs._g(4810.2) == "4,810" and hs._g(0.75123) == "0.751" and hs._span([3.0, math.inf, 3.0]) == "3"


def test_fixed_tau_picks_the_best_usable_tau_by_training_J(tmp_path):
    from lysep_cli.reports.study import COLUMNS as STUDY_COLUMNS

    rows = [",".join(STUDY_COLUMNS)]
    tail = "0,0,1.0,1.0,1.0"  # hidden_move, violations, J_first, W3_norm, largest_final_step
    for seed in range(3):
        rows.append(f"3,10,{seed},fixed,0.0,2000,ok,,1.0,1.0,0.5,{tail},10")
        rows.append(f"3,10,{seed},fixed,1e-08,2000,ok,,0.5,0.4,0.7,{tail},11")  # lower J, higher ℓ2: J decides
        rows.append(f"3,10,{seed},fixed,1e-10,2000,ok,,0.5000001,0.4,0.6,{tail},11")  # a tie: the smaller tau
        status, J = ("ok", 0.01) if seed == 0 else ("diverged", "nan")
        rows.append(f"3,10,{seed},fixed,1.0,2000,{status},5,{J},{J},0.1,{tail},3")  # diverged runs: not usable
        rows.append(f"3,10,{seed},backtracking,,2000,ok,,0.8,0.6,0.4,{tail},20")
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(rows) + "\n")
    (r,) = hs.fixed_tau(path)
    assert (r.L, r.M, r.tau, r.finished, r.runs) == (3, 10, 1e-10, 3, 3)
    assert (r.J, r.l2, r.default_J, r.default_l2, *r.seconds) == pytest.approx((0.5, 0.6, 0.8, 0.4, 11.0, 20.0))
    assert hs.fixed_tau_text([r]) == "τ = 1e-10 at (3,10): ℓ2 6.00e-01 (default rule 4.00e-01)"
    assert hs.fixed_tau(tmp_path / "none.csv") == [] and hs.fixed_tau_text([]) == "not run"
    table = hs.problem_table("a-k1", [cell("lysep", 3, 10, 0.8, 0.4, 20)], [r])
    assert "| (3,10) | 1e-10 | 3/3 | 5.00e-01 | 6.00e-01 | 8.00e-01 | 4.00e-01 | 11, 20 |" in table
    # the same pick as the study's own summary (lysep study step-size)
    from lysep_cli.reports.study import best_fixed, read_runs, summarise
    assert float(best_fixed(summarise(read_runs(path))).best_tau.iloc[0]) == r.tau


def test_readme_answer_sentence_quotes_the_tally_of_the_committed_records():
    """README's plain-words answer says what the generated tally says about LySep (so neither drifts alone)."""
    flat = " ".join((ROOT / "README.md").read_text().split())
    tally = [ln for ln in (RESULTS / "summary" / "answer.md").read_text().splitlines() if ln.startswith("Over the ")][0]
    pairs, pinn, stayed, gone = re.search(r"Over the (\d+) \(problem, init\) pairs run, .*? at most sizes in (\d+) "
                                          r"\(in (\d+) of them PINN-GD's .*?, in (\d+) it diverges", tally).groups()
    rfm = re.search(r"beats rfm at equal CPU in 0 of \d+ \(LySep spends ([\d,–]+)× its CPU\)", tally).group(1)
    poly = re.search(r"beats poly at equal CPU in 0 of \d+ \(LySep spends ([\d,–]+)× its CPU\)", tally).group(1)
    rfls, every = re.search(r"its ℓ2 is ([\d.–]+)× rfls's .*? at its chosen size \(([\d.–]+)× over every size\)",
                            tally).groups()
    said = (f"In all {pairs} (problem, init) pairs LySep's ℓ2 is above rfm's and poly's while it spends {rfm}× rfm's "
            f"CPU and {poly}× poly's, within {rfls}× of rfls's on its own seeded layers at its chosen size ({every}× "
            f"over every size); it beats PINN-GD in {pinn} of {pairs}, but in {stayed} of them PINN-GD's J ends "
            f"within 1 % of its start and in {gone} it diverges")
    assert said in flat


def test_sizes_where_both_inits_gave_the_same_runs_are_named():
    """Issue 55: at M = d the two inits draw the same networks (layer-ball-10d (3,10)); the brief says so."""
    same = [cell(s, 3, 10, 1.0, 0.1, 1, init=i) for s in ("pinn", "lysep") for i in hs.INITS]
    differ = [cell("pinn", 3, 20, 1.0, 0.1, 1), cell("pinn", 3, 20, 2.0, 0.1, 1, init="torch"),
              cell("lysep", 3, 20, 1.0, 0.1, 1), cell("lysep", 3, 20, 1.0, 0.1, 1, init="torch")]
    rfm = [cell("rfm", 2, 500, 1e-9, 1e-8, 0.1)]
    assert hs.identical_sizes(same + differ + rfm) == [(3, 10)]
    text = hs.brief({"p-k1": same + differ + rfm, "q-k2": differ + rfm})
    assert "at p-k1 (3,10): not independent" in text and "q-k2 (3," not in text
    assert hs.identical_note({"q-k2": differ}) == ""


def test_the_tally_says_where_pinn_gd_stayed_at_its_start_or_diverged():
    """Issue 55: "LySep beats PINN-GD in 7 of 14" said without its caveat; the tally now counts, among those
    pairs, where PINN-GD's J ended within 1 % of its start (a step that left it there) or diverged."""
    stay = hs.cell_of([rec("pinn", 3, 10, 99.5, 1.0, 1, J0=100.0) for _ in range(5)], "pinn", "paper")
    moved = hs.cell_of([rec("pinn", 3, 10, 98.0, 0.1, 1, J0=100.0) for _ in range(5)], "pinn", "paper")  # beats LySep
    assert stay.J_start == 100.0 and stay.stayed and not moved.stayed
    gone = hs.cell_of([rec("pinn", 3, 10, None, None, 1, ok=False) for _ in range(4)]
                      + [rec("pinn", 3, 10, 1.0, 0.1, 1)], "pinn", "paper")
    assert not gone.usable
    rfm, poly = cell("rfm", 2, 500, 1e-9, 1e-8, 0.1), cell("poly", 2, 66, 1.0, 0.05, 0.02)
    lysep = cell("lysep", 3, 10, 4.0, 0.4, 9)
    by = {"a-k1": [rfm, poly, lysep, stay], "b-k2": [rfm, poly, lysep, moved], "c-k3": [rfm, poly, lysep, gone]}
    assert ("beats PINN's at most sizes in 2 (in 1 of them PINN-GD's mean J ends within 1 % of its start at "
            "every size, in 1 it diverges at every size)") in hs.tally(by)


def test_pinn_gd_stays_at_its_start_on_the_three_problems_docs_name():
    """docs/harder.md (issue 55): "PINN-GD stays at its start on three problems (osc-ball-2d, aniso-box-2d,
    osctime-box-5d)": there every PINN cell that more than half its runs finished, under either init, ends
    with its mean J within 1 % of its mean initial J; on the other four not."""
    from lysep_cli.reports.selection import load_selection
    from lysep_cli.specs import load_specs

    specs = list(load_specs(CHOSEN).values())
    by = hs.gather(specs, load_selection(RESULTS, specs, None, lambda m: None).of)
    stayed = {n for n, cs in by.items()
              if all(c.stayed for c in cs if c.solver == "pinn" and c.usable)}
    assert stayed == {"osc-ball-2d-k12", "aniso-box-2d-k16", "osctime-box-5d-k8"}
    text = " ".join(DOC.read_text().split())
    assert ("PINN-GD stays at its start on three problems (osc-ball-2d, aniso-box-2d, osctime-box-5d)" in text)
