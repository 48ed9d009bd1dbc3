"""elliptic-10d (3,20) LySep: final J against the seeded b_3 (Algorithm 1's separate W_3-then-b_3 updates).

Usage: .venv/bin/python studies/b3_spread.py [--results results/paper]

For each archived LySep run of the cell it prints b_3 at the start (the seed's), at the end (the record's
weights) and at the joint [W_3, b_3] least-squares optimum (one LySep sweep with `w3_b3: joint` from the
same start), the archived J, the joint J and J / (b_3^0 - b_3^*)^2; then the correlation of log J with
log (b_3^0 - b_3^*)^2 over the seeds.  Output of 2026-11-26: studies/results/b3_spread_e10d_20.txt.

Backs: studies/explanations.md (c): 10-D (3,20) LySep's seed spread is the seeded b_3.
Regenerate: make studies STUDIES=b3_spread; cheap, part of plain `make studies` ->
    studies/results/b3_spread_e10d_20.txt (studies/run.py holds the commands).
Cost: ~3 CPU s.
"""
import lysep_cli  # noqa: F401  (first: the BLAS kernel pin, before NumPy)

import argparse
import json

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import experiment_data
from lysep_cli.solvers.lysep.algorithm import solve, Settings
from lysep_cli.specs import default_config, load_specs

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--results", default="results/paper")
RES = ap.parse_args().results
spec = load_specs(default_config())["elliptic-10d"]
data = experiment_data(spec)
rows = []
for seed in range(10):
    try:
        d = json.load(open(f"{RES}/elliptic-10d/lysep/L3-M20/seed-{seed}.json"))
    except FileNotFoundError:
        continue
    p0 = network.init_params(10, 3, 20, seed)
    b0 = p0[-1][1][0]
    s = Settings.coerce(spec.solvers["lysep"]).replace(w3_b3="joint")
    with threadpool_limits(1), np.errstate(all="ignore"):
        r = solve(data.problem, data.training, p0, s, 1)
    bstar = r.params[-1][1][0]
    z = np.load(f"{RES}/elliptic-10d/lysep/L3-M20/seed-{seed}.npz")
    bend = float(z["b3"].ravel()[0])
    J = d["final"]["J"]
    rows.append((seed, b0, bend, bstar, J, r.history["J"][-1], d["final"]["l2"]))
    print("seed %d b3 start %+.4f end %+.4f joint %+.4f | J %.2e joint J %.2e | J/(b3_0-b3*)^2 %.2e | l2 %.2e"
          % (seed, b0, bend, bstar, J, r.history["J"][-1], J / (b0 - bstar) ** 2, d["final"]["l2"]))
a = np.array(rows)
print("corr(log J, log (b0-b*)^2) = %.3f" % np.corrcoef(np.log(a[:, 4]), np.log((a[:, 1] - a[:, 3]) ** 2))[0, 1])
