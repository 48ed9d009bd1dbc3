"""The regenerated archive's experiments file (results/regen/experiments.yaml, `make regenerate`) is the
project's experiments.yaml: an edit to one that the other does not follow would make the two archives
differ in more than their kernels."""

from __future__ import annotations

from pathlib import Path

from lysep_cli.specs import load_specs

ROOT = Path(__file__).resolve().parents[1]


def test_the_regeneration_file_is_the_spec():
    spec = load_specs(ROOT / "experiments.yaml")
    regen = load_specs(ROOT / "results" / "regen" / "experiments.yaml")
    assert list(regen) == list(spec)
    for name, s in spec.items():
        assert regen[name] == s, name
