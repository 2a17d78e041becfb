"""The Python side of the aggregator's JVM operator (aggregator/jvm, ``io.apm.aggregator``):
the dedup key, the query table handed to it, and the partial summaries it returns.
``plan.window_summaries`` merges those partials into the windows' state.

The operator is a ``flatMapGroupsWithState`` in Java, built by Maven into the jar cache by
``apm stack fetch`` (``launch.stack.jars.aggregator_jar``) and loaded through ``spark.jars``;
its unit tests run in ``make test-jvm``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aggregator.quantiles import KLL_K

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DEDUP_BLOCK_SECONDS", "DEDUP_BUCKETS", "PARTIAL_COLUMNS", "window_partials"]

# The dedup operator's key: (metric, server bucket, block). Its state value holds every
# (server, microsecond) seen under the key, re-encoded whenever a micro-batch adds to it, so
# buckets x block trade the number of state rows per batch (metrics x buckets x ~1-2 blocks)
# against their size (~2 bytes a sample). Both are part of the checkpoint's state layout.
DEDUP_BUCKETS = 32
DEDUP_BLOCK_SECONDS = 8

# Spark's last timestamp, 9999-12-31 23:59:59.999999 UTC: the operator input's event-time mark
# sits on it, so Spark's late-row filter never drops a pack (window_partials says why).
_LAST_MICROS = 253_402_300_799_999_999

# What the JVM operator returns per (key, query, window) besides the window's identity.
PARTIAL_COLUMNS = ("n", "fixed_sum", "n_fixed", "float_sum", "min", "max", "sketch")


def _selections(spark: SparkSession, queries: DataFrame) -> object:
    """The query table as the JVM operator's ``io.apm.aggregator.Selection`` list."""
    jvm = spark._jvm
    if jvm is None:
        raise RuntimeError("the aggregator's operator needs a classic (JVM) SparkSession")
    out = jvm.java.util.ArrayList()
    for row in queries.collect():  # QUERY_SCHEMA rows, the sentinel included
        prefixes = [*row["prefixes"], *([row["prefix"]] if row["prefix"] is not None else [])]
        out.add(
            jvm.io.apm.aggregator.Selection(
                row["query_id"],
                row["metric"],
                row["window_seconds"],
                row["wants_sketch"],
                row["sketch_k"],
                row["by_server"],
                row["all_servers"],
                list(row["names"]),
                prefixes,
                row["server_regex"],
                list(row["tag_keys"]),
                list(row["tag_regexes"]),
                list(row["where_keys"]),
                list(row["where_regexes"]),
                list(row["group_by"]),
            )
        )
    return out


def window_partials(
    timed: DataFrame,
    queries: DataFrame,
    late: object | None = None,
    *,
    delay_seconds: int = 0,
    grace_seconds: float | None = None,
    tags: object | None = None,
) -> DataFrame:
    """Dedup and the map side of the window summaries in one pass, by the project's JVM
    operator ``io.apm.aggregator.Dedup`` (aggregator/jvm, a ``flatMapGroupsWithState``).

    ``timed``: ``records.packs`` with a watermark on ``event_time``. The operator's key is the
    packs' (metric, xxhash64(server) mod ``DEDUP_BUCKETS``, block of ``DEDUP_BLOCK_SECONDS``
    of event time); its state, per key, every (server, microsecond) seen there, read and
    written once per key and micro-batch, not once per sample. Of each batch it keeps the
    samples not seen before, hands each to the active queries whose selection takes its
    server, and returns one partial summary per (key, query, window) touched (``Partials`` in
    Java: n, fixed-point and float sums, min, max, KLL sketch), so neither the fan-out to
    queries nor the per-sample aggregation input is ever materialised as rows. Exact: servers
    compare as strings, times at microseconds, the key Spark's ``dropDuplicates`` used before.

    Late samples: a pack holds many samples, so Spark's late filter, which drops whole input
    rows, must not see it. The operator's input carries the event-time mark (Spark requires
    one for event-time timeouts) on a column that is never late, and the operator drops each
    sample at or before the batch's watermark itself and tells ``late`` (a registered
    ``org.apache.spark.util.LongAccumulator``; None: not counted). A key is dropped once the
    watermark passes its block's end.

    ``grace_seconds`` (None: not held): a ``BY server`` series' partials are held in the key's
    state until the newest event time passes their window's end plus the grace, then returned
    together (``io.apm.aggregator.HeldPartials``), so that the window aggregation merges and
    the executors write each server's window once, when it completes, and again only when late
    data refines it. ``delay_seconds`` is the watermark's delay, which the operator adds back
    to the watermark to know the newest event time.

    ``tags`` (an ``io.apm.aggregator.TagsRef``; None: no tag map) is how each batch's tasks get
    the driver's tag map (aggregator/tag_map.py): a query that selects or groups by host tags
    is matched per server against the version of its tags that applies to the sample's window,
    and a ``BY <tag>`` query's groups are series as a ``BY server`` query's servers are."""
    from pyspark.sql import DataFrame as Frame
    from pyspark.sql import functions as F

    mark = timed.schema["event_time"].metadata
    never_late = F.expr(f"timestamp_micros({_LAST_MICROS})").alias("event_time", metadata=mark)
    spark = timed.sparkSession
    jvm = spark._jvm
    if jvm is None:
        raise RuntimeError("the aggregator's operator needs a classic (JVM) SparkSession")
    selections = _selections(spark, queries)
    jdf = jvm.io.apm.aggregator.Dedup.windowPartials(
        timed.select("dedup_key", "pack", never_late)._jdf,
        DEDUP_BLOCK_SECONDS * 1_000_000,
        KLL_K,
        selections,
        late,
        int(delay_seconds) * 1000,
        -1 if grace_seconds is None else round(grace_seconds * 1000),
        tags,
    )
    return Frame(jdf, spark)
