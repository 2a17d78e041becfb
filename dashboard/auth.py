"""Login for the UI, Bearer tokens for the API, and CSRF protection for both.

The browser holds a signed (HMAC, ``APM_DASHBOARD_SECRET_KEY``), HttpOnly session cookie that
carries the session itself: its id, user, CSRF token and expiry. Any replica holding the same
key verifies it, so replicas behind one load balancer share logins; a tampered or expired
cookie is refused. Logging out clears the cookie and refuses that session id on the replica
that served the logout (the others accept a copied cookie until it expires: there is no
shared store). Every state-changing request made with the cookie must echo the session's CSRF
token in ``X-CSRFToken``: Dash's renderer does so from the ``_csrf_token`` cookie (double
submit), the login/logout forms carry it as a field. API clients use ``Authorization: Bearer
<token>``, which a cross-site form cannot forge. Login attempts are throttled
(:mod:`dashboard.throttle`) before the password hash is checked, and so are wrong Bearer
tokens (:func:`dashboard.signin.check_bearer`, the one check of a Bearer token, here and in
:mod:`dashboard.promapi.access`).

With ``APM_DASHBOARD_AUTH_PROXY_ENABLED``, a request from a trusted proxy that names its user
in the proxy's header (:mod:`dashboard.auth_proxy`) is that user: it gets a session of its
own here, kept while the proxy keeps naming the same user, and the same CSRF rules; the
header decides alone (an ``Authorization`` header beside it is not read).

Who signs in and with which role is :mod:`dashboard.signin`'s (the built-in login and token
are ``admin``, ``apm user`` users have their own role). A request let through here carries
its user and role in ``flask.g`` (``apm_user``, ``apm_role``) for :mod:`dashboard.permits`,
which decides what that role may call. The sign-in form and its ``/login`` route are
:mod:`dashboard.login`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import quote

from flask import Flask, Response, g, jsonify, redirect, request, session
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.wrappers import Response as BaseResponse

from apm.errors import error_body
from dashboard.api_tokens import TokenHolder
from dashboard.auth_proxy import AuthProxy, ProxyRefusal
from dashboard.guard import StorageUnavailable
from dashboard.login import install_login
from dashboard.proxy_trust import peer_address
from dashboard.sessions import SignedSessions, secret_key
from dashboard.settings import DashboardSettings
from dashboard.signin import Tokens, Users, check_bearer, same_secret, session_role
from dashboard.telemetry import DashboardTelemetry
from dashboard.throttle import LoginThrottle

__all__ = [
    "CSRF_COOKIE",
    "PUBLIC_PATHS",
    "SHARE_PREFIX",
    "install_auth",
    "login_throttle",
]

CSRF_COOKIE = "_csrf_token"  # the cookie name dash-renderer reads for its X-CSRFToken header
PUBLIC_PATHS = ("/login", "/metrics", "/healthz")
SHARE_PREFIX = "/share/"  # read-only share links (dashboard.share), each checked by token
_SAFE = ("GET", "HEAD", "OPTIONS")


def login_throttle(settings: DashboardSettings) -> LoginThrottle:
    """The login attempts' buckets; the Prometheus read API's Basic auth takes from the same."""
    return LoginThrottle(
        settings.login_client_burst,
        settings.login_client_per_minute,
        settings.login_global_burst,
        settings.login_global_per_second,
    )


def install_auth(
    server: Flask,
    settings: DashboardSettings,
    metrics: DashboardTelemetry,
    clock: Callable[[], float] = time.time,
    throttle: LoginThrottle | None = None,
    delegated: tuple[str, ...] = (),
    shared: Callable[[str], bool] | None = None,
    users: Users | None = None,
    tokens: Tokens | None = None,
) -> SignedSessions:
    """Login, sessions and CSRF for every path but the public ones and those under a
    ``delegated`` prefix, whose blueprint checks the same credentials itself
    (:mod:`dashboard.promapi.access`: it also takes Basic auth, as Grafana sends it).

    Under ``/share/<token>/``, ``shared(token)`` decides alone: a token that opens a dashboard
    is let through to a GET without sign-in (:mod:`dashboard.share`), any other path there is
    a 404, signed in or not, so that a link's answer says nothing about other links.

    ``users`` is the directory of ``apm user``'s users (:func:`dashboard.signin.users_for`);
    without it only the built-in login and token sign in. ``tokens`` are their API tokens
    (:func:`dashboard.signin.tokens_for`), taken as Bearer tokens."""
    if not settings.password_hash and not settings.token:
        raise ValueError(
            "the dashboard needs APM_DASHBOARD_PASSWORD_HASH (see `apm dashboard "
            "hash-password`) or APM_DASHBOARD_TOKEN; refusing to run without login"
        )
    sessions = SignedSessions(settings.session_hours * 3600, clock)
    attempts = throttle or login_throttle(settings)
    server.secret_key = secret_key(settings.secret_key)
    if settings.proxy_hops:
        # The login throttle's client is then the address the trusted proxies saw.
        server.wsgi_app = ProxyFix(server.wsgi_app, x_for=settings.proxy_hops)  # type: ignore[method-assign]
    server.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_NAME="apm_dashboard_session",
        # Over HTTPS the browser never sends the session over plain HTTP; over HTTP (make run
        # on loopback) a Secure cookie would not come back at all.
        SESSION_COOKIE_SECURE=settings.https,
        PERMANENT_SESSION_LIFETIME=timedelta(hours=settings.session_hours),
    )
    proxy = AuthProxy(settings, users, metrics) if settings.auth_proxy_enabled else None

    def set_csrf_cookie(response: BaseResponse) -> None:
        # Readable by scripts on purpose: Dash echoes it in X-CSRFToken (double submit).
        response.set_cookie(
            CSRF_COOKIE, session["csrf"], samesite="Strict", httponly=False, secure=settings.https
        )

    install_login(server, settings, sessions, attempts, metrics, users, set_csrf_cookie)

    @server.route("/logout", methods=["POST"])
    def logout() -> BaseResponse:
        token = request.form.get("csrf_token") or request.headers.get("X-CSRFToken")
        if not same_secret(token, session.get("csrf")):
            metrics.refused.labels("csrf").inc()
            return Response("CSRF token missing or wrong", status=400)
        sessions.close(session)
        response = redirect("/login")
        response.delete_cookie(CSRF_COOKIE, secure=settings.https)
        return response

    def through_proxy() -> BaseResponse | str | None:
        """The user a trusted proxy names (its session opened or kept), a refusal, or None."""
        if proxy is None:
            return None
        try:
            who = proxy.identify(request.headers, peer_address(request.environ))
        except StorageUnavailable as exc:
            return _refuse(503, "storage_unavailable", str(exc))
        if who is None:
            return None
        if isinstance(who, ProxyRefusal):
            return _refuse(who.status, who.error, who.detail, who.at)
        mine = session.get("proxy") and session.get("user") == who.name
        if not (mine and sessions.valid(session)):
            metrics.logins.labels("proxy").inc()
            sessions.open(session, who.name, built_in=False, proxy=True)
            session.permanent = True
            g.apm_proxy_opened = True
        g.apm_proxy_user = who.name
        return who.name

    @server.after_request
    def proxy_csrf_cookie(response: BaseResponse) -> BaseResponse:
        if g.get("apm_proxy_opened"):
            set_csrf_cookie(response)
        return response

    @server.before_request
    def require_login() -> BaseResponse | None:
        path = request.path
        if path in PUBLIC_PATHS:
            return None
        if path.startswith(SHARE_PREFIX):
            link = path[len(SHARE_PREFIX) :].split("/", 1)[0]
            if shared is not None and request.method in _SAFE and shared(link):
                return None
            metrics.refused.labels("share_link").inc()
            return _refuse(404, "not_found", "no such share link")
        proxied = through_proxy()
        if proxied is not None and not isinstance(proxied, str):
            return proxied
        if delegated and path.startswith(delegated):
            return None  # its blueprint checks (with g.apm_proxy_user when proxied)
        if proxied is None and path.startswith("/api/") and request.authorization is not None:
            token = request.authorization.token if request.authorization.type == "bearer" else None
            try:
                refusal = check_bearer(
                    settings, attempts, metrics, token, request.remote_addr or "-", tokens
                )
            except StorageUnavailable as exc:
                return _refuse(503, "storage_unavailable", str(exc))
            if isinstance(refusal, TokenHolder):
                g.apm_user, g.apm_role = refusal.user, refusal.role
                return None
            if refusal.status == 429:
                return _refuse(
                    429, "too_many_requests", refusal.detail, retry_after=refusal.retry_after
                )
            return _refuse(401, "unauthorized", refusal.detail, "header:Authorization")
        try:
            role = session_role(session, users, proxied) if sessions.valid(session) else None
        except StorageUnavailable as exc:
            return _refuse(503, "storage_unavailable", str(exc))
        if role is None:  # no session, or its user was disabled since
            metrics.refused.labels("no_session").inc()
            if path.startswith(("/api/", "/_dash-")) or request.method not in _SAFE:
                return _refuse(401, "unauthorized", "login required")
            return redirect("/login?next=" + quote(request.full_path.rstrip("?"), safe="/?=&"))
        sent = request.headers.get("X-CSRFToken") or request.form.get("csrf_token")
        if request.method not in _SAFE and not same_secret(sent, session.get("csrf")):
            metrics.refused.labels("csrf").inc()
            return _refuse(
                403,
                "forbidden",
                "CSRF token missing or wrong (X-CSRFToken header)",
                "header:X-CSRFToken",
            )
        g.apm_user, g.apm_role = session.get("user"), role
        return None

    return sessions


def _refuse(
    status: int, code: str, detail: str, at: str | None = None, retry_after: int = 0
) -> Response:
    response = jsonify(error_body(code, detail, at))
    response.status_code = status
    if retry_after:
        response.headers["Retry-After"] = str(retry_after)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="apm"'
    return response
