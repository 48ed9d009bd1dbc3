"""A gradient block's backtracking trials, the first k of them evaluated at once (the stacked LySep).

The backtracking rule (solvers/steps.py ``Backtracking``, one state per seed) tries t, t shrink,
t shrink^2, .. until a seed accepts; once a run settles, a block's grown first step is rejected and the
second accepted at almost every sweep (the archive: ~2 trials per block), so a stack on a launch-bound GPU
pays each block's launches and host sync twice.  :class:`BlockTrials` is the rule's trial function: at a
block's first trial it evaluates the rows 0 .. k-1 of the block's step table (t, t shrink, .. :
:func:`step_table`, the rule's own products) as one stack of k S states (the caller's ``evaluate``: the
block's variable x - t_i g for every row i, the arrays a trial reads tiled k times lazily) with one host
copy, and then answers the rule's trials 0 .. k-1 from it; a trial beyond k is evaluated alone, as with
k = 1.  The rule still calls the trials one by one and decides per seed exactly as it does with k = 1, so
every seed's decisions, rule state, counters (``trials``, ``unchanged_trials``, which count only the trials
the rule asks for) and accepted state are the k = 1 run's: a row's numbers are the same operations on the
same bits per seed (a seed's numbers do not depend on its stack, numerics/channels.py).

Shapes: S seeds; a block's variable x and its gradient g (S, ...); J0, t, trying (S,); a batch of r rows:
the steps (r, S), the states' variable (r S, ...) (row i's seeds at i S .. (i+1) S - 1), J and the
unchanged-bits flags (r, S).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable

import numpy as np

from lysep_cli.accel.backend import Backend
from lysep_cli.numerics.channels import Array

#: the trial batch on CuPy: the k whose counted launches predict the least time
#: (benchmarks/logs/gpu-2026-11.md, "Batched trials"; benchmarks/launch_count.py --trial-batches 1,2,3)
CUPY_TRIAL_BATCH = 2

Evaluate = Callable[[Array, int], "tuple[Array, Callable[[int], Any]]"]
"""evaluate(xt (r S, ...), r) -> (J_S of the r S states (r S,) on the device, payload(i): row i's trial state)"""


def default_trial_batch(xp: Any) -> int:
    """1 on NumPy (``--device cpu-stacked`` keeps its cost: a batch computes trials the rule may not need),
    :data:`CUPY_TRIAL_BATCH` on CuPy, where a stack is launch-bound."""
    return 1 if xp is np else CUPY_TRIAL_BATCH


def step_table(t0: np.ndarray, shrink: float, n: int) -> np.ndarray:
    """The steps of a block's n trials, (n, S): t0, t0 shrink, (t0 shrink) shrink, .. (the backtracking rule's
    products in its order, so a trying seed's row i is its trial i's step bit for bit)."""
    table = np.empty((n, t0.size))
    table[0] = t0
    for i in range(1, n):  # loop over the trials (host, n = max_tries)
        table[i] = table[i - 1] * shrink
    return table


def tile(xp: Any, a: Array, k: int) -> Array:
    """a (S, ...) repeated k times along the seed axis, (k S, ...): one copy (one kernel on a device)."""
    return xp.ascontiguousarray(xp.broadcast_to(a[None], (k,) + a.shape)).reshape((k * a.shape[0],) + a.shape[1:])


#: arrays below this size are tiled together in one copy (:func:`tile_many`): CuPy's concatenate is one kernel
#: for more than 8 inputs of one dtype whose mean size is under its threshold (1-2 MiB)
GROUP_BYTES = 1 << 20


def tile_many(xp: Any, arrays: list[Array], k: int) -> list[Array]:
    """Each array of ``arrays`` (S_i, ...) tiled k times (:func:`tile`): the contiguous float64 ones under
    :data:`GROUP_BYTES` in one copy (one concatenate of a, a, .., b, b, ..: views of it are the tiles),
    where they are more than 8 inputs; the others one copy each."""
    small = [i for i, a in enumerate(arrays)
             if a.nbytes < GROUP_BYTES and a.dtype == np.float64 and a.flags.c_contiguous]
    out: list[Array | None] = [None] * len(arrays)
    if k * len(small) > 8:
        flat = xp.concatenate([arrays[i].reshape(-1) for i in small for _ in range(k)])
        o = 0
        for i in small:  # loop over the arrays: views of the one copy
            a = arrays[i]
            out[i] = flat[o:o + k * a.size].reshape((k * a.shape[0],) + a.shape[1:])
            o += k * a.size
    return [tile(xp, a, k) if t is None else t for a, t in zip(arrays, out)]


class Tiled(dict):
    """A mapping over a base mapping of (S, ...) arrays whose values, where not set, are the base's tiled k
    times (:func:`tile`), made when first read: a trial state of k S seeds that copies only what it reads.
    ``keep(key)``: whether the base's value may be tiled (else the key is absent: computed anew by the reader);
    ``pop`` drops a key from the base's too; ``tiled``: the keys whose values are tiles."""

    def __init__(self, base: dict, xp: Any, k: int, keep: Callable[[Hashable], bool] = lambda key: True):
        super().__init__()
        self.base, self.xp, self.k, self.keep = base, xp, k, keep
        self.dropped: set = set()
        self.tiled: set = set()

    def _lazy(self, key: Hashable) -> bool:
        return not dict.__contains__(self, key) and key not in self.dropped and key in self.base and self.keep(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or self._lazy(key)  # type: ignore[arg-type]

    def __missing__(self, key: Hashable) -> Array:
        if not self._lazy(key):
            raise KeyError(key)
        value = self[key] = tile(self.xp, self.base[key], self.k)
        self.tiled.add(key)
        return value

    def put_tile(self, key: Hashable, value: Array) -> None:
        """Set ``value``, a tile of the base's value of ``key`` made by the caller (:func:`tile_many`)."""
        self[key] = value
        self.tiled.add(key)

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self[key] if key in self else default

    def copy(self) -> "Tiled":
        new = Tiled(self.base, self.xp, self.k, self.keep)
        dict.update(new, self)
        new.dropped, new.tiled = set(self.dropped), set(self.tiled)
        return new

    def pop(self, key: Hashable, *default: Any) -> Any:
        self.dropped.add(key)
        self.tiled.discard(key)
        return dict.pop(self, key, *default)


def batched_same_bits(xp: Any, xt: Array, x: Array) -> Array:
    """Per row and seed, whether xt's state holds x's bits (so -0.0 and 0.0 differ, and equal NaNs agree),
    (r, S) bool, for xt (r S, ...) and x (S, ...).  On NumPy a strided sample of 64 entries per seed is
    compared first: most trials change it, and then the whole arrays are not read."""
    S = x.shape[0]
    a = xp.ascontiguousarray(xt).view(xp.int64).reshape(xt.shape[0] // S, S, -1)
    b = xp.ascontiguousarray(x).view(xp.int64).reshape(1, S, -1)
    if xp is np:
        k = max(1, a.shape[2] // 64)
        if not (same := np.all(a[:, :, ::k] == b[:, :, ::k], axis=2)).any():
            return same
    return xp.all(a == b, axis=2)


@dataclass
class Batch:
    """An evaluated batch: its first trial's index i0, steps (r, S) (host), J (r, S) (host; None: every row
    left every trying seed's bits unchanged, so J_S was not evaluated), the unchanged-bits flags (r, S), and
    the rows' trial states."""

    i0: int
    steps: np.ndarray
    J: np.ndarray | None
    same: np.ndarray
    payload: Callable[[int], Any] | None


class BlockTrials:
    """The trial function (solvers/steps.StackedTrial) of one gradient block's step: x (S, ...) - t g evaluated
    ``batch`` trials at once at the block's first trial (module docstring), every trial counted per seed
    (``trials``, ``unchanged_trials``: the caller's (S,) arrays, added to in place) as the rule asks for it.

    ``unchanged_last``: whether the block's last trial left every trying seed's bits unchanged; then the next
    evaluation brings the unchanged-bits flags to the host first and evaluates J_S only if a seed moved
    (otherwise both in one copy: the same decisions either way).  ``base``: the payload of a trial that left
    every trying seed unchanged (the current state); ``g2_dev``: ||g||^2 (S,) on the device, brought to the
    host with the first evaluation's copy (:meth:`g2`)."""

    def __init__(self, be: Backend, x: Array, g: Array, J0: np.ndarray, evaluate: Evaluate, base: Any,
                 trials: np.ndarray, unchanged_trials: np.ndarray, unchanged_last: bool, shrink: float | None,
                 max_tries: int, batch: int, g2_dev: Array | None = None):
        self.be, self.xp, self.x, self.g, self.J0 = be, be.xp, x, g, J0
        self.evaluate, self.base = evaluate, base
        self.trials, self.unchanged_trials, self.unchanged_last = trials, unchanged_trials, unchanged_last
        self.shrink, self.n, self.batch = shrink, max(max_tries, 1), max(batch, 1)
        self.g2_dev = g2_dev
        self.g2_host: np.ndarray | None = None
        self.i = 0  # the next trial's index
        self.table: tuple[np.ndarray, Array] | None = None  # the block's step table, on the host and the device
        self.last: Batch | None = None

    @property
    def S(self) -> int:
        return int(self.x.shape[0])

    def g2(self) -> np.ndarray:
        """||g||^2 (S,) on the host (one host copy, unless the first evaluation's copy brought it)."""
        if self.g2_host is None:
            self.g2_host = self.be.host(self.g2_dev)
        return self.g2_host

    def __call__(self, t: np.ndarray, trying: np.ndarray) -> tuple[np.ndarray, Any]:
        i, self.i = self.i, self.i + 1
        self.trials += trying
        b = self.last
        if b is None or not (b.i0 <= i < b.i0 + len(b.steps)) or not np.array_equal(b.steps[i - b.i0][trying],
                                                                                       t[trying]):
            b = self.last = None  # release the last batch's states before the next are made
            b = self.last = self._evaluate(i, t, trying)
        j = i - b.i0
        same = b.same[j] & trying
        self.unchanged_trials += same
        self.unchanged_last = bool((same | ~trying).all())
        if self.unchanged_last or b.J is None:
            return self.J0.copy(), self.base
        return np.where(same, self.J0, b.J[j]), b.payload(j)

    def _steps(self, i: int, t: np.ndarray, trying: np.ndarray) -> tuple[np.ndarray, Array]:
        """The steps of the batch that starts at trial i, (r, S) on the host and the device: the step table's
        rows i .. i + r - 1 (uploaded once, at the block's first trial), r = ``batch`` at trial 0 and 1 after;
        t uploaded alone where its trying seeds' steps are not the table's row i."""
        if self.batch == 1 and self.xp is np:  # the rule's own step (a table row equals it wherever it is
            # used): no table to make (on a device the table saves an upload a trial)
            return t[None, :].copy(), self.xp.asarray(t[None, :])
        if self.table is None:
            host = step_table(t, self.shrink, self.n) if self.shrink is not None else t[None, :]
            self.table = (host, self.xp.asarray(host))
        host, dev = self.table
        r = min(self.batch if i == 0 else 1, len(host) - i)
        if r >= 1 and np.array_equal(host[i][trying], t[trying]):
            return host[i:i + r], dev[i:i + r]
        return t[None, :].copy(), self.xp.asarray(t[None, :])

    def _evaluate(self, i: int, t: np.ndarray, trying: np.ndarray) -> Batch:
        return self.evaluate_rows(i, *self._steps(i, t, trying), trying)

    def evaluate_rows(self, i: int, steps: np.ndarray, dev: Array, trying: np.ndarray) -> Batch:
        """The trials i .. i + r - 1 at ``steps`` (r, S) (``dev`` on the device): x - t_row g for each row, the
        unchanged-bits flags, J_S where a seed moved, with one host copy (two after a trial that changed
        nothing: the flags first)."""
        xp, be, x, S = self.xp, self.be, self.x, self.S
        r = len(steps)
        xt = (x[None] - dev.reshape((r, S) + (1,) * (x.ndim - 1)) * self.g[None]).reshape((r * S,) + x.shape[1:])
        same_d = batched_same_bits(xp, xt, x)
        # the block's last trial changed nothing, or the flags cost no host copy (NumPy): test them first
        first = self.unchanged_last or xp is np
        if first:
            same = be.host(same_d)
            if (same | ~trying[None, :]).all():
                return Batch(i, steps, None, same, None)
        J_d, payload = self.evaluate(xt, r)
        # one host copy: J_S after the steps, beside it (unless synced first) the unchanged-bits flags, and at the
        # block's first copy ||g||^2
        need_g2 = self.g2_host is None and self.g2_dev is not None
        parts = [J_d] + ([] if first else [same_d.reshape(r * S)]) + ([self.g2_dev] if need_g2 else [])
        both = be.host(xp.concatenate(parts))
        J, rest = both[:r * S].reshape(r, S), both[r * S:]
        if not first:
            same, rest = (rest[:r * S] != 0).reshape(r, S), rest[r * S:]
        if need_g2:
            self.g2_host = rest
        return Batch(i, steps, J, same, payload)
