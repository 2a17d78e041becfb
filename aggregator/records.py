"""Kafka records -> samples: ``decode``, one row per sample of every admitted record's value
(``apm.wire``'s ``tsv1`` lines), by the project's JVM code (``io.apm.aggregator.Decode``,
aggregator/jvm), which reads each value's bytes once and parses each number once.

``packs`` is the dedup plan's decode (v4's step b): one row per (record, dedup key) holding
that record's samples under the key as one binary pack (``io.apm.aggregator.Packs``), so that
the shuffle into the operator moves packs, not samples.

``decode_sql`` is v3's decode with built-in SQL functions (split, explode, two casts per
line), kept as the reference the JVM decode is tested against row for row
(tests/aggregator/test_records.py), and the JVM packs against it too, and as the "before"
of the ``decode-batch-sql`` probe of ``python -m bench.aggregator_profile`` (docs/aggregator.md,
"v4, step by step": step a).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apm.model import metric_sql

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["decode", "decode_sql", "packs"]


def _arrival(raw: DataFrame) -> Column:
    """The record's Kafka timestamp in epoch seconds, null without one (aggregator/skew.py)."""
    from pyspark.sql import functions as F

    column = F.col("timestamp") if "timestamp" in raw.columns else F.lit(None)
    return column.cast("double").alias("arrival")


def decode(raw: DataFrame, seen: object | None = None) -> DataFrame:
    """Kafka rows (topic, value[, timestamp]) -> (metric, server, ts, value, arrival), each
    sample also told to ``seen`` (a registered ``io.apm.aggregator.Seen``, aggregator/seen.py)
    when given. Lines
    that do not parse as ``server<TAB>ts<TAB>value`` with a finite value are dropped (the
    ingest never writes them; they can only come from a foreign producer), exactly the lines
    ``decode_sql`` drops: the numbers are read as Spark's ``try_cast(... AS double)`` reads
    them, and the server's bytes are cast to a string as the SQL decode cast the value."""
    from pyspark.sql import DataFrame as Frame
    from pyspark.sql import functions as F

    spark = raw.sparkSession
    jvm = spark._jvm
    if jvm is None:
        raise RuntimeError("the aggregator's decode needs a classic (JVM) SparkSession")
    records = raw.select(F.expr(metric_sql("topic")).alias("metric"), "value", _arrival(raw))
    samples = Frame(jvm.io.apm.aggregator.Decode.samples(records._jdf, seen), spark)
    return samples.withColumn("server", F.col("server").cast("string"))


def decode_sql(raw: DataFrame) -> DataFrame:
    """v3's decode, in built-in SQL functions: the same rows as ``decode``."""
    from pyspark.sql import functions as F

    lines = raw.select(
        F.col("topic"),
        F.explode(F.split(F.col("value").cast("string"), "\n")).alias("line"),
        _arrival(raw),
    )
    parts = F.split(F.col("line"), "\t")
    out = lines.select(
        F.expr(metric_sql("topic")).alias("metric"),
        F.get(parts, 0).alias("server"),
        F.get(parts, 1).try_cast("double").alias("ts"),
        F.get(parts, 2).try_cast("double").alias("value"),
        F.size(parts).alias("n_fields"),
        F.col("arrival"),
    )
    finite = F.abs(F.col("value")) < F.lit(float("inf"))
    return out.where((F.col("n_fields") == 3) & F.col("ts").isNotNull() & finite).drop("n_fields")


def packs(
    raw: DataFrame,
    buckets: int,
    block_us: int,
    tolerance_s: float | None = None,
    seen: object | None = None,
) -> DataFrame:
    """Kafka rows (topic, value[, timestamp]) -> (dedup_key, event_time, pack): per record, one
    row per (server bucket of ``buckets``, block of ``block_us`` of event time) holding the
    record's samples there (``io.apm.aggregator.Pack``), ``event_time`` being its newest
    sample's. The samples are ``decode``'s, less those ahead of their arrival by more than
    ``tolerance_s`` (``skew.on_time``; None: no limit) and those whose ``ts`` is NaN (no event
    time, no key); each parsed sample is told to ``seen`` when given. ``dedup_key`` is
    ``metric|pmod(xxhash64(server), buckets)|floor(unix_micros(event_time) / block_us)``
    exactly as the plan's SQL built it up to v4's step e: it is the operator's state key."""
    from pyspark.sql import DataFrame as Frame
    from pyspark.sql import functions as F

    spark = raw.sparkSession
    jvm = spark._jvm
    if jvm is None:
        raise RuntimeError("the aggregator's decode needs a classic (JVM) SparkSession")
    records = raw.select(F.expr(metric_sql("topic")).alias("metric"), "value", _arrival(raw))
    tolerance = float("nan") if tolerance_s is None else float(tolerance_s)
    jdf = jvm.io.apm.aggregator.Packs.packs(records._jdf, seen, tolerance, buckets, block_us)
    out = Frame(jdf, spark)
    return out.select("dedup_key", F.timestamp_micros("event_us").alias("event_time"), "pack")
