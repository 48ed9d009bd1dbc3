"""A stacked device on a dask worker started as docs/gpu.md says (issue 40, item 6): the same records as here.

Usage (from the repository root; benchmarks/gpu_check.sh runs it after its own check, on the GPU machine):

    python benchmarks/gpu_cluster_check.py [--device cuda] [--experiment elliptic-2d] [--sizes 3x30]
        [--solver pinn,lysep] [--seeds 10] [--iterations 20] [--repeats 3]
        [--out benchmarks/results/gpu_cluster_check]

Starts `dask scheduler` on loopback and one `dask worker --nworkers 1 --nthreads 1 --preload
lysep_cli.platform_pin` with ``CUDA_VISIBLE_DEVICES=0`` (the launch docs/gpu.md documents, one per GPU), then
runs the same cells in this process — here (``--device``, no scheduler) and as one dask task per stack on
that worker, in ``--repeats`` alternating rounds, each way after a warm-up run of the same cells (CuPy
compiles its kernels once per process) — and checks that both write the same records (weights and
histories byte for byte, finals, fingerprint with the device, array library, GPU model and CUDA runtime).
Then once more with ``--scheduler local:N`` (``--local``, default 2: a LocalCluster whose workers take the
machine's GPUs round-robin, so on one GPU they share it; lysep_cli/execution/local_share.py): its records
must be the same too; its wall time includes starting the cluster and each worker's kernel compilation.
Figures: the wall time of each way (from the first task to the last record written, best of the rounds;
starting the worker is reported apart) and the per-stack overhead of the cluster, (cluster - here) /
stacks.  Writes ``OUT.txt`` and ``OUT.json``; exit 1 when the records differ.  Without dask.distributed it
writes one line saying so and exits 0.  ``--device cpu-stacked`` runs it on any machine
(tests/test_stacked_cluster.py does, at tiny sizes).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lysep_cli.execution import cluster, runner
from lysep_cli.specs import default_config, load_specs, parse_seeds, parse_sizes
from lysep_cli.store import records
from lysep_cli.store.fingerprint import DEVICE_KEYS

TIMINGS = ("seconds", "seal")
DIAGNOSTIC_TIMINGS = ("cpu_seconds", "stack_seconds", "seconds_per_iteration")


def repeated(record) -> dict:
    """A record's JSON without what a rerun does not repeat (its timings)."""
    out = {k: v for k, v in record.to_json().items() if k not in TIMINGS}
    out["diagnostics"] = {k: v for k, v in out["diagnostics"].items() if k not in DIAGNOSTIC_TIMINGS}
    return out


