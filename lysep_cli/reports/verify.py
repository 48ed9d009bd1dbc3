"""`lysep verify`: check that archived runs reproduce, at the level the platform allows.

A run's numbers depend only on (spec, solver, L, M, seed, iterations) and on the platform that computed
them (its fingerprint, lysep_cli/store/fingerprint.py).  Three levels (docs/reproducibility.md):

exact
    The rerun is bit-identical.  Expected, and required, when the archived and the rerun fingerprints
    agree on every key that fixes the bits (:data:`~lysep_cli.store.fingerprint.EXACT_KEYS`).
tolerant (per run)
    Another platform: round-off differs, so the rerun passes when every compared number is within

        tol = max(TOL_FLOOR, kappa * eps)        (relative; eps = 2.2e-16)

    where kappa is the condition number the record knows: the output-layer least-squares system of rfls
    (``diagnostics.cond``) or of LySep's first W_L solve (``diagnostics.W3_system_cond_first``), and 1 for
    the gradient solvers.  For rfls and PINN (round-off stays at 1e-14 over 2000 iterations, measured)
    the comparison covers the final J, J_S, l2, every history entry and every weight.  LySep amplifies
    round-off from sweep to sweep (the hidden layers' steps are 1e-20 and below by the end), so only the
    first :data:`PREFIX` history entries are compared per run; its final values belong to the cell level.
    When kappa * eps > :data:`TOL_CAP` no per-run tolerance means anything (the 2-D rfls systems have
    kappa = 1e15..1e17): the run is "ill-conditioned", and its cell is judged at the statistical level.
statistical (per cell)
    Every seed of the cell rerun, and the rerun's final J and l2 compared with the archive's over the
    seeds (lysep_cli/reports/cellstats.py).

``lysep verify --weights`` does not train: :func:`reevaluate` checks the record's seal (the sha256 of its
JSON, :func:`lysep_cli.store.records.seal_of`: an edited final value fails), then computes J and the l2
error of each run's saved network from the archive's own files and compares them with the record's final
values: bit-identical on the platform that made them (no tolerance); elsewhere within min(WEIGHTS_CAP,
max(WEIGHTS_TOLERANCE, SENSITIVITY_FACTOR * delta)), where delta is how far J (l2) moves when every weight
and every datum is changed by one ulp (a fit whose residual is 1e-12 cancels terms of size 1, so another
BLAS kernel moves its J by up to 6e-3; a PINN run's J moves by 1e-15; studies/weights_spread.py).
A network whose difference exceeds the cap but stays within SENSITIVITY_FACTOR * delta (one ulp moves
its l2 by tens of percent: another platform cannot tell an edit from round-off) is "unverified", not "ok";
a difference beyond SENSITIVITY_FACTOR * delta fails.

A run that a tolerant rerun checked on a prefix of its history only, or that is ill-conditioned, is
"unverified": its cell is rerun at the statistical level when cheap, else it stays unverified (never "ok").
``--level`` is honoured or refused (:func:`check_level`), never switched.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from threadpoolctl import threadpool_limits

from lysep_cli.execution.runner import RunKey, execute, execute_stack
from lysep_cli.numerics.dataset import experiment_data, problem_of
from lysep_cli.numerics.metrics import finite_or_none, loss, relative_l2
from lysep_cli.numerics.network import Params
from lysep_cli.reports.cellstats import (ALPHA, CHAOTIC_SOLVERS, FLOOR, RATIO_BOUND, REGIME, SEED_BOUND,
                                         SEED_BOUND_SOLVERS, Cell, by_cell, cell_of, compare_archives,
                                         compare_cell)
from lysep_cli.reports import ties
from lysep_cli.solvers import solver_def, stacks
from lysep_cli.specs import BadInput, ExperimentSpec
from lysep_cli.store import records
from lysep_cli.store.fingerprint import differing, fingerprint, same_platform
from lysep_cli.store.schema import RunRecord

EPS = float(np.finfo(np.float64).eps)
#: the least per-run tolerance (4.5e5 ulps): PINN's reruns on other kernels differ by 1.3e-14 at most, the
#: first entries of pinn-lm's by 3e-12 (measured: studies/results/platform_spread.txt)
TOL_FLOOR = 1e-10
#: above this kappa * eps a per-run comparison is meaningless: the cell level judges
TOL_CAP = 1e-2
#: the saved network re-evaluated against the record (well conditioned: 6e-13 across platforms)
WEIGHTS_TOLERANCE = 1e-9
#: the re-evaluation's tolerance never exceeds this, however sensitive the record (docs/reproducibility.md)
WEIGHTS_CAP = 1e-2
SEAL_NOTES = {"broken": records.SEAL_BROKEN,
              "unsealed": "no seal covers its final values (written before lysep sealed records: "
                          "python -m lysep_cli.store.seal DIR)"}
#: the re-evaluation's tolerance over its one-ulp sensitivity: other BLAS kernels (Sandybridge, SkylakeX)
#: moved J and l2 by 1.5e-5 at most where the sensitivity was 5e-6 (rfm, parabolic-5d; measured)
SENSITIVITY_FACTOR = 100.0
#: history entries compared per run for the solvers that amplify round-off: the initial loss and the loss
#: after the first iteration (one least-squares solve for LySep, which kappa * eps bounds); from there
#: round-off compounds: at elliptic-2d-depth (4,50) seed 6 entries 0..2 agree within 1e-9 across
#: platforms and entry 3 differs by 4.6e-5 (kappa = 9e8; measured, docs/reproducibility.md)
PREFIX = 2

LEVELS = ("auto", "exact", "tolerant", "statistical")
#: the level "auto" reruns the whole cell of an ill-conditioned run when its seeds took at most this long
AUTO_CELL_SECONDS = 300.0


def _round_off_stable(solver: str) -> bool:
    """Whether the solver declares its reruns stay within round-off over the whole run (rfls, PINN:
    measured on other BLAS kernels and NumPy SIMD paths); the others are compared on a prefix."""
    try:
        return solver_def(solver).capabilities.round_off_stable
    except ValueError:  # a solver this lysep does not know
        return False


def condition(record: RunRecord) -> float:
    """kappa of the tolerant rule: the condition number of the record's output-layer system, else 1."""
    diag = record.diagnostics
    for key in ("cond", *sorted(k for k in diag if k.endswith("_system_cond_first"))):
        value = diag.get(key)
        if isinstance(value, (int, float)) and np.isfinite(value) and value >= 1:
            return float(value)
    return 1.0


