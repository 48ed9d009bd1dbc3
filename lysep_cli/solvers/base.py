"""The contract every solver meets: same inputs, one result type, one meaning of divergence.

A solver is a module with a ``Settings`` dataclass (:class:`~lysep_cli.solvers.settings.SolverSettings`),
a function::

    solve(problem, data, params0, settings, iterations, progress=None[, checkpoint=None]) -> SolveResult

and, optionally, ``CAPABILITIES`` (:class:`Capabilities`: what it can do beyond the contract; the
default claims nothing).  What sizes it accepts and how long its history is are its settings' to say
(``Settings.size_error(L, M)``, ``Settings.history_length(iterations)``).

``data`` holds the training set in the paper's layout (:class:`~lysep_cli.numerics.dataset.TrainingData`);
``params0`` the seeded initial network (shared by every solver for a seed and ``init``, never modified;
:func:`initial_network` draws it);
``settings`` its ``Settings`` (a mapping is accepted and validated with ``Settings.coerce``);
``progress(k, loss)`` is called after iteration k = 0, 1, ... (it may raise KeyboardInterrupt);
``checkpoint`` (only for a solver whose capabilities say so) resumes the run from a saved state and saves
it as it comes due (:class:`Checkpoint`); the result is the uninterrupted run's, bit for bit.

``tests/test_contract.py`` holds every registered solver to this contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol

from lysep_cli.numerics import network
from lysep_cli.numerics.dataset import TrainingData
from lysep_cli.numerics.network import Params
from lysep_cli.numerics.problems import Problem
from lysep_cli.solvers.settings import SolverSettings, setting

Progress = Callable[[int, float], None]
STATUSES = ("ok", "diverged")


@dataclass
class SolveResult:
    """What a solver returns.

    params : trained [(W_l, b_l)] in the paper's shapes.
    history : per-iteration series; "J" always (PINN loss of the current W, b), "J_S" for LySep; every
        series has the length of "J": ``settings.history_length(iterations)`` entries when the run did
        not diverge, ``diverged_at + 1`` when it did.
    status : "ok" or "diverged".
    message : why the run stopped or diverged, in a few words ("" when there is nothing to say).
    iterations_done : iterations actually performed (default: len(history["J"]) - 1); less than asked
        when the solver stopped early (L-BFGS-B, LM stalled) and padded its history.
    diverged_at : for a diverged run, the iterate k (0 = the initial network) at which the solver first
        met a non-finite loss or derivative: history["J"] has k + 1 entries and its last one is that
        iterate's loss.  None when status is "ok".
    J_S : final LySep loss, None for the PINN-type solvers.
    bound : LySep's check of J <= factor * J_S over the iterations ({"factor", "violations", ...}), else None.
    diagnostics : JSON-able solver-specific figures (condition numbers, accepted steps, restarts, ...).
    """

    params: Params
    history: dict[str, list[float]]
    status: str = "ok"
    message: str = ""
    iterations_done: int | None = None
    diverged_at: int | None = None
    J_S: float | None = None
    bound: dict[str, Any] | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if (self.status == "diverged") != (self.diverged_at is not None):
            raise ValueError("diverged_at is set exactly when status is 'diverged'")
        if "J" not in self.history or not self.history["J"]:
            raise ValueError("history['J'] must hold at least the initial loss")
        if self.iterations_done is None:
            self.iterations_done = len(self.history["J"]) - 1


def diverged(params: Params, history: dict[str, list[float]], at: int, message: str = "",
             **fields: Any) -> SolveResult:
    """A diverged result at iterate ``at``: every history series cut to ``at + 1`` entries."""
    cut = {k: list(v[:at + 1]) for k, v in history.items()}
    return SolveResult(params, cut, "diverged", message or f"non-finite value at iteration {at}",
                       iterations_done=at, diverged_at=at, **fields)


class Checkpoint(Protocol):
    """A run's saved state, as a solver that resumes sees it (lysep_cli/store/checkpoint.py keeps it)."""

    def load(self) -> dict[str, Any] | None: ...

    def due(self) -> bool: ...

    def save(self, meta: dict[str, Any], arrays: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class Capabilities:
    """What a solver declares beyond the contract (its module's ``CAPABILITIES``).

    checkpoint : ``solve`` takes ``checkpoint=`` and resumes from it (the contract test checks that a
        resumed run is the uninterrupted one).
    round_off_stable : reruns on another BLAS kernel or NumPy SIMD path stay within round-off of each
        other over the whole run (measured: docs/reproducibility.md); False: round-off is amplified, and
        ``lysep verify`` compares a rerun's first history entries only.
    seed_free : the run does not depend on the seed (``params0`` unused, e.g. poly): one run, the first seed
        asked for, stands for every seed (planned alone, and counted as the cell's one requested seed).
    stacks : "module:function" of the solve that trains a cell's S seeds in one stack on NumPy or CuPy
        (a seed axis, lysep_cli/accel for the device; ``lysep run --device cpu-stacked | cuda``), called as
        ``solve_seeds(backend, problem, data, params0 (S networks), settings, iterations, progress)`` (and
        ``checkpoint=`` where ``checkpoint``), one SolveResult per seed, each seed's the run alone's; "" (the
        default): the solver trains one seed at a time.
    first_values : "module:function" of the values a run's histories begin with, called as
        ``first_values(data, params0, settings)`` -> {"J": J[0], and LySep's "J_S": J_S[0]} from the seeded
        network (``lysep verify`` ties a record to its seed by them); "" (the default): J[0] is the PINN loss
        of ``params0`` itself.
    on_host : a solver that does not stack runs on a stacked device anyway, one seed at a time on the host's
        CPU engine (rfls, rfm: one least-squares solve each, whose pivoted-QR / gelsd solve has no exact CuPy
        counterpart); False: a stacked device refuses it.
    """

    checkpoint: bool = False
    round_off_stable: bool = False
    seed_free: bool = False
    stacks: str = ""
    first_values: str = ""
    on_host: bool = False


class Solver(Protocol):
    def __call__(self, problem: Problem, data: TrainingData, params0: Params, settings: Any,
                 iterations: int, progress: Progress | None = None) -> SolveResult: ...


@dataclass(frozen=True)
class SolverDef:
    """A registered solver: its name, settings class, solve function and capabilities."""

    name: str
    Settings: type[SolverSettings]
    solve: Solver
    capabilities: Capabilities = Capabilities()


#: the values of the ``init`` setting (network.INITS): the initial network of a solver that trains or reuses it
Init = Literal["paper", "torch"]
INIT_DOC = ("initial network: paper (U(+-M^-1/2) in every layer, the default) | torch (PyTorch nn.Linear's "
            "default, U(+-fan_in^-1/2): fan_in = d (+1 with time) in the first layer, M after)")


def init_setting() -> Any:
    """The ``init`` field of a network solver's settings (pinn, lysep, rfls, pinn-adam, pinn-lbfgs, pinn-lm):
    ``paper`` by default and then left out of the record's settings (``omit_default``), so the records made
    before the setting existed match a spec that keeps it, and a run with ``torch`` is a different run."""
    return setting("paper", omit_default=True, doc=INIT_DOC)


def initial_network(settings: SolverSettings, n_in: int, L: int, M: int, seed: int) -> Params:
    """The seeded initial network of a run: :func:`network.init_params` with the settings' ``init`` ("paper"
    for a solver without one: rfm rescales that draw, poly ignores it)."""
    return network.init_params(n_in, L, M, seed, getattr(settings, "init", "paper"))


def copy_params(params: Params) -> Params:
    return [(W.copy(), b.copy()) for W, b in params]


__all__ = ["Capabilities", "Checkpoint", "INIT_DOC", "Init", "Progress", "SolveResult", "Solver", "SolverDef",
           "TrainingData", "copy_params", "diverged", "init_setting", "initial_network"]
