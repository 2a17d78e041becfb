"""The JVM decode of Kafka record values (``aggregator.records.decode``, ``Decode`` in Java)
against v3's SQL decode (``decode_sql``) on the same records: the same rows, line for line,
for the ingest's own lines and for foreign bytes (odd numbers, wrong field counts, invalid
UTF-8, empty lines), so the malformed lines it drops are exactly those dropped before."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aggregator.records import decode, decode_sql
from apm.model import topic_for
from apm.wire import encode_chunks

pytestmark = pytest.mark.integration

_NUMBERS = [
    "1", "-0.0", "1e400", "-1e400", "NaN", "nan", " NaN ", "inf", "-Infinity", "+INF", "0x1p3",
    "1.5d", "2f", " 3 ", "1e-400", "5e-324", "", "+", "1_0", "\u0661", "1.7e308", "\x01 2",
]  # fmt: skip
_field = st.one_of(
    st.sampled_from(_NUMBERS),
    st.floats().map(repr),
    st.text(alphabet="0123456789.e-+ \tnaifINF", max_size=8),
)
_line = st.one_of(
    st.tuples(st.text(max_size=6), _field, _field).map(lambda t: "\t".join(t).encode()),
    st.lists(_field, max_size=5).map(lambda f: "\t".join(f).encode()),
    st.binary(max_size=12),
    st.builds(lambda b: b + b"\t1\t2", st.binary(max_size=4)),  # servers of any bytes
)
_record = st.lists(_line, min_size=1, max_size=6).map(b"\n".join)


def _raw(spark, values: list[bytes | None]):
    arrived = datetime.fromtimestamp(1_700_000_000.25, UTC)
    rows = [(topic_for("cpu.util"), None if v is None else bytearray(v), arrived) for v in values]
    return spark.createDataFrame(rows, "topic string, value binary, timestamp timestamp")


def _rows(frame) -> list[tuple]:
    """Comparable rows: NaN as text (it is not equal to itself), in a stable order."""

    def key(x):
        return repr(x) if isinstance(x, float) and math.isnan(x) else x

    out = [tuple(key(x) for x in r) for r in frame.collect()]
    return sorted(out, key=repr)


def test_the_ingests_records_decode_to_the_same_rows(spark):
    rows = [(f"web-{i % 7}", 1_700_000_000 + i / 3, i * 0.1 - 5) for i in range(2_000)]
    raw = _raw(spark, [*encode_chunks(rows, max_bytes=4_000), None])
    got = _rows(decode(raw))
    assert len(got) == len(rows)
    assert got == _rows(decode_sql(raw))
    assert got[0][0] == "cpu.util" and got[0][4] == 1_700_000_000.25


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_record, min_size=1, max_size=40))
def test_foreign_bytes_decode_to_the_same_rows_as_the_sql_decode(spark, values):
    raw = _raw(spark, values)
    assert _rows(decode(raw)) == _rows(decode_sql(raw))
