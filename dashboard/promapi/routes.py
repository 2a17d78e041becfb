"""The Prometheus HTTP API's routes under ``/api/v1``, GET and POST (form-encoded, as Grafana
sends), each answer in Prometheus' format; every error is ``{"status": "error", "errorType",
"error"}`` with Prometheus' status codes: 400 ``bad_data`` (a bad parameter or an expression
outside the subset), 422 ``execution`` (past a limit), 503 ``timeout`` / ``unavailable``
(storage), plus the dashboard's auth answers (401, 403, 429)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from flask import Blueprint, Response, jsonify, request, session
from werkzeug.exceptions import HTTPException

from dashboard.api import StorageUnavailable, guarded
from dashboard.ports import QueryRepository
from dashboard.promapi.access import Access
from dashboard.promapi.alert_range import AlertRange
from dashboard.promapi.alerts import alerts_of, history_of
from dashboard.promapi.evaluate import Deadline, LimitError, TimedOut
from dashboard.promapi.params import (
    ParamError,
    parse_duration,
    parse_range,
    parse_span,
    parse_when,
)
from dashboard.promapi.run import Evaluator
from dashboard.promapi.selector import (
    ALERTS,
    LABELS,
    METRIC,
    Constant,
    Selector,
    SelectorError,
    parse_expr,
    parse_selector,
)
from dashboard.promapi.settings import PromApiSettings
from dashboard.promapi.shape import error_body, success
from dashboard.promapi.telemetry import PromApiTelemetry
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry

__all__ = ["BUILD_INFO", "build_promapi"]

log = logging.getLogger(__name__)
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
_TIMEOUTS = ("OperationTimedOut", "ReadTimeout", "WriteTimeout", "Timeout")


def _fail(status: int, error_type: str, message: str) -> tuple[Response, int]:
    return jsonify(error_body(error_type, message)), status


def build_promapi(
    repo: QueryRepository,
    settings: DashboardSettings,
    limits: PromApiSettings,
    telemetry: DashboardTelemetry,
    access: Access,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
) -> Blueprint:
    """``clock`` is the default ``time`` of an instant query; ``monotonic`` times deadlines."""
    api = Blueprint("promapi", __name__, url_prefix="/api/v1")
    counters = PromApiTelemetry(telemetry.registry)

    def guard(op: str, call: Callable[[], T]) -> T:
        return guarded(telemetry, op, call)

    listing = alerts_of(repo)
    ranges = AlertRange(listing, *history_of(repo), guard, clock)
    evaluator = Evaluator(repo, limits, guard, counters.points.inc, listing, ranges)

    @api.before_request
    def _authenticate() -> tuple[Response, int] | None:
        request.max_content_length = settings.max_body_bytes
        refusal = access.check(
            request.authorization,
            session,
            request.method,
            request.headers.get("X-CSRFToken"),
            request.remote_addr or "-",
        )
        if refusal is None:
            return None
        response, status = _fail(refusal.status, refusal.error_type, refusal.message)
        if refusal.status == 401:
            response.headers.add("WWW-Authenticate", 'Basic realm="apm"')
            response.headers.add("WWW-Authenticate", 'Bearer realm="apm"')
        if refusal.retry_after:
            response.headers["Retry-After"] = str(refusal.retry_after)
        return response, status

    @api.after_request
    def _count(response: Response) -> Response:
        rule = request.url_rule
        endpoint = rule.endpoint.rsplit(".", 1)[-1] if rule is not None else "unknown"
        counters.requests.labels(endpoint, str(response.status_code)).inc()
        return response

    @api.errorhandler(ParamError)
    @api.errorhandler(SelectorError)
    def _bad(exc: ValueError) -> tuple[Response, int]:
        return _fail(400, "bad_data", str(exc))

    @api.errorhandler(LimitError)
    def _limit(exc: LimitError) -> tuple[Response, int]:
        return _fail(422, "execution", str(exc))

    @api.errorhandler(TimedOut)
    def _timeout(exc: TimedOut) -> tuple[Response, int]:
        return _fail(503, "timeout", str(exc))

    @api.errorhandler(StorageUnavailable)
    def _unavailable(exc: StorageUnavailable) -> tuple[Response, int]:
        timed_out = type(exc.__cause__).__name__ in _TIMEOUTS
        return _fail(503, "timeout" if timed_out else "unavailable", str(exc))

    @api.errorhandler(HTTPException)
    def _http(exc: HTTPException) -> tuple[Response, int]:
        code = exc.code or 500
        return _fail(code, "bad_data" if code < 500 else "internal", exc.description or exc.name)

    def deadline() -> Deadline:
        wanted = limits.timeout_seconds
        if raw := request.values.get("timeout"):
            wanted = min(wanted, parse_duration(raw, "timeout"))
        return Deadline(monotonic() + max(0.0, wanted), monotonic)

    def expression() -> Selector | Constant:
        raw = request.values.get("query")
        if raw is None or not raw.strip():
            raise ParamError('invalid parameter "query": missing')
        return parse_expr(raw)

    def matches(required: bool, limit: Deadline) -> list[Selector]:
        raw = request.values.getlist("match[]")
        if required and not raw:
            raise ParamError("no match[] parameter provided")
        if len(raw) > 64:
            raise ParamError("at most 64 match[] parameters")
        out = []
        for m in raw:
            # Compiling a selector's regexes may take RE2 tens of ms (32 matchers of up to
            # 10,000 instructions each): 64 of them count against the deadline.
            out.append(parse_selector(m))
            limit.check()
        return out

    def ms(seconds: float) -> int:
        return round(seconds * 1000)

    @api.route("/query_range", methods=["GET", "POST"])
    def query_range() -> Response:
        expr = expression()
        start, end, step = parse_range(
            request.values.get("start"), request.values.get("end"), request.values.get("step")
        )
        if ms(step) < 1:
            raise ParamError('invalid parameter "step": the smallest step is 1ms')
        limit = deadline()
        return jsonify(success(evaluator.range_query(expr, ms(start), ms(end), ms(step), limit)))

    @api.route("/query", methods=["GET", "POST"])
    def query() -> Response:
        expr = expression()
        when = parse_when(request.values.get("time"), "time", default=clock())
        return jsonify(success(evaluator.instant_query(expr, ms(when), deadline())))

    def _span() -> tuple[int, int] | None:
        # Every stored query's series is listed whatever its windows in the range; ALERTS
        # series are those on at some time in it, or now without one (docs/interop.md).
        return parse_span(request.values.get("start"), request.values.get("end"), clock())

    @api.route("/series", methods=["GET", "POST"])
    def series() -> Response:
        limit = deadline()
        selectors, span = matches(True, limit), _span()
        found = [dict(s.labels) for s in evaluator.series(selectors, limit)]
        found += evaluator.alert_series(selectors, limit, span)
        return jsonify(success(sorted(found, key=lambda d: sorted(d.items()))))

    @api.route("/labels", methods=["GET", "POST"])
    def labels() -> Response:
        limit = deadline()
        selectors = matches(False, limit)
        _span()  # checked; the ALERTS label names are those of the alerts now
        alerting = evaluator.alert_series(selectors or [parse_selector(ALERTS)], limit)
        if selectors and not alerting and not evaluator.series(selectors, limit):
            return jsonify(success([]))
        return jsonify(success(sorted({*LABELS, *(k for a in alerting for k in a)})))

    @api.route("/label/<name>/values", methods=["GET"])
    def label_values(name: str) -> Response:
        if not (name[:1].isalpha() or name[:1] == "_") or not all(
            c.isascii() and (c.isalnum() or c == "_") for c in name
        ):
            raise ParamError(f"invalid label name: {name[:60]!r}")
        limit = deadline()
        selectors = matches(False, limit) or [parse_selector(METRIC), parse_selector(ALERTS)]
        span = _span()
        found = [s.labels for s in evaluator.series(selectors, limit)]
        found += evaluator.alert_series(selectors, limit, span)
        return jsonify(success(sorted({s[name] for s in found if name in s})))

    @api.route("/status/buildinfo", methods=["GET"])
    def buildinfo() -> Response:
        return jsonify(success(BUILD_INFO))

    @api.route("/metadata", methods=["GET"])
    def metadata() -> Response:
        return jsonify(success(_METADATA))

    @api.route("/query_exemplars", methods=["GET", "POST"])
    def query_exemplars() -> Response:
        return jsonify(success([]))  # stored windows carry no exemplars

    # Grafana's alerting UI lists a Prometheus data source's rules and alerts: there are none.
    @api.route("/rules", methods=["GET"])
    def rules() -> Response:
        return jsonify(success({"groups": []}))

    @api.route("/alerts", methods=["GET"])
    def alerts() -> Response:
        return jsonify(success({"alerts": []}))

    return api
