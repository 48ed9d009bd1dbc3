"""What the CuPy design of benchmarks/logs/engine-2026-11.md assumes, checked on a GPU (a benchmark, not part of lysep).

    python benchmarks/gpu_design_check.py [--out FILE] [--seeds 10] [--reps 30]

Needs CuPy and a CUDA GPU (lysep itself never imports CuPy).  Three checks, each printed as it ends:

1. sigma: lysep's fdlibm formulas for sin and cos (lysep_cli/numerics/sincos.py: IEEE additions and
   multiplications only) written as a CUDA kernel and compiled without fused multiply-add
   (``--fmad=false``) give the same bits as lysep's CPU reference; the same kernel with CUDA's default
   (contraction on) and CuPy's own sin / cos (libdevice) do not.  The design's claim: a GPU port keeps
   sigma bit-identical to the CPU only with the first.
2. GEMM: cuBLAS float64 products are the same bits from one call to the next; against the CPU's
   OpenBLAS (the Haswell kernel lysep pins) they differ in the last bits.  The design's claim: "exact"
   on a GPU would mean the same GPU, not the CPU's bits.
3. A LySep trial of the W_2 block (its three constraint groups: the layer maps of a_2, d_2, q_2 with the
   trial weights, the residuals, their per-sample squares and the weighted sum J), the work a
   backtracking trial repeats: one seed on this machine's CPU (one BLAS thread, the loop over input
   channels as lysep's engine does it), one seed on the GPU (one host sync per trial: the accept/reject
   decision needs J on the host), and a cell's seeds stacked on the GPU (a leading seed axis, one sync
   per trial for all of them).  Milliseconds per trial and per seed.  The design's claim: one seed is
   launch-bound on a GPU at the small cells, and stacking a cell's seeds is what pays there.

The trial is a model of lysep's (the same products and passes, random data of the cell's shapes), not
lysep's code run on CuPy: the design is not built (benchmarks/logs/engine-2026-11.md).
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins OpenBLAS's kernel before NumPy loads (lysep_cli.platform_pin)

import argparse
import sys
import time

import numpy as np

from lysep_cli.numerics import sincos as sc
from lysep_cli.numerics.sigma import cuda_source

#: (name, M, n_in, |S|, N): a small cell and the largest one (N training points, |S| second-derivative channels)
CELLS = (("hyperbolic-5d (3,20)", 20, 6, 6, 2000), ("elliptic-2d (3,30)", 30, 2, 2, 1000),
         ("elliptic-10d (3,150)", 150, 10, 10, 2000))


def kernel_source() -> str:
    """sincos.py's ``_reduced`` and quadrant logic as CUDA C: the stacked engine's kernel (beyond sincos's
    LIMIT it takes the library's sin and cos, as the CPU does; the design check's points lie within it)."""
    return cuda_source()


def differing(a: np.ndarray, b: np.ndarray) -> tuple[int, float]:
    """(entries whose bits differ, largest difference in units of the last place of b)."""
    n = int(np.count_nonzero(a.view(np.int64) != b.view(np.int64)))
    ulp = np.spacing(np.abs(b))
    return n, float(np.max(np.abs(a - b) / np.where(ulp > 0, ulp, 1.0)))


def check_sigma(cp, out) -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-sc.LIMIT, sc.LIMIT, 1_000_000), rng.normal(0.0, 3.0, 1_000_000),
                        np.arange(-2000, 2001) * (np.pi / 4), rng.uniform(-1e-8, 1e-8, 10_000)])
    ref_s, ref_c = sc._sincos_numpy(x)  # lysep's CPU reference (the numba kernel gives the same bits: tested)
    xd = cp.asarray(x)
    src = kernel_source()
    out(f"## 1. sigma: {x.size} arguments, |x| <= {sc.LIMIT:g}, against lysep's CPU reference\n")
    out("| GPU code | sin: entries differing | max ulp | cos: entries differing | max ulp |")
    out("|---|---:|---:|---:|---:|")
    for label, options in (("fdlibm kernel, --fmad=false", ("--fmad=false",)),
                           ("fdlibm kernel, CUDA default (contraction on)", ())):
        k = cp.RawKernel(src, "sincos_fdlibm", options=options)
        s, c = cp.empty_like(xd), cp.empty_like(xd)
        k((1024,), (256,), (xd, s, c, np.int64(x.size)))
        (ns, us), (nc, uc) = differing(cp.asnumpy(s), ref_s), differing(cp.asnumpy(c), ref_c)
        out(f"| {label} | {ns} | {us:.1f} | {nc} | {uc:.1f} |")
    (ns, us), (nc, uc) = differing(cp.asnumpy(cp.sin(xd)), ref_s), differing(cp.asnumpy(cp.cos(xd)), ref_c)
    out(f"| cupy.sin / cupy.cos (libdevice) | {ns} | {us:.1f} | {nc} | {uc:.1f} |")
    cpu_s, cpu_c = np.sin(x), np.cos(x)
    (ns, us), (nc, uc) = differing(cpu_s, ref_s), differing(cpu_c, ref_c)
    out(f"| (CPU: np.sin / np.cos, glibc, for scale) | {ns} | {us:.1f} | {nc} | {uc:.1f} |\n")


def check_gemm(cp, out) -> None:
    rng = np.random.default_rng(1)
    out("## 2. GEMM: float64 products, cuBLAS against itself and against OpenBLAS\n")
    out("| shape | cuBLAS run to run: entries differing | cuBLAS vs OpenBLAS: entries differing | max relative |")
    out("|---|---:|---:|---:|")
    for M, K, N in ((20, 20, 2000), (150, 150, 2000), (20, 2000, 20), (150, 2000, 150), (1, 150, 2000)):
        A, B = rng.normal(size=(M, K)) / np.sqrt(K), rng.normal(size=(K, N))
        Ad, Bd = cp.asarray(A), cp.asarray(B)
        g1, g2 = cp.asnumpy(Ad @ Bd), cp.asnumpy(Ad @ Bd)
        host = A @ B
        rel = float(np.max(np.abs(g1 - host) / np.maximum(np.abs(host), 1e-300)))
        out(f"| ({M},{K}) @ ({K},{N}) | {differing(g1, g2)[0]} | {differing(g1, host)[0]} of {host.size} | {rel:.1e} |")
    out("")


def trial_data(xp, rng, S: int | None, M: int, n_in: int, nS: int, N: int) -> dict:
    """Random arrays of a cell's shapes (a leading seed axis of S when S is not None)."""
    lead = () if S is None else (S,)

    def arr(*shape):
        return xp.asarray(rng.normal(size=lead + shape))

    return {"W": arr(M, M), "g": arr(M, M), "b": arr(M, 1), "s0": arr(M, N), "s1": arr(M, N), "s2": arr(M, N),
            "d1": arr(n_in, M, N), "a2": arr(M, N), "d2": arr(n_in, M, N), "q2": arr(nS, M, N),
            "rho_a": xp.abs(arr(N)), "rho_d": xp.abs(arr(n_in, N)), "rho_q": xp.abs(arr(nS, N)), "S": nS}


