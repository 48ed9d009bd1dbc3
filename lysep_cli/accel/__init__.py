"""The stacked engine: a cell's seeds trained together, with a leading seed axis S, on NumPy or CuPy.

``backend.py`` resolves the array library (``--device``), ``sigma.py`` evaluates sigma = sin with the CPU's
bits on either, ``engine.py`` is the channel engine with a seed axis, ``pinn.py`` the stacked PINN-GD
solver, ``steps.py`` the backtracking rule with per-seed masks (a part of the stacked LySep to come; not
reachable from the command line) (docs/gpu.md).
"""
