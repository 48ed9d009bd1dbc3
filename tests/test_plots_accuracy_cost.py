"""lysep plot's accuracy against cost, and the loss figure's one-shot levels, on a small results folder.

Records with chosen CPU seconds, J and ℓ2 (networks at three sizes, rfls, rfm at two widths, poly's record
and its degree study) are written to a tmp results folder; the figures are drawn from it, and what they
say they drew is checked against the records: every solver a series with one point per size / width /
degree (the median over the seeds), and the front against a brute-force non-dominated set.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.reports.accuracy_cost import machines_note, pareto_front, published_levels, solver_series
from lysep_cli.reports.plot_accuracy_cost import plot_accuracy_cost
from lysep_cli.reports.plots import plot_loss
from lysep_cli.reports.poly_degree import COLUMNS
from lysep_cli.reports.selection import published
from lysep_cli.specs import default_config, load_specs
from lysep_cli.store.records import load_records
from lysep_cli.reports.selection import select

from foundation_helpers import store, synthetic_record

EXP = "parabolic-5d"
ITERATIONS = 30
SPEC = load_specs(default_config())[EXP]
NETWORKS = {"pinn": [(3, 20), (3, 50), (3, 80)], "lysep": [(3, 20), (3, 50)], "pinn-adam": [(3, 20)],
            "rfls": [(3, 20), (3, 50), (3, 80)]}
SEEDS = [0, 1, 2]
EPYC, XEON = "AMD EPYC, 2 CPUs", "Intel(R) Xeon(R) Processor, 2 CPUs"
DIVERGED_SECONDS = 50.0  # the diverged PINN run's CPU seconds: they count in its cell's median
STUDY = [(k, 1e-2 * 10.0 ** -k, 1e-1 * 10.0 ** -k, 1e-3 * (k + 1)) for k in range(6)]  # degree, J, l2, CPU s


def numbers(solver: str, L: int, M: int, seed: int) -> tuple[float, float, float]:
    """(CPU seconds, J, l2) of a run: distinct per solver, size and seed, so that medians and the front
    are not ties."""
    base = {"pinn": 10.0, "lysep": 100.0, "pinn-adam": 5.0, "rfls": 0.01, "rfm": 0.5}[solver]
    acc = {"pinn": 1e-3, "lysep": 1e-5, "pinn-adam": 2e-3, "rfls": 1e-4, "rfm": 1e-8}[solver]
    return base * M / 20 * (1 + 0.1 * seed), acc * 20 / M * (1 + 0.3 * seed), math.sqrt(acc * 20 / M) * (1 + 0.2 * seed)


def one_shot_history(J: float) -> dict:
    return {"J": [1.0, J], "J_S": None}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("acc") / "results"
    for solver, sizes in NETWORKS.items():
        for (L, M), seed in itertools.product(sizes, SEEDS):
            s, J, l2 = numbers(solver, L, M, seed)
            hist = one_shot_history(J) if solver == "rfls" else None
            rec, params = synthetic_record(SPEC, solver, L, M, seed, J=J, l2=l2, iterations=ITERATIONS,
                                           history=hist, diagnostics={"cpu_seconds": s},
                                           versions={"machine": EPYC})
            store(root, rec, params)
    # a diverged PINN run at (3, 80): +inf in the median (the harder summary's rule), its cell still a point
    rec, params = synthetic_record(SPEC, "pinn", 3, 80, 3, J=None, l2=None, iterations=ITERATIONS,
                                   status="diverged", versions={"machine": EPYC},
                                   diagnostics={"cpu_seconds": DIVERGED_SECONDS})
    store(root, rec, params)
    for M, seed in itertools.product((800, 1600), SEEDS):
        s, J, l2 = numbers("rfm", 2, M, seed)
        rec, params = synthetic_record(SPEC, "rfm", 2, M, seed, J=J, l2=l2, iterations=ITERATIONS,
                                       history=one_shot_history(J), diagnostics={"cpu_seconds": s},
                                       versions={"machine": EPYC})
        store(root, rec, params)
    # poly: its record at the spec's degree 5 (P = 462), made on another CPU; the study has degrees 0-5
    rec, params = synthetic_record(SPEC, "poly", 2, 462, 0, J=3e-9, l2=4e-8, iterations=ITERATIONS,
                                   history=one_shot_history(3e-9),
                                   diagnostics={"cpu_seconds": 0.2, "degree": 5}, versions={"machine": XEON})
    store(root, rec, params)
    study = pd.DataFrame([{"degree": k, "P": 1 + k, "J": J, "l2": l2, "J_hold": J, "rank": 1, "cond": 1.0,
                           "cpu_seconds": s} for k, J, l2, s in STUDY], columns=COLUMNS)
    (root / EXP / "study-poly-degree").mkdir(parents=True)
    study.to_csv(root / EXP / "study-poly-degree" / "runs.csv", index=False)
    return root


def records_of(root: Path):
    return select(load_records(root, [EXP]), [SPEC], ITERATIONS).of(EXP)


def expected_points(root: Path) -> dict[str, list[tuple[float, float, float]]]:
    """Solver -> its (median cost, median J, median l2) per size / width / degree, from the records and
    the study as written (not through the module under test)."""
    out: dict[str, list[tuple[float, float, float]]] = {}
    for solver, sizes in NETWORKS.items():
        out[solver] = []
        for L, M in sizes:
            runs = [numbers(solver, L, M, s) for s in SEEDS]
            if (solver, M) == ("pinn", 80):
                runs.append((DIVERGED_SECONDS, math.inf, math.inf))  # the diverged run
            out[solver].append(tuple(float(np.median([r[i] for r in runs])) for i in range(3)))
    out["rfm"] = [tuple(float(np.median([numbers("rfm", 2, M, s)[i] for s in SEEDS])) for i in range(3))
                  for M in (800, 1600)]
    out["poly"] = [(s, J, l2) for k, J, l2, s in STUDY if k != 5] + [(0.2, 3e-9, 4e-8)]
    return out


def brute_front(points: list[tuple[float, float]]) -> set[tuple[float, float]]:
    """The points no other point weakly beats in both coordinates (strictly in one)."""
    return {p for p in points
            if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)}


def test_every_solver_a_series_with_its_points_and_the_front(results, tmp_path):
    recs = records_of(results)
    study = pd.read_csv(results / EXP / "study-poly-degree" / "runs.csv")
    drawn = plot_accuracy_cost(recs, EXP, tmp_path, study)
    assert [p.name for p in drawn.paths] == [f"{EXP}-accuracy-cost.png", f"{EXP}-accuracy-cost.pdf"]
    want = expected_points(results)
    for q, col in (("J", 1), ("l2", 2)):
        panel = drawn.panels[q]
        assert set(panel.series) == {r.solver for r in recs} == set(want)
        for solver, series in panel.series.items():
            got = [(p.cost[1], p.J[1], p.l2[1]) for p in series.points]
            assert len(got) == len(want[solver]), solver
            assert np.allclose(got, want[solver], rtol=1e-12), solver
        # the front, against a brute-force non-dominated set of every drawn point
        every = [(pt[0], pt[col]) for pts in want.values() for pt in pts]
        front = {tuple(xy) for xy in panel.front_xy.tolist()}
        assert front == brute_front(every) and len(front) >= 4  # poly's degrees, rfls, rfm: not one point
        assert list(panel.front_xy[:, 0]) == sorted(panel.front_xy[:, 0])  # by cost, error falling
        assert np.all(np.diff(panel.front_xy[:, 1]) < 0)
        # the paper's PINN and LySep levels: its published means (Table 3)
        rows = published()[EXP]["rows"]
        assert panel.levels["lysep"] == [r[q][0] for r in rows if r["model"] == "LySep"]
        assert panel.levels["pinn"] == [r[q][0] for r in rows if r["model"] == "PINN"]
    pinn80 = drawn.panels["l2"].series["pinn"].points[-1]
    assert (pinn80.runs, pinn80.left_out) == (4, 1)  # the diverged run: counted, +inf in the median
    assert pinn80.l2[2] < math.inf  # the bars: the finished runs
    poly = drawn.panels["l2"].series["poly"]
    assert [p.source for p in poly.points] == ["degree study"] * 5 + ["records"]


def test_the_caption_names_the_cpus_when_they_differ(results):
    recs = records_of(results)
    note = machines_note(solver_series(recs))
    assert "AMD EPYC, 2 CPUs: PINN, LySep, pinn-adam, rfls, rfm" in note and "Intel Xeon Processor, 2 CPUs: poly" in note
    same = [r for r in recs if r.solver != "poly"]
    assert machines_note(solver_series(same)) is None


def test_pareto_front_small_cases():
    c = np.array([1.0, 2.0, 3.0, 0.5, 2.0])
    e = np.array([1.0, 0.5, 0.6, 2.0, 0.5])  # 2 dominates 2 (tie) and 3; 3 is dominated by 1
    idx = pareto_front(c, e)
    assert list(idx) == [3, 0, 1]
    rng = np.random.default_rng(0)
    for _ in range(20):
        c, e = rng.random(12), rng.random(12)
        got = {(c[i], e[i]) for i in pareto_front(c, e)}
        assert got == brute_front(list(zip(c, e)))


def test_published_levels_only_where_the_paper_has_the_experiment():
    assert len(published_levels(EXP, "l2")["lysep"]) == 4
    assert published_levels("elliptic-2d-depth", "l2") == {}


def test_loss_draws_one_shot_solvers_as_levels_not_panels(results, tmp_path):
    recs = records_of(results)
    drawn = plot_loss(recs, EXP, tmp_path)
    assert set(drawn.panels) == {(3, 20), (3, 50), (3, 80)}  # the networks' sizes; no panel for poly, rfm
    for (L, M), panel in drawn.panels.items():
        for solver in ("pinn", "lysep", "pinn-adam"):
            n = sum(1 for r in recs if (r.solver, r.L, r.M) == (solver, L, M))
            assert panel.curves.get(solver, 0) == n
        assert not {"rfls", "rfm", "poly"} & set(panel.curves)  # never over an iteration axis
        labels = {lv.solver: [] for lv in panel.levels}
        for lv in panel.levels:
            labels[lv.solver].append(lv.label)
        assert labels["rfls"] == [f"rfls\n$L={L}, M={M}$"]  # its own panel's size only
        assert labels["poly"] == ["poly\n$k=5$, $P=462$"]
        assert labels["rfm"] == ["rfm\n$M=800$", "rfm\n$M=1600$"]
        rfls = next(lv for lv in panel.levels if lv.solver == "rfls")
        assert sorted(rfls.values) == sorted(numbers("rfls", L, M, s)[1] for s in SEEDS)


def test_cli_combined_figure(tmp_path):
    """``lysep plot EXP --combined``: the experiment's figures and the combined one; an experiment without
    records: exit 1 before any figure is written."""
    root = tmp_path / "results"
    for solver, M in (("pinn", 20), ("rfm", 800)):
        s, J, l2 = numbers(solver, 3 if solver == "pinn" else 2, M, 0)
        rec, params = synthetic_record(SPEC, solver, 3 if solver == "pinn" else 2, M, 0, J=J, l2=l2,
                                       iterations=ITERATIONS, history=one_shot_history(J) if solver == "rfm"
                                       else None, diagnostics={"cpu_seconds": s})
        store(root, rec, params)
    out = tmp_path / "figs"
    base = ["--results", str(root), "--iterations", str(ITERATIONS), "--out"]
    res = CliRunner().invoke(app, ["plot", EXP, "--combined"] + base + [str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{stem}.{ext}" for stem in ("accuracy-cost", f"{EXP}-accuracy-cost", f"{EXP}-loss") for ext in ("png", "pdf"))
    empty = CliRunner().invoke(app, ["plot", EXP, "elliptic-2d"] + base + [str(tmp_path / "none")])
    assert empty.exit_code == 1 and "elliptic-2d" in empty.output
    assert not (tmp_path / "none").exists() or not any((tmp_path / "none").iterdir())


def test_what_docs_reproduce_md_reads_in_the_archive():
    """docs/reproduce.md's reading of the archive's accuracy-cost figures: the front is poly, rfls and rfm
    (poly alone in 2-D; varpro-lm joins them in 10-D); the cheapest point at or below the paper's best LySep ℓ2 takes 0.007-1.8 CPU s,
    LySep's runs 24-1,500 s (medians per size); no PINN size reaches that level."""
    from lysep_cli.reports.accuracy_cost import medians, read_poly_study
    from lysep_cli.reports.selection import shown

    root = Path(__file__).resolve().parents[1] / "results" / "paper"
    specs = load_specs(default_config())
    names = ["elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d"]
    sel, _ = shown(root, [specs[n] for n in names], None, True, lambda _: None)
    reach, lysep = [], []
    for name in names:
        series = solver_series(sel.of(name), read_poly_study(root, name))
        costs, errors, who = medians(series, "l2")
        front = {who[i][0] for i in pareto_front(costs, errors)}
        want = {"poly"} if name == "elliptic-2d" else {"poly", "rfls", "rfm"}
        assert front == (want | {"varpro-lm"} if name == "elliptic-10d" else want), name
        level = min(published_levels(name, "l2")["lysep"])
        reach.append(min(c for c, e in zip(costs, errors) if e <= level))
        lysep += [p.cost[1] for p in series["lysep"].points]
        assert min(p.l2[1] for p in series["pinn"].points) > level, name
    assert 0.006 <= min(reach) < 0.0075 and 1.6 <= max(reach) <= 2.0  # 10-D: varpro-lm (3,20), 1.8 s
    assert 24 <= min(lysep) < 25 and 1400 <= max(lysep) <= 1500


