"""Kernel launches and host syncs of the stacked engine, counted on the CPU, and the GPU time they predict.

    python benchmarks/launch_count.py [--cells elliptic-2d:3x30,...] [--seeds 10] [--out FILE.md]
        [--baseline OLD.json]      # writes FILE.md and FILE.json; before/after columns against OLD.json
        [--trial-batch K]          # LySep's trial batch (default: CuPy's, accel/trials.py)
    python benchmarks/launch_count.py --trial-batches 1,2,3 --cells ...   # LySep per trial batch, compared
                                   # (results/launch_count_trial_batch.{md,json})

On a GPU the stacked engine at the paper's sizes is bound by kernel launches and host syncs rather than by
FLOPs (benchmarks/results/gpu_design_check.txt, section 3: a W_2 trial ~1.1-1.2 ms for one seed at every
cell).  This script runs the real stacked engine (lysep_cli/accel, ``xp = numpy``) through a counting
array namespace, :class:`CountingNamespace`, whose arrays (:class:`CountedArray`, an ndarray subclass)
count what would be a kernel on CuPy:

- a launch: every call of an xp function that computes (a ufunc, matmul, einsum, a reduction, where,
  stack, zeros / full (a fill), ascontiguousarray of a non-contiguous array), every ndarray operator and
  in-place operator (a ufunc), every reduction method (.sum, .any), every advanced-index read, every
  item assignment (``a[i] = v``, also the write-back of ``a[i] += v``: CuPy copies there too), .copy,
  a copying reshape, and each of the engine's own CUDA kernels (sigma.py's, pinn.py's masked step, channels.py's ordered sum: their
  device branch runs, each RawKernel emulated here by the NumPy operations it computes: one launch);
- an upload: ``xp.asarray`` of a host array (a host->device copy);
- a host sync: ``Backend.host`` (``.get()``, a device->host copy) and every bool / float / int / item of
  a device array.

Views (slices, transposes, broadcast_to, reshape of a contiguous array) and allocations (empty,
empty_like: CuPy's memory pool) are free.  A counted call is one launch, except two that CuPy 14 is known to
split (issue 46): an ``einsum``, counted as CuPy's plan for it (a copy of each operand it must transpose,
then a matmul: :func:`einsum_launches`), and a stack's ``linalg.qr``, counted per matrix (a copy, geqrf, the
triangle: :data:`QR_PER_MATRIX`).  Where CuPy takes more than one kernel otherwise (a matmul of
non-contiguous operands, a two-pass reduction, cuSOLVER's geqrf itself) the count is a lower bound.  The proxy changes no number: a run through it is the run without it bit for bit
(tests/test_launch_count.py).

Per cell (the paper's 16: the experiments file's four experiments and their sizes; ``--seeds`` seeds
stacked): launches per PINN iteration and per 50-iteration progress check (the runs' differences at 1
and 3 iterations), launches and host syncs per LySep sweep (sweeps 2 and 3 of a 3-sweep run, split at
its progress callback), per backtracking trial, and per evaluation of a trial batch (accel/trials.py: a
block's first k trials at once; CuPy's default k unless ``--trial-batch``).  The predicted GPU time of the
full sweep (every cell, PINN and LySep, 2000 iterations) is counts x costs, calibrated by counting the design check's W_2
trial model (benchmarks/gpu_design_check.py ``trial_gpu``) the same way and dividing its measured GPU
time by its count: a prediction to be checked by ``benchmarks/gpu_check.py`` (its launch-cost section).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # lysep need not be installed; gpu_design_check beside

import lysep_cli  # noqa: E402,F401  first: it pins the BLAS kernel before NumPy loads (lysep_cli.platform_pin)

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from typing import Any, Iterator  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from lysep_cli.solvers import pinn as stacked_pinn  # noqa: E402
from lysep_cli.solvers.lysep import algorithm as stacked_lysep  # noqa: E402
from lysep_cli.accel import trials as stacked_trials  # noqa: E402
from lysep_cli.accel.backend import Backend  # noqa: E402
from lysep_cli.numerics import network  # noqa: E402
from lysep_cli.numerics import sincos as sc  # noqa: E402
from lysep_cli.numerics.dataset import experiment_data  # noqa: E402
from lysep_cli.solvers.steps import Backtracking  # noqa: E402
from lysep_cli.specs import ExperimentSpec, load_specs  # noqa: E402

PAPER = ("elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d")
KINDS = ("launch", "upload", "sync")


class Tally:
    """Events (launch, upload, sync) by scope and by operation; ``trials`` counts backtracking trials,
    ``evaluations`` their evaluations by rows (a batch of k trials: k; one trial: 1)."""

    def __init__(self) -> None:
        self.by_scope: collections.Counter = collections.Counter()
        self.by_op: collections.Counter = collections.Counter()
        self.scope = "other"
        self.trials = 0
        self.evaluations: collections.Counter = collections.Counter()

    def add(self, kind: str, op: str) -> None:
        self.by_scope[(self.scope, kind)] += 1
        self.by_op[(kind, op)] += 1
        if DELAY_S:  # the stand-in device of a dry run (benchmarks/stand_in.py): a launch's, upload's, sync's cost
            time.sleep(DELAY_S)

    def totals(self, scope: str | None = None) -> dict[str, int]:
        """{kind: count} over every scope, or one."""
        return {k: sum(n for (s, kind), n in self.by_scope.items() if kind == k and scope in (None, s))
                for k in KINDS}

    @contextmanager
    def scoped(self, name: str) -> Iterator[None]:
        before, self.scope = self.scope, name
        try:
            yield
        finally:
            self.scope = before


#: seconds each counted event (launch, upload, sync) sleeps: 0 here; benchmarks/stand_in.py sets it for a dry run
#: of the GPU call on a device made slower on purpose
DELAY_S = 0.0
TALLY = Tally()  # the tally every CountedArray and CountingNamespace adds to (reset by ``counting``)


def _plain(x: Any) -> Any:
    """x with every CountedArray (inside tuples, lists and dicts too) as a plain ndarray view."""
    if isinstance(x, CountedArray):
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(v) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def _wrap(x: Any) -> Any:
    """A result on the 'device': ndarrays and NumPy scalars as CountedArray (a 0-d one for a scalar, as
    CuPy returns), tuples element by element."""
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and not isinstance(x, CountedArray):
        return x.view(CountedArray)
    return x


def _advanced(key: Any) -> bool:
    """Whether an index takes NumPy's advanced (copying) indexing."""
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (np.ndarray, list)) for k in keys)


