"""The stacked LySep's W_L least squares (lysep_cli/accel/lstsq.py): the QR-reduced system against the full one
(round-off in x, the same minimum-norm solution and J on rank-deficient systems, the same condition number,
Matlab's rank rule of the full size), the threaded host solves against the serial loop (bit for bit), and
whole stacked runs with w_solve "reduced" against "host" (NumPy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from lysep_cli.accel import backend as backends
from lysep_cli.accel import lstsq
from lysep_cli.solvers.lysep.algorithm import solve_seeds
from lysep_cli.execution.runner import RunKey, execute_stack
from lysep_cli.numerics import network
from lysep_cli.numerics import lstsq as nlstsq
from lysep_cli.numerics.lstsq import basic_lstsq
from lysep_cli.reports.cellstats import cell_of, compare_cell
from lysep_cli.reports.verify import judge
from lysep_cli.specs import load_specs
from foundation_helpers import on_archive_platform
from tests.test_stacked_lysep import PAPER, _data, _same

CPU = backends.resolve("cpu-stacked")
ROOT = Path(__file__).resolve().parents[1]


def _systems(S: int, N: int, M: int, duplicate: bool = False, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """B (S, M, N) and y (S, N), random; with ``duplicate`` B's last two rows (the system's columns) equal."""
    rng = np.random.default_rng(seed)
    B, y = rng.normal(size=(S, M, N)), rng.normal(size=(S, N))
    if duplicate:
        B[:, -1] = B[:, -2]
    return B, y


def _full_A(B: np.ndarray, lam: float) -> np.ndarray:
    M = B.shape[0]
    return np.vstack([B.T, np.sqrt(lam) * np.eye(M)])


def _J(B: np.ndarray, y: np.ndarray, lam: float, x: np.ndarray) -> float:
    """||A x - c||^2 of the full system (N J_S's W_L part)."""
    r = _full_A(B, lam) @ x - np.concatenate([y, np.zeros(B.shape[0])])
    return float(r @ r)


def _both(B, y, lam, how, with_cond=False, rcond=None):
    """Every seed solved from the full systems and from the reduced ones: ([(x, rank, cond)], [...])."""
    lams = np.full(B.shape[0], lam)
    full = nlstsq.solve_all(lstsq.to_host(CPU, B, y, lams, "host"), how, rcond, with_cond)
    red = nlstsq.solve_all(lstsq.to_host(CPU, B, y, lams, "reduced"), how, rcond, with_cond)
    return full, red


@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_reduced_full_rank_same_x_and_cond(lam):
    B, y = _systems(4, 300, 12)
    for how in ("min-norm", "basic"):
        full, red = _both(B, y, lam, how, with_cond=True)
        for (xf, rf, cf), (xr, rr, cr) in zip(full, red):
            assert np.linalg.norm(xr - xf) <= 1e-12 * np.linalg.norm(xf)
            assert rf == rr and abs(cr - cf) <= 1e-12 * cf  # singular values kept by the orthogonal reduction
    assert lstsq.to_host(CPU, B, y, np.zeros(4), "reduced").top.shape == (4, 13, 12)  # k = M + 1 rows of R


def test_reduced_with_fewer_samples_than_unknowns():
    """N < M + 1: R has k = N rows; with lambda > 0 the system is still full rank and the same solution."""
    B, y = _systems(2, 8, 12, seed=4)
    assert lstsq.to_host(CPU, B, y, np.zeros(2), "reduced").top.shape == (2, 8, 12)
    full, red = _both(B, y, 0.5, "min-norm")
    assert all(np.linalg.norm(xr - xf) <= 1e-12 * np.linalg.norm(xf) for (xf, _, _), (xr, _, _) in zip(full, red))


@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_reduced_rank_deficient_same_min_norm_x_and_J(lam):
    """Duplicate columns of B^T: with lambda = 0 the system is rank-deficient (gelsy's minimum-norm solution
    splits the two equal columns' weight; the basic solve drops one), with lambda > 0 it is not.

    gelsy with rcond 1e-12: at its default, machine precision, the rank decision is below the reduction's own
    round-off (R_11's last diagonal entry is ~1e-16 |R(1,1)|, not the full system's exact 0), and the
    reduced solve takes the system as full-rank (measured: x of norm 3e14 against 0.22; benchmarks/logs/gpu-2026-11.md).
    Matlab's rule (basic) keeps the full system's tolerance (N + M) eps |R(1,1)|, above that round-off."""
    B, y = _systems(3, 200, 10, duplicate=True)
    full, red = _both(B, y, lam, "min-norm", rcond=1e-12)
    for s, ((xf, _, _), (xr, _, _)) in enumerate(zip(full, red)):
        assert np.linalg.norm(xr - xf) <= 1e-12 * np.linalg.norm(xf)
        assert abs(_J(B[s], y[s], lam, xr) - _J(B[s], y[s], lam, xf)) <= 1e-12 * _J(B[s], y[s], lam, xf)
        if lam == 0:
            assert abs(xf[-1] - xf[-2]) <= 1e-12 * np.linalg.norm(xf)  # the minimum-norm split
    full, red = _both(B, y, lam, "basic")
    for s, ((xf, rf, _), (xr, rr, _)) in enumerate(zip(full, red)):
        assert rf == rr == (9 if lam == 0 else 10)
        assert abs(_J(B[s], y[s], lam, xr) - _J(B[s], y[s], lam, xf)) <= 1e-12 * _J(B[s], y[s], lam, xf)


@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_joint_systems_host_is_np_block_and_reduced_agrees(lam):
    """w3_b3 joint: [B^T K; sqrt(lambda) I 0] x = [y; 0], b_L's column K not regularised.  "host" solves
    updates.solve_W3's np.block system bit for bit (gelsy and basic); "reduced" (R of [B^T | K | y], k = M + 2
    rows) the same x to 1e-12 and the same rank; lambda's rows touch x[:M] only (J of the joint system)."""
    B, y = _systems(3, 300, 12, seed=5)
    K = np.random.default_rng(6).normal(size=300)
    lams = np.full(3, lam)
    host = lstsq.to_host(CPU, B, y, lams, "host", K)
    red = lstsq.to_host(CPU, B, y, lams, "reduced", K)
    assert host.top.shape == (3, 300, 13) and red.top.shape == (3, 14, 13) and host.reg == red.reg == 12
    for how in ("min-norm", "basic"):
        full, small = nlstsq.solve_all(host, how, None, True), nlstsq.solve_all(red, how, None, True)
        for s, ((xf, rf, cf), (xr, rr, cr)) in enumerate(zip(full, small)):
            A = np.block([[B[s].T, K[:, None]], [np.sqrt(lam) * np.eye(12), np.zeros((12, 1))]])
            c = np.concatenate([y[s], np.zeros(12)])
            want = (basic_lstsq(A, c)[0] if how == "basic"
                    else scipy.linalg.lstsq(A, c, lapack_driver="gelsy")[0])
            assert np.array_equal(xf, want) and xf.shape == (13,)
            assert np.linalg.norm(xr - xf) <= 1e-12 * np.linalg.norm(xf)
            assert rf == rr and abs(cr - cf) <= 1e-12 * cf and cf == np.linalg.cond(A)


def test_basic_keeps_the_full_systems_rank_rule():
    """A column of norm 100 eps |R(1,1)|: Matlab's tolerance max(N + M, M) eps |R(1,1)| = 420 eps |R(1,1)| of
    the full (410 + 10) x 10 system drops it; that of the reduced 20 x 10 system alone (20 eps) would keep it."""
    N, M = 410, 10
    U = np.linalg.qr(np.random.default_rng(1).normal(size=(N, M)))[0]
    s = np.linspace(2.0, 1.0, M)
    s[-1] = 100 * np.finfo(float).eps * s[0]
    B, y = (U * s).T[None], np.random.default_rng(2).normal(size=(1, N))
    (xf, rf, _), = nlstsq.solve_all(lstsq.to_host(CPU, B, y, np.zeros(1), "host"), "basic", None, False)
    red = lstsq.to_host(CPU, B, y, np.zeros(1), "reduced")
    (xr, rr, _), = nlstsq.solve_all(red, "basic", None, False)
    assert rf == rr == M - 1 and xf[-1] == xr[-1] == 0.0
    A_small = np.vstack([red.top[0], np.zeros((M, M))])
    assert basic_lstsq(A_small, np.concatenate([red.y[0], np.zeros(M)]))[1] == M  # the small system's own rule
    assert np.linalg.norm(xr - xf) <= 1e-10 * np.linalg.norm(xf)


@pytest.mark.parametrize("how", ["min-norm", "basic"])
@pytest.mark.parametrize("w_solve", lstsq.W_SOLVES)
def test_threaded_host_solves_are_the_serial_loop_bit_for_bit(how, w_solve):
    B, y = _systems(10, 250, 15, duplicate=True, seed=3)
    systems = lstsq.to_host(CPU, B, y, np.linspace(0.0, 1.0, 10), w_solve)
    serial = nlstsq.solve_all(systems, how, 1e-12, True, workers=1)
    threaded = nlstsq.solve_all(systems, how, 1e-12, True, workers=4)
    assert all(np.array_equal(a[0], b[0]) and a[1:] == b[1:] for a, b in zip(serial, threaded))
    assert lstsq.default_workers(10) >= 1 and lstsq.default_workers(1) == 1


@pytest.mark.parametrize("w_solve", lstsq.W_SOLVES)
def test_a_seed_is_the_same_alone_in_a_stack_and_reversed(w_solve):
    problem, data = _data("elliptic", 2, "exp-sin")
    params0 = [network.init_params(problem.n_in, 3, 6, seed) for seed in range(10)]
    with np.errstate(all="ignore"):
        alone = solve_seeds(CPU, problem, data, [params0[3]], PAPER, 6, w_solve=w_solve)[0]
        ten = solve_seeds(CPU, problem, data, params0, PAPER, 6, w_solve=w_solve)
        backwards = solve_seeds(CPU, problem, data, params0[::-1], PAPER, 6, w_solve=w_solve, w_workers=1)
    assert _same(alone, ten[3]) and _same(alone, backwards[6])
    assert alone.diagnostics["W3_solve"] == w_solve


def test_an_unknown_w_solve_is_refused():
    problem, data = _data("elliptic", 2, "exp-sin")
    with pytest.raises(ValueError, match="w_solve must be one of host, reduced"):
        solve_seeds(CPU, problem, data, [network.init_params(2, 3, 4, 0)], PAPER, 1, w_solve="device")


#: the largest relative difference of any J or J_S history entry, reduced against host, over 10 seeds x 3
#: sweeps, measured (one BLAS thread): on the archive's platform elliptic-2d (3,30) 8.6e-9 (kappa ~1e9: kappa
#: eps 2e-7; entry 1, after the first W_L solve, 4.2e-10), hyperbolic-5d (3,20) 1.1e-14 (kappa ~4e3); with
#: OpenBLAS's SkylakeX kernel and AVX-512 (LYSEP_NATIVE_BLAS=1 LYSEP_NATIVE_SIMD=1) elliptic-2d 1.4e-4: the
#: ill-conditioned 2-D fits amplify another kernel's round-off (docs/results.md, "The size of the fits").
#: Allowed: 10x the archive platform's there; elsewhere 1e-3 and 1e-12 (round-off, not a method's change).
CELLS = {("elliptic-2d", 3, 30): 1e-8, ("hyperbolic-5d", 3, 20): 1.1e-14}
ELSEWHERE = {("elliptic-2d", 3, 30): 1e-3, ("hyperbolic-5d", 3, 20): 1e-12}


@pytest.fixture(scope="module", params=sorted(CELLS))
def both_modes(request):
    """The cell's 10 seeds x 3 sweeps by execute_stack (the runner's stacked path), w_solve host and reduced."""
    name, L, M = request.param
    spec = load_specs(ROOT / "experiments.yaml")[name]
    keys = [RunKey("lysep", L, M, seed) for seed in range(10)]
    host = execute_stack(spec, keys, 3, "cpu-stacked")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lstsq, "default_w_solve", lambda xp: "reduced")
        reduced = execute_stack(spec, keys, 3, "cpu-stacked")
    return request.param, host, reduced


