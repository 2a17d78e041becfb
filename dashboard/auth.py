"""Login for the UI, Bearer tokens for the API, and CSRF protection for both.

The browser holds a signed, HttpOnly session cookie naming a server-side session, so logging out
really ends it (an old cookie replayed later is refused). Every state-changing request made with
that cookie must echo the session's CSRF token in ``X-CSRFToken``: Dash's renderer does so from
the ``_csrf_token`` cookie (double submit), the login/logout forms carry it as a field. API
clients use ``Authorization: Bearer <token>``, which a cross-site form cannot forge.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from urllib.parse import quote

from flask import Flask, Response, jsonify, redirect, render_template_string, request, session
from werkzeug.security import check_password_hash
from werkzeug.wrappers import Response as BaseResponse

from apm.errors import error_body
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry

__all__ = ["CSRF_COOKIE", "PUBLIC_PATHS", "SessionRegistry", "install_auth"]

CSRF_COOKIE = "_csrf_token"  # the cookie name dash-renderer reads for its X-CSRFToken header
PUBLIC_PATHS = ("/login", "/metrics", "/healthz")
_SAFE = ("GET", "HEAD", "OPTIONS")

_LOGIN_PAGE = """<!doctype html><html><head><title>APM dashboard - sign in</title>
<style>body{font-family:system-ui,sans-serif;background:#f4f6f8;display:flex;
justify-content:center;padding-top:10vh}form{background:#fff;padding:2em;border-radius:8px;
box-shadow:0 1px 4px #0002;min-width:300px}label{display:block;margin:.8em 0 .2em}
input{width:100%;padding:.5em;box-sizing:border-box}button{margin-top:1.2em;padding:.6em 1.2em}
.error{color:#b00020;margin-top:1em}.hint{color:#666;font-size:.85em}</style></head><body>
<form method="post" action="/login" id="login-form"><h2>APM dashboard</h2>
<input type="hidden" name="csrf_token" value="{{ csrf }}">
<input type="hidden" name="next" value="{{ next }}">
<label for="user">User</label><input id="user" name="user" autocomplete="username">
<label for="password">Password or token</label>
<input id="password" name="password" type="password" autocomplete="current-password">
<button id="login-submit" type="submit">Sign in</button>
{% if error %}<div class="error" id="login-error">{{ error }}</div>{% endif %}
<p class="hint">{{ hint }}</p></form></body></html>"""


class SessionRegistry:
    """Live session ids with their expiry; ``clock`` is injected for tests."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self._ttl = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, float] = {}

    def open(self) -> str:
        sid = secrets.token_urlsafe(24)
        with self._lock:
            now = self._clock()
            self._sessions = {k: v for k, v in self._sessions.items() if v > now}
            self._sessions[sid] = now + self._ttl
        return sid

    def valid(self, sid: object) -> bool:
        if not isinstance(sid, str):
            return False
        with self._lock:
            expiry = self._sessions.get(sid)
        return expiry is not None and expiry > self._clock()

    def close(self, sid: object) -> None:
        with self._lock:
            if isinstance(sid, str):
                self._sessions.pop(sid, None)


def check_credentials(settings: DashboardSettings, user: str, password: str) -> bool:
    """The configured user with its password, or any user with the token."""
    if settings.token and hmac.compare_digest(password.encode(), settings.token.encode()):
        return True
    if settings.password_hash and hmac.compare_digest(user.encode(), settings.user.encode()):
        try:
            return check_password_hash(settings.password_hash, password)
        except (ValueError, TypeError):  # a malformed configured hash refuses, never crashes
            return False
    return False


def _same(a: object, b: object) -> bool:
    return (
        isinstance(a, str)
        and isinstance(b, str)
        and bool(a)
        and hmac.compare_digest(a.encode(), b.encode())
    )


def _safe_next(target: str | None) -> str:
    # Only same-site paths: "//evil.example" would be an open redirect.
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


def install_auth(
    server: Flask,
    settings: DashboardSettings,
    metrics: DashboardTelemetry,
    registry: SessionRegistry | None = None,
) -> SessionRegistry:
    if not settings.password_hash and not settings.token:
        raise ValueError(
            "the dashboard needs APM_DASHBOARD_PASSWORD_HASH (see `apm dashboard "
            "hash-password`) or APM_DASHBOARD_TOKEN; refusing to run without login"
        )
    sessions = registry or SessionRegistry(settings.session_hours * 3600)
    server.secret_key = settings.secret_key or secrets.token_hex(32)
    server.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_NAME="apm_dashboard_session",
    )
    hint = "Sign in with the configured user and password, or with the API token."

    def login_page(error: str = "", status: int = 200) -> Response:
        session.setdefault("login_csrf", secrets.token_urlsafe(24))
        html = render_template_string(
            _LOGIN_PAGE,
            csrf=session["login_csrf"],
            error=error,
            next=_safe_next(request.values.get("next")),
            hint=hint,
        )
        return Response(html, status=status, mimetype="text/html")

    @server.route("/login", methods=["GET", "POST"])
    def login() -> BaseResponse:
        if request.method == "GET":
            return login_page()
        if not _same(request.form.get("csrf_token"), session.get("login_csrf")):
            metrics.refused.labels("csrf").inc()
            return login_page("The form expired; please sign in again.", 400)
        user = request.form.get("user", "")
        if not check_credentials(settings, user, request.form.get("password", "")):
            metrics.logins.labels("failed").inc()
            return login_page("Wrong user, password or token.", 401)
        metrics.logins.labels("ok").inc()
        session.clear()
        session["sid"] = sessions.open()
        session["user"] = user or "token"
        session["csrf"] = secrets.token_urlsafe(24)
        response = redirect(_safe_next(request.form.get("next")))
        # Readable by scripts on purpose: Dash echoes it in X-CSRFToken (double submit).
        response.set_cookie(CSRF_COOKIE, session["csrf"], samesite="Strict", httponly=False)
        return response

    @server.route("/logout", methods=["POST"])
    def logout() -> BaseResponse:
        token = request.form.get("csrf_token") or request.headers.get("X-CSRFToken")
        if not _same(token, session.get("csrf")):
            metrics.refused.labels("csrf").inc()
            return Response("CSRF token missing or wrong", status=400)
        sessions.close(session.get("sid"))
        session.clear()
        response = redirect("/login")
        response.delete_cookie(CSRF_COOKIE)
        return response

    @server.before_request
    def require_login() -> BaseResponse | None:
        path = request.path
        if path in PUBLIC_PATHS:
            return None
        if path.startswith("/api/") and request.authorization is not None:
            if (
                request.authorization.type == "bearer"
                and settings.token
                and _same(request.authorization.token, settings.token)
            ):
                return None
            metrics.refused.labels("bad_token").inc()
            return _refuse(401, "unauthorized", "invalid bearer token", "header:Authorization")
        if not sessions.valid(session.get("sid")):
            metrics.refused.labels("no_session").inc()
            if path.startswith(("/api/", "/_dash-")) or request.method not in _SAFE:
                return _refuse(401, "unauthorized", "login required")
            return redirect("/login?next=" + quote(request.full_path.rstrip("?"), safe="/?=&"))
        sent = request.headers.get("X-CSRFToken") or request.form.get("csrf_token")
        if request.method not in _SAFE and not _same(sent, session.get("csrf")):
            metrics.refused.labels("csrf").inc()
            return _refuse(
                403,
                "forbidden",
                "CSRF token missing or wrong (X-CSRFToken header)",
                "header:X-CSRFToken",
            )
        return None

    return sessions


def _refuse(status: int, code: str, detail: str, at: str | None = None) -> Response:
    response = jsonify(error_body(code, detail, at))
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="apm"'
    return response
