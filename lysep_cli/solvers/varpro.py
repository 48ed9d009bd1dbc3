"""Variable projection (VarPro): the output layer eliminated by least squares, the hidden layers trained on
the reduced loss (Golub & Pereyra 1973; Kaufman 1975; docs/varpro.md).

Split the network's parameters into the hidden layers theta = (W_1, b_1, ..., W_{L-1}, b_{L-1}) (P_h
numbers) and the output layer w = [W_L^T; b_L] (M + 1).  The PINN residual is linear in w:

    R(theta, w) = A(theta) w - Y,    A = [B; K]^T  (N, M + 1)      (jacobian.output_layer_system, `eq:GD_W3`)

so for every theta the best output layer is a linear least-squares solve, done as rfls does it (SVD,
LAPACK gelsd, singular values below rcond * s_max dropped), on the system stacked with a ridge term:

    w*(theta) = argmin_w ||A w - Y||^2 + mu ||w||^2 = [A; sqrt(mu) I]^+ [Y; 0],   mu = (rho s_max(A(theta_0)))^2,

r = A w* - Y, and the hidden layers minimise the reduced loss

    F(theta) = (||r||^2 + mu ||w*||^2) / N = min_w J(theta, w) + mu ||w||^2 / N     (J: the PINN loss).

Its gradient is the PINN gradient's hidden block at w = w* (the w-derivative vanishes at w*, and the ridge
term does not depend on theta; mu is fixed for the run):

    grad F(theta) = 2 (dR/dtheta)^T r / N        at (theta, w*(theta)).

The ridge (setting ``ridge`` = rho, 1e-8 by default; 0 is rfls's plain solve) is what makes that formula
usable: A's condition number reaches 1e10 .. 1e17, the plain solve's w* is then wrong along A's smallest
singular vectors (an error growing like cond^2 eps), and the formula misses F's slope 1000-fold (measured,
tests/test_varpro.py); the stacked system's condition number is at most 1 / rho.  With the stacked residual
rs = [r; sqrt(mu) w*] and P_perp = I - As As^+ (As = [A; sqrt(mu) I]), the Jacobian of rs is (Golub-Pereyra)
P_perp (dAs/dtheta) w* - (As^+)^T (dAs/dtheta)^T rs; Kaufman keeps the first term,

    J_K = P_perp [dR/dtheta; 0]|_{w = w*}    (N + M + 1, P_h),    J_K^T rs = (dR/dtheta)^T r = N grad F / 2,

exact where rs = 0 and giving the exact gradient everywhere.  ``hidden`` chooses how theta moves:

- ``lm``: Levenberg-Marquardt on r with Kaufman's Jacobian (damped Gauss-Newton, Madsen, Nielsen &
  Tingleff 2004, Alg. 3.16, as pinn-lm; the dual N x N system when P_h > N), F re-projected at each trial;
- ``lbfgs``: L-BFGS-B (scipy) on F with grad F, restarted after an early stop (as pinn-lbfgs);
- ``gd``: gradient steps theta <- theta - t grad F with Armijo backtracking (solvers/steps.py), the first
  trial t = F / ||grad F||^2 (the step that would zero F on its linear model: scale-free); w re-solved
  after every step (the least-squares/gradient scheme of Cyr et al. 2020, LSGD, with plain gradient steps).

Each setting is registered as a solver of its own (``varpro-lm``, ``varpro-lbfgs``, ``varpro-gd``), so
that their records lie apart (results/<experiment>/varpro-<hidden>/..., docs/varpro.md).

history["J"] (the PINN loss) and history["F"] (the reduced loss): at params0 (the seeded network, its own
output layer; F = J there), after the first output solve (the hidden layers as seeded: rfls's J when
ridge = 0), then after each hidden-layer iteration: min(iterations, max_iterations) + 2 entries (padded with
the last value after an early stop).
diagnostics: move_W<l>, move_b<l> (||W_l - W_l^0|| / ||W_l^0||, how far the hidden layers moved),
J_first_solve, the final rank and cond of A, lstsq_solves, and the method's own counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np
import scipy.linalg
import scipy.optimize

from lysep_cli.numerics.channels import ChannelPlan
from lysep_cli.numerics.jacobian import n_params, output_layer_system, residual_jacobian
from lysep_cli.numerics.network import Params, PinnPass, backward, flatten, pinn_pass, unflatten
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.base import Init, Progress, SolveResult, TrainingData, copy_params, diverged, init_setting
from lysep_cli.solvers.rfls import cutoff
from lysep_cli.solvers.settings import SolverSettings, setting
from lysep_cli.solvers.steps import Backtracking

HIDDEN_DOC = "how the hidden layers move on the reduced loss F: lm | lbfgs | gd (docs/varpro.md)"


@dataclass(frozen=True)
class Settings(SolverSettings):
    """What every ``hidden`` method shares: the cap on iterations, the output solve's cutoff, the init."""

    hidden: Literal["lm", "lbfgs", "gd"] = setting("lm", doc=HIDDEN_DOC)
    max_iterations: int = setting(20, low=0, doc="cap on the hidden-layer iterations (docs/varpro.md: the rule)")
    rcond: float | Literal["auto"] = setting("auto", low=0.0, doc='relative singular-value cutoff of the output '
                                                                  'solve (as rfls), or "auto"')
    ridge: float = setting(1.0e-8, low=0.0, doc="rho: the output solve adds (rho s_max(A_0))^2 ||w||^2 "
                                                "(0: rfls's plain least squares; docs/varpro.md)")
    init: Init = init_setting()

    def history_length(self, iterations: int) -> int:
        return min(iterations, self.max_iterations) + 2


