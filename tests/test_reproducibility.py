"""Reproducible on any machine: the platform fingerprint, the per-run tolerance rule, the cell-level
statistics (their power), and `lysep verify --against` / `--cells` on real archives made on two kernels."""

from __future__ import annotations

import json
import math
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from lysep_cli.reports import cellstats
from lysep_cli.store import fingerprint, records
from lysep_cli.reports import verify
from lysep_cli.cli import app
from lysep_cli.platform_pin import _cpu_flags, avx512_targets, pin_numpy_simd
from lysep_cli.store.schema import Final

from foundation_helpers import write_tiny

cli = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
AVX512 = {"avx", "avx2", "fma", "avx512f"}


# ---------------------------------------------------------------------------------------------
# The NumPy SIMD pin.

def test_switches_numpy_avx512_off_on_an_avx512_x86_machine():
    env: dict[str, str] = {}
    assert pin_numpy_simd(env, "x86_64", AVX512) == " ".join(avx512_targets())
    assert env["NPY_DISABLE_CPU_FEATURES"].split() == list(avx512_targets())


@pytest.mark.parametrize("env, machine, flags", [
    ({"NPY_DISABLE_CPU_FEATURES": "AVX2"}, "x86_64", AVX512),  # the user's choice wins
    ({"NPY_ENABLE_CPU_FEATURES": "AVX512F"}, "x86_64", AVX512),
    ({"LYSEP_NATIVE_SIMD": "1"}, "x86_64", AVX512),             # opted out
    ({}, "aarch64", {"asimd"}),                                 # not x86
    ({}, "x86_64", {"avx", "avx2", "fma"}),                     # AVX2 only: already on the pinned paths
])
def test_the_simd_pin_leaves_the_environment_alone(env, machine, flags):
    before = dict(env)
    assert pin_numpy_simd(env, machine, flags) is None
    assert env == before


def test_numpy_target_names_follow_its_version():
    assert avx512_targets((2, 4)) == ("X86_V4", "AVX512_ICL", "AVX512_SPR")
    assert "AVX512_SKX" in avx512_targets((1, 26)) and "X86_V4" not in avx512_targets((2, 3))


def _fresh(code: str, env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-W", "error::ImportWarning", "-c", code], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _clean_env() -> dict[str, str]:
    drop = ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "LYSEP_NATIVE_SIMD")
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_a_fresh_process_records_the_simd_it_runs_without_a_numpy_warning():
    simd = _fresh("import lysep_cli; from lysep_cli.store.fingerprint import numpy_simd; print(numpy_simd())",
                  _clean_env())
    if {"avx2", "fma"} <= _cpu_flags():
        assert "X86_V4" not in simd and "AVX512" not in simd  # the AVX-512 paths are off
    native = _fresh("import lysep_cli; from lysep_cli.store.fingerprint import numpy_simd; print(numpy_simd())",
                    {**_clean_env(), "LYSEP_NATIVE_SIMD": "1"})
    if any(f.startswith("avx512") for f in _cpu_flags()):
        assert native != simd


@pytest.mark.skipif(not any(f.startswith("avx512") for f in _cpu_flags()), reason="needs an AVX-512 CPU")
def test_the_pin_makes_exp_give_the_avx2_bits():
    """np.exp differs between NumPy's AVX-512 and AVX2 paths (the cause of the cross-machine mismatch);
    with the pin an AVX-512 machine gives the AVX2 bits."""
    code = ("import lysep_cli, numpy as np, hashlib; x = np.linspace(-3, 3, 100001); "
            "print(hashlib.sha256(np.exp(x).tobytes()).hexdigest())")
    pinned = _fresh(code, _clean_env())
    avx2 = _fresh(code, {**_clean_env(), "NPY_DISABLE_CPU_FEATURES": " ".join(avx512_targets())})
    native = _fresh(code, {**_clean_env(), "LYSEP_NATIVE_SIMD": "1"})
    assert pinned == avx2 != native


# ---------------------------------------------------------------------------------------------
# The fingerprint.

def test_fingerprint_keys_and_comparison():
    here = fingerprint.fingerprint()
    assert set(fingerprint.EXACT_KEYS) <= set(here) and len(here["numerics"]) == 16
    assert fingerprint.same_platform(here, dict(here))
    other = {**here, "blas_core": "Zen", "machine": "another CPU"}
    assert not fingerprint.same_platform(here, other)
    assert fingerprint.differing(here, other) == [f"blas_core: {here['blas_core']} -> Zen",
                                                  f"machine: {here['machine']} -> another CPU"]
    old = {"numpy": here["numpy"], "blas_core": here["blas_core"]}  # a record made before the fingerprint
    assert not fingerprint.same_platform(old, here)
    assert "numerics: unrecorded -> " + here["numerics"] in fingerprint.differing(old, here)