def trial_cpu(D: dict, t: float) -> float:
    """One W_2 trial as lysep's engine does it on the CPU: a loop over the channels, (M, N) temporaries."""
    W = D["W"] - t * D["g"]
    e_a = W @ D["s0"]
    e_a += D["b"]
    e_a -= D["a2"]
    n_in, M, N = D["d1"].shape
    e_d, e_q, h = np.empty((n_in, M, N)), np.empty((D["S"], M, N)), np.empty((M, N))
    for j in range(n_in):
        np.multiply(D["s1"], D["d1"][j], out=h)
        np.matmul(W, h, out=e_d[j])
    e_d -= D["d2"]
    for j in range(D["S"]):
        np.multiply(D["d1"][j], D["d1"][j], out=h)
        h *= D["s2"]
        np.matmul(W, h, out=e_q[j])
    e_q -= D["q2"]
    P = (float(D["rho_a"] @ np.einsum("mn,mn->n", e_a, e_a))
         + float(np.sum(D["rho_d"] * np.einsum("jmn,jmn->jn", e_d, e_d)))
         + float(np.sum(D["rho_q"] * np.einsum("jmn,jmn->jn", e_q, e_q))))
    return P


def trial_gpu(cp, D: dict, t: float) -> np.ndarray:
    """The same trial with whole-array operations (matmul batched over the channels, and over the seeds
    when the arrays carry a seed axis); ends with the per-seed J on the host (the sync a decision needs)."""
    W = D["W"] - t * D["g"]
    e_a = W @ D["s0"] + D["b"] - D["a2"]
    Wc = W[..., None, :, :]  # broadcast over the channel axis
    nS = D["S"]
    e_d = Wc @ (D["s1"][..., None, :, :] * D["d1"]) - D["d2"]
    d1q = D["d1"][..., :nS, :, :]
    e_q = Wc @ (d1q * d1q * D["s2"][..., None, :, :]) - D["q2"]
    P = ((D["rho_a"] * (e_a * e_a).sum(axis=-2)).sum(axis=-1)
         + (D["rho_d"] * (e_d * e_d).sum(axis=-2)).sum(axis=(-2, -1))
         + (D["rho_q"] * (e_q * e_q).sum(axis=-2)).sum(axis=(-2, -1)))
    return cp.asnumpy(P)


