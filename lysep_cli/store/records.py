"""Run records and data sets on disk: one JSON + one NPZ per (experiment, solver, L, M, seed).

Layout: lysep_cli/store/layout.py.
                                                                  history_J, history_J_S (float64)

The histories (2001 values per series for a 2000-iteration run) live in the NPZ as float64 arrays
(NaN for a non-finite value): a third of the bytes of the same numbers written out in the JSON, and the
same values bit for bit.  The JSON's ``history`` names the series (``{"J": "npz", "J_S": null}``).
Records of schema 2 (histories written out in the JSON) are still read; :func:`compact_record`
rewrites one in schema 3.

Every file is written atomically (:mod:`lysep_cli.store.atomic`).  The NPZ is written first and the JSON
last, so a run is complete exactly when its JSON exists; the JSON carries the sha256 of the NPZ's bytes,
and :func:`read_record` refuses a record whose NPZ is missing or does not match.  NPZ files are written
byte-deterministically (fixed zip timestamps), so the same network gives the same file and hash.
Reading never raises for a bad file: :func:`load_records` returns the valid records and one problem
line per file it could not use.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from lysep_cli.numerics.dataset import ExperimentData, data_sha256, saved_arrays
from lysep_cli.numerics.network import Params
from lysep_cli.store import atomic
from lysep_cli.store.layout import ResultsDir, RunPath
from lysep_cli.store.schema import SCHEMA, RecordError, RunRecord

_EPOCH = (1980, 1, 1, 0, 0, 0)
#: NPZ key of a history series: ``history_J``, ``history_J_S``.
HISTORY_PREFIX = "history_"
#: What the JSON of a schema-3 record holds in place of a series that lives in the NPZ.
IN_NPZ = "npz"


def cell_dir(results_dir: str | Path, experiment: str, solver: str, L: int, M: int) -> Path:
    """The folder of the runs of one (experiment, solver, L, M) (lysep_cli/store/layout.py)."""
    return ResultsDir(results_dir).cell(experiment, solver, L, M)


def record_paths(results_dir: str | Path, experiment: str, solver: str, L: int, M: int,
                 seed: int) -> tuple[Path, Path]:
    """(json_path, npz_path) of one run."""
    return ResultsDir(results_dir).record(RunPath(experiment, solver, L, M, seed))


def data_path(results_dir: str | Path, experiment: str) -> Path:
    return ResultsDir(results_dir).data(experiment)


# ---------------------------------------------------------------------------------------------
# NPZ bytes and hashes.

def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The NPZ file of ``arrays`` as bytes, identical for identical arrays (no timestamps)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
    return buf.getvalue()


def file_bytes(path: Path) -> int:
    """Size of the file at ``path`` in bytes; 0 when it is missing or unreadable."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def params_to_arrays(params: Params) -> dict[str, np.ndarray]:
    """{"W1": W_1, "b1": b_1, ..., "WL": W_L, "bL": b_L} with W_l (out, in), b_l (out,)."""
    out: dict[str, np.ndarray] = {}
    for l, (W, b) in enumerate(params, start=1):
        out[f"W{l}"], out[f"b{l}"] = np.asarray(W), np.asarray(b)
    return out


def history_to_arrays(history: dict[str, list[float | None] | None]) -> dict[str, np.ndarray]:
    """{"history_J": (n,) float64, ...} for every series that is not None; None entries become NaN."""
    return {HISTORY_PREFIX + name: np.array([np.nan if x is None else x for x in series], dtype=np.float64)
            for name, series in history.items() if series is not None}


def run_npz_bytes(params: Params, history: dict[str, list[float | None] | None]) -> bytes:
    """The NPZ of one run: its weights and its histories (what :func:`write_record` writes; the record's
    ``weights_sha256`` is the sha256 of these bytes)."""
    return npz_bytes({**params_to_arrays(params), **history_to_arrays(history)})


def load_params(npz_path: str | Path) -> Params:
    """The network saved by :func:`write_record`."""
    with np.load(npz_path, allow_pickle=False) as z:
        L = sum(1 for k in z.files if k.startswith("W"))
        return [(z[f"W{l}"], z[f"b{l}"]) for l in range(1, L + 1)]