def tolerance(record: RunRecord) -> float | None:
    """The per-run tolerance ``max(TOL_FLOOR, kappa * eps)``; None when it exceeds :data:`TOL_CAP`."""
    tol = max(TOL_FLOOR, condition(record) * EPS)
    return None if tol > TOL_CAP else tol


@dataclass(frozen=True)
class Check:
    """The outcome of one rerun (or re-evaluation).

    ``level``: "exact", "tolerant", "prefix" (tolerant on the first PREFIX history entries: unverified
    per run, its cell judges), "ill-conditioned" (no per-run verdict: the cell level judges), "weights"
    (the saved network re-evaluated: ``tol`` 0 on the platform that made the record) or "seal" (the
    record's seal broken or absent: fails).  ``max_rel`` / ``where``: the largest relative difference over the compared numbers and
    where it is; ``tol`` the tolerance applied; ``differs``: the fingerprint keys that differ.
    """

    record: RunRecord
    max_rel: float
    where: str
    identical: bool
    level: str = "exact"
    tol: float = 0.0
    differs: tuple[str, ...] = ()
    note: str = ""
    what: str = "rerun"

    @property
    def ok(self) -> bool:
        """Not a failure (an unverified run is not one either: see :attr:`unverified`)."""
        if self.identical:
            return True
        if self.level in ("exact", "seal"):
            return False
        if self.level in ("ill-conditioned", "round-off"):
            return True  # no per-run verdict: its cell is compared (cellstats), or the making platform
        return self.max_rel <= self.tol

    @property
    def unverified(self) -> bool:
        """Passed only what a per-run check can see of it: its cell must judge it (or it stays unverified)."""
        return not self.identical and (self.level in ("ill-conditioned", "round-off")
                                       or (self.level == "prefix" and self.ok))

    def line(self) -> str:
        r = self.record
        cell = f"{r.experiment} {r.solver} L{r.L}-M{r.M} seed {r.seed}"
        if self.identical:
            return f"ok        {cell}: exact, " + ("bit-identical" if self.what == "rerun" else
                                                   "J and l2 of the saved weights bit-identical to the record")
        verdict = "unverified" if self.unverified else "ok" if self.ok else "MISMATCH"
        if self.level == "seal":
            text = f"{verdict:<9} {cell}: {self.note}"
            return text
        if self.level == "exact":
            text = (f"{verdict:<9} {cell}: exact level (same platform and numerics), yet largest relative "
                    f"difference {self.max_rel:.3e} ({self.where})")
        elif self.level == "ill-conditioned":
            text = (f"{'cell':<9} {cell}: kappa*eps = {condition(r) * EPS:.1e} > {TOL_CAP:g}, no per-run "
                    f"tolerance (difference {self.max_rel:.3e}, {self.where}): judged with its cell")
        elif self.level == "weights" and self.tol == 0:
            text = (f"{verdict:<9} {cell}: weights, exact (the platform that made the record: bit-identical "
                    f"expected), relative difference {self.max_rel:.3e} ({self.where})")
        elif self.level == "round-off":
            text = (f"{verdict:<9} {cell}: weights, relative difference {self.max_rel:.3e} ({self.where}) above "
                    f"the cap {self.tol:.1e}")
        else:
            level = "tolerant" if self.level == "prefix" else self.level
            text = (f"{verdict:<9} {cell}: {level}, largest relative difference {self.max_rel:.3e} "
                    f"({self.where}) vs tolerance {self.tol:.1e}")
        if self.note:
            text += f"; {self.note}"
        if self.differs and not self.ok:
            text += "\n          platform differs: " + "; ".join(self.differs)
        return text


def nominal_cost(record: RunRecord) -> float:
    """What a rerun of ``record`` costs by its cell alone, in arbitrary units (never its recorded seconds,
    which a record could misstate): n_train x the network's parameters x the iterations its history holds (a
    diverged run stops early, and so does its rerun; the history's length is tied), and a one-shot solver's
    one least-squares solve as n_train x M^2."""
    n_in = record.d + (record.pde != "elliptic")
    parameters = n_in * record.M + record.M + (record.L - 2) * (record.M ** 2 + record.M) + record.M + 1
    try:
        one_shot = solver_def(record.solver).Settings.coerce(record.settings).history_length(record.iterations) <= 2
    except (ValueError, TypeError):
        one_shot = False
    steps = max(len(record.history["J"]) - 1, 1)
    return float(record.n_train) * (record.M ** 2 if one_shot else parameters * steps)


#: recorded CPU seconds beyond this factor either way of what its size and iterations predict are flagged
TIMING_BAND = 10.0
#: ... when they also differ from the prediction by more than this (a 0.01 s run's fixed costs are not a forgery)
TIMING_FLOOR = 1.0


