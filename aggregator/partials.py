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
                row["all_servers"],
                list(row["names"]),
                prefixes,
                row["server_regex"],
            )
        )
    return out


def window_partials(timed: DataFrame, queries: DataFrame) -> DataFrame:
    """Dedup and the map side of the window summaries in one pass, by the project's JVM
    operator ``io.apm.aggregator.Dedup`` (aggregator/jvm, a ``flatMapGroupsWithState``).

    Its key is (metric, xxhash64(server) mod ``DEDUP_BUCKETS``, block of
    ``DEDUP_BLOCK_SECONDS`` of event time); its state, per key, every (server, microsecond)
    seen there, read and written once per key and micro-batch, not once per sample. Of each
    batch it keeps the samples not seen before, hands each to the active queries whose
    selection takes its server, and returns one partial summary per (key, query, window)
    touched (``Partials`` in Java: n, fixed-point and float sums, min, max, KLL sketch), so
    neither the fan-out to queries nor the per-sample aggregation input is ever materialised
    as rows. Exact: servers compare as strings, times at microseconds, the key Spark's
    ``dropDuplicates`` used before. A key is dropped once the watermark passes its block's
    end; later copies are late and dropped (and counted) by the operator like any late
    sample."""
    from pyspark.sql import DataFrame as Frame
    from pyspark.sql import functions as F

    block_us = DEDUP_BLOCK_SECONDS * 1_000_000
    keyed = timed.withColumn(
        "dedup_key",
        F.concat_ws(
            "|",
            "metric",
            F.pmod(F.xxhash64("server"), F.lit(DEDUP_BUCKETS)).cast("string"),
            F.floor(F.unix_micros("event_time") / F.lit(block_us)).cast("string"),
        ),
    )
    spark = timed.sparkSession
    jvm = spark._jvm
    if jvm is None:
        raise RuntimeError("the aggregator's operator needs a classic (JVM) SparkSession")
    selections = _selections(spark, queries)
    jdf = jvm.io.apm.aggregator.Dedup.windowPartials(
        keyed.select("dedup_key", "server", "event_time", "ts", "value")._jdf,
        block_us,
        KLL_K,
        selections,
    )
    return Frame(jdf, spark)
