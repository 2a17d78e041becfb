"""The job's two Spark streams, built from the settings, the metrics they read, the static query
table and a cap on records per micro-batch:

- the windows stream: plan.window_summaries, evaluated and upserted by ``write`` each batch;
- the servers stream: each server's and each metric's newest sample, for the dashboard.

Both read ``decode(admit(raw, table))`` of exactly the given metrics' topics (plan.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from aggregator.evaluate import evaluate, to_results
from aggregator.plan import admit, decode, topic_regex, window_summaries
from aggregator.settings import AggregatorSettings
from aggregator.skew import counts, on_time
from apm.query import Query, WindowResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["kafka_samples", "start_servers", "start_windows"]


def kafka_samples(
    spark: SparkSession, s: AggregatorSettings, metrics: list[str], table: DataFrame, cap: int
) -> DataFrame:
    """The decoded samples of ``metrics``' topics that the queries in ``table`` admit."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", s.kafka_bootstrap)
        # Exactly these metrics' topics. A pattern, not a list: a topic that does not
        # exist yet is waited for (picked up within the metadata age) instead of failing
        # the stream with UnknownTopicOrPartitionException.
        .option("subscribePattern", topic_regex(metrics))
        .option("startingOffsets", s.starting_offsets)
        # A deleted topic, or one that leaves the subscription, must not stop the job;
        # unread data lost to retention shows up as lag first.
        .option("failOnDataLoss", "false")
        .option("kafka.metadata.max.age.ms", "2000")
        # Spark reads each topic-partition's offset range with its own fetches, and the
        # last fetch of a range waits fetch.max.wait.ms (500 ms by default) for data that
        # is not there yet: 20 partitions read 100 records in 5.5 s, 0.7 s with 10 ms
        # (docs/aggregator.md).
        .option("kafka.fetch.max.wait.ms", str(s.kafka_fetch_wait_ms))
    )
    if cap:
        reader = reader.option("maxOffsetsPerTrigger", str(cap))
    raw = reader.load()
    if s.source_tasks:
        # One Kafka task per topic-partition with new data: with one topic per metric that is
        # hundreds of tiny tasks a batch. Coalescing keeps the reads, in fewer tasks.
        raw = raw.coalesce(s.source_tasks)
    return decode(admit(raw, table))


def start_windows(
    spark: SparkSession,
    s: AggregatorSettings,
    metrics: list[str],
    queries: Mapping[str, Query],
    table: DataFrame,
    cap: int,
    write: Callable[[list[WindowResult]], None],
    clock: Callable[[], float],
    phase: Callable[[str, float], None] = lambda name, seconds: None,
    overflowed: Callable[[str], None] = lambda key: None,
) -> StreamingQuery:
    """The windows stream; ``write`` gets each batch's results (none for an empty batch),
    ``phase`` the seconds each batch spent in Spark, in evaluation and in the upsert,
    ``overflowed`` the key of each function value left out as overflowed (evaluate.py)."""
    longest = max(q.window_seconds for q in queries.values())
    # Samples ahead of their arrival past the tolerance never reach the watermark (skew.py).
    sets = window_summaries(
        on_time(kafka_samples(spark, s, metrics, table, cap), s.future_tolerance_seconds),
        table,
        s.allowed_lateness_seconds + longest,
        dedup=s.dedup,
    )

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        began = time.monotonic()
        rows = evaluate(batch, table).collect()
        collected = time.monotonic()
        results = to_results(rows, queries, clock, overflowed)
        evaluated = time.monotonic()
        if results:
            write(results)
        phase("spark", collected - began)
        phase("evaluate", evaluated - collected)
        phase("upsert", time.monotonic() - evaluated)

    return (
        sets.writeStream.queryName(f"{s.identity}-windows")
        .outputMode("update")
        .foreachBatch(write_batch)
        .option("checkpointLocation", str(s.checkpoint / "windows"))
        .trigger(processingTime=f"{s.trigger_seconds} seconds")
        .start()
    )


def start_servers(
    spark: SparkSession,
    s: AggregatorSettings,
    metrics: list[str],
    table: DataFrame,
    cap: int,
    seen: Callable[[dict[str, float], dict[str, float]], None],
    delay_seconds: int = 0,
    set_aside: Callable[[list], None] = lambda rows: None,
) -> StreamingQuery:
    """The servers stream; ``seen`` gets {server: newest ts} and {metric: newest ts} (of the
    samples not ahead of their arrival), ``set_aside`` the rows (metric, future, backlog)
    counting each metric's samples ahead of their arrival or behind it by more than
    ``delay_seconds`` (aggregator/skew.py)."""
    from pyspark.sql import functions as F

    tolerance = s.future_tolerance_seconds

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # One pass for all: rows with a null metric are per server, and the reverse.
        on_time_ts = F.when(F.col("ts") <= F.col("arrival") + F.lit(tolerance), F.col("ts"))
        newest = F.coalesce(on_time_ts, F.when(F.col("arrival").isNull(), F.col("ts")))
        rows = (
            batch.groupingSets([["server"], ["metric"]], "server", "metric")
            .agg(F.max(newest).alias("ts"), *counts(tolerance, delay_seconds))
            .collect()
        )
        per_server = [r for r in rows if r["metric"] is None and r["ts"] is not None]
        per_metric = [r for r in rows if r["server"] is None]
        servers = {r["server"]: float(r["ts"]) for r in per_server}
        by_metric = {r["metric"]: float(r["ts"]) for r in per_metric if r["ts"] is not None}
        set_aside(per_metric)
        if servers or by_metric:
            seen(servers, by_metric)

    samples = kafka_samples(spark, s, metrics, table, cap).select(
        "metric", "server", "ts", "arrival"
    )
    return (
        samples.writeStream.queryName(f"{s.identity}-servers")
        .foreachBatch(write_batch)
        .option("checkpointLocation", str(s.checkpoint / "servers"))
        .trigger(processingTime=f"{s.servers_trigger_seconds} seconds")
        .start()
    )
