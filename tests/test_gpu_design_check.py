"""benchmarks/gpu_design_check.py's CPU-side parts (the GPU parts need CuPy and a GPU: not run here)."""

from __future__ import annotations

import importlib.util
import re
import types
from pathlib import Path

import numpy as np

from lysep_cli.numerics import sincos as sc

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_design_check", ROOT / "benchmarks" / "gpu_design_check.py")
gdc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gdc)
NUMPY_AS_CUPY = types.SimpleNamespace(asnumpy=np.asarray)  # the whole-array trial runs on NumPy too


def test_the_kernels_constants_are_sincos_constants_bit_for_bit():
    defs = dict(re.findall(r"#define (\w+) \((\S+)\)", gdc.kernel_source()))
    assert set(defs) == {"INV_PIO2", "P1", "P2", "P3", "LIMIT", *(f"S{i}" for i in range(1, 7)),
                         *(f"C{i}" for i in range(1, 7))}
    for name, text in defs.items():
        assert float(text) == getattr(sc, name), name


def test_the_whole_array_trial_computes_the_channel_loops_value_per_seed():
    """The GPU model (matmul over channels and seeds) and the CPU model (lysep's loop over channels)
    compute the same J: for one seed, and for each seed of a stack."""
    rng = np.random.default_rng(0)
    one = gdc.trial_data(np, rng, None, 7, 3, 2, 50)
    assert np.isclose(float(gdc.trial_gpu(NUMPY_AS_CUPY, one, 1e-2)), gdc.trial_cpu(one, 1e-2), rtol=1e-12)
    stack = gdc.trial_data(np, rng, 4, 7, 3, 2, 50)
    per_seed = gdc.trial_gpu(NUMPY_AS_CUPY, stack, 1e-2)
    alone = [gdc.trial_cpu({k: v[s] if isinstance(v, np.ndarray) else v for k, v in stack.items()}, 1e-2)
             for s in range(4)]
    assert per_seed.shape == (4,) and np.allclose(per_seed, alone, rtol=1e-12)
    assert len(set(np.round(alone, 6))) == 4  # the seeds' data differ: the check is per seed


def test_differing_counts_entries_whose_bits_differ():
    a = np.array([1.0, 2.0, 0.0, 3.0])
    b = np.array([1.0, np.nextafter(2.0, 3.0), -0.0, 3.0])
    n, ulp = gdc.differing(a, b)
    assert n == 2 and ulp == 1.0
