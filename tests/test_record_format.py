"""The record on disk: histories in the NPZ bit for bit (schema 3), schema-2 records still read, and
compact_record turning the one into the other without changing a number."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lysep_cli.store import records
from lysep_cli.store.schema import RecordError
from lysep_cli.specs import default_config, load_specs

from foundation_helpers import store, synthetic_record

SPEC = load_specs(default_config())["elliptic-2d"]
HISTORY = {"J": [1.5, -2.5e-07, None, 0.30000000000000004, 7.0], "J_S": None}


def _schema2(tmp_path, rec, params):
    """Write ``rec`` the way lysep wrote records before schema 3: histories in the JSON, weights-only NPZ."""
    json_path, npz_path = records.record_paths(tmp_path, *rec.cell)
    data = records.npz_bytes(records.params_to_arrays(params))
    old = rec.with_(schema=2, weights_sha256=records.sha256(data))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    npz_path.write_bytes(data)
    json_path.write_text(json.dumps(old.to_json(), indent=1))
    return json_path, old


def test_histories_live_in_the_npz_bit_for_bit(tmp_path):
    rec, params = synthetic_record(SPEC, "pinn", 3, 6, 0, J=7.0, l2=0.5, iterations=4, history=HISTORY)
    text = records.record_text(rec)
    obj = json.loads(text)
    assert obj["schema"] == 3 and obj["history"] == {"J": "npz", "J_S": None}
    store(tmp_path, rec, params)
    json_path, npz_path = records.record_paths(tmp_path, *rec.cell)
    assert json_path.read_text() == text
    with np.load(npz_path) as z:
        assert sorted(z.files) == ["W1", "W2", "W3", "b1", "b2", "b3", "history_J"]
        assert z["history_J"].dtype == np.float64 and np.isnan(z["history_J"][2])
        assert z["history_J"][3] == 0.30000000000000004
    back = records.read_record(json_path)
    assert back == rec and back.history["J"] == HISTORY["J"]
    assert [W.shape for W, _ in records.load_params(npz_path)] == [(6, 2), (6, 6), (1, 6)]


def test_a_finite_history_reads_back_as_the_same_floats(tmp_path):
    # the NPZ's float64 series are not re-checked entry by entry (records._parse): the same values come back
    finite = {"J": [1.5, -2.5e-07, 1e-300, 0.30000000000000004, 7.0], "J_S": [2.0, 1.0, 0.5, 0.25, 0.125]}
    rec, params = synthetic_record(SPEC, "pinn", 3, 6, 0, J=7.0, l2=0.5, iterations=4, history=finite)
    store(tmp_path, rec, params)
    back = records.read_record(records.record_paths(tmp_path, *rec.cell)[0])
    assert back == rec and back.history == finite
    assert all(type(x) is float for s in back.history.values() for x in s)


def test_a_history_altered_in_the_npz_is_caught_by_the_sha256(tmp_path):
    rec, params = synthetic_record(SPEC, "pinn", 3, 6, 0, J=7.0, l2=0.5, iterations=4, history=HISTORY)
    store(tmp_path, rec, params)
    json_path, npz_path = records.record_paths(tmp_path, *rec.cell)
    altered = {**rec.history, "J": [1.5, -2.5e-07, None, 0.3, 7.0]}
    npz_path.write_bytes(records.run_npz_bytes(params, altered))
    with pytest.raises(RecordError, match="does not match the record's sha256"):
        records.read_record(json_path)
    npz_path.write_bytes(records.npz_bytes(records.params_to_arrays(params)))  # weights only
    obj = json.loads(json_path.read_text())
    obj["weights_sha256"] = records.sha256(npz_path.read_bytes())
    json_path.write_text(json.dumps(obj))
    with pytest.raises(RecordError, match="has no array 'history_J'"):
        records.read_record(json_path)


def test_schema_2_records_still_read_and_compact_to_the_same_record(tmp_path):
    rec, params = synthetic_record(SPEC, "lysep", 3, 6, 1, J=2e-5, J_S=1e-5, l2=3e-3, iterations=30)
    json_path, old = _schema2(tmp_path, rec, params)
    before = json_path.stat().st_size + json_path.with_suffix(".npz").stat().st_size
    assert records.read_record(json_path) == old
    assert records.compact_record(json_path) is True
    after = json_path.stat().st_size + json_path.with_suffix(".npz").stat().st_size
    new = records.read_record(json_path)
    assert new.schema == 3 and new.history == old.history and new.final == old.final
    assert new == old.with_(schema=3, weights_sha256=new.weights_sha256)
    assert [np.array_equal(a, b) for (a, _), (b, _) in zip(records.load_params(json_path.with_suffix(".npz")),
                                                           params)] == [True] * 3
    assert after < before
    assert records.compact_record(json_path) is False  # already compact: nothing touched
    assert records.read_record(json_path) == new


def test_compact_command_rewrites_a_folder_and_refuses_bad_input(tmp_path, capsys):
    from lysep_cli.store import compact

    rec, params = synthetic_record(SPEC, "pinn", 3, 6, 0, J=7.0, l2=0.5, iterations=40)
    _schema2(tmp_path, rec, params)
    rec1, params1 = synthetic_record(SPEC, "pinn", 3, 6, 1, J=6.0, l2=0.4, iterations=40)
    store(tmp_path, rec1, params1)  # already schema 3
    broken, _ = records.record_paths(tmp_path, "elliptic-2d", "pinn", 3, 6, 2)
    broken.write_text("{")
    assert compact.main([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "1 record(s) rewritten in schema 3" in out and "1 already compact, 1 not readable" in out
    assert "seed-2.json: not compacted (not valid JSON" in err
    assert records.read_record(records.record_paths(tmp_path, *rec.cell)[0]).schema == 3
    assert compact.main([str(tmp_path / "nowhere")]) == 2 and compact.main([]) == 2
    assert "is not a folder" in capsys.readouterr().err