def test_titles_give_the_seeds_per_solver():
    """The loss figure's title: seeds per solver where they differ, poly's one fit apart."""
    from lysep_cli.reports.plots import _seeds_note

    def rec(solver: str, seed: int):
        return synthetic_record(SPEC, solver, 3, 20, seed, J=1e-3, l2=1e-3, iterations=ITERATIONS)[0]

    recs = [rec("pinn", s) for s in range(10)] + [rec("lysep", s) for s in range(10)] + \
        [rec("pinn-adam", s) for s in range(3)] + [rec("poly", 0)]
    assert _seeds_note(recs) == "10 seeds: PINN, LySep; 3 seeds: pinn-adam; poly: one fit"


def test_a_cell_where_most_runs_diverged_has_no_point_and_the_caption_says_so():
    """The harder summary's rule (issue 55): one run of five finished -> median +inf, no point, named in the
    caption with 1/5; three of five -> a point at the third-best run, "k/n" said."""
    from lysep_cli.reports.accuracy_cost import drawable
    from lysep_cli.reports.plot_accuracy_cost import unfinished_note

    def recs(M: int, finished: int):
        out = []
        for seed in range(5):
            ok = seed < finished
            out.append(synthetic_record(SPEC, "pinn", 3, M, seed, J=0.1 * (seed + 1) if ok else None,
                                        l2=0.01 * (seed + 1) if ok else None, iterations=ITERATIONS,
                                        status="ok" if ok else "diverged")[0])
        return out
    series = solver_series(recs(10, 1) + recs(20, 3) + recs(30, 0))
    one, three, none = series["pinn"].points
    assert not drawable(one, "l2") and drawable(three, "l2") and not drawable(none, "J")
    assert three.l2[1] == pytest.approx(0.03) and three.left_out == 2  # 0.01, 0.02, 0.03, inf, inf
    note = unfinished_note({"": series}, "l2")
    assert "+∞" in note and "PINN (3,10) (1/5), PINN (3,30) (0/5)" in note and "(3,20)" not in note
    assert unfinished_note({"": solver_series(recs(20, 5))}, "l2") == ""


