"""Doing runs: plan and execute (here, in worker processes, on a dask cluster), a sweep as a whole, stops, progress."""
