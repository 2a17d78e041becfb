"""The streaming plan: Kafka records -> samples -> (dedup, fan-out to queries and the map side
of the window summaries, in one JVM operator) -> one mergeable summary per (query, window) in
Spark's state store.

Two stateful operators, both bounded by one event-time watermark:

1. ``partials.window_partials``: the project's ``flatMapGroupsWithState`` in Java (aggregator/jvm),
   keyed by (metric, server bucket, 8 s block). It drops every (metric, server, ts) it has
   seen, hands each new sample to the active queries whose selection takes its server, and
   returns partial summaries per (key, query, window), so a retried sample costs one check
   whatever number of queries want it, and no per-query copy of a sample is ever a row.
   Its state is one row per key, not per sample (docs/aggregator.md, "Duplicates").
2. A streaming aggregation per (query_id, window_seconds, window_end) that merges the
   partials into count, sums, min, max and a KLL sketch. All merge in O(sketch) per trigger,
   however many samples the window already holds.

``dedup=False`` keeps the SQL plan of v2 (a broadcast join of samples with the queries, a
server filter, the aggregation over samples) for comparison (``make bench-aggregator-nodedup``).

The plan's shape never depends on which queries are active: they arrive as a small static
table (the join's build side, and the operator's argument), so a changed query set restarts
the stream from the same checkpoint and the state carries over. Decoding and dedup run in the
project's JVM code (aggregator/records.py, aggregator/partials.py); there is no Python UDF.

A query counts the samples that reached Kafka from the moment it became active (created,
resumed, or given another metric: ``StoredQuery.active_from``): ``admit`` keeps a Kafka record
only if its timestamp is at or after the earliest such moment among the active queries on its
metric. That is what makes a topic joining the subscription start at new data:
Spark reads a topic it has no checkpointed offsets for from its earliest retained offset, and
this filter drops what was there before. The moments come from storage, so a batch replayed
after a crash is filtered exactly as it was the first time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from aggregator.quantiles import KLL_K, levels, sketch_k
from aggregator.records import decode, packs
from aggregator.series import SERIES_SEPARATOR
from aggregator.skew import on_time
from apm.functions import SUMMARY_FIELDS, needs
from apm.model import metric_sql, topic_for
from apm.query import Query, StoredQuery

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "QUERY_SCHEMA",
    "admit",
    "decode",
    "queries_frame",
    "query_row",
    "server_match",
    "topic_regex",
    "window_summaries",
]

# Spark marks event-time columns with this metadata key (EventTimeWatermark.delayKey). The
# window_end column is derived from the watermarked event time, so it carries the mark too:
# that is what lets the aggregation evict windows the watermark has passed.
_EVENT_TIME_KEY = "spark.watermarkDelayMs"
# Sums are kept in fixed point, which is exact and so independent of the order samples arrive
# in: a job restarted after a crash sees other micro-batches, and a float sum would differ in
# its last bits. 20 integer and 18 fractional digits; a window with a value that does not fit
# exactly (beyond 10^20, or more than 18 decimals) or a sum that overflows falls back to the
# float sum (evaluate.py).
_FIXED_POINT = "decimal(38,18)"

# Whether the query's functions read the sketch (apm.functions.needs) and which percentiles
# (quantiles.levels) ride along for the evaluation step; the stream join uses _JOIN_COLUMNS.
QUERY_SCHEMA = (
    "query_id string, metric string, all_servers boolean, names array<string>, "
    "prefix string, prefixes array<string>, server_regex string, "
    "window_seconds int, wants_sketch boolean, since double, levels array<double>, "
    "by_server boolean, sketch_k int, tag_keys array<string>, tag_regexes array<string>, "
    "where_keys array<string>, where_regexes array<string>, group_by array<string>, "
    "uses_tags boolean"
)
_JOIN_COLUMNS = (
    "query_id",
    "metric",
    "all_servers",
    "names",
    "prefix",
    "prefixes",
    "server_regex",
    "window_seconds",
    "by_server",
    "uses_tags",
)
# Metric and server names cannot be empty, so this row matches nothing. It keeps the static
# side non-empty even after the optimizer pushes the filter's static-only part (one of the
# selectors is set) into it, which is why it selects the server "": a broadcast join with an
# empty build side skips its stream side, the dedup operator below it would then not commit
# its state store, and Spark fails the batch (STATE_STORE_COMMIT_VALIDATION_FAILED).
_SENTINEL: tuple[object, ...] = (
    *("", "", False, [""], None, [], None, 1, False, 0.0, [], False, KLL_K),
    *([], [], [], [], [], False),
)
_GLOB_CHARS = frozenset("*?[")


def server_match(query: Query) -> tuple[bool, list[str], list[str], str | None]:
    """(all servers, exact names, name prefixes, regex of the other globs or None).

    Most selections are ``*``, plain names or ``prefix*``: those are matched by a boolean,
    set membership and ``startswith``. A per-row ``RLIKE`` with a per-row pattern recompiles
    whenever consecutive rows belong to different queries, so only the rest take the regex."""
    if query.all_servers:
        return True, [], [], None
    names, prefixes, others = [], [], []
    for glob in query.servers:
        head = glob[:-1] if glob.endswith("*") else None
        if not _GLOB_CHARS & set(glob):
            names.append(glob)
        elif head is not None and not _GLOB_CHARS & set(head):
            prefixes.append(head)
        else:
            others.append(glob)
    regex = (
        Query(tuple(others), query.metric, query.window_seconds, query.functions).server_regex()
        if others
        else None
    )
    return False, names, prefixes, regex


def query_row(stored: StoredQuery) -> tuple[object, ...]:
    """One row of the static query table (QUERY_SCHEMA)."""
    q = stored.query
    everyone, names, prefixes, regex = server_match(q)
    # One prefix (``web-*``, the common case) gets its own column: ``startswith`` is
    # compiled code, where ``exists`` over an array is interpreted per row (measured: the
    # server filter was 0.6 s of a 400k-sample batch with it).
    prefix = prefixes.pop() if len(prefixes) == 1 else None
    return (
        stored.id,
        q.metric,
        everyone,
        names,
        prefix,
        prefixes,
        regex,
        q.window_seconds,
        "sketch" in needs(q.functions),
        stored.active_from or 0.0,
        levels(q),
        q.by_server,
        sketch_k(q),
        # Host tags (issue 37): matched by the JVM operator against the driver's tag map.
        [t.key for t in q.tags],
        [t.regex() for t in q.tags],
        [t.key for t in q.where],
        [t.regex() for t in q.where],
        list(q.group_by),
        q.uses_tags,
    )


def queries_frame(spark: SparkSession, queries: Sequence[StoredQuery]) -> DataFrame:
    """The static query table the stream joins (QUERY_SCHEMA), sentinel row included."""
    return spark.createDataFrame([_SENTINEL, *map(query_row, queries)], QUERY_SCHEMA)


def topic_regex(metrics: Iterable[str]) -> str:
    """A regex that fully matches exactly the topics of ``metrics`` (Spark's subscribePattern,
    a Java regex; metric names hold only letters, digits, ``_``, ``.`` and ``-``, which
    ``re.escape`` escapes the same way Java reads them)."""
    names = sorted(set(metrics))
    if not names:
        raise ValueError("no metrics to subscribe to")
    return "(?:" + "|".join(re.escape(topic_for(m)) for m in names) + ")"


def admit(raw: DataFrame, queries: DataFrame) -> DataFrame:
    """The Kafka records (topic, value, timestamp) some active query reads: of a queried
    metric, and arrived at or after the earliest ``since`` of the queries on that metric (the
    module docstring says why). A broadcast join with one row per metric, which does not fan
    out, on whole records: a record dropped here is never split into samples, so the retained
    backlog of a topic that joins costs its read and little more."""
    from pyspark.sql import functions as F

    since = queries.groupBy("metric").agg(F.min("since").alias("since"))
    metric = F.expr(metric_sql("topic"))
    return (
        raw.withColumn("metric", metric)
        .join(F.broadcast(since), "metric")
        .where(F.col("timestamp") >= F.timestamp_seconds("since"))
        .select("topic", "value", "timestamp")
    )


def window_summaries(
    records: DataFrame,
    queries: DataFrame,
    delay_seconds: int,
    dedup: bool = True,
    *,
    tolerance_s: int | None = None,
    seen: object | None = None,
    late: object | None = None,
    grace_s: float | None = None,
    tags: object | None = None,
) -> DataFrame:
    """Per (series, window_seconds, window_end): n, the sums, min, max and a KLL sketch of
    the distinct samples seen so far in ``records`` (Kafka rows: topic, value, timestamp;
    ``admit(raw, queries)``, so that records no active query reads never cost dedup state or
    move the watermark). The series is the ``query_id`` column: the query's id, or for a
    ``BY server`` query its id and the server (aggregator/series.py).

    A (server, ts) pair of a metric counts once, so an agent's retry changes no result; the
    first copy processed wins if two disagree on the value. A replayed micro-batch after a
    crash starts from the state version before it, so nothing is counted twice.

    ``delay_seconds`` is the watermark delay on event time: the allowed lateness plus the
    longest active window, so that every window that ended less than the allowed lateness
    ago still accepts samples. Samples at or before the batch's watermark are dropped by the
    dedup operator and counted in ``late`` (a registered ``LongAccumulator``, None: not
    counted). Samples ahead of their arrival by more than ``tolerance_s`` (None: no limit)
    are set aside before the watermark (skew.py); every parsed sample is told to ``seen``
    (aggregator/seen.py) when given. ``grace_s`` (None: with every batch) holds a ``BY server``
    series' windows in the dedup operator until they complete (``partials.window_partials``),
    which also takes ``tags``, the reference through which the executors get the tag map.

    ``dedup=False`` leaves the dedup operator out (``APM_AGGREGATOR_DEDUP``), for sources that
    never resend; it was most of the batch time at 100k samples/s (docs/aggregator.md). Late
    samples are then dropped, and counted in Spark's ``numRowsDroppedByWatermark``, by the
    aggregation."""
    from pyspark.sql import functions as F

    delay = f"{int(delay_seconds)} seconds"
    # window_end carries the event-time mark: that is what lets the aggregation evict the
    # windows the watermark has passed.
    mark = {_EVENT_TIME_KEY: int(delay_seconds) * 1000}
    if dedup:
        from aggregator.partials import (
            DEDUP_BLOCK_SECONDS,
            DEDUP_BUCKETS,
            PARTIAL_COLUMNS,
            window_partials,
        )

        block_us = DEDUP_BLOCK_SECONDS * 1_000_000
        timed = packs(records, DEDUP_BUCKETS, block_us, tolerance_s, seen).withWatermark(
            "event_time", delay
        )
        partials = window_partials(
            timed, queries, late, delay_seconds=delay_seconds, grace_seconds=grace_s, tags=tags
        )
        end = F.timestamp_seconds("window_end_s").alias("window_end", metadata=mark)
        # kll_merge_agg_double without k adopts the first partial's, which is its series'
        # (quantiles.sketch_k: KLL_K, less for a server's series): exact while a window holds
        # at most that many values. With k given it would allocate a sketch of that k for every
        # window of every batch, 80 KB each at KLL_K, also for a server's 10 values.
        merged = {
            "n": [F.sum("n").alias("n")],
            "sum": [
                F.try_sum("fixed_sum").alias("fixed_sum"),
                F.sum("n_fixed").alias("n_fixed"),
                F.sum("float_sum").alias("float_sum"),
            ],
            "min": [F.min("min").alias("min")],
            "max": [F.max("max").alias("max")],
            "sketch": [F.kll_merge_agg_double("sketch").alias("sketch")],
        }
        keyed = partials.select("query_id", "window_seconds", end, *PARTIAL_COLUMNS)
        # Heartbeats (io.apm.aggregator.HeldPartials.HEARTBEAT, query_id "") only move this
        # watermark while the operator holds every partial of a batch; they merge into nothing.
        # The filter reads window_end so that the optimizer, which pushes a filter below a
        # watermark that it does not read, leaves it above: the watermark must see them.
        kept = (F.col("query_id") != "") | (F.col("window_end") < F.timestamp_seconds(F.lit(0)))
        timed_ends = keyed.withWatermark("window_end", delay).where(kept)
        return _per_window(timed_ends, merged)

    samples = decode(records, seen)
    if tolerance_s is not None:
        samples = on_time(samples, tolerance_s)
    timed = samples.withColumn("event_time", F.timestamp_seconds("ts")).withWatermark(
        "event_time", delay
    )
    wanted = F.broadcast(queries.select(*_JOIN_COLUMNS))
    # Or short-circuits left to right: the cheap tests first, the regex only for odd globs.
    server = F.col("server")
    # Host tags are matched by the JVM operator only: without it a tag query counts nothing.
    joined = (
        timed.join(wanted, "metric")
        .where(~F.col("uses_tags"))
        .where(
            F.col("all_servers")
            | (F.col("prefix").isNotNull() & F.startswith(server, F.col("prefix")))
            | ((F.size("names") > 0) & F.array_contains("names", server))
            | ((F.size("prefixes") > 0) & F.exists("prefixes", lambda p: F.startswith(server, p)))
            | (F.col("server_regex").isNotNull() & F.expr("server RLIKE server_regex"))
        )
    )
    width = F.col("window_seconds")
    end = F.timestamp_seconds(F.floor(F.col("ts") / width) * width + width).alias(
        "window_end", metadata=mark
    )
    fixed = F.col("value").try_cast(_FIXED_POINT)
    # try_cast rounds to 18 decimals; a value that does not survive the round trip is not
    # exact in fixed point, so it sends its window to the float sum (n_fixed < n).
    exact = F.when(fixed.cast("double") == F.col("value"), fixed)
    # A BY server query's series: the same key the JVM operator gives it (Partials.seriesId).
    series = F.when(
        F.col("by_server"), F.concat_ws(SERIES_SEPARATOR, "query_id", "server")
    ).otherwise(F.col("query_id"))
    keyed = joined.select(
        series.alias("query_id"), "window_seconds", end, "value", exact.alias("fixed")
    )
    columns = {
        "n": [F.count("value").alias("n")],
        "sum": [
            F.try_sum("fixed").alias("fixed_sum"),
            F.count("fixed").alias("n_fixed"),
            F.sum("value").alias("float_sum"),
        ],
        "min": [F.min("value").alias("min")],
        "max": [F.max("value").alias("max")],
        "sketch": [F.kll_sketch_agg_double("value", KLL_K).alias("sketch")],
    }
    return _per_window(keyed, columns)


def _per_window(keyed: DataFrame, columns: dict[str, list[Column]]) -> DataFrame:
    """The aggregation per (query_id, window_seconds, window_end) into ``columns``: the Spark
    columns of each of apm.functions.SUMMARY_FIELDS ("sum" is resolved by evaluate.py). Keep
    their order: it is the state store's schema, which a checkpoint keeps."""
    if missing := set(SUMMARY_FIELDS) - set(columns):
        raise ValueError(f"no Spark column for summary fields {sorted(missing)}")
    return keyed.groupBy("query_id", "window_seconds", "window_end").agg(
        *[c for cols in columns.values() for c in cols]
    )