class CountedArray(np.ndarray):
    """An ndarray standing for a device array: what would be a kernel or a host sync on CuPy is counted."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        TALLY.add("launch", ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}")
        out = kwargs.get("out")
        result = getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func.__name__ == "qr":  # xp.linalg.qr of a stack: CuPy 14 factors one matrix after the other
            a = args[0]
            for _ in range(int(np.prod(a.shape[:-2], dtype=np.int64))):
                for op in QR_PER_MATRIX:
                    TALLY.add("launch", op)
        else:
            TALLY.add("launch", f"np.{func.__name__}")  # a NumPy function called on a device array directly
        return _wrap(func(*_plain(args), **_plain(kwargs)))

    def __getitem__(self, key: Any) -> Any:
        if _advanced(key):
            TALLY.add("launch", "take")
        return _wrap(super().__getitem__(_plain(key)))

    def __setitem__(self, key: Any, value: Any) -> None:
        TALLY.add("launch", "setitem")
        super().__setitem__(_plain(key), _plain(value))

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        TALLY.add("launch", "copy")
        return super().copy(*args, **kwargs)

    def reshape(self, *shape: Any, **kwargs: Any) -> Any:
        out = super().reshape(*shape, **kwargs)
        if out.size and not np.may_share_memory(out.view(np.ndarray), self.view(np.ndarray)):
            TALLY.add("launch", "reshape-copy")
        return out

    def get(self) -> np.ndarray:
        """cupy.ndarray.get: the array on the host (a device->host copy and a sync); Backend.host calls it."""
        TALLY.add("sync", "get")
        return np.array(self.view(np.ndarray))

    def _sync(self, op: str) -> np.ndarray:
        TALLY.add("sync", op)
        return self.view(np.ndarray)

    def __bool__(self) -> bool:
        return bool(self._sync("bool"))

    def __float__(self) -> float:
        return float(self._sync("float"))

    def __int__(self) -> int:
        return int(self._sync("int"))

    def item(self, *args: Any) -> Any:
        return self._sync("item").item(*args)

    def tolist(self) -> Any:
        return self._sync("tolist").tolist()


def _sigma_kernel(x: np.ndarray, *outs_n: Any) -> None:
    """sigma.py's kernels: (x, sin, cos, n) or (x, sin, cos, -sin, -cos, n), by sincos.py."""
    s, c = sc.sincos(x)
    for dst, src in zip(outs_n[:-1], (s, c, -s, -c)):
        np.copyto(dst, src)


def _masked_step(w: np.ndarray, g: np.ndarray, keep: np.ndarray, eta: Any, per: Any, out: np.ndarray, n: Any) -> None:
    """pinn.py's masked_step: where(keep per seed, w - eta g, w)."""
    np.copyto(out, np.where(np.repeat(keep, int(per)).reshape(w.shape), w - eta * g, w))


def _ordered_sum(x: np.ndarray, init: np.ndarray, from_init: Any, C: Any, per: Any, out: np.ndarray, n: Any) -> None:
    """channels.py's ordered_sum: ((init or 0) + x[:, 0]) + x[:, 1] + ..."""
    acc = init.copy() if from_init else np.zeros_like(out)
    for k in range(int(C)):
        acc += x[:, k]
    np.copyto(out, acc)


#: the stacked engine's CUDA kernels (lysep_cli/accel), emulated by the NumPy operations they compute
EMULATED = {"sincos_fdlibm": _sigma_kernel, "sigma_values_fdlibm": _sigma_kernel, "masked_step": _masked_step,
            "ordered_sum": _ordered_sum}


class EmulatedKernel:
    """cupy.RawKernel for the engine's kernels (EMULATED): one launch, computed with NumPy's bits."""

    def __init__(self, source: str, name: str, options: tuple = ()) -> None:
        self.name = name

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        TALLY.add("launch", self.name)
        EMULATED[self.name](*_plain(args))