def start(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def timed(spec, keys, iterations: int, out: Path, device: str, session=None) -> float:
    t0 = time.perf_counter()
    sweep = runner.run_experiment(spec, keys, iterations, out, cluster=session, device=device)
    if sweep.failed:
        raise SystemExit(f"gpu_cluster_check: {len(sweep.failed)} run(s) failed, e.g. {sweep.failed[0]}")
    return time.perf_counter() - t0


def compare(spec, here: Path, there: Path) -> tuple[int, list[str]]:
    """(records compared, what differs)."""
    mine = {(r.solver, r.L, r.M, r.seed): r for r in records.load_records(here, [spec.name]).records}
    theirs = {(r.solver, r.L, r.M, r.seed): r for r in records.load_records(there, [spec.name]).records}
    problems = [] if sorted(mine) == sorted(theirs) else [f"runs {sorted(mine)} vs {sorted(theirs)}"]
    for key in sorted(set(mine) & set(theirs)):
        a, b = mine[key], theirs[key]
        if repeated(a) != repeated(b):
            problems.append(f"{key}: records differ")
        npz = [records.record_paths(d, spec.name, *key)[1].read_bytes() for d in (here, there)]
        if npz[0] != npz[1]:
            problems.append(f"{key}: weights differ")
    return len(mine), problems


def write(out: Path, result: dict, text: str) -> None:
    out.with_suffix(".txt").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu-stacked"))
    parser.add_argument("--experiment", default="elliptic-2d")
    parser.add_argument("--sizes", default="3x30")
    parser.add_argument("--solver", default="pinn,lysep")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2, help="alternating rounds here / on the worker")
    parser.add_argument("--local", type=int, default=2, help="workers of the LocalCluster run (0: none)")
    parser.add_argument("--config", default=None)
    parser.add_argument("--out", default="benchmarks/results/gpu_cluster_check")
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        import distributed
    except ImportError:
        out.with_suffix(".txt").write_text("gpu_cluster_check: skipped, dask.distributed is not installed "
                                           "(pip install 'lysep[dask]')\n")
        print(out.with_suffix(".txt").read_text(), end="")
        return 0
    spec = load_specs(args.config or default_config())[args.experiment]
    keys = [runner.RunKey(solver, L, M, seed) for solver in args.solver.split(",")
            for L, M in parse_sizes(args.sizes, spec) for seed in parse_seeds(f"0-{args.seeds - 1}", spec)]
    stacks = len(runner.cells(keys))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sfile = root / "scheduler.json"
        procs = [start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                        str(sfile)], root / "scheduler.log")]
        try:
            deadline = time.monotonic() + 60
            while not sfile.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            t0 = time.perf_counter()
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}
            procs.append(start(["worker", "--scheduler-file", str(sfile), "--nworkers", "1", "--nthreads", "1",
                                "--no-dashboard", "--preload", "lysep_cli.platform_pin", "--local-directory",
                                str(root / "scratch")], root / "worker.log", env))
            with distributed.Client(scheduler_file=str(sfile), timeout=60) as client:
                client.wait_for_workers(1, timeout=120)
            worker_start = time.perf_counter() - t0
            timed(spec, keys, args.iterations, root / "warm-here", args.device)
            with cluster.Session.open(cluster.read_scheduler_file(sfile), timeout=60, device=args.device) as session:
                facts = session.device_facts
                timed(spec, keys, args.iterations, root / "warm-there", args.device, session)
                here, there = [], []
                for r in range(args.repeats):  # alternating rounds, side by side
                    here.append(timed(spec, keys, args.iterations, root / f"here{r}", args.device))
                    there.append(timed(spec, keys, args.iterations, root / f"there{r}", args.device, session))
            n, problems = compare(spec, root / "here0", root / "there0")
            versions = records.load_records(root / "there0", [spec.name]).records[0].versions
        finally:
            for proc in reversed(procs):
                stop(proc)
        result = {"device": args.device, "experiment": spec.name, "sizes": args.sizes, "solvers": args.solver,
                  "seeds": args.seeds, "iterations": args.iterations, "stacks": stacks, "records": n,
                  "identical": not problems, "problems": problems[:10], "worker_device_facts": facts,
                  "record_device_keys": {k: versions.get(k) for k in DEVICE_KEYS},
                  "worker_start_seconds": worker_start, "repeats": args.repeats, "here_seconds": here,
                  "cluster_seconds": there, "overhead_per_stack_seconds": (min(there) - min(here)) / stacks,
                  "loadavg": os.getloadavg()}
        text = (f"{n} records ({stacks} stacks: {args.solver} {spec.name} {args.sizes}, {args.seeds} seeds, "
                f"{args.iterations} iterations), --device {args.device}, here and on one dask worker "
                f"(CUDA_VISIBLE_DEVICES=0, --preload lysep_cli.platform_pin):\n"
                f"  records identical (weights, histories, finals, fingerprint): {not problems}"
                + "".join(f"\n    {p}" for p in problems[:10]) +
                f"\n  the records' device entries: {result['record_device_keys']}\n"
                f"  wall time, best of {args.repeats} alternating rounds after a warm-up run each: here "
                f"{min(here):.2f} s, on the worker {min(there):.2f} s: {result['overhead_per_stack_seconds']:+.3f} s "
                f"per stack (all rounds: here {', '.join(f'{t:.2f}' for t in here)}; worker "
                f"{', '.join(f'{t:.2f}' for t in there)}); worker start-up {worker_start:.1f} s; load average "
                f"{result['loadavg'][0]:.2f}\n")
        write(out, result, text)  # kept should the LocalCluster's run below outlast the script's time
        local_problems: list[str] = []
        if args.local > 0:  # a LocalCluster of --local workers (one GPU: all share it)
            t0 = time.perf_counter()
            with cluster.Session.open(cluster.Target(local_workers=args.local), timeout=60,
                                      device=args.device) as session:
                timed(spec, keys, args.iterations, root / "local", args.device, session)
            local_seconds = time.perf_counter() - t0
            local_problems = compare(spec, root / "here0", root / "local")[1]
            result.update(local_workers=args.local, local_identical=not local_problems,
                          local_problems=local_problems[:10], local_seconds_with_start=local_seconds)
            text += (f"  --scheduler local:{args.local} (a LocalCluster, its workers on the GPUs round-robin): "
                     f"records identical to here: {not local_problems}"
                     + "".join(f"\n    {p}" for p in local_problems[:10]) +
                     f"; {local_seconds:.2f} s with the cluster's start and each worker's first compilation\n")
            write(out, result, text)
    print(text, end="")
    return 1 if problems or local_problems else 0


if __name__ == "__main__":
    sys.exit(main())
