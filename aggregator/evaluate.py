"""From a window's summary (``plan.window_summaries``) to its result row.

Spark computes the exact statistics; the percentiles come from the window's KLL sketch on the
driver (``quantiles.percentiles``): Spark's ``kll_sketch_get_quantile_double`` only takes a
constant rank, and numpy's interpolation needs ranks that depend on each window's n.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from aggregator.quantiles import percentiles
from apm.query import Query, WindowResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

__all__ = ["evaluate", "to_results"]


def evaluate(batch: DataFrame, queries: DataFrame) -> DataFrame:
    """``window_summaries`` output -> one row per window: n, min, max, sum, avg, and the
    sketch only for queries that ask for percentiles (it is the bulk of a row)."""
    from pyspark.sql import functions as F

    levels = queries.select("query_id", "window_seconds", "pcts")
    rows = batch.join(F.broadcast(levels), ["query_id", "window_seconds"])
    exact = (F.col("n_fixed") == F.col("n")) & F.col("fixed_sum").isNotNull()
    total = F.when(exact, F.col("fixed_sum").cast("double")).otherwise(F.col("float_sum"))
    return rows.select(
        "query_id", "window_seconds",
        (F.unix_seconds("window_end") - F.col("window_seconds")).alias("window_start"),
        "n", "min", "max", total.alias("sum"), (total / F.col("n")).alias("avg"),
        F.when(F.size("pcts") > 0, F.col("sketch")).alias("sketch"))


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
        levels = [float(f.p) for f in query.functions if f.p is not None]
        pvals = iter(percentiles(row["sketch"], levels, row["min"], row["max"])
                     if levels else [])
        values = {f.key: (next(pvals) if f.p is not None else stats[f.name])
                  for f in query.functions}
        out.append(WindowResult(row["query_id"], float(row["window_start"]),
                                int(row["window_seconds"]), values, int(row["n"]), now))
    return out
