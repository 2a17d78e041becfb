"""From a window's set of samples to its result row, with built-in array functions.

Percentiles follow numpy's default (``method="linear"``, Hyndman & Fan type 7) bit for bit:
``r = (n - 1) * p / 100``, ``a, b = v[floor(r)], v[floor(r) + 1]``, ``t = r - floor(r)``, and
numpy's two-sided lerp (``a + (b - a) t`` below t = 0.5, ``b - (b - a)(1 - t)`` from it), then
clamped to [min, max]. Every sample of the window is kept, so the value is exact at any n.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from apm.query import Query, WindowResult

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row

__all__ = ["evaluate", "percentile_expr", "to_results"]


def percentile_expr(values: Column, n: Column, p: Column) -> Column:
    """numpy-linear percentile ``p`` (0..100) of the ascending array ``values`` of size n."""
    from pyspark.sql import functions as F

    r = (n - 1) * (p / F.lit(100.0))
    lower = F.floor(r)
    prev = F.least(lower, n - 1).cast("int")
    nxt = F.least(lower + 1, n - 1).cast("int")
    a, b = F.get(values, prev), F.get(values, nxt)
    t = r - lower
    diff = b - a
    lerp = F.when(t >= 0.5, b - diff * (F.lit(1.0) - t)).otherwise(a + diff * t)
    return F.least(F.greatest(lerp, F.get(values, 0)), F.get(values, n - 1))


def evaluate(batch: DataFrame, queries: DataFrame) -> DataFrame:
    """``window_sets`` output -> one row per window: count, min, max, sum, avg and the
    query's percentiles (in the order of ``queries.pcts``)."""
    from pyspark.sql import functions as F

    levels = queries.select("query_id", "window_seconds", "pcts")
    rows = batch.join(F.broadcast(levels), ["query_id", "window_seconds"])
    # A (server, ts) pair counts once even if two records disagree on the value: the smallest
    # value wins, which does not depend on arrival order, so replays converge.
    ordered = rows.withColumn("samples", F.array_sort("samples"))

    def first_of_pair(x: Column, i: Column) -> Column:
        prev = F.get(F.col("samples"), F.greatest(i, F.lit(1)) - 1)
        return (i == 0) | ~((prev["server"] == x["server"]) & (prev["ts"] == x["ts"]))

    distinct = F.filter("samples", first_of_pair)
    values = ordered.select(
        "query_id", "window_seconds",
        (F.unix_seconds("window_end") - F.col("window_seconds")).alias("window_start"),
        "pcts", F.array_sort(F.transform(distinct, lambda x: x["value"])).alias("v"))
    n = F.size("v")
    total = F.aggregate("v", F.lit(0.0), lambda acc, x: acc + x)
    return values.select(
        "query_id", "window_seconds", "window_start", n.alias("n"),
        F.get(F.col("v"), 0).alias("min"), F.get(F.col("v"), n - 1).alias("max"),
        total.alias("sum"), (total / n).alias("avg"),
        F.transform("pcts", lambda p: percentile_expr(F.col("v"), n, p)).alias("pvals"))


def to_results(rows: list[Row], queries: Mapping[str, Query],
               clock: Callable[[], float] = time.time) -> list[WindowResult]:
    """Collected ``evaluate`` rows -> WindowResults holding exactly each query's functions."""
    now = clock()
    out = []
    for row in rows:
        query = queries.get(row["query_id"])
        if query is None or query.window_seconds != row["window_seconds"]:
            continue  # deleted or redefined since the batch was planned
        stats = {"min": row["min"], "max": row["max"], "sum": row["sum"], "avg": row["avg"],
                 "count": float(row["n"])}
        pvals = iter(row["pvals"])
        values = {f.key: (next(pvals) if f.p is not None else stats[f.name])
                  for f in query.functions}
        out.append(WindowResult(row["query_id"], float(row["window_start"]),
                                int(row["window_seconds"]), values, int(row["n"]), now))
    return out
