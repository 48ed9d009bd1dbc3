"""Rewrite the schema-2 records of a results folder in schema 3 (histories moved into the NPZ).

    python -m lysep_cli.store.compact results/paper        (make compact RESULTS=results/paper)

Same records, same weights, same numbers bit for bit (:func:`lysep_cli.store.records.compact_record` checks
that each one reads back equal); about 60 % fewer bytes for a 2000-iteration record.  Records already
in schema 3 are left untouched, so it can be run again at any time (for example after a sweep started by
an older lysep has written more records); a record whose run a ``lysep run`` is making now is left to it
(lysep_cli/store/locks.py) and named.  Exit 0 when every record is compact, 1 when some record
could not be read (named on stderr, left as it is), 2 for bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lysep_cli.store.layout import RunPath
from lysep_cli.store.locks import Busy, RunLocks
from lysep_cli.store.records import compact_record, file_bytes, record_files
from lysep_cli.store.schema import RecordError


def compact_folder(results_dir: str | Path) -> tuple[int, int, list[str], int]:
    """(rewritten, already compact, problem lines, bytes saved) over every record under ``results_dir``."""
    rewritten = kept = saved = 0
    problems: list[str] = []
    with RunLocks() as held:  # a run that a lysep run is making now is left to it
        for json_path in record_files(results_dir):
            files = (json_path, json_path.with_suffix(".npz"))
            before = sum(file_bytes(p) for p in files)
            try:
                _lock(held, results_dir, json_path)
                if compact_record(json_path):
                    rewritten += 1
                    saved += before - sum(file_bytes(p) for p in files)
                else:
                    kept += 1
            except (RecordError, OSError, ValueError, Busy) as exc:  # ValueError: a name not L<int>-M<int>
                problems.append(f"{json_path}: not compacted ({exc})")
    return rewritten, kept, problems, saved


def _lock(held: RunLocks, results_dir: str | Path, json_path: Path) -> None:
    """Lock the run of ``<results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.json``; Busy if taken."""
    run = RunPath.parse(json_path)
    held.acquire(results_dir, run.experiment, [(run.solver, run.L, run.M, run.seed)])


def folder_argument(argv: list[str] | None, module: str) -> Path | None:
    """The one RESULTS_DIR argument of ``python -m MODULE RESULTS_DIR``; None (after one line on stderr)
    when it is missing, extra or not a folder (exit 2)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0] or args[0].startswith("-"):
        print(f"lysep: error: usage: python -m {module} RESULTS_DIR", file=sys.stderr)
        return None
    root = Path(args[0])
    if not root.is_dir():
        print(f"lysep: error: {root} is not a folder", file=sys.stderr)
        return None
    return root


def main(argv: list[str] | None = None) -> int:
    root = folder_argument(argv, "lysep_cli.store.compact")
    if root is None:
        return 2
    rewritten, kept, problems, saved = compact_folder(root)
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{root}: {rewritten} record(s) rewritten in schema 3 ({saved / 1e6:.1f} MB saved), "
          f"{kept} already compact, {len(problems)} not readable")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
