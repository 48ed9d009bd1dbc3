"""Line models of LySep's blocks (benchmarks/lysep_line_models.py) against direct evaluation of J_S(x - t g).

The line models are a measured negative result (docs/engine.md): not used by lysep.  Check them with
``PYTHONPATH=tests:benchmarks .venv/bin/python -m pytest benchmarks/lysep_line_models_check.py``.
"""

from __future__ import annotations

import lysep_cli  # noqa: F401  first: it pins the platform before NumPy loads (lysep_cli.platform_pin)

import numpy as np
import pytest

from lysep_line_models import LINES, line_model
from lysep_cli.solvers.lysep.loss import compute_terms, gradient, lysep_loss, update_terms, weights
from test_lysep import CASES, perturbed_state, setup


def _rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(np.linalg.norm(b), 1e-300))


@pytest.mark.parametrize("pde,d", CASES)
@pytest.mark.parametrize("block", sorted(LINES))
def test_line_value_and_accepted_state_equal_direct_evaluation(pde, d, block):
    _, _, data, params = setup(pde, d)
    st = perturbed_state(data, params, scale=0.1)
    terms = compute_terms(st, data)
    g = gradient(block, st, data, terms, "frozen", weights(st, data))
    x = getattr(st, block)
    # Steps from negligible to large: the polynomial's higher terms must be right, not just its slope.
    for t in (1e-8, 1e-3, 0.3 * np.linalg.norm(x) / np.linalg.norm(g)):
        line = line_model(block, st, terms, data, g.copy())  # accept() consumes the line's buffers
        for t_other in (2 * t, t / 3):  # several trials before the accepted one, as in backtracking
            line.value(t_other)
        st2 = st.with_(**{block: x - t * g})
        terms2 = update_terms(terms, block, st2, data)
        direct = lysep_loss(st2, data, terms2).J_S
        assert line.value(t) == pytest.approx(direct, rel=1e-11), t
        st3, terms3 = line.accept(t)
        assert _rel(getattr(st3, block), getattr(st2, block)) < 1e-14
        for name in ("e_a1", "e_a2", "e_d1", "e_d2", "e_q2", "r"):
            assert _rel(getattr(terms3, name), getattr(terms2, name)) < 1e-11, (t, name)
        for name in ("a1", "a2", "d1", "d2", "q2"):
            assert _rel(terms3.E(name), terms2.E(name)) < 1e-11, (t, name)
        # Caches handed to the accepted state equal fresh computations.
        fresh = st3.with_(a1=st3.a1)  # drops nothing; compare with a state built from scratch
        rebuilt = type(st3)(st3.L, dict(st3.v), st3._plan)
        for l in (1, 2):
            assert _rel(fresh.nd(l), rebuilt.nd(l)) < 1e-11, (t, l)
        assert _rel(fresh.nq(2), rebuilt.nq(2)) < 1e-11
        assert _rel(fresh.fit.B, rebuilt.fit.B) < 1e-11
        assert _rel(fresh.sig(2).s0, rebuilt.sig(2).s0) < 1e-14
        assert lysep_loss(st3, data, terms3).J_S == pytest.approx(direct, rel=1e-11)


def test_every_gradient_block_has_a_line_model():
    assert set(LINES) == {"a1", "W1", "W2", "d1", "d2", "q2", "a2"}
    _, _, data, params = setup("elliptic", 2)
    st = perturbed_state(data, params)
    terms = compute_terms(st, data)
    assert line_model("b1", st, terms, data, np.zeros_like(st.b1)) is None


@pytest.mark.parametrize("block", sorted(LINES))
def test_a_step_too_small_to_change_anything_compares_equal_to_the_baseline(block):
    """The sufficient-decrease test sees J(t) == J(0) bit for bit when x - t g == x (no spurious
    rejections from formulas that round differently)."""
    _, _, data, params = setup("hyperbolic", 2)
    st = perturbed_state(data, params, scale=0.1)
    terms = compute_terms(st, data)
    g = gradient(block, st, data, terms, "frozen", weights(st, data))
    line = line_model(block, st, terms, data, g)
    t = 1e-30 / max(float(np.max(np.abs(g))), 1e-300)
    assert np.array_equal(getattr(st, block) - t * g, getattr(st, block))
    assert line.value(t) == line.baseline()
