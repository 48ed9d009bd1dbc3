"""Planted changes in copies of the archive against `lysep verify --against` and `--weights`, the verdict
(exit status and the line of the planted cell) of each code version given (docs/reproducibility.md).

    python studies/verify_plants.py before=/tmp/before after=.  > studies/results/verify_plants.md

Each ``LABEL=ROOT`` is a checkout: its ``lysep_cli`` runs (``python -m lysep_cli.cli``, PYTHONPATH=ROOT)
on its own ``results/paper`` (the archive as that version keeps it: the same numbers).  Finals plants
edit the archive's finals file (``verify --save-finals``) and compare the archive against it; record
plants edit a copy of the records of one experiment.  Nothing is rerun: about a minute in all.

Backs: docs/reproducibility.md: planted changes against lysep verify, before and after issue 38.
Regenerate: not run by make studies: its inputs are a checkout of commit 7eba76a (BEFORE: `git worktree
    add BEFORE 7eba76a`) -> studies/results/verify_plants.md (studies/run.py holds the commands).
Cost: about a CPU-minute.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lysep_cli.store.finals import COLUMNS

CELLS = [("hyperbolic-5d", "pinn", 3, 20), ("elliptic-10d", "lysep", 3, 20), ("elliptic-2d", "lysep", 3, 30),
         ("parabolic-5d", "lysep", 3, 50)]


def scale(factor, seeds=None, key="J"):
    def change(rows):
        for r in rows:
            if seeds is None or int(r["seed"]) in seeds:
                r[key] = repr(float(r[key]) * factor)
        return rows
    return change


def rotate(rows):
    values = [(r["J"], r["l2"]) for r in rows]
    for r, (J, l2) in zip(rows, values[1:] + values[:1]):
        r["J"], r["l2"] = J, l2
    return rows


FINALS_PLANTS = [(f"every seed's J x{f:g}", cell, scale(f)) for f in (1.05, 1.5) for cell in CELLS] + [
    ("one seed's J x100 (seed 3)", cell, scale(100.0, {3})) for cell in CELLS] + [
    ("shuffled seeds (values rotated by one seed)", cell, rotate) for cell in CELLS] + [
    ("a missing seed (4)", CELLS[1], lambda rows: [r for r in rows if r["seed"] != "4"]),
    ("one seed per side (the other side holds seed 0 only; --common-seeds)", CELLS[1],
     lambda rows: [r for r in rows if r["seed"] == "0"]),
    ("a missing cell", CELLS[0], lambda rows: []),
]


def run(root: Path, args: list[str]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-m", "lysep_cli.cli", "verify", *args], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    return out.returncode, out.stdout + out.stderr


def line_of(output: str, needle: str) -> str:
    hits = [l for l in output.splitlines() if needle in l and not l.startswith("cell by cell")]
    return (hits[0] if hits else output.strip().splitlines()[-1])[:160]


def finals_plant(root: Path, tmp: Path, finals: Path, name: str, cell, change) -> tuple[int, str]:
    with finals.open() as fh:
        rows = list(csv.DictReader(fh))
    key = lambda r: (r["experiment"], r["solver"], int(r["L"]), int(r["M"]))  # noqa: E731
    planted = [r for r in rows if key(r) != cell] + change([r for r in rows if key(r) == cell])
    path = tmp / "planted.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(planted)
    extra = ["--common-seeds"] if "common-seeds" in name else []
    code, out = run(root, [cell[0], "--against", str(path.resolve()), *extra])
    return code, line_of(out, f"{cell[0]} {cell[1]} L{cell[2]}-M{cell[3]}")


def record_copy(root: Path, tmp: Path, experiment: str) -> Path:
    copy = tmp / f"copy-{root.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root / "results" / "paper" / experiment, copy / experiment)
    return copy


def _json(results: Path, cell, seed: int) -> Path:
    e, s, L, M = cell
    return results / e / s / f"L{L}-M{M}" / f"seed-{seed}.json"


def edit_final(root: Path, tmp: Path, cell, seed: int, changes: dict) -> tuple[int, str]:
    copy = record_copy(root, tmp, cell[0])
    path = _json(copy, cell, seed)
    obj = json.loads(path.read_text())
    for key, factor in changes.items():
        obj["final"][key] *= factor
    path.write_text(json.dumps(obj, indent=1) + "\n")
    code, out = run(root, [cell[0], "--weights", "--all", "--solver", cell[1], "--results", str(copy)])
    return code, line_of(out, f"L{cell[2]}-M{cell[3]} seed {seed}:")


def edit_weights(root: Path, tmp: Path, cell, seed: int, factor: float) -> tuple[int, str]:
    """The output layer scaled and the record written by that version's own writer (re-hashed, sealed)."""
    copy = record_copy(root, tmp, cell[0])
    path = _json(copy, cell, seed)
    script = (
        "import sys; from pathlib import Path; from lysep_cli.store import records\n"
        "p = Path(sys.argv[1]); rec = records.read_record(p); params = records.load_params(p.with_suffix('.npz'))\n"
        f"params[-1] = (params[-1][0] * {factor!r}, params[-1][1])\n"
        "rec = rec.with_(weights_sha256=records.sha256(records.run_npz_bytes(params, rec.history)))\n"
        "records.write_record(Path(sys.argv[2]), rec, params)\n")
    subprocess.run([sys.executable, "-c", script, str(path), str(copy)], cwd=root, check=True,
                   env={**os.environ, "PYTHONPATH": str(root)})
    code, out = run(root, [cell[0], "--weights", "--all", "--solver", cell[1], "--results", str(copy)])
    return code, line_of(out, f"L{cell[2]}-M{cell[3]} seed {seed}:")


