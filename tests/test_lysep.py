"""LySep loss, gradients, closed-form updates and Algorithms 1-3 on tiny problems."""

from __future__ import annotations

import numpy as np
import pytest

from lysep_cli.numerics.activation import SIGMA
from lysep_cli.numerics.network import init_params, pinn_loss
from lysep_cli.numerics.problems import make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.solvers.base import TrainingData
from lysep_cli.solvers.lysep.algorithm import Settings, bound_factor, paper_constant, solve, theorem_constant
from lysep_cli.solvers.settings import SettingsError
from lysep_cli.solvers.lysep.loss import (LySepData, LySepState, compute_terms, gradient, lysep_loss, penalty, weights)
from lysep_cli.solvers.lysep.updates import solve_b1, solve_b2, solve_b3, solve_W3

def sigma(z):
    return SIGMA.derivative(z, 0)


def sigma1(z):
    return SIGMA.derivative(z, 1)


def sigma2(z):
    return SIGMA.derivative(z, 2)


CASES = [("elliptic", 2), ("elliptic", 3), ("parabolic", 2), ("hyperbolic", 2)]


def setup(pde: str, d: int, N: int = 30, M: int = 6, seed: int = 0):
    P = make_problem(pde, d)
    Z, _ = train_test_points(N, 4, d, P.time_dependent)
    td = TrainingData.build(P, Z)
    data = LySepData.build(Z, td.coef, td.Y)
    params = init_params(P.n_in, 3, M, seed)
    return P, td, data, params


def perturbed_state(data, params, scale=0.05, seed=1) -> LySepState:
    rng = np.random.default_rng(seed)
    st = LySepState.from_params(params, data)
    for name in ("a1", "a2", "d1", "d2", "q2"):
        v = getattr(st, name)
        st = st.with_(**{name: v + scale * rng.standard_normal(v.shape)})
    return st


@pytest.mark.parametrize("pde,d", CASES)
def test_exact_auxiliary_variables_give_J_S_equal_J(pde, d):
    """Theorems 2.2, 3.2, 3.4: with the forward values, every penalty vanishes and J_S = J."""
    _, td, data, params = setup(pde, d)
    parts = lysep_loss(LySepState.from_params(params, data), data)
    J = pinn_loss(params, td.Z, td.coef, td.Y)
    assert parts.penalty == pytest.approx(0.0, abs=1e-20)
    assert parts.J_S == pytest.approx(J, rel=1e-12)


