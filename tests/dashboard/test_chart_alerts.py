"""Alert events on the chart: the stored state changes of the rules on the charted queries
become shaded regions and hover markers (state, value, reason); the line under the chart
explains what is drawn, including nothing."""

from __future__ import annotations

from typing import Any

import pytest

from alerting.rulebook import Rulebook
from dashboard.pages.chart_alerts import alert_events, annotate, overlay, summary
from storage.alerts import HistoryRow
from tests.support.alert_tables import MemoryAlertTables, MemoryQueries

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0


@pytest.fixture
def book() -> Rulebook:
    queries = MemoryQueries()
    queries.add("q1", "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg")
    queries.add("q2", "FROM db-* SELECT cpu.util WINDOW 10s COMPUTE avg")
    b = Rulebook(queries, MemoryAlertTables())
    rule = {"name": "cpu", "query_id": "q1", "function": "avg", "thresholds": {"warning": 80}}
    b.create(rule, T0, rule_id="r1")
    b.create({**rule, "name": "db", "query_id": "q2"}, T0, rule_id="r2")
    return b


def change(rule: str, at: float, state: str, value: float | None, changed: bool = True) -> Any:
    body = {"state": state, "value": value, "reason": f"{state} because {value}"}
    return HistoryRow(rule, at, "", state, changed, body)


def test_regions_and_markers_from_changes_of_the_charted_querys_rules(book: Rulebook) -> None:
    book.tables.put_history(  # type: ignore[attr-defined]
        [
            change("r1", T0 + 10, "pending", 85.0),
            change("r1", T0 + 20, "pending", 86.0, changed=False),  # no change: no marker
            change("r1", T0 + 40, "firing", 90.0),
            change("r1", T0 + 80, "normal", 50.0),
            change("r1", T0 + 100, "pending", 81.0),  # still open at the range's end
            change("r2", T0 + 10, "firing", 99.0),  # another query's rule: not drawn
        ]
    )
    rules, events = alert_events(book, ["q1"], T0, T0 + 120)
    assert rules == 1
    assert [(e.at - T0, e.state) for e in events] == [
        (10, "pending"),
        (40, "firing"),
        (80, "normal"),
        (100, "pending"),
    ]
    shapes, trace, axis = overlay(events, T0, T0 + 120)
    spans = [((s["x0"] / 1000) - T0, (s["x1"] / 1000) - T0, s["fillcolor"]) for s in shapes]
    assert spans == [(10, 40, "#e9c46a"), (40, 80, "#e63946"), (100, 120, "#e9c46a")]
    assert trace["x"] == [(T0 + d) * 1000 for d in (10, 40, 80, 100)]
    assert trace["text"][1] == "cpu: firing<br>value 90<br>firing because 90.0"
    assert axis["overlaying"] == "y"


def test_an_alert_active_before_the_range_is_shaded_from_its_left_edge(book: Rulebook) -> None:
    resolved = HistoryRow("r1", T0 + 50, "", "normal", True, {"reason": "no longer firing"})
    book.tables.put_history([resolved])  # type: ignore[attr-defined]
    _, events = alert_events(book, ["q1"], T0, T0 + 120)
    shapes, _, _ = overlay(events, T0, T0 + 120)
    assert [(s["x0"], s["x1"]) for s in shapes] == [(T0 * 1000, (T0 + 50) * 1000)]


def test_the_line_under_the_chart_explains_what_is_drawn(book: Rulebook) -> None:
    fig: dict[str, Any] = {"data": [], "layout": {}}
    assert "No alert rule watches" in annotate(fig, lambda: book, ["q9"], T0, T0 + 60)
    assert "no state change in this range" in annotate(fig, lambda: book, ["q1"], T0, T0 + 60)
    assert fig == {"data": [], "layout": {}}
    book.tables.put_history([change("r1", T0 + 10, "firing", 91.0)])  # type: ignore[attr-defined]
    assert "1 state change(s)" in annotate(fig, lambda: book, ["q1"], T0, T0 + 60)
    assert fig["data"][0]["name"] == "alert events" and fig["layout"]["shapes"]
    assert summary(0, []).startswith("No alert rule")


def test_alert_tables_down_leave_the_chart_and_say_so() -> None:
    def down() -> Rulebook:
        raise OSError("no Cassandra")

    fig: dict[str, Any] = {"data": [], "layout": {}}
    assert annotate(fig, down, ["q1"], T0, T0 + 60).startswith("alert history unavailable")
    assert fig == {"data": [], "layout": {}}
