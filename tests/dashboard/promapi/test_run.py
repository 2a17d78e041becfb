"""What a query_range reads from storage (dashboard.promapi.run): only the windows its steps
need, the same points as reading the whole range, and the limit counting the windows read."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.query import StoredQuery, WindowResult, parse
from dashboard.promapi.budget import TOO_MANY_SAMPLES
from dashboard.promapi.evaluate import Deadline, LimitError, points, steps
from dashboard.promapi.run import Evaluator
from dashboard.promapi.selector import parse_selector
from dashboard.promapi.settings import PromApiSettings
from dashboard.promapi.store import Store
from storage.reader import chunks_at, ms_ceil

pytestmark = pytest.mark.unit

T0 = 1_700_000_040  # a multiple of 10 and 60: windows are aligned to the epoch
FOREVER = Deadline(float("inf"), time.monotonic)
DAY = 86_400


class WindowStore:
    """read_results as the repository bounds it (whole ms, lo <= window_start < hi, ascending),
    by bisection so a month of windows is cheap; ``rows`` counts the windows handed out."""

    def __init__(self, query: StoredQuery, windows: list[WindowResult]) -> None:
        self.query = query
        self.windows = sorted(windows, key=lambda w: w.window_start)
        self.starts = [round(w.window_start * 1000) for w in self.windows]
        self.rows = 0
        self.calls = 0

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        return [self.query]

    def read_results(
        self, query_id: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self.calls += 1
        lo, hi = ms_ceil(max(0.0, start)), ms_ceil(end)
        for w in self.windows[
            bisect.bisect_left(self.starts, lo) : bisect.bisect_left(self.starts, hi)
        ]:
            self.rows += 1
            yield w

    def read_results_at(self, query_id: str, starts: Sequence[float]) -> Iterator[WindowResult]:
        """As the repository: the windows starting exactly at ``starts``, ascending, in one
        statement per day bucket and storage.reader.IN_CHUNK starts (counted in ``calls``)."""
        wanted = [ms_ceil(s) for s in starts]
        self.calls += len(chunks_at(wanted))
        at = dict(zip(self.starts, self.windows, strict=True))
        for start in sorted(set(wanted)):
            if start in at:
                self.rows += 1
                yield at[start]


def _read(store: WindowStore, reads: tuple[float, float] | list[float]) -> list[WindowResult]:
    if isinstance(reads, tuple):
        return list(store.read_results("q", *reads))
    return list(store.read_results_at("q", reads))


def _windows(seconds: int, starts: range, query_id: str = "q") -> list[WindowResult]:
    return [WindowResult(query_id, float(s), seconds, {"avg": s / 7}, 3, 1.0) for s in starts]


def _evaluator(
    store: WindowStore, max_points: int = 500_000, max_samples: int = 1_500_000
) -> Evaluator:
    run: Callable[[str, Callable[[], Any]], Any] = lambda _op, fn: fn()  # noqa: E731
    limits = PromApiSettings(max_points=max_points, max_samples=max_samples)
    return Evaluator(Store(store, limits, run, lambda _n: None))  # type: ignore[arg-type]


def _values(answer: dict[str, Any]) -> list[Any]:
    (series,) = answer["result"]
    return series["values"]


def test_a_month_at_one_hour_steps_reads_one_window_per_step() -> None:
    query = StoredQuery("q", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg"))
    store = WindowStore(query, _windows(10, range(T0 - 60, T0 + 30 * DAY, 10)))
    start, end, step = (T0 + 3600) * 1000, (T0 + 30 * DAY) * 1000, 3600 * 1000
    answer = _evaluator(store).range_query(
        parse_selector('apm_query{id="q"}'), start, end, step, FOREVER
    )
    times = steps(start, end, step)
    assert len(times) == 720
    assert store.rows <= len(times)  # it was 259,200: every window of the month
    assert store.calls == 31  # one statement per day bucket (it was one range read per step)
    whole = points(store.windows, query, ["avg"], times, FOREVER)["avg"]
    assert len(whole) == 720
    assert [[t / 1000, v] for t, v in whole] == [[t, float(v)] for t, v in _values(answer)]


@settings(max_examples=200, deadline=None)
@given(
    window=st.sampled_from([1, 10, 60]),
    present=st.lists(st.booleans(), min_size=1, max_size=400),
    offset_ms=st.integers(0, 120_000),
    step_ms=st.integers(1, 600_000),
    n=st.integers(1, 60),
)
def test_the_planned_reads_give_the_points_of_the_whole_range(
    window: int, present: list[bool], offset_ms: int, step_ms: int, n: int
) -> None:
    from dashboard.promapi.plan import plan

    query = StoredQuery("q", parse(f"FROM * SELECT cpu WINDOW {window}s COMPUTE avg"))
    stored = _windows(window, range(T0, T0 + window * len(present), window))
    stored = [w for w, keep in zip(stored, present, strict=True) if keep]
    store = WindowStore(query, stored)
    times = steps(T0 * 1000 + offset_ms, T0 * 1000 + offset_ms + step_ms * (n - 1), step_ms)
    read = _read(store, plan(window * 1000, times))
    assert store.rows <= max(len(times), 2 * len(times) + 2)
    assert points(read, query, ["avg"], times, FOREVER) == points(
        stored, query, ["avg"], times, FOREVER
    )


def test_the_limit_counts_the_windows_read_not_only_the_points() -> None:
    query = StoredQuery("q", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg"))
    store = WindowStore(query, _windows(10, range(T0, T0 + 2000, 10)))
    selector = parse_selector("apm_query")
    # 60 steps of 20 s: 60 points, but 119 windows can give one, read in one go.
    with pytest.raises(LimitError, match=f"{TOO_MANY_SAMPLES}: 119 samples planned"):
        _evaluator(store, max_samples=100).range_query(
            selector, T0 * 1000, (T0 + 1180) * 1000, 20_000, FOREVER
        )
    assert store.rows == 0  # refused before reading


def test_windows_of_an_older_definition_count_while_reading() -> None:
    query = StoredQuery("q", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg"))
    # The query was once 1 s windows: 10 of them in each 10 s of starts.
    store = WindowStore(
        query, _windows(1, range(T0, T0 + 600)) + _windows(10, range(T0, T0 + 600, 10))
    )
    with pytest.raises(LimitError, match=f"{TOO_MANY_SAMPLES}: more than 200 samples read"):
        _evaluator(store, max_samples=200).range_query(
            parse_selector("apm_query"), (T0 + 10) * 1000, (T0 + 600) * 1000, 10_000, FOREVER
        )
    assert store.rows == 201