def check_trials(cp, out, seeds: int, reps: int) -> None:
    from threadpoolctl import threadpool_limits

    out(f"## 3. A W_2 trial (three constraint groups), ms per trial, per seed; {reps} trials each\n")
    out(f"| cell (M, n_in, |S|, N) | CPU, 1 seed, 1 thread | GPU, 1 seed | GPU, {seeds} seeds stacked, per seed "
        "| CPU / GPU 1 seed | CPU / GPU stacked |")
    out("|---|---:|---:|---:|---:|---:|")
    for name, M, n_in, nS, N in CELLS:
        rng = np.random.default_rng(2)
        D = trial_data(np, rng, None, M, n_in, nS, N)
        with threadpool_limits(1):
            trial_cpu(D, 1e-3)
            t0 = time.perf_counter()
            for _ in range(reps):
                trial_cpu(D, 1e-3)
            cpu = (time.perf_counter() - t0) / reps * 1e3
        times = []
        for S in (None, seeds):
            G = trial_data(cp, np.random.default_rng(3), S, M, n_in, nS, N)
            trial_gpu(cp, G, 1e-3)
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                trial_gpu(cp, G, 1e-3)
            times.append((time.perf_counter() - t0) / reps * 1e3 / (S or 1))
            del G
        one, stacked = times
        out(f"| {name} ({M}, {n_in}, {nS}, {N}) | {cpu:.3f} | {one:.3f} | {stacked:.4f} | {cpu / one:.1f}x "
            f"| {cpu / stacked:.1f}x |")
    out("")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    lines: list[str] = []

    def out(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    import cupy as cp
    from threadpoolctl import threadpool_info

    dev = cp.cuda.runtime.getDeviceProperties(0)
    out(f"# GPU design check: {dev['name'].decode()}, CuPy {cp.__version__}, CUDA runtime "
        f"{cp.cuda.runtime.runtimeGetVersion()}, NumPy {np.__version__}, Python {sys.version.split()[0]}; CPU BLAS: "
        + ", ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
                    for i in threadpool_info() if i.get("user_api") == "blas") + "\n")
    for part in (lambda: check_sigma(cp, out), lambda: check_gemm(cp, out),
                 lambda: check_trials(cp, out, args.seeds, args.reps)):
        try:
            part()
        except Exception as exc:  # noqa: BLE001  report and go on: each part stands alone
            out(f"(failed: {type(exc).__name__}: {exc})\n")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
