"""Builds the dashboard: a Dash app on a Flask server carrying login, CSRF checks, the REST API,
/metrics and /healthz. Dependencies come in through an AppContext, so tests and the benchmark
build the same app over real storage, Kafka and ingest endpoints."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar, cast

from dash import Dash, Input, Output, dcc, html
from flask import Flask, Response, redirect, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.wrappers import Response as BaseResponse

from apm.audit import Recorder
from apm.errors import status_error
from dashboard import api, audit_api, dashboards_api, promapi, share
from dashboard.alerts_api import build_alerts_api, rulebook_for
from dashboard.api import error
from dashboard.api_tokens import TokenDirectory
from dashboard.audit import audit_store_for, dashboard_log, request_actor
from dashboard.auth import install_auth, login_throttle
from dashboard.board_book import book_for
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable
from dashboard.pages import alerts, board, board_list, chart, health, people, queries
from dashboard.pages.common import role_class
from dashboard.permits import install_permits
from dashboard.ports import QueryRepository
from dashboard.signin import Tokens, tokens_for, users_for
from dashboard.states import QueryStates
from dashboard.users import UserDirectory
from storage.audit_log import AuditedQueries

__all__ = ["build_context", "create_app"]

D = TypeVar("D", UserDirectory, TokenDirectory)


def create_app(app_ctx: AppContext) -> Dash:
    server = Flask("dashboard")
    throttle = login_throttle(app_ctx.settings)
    # Every change made through the dashboard is recorded once stored (dashboard/audit.py):
    # the queries through the context's repository, the rest by their services.
    audit_store = audit_store_for(app_ctx.repo)
    token = app_ctx.settings.token
    trail = dashboard_log(
        audit_store,
        app_ctx.metrics,
        lambda: request_actor(token, _label_of(tokens)),
        app_ctx.clock,
    )
    users = _audited(users_for(app_ctx.repo, app_ctx.metrics), trail)
    tokens = _audited(tokens_for(app_ctx.repo, app_ctx.metrics, users), trail)
    app_ctx = replace(app_ctx, repo=cast(QueryRepository, AuditedQueries(app_ctx.repo, trail)))
    boards = book_for(app_ctx.repo, app_ctx.metrics, trail)
    sessions = install_auth(
        server,
        app_ctx.settings,
        app_ctx.metrics,
        clock=app_ctx.clock,
        throttle=throttle,
        delegated=(promapi.PREFIX,),
        shared=share.shared_check(boards),
        users=users,
        tokens=tokens,
    )
    api.install(server, app_ctx.repo, app_ctx.settings, app_ctx.metrics, app_ctx.clock)
    alert_book = rulebook_for(app_ctx.repo, trail)
    server.register_blueprint(build_alerts_api(alert_book, app_ctx.metrics, app_ctx.clock))
    dashboards_api.install(server, boards)
    audit_api.install(server, audit_store, app_ctx.metrics, app_ctx.clock)
    share.install(
        server,
        app_ctx,
        boards,
        QueryStates(app_ctx.repo, app_ctx.metrics, app_ctx.clock, ttl_s=10.0),
    )
    # The Prometheus read API (/api/v1/...), with the same credentials and login throttle.
    server.register_blueprint(promapi.blueprint(app_ctx, sessions, throttle, users, tokens))

    @server.before_request
    def api_routes_only() -> None:
        # Dash's catch-all page route would answer an unknown /api/ path with the app's HTML.
        if (
            request.path.startswith("/api/")
            and request.routing_exception is None
            and request.blueprint
            not in ("api", "promapi", "alerts_api", "dashboards_api", "audit_api")
        ):
            raise NotFound(f"no API route {request.path}")

    @server.errorhandler(HTTPException)
    def api_http_error(exc: HTTPException) -> HTTPException | tuple[Response, int]:
        """Under /api/, the framework's own answers (unknown route, method not allowed, an
        unhandled exception's 500) are in the APIs' error shape too; elsewhere, as they were."""
        if not request.path.startswith("/api/") or exc.code is None:
            return exc
        response, status = error(exc.code, status_error(exc.code), exc.description or exc.name)
        allow = exc.get_response().headers.get("Allow")
        if allow:
            response.headers["Allow"] = allow
        return response, status

    @server.get("/metrics")
    def prometheus() -> Response:
        # content_type, not mimetype: CONTENT_TYPE_LATEST already carries its charset, and
        # mimetype= would append a second one.
        return Response(generate_latest(app_ctx.metrics.registry), content_type=CONTENT_TYPE_LATEST)

    @server.get("/queries", strict_slashes=False)
    def queries_alias() -> BaseResponse:
        # What people type; the list lives at "/" (login comes first, as for every page).
        return redirect("/", code=308)

    @server.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @server.after_request
    def count(response: Response) -> Response:
        path = request.path
        kind = (
            "api"
            if path.startswith("/api/")
            else "callback"
            if path.startswith("/_dash-update")
            else "other"
        )
        app_ctx.metrics.requests.labels(kind, str(response.status_code)).inc()
        # The dashboard is never framed by another site (clickjacking).
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    app = Dash(
        "dashboard",
        server=server,  # type: ignore[arg-type]
        title="APM dashboard",
        assets_folder=str(Path(__file__).parent / "assets"),
        suppress_callback_exceptions=True,
        update_title="",
    )
    # A function, so each page load renders with the caller's session (the logout form's token)
    # and role (a viewer's page hides the controls that write: pages/common.py, WRITES).
    app.layout = lambda: html.Div(
        [dcc.Location(id="url"), html.Div(id="page")], id="root", className=role_class()
    )

    @app.callback(Output("page", "children"), Input("url", "pathname"), Input("url", "search"))
    def route(pathname: str | None, search: str | None) -> html.Div:
        if pathname == "/chart":
            return chart.layout(app_ctx, search or "")
        if pathname == "/health":
            return health.layout(app_ctx)
        if pathname == "/alerts":
            return alerts.layout(app_ctx)
        if pathname == "/dashboards":
            return board_list.layout(app_ctx, boards)
        if pathname == "/dashboard":
            return board.layout(app_ctx, boards, search or "")
        if pathname == "/users":
            return people.layout()
        if pathname in ("/", "", None, "/queries", "/queries/"):
            return queries.layout(app_ctx)
        return html.Div([html.H2("Not found"), dcc.Link("back to the queries", href="/")])

    for page in (queries, chart, health):
        page.register(app, app_ctx)
    alerts.register(app, app_ctx, alert_book)
    board_list.register(app, app_ctx, boards)
    board.register(app, app_ctx, boards)
    people.register(app, app_ctx.clock, users, tokens)
    # After the login hook: what the signed-in role may call (dashboard.roles' table).
    install_permits(
        server,
        app_ctx.metrics,
        lambda: app.callback_map,
        max_callback_bytes=app_ctx.settings.callback_max_body_bytes,
    )
    return app


def _audited(directory: Callable[[], D | None], trail: Recorder) -> Callable[[], D | None]:
    """The users' or tokens' directory, its changes recorded by ``trail`` (a user the page
    or a sign-in creates is in the audit log as ``apm user``'s are)."""

    def made() -> D | None:
        found = directory()
        if found is not None:
            found.audit = trail
        return found

    return made


def _label_of(tokens: Tokens) -> Callable[[str], str | None]:
    """An API token's label for the audit log (its check is cached: no extra read)."""

    def label(token: str) -> str | None:
        directory = tokens()
        try:
            holder = directory.verify(token) if directory is not None else None
        except StorageUnavailable:
            return None
        return holder.label if holder is not None else None

    return label


def build_context(settings: object | None = None, repo: object | None = None) -> AppContext:
    """The production wiring: the storage repository, Kafka topics and the ingest scraper."""
    from dashboard.agents import KafkaAgentVersions
    from dashboard.settings import DashboardSettings
    from dashboard.sources import IngestNames, KafkaTopics, PrometheusScraper

    s = settings if isinstance(settings, DashboardSettings) else DashboardSettings()
    if repo is None:
        from storage.repository import Repository

        repo = Repository.connect()
    return AppContext(
        settings=s,
        repo=repo,  # type: ignore[arg-type]
        topics=KafkaTopics(s.kafka_bootstrap, s.topics_cache_seconds),
        scraper=PrometheusScraper(
            s.ingest_urls,
            IngestNames(
                s.ingest_samples_metric,
                s.ingest_requests_metric,
                s.ingest_outcome_label,
                s.reject_reason_label,
            ),
            s.scrape_timeout_seconds,
        ),
        clock=time.time,
        agents=KafkaAgentVersions(s.kafka_bootstrap, s.agents_lookback_seconds),
    )
