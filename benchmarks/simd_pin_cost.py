"""What the NumPy SIMD pin costs (lysep_cli/platform_pin.py): PINN and LySep seconds per iteration and
the problem data's evaluation, pinned (NumPy's AVX-512 paths off) against LYSEP_NATIVE_SIMD=1, in fresh
processes alternating in one run, one BLAS thread.  On a machine without AVX-512 both are the same code.

    python benchmarks/simd_pin_cost.py [ROUNDS] > benchmarks/results/simd_pin_cost.txt
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, time
import lysep_cli
from lysep_cli.numerics.dataset import _build
from lysep_cli.store.fingerprint import numpy_simd
from lysep_cli.execution.runner import RunKey, execute
from lysep_cli.specs import default_config, load_specs
specs = load_specs(default_config())
out = {"simd": numpy_simd()}
t = time.perf_counter()
for d, pde, sol in ((2, "elliptic", "exp-sin"), (5, "parabolic", None), (5, "hyperbolic", None)):
    _build(pde, d, sol, 2000, 1000)
out["data_s"] = time.perf_counter() - t
for solver, experiment, M, its in (("pinn", "elliptic-2d", 30, 300), ("lysep", "elliptic-2d", 30, 40),
                                   ("pinn", "parabolic-5d", 20, 300), ("lysep", "parabolic-5d", 20, 20)):
    rec, _ = execute(specs[experiment], RunKey(solver, 3, M, 0), its)
    out[f"{solver} {experiment} (3,{M})"] = rec.diagnostics["cpu_seconds"] / its
print(json.dumps(out))
"""


def main(rounds: int = 3) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("NPY_DISABLE_CPU_FEATURES", "LYSEP_NATIVE_SIMD")}
    runs: dict[str, list[dict]] = {"pinned": [], "native": []}
    for _ in range(rounds):
        for name, env in (("pinned", base), ("native", {**base, "LYSEP_NATIVE_SIMD": "1"})):
            out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"NumPy SIMD pinned: {runs['pinned'][0]['simd']}; native: {runs['native'][0]['simd']}; {rounds} rounds "
          "alternating, fresh processes, one BLAS thread; median CPU seconds per iteration")
    print(f"{'what':<32} {'pinned':>10} {'native':>10} {'pinned/native':>14}")
    for key in [k for k in runs["pinned"][0] if k != "simd"]:
        a = sorted(r[key] for r in runs["pinned"])[rounds // 2]
        b = sorted(r[key] for r in runs["native"])[rounds // 2]
        print(f"{key:<32} {a:>10.4g} {b:>10.4g} {a / b:>14.3f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
