#!/usr/bin/env bash
# The harder suite's network runs (issue 49; docs/harder.md, "Running the networks"), resumable:
#   nohup suites/run-harder.sh > results/harder/run.log 2>&1 &
# Per experiment of results/harder/experiments.yaml (each chosen problem X, then its twin X-torch): every
# solver of its block, all sizes and seeds, `--jobs 2`; then its records are committed (records only, on the
# current branch).  Then LySep as written (one fixed tau) at the smallest size, paper init, and the checks.
# `lysep run` and `lysep study step-size` skip what is already done, so rerunning the script resumes it.
# LYSEP (default: lysep on PATH), JOBS (2), COMMIT (1: commit after each experiment; 0: do not).
# Dry run (prints the commands): LYSEP=echo COMMIT=0 suites/run-harder.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"
CONFIG=results/harder/experiments.yaml
OUT=results/harder
TAUS=0,1e-8,1e-4,1,1e2

experiments=$(sed -n '/^experiments:/,$p' "$CONFIG" | grep -E '^  [a-z0-9.-]+:$' | tr -d ' :')
for e in $experiments; do
  echo "== $(date -u +%FT%TZ) $e"
  "$LYSEP" run "$e" --config "$CONFIG" --solver all --results "$OUT" --jobs "$JOBS"
  commit "results/harder: $e, every solver, sizes and seeds of its block (suites/run-harder.sh)" "$OUT/$e"
done
for e in $experiments; do
  case "$e" in *-torch) continue ;; esac
  echo "== $(date -u +%FT%TZ) $e: LySep as written, fixed tau $TAUS, smallest size"
  "$LYSEP" study step-size "$e" --config "$CONFIG" --results "$OUT" --sizes smallest --seeds 0-4 \
    --iterations 2000 --taus "$TAUS"
  commit "results/harder: $e: LySep fixed-tau study at the smallest size (suites/run-harder.sh)" "$OUT/$e/study-step-size"
done
"$LYSEP" status --config "$CONFIG" --results "$OUT" --check --timing
"$LYSEP" verify --config "$CONFIG" --results "$OUT"  # saved networks, seals, 3 reruns (--all reruns all: the suite again)
