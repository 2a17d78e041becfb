"""Spark's own floor for the aggregator's shape of work, measured in the benchmark's run.

The same engine, settings and machine as the job, with everything the platform adds taken
away: an in-JVM rate source instead of Kafka and decoding, 100 keys instead of the query
fan-out, no dedup, a noop sink instead of the evaluation and Cassandra. What is left is a 10 s
tumbling event-time window with a 20 s watermark, grouped by key x window into count, sum,
min, max and ``kll_sketch_agg_double(v, KLL_K)``, in update mode with the RocksDB state store
(``aggregator.session``). Its highest sustained rate is the denominator of the aggregator's
"ratio to the engine's floor" (../shared/reference/spark-measurements.md measured 1.6M rows/s
this way). It runs in a JVM of its own (``bench.feed.run_isolated``) so that neither run
warms or loads the other's.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Any

from bench.base import progress

__all__ = ["FLOOR_RATES", "floor_shape", "measure_floor", "sustained"]

FLOOR_RATES = (400_000, 800_000, 1_600_000, 3_200_000, 4_800_000, 6_400_000, 9_600_000)
KEYS = 100


def floor_shape() -> str:
    from aggregator.quantiles import KLL_K

    return (
        f"rate source, 10 s tumbling windows, 20 s watermark, groupBy {KEYS} keys x window: "
        f"count, sum, min, max, kll_sketch_agg_double(v, {KLL_K:,}); update mode, noop sink, "
        "RocksDB state store"
    )


def _step(spark: Any, rate: int, seconds: int, trigger_s: float) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from aggregator.quantiles import KLL_K

    frame = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", rate)
        .option("numPartitions", spark.sparkContext.defaultParallelism)
        .load()
        .withWatermark("timestamp", "20 seconds")
        .select(
            (F.col("value") % KEYS).alias("key"),
            F.window("timestamp", "10 seconds").alias("w"),
            (F.col("value") % 1000 / 7.0).alias("v"),
        )
        .groupBy("key", "w")
        .agg(
            F.count("v"),
            F.sum("v"),
            F.min("v"),
            F.max("v"),
            F.kll_sketch_agg_double("v", KLL_K),
        )
    )
    query = (
        frame.writeStream.format("noop")
        .outputMode("update")
        .trigger(processingTime=f"{trigger_s} seconds")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="floor-"))
        .start()
    )
    try:
        time.sleep(seconds)
    finally:
        query.stop()
    # The first batches start the source and warm the JVM; the steady state is after them.
    reports = [p for p in query.recentProgress if p.numInputRows > 0][2:]
    durations = [p.durationMs.get("triggerExecution", 0) / 1000 for p in reports]
    rows = [p.numInputRows for p in reports]
    p50 = statistics.median(durations) if durations else float("nan")
    return {
        "rate": rate,
        "batches": len(reports),
        "batch_p50_s": p50,
        "rows_p50": statistics.median(rows) if rows else 0,
        # A rate source hands a slow batch all the rows since the last one: the next batch
        # grows with it. Kept up = the median batch fits in the trigger interval.
        "kept_up": bool(durations) and p50 <= trigger_s,
    }


def measure_floor(
    rates: tuple[int, ...], seconds: int, trigger_s: float, out: Any = None
) -> list[dict[str, Any]]:
    """Steps through ``rates`` until one is not kept up; returns one dict per step (and puts
    the list on ``out`` when run through ``run_isolated``)."""
    from aggregator.session import build_session

    spark = build_session("engine-floor")
    steps: list[dict[str, Any]] = []
    try:
        for rate in rates:
            step = _step(spark, rate, seconds, trigger_s)
            steps.append(step)
            progress(
                f"floor {rate:,} rows/s: batch p50 {step['batch_p50_s']:.2f} s, "
                f"kept up {step['kept_up']}"
            )
            if not step["kept_up"]:
                break
    finally:
        spark.stop()
    if out is not None:
        out.put(steps)
    return steps


def sustained(steps: list[dict[str, Any]]) -> int:
    """The highest rate kept up (0 if none)."""
    return max((s["rate"] for s in steps if s["kept_up"]), default=0)
