"""The sign-in page: its form (user, password or token, the form's own CSRF token and where to
go next) and ``/login``, which checks the form's CSRF token, then the login throttle
(:mod:`dashboard.throttle`, before the password hash runs), then the credentials
(:func:`dashboard.signin.sign_in`), and opens a session. The gate every other request passes,
``/logout`` and the session cookie's CSRF rules are :mod:`dashboard.auth`'s."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from flask import Flask, Response, redirect, render_template_string, request, session
from werkzeug.wrappers import Response as BaseResponse

from dashboard.guard import StorageUnavailable
from dashboard.next_url import safe_next
from dashboard.sessions import SignedSessions
from dashboard.settings import DashboardSettings
from dashboard.signin import Users, same_secret, sign_in
from dashboard.telemetry import DashboardTelemetry
from dashboard.throttle import LoginThrottle

__all__ = ["install_login"]

_PAGE = """<!doctype html><html><head><title>APM dashboard - sign in</title>
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

_HINT = "Sign in with your user and password, or with the dashboard's token."


def install_login(
    server: Flask,
    settings: DashboardSettings,
    sessions: SignedSessions,
    attempts: LoginThrottle,
    metrics: DashboardTelemetry,
    users: Users | None,
    set_csrf_cookie: Callable[[BaseResponse], None],
) -> None:
    """``/login`` (GET the form, POST it) on ``server``; a signed-in answer gets the
    session's CSRF cookie through ``set_csrf_cookie``."""

    def login_page(error: str = "", status: int = 200) -> Response:
        session.setdefault("login_csrf", secrets.token_urlsafe(24))
        html = render_template_string(
            _PAGE,
            csrf=session["login_csrf"],
            error=error,
            next=safe_next(request.values.get("next")),
            hint=_HINT,
        )
        return Response(html, status=status, mimetype="text/html")

    @server.route("/login", methods=["GET", "POST"])
    def login() -> BaseResponse:
        if request.method == "GET":
            return login_page()
        if not same_secret(request.form.get("csrf_token"), session.get("login_csrf")):
            metrics.refused.labels("csrf").inc()
            return login_page("The form expired; please sign in again.", 400)
        # Before the password hash (scrypt) runs: a refused attempt costs nothing.
        wait, bucket = attempts.check(request.remote_addr or "-")
        if wait:
            metrics.logins.labels("throttled").inc()
            metrics.refused.labels(f"throttled_{bucket}").inc()
            refused = login_page(f"Too many sign-in attempts; try again in {wait} s.", 429)
            refused.headers["Retry-After"] = str(wait)
            return refused
        user = request.form.get("user", "")
        try:
            who = sign_in(settings, users, user, request.form.get("password", ""))
        except StorageUnavailable:
            return login_page("The user store is unavailable; try again shortly.", 503)
        if who is None:
            metrics.logins.labels("failed").inc()
            return login_page("Wrong user, password or token.", 401)
        metrics.logins.labels("ok").inc()
        sessions.open(session, user or "token", built_in=who[1])
        session.permanent = True  # the cookie lives as long as the session, not the browser
        response = redirect(safe_next(request.form.get("next")))
        set_csrf_cookie(response)
        return response
