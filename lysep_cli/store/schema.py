"""The typed run record: what one (experiment, solver, L, M, seed) run was and what it gave.

A :class:`RunRecord` is built by the runner (``runner.execute``), written as strict JSON next to its
weights (``records.write_record``) and read back by :meth:`RunRecord.from_json`, which validates every
field: a file that is not a schema-``SCHEMA`` record with the right types is rejected with a
:class:`RecordError` (one line), never half-used.  Non-finite numbers are ``None`` in memory and ``null``
on disk, so a record compares equal to itself after a round trip.

Identity and provenance: ``settings`` (every field of the solver's typed settings, defaults included),
``iterations``, ``n_train``, ``n_test`` and ``data_sha256`` (the data set it was trained on,
:func:`lysep_cli.numerics.dataset.data_sha256`) say what the run was; :func:`differences` compares them with what
a spec asks for (the run planner skips a run only when there is none; tables use only such records).
``weights_sha256`` is the sha256 of the weights file's bytes, checked when the record is loaded.
``seal`` is the sha256 of the record's own JSON, this field aside (``records.seal_of``): it covers the
final values, the settings and ``weights_sha256`` (so the weights and histories too); ``lysep verify``
fails a record whose seal does not match (a final value edited by hand) or that has none.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from lysep_cli.numerics.metrics import finite_or_none

#: Version of the record layout written.  Schema 3 keeps the histories in the run's NPZ
#: (``lysep_cli.store.records``); schema 2 wrote them out in the JSON and is still read.  Records of any
#: other version are rejected (and redone by ``lysep run``).
SCHEMA = 3
READABLE_SCHEMAS = (2, 3)
STATUSES = ("ok", "diverged")
#: fields a record may lack: ``seal`` (records written before they were sealed)
OPTIONAL_FIELDS = frozenset({"seal"})


class RecordError(ValueError):
    """A run record that does not parse or validate; the message is one line."""


class NewerRecordError(RecordError):
    """A record of a schema newer than this lysep knows: valid for the version that wrote it, so never
    redone (overwritten) by this one."""


@dataclass(frozen=True)
class Final:
    """Final figures: J (PINN loss of the trained W_l, b_l), J_S (LySep loss; None for PINN-type
    solvers), l2 (relative test error).  None also stands for a non-finite value."""

    J: float | None
    J_S: float | None
    l2: float | None


@dataclass(frozen=True)
class Expected:
    """What a spec asks of a run of one solver: the fields :func:`differences` compares.

    ``problem`` is (pde, d, solution): the data set's hash covers the points, not the right-hand side.
    """

    iterations: int
    settings: dict[str, Any]
    n_train: int
    n_test: int
    data_sha256: str
    problem: tuple[str, int, str | None]


@dataclass(frozen=True)
class RunRecord:
    """One run.  ``history`` maps a series name ("J", "J_S", ...) to its values (None: non-finite) or
    to None (a series the solver does not have); ``bound`` is LySep's bound check (else None)."""

    experiment: str
    solver: str
    L: int
    M: int
    seed: int
    iterations: int
    settings: dict[str, Any]
    pde: str
    d: int
    solution: str | None
    n_train: int
    n_test: int
    data_sha256: str
    weights_sha256: str
    status: str
    message: str
    iterations_done: int
    diverged_at: int | None
    seconds: float
    final: Final
    bound: dict[str, Any] | None
    history: dict[str, list[float | None] | None]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    schema: int = SCHEMA
    seal: str | None = field(default=None, compare=False)
    """sha256 of the record as written, this field aside (``records.seal_of``): set when the record is
    written, checked by ``lysep verify``; None in a record written before records were sealed"""

    @property
    def cell(self) -> tuple[str, str, int, int, int]:
        """(experiment, solver, L, M, seed): where the record lives."""
        return self.experiment, self.solver, self.L, self.M, self.seed

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def compute_seconds(self) -> float:
        """The run's own time: its CPU seconds where the record holds them (``diagnostics.cpu_seconds``;
        one BLAS thread per run, so a run that was paused or waited for a core is not charged for it),
        else its wall ``seconds`` (records made before CPU time was recorded)."""
        cpu = self.diagnostics.get("cpu_seconds")
        if isinstance(cpu, (int, float)) and math.isfinite(cpu) and cpu > 0:
            return float(cpu)
        return float(self.seconds)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types (non-finite numbers as None)."""
        return jsonable(dataclasses.asdict(self))

    def with_(self, **changes: Any) -> "RunRecord":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_json(cls, obj: Any, *, histories_checked: bool = False) -> "RunRecord":
        """Validate a parsed JSON document; RecordError names the first bad field.

        ``histories_checked``: the history series are lists of finite floats and None already (read
        from a float64 array of the run's NPZ), so their entries are not checked one by one again."""
        if not isinstance(obj, dict):
            raise RecordError(f"expected a JSON object, got {type(obj).__name__}")
        schema = obj.get("schema")
        if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA:
            raise NewerRecordError(f"record schema {schema}, newer than this lysep's {SCHEMA} (written by a "
                                   "newer lysep version: upgrade lysep to read it)")
        if schema not in READABLE_SCHEMAS or isinstance(schema, bool):
            raise RecordError(f"record schema {schema!r}, expected {SCHEMA} (written by another lysep version)")
        names = {f.name for f in dataclasses.fields(cls)}
        missing = sorted(names - set(obj) - OPTIONAL_FIELDS)
        if missing:
            raise RecordError(f"missing field(s) {', '.join(missing)}")
        unknown = sorted(set(obj) - names)
        if unknown:
            raise RecordError(f"unknown field(s) {', '.join(unknown)}")
        v = _Validator()
        for key in ("experiment", "solver", "pde", "data_sha256", "weights_sha256", "message"):
            v.string(obj, key)
        for key, low in (("L", 2), ("M", 1), ("seed", 0), ("iterations", 1), ("d", 1), ("n_train", 1),
                         ("n_test", 1), ("iterations_done", 0)):
            v.integer(obj, key, low)
        v.optional_string(obj, "solution")
        seal = obj.get("seal")
        if seal is not None and not (isinstance(seal, str) and len(seal) == 64
                                     and all(ch in "0123456789abcdef" for ch in seal)):
            raise RecordError("field 'seal': expected a sha256 (64 hex digits) or null")
        if obj["status"] not in STATUSES:
            raise RecordError(f"field 'status': expected one of {STATUSES}, got {obj['status']!r}")
        if obj["status"] == "diverged":
            v.integer(obj, "diverged_at", 0)
        elif obj["diverged_at"] is not None:
            raise RecordError("field 'diverged_at': must be null for a run that did not diverge")
        v.number(obj, "seconds")
        for key in ("settings", "diagnostics", "versions"):
            v.mapping(obj, key)
        if obj["bound"] is not None:
            v.mapping(obj, "bound")
        final = v.mapping(obj, "final")
        if set(final) != {"J", "J_S", "l2"}:
            raise RecordError(f"field 'final': expected keys J, J_S, l2, got {', '.join(sorted(final))}")
        for key in ("J", "J_S", "l2"):
            v.optional_number(final, key, "final.")
        history = v.mapping(obj, "history")
        if not isinstance(history.get("J"), list) or not history["J"]:
            raise RecordError("field 'history.J': expected a non-empty list")
        for key, series in history.items():
            if series is None:
                continue
            if not isinstance(series, list) or not (histories_checked or all(_is_number(x) or x is None
                                                                              for x in series)):
                raise RecordError(f"field 'history.{key}': expected a list of numbers")
            if len(series) != len(history["J"]):
                raise RecordError(f"field 'history.{key}': {len(series)} entries, history.J has "
                                  f"{len(history['J'])}")
        return cls(**{**obj, "final": Final(**final),
                      "history": history if histories_checked else {
                          k: None if s is None else [finite_or_none(x) for x in s] for k, s in history.items()},
                      "seconds": float(obj["seconds"])})


def expected(spec: Any, solver: str, iterations: int, data_sha256: str) -> Expected:
    """The :class:`Expected` of a run of ``solver`` under ``spec`` (an ExperimentSpec)."""
    return Expected(iterations, jsonable(spec.solvers[solver].to_dict()), spec.n_train, spec.n_test, data_sha256,
                    (spec.pde, spec.d, spec.solution))


def differences(record: RunRecord, want: Expected) -> list[str]:
    """How ``record`` differs from what is wanted: [] when it matches, else short reasons
    ("problem", "iterations", "settings", "n_train", "n_test", "data set")."""
    out = []
    if (record.pde, record.d, record.solution) != want.problem:
        out.append("problem")
    if record.iterations != want.iterations:
        out.append("iterations")
    if record.settings != want.settings:
        out.append("settings")
    if record.n_train != want.n_train:
        out.append("n_train")
    if record.n_test != want.n_test:
        out.append("n_test")
    if record.data_sha256 != want.data_sha256 and not ({"problem", "n_train", "n_test"} & set(out)):
        out.append("data set")
    return out


def describe_difference(record: RunRecord, want: Expected) -> str:
    """One phrase: what the record was made with, against what is wanted."""
    parts = []
    for what in differences(record, want):
        if what == "iterations":
            parts.append(f"iterations {record.iterations}, not {want.iterations}")
        elif what == "settings":
            changed = sorted(k for k in set(record.settings) | set(want.settings)
                             if record.settings.get(k) != want.settings.get(k))
            parts.append("settings " + ", ".join(f"{k}={record.settings.get(k)!r}" for k in changed)
                         + " (wanted " + ", ".join(f"{k}={want.settings.get(k)!r}" for k in changed) + ")")
        elif what in ("n_train", "n_test"):
            parts.append(f"{what} {getattr(record, what)}, not {getattr(want, what)}")
        elif what == "problem":
            parts.append(f"problem {record.pde} d={record.d} solution={record.solution}, not "
                         f"{want.problem[0]} d={want.problem[1]} solution={want.problem[2]}")
        else:
            parts.append("another data set")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    """A JSON number that is a float (an integer beyond the float range, 1e400 written out, is not)."""
    if isinstance(x, float):
        return True
    if not isinstance(x, int) or isinstance(x, bool):
        return False
    try:
        float(x)
    except OverflowError:
        return False
    return True


class _Validator:
    def string(self, obj: dict, key: str) -> str:
        if not isinstance(obj[key], str):
            raise RecordError(f"field {key!r}: expected a string, got {type(obj[key]).__name__}")
        return obj[key]

    def optional_string(self, obj: dict, key: str) -> str | None:
        return None if obj[key] is None else self.string(obj, key)

    def integer(self, obj: dict, key: str, low: int) -> int:
        x = obj[key]
        if not isinstance(x, int) or isinstance(x, bool) or x < low:
            raise RecordError(f"field {key!r}: expected an integer >= {low}, got {x!r}")
        return x

    def number(self, obj: dict, key: str) -> float:
        if not _is_number(obj[key]):
            raise RecordError(f"field {key!r}: expected a number, got {type(obj[key]).__name__}")
        return float(obj[key])

    def optional_number(self, obj: dict, key: str, prefix: str = "") -> float | None:
        x = obj[key]
        if x is not None and not _is_number(x):
            raise RecordError(f"field '{prefix}{key}': expected a number or null, got {type(x).__name__}")
        return x

    def mapping(self, obj: dict, key: str) -> dict:
        if not isinstance(obj[key], dict):
            raise RecordError(f"field {key!r}: expected an object, got {type(obj[key]).__name__}")
        return obj[key]


def jsonable(x: Any) -> Any:
    """Plain JSON types; non-finite floats become None, tuples lists, numpy scalars and arrays Python ones."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x