def test_sizes_are_named_with_their_depth():
    from lysep_cli.reports.plot_accuracy_cost import sizes_text

    assert sizes_text(["(2,50)", "(3,50)", "(4,50)", "(5,50)"]) == "L = 2–5, M = 50"
    assert sizes_text(["(3,30)", "(3,100)"]) == "L = 3, M = 30–100"
    assert sizes_text(["(2,10)", "(3,50)"]) == "2 sizes, L = 2–3, M = 10–50"


def test_a_twin_takes_its_solver_s_look_and_no_two_solvers_share_one():
    """Solvers beyond the eight first ones (varpro's three) and their "(torch init)" twins: each twin hollow in
    its own solver's colour and marker, and no two solvers of one figure alike (a twin once took the next
    free colour, so varpro-lm drew in varpro-gd's)."""
    from lysep_cli.reports.plot_accuracy_cost import TWIN_NOTE, twin_looks
    from lysep_cli.solvers import SOLVERS
    from lysep_cli.reports.selection import display_name

    solvers = sorted(SOLVERS) + ["a-new-solver"]
    series = {s: None for s in solvers} | {f"{display_name(s)}{TWIN_NOTE}": None for s in solvers}
    styles, hollow = twin_looks(series)
    assert hollow == {f"{display_name(s)}{TWIN_NOTE}" for s in solvers}
    for s in solvers:
        assert styles[f"{display_name(s)}{TWIN_NOTE}"] == styles[s]
    looks = [styles[s][:2] for s in solvers]
    assert len(set(looks)) == len(looks), looks
