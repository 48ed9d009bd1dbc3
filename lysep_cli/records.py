"""Run records on disk: one JSON + one NPZ per (experiment, solver, L, M, seed), written atomically.

Layout::

    <results>/<experiment>/data.npz                               train, test (N x n_in)
    <results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.json       the record (see docs/foundation.md)
    <results>/<experiment>/<solver>/L<L>-M<M>/seed-<s>.npz        W1, b1, ..., WL, bL (paper shapes)

Every file is written to a temporary file in the same directory and renamed over the target
(``os.replace``), so a reader never sees a half-written file.  The NPZ is written first and the JSON
last: a run is complete exactly when its JSON exists.  Non-finite floats (a diverged run) are stored
as JSON ``null`` so the files are strict JSON; ``np.asarray(x, dtype=float)`` turns them back into NaN.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .network import Params


def record_paths(results_dir: str | Path, experiment: str, solver: str, L: int, M: int,
                 seed: int) -> tuple[Path, Path]:
    """(json_path, npz_path) of one run."""
    base = Path(results_dir) / experiment / solver / f"L{L}-M{M}" / f"seed-{seed}"
    return base.with_suffix(".json"), base.with_suffix(".npz")


def data_path(results_dir: str | Path, experiment: str) -> Path:
    return Path(results_dir) / experiment / "data.npz"


@contextmanager
def _atomic(path: Path, mode: str = "w") -> Iterator[Any]:
    """Open a temp file next to ``path``; on success fsync and rename it over ``path``.

    On any exception (KeyboardInterrupt included) the temp file is removed and ``path`` untouched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def jsonable(x: Any) -> Any:
    """Plain JSON types; non-finite floats become None."""
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


def write_json(path: Path, obj: dict[str, Any]) -> None:
    text = json.dumps(jsonable(obj), indent=1, allow_nan=False)
    with _atomic(path, "w") as fh:
        fh.write(text + "\n")


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with _atomic(path, "wb") as fh:
        np.savez(fh, **arrays)


def params_to_arrays(params: Params) -> dict[str, np.ndarray]:
    """{"W1": W_1, "b1": b_1, ..., "WL": W_L, "bL": b_L} with W_l (out, in), b_l (out,)."""
    out: dict[str, np.ndarray] = {}
    for l, (W, b) in enumerate(params, start=1):
        out[f"W{l}"], out[f"b{l}"] = np.asarray(W), np.asarray(b)
    return out


def load_params(npz_path: str | Path) -> Params:
    """The network saved by :func:`write_record`."""
    with np.load(npz_path) as z:
        L = sum(1 for k in z.files if k.startswith("W"))
        return [(z[f"W{l}"], z[f"b{l}"]) for l in range(1, L + 1)]


def record_exists(results_dir: str | Path, experiment: str, solver: str, L: int, M: int, seed: int) -> bool:
    json_path, npz_path = record_paths(results_dir, experiment, solver, L, M, seed)
    return json_path.exists() and npz_path.exists()


def read_record(json_path: str | Path) -> dict[str, Any]:
    with open(json_path) as fh:
        return json.load(fh)


def write_record(results_dir: str | Path, record: dict[str, Any], params: Params) -> tuple[Path, Path]:
    """Write the NPZ then the JSON of one run; if interrupted in between, neither is left behind."""
    json_path, npz_path = record_paths(results_dir, record["experiment"], record["solver"],
                                       record["L"], record["M"], record["seed"])
    done = False
    try:
        write_npz(npz_path, params_to_arrays(params))
        write_json(json_path, record)
        done = True
    finally:
        if not done:
            for p in (json_path, npz_path):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
    return json_path, npz_path


def save_data(results_dir: str | Path, experiment: str, Z_train: np.ndarray, Z_test: np.ndarray) -> Path:
    """results/<experiment>/data.npz with train, test as (N, n_in) arrays (columns t, x_1..x_d).

    Rewritten only when missing or different (e.g. after n_train changed in the spec).
    """
    path = data_path(results_dir, experiment)
    train, test = np.ascontiguousarray(Z_train.T), np.ascontiguousarray(Z_test.T)
    if path.exists():
        try:
            with np.load(path) as z:
                if np.array_equal(z["train"], train) and np.array_equal(z["test"], test):
                    return path
        except (OSError, KeyError, ValueError):
            pass
    write_npz(path, {"train": train, "test": test})
    return path


def load_data(results_dir: str | Path, experiment: str) -> tuple[np.ndarray, np.ndarray]:
    """(Z_train, Z_test) in the code's layout (n_in, N)."""
    with np.load(data_path(results_dir, experiment)) as z:
        return z["train"].T.copy(), z["test"].T.copy()


def load_records(results_dir: str | Path, experiments: list[str] | None = None) -> list[dict[str, Any]]:
    """Every parsed run record under ``results_dir`` (optionally only these experiments).

    Sorted by (experiment, solver, L, M, seed); unreadable files are skipped.
    """
    root = Path(results_dir)
    if not root.is_dir():
        return []
    names = experiments if experiments else sorted(p.name for p in root.iterdir() if p.is_dir())
    records = []
    for name in names:
        for path in sorted((root / name).glob("*/L*-M*/seed-*.json")):
            try:
                records.append(read_record(path))
            except (OSError, ValueError):
                continue
    records.sort(key=lambda r: (r.get("experiment", ""), r.get("solver", ""), r.get("L", 0),
                                r.get("M", 0), r.get("seed", 0)))
    return records


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write a text output (a table, a comparison)."""
    path = Path(path)
    with _atomic(path, "w") as fh:
        fh.write(text)
    return path