@dataclass(frozen=True)
class LMSettings(Settings):
    """varpro-lm: Levenberg-Marquardt with Kaufman's Jacobian."""

    hidden: Literal["lm"] = setting("lm", doc=HIDDEN_DOC)
    max_iterations: int = setting(20, low=0, doc="cap on the LM iterations (each forms the Jacobian)")
    tau: float = setting(1.0e-3, low=0.0, low_open=True, doc="damping lambda_0 = tau max_i (J_K^T J_K)_ii")
    max_tries: int = setting(30, low=1, doc="damping increases per iteration before the run stalls")


@dataclass(frozen=True)
class LBFGSSettings(Settings):
    """varpro-lbfgs: L-BFGS-B on the reduced loss."""

    hidden: Literal["lbfgs"] = setting("lbfgs", doc=HIDDEN_DOC)
    max_iterations: int = setting(1000, low=0, doc="cap on the L-BFGS iterations")
    maxcor: int = setting(20, low=1, doc="memory (corrections kept)")
    maxls: int = setting(20, low=1, doc="line-search steps per iteration")
    maxfun_per_iteration: int = setting(4, low=1, doc="evaluations of F allowed: this times the iterations")
    max_restarts: int = setting(10, low=0, doc="restarts with an empty memory after an early stop")


@dataclass(frozen=True)
class GDSettings(Settings):
    """varpro-gd: gradient steps on the reduced loss, Armijo backtracking (LSGD)."""

    hidden: Literal["gd"] = setting("gd", doc=HIDDEN_DOC)
    max_iterations: int = setting(500, low=0, doc="cap on the gradient steps")
    grow: float = setting(2.0, low=1.0, doc="trial step times this after an accepted step")
    shrink: float = setting(0.5, low=0.0, high=1.0, low_open=True, high_open=True, doc="after a rejected trial")
    armijo: float = setting(1.0e-4, low=0.0, high=1.0, high_open=True, doc="sufficient decrease constant")
    max_tries: int = setting(30, low=1, doc="trials per step before the run stalls")


SETTINGS: dict[str, type[Settings]] = {"lm": LMSettings, "lbfgs": LBFGSSettings, "gd": GDSettings}


@dataclass
class Projected:
    """The network at theta with its output layer solved: params (w = w*), forward pass, A (N, M + 1),
    r = A w* - Y (N,), J = ||r||^2 / N (the PINN loss), F = J + mu ||w*||^2 / N (the reduced loss), the rank
    of the solved system kept by the cutoff and its condition number."""

    params: Params
    fp: PinnPass
    A: np.ndarray
    r: np.ndarray
    J: float
    F: float
    rank: int
    cond: float

    def failed(self) -> "Projected":
        """This point marked non-finite (a non-finite Jacobian or gradient met there)."""
        return Projected(self.params, self.fp, self.A, self.r * np.nan, float("nan"), float("nan"), self.rank,
                         self.cond)


