"""Cluster speed-up and per-task overhead: 8 equal runs on a LocalCluster of 1 and of 2 workers (not a test).

Usage: .venv/bin/python benchmarks/bench_cluster.py [--runs 8] [--iterations 40] [--size 3x30]
                                                      [--experiment elliptic-2d] [--solver pinn] [--repeats 1]

The same ``--runs`` runs (one solver and size, seeds 0..runs-1; equal work) are done four ways, each into
a fresh results directory, with the records written by this process as in ``lysep run``:

* ``jobs 1``     sequentially in this process (``--jobs 1``);
* ``jobs 2``     two worker processes (``--jobs 2``), pool start-up included;
* ``cluster 1``  a LocalCluster of 1 single-threaded worker process (``--scheduler local:1``);
* ``cluster 2``  a LocalCluster of 2 (``--scheduler local:2``).

The cluster times count from submitting the tasks to the last record written; starting the cluster is
reported apart (``lysep run`` pays it once per invocation).  Figures:

* speed-up = cluster 1 / cluster 2 (target >= 1.8 on 2 idle cores);
* per-task overhead against --jobs, like with like: (cluster 1 - jobs 1) / runs (neither starts
  workers), and (cluster 2 + its start-up - jobs 2) / runs (both start two worker processes);
  target <= 0.2 s;
* per run, the worker time not spent computing: (wall x workers - sum of the records' ``seconds``) /
  runs; dispatch, transfer and writing, plus idle workers at the end of the sweep;
* the load: the load average before and after, and for each way the cores that other processes used
  meanwhile (/proc/stat minus this process tree): on a shared machine they lower the speed-up, for
  ``--jobs`` as much as for the cluster.

Every way must give the same records (timings aside); the script checks it.

Memory allocation is put on the same footing in all four ways: dask workers undo the nanny's
``MALLOC_TRIM_THRESHOLD_`` (see ``lysep_cli/execution/memory.py``), which leaves glibc's mmap
threshold at 32 MiB, faster for the solvers than glibc's default in this process and in ``--jobs``
workers; so the script re-executes itself with ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``
set to the same values (``--plain-malloc`` skips this and shows the difference).  A second overhead
figure does not depend on it: wall time minus the runs' own compute time (the records' ``seconds``).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lysep_cli.execution import cluster
from lysep_cli.store import records
from lysep_cli.execution import runner
from lysep_cli.specs import default_config, load_specs, parse_sizes


def timed_sweep(spec, keys, iterations: int, out: Path, jobs: int = 1, session=None) -> float:
    """Wall seconds of one sweep written under ``out``."""
    start = time.perf_counter()
    runner.run_experiment(spec, keys, iterations, out, jobs=jobs, cluster=session)
    return time.perf_counter() - start


def numbers(out: Path, name: str) -> list[dict]:
    return [{k: v for k, v in r.to_json().items() if k != "seconds"} for r in records.load_records(out, [name]).records]


SAME_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def compute_seconds(out: Path, name: str) -> float:
    """Sum of the runs' own compute time (inside runner.execute)."""
    return sum(r.seconds for r in records.load_records(out, [name]).records)


