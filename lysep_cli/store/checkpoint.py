"""Checkpoints of a run in progress, so that an interrupted LySep run resumes where it stopped.

A 2000-sweep LySep run at elliptic-10d (3,150) takes 20-40 minutes; a Ctrl-C, SIGTERM (a batch
scheduler's time limit), a killed worker or a crash would otherwise lose all of it.  Every
:data:`DEFAULT_SECONDS` of wall time the solver saves its whole state next to where the record will go
(``<results>/<experiment>/<solver>/L<L>-M<M>/.seed-<s>.ckpt.npz``, written atomically); the next
``lysep run`` of the same run loads it and goes on from that sweep.  The record is the one an
uninterrupted run writes, bit for bit (tests/test_checkpoint.py), except the timings, which add up
the parts.  The checkpoint is removed when the record is written.

A checkpoint is used only when its fingerprint matches: the same run (experiment, solver, L, M, seed,
iterations), settings, data set and platform (the fingerprint of lysep_cli/store/fingerprint.py: BLAS kernel,
NumPy SIMD, versions, and the numerics id, a hash of the modules that compute a run).
Anything else is ignored and overwritten.  ``LYSEP_CHECKPOINT_SECONDS`` sets the interval (0: a
checkpoint after every iteration, for tests; "off": none).
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from lysep_cli.store import atomic
from lysep_cli.store.fingerprint import numerics_id
from lysep_cli.store.layout import ResultsDir, RunPath

DEFAULT_SECONDS = 120.0
_META = "__meta__"
_UNREADABLE = (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile)


def interval() -> float | None:
    """Seconds between checkpoints (``LYSEP_CHECKPOINT_SECONDS``); None when switched off."""
    text = os.environ.get("LYSEP_CHECKPOINT_SECONDS", "").strip().lower()
    if text in ("off", "none", "no"):
        return None
    try:
        return max(0.0, float(text)) if text else DEFAULT_SECONDS
    except ValueError:
        return DEFAULT_SECONDS


class Checkpoint:
    """One run's checkpoint file.

    ``load()`` gives the saved state (a dict of arrays and JSON values) when the file exists and its
    fingerprint matches, else None; ``due()`` says whether the interval has passed since the last save
    (or the start); ``save(state)`` writes it atomically; ``remove()`` deletes it.
    """

    def __init__(self, path: str | Path, fingerprint: dict[str, Any], every: float | None = DEFAULT_SECONDS):
        self.path = Path(path)
        self.fingerprint = json.dumps({**fingerprint, "numerics": numerics_id()}, sort_keys=True)
        self.every = every
        self._last = time.monotonic()

    def load(self) -> dict[str, Any] | None:
        try:
            with np.load(self.path, allow_pickle=False) as z:
                meta = json.loads(str(z[_META][()]))
                if meta.get("fingerprint") != self.fingerprint:
                    return None
                return {"meta": meta["state"], "arrays": {k: z[k] for k in z.files if k != _META}}
        except _UNREADABLE:  # absent, truncated, not a checkpoint
            return None

    def due(self) -> bool:
        return self.every is not None and time.monotonic() - self._last >= self.every

    def save(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """``meta``: JSON-able values; ``arrays``: named arrays (the solver's variables)."""
        payload = json.dumps({"fingerprint": self.fingerprint, "state": meta})
        atomic.write_with(self.path, lambda fh: np.savez(fh, **arrays, **{_META: np.array(payload)}))
        self._last = time.monotonic()

    def remove(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def checkpoint_path(results_dir: str | Path, experiment: str, solver: str, L: int, M: int, seed: int) -> Path:
    """Where the checkpoint of a run lives: beside its record, hidden (``.seed-<s>.ckpt.npz``)."""
    return ResultsDir(results_dir).checkpoint(RunPath(experiment, solver, L, M, seed))


def unreadable(path: str | Path) -> str | None:
    """Why the checkpoint file ``path`` cannot be read (truncated, not a checkpoint, no permission), or
    None: it reads, or there is none.  A run whose checkpoint cannot be read starts from scratch (and
    overwrites it); ``lysep run`` says so in one warning line."""
    if not Path(path).exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            json.loads(str(z[_META][()]))["fingerprint"]
            for name in z.files:
                z[name]
    except _UNREADABLE as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
    return None


def saved_sweeps(path: str | Path) -> int | None:
    """How many sweeps the run in a checkpoint file had done (None: no file, or not readable)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return int(json.loads(str(z[_META][()]))["state"]["loop"]["k"])
    except _UNREADABLE:
        return None
