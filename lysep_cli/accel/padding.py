"""A stack padded to a fixed number of seeds, so that a seed's bits do not depend on its stack's size.

On NumPy a stacked product is one BLAS call per seed's matrix, whatever the stack (tests/test_stacked*.py:
a seed alone, in a stack of 10 and in the reversed stack give the same bits), so nothing is padded there.
On CuPy a stacked ``matmul`` is one cuBLAS batched (or folded) GEMM over all S matrices, and cuBLAS may
choose another algorithm (tile, split-K) for another batch count: the same seed could then give other bits
alone than in a stack of 10.  So on a device every stack is padded to a multiple of :data:`DEVICE_STACK`
seeds (copies of its first network; their results are dropped): every product of a stack of 1 to 10 seeds
has the same shapes, and a backtracking batch of k trials always ``k * DEVICE_STACK`` rows.  A seed's run
does not depend on the other seeds of its stack (each seed's decisions are its own), so the copies change
no real seed's path; on a launch-bound GPU they cost no time to speak of.  Stacks of more than 10 seeds
(no cell of the paper) pad to 20, 30, ...: their seeds' bits are those of that size.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from lysep_cli.numerics.network import Params

#: the seeds a stack is padded to (a multiple of) on a device: the paper's 10 seeds a cell
DEVICE_STACK = 10


def stack_size(xp: Any, stack_to: int | None) -> int:
    """The multiple a stack is padded to: ``stack_to`` when given (1: no padding), else the device's
    default, 1 on NumPy and :data:`DEVICE_STACK` on any other array library (CuPy)."""
    if stack_to is not None:
        if int(stack_to) < 1:
            raise ValueError(f"stack_to must be >= 1, not {stack_to!r}")
        return int(stack_to)
    return 1 if xp is np else DEVICE_STACK


def padded(params0: list[Params], size: int) -> list[Params]:
    """``params0`` (S networks) followed by copies of its first network up to the next multiple of ``size``
    (S itself when it is one)."""
    extra = -len(params0) % size
    return list(params0) + [params0[0]] * extra


def real_seeds(progress: Callable[[int, np.ndarray], None] | None, n: int) -> Callable[[int, Any], None] | None:
    """``progress`` seeing only the first ``n`` seeds' values (the padding's dropped)."""
    if progress is None:
        return None
    return lambda k, J: progress(k, J[:n])
