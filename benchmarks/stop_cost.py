"""What the save-on-stop (lysep_cli/execution/stopping.py) costs: per sweep, and at a stop.

Usage: .venv/bin/python benchmarks/stop_cost.py [--no-latency]

1. Overhead: one progress call with and without ``stopping.check`` (the only work added to every sweep
   or iteration), timed side by side in this process; compared with the fastest iteration of the sweep
   (PINN at elliptic-2d (3,30), 2.0 ms, benchmarks/logs/engine-2026-11.md).
2. Latency: ``lysep run elliptic-10d --solver lysep --sizes 3x150`` (400 iterations, into a temporary
   directory, the checkpoint interval set to 1 hour so a checkpoint can only be the stop's), SIGTERM 8 s
   after every run is computing; prints how long the command took to exit and the sweep each checkpoint
   holds, with --jobs 1 and --jobs 2.  About a minute.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

from lysep_cli.execution import stopping
from lysep_cli.store.checkpoint import checkpoint_path, saved_sweeps
from lysep_cli.store.locks import held_by_others

FASTEST_ITERATION_S = 2.0e-3


def overhead() -> None:
    sink: list = []

    def loss(k: int, v: float) -> None:  # stands for the reporter's loss(): a call and a little work
        sink.append(v)
        sink.clear()

    def before(k: int, v: float) -> None:
        loss(k, v)

    def after(k: int, v: float) -> None:
        loss(k, v)
        stopping.check(k, 2000)

    for _ in range(3):
        tb = min(timeit.repeat(lambda: before(5, 1.0), number=200_000, repeat=5)) / 200_000
        ta = min(timeit.repeat(lambda: after(5, 1.0), number=200_000, repeat=5)) / 200_000
        print(f"progress call: before {tb * 1e9:.0f} ns, after {ta * 1e9:.0f} ns, added {(ta - tb) * 1e9:.0f} ns"
              f" = {(ta - tb) / FASTEST_ITERATION_S * 100:.4f} % of the fastest iteration", flush=True)


def latency(jobs: int, seeds: list[int], root: Path) -> None:
    results = root / f"jobs{jobs}"
    cmd = [sys.executable, "-m", "lysep_cli.cli", "run", "elliptic-10d", "--solver", "lysep", "--sizes", "3x150",
           "--seeds", ",".join(map(str, seeds)), "--iterations", "400", "--jobs", str(jobs), "--results", str(results)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "LYSEP_CHECKPOINT_SECONDS": "3600"})
    cell = results / "elliptic-10d/lysep/L3-M150"
    while sorted(held_by_others(cell, seeds)[1]) != seeds and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(8)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate()
    dt = time.monotonic() - t0
    ks = [saved_sweeps(checkpoint_path(results, "elliptic-10d", "lysep", 3, 150, s)) for s in seeds]
    print(f"--jobs {jobs}: exit {proc.returncode}, {dt:.2f} s after SIGTERM; checkpoints at sweeps {ks}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-latency", action="store_true", help="only the per-call overhead")
    args = ap.parse_args()
    overhead()
    if not args.no_latency:
        with tempfile.TemporaryDirectory() as tmp:
            latency(1, [0], Path(tmp))
            latency(2, [0, 1], Path(tmp))


if __name__ == "__main__":
    main()
