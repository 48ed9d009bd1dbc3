# Sourced by the suites' run scripts (suites/run-*.sh): the settings they share and their commit step.
# LYSEP (default: lysep on PATH), JOBS (2), COMMIT (1: commit after each experiment; 0: do not), PYTHON
# (.venv/bin/python); one BLAS thread per run, as `lysep run` measures.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LYSEP=${LYSEP:-lysep}
JOBS=${JOBS:-2}
COMMIT=${COMMIT:-1}
PYTHON=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

commit() {  # commit MESSAGE PATH...: what the paths hold, if anything changed (records only, this branch)
  [ "$COMMIT" = 1 ] || return 0
  local message=$1
  shift
  if ! git add -- "$@"; then  # e.g. a git-ignored path: said, and the run goes on (its records are on disk)
    echo "suites: not committed (git add failed): $*" >&2
    return 0
  fi
  git diff --cached --quiet -- "$@" || git commit -q -m "$message" -- "$@"
}
