"""Checks of the paths given on the command line, before anything is read or written.

Each raises :class:`~lysep_cli.specs.SpecError` with one line naming the option, so a bad ``--results``
or ``--out`` ends the command with exit code 2 and nothing written.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Callable

from lysep_cli.specs import SpecError


def _one_line_errors(check: Callable[[Path, str], Path]) -> Callable[[Path, str], Path]:
    """A path the OS refuses to look at (a NUL byte, a name too long, ...) is a SpecError too."""

    @functools.wraps(check)
    def wrapper(path: Path, option: str) -> Path:
        try:
            return check(path, option)
        except (OSError, ValueError) as exc:
            if isinstance(exc, SpecError):
                raise
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise SpecError(f"{option} {str(path)!r}: unusable path ({why})") from None

    return wrapper


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():  # a dangling link or a loop is in the way too
            return candidate
    return Path("/")


@_one_line_errors
def writable_dir(path: Path, option: str) -> Path:
    """``path`` is a directory this process can create files in, or one it can create."""
    if str(path) == "":
        raise SpecError(f"{option}: empty path")
    base = _nearest_existing(path)
    dangling = " (a symbolic link to nothing, or a loop)" if base.is_symlink() and not base.exists() else ""
    if base == path.absolute() and not base.is_dir():
        raise SpecError(f"{option} {path}: exists and is not a directory{dangling}")
    if not base.is_dir():
        raise SpecError(f"{option} {path}: cannot be created, {base} is not a directory{dangling}")
    if not os.access(base, os.W_OK | os.X_OK):
        raise SpecError(f"{option} {path}: no permission to write in {base}")
    _probe_write(base, path, option)
    return path


def _probe_write(base: Path, path: Path, option: str) -> None:
    """Create and remove an empty directory in ``base``: ``os.access`` says yes to root everywhere, and
    to anyone on a read-only or virtual file system (``/proc``), where the real write then fails."""
    try:
        probe = tempfile.mkdtemp(prefix=".lysep-probe-", dir=base)
    except OSError as exc:
        raise SpecError(f"{option} {path}: cannot write in {base} ({exc.strerror or exc})") from None
    os.rmdir(probe)


@_one_line_errors
def writable_file(path: Path, option: str) -> Path:
    """``path`` can be written as a file: not a directory, and its directory exists or can be created."""
    if str(path) in ("", "."):
        raise SpecError(f"{option}: empty path")
    if path.is_dir():
        raise SpecError(f"{option} {path}: is a directory (give a file name)")
    if path.exists() and not path.is_file():  # /dev/stdout, a FIFO: the atomic write would replace it
        raise SpecError(f"{option} {path}: exists and is not a regular file")
    writable_dir(path.parent, option)
    if path.exists() and not os.access(path, os.W_OK):
        raise SpecError(f"{option} {path}: no permission to write")
    return path


@_one_line_errors
def readable_dir(path: Path, option: str) -> Path:
    """``path`` is an existing directory this process can list."""
    if not path.exists():
        raise SpecError(f"{option} {path}: no such directory")
    if not path.is_dir():
        raise SpecError(f"{option} {path}: not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise SpecError(f"{option} {path}: no permission to read")
    return path
