"""The rule builder on the alerts page: a threshold rule on a stored query (a function, a
comparison, warning and critical thresholds each with an optional recovery line, ``for``,
``keep firing for``, the no-data policy) or a "server silent" rule, with labels, an annotation
and receivers (the fields: :mod:`dashboard.pages.alert_builder_fields`). **Preview** draws the
last hour of the query's windows against the thresholds and recovery lines with the state each
window would have had (for a server-silent rule, the servers it watches now and which would
fire), **Create** stores the rule, or saves the rule being edited
(:mod:`dashboard.pages.alert_edit`). Both validate through the rulebook, so a
refusal names its field inline, as the API's 422 does; the same check runs on every keystroke
(``ab-check``), so a NaN threshold, a recovery line on the firing side, a ``for`` of years, a
missing query or a bad label name is named before any click."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
from dash import Dash, Input, Output, State, dcc, html, no_update

from alerting.rulebook import Rulebook
from alerting.rules import RuleError
from dashboard.alerts_preview import preview
from dashboard.context import AppContext
from dashboard.pages.alert_builder_fields import (
    FIELDS,
    common_fields,
    rule_body,
    silent_fields,
    threshold_fields,
)
from dashboard.pages.common import WRITES, labelled

__all__ = ["NO_SERVERS", "PRISTINE", "check", "form", "register", "servers_now", "submit", "typed"]

PRISTINE = "pick a query, a function and a threshold: each field is checked as you type"
NO_SERVERS = "no server matching {glob!r} sent anything in the last hour"
MAX_LISTED = 20
_COLORS = {
    "normal": "#2a9d8f",
    "pending": "#e9c46a",
    "firing": "#e63946",
    "recovering": "#f4a261",
    "nodata": "#999999",
    "error": "#7b2cbf",
}
_KINDS = [
    {"label": "threshold on a stored query", "value": "threshold"},
    {"label": "server silent", "value": "server_silent"},
]


def form() -> html.Div:
    return html.Div(
        id="ab-form",
        className=WRITES,
        children=[
            html.H3("New rule", id="ab-title"),
            dcc.Store(id="ab-editing", data=None),  # the id of the rule being edited
            dcc.Store(id="ab-edit-request", data=None),  # an Edit click (pages/alert_edit.py)
            labelled(
                "kind",
                dcc.Dropdown(id="ab-kind", options=_KINDS, value="threshold", clearable=False),
            ),
            labelled("name", dcc.Input(id="ab-name", value="", type="text")),
            threshold_fields(),
            silent_fields(),
            *common_fields(),
            html.Div(id="ab-check", className="hint", children=PRISTINE),
            html.Button("Preview", id="ab-preview", n_clicks=0),
            html.Button("Create", id="ab-create", n_clicks=0),
            html.Button("New rule", id="ab-new", n_clicks=0, style={"display": "none"}),
            html.Div(id="ab-message", className="error"),
            dcc.Graph(id="ab-graph", style={"display": "none"}),
        ],
    )


def typed(*values: Any) -> dict[str, Any]:
    """The rule's JSON from the controls' values, in :data:`FIELDS` order (or RuleError)."""
    return rule_body(**dict(zip(FIELDS.values(), values, strict=True)))


def _refusal(exc: RuleError) -> str:
    return f"{exc.at}: {exc.detail}"


def check(book: Callable[[], Rulebook], raw: dict[str, Any]) -> tuple[str, str]:
    """(message, css class) for the form as typed so far: the rulebook's own refusal (the API's
    422 text), or that the rule is valid. The name is checked last, so a user sees the first
    problem of what they are typing rather than of the field they have not reached."""
    blank = not raw.get("query_id") and not raw.get("function") and not raw.get("thresholds")
    if raw["kind"] == "threshold" and blank:
        return PRISTINE, "hint"
    try:
        book().validate({**raw, "name": raw["name"] or "unnamed"})
        if not raw["name"]:
            book().validate(raw)
    except RuleError as exc:
        return _refusal(exc), "error"
    except Exception as exc:  # storage down: the query cannot be looked up
        return f"cannot check the query now (storage unavailable: {exc})", "error"
    return "valid: Preview draws it, Create stores it", "ok"


def servers_now(result: dict[str, Any], glob: str) -> str:
    """A server-silent rule's preview as one line: each server it watches with its state."""
    listed = result["servers"]
    if not listed:
        return NO_SERVERS.format(glob=glob)
    firing = sum(s["state"] == "firing" for s in listed)
    parts = [f"{s['server']} {s['state']} (silent {s['silent_s']:.0f}s)" for s in listed]
    more = f", and {len(parts) - MAX_LISTED} more" if len(parts) > MAX_LISTED else ""
    return f"{firing} of {len(listed)} would fire now: {', '.join(parts[:MAX_LISTED])}{more}"


