"""benchmarks/launch_count.py: the counting array namespace changes no number, and its counts are real.

The stacked engine run through the counting proxy (every would-be CuPy kernel, upload and host sync
counted) must give the run without it bit for bit (the proxy is not named "numpy", so the engine takes its
device branches there: its own kernels, emulated by the NumPy operations they compute, are checked here
against the NumPy branches too); its counts must be positive, the same from one run to
the next, and not depend on the number of seeds stacked (a stack's launches are the stack's, not the
seeds').
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from lysep_cli.accel import backend as backends
from lysep_cli.numerics import sigma
from lysep_cli.numerics.sincos import sincos
from lysep_cli.specs import load_specs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lc():
    spec = importlib.util.spec_from_file_location("launch_count", ROOT / "benchmarks/launch_count.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["launch_count"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cell():
    return load_specs(ROOT / "experiments.yaml")["elliptic-2d"]


def _same(a, b) -> bool:
    return (all(np.array_equal(a.history[k], b.history[k], equal_nan=True) for k in a.history)
            and all(np.array_equal(x, y) for (Wa, ba), (Wb, bb) in zip(a.params, b.params) for x, y in ((Wa, Wb), (ba, bb))))


@pytest.mark.parametrize("name,L", [("elliptic-2d", 3), ("hyperbolic-5d", 4)])
def test_a_run_through_the_proxy_is_the_run_without_it_bit_for_bit(lc, name, L):
    cell = load_specs(ROOT / "experiments.yaml")[name]
    plain = backends.resolve("cpu-stacked")
    with np.errstate(all="ignore"):
        counts, counted = lc.pinn_run(cell, L, 6, 2, 2, 50)
        _, uncounted = lc.pinn_run(cell, L, 6, 2, 2, 50, be=plain)
        sweeps, counted_l = lc.lysep_run(cell, L, 6, 2, 2)
        _, uncounted_l = lc.lysep_run(cell, L, 6, 2, 2, be=plain)
    assert all(_same(a, b) for a, b in zip(counted, uncounted))
    assert all(_same(a, b) for a, b in zip(counted_l, uncounted_l))
    assert counts["launch"] > 0 and counts["sync"] > 0 and counts["upload"] > 0
    assert len(sweeps) == 1 and sweeps[0]["launch"] > 0 and sweeps[0]["sync"] > 0 and sweeps[0]["trials"] > 0


@pytest.mark.parametrize("name,L,k", [("elliptic-2d", 3, 1), ("hyperbolic-5d", 4, 1), ("elliptic-2d", 3, 2),
                                      ("hyperbolic-5d", 4, 3)])
def test_a_lysep_sweep_syncs_once_a_trial_evaluation_and_once_for_w_l_and_the_pinn_j(lc, name, L, k):
    """Host syncs of a LySep sweep: one a trial evaluation (k = 1: a trial; else a batch of k trials, or one
    beyond them: J_S, the unchanged-bits flags and the block's ||g||^2 in one copy; the flags first, one more,
    only after a trial of the block that changed nothing, then ||g||^2 may come alone), one for the W_L systems,
    one for the PINN J (no upload: the network stays on the device), one J_S per closed-form block; uploads:
    the block's step table and an accept's mask."""
    from lysep_cli.solvers.lysep.loss import gradient_blocks

    blocks = len(gradient_blocks(L))
    with np.errstate(all="ignore"):
        sweeps, _ = lc.lysep_run(load_specs(ROOT / "experiments.yaml")[name], L, 6, 2, 4, trial_batch=k)
    extra = []
    for s in sweeps:
        sc, n = s["scopes"], sum(s["evaluations"].values())
        assert set(s["evaluations"]) <= {1, k} and (n < s["trials"]) == (k > 1 and s["trials"] > blocks)
        assert sc["W_L solve/sync"] == 1 and sc["pinn_J/sync"] == 1 and "pinn_J/upload" not in sc
        assert n <= lc.in_trials(sc, "sync") <= n + blocks
        assert L + 1 <= sc["other/sync"] <= L + 1 + blocks and lc.in_trials(sc, "upload") <= s["trials"] + blocks
        extra.append(lc.in_trials(sc, "sync") - n)
    assert min(extra) == 0  # a sweep of one-copy evaluations only


def test_a_trial_batch_of_two_counts_fewer_launches_and_syncs_a_sweep(lc, cell):
    """elliptic-2d (3,30), 2 seeds, sweeps 2-3: blocks that make two or more trials evaluate them in one batch
    (its ~62 launches against ~54 of a single trial, counted at 10 seeds), so the sweep counts fewer launches
    and syncs with k = 2; and the full-run model (the archive's ~2 trials a block) predicts fewer too."""
    with np.errstate(all="ignore"):
        one, two = (lc.count_cell(cell, 3, 30, 2, 3, k) for k in (1, 2))
    assert (one.trial_batch, two.trial_batch) == (1, 2) and one.trials_per_sweep == two.trials_per_sweep > one.blocks
    assert two.lysep_sweep["launch"] < 0.9 * one.lysep_sweep["launch"] and two.lysep_sweep["sync"] < one.lysep_sweep["sync"]
    assert two.evaluation[2]["launch"] < 2 * one.evaluation[1]["launch"]
    assert lc.lysep_sweep(two, 14.1)["launch"] < 0.85 * lc.lysep_sweep(one, 14.1)["launch"]
    assert lc.evaluations(14.0, 7, 1) == (7.0, 7.0) and lc.evaluations(14.0, 7, 2) == (7.0, 0.0)


def test_counts_are_stable_and_do_not_depend_on_the_number_of_seeds(lc, cell):
    with np.errstate(all="ignore"):
        runs = [lc.pinn_run(cell, 3, 8, S, 1, 50)[0] for S in (2, 2, 3)]
    assert runs[0] == runs[1] == runs[2]


def test_the_proxy_counts_what_would_be_kernels_and_syncs(lc):
    xp = lc.COUNTING.xp
    with lc.counting() as tally:
        a = xp.asarray(np.arange(6.0).reshape(2, 3))  # an upload
        b = a[:, 1:]  # a view: free
        c = xp.ascontiguousarray(b)  # a copy kernel
        c += 1.0  # one kernel
        c[0] = 7.0  # one kernel
        s, co = sigma.sincos(xp, a)  # the sigma kernel (sigma.py's device branch): one launch
        total = float(c.sum())  # one reduction, one sync
        host = lc.COUNTING.host(s)  # one sync
    assert tally.totals() == {"launch": 5, "upload": 1, "sync": 2}
    assert total == 7 + 7 + 5 + 6 and np.array_equal(host, sincos(np.arange(6.0).reshape(2, 3))[0])
    assert tally.by_op[("launch", "sigma_values_fdlibm")] + tally.by_op[("launch", "sincos_fdlibm")] == 1


def test_the_calibration_counts_the_design_checks_trial_model(lc):
    costs, model = lc.calibrate()
    assert model["sync"] == 1 and model["launch"] > 10
    assert costs.launch == costs.sync and 1e-6 < costs.launch < 1e-3


def test_the_launch_saving_forms_keep_the_per_input_loops_bits(monkeypatch):
    """The channel engine's one-pass forms (a device's: a group's squares, consecutive inputs as a view, every
    one-input group at once) against NumPy's per-input loops, also for inputs that are not consecutive."""
    from lysep_cli.numerics import channels as engine

    rng = np.random.default_rng(5)
    S, n_in, M, N = 2, 5, 3, 7
    d, t = rng.normal(size=(S, n_in, M, N)), rng.normal(size=(S, M, N))
    groups = tuple(np.array([j]) for j in range(1, 4))
    plan = engine.ChannelPlan(rng.normal(size=N), rng.normal(size=(n_in, N)), groups, rng.normal(size=(3, N)),
                              np.array([-1, 0, 1, 2, -1]))
    assert plan.singles == slice(1, 4)
    a = rng.normal(size=(S, M, N))
    layer = engine.Layer(a, sigma.values(np, a), d, rng.normal(size=(S, 3, M, N)))
    W, ga, gQ = rng.normal(size=(S, M, M)), t, rng.normal(size=(S, 3, M, N))

    def run():
        sums = [engine.sum_of_squares(np, d, g) for g in (np.array([1, 2, 3]), np.array([0, 2, 4]), np.array([3]))]
        fit = engine.fit_matrix(np, layer, plan, fused=False)
        adj = engine.fit_adjoints(np, t, layer, plan, fit)
        ins = engine.input_adjoints(np, W, ga, d.copy(), gQ, layer, plan)
        gW = engine.weight_gradient(np, ga, d, gQ, layer, plan)
        return sums + [fit.B, fit.U, fit.V, *adj, *ins, gW]

    loops = run()
    monkeypatch.setattr(engine, "one_pass", lambda xp: True)  # the device's forms, on NumPy
    passes = run()
    assert len(loops) == len(passes) and all(np.array_equal(x, y) for x, y in zip(loops, passes))


@pytest.mark.gpu
def test_gpu_fused_kernels_give_the_unfused_operations_bits():
    """On a GPU: sigma.values' one kernel == sincos and two negations; pinn.masked_step's == where(...);
    engine.ordered_sum's == the channels added one by one."""
    from lysep_cli.numerics import channels as engine
    from lysep_cli.accel.pinn import masked_step

    try:
        gpu = backends.resolve("cuda")
    except backends.DeviceUnavailable as exc:
        pytest.skip(str(exc))
    xp, rng = gpu.xp, np.random.default_rng(6)
    a = gpu.asarray(rng.normal(0.0, 3.0, (4, 5, 100)))
    fused, (s, c) = sigma.values(xp, a), sigma.sincos(xp, a)
    for f, u in zip((fused.s0, fused.s1, fused.s2, fused.s3), (s, c, -s, -c)):
        assert np.array_equal(gpu.host(f).view(np.int64), gpu.host(u).view(np.int64))
    W, G, keep = gpu.asarray(rng.normal(size=(4, 6, 5))), gpu.asarray(rng.normal(size=(4, 6, 5))), \
        gpu.asarray(np.array([True, False, True, True]))
    want = xp.where(keep[:, None, None], W - 1e-3 * G, W)
    assert np.array_equal(gpu.host(masked_step(xp, keep, W, 1e-3, G)), gpu.host(want))
    x, init = gpu.asarray(rng.normal(size=(4, 7, 5, 6))), gpu.asarray(rng.normal(size=(4, 5, 6)))
    want = init.copy()
    for k in range(7):
        want += x[:, k]
    assert np.array_equal(gpu.host(engine.ordered_sum(xp, x, init.copy())), gpu.host(want))
