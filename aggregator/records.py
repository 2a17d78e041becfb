"""Kafka records -> samples: ``decode``, one row per sample of every admitted record's value
(``apm.wire``'s ``tsv1`` lines), by the project's JVM code (``io.apm.aggregator.Decode``,
aggregator/jvm), which reads each value's bytes once and parses each number once.

``decode_sql`` is v3's decode with built-in SQL functions (split, explode, two casts per
line), kept as the reference the JVM decode is tested against row for row
(tests/aggregator/test_records.py) and as the "before" of the ``-sql`` probes of
``python -m bench.aggregator_profile`` and of ``python -m bench.aggregator --sql-decode``
(docs/aggregator.md, "v4, step by step": step a).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apm.model import metric_sql

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["decode", "decode_sql"]


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