class VarPro:
    """The reduced problem on one data set: F, grad F and Kaufman's Jacobian at hidden layers theta.

    ``mu`` >= 0: the output solve is min_w ||A w - Y||^2 + mu ||w||^2, the least squares of the stacked
    system [A; sqrt(mu) I] w = [Y; 0] (gelsd with the cutoff ``rcond``); mu = 0 is rfls's solve."""

    def __init__(self, data: TrainingData, like: Params, rcond: Any, mu: float = 0.0) -> None:
        self.data, self.like, self.rcond, self.mu = data, like, rcond, mu
        self.plan = ChannelPlan.build(data.coef)
        self.solves = 0

    def network(self, theta: np.ndarray, w: np.ndarray) -> Params:
        """[(W_1, b_1), ..., (W_L, b_L)] from the hidden vector theta (P_h,) and w = [W_L^T; b_L] (M + 1,)."""
        return unflatten(theta, self.like[:-1]) + [(w[:-1][None, :], w[-1:].copy())]

    def system(self, params: Params) -> tuple[np.ndarray, PinnPass]:
        """A (N, M + 1) of ``params``' hidden layers and the forward pass that built it."""
        fp = pinn_pass(params, self.data.Z, self.plan, self.data.Y)
        return output_layer_system(params, self.data.Z, self.data.coef, fp)

    def stacked(self, A: np.ndarray) -> np.ndarray:
        """[A; sqrt(mu) I] (N + M + 1, M + 1), or A itself when mu = 0."""
        return np.vstack([A, np.sqrt(self.mu) * np.eye(A.shape[1])]) if self.mu > 0 else A

    def lstsq(self, A: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
        """argmin_x ||[A; sqrt(mu) I] x - [rhs; 0]|| by gelsd (rfls's solve), its rank and singular values."""
        As = self.stacked(A)
        if As is not A:
            rhs = np.concatenate([rhs, np.zeros((As.shape[0] - A.shape[0],) + rhs.shape[1:])])
        x, _, rank, sv = scipy.linalg.lstsq(As, rhs, cond=cutoff(self.rcond, As.shape), lapack_driver="gelsd")
        return x, int(rank), sv

    def project(self, theta: np.ndarray) -> Projected:
        """w*(theta) by the SVD least squares of rfls (gelsd, cutoff rcond * s_max), r, J and F."""
        params = self.network(theta, np.zeros(self.like[-1][0].size + 1))
        A, fp = self.system(params)
        self.solves += 1
        nan = float("nan")
        if not np.all(np.isfinite(A)):
            return Projected(params, fp, A, np.full(A.shape[0], nan), nan, nan, 0, nan)
        w, rank, sv = self.lstsq(A, self.data.Y)
        params[-1] = (w[:-1][None, :], w[-1:].copy())
        r = A @ w - self.data.Y
        J = float(r @ r / r.size)
        cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf")
        return Projected(params, fp, A, r, J, J + self.mu * float(w @ w) / r.size, rank, cond)

    def residual(self, p: Projected) -> np.ndarray:
        """The reduced residual: r (N,), or [r; sqrt(mu) w*] (N + M + 1,) with the ridge term."""
        if self.mu == 0:
            return p.r
        WL, bL = p.params[-1]
        return np.concatenate([p.r, np.sqrt(self.mu) * np.concatenate([WL[0], bL])])

    def gradient(self, p: Projected) -> np.ndarray:
        """grad F (P_h,): the hidden block of the PINN gradient at w = w* (one reverse pass)."""
        grads = backward(p.params, self.data.Z, p.fp, self.plan, (2.0 / p.r.size) * p.r)
        return flatten(grads[:-1])

    def kaufman_jacobian(self, p: Projected) -> np.ndarray:
        """J_K = P_perp dR/dtheta at w = w* (N, P_h), P_perp Jac = Jac - A (A^+ Jac) with the solve of w*; with
        the ridge term, of the stacked residual [r; sqrt(mu) w*]: P_perp [Jac; 0] (N + M + 1, P_h)."""
        N, P = p.A.shape[0], n_params(p.params)
        Jac = residual_jacobian(p.params, self.data.Z, self.data.coef, p.fp, out=np.empty((N, P)), plan=self.plan)
        Jh = Jac[:, :P - p.A.shape[1]]
        X = self.lstsq(p.A, Jh)[0]
        if self.mu == 0:
            return Jh - p.A @ X
        return np.vstack([Jh, np.zeros((p.A.shape[1], Jh.shape[1]))]) - self.stacked(p.A) @ X


def relative_moves(params: Params, params0: Params) -> dict[str, float]:
    """move_W<l>, move_b<l> = ||W_l - W_l^0|| / ||W_l^0|| (same for b) for the hidden layers l = 1..L-1."""
    out = {}
    for l, ((W, b), (W0, b0)) in enumerate(zip(params[:-1], params0[:-1]), start=1):
        for key, new, old in ((f"move_W{l}", W, W0), (f"move_b{l}", b, b0)):
            n = float(np.linalg.norm(old))
            out[key] = float(np.linalg.norm(new - old) / n) if n > 0 else float("nan")
    return out


Step = Callable[[int], "Projected | None"]  # iteration k -> the new point (None: stalled)


def _lm(vp: VarPro, s: LMSettings, p: Projected, diag: dict[str, Any]) -> Step:
    """Levenberg-Marquardt on the reduced residual r (:meth:`VarPro.residual`) with J_K: (J_K^T J_K + lam I)
    delta = -J_K^T r (dual: (J_K J_K^T + lam I) y = -r, delta = J_K^T y), gain ratio rho on ||r||^2 / 2 = N F / 2,
    the damping lam updated as pinn-lm does."""
    state = {"p": p, "theta": flatten(p.params[:-1]), "lam": None, "nu": 2.0}
    diag.update(rejected_steps=0)

    def step(k: int) -> Projected | None:
        p, theta = state["p"], state["theta"]
        Jk = vp.kaufman_jacobian(p)
        if not np.all(np.isfinite(Jk)):
            return p.failed()
        r = vp.residual(p)
        n, P = Jk.shape
        dual = P > n
        g = Jk.T @ r
        gram = Jk @ Jk.T if dual else Jk.T @ Jk
        if state["lam"] is None:
            state["lam"] = s.tau * float(np.max(np.einsum("np,np->p", Jk, Jk)))
        half = 0.5 * float(r @ r)
        for _ in range(s.max_tries):
            lam = state["lam"]
            try:
                c = scipy.linalg.cho_factor(gram + lam * np.eye(gram.shape[0]), check_finite=False)
                delta = Jk.T @ scipy.linalg.cho_solve(c, -r) if dual else scipy.linalg.cho_solve(c, -g)
                new = vp.project(theta + delta)
                rho = (half - 0.5 * new.F * new.r.size) / (0.5 * float(delta @ (lam * delta - g)))
            except np.linalg.LinAlgError:
                rho = -1.0
            if np.isfinite(rho) and rho > 0:
                state.update(p=new, theta=theta + delta, lam=lam * max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3),
                             nu=2.0)
                return new
            diag["rejected_steps"] += 1
            state["lam"], state["nu"] = lam * state["nu"], state["nu"] * 2.0
        return None

    return step