#: xp functions that allocate or make a view: no kernel
FREE = ("empty", "empty_like", "broadcast_to", "swapaxes", "reshape", "shape", "result_type")


#: what CuPy 14's batched ``linalg.qr`` (mode "r") launches per matrix of the stack (cupy/linalg/_decomposition.py
#: ``_qr_batched`` -> cupyx's ``_geqrf_orgqr_batched``, a loop over the matrices): the matrix copied to the
#: column-major layout cuSOLVER takes, cuSOLVER's geqrf (counted as one: it launches several kernels, its panel
#: factorisations, so a lower bound), R's upper triangle extracted
QR_PER_MATRIX = ("qr-copy", "geqrf", "qr-triu")


def einsum_launches(subscripts: str, *operands: np.ndarray) -> list[str]:
    """The kernels CuPy 14's ``einsum`` launches for a two-operand ``subscripts`` (cupy/linalg/_einsum.py,
    ``reduced_binary_einsum``): a sum for each operand's labels that nothing else has; with no contracted label an
    element-wise product; else each operand transposed to (batch, free, contracted) and flattened, a copy
    where that reshape cannot be a view, then one ``matmul`` (the output's final transpose a view)."""
    ins, out = subscripts.replace(" ", "").split("->")
    subs = ins.split(",")
    if len(subs) != 2 or "." in subscripts:
        if "..." in subscripts and len(subs) == 2:  # the engine's "...mn,...mn->...n": leading labels spelled out
            lead = "".join(chr(ord("A") + i) for i in range(operands[0].ndim - 2))
            return einsum_launches(f"{lead}{subs[0][3:]},{lead}{subs[1][3:]}->{lead}{out[3:]}", *operands)
        return ["einsum"]
    ops, kernels = [np.asarray(o) for o in operands], []
    for i in (0, 1):  # unary sums
        other = set(subs[1 - i]) | set(out)
        keep = [k for k, c in enumerate(subs[i]) if c in other]
        if len(keep) < len(subs[i]):
            kernels.append("einsum-sum")
            ops[i] = ops[i].sum(axis=tuple(k for k in range(len(subs[i])) if k not in keep))
            subs[i] = "".join(subs[i][k] for k in keep)
    shared = set(subs[0]) & set(subs[1])
    batch, contract = [c for c in subs[0] if c in shared and c in out], [c for c in subs[0] if c in shared and c not in out]
    if not contract:
        return kernels + ["einsum-multiply"]
    for i, a in enumerate(ops):
        free = [c for c in subs[i] if c not in shared]
        order = batch + (free + contract if i == 0 else contract + free)
        t = a.transpose([subs[i].index(c) for c in order])
        sizes = [int(np.prod([a.shape[subs[i].index(c)] for c in g], dtype=np.int64))
                 for g in ((batch, free, contract) if i == 0 else (batch, contract, free))]
        if not np.shares_memory(t.reshape(sizes), a):
            kernels.append("einsum-copy")
    kernels.append("einsum-matmul")  # its (batch, free, free) result transposed to the output's order: a view
    return kernels


class CountingNamespace:
    """``numpy`` as a device array library whose kernels, uploads and syncs are counted in TALLY.  Its name
    is not "numpy", so lysep_cli/numerics/sigma.py takes its device branch (the RawKernel, emulated)."""

    __name__ = "counting-numpy"
    __version__ = np.__version__

    def RawKernel(self, source: str, name: str, options: tuple = ()) -> EmulatedKernel:  # noqa: N802  cupy's
        return EmulatedKernel(source, name, options)

    def asarray(self, a: Any, dtype: Any = None) -> Any:
        if not isinstance(a, CountedArray):
            TALLY.add("upload", "asarray")
        return _wrap(np.asarray(_plain(a), dtype=dtype))

    def ascontiguousarray(self, a: Any, dtype: Any = None) -> Any:
        plain = _plain(a)
        out = np.ascontiguousarray(plain, dtype=dtype)
        if not isinstance(a, CountedArray):
            TALLY.add("upload", "ascontiguousarray")
        elif out is not plain and not np.may_share_memory(out, plain):
            TALLY.add("launch", "ascontiguousarray")
        return _wrap(out)

    def einsum(self, subscripts: str, *operands: Any, **kwargs: Any) -> Any:
        """np.einsum, counted as the kernels CuPy's einsum launches for it (:func:`einsum_launches`)."""
        for op in einsum_launches(subscripts, *_plain(operands)):
            TALLY.add("launch", op)
        return _wrap(np.einsum(subscripts, *_plain(operands), **_plain(kwargs)))

    def __getattr__(self, name: str) -> Any:
        obj = getattr(np, name)
        if isinstance(obj, type) or not callable(obj):
            return obj  # dtypes (xp.int64, xp.float64), constants (xp.nan)

        def counted(*args: Any, **kwargs: Any) -> Any:
            if name not in FREE:
                TALLY.add("launch", name)
            return _wrap(obj(*_plain(args), **_plain(kwargs)))

        return counted


COUNTING = Backend("cpu-stacked", CountingNamespace())  # type: ignore[arg-type]
"""The engine's own Backend with the counting namespace as xp: ``host`` calls ``.get()`` (a sync)."""