def timing_flags(pool: list[RunRecord]) -> list[str]:
    """One "flagged" line per record whose recorded CPU seconds are outside :data:`TIMING_BAND` either way (and
    :data:`TIMING_FLOOR` seconds) of what :func:`nominal_cost` predicts at the median rate (CPU seconds per
    unit) of the runs of its experiment and solver in ``pool``: a time edited x10 (it moves compare's
    "s / run", ``--dry-run`` estimates and status) shows; a flag, not a failure (a loaded machine also slows
    a run).  0 flags on the committed archives (results/paper, results/harder*)."""
    rates: dict[tuple[str, str], list[float]] = {}
    for r in pool:
        rates.setdefault((r.experiment, r.solver), []).append(_cpu(r) / nominal_cost(r))
    out = []
    for r in pool:
        group = rates[(r.experiment, r.solver)]
        if len(group) < 2:
            continue
        predicted = nominal_cost(r) * float(np.median(group))
        ratio = _cpu(r) / predicted
        if not 1 / TIMING_BAND <= ratio <= TIMING_BAND and abs(_cpu(r) - predicted) > TIMING_FLOOR:
            out.append(f"{'flagged':<9} {ties.label(r)}: recorded CPU {_cpu(r):.3g} s is x{ratio:.3g} what its size "
                       f"and iterations predict at the median rate of its experiment's {r.solver} runs "
                       f"(band x{TIMING_BAND:g} either way)")
    return out


def _cpu(record: RunRecord) -> float:
    cpu = record.diagnostics.get("cpu_seconds")
    return float(cpu) if isinstance(cpu, (int, float)) and cpu > 0 else max(float(record.seconds), 1e-9)


def choose(candidates: list[RunRecord], sample: int | None, seed: int, cheapest: bool) -> list[RunRecord]:
    """``sample`` runs (all when None): the cheapest by :func:`nominal_cost`, or a random sample drawn with
    ``seed``; returned in cell order."""
    if sample is None or sample >= len(candidates):
        return list(candidates)
    if cheapest:
        picked = sorted(candidates, key=lambda r: (nominal_cost(r), r.cell))[:sample]
    else:
        idx = np.random.default_rng(seed).choice(len(candidates), size=sample, replace=False)
        picked = [candidates[i] for i in idx]
    return sorted(picked, key=lambda r: r.cell)


def _rel(new: float | None, old: float | None) -> float:
    if new is None or old is None:  # non-finite values are stored as None: they must agree
        return 0.0 if new is None and old is None else float("inf")
    if new == old:
        return 0.0
    return abs(new - old) / abs(old) if old != 0 else float("inf")


@dataclass
class _Seen:
    """Compared numbers: (relative difference, label, bit-equal)."""

    items: list[tuple[float, str, bool]] = field(default_factory=list)

    def add(self, rel: float, label: str, same: bool) -> None:
        self.items.append((rel, label, same))

    def worst(self) -> tuple[float, str, bool]:
        rel, label, _ = max(self.items, key=lambda s: s[0])
        return rel, label, all(s[2] for s in self.items)


def rerun_differences(archived: RunRecord, archived_params: Params, rerun: RunRecord, rerun_params: Params,
                prefix: int | None = None) -> tuple[float, str, bool]:
    """(largest relative difference, where, bit-identical) between an archived run and its rerun: over
    the final values, the histories and the weights, or (``prefix``) over the first ``prefix`` history
    entries only (bit-identity is still judged on everything)."""
    seen, everything = _Seen(), _Seen()
    for key in ("J", "J_S", "l2"):
        new, old = getattr(rerun.final, key), getattr(archived.final, key)
        everything.add(_rel(new, old), f"final {key}", new == old)
    for name in sorted(set(archived.history) | set(rerun.history)):
        old, new = archived.history.get(name), rerun.history.get(name)
        if old is None or new is None or len(old) != len(new):
            same = old is None and new is None
            (seen if prefix is not None else everything).add(0.0 if same else float("inf"),
                                                             f"history {name} (length)", same)
            continue
        rels = [_rel(x, y) for x, y in zip(new, old)]
        k = int(np.argmax(rels))
        everything.add(rels[k], f"history {name}[{k}]", new == old)
        if prefix is not None:
            head = rels[:prefix]
            k = int(np.argmax(head))
            seen.add(head[k], f"history {name}[{k}]", new[:prefix] == old[:prefix])
    if len(archived_params) != len(rerun_params):
        everything.add(float("inf"), "number of layers", False)
    for l, ((Wa, ba), (Wn, bn)) in enumerate(zip(archived_params, rerun_params), start=1):
        for label, new, old in ((f"W{l}", Wn, Wa), (f"b{l}", bn, ba)):
            if new.shape != old.shape:
                everything.add(float("inf"), f"weights {label} (shape)", False)
                continue
            norm, diff = float(np.linalg.norm(old)), float(np.linalg.norm(new - old))
            rel = diff / norm if norm > 0 else (0.0 if diff == 0 else float("inf"))
            everything.add(rel, f"weights {label}", bool(np.array_equal(new, old)))
    worst_all = everything.worst()
    if prefix is None or not seen.items:
        return worst_all
    rel, where, _ = seen.worst()
    return rel, where, worst_all[2]


