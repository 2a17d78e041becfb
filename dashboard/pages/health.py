"""The health page: ingest rate and rejects by reason, consumer lag per metric topic, the
aggregator's batch duration and freshness, the servers reporting or silent, and the agent
versions they run (dashboard.pages.health_agents)."""

from __future__ import annotations

from collections.abc import Mapping

from dash import Dash, Input, Output, dcc, html

from dashboard.api import StorageUnavailable, guarded
from dashboard.context import AppContext
from dashboard.health import HealthView, ServerRow, build_health
from dashboard.pages.common import ago, banner, navbar, when
from dashboard.pages.health_agents import agents_card
from dashboard.pages.health_receivers import receivers_card

__all__ = ["layout", "register"]


def layout(app_ctx: AppContext) -> html.Div:
    s = app_ctx.settings
    return html.Div(
        [
            navbar("health"),
            dcc.Interval(id="h-tick", interval=s.clamp_refresh(None) * 1000),
            html.Div(
                className="field",
                children=[
                    html.Label("silent after (s)", className="inline-label"),
                    dcc.Input(
                        id="h-silent", type="number", value=s.silent_after_seconds, min=1, size="6"
                    ),
                ],
            ),
            html.Div(id="h-body"),
        ]
    )


def _rate(value: object, unit: str = "/s") -> str:
    return (
        "n/a (needs two scrapes)" if not isinstance(value, int | float) else (f"{value:,.1f}{unit}")
    )


def _total(value: object) -> str:
    return f"{value:,.0f}" if isinstance(value, int | float) else "n/a"


def _ingest(view: HealthView) -> html.Div:
    if not view.ingest:
        return html.Div("No ingest endpoint configured (APM_DASHBOARD_INGEST_METRICS_URLS).")
    blocks = []
    for entry in view.ingest:
        if not entry.get("ok"):
            blocks.append(
                html.Div(
                    f"{entry.get('url')}: unreachable ({entry.get('error')})",
                    className="field-error",
                )
            )
            continue
        by_reason = entry.get("rejected_by_reason") or {}
        rates = entry.get("rejected_per_s_by_reason") or {}
        assert isinstance(by_reason, Mapping) and isinstance(rates, Mapping)
        blocks.append(
            html.Div(
                [
                    html.Div(
                        [
                            html.B(str(entry.get("url"))),
                            f" accepting {_rate(entry.get('accepted_per_s'))} samples, "
                            f"{_total(entry.get('accepted_total'))} in total",
                        ]
                    ),
                    html.Table(
                        id="h-rejects",
                        children=[
                            html.Tr(
                                [
                                    html.Th("rejected requests by reason"),
                                    html.Th("total"),
                                    html.Th("rate"),
                                ]
                            ),
                            *[
                                html.Tr(
                                    [html.Td(r), html.Td(f"{n:,.0f}"), html.Td(_rate(rates.get(r)))]
                                )
                                for r, n in sorted(by_reason.items())
                            ],
                        ],
                    )
                    if by_reason
                    else html.Div("no rejects", className="hint"),
                ]
            )
        )
    return html.Div(blocks)


def _components(view: HealthView) -> html.Div:
    if not view.components:
        return html.Div(
            "No aggregator has published a status yet: none is running, or it "
            "is still starting (`apm aggregator status`).",
            className="hint",
        )
    rows = [
        html.Tr(
            [
                html.Th("component"),
                html.Th("published"),
                html.Th("scope and reads"),
                html.Th("batch duration"),
                html.Th("watermark"),
            ]
        )
    ]
    details = []
    for c in view.components:
        reads = (
            f"reads {len(c.reads)}: {', '.join(c.reads[:12])}{' ...' if len(c.reads) > 12 else ''}"
            if c.reads
            else "reads nothing"
        )
        rows.append(
            html.Tr(
                [
                    html.Td(c.component),
                    html.Td(
                        ago(c.age_s) if c.live else f"NOT RUNNING (last {ago(c.age_s)})",
                        className="" if c.live else "field-error",
                    ),
                    html.Td(
                        "-"
                        if c.scope is None
                        else [html.Div(c.scope), html.Div(reads, className="hint")]
                    ),
                    html.Td("n/a" if c.batch_duration_s is None else f"{c.batch_duration_s:.2f} s"),
                    html.Td("n/a" if c.freshness_s is None else f"{c.freshness_s:.1f} s behind"),
                ]
            )
        )
        if c.other:
            details.append(
                html.Div(
                    className="h-other",
                    children=[
                        html.B(f"{c.component}: "),
                        *[html.Span(f"{k}={v}"[:120]) for k, v in sorted(c.other.items())],
                    ],
                )
            )
    return html.Div(
        [
            html.Table(rows, id="h-components"),
            *details,
            html.Div(
                "The watermark trails the newest sample by the allowed lateness plus the longest "
                "window: windows older than it are final; newer ones are still refined by late "
                "samples.",
                className="hint",
            ),
        ]
    )


