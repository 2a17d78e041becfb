"""The incremental read cache, over an in-memory stand-in for the repository (logic only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from apm.query import WindowResult
from dashboard.cache import ResultCache

pytestmark = pytest.mark.unit


class Store:
    def __init__(self) -> None:
        self.rows: dict[float, WindowResult] = {}
        self.reads: list[tuple[float, float]] = []

    def put(self, start: float, value: float) -> None:
        self.rows[start] = WindowResult("q", start, 10, {"avg": value}, 1, 0.0)

    def read_results(
        self, query_id: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self.reads.append((start, end))
        return iter([self.rows[k] for k in sorted(self.rows) if start <= k < end])


def _starts(rows: list[WindowResult]) -> list[float]:
    return [r.window_start for r in rows]


def test_refresh_rereads_only_the_recent_windows_and_sees_rewrites() -> None:
    store, now = Store(), [0.0]
    for t in range(0, 1000, 10):
        store.put(t, 1.0)
    cache = ResultCache(
        store,
        reread_s=100,
        full_refresh_s=300,  # type: ignore[arg-type]
        clock=lambda: now[0],
    )
    assert _starts(cache.read("q", 0, 1000)) == list(range(0, 1000, 10))
    store.put(1000, 2.0)
    store.put(950, 5.0)  # a late rewrite inside the re-read margin
    store.put(500, 9.0)  # a rewrite older than the margin: seen at the next full refresh
    now[0] = 5
    rows = cache.read("q", 10, 1010)
    assert store.reads[-1] == (900, 1010)
    assert _starts(rows) == list(range(10, 1010, 10))
    assert rows[-1].values == {"avg": 2.0} and rows[-6].values == {"avg": 5.0}
    assert rows[49].values == {"avg": 1.0}
    now[0] = 400
    assert cache.read("q", 10, 1010)[49].values == {"avg": 9.0}
    assert store.reads[-1] == (10, 1010)


def test_a_range_reaching_earlier_reads_everything() -> None:
    store = Store()
    for t in range(0, 100, 10):
        store.put(t, 1.0)
    cache = ResultCache(store)  # type: ignore[arg-type]
    cache.read("q", 50, 100)
    assert _starts(cache.read("q", 0, 100)) == list(range(0, 100, 10))
    assert store.reads[-1] == (0, 100)


def test_eviction_keeps_the_total_bounded() -> None:
    store = Store()
    for t in range(0, 100, 10):
        store.put(t, 1.0)
    cache = ResultCache(store, max_windows=15)  # type: ignore[arg-type]
    cache.read("a", 0, 100)
    cache.read("b", 0, 100)
    assert len(cache._entries) == 1 and ("b", "", "") in cache._entries


def test_a_servers_series_is_cached_apart_from_the_querys() -> None:
    from tests.dashboard.fakes import FakeResults, per_server_rows

    repo = FakeResults()
    repo.upsert_results(per_server_rows("q", [0.0, 10.0], {"a": 1.0, "b": 2.0}))
    repo.upsert_results([WindowResult("q", 0.0, 10, {"avg": 9.0}, 1, 0.0)])
    cache = ResultCache(repo, reread_s=5)  # type: ignore[arg-type]
    assert [r.values["avg"] for r in cache.read("q", 0, 20, "b")] == [2.0, 3.0]
    assert [r.values["avg"] for r in cache.read("q", 0, 20)] == [9.0]
    assert [r.server for r in cache.read("q", 0, 20, "a")] == ["a", "a"]
    assert len(cache._entries) == 3
    cache.read("q", 0, 30, "b")  # a refresh re-reads that server's tail only
    assert repo.reads[-1] == ("read_server_results", "q", "b")
