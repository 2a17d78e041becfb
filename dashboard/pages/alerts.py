"""The alerts page: every rule with its alert's state and why (each state is explained where it
is shown), the silences and what they suppressed with the silence form
(pages/alert_silences.py), and the rule builder (pages/alert_builder.py), into which **Edit**
loads a rule to save it back (pages/alert_edit.py)."""

from __future__ import annotations

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


def _rules_table(rules: list[dict[str, Any]]) -> html.Table:
    head = html.Tr([html.Th(h) for h in ("rule", "state", "value", "why", "window", "")])
    rows = []
    for r in rules:
        a = r.get("alert") or {"state": "normal", "reason": "not evaluated yet"}
        state = a.get("state", "normal")
        rows.append(
            html.Tr(
                [
                    html.Td(r.get("name")),
                    html.Td(state, title=STATE_HELP.get(state, ""), className=f"state-{state}"),
                    html.Td("" if a.get("value") is None else f"{a['value']:.6g}"),
                    html.Td(a.get("reason", "")),
                    html.Td(str(a.get("window_start") or "")),
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
