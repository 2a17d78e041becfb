"""Writes and reads of the per-server series of ``BY server`` queries (the tables of
``storage.server_tables``); ``storage.repository.Repository`` delegates to :class:`ServerStore`.

A per-server row is written twice: to its server's series (``server_series``, what a chart of
one server reads; the legacy ``server_results`` is read too while a keyspace has it) and to
its window's partition (``window_servers``, what a re-ranking reads),
each ``USING TIMESTAMP`` = its updated_at like the results, so a replayed older version never
overwrites a newer one. The indexes are written first, a reader never sees rows they do not
point to: ``server_buckets`` (the query's days) and ``result_servers`` (a day's servers), each
row re-asserted at most hourly by a writer (``storage.schema.IndexRows``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from apm.query import WindowResult
from storage import codec
from storage.driver import execute_many
from storage.reader import bucket_span, ms_ceil, pipelined, span_ms
from storage.schema import IndexRows, bucket_of, table_names
from storage.server_tables import LEGACY_SERIES_TABLE, server_shard, server_statements

__all__ = ["ServerStore"]

_COLS = "window_start, window_seconds, vals, samples, updated_at"


class ServerStore:
    """The per-server tables of ``keyspace``, statements prepared once."""

    def __init__(self, session: Any, keyspace: str, *, concurrency: int, profile: object) -> None:
        self.session, self.concurrency, self.profile = session, concurrency, profile
        self.keyspace = keyspace
        self.ahead = min(8, concurrency)  # partitions read ahead (storage.reader)
        ks = keyspace
        writes = server_statements(ks)
        self._put_series = self._prep(writes["server_series"])
        self._put_window = self._prep(writes["window_servers"])
        self._put_server = self._prep(writes["result_servers"])
        self._put_bucket = self._prep(writes["server_buckets"])
        self._put_newest = self._prep(writes["newest"])
        self._series = self._prep(
            f"SELECT {_COLS} FROM {ks}.server_series WHERE query_id = ? AND bucket = ? "
            "AND shard = ? AND server = ? AND window_start >= ? AND window_start < ?"
        )
        # A keyspace from before server_series keeps its older rows there: read both (one
        # partition more a day) until the operator drops it (docs/storage.md).
        self._legacy = None
        if LEGACY_SERIES_TABLE in table_names(session, ks):
            self._legacy = self._prep(
                f"SELECT {_COLS} FROM {ks}.{LEGACY_SERIES_TABLE} WHERE query_id = ? "
                "AND server = ? AND bucket = ? AND window_start >= ? AND window_start < ? "
                "ORDER BY window_start ASC"
            )
        self._window = self._prep(
            f"SELECT server, {_COLS} FROM {ks}.window_servers "
            "WHERE query_id = ? AND window_start = ?"
        )
        self._servers = self._prep(
            f"SELECT server FROM {ks}.result_servers WHERE query_id = ? AND bucket = ?"
        )
        self._buckets = self._prep(
            f"SELECT bucket FROM {ks}.server_buckets "
            "WHERE query_id = ? AND bucket >= ? AND bucket <= ?"
        )
        self._newest = self._prep(
            f"SELECT newest FROM {ks}.server_buckets WHERE query_id = ? LIMIT 1"
        )
        # (query, day) of server_buckets and (query, day, server) of result_servers
        self._indexed = IndexRows(limit=200_000)

    def _prep(self, cql: str) -> Any:
        stmt = self.session.prepare(cql)
        stmt.is_idempotent = True  # every statement here: writes are keyed and timestamped
        return stmt

    def _many(self, stmt: Any, groups: list[list[tuple[Any, ...]]]) -> None:
        execute_many(self.session, stmt, groups, concurrency=self.concurrency, profile=self.profile)

    # -- writes ---------------------------------------------------------------------------
    def index_days(self, days: Iterable[tuple[str, int]]) -> None:
        """Records that these (query, day) hold per-server results or rankings."""
        fresh = self._indexed.due(set(days))
        self._many(self._put_bucket, [[key] for key in fresh])
        self._indexed.written(fresh)

    def upsert(self, rows: Mapping[tuple[str, str, int], WindowResult]) -> None:
        """Writes checked rows, one per (query_id, server, window_start in ms)."""
        days = {(qid, bucket_of(r.window_start)) for (qid, _, _), r in rows.items()}
        servers = self._indexed.due(
            {(qid, bucket_of(r.window_start), s) for (qid, s, _), r in rows.items()}
        )
        self.index_days(days)
        days_servers: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for qid, day, server in servers:  # one partition a day: batched
            days_servers.setdefault((qid, day), []).append((qid, day, server))
        self._many(self._put_server, list(days_servers.values()))
        self._indexed.written(servers)
        series: dict[tuple[str, int, int], list[tuple[Any, ...]]] = {}
        windows: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        newest: dict[str, float] = {}
        for (qid, server, ms), r in rows.items():
            values, bucket = codec.result_columns(r), bucket_of(r.window_start)
            shard = server_shard(server)
            series.setdefault((qid, bucket, shard), []).append(
                (qid, bucket, shard, server, ms, *values)
            )
            windows.setdefault((qid, ms), []).append((qid, ms, server, *values))
            newest[qid] = max(newest.get(qid, 0.0), r.updated_at)
        self._many(self._put_series, list(series.values()))
        self._many(self._put_window, list(windows.values()))
        self._many(
            self._put_newest,
            [[(codec.to_us(ts), codec.to_ms(ts), qid)] for qid, ts in newest.items()],
        )

    # -- reads ----------------------------------------------------------------------------
    def days(self, query_id: str, lo_ms: int, hi_ms: int) -> list[int]:
        """The indexed days of ``query_id`` that [lo_ms, hi_ms) touches, ascending."""
        if hi_ms <= lo_ms:
            return []
        first, last = bucket_span(lo_ms, hi_ms)
        rows = self.session.execute(
            self._buckets, (query_id, first, last), execution_profile=self.profile
        )
        return sorted(row[0] for row in rows)

    def read_series(
        self, query_id: str, server: str, start: float, end: float, page_size: int
    ) -> Iterator[WindowResult]:
        # A BY <tag> query's groups are stored as servers are, named by their label.
        if (err := codec.series_error(server)) is not None:
            raise ValueError(err)
        lo, hi = span_ms(start, end, page_size)
        days, shard = self.days(query_id, lo, hi), server_shard(server)

        def bound() -> Iterator[Any]:
            for day in days:
                statement = self._series.bind((query_id, day, shard, server, lo, hi))
                statement.fetch_size = page_size
                yield statement

        rows = (
            codec.window_result(query_id, row, server)
            for row in pipelined(self.session, bound(), self.ahead, self.profile)
        )
        if self._legacy is None:
            return rows
        return self._with_legacy(self._legacy, rows, (query_id, server), days, (lo, hi), page_size)

    def _with_legacy(
        self,
        legacy: Any,
        rows: Iterator[WindowResult],
        series: tuple[str, str],
        days: list[int],
        span: tuple[int, int],
        page_size: int,
    ) -> Iterator[WindowResult]:
        """``rows`` merged with the legacy table's rows of the same days: a day at a time (each
        side ascending), the newer version of a window where both hold it (a window refined
        after the upgrade)."""
        (query_id, server), (lo, hi) = series, span

        def bound() -> Iterator[Any]:
            for day in days:
                statement = legacy.bind((query_id, server, day, lo, hi))
                statement.fetch_size = page_size
                yield statement

        old = (
            codec.window_result(query_id, row, server)
            for row in pipelined(self.session, bound(), self.ahead, self.profile)
        )
        yield from _merged(rows, old)

    def read_window(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        """Every server's row of one window, by server name (one partition, paged)."""
        if not codec.finite(window_start) or window_start < 0:
            raise ValueError(
                f"window_start must be finite epoch seconds >= 0, got {window_start!r}"
            )
        statement = self._window.bind((query_id, ms_ceil(window_start)))
        statement.fetch_size = 5000
        return (
            codec.window_result(query_id, row, server)
            for server, *row in self.session.execute(statement, execution_profile=self.profile)
        )

    def servers(self, query_id: str, start: float, end: float) -> list[str]:
        """The servers with per-server rows in the days [start, end) touches, sorted."""
        lo, hi = span_ms(start, end)
        bound = (self._servers.bind((query_id, d)) for d in self.days(query_id, lo, hi))
        return sorted({row[0] for row in pipelined(self.session, bound, self.ahead, self.profile)})

    def newest(self, query_id: str) -> float | None:
        """updated_at of the query's newest per-server row (None if it has none)."""
        row = self.session.execute(self._newest, (query_id,), execution_profile=self.profile).one()
        return None if row is None else codec.epoch(row[0])


def _merged(new: Iterator[WindowResult], old: Iterator[WindowResult]) -> Iterator[WindowResult]:
    """Two ascending series as one, the newer ``updated_at`` where both have a window."""
    a, b = next(new, None), next(old, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a.window_start < b.window_start):
            yield a  # type: ignore[misc]
            a = next(new, None)
        elif a is None or b.window_start < a.window_start:
            yield b
            b = next(old, None)
        else:
            yield a if a.updated_at >= b.updated_at else b
            a, b = next(new, None), next(old, None)