def _gd(vp: VarPro, s: GDSettings, p: Projected, diag: dict[str, Any]) -> Step:
    """theta <- theta - t grad F, t by Armijo backtracking from t_0 = F / ||grad F||^2 (steps.Backtracking)."""
    g = vp.gradient(p)
    g2 = float(g @ g)
    rule = Backtracking(tau0=p.F / g2 if g2 > 0 else 1.0, grow=s.grow, shrink=s.shrink, armijo=s.armijo,
                        max_tries=s.max_tries)
    state = {"p": p, "theta": flatten(p.params[:-1]), "g": g}
    diag.update(first_trial_step=rule.step_size)

    def step(k: int) -> Projected | None:
        p, theta, g = state["p"], state["theta"], state["g"]
        if not np.all(np.isfinite(g)):
            return p.failed()

        def trial(t: float) -> tuple[float, Projected]:
            new = vp.project(theta - t * g)
            return new.F, new

        _, new, t = rule.step(p.F, float(g @ g), trial)
        if new is None:
            return None
        state.update(p=new, theta=theta - t * g, g=vp.gradient(new))
        diag["last_step"] = t
        return new

    return step


def _run_lbfgs(vp: VarPro, s: LBFGSSettings, p0: Projected, n_iter: int, on_iterate: Callable[[Projected], None],
               diag: dict[str, Any]) -> Projected:
    """L-BFGS-B (scipy) on F with grad F from ``p0``, restarted with an empty memory after an early stop while
    iterations and evaluations remain (as pinn-lbfgs); ``on_iterate`` gets each iterate.  Returns the last."""
    cache: dict[str, Any] = {"x": flatten(p0.params[:-1]), "p": p0}

    def at(theta: np.ndarray) -> Projected:
        if not np.array_equal(theta, cache["x"]):
            cache["x"], cache["p"] = theta.copy(), vp.project(theta)
        return cache["p"]

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        p = at(theta)
        return p.F, vp.gradient(p) if np.isfinite(p.F) else np.full(theta.size, np.nan)

    theta, nit, nfev, messages = cache["x"], 0, 0, []
    maxfun = s.maxfun_per_iteration * max(n_iter, 1)
    for _ in range(s.max_restarts + 1):
        if nit >= n_iter:
            break
        res = scipy.optimize.minimize(
            fun, theta, jac=True, method="L-BFGS-B", callback=lambda xk: on_iterate(at(xk)),
            options={"maxiter": n_iter - nit, "maxfun": maxfun - nfev, "maxcor": s.maxcor, "ftol": 0.0,
                     "gtol": 0.0, "maxls": s.maxls})
        theta, nit, nfev = res.x, nit + int(res.nit), nfev + int(res.nfev)
        messages.append(f"{int(res.nit)} it: {res.message}")
        if nfev >= maxfun or res.nit == 0 or not np.isfinite(res.fun):
            break
    diag.update(nit=nit, nfev=nfev, restarts=max(len(messages) - 1, 0), message=messages)
    return at(theta)


