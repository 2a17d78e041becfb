"""The alerts page: every rule with its alert's state and why (each state is explained where it
is shown), the silences and what they suppressed with the silence form
(pages/alert_silences.py), and the rule builder (pages/alert_builder.py), into which **Edit**
loads a rule to save it back (pages/alert_edit.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dash import Dash, Input, Output, dcc, html

from alerting.rulebook import Rulebook
from dashboard.context import AppContext
from dashboard.pages import alert_builder, alert_edit, alert_silences
from dashboard.pages.common import navbar

__all__ = ["STATE_HELP", "layout", "register"]

STATE_HELP = {
    "normal": "the value is on the safe side of every threshold",
    "pending": "a threshold is crossed; it must stay crossed for the rule's `for` to fire",
    "firing": "crossed for longer than `for`: receivers are told",
    "recovering": "back past the recovery line; held firing for `keep_firing_for`",
    "nodata": "no samples for the rule's number of windows (policy: alert)",
    "error": "the window could not be evaluated (query deleted, function missing)",
}


def layout(app_ctx: AppContext) -> html.Div:
    return html.Div(
        [
            navbar("alerts"),
            dcc.Interval(id="al-tick", interval=app_ctx.settings.clamp_refresh(None) * 1000),
            html.Div(id="al-body"),
            alert_silences.form(),
            alert_builder.form(),
        ]
    )


# Which of a rule's instances (per server, per aggregator) the row shows: the most urgent.
_URGENCY = ("firing", "recovering", "error", "nodata", "pending", "normal")
_NOT_YET = {"state": "normal", "reason": "not evaluated yet"}


def _shown(r: dict[str, Any]) -> dict[str, Any]:
    """The alert a rule's row shows: its own, else its most urgent instance (a server-silent
    rule's servers, the freshness meta-alert's aggregators), named in the reason."""
    if r.get("alert"):
        return dict(r["alert"])
    instances = {k: v for k, v in (r.get("instances") or {}).items() if v}
    if not instances:
        return dict(_NOT_YET)
    rank = {s: i for i, s in enumerate(_URGENCY)}
    name, worst = min(instances.items(), key=lambda kv: rank.get(kv[1].get("state"), 99))
    more = f" (1 of {len(instances)}: {name})" if len(instances) > 1 else f" ({name})"
    return {**worst, "reason": f"{worst.get('reason', '')}{more}"}


def _window(a: dict[str, Any]) -> str:
    """The window that decided the state, as UTC times (the alert rows hold epoch seconds)."""
    start, end = a.get("window_start"), a.get("window_end")
    if start is None:
        return ""
    first = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(start)))
    last = time.strftime("%H:%M:%S", time.gmtime(float(end))) if end is not None else "?"
    return f"{first}-{last} UTC"


def _rules_table(rules: list[dict[str, Any]]) -> html.Table:
    head = html.Tr([html.Th(h) for h in ("rule", "state", "value", "why", "window", "")])
    rows = []
    for r in rules:
        a = _shown(r)
        state = a.get("state", "normal")
        rows.append(
            html.Tr(
                [
                    html.Td(r.get("name")),
                    html.Td(state, title=STATE_HELP.get(state, ""), className=f"state-{state}"),
                    html.Td("" if a.get("value") is None else f"{a['value']:.6g}"),
                    html.Td(a.get("reason", "")),
                    html.Td(_window(a)),
                    html.Td(alert_edit.edit_button(r["id"]) if r.get("kind") != "meta" else ""),
                ],
                id=f"al-rule-{r['id']}",
            )
        )
    return html.Table([head, *rows], id="al-rules")


def body(book: Rulebook, now: float) -> html.Div:
    rules = book.rules()
    silences = book.silences()
    firing = sum((r.get("alert") or {}).get("state") == "firing" for r in rules)
    return html.Div(
        [
            html.H3(f"Rules ({firing} firing)"),
            _rules_table(rules) if rules else html.P("No rules yet: see docs/alerting.md."),
            html.H3("Silences"),
            alert_silences.listing(silences, now),
            html.Details(
                [html.Summary("what the states mean")]
                + [html.P(f"{k}: {v}") for k, v in STATE_HELP.items()]
            ),
        ]
    )


def register(app: Dash, app_ctx: AppContext, book: Callable[[], Rulebook]) -> None:
    alert_builder.register(app, app_ctx, book)
    alert_edit.register(app, book)
    alert_silences.register(app, app_ctx.clock, book)

    @app.callback(
        Output("al-body", "children"),
        Input("al-tick", "n_intervals"),
        Input("si-message", "children"),  # a silence made or expired shows at once
    )
    def refresh(_: int | None, _done: object) -> html.Div:
        try:
            return body(book(), app_ctx.clock())
        except Exception as exc:  # storage down: say so where the alerts would be
            return html.Div(f"alerts unavailable: {exc}", className="banner")