@contextmanager
def counting() -> Iterator[Tally]:
    """A fresh TALLY, with the backtracking trials (and their accepts) in scope "trial", within them the
    evaluations of r trial rows at once in "evaluate r" (accel/trials.py), the W_L least squares in "W_L solve",
    the per-sweep PINN J in "pinn_J"; everything else in "other"."""
    global TALLY
    TALLY = Tally()
    saved = (Backtracking.step_seeds, stacked_lysep.LySepIteration._solve_W3, stacked_lysep.LySepIteration.pinn_loss,
             stacked_trials.BlockTrials.evaluate_rows)

    def step(self, J0, g2, trial, accept, active=None):
        def counted_trial(t, trying):
            TALLY.trials += 1
            with TALLY.scoped("trial"):
                return trial(t, trying)

        def counted_accept(payload, mask):
            with TALLY.scoped("trial"):
                return accept(payload, mask)

        return saved[0](self, J0, g2, counted_trial, counted_accept, active)

    def scope(name: str, f: Any) -> Any:
        def scoped(*args: Any, **kwargs: Any) -> Any:
            with TALLY.scoped(name):
                return f(*args, **kwargs)
        return scoped

    def evaluate_rows(self, i, steps, dev, trying):
        TALLY.evaluations[len(steps)] += 1
        with TALLY.scoped(f"evaluate {len(steps)}"):
            return saved[3](self, i, steps, dev, trying)

    Backtracking.step_seeds = step
    stacked_lysep.LySepIteration._solve_W3 = scope("W_L solve", saved[1])
    stacked_lysep.LySepIteration.pinn_loss = scope("pinn_J", saved[2])
    stacked_trials.BlockTrials.evaluate_rows = evaluate_rows
    try:
        yield TALLY
    finally:
        (Backtracking.step_seeds, stacked_lysep.LySepIteration._solve_W3, stacked_lysep.LySepIteration.pinn_loss,
         stacked_trials.BlockTrials.evaluate_rows) = saved


def diff(a: dict[str, int], b: dict[str, int], n: float = 1.0) -> dict[str, float]:
    """(a - b) / n per kind."""
    return {k: (a[k] - b[k]) / n for k in KINDS}


# ---------------------------------------------------------------------------------------------------------
# the stacked solvers, counted


def pinn_run(spec: ExperimentSpec, L: int, M: int, seeds: int, iterations: int, sync_every: int,
             be: Backend = COUNTING) -> tuple[dict[str, int], list]:
    """One stacked PINN run through ``be``: (its counts, its results)."""
    train = experiment_data(spec).training
    params0 = [network.init_params(train.Z.shape[0], L, M, s) for s in range(seeds)]
    with counting() as tally:
        res = stacked_pinn.solve_seeds(be, experiment_data(spec).problem, train, params0, spec.solvers["pinn"],
                                         iterations, progress=lambda k, J: None, sync_every=sync_every)
    return tally.totals(), res


def lysep_run(spec: ExperimentSpec, L: int, M: int, seeds: int, sweeps: int,
              be: Backend = COUNTING, trial_batch: int | None = None) -> tuple[list[dict[str, Any]], list]:
    """One stacked LySep run through ``be``: (the counts of each sweep (launch, upload, sync, trials, the
    trial evaluations by rows, and per scope), its results).  Sweep k's counts: from the progress call after
    sweep k-1 to the one after k.  ``trial_batch``: None, the device's default (through the counting
    namespace: CuPy's, accel/trials.py)."""
    problem, _, _, train, _ = experiment_data(spec)
    params0 = [network.init_params(train.Z.shape[0], L, M, s) for s in range(seeds)]
    marks: list[tuple[collections.Counter, int, collections.Counter]] = []
    with counting() as tally:
        def progress(k: int, J: Any) -> None:
            marks.append((tally.by_scope.copy(), tally.trials, tally.evaluations.copy()))

        # the CuPy default (W_L by a QR on the device, accel/lstsq.py) through the counter and without it
        res = stacked_lysep.solve_seeds(be, problem, train, params0, spec.solvers["lysep"], sweeps, progress,
                                          w_solve="reduced", trial_batch=trial_batch)
    per_sweep = []
    for (c0, t0, e0), (c1, t1, e1) in zip(marks, marks[1:]):
        d = c1 - c0
        per_sweep.append({**{k: sum(n for (_, kind), n in d.items() if kind == k) for k in KINDS},
                          "trials": t1 - t0, "evaluations": dict(e1 - e0),
                          "scopes": {f"{s}/{k}": n for (s, k), n in sorted(d.items())}})
    return per_sweep, res


@dataclass
class CellCounts:
    """A cell's counts: PINN per iteration and per progress check, and its setup (a run of 1 iteration);
    LySep per sweep (the mean of the measured sweeps) and per trial; with its trial batch k: the gradient
    blocks, the trial evaluations per sweep by rows and the events of one evaluation of r rows
    (``evaluation``), and a trial's events outside its evaluation (``trial_rest``: its accept, the step table)."""

    cell: str
    pinn_iteration: dict[str, float]
    pinn_check: dict[str, float]
    pinn_setup: dict[str, float]
    lysep_sweep: dict[str, float]
    lysep_trial: dict[str, float]
    trials_per_sweep: float
    scopes: dict[str, float]
    trial_batch: int = 1
    blocks: int = 7
    evaluations_per_sweep: dict[int, float] | None = None
    evaluation: dict[int, dict[str, float]] | None = None
    trial_rest: dict[str, float] | None = None

    @property
    def fixed(self) -> dict[str, float]:
        """A sweep's events outside its trials."""
        return {k: self.lysep_sweep[k] - in_trials(self.scopes, k) for k in KINDS}


