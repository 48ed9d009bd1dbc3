"""Every solver, a few iterations on tiny problems, against a fixture saved from the pre-engine kernels.

The fast channel engine must not change the numbers beyond round-off: histories and trained weights
agree with ``tests/reference/solvers.npz`` to 1e-12 (norm-wise relative).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "reference"))
from make_reference import OUT, cases, flatten_result, run_case  # noqa: E402

REFERENCE = np.load(OUT)
CASES = list(cases())


def test_fixture_covers_every_case():
    names = {k.rsplit("/", 1)[0] for k in REFERENCE.files}
    assert names == {c[0] for c in CASES}


@pytest.mark.parametrize("name,solver,settings,pkey,L", CASES, ids=[c[0] for c in CASES])
def test_matches_reference(name, solver, settings, pkey, L):
    got = flatten_result(name, run_case(solver, settings, pkey, L))
    assert set(got) == {k for k in REFERENCE.files if k.startswith(name + "/")}
    for key, value in got.items():
        ref = REFERENCE[key]
        assert value.shape == ref.shape, key
        scale = max(np.linalg.norm(ref), 1e-300)
        assert np.linalg.norm(value - ref) <= 1e-12 * scale, (key, np.linalg.norm(value - ref) / scale)