def literal_elliptic_J_S(st: LySepState, data: LySepData) -> float:
    """`eq:Js-elliptic` transcribed term by term (independent of the rho bookkeeping)."""
    N, dd = data.N, data.Z.shape[0]
    X = data.Z
    K, Ki, Kh = data.K, data.Kd, data.Kh[0]
    sup = lambda A: np.max(np.abs(A))  # noqa: E731
    Kinf, Khinf = sup(K), sup(Kh)
    W1, W2, W3 = st.W1, st.W2, st.W3
    a1, a2, d1, d2, q = st.a1, st.a2, st.d1, st.d2, st.q2
    fit = K * (W3 @ sigma(a2) + st.b3)[0]
    for i in range(dd):
        fit = fit + Ki[i] * (W3 @ (sigma1(a2) * d2[i]))[0]
        fit = fit + Kh * (W3 @ (sigma2(a2) * d2[i] * d2[i] + sigma1(a2) * q[i]))[0]
    fit = fit - data.Y
    nrm = lambda A, D: np.sum(D**2 * np.sum(A * A, 0))  # noqa: E731  ||A||_D^2
    cn = lambda A: np.sqrt(np.sum(A * A, 0))  # noqa: E731  ||A[n]||
    f3, f2 = np.sum(W3**2), np.sum(W2**2)
    om_a1_1 = f3 * f2
    om_a1_2 = [om_a1_1 * np.sum(W1[:, i] ** 2) for i in range(dd)]
    om_a1_3 = [om_a1_2[i] * f2 for i in range(dd)]
    om_a2_1 = f3
    D_a2_2 = [Khinf * cn(d2[i]) for i in range(dd)]
    D_a1_2 = [Khinf * cn(d1[i]) for i in range(dd)]
    D_a1_3 = [np.sqrt(D_a1_2[i] ** 2 + D_a2_2[i] ** 2) for i in range(dd)]
    D_a2_1 = np.sqrt(Kinf**2 + sum(sup(Ki[i]) ** 2 * cn(d2[i]) ** 2 + Khinf**2 * cn(q[i]) ** 2 for i in range(dd)))
    D_a1_1 = np.sqrt(D_a2_1**2 + sum(sup(Ki[i]) ** 2 * cn(d1[i]) ** 2 + D_a1_2[i] ** 2 * cn(d2[i]) ** 2
                                     for i in range(dd)))
    e_a1 = W1 @ X + st.b1[:, None] - a1
    e_a2 = W2 @ sigma(a1) + st.b2[:, None] - a2
    total = fit @ fit + om_a1_1 * nrm(e_a1, D_a1_1) + om_a2_1 * nrm(e_a2, D_a2_1)
    for i in range(dd):
        e_d1 = W1[:, i][:, None] - d1[i]
        e_d2 = W2 @ (sigma1(a1) * d1[i]) - d2[i]
        e_q = W2 @ (sigma2(a1) * d1[i] * d1[i]) - q[i]
        total += om_a1_2[i] * nrm(e_a1, D_a1_2[i]) + om_a1_3[i] * nrm(e_a1, D_a1_3[i])
        total += om_a1_2[i] * nrm(e_a2, D_a2_2[i])  # omega_a2^{2i} = omega_a1^{2i}
        om_d1_1 = Khinf**2 * (om_a1_2[i] + om_a1_3[i])
        om_d1_2 = om_a1_1
        total += om_d1_1 * nrm(e_d1, np.ones(N)) + om_d1_2 * nrm(e_d1, np.sqrt(sup(Ki[i]) ** 2 + D_a1_3[i] ** 2))
        om_d2_1, om_d2_2 = f3, Khinf**2 * om_a1_2[i]
        total += om_d2_1 * nrm(e_d2, np.sqrt(sup(Ki[i]) ** 2 + D_a2_2[i] ** 2)) + om_d2_2 * nrm(e_d2, np.ones(N))
        total += Khinf**2 * om_a2_1 * np.sum(e_q * e_q)
    return float(total / N)


@pytest.mark.parametrize("d", [2, 3])
def test_J_S_matches_literal_transcription_of_eq_Js_elliptic(d):
    _, _, data, params = setup("elliptic", d)
    st = perturbed_state(data, params)
    assert lysep_loss(st, data).J_S == pytest.approx(literal_elliptic_J_S(st, data), rel=1e-11)


def test_parabolic_time_channel_penalties_match_the_paper():
    """omega_d10 = |K_0|^2 omega_a1^1 and omega_d20 = |K_0|^2 omega_a2^1 with D = I (`eq:Js-parabolic`)."""
    _, _, data, params = setup("parabolic", 2)
    st = perturbed_state(data, params)
    wt = weights(st, data)
    w3, w2 = np.sum(st.W3**2), np.sum(st.W2**2)
    K0 = data.kj[0]
    assert np.allclose(w3 * wt.rho_d[1][0], K0 * w3 * w2)
    assert np.allclose(w3 * wt.rho_d[2][0], K0 * w3)
    assert data.hj[0] == 0.0 and list(data.S) == [1, 2]


