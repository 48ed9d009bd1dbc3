"""How far `lysep verify --weights`'s re-evaluation of the archive moves on another platform, beside each
record's one-ulp sensitivity delta: the data behind the weights tolerance min(WEIGHTS_CAP, max(1e-9,
100 delta)) of lysep_cli/reports/verify.py (docs/reproducibility.md).

Two child processes re-evaluate every archived network (J and l2 from the weights NPZ and data.npz, no
training): one on this platform, which also measures delta (:func:`verify._ulp_sensitivity`), and one on
an emulated other platform (OpenBLAS's Sandybridge kernel, NumPy's native SIMD paths, AVX-512 where the
CPU has it).  About 3 CPU-minutes for the 952 records.

    python studies/weights_spread.py [RESULTS]  > studies/results/weights_spread.txt

Backs: lysep_cli/reports/verify.py, docs/reproducibility.md: the weights pass's tolerance on another
    platform.
Regenerate: make studies STUDIES=weights_spread -> studies/results/weights_spread.txt (studies/run.py
    holds the commands).
Cost: ~3 CPU-minutes (952 records re-evaluated twice).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads
import numpy as np

OTHER = {"OPENBLAS_CORETYPE": "Sandybridge", "LYSEP_NATIVE_SIMD": "1"}
CAPS = (1e-4, 1e-3, 3e-3, 1e-2)


def child(results: str, out: str, sensitivity: bool) -> None:
    from threadpoolctl import threadpool_limits

    from lysep_cli.numerics import network
    from lysep_cli.numerics.dataset import problem_of
    from lysep_cli.numerics.metrics import finite_or_none, relative_l2
    from lysep_cli.reports import verify
    from lysep_cli.specs import default_config, load_specs
    from lysep_cli.store import records

    specs, data, rows = load_specs(default_config()), {}, []
    for rec in records.load_records(results).records:
        if rec.experiment not in specs:
            continue
        if rec.experiment not in data:
            Z_train, Z_test = records.load_data(results, rec.experiment)
            problem = problem_of(specs[rec.experiment])
            data[rec.experiment] = (Z_train, Z_test, problem, problem.coefficients(Z_train), problem.rhs(Z_train))
        Z_train, Z_test, problem, coef, Y = data[rec.experiment]
        params = records.load_params(records.record_paths(results, *rec.cell)[1])
        with threadpool_limits(limits=1), np.errstate(all="ignore"):
            now = (finite_or_none(network.pinn_loss(params, Z_train, coef, Y)),
                   finite_or_none(relative_l2(problem, params, Z_test)))
        rel = [verify._rel(a, b) for a, b in zip(now, (rec.final.J, rec.final.l2))]
        sens = verify._ulp_sensitivity(problem, params, Z_train, coef, Y, Z_test, now) if sensitivity else (0, 0)
        rows.append({"cell": rec.cell, "rel": rel, "sens": sens})
    Path(out).write_text(json.dumps(rows))


def summary(here: list[dict], other: list[dict]) -> None:
    sens = {tuple(x["cell"]): x["sens"] for x in here}
    rows = [(x["rel"][i], sens[tuple(x["cell"])][i], tuple(x["cell"]), q)
            for x in other for i, q in enumerate(("J", "l2"))]
    moved, delta = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    rule = np.maximum(1e-9, 100 * delta)
    print(f"{len(other)} records, J and l2 each: {len(rows)} numbers; identical on this platform: "
          f"{sum(max(x['rel']) == 0 for x in here)} records")
    print(f"other platform ({', '.join(f'{k}={v}' for k, v in OTHER.items())}): largest move {moved.max():.2e}; "
          f"largest move / max(1e-9, 100 delta) = {(moved / rule).max():.3f}")
    print(f"max(1e-9, 100 delta): above 1e-3 for {(rule > 1e-3).sum()} numbers, above 1e-2 for "
          f"{(rule > 1e-2).sum()}, largest {rule.max():.2e}")
    for cap in CAPS:
        tol = np.minimum(rule, cap)
        print(f"cap {cap:g}: {(moved > tol).sum()} numbers beyond their tolerance; largest move / tolerance "
              f"{(moved / tol).max():.3f}")
    print("largest moves:")
    for m, d, cell, q in sorted(rows, key=lambda r: -r[0])[:6]:
        print(f"  {m:.2e} (delta {d:.2e})  {' '.join(map(str, cell))} {q}")


def main(results: str = "results/paper") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        outs = []
        for name, env, sens in (("here", {}, "1"), ("other", OTHER, "")):
            out = str(Path(tmp) / f"{name}.json")
            subprocess.run([sys.executable, __file__, "--child", results, out, sens], check=True,
                           env={**os.environ, **env})
            outs.append(json.loads(Path(out).read_text()))
    summary(*outs)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], bool(sys.argv[4]))
    elif sys.argv[1:2] == ["--summary"]:  # from two saved child outputs
        summary(json.loads(Path(sys.argv[2]).read_text()), json.loads(Path(sys.argv[3]).read_text()))
    else:
        main(*sys.argv[1:])
