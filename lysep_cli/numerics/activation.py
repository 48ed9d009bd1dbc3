"""The activation sigma, in one place: sigma = sin with its derivatives up to the third.

Section 4 of the paper uses sigma = sin, for which every constant of Theorem 2.1 (the Lipschitz
constants C_sigma, C_1, C_2 of sigma, sigma', sigma'' and the bounds of sigma', sigma'') equals 1.
Every pass of the channel engine evaluates sin and cos once per value of a_l and derives the rest:

    sigma = sin,  sigma' = cos,  sigma'' = -sin,  sigma''' = -cos.

sin and cos come from one vectorised pass (lysep_cli/numerics/sincos.py: fdlibm's algorithm in plain
IEEE arithmetic, within 2 ulp of glibc, the same bits on every machine), everywhere sigma is evaluated,
so that a network's value is the same whichever function computed it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lysep_cli.numerics.sincos import sincos


@dataclass(frozen=True)
class SigmaValues:
    """sigma^(k)(a) for k = 0..3 at one array a, each of a's shape (M, N)."""

    s0: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    s3: np.ndarray


@dataclass(frozen=True)
class Sine:
    """sigma = sin.  ``constants`` are Theorem 2.1's (C_sigma, C_sigma', C_sigma'', B_sigma', B_sigma'')."""

    name: str = "sin"
    constants: tuple[float, float, float, float, float] = (1.0, 1.0, 1.0, 1.0, 1.0)

    def __call__(self, a: np.ndarray) -> np.ndarray:
        return sincos(a)[0]

    def derivative(self, a: np.ndarray, k: int) -> np.ndarray:
        """sigma^(k)(a), k = 0..3."""
        v = sincos(a)[k % 2]
        return np.negative(v) if k >= 2 else v

    def values(self, a: np.ndarray) -> SigmaValues:
        """sigma, sigma', sigma'', sigma''' at a, from one sin-and-cos evaluation."""
        s, c = sincos(a)
        return SigmaValues(s, c, np.negative(s), np.negative(c))


SIGMA = Sine()
"""The activation of every network in lysep."""
