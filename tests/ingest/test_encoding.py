"""The records the ingest builds are byte for byte apm.wire's encoding of the same samples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.model import topic_for
from apm.wire import encode_chunks
from ingest.publisher import to_records
from ingest.validate import Validator

pytestmark = pytest.mark.unit

NOW = 1_763_800_000.0
names = st.from_regex(r"[a-z][a-z0-9_.\-]{0,12}", fullmatch=True)
values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(2**53), max_value=2**53),
)
snapshots = st.lists(
    st.fixed_dictionaries(
        {
            "server": st.from_regex(r"[a-z0-9][a-z0-9\-]{0,10}", fullmatch=True),
            "ts": st.floats(min_value=NOW - 3600, max_value=NOW + 60),
            "metrics": st.dictionaries(names, values, min_size=1, max_size=5),
        }
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(snapshots, st.integers(min_value=20, max_value=400))
def test_records_equal_wire_encode_chunks(snaps, max_bytes):
    batch = Validator(10_000, 300, 86_400, clock=lambda: NOW).validate({"snapshots": snaps})
    records = to_records(batch.by_metric, max_bytes)
    for metric in {m for s in snaps for m in s["metrics"]}:
        rows = [
            (s["server"], s["ts"], s["metrics"][metric]) for s in snaps if metric in s["metrics"]
        ]
        assert records[topic_for(metric)] == list(encode_chunks(rows, max_bytes))
    assert batch.samples == sum(len(s["metrics"]) for s in snaps)


def test_validator_uses_the_injected_clock():
    validator = Validator(10, 300, 60, clock=lambda: 1000.0)
    batch = validator.validate({"snapshots": [{"server": "a", "ts": 950, "metrics": {"x": 1}}]})
    assert batch.samples == 1
    with pytest.raises(Exception, match="older than the retention"):
        validator.validate({"snapshots": [{"server": "a", "ts": 900, "metrics": {"x": 1}}]})
