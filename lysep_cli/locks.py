"""Two ``lysep run`` commands never make the same run at once.

``lysep run`` locks each run it is about to make (solver, L, M, seed) by a lock on byte ``seed`` of the
hidden file ``.runs.lock`` in that cell's directory (POSIX record locks, ``fcntl.lockf``; they also
work across machines on NFS), then plans again, so that it only makes runs it holds.  A second command
that asks for any of the same runs while the first holds them stops with one line (exit 2) instead of
racing it: the same run made twice, a record planned against files the other is replacing, or records
of two experiments files mixed in one cell.  Other seeds, sizes or solvers of the same experiment can
run side by side.

The operating system drops the locks when the process ends, however it ends (SIGKILL included), so no
lock goes stale; the empty lock files stay and everything else ignores them.  Worker processes neither
inherit record locks nor open a lock file.  Where ``fcntl`` does not exist (Windows) nothing is locked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

from .records import cell_dir
from .specs import SpecError, seed_ranges

LOCK_NAME = ".runs.lock"

#: one run: (solver, L, M, seed)
Run = tuple[str, int, int, int]


class Busy(SpecError):
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
                by_cell.setdefault(cell_dir(results_dir, experiment, solver, L, M), set()).add(run)
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

    def release(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self.held.clear()

    def __enter__(self) -> "RunLocks":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(fd: int, seed: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, seed, os.SEEK_SET)
    except OSError:  # EACCES or EAGAIN: another process holds it
        return False
    return True


def running(cell: str | Path, seeds: Iterable[int]) -> list[int]:
    """The ``seeds`` of ``cell`` (a directory ``<results>/<experiment>/<solver>/L<L>-M<M>``) that a
    process holds now: runs a ``lysep run`` is making.  Asks with a shared lock on a read-only
    descriptor, so it works on an archive it cannot write.  Not for a process that holds run locks on
    the same cell itself (closing the descriptor would drop them)."""
    path = Path(cell) / LOCK_NAME
    if fcntl is None or not path.is_file():
        return []
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return []
    held: list[int] = []
    try:
        for seed in seeds:
            try:
                fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, seed, os.SEEK_SET)
            except OSError:
                held.append(seed)
                continue
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, seed, os.SEEK_SET)
    finally:
        os.close(fd)
    return held