# ---------------------------------------------------------------------------------------------
# Records.

_NUMBER_LIST = re.compile(r"\[\n\s*((?:-?[0-9][0-9.eE+-]*|null)(?:,\n\s*(?:-?[0-9][0-9.eE+-]*|null))*)\n\s*\]")


def _written_form(record: RunRecord) -> dict:
    """The record as its JSON holds it, the seal aside: the histories replaced by ``"npz"``."""
    # the histories replaced before the conversion: converting 2 x 2001 floats only to drop them cost 7 ms
    # a record (the seal is checked on every load, records.load_records)
    markers = {name: None if series is None else IN_NPZ for name, series in record.history.items()}
    obj = record.with_(history=markers).to_json()  # type: ignore[arg-type]
    obj.pop("seal", None)
    return obj


def seal_of(record: RunRecord) -> str:
    """The record's seal: the sha256 of its written form (:func:`_written_form`) as compact JSON with sorted
    keys.  It covers every field, the final values among them, and ``weights_sha256``, so through it the
    weights and histories too: a number edited in the JSON breaks it."""
    text = json.dumps(_written_form(record), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return sha256(text.encode("utf-8"))


#: why a record whose seal does not match is left out (reports, ``lysep run``) or fails (``lysep verify``)
SEAL_BROKEN = "its seal does not match: the record's JSON was changed after it was written"


def seal_state(record: RunRecord) -> str:
    """"sealed" (its seal matches), "unsealed" (written before records were sealed) or "broken" (the
    JSON was changed after it was written)."""
    if record.seal is None:
        return "unsealed"
    return "sealed" if record.seal == seal_of(record) else "broken"


def record_text(record: RunRecord) -> str:
    """The record's JSON in schema 3, sealed (:func:`seal_of`): the histories replaced by ``"npz"`` (they
    are in the NPZ), indented one level per key, a list of numbers on one line."""
    record = record.with_(schema=SCHEMA)
    obj = {**_written_form(record), "seal": seal_of(record)}
    text = json.dumps(obj, indent=1, allow_nan=False)
    return _NUMBER_LIST.sub(lambda m: "[" + re.sub(r",\n\s*", ",", m.group(1)) + "]", text) + "\n"


def write_record(results_dir: str | Path, record: RunRecord, params: Params) -> tuple[Path, Path]:
    """Write the NPZ then the JSON of one run; if interrupted in between, neither is left behind.

    ``record.weights_sha256`` must be the hash of the run's NPZ (:func:`run_npz_bytes` of ``params``
    and ``record.history``; ``runner.execute`` sets it); ValueError (RecordError for an invalid
    record) otherwise, before anything is written.
    """
    data = run_npz_bytes(params, record.history)
    if sha256(data) != record.weights_sha256:
        raise ValueError(f"{record.cell}: weights_sha256 does not match the parameters and history")
    json_path, npz_path = record_paths(results_dir, *record.cell)
    text = record_text(record)
    _parse(json.loads(text), data)  # never write a record that would not read back
    done = False
    try:
        atomic.write_bytes(npz_path, data)
        atomic.write_text(json_path, text)
        done = True
    finally:
        if not done:
            for p in (json_path, npz_path):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
    return json_path, npz_path


def read_record(json_path: str | Path) -> RunRecord:
    """The validated record at ``json_path``: RecordError (one line) when the JSON does not parse or
    validate, is not where its fields say, or its NPZ is missing or not the one it was written with."""
    json_path = Path(json_path)
    try:
        text = json_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RecordError("not UTF-8 text") from None
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise RecordError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise RecordError("not valid JSON (nested too deeply)") from None
    npz_path = json_path.with_suffix(".npz")
    try:
        data: bytes | None = npz_path.read_bytes()
    except OSError:
        data = None
    digest = None if data is None else sha256(data)
    record = _parse(obj, data, npz_path.name, digest)
    try:
        elsewhere = RunPath.parse(json_path) != RunPath(*record.cell) or json_path.suffix != ".json"
    except ValueError:  # not laid out as a record's path
        elsewhere = True
    if elsewhere:
        raise RecordError(f"record of {record.cell} found at another place")
    if data is None:
        raise RecordError(f"weights file {npz_path.name} missing")
    if digest != record.weights_sha256:
        raise RecordError(f"weights file {npz_path.name} does not match the record's sha256 (truncated or replaced)")
    return record


def _parse(obj: object, data: bytes | None, npz_name: str = "seed-<s>.npz", digest: str | None = None) -> RunRecord:
    """The validated record of a parsed JSON document; for schema 3 its histories are read from the
    NPZ bytes ``data`` (after checking them against the record's ``weights_sha256``; ``digest``: their
    sha256 when the caller has it)."""
    if isinstance(obj, dict) and obj.get("schema") == SCHEMA and isinstance(obj.get("history"), dict):
        names = obj["history"]
        bad = sorted(str(k) for k, v in names.items() if v not in (None, IN_NPZ))
        if bad:
            raise RecordError(f"field 'history.{bad[0]}': expected \"{IN_NPZ}\" or null (schema {SCHEMA})")
        if any(v == IN_NPZ for v in names.values()):
            if data is None:
                raise RecordError(f"weights file {npz_name} missing")
            if (digest or sha256(data)) != obj.get("weights_sha256"):
                raise RecordError(f"weights file {npz_name} does not match the record's sha256 (truncated or replaced)")
            obj = {**obj, "history": {k: None if v is None else _npz_series(data, k, npz_name)
                                      for k, v in names.items()}}
            return RunRecord.from_json(obj, histories_checked=True)
    return RunRecord.from_json(obj)


def _npz_series(data: bytes, name: str, npz_name: str) -> list[float | None]:
    """History series ``name`` of a run's NPZ bytes as a list (NaN → None); RecordError if absent."""
    key = HISTORY_PREFIX + name
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arr = z[key]
    except KeyError:
        raise RecordError(f"weights file {npz_name} has no array {key!r}") from None
    except Exception as exc:  # a damaged zip or array (the sha256 matched, so written that way)
        raise RecordError(f"weights file {npz_name} unreadable ({type(exc).__name__})") from None
    if arr.ndim != 1 or arr.dtype != np.float64:
        raise RecordError(f"weights file {npz_name}: {key!r} is not a float64 vector")
    if np.isfinite(arr).all():
        return arr.tolist()
    return [x if math.isfinite(x) else None for x in arr.tolist()]


def compact_record(json_path: str | Path) -> bool:
    """Rewrite a schema-2 record (histories in its JSON) in schema 3 (histories in its NPZ): the same
    record and weights, fewer bytes.  Returns False, touching nothing, when it is already schema 3;
    RecordError when it does not read.  The NPZ and the JSON are each replaced atomically (NPZ first):
    if interrupted between the two, the record reads as invalid until restored (the archive is in git)."""
    json_path = Path(json_path)
    record = read_record(json_path)
    if record.schema == SCHEMA:
        return False
    params = load_params(json_path.with_suffix(".npz"))
    data = run_npz_bytes(params, record.history)
    new = record.with_(schema=SCHEMA, weights_sha256=sha256(data))
    text = record_text(new)
    if _parse(json.loads(text), data) != new:
        raise RecordError("would not read back the same")  # never: a guard for the archive
    atomic.write_bytes(json_path.with_suffix(".npz"), data)
    atomic.write_text(json_path, text)
    return True


def seal_record(json_path: str | Path) -> bool:
    """Add the seal to a record written before records were sealed: its JSON gains the one field
    ``seal``, every other field keeps its value (checked).  Returns False, touching nothing, when it is
    sealed already; RecordError when it does not read, is not in schema 3, or its seal is broken."""
    json_path = Path(json_path)
    record = read_record(json_path)
    state = seal_state(record)
    if state == "sealed":
        return False
    if state == "broken":
        raise RecordError("its seal does not match: the JSON was changed after it was written; not resealed")
    if record.schema != SCHEMA:
        raise RecordError(f"schema {record.schema}: compact it first (python -m lysep_cli.store.compact)")
    before = json.loads(json_path.read_text(encoding="utf-8"))
    text = record_text(record)
    after = json.loads(text)
    if {k: v for k, v in after.items() if k != "seal"} != before:
        raise RecordError("would not keep every field as it is")  # never: a guard for the archive
    atomic.write_text(json_path, text)
    return True


@dataclass
class Loaded:
    """Valid records (sorted by cell) and (path, why) for every record file that could not be used."""

    records: list[RunRecord] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)

    def warnings(self, limit: int = 5) -> list[str]:
        """One line per unusable file (at most ``limit``, then a count of the rest)."""
        lines = [f"{path}: invalid run record, not counted ({why})" for path, why in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"... and {len(self.problems) - limit} more invalid run record(s)")
        return lines