def unreadable(root: Path, tmp: Path, cell) -> tuple[int, str]:
    copy = record_copy(root, tmp, cell[0])
    _json(copy, cell, 2).write_text("{ not json")
    code, out = run(root, [cell[0], "--against", str(copy.resolve())])
    return code, line_of(out, f"{cell[0]} {cell[1]} L{cell[2]}-M{cell[3]}")


def main(*versions: str) -> None:
    roots = {label: Path(root).resolve() for label, root in (v.split("=", 1) for v in versions)}
    results: dict[str, list] = {label: [] for label in roots}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        finals = tmp / "finals.csv"
        code, out = run(next(iter(roots.values())), ["--save-finals", str(finals)])
        assert code == 0, out
        for label, root in roots.items():
            rows = results[label]
            code, out = run(root, ["--against", str(finals)])
            rows.append((code, out.strip().splitlines()[-1][:160]))
            for name, cell, change in FINALS_PLANTS:
                rows.append(finals_plant(root, tmp, finals, name, cell, change))
            rows.append(unreadable(root, tmp, CELLS[0]))
            rows.append(edit_final(root, tmp, ("elliptic-10d", "rfm", 2, 3200), 1, {"J": 1.4}))
            rows.append(edit_final(root, tmp, ("elliptic-2d-depth", "lysep", 4, 50), 7, {"J": 1.08, "l2": 1.35}))
            rows.append(edit_final(root, tmp, CELLS[0], 0, {"J": 1 + 1e-9}))
            rows.append(edit_weights(root, tmp, ("elliptic-2d-depth", "lysep", 4, 50), 7, 1 + 1e-6))
            rows.append(edit_weights(root, tmp, CELLS[0], 0, 1 + 1e-9))
    names = (["identical copy (whole archive, --against its own finals)"]
             + [f"{n}: {' '.join(map(str, c))}" for n, c, _ in FINALS_PLANTS]
             + [f"an unreadable record (seed 2) on the other side: {' '.join(map(str, CELLS[0]))}",
                "final J x1.4 in the record: elliptic-10d rfm 2 3200 seed 1 (--weights)",
                "final J x1.08, l2 x1.35 in the record: elliptic-2d-depth lysep 4 50 seed 7 (--weights)",
                f"final J x(1+1e-9) in the record: {' '.join(map(str, CELLS[0]))} seed 0 (--weights)",
                "W_L x(1+1e-6), record re-hashed: elliptic-2d-depth lysep 4 50 seed 7 (--weights)",
                f"W_L x(1+1e-9), record re-hashed: {' '.join(map(str, CELLS[0]))} seed 0 (--weights)"])
    labels = list(roots)
    print("| plant | " + " | ".join(f"{l}: exit" for l in labels) + " | " + " | ".join(f"{l}: line" for l in labels)
          + " |\n|" + "---|" * (1 + 2 * len(labels)))
    for i, name in enumerate(names):
        cells = [str(results[l][i][0]) for l in labels] + [
            results[l][i][1].replace("|", "/") for l in labels]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