def judge(record: RunRecord, archived_params: Params, rerun: RunRecord, rerun_params: Params,
          level: str = "auto") -> Check:
    """The verdict on one rerun at ``level`` (auto: exact when the platforms agree, else tolerant)."""
    differs = tuple(differing(record.versions, rerun.versions))
    worst, where, identical = rerun_differences(record, archived_params, rerun, rerun_params)
    if identical:
        return Check(record, 0.0, where, True, "exact", differs=differs)
    if level == "exact" or (level == "auto" and same_platform(record.versions, rerun.versions)):
        return Check(record, worst, where, False, "exact", differs=differs)
    tol = tolerance(record)
    if tol is None:
        return Check(record, worst, where, False, "ill-conditioned", differs=differs)
    if _round_off_stable(record.solver):
        return Check(record, worst, where, False, "tolerant", tol, differs)
    head, head_where, _ = rerun_differences(record, archived_params, rerun, rerun_params, prefix=PREFIX)
    return Check(record, head, head_where, False, "prefix", tol, differs,
                 note=f"first {PREFIX} entries only ({record.solver} amplifies round-off; final values differ by "
                      f"{worst:.1e}: its cell judges them)")


def rerun(spec: ExperimentSpec, record: RunRecord) -> tuple[RunRecord, Params]:
    """Train the archived run again (same spec, key and iterations); no file written.  A run of the stacked
    engine is rerun on its device when that device can run here (a stack of one seed: a seed's numbers do
    not depend on its stack, docs/gpu.md), else on the CPU engine."""
    from lysep_cli.accel import backend

    key = RunKey(record.solver, record.L, record.M, record.seed)
    device = record.versions.get("device")
    if device in backend.STACKED_DEVICES and stacks(record.solver):
        try:
            backend.resolve(device)
        except backend.DeviceUnavailable:
            pass
        else:
            return execute_stack(spec, [key], record.iterations, device)[0]
    return execute(spec, key, record.iterations)


def verify(spec: ExperimentSpec, record: RunRecord, results_dir: str | Path, level: str = "auto") -> Check:
    """Rerun one archived run and judge it at ``level``."""
    _, npz_path = records.record_paths(results_dir, record.experiment, record.solver, record.L, record.M,
                                       record.seed)
    new, params = rerun(spec, record)
    return judge(record, records.load_params(npz_path), new, params, level)


def reevaluate(spec: ExperimentSpec, record: RunRecord, results_dir: str | Path, exact: bool,
               data: tuple[np.ndarray, np.ndarray] | None = None) -> Check:
    """The record's seal, then J (`eq:J-elliptic` & co.) and the relative l2 error of the saved network, from
    the archive's files alone (the record's weights NPZ, the experiment's data.npz; ``data``: (Z_train,
    Z_test) in its place, the spec's own when data.npz is not), against the record's
    final J, l2: bit for bit when ``exact`` (the platform that made the record), else within
    min(WEIGHTS_CAP, max(WEIGHTS_TOLERANCE, SENSITIVITY_FACTOR * delta)) (module docstring)."""
    state = records.seal_state(record)
    if state != "sealed":
        return Check(record, math.inf, "seal", False, "seal", what="weights", note=SEAL_NOTES[state])
    _, npz_path = records.record_paths(results_dir, record.experiment, record.solver, record.L, record.M,
                                       record.seed)
    params = records.load_params(npz_path)
    Z_train, Z_test = records.load_data(results_dir, record.experiment) if data is None else data
    problem = problem_of(spec)
    coef, Y = problem.coefficients(Z_train), problem.rhs(Z_train)
    with threadpool_limits(limits=1), np.errstate(all="ignore"):  # as the runner computed them
        now = (finite_or_none(loss(params, Z_train, coef, Y)),
               finite_or_none(relative_l2(problem, params, Z_test)))
    recorded = (record.final.J, record.final.l2)
    if now == recorded:
        return Check(record, 0.0, "final J", True, "weights", what="weights")
    rels = [_rel(a, b) for a, b in zip(now, recorded)]
    if exact:
        k = max(range(2), key=lambda i: rels[i])
        return Check(record, rels[k], ("final J", "final l2")[k], False, "weights", 0.0, what="weights")
    moved = _ulp_sensitivity(problem, params, Z_train, coef, Y, Z_test, now)
    tols = [weights_tolerance(m) for m in moved]
    k = max(range(2), key=lambda i: rels[i] / tols[i])
    where = ("final J", "final l2")[k]
    uncapped = [max(WEIGHTS_TOLERANCE, SENSITIVITY_FACTOR * m) for m in moved]
    if rels[k] > tols[k] and all(r <= t for r, t in zip(rels, uncapped)):
        # beyond the cap yet within the round-off this network amplifies: no platform but the one that
        # made it can judge it (there, bit for bit); reported "unverified", never "ok"
        return Check(record, rels[k], where, False, "round-off", tols[k], what="weights",
                     note=f"one ulp moves it by {moved[k]:.1e}: beyond what another platform can judge "
                          "(bit for bit on the platform that made the record)")
    capped = SENSITIVITY_FACTOR * moved[k] > WEIGHTS_CAP
    return Check(record, rels[k], where, False, "weights", tols[k], what="weights",
                 note=f"capped: one ulp moves it by {moved[k]:.1e}" if capped else "")


def weights_tolerance(delta: float) -> float:
    """The re-evaluation's tolerance on another platform, for a one-ulp sensitivity ``delta``."""
    return min(WEIGHTS_CAP, max(WEIGHTS_TOLERANCE, SENSITIVITY_FACTOR * delta))


def _ulp_sensitivity(problem: Any, params: Params, Z_train: np.ndarray, coef: Any, Y: np.ndarray,
                     Z_test: np.ndarray, base: tuple[float | None, float | None]) -> tuple[float, float]:
    """How far (J, l2) move, relatively, when every weight and datum is changed by one ulp (random signs,
    fixed; the largest of two draws): the size of the round-off another platform adds."""
    rng = np.random.default_rng(0)
    worst = [0.0, 0.0]
    for _ in range(2):
        ulp = lambda a: a * (1.0 + EPS * rng.choice((-1.0, 1.0), np.shape(a)))  # noqa: E731
        q = [(ulp(W), ulp(b)) for W, b in params]
        with threadpool_limits(limits=1), np.errstate(all="ignore"):
            moved = (finite_or_none(loss(q, Z_train, coef, ulp(Y))),
                     finite_or_none(relative_l2(problem, q, Z_test)))
        for i in range(2):
            if base[i] is not None and moved[i] is not None:
                worst[i] = max(worst[i], _rel(moved[i], base[i]))
    return worst[0], worst[1]