def record_files(results_dir: str | Path, experiments: Iterable[str] | None = None) -> list[Path]:
    """Every ``seed-*.json`` under ``results_dir`` (optionally only these experiments), sorted."""
    return ResultsDir(results_dir).record_files(list(experiments) if experiments else None)


def numerics_ids(results_dir: str | Path, experiments: Iterable[str] | None = None) -> Counter:
    """How many run records under ``results_dir`` each numerics id made (``versions.numerics``;
    "unrecorded" for older records), read from the JSON alone (no weights check: seconds for an archive).
    A file that does not parse is skipped (reading the records proper names it)."""
    from lysep_cli.store.fingerprint import UNRECORDED

    out: Counter = Counter()
    for path in record_files(results_dir, experiments):
        try:
            versions = json.loads(path.read_text()).get("versions", {})
            out[versions.get("numerics", UNRECORDED) if isinstance(versions, dict) else UNRECORDED] += 1
        except (OSError, ValueError, AttributeError):
            continue
    return out


def load_records(results_dir: str | Path, experiments: Iterable[str] | None = None,
                 seals: bool = True) -> Loaded:
    """Every valid run record under ``results_dir`` (optionally only these experiments).

    A file that does not parse or validate, or whose weights do not match, is not returned; its
    problem line names it ("<path>: <why>").  With ``seals`` (the default) neither is a record whose seal
    is broken (:data:`SEAL_BROKEN`: a number edited by hand; 0.4 ms a record); a record written before
    records were sealed is returned (``lysep verify`` names it).
    """
    out = Loaded()
    for path in record_files(results_dir, experiments):
        try:
            record = read_record(path)
        except RecordError as exc:
            out.problems.append((path, str(exc)))
            continue
        if seals and seal_state(record) == "broken":
            out.problems.append((path, SEAL_BROKEN))
        else:
            out.records.append(record)
    out.records.sort(key=lambda r: r.cell)
    return out


