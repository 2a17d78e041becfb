"""An in-memory stand-in for the storage repository's result reads (unit tests of the
dashboard's logic): the same contract as ``storage.repository.Repository`` at its edges,
ranges [start, end), ascending windows, rankings by window then rank, servers sorted."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from apm.query import StoredQuery, WindowResult
from apm.ranking import Ranked, rank

__all__ = ["FakeResults"]


class FakeResults:
    def __init__(self, queries: Iterable[StoredQuery] = ()) -> None:
        self.queries = {q.id: q for q in queries}
        self.results: dict[tuple[str, str, float], WindowResult] = {}
        self.ranked: dict[tuple[str, float], list[Ranked]] = {}
        self.reads: list[tuple[str, ...]] = []

    def upsert_results(self, rows: Iterable[WindowResult]) -> int:
        n = 0
        for r in rows:
            self.results[(r.query_id, r.server, r.window_start)] = r
            n += 1
        return n

    def upsert_ranked(self, rows: Iterable[Ranked]) -> int:
        rows = list(rows)
        for key in {(r.query_id, r.window_start) for r in rows}:
            self.ranked[key] = sorted(
                (r for r in rows if (r.query_id, r.window_start) == key), key=lambda r: r.rank
            )
        return len(rows)

    def rank_all(self, q: StoredQuery) -> None:
        """Ranks every stored window of ``q`` as the aggregator would."""
        starts = {k[2] for k in self.results if k[0] == q.id and k[1]}
        for at in starts:
            self.upsert_ranked(rank(q.query, self.read_window_servers(q.id, at)))

    # -- the QueryRepository reads --------------------------------------------------------
    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        return list(self.queries.values())

    def get_query(self, query_id: str) -> StoredQuery | None:
        return self.queries.get(query_id)

    def read_results(
        self, query_id: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self.reads.append(("read_results", query_id))
        return self._series(query_id, "", start, end)

    def read_server_results(
        self, query_id: str, server: str, start: float, end: float
    ) -> Iterator[WindowResult]:
        self.reads.append(("read_server_results", query_id, server))
        return self._series(query_id, server, start, end)

    def _series(
        self, query_id: str, server: str, start: float, end: float
    ) -> Iterator[WindowResult]:
        keys = sorted(
            k for k in self.results if k[:2] == (query_id, server) and start <= k[2] < end
        )
        return iter([self.results[k] for k in keys])

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        self.reads.append(("read_window_servers", query_id, str(window_start)))
        keys = sorted(k for k in self.results if k[0] == query_id and k[1] and k[2] == window_start)
        return iter([self.results[k] for k in keys])

    def list_result_servers(self, query_id: str, start: float, end: float) -> list[str]:
        return sorted(
            {k[1] for k in self.results if k[0] == query_id and k[1] and start <= k[2] < end}
        )

    def read_ranked(self, query_id: str, start: float, end: float) -> Iterator[Ranked]:
        keys = sorted(k for k in self.ranked if k[0] == query_id and start <= k[1] < end)
        return iter([r for k in keys for r in self.ranked[k]])

    def list_servers(self) -> dict[str, float]:
        return {k[1]: 0.0 for k in self.results if k[1]}


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
