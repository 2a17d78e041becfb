"""aggregator/seen.py: the newest times and skew counts gathered in the windows stream's pass
(the JVM side is io.apm.aggregator.SeenTest; the real streams are in test_stream.py,
test_poison.py and the Spark test below)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aggregator.seen import Batch, Touches, parse


@pytest.mark.unit
def test_parse_reads_servers_metrics_and_set_aside_counts():
    text = "S\tweb-1\t1700000001.5\nM\tcpu\t1700000001.5\t2\t0\nM\tmem\t\t1\t3\n"
    assert parse(text) == Batch(
        {"web-1": 1700000001.5},
        {"cpu": 1700000001.5},
        [
            {"metric": "cpu", "future": 2, "backlog": 0},
            {"metric": "mem", "future": 1, "backlog": 3},
        ],
    )
    assert parse("") == Batch({}, {}, [])
    with pytest.raises(ValueError, match="not a line"):
        parse("X\tweird")


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.unit
def test_touches_write_the_maxima_at_most_every_interval_and_keep_them_on_failure():
    writes: list[tuple[dict, dict]] = []
    fail = [False]

    def write(servers: dict, metrics: dict) -> None:
        if fail[0]:
            raise TimeoutError("storage away")
        writes.append((servers, metrics))

    clock = _Clock()
    touches = Touches(write, 10.0, clock)
    touches.add({"a": 5.0}, {"cpu": 5.0})
    touches.flush()  # the first is due at once
    touches.add({"a": 7.0, "b": 1.0}, {})
    touches.add({"a": 6.0}, {"cpu": 9.0})  # older for a: the maximum stays
    clock.now += 5
    touches.flush()  # not due: kept
    assert writes == [({"a": 5.0}, {"cpu": 5.0})]
    clock.now += 5
    fail[0] = True
    with pytest.raises(TimeoutError):
        touches.flush()
    fail[0] = False
    touches.flush()  # still due (the failed write did not count), nothing lost
    assert writes[-1] == ({"a": 7.0, "b": 1.0}, {"cpu": 9.0})
    touches.flush(force=True)  # nothing new: no empty write
    assert len(writes) == 2


@pytest.mark.integration
def test_the_decode_tells_every_sample_once_and_a_drain_forgets(spark):
    from aggregator.records import decode
    from aggregator.seen import SeenAccumulator

    seen = SeenAccumulator(spark, tolerance_s=5, delay_s=70)
    value = "web-1\t1000.0\t1\nweb-2\t1006.0\t2\nweb-1\t1001.0\t3\nbad line\nweb-3\t900.0\t4"
    raw = spark.createDataFrame(
        [("apm.metric.cpu", bytearray(value.encode()), 1000.0)] * 3,  # three copies of a record
        "topic string, value binary, ts double",
    ).selectExpr("topic", "value", "timestamp_seconds(ts) AS timestamp")
    rows = decode(raw.repartition(3), seen.jvm).collect()  # three tasks, one record each
    assert len(rows) == 12
    got = seen.drain()
    assert got.servers == {"web-1": 1001.0, "web-3": 900.0}  # web-2 is ahead: set aside
    assert got.metrics == {"cpu": 1001.0}
    assert got.set_aside == [{"metric": "cpu", "future": 3, "backlog": 3}]
    assert seen.drain() == Batch({}, {}, [])


def _sql_figures(samples, tolerance: int, delay: int) -> Batch:
    """v3's servers stream on the same samples: its grouping-sets pass with skew.counts."""
    from pyspark.sql import functions as F

    from aggregator.skew import counts

    on_time_ts = F.when(F.col("ts") <= F.col("arrival") + F.lit(tolerance), F.col("ts"))
    newest = F.coalesce(on_time_ts, F.when(F.col("arrival").isNull(), F.col("ts")))
    rows = (
        samples.groupingSets([["server"], ["metric"]], "server", "metric")
        .agg(F.max(newest).alias("ts"), *counts(tolerance, delay))
        .collect()
    )
    per_metric = [r for r in rows if r["server"] is None]
    return Batch(
        {r["server"]: r["ts"] for r in rows if r["metric"] is None and r["ts"] is not None},
        {r["metric"]: r["ts"] for r in per_metric if r["ts"] is not None},
        sorted(
            (
                {"metric": r["metric"], "future": r["future"], "backlog": r["backlog"]}
                for r in per_metric
            ),
            key=lambda d: d["metric"],
        ),
    )


@pytest.mark.integration
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["cpu", "mem"]),
            st.sampled_from(["web-1", "web-2", "db-1"]),
            st.integers(-200, 200),  # ts - arrival, seconds: ahead, on time, behind
        ),
        min_size=1,
        max_size=40,
    )
)
def test_the_gathered_figures_equal_the_servers_streams_sql(spark, samples):
    from aggregator.records import decode
    from aggregator.seen import SeenAccumulator

    tolerance, delay, arrival = 5, 70, 1_700_000_000
    seen = SeenAccumulator(spark, tolerance, delay)
    records = [
        (f"apm.metric.{metric}", bytearray(f"{server}\t{arrival + d}.5\t1".encode()), arrival)
        for metric, server, d in samples
    ]
    raw = spark.createDataFrame(records, "topic string, value binary, ts long").selectExpr(
        "topic", "value", "timestamp_seconds(ts) AS timestamp"
    )
    decoded = decode(raw, seen.jvm).cache()
    decoded.count()
    got = seen.drain()
    got = got._replace(set_aside=sorted(got.set_aside, key=lambda d: d["metric"]))
    assert got == _sql_figures(decoded, tolerance, delay)