def candidates(loaded_records: Iterable[RunRecord]) -> list[RunRecord]:
    """Runs that can be verified: every record the selection kept (status ok or diverged)."""
    return sorted(loaded_records, key=lambda r: r.cell)


# ---------------------------------------------------------------------------------------------
# The command's passes: saved weights, reruns, cells, another archive.

Echo = Callable[[str], None]


def header(archived: Iterable[RunRecord]) -> str:
    """One line: this platform, and how the archive's records compare with it."""
    here = fingerprint()
    pool = list(archived)
    same = sum(same_platform(r.versions, here) for r in pool)
    unrecorded = sum("numerics" not in r.versions for r in pool)
    text = (f"this machine: NumPy {here.get('numpy')} SIMD {here.get('numpy_simd')}, BLAS kernel "
            f"{here.get('blas_core', '?')}, numerics id {here.get('numerics')}; of the {len(pool)} record(s), "
            f"{same} made on this platform (exact level)")
    if unrecorded:
        text += f", {unrecorded} with no platform fingerprint (made before lysep recorded one)"
    return text


def weights_pass(specs: dict[str, ExperimentSpec], pool: list[RunRecord], results: Path,
                 echo: Echo, quiet: bool, level: str = "auto", jobs: int = 1) -> tuple[int, int]:
    """Check the seal and re-evaluate the saved network of every run in ``pool``: bit for bit on the
    platform that made it (or everywhere with ``level`` "exact"), else within its tolerance ("tolerant":
    everywhere); returns how many fail and how many stay unverified.  With ``quiet`` only failures and a summary are echoed."""
    here = fingerprint()
    bad = exact_n = unverified = 0
    worst = 0.0
    data: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
    for name in sorted({r.experiment for r in pool}):
        line = data_file_problem(specs[name], results)
        data[name] = None if line is None else spec_points(specs[name])
        if line is not None:
            echo(line)
            bad += 1
    sealed = []  # a record whose seal is broken is named once, by its seal, and not tied
    for rec in pool:
        exact = level == "exact" or (level == "auto" and same_platform(rec.versions, here))
        check = reevaluate(specs[rec.experiment], rec, results, exact, data[rec.experiment])
        sealed += [rec] if check.level != "seal" else []
        bad += not check.ok
        unverified += check.unverified
        exact_n += exact
        worst = max(worst, check.max_rel if check.level != "seal" else 0.0)
        if not quiet or not check.ok or check.unverified:
            echo(check.line())
    untied, loose = ties.tie_failures(specs, sealed, results, lambda r: tie_rule(r, here), jobs)
    for line in untied:
        echo(line)
    for r in loose:
        echo(f"{'unverified':<9} {ties.label(r)}: made on another platform and ill-conditioned (kappa*eps = "
             f"{condition(r) * EPS:.1e}): its first iterations differ here beyond {ties.SEED_TOLERANCE:g}, and no "
             "tolerance can say whether round-off explains it")
    bad += len(untied)
    unverified += len(loose)
    flags = timing_flags(pool)
    for line in flags:
        echo(line)
    if quiet:
        echo(f"ties: {len(untied)} record(s) not tied to their seed, size, length, solver and settings, or cell"
             if untied else
             f"ties: every record's first J (and J_S) is its seed's, its first {ties.TIE_ITERATIONS} iterations its "
             f"solver's with its settings (one-shot solvers: the whole run), its network of its size, its history "
             f"of its length, no two seeds of a cell the same"
             + (f" ({len(loose)} tied to their seed only)" if loose else ""))
        echo(f"weights: {len(pool) - bad - unverified} of {len(pool)} saved network(s) give their record's J and "
             f"l2{f' ({unverified} unverified: beyond the cap, within their round-off)' if unverified else ''}, seals "
             f"intact ({exact_n} bit for bit on the platform that made them; elsewhere within "
             f"{WEIGHTS_TOLERANCE:g}, or {SENSITIVITY_FACTOR:g} x the run's one-ulp sensitivity, at most "
             f"{WEIGHTS_CAP:g}; largest relative difference {worst:.1e})")
    return bad, unverified


def tie_rule(record: RunRecord, here: dict[str, str]) -> tuple[float, int | None] | None:
    """How a record's first iterations are compared with their recomputation here: (relative tolerance,
    history entries compared).  On the platform that made it: :data:`ties.SEED_TOLERANCE`, every entry made
    (bit-identical expected); elsewhere the per-run tolerance (:func:`tolerance`), on the first
    :data:`PREFIX` entries for a solver that amplifies round-off; None when no per-run tolerance means
    anything (ill-conditioned)."""
    if same_platform(record.versions, here):
        return ties.SEED_TOLERANCE, None
    tol = tolerance(record)
    if tol is None:
        return None
    return max(ties.SEED_TOLERANCE, tol), None if _round_off_stable(record.solver) else PREFIX


