"""Each batch re-ranks the windows it updated of every ``TOP``/``BOTTOM`` query (apm.ranking)
and stores the rankings, so that a dashboard reads a window's top-N as n + 1 rows.

A ranking needs every server's result of its window, and a batch holds only the servers whose
samples it brought. The rest come from a cache of the recent windows' per-server results, and
on a miss (a restart, a window too old for the cache, late data) from storage
(``read_window_servers``), read once per window and then kept. The batch's own rows are
written before the ranking is read or written, so a crash between the two only leaves a
ranking one batch behind, which the replayed batch (at least once: its results are upserted
again) re-ranks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Protocol

from apm.query import Query, WindowResult
from apm.ranking import Ranked, rank

__all__ = ["MAX_CACHED_WINDOWS", "RankStore", "Rankings"]

# Per cached window, every server's result: ~10,000 rows at the design's fleet, some MB. Live
# windows of the ranked queries are a few each; late data for older ones reads storage.
MAX_CACHED_WINDOWS = 64


class RankStore(Protocol):
    def read_window_servers(self, query_id: str, window_start: float) -> Iterable[WindowResult]: ...

    def upsert_ranked(self, rows: Iterable[Ranked]) -> int: ...


class Rankings:
    def __init__(
        self, store: RankStore, queries: Mapping[str, Query], max_windows: int = MAX_CACHED_WINDOWS
    ) -> None:
        self.store = store
        self.queries = {qid: q for qid, q in queries.items() if q.top is not None}
        self.max_windows = max_windows
        self._windows: OrderedDict[tuple[str, float], dict[str, WindowResult]] = OrderedDict()
        self.reads = 0  # windows read from storage (a cache miss)

    def update(self, results: Iterable[WindowResult]) -> int:
        """Re-ranks the windows ``results`` touched; returns what storage says it wrote (the
        windows ranked)."""
        touched: dict[tuple[str, float], list[WindowResult]] = {}
        for row in results:
            if row.server and row.query_id in self.queries:
                touched.setdefault((row.query_id, row.window_start), []).append(row)
        ranked: list[Ranked] = []
        for key, rows in touched.items():
            servers = self._window(key)
            servers.update((r.server, r) for r in rows)
            ranked.extend(rank(self.queries[key[0]], servers.values()))
        return self.store.upsert_ranked(ranked) if ranked else 0

    def _window(self, key: tuple[str, float]) -> dict[str, WindowResult]:
        servers = self._windows.get(key)
        if servers is None:
            self.reads += 1
            query_id, start = key
            servers = {r.server: r for r in self.store.read_window_servers(query_id, start)}
            self._windows[key] = servers
            while len(self._windows) > self.max_windows:
                self._windows.popitem(last=False)
        self._windows.move_to_end(key)
        return servers
