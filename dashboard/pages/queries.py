"""The queries page: the list (each query's state and why, from dashboard.states, its last
result, pause/resume/delete), the builder form (:mod:`dashboard.pages.query_builder`) and the
query-language text box. Both forms validate through dashboard.validation and show the parser's
message beside the field at fault."""

from __future__ import annotations

import logging

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from apm.query import QueryError
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable, guarded
from dashboard.pages import query_builder
from dashboard.pages.common import WRITES, ago, banner, may_write, navbar, state_badge, when
from dashboard.states import QueryStates
from dashboard.validation import pointer, validate

__all__ = ["layout", "register"]

log = logging.getLogger(__name__)


def layout(app_ctx: AppContext) -> html.Div:
    builder = query_builder.layout(app_ctx)
    textbox = html.Div(
        className=f"card {WRITES}",
        id="textbox",
        children=[
            html.H3("Or write it"),
            dcc.Textarea(
                id="t-text",
                placeholder="FROM web-* SELECT cpu WINDOW 10s COMPUTE avg, p99",
                style={"width": "100%", "height": "4em"},
            ),
            html.Pre(id="t-error", className="field-error"),
            html.Button("Create query", id="t-create", className="primary"),
            html.Div(id="t-result", className="result"),
        ],
    )
    return html.Div(
        [
            navbar("queries"),
            dcc.Store(id="q-version", data=0),
            dcc.Interval(id="q-tick", interval=app_ctx.settings.clamp_refresh(None) * 1000),
            html.Div(id="q-banner"),
            html.H2("Queries"),
            html.Div(id="q-list", className="card"),
            html.Div(className="row", children=[builder, textbox]),
        ]
    )


def _table(app_ctx: AppContext, states: QueryStates) -> html.Table | html.Div:
    queries = guarded(app_ctx.metrics, "list_queries", app_ctx.repo.list_queries)
    if not queries:
        if may_write():
            return html.Div("No queries yet: build one below.", id="q-empty")
        return html.Div("No queries yet: an editor or an admin can build them.", id="q-empty")
    evaluated = states.evaluate(queries)
    now = app_ctx.clock()
    rows = []
    for q in sorted(queries, key=lambda q: q.text):
        state, reason, last = evaluated[q.id]
        toggle = ("Resume", "q-resume") if q.paused else ("Pause", "q-pause")
        rows.append(
            html.Tr(
                id={"type": "q-row", "id": q.id},
                className=f"status-{state}",
                children=[
                    html.Td(dcc.Link(q.text, href=f"/chart?q={q.id}"), className="q-text"),
                    html.Td(
                        [state_badge(state), html.Div(reason, className="q-reason")],
                        className="q-status",
                    ),
                    html.Td(
                        f"{when(last)} ({ago(None if last is None else now - last)})"
                        if last is not None
                        else "no result yet",
                        className="q-last",
                    ),
                    html.Td(
                        [
                            html.Button(toggle[0], id={"type": toggle[1], "id": q.id}),
                            html.Button(
                                "Delete", id={"type": "q-delete", "id": q.id}, className="danger"
                            ),
                        ],
                        className=f"q-actions {WRITES}",
                    ),
                ],
            )
        )
    return html.Table(
        id="q-table",
        children=[
            html.Thead(
                html.Tr(
                    [
                        html.Th("Query"),
                        html.Th("State and why"),
                        html.Th("Last result"),
                        html.Th(""),
                    ]
                )
            ),
            html.Tbody(rows),
        ],
    )


def register(app: Dash, app_ctx: AppContext) -> None:
    states = QueryStates(
        app_ctx.repo,
        app_ctx.metrics,
        app_ctx.clock,
        max(10.0, app_ctx.settings.refresh_floor_seconds),
    )
    query_builder.register(app, app_ctx)

    @app.callback(
        Output("q-list", "children"),
        Output("q-banner", "children"),
        Input("q-version", "data"),
        Input("q-tick", "n_intervals"),
    )
    def render_list(_version: int, _tick: int | None) -> tuple[object, object]:
        try:
            return _table(app_ctx, states), banner(None)
        except StorageUnavailable as exc:
            return no_update, banner(str(exc))

    @app.callback(
        Output("t-error", "children"),
        Output("t-result", "children"),
        Output("q-version", "data", allow_duplicate=True),
        Input("t-create", "n_clicks"),
        State("t-text", "value"),
        State("q-version", "data"),
        prevent_initial_call=True,
    )
    def create_from_text(_n: int | None, text: str | None, version: int) -> list[object]:
        try:
            validate(text or "")
        except QueryError as exc:
            return [f"{exc}\n{pointer(text or '', exc.position)}", "", no_update]
        return ["", *query_builder.save(app_ctx, text or "", version)]

    @app.callback(
        Output("q-version", "data", allow_duplicate=True),
        Output("q-banner", "children", allow_duplicate=True),
        Input({"type": "q-pause", "id": ALL}, "n_clicks"),
        Input({"type": "q-resume", "id": ALL}, "n_clicks"),
        Input({"type": "q-delete", "id": ALL}, "n_clicks"),
        State("q-version", "data"),
        prevent_initial_call=True,
    )
    def act(_p: list, _r: list, _d: list, version: int) -> tuple[object, object]:
        trigger = ctx.triggered_id
        # Re-rendered buttons fire with n_clicks None; only a real click acts.
        if not isinstance(trigger, dict) or not ctx.triggered[0].get("value"):
            return no_update, no_update
        qid, kind = trigger["id"], trigger["type"]
        try:
            if kind == "q-delete":
                guarded(app_ctx.metrics, "delete_query", lambda: app_ctx.repo.delete_query(qid))
            else:
                guarded(
                    app_ctx.metrics,
                    "set_paused",
                    lambda: app_ctx.repo.set_paused(qid, kind == "q-pause"),
                )
        except KeyError:
            return (version or 0) + 1, banner("that query no longer exists")
        except StorageUnavailable as exc:
            return no_update, banner(str(exc))
        return (version or 0) + 1, banner(None)
