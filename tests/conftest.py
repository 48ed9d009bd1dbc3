"""Import lysep_cli before anything imports NumPy, so that the tests run on the pinned BLAS kernel like the
`lysep` command does (lysep_cli/blas_pin.py)."""

import lysep_cli  # noqa: F401