def in_trials(scopes: dict[str, float], kind: str) -> float:
    """The events of a kind in the trials' scopes ("trial", and "evaluate r" within it)."""
    return sum(n for s, n in scopes.items() if s.endswith(f"/{kind}") and s.split(" ")[0].split("/")[0]
               in ("trial", "evaluate"))


def count_cell(spec: ExperimentSpec, L: int, M: int, seeds: int, sweeps: int = 3,
               trial_batch: int | None = None) -> CellCounts:
    from lysep_cli.solvers.lysep.loss import gradient_blocks

    one, _ = pinn_run(spec, L, M, seeds, 1, 50)
    three, _ = pinn_run(spec, L, M, seeds, 3, 50)
    checked, _ = pinn_run(spec, L, M, seeds, 3, 1)  # a progress check after every iteration: 2 more than `three`
    it = diff(three, one, 2)
    runs, res = lysep_run(spec, L, M, seeds, sweeps, trial_batch=trial_batch)
    per = runs[1:] if sweeps > 2 else runs
    n = len(per)
    sweep = {k: sum(p[k] for p in per) / n for k in KINDS}
    trials = sum(p["trials"] for p in per) / n
    scopes, evals = collections.Counter(), collections.Counter()
    for p in per:
        scopes.update(p["scopes"])
        evals.update(p["evaluations"])
    scopes = {k: v / n for k, v in scopes.items()}
    per_eval = {r: {k: scopes.get(f"evaluate {r}/{k}", 0) / (m / n) for k in KINDS} for r, m in evals.items()}
    trial = {k: in_trials(scopes, k) / trials if trials else 0.0 for k in KINDS}
    rest = {k: scopes.get(f"trial/{k}", 0) / trials if trials else 0.0 for k in KINDS}
    return CellCounts(f"{spec.name} ({L},{M})", it, diff(checked, three, 2), diff(one, it), sweep, trial, trials,
                      scopes, res[0].diagnostics["trial_batch"], len(gradient_blocks(L)),
                      {r: m / n for r, m in evals.items()}, per_eval, rest)


# ---------------------------------------------------------------------------------------------------------
# the calibration: the design check's W_2 trial model, counted the same way


@dataclass(frozen=True)
class Costs:
    """Seconds per launch (uploads too) and per host sync."""

    launch: float
    sync: float

    def seconds(self, c: dict[str, float]) -> float:
        return (c["launch"] + c["upload"]) * self.launch + c["sync"] * self.sync


#: benchmarks/results/gpu_design_check.txt, section 3 (an H200, CuPy 14.2): ms per W_2 trial of ONE seed
DESIGN_TRIAL_MS = {"hyperbolic-5d (3,20)": 1.196, "elliptic-2d (3,30)": 1.079, "elliptic-10d (3,150)": 1.174}


def trial_model_counts() -> dict[str, int]:
    """The launches and syncs of gpu_design_check.trial_gpu (one seed, the smallest cell's shapes; the count
    does not depend on them), counted by the same proxy (cp.asnumpy: a sync)."""
    import gpu_design_check as dc

    class Cp:
        asnumpy = staticmethod(lambda a: a.get())

    D = dc.trial_data(COUNTING.xp, np.random.default_rng(0), None, 20, 6, 6, 200)
    with counting() as tally:
        dc.trial_gpu(Cp, D, 1e-3)
    return tally.totals()


def calibrate(sync_in_launches: float = 1.0) -> tuple[Costs, dict[str, int]]:
    """Costs from the design check: its one-seed trial's mean measured time over its three cells divided by
    its count, a sync counted as ``sync_in_launches`` launches (the assumption)."""
    c = trial_model_counts()
    t = float(np.mean(list(DESIGN_TRIAL_MS.values()))) * 1e-3
    launch = t / (c["launch"] + c["upload"] + sync_in_launches * c["sync"])
    return Costs(launch, sync_in_launches * launch), c


# ---------------------------------------------------------------------------------------------------------
# the archive's backtracking trials per sweep (the full run's, where the counted sweeps are only the first)


def archive_trials(results: Path, spec: ExperimentSpec, L: int, M: int) -> float | None:
    """The largest over the cell's seeds of a seed's trials per sweep in the archive's LySep records (a stack
    makes one trial while any seed tries: at least this many), or None without the archive."""
    from lysep_cli.store import records

    if not results.is_dir():
        return None
    per = [r.diagnostics["trials"] / max(1, r.iterations_done or r.iterations)
           for r in records.load_records(results, [spec.name]).records
           if r.solver == "lysep" and (r.L, r.M) == (L, M) and r.diagnostics and "trials" in r.diagnostics]
    return max(per) if per else None


