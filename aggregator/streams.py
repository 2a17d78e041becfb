"""The job's Spark stream, built from the settings, the metrics it reads, the static query
table and a cap on records per micro-batch: plan.window_summaries of ``admit(raw, table)`` of
exactly the given metrics' topics (plan.py), evaluated and upserted by ``write`` each batch.
The decode tells each sample to a ``SeenAccumulator`` (aggregator/seen.py): each server's and
metric's newest sample and the skew counts come out of this one pass (until v3 a second
"servers" stream read every record again for them); the dedup operator tells a
``LongAccumulator`` each sample it drops as late. Both are drained after each batch's action.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from aggregator.evaluate import evaluate, to_results
from aggregator.plan import admit, topic_regex, window_summaries
from aggregator.rollup import to_partials
from aggregator.seen import Batch, SeenAccumulator
from aggregator.server_writes import ServerWrites, WriteCounts, series_queries
from aggregator.server_writes import write as write_servers
from aggregator.settings import AggregatorSettings
from aggregator.tags_feed import TagsFeed
from apm.query import Query, WindowResult
from apm.tiers import WindowPartial

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["kafka_records", "start_windows"]


def kafka_records(
    spark: SparkSession, s: AggregatorSettings, metrics: list[str], table: DataFrame, cap: int
) -> DataFrame:
    """The Kafka records (topic, value, timestamp) of ``metrics``' topics that the queries in
    ``table`` admit."""
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
        .options(**s.kafka_tls.spark_options())
    )
    if cap:
        reader = reader.option("maxOffsetsPerTrigger", str(cap))
    raw = reader.load()
    if s.source_tasks:
        # One Kafka task per topic-partition with new data: with one topic per metric that is
        # hundreds of tiny tasks a batch. Coalescing keeps the reads, in fewer tasks.
        raw = raw.coalesce(s.source_tasks)
    return admit(raw, table)


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
    seen: Callable[[Batch], None] | None = None,
    late: Callable[[int], None] = lambda n: None,
    server_writes: ServerWrites | None = None,
    servers_done: Callable[[dict[str, int]], None] = lambda counts: None,
    partials: Callable[[list[WindowPartial]], None] | None = None,
    tags: TagsFeed | None = None,
) -> StreamingQuery:
    """The windows stream; ``write`` gets each batch's results (none for an empty batch),
    ``phase`` the seconds each batch spent in Spark, in evaluation and in the upsert,
    ``overflowed`` the key of each function value left out as overflowed (evaluate.py),
    ``seen`` (None: not gathered) each batch's newest times and skew counts, the skew's delay
    being the watermark's (aggregator/skew.py), ``late`` the number of samples each batch
    dropped as later than the watermark. ``BY server`` queries' rows are written by the
    executors (aggregator/server_writes.py) with ``server_writes``; ``servers_done`` gets their
    counts after each batch. So are the groups of ``BY <tag>`` queries, whose selection and
    grouping read the tag map that ``tags`` follows (needed when a query uses host tags): each
    batch reads the tags topic on, and its tasks get the map (``io.apm.aggregator.TagsRef``).
    ``partials`` (None: no rollup tiers) gets each batch's fleet windows' partials
    (aggregator/rollup.py)."""
    longest = max(q.window_seconds for q in queries.values())
    delay = s.allowed_lateness_seconds + longest
    gathered = (
        SeenAccumulator(spark, s.future_tolerance_seconds, delay) if seen is not None else None
    )
    dropped = spark.sparkContext._jsc.sc().longAccumulator(f"{s.identity}-late-samples")
    # The queries of many series (a server's or a group's), evaluated and written by the executors.
    per_server = {qid: q for qid, q in queries.items() if q.by_server or q.group_by}
    if tags is None and any(q.uses_tags for q in queries.values()):
        raise ValueError("queries on host tags need the tags topic's feed (TagsFeed)")
    jvm = spark._jvm
    ref = jvm.io.apm.aggregator.TagsRef() if tags is not None and jvm is not None else None
    # A version is kept until every window it covers has closed (tag_map.TagMap.prune).
    horizon_s = delay + longest + 60
    # Samples ahead of their arrival past the tolerance never reach the watermark (skew.py).
    sets = window_summaries(
        kafka_records(spark, s, metrics, table, cap),
        table,
        delay,
        dedup=s.dedup,
        tolerance_s=s.future_tolerance_seconds,
        seen=gathered.jvm if gathered is not None else None,
        late=dropped,
        tags=ref,
        # Without a BY server query nothing would be held: the dedup state stays as v4 wrote it.
        grace_s=None if s.server_windows_live or not per_server else s.server_grace_seconds,
    )

    java_queries = series_queries(spark, per_server) if per_server else None
    if per_server and server_writes is None:
        raise ValueError("BY server queries need the executors' writer (ServerWrites)")
    counts = WriteCounts(spark, s.identity) if per_server else None

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        began = time.monotonic()
        if tags is not None and ref is not None:
            # Before the batch's action: its tasks carry the map current now.
            tags.refresh()
            tags.tags.prune(round(clock() * 1000), horizon_s)
            if ref.version() != tags.tags.version:  # encoded and broadcast only when changed
                ref.set(spark.sparkContext._jsc, bytearray(tags.tags.encode()), tags.tags.version)
        evaluated = evaluate(batch, table)
        if per_server:
            # Two actions read it: keep it, or the batch's plan would run twice.
            evaluated = evaluated.persist()
        try:
            rows = evaluated.where(F.col("server") == "").collect()
            collected = time.monotonic()
            if per_server and server_writes is not None and counts is not None:
                # Per-server rows: evaluated, written and ranked in the executors.
                write_servers(
                    evaluated.where(F.col("server") != ""),
                    java_queries,
                    server_writes,
                    clock(),
                    counts,
                )
                servers_done(counts.drain())
        finally:
            if per_server:
                evaluated.unpersist()
        written = time.monotonic()
        results = to_results(rows, queries, clock, overflowed)
        evaluated_at = time.monotonic()
        if results:
            write(results)
        if partials is not None and rows:
            partials(to_partials(rows, queries, clock()))
        phase("spark", collected - began)
        phase("servers", written - collected)
        phase("evaluate", evaluated_at - written)
        phase("upsert", time.monotonic() - evaluated_at)
        # The batch's tasks have ended (collect returned): their copies are merged.
        if gathered is not None and seen is not None:
            seen(gathered.drain())
        if count := dropped.value():
            dropped.reset()
            late(count)

    return (
        sets.writeStream.queryName(f"{s.identity}-windows")
        .outputMode("update")
        .foreachBatch(write_batch)
        .option("checkpointLocation", str(s.checkpoint / "windows"))
        .trigger(processingTime=f"{s.trigger_seconds} seconds")
        .start()
    )
