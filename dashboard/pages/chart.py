"""The chart page: one or several queries overlaid over a chosen range, with live refresh at an
interval that never goes below the configured floor. Missing windows are gaps, not lines. Above
the chart, each selected query's state and why (dashboard.states); an empty chart says why.
A ``BY server`` query draws one line per server and function, at most
:data:`dashboard.per_server.MAX_LINES`; under the chart, which servers and how many are not
drawn (:mod:`dashboard.pages.figures`). Alert rules on the charted queries draw their state
changes on it (pages/chart_alerts.py)."""

from __future__ import annotations

import time
from urllib.parse import parse_qs

from dash import Dash, Input, Output, State, dcc, html, no_update

from apm.query import StoredQuery
from dashboard.alerts_api import rulebook_for
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable, guarded
from dashboard.pages.chart_alerts import annotate
from dashboard.pages.common import banner, navbar, state_badge
from dashboard.pages.figures import empty_figure, figure_for
from dashboard.states import Evaluated, QueryStates
from dashboard.validation import parse_time

__all__ = ["RANGES", "layout", "register"]

# 7 d and 30 d read the rollup tiers (dashboard.tiered): 1 min and 1 h rows, not 10 s windows.
RANGES = {"15m": 900, "1h": 3600, "6h": 21_600, "24h": 86_400, "7d": 604_800, "30d": 2_592_000}


def layout(app_ctx: AppContext, search: str) -> html.Div:
    wanted = [i for raw in parse_qs(search.lstrip("?")).get("q", []) for i in raw.split(",") if i]
    try:
        queries = guarded(app_ctx.metrics, "list_queries", app_ctx.repo.list_queries)
        problem = None
    except StorageUnavailable as exc:
        queries, problem = [], str(exc)
    options = [{"label": q.text, "value": q.id} for q in sorted(queries, key=lambda q: q.text)]
    known = {q.id for q in queries}
    settings = app_ctx.settings
    return html.Div(
        [
            navbar("charts"),
            banner(problem),
            html.Div(
                className="card controls",
                children=[
                    html.Div(
                        className="field",
                        children=[
                            html.Label("Queries (several overlay)"),
                            dcc.Dropdown(
                                id="c-queries",
                                multi=True,
                                options=options,
                                value=[i for i in wanted if i in known],
                            ),
                        ],
                    ),
                    html.Div(
                        className="field",
                        children=[
                            html.Label("Range"),
                            dcc.RadioItems(
                                id="c-range", value="1h", inline=True, options=[*RANGES, "custom"]
                            ),
                            html.Div(
                                id="c-custom",
                                children=[
                                    dcc.Input(
                                        id="c-from",
                                        placeholder="from: 2024-05-01T10:00Z or epoch s",
                                    ),
                                    dcc.Input(id="c-to", placeholder="to (empty: now)"),
                                ],
                            ),
                            html.Div(id="c-range-error", className="field-error"),
                        ],
                    ),
                    html.Div(
                        className="field",
                        children=[
                            dcc.Checklist(
                                id="c-live",
                                options=[{"label": "live", "value": "live"}],
                                value=["live"],
                                inline=True,
                            ),
                            html.Label("every (s)", className="inline-label"),
                            dcc.Input(
                                id="c-every",
                                type="number",
                                value=settings.refresh_seconds,
                                min=settings.refresh_floor_seconds,
                                step=0.5,
                                size="5",
                            ),
                            html.Span(
                                f"floor {settings.refresh_floor_seconds:g} s",
                                className="hint",
                                id="c-every-note",
                            ),
                        ],
                    ),
                ],
            ),
            dcc.Interval(id="c-tick", interval=settings.clamp_refresh(None) * 1000),
            html.Div(id="c-states", className="card states"),
            dcc.Graph(
                id="c-graph",
                config={"displaylogo": False},
                style={"height": "60vh"},
                figure=empty_figure("pick one or more queries"),
            ),
            html.Div(id="c-servers", className="hint"),
            html.Div(id="c-status", className="hint"),
            html.Div(id="c-alerts", className="hint"),
        ]
    )


