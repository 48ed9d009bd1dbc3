"""Two ``lysep run`` commands never make the same run at once.

``lysep run`` locks each run it is about to make (solver, L, M, seed) by a lock on byte ``seed`` of the
hidden file ``.runs.lock`` in that cell's directory (POSIX record locks, ``fcntl.lockf``; they also
work across machines on NFS), then plans again, so that it only makes runs it holds.  A second command
that asks for any of the same runs while the first holds them stops with one line (exit 2) instead of
racing it: the same run made twice, a record planned against files the other is replacing, or records
of two experiments files mixed in one cell.  Other seeds, sizes or solvers of the same experiment can
run side by side.

While a run is being computed (from its solver's first progress report to its record, in whichever
worker or cluster task it runs) the same process also locks byte ``STARTED + seed``: ``lysep status``
tells a run being computed ("running") from one a ``lysep run`` holds for later ("queued").

The operating system drops the locks when the process ends, however it ends (SIGKILL included), so no
lock goes stale; the empty lock files stay and everything else ignores them.  Worker processes neither
inherit record locks nor open a lock file.  Where ``fcntl`` does not exist (Windows) nothing is locked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

from lysep_cli.specs import BadInput, seed_ranges
from lysep_cli.store.layout import LOCK_NAME, ResultsDir

#: offset of the bytes that mark a held run as being computed now (seeds are far below it)
STARTED = 1 << 40

#: one run: (solver, L, M, seed)
Run = tuple[str, int, int, int]


class Busy(BadInput):
    """Runs asked for are being made by another process."""


class RunLocks:
    """The runs one process holds; :meth:`release` (or the end of the process) drops them all.

    One open file per cell: POSIX drops all of a process's locks on a file when it closes *any*
    descriptor of that file, so a cell's lock file is opened once and kept open."""

    def __init__(self) -> None:
        self._fds: dict[Path, int] = {}
        self.held: set[tuple[Path, Run]] = set()  # (experiment directory, run)

    def acquire(self, results_dir: str | Path, experiment: str, runs: Iterable[Run]) -> int:
        """Lock every run not held yet; returns how many were newly locked.  :class:`Busy` when another
        process holds any (those locked before stay held until :meth:`release`)."""
        if fcntl is None:  # pragma: no cover
            return 0
        root = Path(results_dir) / experiment
        by_cell: dict[Path, set[Run]] = {}
        for run in runs:
            if (root, run) not in self.held:
                solver, L, M, _ = run
                by_cell.setdefault(ResultsDir(results_dir).cell(experiment, solver, L, M), set()).add(run)
        new = 0
        for cell, cell_runs in by_cell.items():
            fd = self._fds.get(cell)
            if fd is None:
                cell.mkdir(parents=True, exist_ok=True)
                fd = self._fds[cell] = os.open(cell / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
            busy = sorted(run[3] for run in cell_runs if not _try_lock(fd, run[3]))
            if busy:
                raise Busy(f"{cell}: seed(s) {seed_ranges(busy)} are being run by another lysep run "
                           "on this results directory; wait for it to finish, or ask for other runs")
            self.held.update((root, run) for run in cell_runs)
            new += len(cell_runs)
        return new

    def mark_started(self, results_dir: str | Path, experiment: str, run: Run, started: bool = True) -> None:
        """Mark a held ``run`` as being computed now (``started=False``: no longer); a run not held is
        left alone."""
        if fcntl is None or (Path(results_dir) / experiment, run) not in self.held:
            return
        solver, L, M, seed = run
        fd = self._fds.get(ResultsDir(results_dir).cell(experiment, solver, L, M))
        if fd is None:  # pragma: no cover - a held run's cell file stays open
            return
        if started:
            _try_lock(fd, STARTED + seed)
        else:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, STARTED + seed, os.SEEK_SET)

    def reporting(self, reporter: Any, results_dir: str | Path, experiment: str) -> "MarkingReporter":
        """``reporter`` (a :class:`lysep_cli.execution.runner.Reporter`) that also marks each run started at its
        ``begin`` and no longer at its ``done`` or ``failed``."""
        return MarkingReporter(reporter, self, results_dir, experiment)

    def release(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self.held.clear()

    def __enter__(self) -> "RunLocks":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class MarkingReporter:
    """A :class:`lysep_cli.execution.runner.Reporter` passing every event on to ``inner`` and marking runs
    started and ended in ``held`` (:meth:`RunLocks.mark_started`)."""

    def __init__(self, inner: Any, held: RunLocks, results_dir: str | Path, experiment: str) -> None:
        self.inner, self.held, self.results_dir, self.experiment = inner, held, results_dir, experiment

    def _mark(self, key: Any, started: bool) -> None:
        self.held.mark_started(self.results_dir, self.experiment, (key.solver, key.L, key.M, key.seed), started)

    def start(self, total: int) -> None:
        self.inner.start(total)

    def begin(self, key: Any) -> None:
        self._mark(key, True)
        self.inner.begin(key)

    def loss(self, key: Any, k: int, value: float) -> None:
        self.inner.loss(key, k, value)

    def done(self, key: Any, record: Any) -> None:
        self._mark(key, False)
        self.inner.done(key, record)

    def failed(self, key: Any, error: str) -> None:
        self._mark(key, False)
        self.inner.failed(key, error)

    def stop(self) -> None:
        self.inner.stop()


def _try_lock(fd: int, offset: int) -> bool:
    """Lock byte ``offset`` (a seed, or STARTED + seed) of ``fd``'s file; False when another process holds it."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
    except OSError:  # EACCES or EAGAIN: another process holds it
        return False
    return True


def held_by_others(cell: str | Path, seeds: Iterable[int]) -> tuple[list[int], list[int]]:
    """(queued, running): the ``seeds`` of ``cell`` (a directory ``<results>/<experiment>/<solver>/L<L>-M<M>``)
    that another process holds, split into those it holds for later and those it is computing now
    (:meth:`RunLocks.mark_started`).  Asks with shared locks on a read-only descriptor, so it works on an
    archive it cannot write.  Not for a process that holds run locks on the same cell itself (closing
    the descriptor would drop them)."""
    path = Path(cell) / LOCK_NAME
    if fcntl is None or not path.is_file():
        return [], []
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return [], []
    queued: list[int] = []
    computing: list[int] = []
    try:
        for seed in seeds:
            if not _free(fd, seed):
                (queued if _free(fd, STARTED + seed) else computing).append(seed)
    finally:
        os.close(fd)
    return queued, computing


def _free(fd: int, offset: int) -> bool:
    """Whether no other process holds byte ``offset`` of ``fd``'s file (tested with a shared lock)."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
    except OSError:
        return False
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset, os.SEEK_SET)
    return True