def evaluations(trials: float, blocks: int, k: int) -> tuple[float, float]:
    """(batches of k rows, single trials) a sweep evaluates when its ``blocks`` gradient blocks make ``trials``
    trials in all, each block floor(n) or ceil(n) of them (n = trials / blocks, in the proportions that give
    the mean): a block's first k trials are one batch (every block makes at least one trial), the rest one
    at a time (accel/trials.py).  k = 1: (trials, 0) in effect (all batches of one row)."""
    n = trials / blocks
    lo = int(np.floor(n))
    f = n - lo
    beyond = (1 - f) * max(0, lo - k) + f * max(0, lo + 1 - k)
    return float(blocks), blocks * beyond


def lysep_sweep(c: CellCounts, trials: float | None) -> dict[str, float]:
    """A LySep sweep's events with ``trials`` trials (the archive's; None: the counted): its fixed part, one
    batch evaluation of k rows per gradient block, single evaluations beyond k (costed as a counted single
    one, or as a batch where the count made none: an upper bound), and each trial's events outside its
    evaluation."""
    t = c.trials_per_sweep if trials is None else trials
    k = c.trial_batch
    batches, singles = evaluations(t, c.blocks, k)
    ev = c.evaluation or {}
    batch = ev.get(k, ev.get(str(k)))  # type: ignore[call-overload]
    single = ev.get(1, ev.get("1", batch))  # type: ignore[call-overload]
    if batch is None:  # no trial counted (a cell whose blocks never step)
        return dict(c.lysep_sweep)
    fixed = c.fixed
    return {x: fixed[x] + batches * batch[x] + singles * single[x] + t * c.trial_rest[x] for x in KINDS}


