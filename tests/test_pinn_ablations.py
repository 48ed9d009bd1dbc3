"""studies/pinn_ablations.py: the run plan and resuming (no long runs; its PyTorch-default start is the solvers'
setting ``init: torch``, tests/test_init_setting.py)."""

import lysep_cli  # noqa: F401

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from lysep_cli.specs import default_config, load_specs

SCRIPT = Path(__file__).resolve().parents[1] / "studies" / "pinn_ablations.py"


@pytest.fixture(scope="module")
def pa():
    spec = importlib.util.spec_from_file_location("pinn_ablations", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_plan_sizes_and_settings(pa):
    specs = load_specs(default_config())
    c = pa.plan("c", specs, None, None)
    assert len(c) == 2 * len(pa.LR_FACTORS) * 10
    lrs = sorted({j[6] for j in c})
    assert len(lrs) >= 8 and 3e-3 in lrs and all(abs(j[7] / j[6] - 0.1) < 1e-9 for j in c)
    b = pa.plan("b", specs, None, None)
    assert {(j[3], j[8]) for j in b} == {(30, 20000), (100, 20000)} and {j[4] for j in b} == {0, 1, 2}
    d = pa.plan("d", specs, None, None)
    assert {(j[3], j[6], j[7]) for j in d} == {(150, 1e-2, 1e-3)}
    a10 = pa.plan("a-10d", specs, None, None) + pa.plan("a-10d-150", specs, None, None)
    assert sorted({(j[3], len([k for k in a10 if k[3] == j[3]])) for j in a10}) == [(20, 10), (50, 10), (100, 10),
                                                                                   (150, 3)]
    assert all(j[5] == "torch" for j in a10)


def test_resume_skips_rows_already_written(pa, tmp_path):
    specs = load_specs(default_config())
    (job,) = pa.plan("c", specs, 3, [0])[:1]
    part, spec, L, M, seed, init, lr, lr_final, iterations = job
    row = {"part": part, **pa.run_one(spec, L, M, seed, init, lr, lr_final, iterations)}
    assert row["status"] == "ok" and np.isfinite(row["J"])
    out = tmp_path / "x.csv"
    pa.append_row(out, row)
    (back,) = pa.read_rows(out)
    assert pa.key_of(back) == (part, spec.name, L, M, seed, init, f"{lr:.6g}", iterations)
