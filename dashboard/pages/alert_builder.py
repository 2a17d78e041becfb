"""The rule builder on the alerts page: a stored query, one of its functions, a comparison,
warning and critical thresholds, ``for``; **Preview** draws the last hour of the query's
windows against the thresholds with the state each window would have had, **Create** stores the
rule. Both validate through the rulebook, so a refusal names its field inline, as the API's 422
does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
from dash import Dash, Input, Output, State, dcc, html, no_update

from alerting.rulebook import Rulebook
from alerting.rules import COMPARISONS, RuleError
from dashboard.alerts_api import preview
from dashboard.context import AppContext

__all__ = ["form", "register"]

_COLORS = {"normal": "#2a9d8f", "pending": "#e9c46a", "firing": "#e63946", "recovering": "#f4a261"}


def _field(label: str, control: Any) -> html.Div:
    return html.Div(className="field", children=[html.Label(label), control])


def form() -> html.Div:
    return html.Div(
        id="ab-form",
        children=[
            html.H3("New rule"),
            _field("name", dcc.Input(id="ab-name", value="", type="text")),
            _field("query", dcc.Dropdown(id="ab-query", options=[], placeholder="stored query")),
            _field("function", dcc.Dropdown(id="ab-function", options=[])),
            _field(
                "comparison",
                dcc.Dropdown(id="ab-cmp", options=list(COMPARISONS), value=">", clearable=False),
            ),
            _field("warning", dcc.Input(id="ab-warning", type="number", value=None)),
            _field("critical", dcc.Input(id="ab-critical", type="number", value=None)),
            _field("for (s)", dcc.Input(id="ab-for", type="number", value=30, min=0)),
            html.Button("Preview", id="ab-preview", n_clicks=0),
            html.Button("Create", id="ab-create", n_clicks=0),
            html.Div(id="ab-message", className="error"),
            dcc.Graph(id="ab-graph", style={"display": "none"}),
        ],
    )


def _raw(
    name: str, query: str | None, function: str | None, cmp: str, warn: Any, crit: Any, for_s: Any
) -> dict[str, Any]:
    thresholds = {k: v for k, v in (("warning", warn), ("critical", crit)) if v is not None}
    return {
        "name": name or "",
        "query_id": query or "",
        "function": function or "",
        "comparison": cmp,
        "thresholds": thresholds,
        "for_s": for_s if for_s is not None else 0,
    }


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
