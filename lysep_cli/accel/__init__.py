"""What a device adds to the one engine: the array library (``backend.py``, ``--device``), host/device
transfers and W_L's systems brought to the host (``lstsq.py``), a stack padded to the device's batch shape
(``padding.py``), a block's first backtracking trials evaluated at once (``trials.py``), PINN's networks
stacked on the device and its masked update as one kernel (``pinn.py``), and the numbers' comparison between
devices (``compare.py``).  The solvers themselves are written once, for S seeds on any of them
(solvers/pinn.py, solvers/lysep/algorithm.py; docs/engine.md, docs/gpu.md).
"""
