"""Peak memory of one run, ours against another checkout, and what numba's kernels add to it.

    python benchmarks/peak_memory.py --peer DIR [--cell elliptic-10d:150] [--solver lysep] [--iterations 40]
                                     [--config FILE] [--repeats 2]

Each measurement is a fresh child process (one BLAS thread) that imports lysep, runs ``runner.execute``
for the cell, seed 0 and ``--iterations`` iterations, and reports its peak resident memory (ru_maxrss).
Three variants, alternating, ``--repeats`` times each (the largest peak kept: a peak is a maximum):

    ours           as `lysep run` runs it
    ours, NumPy σ  the same code with the numba kernels switched off (σ and the fit matrix on their NumPy
                   paths: the same bits, benchmarks/logs/engine-2026-11.md), so the difference is what numba costs
    peer           the lysep_cli package of ``--peer`` (e.g. commit 42e5322, the fast-kernels issue's "today")

and one child that only imports lysep and numba (numba's own import, without any kernel).  LySep's
working set grows once the backtracking settles (two trials per block after ~20 sweeps), so the default
40 sweeps is past that.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(impl: str, variant: str, experiment: str, L: int, M: int, solver: str, iterations: int,
          config: str) -> dict:
    """Runs inside the child: one run, then the process's peak RSS in MB."""
    import resource

    if impl:
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
        sys.path.insert(0, impl)
    import lysep_cli  # noqa: F401  first: it pins OpenBLAS's kernel before NumPy loads (lysep_cli.platform_pin)

    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux

    if variant == "numba-import":
        before = peak()
        import numba  # noqa: F401

        return {"imports_mb": before, "peak_mb": peak()}
    if variant == "numpy-sigma":  # the NumPy paths of σ and the fit matrix (same bits, no numba)
        from lysep_cli.numerics import sincos

        sincos.NUMBA_FROM = 1 << 62
    try:
        from lysep_cli.execution import runner
    except ImportError:  # a peer from before the package's layers (e.g. 42e5322): lysep_cli/runner.py
        from lysep_cli import runner
    from lysep_cli.specs import load_specs

    spec = load_specs(config or str((Path(impl) if impl else ROOT) / "experiments.yaml"))[experiment]
    before = peak()
    runner.execute(spec, runner.RunKey(solver, L, M, 0), iterations)
    return {"imports_mb": before, "peak_mb": peak(), "numba": "numba" in sys.modules}


def measure(*args) -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps(list(args))]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", required=False, default=None, help="another checkout whose lysep_cli runs beside ours")
    ap.add_argument("--cell", default="elliptic-10d:150", help="experiment:M or experiment:LxM")
    ap.add_argument("--solver", default="lysep")
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--config", default="", help="our experiments file (default ./experiments.yaml; the peer reads its own)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return
    experiment, size = args.cell.split(":")
    L, M = (int(v) for v in size.split("x")) if "x" in size else (3, int(size))
    config = str(Path(args.config).resolve()) if args.config else ""
    variants = {"ours": ("", "default", config), "ours, NumPy σ": ("", "numpy-sigma", config)}
    if args.peer:
        variants["peer"] = (str(Path(args.peer).resolve()), "default", "")
    peaks: dict[str, list[dict]] = {k: [] for k in variants}
    for _ in range(args.repeats):
        for name, (impl, variant, cfg) in variants.items():
            peaks[name].append(measure(impl, variant, experiment, L, M, args.solver, args.iterations, cfg))
    numba_import = measure("", "numba-import", experiment, L, M, args.solver, 0, config)
    print(f"# {args.solver} {experiment} ({L},{M}), seed 0, {args.iterations} iterations, one BLAS thread; "
          f"peak RSS of a fresh process (largest of {args.repeats})")
    print(f"{'variant':<16} {'peak MB':>8} {'after imports MB':>17}")
    for name, runs in peaks.items():
        best = max(runs, key=lambda r: r["peak_mb"])
        print(f"{name:<16} {best['peak_mb']:>8.0f} {best['imports_mb']:>17.0f}")
    print(f"importing numba alone: {numba_import['imports_mb']:.0f} -> {numba_import['peak_mb']:.0f} MB")


if __name__ == "__main__":
    main()