@pytest.mark.parametrize("pde,d", CASES)
@pytest.mark.parametrize("mode", ["frozen", "through"])
def test_gradients_match_central_differences(pde, d, mode):
    _, _, data, params = setup(pde, d, N=20, M=5)
    st = perturbed_state(data, params)
    rng = np.random.default_rng(3)
    wt0 = weights(st, data)
    for block in ("W1", "a1", "d1", "W2", "a2", "d2", "q2"):
        terms = compute_terms(st, data)
        g = gradient(block, st, data, terms, mode, weights(st, data))
        x = getattr(st, block)

        def f(v):
            s2 = st.with_(**{block: v.reshape(x.shape)})
            t = compute_terms(s2, data)
            if mode == "frozen":  # omega and D held at their values before the step
                return (t.r @ t.r + np.sum(s2.W3**2) * penalty(t, wt0)) / data.N
            return lysep_loss(s2, data, t).J_S

        x0 = x.ravel().copy()
        h = 1e-6
        noise = 1e-15 * abs(f(x0)) / h  # rounding error of the central difference
        for k in rng.choice(x0.size, min(15, x0.size), replace=False):
            e = np.zeros_like(x0)
            e[k] = h
            fd = (f(x0 + e) - f(x0 - e)) / (2 * h)
            assert fd == pytest.approx(g.ravel()[k], rel=1e-5, abs=1e-8 * np.abs(g).max() + 10 * noise), (block, k)


@pytest.mark.parametrize("pde,d", CASES)
def test_closed_form_updates_minimise_J_S_in_their_block(pde, d):
    _, _, data, params = setup(pde, d)
    st = perturbed_state(data, params)
    wt = weights(st, data)
    # b1, b2: gradient of J_S in b vanishes at the weighted mean.
    for name, solver, e_name in (("b1", solve_b1, "e_a1"), ("b2", solve_b2, "e_a2")):
        s2 = st.with_(**{name: solver(st, data, wt)})
        e = getattr(compute_terms(s2, data), e_name)
        rho = wt.rho_a[int(name[1])]
        assert np.abs(e @ rho).max() < 1e-9 * np.abs(e).max() * rho.sum()
    # W3: exact minimiser of J_S over W3 (ridge with lambda = P): perturbing it raises J_S.
    sol = solve_W3(st, data, compute_terms(st, data))
    s3 = st.with_(W3=sol.W3)
    J3 = lysep_loss(s3, data).J_S
    rng = np.random.default_rng(0)
    for _ in range(5):
        dW = 1e-4 * rng.standard_normal(sol.W3.shape)
        assert lysep_loss(s3.with_(W3=sol.W3 + dW), data).J_S >= J3
    assert sol.lam == pytest.approx(penalty(compute_terms(st, data), wt))
    # b3 (`eq:GD_b3`).
    s4 = s3.with_(b3=solve_b3(s3, data))
    assert lysep_loss(s4, data).J_S <= J3 + 1e-15
    # Joint [W3, b3] is at least as good as the separate pair.
    joint = solve_W3(st, data, compute_terms(st, data), joint=True)
    assert lysep_loss(st.with_(W3=joint.W3, b3=joint.b3), data).J_S <= lysep_loss(s4, data).J_S * (1 + 1e-9)


def test_theorem_constant_is_14_for_sin_and_factors():
    assert theorem_constant() == 14.0 == paper_constant()
    assert paper_constant(C_s=2.0) == 32.0  # 2 C_sigma^4 dominates; C_1 = 2, C_2 = 1 (the paper's C_2)
    # With the C_sigma of dP_2's R_2 term (which the paper's C_2 omits): 14 * 2^2.
    assert theorem_constant(3, C_s=2.0) == 56.0
    assert bound_factor("elliptic", 2) == 6 and bound_factor("parabolic", 5) == 13
    assert bound_factor("hyperbolic", 5) == 14


@pytest.mark.parametrize("pde,d", CASES)
def test_bound_holds_for_arbitrary_auxiliary_variables(pde, d):
    """Theorem 2.1/3.1/3.3 hold for all variables: J <= factor * C * J_S at random perturbations."""
    P, td, data, params = setup(pde, d)
    factor = bound_factor(pde, d) * theorem_constant()
    for seed in range(5):
        st = perturbed_state(data, params, scale=0.5, seed=seed)
        J = pinn_loss(st.params(), td.Z, td.coef, td.Y)
        assert J <= factor * lysep_loss(st, data).J_S


