"""The regenerated archive's experiments file (results/regen/experiments.yaml, `make regenerate`) is the
project's experiments.yaml with one change, LySep's back-off on: an edit to one that the other does not
follow would make the two archives differ in more than their kernels."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lysep_cli.specs import load_specs

ROOT = Path(__file__).resolve().parents[1]


def test_the_regeneration_file_differs_from_the_spec_only_in_lyseps_backoff():
    spec = load_specs(ROOT / "experiments.yaml")
    regen = load_specs(ROOT / "results" / "regen" / "experiments.yaml")
    assert list(regen) == list(spec)
    for name, s in spec.items():
        r = regen[name]
        assert set(r.solvers) == set(s.solvers), name
        for solver, settings in s.solvers.items():
            if solver == "lysep":
                assert settings.backoff_max == 0 and r.solvers[solver].backoff_max == 16, name
                assert dataclasses.replace(r.solvers[solver], backoff_max=0) == settings, name
            else:
                assert r.solvers[solver] == settings, (name, solver)
        assert dataclasses.replace(r, solvers=s.solvers) == s, name
