"""The stacked engine's CUDA kernels compiled as C++ for this CPU, to run their arithmetic without a GPU.

A kernel of lysep_cli/accel is a grid-stride loop over n elements; with one block of one thread the loop
covers every element, so defining CUDA's qualifiers and thread indices is all a host compiler needs.
Compiled with ``-ffp-contract=off`` (as NVRTC with ``--fmad=false``: no a*b+c contracted), IEEE double on
both, the kernel's results here are what the GPU's must be: the tests compare them with the NumPy path the
CPU engine takes, bit for bit.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np

SHIM = r"""
#include <math.h>
#define __device__ static
#define __global__
struct lysep_dim3 { long long x; };
static const lysep_dim3 blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
"""


def compiler() -> str | None:
    """A C++ compiler on PATH (None: the tests that need one are skipped)."""
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def build(source: str, workdir: Path) -> ctypes.CDLL:
    """``source`` (CUDA C of accel) behind :data:`SHIM`, compiled to a shared library and loaded."""
    text = SHIM + source
    lib = workdir / f"kernels_{hashlib.sha256(text.encode()).hexdigest()[:12]}.so"
    if not lib.exists():
        src = lib.with_suffix(".cpp")
        src.write_text(text)
        subprocess.run([compiler(), "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-o", str(lib), str(src)],
                       check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(lib))


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    """A C-contiguous array's data pointer."""
    assert a.flags.c_contiguous
    return ctypes.c_void_p(a.ctypes.data)
