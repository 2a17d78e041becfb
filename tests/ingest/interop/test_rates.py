"""The cumulative-series state behind OTLP rates: rates, resets, retries, order, the LRU bound."""

from __future__ import annotations

import pytest

from ingest.interop.rates import RateState

pytestmark = pytest.mark.unit

S = 1_000_000_000  # the state takes nanoseconds


def test_first_point_then_rates():
    state = RateState(10)
    assert state.step("a", 1, 10 * S, (5.0,)).kind == "first"
    step = state.step("a", 1, 12 * S, (9.0,))
    assert (step.kind, step.rates) == ("rate", (2.0,))


def test_a_point_sent_again_gives_the_same_rate_and_moves_nothing():
    state = RateState(10)
    state.step("a", 1, 10 * S, (5.0, 1.0))
    first = state.step("a", 1, 12 * S, (9.0, 3.0))
    again = state.step("a", 1, 12 * S, (9.0, 3.0))
    assert again == first
    assert state.step("a", 1, 13 * S, (10.0, 3.0)).rates == (1.0, 0.0)


def test_a_counter_going_down_or_a_new_start_is_a_reset():
    state = RateState(10)
    state.step("a", 1, 10 * S, (5.0,))
    assert state.step("a", 1, 11 * S, (1.0,)).kind == "reset"
    assert state.step("a", 1, 12 * S, (3.0,)).rates == (2.0,)
    assert state.step("a", 2, 13 * S, (4.0,)).kind == "reset"
    assert state.step("a", 2, 15 * S, (8.0,)).rates == (2.0,)


def test_an_older_point_gives_nothing_and_keeps_the_state():
    state = RateState(10)
    state.step("a", 1, 10 * S, (5.0,))
    assert state.step("a", 1, 9 * S, (4.0,)).kind == "out_of_order"
    assert state.step("a", 1, 11 * S, (6.0,)).rates == (1.0,)


def test_the_least_recently_seen_series_is_forgotten_past_the_bound():
    evicted = []
    state = RateState(2, lambda: evicted.append(1))
    state.step("a", 1, 10 * S, (1.0,))
    state.step("b", 1, 10 * S, (1.0,))
    state.step("a", 1, 11 * S, (2.0,))  # a is now the most recent
    state.step("c", 1, 10 * S, (1.0,))
    assert state.size() == 2 and len(evicted) == 1
    assert state.step("b", 1, 11 * S, (2.0,)).kind == "first"  # b was forgotten
    assert state.step("c", 1, 11 * S, (2.0,)).kind == "rate"


def test_pending_steps_move_the_state_only_when_committed():
    rates = RateState(10)
    rates.step("s", 1, 1_000_000_000, (0.0,))
    pending: dict = {}
    assert rates.step("s", 1, 2_000_000_000, (10.0,), pending).rates == (10.0,)
    assert rates.step("s", 1, 3_000_000_000, (30.0,), pending).rates == (20.0,)
    # not committed (the publish failed): a retry gives the same rates
    retry: dict = {}
    assert rates.step("s", 1, 2_000_000_000, (10.0,), retry).rates == (10.0,)
    rates.commit(retry)
    rates.commit(pending)
    assert rates.step("s", 1, 4_000_000_000, (60.0,)).rates == (30.0,)


def test_one_metrics_flood_of_new_series_evicts_no_other_metrics_state():
    """Issue 28, finding 3: 150,000 new series of one metric between two points of a steady
    counter (before: the LRU forgot the steady series, whose next point gave no rate)."""
    rates = RateState(100_000, max_per_metric=1_000)
    rates.step("steady", 1, 1_000_000_000, (0.0,), metric="steady")
    kinds = {
        rates.step(("flood", n), 1, 1_000_000_000, (1.0,), metric="flood").kind
        for n in range(150_000)
    }
    assert kinds == {"first", "series_budget"} and rates.size() == 1_001
    assert rates.step("steady", 1, 2_000_000_000, (5.0,), metric="steady").rates == (5.0,)


def test_the_state_is_bounded_in_bytes():
    rates = RateState(1_000_000, max_bytes=100 * 1024, max_per_metric=1_000_000)
    for n in range(10_000):
        rates.step(n, 1, 1_000_000_000, (1.0,), metric="m")
    assert rates.bytes <= 100 * 1024 and 100 < rates.size() < 400
