"""How a LocalCluster's workers share this machine for a stacked device (``--scheduler local:N``).

A plugin the scheduler hands to every worker, those a nanny restarts too (a restarted worker keeps its name,
so it gets the same share again).  It sets two environment variables in the worker's process, read when a
stack starts:

- ``LYSEP_GPU`` (``--device cuda``): the index, among the GPUs this machine's ``CUDA_VISIBLE_DEVICES``
  shows, of the GPU the worker computes on: worker i takes GPU i mod G, so N workers on G GPUs spread
  round-robin (lysep_cli/accel/backend.py selects it);
- ``LYSEP_HOST_THREADS``: the threads of W_L's per-seed host solves (lysep_cli/accel/lstsq.py), the
  machine's CPUs divided among the N workers (at least 1), so N workers do not start N x CPUs threads.

Neither changes a number: a seed's bits depend on neither the GPU index (the same model: the device facts
are checked) nor the thread count (each seed's solve is one call).
"""

from __future__ import annotations

import os
from typing import Any

from distributed import WorkerPlugin

GPU_ENV = "LYSEP_GPU"
THREADS_ENV = "LYSEP_HOST_THREADS"


def share(name: Any, workers: int, gpus: int, cpus: int) -> dict[str, str]:
    """The environment of the worker named ``name`` (LocalCluster names them 0 .. N-1) among ``workers``
    on a machine of ``gpus`` GPUs (0: no GPU device, no ``LYSEP_GPU``) and ``cpus`` CPUs."""
    env = {THREADS_ENV: str(max(1, cpus // max(1, workers)))}
    if gpus > 0:
        index = int(name) if str(name).isdecimal() else 0
        env[GPU_ENV] = str(index % gpus)
    return env


class LocalShare(WorkerPlugin):
    """Sets :func:`share`'s environment in each worker's process as it starts (``Client.register_plugin``)."""

    name = "lysep-local-share"

    def __init__(self, workers: int, gpus: int, cpus: int):
        self.workers, self.gpus, self.cpus = workers, gpus, cpus

    def setup(self, worker: Any) -> None:
        os.environ.update(share(worker.name, self.workers, self.gpus, self.cpus))
