"""What lysep keeps on disk: the results layout, run records and their schema, atomic writes, locks, checkpoints, the platform fingerprint."""