def test_reduced_runs_follow_the_host_runs(both_modes):
    cell, host, reduced = both_modes
    worst = 0.0
    for (rh, ph), (rr, pr) in zip(host, reduced):
        assert rh.diagnostics["W3_solve"] == "host" and rr.diagnostics["W3_solve"] == "reduced"
        for key in ("J", "J_S"):
            a, b = np.array(rh.history[key]), np.array(rr.history[key])
            worst = max(worst, float(np.max(np.abs(b - a) / np.abs(a))))
        cf, cr = rh.diagnostics["W3_system_cond_first"], rr.diagnostics["W3_system_cond_first"]
        assert abs(cr - cf) <= 10 * cf * np.finfo(float).eps * cf  # relative kappa eps: sigma_min's round-off
    print(f"{cell}: largest relative difference of J, J_S, reduced vs host: {worst:.2e}")
    assert worst <= (10 * CELLS[cell] if on_archive_platform() else ELSEWHERE[cell])


def test_reduced_records_pass_verify_against_the_host_records(both_modes):
    """Per run, `lysep verify`'s tolerant rule (LySep: the first PREFIX history entries within kappa eps, at
    least 1e-10); per cell, its statistical rule on the final J and l2."""
    _, host, reduced = both_modes
    checks = [judge(rh, ph, rr, pr, level="tolerant") for (rh, ph), (rr, pr) in zip(host, reduced)]
    assert all(c.ok and c.level == "prefix" for c in checks), [c.line() for c in checks if not c.ok]
    cell = compare_cell(cell_of(host[0][0]), [r for r, _ in host], [r for r, _ in reduced])
    assert cell.verdict == "agrees", cell.line()


