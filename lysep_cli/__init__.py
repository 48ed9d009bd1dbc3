"""lysep: reproduce and extend the LySep paper (Liu & Gu)."""

from .blas_pin import pin_openblas_core

pin_openblas_core()  # before anything imports NumPy: same bits on every AVX2 machine (blas_pin.py)
