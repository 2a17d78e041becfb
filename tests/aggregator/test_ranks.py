"""aggregator.ranks: which windows a batch re-ranks, and where the other servers come from."""

from __future__ import annotations

import pytest

from aggregator.ranks import Rankings
from apm.query import WindowResult
from tests.aggregator.conftest import FakeStore

pytestmark = pytest.mark.unit


def _row(qid: str, ws: float, server: str, avg: float) -> WindowResult:
    return WindowResult(qid, ws, 10, {"avg": avg}, 1, 1.0, server)


def test_a_batch_reranks_only_its_windows_with_the_servers_it_did_not_bring():
    store = FakeStore()
    top = store.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server TOP 1 BY avg")
    plain = store.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server")
    earlier = [_row(top.id, 0, "a", 5.0), _row(top.id, 0, "b", 1.0)]
    store.upsert_results(earlier)  # written by an earlier run: only storage knows them
    rankings = Rankings(store, {top.id: top.query, plain.id: plain.query})
    batch = [_row(top.id, 0, "b", 9.0), _row(plain.id, 0, "a", 1.0), _row(top.id, 10, "c", 2.0)]
    store.upsert_results(batch)
    assert rankings.update(batch) == 2  # windows ranked: 0 (b, then others) and 10 (c alone)
    assert [(r.rank, r.server) for r in store.ranked[(top.id, 0)]] == [(1, "b"), (2, "(others)")]
    assert store.ranked[(top.id, 0)][1].values == {"avg": 5.0}
    assert [r.server for r in store.ranked[(top.id, 10)]] == ["c"]
    assert (plain.id, 0) not in store.ranked, "no TOP: no ranking"
    assert rankings.reads == 2
    rankings.update([_row(top.id, 0, "a", 0.5)])  # cached: no read
    assert rankings.reads == 2
    assert [r.server for r in store.ranked[(top.id, 0)]] == ["b", "(others)"]


def test_the_cache_keeps_at_most_its_windows_and_rereads_an_evicted_one():
    store = FakeStore()
    top = store.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server TOP 1 BY avg")
    rankings = Rankings(store, {top.id: top.query}, max_windows=2)
    for ws in (0, 10, 20):
        row = _row(top.id, ws, "a", 1.0)
        store.upsert_results([row])
        rankings.update([row])
    assert rankings.reads == 3 and len(rankings._windows) == 2
    late = _row(top.id, 0, "b", 7.0)
    store.upsert_results([late])
    rankings.update([late])  # window 0 was evicted: read again, a included
    assert rankings.reads == 4
    assert [r.server for r in store.ranked[(top.id, 0)]] == ["b", "(others)"]