def test_a_numerics_id_declared_of_the_same_bits_is_the_same_platform(monkeypatch):
    """fingerprint.SAME_BITS_AS: a record of the earlier id is judged at the exact level by the later code
    (so one differing bit fails it); an undeclared id, or a declaration the other way round, is not."""
    here = fingerprint.fingerprint()
    earlier = {**here, "numerics": "0123456789abcdef"}
    assert not fingerprint.same_platform(earlier, here)
    monkeypatch.setattr(fingerprint, "SAME_BITS_AS", {here["numerics"]: "0123456789abcdef"})
    assert fingerprint.same_platform(earlier, here) and fingerprint.same_platform(here, earlier)
    assert not fingerprint.same_platform({**here, "numerics": "fedcba9876543210"}, here)
    assert fingerprint.bits_of("c", {"c": "b", "b": "a"}) == "a"  # a chain of bit-preserving edits
    assert fingerprint.bits_of("a", {"a": "b", "b": "a"}) in ("a", "b")  # a loop ends


def test_the_declared_same_bits_ids_are_well_formed():
    for later, earlier in fingerprint.SAME_BITS_AS.items():
        assert later != earlier and len(later) == len(earlier) == 16
        int(later, 16), int(earlier, 16)


# ---------------------------------------------------------------------------------------------
# The per-run tolerance rule.

class _Rec:
    def __init__(self, diagnostics, solver="rfls"):
        self.diagnostics, self.solver = diagnostics, solver


@pytest.mark.parametrize("diagnostics, expected", [
    ({"cond": 4.0e10}, 4.0e10 * verify.EPS),                 # rfls: kappa * eps
    ({"W3_system_cond_first": 1.0e9}, 1.0e9 * verify.EPS),   # LySep's first W_L system
    ({}, verify.TOL_FLOOR),                                  # gradient solvers: the floor
    ({"cond": 10.0}, verify.TOL_FLOOR),
    ({"cond": 4.0e16}, None),                                # kappa * eps > cap: no per-run verdict
])
def test_the_tolerance_comes_from_the_records_condition_number(diagnostics, expected):
    tol = verify.tolerance(_Rec(diagnostics))
    assert tol == (None if expected is None else pytest.approx(expected))


# ---------------------------------------------------------------------------------------------
# Cell statistics: power and calm.

class _Run:
    def __init__(self, seed, J, l2, experiment="e", solver="pinn"):
        self.experiment, self.solver, self.L, self.M, self.seed = experiment, solver, 3, 30, seed
        self.final = Final(J, None, l2)


def _cell(J, l2):
    return [_Run(s, j, e) for s, (j, e) in enumerate(zip(J, l2))]


RNG = np.random.default_rng(7)
WIDE_J = list(np.exp(RNG.normal(np.log(1e-5), 2.0, 10)))    # seeds spread over ~2 decades
TIGHT_J = list(np.exp(RNG.normal(np.log(1e-5), 0.05, 10)))  # seeds within 5 %
L2 = list(np.exp(RNG.normal(np.log(1e-3), 0.3, 10)))


@pytest.mark.parametrize("J", [WIDE_J, TIGHT_J])
def test_a_planted_3x_shift_of_J_over_a_cells_seeds_differs(J):
    c = cellstats.compare_cell(("e", "pinn", 3, 30), _cell(J, L2), _cell([3 * x for x in J], L2))
    assert c.verdict == "DIFFERS"
    assert c.tests[0].ratio == pytest.approx(3.0)


def test_a_small_consistent_shift_in_a_tight_cell_is_caught_by_the_rank_test():
    c = cellstats.compare_cell(("e", "lysep", 3, 30), _cell(TIGHT_J, L2), _cell([1.3 * x for x in TIGHT_J], L2))
    assert c.mode == "paired" and c.verdict == "DIFFERS"
    assert c.tests[0].p < cellstats.ALPHA and c.tests[0].ratio < cellstats.RATIO_BOUND


