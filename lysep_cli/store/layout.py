"""The layout of a results directory, in one place::

    <results>/<experiment>/data.npz                               train, test (N x n_in)
    <results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.json       the record (lysep_cli/store/schema.py)
    <results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.npz        its weights and histories
    <results>/<experiment>/<solver>/L<L>-M<M>/.seed-<s>.ckpt.npz  a LySep run's checkpoint while it runs
    <results>/<experiment>/<solver>/L<L>-M<M>/.runs.lock          the cell's lock file (lysep_cli/store/locks.py)

:class:`ResultsDir` builds these paths; :meth:`RunPath.parse` reads one back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_CELL = re.compile(r"L(?P<L>[0-9]+)-M(?P<M>[0-9]+)")
_SEED = re.compile(r"\.?seed-(?P<seed>[0-9]+)(?:\.ckpt)?")
LOCK_NAME = ".runs.lock"


@dataclass(frozen=True)
class RunPath:
    """Where one run lives: (experiment, solver, L, M, seed)."""

    experiment: str
    solver: str
    L: int
    M: int
    seed: int

    @classmethod
    def parse(cls, path: str | Path) -> "RunPath":
        """The run of a record, weights or checkpoint file; ValueError when ``path`` is not laid out so."""
        p = Path(path)
        stem = p.name.split(".npz")[0].split(".json")[0]
        cell, seed = _CELL.fullmatch(p.parent.name), _SEED.fullmatch(stem)
        if cell is None or seed is None or len(p.parts) < 4:
            raise ValueError(f"{path}: not <results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.json")
        return cls(p.parent.parent.parent.name, p.parent.parent.name, int(cell["L"]), int(cell["M"]),
                   int(seed["seed"]))


@dataclass(frozen=True)
class ResultsDir:
    """A results directory (``results/paper/`` by default on the command line)."""

    root: Path

    def __init__(self, root: str | Path) -> None:
        object.__setattr__(self, "root", Path(root))

    def experiment(self, experiment: str) -> Path:
        return self.root / experiment

    def data(self, experiment: str) -> Path:
        return self.root / experiment / "data.npz"

    def cell(self, experiment: str, solver: str, L: int, M: int) -> Path:
        """The folder of the runs of one (experiment, solver, L, M)."""
        return self.root / experiment / solver / f"L{L}-M{M}"

    def record(self, run: RunPath) -> tuple[Path, Path]:
        """(json_path, npz_path) of one run."""
        base = self.cell(run.experiment, run.solver, run.L, run.M) / f"seed-{run.seed}"
        return base.with_suffix(".json"), base.with_suffix(".npz")

    def checkpoint(self, run: RunPath) -> Path:
        """A run's checkpoint: beside its record, hidden."""
        return self.cell(run.experiment, run.solver, run.L, run.M) / f".seed-{run.seed}.ckpt.npz"

    def lock(self, experiment: str, solver: str, L: int, M: int) -> Path:
        """The lock file of a cell."""
        return self.cell(experiment, solver, L, M) / LOCK_NAME

    def record_files(self, experiments: list[str] | None = None) -> list[Path]:
        """Every ``seed-*.json`` (optionally only under these experiments), sorted."""
        if not self.root.is_dir():
            return []
        names = experiments if experiments else sorted(p.name for p in self.root.iterdir() if p.is_dir())
        return [p for name in names for p in sorted((self.root / name).glob("*/L*-M*/seed-*.json"))]
