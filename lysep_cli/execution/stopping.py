"""A stop (Ctrl-C, SIGTERM) that lets the LySep run in progress save its checkpoint first.

While a run that keeps a checkpoint is computed, :func:`deferred` holds the first stop until the end of
the sweep in progress (about a second at the paper's largest size), so the next ``lysep run`` resumes
from that sweep rather than from the last periodic save (up to
:data:`lysep_cli.store.checkpoint.DEFAULT_SECONDS` earlier):

- the solver's next ``checkpoint.due()`` is True (:class:`SavingCheckpoint`), so it saves its state;
- the progress callback, called right after, then acts on the stop (:func:`check`): in the ``lysep``
  process it raises it (exit 130 / 143), in a worker process it ends the worker;
- a stop during the last sweep lets the run finish: its record is written, then the stop is raised.

A second Ctrl-C or SIGTERM to the ``lysep`` process acts at once.  Workers (``--jobs N``) ignore Ctrl-C:
the parent stops them with SIGTERM, gives them :data:`GRACE_SECONDS` to save and exit
(:func:`stop_workers`), then kills them.  In a worker every SIGTERM only asks for the stop (a batch
scheduler signals each process of a job, and the parent then signals again).  A run without a checkpoint
(PINN, the baselines) stops at once.  Runs on a dask cluster keep no checkpoint (its workers may not
share the disk) and are cancelled.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from types import FrameType
from typing import Any, Iterator

from lysep_cli.execution.interrupts import EXIT_SIGTERM, Terminated
from lysep_cli.store.checkpoint import Checkpoint

#: how long the parent of ``--jobs N`` workers waits for them to save and exit before it kills them
GRACE_SECONDS = 20.0

_pending: KeyboardInterrupt | None = None  # the stop held back until the end of the sweep
_deferring = False  # a run that keeps a checkpoint is being computed in this process
_in_worker = False  # this process is a ``--jobs`` worker (set by :func:`worker_process`)
_saved = False  # the checkpoint has been saved since the held-back stop came


class SavingCheckpoint(Checkpoint):
    """A :class:`~lysep_cli.store.checkpoint.Checkpoint` that is also due when a stop is held back."""

    def due(self) -> bool:
        return _pending is not None or super().due()

    def save(self, meta: dict[str, Any], arrays: dict[str, Any]) -> None:
        global _saved
        stop = _pending
        super().save(meta, arrays)
        _saved = _saved or stop is not None


def pending() -> KeyboardInterrupt | None:
    """The stop held back in this process, if any."""
    return _pending


def worker_process() -> None:
    """Mark this process as a ``--jobs`` worker: a held-back stop ends the process (exit 143)."""
    global _in_worker
    _in_worker = True


def _on_stop(signum: int, frame: FrameType | None) -> None:
    global _pending
    stop: KeyboardInterrupt = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    if _in_worker:
        if _deferring:
            _pending = _pending or stop  # every SIGTERM only asks: the parent escalates with SIGKILL
            return
        os._exit(EXIT_SIGTERM)  # no run to save: stop at once, as SIGTERM's default action would
    if _pending is not None or not _deferring:
        raise stop  # the second stop, or nothing to save: at once
    _pending = stop


def _act(stop: KeyboardInterrupt) -> None:
    if _in_worker:
        os._exit(EXIT_SIGTERM)  # the checkpoint is saved; a worker writes nothing else
    raise stop


def check(k: int, iterations: int) -> None:
    """Call from the progress callback after sweep ``k`` (0-based) of ``iterations``: act on a held-back
    stop once the checkpoint holds a sweep after it, except after the last sweep (the run is let finish;
    :func:`deferred` acts on it after).  A stop that came after this sweep's ``due()`` (while its progress
    was being reported) waits one more sweep for its save."""
    global _pending, _saved
    if _pending is not None and _saved and k + 1 < iterations:
        stop, _pending, _saved = _pending, None, False
        _act(stop)


@contextmanager
def deferred(active: bool) -> Iterator[None]:
    """Within the block (one run, and the writing of its record), hold back the first Ctrl-C or SIGTERM
    as described above when ``active`` (the run keeps a checkpoint); act on it when the block ends.

    Signal handlers can only be set from the main thread: elsewhere (a dask worker's thread) and when
    not ``active`` the block runs with the handlers as they are.
    """
    global _pending, _saved, _deferring
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGTERM,) if _in_worker else (signal.SIGINT, signal.SIGTERM)
    previous: dict[int, Any] = {sig: signal.getsignal(sig) for sig in signals}
    _pending, _saved, _deferring = None, False, True
    for sig in signals:
        signal.signal(sig, _on_stop)
    try:
        yield
    finally:
        _deferring = False
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop, _pending, _saved = _pending, None, False  # an exception leaving the block supersedes it
    if stop is not None:
        _act(stop)


def stop_workers(processes: list[Any], grace: float = GRACE_SECONDS) -> None:
    """SIGTERM each worker process, wait up to ``grace`` seconds for all to exit (a worker computing a
    LySep run saves its checkpoint first), then kill the rest.  A Ctrl-C while waiting kills them at once."""
    for proc in processes:
        proc.terminate()
    deadline = time.monotonic() + grace
    try:
        for proc in processes:
            proc.join(max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:
        pass
    for proc in processes:
        if proc.is_alive():
            proc.kill()
            proc.join(5.0)


__all__ = ["GRACE_SECONDS", "SavingCheckpoint", "pending", "worker_process", "check", "deferred", "stop_workers"]