# ---------------------------------------------------------------------------------------------
# The data set.

def check_data(results_dir: str | Path, experiment: str, sha: str) -> str:
    """State of ``data.npz``: "ok" (its content hash is ``sha``), "missing", "corrupt" or "other"."""
    path = data_path(results_dir, experiment)
    if not path.exists():
        return "missing"
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {"train": z["train"], "test": z["test"]}
    except Exception:  # any unreadable NPZ (BadZipFile, OSError, KeyError, ValueError, EOFError ...)
        return "corrupt"
    return "ok" if data_sha256(arrays) == sha else "other"


def ensure_data(results_dir: str | Path, experiment: str, data: ExperimentData) -> str:
    """Write ``data.npz`` unless it already holds this data set; returns its state before (check_data)."""
    state = check_data(results_dir, experiment, data.sha256)
    if state != "ok":
        atomic.write_bytes(data_path(results_dir, experiment), npz_bytes(saved_arrays(data.Z_train, data.Z_test)))
    return state


def load_data(results_dir: str | Path, experiment: str) -> tuple[np.ndarray, np.ndarray]:
    """(Z_train, Z_test) in the code's layout (n_in, N)."""
    with np.load(data_path(results_dir, experiment), allow_pickle=False) as z:
        return z["train"].T.copy(), z["test"].T.copy()


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write a text output (a table, a comparison)."""
    return atomic.write_text(path, text)
