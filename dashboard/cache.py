"""Incremental reads for live charts: a wall screen refreshing a 24 h chart every few seconds
re-reads only the newest minutes, not 8,640 windows each time.

Per query the cache holds the windows of [lo, hi). A request inside it re-reads from
``hi - reread_s`` (windows still being rewritten by late samples) to the new end; a request
reaching before ``lo``, or an entry older than ``full_refresh_s``, reads everything again, so
a window rewritten later than ``reread_s`` shows up within ``full_refresh_s`` at most.

A ``BY server`` query's series are cached one per server (``server``), read with
``read_server_results``; ``server=""`` is a query's one series over all its servers, and
with ``tier`` (``1m``, ``1h``) that series' rollup tier rows, cached apart from its windows.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from apm.query import WindowResult
from dashboard.ports import QueryRepository

__all__ = ["ResultCache"]


@dataclass
class _Entry:
    lo: float
    hi: float
    windows: list[WindowResult]  # ascending window_start, all in [lo, hi)
    starts: list[float]
    loaded_at: float


class ResultCache:
    def __init__(
        self,
        repo: QueryRepository,
        reread_s: float = 600.0,
        full_refresh_s: float = 300.0,
        max_windows: int = 500_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repo = repo
        self._reread_s = reread_s
        self._full_refresh_s = full_refresh_s
        self._max_windows = max_windows
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str, str], _Entry] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _fetch(self, key: tuple[str, str, str], start: float, end: float) -> list[WindowResult]:
        query_id, server, tier = key
        if server:
            return list(self._repo.read_server_results(query_id, server, start, end))
        if tier:
            return list(self._repo.read_results(query_id, start, end, tier=tier))
        return list(self._repo.read_results(query_id, start, end))

    def read(
        self,
        query_id: str,
        start: float,
        end: float,
        server: str = "",
        tier: str | None = None,
    ) -> list[WindowResult]:
        key = (query_id, server, tier or "")
        with self._lock:
            entry = self._entries.get(key)
        now = self._clock()
        if (
            entry is None
            or start < entry.lo
            or end < entry.hi - self._reread_s
            or now - entry.loaded_at > self._full_refresh_s
        ):
            windows = self._fetch(key, start, end)
            entry = _Entry(start, end, windows, [w.window_start for w in windows], now)
        elif end > entry.hi - self._reread_s:
            cut = max(entry.lo, entry.hi - self._reread_s)
            fresh = self._fetch(key, cut, end)
            keep = bisect.bisect_left(entry.starts, cut)
            windows = entry.windows[:keep] + fresh
            entry = _Entry(
                entry.lo,
                max(end, entry.hi),
                windows,
                entry.starts[:keep] + [w.window_start for w in fresh],
                entry.loaded_at,
            )
        self._store(key, entry)
        i = bisect.bisect_left(entry.starts, start)
        j = bisect.bisect_left(entry.starts, end)
        return entry.windows[i:j]

    def _store(self, key: tuple[str, str, str], entry: _Entry) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            total = sum(len(e.windows) for e in self._entries.values())
            while total > self._max_windows and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                total -= len(evicted.windows)
