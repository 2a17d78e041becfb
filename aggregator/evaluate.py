"""From a window's summary (``plan.window_summaries``) to its result row.

Spark resolves the summary (the exact sum where the plan could keep one) and, in the executors,
the percentiles each query reads from the window's KLL sketch (``io.apm.aggregator.Percentiles``,
the rule of ``quantiles.py``; Spark's ``kll_sketch_get_quantile_double`` only takes a constant
rank, and numpy's interpolation needs ranks that depend on each window's n). Only those numbers
reach the driver: until v4 every updated window's sketch (up to 160 KB) did, each batch, about
a core of fixed cost at 100 queries. Each function's value is then ``apm.functions.compute``
on the driver.

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
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from aggregator.quantiles import levels
from aggregator.series import split_columns
from apm.functions import SUMMARY_FIELDS, Summary, compute
from apm.query import Function, Query, WindowResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

__all__ = ["OVERFLOW_KEY", "evaluate", "function_values", "summary", "to_results"]

# The marker in a result row's values: how many of its functions overflowed a double and are
# left out. No function's key can be this word (apm.functions.spec_of_key knows none).
OVERFLOW_KEY = "overflow"


def evaluate(batch: DataFrame, queries: DataFrame) -> DataFrame:
    """``window_summaries`` output -> one row per window and series (``query_id``, ``server``:
    aggregator/series.py): its ``apm.functions.SUMMARY_FIELDS``
    but the sketch (n, sum, min, max), and ``percentiles``: those its query reads
    (``quantiles.levels``), in that order, or null."""
    from pyspark.sql import DataFrame as Frame
    from pyspark.sql import functions as F

    wants = queries.select("query_id", "window_seconds", "wants_sketch", "levels")
    query_id, server = split_columns()
    series = batch.select(query_id, server, *[c for c in batch.columns if c != "query_id"])
    rows = series.join(F.broadcast(wants), ["query_id", "window_seconds"])
    exact = (F.col("n_fixed") == F.col("n")) & F.col("fixed_sum").isNotNull()
    total = F.when(exact, F.col("fixed_sum").cast("double")).otherwise(F.col("float_sum"))
    resolved = {
        "sum": total.alias("sum"),
        "sketch": F.when(F.col("wants_sketch"), F.col("sketch")).alias("sketch"),
    }
    windows = rows.select(
        "query_id",
        "server",
        "window_seconds",
        (F.unix_seconds("window_end") - F.col("window_seconds")).alias("window_start"),
        *[resolved.get(name, F.col(name)) for name in SUMMARY_FIELDS],
        "levels",
    )
    jvm = batch.sparkSession._jvm
    if jvm is None:
        raise RuntimeError("the aggregator's evaluation needs a classic (JVM) SparkSession")
    return Frame(jvm.io.apm.aggregator.Percentiles.select(windows._jdf), batch.sparkSession)


def summary(row: Row, query: Query) -> Summary:
    """An ``evaluate`` row of ``query`` as the catalogue's :class:`apm.functions.Summary`."""
    fields = {name: row[name] for name in SUMMARY_FIELDS if name != "sketch"}
    computed = dict(zip(levels(query), row["percentiles"] or (), strict=False))

    def percentile(p: float) -> float:
        if p not in computed:
            raise ValueError(f"percentile {p:g} was not computed for this window")
        return computed[p]

    return Summary(**fields, percentile=percentile)


def function_values(
    functions: Sequence[Function],
    window: Summary,
    overflowed: Callable[[str], None] = lambda key: None,
) -> dict[str, float]:
    """``functions`` over ``window`` (a window, or a rollup tier's bucket), except
    those whose value overflowed (module docstring): each of those is left out, reported to
    ``overflowed`` by its key, and counted under ``OVERFLOW_KEY``."""
    values: dict[str, float] = {}
    for f in functions:
        value = compute(f, window)
        if math.isfinite(value):
            values[f.key] = value
        else:
            overflowed(f.key)
    if missing := len(functions) - len(values):
        values[OVERFLOW_KEY] = float(missing)
    return values


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
        values = function_values(query.functions, summary(row, query), overflowed)
        out.append(
            WindowResult(
                row["query_id"],
                float(row["window_start"]),
                int(row["window_seconds"]),
                values,
                int(row["n"]),
                now,
                row["server"],
            )
        )
    return out
