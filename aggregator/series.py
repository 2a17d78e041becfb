"""A window summary's series: the query's one series, one server's of a ``BY server`` query, or
one group's of a ``BY <tag>`` query, named by its label (``apm.query_select.group_label``,
``dc=eu-1``), which holds no tab (tag values are printable) and is never "" (issue 37).

The window aggregation's key is (query_id, window_seconds, window_end), and that key is the
state store's schema, which a running checkpoint keeps. A ``BY server`` query's partials carry
its id, a tab and the server in the ``query_id`` column (``io.apm.aggregator.Partials.seriesId``;
the SQL route of ``dedup=False`` builds the same), so per-server series need no new key
column and an existing checkpoint reads on unchanged. A tab is in no query id (a uuid) and no
server name (``apm.model.SERVER_NAME_RE``). The evaluation splits it again (``split``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["SERIES_SEPARATOR", "split", "split_columns"]

SERIES_SEPARATOR = "\t"


def split(series: str) -> tuple[str, str]:
    """(query id, server or group label); "" for a query's one series."""
    query_id, _, server = series.partition(SERIES_SEPARATOR)
    return query_id, server


def split_columns(column: str = "query_id") -> tuple[Column, Column]:
    """``split`` as Spark columns: (query_id, server)."""
    from pyspark.sql import functions as F

    series = F.col(column)
    query_id = F.substring_index(series, SERIES_SEPARATOR, 1)
    # One separator at most, so what follows the last one is the server.
    server = F.when(
        F.instr(series, SERIES_SEPARATOR) > 0, F.substring_index(series, SERIES_SEPARATOR, -1)
    ).otherwise(F.lit(""))
    return query_id.alias("query_id"), server.alias("server")
