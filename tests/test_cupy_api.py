"""Every ``xp.<name>`` the stacked engine and the GPU check use exists in CuPy's namespace, checked without
CuPy or a GPU against the names CuPy 14 has (benchmarks/results/cupy_names.txt, benchmarks/cupy_names.py):
a NumPy-only function in the engine would pass every CPU test and fail on the first GPU call."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "lysep_cli/accel").glob("*.py"), *(ROOT / "lysep_cli/numerics").glob("*.py"),
                  *(ROOT / "lysep_cli/solvers/lysep").glob("*.py")]) + [ROOT / "benchmarks/gpu_check.py"]
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


def _compile_check():
    import importlib.util
    spec = importlib.util.spec_from_file_location("cuda_compile_check", ROOT / "benchmarks/cuda_compile_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_kernel_the_engine_launches_is_defined_in_a_cuda_source():
    """Kernel names at the launch sites (``kernel(xp, source, "name")``, ``_launch(xp, "name", ...)``) are
    ``extern "C" __global__`` functions of the engine's CUDA sources: a misspelt name fails here."""
    check = _compile_check()
    defined = {k for _, src in check.sources() for k in check.kernels(src)}
    requested = set()
    for path in sorted([*(ROOT / "lysep_cli/accel").glob("*.py"), *(ROOT / "lysep_cli/numerics").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "kernel", "_launch"):
                requested |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    assert {"ordered_sum", "masked_step", "sincos_fdlibm", "sigma_values_fdlibm"} <= requested
    assert requested <= defined, sorted(requested - defined)


def test_every_cuda_source_compiles_with_nvrtc():
    check = _compile_check()
    try:
        check._load_nvrtc()
        from cupy_backends.cuda.libs import nvrtc
        nvrtc.getVersion()
    except Exception:  # noqa: BLE001 - no CuPy or no NVRTC here (CI): benchmarks/results/cuda_compile_check.txt
        pytest.skip("NVRTC not available")
    assert check.compile_all() == 0