def data_file_problem(spec: ExperimentSpec, results: Path) -> str | None:
    """One MISMATCH line when the experiment's data.npz is not the data set its spec makes (changed,
    damaged or missing), else None: the data file named once, not every run of it."""
    state = records.check_data(results, spec.name, experiment_data(spec).sha256)
    if state == "ok":
        return None
    what = {"missing": "missing", "corrupt": "unreadable"}.get(state, "another data set than the spec's")
    return (f"{'MISMATCH':<9} {results}/{spec.name}/data.npz: {what} (the records' data_sha256 is the spec's); "
            f"its runs are re-evaluated on the spec's own points")


def spec_points(spec: ExperimentSpec) -> tuple[np.ndarray, np.ndarray]:
    """(Z_train, Z_test) (n_in, N) of the spec's data set: what a correct data.npz holds."""
    data = experiment_data(spec)
    return data.Z_train, data.Z_test


def left_out_lines(left_out: Iterable[tuple[RunRecord, str]]) -> list[str]:
    """One MISMATCH line per record the selection left out (other settings, iterations, data set...):
    never dropped without a word (lysep_cli/reports/selection.py)."""
    return [f"{'MISMATCH':<9} {ties.label(r)}: not made as the spec asks ({why}): left out" for r, why in left_out]


def judge_cells(specs: dict[str, ExperimentSpec], cells: list[Cell], pool: list[RunRecord], echo: Echo,
                note: Callable[[Any], str] = lambda c: "", done: dict[tuple, RunRecord] | None = None
                ) -> list[Any]:
    """Rerun every archived seed of each cell and compare the sets (cellstats), one line each (``note``
    appended); ``done``: reruns already made, by record cell."""
    archived = by_cell(pool)
    done = done or {}
    out = []
    for cell in cells:
        runs = archived.get(cell, [])
        reruns = [done[r.cell] if r.cell in done else rerun(specs[r.experiment], r)[0] for r in runs]
        comparison = compare_cell(cell, runs, reruns)
        echo(comparison.line() + note(comparison))
        out.append(comparison)
    return out


def cells_pass(specs: dict[str, ExperimentSpec], cells: list[Cell], pool: list[RunRecord], echo: Echo,
               allow_partial: bool = False) -> int:
    """:func:`judge_cells`; returns the cells that differ, or are PARTIAL (unless ``allow_partial``)."""
    allowed = "  [allowed: --allow-partial]" if allow_partial else ""
    judged = judge_cells(specs, cells, pool, echo, lambda c: allowed if c.verdict == "PARTIAL" else "")
    return sum(c.verdict == "DIFFERS" or (c.verdict == "PARTIAL" and not allow_partial) for c in judged)


def runs_pass(specs: dict[str, ExperimentSpec], picked: list[RunRecord], pool: list[RunRecord],
              results: Path, level: str, echo: Echo) -> tuple[int, int, Counter]:
    """Rerun each picked run at ``level``; a run no per-run check can verify (ill-conditioned, or judged on
    a prefix of its history) sends its cell to the statistical level when the cell's seeds took at most
    AUTO_CELL_SECONDS, and stays unverified otherwise, or when its cell is PARTIAL (too few seeds to
    judge).  Returns (failures, unverified, levels used)."""
    bad, levels = 0, Counter()
    escalate: list[Cell] = []
    done: dict[tuple, RunRecord] = {}
    pending: list[Cell] = []  # the cell of each unverified run
    for rec in picked:
        new, params = rerun(specs[rec.experiment], rec)
        _, npz_path = records.record_paths(results, *rec.cell)
        check = judge(rec, records.load_params(npz_path), new, params, level)
        done[rec.cell] = new
        bad += not check.ok
        levels[check.level] += 1
        echo(check.line())
        if check.unverified:
            escalate += [cell_of(rec)] * (cell_of(rec) not in escalate)
            pending.append(cell_of(rec))
    seconds = {c: sum(r.seconds for r in pool if cell_of(r) == c) for c in escalate}
    open_cells = [c for c in escalate if seconds[c] > AUTO_CELL_SECONDS]
    for cell in open_cells:
        e, s, L, M = cell
        echo(f"unverified {e} {s} L{L}-M{M}: judge its cell with `lysep verify {e} --cells {s}:{L}x{M}` (about "
             f"{seconds[cell]:.0f} s of recorded run time; not rerun automatically)")
    cheap = [c for c in escalate if seconds[c] <= AUTO_CELL_SECONDS]
    if cheap:
        echo(f"statistical level for {len(cheap)} cell(s) of runs no per-run check can verify (every seed rerun):")
        judged = judge_cells(specs, cheap, pool, echo, lambda c: "  [its runs stay unverified]"
                             if c.verdict == "PARTIAL" else "", done)
        bad += sum(c.verdict == "DIFFERS" for c in judged)
        open_cells += [c.cell for c in judged if c.verdict == "PARTIAL"]
        levels["statistical"] += len(cheap)
    return bad, sum(c in open_cells for c in pending), levels


@dataclass(frozen=True)
class VerifyRequest:
    """What ``lysep verify`` was asked (lysep_cli/cli.py checks the options)."""

    specs: dict[str, ExperimentSpec]
    pool: list[RunRecord]
    """the archived runs that may be checked (the experiments and solvers asked for)"""
    results: Path
    sample: int | None = 3
    """runs to rerun (None: all)"""
    seed: int = 0
    cheapest: bool = False
    level: str = "auto"
    cells: set[tuple[str, int, int]] | None = None
    """(solver, L, M) to rerun whole (statistical level, or run by run at level exact / tolerant)"""
    allow_partial: bool = False
    left_out: tuple[tuple[RunRecord, str], ...] = ()
    """records of the experiments made otherwise than the spec asks (Selection.left_out): each fails"""
    allow_unverified: bool = False
    """runs no check could verify at the level asked are reported, not failed"""
    jobs: int = 1
    """worker processes for the ties (ties.tie_failures)"""
    weights_pass: bool = True
    """re-evaluate and tie every run of ``pool`` before the reruns (False: ``--reruns-only``)"""

    def unverified_cost(self, n: int, echo: Echo) -> int:
        """The failures ``n`` unverified runs count for (0 with ``--allow-unverified``), said in one line."""
        if n:
            echo(f"{n} run(s) unverified: no check here could verify them at the level asked "
                 + ("(allowed: --allow-unverified)" if self.allow_unverified else
                    "(a failure; --allow-unverified lets them pass)"))
        return 0 if self.allow_unverified else n


