"""Element-wise passes of the channel engine fused into one compiled loop (numba), bit for bit the NumPy
code's result: each element goes through the same IEEE operations in the same order (numba does not
contract a * b + c into a fused multiply-add without fastmath), so a run is the same with or without it.

Measured (benchmarks/fused_fit_matrix.py; benchmarks/logs/engine-2026-11.md): the fit matrix B, U, V of
:func:`lysep_cli.numerics.channels.fit_matrix` in one pass is about 2.2x faster than its seven NumPy passes
per input channel.  The kernels are compiled on first use and cached on disk by numba; arrays with fewer
than :data:`~lysep_cli.numerics.sincos.NUMBA_FROM` elements stay on the NumPy path, so small runs (the
tests, reports) never import numba.
"""

from __future__ import annotations

import numpy as np

_KERNELS: dict = {}


def fit_sums_kernel():
    """The compiled B, U, V kernel, or None without numba."""
    if "fit" not in _KERNELS:
        try:
            import numba
        except ImportError:  # pragma: no cover
            _KERNELS["fit"] = None
            return None

        @numba.njit(cache=True, nogil=True)
        def fit_sums(d, Q, has_Q, K, K1, K2, gflat, gstart, s0, s1, s2, B, U, V):  # pragma: no cover
            # Row by row, the innermost loops over the N samples (contiguous: they vectorise); each
            # element sees the NumPy code's operations in its order (channels.fit_matrix).
            n_in, M, N = d.shape
            ss = np.empty(N)
            for m in range(M):
                u, v = U[m], V[m]
                for n in range(N):
                    u[n] = 0.0
                    v[n] = 0.0
                for j in range(n_in):  # U += K_j d_j
                    for n in range(N):
                        u[n] += K1[j, n] * d[j, m, n]
                for i in range(K2.shape[0]):  # V += K-hat_g sum_{j in g} d_j^2;  U += K-hat_g Q_g
                    j0 = gflat[gstart[i]]
                    for n in range(N):
                        ss[n] = d[j0, m, n] * d[j0, m, n]
                    for k in range(gstart[i] + 1, gstart[i + 1]):
                        jk = gflat[k]
                        for n in range(N):
                            ss[n] += d[jk, m, n] * d[jk, m, n]
                    for n in range(N):
                        v[n] += K2[i, n] * ss[n]
                    if has_Q:
                        for n in range(N):
                            u[n] += K2[i, n] * Q[i, m, n]
                for n in range(N):  # B = K sigma(a) + sigma'(a) U + sigma''(a) V
                    b = K[n] * s0[m, n]
                    b += s1[m, n] * u[n]
                    b += s2[m, n] * v[n]
                    B[m, n] = b

        _KERNELS["fit"] = fit_sums
    return _KERNELS["fit"]


def group_index(groups: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The groups as one flat index array and the start of each group in it (CSR layout)."""
    flat = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
    start = np.zeros(len(groups) + 1, np.int64)
    start[1:] = np.cumsum([len(g) for g in groups])
    return flat, start
