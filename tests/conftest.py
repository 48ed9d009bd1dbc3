"""Import lysep_cli before anything imports NumPy, so that the tests run on the pinned BLAS kernel like the
`lysep` command does (lysep_cli/platform_pin.py)."""

import lysep_cli  # noqa: F401
