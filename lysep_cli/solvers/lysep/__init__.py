"""LySep, Algorithms 1-3 of the paper: the algorithm, its loss J_S, its closed-form updates and weights."""
