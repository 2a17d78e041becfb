"""The step mapping of ALERTS over a range (dashboard.promapi.alert_steps): each step takes the
alert's last change at or before it (between steps, on a step, before the range), a change
takes effect at its window's end, and the series on at some time in a span."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.promapi.alert_steps import Change, change_of, on_between, step_points
from dashboard.promapi.evaluate import steps
from storage.alerts import HistoryRow

pytestmark = pytest.mark.unit

T0 = 1_700_006_400


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def c(at_s: float, state: str, severity: str | None = "warning", instance: str = "") -> Change:
    return Change(ms(at_s), instance, state, severity)


def test_a_step_takes_the_last_change_at_or_before_it() -> None:
    times = steps(ms(T0), ms(T0 + 60), 10_000)  # T0, T0+10, ..., T0+60
    got = step_points(
        [
            c(T0 - 500, "pending"),  # before the range: pending at T0
            c(T0 + 5, "firing", "critical"),  # between steps: firing from T0+10
            c(T0 + 30, "normal"),  # on a step: normal at T0+30 itself
            c(T0 + 49, "recovering", "critical"),  # recovering shows as firing
        ],
        times,
    )
    assert got == {
        ("", "pending", "warning"): [ms(T0)],
        ("", "firing", "critical"): [ms(T0 + 10), ms(T0 + 20), ms(T0 + 50), ms(T0 + 60)],
    }


def test_changes_after_the_range_and_normal_alerts_give_no_point() -> None:
    times = steps(ms(T0), ms(T0 + 20), 10_000)
    assert step_points([c(T0 - 5, "normal"), c(T0 + 21, "firing")], times) == {}
    # In any order; per instance; a severity change is another series (as Prometheus labels it).
    got = step_points(
        [
            c(T0 + 10, "firing", "critical", "web-1"),
            c(T0, "firing", "warning", "web-1"),
            c(T0 - 1, "nodata", None, "web-2"),
        ],
        times,
    )
    assert got == {
        ("web-1", "firing", "warning"): [ms(T0)],
        ("web-1", "firing", "critical"): [ms(T0 + 10), ms(T0 + 20)],
        ("web-2", "firing", None): [ms(T0), ms(T0 + 10), ms(T0 + 20)],
    }


def test_a_change_takes_effect_at_its_windows_end() -> None:
    body = {"window_start": T0, "window_end": T0 + 10, "severity": "critical"}
    assert change_of(HistoryRow("r", T0, "", "firing", True, body)) == c(
        T0 + 10, "firing", "critical"
    )
    # A server-silent or meta alert's row is at its tick (window_end = window_start).
    tick = HistoryRow("r", T0 + 0.45, "web-1", "normal", True, {"window_end": None})
    assert change_of(tick) == c(T0 + 0.45, "normal", None, "web-1")


def test_on_between_takes_the_state_at_the_start_and_each_change_in_the_span() -> None:
    changes = [
        c(T0 - 100, "firing", "warning", "web-1"),  # on at the start
        c(T0 - 50, "pending", "warning", "web-2"),
        c(T0, "normal", None, "web-2"),  # normal at the start itself
        c(T0 + 10, "firing", "critical", "web-1"),  # a new series inside
        c(T0 + 21, "pending", "warning", "web-3"),  # after the span
    ]
    assert on_between(changes, ms(T0), ms(T0 + 20)) == {
        ("web-1", "firing", "warning"),
        ("web-1", "firing", "critical"),
    }


STATES = ("normal", "pending", "firing", "recovering", "nodata", "error")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 400),
            st.sampled_from(("", "web-1", "web-2")),
            st.sampled_from(STATES),
            st.sampled_from((None, "warning", "critical")),
        ),
        max_size=30,
        unique_by=lambda x: (x[0], x[1]),  # one history row per (window, instance)
    ),
    st.integers(0, 400),
    st.integers(1, 60),
    st.integers(0, 20),
)
def test_step_points_equal_the_last_change_at_or_before_each_step(
    raw: list[tuple[int, str, str, str | None]], start: int, step: int, n: int
) -> None:
    changes = [Change(at, instance, state, severity) for at, instance, state, severity in raw]
    times = range(start, start + n * step + 1, step)
    expected: dict[tuple[str, str, str | None], list[int]] = {}
    for t in times:  # by definition: each alert's newest change at or before t
        for instance in {c.instance for c in changes}:
            before = [c for c in changes if c.instance == instance and c.at <= t]
            if before:
                last = max(before, key=lambda c: c.at)
                if last.state != "normal":
                    shown = "pending" if last.state == "pending" else "firing"
                    expected.setdefault((instance, shown, last.severity), []).append(t)
    assert step_points(changes, times) == expected