@pytest.mark.parametrize("pde,d", CASES)
def test_algorithm_decreases_J_S_and_records_everything(pde, d):
    P, td, _, params = setup(pde, d, N=40, M=6)
    res = solve(P, td, params, {"tau": 1e-6}, iterations=5)
    H = res.history
    assert len(H["J_S"]) == len(H["J"]) == 6
    assert H["J_S"][-1] < 0.1 * H["J_S"][0]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(H["J_S"][1:], H["J_S"][2:]))  # monotone after solve 1
    assert res.bound["violations"] == 0
    assert res.bound["factor"] == bound_factor(pde, d) * 14
    diag = res.diagnostics
    assert diag["J_after_first_W3_solve"] == H["J"][1]
    assert res.J_S == H["J_S"][-1] and res.status == "ok"
    again = solve(P, td, params, {"tau": 1e-6}, iterations=5)
    assert again.history == H  # deterministic


def test_tau_zero_is_the_closed_form_solve_on_the_seeded_layers():
    P, td, _, params = setup("elliptic", 2, N=40, M=6)
    res = solve(P, td, params, {"step_rule": "fixed", "tau": 0.0}, iterations=2)
    (W1, b1), (W2, b2), _ = res.params
    assert np.array_equal(W1, params[0][0]) and np.array_equal(W2, params[1][0])
    assert res.history["J"][1] < 0.05 * res.history["J"][0]


def test_W3_zero_is_not_a_trap():
    P, td, data, params = setup("elliptic", 2)
    params = [params[0], params[1], (np.zeros_like(params[2][0]), params[2][1])]
    res = solve(P, td, params, {"tau": 1e-6}, iterations=1)
    assert np.linalg.norm(res.params[2][0]) > 0
    assert res.history["J"][1] < res.history["J"][0]


def test_settings_are_validated():
    with pytest.raises(SettingsError, match="unknown setting"):
        Settings.from_mapping({"learning_rate": 1})
    with pytest.raises(SettingsError, match="weights"):
        Settings.from_mapping({"weights": "sometimes"})
    with pytest.raises(SettingsError, match="step_rule"):
        Settings.from_mapping({"step_rule": "bogus"})
    assert Settings().size_error(4, 5) is None and Settings().size_error(3, 5) is None  # any depth L >= 2
    with pytest.raises(ValueError, match="L >= 2"):
        P, td, _, _ = setup("elliptic", 2)
        solve(P, td, init_params(2, 1, 5, 0), {}, iterations=1)


def test_step_rules_are_fresh_objects_per_solve():
    s = Settings.from_mapping({"tau": 1e-6})
    a, b = s.step_rules(), s.step_rules()
    assert set(a) == {"W1", "a1", "d1", "W2", "a2", "d2", "q2"} and a["W1"] is not b["W1"]
    assert all(not r.inactive for r in a.values())
    assert all(r.inactive for r in s.replace(step_rule="fixed", tau=0.0).step_rules().values())


