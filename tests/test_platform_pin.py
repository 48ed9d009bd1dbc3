"""The BLAS kernel pin: OPENBLAS_CORETYPE=Haswell where safe, the user's choice wins, records say which ran
(the NumPy SIMD pin: tests/test_reproducibility.py)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lysep_cli.platform_pin import _cpu_flags, pin_openblas_core
from lysep_cli.cli import app
from lysep_cli.reports.verify import Check

from foundation_helpers import write_tiny

ROOT = Path(__file__).resolve().parents[1]

AVX2 = {"avx", "avx2", "fma", "sse2"}


def test_pins_haswell_on_x86_with_avx2_and_fma():
    env: dict[str, str] = {}
    assert pin_openblas_core(env, "x86_64", AVX2) == "Haswell"
    assert env == {"OPENBLAS_CORETYPE": "Haswell"}


@pytest.mark.parametrize("env, machine, flags", [
    ({"OPENBLAS_CORETYPE": "Zen"}, "x86_64", AVX2),      # the user's choice wins
    ({"LYSEP_NATIVE_BLAS": "1"}, "x86_64", AVX2),        # opted out: the machine's own kernel
    ({}, "aarch64", {"asimd"}),                          # not x86: nothing to pin
    ({}, "x86_64", {"avx", "sse2"}),                     # no AVX2: the Haswell kernel would not run
    ({}, "x86_64", {"avx2"}),                            # no FMA either
])
def test_leaves_the_environment_alone(env, machine, flags):
    before = dict(env)
    assert pin_openblas_core(env, machine, flags) is None
    assert env == before


def test_cpu_flags_of_a_missing_file_are_empty(tmp_path):
    assert _cpu_flags(str(tmp_path / "none")) == set()
    (tmp_path / "cpuinfo").write_text("processor : 0\nflags\t\t: fpu avx2 fma\n")
    assert _cpu_flags(str(tmp_path / "cpuinfo")) == {"fpu", "avx2", "fma"}


def _kernels(env: dict[str, str]) -> list[str]:
    code = ("import lysep_cli, numpy, scipy.linalg; from threadpoolctl import threadpool_info; "
            "print(sorted({i['architecture'] for i in threadpool_info() if i['user_api'] == 'blas'}))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout)


@pytest.mark.skipif(not {"avx2", "fma"} <= _cpu_flags(), reason="needs an x86-64 CPU with AVX2 and FMA")
def test_a_fresh_process_runs_numpy_and_scipy_on_the_pinned_kernel():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "LYSEP_NATIVE_BLAS")}
    assert _kernels(env) == ["Haswell"]
    # a user's kernel is kept (Sandybridge runs on any AVX machine)
    assert _kernels({**env, "OPENBLAS_CORETYPE": "Sandybridge"}) == ["Sandybridge"]


def test_records_say_which_kernel_ran(tmp_path):
    config = write_tiny(tmp_path)
    results = tmp_path / "results"
    r = CliRunner().invoke(app, ["run", "elliptic-2d", "--sizes", "3x6", "--seeds", "0", "--solver", "pinn",
                                 "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    versions = json.loads((results / "elliptic-2d/pinn/L3-M6/seed-0.json").read_text())["versions"]
    assert versions["blas_core"] and "openblas" in versions["blas"].lower()
    assert versions["machine"].endswith(f"{os.cpu_count()} CPUs")  # the CPU, for the archive's timing


def test_a_mismatch_names_what_differs_on_the_platform():
    rec = type("R", (), {"experiment": "e", "solver": "lysep", "L": 3, "M": 30, "seed": 8, "diagnostics": {}})()
    line = Check(rec, 3.4e-3, "weights W3", False, "tolerant", 1e-11, ("blas_core: Haswell -> SkylakeX",)).line()
    assert line.startswith("MISMATCH") and "platform differs: blas_core: Haswell -> SkylakeX" in line
    ok = Check(rec, 3.4e-12, "weights W3", False, "tolerant", 1e-11, ("blas_core: Haswell -> SkylakeX",)).line()
    assert ok.startswith("ok") and "platform differs" not in ok


def _first_import_line(tree: "ast.Module", names: set[str]) -> int | None:
    """Line of the first import (anywhere in the file) of one of ``names`` (top-level package names)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods = [node.module]
        else:
            continue
        if any(m.split(".")[0] in names for m in mods):
            lines.append(node.lineno)
    return min(lines) if lines else None


@pytest.mark.parametrize("script", sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "studies").glob("*.py")]),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_benchmarks_import_lysep_before_numpy(script):
    """A script that loads NumPy before lysep_cli runs OpenBLAS's native kernel, not the pinned one,
    so its numbers need not match the archive's (the pin only acts before NumPy loads)."""
    tree = ast.parse(script.read_text())
    numpy_at = _first_import_line(tree, {"numpy", "scipy", "pandas", "matplotlib", "torch"})
    lysep_at = _first_import_line(tree, {"lysep_cli"})
    if numpy_at is not None:
        assert lysep_at is not None and lysep_at < numpy_at, f"{script.name}: numpy at line {numpy_at}"


def test_ci_reruns_one_archived_run_of_every_solver_on_the_archive_platform():
    """.ci/run's declarations step names every solver the archive holds, each in an experiment whose
    cheapest archived run (the one `lysep verify --sample 1 --cheapest` reruns) was made on the archive's
    main platform: there, a wrong SAME_BITS_AS declaration cannot pass the exact level."""
    import re
    from collections import Counter

    from lysep_cli.store.fingerprint import EXACT_KEYS, bits_of

    text = (ROOT / ".ci" / "run").read_text()
    declared = dict(pair.split(":") for pair in re.search(r"declared=\(([^)]*)\)", text).group(1).split())
    made = {}
    for f in sorted((ROOT / "results" / "paper").glob("*/*/L*/seed-*.json")):
        rec = json.loads(f.read_text())
        made.setdefault((rec["solver"], rec["experiment"]), []).append(rec)
    assert set(declared) == {solver for solver, _ in made}
    platform = lambda v: tuple(bits_of(v[k]) if k == "numerics" else v.get(k) for k in EXACT_KEYS)  # noqa: E731
    main = Counter(platform(r["versions"]) for runs in made.values() for r in runs).most_common(1)[0][0]
    for solver, experiment in declared.items():
        cheapest = min(made[(solver, experiment)], key=lambda r: r["seconds"])
        assert platform(cheapest["versions"]) == main, (solver, experiment)


def test_shell_exports_carry_the_pins_to_a_process_started_elsewhere():
    """`eval "$(...shell_exports())"` before a process that loads NumPy first gives it the pins."""
    from lysep_cli.platform_pin import shell_exports

    assert shell_exports({}) == ""
    env = {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL", "HOME": "/x"}
    assert shell_exports(env) == ("export OPENBLAS_CORETYPE='Haswell'\n"
                                  "export NPY_DISABLE_CPU_FEATURES='X86_V4 AVX512_ICL'\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    script = (f"eval \"$({sys.executable} -c 'import lysep_cli.platform_pin as p; print(p.shell_exports(), end=\"\")')\"; "
              f"{sys.executable} -c 'import numpy, lysep_cli; from lysep_cli.store import fingerprint as f; "
              "print(f.pins_not_in_force())'")
    out = subprocess.run(["bash", "-c", script], env=clean, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
