#!/usr/bin/env bash
# Wheels of what the lent GPU machine's image lacks (dask and distributed, for the dask GPU worker's check:
# benchmarks/gpu_cluster_check.py), for its Python 3.12 on x86-64, at the versions this checkout's venv
# holds, into .whl/ (ignored by git). Run here, where the package registry is reachable; the machine
# itself reaches nothing. docs/gpu.md ("What the GPU session must do") says how the wheels travel.
#
#   bash benchmarks/gpu_wheels.sh [PYTHON]      # PYTHON: the venv's (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
# the image has the rest (numpy, scipy, numba, cupy, pandas, matplotlib, pyyaml, rich, sympy, tabulate,
# threadpoolctl, typer, click, cloudpickle, toolz, msgpack, psutil, sortedcontainers, fsspec, jinja2)
names=(dask distributed partd locket tblib tornado zict)
rm -rf .whl && mkdir -p .whl
for n in "${names[@]}"; do
    v=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$n")
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl "$n==$v"
done
ls -1 .whl
du -sh .whl
