"""CuPy's namespace as a list of names, for tests/test_cupy_api.py: every ``xp.<name>`` the stacked engine
(lysep_cli/accel) calls must exist in CuPy, checked on machines without CuPy or a GPU.

    pip install --target /tmp/cupysite cupy-cuda12x cuda-pathfinder   # imports without a GPU
    PYTHONPATH=/tmp/cupysite python benchmarks/cupy_names.py > benchmarks/results/cupy_names.txt

Cost: a second.  Writes one name a line: ``matmul``, ``linalg.qr``, ``cuda.Device``, ``ndarray.view`` ...,
after a ``#`` line naming the CuPy version.
"""

from __future__ import annotations

import cupy


def names() -> list[str]:
    """Public names of cupy, cupy.linalg, cupy.cuda, cupy.cuda.runtime and cupy.ndarray (prefixed)."""
    out = {n for n in dir(cupy) if not n.startswith("_")}
    for prefix, module in (("linalg", cupy.linalg), ("cuda", cupy.cuda), ("cuda.runtime", cupy.cuda.runtime),
                           ("ndarray", cupy.ndarray)):
        out |= {f"{prefix}.{n}" for n in dir(module) if not n.startswith("_")}
    return sorted(out)


if __name__ == "__main__":
    print(f"# cupy {cupy.__version__}: public names of cupy, cupy.linalg, cupy.cuda, cupy.cuda.runtime, cupy.ndarray")
    print("\n".join(names()))
