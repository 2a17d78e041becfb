"""The real engines, through the clients the platform uses (issue: foundation)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

pytestmark = pytest.mark.integration


def _consume(bootstrap: str, topic: str, group: str, expect: int, timeout_s: float = 30.0):
    from apm.kafka import new_consumer

    consumer = new_consumer(
        bootstrap, topic, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=1000
    )
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < expect and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            got.extend(record.value for record in batch)
    consumer.commit()
    consumer.close()
    return got


def test_kafka_topic_partitions_and_committed_offsets_survive_restart(
    kafka_bootstrap, unique_name, own_topics
):
    from apm.kafka import TopicSpec, ensure_topics, new_admin, new_producer

    topic, group = unique_name("stack-test"), unique_name("group")
    own_topics.append(topic)
    admin = new_admin(kafka_bootstrap)
    ensure_topics(admin, [topic], TopicSpec(partitions=4))
    described = admin.describe_topics([topic])
    assert len(described[0]["partitions"]) == 4
    admin.close()

    producer = new_producer(kafka_bootstrap, acks="all")
    for i in range(40):
        producer.send(topic, key=str(i).encode(), value=f"first-{i}".encode())
    producer.flush()
    first = _consume(kafka_bootstrap, topic, group, expect=40)
    assert sorted(first) == sorted(f"first-{i}".encode() for i in range(40))

    for i in range(10):
        producer.send(topic, key=str(i).encode(), value=f"second-{i}".encode())
    producer.flush()
    producer.close()
    # A new consumer in the same group resumes from the committed offsets: only the new ten.
    second = _consume(kafka_bootstrap, topic, group, expect=10)
    assert sorted(second) == sorted(f"second-{i}".encode() for i in range(10))


def test_cassandra_time_series_table_with_prepared_statements(cassandra_session, unique_name):
    keyspace = unique_name("stack_test").replace("-", "_")
    session = cassandra_session
    session.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    session.execute(
        f"CREATE TABLE {keyspace}.points (series text, ts timestamp, value double, "
        "PRIMARY KEY (series, ts)) WITH CLUSTERING ORDER BY (ts DESC)"
    )
    insert = session.prepare(f"INSERT INTO {keyspace}.points (series, ts, value) VALUES (?, ?, ?)")
    select = session.prepare(
        f"SELECT ts, value FROM {keyspace}.points WHERE series = ? AND ts >= ? AND ts < ?"
    )
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(60):
        session.execute(insert, ("cpu", start + timedelta(seconds=i), float(i)))
    rows = list(
        session.execute(
            select, ("cpu", start + timedelta(seconds=10), start + timedelta(seconds=20))
        )
    )
    assert [r.value for r in rows] == [float(i) for i in range(19, 9, -1)]
    session.execute(f"DROP KEYSPACE {keyspace}")


def test_spark_structured_streaming_reads_kafka_and_writes_windowed_aggregate(
    spark, kafka_bootstrap, unique_name, own_topics
):
    from pyspark.sql import functions as F

    from apm.kafka import TopicSpec, ensure_topics, new_producer

    topic = unique_name("stack-spark")
    own_topics.append(topic)
    ensure_topics(kafka_bootstrap, [topic], TopicSpec(partitions=4))
    rng = np.random.default_rng(7)
    values = rng.normal(50, 10, size=120)
    base = 1_763_800_000  # epoch seconds, a multiple of 10
    producer = new_producer(kafka_bootstrap, acks="all")
    for i, v in enumerate(values):
        producer.send(topic, value=f"{base + i}\t{float(v)!r}".encode())
    producer.flush()
    producer.close()

    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    parts = F.split(F.col("value").cast("string"), "\t")
    samples = stream.select(
        parts[0].cast("long").cast("timestamp").alias("ts"), parts[1].cast("double").alias("v")
    )
    windowed = (
        samples.withWatermark("ts", "1 minute")
        .groupBy(F.window("ts", "10 seconds"))
        .agg(
            F.min("v").alias("min"),
            F.max("v").alias("max"),
            F.avg("v").alias("avg"),
            F.count("v").alias("n"),
        )
    )
    collected: list = []
    query = (
        windowed.writeStream.outputMode("update")
        .trigger(availableNow=True)
        .foreachBatch(lambda df, _id: collected.extend(df.collect()))
        .option("checkpointLocation", f"/tmp/{topic}-ckpt")
        .start()
    )
    query.awaitTermination(120)
    latest = {row["window"]["start"].timestamp(): row for row in collected}
    assert len(latest) == 12
    for start, row in latest.items():
        chunk = values[int(start) - base : int(start) - base + 10]
        assert row["n"] == 10
        assert row["min"] == chunk.min() and row["max"] == chunk.max()
        assert row["avg"] == pytest.approx(chunk.mean(), rel=1e-12)
