"""Seal the records of a results folder written before records were sealed (schema.RunRecord.seal).

    python -m lysep_cli.store.seal results/paper

Each record's JSON gains the one field ``seal`` (:func:`lysep_cli.store.records.seal_record`: every other
field keeps its value, checked); its NPZ is not touched.  Sealed records are left as they are, so it can
be run again at any time; a record whose seal is broken (its JSON edited after it was written) is named
and left as it is.  A record whose run a ``lysep run`` is making now is left to it (lysep_cli/store/locks.py).
Exit 0 when every record is sealed, 1 when some record could not be, 2 for bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lysep_cli.store.compact import _lock, folder_argument
from lysep_cli.store.locks import Busy, RunLocks
from lysep_cli.store.records import record_files, seal_record
from lysep_cli.store.schema import RecordError


def seal_folder(results_dir: str | Path) -> tuple[int, int, list[str]]:
    """(sealed now, sealed already, problem lines) over every record under ``results_dir``."""
    sealed = kept = 0
    problems: list[str] = []
    with RunLocks() as held:
        for json_path in record_files(results_dir):
            try:
                _lock(held, results_dir, json_path)
                if seal_record(json_path):
                    sealed += 1
                else:
                    kept += 1
            except (RecordError, OSError, ValueError, Busy) as exc:
                problems.append(f"{json_path}: not sealed ({exc})")
    return sealed, kept, problems


def main(argv: list[str] | None = None) -> int:
    root = folder_argument(argv, "lysep_cli.store.seal")
    if root is None:
        return 2
    sealed, kept, problems = seal_folder(root)
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{root}: {sealed} record(s) sealed, {kept} sealed already, {len(problems)} not sealed")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
