#!/usr/bin/env bash
# Rerun part of the archive under emulated platforms (docs/reproducibility.md), one directory each:
#   avx2      NumPy limited to AVX2 (its AVX-512 paths off), OpenBLAS pinned to Haswell (lysep's default):
#             what an AVX2-only x86-64 machine runs
#   nativeblas  NumPy as the machine has it, OpenBLAS's own kernel for this CPU (LYSEP_NATIVE_BLAS=1)
#   baseline  NumPy at its baseline only (SSE4.2: no AVX, AVX2, FMA, AVX-512), OpenBLAS Sandybridge
# Cells: every rfls cell of the paper; PINN elliptic-2d (3,30) and hyperbolic-5d (3,20); LySep
# elliptic-2d (3,30); all 10 seeds, 2000 iterations.  Then compare with `lysep verify --against`.
# Usage: studies/platform_spread.sh OUTDIR [EMULATION...]     (about 10 CPU-minutes an emulation)
# Backs: docs/reproducibility.md "What other platforms give (measured)" (with studies/platform_spread_summary.py).
# Regenerate: make studies STUDIES=platform_spread_summary (runs this script, then the summary).
set -euo pipefail
out=${1:?usage: platform_spread.sh OUTDIR [avx2 nativeblas baseline]}; shift
lysep=${LYSEP:-.venv/bin/lysep}
avx512="AVX512F AVX512CD AVX512VL AVX512BW AVX512DQ AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR X86_V4"
for emu in "${@:-avx2 nativeblas baseline}"; do
  case $emu in
    avx2) env=(NPY_DISABLE_CPU_FEATURES="$avx512") ;;
    nativeblas) env=(LYSEP_NATIVE_BLAS=1) ;;
    baseline) env=(NPY_DISABLE_CPU_FEATURES="AVX F16C FMA3 AVX2 X86_V3 $avx512" OPENBLAS_CORETYPE=Sandybridge) ;;
    *) echo "unknown emulation $emu" >&2; exit 2 ;;
  esac
  dir="$out/$emu"
  for e in elliptic-2d elliptic-10d parabolic-5d hyperbolic-5d; do
    env "${env[@]}" "$lysep" run "$e" --solver rfls --results "$dir"
  done
  env "${env[@]}" "$lysep" run elliptic-2d --solver pinn --sizes 3x30 --results "$dir"
  env "${env[@]}" "$lysep" run hyperbolic-5d --solver pinn --sizes 3x20 --results "$dir"
  env "${env[@]}" "$lysep" run elliptic-2d --solver lysep --sizes 3x30 --results "$dir"
done