def solve(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
          iterations: int, progress: Progress | None = None) -> SolveResult:
    """VarPro with the ``hidden`` method of ``settings`` (:data:`SETTINGS`; a mapping is read by its ``hidden``).

    min(iterations, max_iterations) hidden-layer iterations after the first output solve; history["J"] and
    diagnostics as the module docstring says.
    """
    if not isinstance(settings, Settings):
        hidden = (settings or {}).get("hidden", "lm") if isinstance(settings, dict) else "lm"
        settings = SETTINGS.get(hidden, Settings).coerce(settings)
    s = settings
    n_iter = min(iterations, s.max_iterations)
    params = copy_params(params0)
    A, _ = VarPro(data, params, s.rcond).system(params)
    R0 = A @ flatten(params[-1:]) - data.Y
    J0 = float(R0 @ R0 / R0.size)
    history: dict[str, list[float]] = {"J": [J0], "F": [J0]}
    diag: dict[str, Any] = {"hidden": s.hidden, "P_hidden": int(n_params(params[:-1])),
                            "history_note": "J (PINN loss) and F (reduced loss, with the ridge term): [initial "
                                            "network, after the first output solve, then after each hidden-layer "
                                            "iteration]; padded after an early stop"}
    if not np.isfinite(J0):  # (a non-finite A gives a non-finite J0)
        return diverged(params, history, 0, diagnostics=diag)
    # mu = (rho s_max(A_0))^2, fixed for the run (a mu moving with theta would add a term to grad F)
    mu = (s.ridge * float(scipy.linalg.svdvals(A)[0])) ** 2 if s.ridge > 0 else 0.0
    vp = VarPro(data, params, s.rcond, mu)
    diag["ridge_mu"] = mu

    def record(new: Projected) -> None:
        history["J"].append(new.J)
        history["F"].append(new.F)
        if progress is not None and np.isfinite(new.F):  # after each entry past the initial network's, as
            progress(len(history["J"]) - 2, new.J)        # pinn-lbfgs: call k reports history J[k + 1]

    p = vp.project(flatten(params[:-1]))
    record(p)
    diag["J_first_solve"] = p.J
    message = ""
    if np.isfinite(p.F) and s.hidden == "lbfgs":
        p = _run_lbfgs(vp, s, p, n_iter, record, diag)  # type: ignore[arg-type]
    elif np.isfinite(p.F):
        step = (_lm if s.hidden == "lm" else _gd)(vp, s, p, diag)  # type: ignore[arg-type]
        for k in range(n_iter):
            new = step(k)
            if new is None:
                message = f"stalled at iteration {k}: no acceptable step in {s.max_tries} tries"  # type: ignore[attr-defined]
                diag["stalled_at"] = k
                break
            p = new
            record(p)
            if not np.isfinite(p.F):
                break
    done = len(history["J"]) - 2
    diag.update(relative_moves(p.params, params0), iterations_run=done, lstsq_solves=vp.solves, rank=p.rank,
                cond=p.cond, n_columns=int(p.A.shape[1]))
    bad = [k for k, (J, F) in enumerate(zip(history["J"], history["F"])) if not (np.isfinite(J) and np.isfinite(F))]
    if bad:
        return diverged(p.params, history, bad[0], diagnostics=diag)
    if s.hidden == "lbfgs" and done < n_iter:
        message = f"stopped after {done} of {n_iter} iterations: {diag['message'][-1]}"
    for series in history.values():
        series += [series[-1]] * (n_iter + 2 - len(series))
    return SolveResult(p.params, history, message=message, iterations_done=done, diagnostics=diag)


def _registered(S: type[Settings]) -> Callable[..., SolveResult]:
    """The solve function of one registered ``varpro-<hidden>`` (its settings class as ``.Settings``)."""

    def run(problem: Problem, data: TrainingData, params0: Params, settings: Settings | dict[str, Any],
            iterations: int, progress: Progress | None = None) -> SolveResult:
        return solve(problem, data, params0, S.coerce(settings), iterations, progress)

    run.__doc__ = f"{S.__doc__} (:func:`solve`)"
    run.Settings = S  # type: ignore[attr-defined]
    return run


solve_lm = _registered(LMSettings)
solve_lbfgs = _registered(LBFGSSettings)
solve_gd = _registered(GDSettings)
