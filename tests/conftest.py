"""Import lysep_cli before anything imports NumPy, so that the tests run on the pinned BLAS kernel like the
`lysep` command does (lysep_cli/platform_pin.py)."""

import lysep_cli  # noqa: F401


import builtins

import pytest


@pytest.fixture
def no_cupy(monkeypatch):
    """``import cupy`` fails as it does where CuPy is not installed."""
    real_import = builtins.__import__

    def importer(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", importer)
