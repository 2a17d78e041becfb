"""The JVM decode of Kafka record values (``aggregator.records.decode``, ``Decode`` in Java)
against v3's SQL decode (``decode_sql``) on the same records: the same rows, line for line,
for the ingest's own lines and for foreign bytes (odd numbers, wrong field counts, invalid
UTF-8, empty lines), so the malformed lines it drops are exactly those dropped before; and the
packs of v4's step b (``records.packs``) against the plan's SQL up to step e: the same samples
under the same dedup keys (the operator's state key)."""

from __future__ import annotations

import math
import struct
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from aggregator.partials import DEDUP_BLOCK_SECONDS, DEDUP_BUCKETS
from aggregator.records import decode, decode_sql, packs
from aggregator.skew import on_time
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


def _unpacked(frame) -> list[tuple]:
    """``records.packs`` rows as one (dedup_key, server, micros, ts, value) per sample, after
    checking each pack's event time is its newest sample's (``io.apm.aggregator.Pack``)."""
    out = []
    for key, event_time, pack in frame.select(
        "dedup_key", F.unix_micros("event_time"), "pack"
    ).collect():
        at, micros_seen = 0, []
        while at < len(pack):
            (n,) = struct.unpack_from(">i", pack, at)
            server = bytes(pack[at + 4 : at + 4 + n]).decode()
            micros, ts, value, _digits = struct.unpack_from(">qddq", pack, at + 4 + n)
            at += 4 + n + 32
            micros_seen.append(micros)
            out.append((key, server, micros, ts, value))
        assert event_time == max(micros_seen)
    return sorted(out, key=repr)


def _keyed_sql(raw, tolerance_s: int) -> list[tuple]:
    """What the plan's SQL did with the same records up to v4's step e: decode, set aside the
    samples ahead of their arrival, the event time, and the dedup key (the operator's state
    key, so it must not change)."""
    samples = on_time(decode_sql(raw), tolerance_s).where(~F.isnan("ts"))
    micros = F.unix_micros(F.timestamp_seconds("ts"))
    key = F.concat_ws(
        "|",
        "metric",
        F.pmod(F.xxhash64("server"), F.lit(DEDUP_BUCKETS)).cast("string"),
        F.floor(micros / F.lit(DEDUP_BLOCK_SECONDS * 1_000_000)).cast("string"),
    )
    return _rows(samples.select(key, "server", micros, "ts", "value"))


_server = st.text(
    alphabet=st.characters(exclude_characters="\t\n\r", exclude_categories=("Cs",)),
    min_size=1,
    max_size=8,
)
_ts = st.one_of(
    st.floats(1_699_999_000, 1_700_001_000),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e13, max_value=1e13),
    st.sampled_from([0.0, -0.0, -1.5e-6, 5e-324, 1_700_000_008.0, 1_700_000_007.999999, 9.3e12]),
)
_sample = st.tuples(_server, _ts, st.floats(allow_nan=False, allow_infinity=False))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.lists(_sample, min_size=1, max_size=30), min_size=1, max_size=8),
    st.sampled_from([0, 30, 300]),
)
def test_packs_hold_the_samples_and_dedup_keys_the_sql_plan_made(spark, records, tolerance_s):
    values = [b"\n".join(f"{s}\t{t!r}\t{v!r}".encode() for s, t, v in r) for r in records]
    raw = _raw(spark, values)
    got = _unpacked(packs(raw, DEDUP_BUCKETS, DEDUP_BLOCK_SECONDS * 1_000_000, tolerance_s))
    assert got == _keyed_sql(raw, tolerance_s)


def test_a_pack_is_one_record_under_one_key_and_nan_times_are_left_out(spark):
    raw = _raw(spark, [b"a\t1700000000.5\t1\nb\t1700000001\t2\na\tNaN\t3\na\t1700000009\t4"])
    rows = packs(raw, DEDUP_BUCKETS, DEDUP_BLOCK_SECONDS * 1_000_000).collect()
    keys = sorted(r["dedup_key"] for r in rows)
    assert len(keys) == len(set(keys)) == len(rows) <= 3
    assert len(_unpacked(packs(raw, DEDUP_BUCKETS, DEDUP_BLOCK_SECONDS * 1_000_000))) == 3
