"""benchmarks/launch_count.py counts what CuPy launches (issue 46, item 4): an einsum as CuPy 14's plan for it
(its operands' transposing copies and a matmul), a stack's ``linalg.qr`` per matrix; and the stacked engine's
hot path has no einsum left (each replaced by a product and a sum in the same order: NumPy's bits unchanged,
tests/test_stacked*.py)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _lc():
    spec = importlib.util.spec_from_file_location("launch_count", ROOT / "benchmarks/launch_count.py")
    lc = sys.modules["launch_count"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lc)
    return lc


def test_einsum_is_counted_as_cupys_plan():
    lc = _lc()
    S, J, M, N, K = 10, 2, 30, 100, 30
    d, P, w1, W2 = np.zeros((S, J, M, N)), np.zeros((S, J, K, M)), np.zeros((S, M, J)), np.zeros((S, K, M))
    assert lc.einsum_launches("sjmn,sjmn->smn", d, d) == ["einsum-copy", "einsum-copy", "einsum-matmul"]
    assert lc.einsum_launches("sjkm,smj->skm", P, w1) == ["einsum-copy", "einsum-matmul"]  # w1 needs no copy
    assert lc.einsum_launches("...mn,...mn->...n", np.zeros((S, M, N)), np.zeros((S, M, N))) == \
        ["einsum-copy", "einsum-copy", "einsum-matmul"]
    assert lc.einsum_launches("ij,jk->ik", np.zeros((3, 4)), np.zeros((4, 5))) == ["einsum-matmul"]
    assert lc.einsum_launches("ij,ij->ij", np.zeros((3, 4)), np.zeros((3, 4))) == ["einsum-multiply"]
    assert lc.einsum_launches("ijk,ij->i", np.zeros((3, 4, 5)), np.zeros((3, 4))) == \
        ["einsum-sum", "einsum-matmul"]  # k summed alone first, then the contraction over j


def test_a_stacked_qr_is_counted_per_matrix():
    lc = _lc()
    a = lc.COUNTING.asarray(np.random.default_rng(0).normal(size=(7, 20, 5)))
    with lc.counting() as tally:
        r = lc.COUNTING.xp.linalg.qr(a, mode="r")
    assert np.array_equal(np.asarray(r), np.linalg.qr(np.asarray(a), mode="r"))
    assert tally.totals()["launch"] == 7 * len(lc.QR_PER_MATRIX)


def test_no_einsum_on_the_stacked_engines_path():
    calls = [(path.name, node.lineno) for path in sorted((ROOT / "lysep_cli/accel").glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr == "einsum"]
    assert calls == []
