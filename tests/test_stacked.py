"""The stacked engine (lysep_cli/accel): a cell's seeds in one stack, per-seed decisions by masks.

On NumPy (``--device cpu-stacked``) every seed of a stack must be the CPU solver's run bit for bit, and a
seed's run must not depend on the other seeds of its stack.  The tests marked ``gpu`` need CuPy and an
NVIDIA GPU and are skipped without them.
"""

from __future__ import annotations

import numpy as np
import pytest

from lysep_cli.accel import backend as backends
from lysep_cli.numerics import sigma
from lysep_cli.solvers.pinn import solve_seeds
from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.numerics.sincos import sincos
from lysep_cli.solvers import pinn

SETTINGS = {"lr": 1.0e-3, "lr_final": 1.0e-4}
CPU = backends.resolve("cpu-stacked")


def _data(pde: str, d: int, solution: str | None, n: int = 60) -> tuple:
    problem = make_problem(pde, d, solution)
    Z, _ = train_test_points(n, 10, d, time=problem.time_dependent, domain=problem.domain)
    return problem, TrainingData.build(problem, Z)


def _same(a, b) -> bool:
    """Two SolveResults with the same bits: parameters, history, status and divergence iterate."""
    return (a.status == b.status and a.diverged_at == b.diverged_at
            and np.array_equal(a.history["J"], b.history["J"], equal_nan=True)
            and all(np.array_equal(Wa, Wb) and np.array_equal(ba, bb)
                    for (Wa, ba), (Wb, bb) in zip(a.params, b.params)))


@pytest.mark.parametrize("pde,d,solution,L", [("elliptic", 2, "exp-sin", 3), ("parabolic", 3, None, 3),
                                              ("hyperbolic", 3, None, 3), ("elliptic", 2, "exp-sin", 2),
                                              ("hyperbolic", 2, None, 4)])
def test_each_seed_of_a_stack_is_the_cpu_solvers_run_bit_for_bit(pde, d, solution, L):
    problem, data = _data(pde, d, solution)
    params0 = [network.init_params(problem.n_in, L, 6, seed) for seed in range(3)]
    with np.errstate(all="ignore"):
        stacked = solve_seeds(CPU, problem, data, params0, SETTINGS, 12)
        for p0, got in zip(params0, stacked):
            assert _same(got, pinn.solve(problem, data, p0, SETTINGS, 12))
    assert len(stacked[0].history["J"]) == 13


def test_a_seed_does_not_depend_on_its_stack():
    """Seed 3 alone == seed 3 in a stack of 10 == seed 3 in the reversed stack, bit for bit."""
    problem, data = _data("hyperbolic", 3, None)
    params0 = {seed: network.init_params(problem.n_in, 3, 5, seed) for seed in range(10)}
    alone = solve_seeds(CPU, problem, data, [params0[3]], SETTINGS, 10)[0]
    ten = solve_seeds(CPU, problem, data, [params0[s] for s in range(10)], SETTINGS, 10)
    backwards = solve_seeds(CPU, problem, data, [params0[s] for s in reversed(range(10))], SETTINGS, 10)
    assert _same(alone, ten[3]) and _same(alone, backwards[6])
    assert not _same(ten[3], ten[4])  # (the seeds do differ)


def test_divergence_is_decided_per_seed_as_the_cpu_solver_does():
    """A stack where one seed diverges at its initial network, others after some steps with a large step,
    and one does not: each seed's result (status, diverged_at, cut history, returned network) is the CPU
    solver's, and the seeds that go on are not touched by the ones that stopped."""
    problem, data = _data("elliptic", 2, "exp-sin")
    params0 = [network.init_params(problem.n_in, 3, 6, seed) for seed in range(4)]
    params0[1] = [(W * 1e200, b) for W, b in params0[1]]  # J overflows at once: diverged at 0
    params0[2] = [(W * 30.0, b * 30.0) for W, b in params0[2]]  # large weights: the step blows up
    settings = {"lr": 0.5}
    with np.errstate(all="ignore"):
        stacked = solve_seeds(CPU, problem, data, params0, settings, 40, sync_every=7)
        cpu = [pinn.solve(problem, data, p0, settings, 40) for p0 in params0]
    assert [r.status for r in cpu].count("diverged") >= 2 and cpu[1].diverged_at == 0
    assert cpu[2].status == "diverged" and cpu[2].diverged_at > 0
    assert all(_same(s, c) for s, c in zip(stacked, cpu))


