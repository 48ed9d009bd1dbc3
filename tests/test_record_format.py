"""The record JSON: histories on one line, the same values as the plain dump, and read back unchanged."""

from __future__ import annotations

import json

from lysep_cli import records
from lysep_cli.specs import default_config, load_specs

from foundation_helpers import store, synthetic_record

SPEC = load_specs(default_config())["elliptic-2d"]


def test_histories_are_one_line_each_and_the_values_are_unchanged(tmp_path):
    history = {"J": [1.5, -2.5e-07, None, 0.30000000000000004, 7.0], "J_S": None}
    rec, params = synthetic_record(SPEC, "pinn", 3, 6, 0, J=7.0, l2=0.5, iterations=4, history=history)
    text = records.record_text(rec)
    assert '"J": [1.5,-2.5e-07,null,0.30000000000000004,7.0]' in text
    assert json.loads(text) == json.loads(json.dumps(rec.to_json(), indent=1))
    assert len(text) < len(json.dumps(rec.to_json(), indent=1))
    store(tmp_path, rec, params)
    json_path, _ = records.record_paths(tmp_path, *rec.cell)
    assert records.read_record(json_path) == rec
    assert json_path.read_text() == text