def check_level(level: str, weights: bool, against: bool) -> None:
    """``--level`` is honoured or refused (BadInput), never switched: reruns honour every level (with
    ``--cells``, exact and tolerant judge each seed's rerun), ``--weights`` all but statistical,
    ``--against`` and ``--save-finals`` (no reruns) only auto."""
    if level == "auto":
        return
    if against:
        raise BadInput(f"--level {level}: --against and --save-finals rerun nothing (drop --level)")
    if weights and level == "statistical":
        raise BadInput("--level statistical: --weights re-evaluates saved networks one by one "
                       "(auto, exact or tolerant)")


def run_verify(req: VerifyRequest, echo: Echo, say: Echo) -> int:
    """The weights pass over ``req.pool``, then the reruns (runs or whole cells); returns how many checks
    failed.  ``say`` (stderr) announces, ``echo`` (stdout) gives one line per run or cell."""
    say(header(req.pool))
    if req.weights_pass:
        bad, loose = weights_pass(req.specs, req.pool, req.results, echo, quiet=True,
                                  level=req.level if req.level in ("exact", "tolerant") else "auto", jobs=req.jobs)
    else:
        bad, loose = 0, 0
        say(f"weights pass skipped (--reruns-only): the {len(req.pool)} saved network(s) are not re-evaluated or tied "
            "here; only the reruns below check them")
    bad += _left_out(req, echo) + req.unverified_cost(loose, echo)
    in_cells = [] if req.cells is None else [r for r in req.pool if (r.solver, r.L, r.M) in req.cells]
    if req.level == "statistical" or (req.cells is not None and req.level == "auto"):
        if req.cells is not None:
            cells = sorted({cell_of(r) for r in in_cells})
        else:
            cells = sorted({cell_of(r) for r in choose(req.pool, req.sample, req.seed, req.cheapest)})
        runs = [r for r in req.pool if cell_of(r) in cells]
        say(f"statistical level: {len(cells)} cell(s), {len(runs)} run(s) rerun (about "
            f"{sum(r.seconds for r in runs):.0f} s of recorded run time)")
        failed = cells_pass(req.specs, cells, req.pool, echo, req.allow_partial)
        echo(f"{len(cells) - failed} of {len(cells)} cell(s) reproduce the archive (level statistical)")
        return bad + failed + (not cells)
    picked = in_cells if req.cells is not None else choose(req.pool, req.sample, req.seed, req.cheapest)
    say(f"rerunning {len(picked)} of {len(req.pool)} archived run(s) under {req.results}/ (about "
        f"{sum(r.seconds for r in picked):.0f} s of recorded run time)")
    failed, unverified, levels = runs_pass(req.specs, picked, req.pool, req.results, req.level, echo)
    used = ", ".join(f"{k} {n}" for k, n in sorted(levels.items()))
    echo(f"{len(picked) - failed - unverified} of {len(picked)} run(s) reproduce the archive (levels: {used})"
         + (f"; {failed} do not" if failed else "")
         + (f"; {unverified} unverified (only their cells can judge them)" if unverified else ""))
    return bad + failed + req.unverified_cost(unverified, echo) + (not picked)


def weights_only(req: VerifyRequest, echo: Echo, say: Echo) -> int:
    """``--weights``: the saved networks of the chosen runs re-evaluated, one line each."""
    picked = choose(req.pool, req.sample, req.seed, req.cheapest)
    say(f"re-evaluating the saved weights of {len(picked)} of {len(req.pool)} archived run(s) under {req.results}/")
    bad, unverified = weights_pass(req.specs, picked, req.results, echo, quiet=False, level=req.level, jobs=req.jobs)
    left = _left_out(req, echo)
    echo(f"{max(len(picked) - bad - unverified, 0)} of {len(picked)} run(s) reproduce the archive"
         + (f"; {bad} do not" if bad else "") + (f"; {unverified} unverified" if unverified else "")
         + (f"; {left} record(s) left out: made otherwise than the spec asks" if left else ""))
    return bad + left + req.unverified_cost(unverified, echo)


def _left_out(req: VerifyRequest, echo: Echo) -> int:
    """Name every record left out for being made otherwise than the spec asks; how many."""
    for line in left_out_lines(req.left_out):
        echo(line)
    return len(req.left_out)


def other_archive(path: Path, chosen: list[ExperimentSpec], iterations: int | None,
                  solvers: set[str] | None, warn: Echo) -> tuple[list[Any], int]:
    """The runs ``--against PATH`` names, and how many of its record files do not read: the records under
    a results directory that match the spec, or the rows of a finals file (lysep_cli/store/finals.py: the
    final values alone, kept when an archive is regenerated) of the chosen experiments at their spec's
    iterations (or ``iterations``)."""
    from lysep_cli.reports.selection import load_selection
    from lysep_cli.store.finals import read_finals

    if path.is_file():
        wanted = {s.name: iterations or s.iterations for s in chosen}
        rows, unreadable = [r for r in read_finals(path) if wanted.get(r.experiment) == r.iterations], 0
    else:
        sel = load_selection(path, chosen, iterations, warn)
        for line in left_out_lines(sel.left_out):
            warn(line)
        rows, unreadable = sel.records + sel.extra_seeds, sum(sel.invalid.values()) + len(sel.left_out)
    return [r for r in rows if solvers is None or r.solver in solvers], unreadable


