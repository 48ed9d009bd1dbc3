"""How far two runs of the same seed are apart, as measured numbers: the device checks (benchmarks/gpu_check.py
sections 2 and 3c, the ``gpu``-marked tests) report a difference as the largest absolute difference and the
largest distance in units in the last place (ulps) over histories and networks, rather than a bare yes/no."""

from __future__ import annotations

from typing import Any

import numpy as np

_MIN = np.int64(np.iinfo(np.int64).min)


def _keys(a: np.ndarray) -> np.ndarray:
    """float64 -> int64 keys in the order of the floats (adjacent floats: adjacent keys; -0.0 and 0.0: 0)."""
    i = np.ascontiguousarray(a, dtype=np.float64).view(np.int64)
    return np.where(i < 0, _MIN - i, i)


def ulps(a: Any, b: Any) -> np.ndarray:
    """|a - b| in ulps, element by element (float64; both NaN: 0, one NaN: inf), shape of the broadcast."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    ka, kb = _keys(a), _keys(b)
    same_sign = (ka >= 0) == (kb >= 0)  # the int64 difference cannot overflow: exact
    with np.errstate(over="ignore"):
        d = np.where(same_sign, np.abs(np.where(same_sign, ka - kb, 0)).astype(np.float64),
                     np.abs(ka.astype(np.float64)) + np.abs(kb.astype(np.float64)))
    na, nb = np.isnan(a), np.isnan(b)
    return np.where(na & nb, 0.0, np.where(na | nb, np.inf, d))


def arrays(pairs: list[tuple[Any, Any]]) -> dict[str, float]:
    """{max_abs, max_ulps, differing, compared} over pairs of equally shaped arrays (a shape mismatch, e.g. a
    history cut at another iterate: inf)."""
    max_abs, max_ulps, differing, compared = 0.0, 0.0, 0, 0
    for a, b in pairs:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return {"max_abs": float("inf"), "max_ulps": float("inf"), "differing": -1, "compared": compared}
        u = ulps(a, b)
        with np.errstate(invalid="ignore"):
            d = np.where(u == 0, 0.0, np.abs(a - b))  # the same bits (NaN and NaN too): 0
        max_abs = max(max_abs, float(np.max(np.where(np.isnan(d), np.inf, d), initial=0.0)))
        max_ulps = max(max_ulps, float(np.max(u, initial=0.0)))
        differing += int(np.count_nonzero(u))
        compared += a.size
    return {"max_abs": max_abs, "max_ulps": max_ulps, "differing": differing, "compared": compared}


def results(a: Any, b: Any) -> dict[str, float]:
    """:func:`arrays` over two SolveResults: every history series both have, then every weight and bias."""
    pairs = [(a.history[k], b.history[k]) for k in a.history if a.history[k] is not None and b.history.get(k) is not None]
    pairs += [(x, y) for (Wa, ba), (Wb, bb) in zip(a.params, b.params) for x, y in ((Wa, Wb), (ba, bb))]
    return arrays(pairs)


def many(a: list, b: list) -> dict[str, float]:
    """:func:`results` over pairs of SolveResults, the worst of each figure (differing and compared summed)."""
    each = [results(x, y) for x, y in zip(a, b)]
    return {"max_abs": max(e["max_abs"] for e in each), "max_ulps": max(e["max_ulps"] for e in each),
            "differing": sum(e["differing"] for e in each) if all(e["differing"] >= 0 for e in each) else -1,
            "compared": sum(e["compared"] for e in each)}


def line(d: dict[str, float]) -> str:
    """'identical' or 'max |Δ| 1.2e-16, 3 ulps, 5 of 120 values differ'."""
    if d["differing"] == 0:
        return f"identical ({d['compared']} values)"
    if d["differing"] < 0:
        return "histories of different lengths (one stopped at another iterate)"
    return f"max |Δ| {d['max_abs']:.3e}, {d['max_ulps']:.0f} ulps, {d['differing']} of {d['compared']} values differ"
