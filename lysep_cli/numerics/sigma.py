"""sigma = sin and its derivatives on a stacked array, with the CPU's bits on NumPy and on CuPy.

NumPy: lysep_cli/numerics/sincos.py itself (element-wise, so a stack of seeds gives each seed's bits).
CuPy: the same formulas (sincos.py's ``_reduced`` and quadrant logic) as CUDA kernels compiled with
``--fmad=false``: CUDA contracts a*b+c into fused multiply-adds by default, which changes the last bit of
~1 % of the values; without contraction the kernel gave lysep's CPU bits for all 2,014,001 arguments
tried on an H200 (benchmarks/logs/engine-2026-11.md, benchmarks/results/gpu_design_check.txt).  Arguments beyond
sincos.LIMIT, inf and NaN go to the library's sin and cos, as on the CPU (inside the kernel: no host sync;
CUDA's sin there, not glibc's, so such values may differ in the last bits from the CPU's).
On a device :func:`values` takes sigma and its three derivatives from one kernel.  :func:`kernel` and
:func:`grid` compile and launch the stacked engine's other CUDA kernels (engine.ordered_sum,
pinn.masked_step) the same way, without contraction.
"""

from __future__ import annotations

from typing import Any, Callable

from lysep_cli.numerics import sincos as sc
from lysep_cli.numerics.activation import SigmaValues

_CONSTANTS = ("INV_PIO2", "P1", "P2", "P3", "S1", "S2", "S3", "S4", "S5", "S6", "C1", "C2", "C3", "C4", "C5", "C6")
_KERNELS: dict[tuple[str, str], Any] = {}


def cuda_source() -> str:
    """sincos.py's formulas as CUDA kernels: ``sincos_fdlibm`` (sin, cos) and ``sigma_values_fdlibm`` (sin,
    cos, -sin, -cos: sigma and its three derivatives in one launch); the constants printed to round-trip
    exactly."""
    defs = "\n".join(f"#define {k} ({getattr(sc, k)!r})" for k in _CONSTANTS + ("LIMIT",))
    return defs + r"""
__device__ void sincos_one(double xi, double* sn, double* cs) {
    if (!(fabs(xi) <= LIMIT)) { *sn = sin(xi); *cs = cos(xi); return; }  /* as the CPU: the library's */
    double nn = rint(xi * INV_PIO2);
    double r = ((xi - nn * P1) - nn * P2) - nn * P3;
    double z = r * r;
    double s = r + (z * r) * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    double c = w + (((1.0 - w) - hz) + z * (z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))))));
    double q = nn - 4.0 * floor(nn * 0.25);
    bool swap = (q == 1.0) || (q == 3.0);
    double ss = q >= 2.0 ? -1.0 : 1.0;
    double sg = (q == 1.0 || q == 2.0) ? -1.0 : 1.0;
    *sn = (swap ? c : s) * ss;
    *cs = (swap ? s : c) * sg;
}

extern "C" __global__ void sincos_fdlibm(const double* x, double* sn, double* cs, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    sincos_one(x[i], sn + i, cs + i);
  }
}

/* sigma, sigma', sigma'', sigma''' = sin, cos, -sin, -cos in one launch (negation is exact) */
extern "C" __global__ void sigma_values_fdlibm(const double* x, double* s0, double* s1, double* s2, double* s3,
                                               long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    double sn, cs;
    sincos_one(x[i], &sn, &cs);
    s0[i] = sn; s1[i] = cs; s2[i] = -sn; s3[i] = -cs;
  }
}
"""


def kernel(xp: Any, source: Callable[[], str], name: str) -> Any:
    """The CUDA kernel ``name`` of ``source()``, compiled once per array library with ``--fmad=false`` (no
    contraction of a*b+c: the CPU's bits)."""
    key = (xp.__name__, name)
    if key not in _KERNELS:
        _KERNELS[key] = xp.RawKernel(source(), name, options=("--fmad=false",))
    return _KERNELS[key]


def grid(n: int) -> tuple[tuple[int], tuple[int]]:
    """(blocks, threads) of a grid-stride kernel over n elements."""
    threads = 256
    return (max(1, min(4096, (n + threads - 1) // threads)),), (threads,)


def _launch(xp: Any, name: str, x: Any, outputs: int) -> tuple[Any, ...]:
    """The kernel ``name`` of :func:`cuda_source` on x (float64, any shape): its ``outputs`` arrays, x's shape."""
    x = xp.ascontiguousarray(x, dtype=xp.float64)
    out = tuple(xp.empty_like(x) for _ in range(outputs))
    kernel(xp, cuda_source, name)(*grid(x.size), (x, *out, xp.int64(x.size)))
    return out


def sincos(xp: Any, x: Any) -> tuple[Any, Any]:
    """(sin x, cos x) of a float64 array of the namespace ``xp``, each of x's shape."""
    if xp.__name__ == "numpy":
        return sc.sincos(x)
    return _launch(xp, "sincos_fdlibm", x, 2)


def values(xp: Any, a: Any) -> SigmaValues:
    """sigma, sigma', sigma'', sigma''' at a (any shape), from one sin-and-cos evaluation: on NumPy sincos.py
    and two negations, on a device one kernel writing all four (three launches fewer; gpu_check.py compares
    it with sincos and two negations bit for bit on the device)."""
    if xp.__name__ == "numpy":
        s, c = sc.sincos(a)
        return SigmaValues(s, c, xp.negative(s), xp.negative(c))
    return SigmaValues(*_launch(xp, "sigma_values_fdlibm", a, 4))