def test_every_seed_diverged_ends_the_run_early_with_the_same_results():
    problem, data = _data("elliptic", 2, "exp-sin")
    params0 = [[(W * 1e200, b) for W, b in network.init_params(problem.n_in, 3, 6, seed)] for seed in range(2)]
    seen: list[int] = []
    with np.errstate(all="ignore"):
        stacked = solve_seeds(CPU, problem, data, params0, SETTINGS, 500, progress=lambda k, J: seen.append(k),
                                sync_every=5)
    assert seen == [4]  # one sync, then every seed has stopped
    assert all(r.status == "diverged" and r.diverged_at == 0 and len(r.history["J"]) == 1 for r in stacked)


def test_progress_gets_every_seeds_loss_at_each_sync():
    problem, data = _data("elliptic", 2, "exp-sin")
    params0 = [network.init_params(problem.n_in, 3, 5, seed) for seed in range(3)]
    seen: list[tuple[int, np.ndarray]] = []
    out = solve_seeds(CPU, problem, data, params0, SETTINGS, 9, progress=lambda k, J: seen.append((k, J)),
                        sync_every=4)
    assert [k for k, _ in seen] == [3, 7, 8]
    assert np.array_equal(seen[-1][1], [r.history["J"][-1] for r in out])


def test_cuda_without_cupy_or_gpu_is_one_clear_line(no_cupy):
    with pytest.raises(backends.DeviceUnavailable) as exc:
        backends.resolve("cuda")
    assert "\n" not in str(exc.value) and "lysep[gpu]" in str(exc.value)
    with pytest.raises(backends.DeviceUnavailable):
        backends.resolve("tpu")


def test_the_stacked_engine_has_its_own_numerics_id():
    from lysep_cli.store.fingerprint import numerics_id, stacked_numerics_id

    fp = CPU.fingerprint(stacked_numerics_id())
    assert fp["device"] == "cpu-stacked" and fp["array_library"].startswith("numpy ")
    assert fp["numerics"].startswith("stacked-") and fp["numerics"] != numerics_id()


def test_the_cuda_kernel_source_carries_sincos_constants_exactly():
    """The constants printed into the CUDA source read back as the same doubles (repr round-trips)."""
    from lysep_cli.numerics import sincos as sc

    src = sigma.cuda_source()
    for name in ("P1", "P2", "P3", "S6", "C6", "LIMIT", "INV_PIO2"):
        line = next(l for l in src.splitlines() if l.startswith(f"#define {name} "))
        assert float(line.split("(", 1)[1].rstrip(")")) == getattr(sc, name)
    assert "--fmad" not in src  # (an option of the compile, not the source: sigma.sincos passes it)


# ---------------------------------------------------------------------------------------------------------
# On a GPU (skipped without CuPy and an NVIDIA GPU).

def _gpu():
    try:
        return backends.resolve("cuda")
    except backends.DeviceUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.gpu
def test_gpu_sigma_has_the_cpu_bits():
    gpu = _gpu()
    x = np.concatenate([np.random.default_rng(0).normal(0, 3, 100_000), [0.0, -0.0, 1e6, np.inf, np.nan]])
    s, c = sigma.sincos(gpu.xp, gpu.asarray(x))
    ref_s, ref_c = sincos(x)
    ok = np.abs(x) <= 1e5
    assert np.array_equal(gpu.host(s)[ok], ref_s[ok]) and np.array_equal(gpu.host(c)[ok], ref_c[ok])


@pytest.mark.gpu
def test_gpu_stack_agrees_with_the_cpu_and_a_seed_does_not_depend_on_its_stack():
    gpu = _gpu()
    problem, data = _data("hyperbolic", 3, None, n=200)
    params0 = [network.init_params(problem.n_in, 3, 20, seed) for seed in range(10)]
    ten = solve_seeds(gpu, problem, data, params0, SETTINGS, 20)
    alone = solve_seeds(gpu, problem, data, [params0[3]], SETTINGS, 20)[0]
    backwards = solve_seeds(gpu, problem, data, params0[::-1], SETTINGS, 20)
    from lysep_cli.accel import compare

    diffs = {"alone": compare.results(alone, ten[3]), "reversed": compare.results(backwards[6], ten[3])}
    # a difference is reported as a measured number (max |delta|, ulps), not a bare False
    assert all(d["differing"] == 0 for d in diffs.values()), {k: compare.line(d) for k, d in diffs.items()}
    cpu = pinn.solve(problem, data, params0[3], SETTINGS, 20)
    assert np.max(np.abs(np.subtract(ten[3].history["J"], cpu.history["J"])) / np.array(cpu.history["J"])) < 1e-10


