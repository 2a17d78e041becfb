"""The per-server series and rankings of ``storage.repository.Repository`` in memory, for unit
tests of the code that writes or reads them. The edges are the repository's own (its checks
are reused): a bad row raises ValueError and stores nothing, the newest version of a window
wins whatever order versions come in, a window's ranking replaces its previous one whole, and
``list_result_servers`` answers at day granularity. tests/storage/test_servers.py runs the
same contract against this fake and the real repository."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from apm.model import server_name_error
from apm.query import WindowResult
from apm.ranking import Ranked
from storage import codec
from storage.rankings import checked_rankings
from storage.reader import bucket_span, ms_ceil, span_ms

__all__ = ["FakeServerSeries"]


def _server(row: object) -> object:
    return row[6] if isinstance(row, tuple) and len(row) > 6 else ""


@dataclass
class FakeServerSeries:
    """(query_id, server, window_start ms) -> row; (query_id, window_start ms) -> ranking."""

    server_rows: dict[tuple[str, str, int], WindowResult] = field(default_factory=dict)
    rankings: dict[tuple[str, int], list[Ranked]] = field(default_factory=dict)

    def upsert_server_rows(self, rows: Iterable[WindowResult]) -> tuple[list[WindowResult], int]:
        """Stores the rows with a server (all checked first) and returns the others and the
        number of per-server windows written: what ``upsert_results`` does with them."""
        rows = list(rows)
        latest = codec.latest_results(r for r in rows if _server(r) != "")
        for key, row in latest.items():
            old = self.server_rows.get(key)
            if old is None or row.updated_at >= old.updated_at:
                self.server_rows[key] = row
        return [r for r in rows if _server(r) == ""], len(latest)

    def read_server_results(
        self, query_id: str, server: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        if (err := server_name_error(server)) is not None:
            raise ValueError(err)
        lo, hi = span_ms(start, end, page_size)
        return iter(
            [
                row
                for (qid, s, ms), row in sorted(self.server_rows.items())
                if qid == query_id and s == server and lo <= ms < hi
            ]
        )

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        if not codec.finite(window_start) or window_start < 0:
            raise ValueError(
                f"window_start must be finite epoch seconds >= 0, got {window_start!r}"
            )
        at = ms_ceil(window_start)
        rows = [
            (s, row)
            for (qid, s, ms), row in self.server_rows.items()
            if (qid, ms) == (query_id, at)
        ]
        return iter([row for _, row in sorted(rows)])

    def list_result_servers(self, query_id: str, start: float, end: float) -> list[str]:
        lo, hi = span_ms(start, end)
        if hi <= lo:
            return []
        first, last = bucket_span(lo, hi)
        return sorted(
            {
                s
                for (qid, s, ms) in self.server_rows
                if qid == query_id and first <= bucket_span(ms, ms + 1)[0] <= last
            }
        )

    def upsert_ranked(self, rows: Iterable[Ranked]) -> int:
        windows = checked_rankings(rows)
        for key, ranking in windows.items():
            old = self.rankings.get(key)
            version = max(r.updated_at for r in ranking)
            if old is None or version >= max(r.updated_at for r in old):
                self.rankings[key] = ranking
        return len(windows)

    def read_ranked(self, query_id: str, start: float, end: float) -> Iterator[Ranked]:
        lo, hi = span_ms(start, end)
        return iter(
            [
                ranked
                for (qid, ms), ranking in sorted(self.rankings.items())
                if qid == query_id and lo <= ms < hi
                for ranked in ranking
            ]
        )