def _not_covered(view: HealthView) -> list[html.Div]:
    if not view.not_covered:
        return []
    return [
        html.Div(
            id="h-not-covered",
            className="field-error",
            children=[
                html.B("Not covered: "),
                ", ".join(view.not_covered),
                " (no running aggregator's scope includes these metrics: their queries get no "
                "windows until one does)",
            ],
        )
    ]


def _lag(view: HealthView) -> html.Div | html.Table:
    if not view.lag:
        return html.Div("No consumer lag reported.", className="hint")
    return html.Table(
        id="h-lag",
        children=[
            html.Tr([html.Th("metric topic"), html.Th("records behind")]),
            *[html.Tr([html.Td(t), html.Td(f"{n:,.0f}")]) for t, n in view.lag.items()],
        ],
    )


def _set_aside(view: HealthView) -> html.Div:
    hint = html.Div(
        "Samples not aggregated, per metric, since each job started: 'too late' arrived "
        "later than the allowed lateness after their time (an agent's spool drained after an "
        "outage; their windows are final), 'ahead' carried a time further ahead of their "
        "arrival than the tolerance (a skewed clock). See docs/aggregator.md.",
        className="hint",
    )
    if not view.set_aside:
        return html.Div([html.Div("None.", id="h-set-aside-none"), hint])
    return html.Div(
        [
            html.Table(
                id="h-set-aside",
                children=[
                    html.Tr([html.Th("metric"), html.Th("too late"), html.Th("ahead")]),
                    *[
                        html.Tr(
                            [
                                html.Td(metric),
                                html.Td(f"{n.get('backlog', 0):,}"),
                                html.Td(f"{n.get('future', 0):,}"),
                            ]
                        )
                        for metric, n in view.set_aside.items()
                    ],
                ],
            ),
            hint,
        ]
    )


def _servers(rows: list[ServerRow], table_id: str, empty: str) -> html.Div | html.Table:
    if not rows:
        return html.Div(empty, className="hint")
    shown = rows[:200]  # a 10,000-server fleet must not make a 10,000-row page
    more = len(rows) - len(shown)
    return html.Table(
        id=table_id,
        children=[
            html.Tr([html.Th("server"), html.Th("last seen")]),
            *[
                html.Tr([html.Td(r.server), html.Td(f"{when(r.last_seen)} ({ago(r.age_s)})")])
                for r in shown
            ],
            *([html.Tr(html.Td(f"... and {more} more", colSpan=2))] if more else []),
        ],
    )


def render(view: HealthView) -> html.Div:
    return html.Div(
        [
            html.Div(
                className="row",
                children=[
                    html.Div(className="card", children=[html.H3("Ingest"), _ingest(view)]),
                    html.Div(
                        className="card",
                        children=[
                            html.H3("Aggregator"),
                            _components(view),
                            *_not_covered(view),
                            html.H4("Consumer lag"),
                            _lag(view),
                            html.H4("Samples too late or ahead"),
                            _set_aside(view),
                        ],
                    ),
                ],
            ),
            html.Div(
                className="card",
                children=[
                    html.H3(
                        f"Servers: {len(view.reporting)} reporting, {len(view.silent)} silent for "
                        f"more than {view.silent_after_s:g} s",
                        id="h-server-counts",
                    ),
                    html.Div(
                        className="row",
                        children=[
                            html.Div(
                                [
                                    html.H4("Silent"),
                                    _servers(view.silent, "h-silent-table", "none silent"),
                                ]
                            ),
                            html.Div(
                                [
                                    html.H4("Reporting"),
                                    _servers(view.reporting, "h-reporting-table", "none reporting"),
                                ]
                            ),
                        ],
                    ),
                ],
            ),
        ]
    )


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output("h-body", "children"), Input("h-tick", "n_intervals"), Input("h-silent", "value")
    )
    def refresh(_tick: int | None, silent: float | None) -> html.Div:
        problem = None
        try:
            status = guarded(app_ctx.metrics, "get_status", app_ctx.repo.get_status)
            servers = guarded(app_ctx.metrics, "list_servers", app_ctx.repo.list_servers)
            active = guarded(
                app_ctx.metrics,
                "list_queries",
                lambda: app_ctx.repo.list_queries(include_paused=False),
            )
        except StorageUnavailable as exc:
            status, servers, active, problem = {}, {}, [], str(exc)
        threshold = silent if silent and silent > 0 else app_ctx.settings.silent_after_seconds
        view = build_health(
            status,
            servers,
            app_ctx.scraper.scrape(),
            app_ctx.clock(),
            float(threshold),
            [q.query.metric for q in active],
        )
        s = app_ctx.settings
        receivers = receivers_card(s.alerting_metrics_url, s.scrape_timeout_seconds)
        return html.Div([banner(problem), render(view), _agents(app_ctx), receivers])


def _agents(app_ctx: AppContext) -> html.Div | None:
    if app_ctx.agents is None:
        return None
    try:
        seen, problem = dict(app_ctx.agents.versions()), None
    except OSError as exc:
        seen, problem = None, str(exc)
    lookback = app_ctx.settings.agents_lookback_seconds
    return agents_card(seen, problem, app_ctx.clock(), lookback)