def machine_busy() -> float:
    """CPU-seconds all processes of this machine have used since boot (/proc/stat, all cores)."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # minus idle and iowait


def own_cpu() -> float:
    """CPU-seconds of this process and its reaped children (pool and cluster workers, once closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def figures(times: dict[str, list[float]], startup: dict[int, list[float]], n: int) -> dict:
    """Speed-ups and per-task overheads from the medians of ``times`` (seconds per way)."""
    med = {way: statistics.median(t) for way, t in times.items()}
    start = {k: statistics.median(v) for k, v in startup.items()}
    return {
        "seconds": med, "cluster_startup": {str(k): v for k, v in start.items()},
        "speedup_cluster_2_over_1": med["cluster 1"] / med["cluster 2"],
        "speedup_jobs_2_over_1": med["jobs 1"] / med["jobs 2"],
        "overhead_per_task_1": (med["cluster 1"] - med["jobs 1"]) / n,
        "overhead_per_task_2": (med["cluster 2"] + start[2] - med["jobs 2"]) / n,
    }


def main() -> None:
    if "--plain-malloc" not in sys.argv and any(os.environ.get(k) != v for k, v in SAME_MALLOC.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **SAME_MALLOC})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--size", default="3x30")
    parser.add_argument("--experiment", default="elliptic-2d")
    parser.add_argument("--solver", default="pinn")
    parser.add_argument("--repeats", type=int, default=1, help="repeat the four ways, report medians")
    parser.add_argument("--config", default=None)
    parser.add_argument("--plain-malloc", action="store_true", help="keep this process's malloc settings")
    args = parser.parse_args()
    spec = load_specs(args.config or default_config())[args.experiment]
    (L, M), = parse_sizes(args.size, spec)
    keys = [runner.RunKey(args.solver, L, M, seed) for seed in range(args.runs)]
    load_before = os.getloadavg()

    times: dict[str, list[float]] = {"jobs 1": [], "jobs 2": [], "cluster 1": [], "cluster 2": []}
    startup: dict[int, list[float]] = {1: [], 2: []}
    idle: dict[str, list[float]] = {way: [] for way in times}  # wall x workers - compute, per run
    others: dict[str, list[float]] = {way: [] for way in times}  # cores used by other processes
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rep in range(args.repeats):
            for way in times:
                out = root / f"{way.replace(' ', '')}-{rep}"
                busy0, own0, wall0 = machine_busy(), own_cpu(), time.perf_counter()
                if way.startswith("jobs"):
                    times[way].append(timed_sweep(spec, keys, args.iterations, out, jobs=int(way[-1])))
                else:
                    n = int(way[-1])
                    t0 = time.perf_counter()
                    with cluster.Session.open(cluster.Target(local_workers=n), timeout=60) as session:
                        session.client.wait_for_workers(n, timeout=60)
                        startup[n].append(time.perf_counter() - t0)
                        times[way].append(timed_sweep(spec, keys, args.iterations, out, session=session))
                wall = time.perf_counter() - wall0
                others[way].append(max(0.0, (machine_busy() - busy0) - (own_cpu() - own0)) / wall)
                workers = int(way[-1])
                idle[way].append((times[way][-1] * workers - compute_seconds(out, spec.name)) / args.runs)
                print(f"  {way:<10} {times[way][-1]:7.2f} s   other processes {others[way][-1]:.2f} cores",
                      flush=True)
        ref = numbers(root / "jobs1-0", spec.name)
        same = all(numbers(d, spec.name) == ref for d in root.iterdir())
    load_after = os.getloadavg()

    n = args.runs
    result = figures(times, startup, n)
    best = figures({way: [min(t)] for way, t in times.items()}, {k: [min(v)] for k, v in startup.items()}, n)
    med = result["seconds"]
    result = {
        "experiment": spec.name, "solver": args.solver, "L": L, "M": M, "runs": n, "iterations": args.iterations,
        "repeats": args.repeats, **result, "best_of_repeats": best,
        "malloc": "plain" if args.plain_malloc else SAME_MALLOC,
        "non_compute_per_task": {way: statistics.median(v) for way, v in idle.items()},
        "other_processes_cores": {way: statistics.median(v) for way, v in others.items()},
        "identical_records": same, "loadavg_before": load_before, "loadavg_after": load_after,
        "cores": os.cpu_count(),
    }
    print(f"{n} runs of {args.solver} {spec.name} ({L},{M}), {args.iterations} iterations, "
          f"median of {args.repeats}; wall time, and per run the time not spent computing "
          f"(wall x workers - compute) / runs:")
    for way, sec in med.items():
        print(f"  {way:<10} {sec:7.2f} s   {result['non_compute_per_task'][way]:+.3f} s per run   "
              f"(other processes used {result['other_processes_cores'][way]:.2f} of {os.cpu_count()} cores)")
    print(f"  cluster start-up      1 worker {result['cluster_startup']['1']:.2f} s, "
          f"2 workers {result['cluster_startup']['2']:.2f} s (not counted above)")
    for label, r in (("median", result), (f"best of {args.repeats}", best)):
        print(f"  {label:<10} speed-up 2 vs 1 worker: cluster {r['speedup_cluster_2_over_1']:.2f}x, "
              f"--jobs {r['speedup_jobs_2_over_1']:.2f}x (target >= 1.8x); overhead per task vs --jobs: "
              f"1 worker {r['overhead_per_task_1']:+.3f} s, 2 workers {r['overhead_per_task_2']:+.3f} s "
              "incl. start-up (target <= 0.2 s)")
    print(f"  records identical across the four ways: {same}")
    print(f"  load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} on {os.cpu_count()} cores")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
