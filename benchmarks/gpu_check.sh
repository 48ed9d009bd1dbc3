#!/usr/bin/env bash
# The GPU check of issue 40 (docs/gpu.md), for a machine with an NVIDIA GPU and CuPy; <= 8 minutes, and
# <= 90 s more for the dask GPU worker's check (benchmarks/gpu_cluster_check.py).
#
#   bash benchmarks/gpu_check.sh            # from the repository root; writes benchmarks/results/gpu_check.{md,json}
#   bash benchmarks/gpu_check.sh --smoke    # anywhere: tiny sizes on NumPy, written under /tmp (its test)
#
# lysep need not be installed: the repository root goes on PYTHONPATH.  Its dependencies (NumPy, SciPy,
# typer, PyYAML, pandas, tabulate, rich, matplotlib, threadpoolctl, SymPy, numba) and CuPy must be
# importable; PyTorch too for the peer (section 5; skipped without it).  When $OUT is set (a lent
# machine's output folder), the results are copied there as well.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
if [[ "${1:-}" == "--smoke" ]]; then
    exec timeout 300 "$PY" benchmarks/gpu_check.py --smoke --out "${TMPDIR:-/tmp}/gpu_check_smoke/gpu_check"
fi
"$PY" -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" \
    || { echo "gpu_check: needs CuPy and an NVIDIA GPU (pip install 'lysep[gpu]')" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
status=0
timeout 400 "$PY" benchmarks/gpu_check.py --device cuda --out benchmarks/results/gpu_check "$@" || status=$?
# cuda stacks on a dask GPU worker started as docs/gpu.md says, then on a LocalCluster of 2: the records of a run here (<= 75 s)
timeout 75 "$PY" benchmarks/gpu_cluster_check.py --out benchmarks/results/gpu_cluster_check || status=$((status ? status : $?))
if [[ -n "${OUT:-}" ]]; then
    cp benchmarks/results/gpu_check.md benchmarks/results/gpu_check.json "$OUT"/ 2>/dev/null || true
    cp benchmarks/results/gpu_cluster_check.txt benchmarks/results/gpu_cluster_check.json "$OUT"/ 2>/dev/null || true
fi
exit "$status"
