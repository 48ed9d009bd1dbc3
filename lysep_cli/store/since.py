"""The runs of a results directory added or changed since a git revision (``lysep verify --since REV``).

A reviewer checks a change of the archive at a cost proportional to the change: the record and weights files
under the results directory that differ from ``REV`` (committed since, staged, edited, or new and not yet
committed) name their runs (:class:`~lysep_cli.store.layout.RunPath`); a changed ``data.npz`` names every run
of its experiment.  Files removed since ``REV`` are counted: a removed run cannot be checked, only named.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from lysep_cli.specs import BadInput
from lysep_cli.store.layout import RunPath

#: git's answer is bounded in time: a results directory is not a place to wait on
GIT_SECONDS = 60


@dataclass(frozen=True)
class Changed:
    """What differs from the revision under one results directory."""

    runs: frozenset[tuple[str, str, int, int, int]] = frozenset()
    """(experiment, solver, L, M, seed) of every record or weights file added or changed"""
    experiments: frozenset[str] = frozenset()
    """experiments whose data.npz was added or changed (all their runs count as changed)"""
    removed: tuple[str, ...] = field(default_factory=tuple)
    """record files (relative paths) removed since the revision"""

    def covers(self, cell: tuple[str, str, int, int, int]) -> bool:
        return cell in self.runs or cell[0] in self.experiments


def _git(results: Path, *args: str) -> list[str]:
    """The lines git prints, run in ``results`` (paths relative to it); BadInput in one line on failure."""
    try:
        done = subprocess.run(["git", "-C", str(results), *args], capture_output=True, text=True,
                              timeout=GIT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BadInput(f"--since: git could not be run in {results} ({exc})") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise BadInput(f"--since: {why}")
    return [line for line in done.stdout.splitlines() if line]


def changed_since(results: Path, rev: str) -> Changed:
    """The runs under ``results`` whose files differ from revision ``rev`` (BadInput for a revision git
    does not know, or a directory outside a git work tree)."""
    if rev.startswith("-"):
        raise BadInput(f"--since {rev!r}: a revision, not an option")
    try:
        _git(results, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except BadInput:
        raise BadInput(f"--since {rev}: not a revision of a git repository holding {results}") from None
    status = _git(results, "diff", "--name-status", "--no-renames", "--relative", rev, "--", ".")
    status += [f"A\t{path}" for path in _git(results, "ls-files", "--others", "--exclude-standard", "--", ".")]
    runs, experiments, removed = set(), set(), []
    for line in status:
        what, _, path = line.partition("\t")
        p = Path(path)
        if p.name == "data.npz" and len(p.parts) == 2:
            if what != "D":
                experiments.add(p.parts[0])
            continue
        try:
            run = RunPath.parse(p)
        except ValueError:
            continue  # tables, figures, summaries: not runs
        if p.name.startswith("."):
            continue  # a checkpoint or a lock
        if what == "D":
            removed += [path] if p.suffix == ".json" else []
        else:
            runs.add((run.experiment, run.solver, run.L, run.M, run.seed))
    return Changed(frozenset(runs), frozenset(experiments), tuple(sorted(removed)))
