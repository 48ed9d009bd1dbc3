"""Halton training and test points in the unit d-ball or the box [0, 1]^d (times [0, 1] for time-dependent
PDEs).  The box (problems written in the experiments file) takes the Halton points as they come.

Construction (documented in docs/foundation.md): one unscrambled Halton sequence (scipy.stats.qmc) in
the cube [-1, 1]^d (times [0, 1] as the first coordinate when there is time) is walked in order;
points whose spatial part falls outside the closed unit ball are rejected.  The first ``n_train``
accepted points form the training set and the next ``n_test`` the test set, so the two sets are
disjoint by construction (consecutive, distinct elements of one low-discrepancy sequence) and uniform
in the ball.  The data do not depend on the seed: the seed changes only the initial network.

The candidates are drawn at most :data:`MAX_DRAW` at a time.  The Halton engine is sequential (each draw
continues where the last ended, and each element depends only on its index), so the points are the same
as one large draw's, bit for bit; at d = 10 the ball keeps ~1 candidate in 400, and one draw of the
~1.4M candidates of 3000 points would hold ~440 MB at once.

SciPy's stats module (seconds and tens of MB to import) is imported only when points are drawn, not
when the package is.
"""

from __future__ import annotations

from math import gamma, pi
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.stats.qmc import Halton

#: the most Halton candidates drawn at once for the ball: a (MAX_DRAW, d + time) float64 array, 5.2 MB
#: at d = 10 (the points do not depend on it)
MAX_DRAW = 2**16


def halton_engine(dim: int, skip: int = 1) -> "Halton":
    """The unscrambled Halton sequence in [0, 1)^dim with its first ``skip`` elements dropped."""
    from scipy.stats import qmc  # here, not at start-up: importing scipy.stats takes seconds

    sampler = qmc.Halton(d=dim, scramble=False)
    if skip:
        sampler.fast_forward(skip)
    return sampler


def ball_rate(d: int) -> float:
    """The fraction of the cube [-1, 1]^d inside the unit d-ball: vol(B_d) / 2^d."""
    return pi ** (d / 2) / gamma(d / 2 + 1) / 2.0**d


def halton_ball(n: int, d: int, time: bool, skip: int = 1) -> np.ndarray:
    """First ``n`` Halton points inside the unit d-ball (with t in [0, 1] in row 0 when ``time``).

    Parameters
    ----------
    n : number of points.
    d : spatial dimension.
    time : prepend a time coordinate in [0, 1].
    skip : leading Halton elements dropped (the first element is the origin/corner).

    Returns
    -------
    Z : (n_in, n) with n_in = d + time; columns are samples.
    """
    if n < 1 or d < 1:
        raise ValueError("n and d must be positive")
    sampler = halton_engine(d + int(time), skip)
    rate = ball_rate(d)
    accepted: list[np.ndarray] = []
    count = 0
    while count < n:
        batch = min(int((n - count) / rate * 1.2) + 64, MAX_DRAW)
        u = sampler.random(batch)  # (batch, d + time): the next ``batch`` elements of the sequence
        x = 2.0 * u[:, int(time):] - 1.0
        keep = np.sum(x * x, axis=1) <= 1.0
        pts = np.concatenate([u[keep, :1], x[keep]], axis=1) if time else x[keep]
        accepted.append(pts)
        count += len(pts)
    return np.concatenate(accepted)[:n].T.copy()


def halton_box(n: int, d: int, time: bool, skip: int = 1) -> np.ndarray:
    """First ``n`` Halton points of [0, 1]^d (t in [0, 1] in row 0 when ``time``); (n_in, n)."""
    return halton_engine(d + int(time), skip).random(n).T.copy()


def domain_points(n: int, d: int, time: bool, domain: str = "ball") -> np.ndarray:
    """``n`` Halton points of the domain ("ball" | "box"), (n_in, n)."""
    return halton_ball(n, d, time) if domain == "ball" else halton_box(n, d, time)


def boundary_points(n: int, d: int, time: bool, domain: str = "ball") -> np.ndarray:
    """``n`` points on the spatial boundary (the unit sphere, or the faces of the box, one coordinate set
    to 0 or 1 in turn), t in [0, 1] in row 0 when ``time``; (n_in, n).  For checks, not training."""
    Z = halton_box(n, d, time)
    x = Z[int(time):]
    if domain == "ball":
        x[:] = 2.0 * x - 1.0
        x /= np.maximum(np.linalg.norm(x, axis=0), 1e-300)
    else:
        face = np.arange(n) % d
        x[face, np.arange(n)] = (np.arange(n) // d) % 2
    return Z


def train_test_points(n_train: int, n_test: int, d: int, time: bool,
                      domain: str = "ball") -> tuple[np.ndarray, np.ndarray]:
    """Disjoint training and test sets: consecutive runs of one Halton sequence in the domain.

    Returns (Z_train (n_in, n_train), Z_test (n_in, n_test)).
    """
    Z = domain_points(n_train + n_test, d, time, domain)
    return Z[:, :n_train].copy(), Z[:, n_train:].copy()
