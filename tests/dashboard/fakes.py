"""An in-memory stand-in for the storage repository's result reads (unit tests of the
dashboard's logic): the per-server series and rankings are the shared fake
(``tests.support.servers``, held to the real repository's contract by
tests/storage/test_servers.py); plain results and rollup tier rows, ranges [start, end),
ascending."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from apm.query import StoredQuery, WindowResult
from apm.ranking import rank
from tests.support.servers import FakeServerSeries

__all__ = ["FakeResults"]


class FakeResults(FakeServerSeries):
    """The shared per-server fake (``tests.support.servers``) with the plain results, the
    stored queries and the servers seen beside it, and a log of the reads."""

    def __init__(self, queries: Iterable[StoredQuery] = ()) -> None:
        super().__init__()
        self.queries = {q.id: q for q in queries}
        self.results: dict[tuple[str, float], WindowResult] = {}
        self.reads: list[tuple[str, ...]] = []
        self.tiers: dict[tuple[str, str, float], WindowResult] = {}

    def upsert_results(self, rows: Iterable[WindowResult]) -> int:
        plain, n = self.upsert_server_rows(rows)
        for r in plain:
            self.results[(r.query_id, r.window_start)] = r
        return n + len(plain)

    def rank_all(self, q: StoredQuery) -> None:
        """Ranks every stored window of ``q`` as the aggregator would."""
        starts = {ms for (qid, _, ms) in self.server_rows if qid == q.id}
        for ms in starts:
            self.upsert_ranked(rank(q.query, self.read_window_servers(q.id, ms / 1000)))

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        return list(self.queries.values())

    def get_query(self, query_id: str) -> StoredQuery | None:
        return self.queries.get(query_id)

    def upsert_tier(self, tier: str, rows: Iterable[WindowResult]) -> int:
        rows = list(rows)
        for r in rows:
            self.tiers[(tier, r.query_id, r.window_start)] = r
        return len(rows)

    def read_results(
        self,
        query_id: str,
        start: float,
        end: float,
        page_size: int = 5000,
        tier: str | None = None,
    ) -> Iterator[WindowResult]:
        if tier is not None:
            self.reads.append(("read_results", query_id, tier))
            got = [
                r
                for (t, qid, at), r in sorted(self.tiers.items())
                if t == tier and qid == query_id and start <= at < end
            ]
            return iter(got)
        self.reads.append(("read_results", query_id))
        keys = sorted(k for k in self.results if k[0] == query_id and start <= k[1] < end)
        return iter([self.results[k] for k in keys])

    def read_server_results(
        self, query_id: str, server: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self.reads.append(("read_server_results", query_id, server))
        return super().read_server_results(query_id, server, start, end, page_size)

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        self.reads.append(("read_window_servers", query_id, str(window_start)))
        return super().read_window_servers(query_id, window_start)

    def list_servers(self) -> dict[str, float]:
        return {s: 0.0 for (_, s, _) in self.server_rows}


def per_server_rows(
    query_id: str, starts: Sequence[float], values: dict[str, float], window: int = 10
) -> list[WindowResult]:
    """One window per start for each server, its value in ``values`` (avg, max) plus the
    window's index, so that later windows are higher."""
    return [
        WindowResult(query_id, at, window, {"avg": v + i, "max": v + i + 1}, 3, at + window, server)
        for i, at in enumerate(starts)
        for server, v in values.items()
    ]
