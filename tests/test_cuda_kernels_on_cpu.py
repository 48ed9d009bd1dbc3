"""The stacked engine's CUDA kernels, run on the CPU (tests/cuda_on_cpu.py), give the NumPy path's bits:
sigma's four values against numerics/sincos.py, ordered_sum against the channel additions in order,
masked_step against where(keep, W - eta G, W). The GPU runs the same source with --fmad=false; a kernel
whose arithmetic strays from the CPU engine's fails here, not in a GPU session."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from lysep_cli.accel import pinn
from lysep_cli.numerics import channels as engine
from lysep_cli.numerics import sigma
from lysep_cli.numerics import sincos

from cuda_on_cpu import build, compiler, ptr

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler")
LL = ctypes.c_longlong


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("cuda_on_cpu")


def _arguments() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(0, 3, 20000), rng.uniform(-1e5, 1e5, 20000), rng.normal(0, 1e-8, 2000),
                        [0.0, -0.0, np.pi / 2, -np.pi, 1e5, -1e5, 1e5 + 1, 3e7, np.inf, -np.inf, np.nan]])
    return np.ascontiguousarray(x)


def test_sigma_kernel_gives_sincos_bits(workdir):
    lib = build(sigma.cuda_source(), workdir)
    x = _arguments()
    s0, s1, s2, s3 = (np.empty_like(x) for _ in range(4))
    lib.sigma_values_fdlibm(ptr(x), ptr(s0), ptr(s1), ptr(s2), ptr(s3), LL(x.size))
    sn, cs = sincos.sincos(x)
    for got, want in ((s0, sn), (s1, cs), (s2, -sn), (s3, -cs)):
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
    # and the two-output kernel
    a, b = np.empty_like(x), np.empty_like(x)
    lib.sincos_fdlibm(ptr(x), ptr(a), ptr(b), LL(x.size))
    assert np.array_equal(a.view(np.int64), sn.view(np.int64)) and np.array_equal(b.view(np.int64), cs.view(np.int64))


@pytest.mark.parametrize("with_init", [False, True])
def test_ordered_sum_kernel_adds_the_channels_in_order(workdir, with_init):
    lib = build(engine.ORDERED_SUM, workdir)
    rng = np.random.default_rng(3)
    S, C, M, N = 3, 5, 4, 37
    x = np.ascontiguousarray(rng.normal(size=(S, C, M, N)) * 10.0 ** rng.integers(-8, 8, size=(S, C, M, N)))
    init = np.ascontiguousarray(rng.normal(size=(S, M, N)))
    want = engine.ordered_sum(np, x, init.copy() if with_init else None)  # the NumPy path
    out = init.copy() if with_init else np.empty((S, M, N))
    lib.ordered_sum(ptr(x), ptr(out if with_init else x), ctypes.c_bool(with_init), LL(C), LL(M * N), ptr(out),
                    LL(out.size))
    assert np.array_equal(out.view(np.int64), want.view(np.int64))
    # the channels added in reverse order differ somewhere: the comparison can tell orders apart
    reverse = engine.ordered_sum(np, np.ascontiguousarray(x[:, ::-1]), init.copy() if with_init else None)
    assert not np.array_equal(reverse, want)


def test_masked_step_kernel_is_where_of_the_step(workdir):
    lib = build(pinn.MASKED_STEP, workdir)
    rng = np.random.default_rng(5)
    S = 6
    W, G = (np.ascontiguousarray(rng.normal(size=(S, 7, 9))) for _ in range(2))
    keep = np.array([True, False, True, True, False, True])
    eta = 0.0123456789
    want = pinn.masked_step(np, keep, W, eta, G)
    out = np.empty_like(W)
    lib.masked_step(ptr(W), ptr(G), ptr(keep), ctypes.c_double(eta), LL(W.size // S), ptr(out), LL(W.size))
    assert np.array_equal(out.view(np.int64), want.view(np.int64))
    assert np.array_equal(out[1], W[1]) and not np.array_equal(out[0], W[0])
