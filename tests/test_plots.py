"""lysep plot: the four figures come out as non-empty PNG and PDF files."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from lysep_cli.reports.plots import plot_experiment
from lysep_cli.store.records import load_records
from lysep_cli.reports.selection import select
from lysep_cli.specs import default_config, load_specs

from foundation_helpers import store, synthetic_record

EXP = "parabolic-5d"
ITERATIONS = 30
SPEC = load_specs(default_config())[EXP]


def write_record(root: Path, solver: str, L: int, M: int, seed: int, *, diverged: bool = False,
                 factor: float | None = 182.0) -> None:
    """A valid record (and weights) in the documented layout."""
    k = np.arange(ITERATIONS + 1)
    J = [float(v) for v in 10.0 ** (-1 - 4 * k / ITERATIONS - 0.1 * seed)]
    J_S = [v / (3.0 + seed) for v in J] if solver == "lysep" else None
    status = "ok"
    if diverged:
        status = "diverged"
        J = J[:21]
        J[20] = float("nan")
    rec, params = synthetic_record(
        SPEC, solver, L, M, seed, J=None if diverged else J[-1], l2=1e-3,
        J_S=None if J_S is None else J_S[-1], iterations=ITERATIONS, status=status,
        history={"J": J, "J_S": None if J_S is None else J_S[:len(J)]},
        bound={"factor": factor, "violations": 0} if solver == "lysep" else None, seconds=0.5)
    store(root, rec, params)


def records_of(root: Path):
    return select(load_records(root, [EXP]), [SPEC], ITERATIONS).of(EXP)


def _check_files(paths: list[Path], stems: list[str], out_dir: Path) -> None:
    assert [p.name for p in paths] == [f"{s}.{ext}" for s in stems for ext in ("png", "pdf")]
    for p in paths:
        assert p.parent == out_dir and p.is_file() and p.stat().st_size > 1000
        head = p.read_bytes()[:8]
        if p.suffix == ".png":
            assert head == b"\x89PNG\r\n\x1a\n"
            img = mpimg.imread(p)
            assert img.shape[0] > 300 and img.shape[1] > 300
            assert img[..., :3].std() > 0  # not a blank canvas
        else:
            assert head.startswith(b"%PDF")


def test_all_three_figures(tmp_path):
    root = tmp_path / "results"
    for L, M in [(3, 20), (3, 50), (3, 80)]:
        for s in range(3):
            write_record(root, "pinn", L, M, s, diverged=(M == 80 and s == 2))
            write_record(root, "lysep", L, M, s)
        write_record(root, "rfls", L, M, 0)
    out = root / EXP / "figures"
    paths = plot_experiment(records_of(root), EXP, out)
    _check_files(paths, [f"{EXP}-loss", f"{EXP}-loss-JS", f"{EXP}-bound-ratio", f"{EXP}-accuracy-cost"], out)


def test_single_size_custom_dir_without_lysep(tmp_path):
    root = tmp_path / "results"
    write_record(root, "pinn", 3, 20, 0)
    write_record(root, "pinn", 3, 20, 1)
    out = tmp_path / "figs"
    paths = plot_experiment(records_of(root), EXP, out)
    _check_files(paths, [f"{EXP}-loss", f"{EXP}-accuracy-cost"], out)


def test_lysep_without_bound_factor(tmp_path):
    root = tmp_path / "results"
    write_record(root, "lysep", 3, 20, 0, factor=None)
    paths = plot_experiment(records_of(root), EXP, tmp_path / "figs")
    assert len(paths) == 8


def test_no_records(tmp_path):
    with pytest.raises(ValueError):
        plot_experiment([], EXP, tmp_path / "figs")
    assert not (tmp_path / "figs").exists()


def test_the_same_records_give_the_same_bytes(tmp_path):
    """No creation date in the PDFs: replotting an unchanged archive changes no file (no git churn)."""
    root = tmp_path / "results"
    write_record(root, "lysep", 3, 20, 0)
    out = root / EXP / "figures"
    first = {p: p.read_bytes() for p in plot_experiment(records_of(root), EXP, out)}
    import time
    time.sleep(1.1)  # a creation date would now differ by a second
    second = {p: p.read_bytes() for p in plot_experiment(records_of(root), EXP, out)}
    assert first == second


def test_seeds_note_names_a_seed_free_solver_apart():
    """Titles count the seeds of the seeded solvers; poly's single fit is named as one fit, not a seed."""
    from lysep_cli.reports.plots import _seeds_note

    def rec(solver: str, seed: int):
        return synthetic_record(SPEC, solver, 3, 20, seed, J=1e-3, l2=1e-3, iterations=ITERATIONS)[0]

    seeded = [rec("pinn", s) for s in range(3)] + [rec("lysep", s) for s in range(3)]
    assert _seeds_note(seeded) == "3 seeds"
    assert _seeds_note(seeded[:1]) == "1 seed"
    assert _seeds_note(seeded + [rec("poly", 0)]) == "3 seeds; poly: one fit"
    assert _seeds_note([rec("poly", 0)]) == "poly: one fit"


def test_a_history_reaching_1e300_keeps_the_finished_curves_in_frame(tmp_path):
    """Issue 55: a diverged PINN whose J reaches 1e300 (5.9e304 in the harder suite) collapsed the log
    autoscale to [1, 10], every finished curve off the frame.  The axis now spans the finished runs and stops
    DIVERGED_HEADROOM above their largest J."""
    from lysep_cli.reports.plots import DIVERGED_HEADROOM, plot_loss

    root = tmp_path / "results"
    for s in range(3):
        write_record(root, "pinn", 3, 20, s)  # J from 1e-1 down to ~1e-5.2
    k = np.arange(ITERATIONS + 1)
    blown = [float(v) for v in 10.0 ** (1 + 10 * k[:31])]  # 10 ... 1e301
    blown[30] = 1e300
    rec, params = synthetic_record(SPEC, "pinn", 3, 20, 3, J=None, l2=None, iterations=ITERATIONS,
                                   status="diverged", history={"J": blown[:31], "J_S": None}, seconds=0.5)
    store(root, rec, params)
    records = records_of(root)
    assert sum(not r.ok for r in records) == 1
    lo, hi = plot_loss(records, EXP, tmp_path / "figs").panels[(3, 20)].ylim
    finished = [v for r in records if r.ok for v in r.history["J"]]
    assert lo <= min(finished) and max(finished) < hi <= max(finished) * DIVERGED_HEADROOM * 3  # 3: the 5 % margin
    assert math.log10(hi / lo) > 5  # not a collapsed [1, 10]
