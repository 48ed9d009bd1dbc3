"""Compile every CUDA kernel of the stacked engine with NVRTC, on a machine without a GPU.

A CUDA source of lysep_cli/accel (a module-level string holding ``__global__``, or ``sigma.cuda_source()``)
is compiled by CuPy at its first launch on a GPU: a syntax error there would cost a GPU session. NVRTC
compiles without a GPU, so this check compiles each source as ``sigma.kernel`` does (``--fmad=false``), for
the H200's architecture (``-arch=compute_90``), and lists the kernels each defines.

    pip install --target /tmp/cupysite cupy-cuda12x cuda-pathfinder nvidia-cuda-nvrtc-cu12
    PYTHONPATH=/tmp/cupysite:. python benchmarks/cuda_compile_check.py > benchmarks/results/cuda_compile_check.txt

Cost: a few seconds.  Exit 1 when a source does not compile (its log printed), 2 when NVRTC is missing.
"""

from __future__ import annotations

import ctypes
import glob
import importlib
import os
import re
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("numerics.sigma", "numerics.channels", "accel.pinn", "solvers.lysep.algorithm", "accel.lstsq", "accel.backend")
OPTIONS = ["--fmad=false", "-arch=compute_90"]


def sources() -> Iterator[tuple[str, str]]:
    """(where, CUDA source) of every kernel source of the engine (lysep_cli/numerics and lysep_cli/accel)."""
    for name in MODULES:
        module = importlib.import_module(f"lysep_cli.{name}")
        for attr, value in sorted(vars(module).items()):
            if isinstance(value, str) and "__global__" in value:
                yield f"{name.replace('.', '/')}.py {attr}", value
        if callable(getattr(module, "cuda_source", None)):
            yield f"{name.replace('.', '/')}.py cuda_source()", module.cuda_source()


def kernels(source: str) -> list[str]:
    """The names of the ``extern "C" __global__`` functions a source defines."""
    return re.findall(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(', source)


def _load_nvrtc() -> None:
    """Load libnvrtc from the nvidia-cuda-nvrtc wheel where the system has none (cuda.pathfinder's search)."""
    for site in sys.path:
        for lib in sorted(glob.glob(os.path.join(site, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.*"))):
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            return


def compile_all() -> int:
    try:
        sys.path.insert(0, str(ROOT))
        _load_nvrtc()
        import cupy
        from cupy_backends.cuda.libs import nvrtc
        version = nvrtc.getVersion()
    except Exception as e:  # noqa: BLE001 - any reason NVRTC cannot be reached
        print(f"cuda_compile_check: NVRTC not available ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    print(f"# NVRTC {version[0]}.{version[1]} (CuPy {cupy.__version__}), options {' '.join(OPTIONS)}")
    failed = 0
    for where, src in sources():
        prog = nvrtc.createProgram(src, "lysep.cu", [], [])
        try:
            nvrtc.compileProgram(prog, OPTIONS)
            ptx = nvrtc.getPTX(prog)
            print(f"{where}: compiled, {len(ptx)} bytes of PTX; kernels {', '.join(kernels(src))}")
        except Exception:  # noqa: BLE001 - NVRTCError: the log says why
            failed += 1
            print(f"{where}: DOES NOT COMPILE\n{nvrtc.getProgramLog(prog)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(compile_all())
