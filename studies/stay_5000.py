"""Does the archive's stuck seed stay on the ridge plateau for good?  LySep elliptic-2d (3,100) seed 3 to 5000 sweeps.

Usage: .venv/bin/python studies/stay_5000.py [--results results/paper] [--sweeps 5000]
           [--out studies/results/stay_5000_e2d.txt]

Reruns the archived run (the runner's own ``execute``, the spec's settings, one BLAS thread) for ``--sweeps``
sweeps instead of 2000, checks that its first 2000 sweeps are the record's bit for bit (J and J_S, every
entry), and prints J at every 1000th sweep, the first sweep with J < 1e-6 (none: it stayed), the final
step sizes of every block and how far the weights moved between sweep 2000 (the archived weights) and the
end.  studies/explanations.md (b) quotes it.  Cost: about 2.5 CPU s per 100 sweeps (5000 sweeps: ~3.5 CPU-minutes).

Backs: studies/explanations.md (b): the archive's stuck seed stays on the ridge plateau to 5000 sweeps.
Regenerate: make studies STUDIES=stay_5000 -> studies/results/stay_5000_e2d.txt (studies/run.py holds the
    commands).
Cost: ~3.5 CPU-minutes.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

from pathlib import Path

import numpy as np

from lysep_cli.execution.runner import RunKey, execute
from lysep_cli.specs import default_config, load_specs
from lysep_cli.store import records
from common import report_parser, write_report

EXPERIMENT, L, M, SEED = "elliptic-2d", 3, 100, 3


def report(results: Path, sweeps: int) -> str:
    """The text of the report (runs the rerun: minutes)."""
    spec = load_specs(default_config())[EXPERIMENT]
    json_path, npz_path = records.record_paths(results, EXPERIMENT, "lysep", L, M, SEED)
    archived = records.read_record(json_path)
    rec, params = execute(spec, RunKey("lysep", L, M, SEED), sweeps)
    n = min(archived.iterations, sweeps) + 1
    same = {k: rec.history[k][:n] == archived.history[k][:n] for k in ("J", "J_S")}
    J = np.array(rec.history["J"], dtype=float)
    below = np.flatnonzero(J < 1e-6)
    at_2000 = records.load_params(npz_path)
    moves = [f"W_{l + 1} {np.linalg.norm(W - W0) / np.linalg.norm(W0):.2e}"
             for l, ((W, _), (W0, _)) in enumerate(zip(params, at_2000))]
    out = [f"# studies/stay_5000.py: LySep {EXPERIMENT} ({L},{M}) seed {SEED}, {sweeps} sweeps "
           f"(numerics {rec.versions.get('numerics')}, BLAS kernel {rec.versions.get('blas_core')}; "
           f"the record: numerics {archived.versions.get('numerics')}, kernel {archived.versions.get('blas_core')})",
           f"first {n - 1} sweeps bit for bit those of the record: "
           f"J {'yes' if same['J'] else 'NO'}, J_S {'yes' if same['J_S'] else 'NO'}",
           f"first sweep with J < 1e-6: {int(below[0]) if below.size else 'none'}",
           "sweep        J             J_S"]
    out += [f"{k:>5}  {J[k]:.6e}  {rec.history['J_S'][k]:.6e}" for k in range(0, sweeps + 1, 1000)]
    steps = rec.diagnostics.get("final_step_sizes", {})
    out += ["final step sizes: " + ", ".join(f"{b} {s:.1e}" for b, s in steps.items()),
            f"weights moved from sweep {archived.iterations} (the archived weights) to {sweeps}, relative: "
            + ", ".join(moves),
            f"final J {rec.final.J:.6e}, l2 {rec.final.l2:.4e}; CPU s {rec.diagnostics.get('cpu_seconds', 0):.0f}"]
    return "\n".join(out) + "\n"


def main() -> None:
    p = report_parser(__doc__, "studies/results/stay_5000_e2d.txt")
    p.add_argument("--sweeps", type=int, default=5000)
    a = p.parse_args()
    write_report(report(a.results, a.sweeps), a.out)


if __name__ == "__main__":
    main()
