#!/usr/bin/env bash
# The GPU session's whole call (docs/gpu.md, "What the GPU session must do", step 1) as a dry run on a machine
# without a GPU (issue 46, item 3): benchmarks/gpu_check.sh with the stand-in device (benchmarks/stand_in.py:
# the engine's CuPy branches on NumPy, every launch, upload and sync sleeping FACTOR x the calibrated 42.6 us),
# the call's test command (pytest -m gpu), the dask check on cpu-stacked.  It must end within 8 minutes with every
# section's result or a line saying why not.  Writes benchmarks/results/gpu_dryrun/.
#
#   bash benchmarks/gpu_dryrun.sh [FACTOR]      # default 3
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHON=$PY
RES=benchmarks/results/gpu_dryrun
mkdir -p "$RES"
start=$(date +%s)
bash benchmarks/gpu_check.sh --stand-in "${1:-3}"; echo "gpu_check.sh: exit $?" | tee "$RES/exits.txt"
echo "the whole call: $(( $(date +%s) - start )) s (limit: 480 s)" | tee -a "$RES/exits.txt"
