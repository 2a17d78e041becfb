"""From stored windows to Prometheus points (dashboard.promapi.evaluate) and their JSON
(dashboard.promapi.shape): each window at its end, a one-window look-back so a missing window
is a missing point, steps as Prometheus takes them, values formatted as Prometheus does."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.query import StoredQuery, WindowResult, parse
from dashboard.promapi.evaluate import Deadline, TimedOut, points, read_window, steps
from dashboard.promapi.params import ParamError, parse_duration, parse_range, parse_when
from dashboard.promapi.shape import format_time, format_value, matrix
from storage.reader import ms_ceil

pytestmark = pytest.mark.unit

Q = StoredQuery("q", parse("FROM * SELECT cpu WINDOW 10s COMPUTE min, p99"))
FOREVER = Deadline(float("inf"), time.monotonic)
T0 = 1_700_000_000  # a multiple of 10


def _windows(starts: list[int], seconds: int = 10) -> list[WindowResult]:
    return [
        WindowResult("q", float(s), seconds, {"min": float(s % 1000), "p99": s / 7}, 3, 1.0)
        for s in starts
    ]


def test_step_equal_to_the_window_from_a_window_end_gives_each_window_once() -> None:
    ws = _windows([T0, T0 + 10, T0 + 30])  # T0 + 20 is missing
    got = points(ws, Q, ["min"], steps((T0 + 10) * 1000, (T0 + 40) * 1000, 10_000), FOREVER)
    assert got["min"] == [
        ((T0 + 10) * 1000, 0.0),
        ((T0 + 20) * 1000, 10.0),
        ((T0 + 40) * 1000, 30.0),
    ]


def test_smaller_steps_repeat_a_window_within_it_and_never_across_a_gap() -> None:
    ws = _windows([T0, T0 + 20])
    got = points(ws, Q, ["min"], steps(T0 * 1000, (T0 + 40) * 1000, 5000), FOREVER)["min"]
    assert [t // 1000 - T0 for t, _ in got] == [10, 15, 30, 35]
    assert [v for _, v in got] == [0.0, 0.0, 20.0, 20.0]


def test_larger_steps_take_the_window_ending_last_before_each_step() -> None:
    ws = _windows(list(range(T0, T0 + 100, 10)))
    got = points(ws, Q, ["p99"], steps((T0 + 15) * 1000, (T0 + 95) * 1000, 30_000), FOREVER)["p99"]
    assert [(t // 1000 - T0, v) for t, v in got] == [
        (15, T0 / 7),
        (45, (T0 + 30) / 7),
        (75, (T0 + 60) / 7),
    ]


def test_windows_of_an_older_definition_are_not_this_series() -> None:
    ws = _windows([T0]) + _windows([T0 + 60], seconds=60)
    got = points(ws, Q, ["min"], steps(T0 * 1000, (T0 + 200) * 1000, 10_000), FOREVER)["min"]
    assert got == [((T0 + 10) * 1000, 0.0)]


def test_a_function_missing_from_a_window_is_a_missing_point() -> None:
    ws = [WindowResult("q", float(T0), 10, {"min": 1.0}, 1, 1.0)]
    got = points(ws, Q, ["min", "p99"], steps((T0 + 10) * 1000, (T0 + 10) * 1000, 1), FOREVER)
    assert got == {"min": [((T0 + 10) * 1000, 1.0)], "p99": []}


def test_deadline_stops_the_evaluation() -> None:
    ticks = iter(range(10**6))
    passed = Deadline(0.5, lambda: float(next(ticks)))
    with pytest.raises(TimedOut):
        points(_windows([T0]), Q, ["min"], steps(0, 10**7, 1000), passed)


@given(
    st.integers(10**6, 10**9),
    st.integers(0, 10**5),
    st.sampled_from([1, 10, 60, 3600]),
    st.integers(-4, 4),
)
def test_read_window_holds_exactly_the_windows_that_can_give_a_point(
    start: int, length: int, seconds: int, shift: int
) -> None:
    """A window starting at ws can give the point of some step t in [start, end] iff it ends
    at or before end and its end is within one window before start or later; the read range
    (as the repository bounds it, in whole milliseconds) holds exactly those."""
    start_ms, end_ms, width = start * 1000, (start + length) * 1000, seconds * 1000
    lo, hi = read_window(width, start_ms, end_ms)
    lo_ms, hi_ms = ms_ceil(lo), ms_ceil(hi)
    for edge in (start_ms - 2 * width, start_ms - width, end_ms - width, end_ms):
        ws_ms = edge + shift
        useful = ws_ms + width <= end_ms and ws_ms + 2 * width > start_ms
        assert (lo_ms <= ws_ms < hi_ms) == useful, (ws_ms, lo_ms, hi_ms)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.0, "2"),
        (1.5, "1.5"),
        (0.1, "0.1"),
        (-0.0, "-0"),
        (1e-07, "1e-07"),
        (1e-06, "0.000001"),
        (1e20, "100000000000000000000"),
        (1.5e21, "1.5e+21"),
        (float("nan"), "NaN"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (3.3333333333333335, "3.3333333333333335"),
    ],
)
def test_values_are_formatted_as_prometheus_formats_them(value: float, text: str) -> None:
    assert format_value(value) == text


def test_times_are_seconds_whole_or_with_milliseconds() -> None:
    assert format_time(1_700_000_000_000) == 1_700_000_000
    assert format_time(1_700_000_000_781) == 1_700_000_000.781


def test_matrix_drops_empty_series_and_sorts_by_labels() -> None:
    body = matrix(
        [({"fn": "p99"}, [(1000, 1.0)]), ({"fn": "avg"}, [(2000, 2.5)]), ({"fn": "x"}, [])]
    )
    assert body == {
        "resultType": "matrix",
        "result": [
            {"metric": {"fn": "avg"}, "values": [[2, "2.5"]]},
            {"metric": {"fn": "p99"}, "values": [[1, "1"]]},
        ],
    }


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("15", 15.0), ("0.5", 0.5), ("15s", 15.0), ("1m", 60.0), ("1h30m", 5400.0), ("500ms", 0.5)],
)
def test_durations(raw: str, seconds: float) -> None:
    assert parse_duration(raw, "step") == seconds


def test_times_in_both_formats() -> None:
    assert parse_when("1700000000.5", "time") == 1_700_000_000.5
    assert parse_when("2023-11-14T22:13:20.123456789Z", "time") == pytest.approx(
        1_700_000_000.123456
    )
    assert parse_when(None, "time", default=7.0) == 7.0


@pytest.mark.parametrize(
    ("start", "end", "step", "words"),
    [
        ("10", "5", "1", "end timestamp must not be before start time"),
        ("0", "10", "0", "zero or negative query resolution step"),
        ("0", "10", "-1", "zero or negative query resolution step"),
        ("0", "11001", "1", "exceeded maximum resolution of 11,000 points"),
        ("x", "10", "1", 'invalid parameter "start"'),
        ("0", "nan", "1", 'invalid parameter "end"'),
        ("0", "10", "1x", 'invalid parameter "step"'),
        (None, "10", "1", 'invalid parameter "start"'),
        ("0", "10", "inf", 'invalid parameter "step"'),
    ],
)
def test_range_checks(start: str | None, end: str, step: str, words: str) -> None:
    with pytest.raises(ParamError, match=words.replace("(", r"\(")):
        parse_range(start, end, step)


def test_exactly_11000_steps_is_allowed() -> None:
    assert parse_range("0", "11000", "1") == (0.0, 11000.0, 1.0)
