"""Memory: what a run needs (the model of ``lysep run``'s pre-check), what the machine has, and glibc's
malloc thresholds for the solvers' temporaries.

Thresholds (speed only: allocation changes no number).

The solvers make many temporary arrays of 0.1-30 MB per iteration.  glibc serves allocations above its
mmap threshold (128 KiB at start, raised dynamically as large blocks are freed, unless any threshold is
set) with fresh mmap-ed pages, and unmaps them on free: every such temporary then costs page faults.
Measured (benchmarks/bench_sweep.py child, one thread, CPU seconds per iteration): PINN elliptic-2d
(3,30) 0.0044 s -> 0.0020 s with the thresholds below, LySep parabolic-5d (3,100) 0.187 -> 0.180 s,
PINN elliptic-10d (3,150) unchanged.  dask's nanny sets ``MALLOC_TRIM_THRESHOLD_=65536``, which
switches the dynamic threshold off and made cluster runs about 2x slower (docs/cluster.md).
"""

from __future__ import annotations

import ctypes
import sys

MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic mmap threshold on 64-bit
TRIM_THRESHOLD = 64 << 20

_DONE = False


def tune_malloc() -> bool:
    """Set glibc's mmap and trim thresholds once per process; False where there is no glibc."""
    global _DONE
    if _DONE:
        return True
    _DONE = True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
        ok &= libc.mallopt(-1, TRIM_THRESHOLD)  # M_TRIM_THRESHOLD
        return bool(ok)
    except (OSError, AttributeError):  # musl or another libc: leave its defaults
        return False


def available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """Memory available to new processes (``MemAvailable``), None where unknown."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# ---------------------------------------------------------------------------------------------
# What a run allocates: the model of ``lysep run``'s memory pre-check (docs/running.md, "Memory, sizes
# and paths").
#
# Bytes of float64 arrays, by kind (n_in inputs, n_second second-derivative channels, L layers of width M,
# N training and T test points, P parameters):
#   data      Halton draws, Z_train, Z_test, the residual's coefficients, the saved copy:   96 (N + T) n_in
#   channels  a_l, d_li, the second-derivative channels of the L-1 hidden layers:  C = 8 (1+n_in+n_second) M N (L-1)
#   sigma     sin and its derivatives per hidden layer, train and test:            S = 8 M (N + T) (L-1)
#   weights   W_1 (M x n_in) ... the (L-2) M x M hidden weights, W_L, biases:       W = 8 P
#   system    a least-squares system in the output layer ((N + M) x (M + 1)):      8 (N + M) (M + 1)
# Each solver holds a multiple of these (the multiples: a measured peak of every solver, tracemalloc, rounded
# up; tests/test_input_limits.py keeps the model within MODEL_FACTOR of the measured peak).

#: a pre-check estimate must stay within this factor of a measured peak, above or below (tests)
MODEL_FACTOR = 3.0

#: the largest network ``lysep run`` trains.  L: the derivations and their finite-difference tests, and
#: the depth study, reach L = 5; beyond 2x that no result of this tool says what a run means, and a
#: sweep's cost grows like L.  M: 3x the widest configured network (rfm's 3200 at elliptic-10d); one
#: M x M hidden weight is 0.8 GB at M = 10^4 and one LySep sweep costs ~ M^2 N.
MAX_L = 10
MAX_M = 10_000


def n_params(n_in: int, L: int, M: int) -> int:
    """P, the parameters of an (L, M) network on n_in inputs (network.init_params: W_1 (M, n_in), b_1,
    the L-2 hidden (M, M) weights and biases, W_L (1, M), b_L)."""
    return n_in * M + M + (L - 2) * (M * M + M) + M + 1


def data_bytes(n_in: int, n_train: int, n_test: int) -> int:
    """Peak bytes of building an experiment's data set (points, coefficients, the saved copy, its hash)."""
    return 96 * (n_train + n_test) * n_in


def run_parts(solver: str, n_in: int, n_second: int, L: int, M: int, n_train: int, n_test: int,
              maxcor: int = 20) -> dict[str, int]:
    """Peak bytes of one run of ``solver`` at (L, M), by part (the data set not included; see
    :func:`data_bytes`).  An unregistered solver is counted as PINN (varpro-lbfgs and varpro-gd measure as
    one; varpro-lm holds its hidden layers' Jacobian)."""
    N, T, P = n_train, n_test, n_params(n_in, L, M)
    C = 8 * (1 + n_in + n_second) * M * N * max(1, L - 1)
    S = 8 * M * (N + T) * max(1, L - 1)
    W = 8 * P
    system = 8 * (N + M) * (M + 1)
    if solver in ("rfls", "rfm"):  # channels once, the output-layer system A (N, M + 1), gelsd's copies
        return {"channels": C, "sigma": 3 * S, "weights": 4 * W, "W_L system": 4 * system}
    parts = {"channels": 2 * C, "sigma": 8 * S, "weights": 16 * W}  # a pass, its gradient, copies
    if solver == "lysep":  # the auxiliary variables, the W_L system, the state a checkpoint saves
        parts.update(channels=3 * C, sigma=12 * S, weights=17 * W, checkpoint=C + W, **{"W_L system": 2 * system})
    elif solver == "pinn-adam":
        parts["weights"] += 3 * W  # m, v, the trial
    elif solver == "pinn-lbfgs":
        parts["weights"] += (3 * maxcor + 8) * W  # the correction pairs and L-BFGS-B's workspace
    elif solver == "pinn-lm":
        G = min(N, P)  # the Gram matrix Jac Jac^T or Jac^T Jac
        parts.update(sigma=24 * S, **{"Jacobian": 8 * N * P, "Gram": 3 * 8 * G * G})
    elif solver == "varpro-lm":  # the hidden layers' Jacobian (N, P_h), Kaufman's projection of it and their
        P_h = P - (M + 1)        # channel temporaries: measured 5.3-9.5 x 8 N P_h at M = 80-200 (tests)
        parts.update(**{"W_L system": 2 * system, "Jacobian": 8 * 8 * N * P_h, "Gram": 3 * 8 * N * N})
    return parts
