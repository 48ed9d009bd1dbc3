"""The stacked solvers: a cell's seeds trained together, with a leading seed axis S, on NumPy or CuPy.

``backend.py`` resolves the array library (``--device``); ``pinn.py`` and ``lysep.py`` are the stacked PINN-GD
and LySep solvers on the one channel engine (lysep_cli/numerics/channels.py and network.py, whose arrays take
a leading seed axis; sigma on a device: numerics/sigma.py); their step rule is lysep_cli/solvers/steps.py
(docs/engine.md, docs/gpu.md).
"""
