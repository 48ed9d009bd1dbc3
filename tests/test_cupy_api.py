"""Every ``xp.<name>`` the stacked engine and the GPU check use exists in CuPy's namespace, checked without
CuPy or a GPU against the names CuPy 14 has (benchmarks/results/cupy_names.txt, benchmarks/cupy_names.py):
a NumPy-only function in the engine would pass every CPU test and fail on the first GPU call."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "lysep_cli/accel").glob("*.py")) + [ROOT / "benchmarks/gpu_check.py"]
NAMES_FILE = ROOT / "benchmarks/results/cupy_names.txt"


def xp_names(source: str) -> set[str]:
    """Dotted names after an array namespace ``xp`` (a variable ``xp`` or an attribute ``.xp``): ``matmul``,
    ``linalg.qr``, ``cuda.runtime.getDeviceCount``; dunders left out."""
    found, tree = set(), ast.parse(source)
    inner_parts = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner_parts:  # the whole chain only
            continue
        chain, inner = [node.attr], node.value
        while isinstance(inner, ast.Attribute) and inner.attr != "xp":
            chain.append(inner.attr)
            inner = inner.value
        rooted = (isinstance(inner, ast.Name) and inner.id == "xp") or (
            isinstance(inner, ast.Attribute) and inner.attr == "xp")
        if rooted and not chain[-1].startswith("__"):
            found.add(".".join(reversed(chain)))
    return found


def cupy_names() -> set[str]:
    lines = NAMES_FILE.read_text().splitlines()
    assert lines[0].startswith("# cupy 14"), lines[0]
    return set(lines[1:])


def test_the_parser_finds_namespace_calls():
    src = "def f(xp, st):\n    return xp.matmul(st.xp.linalg.qr(a), xp.int64(3)), xp.__name__, y.sum()\n"
    assert xp_names(src) == {"matmul", "linalg.qr", "int64"}


def test_every_namespace_name_the_engine_uses_exists_in_cupy():
    used = set().union(*(xp_names(p.read_text()) for p in SOURCES))
    assert {"matmul", "linalg.qr"} <= used  # the parser sees the engine's calls
    missing = sorted(used - cupy_names())
    assert not missing, f"not in CuPy 14's namespace: {missing}"


def test_a_numpy_only_name_would_be_caught():
    have = cupy_names()
    assert {"matmul", "einsum", "linalg.qr", "RawKernel", "cuda.Device"} <= have
    for numpy_only in ("lib.stride_tricks.sliding_window_view", "linalg.lstsq_gelsy", "nditer", "frompyfunc"):
        assert numpy_only not in have


def test_the_list_matches_an_installed_cupy():
    cupy = pytest.importorskip("cupy")  # importable without a GPU (benchmarks/cupy_names.py)
    import importlib.util
    spec = importlib.util.spec_from_file_location("cupy_names", ROOT / "benchmarks/cupy_names.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if cupy.__version__.split(".")[0] == "14":
        assert set(mod.names()) == cupy_names()
