"""SIGTERM handled like Ctrl-C, and the exit codes of an interrupted command.

``timeout``, batch schedulers and ``kill`` send SIGTERM.  :func:`install` turns it into
:class:`Terminated`, a KeyboardInterrupt, raised in the main thread: every ``except KeyboardInterrupt``
and ``finally`` of the program runs (temporary files removed, worker processes stopped, finished runs
kept), and the command exits with 143 (128 + 15) instead of Ctrl-C's 130 (128 + 2).
"""

from __future__ import annotations

import signal
from types import FrameType

EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM received."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def install() -> None:
    """Handle SIGTERM like Ctrl-C (call once, from the main thread, at program start)."""
    signal.signal(signal.SIGTERM, _on_sigterm)


def exit_code(exc: KeyboardInterrupt) -> int:
    """143 for SIGTERM, 130 for Ctrl-C."""
    return EXIT_SIGTERM if isinstance(exc, Terminated) else EXIT_SIGINT


def name(exc: KeyboardInterrupt) -> str:
    return "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
