#!/usr/bin/env bash
# The GPU check of issues 40 and 46 (docs/gpu.md), for a machine with an NVIDIA GPU and CuPy, <= 455 s: <= 320 s
# for gpu_check.py (sections by importance, each with its own limit), <= 60 s for the gpu-marked tests
# (benchmarks/results/gpu_tests.txt) and <= 75 s for the dask GPU worker's check.
#
#   bash benchmarks/gpu_check.sh            # from the repository root; writes benchmarks/results/gpu_check.{md,json}
#   bash benchmarks/gpu_check.sh --smoke    # anywhere: tiny sizes on NumPy, written under /tmp (its test)
#   bash benchmarks/gpu_check.sh --stand-in 3   # no GPU: the stand-in device 3x slower (benchmarks/gpu_dryrun.sh)
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
RES=benchmarks/results
CHECK=(--device cuda)
CLUSTER=()
if [[ "${1:-}" == "--stand-in" ]]; then  # the dry run without a GPU (benchmarks/gpu_dryrun.sh): results apart
    RES=benchmarks/results/gpu_dryrun; mkdir -p "$RES"
    CHECK=(--stand-in "${2:-3}"); CLUSTER=(--device cpu-stacked); shift $(( $# >= 2 ? 2 : 1 ))
else
    "$PY" -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" \
        || { echo "gpu_check: needs CuPy and an NVIDIA GPU (pip install 'lysep[gpu]')" >&2; exit 2; }
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
status=0
# its sections in the order of what matters most, each with its own time limit within --budget (290 s)
timeout 320 "$PY" benchmarks/gpu_check.py "${CHECK[@]}" --budget 290 --out "$RES/gpu_check" "$@" || status=$?
# the gpu-marked tests (every one must pass; they collect without hypothesis and dask: tests/test_gpu_call_collects.py)
tests=0; timeout 60 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests 2>&1 | tee "$RES/gpu_tests.txt" || tests=${PIPESTATUS[0]}
[[ $tests -eq 124 ]] && echo "pytest -m gpu: stopped at its 60 s limit" | tee -a "$RES/gpu_tests.txt"
status=$((status ? status : tests))
# cuda stacks on a dask GPU worker started as docs/gpu.md says, then on a LocalCluster of 2: the records of a run here (<= 75 s)
rm -f "$RES/gpu_cluster_check.txt"
cluster=0; timeout 75 "$PY" benchmarks/gpu_cluster_check.py "${CLUSTER[@]}" --out "$RES/gpu_cluster_check" || cluster=$?
if [[ $cluster -ne 0 && ! -s "$RES/gpu_cluster_check.txt" ]]; then  # stopped before it wrote anything: say so
    echo "gpu_cluster_check: exit $cluster$([[ $cluster -eq 124 ]] && echo ', stopped at its 75 s limit') before it wrote a result" \
        | tee "$RES/gpu_cluster_check.txt"
fi
status=$((status ? status : cluster))
if [[ -n "${OUT:-}" ]]; then
    cp "$RES"/gpu_check.md "$RES"/gpu_check.json "$OUT"/ 2>/dev/null || true
    cp "$RES"/gpu_cluster_check.txt "$RES"/gpu_cluster_check.json "$RES"/gpu_tests.txt "$OUT"/ 2>/dev/null || true
fi
exit "$status"
