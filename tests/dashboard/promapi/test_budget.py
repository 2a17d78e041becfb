"""The samples budget (:mod:`dashboard.promapi.budget`) and what it is charged with
(:func:`dashboard.promapi.plan.reads_of`, :func:`~dashboard.promapi.plan.per_window`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.query import StoredQuery, parse
from dashboard.promapi.budget import MAX_SAMPLES, TOO_MANY_SAMPLES, Samples, SamplesError
from dashboard.promapi.evaluate import LimitError, Series, read_window
from dashboard.promapi.plan import per_window, planned, reads_of
from dashboard.promapi.server_reads import planned_rows
from dashboard.promapi.settings import PromApiSettings

pytestmark = pytest.mark.unit

T0_MS = 1_700_000_000_000


def test_the_error_is_prometheus_own_text_and_a_422_limit() -> None:
    # Prometheus' promql.ErrTooManySamples, word for word (Grafana shows it as is).
    assert TOO_MANY_SAMPLES == (
        "query processing would load too many samples into memory in query execution"
    )
    with pytest.raises(LimitError) as refused:
        Samples(10).plan(11, "windows")
    assert isinstance(refused.value, SamplesError)
    assert str(refused.value).startswith(TOO_MANY_SAMPLES + ": 11 samples planned (windows)")
    assert "10 left of 10" in str(refused.value)


def test_plan_refuses_what_does_not_fit_without_charging() -> None:
    budget = Samples(10)
    budget.plan(10)  # exactly the budget fits
    budget.spend(4)
    with pytest.raises(SamplesError):
        budget.plan(7)
    assert budget.left == 6  # a plan charges nothing
    budget.plan(6)


@given(st.integers(1, 1000), st.lists(st.integers(0, 200), max_size=30))
def test_spend_refuses_exactly_when_the_total_passes_the_budget(
    limit: int, charges: list[int]
) -> None:
    budget, total = Samples(limit), 0
    for n in charges:
        total += n
        if total > limit:
            with pytest.raises(SamplesError, match="more than"):
                budget.spend(n)
            return
        budget.spend(n)
        assert budget.left == limit - total


def test_a_budget_of_nothing_is_a_bad_setting() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Samples(0)
    assert PromApiSettings().max_samples == MAX_SAMPLES
    with pytest.raises(ValueError):
        PromApiSettings(max_samples=0)


def _series(query: StoredQuery, fn: str, server: str = "", fleet: int = 0) -> Series:
    return Series(query, fn, {"fn": fn, "server": server}, server, fleet)


def test_a_window_gives_a_sample_to_each_series_it_feeds() -> None:
    plain = StoredQuery("q", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max, p99"))
    found = [_series(plain, "avg"), _series(plain, "max")]
    assert per_window(found) == 2
    times = range(T0_MS, T0_MS + 60_001, 10_000)  # 7 steps of 10 s: 7 windows give them
    assert planned(10_000, times) == 7 and reads_of(found, times) == 7 * 2
    by = StoredQuery("s", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server"))
    servers = [_series(by, fn, f"web-{n}", 3) for n in range(3) for fn in ("avg", "max")]
    servers.append(_series(by, "avg", "web-9", 4))  # another server wants avg only
    assert per_window(servers) == 2
    # the rows read (4 servers' windows) x at most two functions of a server
    rows = planned_rows(10_000, read_window(10_000, times[0], times[-1]), 4, 4)
    assert rows >= 4 * 7 and reads_of(servers, times) == rows * 2
    assert reads_of(found + servers, times) == 14 + rows * 2
