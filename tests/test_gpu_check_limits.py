"""benchmarks/gpu_check.py survives a slow device (issue 46, item 3): each section has its own time limit, a
section past it is stopped with a line saying so (what it wrote stays), one with no time left is not run (a
line says why), the next still runs; the whole cell is sized from the archive's trials per sweep; the stand-in
device (benchmarks/stand_in.py) sleeps per counted event."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / f"benchmarks/{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gc():
    return _load("gpu_check")


def test_a_section_past_its_limit_is_stopped_and_the_next_runs(gc, tmp_path):
    out = gc.Report(tmp_path / "check")
    budget = gc.Budget(30.0)

    def slow():
        out("## A slow section\n")
        out("- a first row")
        while True:  # a device far slower than predicted
            time.sleep(0.01)

    t = time.perf_counter()
    assert gc.section(out, budget, "A slow section", 0.5, slow, needs=0.1)
    assert time.perf_counter() - t < 5.0
    assert gc.section(out, budget, "The next", 5.0, lambda: out("- the next section's row"))
    assert not gc.section(out, budget, "A failing one", 5.0, lambda: 1 / 0)
    text = (tmp_path / "check.md").read_text()
    assert "- a first row" in text and "**A slow section: stopped at its time limit of 0 s**" in text
    assert "- the next section's row" in text and "ZeroDivisionError" in text
    assert out.figures["stopped_at_limit"] == ["A slow section"]
    late = gc.Budget(2.0)
    assert gc.section(out, late, "Too late", 60.0, lambda: out("never"), needs=10.0)
    assert "## Too late: not run (2 s of the budget left, it needs ~10 s)" in (tmp_path / "check.md").read_text()


def test_the_whole_cell_is_sized_from_the_archives_trials(gc, tmp_path):
    out = gc.Report(tmp_path / "check")
    # early sweeps at 7 trials, the archive's 14: a full sweep predicted 2 x 1.15 x the early rate
    assert gc.whole_cell_sweeps(2000, 0.02, 7.0, 14.0, 150.0, out) == 2000  # 0.046 s x 2000 = 92 s fits in 115
    assert gc.whole_cell_sweeps(2000, 0.05, 7.0, 14.0, 150.0, out) == 1000  # 115 / 0.115 = 1000
    assert gc.whole_cell_sweeps(2000, 0.05, 14.0, 14.0, 150.0, out) == 2000  # 115 / 0.0575 = 2000
    assert gc.whole_cell_sweeps(2000, 3.0, 7.0, 14.0, 150.0, out) == 10  # 115 / 6.9 = 16.7 -> 10
    # section 3a stopped at its limit: its time over its 7 sweeps is a lower bound of the rate
    assert gc.whole_cell_sweeps(2000, None, None, 14.0, 150.0, out, rate_lower=30.0 / 7) == 10
    text = (tmp_path / "check.md").read_text() if (tmp_path / "check.md").exists() else "\n".join(out.lines)
    assert "the whole cell does not fit in its time limit" in text and "x 2.00 (the archive's 14.0 trials" in text


def test_the_archive_trials_digest_is_the_archives(gc):
    digest = gc.archive_trials(ROOT / "nowhere", list(gc.PAPER))
    assert digest == {}
    if (ROOT / "results/paper").is_dir():
        here = gc.archive_trials(ROOT / "results/paper", ["elliptic-10d"])
        saved = {k: v for k, v in gc.archive_trials.__globals__["json"].loads(gc.DIGEST_TRIALS.read_text()).items()
                 if k.startswith("elliptic-10d|")}
        assert {f"{e}|{L}|{M}": v for (e, L, M), v in here.items()} == saved
        assert 13.0 < here[("elliptic-10d", 3, 150)] < 15.0


def test_the_stand_in_sleeps_per_counted_event(monkeypatch):
    stand_in = _load("stand_in")
    from lysep_cli.accel import backend as backends

    # install() rebinds both module attributes: monkeypatch restores them for the tests that follow
    monkeypatch.setattr(backends, "resolve", backends.resolve)
    monkeypatch.setattr(backends, "gpu_count", backends.gpu_count)
    try:
        be = stand_in.install(20.0)  # 20 x 42.6 us = 0.85 ms an event
        assert backends.resolve("cuda") is be and be.fingerprint("stacked-x")["cuda"] == "none"
        x = be.asarray(np.ones(4))  # an upload
        t = time.perf_counter()
        for _ in range(20):
            x = x + 1.0  # a launch each
        assert time.perf_counter() - t >= 20 * 20 * stand_in.CALIBRATED_S
        assert be.host(x).tolist() == [21.0] * 4
    finally:
        sys.modules["launch_count"].DELAY_S = 0.0
