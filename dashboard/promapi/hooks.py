"""The read API's request hooks and error handlers, registered on its blueprint by
:func:`~dashboard.promapi.routes.build_promapi`: credentials checked before each request
(:mod:`.access`), each answer counted by endpoint and code, and every error in Prometheus'
shape ``{"status": "error", "errorType", "error"}`` with its status code."""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify, request, session
from werkzeug.exceptions import HTTPException

from dashboard.api import StorageUnavailable
from dashboard.promapi.deps import promapi
from dashboard.promapi.evaluate import LimitError, TimedOut
from dashboard.promapi.params import ParamError
from dashboard.promapi.selector import SelectorError
from dashboard.promapi.shape import error_body

__all__ = ["fail", "register_hooks"]

_TIMEOUTS = ("OperationTimedOut", "ReadTimeout", "WriteTimeout", "Timeout")


def fail(status: int, error_type: str, message: str) -> tuple[Response, int]:
    return jsonify(error_body(error_type, message)), status


def authenticate() -> tuple[Response, int] | None:
    api = promapi()
    request.max_content_length = api.max_body_bytes
    refusal = api.access.check(
        request.authorization,
        session,
        request.method,
        request.headers.get("X-CSRFToken"),
        request.remote_addr or "-",
        g.get("apm_proxy_user"),
    )
    if refusal is None:
        return None
    response, status = fail(refusal.status, refusal.error_type, refusal.message)
    if refusal.status == 401:
        response.headers.add("WWW-Authenticate", 'Basic realm="apm"')
        response.headers.add("WWW-Authenticate", 'Bearer realm="apm"')
    if refusal.retry_after:
        response.headers["Retry-After"] = str(refusal.retry_after)
    return response, status


def count(response: Response) -> Response:
    rule = request.url_rule
    endpoint = rule.endpoint.rsplit(".", 1)[-1] if rule is not None else "unknown"
    promapi().counters.requests.labels(endpoint, str(response.status_code)).inc()
    return response


def bad(exc: ValueError) -> tuple[Response, int]:
    return fail(400, "bad_data", str(exc))


def past_limit(exc: LimitError) -> tuple[Response, int]:
    return fail(422, "execution", str(exc))


def timed_out(exc: TimedOut) -> tuple[Response, int]:
    return fail(503, "timeout", str(exc))


def unavailable(exc: StorageUnavailable) -> tuple[Response, int]:
    timeout = type(exc.__cause__).__name__ in _TIMEOUTS
    return fail(503, "timeout" if timeout else "unavailable", str(exc))


def http_error(exc: HTTPException) -> tuple[Response, int]:
    code = exc.code or 500
    return fail(code, "bad_data" if code < 500 else "internal", exc.description or exc.name)


def register_hooks(api: Blueprint) -> None:
    api.before_request(authenticate)
    api.after_request(count)
    api.register_error_handler(ParamError, bad)
    api.register_error_handler(SelectorError, bad)
    api.register_error_handler(LimitError, past_limit)
    api.register_error_handler(TimedOut, timed_out)
    api.register_error_handler(StorageUnavailable, unavailable)
    api.register_error_handler(HTTPException, http_error)
