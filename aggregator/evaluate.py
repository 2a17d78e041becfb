"""From a window's summary (``plan.window_summaries``) to its result row.

Spark resolves the summary (the exact sum where the plan could keep one); each function's value
is then ``apm.functions.compute`` on the driver, the percentiles from the window's KLL sketch
(``quantiles.SketchPercentiles``): Spark's ``kll_sketch_get_quantile_double`` only takes a
constant rank, and numpy's interpolation needs ranks that depend on each window's n.

Overflow (docs/aggregator.md, "Overflow"): every sample is finite, but a window's float sum
is not always: two samples of 1.7e308 make it inf (and inf + -inf makes it NaN), and so the
avg. The exact fixed-point sum is used wherever it holds the window (|sum| < 10^20 with
values of at most 18 decimals); beyond, a function whose value is not finite is left out of
the row (a null, which the dashboard draws as a gap), and the row carries
``OVERFLOW_KEY: <number of functions left out>`` among its values, counted in
``apm_aggregator_overflowed_values_total{function}``. Storage refuses non-finite numbers, so
one such window would otherwise fail its batch on every replay and stop the job for good.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from aggregator.quantiles import SketchPercentiles
from apm.functions import SUMMARY_FIELDS, Summary, compute
from apm.query import Query, WindowResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

__all__ = ["OVERFLOW_KEY", "evaluate", "summary", "to_results"]

# The marker in a result row's values: how many of its functions overflowed a double and are
# left out. No function's key can be this word (apm.functions.spec_of_key knows none).
OVERFLOW_KEY = "overflow"


def evaluate(batch: DataFrame, queries: DataFrame) -> DataFrame:
    """``window_summaries`` output -> one row per window: its ``apm.functions.SUMMARY_FIELDS``
    (n, sum, min, max), and the sketch only for queries that read it (it is the bulk of a
    row)."""
    from pyspark.sql import functions as F

    wants = queries.select("query_id", "window_seconds", "wants_sketch")
    rows = batch.join(F.broadcast(wants), ["query_id", "window_seconds"])
    exact = (F.col("n_fixed") == F.col("n")) & F.col("fixed_sum").isNotNull()
    total = F.when(exact, F.col("fixed_sum").cast("double")).otherwise(F.col("float_sum"))
    resolved = {
        "sum": total.alias("sum"),
        "sketch": F.when(F.col("wants_sketch"), F.col("sketch")).alias("sketch"),
    }
    return rows.select(
        "query_id",
        "window_seconds",
        (F.unix_seconds("window_end") - F.col("window_seconds")).alias("window_start"),
        *[resolved.get(name, F.col(name)) for name in SUMMARY_FIELDS],
    )


def summary(row: Row) -> Summary:
    """An ``evaluate`` row as the catalogue's :class:`apm.functions.Summary`."""
    fields = {name: row[name] for name in SUMMARY_FIELDS if name != "sketch"}
    return Summary(**fields, percentile=SketchPercentiles(row["sketch"], row["min"], row["max"]))


def to_results(
    rows: list[Row],
    queries: Mapping[str, Query],
    clock: Callable[[], float] = time.time,
    overflowed: Callable[[str], None] = lambda key: None,
) -> list[WindowResult]:
    """Collected ``evaluate`` rows -> WindowResults holding each query's functions, except
    those whose value overflowed (module docstring): each of those is left out, reported to
    ``overflowed`` by its key, and counted under ``OVERFLOW_KEY``."""
    now = clock()
    out = []
    for row in rows:
        query = queries.get(row["query_id"])
        if query is None or query.window_seconds != row["window_seconds"]:
            continue  # deleted or redefined since the batch was planned
        window = summary(row)
        values: dict[str, float] = {}
        for f in query.functions:
            value = compute(f, window)
            if math.isfinite(value):
                values[f.key] = value
            else:
                overflowed(f.key)
        if missing := len(query.functions) - len(values):
            values[OVERFLOW_KEY] = float(missing)
        out.append(
            WindowResult(
                row["query_id"],
                float(row["window_start"]),
                int(row["window_seconds"]),
                values,
                int(row["n"]),
                now,
            )
        )
    return out
