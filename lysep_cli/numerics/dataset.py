"""The data set of an experiment: problem, Halton training and test points, residual coefficients.

Seed-independent and deterministic: (pde, d, solution, n_train, n_test) fix it, so it is built once per
process (cached) and identified by :func:`data_sha256`, a content hash of the points as they are saved in
``results/<experiment>/data.npz`` (``train`` (n_train, n_in), ``test`` (n_test, n_in), float64).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple, Protocol

import numpy as np

from lysep_cli.numerics.problems import OperatorCoefficients, Problem, make_problem
from lysep_cli.numerics.sampling import train_test_points
from lysep_cli.numerics.user_problems import ProblemSpec, build_problem, check_values


@dataclass(frozen=True)
class TrainingData:
    """Z (n_in, N) training points, coefficients of the residual at Z, and data Y (N,)."""

    Z: np.ndarray
    coef: OperatorCoefficients
    Y: np.ndarray

    @classmethod
    def build(cls, problem: Problem, Z: np.ndarray) -> "TrainingData":
        return cls(Z, problem.coefficients(Z), problem.rhs(Z))


class ExperimentData(NamedTuple):
    """problem; Z_train (n_in, n_train); Z_test (n_in, n_test); training data at Z_train; data_sha256."""

    problem: Problem
    Z_train: np.ndarray
    Z_test: np.ndarray
    training: TrainingData
    sha256: str


def saved_arrays(Z_train: np.ndarray, Z_test: np.ndarray) -> dict[str, np.ndarray]:
    """{"train": (n_train, n_in), "test": (n_test, n_in)}: the layout of data.npz (columns t, x_1..x_d)."""
    return {"train": np.ascontiguousarray(Z_train.T, dtype=np.float64),
            "test": np.ascontiguousarray(Z_test.T, dtype=np.float64)}


def data_sha256(arrays: dict[str, np.ndarray]) -> str:
    """sha256 of the data set: for "train" then "test", the name, shape and little-endian float64 bytes."""
    h = hashlib.sha256()
    for name in ("train", "test"):
        a = np.ascontiguousarray(arrays[name], dtype="<f8")
        h.update(f"{name}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


@lru_cache(maxsize=8)
def _build(pde: str, d: int, solution: str | None, n_train: int, n_test: int,
           user: ProblemSpec | None = None) -> ExperimentData:
    problem = make_problem(pde, d, solution) if user is None else build_problem(user)  # type: ignore[arg-type]
    Z_train, Z_test = train_test_points(n_train, n_test, d, time=problem.time_dependent, domain=problem.domain)
    if user is not None:  # every function derived from the formulas finite, real (and c > 0) where runs use it
        check_values(user, problem, [("training point", Z_train, True), ("test point", Z_test, True)])
    sha = data_sha256(saved_arrays(Z_train, Z_test))
    return ExperimentData(problem, Z_train, Z_test, TrainingData.build(problem, Z_train), sha)


class DataSpec(Protocol):
    """What fixes an experiment's data set (an :class:`~lysep_cli.specs.ExperimentSpec` has it)."""

    pde: str
    d: int
    solution: str | None
    n_train: int
    n_test: int
    problem: ProblemSpec | None


def problem_of(spec: DataSpec) -> Problem:
    """The experiment's problem: one of Section 4, or one written in the experiments file."""
    user = getattr(spec, "problem", None)
    return make_problem(spec.pde, spec.d, spec.solution) if user is None else build_problem(user)  # type: ignore[arg-type]


def experiment_data(spec: DataSpec) -> ExperimentData:
    """The experiment's data set (cached per process); unpacks as (problem, Z_train, Z_test, training, sha)."""
    return _build(spec.pde, spec.d, spec.solution, spec.n_train, spec.n_test, getattr(spec, "problem", None))
