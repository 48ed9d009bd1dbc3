"""Variable projection in `lysep study harder-summary` (lysep_cli/reports/harder_varpro.py, held_out.py; issue 54
item 4): its sizes picked by the held-out residual, never training J; the verdict at equal CPU and the
plain-words answer flipping with the planted numbers; missing records named; PINN-GD's second step rule
beside the first (docs/harder.md, "Variable projection in the answer")."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from lysep_cli.cli import app
from lysep_cli.reports import harder_summary as hs
from lysep_cli.reports import harder_varpro as hv
from lysep_cli.reports.harder_summary import Cell

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "harder"
CHOSEN = RESULTS / "experiments.yaml"
cli = CliRunner()


def cell(solver: str, L: int, M: int, J: float, l2: float, cpu: float, init: str = "paper", held: float = math.nan,
         move: float = math.nan) -> Cell:
    return Cell(solver, init, L, M, 5, 5, (J, 0.1 * J), (l2, 0.1 * l2), l2, cpu, J_held=held, move=move)


def rec(solver: str, L: int, M: int, J: float, l2: float, held: float, seed: int = 0, move: float = 0.5):
    """A stand-in run record with its planted held-out J (read by the ``held`` function below)."""
    return SimpleNamespace(solver=solver, L=L, M=M, seed=seed, ok=True, final=SimpleNamespace(J=J, l2=l2),
                           compute_seconds=1.0, history={"J": [1.0, J]}, held=held,
                           diagnostics={"move_W1": move, "move_W2": move / 2})


def opponents(init: str = "paper") -> list[Cell]:
    """LySep, PINN-GD, pinn-lbfgs (5 s at (3,10); (3,50), 40 s, their lowest training J), rfm and poly (0.1 s):
    ℓ2 1e-1 … 1e-3."""
    net = [cell(s, 3, M, J / M, l2, cpu, init) for s, J, l2 in (("lysep", 1e-4, 1e-1), ("pinn", 1e-3, 5e-2),
                                                               ("pinn-lbfgs", 1e-7, 1e-3))
           for M, cpu in ((10, 5.0), (50, 40.0))]
    return net + [cell("rfm", 2, 500, 1e-9, 1e-2, 0.1), cell("poly", 2, 66, 1e-5, 2e-2, 0.1)]


def test_the_held_out_residual_picks_the_size_not_training_J():
    # (3,10): the lowest training J (it interpolates) but the worst held-out J and ℓ2; (3,20) the lowest held-out J
    recs = [rec("varpro-lm", 3, 10, 1e-12, 0.5, 1e-2, s) for s in range(3)] + \
           [rec("varpro-lm", 3, 20, 1e-8, 1e-4, 1e-6, s) for s in range(3)]
    cs = hs.cells(recs, [], held=lambda r: r.held)
    assert [c.J_held for c in cs] == pytest.approx([1e-2, 1e-6])
    assert cs[0].move == pytest.approx(0.5)  # the largest hidden W_l's move, median over the runs
    pick = hs.chosen(cs, "varpro-lm", "paper")
    assert (pick.L, pick.M) == (3, 20)
    # training J would have picked (3,10): the same cells with the held-out J swapped pick (3,10)
    swapped = hs.cells(recs, [], held=lambda r: 1e-2 if r.M == 20 else 1e-6)
    assert (hs.chosen(swapped, "varpro-lm", "paper").M) == 10
    # every other solver is still picked by training J, whatever a held-out J says
    others = [cell("lysep", 3, 10, 1.0, 0.5, 1, held=1e-9), cell("lysep", 3, 20, 0.5, 0.6, 1, held=1.0)]
    assert hs.chosen(others, "lysep", "paper").M == 20
    # across the methods: the lowest held-out J, not the lowest training J
    methods = [cell("varpro-lm", 3, 10, 1e-12, 0.5, 2, held=1e-3), cell("varpro-gd", 3, 10, 1e-8, 1e-3, 4, held=1e-5)]
    assert hv.best(methods, "paper").solver == "varpro-gd"
    # a varpro cell without a held-out J (weights unreadable) is never picked over one with it
    assert hs.chosen([cell("varpro-lm", 3, 10, 1e-12, 0.5, 2), cell("varpro-lm", 3, 20, 1.0, 0.5, 2, held=1.0)],
                     "varpro-lm", "paper").M == 20


def test_held_out_J_is_the_pinn_loss_of_the_saved_weights_at_the_test_points(tmp_path, monkeypatch):
    from lysep_cli.numerics import metrics
    from lysep_cli.numerics.dataset import experiment_data
    from lysep_cli.reports import held_out
    from lysep_cli.reports.selection import load_selection
    from lysep_cli.specs import default_config, load_specs
    from lysep_cli.store.records import load_params, record_paths

    paper = ROOT / "results" / "paper"
    spec = load_specs(default_config())["elliptic-2d"]
    recs = [r for r in load_selection(paper, [spec], None, lambda m: None).of("elliptic-2d")
            if r.solver == "varpro-lm" and r.M == 30]
    assert recs, "the archive holds varpro-lm's elliptic-2d (3,30) runs"
    r = recs[0]
    cache = tmp_path / "held-out.csv"
    held = held_out.HeldOut(paper, [spec], cache)
    value = held(r)
    test = held_out.data_at_test_points(spec)
    train = experiment_data(spec).training
    assert test.Z.shape[1] == spec.n_test and not (test.Z.shape == train.Z.shape and (test.Z == train.Z).all())
    # the same weights at the training points give the record's own final J: the right weights are read
    params = load_params(record_paths(paper, r.experiment, r.solver, r.L, r.M, r.seed)[1])
    assert metrics.loss(params, train.Z, train.coef, train.Y) == pytest.approx(r.final.J, rel=1e-9)
    assert value == metrics.loss(params, test.Z, test.coef, test.Y)
    assert math.isfinite(value) and value > 0 and value != pytest.approx(r.final.J, rel=1e-3)
    # kept by the weights' hash: read back to the bit without a forward pass; other weights computed afresh
    assert held.save() == cache and held.save() is None  # nothing new the second time
    monkeypatch.setattr(held_out.metrics, "loss", lambda *a: 0.5)
    again = held_out.HeldOut(paper, [spec], cache)
    assert again(r) == value and again.new == 0
    assert again(SimpleNamespace(**{**vars(r), "weights_sha256": "0" * 64})) == 0.5 and again.new == 1
    # a record whose weights are gone: NaN, not a crash, and not kept
    gone = SimpleNamespace(**{**vars(r), "seed": 99, "weights_sha256": "1" * 64})
    assert math.isnan(again(gone)) and again.new == 1


def test_varpro_against_each_opponent_at_equal_cpu():
    vp = [cell("varpro-lbfgs", 3, 10, 1e-9, 2e-4, 8.0, held=1e-8)]
    cs = vp + opponents()
    by = {o: hv.versus(cs, "paper", o) for o in hv.OPPONENTS}
    # within varpro's 8 s: the 5 s cells of the networks, rfm's and poly's cells; varpro's budget
    assert {o: (v.other.M, v.budget) for o, v in by.items()} == {
        "lysep": (10, "varpro"), "pinn": (10, "varpro"), "pinn-lbfgs": (10, "varpro"), "rfm": (500, "varpro"),
        "poly": (66, "varpro")}
    assert all(v.wins for v in by.values())
    assert hv.versus_text(by["rfm"]) == "yes: 2.00e-04 vs 1.00e-02 (varpro 80× its CPU)"
    # varpro cheaper than every cell of an opponent: the opponent's chosen cell (lowest training J: (3,50))
    # sets the budget, varpro's pick is compared at a fraction of its CPU
    cheap = [cell("varpro-lm", 3, 10, 1e-9, 2e-4, 1.0, held=1e-8)] + opponents()
    v = hv.versus(cheap, "paper", "lysep")
    assert (v.other.M, v.budget, v.wins) == (50, "lysep", True) and v.ratio == pytest.approx(1 / 40)
    # another init's cells never enter: under torch init there is no varpro pick
    assert hv.versus(cs, "torch", "lysep") is None
    # an opponent whose every cell diverged (more than half its runs): no comparison, and the row says why
    gone = [c if c.solver != "pinn" else Cell("pinn", "paper", c.L, c.M, 5, 1, c.J, c.l2, math.inf, c.cpu)
            for c in cs if c.solver != "poly"]
    assert hv.versus(gone, "paper", "pinn") is None
    row = hv.verdict_row("a-k1", gone, "paper")
    assert row[4] == "— (no usable cell: its runs diverged)" and row[7] == "— (not run)"
    assert hv.beaten(gone, "paper", "pinn") and hv.beats_all(gone, "paper", hv.NETWORKS)  # diverged: beaten, as in (a)
    assert not hv.beaten(gone, "paper", "poly") and not hv.beats_all(gone, "paper")  # not run: not beaten


def test_the_verdict_and_the_plain_words_answer_flip_with_the_planted_numbers():
    good = {"a-k1": [cell("varpro-lm", 3, 10, 1e-9, 2e-4, 8.0, held=1e-8, move=0.3)] + opponents(),
            "b-k2": [cell("varpro-gd", 3, 20, 1e-9, 1e-4, 8.0, held=1e-8, move=1.2)] + opponents()}
    text = hv.answer_sentence(good)
    assert text.startswith("**Separating the output layer pays when the hidden layers are trained on the reduced "
                           "loss**: in all 2 (problem, init) pairs")
    assert "results/harder/summary/answer.md" in text
    assert ("it beats all three networks trained without it (LySep, PINN-GD, pinn-lbfgs) in 2 of 2 and both "
            "one-solve fits (rfm, poly) in 2 of 2") in text
    assert "all five in 2 of 2" in hv.tally(good) and "moved 0.3–1.2" in hv.tally(good)
    # flip one pair: varpro's ℓ2 above pinn-lbfgs's (1e-3) there
    mixed = {**good, "b-k2": [cell("varpro-gd", 3, 20, 1e-9, 5e-3, 8.0, held=1e-8)] + opponents()}
    text = hv.answer_sentence(mixed)
    assert text.startswith("**Separating the output layer pays in 1 of 2 (problem, init) pairs") and "(a-k1)" in text
    assert "networks trained without it (LySep, PINN-GD, pinn-lbfgs) in 1 of 2 and both one-solve fits" in text
    where = hv._where([("a", "paper"), ("b", "paper"), ("b", "torch"), ("c", "torch")])
    assert where == "b under both inits; a, c (torch init)"
    row = hv.verdict_row("b-k2", mixed["b-k2"], "paper")
    assert row[5].startswith("no: 5.00e-03 vs 1.00e-03") and row[3].startswith("yes")
    # flip both: above every opponent
    bad = {n: [cell("varpro-lm", 3, 10, 1e-9, 0.5, 8.0, held=1e-8)] + opponents() for n in good}
    assert hv.answer_sentence(bad).startswith("**Separating the output layer does not pay even when")
    assert "in none of the 2" in hv.answer_sentence(bad) and "all five in 0 of 2" in hv.tally(bad)
    assert "pinn-lbfgs) in 0 of 2 and both one-solve fits (rfm, poly) in 0 of 2" in hv.answer_sentence(bad)
    assert hv.answer_sentence({"a-k1": opponents()}).endswith("not known yet: no varpro records.")


def test_missing_varpro_records_are_named():
    want = {m: object() for m in hs.VARPRO}
    specs = [SimpleNamespace(name=n, solvers=want, seeds=(0, 1), sizes_for=lambda m: ((3, 10), (3, 20)))
             for n in ("a-k1", "a-k1-torch", "b-k2")]
    have = {"a-k1": [rec(m, 3, M, 1e-9, 1e-3, 1e-8, s) for m in hs.VARPRO for M in (10, 20) for s in (0, 1)],
            "a-k1-torch": [rec(m, 3, 10, 1e-9, 1e-3, 1e-8) for m in ("varpro-lm", "varpro-lbfgs")],
            "b-k2": []}
    line = hv.coverage(specs, lambda n: have[n])
    assert line == ("Variable projection's records missing in 6 of 9 (experiment, method); none: a-k1-torch "
                    "(varpro-gd), b-k2; incomplete: a-k1-torch varpro-lm (1 of 4 runs), a-k1-torch varpro-lbfgs "
                    "(1 of 4 runs).")
    assert hv.coverage(specs[:1], lambda n: have[n]) == ""
    no_blocks = [SimpleNamespace(name="a-k1", solvers={"pinn": object()}, seeds=(0,), sizes_for=lambda m: ())]
    assert "names no varpro solver" in hv.coverage(no_blocks, lambda n: [])
    # a problem without varpro records: the answer says so and still gives the old verdicts
    by = {"a-k1": opponents()}
    text = hs.answer(by, None, hv.addenda(by, line))
    assert line in text and "Variable projection: no (problem, init) pair has varpro records yet." in text
    assert text.startswith("| " + " | ".join(hs.HEADER) + " |")


def test_the_two_pinn_verdicts_side_by_side():
    lysep = [cell("lysep", 3, M, 1.0, 0.1, 10.0, init=i) for M in (10, 20) for i in hs.INITS]
    old = [cell("pinn", 3, M, 2.0, 0.9, 1.0, init=i) for M in (10, 20) for i in hs.INITS]  # stuck: LySep wins
    by = {"a-k1": lysep + old + [cell("rfm", 2, 500, 1e-9, 1e-2, 0.1)]}
    new = {"a-k1": [cell("pinn", 3, M, 0.1, 0.01, 1.0, init=i) for M in (10, 20) for i in hs.INITS]}
    add = hs.pinn_step2_addenda(by, new, "results/harder-pinn-step2")
    (line,) = add.after_tally
    assert line.startswith("PINN-GD under the second step rule (docs/varpro.md), its records in "
                           "results/harder-pinn-step2: over the 2 (problem, init) pairs with them, LySep's mean ℓ2 "
                           "beats PINN's at most sizes in 0 (")
    assert "with the first rule's PINN-GD over the same pairs 2." in line
    assert "| a-k1 | paper | 2 of 2 sizes (ℓ2), 2 of 2 (J) | 0 of 2 sizes (ℓ2), 0 of 2 (J) |" in add.answer
    text = hs.answer(by, None, add)
    old_line = next(ln for ln in text.splitlines() if ln.startswith("Over the "))
    assert "beats PINN's at most sizes in 2 " in old_line and line in text  # both printed, the old one unchanged
    # only one init rerun: the other named
    half = hs.pinn_step2_addenda(by, {"a-k1": [c for c in new["a-k1"] if c.init == "paper"]}, "D")
    assert "over the 1 (problem, init) pairs" in half.after_tally[0]
    assert "no second-rule records for a-k1 (torch init)" in half.after_tally[0]
    # none given: one line, the old verdict stays
    (none,) = hs.pinn_step2_addenda(by, None, "--pinn-step2 not given").after_tally
    assert none == ("PINN-GD under the second step rule (docs/varpro.md): no records (--pinn-step2 not given); "
                    "verdict (a) and the count above are the first rule's.")


def test_command_names_what_is_missing_and_refuses_a_bad_step2_dir(tmp_path):
    """End to end on one committed problem whose experiments file asks for a varpro-lm no record matches (7
    iterations: whatever varpro runs the archive holds, none is this one)."""
    import yaml

    from lysep_cli.specs import default_config

    doc = yaml.safe_load(CHOSEN.read_text())
    block = yaml.safe_load(default_config().read_text())["experiments"]["elliptic-2d"]["solvers"]["varpro-lm"]
    doc["experiments"] = {k: v for k, v in doc["experiments"].items() if k.startswith("osc-ball-2d-k12")}
    for k, v in doc["experiments"].items():
        torch = {"init": "torch"} if k.endswith("-torch") else {}
        v["solvers"]["varpro-lm"] = {**block, "max_iterations": 7, **torch}
    config = tmp_path / "experiments.yaml"
    config.write_text(yaml.safe_dump(doc))
    r = cli.invoke(app, ["study", "harder-summary", "--config", str(config), "--results", str(RESULTS), "--brief"])
    assert r.exit_code == 0, r.output
    assert ("Variable projection's records missing in 2 of 2 (experiment, method); none: osc-ball-2d-k12 "
            "(varpro-lm), osc-ball-2d-k12-torch (varpro-lm).") in r.output
    assert "no records (--pinn-step2 not given)" in r.output and "not known yet: no varpro records." in r.output
    assert "| osc-ball-2d-k12 | 1.21e+00 (3,50)" in r.output  # the old verdicts stay
    r = cli.invoke(app, ["study", "harder-summary", "--config", str(config), "--results", str(RESULTS),
                         "--pinn-step2", str(tmp_path / "none")])
    assert r.exit_code == 2 and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    # a second-rule directory without records: the paper init's step unchanged (the first rule's runs count),
    # the torch twin's changed (no records there: named)
    step2 = tmp_path / "step2"
    step2.mkdir()
    doc["experiments"]["osc-ball-2d-k12-torch"]["solvers"]["pinn"].update(lr=0.00166923, lr_final=0.000166923)
    (step2 / "experiments.yaml").write_text(yaml.safe_dump(doc))
    r = cli.invoke(app, ["study", "harder-summary", "--config", str(config), "--results", str(RESULTS),
                         "--pinn-step2", str(step2)])
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("PINN-GD under the second step rule"))
    assert "over the 1 (problem, init) pairs with them, LySep's mean ℓ2 beats PINN's at most sizes in 0 " in line
    assert line.endswith("with the first rule's PINN-GD over the same pairs 0; no second-rule records for "
                         "osc-ball-2d-k12 (torch init).")
    assert "| osc-ball-2d-k12 | paper | 1 of 4 sizes (ℓ2), 4 of 4 (J) | 1 of 4 sizes (ℓ2), 4 of 4 (J) |" in r.output
