"""ALERTS over a range from a scripted alert history (dashboard.promapi.alert_range): the
state before the range is found by walking back per day bucket (never read per step), bounded
by the rule's creation, the retention and the limits; a deleted rule has no series."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from dashboard.promapi.alert_range import IN_FLIGHT, AlertRange
from dashboard.promapi.evaluate import Deadline, LimitError, TimedOut, steps
from dashboard.promapi.selector import parse_selector
from storage.alerts import HistoryRow

pytestmark = pytest.mark.unit

DAY = 86_400
T0 = 1_700_006_400  # a UTC midnight (a day bucket's start)
FOREVER = Deadline(float("inf"), time.monotonic)


def ms(seconds: float) -> int:
    return round(seconds * 1000)


class History:
    """AlertStore.history's edges: rows of [start, end) oldest first, one statement per day
    bucket from start's to end's (``statements`` counts them)."""

    def __init__(self, rows: Sequence[HistoryRow] = ()) -> None:
        self.rows = list(rows)
        self.statements: list[tuple[str, int]] = []

    def history(self, rule_id: str, start: float, end: float) -> Iterator[HistoryRow]:
        for bucket in range(int(start // DAY), int(end // DAY) + 1):
            self.statements.append((rule_id, bucket))
            yield from sorted(
                (
                    h
                    for h in self.rows
                    if h.rule_id == rule_id
                    and int(h.window_start // DAY) == bucket
                    and start <= h.window_start < end
                ),
                key=lambda h: h.window_start,
            )


def row(rule: str, window_start: float, state: str, severity: str | None = "warning") -> HistoryRow:
    body = {"window_start": window_start, "window_end": window_start + 10, "severity": severity}
    return HistoryRow(rule, window_start, "", state, True, body)


def rule(rid: str, created: float | None = T0 - 10 * DAY, **more: Any) -> dict[str, Any]:
    out = {"id": rid, "name": f"rule {rid}", "kind": "threshold", **more}
    if created is not None:
        out["created_at"] = created
    return out


def ranges(
    history: History, rules: list[dict[str, Any]], now: float = T0 + DAY, ttl: float = 30 * DAY
) -> AlertRange:
    return AlertRange(lambda: rules, lambda: history, lambda: ttl, lambda _op, f: f(), lambda: now)


def query(
    r: AlertRange, text: str, start: float, end: float, step: float, **limits: int
) -> dict[str, list[int]]:
    times = steps(ms(start), ms(end), ms(step))
    found = r.query(
        parse_selector(text),
        times,
        FOREVER,
        limits.get("max_series", 1000),
        limits.get("max_points", 500_000),
    )
    return {f"{lb['alertname']}/{lb['alertstate']}": [t for t, _ in p] for lb, p in found}


def test_a_range_reads_per_day_bucket_and_finds_the_state_from_days_before() -> None:
    history = History(
        [
            row("a", T0 - 3 * DAY, "pending"),  # three days before the range
            row("a", T0 - 3 * DAY + 60, "firing", "critical"),
            row("a", T0 + 3600, "normal"),
            row("b", T0 - 2 * DAY, "firing"),
            row("b", T0 - DAY, "normal"),  # normal all through the range: no series
        ]
    )
    r = ranges(history, [rule("a"), rule("b")])
    got = query(r, "ALERTS", T0, T0 + 7200, 60)
    assert got == {"rule a/firing": [ms(T0 + 60 * i) for i in range(61)]}
    # 121 steps, yet the range is one bucket; the walk back stops at each rule's last change.
    assert history.statements.count(("a", T0 // DAY)) <= 2
    assert {b for rid, b in history.statements if rid == "a"} >= {T0 // DAY - 3}
    assert min(b for rid, b in history.statements if rid == "a") == T0 // DAY - 3
    assert min(b for rid, b in history.statements if rid == "b") == T0 // DAY - 1
    assert len(history.statements) <= 12


def test_selector_deleted_rule_creation_and_retention_bound_the_reads() -> None:
    history = History([row("a", T0 + 5, "firing"), row("gone", T0, "firing")])
    listing = [rule("a", created=T0 - 100), rule("q", created=None)]  # "gone" was deleted
    r = ranges(history, listing, ttl=5 * DAY)
    assert query(r, "ALERTS", T0, T0 + 30, 10) == {"rule a/firing": [ms(T0 + 20), ms(T0 + 30)]}
    assert all(rid != "gone" for rid, _ in history.statements)  # a deleted rule is not listed
    # Nothing before the rule's creation less a day, nor past the retention (rule "q").
    assert min(b for rid, b in history.statements if rid == "a") >= (T0 - 100 - DAY) // DAY
    assert min(b for rid, b in history.statements if rid == "q") >= (T0 + DAY - 5 * DAY) // DAY
    history.statements.clear()
    assert query(r, 'ALERTS{alertname="rule a", alertstate="pending"}', T0, T0 + 30, 10) == {}
    assert {rid for rid, _ in history.statements} == {"a"}  # alertname chose the rule to read
    assert query(r, '{alertname="rule a", fn="p99"}', T0, T0 + 30, 10) == {}


def test_limits_on_series_points_rows_and_time() -> None:
    history = History([row(rid, T0, "firing") for rid in "abc"])
    r = ranges(history, [rule(rid) for rid in "abc"])
    assert len(query(r, "ALERTS", T0 + 10, T0 + 100, 10)) == 3
    with pytest.raises(LimitError, match="APM_DASHBOARD_PROM_MAX_SERIES"):
        query(r, "ALERTS", T0 + 10, T0 + 100, 10, max_series=2)
    with pytest.raises(LimitError, match="APM_DASHBOARD_PROM_MAX_POINTS"):
        query(r, "ALERTS", T0 + 10, T0 + 100, 10, max_points=29)
    assert len(query(r, "ALERTS", T0 + 10, T0 + 100, 10, max_points=33)) == 3  # 30 points, 3 rows
    late = Deadline(0.0, time.monotonic)
    with pytest.raises(TimedOut):
        r.query(parse_selector("ALERTS"), steps(ms(T0), ms(T0), 1), late, 10, 10)


def test_history_rows_read_count_against_the_points_limit() -> None:
    flapping = [row("a", T0 + 10 * i, "firing" if i % 2 else "normal") for i in range(50)]
    r = ranges(History(flapping), [rule("a")])
    assert query(r, "ALERTS", T0, T0 + 500, 500, max_points=60) == {"rule a/firing": [ms(T0 + 500)]}
    with pytest.raises(LimitError, match="history rows"):
        query(r, "ALERTS", T0, T0 + 500, 500, max_points=40)  # two points, but 50 rows read


def test_series_on_at_some_time_in_a_span() -> None:
    history = History(
        [
            row("a", T0 - DAY, "pending"),  # pending at the span's start
            row("a", T0 + 100, "firing", "critical"),  # then firing inside it
            row("b", T0 - 50, "firing"),
            row("b", T0 - 20, "normal"),  # normal from before the span to its end
            row("c", T0 + 200, "firing"),  # after the span
        ]
    )
    r = ranges(history, [rule("a"), rule("b"), rule("c")])
    found = r.series(parse_selector("ALERTS"), ms(T0), ms(T0 + 150), FOREVER, 10, 100)
    assert sorted((s["alertname"], s["alertstate"], s["severity"]) for s in found) == [
        ("rule a", "firing", "critical"),
        ("rule a", "pending", "warning"),
    ]
    firing = r.series(
        parse_selector('ALERTS{alertstate="firing"}'), ms(T0), ms(T0 + 300), FOREVER, 10, 100
    )
    assert sorted(s["alertname"] for s in firing) == ["rule a", "rule c"]
    with pytest.raises(LimitError, match="APM_DASHBOARD_PROM_MAX_SERIES"):
        r.series(parse_selector("ALERTS"), ms(T0), ms(T0 + 300), FOREVER, 2, 100)


def test_rule_labels_choose_the_rules_read_and_label_the_series() -> None:
    history = History([row("a", T0, "firing"), row("b", T0, "firing")])
    r = ranges(history, [rule("a", labels={"team": "web"}), rule("b", labels={"team": "db"})])
    found = r.query(
        parse_selector('ALERTS{team="web"}'), steps(ms(T0 + 10), ms(T0 + 10), 1), FOREVER, 10, 10
    )
    assert [labels for labels, _ in found] == [
        {
            "__name__": "ALERTS",
            "alertname": "rule a",
            "alertstate": "firing",
            "rule_id": "a",
            "severity": "warning",
            "team": "web",
        }
    ]
    assert {rid for rid, _ in history.statements} == {"a"}


def test_past_a_limit_the_rules_not_yet_read_are_not_read() -> None:
    rules = [rule(f"r{i:02}") for i in range(60)]
    history = History([row(r["id"], T0 + 10 * j, "firing") for r in rules for j in range(3)])
    with pytest.raises(LimitError):
        query(ranges(history, rules), "ALERTS", T0, T0 + 60, 10, max_points=5)
    assert len({rid for rid, _ in history.statements}) <= 2 * IN_FLIGHT  # not all 60
