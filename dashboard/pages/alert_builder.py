"""The rule builder on the alerts page: a stored query, one of its functions, a comparison,
warning and critical thresholds, ``for``; **Preview** draws the last hour of the query's
windows against the thresholds with the state each window would have had, **Create** stores the
rule. Both validate through the rulebook, so a refusal names its field inline, as the API's 422
does; the same check runs on every keystroke (``ab-check``), so a NaN threshold, a ``for`` of
years, a missing query or function or a bad annotation template is named before any click."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
from dash import Dash, Input, Output, State, dcc, html, no_update

from alerting.rulebook import Rulebook
from alerting.rules import COMPARISONS, RuleError
from dashboard.alerts_api import preview
from dashboard.context import AppContext
from dashboard.pages.common import labelled

__all__ = ["PRISTINE", "check", "form", "register"]

PRISTINE = "pick a query, a function and a threshold: each field is checked as you type"
_COLORS = {"normal": "#2a9d8f", "pending": "#e9c46a", "firing": "#e63946", "recovering": "#f4a261"}


def form() -> html.Div:
    return html.Div(
        id="ab-form",
        children=[
            html.H3("New rule"),
            labelled("name", dcc.Input(id="ab-name", value="", type="text")),
            labelled("query", dcc.Dropdown(id="ab-query", options=[], placeholder="stored query")),
            labelled("function", dcc.Dropdown(id="ab-function", options=[])),
            labelled(
                "comparison",
                dcc.Dropdown(id="ab-cmp", options=list(COMPARISONS), value=">", clearable=False),
            ),
            # Text, not number inputs: a browser turns "NaN" or "1e999" into an empty value,
            # which would hide from the user what the API would refuse.
            labelled("warning", dcc.Input(id="ab-warning", type="text", value="")),
            labelled("critical", dcc.Input(id="ab-critical", type="text", value="")),
            labelled("for (s)", dcc.Input(id="ab-for", type="text", value="30")),
            labelled("annotation", dcc.Input(id="ab-annotation", type="text", value="")),
            html.Div(id="ab-check", className="hint", children=PRISTINE),
            html.Button("Preview", id="ab-preview", n_clicks=0),
            html.Button("Create", id="ab-create", n_clicks=0),
            html.Div(id="ab-message", className="error"),
            dcc.Graph(id="ab-graph", style={"display": "none"}),
        ],
    )


def _number(text: Any) -> Any:
    """A typed number as the API would receive it; text that is no number stays text, so the
    rules module says what is wrong with it."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text
    return int(value) if value.is_integer() else value


def _raw(
    name: str,
    query: str | None,
    function: str | None,
    cmp: str,
    warn: Any,
    crit: Any,
    for_s: Any,
    annotation: str | None = None,
) -> dict[str, Any]:
    thresholds = {
        k: v for k, v in (("warning", _number(warn)), ("critical", _number(crit))) if v is not None
    }
    raw = {
        "name": name or "",
        "query_id": query or "",
        "function": function or "",
        "comparison": cmp,
        "thresholds": thresholds,
        "for_s": f if (f := _number(for_s)) is not None else 0,
    }
    if annotation:
        raw["annotation"] = annotation
    return raw


def check(book: Callable[[], Rulebook], raw: dict[str, Any]) -> tuple[str, str]:
    """(message, css class) for the form as typed so far: the rulebook's own refusal (the API's
    422 text), or that the rule is valid. The name is checked last, so a user sees the first
    problem of what they are typing rather than of the field they have not reached."""
    if not raw["query_id"] and not raw["function"] and not raw["thresholds"]:
        return PRISTINE, "hint"
    try:
        book().validate({**raw, "name": raw["name"] or "unnamed"})
        if not raw["name"]:
            book().validate(raw)
    except RuleError as exc:
        return f"{exc.at}: {exc.detail}", "error"
    except Exception as exc:  # storage down: the query cannot be looked up
        return f"cannot check the query now (storage unavailable: {exc})", "error"
    return "valid: Preview draws it, Create stores it", "ok"


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
    for level, color in (("warning", "#e9c46a"), ("critical", "#e63946")):
        if result["thresholds"].get(level) is not None:
            fig.add_hline(y=result["thresholds"][level], line_color=color, annotation_text=level)
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
        Output("ab-check", "children"),
        Output("ab-check", "className"),
        Input("ab-name", "value"),
        Input("ab-query", "value"),
        Input("ab-function", "value"),
        Input("ab-cmp", "value"),
        Input("ab-warning", "value"),
        Input("ab-critical", "value"),
        Input("ab-for", "value"),
        Input("ab-annotation", "value"),
    )
    def live(*fields: Any) -> tuple[str, str]:
        return check(book, _raw(*fields))

    @app.callback(
        Output("ab-message", "children"),
        Output("ab-graph", "figure"),
        Output("ab-graph", "style"),
        Input("ab-preview", "n_clicks"),
        Input("ab-create", "n_clicks"),
        State("ab-name", "value"),
        State("ab-query", "value"),
        State("ab-function", "value"),
        State("ab-cmp", "value"),
        State("ab-warning", "value"),
        State("ab-critical", "value"),
        State("ab-for", "value"),
        State("ab-annotation", "value"),
        prevent_initial_call=True,
    )
    def act(preview_clicks: int, create_clicks: int, *fields: Any) -> tuple[Any, Any, Any]:
        from dash import ctx

        raw = _raw(*fields)
        try:
            if ctx.triggered_id == "ab-create":
                rule = book().create(raw, app_ctx.clock())
                return f"created rule {rule.id}", no_update, no_update
            result = preview(book(), raw, app_ctx.clock())
        except RuleError as exc:
            return f"{exc.at}: {exc.detail}", no_update, {"display": "none"}
        return "", _figure(result), {"display": "block"}
