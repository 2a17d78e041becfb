"""The per-server results a cycle reads for its rules on ``BY server`` queries
(alerting/servers.py): one read per window, every server of the window in it
(``read_window_servers``), concurrently; never one read per server.

Which windows: every window newer than the oldest window its alerts evaluated (``done``), and
of the older ones still open to late data only a rotating share, so that each is read again at
least every ``server_recheck_s`` (60 s): at 10,000 servers, reading the 60 open windows of 10 s
every cycle was 600,000 rows and most of the cycle (docs/alerting.md, "One alert per server").
An alert takes a window not read this cycle as it last saw it (the values its row keeps), so
late data that refines such a window is folded when the window is next read: up to
``server_recheck_s`` later than a plain rule would. The first cycle after a start (or a lease
taken over, or a failed cycle) reads every open window.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from alerting.settings import AlertingSettings
from apm.query import WindowResult

__all__ = ["READ_THREADS", "ServerReads"]

READ_THREADS = 16  # concurrent window reads (the Cassandra driver's session is thread-safe)

# (query, first window, last window, window seconds, done): a rule's range; ``done``, the
# oldest window its alerts evaluated already (None: none yet, read every window).
Range = tuple[str, float, float, int, float | None]


class WindowServers(Protocol):
    def read_window_servers(self, query_id: str, window_start: float) -> Any: ...


class ServerReads:
    def __init__(self, results: WindowServers, settings: AlertingSettings) -> None:
        self.results, self.settings = results, settings
        self._cycles = 0  # since the start or forget(): the first one reads every window
        self._series: dict[str, dict[str, dict[float, WindowResult]]] = {}  # query, server
        self._read: dict[str, set[float]] = {}

    def new_cycle(self) -> None:
        self._series.clear()
        self._read.clear()
        self._cycles += 1

    def forget(self) -> None:
        """What the alert rows hold is unknown again: read every open window next cycle."""
        self._cycles = 0

    def starts(self, first: float, last: float, ws: int, done: float | None) -> list[float]:
        """The windows of a range to read this cycle: the new ones, and a rotating share of the
        older ones (each once per ``server_recheck_s``)."""
        every = [first + i * ws for i in range(max(0, int((last - first) // ws) + 1))]
        s = self.settings
        if done is None or self._cycles <= 1 or s.server_recheck_s <= 0:
            return every
        turn = max(1, round(s.server_recheck_s / s.interval_s))
        return [t for t in every if t > done or int(t // ws) % turn == self._cycles % turn]

    def prefetch(self, ranges: set[Range]) -> None:
        for q, *_ in ranges:  # planned, even with no window to read this cycle
            self._read.setdefault(q, set())
        todo = sorted(
            {
                (q, t)
                for q, first, last, ws, done in ranges
                for t in self.starts(first, last, ws, done)
                if t not in self._read.get(q, ())
            }
        )

        def read(at: tuple[str, float]) -> list[WindowResult]:
            return list(self.results.read_window_servers(*at))

        with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
            for (qid, t), rows in zip(todo, pool.map(read, todo), strict=True):
                self._read.setdefault(qid, set()).add(t)
                for r in rows:
                    if r.server:
                        by_server = self._series.setdefault(qid, {})
                        by_server.setdefault(r.server, {})[r.window_start] = r

    def read_windows(self, query_id: str) -> set[float] | None:
        """The windows of the query read this cycle (None: it was not prefetched)."""
        return self._read.get(query_id)

    def series(self, query_id: str, server: str) -> dict[float, WindowResult]:
        return self._series.get(query_id, {}).get(server, {})

    def servers(
        self, query_id: str, first: float, last: float, after: float | None
    ) -> dict[str, float]:
        """server -> its first window with samples in [first, last] and after ``after``, of the
        windows read this cycle: where a server without a live alert starts one (a server seen
        only in an older window, by late data, starts once it has a new one)."""
        out: dict[str, float] = {}
        low = first if after is None else max(first, after + 1e-9)
        for server, got in self._series.get(query_id, {}).items():
            starts = [t for t, r in got.items() if low <= t <= last and r.samples > 0]
            if starts:
                out[server] = min(starts)
        return out
