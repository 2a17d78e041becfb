"""The stored top-N rankings of ``BY server ... TOP|BOTTOM n`` queries (``apm.ranking``), one
row per window in ``rankings`` (``storage.server_tables``); ``storage.repository.Repository``
delegates to :class:`RankingStore`.

A window's ranking is one cell, a frozen list by rank, so writing a ranking replaces the
window's previous one whole: a re-ranking with fewer rows leaves no stale rank behind, and
there is no delete (a range tombstone per re-ranking, with every trigger, under TWCS). It is
written ``USING TIMESTAMP`` = its version, the newest updated_at of its rows: a replayed older
ranking never overwrites a newer one. Reading the top-N of one window reads that one row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from apm.query import MAX_TOP, WindowResult
from apm.ranking import OTHERS, Ranked
from storage import codec
from storage.driver import execute_many
from storage.reader import pipelined, span_ms
from storage.schema import BUCKET_SECONDS, bucket_of
from storage.server_tables import RANKING_BUCKET_SECONDS, server_statements
from storage.servers import ServerStore

__all__ = ["RankingStore", "checked_rankings", "ranked_error", "ranking_error"]

_HOUR_MS = RANKING_BUCKET_SECONDS * 1000
_HOURS_A_DAY = BUCKET_SECONDS // RANKING_BUCKET_SECONDS


def ranked_error(row: object) -> str | None:
    """Why ``row`` cannot be stored as one row of a ranking, or None."""
    if not isinstance(row, Ranked):
        if not (isinstance(row, tuple) and len(row) == len(Ranked._fields)):
            return f"expected a Ranked, got {type(row).__name__}"
        row = Ranked(*row)
    if isinstance(row.rank, bool) or not isinstance(row.rank, int) or row.rank < 1:
        return f"rank must be a whole number >= 1, got {row.rank!r}"
    if row.server != OTHERS and (err := codec.series_error(row.server)) is not None:
        return f"server: {err}"
    return codec.result_error(
        WindowResult(
            row.query_id,
            row.window_start,
            row.window_seconds,
            row.values,
            row.samples,
            row.updated_at,
        )
    )


def ranking_error(rows: list[Ranked]) -> str | None:
    """Why the rows of one window are not one ranking (ranks 1..k each once, k <= MAX_TOP + 1,
    each server once, OTHERS only last, one window length), or None."""
    ranks = sorted(r.rank for r in rows)
    if ranks != list(range(1, len(rows) + 1)):
        return f"ranks must be 1 to {len(rows)}, each once, got {ranks[:10]}"
    if len(rows) > MAX_TOP + 1:
        return f"a ranking has at most {MAX_TOP + 1} rows, got {len(rows)}"
    if len({r.server for r in rows}) != len(rows):
        return "a server is ranked twice"
    if any(r.server == OTHERS and r.rank != len(rows) for r in rows):
        return f"{OTHERS!r} must be the last rank"
    if len({r.window_seconds for r in rows}) != 1:
        return "its rows disagree on window_seconds"
    return None


def checked_rankings(rows: Iterable[object]) -> dict[tuple[str, int], list[Ranked]]:
    """(query_id, window_start ms) -> that window's rows, by rank; all rows and rankings
    checked first: the first bad one raises ValueError naming it."""
    windows: dict[tuple[str, int], list[Ranked]] = {}
    for i, row in enumerate(rows):
        if (err := ranked_error(row)) is not None:
            raise ValueError(f"ranked row {i}: {err}")
        r = Ranked(*row)  # type: ignore[misc]
        windows.setdefault((r.query_id, codec.to_ms(r.window_start)), []).append(r)
    for (qid, ms), ranking in windows.items():
        if (err := ranking_error(ranking)) is not None:
            raise ValueError(f"ranking of query {qid!r}, window {ms / 1000:g}: {err}")
        ranking.sort(key=lambda r: r.rank)
    return windows


class RankingStore:
    """The rankings of ``keyspace``; the days they are in go to ``servers``' index."""

    def __init__(
        self,
        session: Any,
        keyspace: str,
        servers: ServerStore,
        *,
        concurrency: int,
        profile: object,
    ) -> None:
        self.session, self.servers = session, servers
        self.concurrency, self.profile = concurrency, profile
        self._put = session.prepare(server_statements(keyspace)["rankings"])
        self._range = session.prepare(
            f"SELECT window_start, window_seconds, ranking FROM {keyspace}.rankings "
            "WHERE query_id = ? AND hour = ? AND window_start >= ? AND window_start < ? "
            "ORDER BY window_start ASC"
        )
        self._put.is_idempotent = self._range.is_idempotent = True

    def upsert(self, rows: Iterable[Ranked]) -> int:
        """Checks every row (one bad row or ranking writes nothing), then replaces each window's
        stored ranking with the rows given for it. Returns the number of windows written."""
        windows = checked_rankings(rows)
        self.servers.index_days({(qid, bucket_of(ms / 1000)) for qid, ms in windows})
        params = []
        for (qid, ms), ranking in windows.items():
            version = max(r.updated_at for r in ranking)
            entries = [
                (
                    r.server,
                    {k: float(v) for k, v in r.values.items()},
                    int(r.samples),
                    codec.to_ms(r.updated_at),
                )
                for r in ranking
            ]
            seconds = int(ranking[0].window_seconds)
            params.append(
                (
                    qid,
                    ms // _HOUR_MS,
                    ms,
                    seconds,
                    entries,
                    codec.to_ms(version),
                    codec.to_us(version),
                )
            )
        # One statement each: a ranking of 101 rows is ~10 KB, a batch of them would pass
        # Cassandra's batch size limits.
        execute_many(
            self.session,
            self._put,
            [[p] for p in params],
            concurrency=self.concurrency,
            profile=self.profile,
        )
        return len(windows)

    def read(self, query_id: str, start: float, end: float) -> Iterator[Ranked]:
        """Every window's ranking with start <= window_start < end, by window then rank: one
        statement per hour of the indexed days in the range."""
        lo_ms, hi_ms = span_ms(start, end)  # checked now, not at the first next()

        def bound() -> Iterator[Any]:
            for day in self.servers.days(query_id, lo_ms, hi_ms):
                first = max(day * _HOURS_A_DAY, lo_ms // _HOUR_MS)
                last = min((day + 1) * _HOURS_A_DAY - 1, (hi_ms - 1) // _HOUR_MS)
                for hour in range(first, last + 1):
                    yield self._range.bind((query_id, hour, lo_ms, hi_ms))

        rows = pipelined(self.session, bound(), self.servers.ahead, self.profile)
        return (ranked for row in rows for ranked in _expand(query_id, row))


def _expand(query_id: str, row: Any) -> Iterator[Ranked]:
    """A stored (window_start, window_seconds, ranking) row -> its Ranked rows, by rank."""
    window_start, seconds, ranking = codec.epoch(row[0]) or 0.0, int(row[1]), row[2]
    for i, (server, vals, samples, updated) in enumerate(ranking or ()):
        yield Ranked(
            query_id,
            window_start,
            seconds,
            i + 1,
            server,
            {k: float(v) for k, v in (vals or {}).items()},
            int(samples or 0),
            codec.epoch(updated) or 0.0,
        )
