"""A stack padded to a fixed size (lysep_cli/accel/padding.py; issue 46, item 2): on a device every stack of
1 to 10 seeds is computed as a stack of 10 (copies of its first network, dropped from the results), so that a
seed's bits cannot depend on a batched product's batch count.  On the CPU: the padding changes no seed's bits
(a seed alone, alone padded to 10, in a stack of 10, with k = 1 and k = 2 backtracking trials: the same bits),
its results and progress are the real seeds' only, and the device branches (the counting namespace, not
NumPy) pad by default."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from lysep_cli.accel import backend as backends
from lysep_cli.accel import padding
from lysep_cli.solvers import pinn as stacked_pinn
from lysep_cli.solvers.lysep.algorithm import solve_seeds
from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points

ROOT = Path(__file__).resolve().parents[1]
CPU = backends.resolve("cpu-stacked")
PAPER = {"step_rule": "backtracking", "tau": 1.0e-8, "weights": "frozen", "w3_b3": "separate"}


def _data(pde: str, d: int):
    problem = make_problem(pde, d, None)
    Z, _ = train_test_points(60, 10, d, time=problem.time_dependent, domain=problem.domain)
    return problem, TrainingData.build(problem, Z)


def _bits(result) -> str:
    """A result's numbers and decisions as one string (the timing and the padding's own entry aside)."""
    skip = ("seconds_per_iteration", "trial_batch", "padded_stack")
    return json.dumps({"status": result.status, "diverged_at": result.diverged_at,
                       "history": {k: [float(x).hex() for x in v] for k, v in result.history.items() if v is not None},
                       "params": [[np.asarray(a).tobytes().hex() for a in layer] for layer in result.params],
                       "bound": result.bound,
                       "diagnostics": {k: v for k, v in result.diagnostics.items() if k not in skip}}, default=str)


def test_padded_lengths_and_defaults():
    nets = [[(np.full((2, 2), float(s)), np.zeros(2))] for s in range(3)]
    assert len(padding.padded(nets, 10)) == 10 and len(padding.padded(nets, 3)) == 3 and len(padding.padded(nets, 1)) == 3
    assert len(padding.padded(nets * 4, 10)) == 20  # 12 seeds: the next multiple
    assert all(p is nets[0] for p in padding.padded(nets, 10)[3:])  # copies of the first network
    assert padding.stack_size(np, None) == 1 and padding.stack_size(object(), None) == padding.DEVICE_STACK == 10
    assert padding.stack_size(np, 4) == 4
    with pytest.raises(ValueError):
        padding.stack_size(np, 0)


@pytest.mark.parametrize("pde,d", [("hyperbolic", 5), ("elliptic", 2)])
def test_lysep_seed_alone_padded_and_in_a_stack_of_10_same_bits_k1_and_k2(pde, d):
    problem, data = _data(pde, d)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(10)]
    seen: list = []
    with np.errstate(all="ignore"):
        runs = {
            "alone": solve_seeds(CPU, problem, data, [params0[3]], PAPER, 4)[0],
            "alone padded to 10": solve_seeds(CPU, problem, data, [params0[3]], PAPER, 4, stack_to=10,
                                                progress=lambda k, J: seen.append(np.shape(J)))[0],
            "in a stack of 10": solve_seeds(CPU, problem, data, params0, PAPER, 4)[3],
            "alone, k = 2": solve_seeds(CPU, problem, data, [params0[3]], PAPER, 4, trial_batch=2)[0],
            "in a stack of 10, k = 2": solve_seeds(CPU, problem, data, params0, PAPER, 4, trial_batch=2)[3],
            "padded, k = 2": solve_seeds(CPU, problem, data, [params0[3]], PAPER, 4, trial_batch=2, stack_to=10)[0],
        }
    want = _bits(runs["alone"])
    assert {name: _bits(r) == want for name, r in runs.items()} == {name: True for name in runs}
    assert seen == [(1,)] * 4  # progress: the real seed only
    assert runs["alone padded to 10"].diagnostics["padded_stack"] == 10 and "padded_stack" not in runs["alone"].diagnostics
    assert runs["in a stack of 10"].diagnostics.get("padded_stack") is None  # 10 is a multiple: nothing added


def test_pinn_seed_alone_padded_and_in_a_stack_of_10_same_bits():
    problem, data = _data("hyperbolic", 5)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(10)]
    settings = {"lr": 1.0e-3, "lr_final": 1.0e-4}
    seen: list = []
    alone = stacked_pinn.solve_seeds(CPU, problem, data, [params0[3]], settings, 20)[0]
    padded = stacked_pinn.solve_seeds(CPU, problem, data, [params0[3], params0[5]], settings, 20, sync_every=5,
                                        stack_to=10, progress=lambda k, J: seen.append(np.shape(J)))
    ten = stacked_pinn.solve_seeds(CPU, problem, data, params0, settings, 20)
    assert len(padded) == 2 and padded[0].diagnostics["padded_stack"] == 10
    assert _bits(alone) == _bits(padded[0]) == _bits(ten[3]) and _bits(padded[1]) == _bits(ten[5])
    assert seen == [(2,)] * 4


def test_the_device_branches_pad_to_10_by_default():
    """Through the counting namespace (not NumPy: the engine's CuPy branches) a stack of 2 is padded to 10
    and gives the NumPy run's bits."""
    spec = importlib.util.spec_from_file_location("launch_count", ROOT / "benchmarks/launch_count.py")
    lc = sys.modules["launch_count"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lc)
    problem, data = _data("hyperbolic", 5)
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(2)]
    with np.errstate(all="ignore"), lc.counting():
        device = solve_seeds(lc.COUNTING, problem, data, params0, PAPER, 3, w_solve="host", trial_batch=1)
    with np.errstate(all="ignore"):
        plain = solve_seeds(CPU, problem, data, params0, PAPER, 3, w_solve="host")
    assert len(device) == 2 and all(r.diagnostics["padded_stack"] == 10 for r in device)
    assert [_bits(r) for r in device] == [_bits(r) for r in plain]
