"""lysep: reproduce and extend the LySep paper (Liu & Gu)."""

from lysep_cli.platform_pin import pin_platform

pin_platform()  # before anything imports NumPy: same bits on every AVX2 machine (platform_pin.py)