def test_a_trial_that_changes_no_entry_is_not_recomputed_and_the_run_is_bit_identical(monkeypatch):
    """A step x - t g that leaves every entry of x as it was costs nothing: J_S(x - t g) is J0 exactly.
    The run must be the same, bit for bit, as the one that recomputes those trials."""
    from lysep_cli.accel import trials

    problem, td, _, params = setup("elliptic", 2, N=60, M=8)
    fast = solve(problem, td, params, {}, 300)
    assert fast.diagnostics["unchanged_trials"] > 0  # the shortcut did act in this run
    monkeypatch.setattr(trials, "batched_same_bits",
                        lambda xp, xt, x: np.zeros((xt.shape[0] // x.shape[0], x.shape[0]), dtype=bool))
    slow = solve(problem, td, params, {}, 300)
    assert slow.diagnostics["unchanged_trials"] == 0
    assert fast.history["J"] == slow.history["J"] and fast.history["J_S"] == slow.history["J_S"]
    for (W, b), (W2, b2) in zip(fast.params, slow.params):
        assert np.array_equal(W, W2) and np.array_equal(b, b2)


def test_same_bits_tells_signed_zeros_apart():
    from lysep_cli.accel.trials import batched_same_bits

    def same_bits(a, b):  # one seed, one trial row
        return bool(batched_same_bits(np, a[None], b[None])[0, 0])

    a = np.array([[0.0, 1.0]])
    assert same_bits(a, a.copy()) and not same_bits(a, np.array([[-0.0, 1.0]]))
    assert not same_bits(a, np.array([[0.0, np.nextafter(1.0, 2.0)]]))
    big = np.random.default_rng(0).normal(size=(7, 150))
    other = big.copy()
    other[0, 1] = np.nextafter(other[0, 1], np.inf)  # outside the strided sample (every 16th entry)
    assert same_bits(big, big.copy()) and not same_bits(big, other)
    rows = np.stack([big, other, big])  # three trial rows of one seed: each told apart on its own
    assert batched_same_bits(np, rows, big[None]).ravel().tolist() == [True, False, True]


@pytest.mark.parametrize("pde,d", [("elliptic", 2), ("hyperbolic", 2)])
def test_reusing_a_blocks_own_layer_map_in_its_trials_is_bit_identical(pde, d, monkeypatch):
    """a_l, d_l, q_l (l >= 2) do not change their own constraint's layer map: the trials reuse it.
    The run must be the one that recomputes it in every trial, bit for bit."""
    from lysep_cli.solvers.lysep import algorithm, loss

    problem, td, _, params = setup(pde, d, N=40, M=7)
    fast = solve(problem, td, params, {}, 60)
    monkeypatch.setattr(algorithm, "update_terms",
                        lambda terms, block, st, data, own_map=None: loss.update_terms(terms, block, st, data))
    slow = solve(problem, td, params, {}, 60)
    assert fast.history["J"] == slow.history["J"] and fast.history["J_S"] == slow.history["J_S"]
    for (W, b), (W2, b2) in zip(fast.params, slow.params):
        assert np.array_equal(W, W2) and np.array_equal(b, b2)


def test_backoff_takes_the_same_steps_with_fewer_trials_when_growth_keeps_failing():
    """A loss on which every step above 1e-3 fails: the default rule tries 2e-3 (rejected), then 1e-3, at
    every step; with back-off the grown trial is made at steps 1, 2, 4, 7, 12, ... only."""
    from lysep_cli.solvers.steps import Backtracking

    def run(rule: Backtracking, steps: int = 40):
        accepted, trials = [], [0]

        def trial(t):
            trials[0] += 1
            return (0.0 if t <= 1e-3 else 2.0), t

        for _ in range(steps):
            J, t, _ = rule.step(1.0, 1.0, trial)
            accepted.append(t)
        return accepted, trials[0]

    plain, n_plain = run(Backtracking(1e-3, 2.0, 0.5, 1e-4, 40))
    held, n_held = run(Backtracking(1e-3, 2.0, 0.5, 1e-4, 40, backoff_max=8))
    assert plain == held == [1e-3] * 40  # the same accepted steps
    assert n_plain == 2 * 40 - 1 and n_held < 0.6 * n_plain


def test_backoff_grows_again_once_a_grown_step_is_accepted():
    from lysep_cli.solvers.steps import Backtracking

    rule = Backtracking(1.0, 2.0, 0.5, 1e-4, 40, backoff_max=4)
    limit = [1.0]
    trial = lambda t: ((0.0 if t <= limit[0] else 2.0), t)  # noqa: E731
    for _ in range(6):
        rule.step(1.0, 1.0, trial)
    assert rule.last == 1.0 and rule.backoff == 4
    limit[0] = 1e9  # now every step is accepted: growth resumes after the hold
    steps = [rule.step(1.0, 1.0, trial)[2] for _ in range(12)]
    assert steps[-1] > 1.0 and rule.backoff == 1
    state = rule.state()
    other = Backtracking(1.0, 2.0, 0.5, 1e-4, 40, backoff_max=4)
    other.set_state(state)
    assert other.state() == state


def test_backoff_setting_runs_and_counts_trials():
    problem, td, _, params = setup("elliptic", 2, N=40, M=7)
    base = solve(problem, td, params, {}, 80)
    held = solve(problem, td, params, {"backoff_max": 16}, 80)
    assert held.status == "ok" and held.diagnostics["trials"] < base.diagnostics["trials"]
    assert held.bound["violations"] == 0
