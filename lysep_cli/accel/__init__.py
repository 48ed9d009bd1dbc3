"""The stacked engine: a cell's seeds trained together, with a leading seed axis S, on NumPy or CuPy.

``backend.py`` resolves the array library (``--device``), ``sigma.py`` evaluates sigma = sin with the CPU's
bits on either, ``engine.py`` is the channel engine with a seed axis, ``pinn.py`` and ``lysep.py`` the
stacked PINN-GD and LySep solvers (their step rule: lysep_cli/solvers/steps.py; docs/engine.md, docs/gpu.md).
"""
