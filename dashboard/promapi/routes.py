"""The Prometheus HTTP API's routes under ``/api/v1``, GET and POST (form-encoded, as Grafana
sends), each answer in Prometheus' format; every error is ``{"status": "error", "errorType",
"error"}`` with Prometheus' status codes: 400 ``bad_data`` (a bad parameter or an expression
outside the subset), 422 ``execution`` (past a limit), 503 ``timeout`` / ``unavailable``
(storage), plus the dashboard's auth answers (401, 403, 429).

The handlers are module-level functions over :mod:`.deps` (the app's :class:`~.deps.PromApi`
and the request's parameters); :func:`build_promapi` binds one ``PromApi`` to the app its
blueprint is registered on, with the hooks and error handlers of :mod:`.hooks`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from flask import Blueprint, Response, jsonify, request
from flask.blueprints import BlueprintSetupState

from dashboard.api import guarded
from dashboard.promapi.access import Access
from dashboard.promapi.alert_range import AlertRange
from dashboard.promapi.alerts import alerts_of, history_of
from dashboard.promapi.deps import (
    EXTENSION,
    PromApi,
    deadline,
    expression,
    lookback,
    matches,
    ms,
    promapi,
    recent,
    span,
)
from dashboard.promapi.hooks import register_hooks
from dashboard.promapi.params import ParamError, parse_range, parse_when
from dashboard.promapi.run import Evaluator
from dashboard.promapi.selector import ALERTS, LABELS, METRIC, parse_selector
from dashboard.promapi.settings import PromApiSettings
from dashboard.promapi.shape import success
from dashboard.promapi.store import PromRepository, Store
from dashboard.promapi.telemetry import PromApiTelemetry
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry

__all__ = ["BUILD_INFO", "build_promapi"]

T = TypeVar("T")
# Grafana reads the version to pick its requests; these endpoints behave as Prometheus 2.40's.
BUILD_INFO = {
    "version": "2.40.0",
    "revision": "apm-read-api",
    "branch": "apm",
    "buildUser": "apm",
    "buildDate": "unknown",
    "goVersion": "none (apm dashboard, Python)",
}
_METADATA = {
    METRIC: [
        {
            "type": "gauge",
            "help": "A stored query's result per window, at the window's end (docs/interop.md)",
            "unit": "",
        }
    ]
}


def query_range() -> Response:
    expr = expression()
    start, end, step = parse_range(
        request.values.get("start"), request.values.get("end"), request.values.get("step")
    )
    if ms(step) < 1:
        raise ParamError('invalid parameter "step": the smallest step is 1ms')
    limit = deadline()
    evaluator = promapi().evaluator
    found = evaluator.range_query(expr, ms(start), ms(end), ms(step), limit, lookback())
    return jsonify(success(found))


def query() -> Response:
    expr = expression()
    when = parse_when(request.values.get("time"), "time", default=promapi().clock())
    found = promapi().evaluator.instant_query(expr, ms(when), deadline(), lookback())
    return jsonify(success(found))


def series() -> Response:
    limit = deadline()
    selectors, between = matches(True, limit), span()
    evaluator = promapi().evaluator
    found = [dict(s.labels) for s in evaluator.series(selectors, limit, between or recent())]
    found += evaluator.alert_series(selectors, limit, between)
    return jsonify(success(sorted(found, key=lambda d: sorted(d.items()))))


def labels() -> Response:
    limit = deadline()
    selectors = matches(False, limit)
    between = span()  # the ALERTS label names are those of the alerts now
    evaluator = promapi().evaluator
    names = {
        k for a in evaluator.alert_series(selectors or [parse_selector(ALERTS)], limit) for k in a
    }
    every = set(LABELS)
    for s in evaluator.every(selectors or [parse_selector(METRIC)], limit, between or recent()):
        names.update(s.labels)
        if every <= names:  # a plain query's and a BY server query's seen: nothing to add
            break
    return jsonify(success(sorted(names)))


def label_values(name: str) -> Response:
    if not (name[:1].isalpha() or name[:1] == "_") or not all(
        c.isascii() and (c.isalnum() or c == "_") for c in name
    ):
        raise ParamError(f"invalid label name: {name[:60]!r}")
    limit = deadline()
    selectors = matches(False, limit) or [parse_selector(METRIC), parse_selector(ALERTS)]
    between = span()
    evaluator = promapi().evaluator
    found = {
        s.labels[name]
        for s in evaluator.every(selectors, limit, between or recent())
        if name in s.labels
    }
    found.update(a[name] for a in evaluator.alert_series(selectors, limit, between) if name in a)
    return jsonify(success(sorted(found)))


def buildinfo() -> Response:
    return jsonify(success(BUILD_INFO))


def metadata() -> Response:
    return jsonify(success(_METADATA))


def query_exemplars() -> Response:
    return jsonify(success([]))  # stored windows carry no exemplars


# Grafana's alerting UI lists a Prometheus data source's rules and alerts: there are none.
def rules() -> Response:
    return jsonify(success({"groups": []}))


def alerts() -> Response:
    return jsonify(success({"alerts": []}))


_BOTH = ("GET", "POST")
_ROUTES: tuple[tuple[str, Callable[..., Response], tuple[str, ...]], ...] = (
    ("/query_range", query_range, _BOTH),
    ("/query", query, _BOTH),
    ("/series", series, _BOTH),
    ("/labels", labels, _BOTH),
    ("/label/<name>/values", label_values, ("GET",)),
    ("/status/buildinfo", buildinfo, ("GET",)),
    ("/metadata", metadata, ("GET",)),
    ("/query_exemplars", query_exemplars, _BOTH),
    ("/rules", rules, ("GET",)),
    ("/alerts", alerts, ("GET",)),
)


def build_promapi(
    repo: PromRepository,
    settings: DashboardSettings,
    limits: PromApiSettings,
    telemetry: DashboardTelemetry,
    access: Access,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
) -> Blueprint:
    """The blueprint of the read API over ``repo``, bound to the app it is registered on.
    ``clock`` is the default ``time`` of an instant query; ``monotonic`` times deadlines."""

    def guard(op: str, call: Callable[[], T]) -> T:
        return guarded(telemetry, op, call)

    counters = PromApiTelemetry(telemetry.registry)
    listing = alerts_of(repo)
    ranges = AlertRange(listing, *history_of(repo), guard, clock)
    evaluator = Evaluator(Store(repo, limits, guard, counters.points.inc), listing, ranges)
    bound = PromApi(evaluator, limits, access, counters, settings.max_body_bytes, clock, monotonic)

    def bind(state: BlueprintSetupState) -> None:
        state.app.extensions[EXTENSION] = bound

    api = Blueprint("promapi", __name__, url_prefix="/api/v1")
    api.record_once(bind)
    register_hooks(api)
    for path, view, methods in _ROUTES:
        api.add_url_rule(path, view_func=view, methods=list(methods))
    return api
