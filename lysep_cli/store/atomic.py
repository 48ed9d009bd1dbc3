"""Atomic file writes, and the removal of temporary files that a killed process left behind.

Every output of lysep (run records, weights, data sets, tables, comparisons, figures) is written to a
temporary file next to its target and renamed over it (``os.replace``), so a reader never sees a
half-written file.  The temporary file is named ``.<target>.<pid>.<token>.tmp``:

- it is created with mode 0666 filtered by the process umask (``os.open``), so outputs get the usual
  permissions (0644 under umask 022) and not the 0600 of ``tempfile.mkstemp``;
- on any exception (KeyboardInterrupt and SIGTERM included) it is removed and the target is untouched;
- after a SIGKILL it stays, and :func:`remove_stale` removes it at the next run: the pid in its name is
  no longer alive.  Temporary files of a live process (another lysep writing there) are left alone.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from typing import BinaryIO, Callable

_TMP = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.(?P<token>[0-9a-f]+)\.tmp$")
_LEGACY_TMP = re.compile(r"^\..+\.tmp$")  # mkstemp names of earlier versions: no pid, always stale


def _pid_alive(pid: int) -> bool:
    """True when ``pid`` is a running (non-zombie) process."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def is_stale_tmp(path: Path) -> bool:
    """A temporary file of this module whose writer is gone (or an unnamed legacy temp file)."""
    m = _TMP.match(path.name)
    if m is not None:
        return not _pid_alive(int(m.group("pid")))
    return bool(_LEGACY_TMP.match(path.name))


def remove_stale(root: str | Path) -> list[Path]:
    """Remove the stale temporary files below ``root`` (recursively); returns what was removed."""
    root = Path(root)
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for path in root.rglob(".*.tmp"):
        if path.is_file() and is_stale_tmp(path):
            try:
                path.unlink()
                removed.append(path)
            except FileNotFoundError:
                pass
    return removed


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename); parents are created.

    Stale temporary files of the same target are removed first.
    """
    return write_with(path, lambda fh: fh.write(data))


def write_with(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Atomically write what ``write(fh)`` writes to the open binary file ``fh`` (a large object is
    streamed to the temporary file, never held in memory twice); as :func:`write_bytes` otherwise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob(f".{glob_escape(path.name)}.*.tmp"):
        if is_stale_tmp(old):
            try:
                old.unlink()
            except FileNotFoundError:
                pass
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_bytes(path, text.encode("utf-8"))


def glob_escape(name: str) -> str:
    """``name`` with the glob metacharacters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", name)