@dataclass(frozen=True)
class Against:
    """``--against``: the other side, and what may be let through."""

    other: list[Any]
    """its records or finals rows (:func:`other_archive`)"""
    path: Path
    unreadable: tuple[int, int] = (0, 0)
    """record files that do not read: (reference, other)"""
    common_seeds: bool = False
    accepted: frozenset[tuple[str, str, int, int]] = frozenset()
    """cells known to differ, named by ``--accept``"""
    allow_partial: bool = False
    """missing seeds and cells, unreadable records and too few seeds reported, not failed"""
    specs: dict[str, ExperimentSpec] | None = None
    """the experiments: the records of both sides are tied to their seeds, sizes and lengths (ties.py)"""
    allow_unverified: bool = False
    """records no tie could judge here are reported, not failed"""
    jobs: int = 1
    """worker processes for the ties"""


def _name(cell: Cell) -> str:
    e, s, L, M = cell
    return f"{e} {s} L{L}-M{M}"


def against(reference: list[RunRecord], req: Against, results: Path, echo: Echo, say: Echo) -> int:
    """``--against PATH``: two archives cell by cell (cellstats), no reruns.  Returns the failures: cells
    that differ and are not accepted, accepted cells that do not differ (a stale acceptance), and, unless
    ``allow_partial``, every incomplete part (a PARTIAL cell, a cell on one side only, an unreadable
    record); 1 when no cell is in both."""
    untied: list[str] = []
    loose: list[str] = []
    if req.specs is not None:  # both sides' records tied to their runs, and their data files the spec's
        sides = [(results, reference)] + ([] if req.path.is_file() else [(req.path, req.other)])
        for root, runs in sides:
            names = sorted({r.experiment for r in runs} & set(req.specs))
            untied += [line for line in (data_file_problem(req.specs[n], root) for n in names) if line]
            here = fingerprint()
            failed, unsure = ties.tie_failures(req.specs, runs, root, lambda r: tie_rule(r, here), req.jobs)
            untied += failed
            loose += [f"{'unverified':<9} {ties.label(r)}: ill-conditioned, made on another platform, its first "
                      "iterations differ here: tied to its seed only" for r in unsure]
    for line in untied + loose:
        echo(line)
    compared, only_here, only_there = compare_archives(reference, req.other, req.common_seeds)
    there = str(req.path) if req.path.is_file() else f"{req.path}/"
    say(f"cell by cell: {results}/ (reference) against {there}; same seeds: per seed ({', '.join(sorted(SEED_BOUND_SOLVERS))}: "
        f"within {SEED_BOUND:g}) or Wilcoxon signed-rank on the log ratios; other seeds and "
        f"{', '.join(sorted(CHAOTIC_SOLVERS))}: Mann-Whitney; differs when p < {ALPHA:g} beyond x{1 + FLOOR:g}, a "
        f"geometric or arithmetic mean moves outside [1/{RATIO_BOUND:g}, {RATIO_BOUND:g}], or a seed's J "
        f"moves {REGIME:g}x (docs/reproducibility.md)")
    verdicts = Counter(c.verdict for c in compared)
    differing = {c.cell for c in compared if c.verdict == "DIFFERS"}
    for c in compared:
        echo(c.line() + ("  [accepted: --accept]" if c.cell in differing & req.accepted else "")
             + ("  [allowed: --allow-partial]" if c.verdict == "PARTIAL" and req.allow_partial else ""))
    for cells, side in ((only_here, f"{results}/ (reference)"), (only_there, there)):
        for cell in cells:
            echo(f"{'MISSING':<9} {_name(cell)}: only in {side}")
    stale = sorted(req.accepted - differing)
    for cell in stale:
        echo(f"STALE     {_name(cell)}: named by --accept but "
             + ("it does not differ" if any(c.cell == cell for c in compared) else "not compared (no runs on both sides)"))
    took = len(differing & req.accepted)
    missing = len(only_here) + len(only_there)
    incomplete = verdicts["PARTIAL"] + missing + sum(req.unreadable)
    parts = [f"{verdicts['agrees']} of {len(compared)} cell(s) agree"]
    if differing:
        parts.append(f"{len(differing)} differ" + (f" ({took} accepted with --accept)" if took else ""))
    if verdicts["PARTIAL"]:
        parts.append(f"{verdicts['PARTIAL']} partial")
    if missing:
        parts.append(f"{len(only_here)} cell(s) only in {results}/, {len(only_there)} only in {there}")
    if any(req.unreadable):
        parts.append(f"{req.unreadable[0]} unreadable record(s) in {results}/, {req.unreadable[1]} in {there}")
    if stale:
        parts.append(f"{len(stale)} --accept cell(s) do not differ")
    if untied:
        parts.append(f"{len(untied)} record(s) or data file(s) not tied to their run or spec")
    if loose:
        parts.append(f"{len(loose)} record(s) unverified" + (" (allowed: --allow-unverified)" if req.allow_unverified
                                                              else " (--allow-unverified lets them pass)"))
    if incomplete:
        parts.append("incomplete parts " + ("allowed by --allow-partial" if req.allow_partial else
                                            "fail (--allow-partial lets them pass)"))
    echo("; ".join(parts))
    if not compared:
        return 1
    return (len(differing) - took + len(stale) + len(untied) + (0 if req.allow_unverified else len(loose))
            + (0 if req.allow_partial else incomplete))