def _state_lines(queries: list[StoredQuery], states: dict[str, Evaluated]) -> list[html.Div]:
    return [
        html.Div(
            id={"type": "c-state", "id": q.id},
            className=f"c-state status-{e.state}",
            children=[
                state_badge(e.state),
                html.Span(q.text, className="c-state-query"),
                html.Div(e.reason, className="q-reason"),
            ],
        )
        for q in queries
        if (e := states.get(q.id)) is not None
    ]


def _why_empty(queries: list[StoredQuery], states: dict[str, Evaluated]) -> str:
    """The empty chart's message: the first selected query's state and reason."""
    if not queries:
        return "the selected queries no longer exist"
    first = states[queries[0].id]
    if first.state == "evaluated":
        return f"no windows in this range; {first.reason}"
    return f"{first.state}: {first.reason}"


def register(app: Dash, app_ctx: AppContext) -> None:
    settings = app_ctx.settings
    states = QueryStates(
        app_ctx.repo, app_ctx.metrics, app_ctx.clock, max(10.0, settings.refresh_floor_seconds)
    )
    book = rulebook_for(app_ctx.repo)

    @app.callback(
        Output("c-tick", "interval"),
        Output("c-tick", "disabled"),
        Output("c-every-note", "children"),
        Input("c-every", "value"),
        Input("c-live", "value"),
    )
    def set_refresh(every: float | None, live: list[str] | None) -> tuple[float, bool, str]:
        seconds = settings.clamp_refresh(every)
        note = f"refreshing every {seconds:g} s (floor {settings.refresh_floor_seconds:g} s)"
        return seconds * 1000, not live, note if live else "live refresh off"

    @app.callback(Output("c-custom", "style"), Input("c-range", "value"))
    def show_custom(choice: str) -> dict[str, str]:
        return {} if choice == "custom" else {"display": "none"}

    @app.callback(
        Output("c-graph", "figure"),
        Output("c-status", "children"),
        Output("c-range-error", "children"),
        Output("c-states", "children"),
        Output("c-alerts", "children"),
        Output("c-servers", "children"),
        Input("c-queries", "value"),
        Input("c-range", "value"),
        Input("c-from", "value"),
        Input("c-to", "value"),
        Input("c-tick", "n_intervals"),
        State("c-graph", "figure"),
    )
    def draw(
        ids: list[str] | None,
        choice: str,
        raw_from: str | None,
        raw_to: str | None,
        _tick: int | None,
        current: object,
    ) -> tuple[object, str, str, object, object, object]:
        started = time.perf_counter()
        now = app_ctx.clock()
        if choice == "custom":
            try:
                end = parse_time(raw_to, now)
                start = parse_time(raw_from, end - 3600)
            except ValueError as exc:
                return current, "", str(exc), no_update, no_update, no_update
            if end <= start:
                return current, "", "'from' must be before 'to'", no_update, no_update, no_update
        else:
            end, start = now, now - RANGES.get(choice, 3600)
        if not ids:
            return empty_figure("pick one or more queries"), "", "", [], "", []
        try:
            found = guarded(
                app_ctx.metrics,
                "get_query",
                lambda: [q for i in ids if (q := app_ctx.repo.get_query(i)) is not None],
            )
            fig, drawn = figure_for(app_ctx, found, start, end)
            evaluated = states.evaluate(found)
        except StorageUnavailable as exc:
            return (
                current,
                f"storage unavailable, showing the last data: {exc}",
                "",
                no_update,
                no_update,
                no_update,
            )
        if drawn.points == 0:
            fig = empty_figure(_why_empty(found, evaluated))
        alerts = annotate(fig, book, [q.id for q in found], start, end)
        elapsed = time.perf_counter() - started
        app_ctx.metrics.chart_seconds.observe(elapsed)
        app_ctx.metrics.windows_read.inc(drawn.windows)
        app_ctx.metrics.points_served.inc(drawn.points)
        status = (
            f"{drawn.windows} rows read, {drawn.points} points drawn in {elapsed * 1000:.0f} ms"
        )
        servers = [html.Div(n) for n in drawn.notes]
        return fig, status, "", _state_lines(found, evaluated), alerts, servers
