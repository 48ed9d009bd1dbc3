"""lysep plot: the three figures come out as non-empty PNG and PDF files."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from lysep_cli.plots import plot_experiment

EXP = "parabolic-5d"
ITERATIONS = 30


def write_record(root: Path, solver: str, L: int, M: int, seed: int, *, diverged: bool = False,
                 factor: float | None = 182.0) -> None:
    """A record in the documented layout (strict JSON: non-finite values are null)."""
    k = np.arange(ITERATIONS + 1)
    J = 10.0 ** (-1 - 4 * k / ITERATIONS - 0.1 * seed)
    J_S = J / (3.0 + seed) if solver == "lysep" else None
    status, at = "ok", None
    J = [float(v) for v in J]
    if diverged:
        status, at = "diverged", 20
        J = J[:20] + [None] * (ITERATIONS + 1 - 20)
    rec = {
        "experiment": EXP, "solver": solver, "L": L, "M": M, "seed": seed, "iterations": ITERATIONS,
        "settings": {}, "status": status, "diverged_at": at, "seconds": 0.5,
        "final": {"J": J[-1], "J_S": None if J_S is None else float(J_S[-1]), "l2": 1e-3},
        "bound": {"factor": factor, "violations": 0} if solver == "lysep" else None,
        "history": {"J": J, "J_S": None if J_S is None else [float(v) for v in J_S]},
        "extra": {},
    }
    d = root / EXP / solver / f"L{L}-M{M}"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{seed}.json").write_text(json.dumps(rec, allow_nan=False))


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
    paths = plot_experiment(root, EXP)
    out = root / EXP / "figures"
    _check_files(paths, [f"{EXP}-loss", f"{EXP}-loss-JS", f"{EXP}-bound-ratio"], out)


def test_single_size_custom_dir_without_lysep(tmp_path):
    root = tmp_path / "results"
    write_record(root, "pinn", 3, 20, 0)
    write_record(root, "pinn", 3, 20, 1)
    out = tmp_path / "figs"
    paths = plot_experiment(root, EXP, out)
    _check_files(paths, [f"{EXP}-loss"], out)


def test_lysep_without_bound_factor(tmp_path):
    root = tmp_path / "results"
    write_record(root, "lysep", 3, 20, 0, factor=None)
    paths = plot_experiment(root, EXP, tmp_path / "figs")
    assert len(paths) == 6


def test_no_records(tmp_path):
    with pytest.raises(FileNotFoundError):
        plot_experiment(tmp_path / "results", EXP)