def test_round_off_differences_agree_and_a_diverged_run_counts_as_worst():
    noisy = [x * (1 + 1e-4 * (-1) ** i) for i, x in enumerate(WIDE_J)]
    c = cellstats.compare_cell(("e", "pinn", 3, 30), _cell(WIDE_J, L2), _cell(noisy, L2))
    assert c.mode == "per-seed" and c.verdict == "agrees" and c.tests[0].worst == pytest.approx(1e-4)
    c = cellstats.compare_cell(("e", "lysep", 3, 30), _cell(WIDE_J, L2), _cell(noisy, L2))
    assert c.mode == "paired" and c.verdict == "agrees" and c.tests[0].p > 0.1
    assert cellstats._values(_cell([1.0, None, math.nan], [1, 1, 1]), "J") == [1.0, math.inf, math.inf]


def test_identical_sets_agree_and_a_single_run_is_too_few():
    c = cellstats.compare_cell(("e", "pinn", 3, 30), _cell(WIDE_J, L2), _cell(WIDE_J, L2))
    assert c.verdict == "agrees" and c.tests[0].worst == 0.0 and c.tests[0].ratio == 1.0
    c = cellstats.compare_cell(("e", "lysep", 3, 30), _cell(WIDE_J, L2), _cell(WIDE_J, L2))
    assert c.verdict == "agrees" and c.tests[0].p == 1.0 and c.tests[0].ratio == 1.0
    one = cellstats.compare_cell(("e", "lysep", 3, 30), _cell(WIDE_J[:1], L2), _cell([WIDE_J[0] * (1 + 1e-9)], L2))
    assert one.verdict == "PARTIAL" and "too few: 1 seed(s), the paired test needs 8" in one.line()
    # unless bit-identical: an exact copy needs no test
    assert cellstats.compare_cell(("e", "lysep", 3, 30), _cell(WIDE_J[:1], L2), _cell(WIDE_J[:1], L2)).verdict == "agrees"
    # a solver judged seed by seed needs no more than one
    assert cellstats.compare_cell(("e", "pinn", 3, 30), _cell(WIDE_J[:1], L2), _cell(WIDE_J[:1], L2)).verdict == "agrees"


def test_a_seed_that_changes_regime_makes_the_cell_differ():
    # one seed of ten stays on a plateau 300x above the others (docs/results.md (b)): the geometric mean
    # moves 300 ** 0.1 = 1.77x, inside the ratio bound, but the seed changed regime, and the table's mean moved
    moved = [x * (300.0 if i == 3 else 1 + 1e-4) for i, x in enumerate(TIGHT_J)]
    c = cellstats.compare_cell(("e", "lysep", 3, 100), _cell(TIGHT_J, L2), _cell(moved, L2))
    assert c.verdict == "DIFFERS" and c.moved == ((3, TIGHT_J[3], moved[3]),)
    assert f"J moved 10x or more: seed 3 {TIGHT_J[3]:.3g} -> {moved[3]:.3g}" in c.line()
    assert "seed 3 changed regime (J x300)" in c.line() and "J mean x" in c.line()
    # exactly 10x is a change of regime, 9.9x is not (its J still moves the table's mean: within 2x here)
    for factor, regime in ((10.0, True), (-10.0, True), (9.9, False), (-9.9, False)):
        J = [x if i != 3 else x * factor if factor > 0 else x / -factor for i, x in enumerate(TIGHT_J)]
        assert bool(cellstats.compare_cell(("e", "lysep", 3, 100), _cell(TIGHT_J, L2), _cell(J, L2)).moved) is regime
    diverged = cellstats.compare_cell(("e", "lysep", 3, 100), _cell(TIGHT_J, L2), _cell(TIGHT_J[:9] + [None], L2))
    assert [m[0] for m in diverged.moved] == [9] and math.isinf(diverged.moved[0][2])
    assert cellstats.compare_cell(("e", "pinn", 3, 30), _cell(WIDE_J, L2), _cell(WIDE_J, L2)).moved == ()


