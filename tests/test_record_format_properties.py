"""The record on disk, property-based (hypothesis): any history round-trips through the NPZ bit for bit.
Skipped where hypothesis is not installed (a GPU image: `pytest -m gpu tests` must still collect)."""

from __future__ import annotations

import pytest

from lysep_cli.store import records
from lysep_cli.specs import default_config, load_specs

from foundation_helpers import store, synthetic_record

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

SPEC = load_specs(default_config())["elliptic-2d"]

_VALUES = hs.one_of(hs.none(), hs.floats(allow_nan=False, allow_infinity=False),
                    hs.sampled_from([0.0, -0.0, 5e-324, 1.7976931348623157e308, -2.2250738585072014e-308]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(J=hs.lists(_VALUES, min_size=2, max_size=12), with_JS=hs.booleans())
def test_any_history_round_trips_bit_for_bit(tmp_path, J, with_JS):
    import math
    import struct

    history = {"J": J, "J_S": [None if x is None else -x for x in J] if with_JS else None}
    rec, params = synthetic_record(SPEC, "pinn", 3, 6, 0, J=1.0, l2=0.5, iterations=len(J) - 1, history=history)
    store(tmp_path, rec, params)
    back = records.read_record(records.record_paths(tmp_path, *rec.cell)[0])
    for name, series in history.items():
        got = back.history[name]
        if series is None:
            assert got is None
            continue
        assert [None if x is None else struct.pack("<d", x) for x in series] == \
               [None if x is None else struct.pack("<d", x) for x in got]  # the bits, -0.0 included
        assert all(x is None or math.isfinite(x) for x in got)