def full_run(c: CellCounts, iterations: int, trials: float | None) -> tuple[dict[str, float], dict[str, float]]:
    """Predicted counts of a whole cell's stack: PINN (setup + iterations + a check every 50) and LySep
    (:func:`lysep_sweep` with the archive's ``trials`` per sweep, times the sweeps)."""
    pinn = {k: c.pinn_setup[k] + iterations * c.pinn_iteration[k] + (iterations // 50 - 1) * c.pinn_check[k]
            for k in KINDS}
    sweep = lysep_sweep(c, trials)
    return pinn, {k: iterations * sweep[k] for k in KINDS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", help="EXPERIMENT:LxM,... (default: the 16 paper cells)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sweeps", type=int, default=3, help="LySep sweeps counted (the first is left out)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/launch_count.md")
    ap.add_argument("--baseline", type=Path, help="a previous run's OUT.json: before/after columns")
    ap.add_argument("--baseline-label", help="a sentence saying what the baseline counted")
    ap.add_argument("--trial-batch", type=int, help="LySep's trial batch k (default: CuPy's, accel/trials.py)")
    ap.add_argument("--trial-batches", help="K1,K2,..: count each trial batch at the cells and write the "
                    "comparison instead (default OUT: results/launch_count_trial_batch.md)")
    args = ap.parse_args()
    specs = load_specs(ROOT / "experiments.yaml")
    cells = ([(n, *map(int, s.split("x"))) for n, s in (c.split(":") for c in args.cells.split(","))] if args.cells
             else [(n, L, M) for n in PAPER for L, M in specs[n].sizes])
    costs, model = calibrate()
    slow = calibrate(5.0)[0]
    if args.trial_batches:
        out = args.out if "--out" in sys.argv else ROOT / "benchmarks/results/launch_count_trial_batch.md"
        return compare_batches(specs, cells, [int(k) for k in args.trial_batches.split(",")], args.seeds,
                               args.sweeps, costs, out)
    lines: list[str] = []

    def out(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    started = time.perf_counter()
    out(f"# Launches and host syncs of the stacked engine, counted on the CPU ({time.strftime('%Y-%m-%d')})\n")
    out(f"`python benchmarks/launch_count.py{''.join(' ' + a for a in sys.argv[1:])}` ({args.seeds} seeds stacked; NumPy {np.__version__}; the counting "
        "proxy of the script's docstring: a counted call is one launch, a lower bound where CuPy takes more). "
        f"LySep's trial batch k = {args.trial_batch or stacked_trials.CUPY_TRIAL_BATCH} (accel/trials.py: a "
        "block's first k backtracking trials evaluated at once).\n")
    out("## Calibration (a prediction's input, not a measurement on a GPU)\n")
    out(f"- the design check's W_2 trial model (`gpu_design_check.trial_gpu`, one seed), counted the same way: "
        f"**{model['launch']} launches, {model['upload']} uploads, {model['sync']} sync**")
    out(f"- its measured GPU time, one seed, the mean of its three cells (H200): "
        f"{np.mean(list(DESIGN_TRIAL_MS.values())):.3f} ms (1.079-1.196 ms, launch-bound: the same at 20 and 150 "
        "neurons)")
    out(f"- assumption: a host sync (a tiny device->host copy) costs one launch, an upload one launch: "
        f"**{costs.launch * 1e6:.1f} µs per launch and per sync**. Sensitivity: were a sync 5 launches, "
        f"{slow.launch * 1e6:.1f} µs a launch and {slow.sync * 1e6:.1f} µs a sync (column 'sync = 5 launches').")
    out("- to be checked: `benchmarks/gpu_check.py` section 7 times empty-ish element-wise kernels and tiny "
        "device->host copies on the device.\n")
    out("## Per cell\n")
    out("PINN: per iteration, and per progress check (every 50 iterations: J to the host and the all-stopped "
        "test). LySep: per sweep (the mean of sweeps 2..n), backtracking trials the stack made per sweep, "
        "per trial (its accepts included). l = launches, u = uploads, s = syncs.\n")
    out("| cell | PINN l/it | PINN s/it | PINN check l, s | LySep l/sweep | u/sweep | s/sweep | trials/sweep "
        "| l, u, s per trial | W_L solve l, u, s /sweep | pinn_J l, u, s /sweep |")
    out("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    results = ROOT / "results/paper"
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        for name, L, M in cells:
            spec = specs[name]
            c = count_cell(spec, L, M, args.seeds, args.sweeps, args.trial_batch)
            sc_ = c.scopes
            g = lambda s: ", ".join(f"{sc_.get(f'{s}/{k}', 0):.0f}" for k in KINDS)  # noqa: E731
            out(f"| {c.cell} | {c.pinn_iteration['launch']:.0f} | {c.pinn_iteration['sync']:.0f} | "
                f"{c.pinn_check['launch']:.0f}, {c.pinn_check['sync']:.0f} | {c.lysep_sweep['launch']:.0f} | "
                f"{c.lysep_sweep['upload']:.0f} | {c.lysep_sweep['sync']:.0f} | {c.trials_per_sweep:.1f} | "
                + ", ".join(f"{c.lysep_trial[k]:.1f}" for k in KINDS) + f" | {g('W_L solve')} | {g('pinn_J')} |")
            rows.append((c, spec.iterations, archive_trials(results, spec, L, M)))
    out(f"\n(counted in {time.perf_counter() - started:.0f} s of this machine's time)\n")
    out("## The full sweep, predicted (launch-bound floor: counts x costs; not measured on a GPU)\n")
    out("LySep's full run: the counted sweep's fixed part plus the archive's trials per sweep (the largest "
        "over the cell's seeds of a seed's trials/sweep in results/paper: a stack tries while any seed does, "
        "so at least that many), spread evenly over the gradient blocks: one evaluation of k trial rows per "
        "block, the trials beyond k one at a time, each at its counted launches (`lysep_sweep`); where the "
        "archive is absent, the counted trials.\n")
    out("| cell | iterations | archive trials/sweep | PINN ms/it | PINN s | LySep ms/sweep | LySep s "
        "| LySep s (sync = 5 launches) |")
    out("|---|---:|---:|---:|---:|---:|---:|---:|")
    total = {"pinn": 0.0, "lysep": 0.0, "lysep_slow": 0.0, "pinn_slow": 0.0}
    figures: dict[str, Any] = {"calibration": {"model_counts": model, "launch_s": costs.launch, "sync_s": costs.sync},
                               "cells": {}}
    for c, iterations, trials in rows:
        pinn, lysep = full_run(c, iterations, trials)
        p, l_, ls = costs.seconds(pinn), costs.seconds(lysep), slow.seconds(lysep)
        total["pinn"] += p
        total["pinn_slow"] += slow.seconds(pinn)
        total["lysep"] += l_
        total["lysep_slow"] += ls
        figures["cells"][c.cell] = {**asdict(c), "archive_trials_per_sweep": trials, "pinn_s": p, "lysep_s": l_}
        out(f"| {c.cell} | {iterations} | {'-' if trials is None else f'{trials:.1f}'} | "
            f"{costs.seconds(c.pinn_iteration) * 1e3:.1f} | {p:.1f} | {l_ / iterations * 1e3:.0f} | {l_:.1f} | "
            f"{ls:.1f} |")
    figures["minutes"] = {"pinn": total["pinn"] / 60, "lysep": total["lysep"] / 60,
                          "sync_5_launches": (total["pinn_slow"] + total["lysep_slow"]) / 60}
    out(f"\n**Predicted full sweep (the cells above, PINN + LySep, launch-bound floor): "
        f"{total['pinn'] / 60:.2f} + {total['lysep'] / 60:.2f} = {(total['pinn'] + total['lysep']) / 60:.2f} "
        f"minutes** (sync = 5 launches: {(total['pinn_slow'] + total['lysep_slow']) / 60:.2f} minutes). "
        "The floor leaves out the FLOPs (the issue's estimate: the sweep's ~0.6 PFLOP at ~30 TFLOP/s, ~0.3 "
        "minutes), the W_L least squares' host time (10 gelsy solves a sweep), and the data set and final "
        "evaluations on the host. The PyTorch peer measured ~28-30 ms an iteration on an H200 (issue 40: 56 s "
        "and 59 s for 2000 iterations), against the 'PINN ms/it' column.\n")
    if args.baseline:
        before = json.loads(args.baseline.read_text())
        out(f"## Before and after this round's launch reductions (before: `{args.baseline.name}`)\n")
        if args.baseline_label:
            out(args.baseline_label + "\n")
        out("| cell | PINN l/it | LySep l/sweep | LySep u/sweep | LySep s/sweep | l per trial | predicted PINN + LySep s |")
        out("|---|---:|---:|---:|---:|---:|---:|")
        for cell, now in figures["cells"].items():
            was = before["cells"].get(cell)
            if was is None:
                continue
            arrow = lambda a, b, f=".0f": f"{a:{f}} → {b:{f}}"  # noqa: E731
            out(f"| {cell} | {arrow(was['pinn_iteration']['launch'], now['pinn_iteration']['launch'])} | "
                f"{arrow(was['lysep_sweep']['launch'], now['lysep_sweep']['launch'])} | "
                f"{arrow(was['lysep_sweep']['upload'], now['lysep_sweep']['upload'])} | "
                f"{arrow(was['lysep_sweep']['sync'], now['lysep_sweep']['sync'])} | "
                f"{arrow(was['lysep_trial']['launch'], now['lysep_trial']['launch'], '.1f')} | "
                f"{arrow(was['pinn_s'] + was['lysep_s'], now['pinn_s'] + now['lysep_s'])} |")
        m0, m1 = before["minutes"], figures["minutes"]
        out(f"\nPredicted full sweep: PINN {m0['pinn']:.2f} → {m1['pinn']:.2f} minutes, LySep {m0['lysep']:.2f} → "
            f"{m1['lysep']:.2f} minutes.\n")
    args.out.with_suffix(".json").write_text(json.dumps(figures, indent=1) + "\n")
    out("## The ten most frequent launches of one PINN iteration, the last cell\n")
    last = cells[-1]
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        spec = specs[last[0]]
        pinn_run(spec, last[1], last[2], args.seeds, 1, 50)
        a = TALLY.by_op.copy()
        pinn_run(spec, last[1], last[2], args.seeds, 2, 50)
        b = TALLY.by_op - a
    out("| operation | launches |")
    out("|---|---:|")
    for (kind, op), n in b.most_common(10):
        out(f"| {op} ({kind}) | {n} |")
    args.out.write_text("\n".join(lines) + "\n")


def compare_batches(specs: dict, cells: list, ks: list[int], seeds: int, sweeps: int, costs: Costs,
                    path: Path) -> None:
    """Count LySep at every cell with each trial batch k and write the comparison (PATH.md, PATH.json): the
    counted sweep, the evaluation of k rows, and the full run predicted from the archive's trials."""
    lines = [f"# LySep's trial batch k: launches counted on the CPU ({time.strftime('%Y-%m-%d')})\n",
             f"`python benchmarks/launch_count.py{''.join(' ' + a for a in sys.argv[1:])}` ({seeds} seeds stacked, "
             f"sweeps 2..{sweeps} of {sweeps}; {costs.launch * 1e6:.1f} µs per launch, upload and sync, the "
             "calibration of launch_count.md). k = 1: each trial alone (the engine before batching). "
             "Evaluation: the launches of one evaluation of k trial rows (k S states). Predicted: the full run's "
             "sweep at the archive's trials per sweep (`lysep_sweep`), and the cell's 2000 sweeps.\n",
             "| cell | k | counted l/sweep | u/sweep | s/sweep | trials/sweep | evaluations/sweep (rows: count) "
             "| l per evaluation of k rows | archive trials/sweep | predicted l, u, s /sweep | predicted ms/sweep "
             "| predicted cell s |", "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    figures: dict[str, Any] = {"launch_s": costs.launch, "cells": {}}
    totals = collections.Counter()
    started = time.perf_counter()
    with threadpool_limits(limits=1), np.errstate(all="ignore"):
        for name, L, M in cells:
            spec = specs[name]
            trials = archive_trials(ROOT / "results/paper", spec, L, M)
            for k in ks:
                c = count_cell(spec, L, M, seeds, sweeps, k)
                sweep = lysep_sweep(c, trials)
                cell_s = spec.iterations * costs.seconds(sweep)
                totals[k] += cell_s
                figures["cells"].setdefault(c.cell, {})[k] = {**asdict(c), "archive_trials_per_sweep": trials,
                                                               "predicted_sweep": sweep, "predicted_cell_s": cell_s}
                evs = ", ".join(f"{r}: {n:.1f}" for r, n in sorted(c.evaluations_per_sweep.items()))
                line = (f"| {c.cell} | {k} | {c.lysep_sweep['launch']:.0f} | {c.lysep_sweep['upload']:.0f} | "
                        f"{c.lysep_sweep['sync']:.0f} | {c.trials_per_sweep:.1f} | {evs} | "
                        f"{c.evaluation.get(k, {}).get('launch', float('nan')):.1f} | "
                        f"{'-' if trials is None else f'{trials:.1f}'} | "
                        + ", ".join(f"{sweep[x]:.0f}" for x in KINDS)
                        + f" | {costs.seconds(sweep) * 1e3:.1f} | {cell_s:.1f} |")
                print(line, flush=True)
                lines.append(line)
    best = min(ks, key=lambda k: totals[k])
    figures.update(totals_s={k: totals[k] for k in ks}, best=best)
    lines.append(f"\n(counted in {time.perf_counter() - started:.0f} s of this machine's time)\n")
    lines.append("**LySep, these cells' predicted seconds together:** "
                 + ", ".join(f"k = {k}: {totals[k]:.1f} s" for k in ks)
                 + f"; the least: **k = {best}**. (A launch-bound floor: a batch of k rows also costs k trials' "
                 "FLOPs and memory, which a k beyond the ~2 trials a block of the archive's sweeps mostly wastes.)\n")
    print(lines[-1])
    path.with_suffix(".json").write_text(json.dumps(figures, indent=1) + "\n")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