def submit(
    book: Rulebook, create: bool, raw: dict[str, Any], now: float, editing: str | None = None
) -> tuple[str, dict[str, Any] | None]:
    """Create (the new rule's id), Save the rule being edited (``editing``, its id) or Preview
    (the preview endpoint's answer) the rule ``raw``: a refusal is the API's message, with
    nothing stored."""
    try:
        if create and editing:
            saved = book.update(editing, raw, now)
            return (f"saved rule {editing}" if saved else f"no rule {editing} (deleted?)"), None
        if create:
            return f"created rule {book.create(raw, now).id}", None
        result = preview(book, raw, now)
        if result.get("kind") == "server_silent":
            return servers_now(result, raw.get("servers", "*")), None
        return "", result
    except RuleError as exc:
        return _refusal(exc), None


def _figure(result: dict[str, Any]) -> go.Figure:
    points = result["points"]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[p["window_start"] * 1000 for p in points],
            y=[p["value"] for p in points],
            mode="lines+markers",
            name="value",
            marker={"color": [_COLORS.get(p["state"], "#888") for p in points]},
            text=[f"{p['state']}: {p['reason']}" for p in points],
        )
    )
    lines = result["thresholds"]
    for level, color in (("warning", "#e9c46a"), ("critical", "#e63946")):
        if lines.get(level) is not None:
            fig.add_hline(y=lines[level], line_color=color, annotation_text=level)
        if lines.get(f"{level}_recovery") is not None:
            fig.add_hline(
                y=lines[f"{level}_recovery"],
                line_color=color,
                line_dash="dot",
                annotation_text=f"{level} recovery",
            )
    fig.update_layout(xaxis_type="date", height=300, margin={"t": 20, "b": 30})
    return fig


def register(app: Dash, app_ctx: AppContext, book: Callable[[], Rulebook]) -> None:
    @app.callback(Output("ab-query", "options"), Input("al-tick", "n_intervals"))
    def queries(_: int | None) -> Any:
        try:
            stored = app_ctx.repo.list_queries()
        except Exception:
            return no_update
        return [{"label": q.text, "value": q.id} for q in stored]

    @app.callback(Output("ab-function", "options"), Input("ab-query", "value"))
    def functions(query_id: str | None) -> list[str]:
        stored = app_ctx.repo.get_query(query_id) if query_id else None
        return [f.key for f in stored.query.functions] if stored else []

    @app.callback(
        Output("ab-threshold", "style"), Output("ab-silent", "style"), Input("ab-kind", "value")
    )
    def kind(value: str | None) -> tuple[dict[str, str], dict[str, str]]:
        silent = value == "server_silent"
        return {"display": "none" if silent else "block"}, {
            "display": "block" if silent else "none"
        }

    @app.callback(
        Output("ab-check", "children"),
        Output("ab-check", "className"),
        *[Input(field, "value") for field in FIELDS],
    )
    def live(*fields: Any) -> tuple[str, str]:
        try:
            raw = typed(*fields)
        except RuleError as exc:  # the labels text cannot be read
            return _refusal(exc), "error"
        return check(book, raw)

    @app.callback(
        Output("ab-message", "children"),
        Output("ab-graph", "figure"),
        Output("ab-graph", "style"),
        Input("ab-preview", "n_clicks"),
        Input("ab-create", "n_clicks"),
        State("ab-editing", "data"),
        *[State(field, "value") for field in FIELDS],
        prevent_initial_call=True,
    )
    def act(
        preview_clicks: int, create_clicks: int, editing: str | None, *fields: Any
    ) -> tuple[Any, Any, Any]:
        from dash import ctx

        hidden = {"display": "none"}
        try:
            raw = typed(*fields)
        except RuleError as exc:
            return _refusal(exc), no_update, hidden
        create = ctx.triggered_id == "ab-create"
        message, result = submit(book(), create, raw, app_ctx.clock(), editing)
        if result is None:
            return message, no_update, no_update if create else hidden
        return message, _figure(result), {"display": "block"}
