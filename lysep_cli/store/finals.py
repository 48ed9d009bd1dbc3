"""An archive's final values, one CSV row per run: what a regenerated archive is checked against once the
old records are gone (``lysep verify --save-finals FILE``, then ``lysep verify --against FILE``).

The cell-by-cell comparison (:mod:`lysep_cli.reports.cellstats`) needs, per run, only its cell, seed and
final J, l2 (J_S is kept for the reader).  Values are written with ``repr`` (17 significant digits: the
float read back is the float written); a non-finite or missing value is an empty field.  Columns::

    experiment, solver, L, M, seed, iterations, status, J, J_S, l2, numerics

``numerics`` is the numerics id of the run's record (``versions.numerics``; "unrecorded" when the record
predates it), so the file says which kernels made the numbers it holds.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from lysep_cli.specs import BadInput
from lysep_cli.store.atomic import write_text
from lysep_cli.store.schema import Final, RunRecord

COLUMNS = ("experiment", "solver", "L", "M", "seed", "iterations", "status", "J", "J_S", "l2", "numerics")


@dataclass(frozen=True)
class FinalRow:
    """One run's final values, read back from a finals file; has the attributes of a
    :class:`~lysep_cli.store.schema.RunRecord` that the cell comparison reads."""

    experiment: str
    solver: str
    L: int
    M: int
    seed: int
    iterations: int
    status: str
    final: Final
    numerics: str


def _number(v: float | None) -> str:
    return repr(float(v)) if v is not None and math.isfinite(v) else ""


def render_finals(records: Iterable[RunRecord]) -> str:
    """The CSV text of ``records``, sorted by (experiment, solver, L, M, seed)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in sorted(records, key=lambda r: r.cell):
        w.writerow([r.experiment, r.solver, r.L, r.M, r.seed, r.iterations, r.status, _number(r.final.J),
                    _number(r.final.J_S), _number(r.final.l2), r.versions.get("numerics", "unrecorded")])
    return buf.getvalue()


def write_finals(records: Iterable[RunRecord], path: str | Path) -> int:
    """Write the finals file atomically; returns the number of rows."""
    text = render_finals(records)
    write_text(path, text)
    return text.count("\n") - 1


def _value(text: str, where: str) -> float | None:
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise BadInput(f"{where}: {text!r} is not a number") from None


def read_finals(path: str | Path) -> list[FinalRow]:
    """Rows of a finals file; :class:`BadInput` (one line) for a file that is not one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"{path}: cannot read a finals file ({getattr(exc, 'strerror', None) or exc})") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(rows[0]) != COLUMNS:
        raise BadInput(f"{path}: not a finals file (its first line must be {','.join(COLUMNS)}; "
                       "written by `lysep verify --save-finals`)")
    out = []
    for n, row in enumerate(rows[1:], start=2):
        where = f"{path}, line {n}"
        if len(row) != len(COLUMNS):
            raise BadInput(f"{where}: {len(row)} fields, expected {len(COLUMNS)}")
        f = dict(zip(COLUMNS, row))
        try:
            L, M, seed, iterations = (int(f[k]) for k in ("L", "M", "seed", "iterations"))
        except ValueError:
            raise BadInput(f"{where}: L, M, seed and iterations must be whole numbers") from None
        out.append(FinalRow(f["experiment"], f["solver"], L, M, seed, iterations, f["status"],
                            Final(_value(f["J"], where), _value(f["J_S"], where), _value(f["l2"], where)),
                            f["numerics"]))
    return out
