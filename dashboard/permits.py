"""What a signed-in role may call: one hook, after the login hook (:mod:`dashboard.auth`), that
looks every request up in the table of :mod:`dashboard.roles` and answers 403 in the one error
shape (:mod:`apm.errors`) when the role is below the one the route or Dash callback needs.
Whatever the page shows: a viewer forging a callback or an API call meets the same answer.

A Dash callback is one POST to ``/_dash-update-component`` whose body names the callback by
its output (``"output"``), exactly as Dash looks it up; the hook finds the function Dash would
run in the app's ``callback_map`` and takes that function's role. An unknown output is
Dash's to refuse (a 500 there); a role is still needed first (``admin`` for no callback).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Response as BaseResponse

from apm.errors import error_body
from dashboard.roles import allows, callback_role, route_role
from dashboard.telemetry import DashboardTelemetry

__all__ = ["DASH_CALLBACK_ENDPOINT", "callback_name", "install_permits", "needed_role"]

DASH_CALLBACK_ENDPOINT = "/_dash-update-component"  # Dash's endpoint name is its path


def callback_name(func: Any) -> str:
    """A Dash callback's key in :data:`dashboard.roles.CALLBACK_ROLES`: the module and name of
    the function registered (Dash wraps it with ``functools.wraps``, which keeps both)."""
    inner = getattr(func, "__wrapped__", func)
    return f"{inner.__module__}.{inner.__name__}"


def needed_role(method: str, endpoint: str | None, body: Any, callbacks: Mapping[str, Any]) -> str:
    """The least role for a request; ``body`` is a Dash callback request's parsed JSON."""
    if endpoint != DASH_CALLBACK_ENDPOINT or method != "POST":
        return route_role(method, endpoint)
    output = body.get("output") if isinstance(body, dict) else None
    found = callbacks.get(output) if isinstance(output, str) else None
    return callback_role(callback_name(found["callback"]) if found else None)


def _refusal(status: int, code: str, message: str) -> Response:
    response: Response = jsonify(error_body(code, message, None))
    response.status_code = status
    return response


def install_permits(
    server: Flask,
    telemetry: DashboardTelemetry,
    callbacks: Callable[[], Mapping[str, Any]],
    max_callback_bytes: int = 2 * 1024 * 1024,
) -> None:
    """``callbacks`` gives the Dash app's ``callback_map`` (filled after the pages register);
    a callback's body is read only up to ``max_callback_bytes`` (413 past it; 411 without a
    Content-Length), as every API's is."""

    @server.before_request
    def permit() -> BaseResponse | None:
        role = g.get("apm_role")
        if role is None:  # not signed in: a public, share or Prometheus API path (their own)
            return None
        body = None
        if request.endpoint == DASH_CALLBACK_ENDPOINT:
            # Dash's page always sends a Content-Length; a chunked body would be cut at the
            # bound without a word, so it is refused whole.
            if request.content_length is None and request.headers.get("Transfer-Encoding"):
                telemetry.refused.labels("length_required").inc()
                return _refusal(411, "length_required", "a callback's body needs a Content-Length")
            request.max_content_length = max_callback_bytes
            try:
                body = request.get_json(silent=True)
            except RequestEntityTooLarge:
                telemetry.refused.labels("too_large").inc()
                return _refusal(
                    413, "too_large", f"a callback's body is at most {max_callback_bytes} bytes"
                )
        need = needed_role(request.method, request.endpoint, body, callbacks())
        if allows(role, need):
            return None
        telemetry.refused.labels("role").inc()
        return _refusal(
            403,
            "forbidden",
            f"the {role} role may not do this: it needs {need} (ask an admin: apm user set-role)",
        )
