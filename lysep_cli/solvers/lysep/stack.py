"""What a stack of seeds adds to LySep's sweep (algorithm.LySepIteration with S > 1, or on a device): a trial's
state merged into the current one seed by seed (a mask (S,): the seeds that accepted it), and a block's first
k backtracking trials evaluated at once as one state of k S seeds (lysep_cli/accel/trials.py; CuPy's default).

Shapes: every variable and cached value carries a leading seed axis S; a trial batch's, k S (row i: seeds
i S .. (i+1) S - 1).  Per seed, every value is what that seed's run alone computes (solvers/lysep/loss.py).
"""

from __future__ import annotations

from typing import Any

from lysep_cli.accel import trials
from lysep_cli.numerics.channels import Array
from lysep_cli.solvers.lysep.loss import LySepState, Terms, _sources, affects
from lysep_cli.solvers.lysep.weights import Weights


def merge(xp: Any, mask: Array | None, new: Array, old: Array) -> Array:
    """new where mask (S,) (per seed, on the device: uploaded once by the caller), else old; new itself when
    mask is None (every seed takes it)."""
    if mask is None:
        return new
    return xp.where(mask.reshape((mask.size,) + (1,) * (new.ndim - 1)), new, old)


#: the cached values a trial batch tiles from its base state when it reads them (arrays with a leading seed
#: axis); the others (sigma's values, the fit matrix, the weights at L != 3) it computes anew
_TILED_KINDS = ("w", "w1", "nd", "nq", "paper")


def tiled(st: LySepState, terms: Terms, block: str, xt: Array, k: int, reads: list) -> tuple[LySepState, Terms]:
    """The state and terms of k trials of ``block`` at once, k S seeds (row i: seeds i S .. (i+1) S - 1): the
    block's variable xt (k S, ...), every other variable, cached value and term of ``st``/``terms`` tiled k
    times when first read (trials.Tiled); r tiled unless the block's terms recompute it.  ``reads``: what the
    block's last batch tiled (:func:`reads`), tiled here at once (trials.tile_many: one copy for the small)."""
    xp, L = st.xp, st.L
    v = trials.Tiled(st.v, xp, k)
    v[block] = xt
    maps = (v, trials.Tiled(st.cache, xp, k, lambda key: key[0] in _TILED_KINDS and block not in _sources(key, L)),
            trials.Tiled(terms.e, xp, k), trials.Tiled(terms._E, xp, k))
    wanted = [(m, key) for m, key in reads if maps[m]._lazy(key)]
    need_r = "fit" not in affects(block, L)  # else update_terms computes r
    tiles = trials.tile_many(xp, [maps[m].base[key] for m, key in wanted] + ([terms.r] if need_r else []), k)
    for (m, key), a in zip(wanted, tiles):
        maps[m].put_tile(key, a)
    return LySepState(L, v, st.plan, maps[1], xp), Terms(maps[2], tiles[-1] if need_r else None, maps[3], xp=xp)


def reads(st2: LySepState, t2: Terms) -> list:
    """What a trial batch (:func:`tiled`) tiled: (mapping, key) pairs."""
    return [(m, key) for m, mp in enumerate((st2.v, st2.cache, t2.e, t2._E)) for key in mp.tiled]


def row(st: LySepState, terms: Terms, st2: LySepState, t2: Terms, block: str, i: int) -> tuple[LySepState, Terms]:
    """Row i of a trial batch (:func:`tiled`) as a trial state of S seeds for the step's accept: the block's
    variable, its terms and r, and the cached values the batch computed (views)."""
    S = st.v[block].shape[0]
    rows = slice(i * S, (i + 1) * S)
    cache = {key: c[rows] for key, c in dict.items(st2.cache) if key[0] in _TILED_KINDS and key not in st2.cache.tiled}
    e = {name: t2.e[name][rows] for name in affects(block, st.L) if name != "fit"}
    return (LySepState(st.L, {block: st2.v[block][rows]}, st.plan, cache, st.xp),
            Terms(e, terms.r if "fit" not in affects(block, st.L) else t2.r[rows], xp=st.xp))


def merge_cache(xp: Any, mask: Array | None, new: dict, old: dict, into: dict) -> None:
    """The cached values ``into`` lacks that a trial state's (``new``) and its base state's (``old``) caches
    both hold, merged seed by seed (new where mask): the weights and their summands, the norms (arrays with
    a leading seed axis), in place.  Per seed they are the values the merged state would compute."""
    def pick(a: Array, b: Array) -> Array:
        return a if a is b else merge(xp, mask, a, b)

    for key in (new.keys() & old.keys()) - into.keys():
        a, b = new[key], old[key]
        if isinstance(a, Weights):
            tape = None if a.tape is None or b.tape is None else \
                {l: tuple(pick(x, y) for x, y in zip(a.tape[l], b.tape[l])) for l in a.tape}
            into[key] = Weights(*({l: pick(x[l], y[l]) for l in x} for x, y in
                                  ((a.rho_a, b.rho_a), (a.rho_d, b.rho_d), (a.rho_q, b.rho_q))), tape)
        elif key[0] in ("w", "w1", "nd", "nq", "paper"):
            into[key] = pick(a, b)