def test_a_differing_cell_says_how_often_its_own_seeds_would_alarm_with_no_change():
    """The line of a cell that differs gives the share of random splits of the pooled runs whose ratio
    leaves the bound: ~0 for a tight cell with a real 3x shift, large for seeds spread over decades."""
    tight = cellstats.compare_cell(("e", "pinn", 3, 30), _cell(TIGHT_J, L2), _cell([3 * x for x in TIGHT_J], L2))
    assert tight.verdict == "DIFFERS" and tight.split_alarms is not None and tight.split_alarms < 0.01
    assert "puts the ratio outside the bound in 0 % of splits" in tight.line()
    wide = cellstats.compare_cell(("e", "pinn-lbfgs", 4, 50), _cell(WIDE_J, L2), _cell([3 * x for x in WIDE_J], L2))
    assert wide.verdict == "DIFFERS" and wide.split_alarms > 0.2
    again = cellstats.compare_cell(("e", "pinn-lbfgs", 4, 50), _cell(WIDE_J, L2), _cell([3 * x for x in WIDE_J], L2))
    assert again.split_alarms == wide.split_alarms  # seeded: the same figure every time
    agrees = cellstats.compare_cell(("e", "pinn", 3, 30), _cell(WIDE_J, L2), _cell(WIDE_J, L2))
    assert agrees.split_alarms is None and "splits" not in agrees.line()
    # by hand: the share of the 184756 ways to split 20 values into 10 + 10 with a ratio outside [1/2, 2]
    rng = np.random.default_rng(3)
    a, b = list(np.exp(rng.normal(0, 1.0, 10))), list(np.exp(rng.normal(0, 1.0, 10)))
    logs = np.log(a + b)
    from itertools import combinations
    total = logs.sum()
    outside = sum(abs((total - 2 * logs[list(c)].sum()) / 10) > math.log(2) for c in combinations(range(20), 10))
    assert cellstats.split_alarm_rate([a], [b], draws=20000) == pytest.approx(outside / 184756, abs=0.01)


# ---------------------------------------------------------------------------------------------
# Two real archives: one on this platform, one on another BLAS kernel (a fresh process).

def _run(config, results, env=None, solver="pinn"):
    cmd = [sys.executable, "-m", "lysep_cli.cli", "run", "elliptic-2d", "--solver", solver, "--sizes", "3x6",
           "--seeds", "0-5", "--iterations", "60", "--config", str(config), "--results", str(results)]
    out = subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def two_archives(tmp_path_factory):
    if not {"avx", "avx2", "fma"} <= _cpu_flags():
        pytest.skip("needs an x86-64 CPU with AVX2 (OpenBLAS's Sandybridge kernel as the other platform)")
    root = tmp_path_factory.mktemp("two")
    config = write_tiny(root)
    here, other = root / "here", root / "sandybridge"
    _run(config, here)
    _run(config, other, {"OPENBLAS_CORETYPE": "Sandybridge", "LYSEP_NATIVE_SIMD": "1"})
    return config, here, other


def _cli(config, results, *args):
    return cli.invoke(app, ["verify", "elliptic-2d", "--config", str(config), "--results", str(results),
                            "--iterations", "60", *args])


def _json(results, seed):
    return results / "elliptic-2d" / "pinn" / "L3-M6" / f"seed-{seed}.json"


def test_the_other_kernel_really_changes_the_bits_and_is_recorded(two_archives):
    _, here, other = two_archives
    a, b = json.loads(_json(here, 0).read_text()), json.loads(_json(other, 0).read_text())
    assert b["versions"]["blas_core"] == "Sandybridge" != a["versions"]["blas_core"]
    assert a["weights_sha256"] != b["weights_sha256"]


def test_a_rerun_on_another_kernel_passes_per_run_and_per_cell(two_archives):
    config, here, other = two_archives
    r = _cli(config, other, "--all")
    assert r.exit_code == 0, r.output
    assert "(levels: tolerant 6)" in r.output and "blas_core: Sandybridge -> " not in r.output  # ok lines are short
    r = _cli(config, here, "--against", str(other))
    assert r.exit_code == 0, r.output
    assert "agrees    elliptic-2d pinn L3-M6: n 6/6" in r.output and "1 of 1 cell(s) agree" in r.output
    r = _cli(config, other, "--cells", "pinn:3x6")
    assert r.exit_code == 0, r.output
    assert "1 of 1 cell(s) reproduce the archive (level statistical)" in r.output


def test_an_archive_with_one_cells_J_tripled_fails_against(two_archives, tmp_path):
    config, here, other = two_archives
    copy = tmp_path / "copy"
    shutil.copytree(other, copy)
    for seed in range(6):
        path = _json(copy, seed)
        obj = json.loads(path.read_text())
        obj["final"]["J"] *= 3
        path.write_text(json.dumps(obj))
        path.write_text(records.record_text(records.read_record(path)))  # resealed: the cell rule must see it
    r = _cli(config, here, "--against", str(copy))
    assert r.exit_code == 1, r.output
    assert "DIFFERS   elliptic-2d pinn L3-M6: n 6/6; J" in r.output and "(x3" in r.output
    assert "0 of 1 cell(s) agree; 1 differ" in r.output


