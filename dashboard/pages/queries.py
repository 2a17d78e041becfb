"""The queries page: the list (each query's state and why, from dashboard.states, its last
result, pause/resume/delete), the builder form and the query-language text box. Both forms
validate through dashboard.validation and show the parser's message beside the field at
fault."""

from __future__ import annotations

import logging

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from apm.functions import CATALOGUE
from apm.query import QueryError
from dashboard.api import StorageUnavailable, guarded
from dashboard.context import AppContext
from dashboard.pages.common import ago, banner, navbar, state_badge, when
from dashboard.states import QueryStates
from dashboard.validation import BUILDER_FIELDS, check_builder, compose, pointer, validate

__all__ = ["layout", "register"]

log = logging.getLogger(__name__)
# The checklist offers the functions without a parameter; percentile has its own field.
_PLAIN_FUNCTIONS = [name for name, spec in CATALOGUE.items() if spec.param is None]


def _field(label: str, control: Component, name: str, hint: str = "") -> html.Div:
    return html.Div(
        className="field",
        children=[
            html.Label(label),
            control,
            html.Span(hint, className="hint") if hint else None,
            html.Div(id=f"b-err-{name}", className="field-error"),
        ],
    )


def layout(app_ctx: AppContext) -> html.Div:
    metrics, topics_error = _metrics(app_ctx)
    servers, _ = _servers(app_ctx)
    builder = html.Div(
        className="card",
        id="builder",
        children=[
            html.H3("Build a query"),
            _field(
                "Servers (names or patterns)",
                dcc.Input(id="b-servers", value="*", placeholder="*, web-*, db-1", debounce=False),
                "servers",
                "comma-separated; * is every server",
            ),
            html.Div(
                className="field",
                children=[
                    html.Label("Servers seen so far"),
                    dcc.Dropdown(
                        id="b-seen", multi=True, options=servers, placeholder="pick servers to add"
                    ),
                ],
            ),
            _field(
                "Metric",
                dcc.Dropdown(id="b-metric", options=metrics, placeholder="metric topic"),
                "metric",
                topics_error or "the metric topics that exist in Kafka",
            ),
            _field(
                "Window", dcc.Input(id="b-window", value="10s", placeholder="10s, 1m, 1h"), "window"
            ),
            _field(
                "Functions",
                html.Div(
                    [
                        dcc.Checklist(
                            id="b-functions",
                            options=_PLAIN_FUNCTIONS,
                            value=["avg", "max"],
                            inline=True,
                        ),
                        html.Label("percentile p (comma-separated)", className="inline-label"),
                        dcc.Input(
                            id="b-percentiles", value="99", placeholder="99, 99.9", size="10"
                        ),
                    ]
                ),
                "functions",
            ),
            html.Pre(id="b-preview", className="preview"),
            html.Button("Create query", id="b-create", className="primary"),
            html.Div(id="b-result", className="result"),
        ],
    )
    textbox = html.Div(
        className="card",
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


def _metrics(app_ctx: AppContext) -> tuple[list[str], str | None]:
    try:
        return app_ctx.topics.metrics(), None
    except OSError as exc:
        return [], f"metric topics unavailable: {exc}"


def _servers(app_ctx: AppContext) -> tuple[list[str], str | None]:
    try:
        return sorted(guarded(app_ctx.metrics, "list_servers", app_ctx.repo.list_servers)), None
    except StorageUnavailable as exc:
        return [], str(exc)


def _table(app_ctx: AppContext, states: QueryStates) -> html.Table | html.Div:
    queries = guarded(app_ctx.metrics, "list_queries", app_ctx.repo.list_queries)
    if not queries:
        return html.Div("No queries yet: build one below.", id="q-empty")
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
                        className="q-actions",
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
        Output("b-servers", "value"),
        Input("b-seen", "value"),
        State("b-servers", "value"),
        prevent_initial_call=True,
    )
    def add_seen(seen: list[str] | None, current: str | None) -> str:
        parts = [p.strip() for p in (current or "").split(",") if p.strip() and p.strip() != "*"]
        parts += [s for s in seen or [] if s not in parts]
        return ", ".join(parts) or "*"

    builder_inputs = [
        State("b-servers", "value"),
        State("b-metric", "value"),
        State("b-window", "value"),
        State("b-functions", "value"),
        State("b-percentiles", "value"),
    ]

    @app.callback(
        Output("b-preview", "children"),
        [Input(s.component_id, s.component_property) for s in builder_inputs],
    )
    def preview(
        servers: str | None,
        metric: str | None,
        window: str | None,
        functions: list[str] | None,
        percentiles: str | None,
    ) -> str:
        return compose(
            (servers or "").split(","), metric, window, functions or [], percentiles
        ).text

    @app.callback(
        [Output(f"b-err-{f}", "children") for f in BUILDER_FIELDS]
        + [Output("b-result", "children"), Output("q-version", "data", allow_duplicate=True)],
        Input("b-create", "n_clicks"),
        *builder_inputs,
        State("q-version", "data"),
        prevent_initial_call=True,
    )
    def create_from_builder(
        _n: int | None,
        servers: str | None,
        metric: str | None,
        window: str | None,
        functions: list[str] | None,
        percentiles: str | None,
        version: int,
    ) -> list[object]:
        composed = compose((servers or "").split(","), metric, window, functions or [], percentiles)
        errors: dict[str, str] = dict.fromkeys(BUILDER_FIELDS, "")
        if (found := check_builder(composed)) is not None:
            errors[found[0]] = found[1].detail
            return [*errors.values(), "", no_update]
        return [*errors.values(), *_save(app_ctx, composed.text, version)]

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
        return ["", *_save(app_ctx, text or "", version)]

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


def _save(app_ctx: AppContext, text: str, version: int) -> list[object]:
    try:
        saved = guarded(app_ctx.metrics, "save_query", lambda: app_ctx.repo.save_query(text))
    except StorageUnavailable as exc:
        return [html.Span(str(exc), className="field-error"), no_update]
    return [
        html.Span(["Created ", dcc.Link(saved.text, href=f"/chart?q={saved.id}")], className="ok"),
        (version or 0) + 1,
    ]