def test_the_gpu_check_script_runs_its_smoke_version(tmp_path):
    """benchmarks/gpu_check.py --smoke: every section on NumPy at tiny sizes, so the GPU session only has to
    run it; its exactness lines and the whole cell's verify must come out right."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "gpu_check"
    proc = subprocess.run([sys.executable, str(root / "benchmarks/gpu_check.py"), "--smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=240, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.with_suffix(".md").read_text()
    assert "differing from the CPU's bits: **0**" in text and "reversed stack, bit for bit: **True**" in text
    assert "--device cpu-stacked`: exit 0" in text and text.count("bit-identical: **True**") == 2
    figures = __import__("json").loads(out.with_suffix(".json").read_text())
    assert figures["device"]["device"] == "cpu-stacked" and figures["exact"]["sigma_differing"] == 0
    assert all(figures["exact"][solver]["bit_identical_to_cpu"] for solver in ("pinn", "lysep"))
    assert "lysep --results SCRATCH --against archive`: exit 0" in text


@pytest.mark.parametrize("backoff_max", [0, 16])
def test_the_stacked_backtracking_rule_takes_each_seeds_scalar_decisions(backoff_max):
    """One Backtracking rule for S seeds against one rule per seed (S = 1, ``step``), step after step, on loss
    curves where trials are accepted at once, after shrinking, never (max_tries), or meet NaN: the same accepted
    J and t, the same rule state (tau, last, skip, back-off), and each seed's payload accepted exactly when its
    own rule accepts; ||g||^2 given as an array or (every other step) as a function asked once, after the first
    trial."""
    from lysep_cli.solvers.steps import Backtracking

    rng = np.random.default_rng(1)
    S, args = 6, dict(grow=2.0, shrink=0.5, armijo=1e-4, max_tries=8, backoff_max=backoff_max)
    curv = np.array([1e-3, 1.0, 50.0, 1e4, 3.0, 0.2]) * rng.uniform(0.5, 2.0, S)  # each seed's curvature
    nan_above = np.array([np.inf, np.inf, 1e-2, np.inf, 0.3, 1e-9])  # large steps give NaN (seeds 2, 4, 5)

    def loss(s: int, J0: float, t: float, g2: float) -> float:
        return float("nan") if t > nan_above[s] else J0 - t * g2 + curv[s] * t * t * g2

    stacked = Backtracking(1e-2, **args, seeds=S)
    scalar = [Backtracking(1e-2, **args) for _ in range(S)]
    J0 = rng.uniform(1.0, 2.0, S)
    taken = np.zeros(S, dtype=int)
    for step in range(40):
        g2 = rng.uniform(0.5, 2.0, S)
        if step == 17:
            g2[3] = 0.0  # a zero gradient: the first trial is accepted whatever t
        want = [scalar[s].step(J0[s], g2[s], lambda t, s=s: (loss(s, J0[s], t, g2[s]), s)) for s in range(S)]

        made, asked = [], []

        def trial(t, trying):
            made.append(t)
            return np.array([loss(s, J0[s], t[s], g2[s]) if trying[s] else np.nan for s in range(S)]), "payload"

        def g2_later(g2=g2):  # ||g||^2 as the stacked LySep gives it: a function, asked once after trial 1
            assert len(made) == 1 and not asked
            asked.append(g2)
            return g2

        accepted = np.zeros(S, dtype=int)

        def accept(payload, mask):
            assert payload == "payload"
            accepted[mask] += 1

        J, t, took = stacked.step_seeds(J0, g2 if step % 2 else g2_later, trial, accept)
        assert len(asked) == 1 - step % 2
        assert np.array_equal(J, [w[0] for w in want]) and np.array_equal(t, [w[2] for w in want])
        assert np.array_equal(accepted, [w[1] is not None for w in want]) and np.array_equal(took, accepted > 0)
        for s in range(S):
            state = scalar[s].state()
            assert (stacked.tau[s], stacked.last[s], stacked.skip[s], stacked.backoff[s]) == \
                (state["tau"], state["last"], state["skip"], state["backoff"])
        taken += accepted
        J0 = J
    assert taken.max() == 40 and taken[5] <= 37  # (seeds that always accepted, and max_tries rejections)
    if backoff_max:
        assert stacked.skip.max() > 0 or stacked.backoff.max() > 1  # (the back-off acted)
