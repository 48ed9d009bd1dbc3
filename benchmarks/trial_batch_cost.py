"""What batching LySep's backtracking trials costs on the CPU: time (cpu-stacked) and peak memory.

    python benchmarks/trial_batch_cost.py time [--cells elliptic-2d:3x30,elliptic-10d:3x100] [--seeds 10]
        [--sweeps 3] [--rounds 3] [--k 2]
    python benchmarks/trial_batch_cost.py memory [--cells elliptic-10d:3x150] [--seeds 10] [--sweeps 1] [--k 2]

``time``: the stacked LySep on NumPy (``--device cpu-stacked``) with trial_batch 1 and k side by side in one
process, one BLAS thread, alternating in each round, the best round each (seconds per sweep from the
initial networks, after a warm-up run of one sweep each); every seed's result checked the same bits.
``memory``: the peak of NumPy's allocations (tracemalloc: NumPy reports its array buffers to it) during a
run of ``--sweeps`` sweeps, k = 1 and k, each from a fresh start; the difference is what the batch adds
(a trial batch holds k trial states at once where k = 1 holds one).  accel/trials.py, benchmarks/logs/gpu-2026-11.md
"Batched trials".
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import lysep_cli  # noqa: E402,F401  first: it pins the BLAS kernel before NumPy loads

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from lysep_cli.accel import backend as backends  # noqa: E402
from lysep_cli.solvers.lysep.algorithm import solve_seeds  # noqa: E402
from lysep_cli.numerics import network  # noqa: E402
from lysep_cli.numerics.dataset import experiment_data  # noqa: E402
from lysep_cli.specs import load_specs  # noqa: E402

CPU = backends.resolve("cpu-stacked")


def _cells(arg: str) -> list[tuple[str, int, int]]:
    return [(n, *map(int, s.split("x"))) for n, s in (c.split(":") for c in arg.split(","))]


def _run(spec, L: int, M: int, seeds: int, sweeps: int, k: int) -> list:
    problem, _, _, train, _ = experiment_data(spec)
    params0 = [network.init_params(train.Z.shape[0], L, M, s) for s in range(seeds)]
    return solve_seeds(CPU, problem, train, params0, spec.solvers["lysep"], sweeps, trial_batch=k)


def _same(a, b) -> bool:
    return (all(np.array_equal(a.history[h], b.history[h], equal_nan=True) for h in ("J", "J_S"))
            and all(np.array_equal(x, y) for (Wa, ba), (Wb, bb) in zip(a.params, b.params) for x, y in ((Wa, Wb), (ba, bb)))
            and a.diagnostics["trials"] == b.diagnostics["trials"])


def timing(cells: str, seeds: int, sweeps: int, rounds: int, k: int) -> dict:
    specs = load_specs(ROOT / "experiments.yaml")
    out = {}
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        for name, L, M in _cells(cells):
            spec = specs[name]
            for batch in (1, k):
                _run(spec, L, M, seeds, 1, batch)  # warm-up
            best: dict[int, float] = {}
            res = {}
            for _ in range(rounds):
                for batch in (1, k):
                    t = time.perf_counter()
                    res[batch] = _run(spec, L, M, seeds, sweeps, batch)
                    best[batch] = min(best.get(batch, np.inf), (time.perf_counter() - t) / sweeps)
            same = all(_same(a, b) for a, b in zip(res[1], res[k]))
            trials = res[1][0].diagnostics["trials"] / sweeps
            out[f"{name} ({L},{M})"] = {"s_per_sweep_k1": best[1], f"s_per_sweep_k{k}": best[k],
                                        "ratio": best[k] / best[1], "same_bits": same,
                                        "trials_per_sweep_seed0": trials}
            print(f"{name} ({L},{M}), {seeds} seeds, {sweeps} sweeps, best of {rounds} alternating rounds, one BLAS "
                  f"thread: k = 1 {best[1]:.3f} s/sweep, k = {k} {best[k]:.3f} s/sweep, ratio {best[k] / best[1]:.3f}; "
                  f"seed 0's trials/sweep {trials:.1f}; every seed the same bits: {same}", flush=True)
    return out


def memory(cells: str, seeds: int, sweeps: int, k: int) -> dict:
    specs = load_specs(ROOT / "experiments.yaml")
    out = {}
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        for name, L, M in _cells(cells):
            spec = specs[name]
            _run(spec, L, M, 1, 1, 1)  # the data set and the engine's one-time allocations outside the measurement
            peak = {}
            for batch in (1, k):
                gc.collect()
                tracemalloc.start()
                _run(spec, L, M, seeds, sweeps, batch)
                peak[batch] = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            out[f"{name} ({L},{M})"] = {"peak_bytes_k1": peak[1], f"peak_bytes_k{k}": peak[k],
                                        "extra_bytes": peak[k] - peak[1]}
            print(f"{name} ({L},{M}), {seeds} seeds, {sweeps} sweep(s): peak traced memory k = 1 "
                  f"{peak[1] / 2**20:.0f} MiB, k = {k} {peak[k] / 2**20:.0f} MiB: the batch adds "
                  f"{(peak[k] - peak[1]) / 2**20:.0f} MiB", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("time", "memory"))
    ap.add_argument("--cells")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sweeps", type=int)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--out", type=Path, help="append the figures (JSON) to this file")
    args = ap.parse_args()
    if args.what == "time":
        figures = timing(args.cells or "elliptic-2d:3x30,elliptic-10d:3x100", args.seeds, args.sweeps or 3,
                         args.rounds, args.k)
    else:
        figures = memory(args.cells or "elliptic-10d:3x150", args.seeds, args.sweeps or 1, args.k)
    if args.out:
        with args.out.open("a") as f:
            f.write(json.dumps({"command": " ".join(sys.argv[1:]), args.what: figures}) + "\n")


if __name__ == "__main__":
    main()
