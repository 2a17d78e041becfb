"""The rollup tiers' driver side (aggregator/rollup.py): a tier row from its windows' partials
against numpy over the raw samples (count, sum, min and max exact, percentiles within the
histogram's documented bound), the dirty buckets and bounded passes, and the same on the real
Cassandra, late data included."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aggregator.rollup import Rollup, roll
from apm.loghist import ALPHA, LogHistogram
from apm.query import WindowResult, parse
from apm.tiers import WindowPartial

TEXT = "FROM * SELECT cpu WINDOW 10s COMPUTE count, sum, min, max, avg, p50, p99, p99.9"
QUERY = parse(TEXT)
LEVELS = {"p50": 50.0, "p99": 99.0, "p99.9": 99.9}


def partial(qid: str, start: float, values: np.ndarray, updated: float) -> WindowPartial:
    return WindowPartial(
        qid,
        start,
        10,
        int(values.size),
        float(values.sum()),
        float(values.min()),
        float(values.max()),
        LogHistogram.of(values.tolist()).encode(),
        updated,
    )


def within_bound(got: float, samples: np.ndarray, p: float) -> bool:
    """docs/storage.md, "The bound": exact windows (at most k samples), so between the order
    statistics around r = (n - 1) p / 100, each widened by ALPHA."""
    ordered = np.sort(samples)
    r = (ordered.size - 1) * p / 100.0
    lo, hi = ordered[math.floor(r)], ordered[math.ceil(r)]
    return lo - ALPHA * abs(lo) - 1e-9 <= got <= hi + ALPHA * abs(hi) + 1e-9


def assert_tier_row(row: WindowResult | None, samples: np.ndarray) -> None:
    assert row is not None
    assert row.samples == samples.size
    assert row.values["count"] == samples.size
    assert row.values["sum"] == pytest.approx(math.fsum(samples), rel=1e-12)
    assert row.values["avg"] == pytest.approx(samples.mean(), rel=1e-12)
    assert (row.values["min"], row.values["max"]) == (samples.min(), samples.max())
    for key, p in LEVELS.items():
        assert within_bound(row.values[key], samples, p), (key, row.values[key])


@pytest.mark.unit
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-1e6, 1e6).filter(lambda v: v == 0 or abs(v) > 1e-6), min_size=1),
        min_size=1,
        max_size=6,
    )
)
def test_a_tier_row_is_numpy_over_its_windows_samples(windows):
    parts = [partial("q", 600 + 10 * i, np.array(w), 1000.0 + i) for i, w in enumerate(windows)]
    row = roll("q", QUERY, "1m", 600.0, parts)
    assert_tier_row(row, np.concatenate([np.array(w) for w in windows]))
    assert row is not None and row.window_seconds == 60 and row.updated_at == parts[-1].updated_at


@pytest.mark.unit
def test_a_bucket_whose_windows_kept_no_histogram_leaves_the_percentiles_out():
    parts = [partial("q", 600, np.array([1.0, 2.0]), 1.0)._replace(hist=None)]
    row = roll("q", QUERY, "1m", 600.0, parts)
    assert row is not None and set(row.values) == {"count", "sum", "min", "max", "avg"}
    assert roll("q", QUERY, "1m", 600.0, []) is None


class MemoryTiers:
    """The RollupStore protocol in memory; ``fail`` makes reads raise."""

    def __init__(self) -> None:
        self.partials: dict[tuple[str, float], WindowPartial] = {}
        self.tiers: dict[tuple[str, str, float], WindowResult] = {}
        self.fail = False

    def upsert_partials(self, partials: Iterable[WindowPartial]) -> int:
        rows = list(partials)
        self.partials.update({(p.query_id, p.window_start): p for p in rows})
        return len(rows)

    def read_partials(self, query_id: str, start: float, end: float) -> list[WindowPartial]:
        if self.fail:
            raise ConnectionError("storage away")
        return [
            p for (q, ws), p in sorted(self.partials.items()) if q == query_id and start <= ws < end
        ]

    def upsert_tier(self, tier: str, rows: Iterable[WindowResult]) -> int:
        rows = list(rows)
        self.tiers.update({(r.query_id, tier, r.window_start): r for r in rows})
        return len(rows)


@pytest.mark.unit
def test_dirty_buckets_are_rolled_once_closed_bounded_per_pass_and_again_when_refined():
    now = [7200.0 + 30]  # 30 s into the third hour
    store, rolled = MemoryTiers(), []
    rollup = Rollup(store, clock=lambda: now[0], per_pass=3, rolled=rolled.append)
    rollup.queries = {"q": QUERY}
    parts = [partial("q", 3600 + 10 * i, np.array([float(i)]), 1.0) for i in range(366)]
    store.upsert_partials(parts)
    rollup.wrote(parts)  # windows 3600 .. 7250: the minutes 3600 .. 7200 and two hours
    # Closed: the 60 minutes and the hour before now; the open minute and hour wait. The
    # oldest closed bucket (the minute 3600 .. 3660) has waited 7230 - 3660 s.
    assert rollup.pending == 61 and rollup.lag_seconds() == 3570.0
    assert rollup.run_once() == 3 and rolled == ["1m", "1m", "1m"]
    while rollup.run_once():
        pass
    assert rollup.pending == 0 and rollup.lag_seconds() == 0.0
    assert store.tiers[("q", "1h", 3600.0)].samples == 360
    assert ("q", "1m", 7200.0) not in store.tiers
    # Late data refines a window: its buckets are rolled again.
    late = partial("q", 3600, np.array([0.0, 1e6]), 2.0)
    store.upsert_partials([late])
    rollup.wrote([late])
    assert rollup.run_once() == 2
    assert store.tiers[("q", "1h", 3600.0)].values["max"] == 1e6
    assert store.tiers[("q", "1m", 3600.0)].samples == 7
    # Storage away: the buckets stay marked and the next pass rolls them.
    rollup.wrote([late])
    store.fail = True
    assert rollup.run_once() == 0 and rollup.pending == 2
    store.fail = False
    assert rollup.run_once() == 2


@pytest.mark.unit
def test_after_a_start_the_recent_buckets_are_rolled_again():
    store = MemoryTiers()
    rollup = Rollup(store, clock=lambda: 7200.0)
    rollup.mark_recent({"q": QUERY, "hourly": parse("FROM * SELECT x WINDOW 1h COMPUTE max")}, 600)
    # The minutes 6600 .. 7200 and the hour 3600 .. 7200; a 1 h query has no tier.
    assert rollup.pending == 11


@pytest.mark.integration
def test_rollup_on_cassandra_equals_numpy_late_data_included(stack):
    from tests.support.keyspaces import scratch_repository

    rng = np.random.default_rng(7)
    base = float(int(time.time() // 3600) * 3600 - 7200)  # two closed hours, recent
    with scratch_repository("rollup") as repo:
        qid = repo.save_query(TEXT).id
        samples = {
            base + 10 * i: rng.lognormal(3, 1, int(rng.integers(1, 200))) for i in range(720)
        }
        parts = [partial(qid, ws, v, time.time()) for ws, v in samples.items()]
        rollup = Rollup(repo, per_pass=1000)
        rollup.queries = {qid: QUERY}
        repo.upsert_partials(parts)
        rollup.wrote(parts)
        # Late samples refine two windows after a first roll.
        assert rollup.run_once() == 120 + 2
        for ws in (base + 3590, base + 5000):
            samples[ws] = np.concatenate([samples[ws], rng.lognormal(5, 1, 50)])
        late = [partial(qid, ws, samples[ws], time.time() + 1) for ws in (base + 3590, base + 5000)]
        repo.upsert_partials(late)
        rollup.wrote(late)
        assert rollup.run_once() == 4

        for tier, size in (("1m", 60), ("1h", 3600)):
            rows = list(repo.read_results(qid, base, base + 7200, tier=tier))
            assert [r.window_start for r in rows] == [base + size * i for i in range(7200 // size)]
            for r in rows:
                inside = [
                    v for ws, v in samples.items() if r.window_start <= ws < r.window_start + size
                ]
                assert_tier_row(r, np.concatenate(inside))
