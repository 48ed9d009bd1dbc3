"""Worker processes for ``lysep run --jobs N``: set-up, and a watchdog so no worker outlives its parent.

Workers are spawned (not forked) processes that compute runs and return them; they write no record
(a LySep run writes only its checkpoint).  Each worker ignores SIGINT (the parent handles Ctrl-C and
stops them with SIGTERM; a worker computing a LySep run saves its checkpoint first,
lysep_cli/execution/stopping.py), limits BLAS to one thread, and runs a daemon thread that polls its parent's
pid: when the parent is gone (even after a SIGKILL, which no handler sees), the worker exits at once.  An orphaned worker would otherwise keep computing
a run nobody will collect.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

from threadpoolctl import threadpool_limits

from lysep_cli.execution import stopping

#: How often a worker checks that its parent is alive (seconds).
POLL_SECONDS = 0.2

_QUEUE: Any = None  # progress queue of this worker process
_LIMITS: Any = None


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(POLL_SECONDS)
        if os.getppid() != parent_pid:
            os._exit(1)  # the parent died: nothing to report to, nothing to clean (workers write nothing)


def start_watchdog(parent_pid: int) -> threading.Thread:
    """A daemon thread that ends this process when ``parent_pid`` is no longer its parent."""
    thread = threading.Thread(target=_watch_parent, args=(parent_pid,), name="lysep-parent-watch", daemon=True)
    thread.start()
    return thread


def init_worker(queue: Any, parent_pid: int) -> None:
    """ProcessPoolExecutor initializer: SIGINT ignored, BLAS on one thread, parent watchdog, progress queue."""
    global _QUEUE, _LIMITS
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stopping.worker_process()  # SIGTERM during a LySep run: save its checkpoint, then exit
    _QUEUE = queue
    _LIMITS = threadpool_limits(limits=1)
    start_watchdog(parent_pid)


def report(item: Any) -> None:
    """Send a progress item to the parent; a full or closed queue only costs a progress update."""
    try:
        _QUEUE.put_nowait(item)
    except Exception:
        pass