@pytest.mark.parametrize("args, needle", [
    (["--level", "loose"], "--level: unknown value 'loose'"),
    (["--cells", "pinn"], "--cells: expected SOLVER:LxM"),
    (["--cells", "magic:3x6"], "--solver"),
    (["--against", "/nonexistent/dir"], "--against /nonexistent/dir: no such directory"),
    (["--weights", "--cells", "pinn:3x6"], "exclude each other"),
])
def test_bad_verify_input_is_one_line_and_exit_2(tmp_path, args, needle):
    config = write_tiny(tmp_path)
    r = cli.invoke(app, ["verify", "--config", str(config), "--results", str(tmp_path), *args])
    assert r.exit_code == 2, r.output
    assert needle in r.output and len(r.output.strip().splitlines()) == 1


def test_an_ill_conditioned_run_sends_its_cell_to_the_statistical_level(tmp_path):
    """rfls in 2-D has kappa = 1e15..1e17: no per-run tolerance; auto reruns its (cheap) cell instead."""
    from foundation_helpers import PINN, experiment_yaml, experiments_yaml

    config = write_tiny(tmp_path, experiments_yaml(experiment_yaml("elliptic-2d", {"pinn": PINN, "rfls": "{}"},
                                                                   table=1, seeds=[0, 1, 2])))
    results = tmp_path / "results"
    r = cli.invoke(app, ["run", "elliptic-2d", "--solver", "rfls", "--config", str(config), "--results", str(results)])
    assert r.exit_code == 0, r.output
    for seed in range(3):  # as if made on another platform, with an ill-conditioned system
        path = results / "elliptic-2d" / "rfls" / "L3-M6" / f"seed-{seed}.json"
        obj = json.loads(path.read_text())
        obj["versions"]["blas_core"] = "Sandybridge"
        obj["diagnostics"]["cond"] = 1e17
        obj["final"]["l2"] *= 1 + 1e-12  # round-off of the other platform
        path.write_text(json.dumps(obj))
        path.write_text(records.record_text(records.read_record(path)))  # sealed as if made so
    v = cli.invoke(app, ["verify", "--sample", "3", "--config", str(config), "--results", str(results)])
    assert v.exit_code == 0, v.output
    assert v.output.count("kappa*eps = 2.2e+01 > 0.01, no per-run tolerance") == 3
    assert "statistical level for 1 cell(s) of runs no per-run check can verify" in v.output
    assert "agrees    elliptic-2d rfls L3-M6: n 3/3" in v.output and "(levels: ill-conditioned 3, statistical 1)" in v.output


def test_the_weights_pass_holds_on_another_kernel_for_an_ill_conditioned_fit_and_still_catches_a_change(
        tmp_path):
    """rfls on the paper's initialisation cancels terms of size 1e6 (kappa 1e10+): re-evaluated on another
    BLAS kernel its J and l2 move far beyond 1e-9, and the tolerance follows the run's one-ulp sensitivity."""
    if not {"avx", "avx2", "fma"} <= _cpu_flags():
        pytest.skip("needs an x86-64 CPU with AVX2 (OpenBLAS's Sandybridge kernel as the other platform)")
    from foundation_helpers import PINN, experiment_yaml, experiments_yaml
    from lysep_cli.store import records

    config = write_tiny(tmp_path, experiments_yaml(experiment_yaml(
        "elliptic-2d", {"pinn": PINN, "rfls": "{}"}, table=1, sizes=[[3, 40]], n_train=300, seeds=[0, 1])))
    results = tmp_path / "results"
    assert cli.invoke(app, ["run", "elliptic-2d", "--solver", "rfls", "--config", str(config),
                            "--results", str(results)]).exit_code == 0
    cmd = [sys.executable, "-m", "lysep_cli.cli", "verify", "--weights", "--all", "--config", str(config),
           "--results", str(results)]
    other = {**os.environ, "OPENBLAS_CORETYPE": "Sandybridge"}
    out = subprocess.run(cmd, env=other, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    diffs = [float(m) for m in re.findall(r"largest relative difference ([0-9.e+-]+)", out.stdout)]
    assert diffs and max(diffs) > 1e-7  # far beyond a fixed 1e-9: the sensitivity rule is what passes it
    path = results / "elliptic-2d" / "rfls" / "L3-M40" / "seed-1.json"
    rec, params = records.read_record(path), records.load_params(path.with_suffix(".npz"))
    W1 = params[0][0].copy()
    W1[0, 0] += 1e-6
    params = [(W1, params[0][1])] + params[1:]
    records.write_record(results, rec.with_(weights_sha256=records.sha256(records.run_npz_bytes(params, rec.history))),
                         params)
    out = subprocess.run(cmd, env=other, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 1 and "MISMATCH  elliptic-2d rfls L3-M40 seed 1: weights" in out.stdout, out.stdout