def test_gelsy_is_scipys_lstsq_bit_for_bit():
    """numerics.lstsq.gelsy (scipy's dgelsy through ctypes, the GIL released) against scipy.linalg.lstsq's gelsy:
    random tall and square systems, columns scaled over 1e-5..1e5, some with a duplicate column, three rcond."""
    rng = np.random.default_rng(0)
    for t in range(60):
        m = int(rng.integers(1, 300))
        n = int(rng.integers(1, m + 1))
        A = rng.normal(size=(m, n)) * 10.0 ** rng.uniform(-5, 5, size=n)
        if n > 2 and t % 2:
            A[:, -1] = A[:, 0]
        c, rcond = rng.normal(size=m), (None, 1e-12, 1e-3)[t % 3]
        assert np.array_equal(nlstsq.gelsy(A, c, rcond),
                              scipy.linalg.lstsq(A, c, cond=rcond, lapack_driver="gelsy")[0]), (m, n, rcond)
    with pytest.raises(ValueError, match="tall or square"):
        nlstsq.gelsy(np.ones((2, 3)), np.ones(2), None)


def test_the_full_system_is_what_updates_solve_W3_solves():
    """"host" builds the CPU solver's system: [B^T; sqrt(lambda) I] x = [y; 0], gelsy with rcond."""
    B, y = _systems(2, 120, 8, seed=5)
    got = nlstsq.solve_all(lstsq.to_host(CPU, B, y, np.array([0.0, 2.0]), "host"), "min-norm", 1e-10, False)
    for s, lam in enumerate((0.0, 2.0)):
        want = scipy.linalg.lstsq(_full_A(B[s], lam), np.concatenate([y[s], np.zeros(8)]), cond=1e-10,
                                  lapack_driver="gelsy")[0]
        assert np.array_equal(got[s][0], want)
