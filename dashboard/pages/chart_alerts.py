"""Alert events on the chart page: for every rule on a charted query, the state changes stored in
its history (``alert_history``, read through the rulebook's tables) become shaded regions (a
rule pending, firing, recovering, without data or in error) and a marker at each change along
the chart's top edge whose hover text gives the rule, the state, the value and the reason.

Only changed windows are read (the history stores a row per change and per refined window); a
region that began before the range is drawn from the range's left edge, one still open runs to
its right edge."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from alerting.rulebook import Rulebook

__all__ = ["STATE_COLORS", "AlertEvent", "alert_events", "overlay", "summary"]

STATE_COLORS = {
    "pending": "#e9c46a",
    "firing": "#e63946",
    "recovering": "#f4a261",
    "nodata": "#8d99ae",
    "error": "#7b2cbf",
    "normal": "#2a9d8f",
}
MAX_EVENTS = 2000  # past it the newest are kept: a flapping rule must not stall the chart


@dataclass(frozen=True)
class AlertEvent:
    rule: str  # the rule's name
    rule_id: str
    instance: str  # "" for a threshold rule, the server for a per-server one
    at: float  # the window start of the change
    state: str
    value: float | None
    reason: str


def alert_events(
    book: Rulebook, query_ids: Iterable[str], start: float, end: float
) -> tuple[int, list[AlertEvent]]:
    """(how many rules watch these queries, their state changes in ``[start, end)``)."""
    wanted = set(query_ids)
    rules = {rid: b for rid, b in book.tables.rules().items() if b.get("query_id") in wanted}
    out = []
    for rid, body in sorted(rules.items()):
        history = book.tables.history(rid, start, end)  # type: ignore[attr-defined]
        for row in history:
            if row.changed:
                b = row.body
                value = b.get("value")
                out.append(
                    AlertEvent(
                        body.get("name", rid),
                        rid,
                        row.instance,
                        row.window_start,
                        row.state,
                        value if isinstance(value, int | float) else None,
                        str(b.get("reason", "")),
                    )
                )
    out.sort(key=lambda e: e.at)
    return len(rules), out[-MAX_EVENTS:]


def _regions(events: list[AlertEvent], start: float, end: float) -> list[tuple[float, float, str]]:
    by_alert: dict[tuple[str, str], list[AlertEvent]] = {}
    for e in events:
        by_alert.setdefault((e.rule_id, e.instance), []).append(e)
    regions = []
    for changes in by_alert.values():
        if changes[0].state == "normal":
            # It was active before the range began; its kind is unknown, drawn as firing
            # if its reason says so, else pending.
            kind = "firing" if "fir" in changes[0].reason else "pending"
            regions.append((start, changes[0].at, kind))
        for here, after in zip(changes, [*changes[1:], None], strict=True):
            if here.state != "normal":
                regions.append((here.at, after.at if after else end, here.state))
    return regions


def _hover(e: AlertEvent) -> str:
    value = "no value" if e.value is None else f"value {e.value:.6g}"
    who = f"{e.rule} ({e.instance})" if e.instance else e.rule
    return f"{who}: {e.state}<br>{value}<br>{e.reason}"


def overlay(events: list[AlertEvent], start: float, end: float) -> tuple[list[Any], Any, Any]:
    """(layout shapes, a marker trace on a hidden top axis, that axis) for ``events``."""
    shapes = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": a * 1000,
            "x1": b * 1000,
            "y0": 0,
            "y1": 1,
            "fillcolor": STATE_COLORS.get(kind, "#888"),
            "opacity": 0.15,
            "line": {"width": 0},
            "layer": "below",
        }
        for a, b, kind in _regions(events, start, end)
    ]
    trace = {
        "type": "scatter",
        "mode": "markers",
        "name": "alert events",
        "yaxis": "y2",
        "x": [e.at * 1000 for e in events],
        "y": [1.0] * len(events),
        "text": [_hover(e) for e in events],
        "hovertemplate": "%{text}<extra></extra>",
        "marker": {
            "symbol": "triangle-down",
            "size": 10,
            "color": [STATE_COLORS.get(e.state, "#888") for e in events],
        },
    }
    axis = {"overlaying": "y", "range": [0, 1.05], "visible": False, "fixedrange": True}
    return shapes, trace, axis


def summary(rules: int, events: list[AlertEvent]) -> str:
    """The line under the chart that explains what is (or is not) drawn."""
    if rules == 0:
        return "No alert rule watches these queries: the alerts page makes one."
    if not events:
        return f"{rules} alert rule(s) on these queries: no state change in this range."
    return (
        f"{rules} alert rule(s): {len(events)} state change(s) in this range, shaded while "
        "pending (yellow), firing (red), recovering (orange), without data (grey); hover a "
        "marker for the value and the reason."
    )


def annotate(
    fig: dict[str, Any], book: Callable[[], Rulebook], ids: list[str], start: float, end: float
) -> str:
    """Adds the events to ``fig`` in place; the summary line, or why there is none."""
    try:
        rules, events = alert_events(book(), ids, start, end)
    except Exception as exc:  # the chart stays useful when the alert tables are not
        return f"alert history unavailable: {exc}"
    if events:
        shapes, trace, axis = overlay(events, start, end)
        fig["data"] = [*fig.get("data", []), trace]
        layout = fig.setdefault("layout", {})
        layout["shapes"] = shapes
        layout["yaxis2"] = axis
    return summary(rules, events)
